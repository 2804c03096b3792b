"""Walk-forward backtest of the commitment rule against the rules it competes with.

Each month the policies decide a commitment on the history so far and pay for
the next month; the hindsight optimum of that month is the yardstick.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from athanor.model.demand import forecast_next_month
from athanor.recommend.backtest_synthetic import SYNTHETIC_SCENARIOS, make_synthetic_demand
from athanor.recommend.commitments import commitment_cost, optimal_commitment

BACKTEST_POLICIES: tuple[str, ...] = ("athanor", "on_demand", "console", "minimum", "hindsight")


def _policy_commitment(
    policy: str,
    history: np.ndarray,
    future: np.ndarray,
    commit_rate: float,
    on_demand_rate: float,
    lookback_h: int,
    integer: bool,
) -> float:
    recent = history[-lookback_h:]
    if policy == "athanor":
        forecast = forecast_next_month(history, lookback_h=lookback_h, horizon_h=future.size)
        return optimal_commitment(forecast.units, commit_rate, on_demand_rate, integer)
    if policy == "on_demand":
        return 0.0
    if policy == "console":  # replay the last 30 days, take the best level in hindsight
        return optimal_commitment(recent, commit_rate, on_demand_rate, integer)
    if policy == "minimum":
        low = float(recent.min())
        return float(math.floor(low)) if integer else low
    if policy == "hindsight":
        return optimal_commitment(future, commit_rate, on_demand_rate, integer)
    raise ValueError(f"unknown policy {policy!r}; choose from {BACKTEST_POLICIES}")


def backtest(
    units_hourly: pd.Series,
    on_demand_rate: float,
    commit_rate: float,
    policies: Sequence[str] = BACKTEST_POLICIES,
    lookback_h: int = 720,
    integer: bool = True,
) -> pd.DataFrame:
    """Walk forward month by month: decide on data to the end of month m, pay for month m+1.

    One row per scored month and policy: commitment, realised cost, the
    all-on-demand and hindsight-optimal costs of that month, savings vs
    on-demand and regret vs the optimum (percent). The commitment is re-decided
    every month (a monthly re-sizing view of the rule, not a model of 1- or
    3-year lock-in).
    """
    series = units_hourly.sort_index().astype(float)
    index = pd.DatetimeIndex(series.index)
    if index.tz is not None:
        index = index.tz_convert("UTC").tz_localize(None)
    months = index.to_period("M")
    values = series.to_numpy()
    rows = []
    unique_months = months.unique().sort_values()
    for m, nxt in zip(unique_months[:-1], unique_months[1:], strict=True):
        history = values[months <= m]
        future = values[months == nxt]
        if history.size < lookback_h or future.size == 0:
            continue
        on_demand = commitment_cost(future, 0.0, commit_rate, on_demand_rate)
        best = commitment_cost(
            future,
            optimal_commitment(future, commit_rate, on_demand_rate, integer),
            commit_rate,
            on_demand_rate,
        )
        for policy in policies:
            c = _policy_commitment(policy, history, future, commit_rate, on_demand_rate, lookback_h, integer)
            cost = commitment_cost(future, c, commit_rate, on_demand_rate)
            rows.append(
                {
                    "decided_at": str(m),
                    "month": str(nxt),
                    "policy": policy,
                    "commit_units": c,
                    "cost_usd": cost,
                    "on_demand_cost_usd": on_demand,
                    "optimal_cost_usd": best,
                    "savings_vs_on_demand_pct": 100.0 * (on_demand - cost) / on_demand
                    if on_demand > 0
                    else 0.0,
                    "regret_pct": 100.0 * (cost - best) / best if best > 0 else 0.0,
                }
            )
    return pd.DataFrame(rows)


def summarize_backtest(table: pd.DataFrame) -> pd.DataFrame:
    """Totals per policy over all scored months (percentages of the summed costs)."""
    sums = table.groupby("policy", sort=False)[["cost_usd", "on_demand_cost_usd", "optimal_cost_usd"]].sum()
    sums["savings_vs_on_demand_pct"] = (
        100.0 * (sums["on_demand_cost_usd"] - sums["cost_usd"]) / sums["on_demand_cost_usd"]
    )
    sums["regret_pct"] = 100.0 * (sums["cost_usd"] - sums["optimal_cost_usd"]) / sums["optimal_cost_usd"]
    return sums.reset_index()


def backtest_synthetic_scenarios(on_demand_rate: float, commit_rate: float, seed: int = 0) -> pd.DataFrame:
    """``backtest`` on every synthetic demand shape, at the prices the caller chose.

    One frame, the rows of each shape in ``SYNTHETIC_SCENARIOS`` order, with a
    ``scenario`` column naming the shape (empty when no shape scored a month).
    """
    frames = [
        backtest(make_synthetic_demand(name, seed=seed), on_demand_rate, commit_rate).assign(scenario=name)
        for name in SYNTHETIC_SCENARIOS
    ]
    scored = [f for f in frames if not f.empty]
    return pd.concat(scored, ignore_index=True) if scored else pd.DataFrame()
