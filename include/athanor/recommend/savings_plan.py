"""Savings plans: one $/hour commitment shared by every pool, sized on the demand
reserved units leave (the conventions of ``athanor.recommend.commitments`` apply).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from athanor.recommend.commitments import HOURS_PER_MONTH, as_hourly


@dataclass(frozen=True)
class SavingsPlanPlan:
    """A $/hour savings-plan commitment across pools, sized on what reserved units leave."""

    hourly_commitment: float
    expected_cost: float  # $/month for the residual demand with the plan
    on_demand_cost: float  # $/month for the residual demand on on-demand
    savings: float
    savings_pct: float
    utilization: float  # commitment dollars used / committed
    coverage: float  # on-demand-equivalent spend covered / residual on-demand spend
    coverage_by_pool: dict[str, float]
    hours: int

    @property
    def estimated_monthly_savings_amount(self) -> float:
        return self.savings

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["estimated_monthly_savings_amount"] = self.savings
        out["estimated_savings_percentage"] = self.savings_pct
        return out


def apply_savings_plan(
    residual_units: np.ndarray, od_rates: np.ndarray, discounts: np.ndarray, hourly_commitment: float
) -> np.ndarray:
    """Units covered per hour and pool: each hour the commitment goes to the deepest discount first."""
    x = np.asarray(residual_units, dtype=float)
    sp_rates = od_rates * (1.0 - discounts)
    covered = np.zeros_like(x)
    remaining = np.full(x.shape[0], float(hourly_commitment))
    for j in np.argsort(-discounts, kind="stable"):
        if discounts[j] <= 0:
            continue
        take = np.minimum(x[:, j], remaining / sp_rates[j])
        covered[:, j] = take
        remaining = np.maximum(remaining - take * sp_rates[j], 0.0)
    return covered


def savings_plan_cost(
    residual_units: np.ndarray, od_rates: np.ndarray, discounts: np.ndarray, hourly_commitment: float
) -> float:
    """Σ_t [S + on-demand cost of what the plan leaves uncovered]."""
    covered = apply_savings_plan(residual_units, od_rates, discounts, hourly_commitment)
    uncovered_usd = ((residual_units - covered) * od_rates).sum()
    return float(hourly_commitment * residual_units.shape[0] + uncovered_usd)


def _optimal_sp_commitment(x: np.ndarray, od_rates: np.ndarray, discounts: np.ndarray) -> float:
    """Exact minimiser of the convex piecewise-linear cost: binary search on its slope over the kinks."""
    order = np.argsort(-discounts, kind="stable")
    order = order[discounts[order] > 0]
    if order.size == 0:
        return 0.0
    sp_rates = od_rates[order] * (1.0 - discounts[order])
    kinks = np.cumsum(x[:, order] * sp_rates, axis=1)  # S at which each pool is fully covered, per hour
    # Right slope of the hour's cost at S: 1 − 1/(1 − d_j) for the pool j being
    # covered (each $ of commitment buys 1/(1−d) $ of on-demand), 1 once all is covered.
    slope_of = np.append(1.0 - 1.0 / (1.0 - discounts[order]), 1.0)

    def slope(s: float) -> float:
        marginal = (kinks <= s).sum(axis=1)
        return float(slope_of[marginal].sum())

    candidates = np.unique(np.concatenate([[0.0], kinks.ravel()]))
    lo, hi = 0, candidates.size - 1  # slope(candidates[-1]) = H > 0
    while lo < hi:
        mid = (lo + hi) // 2
        if slope(candidates[mid]) >= 0:
            hi = mid
        else:
            lo = mid + 1
    return float(candidates[lo])


def pivot_demand(demand_by_pool: pd.DataFrame) -> pd.DataFrame:
    """Demand in long form (hour, pool, units) as one column per pool, 0 where a pool had none."""
    return demand_by_pool.pivot_table(
        index="hour", columns="pool", values="units", aggfunc="sum", fill_value=0.0
    )


def savings_plan_plan(
    demand_by_pool: pd.DataFrame,
    od_rate_by_pool: Mapping[str, float],
    sp_discount_by_pool: Mapping[str, float],
    ri_units_by_pool: Mapping[str, float | np.ndarray] | None = None,
    increment_usd: float = 0.001,
) -> SavingsPlanPlan:
    """Size a savings plan ($/h) on the demand left after reserved units (no double counting).

    ``demand_by_pool`` has columns hour, pool, units; ``ri_units_by_pool`` the
    reserved units (existing + recommended) per pool, a number or one value per
    hour in hour order. The commitment is rounded to ``increment_usd`` (AWS sells
    savings plans in $0.001/h steps), keeping the cheaper neighbour.
    """
    wide = pivot_demand(demand_by_pool)
    pools = [str(p) for p in wide.columns]
    u = wide.to_numpy(dtype=float)
    ri = np.zeros_like(u)
    for j, pool in enumerate(pools):
        if ri_units_by_pool and pool in ri_units_by_pool:
            ri[:, j] = as_hourly(ri_units_by_pool[pool], u.shape[0])
    x = np.maximum(u - ri, 0.0)
    od = np.array([float(od_rate_by_pool[p]) for p in pools])
    disc = np.array([float(sp_discount_by_pool.get(p, 0.0)) for p in pools])
    best = _optimal_sp_commitment(x, od, disc)
    if increment_usd > 0:
        lo = math.floor(best / increment_usd + 1e-9) * increment_usd
        hi = lo + increment_usd if not math.isclose(lo, best, abs_tol=1e-12) else lo
        best = min((lo, hi), key=lambda s: (savings_plan_cost(x, od, disc, s), s))
        best = round(best, max(0, -math.floor(math.log10(increment_usd))))
    hours = u.shape[0]
    per_month = HOURS_PER_MONTH / hours
    covered = apply_savings_plan(x, od, disc, best)
    od_cost = float((x * od).sum())
    cost = savings_plan_cost(x, od, disc, best)
    used_usd = float((covered * od * (1.0 - disc)).sum())
    by_pool = {
        p: float((covered[:, j] * od[j]).sum() / (x[:, j] * od[j]).sum()) if x[:, j].sum() > 0 else 0.0
        for j, p in enumerate(pools)
    }
    return SavingsPlanPlan(
        hourly_commitment=float(best),
        expected_cost=cost * per_month,
        on_demand_cost=od_cost * per_month,
        savings=(od_cost - cost) * per_month,
        savings_pct=100.0 * (od_cost - cost) / od_cost if od_cost > 0 else 0.0,
        utilization=used_usd / (best * hours) if best > 0 else 0.0,
        coverage=float((covered * od).sum()) / od_cost if od_cost > 0 else 0.0,
        coverage_by_pool=by_pool,
        hours=hours,
    )
