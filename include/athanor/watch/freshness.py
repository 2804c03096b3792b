"""Freshness of the bill: the last charge day of every provider and billing account, and which
stopped arriving (ATHANOR_FRESHNESS_MAX_LAG_DAYS; README "Spend watch").

A missing day is not a $0 day: the forecast trains on the days every account has billed and
forecasts the rest, and a stale account makes every budget's status unknown, since its missing
charges may belong to any scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import duckdb

from athanor.warehouse import sql


@dataclass(frozen=True)
class Freshness:
    provider: str
    billing_account: str
    last_charge_day: date
    lag_days: int  # as_of - last_charge_day
    stale: bool  # lag_days above the allowed lag

    def as_json(self) -> dict[str, object]:
        return {
            "provider": self.provider,
            "billing_account": self.billing_account,
            "last_charge_day": self.last_charge_day.isoformat(),
            "lag_days": self.lag_days,
            "stale": self.stale,
        }


def read_freshness(
    con: duckdb.DuckDBPyConnection, as_of: date, max_lag_days: int, history_days: int
) -> list[Freshness]:
    """Every account billed in the watch's history window up to as_of, with its lag.

    An account billed only before the window (closed, or moved) is no longer judged.
    """
    rows = con.execute(
        sql("watch/freshness"),
        {"start": as_of - timedelta(days=history_days - 1), "end": as_of + timedelta(days=1)},
    ).fetchall()
    return [
        Freshness(provider, account, last, (as_of - last).days, (as_of - last).days > max_lag_days)
        for provider, account, last in rows
    ]


def complete_through(freshness: list[Freshness], as_of: date) -> date:
    """The last day every account has billed (as_of when none lags): later days are forecast."""
    return min((f.last_charge_day for f in freshness), default=as_of)
