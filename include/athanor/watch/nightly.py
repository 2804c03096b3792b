"""The `watch_spend` stage's work: find anomalies, forecast, hold budgets, store, alert once."""

from __future__ import annotations

import logging
import math
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
from athanor.watch.freshness import Freshness, complete_through, read_freshness
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
    freshness: list[Freshness] = field(default_factory=list)
    complete_through: date | None = None  # the last day every account has billed; later ones are forecast

    @property
    def stale(self) -> list[Freshness]:
        return [f for f in self.freshness if f.stale]


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
    watch.freshness = read_freshness(con, as_of, settings.freshness_max_lag_days, settings.history_days)
    complete = watch.complete_through = complete_through(watch.freshness, as_of)
    for f in watch.stale:
        log.warning(
            "watch: the bill of %s account %s stopped arriving: last charge day %s, %d days before %s "
            "(allowed: %d); its budgets read unknown",
            f.provider,
            f.billing_account,
            f.last_charge_day,
            f.lag_days,
            as_of,
            settings.freshness_max_lag_days,
        )
    if anomalies:
        watch.anomalies = find_anomalies(con, as_of, settings, since=since, costs=costs)
    # A day some account has not billed yet is not a $0 day: the forecast trains on the days
    # every account has billed and forecasts the others, up to as_of and beyond.
    if complete < as_of:
        billed = costs.frame[costs.frame["day"].dt.date <= complete]
        first = costs.first_day if costs.first_day and costs.first_day <= complete else None
        costs = DailyCosts(billed if first else billed.iloc[:0], first, complete)
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
    # The forecast reaches at least the month's end, whatever the horizon, for the budgets, and
    # starts the day after the last complete one.
    horizon = max(horizon + (as_of - complete).days, (month_last - complete).days, 1)
    scopes = forecast_targets(costs, budgets)
    watch.forecasts, watch.accuracy, watch.skipped = forecast_scopes(
        costs,
        scopes,
        horizon,
        settings.forecast_interval,
        settings.anomaly_months,
        with_backtest,
        month_first=month_first,
    )
    by_scope = {(f.scope_kind, f.scope_value, f.currency): f for f in watch.forecasts}
    rest_from = max(complete + timedelta(days=1), month_first)
    for budget in budgets:
        scope = (budget.scope_kind, budget.scope_value, budget.currency)
        actual = month_to_date(costs, scope, month_first)
        forecast = by_scope.get(scope)
        whole = None
        if forecast is not None:
            whole = actual + forecast.total(rest_from, month_last)[0]
        watch.budgets += statuses(budget, month_first, actual, whole, unknown=bool(watch.stale))
    log.info(
        "watch: %d anomalies, %d scopes forecast %d days (%d skipped), %d backtest rows, "
        "%d budget thresholds (%d breached, %d unknown), %d of %d billing accounts stale%s",
        len(watch.anomalies),
        len(watch.forecasts),
        horizon,
        len(watch.skipped),
        len(watch.accuracy),
        len(watch.budgets),
        sum(s.breached for s in watch.budgets),
        sum(s.unknown for s in watch.budgets),
        len(watch.stale),
        len(watch.freshness),
        f"; budgets refused: {watch.budgets_error}" if watch.budgets_error else "",
    )
    return watch


def to_the_cent(total: float, parts: list[float]) -> list[float]:
    """`parts` rounded to cents so that they add up to `total` rounded (largest remainders first).

    The reconciled parts add up to the total before rounding; rounded one by one, five teams
    could miss it by up to 2.5 cents.
    """
    cents = [p * 100 for p in parts]
    floors = [math.floor(c) for c in cents]
    left = round(total * 100) - sum(floors)
    order = sorted(range(len(parts)), key=lambda i: (floors[i] - cents[i], i))
    for i in order[: max(0, min(left, len(parts)))]:
        floors[i] += 1
    if parts and not 0 <= left <= len(parts):  # float error beyond a cent a part: the largest absorbs it
        floors[max(range(len(parts)), key=lambda i: abs(parts[i]))] += left - max(0, min(left, len(parts)))
    return [f / 100 for f in floors]


def _cents(
    rows: list[dict[str, Any]],
    key: tuple[str, ...],
    fields: tuple[str, ...],
    bounds: dict[str, tuple[str, ...]] | None = None,
) -> None:
    """Round `fields` of each row in place; the team rows of a group (same `key` values) to add up
    to the total's row of the group. A cent moved moves the field's `bounds` with it, so that the
    interval still holds its point."""
    groups: dict[tuple, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        group = groups.setdefault(tuple(row[k] for k in key), {"total": [], "team": []})
        if row["scope_kind"] in group:
            group[row["scope_kind"]].append(row)
    for row in rows:
        for name in fields:
            row[f"_{name}"] = row[name]
            row[name] = round(row[name], 2)
    for group in groups.values():
        if len(group["total"]) != 1 or not group["team"]:
            continue
        (total,) = group["total"]
        for name in fields:
            shares = to_the_cent(total[f"_{name}"], [r[f"_{name}"] for r in group["team"]])
            for r, value in zip(group["team"], shares, strict=True):
                moved = value - r[name]
                r[name] = value
                for bound in [b for b in (bounds or {}).get(name, ()) if b in r]:
                    r[bound] = round(r[bound] + moved, 2)
    for row in rows:
        for name in fields:
            del row[f"_{name}"]


def forecast_rows(watch: Watch, run_id: str) -> list[dict[str, Any]]:
    """spend_forecasts' rows: each day forecast, and each month (billed to date + forecast); the
    teams' costs add up to the total's to the cent."""
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
                    "cost": float(f.cost[i]),
                    "lower_cost": round(float(f.lower[i]), 2),
                    "upper_cost": round(float(f.upper[i]), 2),
                    "actual_cost": 0.0,
                }
            )
        start = f.days[0].date()
        for first, last in month_ends(watch.as_of, (f.days[-1].date() - watch.as_of).days):
            cost, low, high = f.total(max(first, start), last)
            billed = f.month_to_date if first <= watch.as_of else 0.0
            rows.append(
                common
                | {
                    "period": "month",
                    "day": first,
                    "cost": billed + cost,
                    "lower_cost": round(billed + low, 2),
                    "upper_cost": round(billed + high, 2),
                    "actual_cost": billed,
                }
            )
    _cents(
        rows, ("currency", "period", "day"), ("cost", "actual_cost"), {"cost": ("lower_cost", "upper_cost")}
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
            "status": s.status,
            "alert_key": s.alert_key,
        }
        for s in watch.budgets
    ]
    freshness_rows = [{"run_id": run_id, "as_of": watch.as_of, **f.__dict__} for f in watch.freshness]
    tables = {
        "spend_anomalies": anomaly_rows,
        "spend_forecasts": forecast_rows(watch, run_id),
        "spend_forecast_accuracy": accuracy_rows,
        "budget_status": budget_rows,
        "spend_freshness": freshness_rows,
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
        "budgets_unknown": sum(s.unknown for s in watch.budgets),
        "stale_billing_accounts": [f"{f.provider}:{f.billing_account}" for f in watch.stale],
        "alerts_sent": sent["new"],
        "alerts_already_sent": sent["already_sent"],
        "alerts_delivered_late": sent["delivered_late"],  # logged before a webhook was set
        "alerts_failed": sent["failed"],
        "alerts_error": sent["error"],
        "written": written,
    }


def forecast_summary(watch: Watch, horizon_days: int) -> dict[str, Any]:
    """The `athanor forecast` JSON: per scope, the month to date, the whole month and the next days
    (the teams' costs adding up to the total's to the cent), the backtest per scope and horizon,
    and the bill's freshness per provider and billing account."""
    as_of = watch.as_of
    month_last = month_ends(as_of, 31)[0][1]
    scopes = []
    # every published cost, grouped by currency and figure: the teams' must add up to the total's
    figures: list[dict[str, Any]] = []

    def figure(
        f: ScopeForecast, name: str, values: tuple[float, float, float], **first: str
    ) -> dict[str, Any]:
        cost, low, high = values
        out: dict[str, Any] = {**first, "cost": cost}
        figures.append({"scope_kind": f.scope_kind, "currency": f.currency, "figure": name, "row": out})
        out["lower"], out["upper"] = low, high
        return out

    for f in watch.forecasts:
        start = f.days[0].date()
        rest = f.total(start, month_last)
        ahead = f.total(as_of + timedelta(days=1), as_of + timedelta(days=horizon_days))
        billed = {"scope_kind": f.scope_kind, "currency": f.currency, "figure": "mtd", "row": {}}
        billed["row"]["cost"] = f.month_to_date
        figures.append(billed)
        scope = {
            "scope": f"{f.scope_kind}:{f.scope_value}",
            "currency": f.currency,
            "month_to_date": billed["row"],
            "rest_of_month": figure(f, "rest", rest),
            "month": figure(f, "month", tuple(f.month_to_date + v for v in rest)),
            "next_days": figure(f, "next", ahead),
            "months": [
                figure(f, f"m{first}", f.total(first, last), month=first.isoformat()[:7])
                for first, last in month_ends(as_of, horizon_days)
                if first > as_of
            ],
        }
        scopes.append(scope)
    for item in figures:
        item |= {k: item["row"][k] for k in ("cost", "lower", "upper") if k in item["row"]}
    for item in figures:  # the bounds are rounded alone; the costs add up across the teams
        for bound in ("lower", "upper"):
            if bound in item:
                item[bound] = round(item[bound], 2)
    _cents(figures, ("currency", "figure"), ("cost",), {"cost": ("lower", "upper")})
    for item in figures:
        item["row"].update({k: item[k] for k in ("cost", "lower", "upper") if k in item})
    for scope in scopes:
        scope["month_to_date"] = scope["month_to_date"]["cost"]
    return {
        "as_of": as_of.isoformat(),
        "month": as_of.isoformat()[:7],
        "horizon_days": horizon_days,
        "interval": watch.forecasts[0].interval if watch.forecasts else None,
        "complete_through": None if watch.complete_through is None else watch.complete_through.isoformat(),
        "scopes": scopes,
        "skipped": watch.skipped,
        "backtest": [
            {
                "scope": f"{a.scope_kind}:{a.scope_value}",
                "currency": a.currency,
                "horizon_days": a.horizon_days,
                "folds": a.folds,
                "mape": None if a.mape is None else round(a.mape, 4),
                "interval_coverage": None if a.coverage is None else round(a.coverage, 4),
            }
            for a in watch.accuracy
        ],
        "freshness": [f.as_json() for f in watch.freshness],
    }
