"""Daily cost anomalies per service, account and team, against their own seasonal expectation.

Usage lines (`kind` usage) of a day are compared with the same weekday of the weeks before it:
a fleet that runs less at weekends, or a batch that runs every Saturday, is its own pattern, not
news. Purchases, commitment fees, tax, credits and adjustments (`kind` month_start) land on known
days of the billing cycle; a month's are compared with the months before, like with like, so the
1st is not flagged every month. A day is an anomaly when its excess over the median is above all
three bounds of `WatchSettings`: k x 1.4826 x MAD (a robust z-score), min_jump x the median and
min_increase. Costs are effective (amortised) cost, as in the rest of the report.
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from athanor.settings import WatchSettings
from athanor.warehouse import sql
from athanor.watch.series import MONTH_START, USAGE, DailyCosts, add_months, read_daily_costs

log = logging.getLogger(__name__)

ANOMALY_SCOPES = ("service", "account", "team")
TOP_LINES = 5


@dataclass(frozen=True)
class Anomaly:
    scope_kind: str
    scope_value: str
    currency: str
    day: date
    kind: str  # usage | month_start
    expected: float
    actual: float
    threshold: float
    history: int  # days or months compared with
    compared: tuple[date, ...] = field(repr=False, default=())  # the days (usage) or months compared
    top_lines: tuple[dict[str, Any], ...] = ()

    @property
    def excess(self) -> float:
        return self.actual - self.expected

    @property
    def scope(self) -> str:
        return f"{self.scope_kind}:{self.scope_value}"

    @property
    def alert_key(self) -> str:
        return f"anomaly:{self.kind}:{self.scope}:{self.currency}:{self.day.isoformat()}"

    def as_json(self) -> dict[str, Any]:
        """The CLI's shape; amounts in the billing currency (named), rounded to the cent once."""
        return {
            "day": self.day.isoformat(),
            "scope": self.scope,
            "kind": self.kind,
            "currency": self.currency,
            "expected_usd": round(self.expected, 2),
            "actual_usd": round(self.actual, 2),
            "excess_usd": round(self.excess, 2),
            "top_lines": list(self.top_lines),
        }

    def message(self) -> str:
        what = "month-start charges" if self.kind == MONTH_START else "daily cost"
        lines = "; ".join(f"{describe_line(t)} +{t['excess']:,.2f}" for t in self.top_lines[:3])
        return (
            f"Athanor spend anomaly: {self.scope} {what} on {self.day.isoformat()}: "
            f"{self.currency} {self.actual:,.2f} vs {self.expected:,.2f} expected "
            f"(+{self.excess:,.2f})" + (f"; top lines: {lines}" if lines else "")
        )


def describe_line(top: dict[str, Any]) -> str:
    """'Amazon EC2 USE1-BoxUsage:p4d.24xlarge (16 resources)', or naming the one resource."""
    where = top.get("resource_id") or (f"{top['resources']} resources" if top.get("resources", 0) > 1 else "")
    return f"{top['service']} {top['line']}" + (f" ({where})" if where else "")


def _bounds(expected: np.ndarray, spread: np.ndarray, bounds: WatchSettings) -> np.ndarray:
    return np.maximum.reduce(
        [
            bounds.anomaly_k * spread,
            bounds.anomaly_min_jump * np.abs(expected),
            np.full_like(expected, bounds.anomaly_min_increase),
        ]
    )


def _stats(history: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median, 1.4826 x MAD and count over the last axis, NaN (no history) left out."""
    count = np.sum(~np.isnan(history), axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: no history, no verdict
        median = np.nanmedian(history, axis=-1)
        mad = np.nanmedian(np.abs(history - median[..., None]), axis=-1)
    return median, 1.4826 * mad, count


def usage_anomalies(costs: DailyCosts, since: date, bounds: WatchSettings) -> list[Anomaly]:
    """Usage days in [since, as_of] above their same-weekday expectation."""
    wide = costs.wide(USAGE, ANOMALY_SCOPES)
    if wide.empty:
        return []
    values = wide.to_numpy()
    n_days = len(values)
    weeks = bounds.anomaly_weeks
    # history[d, s, k]: the cost k+1 weeks before day d (NaN before the first billed day).
    history = np.full((n_days, values.shape[1], weeks), np.nan)
    for k in range(1, weeks + 1):
        lag = 7 * k
        if lag < n_days:
            history[lag:, :, k - 1] = values[:-lag]
    expected, spread, count = _stats(history)
    threshold = _bounds(expected, spread, bounds)
    judged = (count >= bounds.anomaly_min_weeks) & (wide.index.date >= since)[:, None]
    flagged = judged & (values - expected > threshold)
    out = []
    for d, s in zip(*np.nonzero(flagged), strict=True):
        scope_kind, scope_value, currency = wide.columns[s]
        day = wide.index[d].date()
        compared = tuple(day - timedelta(days=7 * k) for k in range(1, weeks + 1) if 7 * k <= d)
        out.append(
            Anomaly(
                scope_kind,
                scope_value,
                currency,
                day,
                USAGE,
                float(expected[d, s]),
                float(values[d, s]),
                float(threshold[d, s]),
                int(count[d, s]),
                compared,
            )
        )
    return out


def month_start_anomalies(costs: DailyCosts, since: date, bounds: WatchSettings) -> list[Anomaly]:
    """A month's purchase, fee, tax, credit and adjustment charges above those of the months before.

    Judged on the first day they land in the month, when that day is in [since, as_of]; a month
    before the first billed one is no history.
    """
    frame = costs.frame[(costs.frame["kind"] == MONTH_START) & costs.frame["scope_kind"].isin(ANOMALY_SCOPES)]
    if frame.empty or costs.first_day is None:
        return []
    frame = frame.assign(month=frame["day"].dt.to_period("M"))
    monthly = frame.groupby(["scope_kind", "scope_value", "currency", "month"]).agg(
        cost=("cost", "sum"), day=("day", "min")
    )
    first_month = pd.Period(costs.first_day, "M")
    out = []
    for (scope_kind, scope_value, currency), group in monthly.groupby(level=[0, 1, 2]):
        by_month = group.droplevel([0, 1, 2])
        for month, row in by_month.iterrows():
            day = row["day"].date()
            if day < since:
                continue
            past = [month - k for k in range(1, bounds.anomaly_months + 1) if month - k >= first_month]
            if len(past) < bounds.anomaly_min_months:
                continue
            # A past month without such charges had none: 0, not missing.
            history = np.array([float(by_month["cost"].get(m, 0.0)) for m in past])
            expected, spread, _ = _stats(history[None, :])
            threshold = _bounds(expected, spread, bounds)[0]
            actual = float(row["cost"])
            if actual - expected[0] > threshold:
                out.append(
                    Anomaly(
                        scope_kind,
                        scope_value,
                        currency,
                        day,
                        MONTH_START,
                        float(expected[0]),
                        actual,
                        float(threshold),
                        len(past),
                        tuple(m.start_time.date() for m in past),
                    )
                )
    return out


_SCOPE_COLUMN = {"service": "service", "account": "account", "team": "team"}


def top_lines(con: duckdb.DuckDBPyConnection, anomaly: Anomaly, limit: int = TOP_LINES) -> list[dict]:
    """The line groups that caused the excess: each group's cost against its own median over the
    same days (or months) the anomaly was compared with, the largest excess first."""
    if anomaly.kind == USAGE:
        days = [anomaly.day, *anomaly.compared]
        period = {d: d for d in days}
    else:
        # Month-start charges: every day of the anomaly's month and of the months compared.
        months = [anomaly.day.replace(day=1), *anomaly.compared]
        days, period = [], {}
        for m in months:
            end = add_months(m, 1)
            for i in range((end - m).days):
                d = m + timedelta(days=i)
                days.append(d)
                period[d] = m
    rows = con.execute(
        sql("watch/top_lines", scope_column=_SCOPE_COLUMN[anomaly.scope_kind]),
        {
            "currency": anomaly.currency,
            "first": min(days),
            "last": max(days),
            "scope_value": anomaly.scope_value,
            "kind": anomaly.kind,
            "days": days,
        },
    ).df()
    if rows.empty:
        return []
    rows["period"] = [period[pd.Timestamp(d).date()] for d in rows["day"]]
    here = anomaly.day if anomaly.kind == USAGE else anomaly.day.replace(day=1)
    # Grouped by service and usage type (or description): a job on sixteen instances is one cause
    # with sixteen resources, named when there is one.
    pivot = rows.pivot_table(index=["service", "line"], columns="period", values="cost", aggfunc="sum")
    on_day = rows[(rows["period"] == here) & (rows["cost"] != 0)]
    resources = on_day.groupby(["service", "line"])["resource_id"].agg(lambda ids: sorted(set(ids.dropna())))
    compared = list(anomaly.compared)
    # A group absent on a compared day (or month) cost nothing then: 0, not missing.
    pivot = pivot.reindex(columns=[here, *compared]).fillna(0.0)
    cost = pivot[here]
    expected = pivot[compared].median(axis=1) if compared else cost * 0.0
    excess = (cost - expected).sort_values(ascending=False)
    out = []
    for key in excess.index[:limit]:
        if excess[key] <= 0:
            break
        service, line = key
        ids = resources.get(key, [])
        out.append(
            {
                "service": service,
                "line": line,
                "resource_id": ids[0] if len(ids) == 1 else None,
                "resources": len(ids),
                "cost": round(float(cost[key]), 2),
                "expected": round(float(expected[key]), 2),
                "excess": round(float(excess[key]), 2),
            }
        )
    return out


def comparison_start(since: date, bounds: WatchSettings) -> date:
    """The first day the anomalies of the days from `since` are compared with: the weeks before
    it (usage) and the months before its month (month-start charges)."""
    return min(
        since - timedelta(days=7 * bounds.anomaly_weeks),
        add_months(since.replace(day=1), -bounds.anomaly_months),
    )


def find_anomalies(
    con: duckdb.DuckDBPyConnection,
    as_of: date,
    bounds: WatchSettings,
    since: date | None = None,
    costs: DailyCosts | None = None,
) -> list[Anomaly]:
    """Every anomaly of the days [since, as_of] (the lookback's days by default), with its top lines."""
    since = since or as_of - timedelta(days=bounds.anomaly_lookback_days - 1)
    if costs is None:
        costs = read_daily_costs(con, as_of, comparison_start(since, bounds))
    found = usage_anomalies(costs, since, bounds) + month_start_anomalies(costs, since, bounds)
    found = [
        Anomaly(**{**a.__dict__, "top_lines": tuple(top_lines(con, a))})
        for a in sorted(found, key=lambda a: (a.day, -(a.actual - a.expected), a.scope))
    ]
    log.info(
        "anomalies: judged %s to %s per service, account and team: %d found (%d usage, %d month-start)",
        since,
        as_of,
        len(found),
        sum(a.kind == USAGE for a in found),
        sum(a.kind == MONTH_START for a in found),
    )
    return found


def top_lines_json(anomaly: Anomaly) -> str:
    return json.dumps(list(anomaly.top_lines))
