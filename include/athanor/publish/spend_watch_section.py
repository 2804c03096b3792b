"""The report's spend watch: the bill's freshness (a stale account in red), the anomalies list, the
forecast charts with the budgets drawn on them, the budgets' status and the forecast's backtest
(MAPE and interval coverage per horizon).

Everything is read from the tables the `watch_spend` stage wrote for the run (sql/report/
spend_watch_*.sql), and the billed months before from billing_facts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import duckdb
from markupsafe import Markup

from athanor.publish import charts
from athanor.publish.incidents import Incident, group_incidents
from athanor.publish.queries import report_rows

MAX_ANOMALIES = 25  # the list shows the latest; the table and anomalies.json-like CLI hold all
BILLED_MONTHS = 3  # months of billed spend drawn before the forecast
BACKTEST_HORIZONS = (7, 30, 90)


@dataclass(frozen=True)
class AnomalyRow:
    scope_kind: str
    scope_value: str
    currency: str
    day: date
    kind: str
    expected_cost: float
    actual_cost: float
    excess_cost: float
    threshold_cost: float
    history: int
    top_lines: tuple[dict[str, Any], ...]

    @property
    def scope(self) -> str:
        return f"{self.scope_kind}: {self.scope_value}"

    @property
    def compared_with(self) -> str:
        if self.kind == "month_start":
            return f"month-start charges vs the {self.history} months before"
        return f"vs the same weekday of {self.history} weeks before"


@dataclass(frozen=True)
class BudgetRow:
    budget: str
    scope_kind: str
    scope_value: str
    currency: str
    month: date
    amount: float
    actual_cost: float
    forecast_cost: float | None
    threshold_basis: str
    threshold_pct: float
    breached: bool
    status: str = "within"  # within | breached | unknown (a stale bill)

    @property
    def figure(self) -> float | None:
        return self.actual_cost if self.threshold_basis == "actual" else self.forecast_cost

    @property
    def share(self) -> float | None:
        return None if self.figure is None else self.figure / self.amount


@dataclass(frozen=True)
class AccuracyRow:
    scope: str
    currency: str
    by_horizon: dict[int, tuple[int, float | None, float | None]]  # days -> (folds, mape, coverage)


@dataclass(frozen=True)
class FreshnessRow:
    provider: str
    billing_account: str
    last_charge_day: date
    lag_days: int
    stale: bool


@dataclass(frozen=True)
class SpendWatch:
    as_of: date
    freshness: list[FreshnessRow] = field(default_factory=list)
    anomalies: list[AnomalyRow] = field(default_factory=list)
    anomalies_total: int = 0
    # The anomalies of all scopes grouped into one row per cost event, the largest excess first.
    incidents: list[Incident] = field(default_factory=list)
    incidents_total: int = 0
    budgets: list[BudgetRow] = field(default_factory=list)
    accuracy: list[AccuracyRow] = field(default_factory=list)
    # (scope_kind, scope_value, currency) -> [(month, billed, forecast, low, high)]
    months: dict[
        tuple[str, str, str], list[tuple[date, float | None, float | None, float | None, float | None]]
    ] = field(default_factory=dict)
    horizons: tuple[int, ...] = BACKTEST_HORIZONS

    @property
    def stale(self) -> list[FreshnessRow]:
        """The accounts whose bill stopped arriving: the data-quality status is not OK."""
        return [f for f in self.freshness if f.stale]

    @property
    def charts(self) -> list[Markup]:
        return forecast_charts(self)

    @property
    def has_data(self) -> bool:
        """Whether the watch ran for this report's run (it stores a forecast or says why not)."""
        forecast = any(r[2] is not None for rows in self.months.values() for r in rows)
        return forecast or bool(self.anomalies or self.budgets or self.accuracy)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _month_add(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def load_spend_watch(
    con: duckdb.DuckDBPyConnection, as_of: date, run_id: str, daily: str
) -> SpendWatch | None:
    """The watch of run `run_id`; None in a warehouse without the watch's tables. `daily`: what
    to read the billed months from (`athanor.ingest.daily.daily_source`)."""
    found = con.execute(
        "select count(*) from duckdb_tables() where table_name = 'spend_forecasts' and schema_name = current_schema()"
    ).fetchone()
    if not found or not found[0]:
        return None
    run = {"run_id": run_id}
    anomalies = [
        AnomalyRow(
            **{
                **r,
                "expected_cost": float(r["expected_cost"]),
                "actual_cost": float(r["actual_cost"]),
                "excess_cost": float(r["excess_cost"]),
                "threshold_cost": float(r["threshold_cost"]),
                "top_lines": tuple(json.loads(r["top_lines"])),
            }
        )
        for r in report_rows(con, "spend_watch_anomalies", run)
    ]
    budgets = [
        BudgetRow(
            **{
                **r,
                "amount": float(r["amount"]),
                "actual_cost": float(r["actual_cost"]),
                "forecast_cost": _float(r["forecast_cost"]),
            }
        )
        for r in report_rows(con, "spend_watch_budgets", run)
    ]
    accuracy: dict[tuple[str, str], dict[int, tuple[int, float | None, float | None]]] = {}
    for r in report_rows(con, "spend_watch_accuracy", run):
        key = (f"{r['scope_kind']}: {r['scope_value']}", r["currency"])
        accuracy.setdefault(key, {})[int(r["horizon_days"])] = (int(r["folds"]), r["mape"], r["coverage"])
    month_first = as_of.replace(day=1)
    billed = report_rows(
        con,
        "spend_watch_months",
        {"start": _month_add(month_first, -BILLED_MONTHS), "end": month_first},
        daily=daily,
    )
    months: dict[tuple[str, str, str], dict[date, list[float | None]]] = {}
    for r in billed:
        key = (r["scope_kind"], r["scope_value"], r["currency"])
        months.setdefault(key, {})[r["month"]] = [float(r["cost"]), None, None, None]
    for r in report_rows(con, "spend_watch_forecast", run):
        key = (r["scope_kind"], r["scope_value"], r["currency"])
        months.setdefault(key, {})[r["month"]] = [
            float(r["actual_cost"]) if r["month"] == month_first else None,
            float(r["cost"]),
            float(r["lower_cost"]),
            float(r["upper_cost"]),
        ]
    has_freshness = con.execute(
        "select count(*) from duckdb_tables() where table_name = 'spend_freshness' and schema_name = current_schema()"
    ).fetchone()[0]
    freshness = (
        [FreshnessRow(**r) for r in report_rows(con, "spend_watch_freshness", run)] if has_freshness else []
    )
    return SpendWatch(
        as_of=as_of,
        freshness=freshness,
        anomalies=anomalies[:MAX_ANOMALIES],
        anomalies_total=len(anomalies),
        incidents=(incidents := group_incidents(anomalies))[:MAX_ANOMALIES],
        incidents_total=len(incidents),
        budgets=budgets,
        accuracy=[AccuracyRow(scope, currency, h) for (scope, currency), h in accuracy.items()],
        months={key: [(m, *v) for m, v in sorted(by_month.items())] for key, by_month in months.items()},
    )


def forecast_charts(watch: SpendWatch) -> list[Markup]:
    """Billed months, then the forecast months with their interval, and each budget of the scope as
    a line: the total always, and every team that has a budget."""
    budgeted = {(b.scope_kind, b.scope_value, b.currency) for b in watch.budgets}
    out = []
    for key, rows in sorted(watch.months.items(), key=lambda item: (item[0][0] != "total", item[0])):
        kind, value, currency = key
        if not (kind == "total" or key in budgeted) or not any(r[2] is not None for r in rows):
            continue
        labels = [f"{m:%Y-%m}" for m, *_ in rows]
        series: dict[str, list[float | None]] = {
            "Billed": [r[1] for r in rows],
            "Forecast": [r[2] for r in rows],
            "Forecast, low": [r[3] for r in rows],
            "Forecast, high": [r[4] for r in rows],
        }
        amounts = sorted(
            {(b.budget, b.amount) for b in watch.budgets if (b.scope_kind, b.scope_value, b.currency) == key}
        )
        for name, amount in amounts:
            series[f"Budget {name}"] = [amount] * len(rows)
        scope = "all teams" if kind == "total" else f"{kind} {value}"
        out.append(
            charts.line_chart(
                f"chart-forecast-{kind}-{''.join(c if c.isalnum() else '-' for c in value)}-{currency}",
                labels,
                series,
                title=f"Spend by month, {scope} ({currency}): billed, forecast and budgets",
                x_title="Month (the current one: billed to date, forecast whole)",
                y_title=f"Effective cost ({currency})",
            )
        )
    return out
