"""Daily cost series of the warehouse, per scope, read once for the anomalies and the forecast."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import duckdb
import numpy as np
import pandas as pd

from athanor.ingest.daily import daily_source
from athanor.warehouse import sql

SCOPE_KINDS = ("total", "service", "account", "team")
USAGE = "usage"
MONTH_START = "month_start"


@dataclass(frozen=True)
class DailyCosts:
    """Effective cost per scope, currency, day and kind; `first_day` is the first billed day."""

    frame: pd.DataFrame  # scope_kind, scope_value, currency, day (Timestamp), kind, cost
    first_day: date | None
    as_of: date

    def days(self) -> pd.DatetimeIndex:
        if self.first_day is None:
            return pd.DatetimeIndex([])
        return pd.date_range(self.first_day, self.as_of, freq="D")

    def wide(self, kind: str, scope_kinds: tuple[str, ...] = SCOPE_KINDS) -> pd.DataFrame:
        """Days x (scope_kind, scope_value, currency), a day without charges of a scope at 0.

        Days before the first billed day are not in the index: no bill is not a zero bill.
        """
        part = self.frame[(self.frame["kind"] == kind) & self.frame["scope_kind"].isin(scope_kinds)]
        wide = part.pivot_table(
            index="day", columns=["scope_kind", "scope_value", "currency"], values="cost", aggfunc="sum"
        )
        return wide.reindex(self.days()).fillna(0.0)


def read_daily_costs(con: duckdb.DuckDBPyConnection, as_of: date, start: date | None = None) -> DailyCosts:
    """The daily costs of [start, as_of] (every billed day up to as_of without a start)."""
    daily = daily_source(con)
    first = con.execute(
        f"select min(day) from {daily} where day < ?", [as_of + timedelta(days=1)]
    ).fetchone()[0]
    if first is None:
        # Typed like a read frame, so that `.dt` and sums work on it (budgets with no bill yet).
        empty = pd.DataFrame(
            {
                "scope_kind": pd.Series(dtype=object),
                "scope_value": pd.Series(dtype=object),
                "currency": pd.Series(dtype=object),
                "day": pd.Series(dtype="datetime64[ns]"),
                "kind": pd.Series(dtype=object),
                "cost": pd.Series(dtype=float),
            }
        )
        return DailyCosts(empty, None, as_of)
    start = max(start, first) if start else first
    frame = con.execute(
        sql("watch/daily_costs", daily=daily), {"start": start, "end": as_of + timedelta(days=1)}
    ).df()
    frame["day"] = pd.to_datetime(frame["day"])
    frame["cost"] = frame["cost"].astype(float)
    return DailyCosts(frame, start, as_of)


def month_start_of(day: date) -> date:
    return day.replace(day=1)


def add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def robust_spread(values: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Median and 1.4826 x MAD (the normal-consistent robust deviation), ignoring NaN."""
    median = np.nanmedian(values, axis=axis)
    mad = np.nanmedian(np.abs(values - np.expand_dims(median, axis)), axis=axis)
    return median, 1.4826 * mad


def latest_day(con: duckdb.DuckDBPyConnection) -> date | None:
    """The last day with charges: what the command-line watch judges up to."""
    return con.execute("select max(charge_period_start)::date from billing_facts").fetchone()[0]
