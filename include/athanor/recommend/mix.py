"""Purchase mix for a GPU fleet: reserved units, a savings plan, spot and on-demand
together, with the money, the risk and the assumptions of the recommendation.

The pieces live apart: ``commitments`` sizes reserved units per pool,
``savings_plan`` the $/hour plan on what they leave, ``spot`` decides per job
class; this module puts them together and simulates the month hour by hour.
Conventions as in ``athanor.recommend.commitments``; ``*_share`` and completion
rates are fractions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd

from athanor.model.demand import ClassDurations
from athanor.recommend import phases, spot
from athanor.recommend.commitments import (
    DEFAULT_ANNUAL_DEMAND_DECLINE,
    DEFAULT_OFFERS,
    HOURS_PER_MONTH,
    CommitmentOffer,
    CommitPlan,
    best_plan,
    existing_profile,
    plan_terms,
    term_demand,
)
from athanor.recommend.savings_plan import (
    SavingsPlanPlan,
    apply_savings_plan,
    pivot_demand,
    savings_plan_plan,
)


@dataclass(frozen=True)
class MixPrices:
    """Prices and policy knobs for ``recommend_mix`` (everything a recommendation assumes)."""

    offers: tuple[CommitmentOffer, ...] = DEFAULT_OFFERS
    sp_discount_by_pool: Mapping[str, float] | None = None  # savings-plan discount; None: no plan
    sp_term_months: int = 12
    annual_demand_decline: float = DEFAULT_ANNUAL_DEMAND_DECLINE
    min_completion: float = 0.95  # plain spot only if this share of jobs meets its deadline
    min_utilization: float = 0.0  # buy only commitments expected to be used at least this much
    # Jobs simulated per job of the planning window: every class is simulated in proportion
    # to its jobs, so pooling the simulated jobs gives a job-weighted completion rate.
    simulated_jobs_per_job: int = 20
    # Whether tune and production stay off spot (athanor.recommend.phases): evidence | strict | off.
    spot_phase_policy: str = "evidence"
    # The longest term a pool's evidence supports (athanor.recommend.plan.term_limits); a pool not
    # named may take any offer.
    max_term_months_by_pool: Mapping[str, int] | None = None
    # A pool's own offers (its type's published rates, athanor.reference.commitment_rates); a
    # pool not named takes ``offers``.
    offers_by_pool: Mapping[str, tuple[CommitmentOffer, ...]] | None = None
    # The savings plan each pool may fall under (its cloud's: athanor.recommend.provider_offers);
    # one plan is sized per name. None: one plan over every pool with a discount.
    sp_group_by_pool: Mapping[str, str] | None = None


@dataclass(frozen=True)
class PoolPlan:
    """The commitment and spot part of the mix for one pool."""

    pool: str
    on_demand_rate: float
    spot_share: float  # share of the pool's work moved to spot (or deadline-safe spot)
    plan: CommitPlan
    gpus_per_unit: float = 1.0
    # Share of the pool's work whose phase keeps it off commitments (explore not on spot).
    uncommitted_share: float = 0.0
    # Share of the pool's work by phase ('none': no phase recorded, or no job class explains it).
    phase_shares: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "pool": self.pool,
            "on_demand_rate": self.on_demand_rate,
            "spot_share": self.spot_share,
            "uncommitted_share": self.uncommitted_share,
            "phase_shares": dict(self.phase_shares),
            "recommended_quantity": self.plan.commit_units,
            "existing_quantity_avg": self.plan.existing_units,
            "term_months": self.plan.term_months,
            "payment_option": self.plan.payment_option,
            "commit_rate": self.plan.commit_rate,
            "average_utilization": self.plan.utilization,
            "purchase_utilization": self.plan.purchase_utilization,
            "break_even_utilization": self.plan.break_even_utilization,
            "cost_optimal_quantity": self.plan.cost_optimal_units,
            "min_utilization": self.plan.min_utilization,
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
    spot_completion_rate: float | None  # jobs sent to spot only: simulated jobs pooled over their classes
    sensitivity: dict[str, dict[str, float]]
    assumptions: dict[str, object] = field(default_factory=dict)
    spot_completion_interval: tuple[float, float] | None = None  # Wilson, over the pooled simulated jobs
    spot_simulated_jobs: int = 0
    # Per phase ('none': no phase recorded): its default purchase option and what the mix did.
    phases: dict[str, dict[str, object]] = field(default_factory=dict)
    class_phases: dict[str, str | None] = field(default_factory=dict)  # job class -> phase
    # Job class -> what its spot verdict rests on (`spot_record`): pool, spot rate and its source,
    # the class's spot runs today, its interruption rate (InterruptionEstimate.to_dict()).
    class_spot: dict[str, dict[str, object]] = field(default_factory=dict)
    # What keeping tune/production off spot costs (`phase_policy_price`); empty when not priced.
    phase_policy: dict[str, object] = field(default_factory=dict)
    # One plan per savings-plan group (MixPrices.sp_group_by_pool; 'all' without groups), those
    # with a commitment; `savings_plan` is the first group's and `hourly_commitment` their sum.
    savings_plans: dict[str, SavingsPlanPlan] = field(default_factory=dict)

    @property
    def hourly_by_plan(self) -> dict[str, float]:
        """$/h of each savings plan bought, by group ('all': the one plan over every pool)."""
        found = {g: sp.hourly_commitment for g, sp in self.savings_plans.items() if sp.hourly_commitment > 0}
        if not found and self.hourly_commitment > 0:
            return {"all": self.hourly_commitment}
        return found

    def spot_record(self, assessment: spot.SpotAssessment) -> dict[str, object]:
        """The evidence of a class's spot verdict: rates per instance-hour, completion predicted
        (plain spot, by the deadline; low/high at the rate interval's high/low end) against
        observed (completed of its spot runs that ended completed or preempted)."""
        info = self.class_spot.get(assessment.job_class, {})
        low, high = assessment.spot_completion_bounds or (None, None)
        predicted = assessment.spot_completion_rate
        return {
            "pool": info.get("pool"),
            "instance_type": info.get("instance_type"),
            "interruptions_per_instance_hour": info.get("interruptions_per_instance_hour"),
            "completion": {
                "predicted": predicted if math.isfinite(predicted) else None,
                "low": low,
                "high": high,
                "observed": info.get("observed_completion"),
                "observed_runs": info.get("spot_runs_ended", 0),
            },
            "spot_rate": info.get("spot_rate"),
            "spot_rate_source": info.get("spot_rate_source", "catalogue"),
        }

    def class_dict(self, assessment: spot.SpotAssessment) -> dict[str, object]:
        """A job class's assessment with the phase that set its default purchase option."""
        phase = self.class_phases.get(assessment.job_class)
        return {
            **assessment.to_dict(),
            "phase": phase,
            "default_purchase": phases.purchase_words(phase),
            **self.spot_record(assessment),
        }

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
        """The slowest purchase's payback of its upfront part; None when nothing is paid upfront."""
        values = [p.plan.break_even_months for p in self.pools if p.plan.upfront_cost > 0]
        if not values or any(v is None for v in values):
            return None
        return float(max(values))

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
            "savings_plans": {g: sp.to_dict() for g, sp in self.savings_plans.items()},
            "job_classes": [self.class_dict(j) for j in self.job_classes],
            "phases": self.phases,
            "phase_policy": self.phase_policy,
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
            "spot_completion_interval": (
                None if self.spot_completion_interval is None else list(self.spot_completion_interval)
            ),
            "spot_simulated_jobs": self.spot_simulated_jobs,
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


@dataclass(frozen=True)
class _ClassInputs:
    """What the spot assessment of the classes needs beyond the class table."""

    rates: Mapping[str, float] | None
    prices: MixPrices
    durations: Mapping[str, ClassDurations]
    month_factor: float  # months per planning window: HOURS_PER_MONTH / window hours
    gpus_per_unit: Mapping[str, float]


def _number(row: object, column: str, default: float) -> float:
    """An optional numeric column of the class table (its default where absent or missing)."""
    value = getattr(row, column, None)
    try:
        value = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    return value if math.isfinite(value) else default


def _assess_classes(
    jobs_by_class: pd.DataFrame,
    inputs: _ClassInputs,
    rate_multiplier: float = 1.0,
    modes: Mapping[str, str] | None = None,
    seed: int = 0,
    bounds: bool = False,
) -> list[spot.SpotAssessment]:
    """Each class's spot verdict; with ``bounds``, plain spot's completion at the ends of the
    class's interruption-rate interval too (columns interruption_rate_low/high_per_h)."""
    out = []
    for i, row in enumerate(jobs_by_class.itertuples(index=False)):
        rate = getattr(row, "interruption_rate_per_h", float("nan"))
        if rate is None or not np.isfinite(rate):
            rate = _lookup_rate(inputs.rates, str(row.pool))
        if rate is None:
            raise ValueError(f"no interruption rate for job class {row.job_class!r} (pool {row.pool!r})")
        fixed = None if modes is None else modes[str(row.job_class)]
        allowed = bool(getattr(row, "interruptible", True))
        if not allowed:
            fixed = "on_demand"  # the owner says these jobs must not be interrupted
        default = phases.default_for(getattr(row, "phase", None))
        off_spot = phases.keeps_off_spot(
            getattr(row, "phase", None),
            inputs.prices.spot_phase_policy,
            _number(row, "spot_runs_completed", 0),
            _number(row, "spot_runs_ended", 0),
            inputs.prices.min_completion,
        )
        if off_spot:
            fixed = "on_demand"  # the phase's default is a commitment or dedicated capacity
        durations = inputs.durations.get(str(row.job_class))
        gpus = float(inputs.gpus_per_unit.get(str(row.pool), 1.0))
        # The class's work at on-demand prices, a month: its GPU-hours in pool units.
        monthly_od = float(row.gpu_hours) / gpus * float(row.on_demand_rate) * inputs.month_factor
        # The share of the class's GPU-hours on spot today (spot_gpu_hours: optional column).
        on_spot_today = _number(row, "spot_gpu_hours", 0.0) / float(row.gpu_hours) if row.gpu_hours else 0.0
        args = dict(
            instance_count=int(row.instance_count),
            checkpoint_h=float(row.checkpoint_time_h),
            restart_h=float(row.restart_time_h),
            deadline_slack=float(row.deadline_slack),
            spot_rate=float(row.spot_rate),
            on_demand_rate=float(row.on_demand_rate),
            min_completion=inputs.prices.min_completion,
            seed=seed + 104729 * i,
            duration_ppf_h=durations.ppf_h if durations else None,
            duration_model=durations.describe() if durations else None,
            sim_jobs=max(int(row.jobs), 1) * inputs.prices.simulated_jobs_per_job,
            safe_sim_jobs=math.ceil(
                max(int(row.jobs), 1) * inputs.prices.simulated_jobs_per_job / spot.DURATION_POINTS
            ),
            monthly_on_demand_usd=monthly_od,
            spot_share_today=min(max(on_spot_today, 0.0), 1.0),
        )
        median = None if durations else float(row.median_duration_h)
        p90 = None if durations else float(row.p90_duration_h)
        assessment = spot.assess_job_class(
            str(row.job_class), median, p90, **args,
            instance_rate_per_h=float(rate) * rate_multiplier,
            mode=fixed,
            # Jobs that do not checkpoint restart from zero: they stay off spot.
            checkpointed=bool(getattr(row, "checkpointed", True)),
        )  # fmt: skip
        low_rate = _number(row, "interruption_rate_low_per_h", math.nan)
        high_rate = _number(row, "interruption_rate_high_per_h", math.nan)
        predicted = assessment.spot_completion_rate
        if bounds and math.isfinite(low_rate) and math.isfinite(high_rate) and math.isfinite(predicted):
            # Plain spot's completion at the rate interval's ends; each simulated share carries
            # its Wilson interval, and the class's range covers all three (the checkpoint interval
            # follows the rate, so completion need not fall as the rate rises).
            n = int(args["sim_jobs"])
            own = spot.wilson_interval(round(predicted * n), n)
            at_high, at_low = (
                spot.assess_job_class(
                    str(row.job_class), median, p90, **args, instance_rate_per_h=r, mode="spot"
                ).completion_interval
                or (0.0, 1.0)
                for r in (high_rate, low_rate)
            )
            low = min(own[0], at_high[0], at_low[0])
            high = max(own[1], at_high[1], at_low[1])
            assessment = replace(assessment, spot_completion_bounds=(low, high))
        if not allowed and assessment.checkpointed:
            assessment = replace(assessment, reason="the owner keeps these jobs off spot")
        if off_spot and allowed and default is not None:
            # Checkpointing would not move these to spot either: no 'checkpointing' alternative.
            # What spot would have cost stays in the reason, for a reader weighing the default.
            reason = f"phase {default.phase}: bought as {default.words} (the phase's default), not spot"
            if assessment.checkpointed:
                reason += f"; {assessment.reason}"
            assessment = replace(assessment, unlock=None, reason=reason)
        elif (
            allowed
            and default is not None
            and not default.may_use_spot
            and inputs.prices.spot_phase_policy == "evidence"
        ):
            ended = int(_number(row, "spot_runs_ended", 0))
            done = int(_number(row, "spot_runs_completed", 0))
            reason = (
                f"phase {default.phase}, but {done} of its {ended} spot runs that ended completed: "
                f"the spot model decides, not the phase's default ({default.words})"
            )
            assessment = replace(assessment, reason=f"{reason}; {assessment.reason}")
        out.append(assessment)
    return out


@dataclass(frozen=True)
class _PoolSpot:
    """How a pool's spot-eligible work is run, GPU-hour weighted over its spot classes."""

    share: float = 0.0  # share of the pool's work in spot classes
    spot_hours_share: float = 0.0  # of that work's billed hours, the share on spot
    cost_ratio: float = 1.0  # its cost / the same work on on-demand
    spot_dollar_share: float = 0.0  # of its dollars, the share paid at spot rates
    # Share of the pool's work whose phase buys no commitment and that is not on spot (explore
    # on on-demand): left out when commitments are sized.
    uncommitted_share: float = 0.0
    phase_shares: Mapping[str, float] = field(default_factory=dict)  # phase ('none') -> share


def _spot_shares(
    jobs_by_class: pd.DataFrame,
    assessments: Sequence[spot.SpotAssessment],
    demand_gpu_hours: Mapping[str, float] | None = None,
) -> dict[str, _PoolSpot]:
    """Per pool, the share of demand that goes to spot and what it costs, and the share of
    explore work left on on-demand (its phase buys no commitment).

    With the pool's demand in GPU-hours (``demand_gpu_hours``, same window as the
    job classes) the share is spot-class GPU-hours over it, so demand no job
    class explains (serving, notebooks, untagged) stays on commitments and
    on-demand; without it the job classes are taken to describe all the demand.
    """
    shares: dict[str, _PoolSpot] = {}
    defaults = [phases.default_for(p) for p in jobs_by_class.get("phase", [None] * len(jobs_by_class))]
    frame = jobs_by_class.assign(
        _spot=[a.uses_spot for a in assessments],
        _ratio=[a.cost_ratio_vs_on_demand for a in assessments],
        _spot_hours=[a.spot_hours_share for a in assessments],
        _spot_usd=[a.spot_dollar_share for a in assessments],
        _phase=[d.phase if d else "none" for d in defaults],
        _commits=[d is None or d.may_drive_commitments for d in defaults],
    )
    for pool, group in frame.groupby("pool", sort=True):
        total = float(group["gpu_hours"].sum())
        if demand_gpu_hours and str(pool) in demand_gpu_hours:
            total = max(total, float(demand_gpu_hours[str(pool)]))
        if total <= 0:
            shares[str(pool)] = _PoolSpot()
            continue
        by_phase = {str(k): float(v) / total for k, v in group.groupby("_phase")["gpu_hours"].sum().items()}
        by_phase["none"] = by_phase.get("none", 0.0) + max(1.0 - sum(by_phase.values()), 0.0)
        kept_off = group[~group["_spot"] & ~group["_commits"]]
        phase_part = _PoolSpot(
            uncommitted_share=float(kept_off["gpu_hours"].sum()) / total, phase_shares=by_phase
        )
        moved = group[group["_spot"]]
        moved_h = float(moved["gpu_hours"].sum())
        if moved_h <= 0:
            shares[str(pool)] = phase_part
            continue
        w = moved["gpu_hours"] / moved_h
        ratio = float((w * moved["_ratio"]).sum())
        shares[str(pool)] = replace(
            phase_part,
            share=moved_h / total,
            spot_hours_share=float((w * moved["_spot_hours"]).sum()),
            cost_ratio=ratio,
            spot_dollar_share=float((w * moved["_ratio"] * moved["_spot_usd"]).sum()) / ratio,
        )
    return shares


def _group_order(group: str) -> tuple[int, str]:
    """'aws' (or the one plan, 'all') first: `savings_plan` stays the AWS plan it always was."""
    return (0 if group in ("aws", "all") else 1, group)


def sp_groups_of(prices: MixPrices, pools: Sequence[str]) -> list[str]:
    """Each pool's savings-plan group: its `sp_group_by_pool` entry, else 'all' for a pool with a
    discount when no groups are given; '' for a pool no plan covers."""
    discounts = prices.sp_discount_by_pool or {}
    named = prices.sp_group_by_pool
    out = []
    for pool in pools:
        if float(discounts.get(pool, 0.0)) <= 0:
            out.append("")
        elif named is None:
            out.append("all")
        else:
            out.append(named.get(pool, ""))
    return out


def pool_offers(prices: MixPrices, pool: str) -> tuple[CommitmentOffer, ...]:
    """The pool's own offers where it has them, else the fleet's."""
    return (prices.offers_by_pool or {}).get(pool) or prices.offers


def offers_for(prices: MixPrices, pool: str) -> tuple[CommitmentOffer, ...]:
    """The offers a pool may take: none longer than its term limit (the shortest if all are)."""
    offers = pool_offers(prices, pool)
    limit = (prices.max_term_months_by_pool or {}).get(pool)
    if limit is None:
        return offers
    allowed = tuple(o for o in offers if o.term_months <= limit)
    return allowed or (min(offers, key=lambda o: o.term_months),)


def _committable(units: np.ndarray, pool: _PoolSpot) -> np.ndarray:
    """The hourly demand commitments are sized on: without spot work, nor explore work on on-demand.

    Only the sizing leaves explore out. Once bought, a reservation or savings plan discounts any
    matching usage, as the bill does, so the month's simulation (``_mix_costs``) lets explore
    work use what the other work leaves idle.
    """
    return units * max(1.0 - pool.share - pool.uncommitted_share, 0.0)


def _mix_costs(
    wide: pd.DataFrame,
    od_rates: np.ndarray,
    spot_shares: Mapping[str, _PoolSpot],
    pool_plans: Sequence[PoolPlan],
    existing_hourly: np.ndarray,
    existing_rate: np.ndarray,
    sp_discounts: np.ndarray,
    hourly_commitment: float | Mapping[str, float],
    gpus_per_unit: np.ndarray,
    sp_groups: Sequence[str] | None = None,
) -> MixCosts:
    """Simulate a month hour by hour: spot takes its share, reserved units the base, the plan the rest.

    ``hourly_commitment``: one plan over every pool with a discount, or per savings-plan group
    (``sp_groups``: each pool's group, '' for none), each covering only its own pools."""
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
    if isinstance(hourly_commitment, Mapping):
        groups = np.array(list(sp_groups or [""] * len(pools)))
        sp_u = np.zeros_like(residual)
        for group, commitment in hourly_commitment.items():
            sp_u += apply_savings_plan(
                residual, od_rates, np.where(groups == group, sp_discounts, 0.0), commitment
            )
        hourly_total = float(sum(hourly_commitment.values()))
    else:
        sp_u = apply_savings_plan(residual, od_rates, sp_discounts, hourly_commitment)
        hourly_total = float(hourly_commitment)
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
        "savings_plan": float(hourly_total * hours * per_month),
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
    durations_by_class: Mapping[str, ClassDurations] | None = None,
    interruptions_by_class: Mapping[str, spot.InterruptionEstimate] | None = None,
    price_phase_policy: bool = True,
) -> MixRecommendation:
    """Recommend reserved units / savings plan / spot / on-demand for a fleet.

    ``demand_by_pool``: hour, pool, units, on_demand_rate (the window to plan on,
    e.g. the last 30 days). ``jobs_by_class``: one row per job class with
    job_class, pool, gpu_hours (same window), jobs, median_duration_h,
    p90_duration_h, instance_count, checkpoint_time_h, restart_time_h,
    deadline_slack, spot_rate, on_demand_rate, interruption_rate_per_h and
    optionally checkpointed (False: the jobs restart from zero when interrupted,
    so they stay on on-demand and the class says what checkpointing would save)
    and interruptible (False: the owner keeps them off spot). Spot-eligible classes move
    their GPU-hours off the pool's demand; with ``gpus_per_unit_by_pool`` the
    share is taken of the pool's demand in GPU-hours, else of the classes'
    total. ``rates``: interruption rate per
    instance-hour by pool or instance type, used where a class has no
    ``interruption_rate_per_h``. ``existing_by_pool``: commitments already held,
    ``(units, hours_to_expiry[, effective_rate_per_unit_h])``. The current bill
    defaults to all-on-demand. ``durations_by_class``: the fitted duration
    distribution of each class (``athanor.model.demand.class_durations``); a
    class without one is described by its median and p90.

    Optional class columns: ``phase``; ``spot_gpu_hours`` (of gpu_hours, on spot today: the
    class's saving is against that); ``spot_runs_ended`` / ``spot_runs_completed`` (its spot runs
    that ended completed or preempted, and those completed: its observed completion, and under
    the ``evidence`` phase policy what lifts the phase's default); ``interruption_rate_low_per_h``
    / ``interruption_rate_high_per_h`` (the rate's interval: predicted completion low/high);
    ``instance_type``, ``spot_rate_source`` (recorded). ``interruptions_by_class``: the estimate
    behind each class's rate, recorded. With ``price_phase_policy`` the mix is planned again
    with the phase policy off, and ``phase_policy`` says what the policy costs a month.
    """
    prices = prices or MixPrices()
    wide = pivot_demand(demand_by_pool)
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
    inputs = _ClassInputs(
        rates=rates,
        prices=prices,
        durations=dict(durations_by_class or {}),
        month_factor=HOURS_PER_MONTH / hours,
        gpus_per_unit=dict(gpus_per_unit_by_pool or {}),
    )
    assessments = _assess_classes(jobs_by_class, inputs, seed=seed, bounds=price_phase_policy)
    shares = _spot_shares(jobs_by_class, assessments, demand_gpu_h)

    existing_hourly = np.zeros((hours, len(pools)))
    existing_rate = np.zeros(len(pools))
    pool_plans = []
    for j, pool in enumerate(pools):
        held = [tuple(h) for h in (existing_by_pool or {}).get(pool, ())]
        existing_hourly[:, j] = existing_profile(held, hours)
        rated = [(h[0], h[2]) for h in held if len(h) > 2]
        default_rate = pool_offers(prices, pool)[0].rate_ratio * od_rates[j]
        unrated = sum(h[0] for h in held if len(h) <= 2)
        total_units = sum(h[0] for h in held)
        existing_rate[j] = (
            (sum(q * r for q, r in rated) + unrated * default_rate) / total_units if total_units > 0 else 0.0
        )
        base = _committable(wide[pool].to_numpy(dtype=float), shares.get(pool, _PoolSpot()))
        plans = plan_terms(
            base, od_rates[j], offers_for(prices, pool), held, prices.annual_demand_decline,
            min_utilization=prices.min_utilization,
        )  # fmt: skip
        found = shares.get(pool, _PoolSpot())
        pool_plans.append(
            PoolPlan(
                pool,
                float(od_rates[j]),
                found.share,
                best_plan(plans),
                gpus[j],
                uncommitted_share=found.uncommitted_share,
                phase_shares=dict(found.phase_shares),
            )  # fmt: skip
        )

    sp_plans: dict[str, SavingsPlanPlan] = {}
    groups = sp_groups_of(prices, pools)
    for group in sorted(set(groups) - {""}, key=_group_order):
        # Sized like the reserved units: on the demand expected over its term (the
        # window repeated, declining), after spot and after every reserved unit; a group's plan
        # on its own pools only (a cloud's savings plan covers none of another cloud's).
        horizon_h = int(round(prices.sp_term_months * HOURS_PER_MONTH))
        frames, ri = [], {}
        for j, pool in enumerate(pools):
            if groups[j] != group:
                continue
            base = _committable(wide[pool].to_numpy(dtype=float), shares.get(pool, _PoolSpot()))
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
        sp_plans[group] = savings_plan_plan(
            pd.concat(frames), dict(zip(pools, od_rates, strict=True)), prices.sp_discount_by_pool or {}, ri
        )
    sp_plan = next(iter(sp_plans.values()), None)
    hourly_by_group = {g: sp.hourly_commitment for g, sp in sp_plans.items()}
    hourly_commitment = float(sum(hourly_by_group.values()))

    def costs_for(scale: float, scen_shares: Mapping[str, _PoolSpot]) -> MixCosts:
        return _mix_costs(
            wide * scale, od_rates, scen_shares, pool_plans, existing_hourly, existing_rate, sp_disc,
            hourly_by_group, gpus, groups,
        )  # fmt: skip

    costs = costs_for(1.0, shares)
    current = (
        costs.on_demand_cost_usd if current_monthly_bill_usd is None else float(current_monthly_bill_usd)
    )

    # Sensitivity: the same purchases and assignments, under worse conditions.
    drop = costs_for(0.8, shares)
    modes = {a.job_class: a.mode for a in assessments}
    doubled = _assess_classes(jobs_by_class, inputs, 2.0, modes, seed=seed)
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
    # Each spot class simulated jobs in proportion to its jobs: pooled, they weigh classes by jobs.
    on_spot = [a for a in assessments if a.uses_spot]
    simulated = sum(a.simulated_jobs for a in on_spot)
    completed = sum(a.completed_jobs for a in on_spot)
    rec = MixRecommendation(
        pools=pool_plans,
        job_classes=assessments,
        hourly_commitment=hourly_commitment,
        savings_plan=sp_plan,
        savings_plans={g: sp for g, sp in sp_plans.items() if sp.hourly_commitment > 0},
        costs=costs,
        current_monthly_bill_usd=current,
        expected_completion_rate=_completion(jobs, assessments),
        spot_completion_rate=completed / simulated if simulated else None,
        spot_completion_interval=spot.wilson_interval(completed, simulated) if simulated else None,
        spot_simulated_jobs=simulated,
        phases=_phase_summary(jobs_by_class, assessments, wide, gpus, inputs.month_factor),
        class_phases={
            a.job_class: phases.phase_of(p)
            for a, p in zip(assessments, jobs_by_class.get("phase", [None] * len(assessments)), strict=True)
        },
        sensitivity=sensitivity,
        assumptions={
            "hours_per_month": HOURS_PER_MONTH,
            "window_hours": hours,
            "offers": [asdict(o) for o in prices.offers],
            "offers_by_pool": {
                p: [asdict(o) for o in offers] for p, offers in (prices.offers_by_pool or {}).items()
            },
            "sp_discount_by_pool": dict(prices.sp_discount_by_pool or {}),
            "sp_group_by_pool": dict(prices.sp_group_by_pool or {}),
            "sp_term_months": prices.sp_term_months,
            "annual_demand_decline": prices.annual_demand_decline,
            "min_completion": prices.min_completion,
            "min_utilization": prices.min_utilization,
            "simulated_jobs_per_job": prices.simulated_jobs_per_job,
            "completion_confidence": spot.COMPLETION_CONFIDENCE,
            "duration_model_by_class": {a.job_class: a.duration_model for a in assessments},
            # Classes whose fitted quantiles lie beyond their data: the simulation's long jobs are
            # the model's extrapolation (athanor.model.durations.support), not observed runs.
            "duration_beyond_data_by_class": {
                c: list(d.beyond_data) for c, d in (durations_by_class or {}).items() if d.beyond_data
            },
            "spot_bucket_monthly_fraction": spot.BUCKET_MONTHLY_FRACTION,
            "spot_prior_instance_hours": spot.PRIOR_INSTANCE_HOURS,
            "spot_phase_policy": prices.spot_phase_policy,
            "spot_evidence_min_runs": phases.EVIDENCE_MIN_RUNS,
            "spot_work_spread": "spot-eligible work is spread over the hours like the pool's demand",
        },
        class_spot=_class_spot(jobs_by_class, interruptions_by_class or {}),
    )
    if not price_phase_policy:
        return rec
    free = recommend_mix(
        demand_by_pool, jobs_by_class, replace(prices, spot_phase_policy="off"), rates,
        current_monthly_bill_usd, existing_by_pool, gpus_per_unit_by_pool, seed, durations_by_class,
        price_phase_policy=False,
    )  # fmt: skip
    return replace(rec, phase_policy=phase_policy_price(rec, free, jobs_by_class, prices))


def _class_spot(
    jobs_by_class: pd.DataFrame, interruptions: Mapping[str, spot.InterruptionEstimate]
) -> dict[str, dict[str, object]]:
    """Per class, what its spot record shows (MixRecommendation.spot_record)."""
    out: dict[str, dict[str, object]] = {}
    for row in jobs_by_class.itertuples(index=False):
        name = str(row.job_class)
        ended = int(_number(row, "spot_runs_ended", 0))
        estimate = interruptions.get(name)
        source = getattr(row, "spot_rate_source", None)
        out[name] = {
            "pool": str(row.pool),
            "instance_type": getattr(row, "instance_type", None),
            "interruptions_per_instance_hour": None if estimate is None else estimate.to_dict(),
            "observed_completion": phases.observed_completion(_number(row, "spot_runs_completed", 0), ended),
            "spot_runs_ended": ended,
            "spot_rate": float(row.spot_rate),
            "spot_rate_source": source if isinstance(source, str) else "catalogue",
        }
    return out


def phase_policy_price(
    rec: MixRecommendation, free: MixRecommendation, jobs_by_class: pd.DataFrame, prices: MixPrices
) -> dict[str, object]:
    """What the spot phase policy costs a month: the plan's cost with it minus without it (``free``:
    the same fleet planned with the policy off), and which classes it keeps off spot."""
    kept, lifted = [], []
    for row in jobs_by_class.itertuples(index=False):
        default = phases.default_for(getattr(row, "phase", None))
        if default is None or default.may_use_spot:
            continue
        args = (_number(row, "spot_runs_completed", 0), _number(row, "spot_runs_ended", 0))
        if phases.keeps_off_spot(row.phase, prices.spot_phase_policy, *args, prices.min_completion):
            kept.append(str(row.job_class))
        elif prices.spot_phase_policy == "evidence":
            lifted.append(str(row.job_class))
    cost = rec.estimated_monthly_cost - free.estimated_monthly_cost
    names = sorted({n for n, d in phases.PHASE_DEFAULTS.items() if not d.may_use_spot})
    freed = {a.job_class for a in free.job_classes if a.uses_spot}
    moved = [a.job_class for a in rec.job_classes if not a.uses_spot and a.job_class in freed]
    words = f"keeping {'/'.join(names)} off spot costs ${cost:,.0f} a month" + (
        f" ({', '.join(moved)} would otherwise run on spot)"
        if moved
        else " (no class would otherwise run on spot)"
    )
    if lifted:
        words += (
            f"; {', '.join(lifted)} stay with the spot model: their own spot runs complete "
            f"(at least {phases.EVIDENCE_MIN_RUNS} ended, {100 * prices.min_completion:.0f} % completed)"
        )
    return {
        "setting": "ATHANOR_SPOT_PHASE_POLICY",
        "policy": prices.spot_phase_policy,
        "phases_kept_off_spot": names if prices.spot_phase_policy != "off" else [],
        "kept_off_spot": kept,
        "lifted_by_evidence": lifted,
        "would_use_spot_without_policy": moved,
        "plan_monthly_cost": rec.estimated_monthly_cost,
        "plan_monthly_cost_without_policy": free.estimated_monthly_cost,
        "monthly_cost": cost,
        "words": words[0].upper() + words[1:] + ".",
    }


_PHASE_EFFECT = {
    "explore": "buys no commitment: spot where the spot recommender allows, else on-demand; "
    "commitments are sized without it",
    "tune": "kept off spot as ATHANOR_SPOT_PHASE_POLICY says (by default unless its own spot runs "
    "complete); counted when reserved units and the savings plan are sized",
    "production": "kept off spot as ATHANOR_SPOT_PHASE_POLICY says (by default unless its own spot runs "
    "complete); counted when reserved units (the mix's dedicated capacity) and the savings plan are sized",
    "none": "no phase recorded: the mix's own choice (spot where the spot recommender allows, "
    "commitments sized on the rest)",
}


def _phase_summary(
    jobs_by_class: pd.DataFrame,
    assessments: Sequence[spot.SpotAssessment],
    wide: pd.DataFrame,
    gpus_per_unit: np.ndarray,
    month_factor: float,
) -> dict[str, dict[str, object]]:
    """GPU-hours a month per phase, split by where the mix puts them, with the phase's default.

    GPU-hours of demand no job class explains (serving, notebooks, untagged) count as 'none'.
    """
    demand_gpu_h = float((wide.sum(axis=0).to_numpy(dtype=float) * gpus_per_unit).sum()) * month_factor
    labels = [phases.phase_of(p) or "none" for p in jobs_by_class.get("phase", [None] * len(assessments))]
    out: dict[str, dict[str, object]] = {}
    explained = 0.0
    for name in (*phases.PHASE_DEFAULTS, "none"):
        rows = [
            (a, float(h) * month_factor)
            for a, label, h in zip(assessments, labels, jobs_by_class["gpu_hours"], strict=True)
            if label == name
        ]
        gpu_h = sum(h for _, h in rows)
        explained += gpu_h
        if name == "none":
            gpu_h += max(demand_gpu_h - explained, 0.0)
        if not rows and gpu_h <= 0:
            continue
        default = phases.PHASE_DEFAULTS.get(name)
        out[name] = {
            "default_purchase": phases.purchase_words(None if default is None else name),
            "option": "the mix's choice" if default is None else default.option,
            "effect": _PHASE_EFFECT[name],
            "job_classes": [a.job_class for a, _ in rows],
            "spot_job_classes": [a.job_class for a, _ in rows if a.uses_spot],
            "gpu_hours_per_month": gpu_h,
            "spot_class_gpu_hours_per_month": sum(h for a, h in rows if a.uses_spot),
        }
    return out


def phase_words(rec: MixRecommendation) -> str | None:
    """One sentence on what the recorded phases set; None when no job class records a phase."""
    named = [(k, v) for k, v in rec.phases.items() if k != "none"]
    if not named:
        return None
    parts = []
    for name, v in named:
        hours = float(v["gpu_hours_per_month"])  # type: ignore[arg-type]
        text = f"{name} {hours:,.0f} GPU-hours a month, {v['default_purchase']}"
        on_spot = float(v["spot_class_gpu_hours_per_month"])  # type: ignore[arg-type]
        if name == "explore":
            text += f" ({on_spot:,.0f} in classes sent to spot; no commitment bought for it)"
        elif on_spot > 0:
            text += f" ({on_spot:,.0f} in classes whose own spot runs complete, left to the spot model)"
        elif rec.phase_policy.get("policy") == "off":
            text += " (the spot model decides: the phase keeps nothing off spot)"
        else:
            text += " (kept off spot)"
        parts.append(text)
    words = "The job phase sets the default purchase option: " + "; ".join(parts) + "."
    price = rec.phase_policy.get("monthly_cost")
    if price is not None and rec.phase_policy.get("policy") != "off":
        words += f" {rec.phase_policy['words']}"
    return words


def _completion(jobs: np.ndarray, assessments: Sequence[spot.SpotAssessment]) -> float:
    rates = np.array([a.completion_rate for a in assessments])
    return float((jobs * rates).sum() / jobs.sum()) if jobs.sum() > 0 else 1.0


def completion_words(rec: MixRecommendation) -> str:
    """'99.9% of spot jobs finish by their deadline (95% interval 99.8-100.0%, 6,780 simulated jobs)'."""
    if rec.spot_completion_rate is None:
        return "no job runs on spot"
    low, high = rec.spot_completion_interval or (0.0, 1.0)
    return (
        f"{100 * rec.spot_completion_rate:.1f}% of spot jobs finish by their deadline "
        f"({100 * spot.COMPLETION_CONFIDENCE:.0f}% interval {100 * low:.1f}-{100 * high:.1f}%, "
        f"{rec.spot_simulated_jobs:,} simulated jobs)"
    )


def _term_words(months: int) -> str:
    return f"{months // 12} year{'s' if months > 12 else ''}" if months % 12 == 0 else f"{months} months"


def utilisation_words(plan: CommitPlan) -> str:
    """Why a commitment can be worth buying below full use (newsvendor), and the floor if it bit."""
    text = (
        f"expected {100 * plan.purchase_utilization:.0f}% utilised; a unit at "
        f"{plan.break_even_utilization:.2f}x the on-demand rate pays for itself when used more than "
        f"{100 * plan.break_even_utilization:.0f}% of its hours (p_c/p_od), so the cost-optimal quantity "
        f"stops where the next unit would fall below that"
    )
    if plan.commit_units < plan.cost_optimal_units:
        text += (
            f"; the utilisation floor of {100 * plan.min_utilization:.0f}% buys {plan.commit_units:g} "
            f"instead of the cost-optimal {plan.cost_optimal_units:g}"
        )
    if plan.break_even_months is not None:
        text += f"; the upfront payment is paid back in {plan.break_even_months:.1f} months"
    return text


def explain(
    rec: MixRecommendation,
    pool_words: Mapping[str, str] | None = None,
    plan_words: Mapping[str, str] | None = None,
) -> str:
    """A few plain sentences a finance reader can act on.

    ``pool_words``: a pool's purchase in its cloud's words (athanor.recommend.provider_offers:
    'Buy an Azure reservation (1-year, billed monthly) for 2 more Standard_ND96asr_v4 VMs in
    eastus'), in place of 'Commit to N <family> units for a term'; ``plan_words``: each savings
    plan's name by group ('Azure savings plan for compute'), where the fleet buys more than one."""
    parts = []
    buys = [p for p in rec.pools if p.plan.commit_units > 0]
    for p in buys:
        name = p.pool.split("/")[0]
        words = (pool_words or {}).get(p.pool) or (
            f"Commit to {p.plan.commit_units:g} {name} unit{'s' if p.plan.commit_units != 1 else ''} "
            f"for {_term_words(p.plan.term_months)} ({p.plan.payment_option.replace('_', ' ')})"
        )
        parts.append(f"{words}, " + utilisation_words(p.plan) + ".")
    if not buys:
        parts.append("Buy no new commitments: demand is too uneven (or already covered) for them to pay.")
    plans = rec.hourly_by_plan
    if len(plans) > 1 or (plans and plan_words and next(iter(plans)) in plan_words):
        parts.append(
            "Add "
            + " and ".join(
                f"{'an' if (plan_words or {}).get(g, 'savings plan')[0] in 'AEIOU' else 'a'} "
                f"{(plan_words or {}).get(g, 'savings plan')} of ${h:,.3f} per hour"
                for g, h in plans.items()
            )
            + " for the remaining steady use."
        )
    elif rec.hourly_commitment > 0:
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
            + (f"; {completion_words(rec)}" if rec.spot_completion_rate is not None else "")
            + "."
        )  # fmt: skip
    unlock = [j for j in rec.job_classes if j.unlock is not None and j.unlock.mode != "on_demand"]
    if unlock:
        saving = sum(j.unlock.monthly_saving_usd or 0.0 for j in unlock)
        parts.append(
            f"{', '.join(j.job_class for j in unlock)} do not checkpoint, so they stay on on-demand; "
            f"checkpointing at the Young/Daly interval would let them use spot, about ${saving:,.0f} a month "
            "less against on-demand."
        )
    by_phase = phase_words(rec)
    if by_phase:
        parts.append(by_phase)
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
