"""Commitments for one pool: how many reserved units to buy, on which term.

Units and conventions:
- demand is in *units* per hour (instance-hours normalised to the pool's size);
  rates are $ per unit-hour; a commitment rate is the effective hourly rate with
  any upfront payment amortised over the term (what AWS calls the effective
  hourly rate).
- money fields of plans are per 730-hour month (AWS's billing month) unless
  named otherwise; ``*_pct`` / ``*_percentage`` are percent (0-100);
  ``utilization`` and ``coverage`` are fractions.
- the fees of commitments already held are sunk: a plan's ``expected_cost`` and
  ``on_demand_cost`` cover only the demand those commitments leave uncovered.
- a unit bought at ``p_c`` instead of ``p_od`` pays for itself when it is used more
  than ``p_c/p_od`` of the hours (its break-even utilisation). The cost-optimal
  quantity (newsvendor) buys every unit that clears that bar, so the last one is
  used just above it and the average can sit well below 100 %; a utilisation floor
  (``min_utilization``) buys fewer units when the reader wants more margin.
- break-even months exist only where something is paid upfront (None otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from athanor.reference.vocabulary import HOURS_PER_MONTH

HOURS_PER_YEAR = 8760.0


# =========================================================== one pool, one rate


def as_hourly(values: float | Sequence[float] | np.ndarray, hours: int) -> np.ndarray:
    """A scalar spread over ``hours``, or ``hours`` values checked for length."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 0:
        return np.full(hours, float(arr))
    if arr.shape != (hours,):
        raise ValueError(f"expected a scalar or {hours} hourly values, got shape {arr.shape}")
    return arr


def commitment_cost(
    units: Sequence[float] | np.ndarray,
    commitment_units: float,
    commit_rate: float,
    on_demand_rate: float,
    existing_units: float | Sequence[float] | np.ndarray = 0.0,
) -> float:
    """Cost over the hours given: c·p_c·H + p_od·Σ max(u_t − e_t − c, 0) (existing fees excluded)."""
    u = np.asarray(units, dtype=float)
    residual = np.maximum(u - as_hourly(existing_units, u.size), 0.0)
    uncovered = np.maximum(residual - commitment_units, 0.0).sum()
    return float(commitment_units * commit_rate * u.size + on_demand_rate * uncovered)


def optimal_commitment(
    units: Sequence[float] | np.ndarray, commit_rate: float, on_demand_rate: float, integer: bool = True
) -> float:
    """Cost-minimising commitment: the d-quantile of demand, d = 1 − p_c/p_od (newsvendor).

    The cost is convex piecewise linear with slope p_c·H − p_od·#{u_t > c}, so
    the smallest minimiser is the sorted demand at rank ceil(H·d) (the lower
    end of the flat stretch when H·d is a whole number: the smaller commitment
    carries less risk for the same cost). Commitments are bought in whole
    units: by convexity the best integer is the floor or the ceiling of it.
    """
    u = np.sort(np.asarray(units, dtype=float))
    if u.size == 0 or commit_rate >= on_demand_rate:
        return 0.0
    d = 1.0 - commit_rate / on_demand_rate
    rank = max(math.ceil(u.size * d - 1e-9), 1)  # 1-based; the epsilon absorbs 5*0.4 = 2.0000000000000004
    best = max(float(u[rank - 1]), 0.0)
    if not integer:
        return best
    lo, hi = math.floor(best), math.ceil(best)
    if lo == hi:
        return float(lo)
    cost_lo = commitment_cost(u, lo, commit_rate, on_demand_rate)
    cost_hi = commitment_cost(u, hi, commit_rate, on_demand_rate)
    return float(hi if cost_hi < cost_lo - 1e-9 * max(abs(cost_lo), 1.0) else lo)


def brute_force_commitment(
    units: Sequence[float] | np.ndarray, commit_rate: float, on_demand_rate: float, integer: bool = True
) -> float:
    """Test oracle: evaluate every candidate (every integer, or every kink of the cost) and keep the cheapest."""
    u = np.asarray(units, dtype=float)
    if integer:
        candidates = np.arange(0, math.ceil(u.max(initial=0.0)) + 1, dtype=float)
    else:
        candidates = np.unique(np.concatenate([[0.0], np.maximum(u, 0.0)]))
    costs = np.array([commitment_cost(u, c, commit_rate, on_demand_rate) for c in candidates])
    best = costs.min()
    # Ties: the smallest commitment, as in optimal_commitment.
    return float(candidates[np.nonzero(costs <= best + 1e-9 * max(abs(best), 1.0))[0][0]])


@dataclass(frozen=True)
class CommitPlan:
    """A commitment purchase for one pool, named as AWS's reservation recommendations name things."""

    commit_units: float  # recommended quantity to buy, net of commitments already held
    existing_units: float  # average units already held over the horizon
    term_months: int
    payment_option: str
    commit_rate: float  # effective $/unit-hour, upfront amortised
    on_demand_rate: float
    expected_cost: float  # $/month with the purchase
    on_demand_cost: float  # $/month without it
    savings: float  # $/month
    savings_pct: float
    utilization: float  # used / held commitment hours (existing + new)
    coverage: float  # demand hours covered by commitments / demand hours
    break_even_months: float | None  # None: nothing paid upfront (or it never pays back)
    upfront_cost: float
    recurring_hourly_cost: float
    hours: int  # hours the plan was evaluated on
    purchase_utilization: float = 0.0  # used / held hours of the units bought (0 without any)
    cost_optimal_units: float = 0.0  # the newsvendor quantity, before the utilisation floor
    min_utilization: float = 0.0  # the floor applied to purchase_utilization

    @property
    def break_even_utilization(self) -> float:
        """p_c / p_od: the share of hours a unit must be used to cost less than on-demand."""
        return self.commit_rate / self.on_demand_rate if self.on_demand_rate > 0 else 0.0

    @property
    def estimated_monthly_savings_amount(self) -> float:
        return self.savings

    @property
    def estimated_savings_percentage(self) -> float:
        return self.savings_pct

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["estimated_monthly_savings_amount"] = self.savings
        out["estimated_savings_percentage"] = self.savings_pct
        out["recommended_quantity"] = self.commit_units
        out["break_even_utilization"] = self.break_even_utilization
        return out


def purchase_utilization(residual: np.ndarray, units: float) -> float:
    """Share of the bought units' hours that demand uses (they cover what existing ones leave)."""
    if units <= 0 or residual.size == 0:
        return 0.0
    return float(np.minimum(residual, units).sum() / (units * residual.size))


def units_meeting_floor(residual: np.ndarray, units: float, floor: float, integer: bool = True) -> float:
    """The largest quantity up to ``units`` whose purchase utilisation is at least ``floor``.

    Utilisation only falls as units are added (each covers hours the previous ones left), so
    the answer is found by stepping down whole units, or by bisection for fractional ones.
    """
    if floor <= 0 or units <= 0 or purchase_utilization(residual, units) >= floor:
        return units
    if integer:
        c = math.floor(units)
        while c > 0 and purchase_utilization(residual, c) < floor:
            c -= 1
        return float(c)
    lo, hi = 0.0, float(units)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if purchase_utilization(residual, mid) >= floor else (lo, mid)
    return lo


def commit_plan(
    units: Sequence[float] | np.ndarray,
    on_demand_rate: float,
    commit_rate: float,
    existing_units: float | Sequence[float] | np.ndarray = 0.0,
    upfront_fraction: float = 0.0,
    term_months: int = 12,
    payment_option: str | None = None,
    integer: bool = True,
    min_utilization: float = 0.0,
) -> CommitPlan:
    """Recommend a commitment for one pool by hour-by-hour simulation.

    ``units`` is the demand expected over the horizon (history used as a
    forecast, or ``term_demand(...)``); ``existing_units`` the commitments
    already held in each of those hours (0 after they expire), netted out hour
    by hour before sizing the purchase. ``min_utilization``: buy only as many
    units as are expected to be used at least that share of their hours.
    """
    u = np.asarray(units, dtype=float)
    hours = u.size
    if hours == 0:
        raise ValueError("no demand hours")
    if not 0.0 <= min_utilization <= 1.0:
        raise ValueError(f"min_utilization must be between 0 and 1, got {min_utilization}")
    existing = as_hourly(existing_units, hours)
    residual = np.maximum(u - existing, 0.0)
    optimum = optimal_commitment(residual, commit_rate, on_demand_rate, integer=integer)
    c = units_meeting_floor(residual, optimum, min_utilization, integer=integer)
    per_month = HOURS_PER_MONTH / hours
    held = existing + c
    covered = np.minimum(u, held)
    on_demand_cost = on_demand_rate * residual.sum() * per_month
    expected_cost = commitment_cost(u, c, commit_rate, on_demand_rate, existing) * per_month
    savings = on_demand_cost - expected_cost
    upfront = upfront_fraction * c * commit_rate * term_months * HOURS_PER_MONTH
    recurring_h = (1.0 - upfront_fraction) * c * commit_rate
    # Break-even: months until the on-demand spend avoided by the purchase has
    # paid its upfront part, net of the recurring fee (0 without upfront).
    avoided_month = on_demand_rate * (np.minimum(residual, c).sum()) * per_month
    net_month = avoided_month - recurring_h * HOURS_PER_MONTH
    if c == 0 or upfront <= 0:
        break_even = None  # nothing paid upfront: nothing to pay back
    elif net_month > 0:
        break_even = upfront / net_month
    else:
        break_even = None
    if payment_option is None:
        payment_option = (
            "no_upfront"
            if upfront_fraction == 0
            else "all_upfront"
            if upfront_fraction >= 1
            else "partial_upfront"
        )
    return CommitPlan(
        commit_units=float(c),
        existing_units=float(existing.mean()),
        term_months=int(term_months),
        payment_option=payment_option,
        commit_rate=float(commit_rate),
        on_demand_rate=float(on_demand_rate),
        expected_cost=float(expected_cost),
        on_demand_cost=float(on_demand_cost),
        savings=float(savings),
        savings_pct=float(100.0 * savings / on_demand_cost) if on_demand_cost > 0 else 0.0,
        utilization=float(covered.sum() / held.sum()) if held.sum() > 0 else 0.0,
        coverage=float(covered.sum() / u.sum()) if u.sum() > 0 else 0.0,
        break_even_months=None if break_even is None else float(break_even),
        upfront_cost=float(upfront),
        recurring_hourly_cost=float(recurring_h),
        hours=hours,
        purchase_utilization=purchase_utilization(residual, c),
        cost_optimal_units=float(optimum),
        min_utilization=float(min_utilization),
    )


def read_demand_csv(path: str | Path) -> np.ndarray:
    """Hourly demand from a CSV with columns ``hour`` and ``units``, in hour order."""
    frame = pd.read_csv(path)
    missing = {"hour", "units"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}; expected 'hour' and 'units'")
    frame["hour"] = pd.to_datetime(frame["hour"], utc=True, format="ISO8601")
    units = frame.sort_values("hour")["units"].astype(float).to_numpy()
    if np.isnan(units).any() or (units < 0).any():
        raise ValueError(f"{path}: 'units' must be non-negative numbers")
    return units


# ====================================================== terms and payment options


@dataclass(frozen=True)
class CommitmentOffer:
    """A commitment price: term, payment option, effective rate as a fraction of on-demand."""

    term_months: int
    payment_option: str = "no_upfront"  # no_upfront | partial_upfront | all_upfront
    rate_ratio: float = 0.60  # effective hourly rate / on-demand rate (upfront amortised)
    upfront_fraction: float = 0.0  # share of the term's cost paid upfront


# Public GPU commitment prices were not found: 1-year ≈ 0.60x and 3-year ≈ 0.40x
# on-demand, no upfront (configurable; add partial/all-upfront offers when priced).
DEFAULT_OFFERS: tuple[CommitmentOffer, ...] = (
    CommitmentOffer(12, "no_upfront", 0.60),
    CommitmentOffer(36, "no_upfront", 0.40),
)

# Expected fall of a pool's demand per year (new GPU generations, finished
# projects): a 3-year commitment is evaluated on demand that shrinks by this
# rate, so its deeper discount has to survive the decline (documented assumption).
DEFAULT_ANNUAL_DEMAND_DECLINE = 0.20


def term_demand(
    units: Sequence[float] | np.ndarray,
    term_months: int,
    annual_decline: float = DEFAULT_ANNUAL_DEMAND_DECLINE,
) -> np.ndarray:
    """Demand expected over a term: the history's profile repeated, shrinking by ``annual_decline`` a year."""
    u = np.asarray(units, dtype=float)
    horizon_h = int(round(term_months * HOURS_PER_MONTH))
    tiled = np.resize(u, horizon_h)
    years = np.arange(horizon_h) / HOURS_PER_YEAR
    return tiled * (1.0 - annual_decline) ** years


def existing_profile(held: Iterable[Sequence[float]], horizon_h: int) -> np.ndarray:
    """Units held in each hour of the horizon from ``(units, hours_to_expiry)`` pairs."""
    profile = np.zeros(horizon_h)
    for item in held:
        units, expires_in_h = float(item[0]), float(item[1])
        profile[: max(0, min(horizon_h, int(math.ceil(expires_in_h))))] += units
    return profile


def plan_terms(
    units: Sequence[float] | np.ndarray,
    on_demand_rate: float,
    offers: Sequence[CommitmentOffer] = DEFAULT_OFFERS,
    existing: Iterable[Sequence[float]] = (),
    annual_decline: float = DEFAULT_ANNUAL_DEMAND_DECLINE,
    integer: bool = True,
    min_utilization: float = 0.0,
) -> list[CommitPlan]:
    """One plan per offer, each simulated hour by hour over its whole term (expiring commitments netted)."""
    held = [tuple(h) for h in existing]
    plans = []
    for offer in offers:
        demand = term_demand(units, offer.term_months, annual_decline)
        plans.append(
            commit_plan(
                demand,
                on_demand_rate,
                offer.rate_ratio * on_demand_rate,
                existing_units=existing_profile(held, demand.size),
                upfront_fraction=offer.upfront_fraction,
                term_months=offer.term_months,
                payment_option=offer.payment_option,
                integer=integer,
                min_utilization=min_utilization,
            )
        )
    return plans


def best_plan(plans: Sequence[CommitPlan]) -> CommitPlan:
    """Highest monthly savings; on a tie the shorter term (less lock-in)."""
    return max(plans, key=lambda p: (round(p.savings, 6), -p.term_months))
