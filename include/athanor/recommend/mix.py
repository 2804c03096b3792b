"""Purchase mix for a GPU fleet: commitments (reserved units, savings plans),
spot and on-demand, with a walk-forward backtest of the commitment rule.

Units and conventions:
- demand is in *units* per hour (instance-hours normalised to the pool's size);
  rates are $ per unit-hour; a commitment rate is the effective hourly rate with
  any upfront payment amortised over the term (what AWS calls the effective
  hourly rate).
- money fields of plans are per 730-hour month (AWS's billing month) unless
  named otherwise; ``*_pct`` / ``*_percentage`` are percent (0-100);
  ``utilization``, ``coverage``, ``*_share`` and completion rates are fractions.
- the fees of commitments already held are sunk: a plan's ``expected_cost`` and
  ``on_demand_cost`` cover only the demand those commitments leave uncovered.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from athanor.recommend import spot

HOURS_PER_MONTH = 730.0
HOURS_PER_YEAR = 8760.0


# =========================================================== one pool, one rate


def _as_hourly(values: float | Sequence[float] | np.ndarray, hours: int) -> np.ndarray:
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
    residual = np.maximum(u - _as_hourly(existing_units, u.size), 0.0)
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
    break_even_months: float | None  # None: the purchase never pays back
    upfront_cost: float
    recurring_hourly_cost: float
    hours: int  # hours the plan was evaluated on

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
        return out


def commit_plan(
    units: Sequence[float] | np.ndarray,
    on_demand_rate: float,
    commit_rate: float,
    existing_units: float | Sequence[float] | np.ndarray = 0.0,
    upfront_fraction: float = 0.0,
    term_months: int = 12,
    payment_option: str | None = None,
    integer: bool = True,
) -> CommitPlan:
    """Recommend a commitment for one pool by hour-by-hour simulation.

    ``units`` is the demand expected over the horizon (history used as a
    forecast, or ``term_demand(...)``); ``existing_units`` the commitments
    already held in each of those hours (0 after they expire), netted out hour
    by hour before sizing the purchase.
    """
    u = np.asarray(units, dtype=float)
    hours = u.size
    if hours == 0:
        raise ValueError("no demand hours")
    existing = _as_hourly(existing_units, hours)
    residual = np.maximum(u - existing, 0.0)
    c = optimal_commitment(residual, commit_rate, on_demand_rate, integer=integer)
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
    if c == 0:
        break_even = 0.0
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
            )
        )
    return plans


def best_plan(plans: Sequence[CommitPlan]) -> CommitPlan:
    """Highest monthly savings; on a tie the shorter term (less lock-in)."""
    return max(plans, key=lambda p: (round(p.savings, 6), -p.term_months))


# ================================================================= savings plans


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


def _pivot_demand(demand_by_pool: pd.DataFrame) -> pd.DataFrame:
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
    wide = _pivot_demand(demand_by_pool)
    pools = [str(p) for p in wide.columns]
    u = wide.to_numpy(dtype=float)
    ri = np.zeros_like(u)
    for j, pool in enumerate(pools):
        if ri_units_by_pool and pool in ri_units_by_pool:
            ri[:, j] = _as_hourly(ri_units_by_pool[pool], u.shape[0])
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


# ======================================================================== mix


@dataclass(frozen=True)
class MixPrices:
    """Prices and policy knobs for ``recommend_mix`` (everything a recommendation assumes)."""

    offers: tuple[CommitmentOffer, ...] = DEFAULT_OFFERS
    sp_discount_by_pool: Mapping[str, float] | None = None  # savings-plan discount; None: no plan
    sp_term_months: int = 12
    annual_demand_decline: float = DEFAULT_ANNUAL_DEMAND_DECLINE
    min_completion: float = 0.95  # plain spot only if this share of jobs meets its deadline


@dataclass(frozen=True)
class PoolPlan:
    """The commitment and spot part of the mix for one pool."""

    pool: str
    on_demand_rate: float
    spot_share: float  # share of the pool's work moved to spot (or deadline-safe spot)
    plan: CommitPlan
    gpus_per_unit: float = 1.0

    def to_dict(self) -> dict[str, object]:
        return {
            "pool": self.pool,
            "on_demand_rate": self.on_demand_rate,
            "spot_share": self.spot_share,
            "recommended_quantity": self.plan.commit_units,
            "existing_quantity_avg": self.plan.existing_units,
            "term_months": self.plan.term_months,
            "payment_option": self.plan.payment_option,
            "commit_rate": self.plan.commit_rate,
            "average_utilization": self.plan.utilization,
            "coverage": self.plan.coverage,
            "estimated_monthly_savings_amount": self.plan.savings,
            "break_even_months": self.plan.break_even_months,
            "upfront_cost": self.plan.upfront_cost,
            "recurring_hourly_cost": self.plan.recurring_hourly_cost,
        }


@dataclass(frozen=True)
class MixCosts:
    """Monthly hours and dollars per purchase option for one demand scenario."""

    hours: dict[str, float]  # GPU-hours (or unit-hours) of useful work per option
    dollars: dict[str, float]
    on_demand_cost_usd: float  # the same demand all on on-demand

    @property
    def total_usd(self) -> float:
        return float(sum(self.dollars.values()))

    @property
    def savings_vs_on_demand_usd(self) -> float:
        return self.on_demand_cost_usd - self.total_usd


OPTIONS = ("reserved", "savings_plan", "spot", "on_demand")


@dataclass(frozen=True)
class MixRecommendation:
    """What to buy and where to run, with its money, risk and assumptions."""

    pools: list[PoolPlan]
    job_classes: list[spot.SpotAssessment]
    hourly_commitment: float  # savings plan $/h (0: none)
    savings_plan: SavingsPlanPlan | None
    costs: MixCosts
    current_monthly_bill_usd: float
    expected_completion_rate: float  # all jobs, job-weighted (reserved/on-demand jobs complete)
    spot_completion_rate: float | None  # jobs sent to spot only
    sensitivity: dict[str, dict[str, float]]
    assumptions: dict[str, object] = field(default_factory=dict)

    @property
    def estimated_monthly_cost(self) -> float:
        return self.costs.total_usd

    @property
    def estimated_monthly_savings_amount(self) -> float:
        return self.current_monthly_bill_usd - self.costs.total_usd

    @property
    def estimated_savings_percentage(self) -> float:
        bill = self.current_monthly_bill_usd
        return 100.0 * self.estimated_monthly_savings_amount / bill if bill > 0 else 0.0

    @property
    def hours_share(self) -> dict[str, float]:
        total = sum(self.costs.hours.values())
        return {k: (v / total if total > 0 else 0.0) for k, v in self.costs.hours.items()}

    @property
    def cost_share(self) -> dict[str, float]:
        total = self.costs.total_usd
        return {k: (v / total if total > 0 else 0.0) for k, v in self.costs.dollars.items()}

    @property
    def upfront_cost(self) -> float:
        return float(sum(p.plan.upfront_cost for p in self.pools))

    @property
    def recurring_cost(self) -> float:
        """Monthly recurring commitment fees (reserved units bought + savings plan)."""
        reserved = sum(p.plan.recurring_hourly_cost for p in self.pools)
        return float((reserved + self.hourly_commitment) * HOURS_PER_MONTH)

    @property
    def break_even_months(self) -> float | None:
        values = [p.plan.break_even_months for p in self.pools if p.plan.commit_units > 0]
        if any(v is None for v in values):
            return None
        return float(max(values)) if values else 0.0

    @property
    def average_utilization(self) -> float:
        held = sum(
            (p.plan.commit_units + p.plan.existing_units) * p.gpus_per_unit for p in self.pools
        )  # weight each pool by what it holds
        used = sum(
            (p.plan.commit_units + p.plan.existing_units) * p.gpus_per_unit * p.plan.utilization
            for p in self.pools
        )
        return float(used / held) if held > 0 else 0.0

    @property
    def coverage(self) -> float:
        """Share of all GPU-hours covered by commitments (reserved + savings plan)."""
        share = self.hours_share
        return share["reserved"] + share["savings_plan"]

    def to_dict(self) -> dict[str, object]:
        return {
            "pools": [p.to_dict() for p in self.pools],
            "recommended_quantity": {p.pool: p.plan.commit_units for p in self.pools},
            "hourly_commitment": self.hourly_commitment,
            "savings_plan": None if self.savings_plan is None else self.savings_plan.to_dict(),
            "job_classes": [j.to_dict() for j in self.job_classes],
            "gpu_hours_share": self.hours_share,
            "cost_share": self.cost_share,
            "estimated_monthly_cost": self.estimated_monthly_cost,
            "current_monthly_bill": self.current_monthly_bill_usd,
            "on_demand_monthly_cost": self.costs.on_demand_cost_usd,
            "estimated_monthly_savings_amount": self.estimated_monthly_savings_amount,
            "estimated_savings_percentage": self.estimated_savings_percentage,
            "break_even_months": self.break_even_months,
            "upfront_cost": self.upfront_cost,
            "recurring_cost": self.recurring_cost,
            "average_utilization": self.average_utilization,
            "coverage": self.coverage,
            "expected_completion_rate": self.expected_completion_rate,
            "spot_completion_rate": self.spot_completion_rate,
            "sensitivity": self.sensitivity,
            "assumptions": self.assumptions,
        }


def _lookup_rate(rates: Mapping[str, float] | None, pool: str) -> float | None:
    """Interruption rate per instance-hour for a pool ('p4d/us-east-1') from rates keyed by pool or type."""
    if not rates:
        return None
    family = pool.split("/")[0]
    for key in (pool, family):
        if key in rates:
            return float(rates[key])
    matches = sorted(k for k in rates if k.split(".")[0] == family.split(".")[0])
    return float(rates[matches[-1]]) if matches else None


def _assess_classes(
    jobs_by_class: pd.DataFrame,
    rates: Mapping[str, float] | None,
    min_completion: float,
    rate_multiplier: float = 1.0,
    modes: Mapping[str, str] | None = None,
    seed: int = 0,
) -> list[spot.SpotAssessment]:
    out = []
    for i, row in enumerate(jobs_by_class.itertuples(index=False)):
        rate = getattr(row, "interruption_rate_per_h", float("nan"))
        if rate is None or not np.isfinite(rate):
            rate = _lookup_rate(rates, str(row.pool))
        if rate is None:
            raise ValueError(f"no interruption rate for job class {row.job_class!r} (pool {row.pool!r})")
        fixed = None if modes is None else modes[str(row.job_class)]
        if not bool(getattr(row, "interruptible", True)):
            fixed = "on_demand"  # the owner says these jobs must not be interrupted
        out.append(
            spot.assess_job_class(
                job_class=str(row.job_class),
                median_duration_h=float(row.median_duration_h),
                p90_duration_h=float(row.p90_duration_h),
                instance_count=int(row.instance_count),
                instance_rate_per_h=float(rate) * rate_multiplier,
                checkpoint_h=float(row.checkpoint_time_h),
                restart_h=float(row.restart_time_h),
                deadline_slack=float(row.deadline_slack),
                spot_rate=float(row.spot_rate),
                on_demand_rate=float(row.on_demand_rate),
                min_completion=min_completion,
                mode=fixed,
                seed=seed + 104729 * i,
            )
        )
    return out


@dataclass(frozen=True)
class _PoolSpot:
    """How a pool's spot-eligible work is run, GPU-hour weighted over its spot classes."""

    share: float = 0.0  # share of the pool's work in spot classes
    spot_hours_share: float = 0.0  # of that work's billed hours, the share on spot
    cost_ratio: float = 1.0  # its cost / the same work on on-demand
    spot_dollar_share: float = 0.0  # of its dollars, the share paid at spot rates


def _spot_shares(
    jobs_by_class: pd.DataFrame,
    assessments: Sequence[spot.SpotAssessment],
    demand_gpu_hours: Mapping[str, float] | None = None,
) -> dict[str, _PoolSpot]:
    """Per pool, the share of demand that goes to spot and what it costs.

    With the pool's demand in GPU-hours (``demand_gpu_hours``, same window as the
    job classes) the share is spot-class GPU-hours over it, so demand no job
    class explains (serving, notebooks, untagged) stays on commitments and
    on-demand; without it the job classes are taken to describe all the demand.
    """
    shares: dict[str, _PoolSpot] = {}
    frame = jobs_by_class.assign(
        _spot=[a.uses_spot for a in assessments],
        _ratio=[a.cost_ratio_vs_on_demand for a in assessments],
        _spot_hours=[a.spot_hours_share for a in assessments],
        _spot_usd=[a.spot_dollar_share for a in assessments],
    )
    for pool, group in frame.groupby("pool", sort=True):
        total = float(group["gpu_hours"].sum())
        if demand_gpu_hours and str(pool) in demand_gpu_hours:
            total = max(total, float(demand_gpu_hours[str(pool)]))
        moved = group[group["_spot"]]
        moved_h = float(moved["gpu_hours"].sum())
        if total <= 0 or moved_h <= 0:
            shares[str(pool)] = _PoolSpot()
            continue
        w = moved["gpu_hours"] / moved_h
        ratio = float((w * moved["_ratio"]).sum())
        shares[str(pool)] = _PoolSpot(
            share=moved_h / total,
            spot_hours_share=float((w * moved["_spot_hours"]).sum()),
            cost_ratio=ratio,
            spot_dollar_share=float((w * moved["_ratio"] * moved["_spot_usd"]).sum()) / ratio,
        )
    return shares


def _mix_costs(
    wide: pd.DataFrame,
    od_rates: np.ndarray,
    spot_shares: Mapping[str, _PoolSpot],
    pool_plans: Sequence[PoolPlan],
    existing_hourly: np.ndarray,
    existing_rate: np.ndarray,
    sp_discounts: np.ndarray,
    hourly_commitment: float,
    gpus_per_unit: np.ndarray,
) -> MixCosts:
    """Simulate a month hour by hour: spot takes its share, reserved units the base, the plan the rest."""
    u = wide.to_numpy(dtype=float)
    hours = u.shape[0]
    per_month = HOURS_PER_MONTH / hours
    pools = [str(p) for p in wide.columns]
    per_pool = [spot_shares.get(p, _PoolSpot()) for p in pools]
    share = np.array([s.share for s in per_pool])
    spot_hours_share = np.array([s.spot_hours_share for s in per_pool])
    ratio = np.array([s.cost_ratio for s in per_pool])
    spot_dollar_share = np.array([s.spot_dollar_share for s in per_pool])
    # Spot-eligible work is assumed spread over the hours like the pool's demand.
    spot_u = u * share
    base = u - spot_u
    held = existing_hourly + np.array([p.plan.commit_units for p in pool_plans])
    reserved_u = np.minimum(base, held)
    residual = base - reserved_u
    sp_u = apply_savings_plan(residual, od_rates, sp_discounts, hourly_commitment)
    od_u = residual - sp_u
    new_units = np.array([p.plan.commit_units for p in pool_plans])
    new_rate = np.array([p.plan.commit_rate for p in pool_plans])
    reserved_usd = (new_units * new_rate * hours + (existing_hourly * existing_rate).sum(axis=0)).sum()
    spot_work_usd = (spot_u.sum(axis=0) * od_rates * ratio).sum()
    # A deadline-safe class pays part of its work on on-demand: bill that part as on-demand.
    spot_usd = (spot_u.sum(axis=0) * od_rates * ratio * spot_dollar_share).sum()
    hours_out = {
        "reserved": float((reserved_u.sum(axis=0) * gpus_per_unit).sum() * per_month),
        "savings_plan": float((sp_u.sum(axis=0) * gpus_per_unit).sum() * per_month),
        "spot": float((spot_u.sum(axis=0) * spot_hours_share * gpus_per_unit).sum() * per_month),
        "on_demand": float(
            ((od_u.sum(axis=0) + spot_u.sum(axis=0) * (1 - spot_hours_share)) * gpus_per_unit).sum()
            * per_month
        ),
    }
    dollars = {
        "reserved": float(reserved_usd * per_month),
        "savings_plan": float(hourly_commitment * hours * per_month),
        "spot": float(spot_usd * per_month),
        "on_demand": float(((od_u * od_rates).sum() + spot_work_usd - spot_usd) * per_month),
    }
    return MixCosts(
        hours=hours_out, dollars=dollars, on_demand_cost_usd=float((u * od_rates).sum() * per_month)
    )


def recommend_mix(
    demand_by_pool: pd.DataFrame,
    jobs_by_class: pd.DataFrame,
    prices: MixPrices | None = None,
    rates: Mapping[str, float] | None = None,
    current_monthly_bill_usd: float | None = None,
    existing_by_pool: Mapping[str, Sequence[Sequence[float]]] | None = None,
    gpus_per_unit_by_pool: Mapping[str, float] | None = None,
    seed: int = 0,
) -> MixRecommendation:
    """Recommend reserved units / savings plan / spot / on-demand for a fleet.

    ``demand_by_pool``: hour, pool, units, on_demand_rate (the window to plan on,
    e.g. the last 30 days). ``jobs_by_class``: one row per job class with
    job_class, pool, gpu_hours (same window), jobs, median_duration_h,
    p90_duration_h, instance_count, checkpoint_time_h, restart_time_h,
    deadline_slack, spot_rate, on_demand_rate, interruption_rate_per_h and
    optionally interruptible (False: never spot). Spot-eligible classes move
    their GPU-hours off the pool's demand; with ``gpus_per_unit_by_pool`` the
    share is taken of the pool's demand in GPU-hours, else of the classes'
    total. ``rates``: interruption rate per
    instance-hour by pool or instance type, used where a class has no
    ``interruption_rate_per_h``. ``existing_by_pool``: commitments already held,
    ``(units, hours_to_expiry[, effective_rate_per_unit_h])``. The current bill
    defaults to all-on-demand.
    """
    prices = prices or MixPrices()
    wide = _pivot_demand(demand_by_pool)
    pools = [str(p) for p in wide.columns]
    hours = wide.shape[0]
    od_by_pool = demand_by_pool.groupby("pool")["on_demand_rate"].mean()
    od_rates = np.array([float(od_by_pool[p]) for p in pools])
    gpus = np.array([float((gpus_per_unit_by_pool or {}).get(p, 1.0)) for p in pools])
    sp_disc = np.array([float((prices.sp_discount_by_pool or {}).get(p, 0.0)) for p in pools])

    demand_gpu_h = {
        p: float(wide[p].sum()) * float(gpus_per_unit_by_pool[p])
        for p in pools
        if gpus_per_unit_by_pool and p in gpus_per_unit_by_pool
    }
    assessments = _assess_classes(jobs_by_class, rates, prices.min_completion, seed=seed)
    shares = _spot_shares(jobs_by_class, assessments, demand_gpu_h)

    existing_hourly = np.zeros((hours, len(pools)))
    existing_rate = np.zeros(len(pools))
    pool_plans = []
    for j, pool in enumerate(pools):
        held = [tuple(h) for h in (existing_by_pool or {}).get(pool, ())]
        existing_hourly[:, j] = existing_profile(held, hours)
        rated = [(h[0], h[2]) for h in held if len(h) > 2]
        default_rate = prices.offers[0].rate_ratio * od_rates[j]
        unrated = sum(h[0] for h in held if len(h) <= 2)
        total_units = sum(h[0] for h in held)
        existing_rate[j] = (
            (sum(q * r for q, r in rated) + unrated * default_rate) / total_units if total_units > 0 else 0.0
        )
        base = wide[pool].to_numpy(dtype=float) * (1.0 - shares.get(pool, _PoolSpot()).share)
        plans = plan_terms(base, od_rates[j], prices.offers, held, prices.annual_demand_decline)
        pool_plans.append(
            PoolPlan(pool, float(od_rates[j]), shares.get(pool, _PoolSpot()).share, best_plan(plans), gpus[j])
        )

    sp_plan = None
    hourly_commitment = 0.0
    if prices.sp_discount_by_pool:
        # Sized like the reserved units: on the demand expected over its term (the
        # window repeated, declining), after spot and after every reserved unit.
        horizon_h = int(round(prices.sp_term_months * HOURS_PER_MONTH))
        frames, ri = [], {}
        for j, pool in enumerate(pools):
            base = wide[pool].to_numpy(dtype=float) * (1.0 - shares.get(pool, _PoolSpot()).share)
            frames.append(
                pd.DataFrame(
                    {
                        "hour": np.arange(horizon_h),
                        "pool": pool,
                        "units": term_demand(base, prices.sp_term_months, prices.annual_demand_decline),
                    }
                )
            )
            held = [tuple(h) for h in (existing_by_pool or {}).get(pool, ())]
            ri[pool] = existing_profile(held, horizon_h) + pool_plans[j].plan.commit_units
        sp_plan = savings_plan_plan(
            pd.concat(frames), dict(zip(pools, od_rates, strict=True)), prices.sp_discount_by_pool, ri
        )
        hourly_commitment = sp_plan.hourly_commitment

    def costs_for(scale: float, scen_shares: Mapping[str, _PoolSpot]) -> MixCosts:
        return _mix_costs(
            wide * scale, od_rates, scen_shares, pool_plans, existing_hourly, existing_rate, sp_disc,
            hourly_commitment, gpus,
        )  # fmt: skip

    costs = costs_for(1.0, shares)
    current = (
        costs.on_demand_cost_usd if current_monthly_bill_usd is None else float(current_monthly_bill_usd)
    )

    # Sensitivity: the same purchases and assignments, under worse conditions.
    drop = costs_for(0.8, shares)
    modes = {a.job_class: a.mode for a in assessments}
    doubled = _assess_classes(jobs_by_class, rates, prices.min_completion, 2.0, modes, seed=seed)
    double_costs = costs_for(1.0, _spot_shares(jobs_by_class, doubled, demand_gpu_h))
    jobs = jobs_by_class["jobs"].to_numpy(dtype=float)
    sensitivity = {
        name: {
            "estimated_monthly_cost": c.total_usd,
            "on_demand_monthly_cost": c.on_demand_cost_usd,
            "estimated_monthly_savings_amount": c.savings_vs_on_demand_usd,
            "estimated_savings_percentage": 100.0 * c.savings_vs_on_demand_usd / c.on_demand_cost_usd
            if c.on_demand_cost_usd > 0
            else 0.0,
        }
        for name, c in (
            ("base", costs),
            ("demand_drops_20pct", drop),
            ("interruption_rates_double", double_costs),
        )
    }
    sensitivity["interruption_rates_double"]["expected_completion_rate"] = _completion(jobs, doubled)
    spot_jobs = np.array([a.uses_spot for a in assessments])
    spot_completion = (
        float((jobs[spot_jobs] * [a.completion_rate for a, s in zip(assessments, spot_jobs, strict=True) if s]).sum()
              / jobs[spot_jobs].sum())
        if spot_jobs.any() and jobs[spot_jobs].sum() > 0
        else None
    )  # fmt: skip
    return MixRecommendation(
        pools=pool_plans,
        job_classes=assessments,
        hourly_commitment=hourly_commitment,
        savings_plan=sp_plan,
        costs=costs,
        current_monthly_bill_usd=current,
        expected_completion_rate=_completion(jobs, assessments),
        spot_completion_rate=spot_completion,
        sensitivity=sensitivity,
        assumptions={
            "hours_per_month": HOURS_PER_MONTH,
            "window_hours": hours,
            "offers": [asdict(o) for o in prices.offers],
            "sp_discount_by_pool": dict(prices.sp_discount_by_pool or {}),
            "sp_term_months": prices.sp_term_months,
            "annual_demand_decline": prices.annual_demand_decline,
            "min_completion": prices.min_completion,
            "spot_bucket_monthly_fraction": spot.BUCKET_MONTHLY_FRACTION,
            "spot_work_spread": "spot-eligible work is spread over the hours like the pool's demand",
        },
    )


def _completion(jobs: np.ndarray, assessments: Sequence[spot.SpotAssessment]) -> float:
    rates = np.array([a.completion_rate for a in assessments])
    return float((jobs * rates).sum() / jobs.sum()) if jobs.sum() > 0 else 1.0


def _term_words(months: int) -> str:
    return f"{months // 12} year{'s' if months > 12 else ''}" if months % 12 == 0 else f"{months} months"


def explain(rec: MixRecommendation) -> str:
    """A few plain sentences a finance reader can act on."""
    parts = []
    buys = [p for p in rec.pools if p.plan.commit_units > 0]
    for p in buys:
        name = p.pool.split("/")[0]
        parts.append(
            f"Commit to {p.plan.commit_units:g} {name} unit{'s' if p.plan.commit_units != 1 else ''} "
            f"for {_term_words(p.plan.term_months)} ({p.plan.payment_option.replace('_', ' ')}), "
            f"expected {100 * p.plan.utilization:.0f}% utilised"
            + (f", paying back in {p.plan.break_even_months:.1f} months" if p.plan.break_even_months else "")
            + "."
        )
    if not buys:
        parts.append("Buy no new commitments: demand is too uneven (or already covered) for them to pay.")
    if rec.hourly_commitment > 0:
        parts.append(
            f"Add a savings plan of ${rec.hourly_commitment:,.3f} per hour for the remaining steady use."
        )
    share = rec.hours_share
    spot_classes = [j.job_class for j in rec.job_classes if j.uses_spot]
    if share["spot"] > 0:
        safe = [j.job_class for j in rec.job_classes if j.mode == "spot_deadline_safe"]
        parts.append(
            f"Run {100 * share['spot']:.0f}% of GPU-hours on spot ({', '.join(spot_classes)})"
            + (f"; {', '.join(safe)} switch to on-demand when behind schedule, so they never miss a deadline" if safe else "")
            + (f"; {100 * rec.spot_completion_rate:.1f}% of spot jobs finish on time" if rec.spot_completion_rate is not None else "")
            + "."
        )  # fmt: skip
    parts.append(
        f"Keep {100 * share['on_demand']:.0f}% on on-demand. This costs about ${rec.estimated_monthly_cost:,.0f} "
        f"a month instead of ${rec.current_monthly_bill_usd:,.0f}: it saves ${rec.estimated_monthly_savings_amount:,.0f} "
        f"a month ({rec.estimated_savings_percentage:.0f}%)."
    )
    drop = rec.sensitivity["demand_drops_20pct"]
    dbl = rec.sensitivity["interruption_rates_double"]
    parts.append(
        f"If demand falls 20% it still saves {drop['estimated_savings_percentage']:.0f}% against on-demand; "
        f"if spot interruptions double, {dbl['estimated_savings_percentage']:.0f}%."
    )
    if rec.upfront_cost > 0:
        parts.append(f"Upfront payment: ${rec.upfront_cost:,.0f}.")
    return " ".join(parts)


# =================================================================== backtest

BACKTEST_POLICIES: tuple[str, ...] = ("athanor", "on_demand", "console", "minimum", "hindsight")


@dataclass(frozen=True)
class DemandForecast:
    """A forecast of next month's hourly demand and the change it followed."""

    units: np.ndarray
    model: str  # "flat" | "trend" | "step"
    level_change: float  # units added to the recent window's level


def _daily_levels(hours: np.ndarray) -> np.ndarray:
    """Deseasonalised daily medians (medians shrug off research spikes).

    The day-of-week effect is the median, per weekday, of the daily medians
    minus their centred 7-day moving average (classical decomposition): a
    moving average follows a trend exactly and a step after a few days, so
    neither leaks into the weekday effect.
    """
    days = hours.size // 24
    daily = np.median(hours[hours.size - 24 * days :].reshape(days, 24), axis=1)
    if days < 14:
        return daily
    moving = np.convolve(daily, np.ones(7) / 7.0, mode="valid")  # centred on days 3 .. days-4
    detrended = daily[3 : days - 3] - moving
    dow = np.arange(days) % 7
    effect = np.array([np.median(detrended[dow[3 : days - 3] == k]) for k in range(7)])
    return daily - (effect - effect.mean())[dow]


def forecast_next_month(
    history: Sequence[float] | np.ndarray,
    lookback_h: int = 720,
    horizon_h: int = 730,
    detect_days: int = 56,
    min_detect_days: int = 42,
    trend_min_t: float = 6.0,
    trend_min_change: float = 0.10,
    step_min_t: float = 8.0,
    step_min_change: float = 0.20,
    step_min_days_after: int = 7,
    step_up_min_days_after: int = 14,
    min_consistency: float = 0.8,
) -> DemandForecast:
    """Next month's demand: the last ``lookback_h`` hours moved to the level the recent weeks point to.

    On deseasonalised daily medians of the last ``detect_days`` (whole weeks, as
    many as the history has, at least ``min_detect_days``) we test a linear trend (Theil-Sen)
    and a single level step (best split; the step must lie inside the replay
    window and be followed by ``step_min_days_after`` days, a step up by
    ``step_up_min_days_after``: demand is a base plus bursts, so a burst of
    research that lasts a week looks like a step up, never like a step down).
    Noise is the MAD of the
    residuals. A change is followed only if it is clear (t-statistic), material
    (relative change of the level) and, for a step, consistent
    (``min_consistency`` of the days on each side of the midpoint). The
    thresholds were set on the synthetic scenarios of ``athanor.recommend.scenarios`` so
    that 30 seeds of stationary, weekly and spiky demand raise no false change.
    Without a change the forecast is the window itself: the same replay the
    cloud consoles use.
    """
    u = np.asarray(history, dtype=float)
    window = u[-lookback_h:]
    flat = DemandForecast(units=window.copy(), model="flat", level_change=0.0)
    weeks = min(detect_days, u.size // 24) // 7
    if weeks < min_detect_days // 7:
        return flat
    y = _daily_levels(u[-weeks * 7 * 24 :])
    n = y.size
    level = max(float(np.median(y)), 1e-9)
    floor = 1e-3 * level  # a noiseless series still needs a finite t

    def mad(values: np.ndarray) -> float:
        return max(1.4826 * float(np.median(np.abs(values))), floor)

    x = np.arange(n, dtype=float)
    xc = x - x.mean()
    slope, intercept = stats.theilslopes(y, x)[:2]
    trend_resid = y - (intercept + slope * x)
    t_trend = abs(slope) / (mad(trend_resid) / math.sqrt(float((xc**2).sum())))
    days_ahead = (lookback_h + horizon_h) / 2.0 / 24.0  # centre of the window to centre of next month
    trend_change = float(slope) * days_ahead
    trend_ok = t_trend >= trend_min_t and abs(trend_change) >= trend_min_change * level

    window_days = lookback_h // 24
    best: tuple[float, int, float, float] | None = None  # (t, split, step, robust sse)
    for k in range(max(3, n - window_days + 1), n - step_min_days_after + 1):
        pre, post = y[:k], y[k:]
        delta = float(np.median(post) - np.median(pre))
        if abs(delta) < step_min_change * level or (delta > 0 and n - k < step_up_min_days_after):
            continue
        resid = np.concatenate([pre - np.median(pre), post - np.median(post)])
        # Medians are ~1.25x noisier than means for normal noise.
        t = abs(delta) / (1.2533 * mad(resid) * math.sqrt(1.0 / k + 1.0 / (n - k)))
        mid = float(np.median(pre)) + delta / 2.0
        sign = 1.0 if delta >= 0 else -1.0
        consistent = min(float(np.mean(sign * (post - mid) > 0)), float(np.mean(sign * (pre - mid) < 0)))
        sae = float(np.abs(resid).sum())
        # The split that fits best locates the step; its t-statistic then says whether it is real.
        if consistent >= min_consistency and (best is None or sae < best[3]):
            best = (t, k, delta, sae)
    step_ok = best is not None and best[0] >= step_min_t
    if best is not None and step_ok and (not trend_ok or best[3] < float(np.abs(trend_resid).sum())):
        _, split, delta, _ = best
        shifted = window.copy()
        cut_h = window.size - 24 * (n - split)  # first hour after the step
        shifted[: max(cut_h, 0)] += delta
        return DemandForecast(units=np.maximum(shifted, 0.0), model="step", level_change=delta)
    if trend_ok:
        return DemandForecast(
            units=np.maximum(window + trend_change, 0.0), model="trend", level_change=trend_change
        )
    return flat


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
