"""The `watch_spend` stage's work: find anomalies, forecast, hold budgets, store, alert once."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import duckdb

from athanor.settings import MAX_FORECAST_HORIZON_DAYS, WatchSettings
from athanor.warehouse import insert_rows, transaction
from athanor.watch import alerts
from athanor.watch.anomalies import Anomaly, comparison_start, find_anomalies, top_lines_json
from athanor.watch.budgets import Budget, BudgetsError, BudgetStatus, read_budgets, statuses
from athanor.watch.forecast import Accuracy, ScopeForecast, forecast_scopes, month_ends
from athanor.watch.series import DailyCosts, read_daily_costs

log = logging.getLogger(__name__)


@dataclass
class Watch:
    as_of: date
    anomalies: list[Anomaly] = field(default_factory=list)
    forecasts: list[ScopeForecast] = field(default_factory=list)
    accuracy: list[Accuracy] = field(default_factory=list)
    budgets: list[BudgetStatus] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    budgets_error: str | None = None


def forecast_targets(costs: DailyCosts, budgets: list[Budget]) -> list[tuple[str, str, str]]:
    """Total and every team, per currency, and the scope of each budget."""
    frame = costs.frame[costs.frame["scope_kind"].isin(("total", "team"))]
    scopes = sorted(
        {(k, v, c) for k, v, c in frame[["scope_kind", "scope_value", "currency"]].itertuples(index=False)}
    )
    scopes += [(b.scope_kind, b.scope_value, b.currency) for b in budgets]
    return sorted(set(scopes), key=lambda s: (s[0] != "total", s))


def month_to_date(costs: DailyCosts, scope: tuple[str, str, str], first: date) -> float:
    kind, value, currency = scope
    f = costs.frame
    part = f[
        (f["scope_kind"] == kind)
        & (f["scope_value"] == value)
        & (f["currency"] == currency)
        & (f["day"].dt.date >= first)
    ]
    return float(part["cost"].sum())


def compute(
    con: duckdb.DuckDBPyConnection,
    as_of: date,
    settings: WatchSettings,
    *,
    since: date | None = None,
    horizon_days: int | None = None,
    with_backtest: bool = True,
    anomalies: bool = True,
) -> Watch:
    """Everything the watch finds for `as_of`, from the warehouse, writing nothing."""
    if horizon_days is not None and not 1 <= horizon_days <= MAX_FORECAST_HORIZON_DAYS:
        raise ValueError(
            f"the forecast horizon must be 1 to {MAX_FORECAST_HORIZON_DAYS} days, got {horizon_days}"
        )
    start = as_of - timedelta(days=settings.history_days - 1)
    if since is not None:  # anomalies judged from an earlier day need their comparison days too
        start = min(start, comparison_start(since, settings))
    costs = read_daily_costs(con, as_of, start)
    watch = Watch(as_of)
    if anomalies:
        watch.anomalies = find_anomalies(con, as_of, settings, since=since, costs=costs)
    budgets: list[Budget] = []
    if settings.budgets:
        try:
            budgets = read_budgets(settings.budgets)
        except BudgetsError as exc:
            watch.budgets_error = str(exc)
            log.error("budgets: the file is refused, no budget is checked: %s", exc)
    horizon = horizon_days or settings.forecast_horizon_days
    month_first = as_of.replace(day=1)
    month_last = month_ends(as_of, 31)[0][1]
    # The forecast reaches at least the month's end, whatever the horizon, for the budgets.
    horizon = max(horizon, (month_last - as_of).days, 1)
    scopes = forecast_targets(costs, budgets)
    watch.forecasts, watch.accuracy, watch.skipped = forecast_scopes(
        costs, scopes, horizon, settings.forecast_interval, settings.anomaly_months, with_backtest
    )
    by_scope = {(f.scope_kind, f.scope_value, f.currency): f for f in watch.forecasts}
    for budget in budgets:
        scope = (budget.scope_kind, budget.scope_value, budget.currency)
        actual = month_to_date(costs, scope, month_first)
        forecast = by_scope.get(scope)
        whole = None
        if forecast is not None:
            whole = actual + forecast.total(as_of + timedelta(days=1), month_last)[0]
        watch.budgets += statuses(budget, month_first, actual, whole)
    log.info(
        "watch: %d anomalies, %d scopes forecast %d days (%d skipped), %d backtest rows, "
        "%d budget thresholds (%d breached)%s",
        len(watch.anomalies),
        len(watch.forecasts),
        horizon,
        len(watch.skipped),
        len(watch.accuracy),
        len(watch.budgets),
        sum(s.breached for s in watch.budgets),
        f"; budgets refused: {watch.budgets_error}" if watch.budgets_error else "",
    )
    return watch


def forecast_rows(watch: Watch, run_id: str) -> list[dict[str, Any]]:
    rows = []
    for f in watch.forecasts:
        common = {
            "run_id": run_id,
            "as_of": watch.as_of,
            "scope_kind": f.scope_kind,
            "scope_value": f.scope_value,
            "currency": f.currency,
        }
        for i, day in enumerate(f.days):
            rows.append(
                common
                | {
                    "period": "day",
                    "day": day.date(),
                    "cost": round(float(f.cost[i]), 2),
                    "lower_cost": round(float(f.lower[i]), 2),
                    "upper_cost": round(float(f.upper[i]), 2),
                    "actual_cost": 0.0,
                }
            )
        for first, last in month_ends(watch.as_of, len(f.days)):
            cost, low, high = f.total(max(first, watch.as_of + timedelta(days=1)), last)
            billed = f.month_to_date if first <= watch.as_of else 0.0
            rows.append(
                common
                | {
                    "period": "month",
                    "day": first,
                    "cost": round(billed + cost, 2),
                    "lower_cost": round(billed + low, 2),
                    "upper_cost": round(billed + high, 2),
                    "actual_cost": round(billed, 2),
                }
            )
    return rows


def store(con: duckdb.DuckDBPyConnection, watch: Watch, run_id: str) -> dict[str, int]:
    """Replace this run's rows of the watch's tables."""
    anomaly_rows = [
        {
            "run_id": run_id,
            "as_of": watch.as_of,
            "scope_kind": a.scope_kind,
            "scope_value": a.scope_value,
            "currency": a.currency,
            "day": a.day,
            "kind": a.kind,
            "expected_cost": round(a.expected, 2),
            "actual_cost": round(a.actual, 2),
            "excess_cost": round(a.actual, 2) - round(a.expected, 2),
            "threshold_cost": round(a.threshold, 2),
            "history": a.history,
            "top_lines": top_lines_json(a),
            "alert_key": a.alert_key,
        }
        for a in watch.anomalies
    ]
    accuracy_rows = [{"run_id": run_id, "as_of": watch.as_of, **a.__dict__} for a in watch.accuracy]
    budget_rows = [
        {
            "run_id": run_id,
            "as_of": watch.as_of,
            "budget": s.budget.name,
            "scope_kind": s.budget.scope_kind,
            "scope_value": s.budget.scope_value,
            "currency": s.budget.currency,
            "month": s.month,
            "amount": round(s.budget.amount, 2),
            "actual_cost": round(s.actual, 2),
            "forecast_cost": None if s.forecast is None else round(s.forecast, 2),
            "threshold_basis": s.basis,
            "threshold_pct": s.threshold_pct,
            "breached": s.breached,
            "alert_key": s.alert_key,
        }
        for s in watch.budgets
    ]
    tables = {
        "spend_anomalies": anomaly_rows,
        "spend_forecasts": forecast_rows(watch, run_id),
        "spend_forecast_accuracy": accuracy_rows,
        "budget_status": budget_rows,
    }
    with transaction(con):
        for table, rows in tables.items():
            con.execute(f"delete from {table} where run_id = ?", [run_id])
            insert_rows(con, table, rows)
    written = {table: len(rows) for table, rows in tables.items()}
    log.info("watch: wrote %s", ", ".join(f"{n} rows to {t}" for t, n in written.items()))
    return written


def watch_spend(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    as_of: date,
    settings: WatchSettings,
    webhook: str | None,
) -> dict[str, Any]:
    """The nightly watch: compute, store, send the alerts not sent before; a summary for the run."""
    watch = compute(con, as_of, settings)
    written = store(con, watch, run_id)
    new_alerts = [alerts.Alert(a.alert_key, "anomaly", a.message()) for a in watch.anomalies] + [
        alerts.Alert(s.alert_key, "budget", s.message()) for s in watch.budgets if s.breached
    ]
    sent = alerts.send_new(con, new_alerts, run_id, webhook)
    return {
        "anomalies": len(watch.anomalies),
        "forecast_scopes": len(watch.forecasts),
        "budgets_breached": sum(s.breached for s in watch.budgets),
        "budgets_error": watch.budgets_error,
        "alerts_sent": sent["new"],
        "alerts_already_sent": sent["already_sent"],
        "alerts_delivered_late": sent["delivered_late"],  # logged before a webhook was set
        "alerts_failed": sent["failed"],
        "alerts_error": sent["error"],
        "written": written,
    }


def forecast_summary(watch: Watch, horizon_days: int) -> dict[str, Any]:
    """The `athanor forecast` JSON: per scope, the month to date, the whole month and the next days."""
    as_of = watch.as_of
    month_last = month_ends(as_of, 31)[0][1]
    scopes = []
    for f in watch.forecasts:
        rest = f.total(as_of + timedelta(days=1), month_last)
        ahead = f.total(as_of + timedelta(days=1), as_of + timedelta(days=horizon_days))
        scopes.append(
            {
                "scope": f"{f.scope_kind}:{f.scope_value}",
                "currency": f.currency,
                "month_to_date": round(f.month_to_date, 2),
                "rest_of_month": dict(
                    zip(("cost", "lower", "upper"), (round(v, 2) for v in rest), strict=True)
                ),
                "month": dict(
                    zip(
                        ("cost", "lower", "upper"), (round(f.month_to_date + v, 2) for v in rest), strict=True
                    )
                ),
                "next_days": dict(zip(("cost", "lower", "upper"), (round(v, 2) for v in ahead), strict=True)),
                "months": [
                    {
                        "month": first.isoformat()[:7],
                        **dict(
                            zip(
                                ("cost", "lower", "upper"),
                                (round(v, 2) for v in f.total(first, last)),
                                strict=True,
                            )
                        ),
                    }
                    for first, last in month_ends(as_of, horizon_days)
                    if first > as_of
                ],
            }
        )
    return {
        "as_of": as_of.isoformat(),
        "month": as_of.isoformat()[:7],
        "horizon_days": horizon_days,
        "interval": watch.forecasts[0].interval if watch.forecasts else None,
        "scopes": scopes,
        "skipped": watch.skipped,
        "backtest": [
            {
                "scope": f"{a.scope_kind}:{a.scope_value}",
                "currency": a.currency,
                "horizon_days": a.horizon_days,
                "folds": a.folds,
                "mape": None if a.mape is None else round(a.mape, 4),
                "coverage": None if a.coverage is None else round(a.coverage, 4),
            }
            for a in watch.accuracy
        ],
    }
