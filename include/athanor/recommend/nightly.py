"""Warehouse -> recommenders -> warehouse: the purchase mix and the checkpoint lifecycle.

This module only moves data: it builds the inputs `athanor.recommend.mix` and
`athanor.recommend.lifecycle` expect from the warehouse's marts, and stores what they
recommend in `recommendations` and `backtests` (replacing this run's rows).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from athanor.model.demand import ClassDurations, class_durations
from athanor.recommend import attribution, mix, plan, provider_offers, spot
from athanor.recommend.backtest import backtest, backtest_synthetic_scenarios
from athanor.recommend.commitments import CommitPlan, best_plan, commitment_cost, existing_profile, plan_terms
from athanor.recommend.provider_offers import is_sagemaker_pool
from athanor.reference import BUCKET_MONTHLY_FRACTION, HOURS_PER_MONTH, HOURS_PER_YEAR, instance, spot_advice
from athanor.reference.commitment_rates import unit_rates
from athanor.settings import PRICING_ASSUMPTIONS, Settings, pricing_value
from athanor.warehouse import insert_rows, sql, transaction

PLANNING_WINDOW_DAYS = 30
# The fleet's spot runs of this many days up to as_of update the Spot Advisor's interruption
# rates: a quarter holds several times the runs of the planning window (interruptions are rare),
# and is recent enough for the pools' capacity today.
INTERRUPTION_HISTORY_DAYS = 90
# The synthetic backtest scenarios are priced as a p4d.24xlarge fleet (its us-east-1 on-demand
# $/h in the reference catalogue): they compare commitment rules, one list price serves them all.
SYNTHETIC_SCENARIO_ON_DEMAND_RATE = float(instance("p4d.24xlarge").on_demand_usd_per_h)


_DEFAULTS = Settings.__dataclass_fields__


@dataclass(frozen=True)
class PricingAssumptions:
    """Prices and policies the purchase recommendation assumes: the settings' values, or a run's
    overrides from the optimize DAG's form (GPU commitment prices are not public)."""

    commit_discount_1y: float = _DEFAULTS["commit_discount_1y"].default
    commit_discount_3y: float = _DEFAULTS["commit_discount_3y"].default
    savings_plan_discount: float = _DEFAULTS["savings_plan_discount"].default
    deadline_slack: float = _DEFAULTS["deadline_slack"].default  # late after this many times the run time
    commit_min_utilization: float = _DEFAULTS["commit_min_utilization"].default
    restart_time_h: float = 0.1  # re-provision + reload a checkpoint after an interruption
    overridden: tuple[str, ...] = ()  # the values the run's form set instead of the settings
    spot_phase_policy: str = _DEFAULTS["spot_phase_policy"].default  # athanor.recommend.phases

    @classmethod
    def from_settings(cls, settings: Settings, params: dict[str, Any] | None = None) -> PricingAssumptions:
        """The settings' values, each replaced by the run's param of the same name when it is set."""
        values = {name: float(getattr(settings, name)) for name in PRICING_ASSUMPTIONS}
        overridden = []
        for name in PRICING_ASSUMPTIONS:
            given = (params or {}).get(name)
            if given is not None and given != "":
                values[name] = pricing_value(name, given)
                overridden.append(name)
        return cls(**values, overridden=tuple(overridden), spot_phase_policy=settings.spot_phase_policy)

    @property
    def one_year_ratio(self) -> float:
        return 1.0 - self.commit_discount_1y

    @property
    def three_year_ratio(self) -> float:
        return 1.0 - self.commit_discount_3y

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "overridden": list(self.overridden)}


@dataclass(frozen=True)
class InterruptionRate:
    """A job class's interruption rate: the Spot Advisor figure (the prior) and, once
    `with_fleet` has run, the fleet's own spot runs in the pool and the rate they lead to."""

    region: str
    instance_type: str
    interruption_bucket: int  # 0-4
    monthly_fraction: float
    rate_per_h: float  # per instance-hour: the advisor's figure, the prior
    source: str  # what was looked up, or what was assumed when the snapshot has nothing
    observed_interruptions: int = 0  # restarts and preemptions of the pool's spot runs
    observed_instance_hours: float = 0.0  # those runs' instance-hours
    prior_instance_hours: float = spot.PRIOR_INSTANCE_HOURS
    used_rate_per_h: float | None = None  # the posterior mean; None before `with_fleet`

    @property
    def estimate(self) -> spot.InterruptionEstimate:
        """The Gamma-Poisson update of the advisor's rate by the pool's spot runs."""
        return spot.fleet_interruption_rate(
            self.observed_interruptions,
            self.observed_instance_hours,
            self.rate_per_h,
            self.prior_instance_hours,
        )

    def with_fleet(self, interruptions: int, instance_hours: float) -> InterruptionRate:
        """This rate updated by the fleet's own spot runs in the pool."""
        found = replace(
            self, observed_interruptions=int(interruptions), observed_instance_hours=float(instance_hours)
        )
        return replace(found, used_rate_per_h=found.estimate.used)


def interruption_rate(instance_type: str, region: str) -> InterruptionRate:
    """Interruptions per instance-hour of a type in its own region (Spot Advisor snapshot).

    A type the snapshot lacks in that region takes the worst bucket of its family there;
    a family it lacks entirely, the top bucket (an assumption, said so in `source`).
    """
    advice = spot_advice(region)
    family = instance_type.split(".")[0]
    if instance_type in advice:
        bucket, source = advice[instance_type].interruption_bucket, "Spot Advisor"
    elif kin := [a.interruption_bucket for t, a in advice.items() if t.split(".")[0] == family]:
        bucket, source = max(kin), f"Spot Advisor: no {instance_type} in {region}, worst {family} bucket"
    else:
        bucket = max(BUCKET_MONTHLY_FRACTION)
        source = f"no Spot Advisor figure for {family} in {region}: the top bucket assumed"
    fraction = BUCKET_MONTHLY_FRACTION[bucket]
    return InterruptionRate(
        region=region,
        instance_type=instance_type,
        interruption_bucket=bucket,
        monthly_fraction=fraction,
        rate_per_h=spot.monthly_fraction_to_rate_per_h(fraction),
        source=source,
    )


def duration_models(con: duckdb.DuckDBPyConnection, run_id: str, as_of: date) -> list[dict[str, Any]]:
    """The duration fits a run's recommendation uses: its own, else the latest fitted by `as_of`."""
    found = con.execute(
        """select run_id from duration_fits where run_id = ? or as_of <= ?
           order by run_id = ? desc, as_of desc, run_id desc limit 1""",
        [run_id, as_of, run_id],
    ).fetchone()
    if found is None:
        return []
    names = ("group_key", "family", "params", "n", "censored", "borrowed_from", "data_limit_s")
    names += ("p50_beyond_data", "p90_beyond_data", "p99_beyond_data")
    return [
        dict(zip(names, row, strict=True))
        for row in con.execute(
            """select group_key, family, params, n, censored, record ->> 'borrowed_from', data_limit_s,
                      p50_beyond_data, p90_beyond_data, p99_beyond_data
               from duration_fits where run_id = ? order by group_by, group_key""",
            [found[0]],
        ).fetchall()
    ]


def build_demand_mart(con: duckdb.DuckDBPyConnection) -> int:
    from athanor.ingest.daily import gpu_hourly_source

    mart = sql("marts/gpu_demand_hourly", hourly=gpu_hourly_source(con))
    con.execute(f"create or replace table mart_gpu_demand_hourly as {mart}")
    return con.execute("select count(*) from mart_gpu_demand_hourly").fetchone()[0]


def _window(as_of: date) -> tuple[datetime, datetime]:
    end = datetime.combine(as_of + timedelta(days=1), datetime.min.time())
    return end - timedelta(days=PLANNING_WINDOW_DAYS), end


def _hourly(frame: pd.DataFrame, start: datetime, end: datetime, column: str) -> pd.DataFrame:
    """Fill the hours a pool had no usage with 0, so quantiles see idle hours."""
    hours = pd.date_range(start, end, freq="h", inclusive="left")
    out = []
    for pool, g in frame.groupby("pool"):
        series = g.set_index("hour")[column].reindex(hours, fill_value=0.0).fillna(0.0)
        out.append(
            pd.DataFrame(
                {
                    "hour": hours,
                    "pool": pool,
                    "units": series.to_numpy(),
                    "on_demand_rate": float(g["on_demand_rate_usd"].iloc[0]),
                }
            )
        )
    return (
        pd.concat(out, ignore_index=True)
        if out
        else pd.DataFrame(columns=["hour", "pool", "units", "on_demand_rate"])
    )


def recommend_purchases(
    con: duckdb.DuckDBPyConnection, run_id: str, as_of: date, assumptions: PricingAssumptions | None = None
) -> dict[str, Any]:
    """Recommend commitments, savings plan and spot share; backtest the commitment rule.

    Spot decisions draw each job class's jobs from its fitted duration distribution
    (`duration_fits`) and take interruption rates for the class's instance type in its pool's
    region. `assumptions` default to the settings' defaults.
    """
    a = assumptions or PricingAssumptions()
    build_demand_mart(con)
    start, end = _window(as_of)
    demand = con.execute(
        "select * from mart_gpu_demand_hourly where hour >= ? and hour < ?", [start, end]
    ).df()
    if demand.empty:
        return {"pools": 0, "note": "no GPU usage in the planning window"}
    for col in ("on_demand_units", "spot_units", "reserved_units", "savings_plan_units"):
        demand[col] = demand[col].fillna(0.0)
    window = _hourly(demand, start, end, "units")
    existing = commitments_held(con, start, end)
    classes = con.execute(sql("marts/job_classes"), {"window_start": start, "window_end": end}).df()
    ref = (
        con.execute(
            "select instance_family, gpu_count as gpus, spot_usd_per_h as spot,"
            " reference_instance_type as instance_type from ref_instance_families"
        )
        .df()
        .set_index("instance_family")
    )
    rates: dict[str, InterruptionRate] = {}
    durations: dict[str, ClassDurations] = {}
    fits = duration_models(con, run_id, as_of)
    if not classes.empty:
        family = classes["pool"].str.split("/").str[0]
        classes["deadline_slack"] = a.deadline_slack
        classes["restart_time_h"] = a.restart_time_h
        classes["on_demand_rate"] = [
            float(window.loc[window["pool"] == p, "on_demand_rate"].iloc[0]) for p in classes["pool"]
        ]
        # The bill's effective spot rate of the class's instance type in its pool's region where
        # the window has spot hours of it, else the catalogue's, else 0.4x on-demand (assumed).
        billed = spot_rates_billed(con, start, end)
        catalogue = [
            float(ref.loc[f, "spot"]) if f in ref.index and pd.notna(ref.loc[f, "spot"]) else None
            for f in family
        ]
        keys = list(zip(classes["instance_type"], classes["pool"].str.split("/").str[-1], strict=True))
        classes["spot_rate"] = [
            billed[k] if k in billed else c if c is not None else od * 0.4
            for k, c, od in zip(keys, catalogue, classes["on_demand_rate"], strict=True)
        ]
        classes["spot_rate_source"] = [
            "bill" if k in billed else "catalogue" if c is not None else "assumed"
            for k, c in zip(keys, catalogue, strict=True)
        ]
        observed = fleet_interruptions(con, end - timedelta(days=INTERRUPTION_HISTORY_DAYS), end)
        for row in classes.itertuples(index=False):
            region = row.pool.split("/")[-1]
            found = observed.get((row.instance_type, region), (0, 0.0))
            rates[row.job_class] = interruption_rate(row.instance_type, region).with_fleet(*found)
            # A phase matches fits grouped by it (group_by=team,phase); the other fits ignore it.
            phase = {"phase": row.phase} if isinstance(row.phase, str) else {}
            fitted = class_durations(fits, team=row.team, instance_family=row.instance_family, **phase)
            if fitted is not None:
                durations[row.job_class] = fitted
        estimates = {c: r.estimate for c, r in rates.items()}
        classes["interruption_rate_per_h"] = [estimates[c].used for c in classes["job_class"]]
        classes["interruption_rate_low_per_h"] = [estimates[c].interval()[0] for c in classes["job_class"]]
        classes["interruption_rate_high_per_h"] = [estimates[c].interval()[1] for c in classes["job_class"]]
        # The mart's flag: the class's jobs mostly checkpoint (others restart from zero).
        classes["checkpointed"] = classes.pop("interruptible")
        classes["p90_duration_h"] = np.maximum(classes["p90_duration_h"], classes["median_duration_h"])
    gpus_per_unit = {p: float(ref.loc[p.split("/")[0], "gpus"]) for p in window["pool"].unique()}
    current_bill = float(demand["effective_cost_usd"].sum()) * HOURS_PER_MONTH / (PLANNING_WINDOW_DAYS * 24)
    # The plan's first two steps, as demand: idle capacity stopped, then the GPU plan's counted
    # moves; commitments and spot are sized on what remains (athanor.recommend.plan).
    steps = _plan_steps_demand(con, run_id, window, existing, gpus_per_unit, start, end)
    window, gpus_per_unit = steps.adjusted.long(), steps.adjusted.gpus_per_unit
    offers_by_pool, rate_labels = pool_offers(window["pool"].unique(), ref, a)
    prices = mix.MixPrices(
        offers=(
            mix.CommitmentOffer(12, "no_upfront", a.one_year_ratio, 0.0),
            mix.CommitmentOffer(36, "no_upfront", a.three_year_ratio, 0.0),
        ),
        offers_by_pool=offers_by_pool,
        # A Compute Savings Plan does not cover SageMaker: its pools take their own plan (pool_offers).
        sp_discount_by_pool={
            p: 0.0 if is_sagemaker_pool(p) else a.savings_plan_discount for p in window["pool"].unique()
        },
        min_utilization=a.commit_min_utilization,
        spot_phase_policy=a.spot_phase_policy,
        max_term_months_by_pool={p: t.max_term_months for p, t in steps.terms.items() if t.max_term_months},
    )
    # Each cloud's own commitments: a savings plan covers its cloud's pools only (none for GCP's).
    providers = provider_offers.pool_providers(window["pool"].unique(), ref["instance_type"].to_dict())
    prices = provider_offers.by_cloud(prices, providers)
    rec = mix.recommend_mix(
        window,
        classes,
        prices=prices,
        current_monthly_bill_usd=current_bill,
        existing_by_pool=existing,
        gpus_per_unit_by_pool=gpus_per_unit,
        durations_by_class=durations,
        interruptions_by_class={c: r.estimate for c, r in rates.items()},
    )
    summary = rec.to_dict()
    parts = attribution.mix_parts(
        window,
        classes,
        rec,
        current_bill_usd=current_bill,
        **billed_gpu_pools(con, start, end),
        existing_by_pool=existing,
        gpus_per_unit_by_pool=gpus_per_unit,
        prices=prices,
        earlier=[(kind, scope, pools, state) for kind, scope, pools, state in steps.adjusted.states],
        today=steps.adjusted.before,
    )
    summary["attribution"] = parts.to_dict()
    summary["plan"] = steps.to_dict(parts)
    flagged = {
        day
        for (day,) in con.execute(
            "select distinct day from spend_anomalies where run_id = ? and day >= ? and day < ?",
            [run_id, start.date(), end.date()],
        ).fetchall()
    }
    commitments = commitment_facts(rec, steps, a, prices, existing, flagged, rate_labels, providers)
    # In each cloud's words: an Azure reservation, a GCP committed use discount (AWS's unchanged).
    words = provider_offers.explain_words(rec, commitments)
    summary["explanation"] = one_baseline(mix.explain(rec, *words), rec)
    used = {
        **a.to_dict(),
        **rec.assumptions,
        "planning_window": {"start": start.isoformat(), "end": end.isoformat(), "days": PLANNING_WINDOW_DAYS},
        "current_monthly_bill": "effective cost of the window's GPU usage, scaled to a 730-hour month",
        "interruption_rate_by_class": {c: asdict(r) for c, r in rates.items()},
        "spot_rate_by_class": dict(
            zip(classes.get("job_class", []), classes.get("spot_rate", []), strict=True)
        ),
        "spot_rate_source_by_class": dict(
            zip(classes.get("job_class", []), classes.get("spot_rate_source", []), strict=True)
        ),
        "spot_rate_basis": "the bill's effective spot rate of the class's instance type in its pool's "
        "region over the planning window (source 'bill'), else the catalogue's ('catalogue'), else "
        "0.4x on-demand ('assumed')",
        "interruption_history_days": INTERRUPTION_HISTORY_DAYS,
        "provider_by_pool": providers,
        "commitment_rates_by_pool": {
            p: {str(t): w for t, w in terms.items()} for p, terms in rate_labels.items()
        },
    }
    backtests = _backtests(con, as_of, a)
    _store_mix(con, run_id, as_of, rec, summary, used, backtests, commitments)
    return {
        "pools": len(rec.pools),
        "estimated_monthly_savings_amount": round(parts.saving_usd, 2),
        "estimated_savings_percentage": round(100 * parts.saving_usd / current_bill, 1)
        if current_bill
        else 0.0,
        "explanation": summary["explanation"],
    }


@dataclass(frozen=True)
class PlanDemand:
    """The demand the mix is planned on, after the plan's idle stops and counted GPU moves."""

    adjusted: plan.Adjusted
    terms: dict[str, plan.TermLimit]
    moves: list[plan.Move]
    idle_pool_of_scope: dict[str, str]  # idle_gpu scope (team/instance type) -> its pool
    held: pd.DataFrame  # hour x pool, units of commitments held

    def to_dict(self, parts: attribution.MixParts) -> dict[str, Any]:
        return {
            "order": "idle capacity, then the GPU plan's counted moves; spot and commitments on what remains",
            "idle_shares": self.adjusted.idle_shares,
            "idle_savings": {p.scope: p.saving_usd for p in parts.parts if p.kind == "idle_capacity"},
            "idle_pool_of_scope": self.idle_pool_of_scope,
            "move_savings": {p.scope: p.saving_usd for p in parts.parts if p.kind == "gpu_choice"},
            "move_pools": {m.job_class: [m.from_pool, m.to_pool] for m in self.moves},
            "saving_basis": "steps of the purchase mix's chain of costs: spot on today's demand, then "
            "each idle stop and move priced as the mix prices the hours it removes and adds (held "
            "commitments first), hour by hour; a move's new pool at on-demand list prices",
            "demand_by_pool": self.adjusted.demand_by_pool(),
            "term_rule": {p: t.reason for p, t in self.terms.items()},
        }


def _plan_steps_demand(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    window: pd.DataFrame,
    existing: dict[str, list[tuple[float, float]]],
    gpus_per_unit: dict[str, float],
    start: datetime,
    end: datetime,
) -> PlanDemand:
    wide = window.pivot_table(index="hour", columns="pool", values="units", aggfunc="sum").fillna(0.0)
    wide.columns = [str(c) for c in wide.columns]
    rates = window.groupby("pool")["on_demand_rate"].mean().to_dict()
    held = pd.DataFrame(
        {p: existing_profile(existing.get(p, []), len(wide)) for p in wide.columns}, index=wide.index
    )
    pool_of_family = dict(con.execute(sql("marts/family_pools")).fetchall())
    idle, idle_pool = plan.idle_units(con, run_id, pool_of_family, gpus_per_unit)
    moves = plan.counted_moves(con, run_id, pool_of_family, gpus_per_unit)
    occupancy = plan.class_occupancy(con, pd.DatetimeIndex(wide.index), [m.job_class for m in moves])
    adjusted = plan.adjust_demand(wide, rates, gpus_per_unit, idle, moves, occupancy)
    # The 30 days before the window, and how long the bill has shown each pool: the term rule.
    previous = dict(
        con.execute(
            "select pool, sum(units) from mart_gpu_demand_hourly where hour >= ? and hour < ? group by pool",
            [start - (end - start), start],
        ).fetchall()
    )
    history = dict(
        con.execute(
            "select pool, count(distinct cast(hour as date)) from mart_gpu_demand_hourly "
            "where hour < ? and units > 0 group by pool",
            [end],
        ).fetchall()
    )
    terms = plan.term_limits(
        {p: float(adjusted.before[p].sum()) for p in adjusted.before.columns},
        {p: float(adjusted.after_moves[p].sum()) for p in adjusted.after_moves.columns},
        {p: float(v) for p, v in previous.items()},
        {p: int(v) for p, v in history.items()},
    )
    return PlanDemand(adjusted, terms, moves, idle_pool, held)


def assumed_rate_label(a: PricingAssumptions, term_months: int, offer: str = "") -> str:
    """The flat fallback of a term, labelled as the assumption it is."""
    ratio = a.one_year_ratio if term_months == 12 else a.three_year_ratio
    what = f"{offer} " if offer else ""
    return (
        f"assumption: flat {100 * (1.0 - ratio):.0f} % {term_months // 12}-year {what}discount "
        f"({ratio:.2f}x on-demand, settings ATHANOR_COMMIT_DISCOUNT_1Y/3Y): "
        f"no published {what}rate of the pool's instance type in its region in reference/data/commitment_rates.csv"
    )


def pool_offers(
    pools: Iterable[str], ref: pd.DataFrame, a: PricingAssumptions
) -> tuple[dict[str, tuple[mix.CommitmentOffer, ...]], dict[str, dict[int, str]]]:
    """Each pool's 1- and 3-year no-upfront offers: the published rate of its reference instance
    type in its region where `commitment_rates.csv` has one (its ratio to the same source's
    on-demand rate), else the settings' flat discount; and per pool and term what priced it.

    A SageMaker pool (ml.*) is offered a SageMaker Savings Plan: N x the type's hourly plan rate
    covers N instances of the pool each hour, as N units would, so the unit plan sizes it, priced
    at SageMaker Savings Plans rates (`sagemaker_sp` rows) or the labelled flat fallback."""
    offers: dict[str, tuple[mix.CommitmentOffer, ...]] = {}
    labels: dict[str, dict[int, str]] = {}
    for pool in pools:
        family, region = str(pool).split("/")[0], str(pool).split("/")[-1]
        itype = ref.loc[family, "instance_type"] if family in ref.index else None
        sagemaker = is_sagemaker_pool(str(pool))
        kinds = {"offers": ("sagemaker_sp",)} if sagemaker else {}
        published = unit_rates(str(itype), region, **kinds) if isinstance(itype, str) else {}
        terms, words = [], {}
        for months, flat in ((12, a.one_year_ratio), (36, a.three_year_ratio)):
            rate = published.get(months)
            terms.append(mix.CommitmentOffer(months, "no_upfront", rate.rate_ratio if rate else flat, 0.0))
            fallback = assumed_rate_label(a, months, "SageMaker Savings Plan" if sagemaker else "")
            words[months] = rate.label() if rate else fallback
        offers[str(pool)], labels[str(pool)] = tuple(terms), words
    return offers, labels


def commitment_facts(
    rec: mix.MixRecommendation,
    steps: PlanDemand,
    a: PricingAssumptions,
    prices: mix.MixPrices,
    existing: dict[str, list[tuple[float, float]]],
    flagged: set[date],
    rate_labels: Mapping[str, Mapping[int, str]] | None = None,
    providers: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """What each recommended commitment commits to: units, term, the total payable over the term,
    break-even utilisation and month, expected utilisation, its saving if demand falls 20 % and if
    the plan's moves are not made (hour by hour on the pool's committable demand), and the units the
    same rule buys when the days the spend watch flagged are left out of the window.

    Each names its cloud's offer (`providers`: pool -> aws | azure | gcp; athanor.recommend.
    provider_offers): a pool's units are Reserved Instances, an Azure reservation or a GCP
    resource-based committed use discount; a savings plan is per cloud, scoped as the
    attribution scopes it."""
    providers = providers or {}
    out: dict[str, dict[str, Any]] = {}
    month = HOURS_PER_MONTH / len(steps.adjusted.after_moves)
    days = pd.DatetimeIndex(steps.adjusted.after_moves.index).date
    calm = np.array([d not in flagged for d in days])
    for p in rec.pools:
        c = p.plan
        if c.commit_units <= 0:
            continue
        keep = max(1.0 - p.spot_share - p.uncommitted_share, 0.0)
        held = steps.held[p.pool].to_numpy() if p.pool in steps.held else 0.0

        def saving(demand: np.ndarray, c: CommitPlan = c, held: Any = held) -> float:
            without = commitment_cost(demand, 0.0, c.commit_rate, c.on_demand_rate, held)
            with_units = commitment_cost(demand, c.commit_units, c.commit_rate, c.on_demand_rate, held)
            return round((without - with_units) * month, 2)

        after = steps.adjusted.after_moves[p.pool].to_numpy() * keep
        before = (
            steps.adjusted.after_idle[p.pool].to_numpy() * keep
            if p.pool in steps.adjusted.after_idle
            else after * 0
        )
        monthly = c.recurring_hourly_cost * HOURS_PER_MONTH
        without_flagged = (
            best_plan(
                plan_terms(
                    after[calm],
                    c.on_demand_rate,
                    mix.offers_for(prices, p.pool),
                    existing.get(p.pool, []),
                    prices.annual_demand_decline,
                    min_utilization=prices.min_utilization,
                )  # fmt: skip
            ).commit_units
            if calm.any() and not calm.all()
            else c.commit_units
        )
        out[p.pool] = {
            "units": c.commit_units,
            "term_months": c.term_months,
            "commitment_usd": round(monthly * c.term_months + c.upfront_cost, 2),
            "break_even_utilization": round(c.break_even_utilization, 4),
            "break_even_month": c.break_even_months if c.upfront_cost > 0 else (1 if c.savings > 0 else None),
            "expected_utilization": round(c.purchase_utilization, 4),
            "saving_if_demand_falls_20pct": saving(after * 0.8),
            "saving_if_moves_not_made": saving(before),
            "term_rule": steps.terms[p.pool].reason if p.pool in steps.terms else None,
            "flagged_days": sorted(d.isoformat() for d in flagged),
            "units_without_flagged_days": without_flagged,
            "rates": (rate_labels or {}).get(p.pool, {}).get(c.term_months)
            or assumed_rate_label(a, c.term_months),
            "evidence": "the bill's hourly demand of the pool after the idle stops and moves, less spot's share",
            "instance_type": provider_offers.reference_type(p.pool.split("/")[0]),
        }
        # The offer its rate came from (an EC2 Instance Savings Plan's, a SageMaker pool's plan).
        out[p.pool].update(_offer_fields(providers.get(p.pool, "aws"), unit=True))
        out[p.pool]["offer"], out[p.pool]["offer_name"] = provider_offers.unit_offer(
            out[p.pool]["provider"], p.pool, out[p.pool]["rates"]
        )
    hourly = rec.hourly_by_plan
    scopes = provider_offers.plan_scopes(rec)
    for group, commitment in hourly.items():
        sp = rec.savings_plans.get(group, rec.savings_plan)
        name = provider_offers.offers_of(group).savings_plan_name if group != "all" else "savings plan"
        out[scopes[group]] = {
            "units": None,
            "hourly_commitment": commitment,
            "term_months": 12,
            "commitment_usd": round(commitment * HOURS_PER_MONTH * 12, 2),
            "break_even_utilization": round(1.0 - a.savings_plan_discount, 4),
            "break_even_month": 1 if sp is not None and (sp.savings or 0) > 0 else None,
            "expected_utilization": getattr(sp, "utilization", None),
            "term_rule": "1 year: the savings plan's term",
            "rates": f"{a.savings_plan_discount:.0%} off on-demand: an assumed discount (setting "
            "ATHANOR_SAVINGS_PLAN_DISCOUNT), not a published rate"
            + ("" if group in ("aws", "all") else f", applied to the {name}"),
            "evidence": "the bill's hourly demand after the idle stops, moves and reservations",
            **_offer_fields("aws" if group == "all" else group, unit=False),
        }
    return out


def _offer_fields(provider: str, *, unit: bool) -> dict[str, Any]:
    """The cloud and its name for a commitment (athanor.recommend.provider_offers)."""
    words = provider_offers.offers_of(provider)
    return {
        "provider": provider,
        "offer": words.unit_offer if unit else words.savings_plan_offer,
        "offer_name": words.unit_name if unit else words.savings_plan_name,
    }


def spot_rates_billed(
    con: duckdb.DuckDBPyConnection, start: datetime, end: datetime
) -> dict[tuple[str, str], float]:
    """(instance type, region) -> the bill's effective spot $ per pool unit-hour over [start, end)."""
    from athanor.ingest.daily import gpu_hourly_source

    query = sql("marts/spot_rates", hourly=gpu_hourly_source(con))
    rows = con.execute(query, {"window_start": start, "window_end": end}).fetchall()
    return {(t, region): float(per_unit) for t, region, _, _, _, per_unit in rows}


def fleet_interruptions(
    con: duckdb.DuckDBPyConnection, start: datetime, end: datetime
) -> dict[tuple[str, str], tuple[int, float]]:
    """(instance type, region) -> (interruptions, instance-hours) of the fleet's spot runs started in [start, end)."""
    rows = con.execute(
        sql("marts/spot_interruptions"), {"history_start": start, "window_end": end}
    ).fetchall()
    return {(t, region): (int(k), float(h)) for t, region, _, k, h in rows}


def billed_gpu_pools(
    con: duckdb.DuckDBPyConnection, start: datetime, end: datetime
) -> dict[str, dict[str, float]]:
    """The current bill of the GPU pools over [start, end), a month: by pool and by pricing model."""
    from athanor.ingest.daily import gpu_hourly_source

    scale = HOURS_PER_MONTH / ((end - start).total_seconds() / 3600)
    by_pool: dict[str, float] = {}
    by_option: dict[str, float] = {}
    query = sql("marts/gpu_bill_by_option", hourly=gpu_hourly_source(con))
    for pool, model, cost in con.execute(query, {"window_start": start, "window_end": end}).fetchall():
        by_pool[pool] = by_pool.get(pool, 0.0) + float(cost) * scale
        by_option[model] = by_option.get(model, 0.0) + float(cost) * scale
    return {"billed_by_pool": by_pool, "billed_by_option": by_option}


def one_baseline(explanation: str, rec: mix.MixRecommendation) -> str:
    """The explanation with its what-ifs measured on the one baseline it states: today's bill.

    The mix's sensitivity is against on-demand prices; said next to a saving against the bill,
    it read as a second baseline. A scenario's bill is today's, scaled to the scenario's demand.
    """
    head, found, _ = explanation.partition("If demand falls 20%")
    if not found:
        return explanation
    bill = rec.current_monthly_bill_usd
    base_od = rec.sensitivity["base"]["on_demand_monthly_cost"]

    def against_bill(name: str) -> str:
        scenario = rec.sensitivity[name]
        scaled = bill * scenario["on_demand_monthly_cost"] / base_od if base_od else bill
        saving = scaled - scenario["estimated_monthly_cost"]
        return f"${saving:,.0f} a month ({100 * saving / scaled:.0f}% of that bill)" if scaled else "nothing"

    tail = explanation.partition("If demand falls 20%")[2]
    rest = tail.partition(". ")[2] if ". " in tail else ""
    return (
        head
        + "Against today's bill scaled to the same demand: if demand falls 20%, the plan saves "
        + against_bill("demand_drops_20pct")
        + "; if spot interruptions double, "
        + against_bill("interruption_rates_double")
        + "."
        + (f" {rest}" if rest else "")
    )


def commitments_held(
    con: duckdb.DuckDBPyConnection, start: datetime, end: datetime
) -> dict[str, list[tuple[float, float]]]:
    """Per pool, (average units, hours until expiry) of every commitment held in the window.

    The purchase is sized net of these, hour by hour, until each expires. A commitment whose
    export carries no end date is assumed to outlast the one-year planning horizon.
    """
    held: dict[str, list[tuple[float, float]]] = {}
    rows = con.execute(sql("marts/commitments_held"), {"window_start": start, "window_end": end}).fetchall()
    for pool, _, _, units, ends in rows:
        hours_left = (ends - end).total_seconds() / 3600 if ends is not None else HOURS_PER_YEAR
        held.setdefault(pool, []).append((float(units), max(0.0, float(hours_left))))
    return held


def _backtests(con: duckdb.DuckDBPyConnection, as_of: date, a: PricingAssumptions) -> pd.DataFrame:
    """Walk-forward backtest of the commitment rule on each pool's own committable demand."""
    end = datetime.combine(as_of + timedelta(days=1), datetime.min.time())
    history = con.execute(sql("marts/committable_demand"), {"end": end}).df()
    frames = []
    for pool, g in history.groupby("pool"):
        hours = pd.date_range(g["hour"].min().floor("D"), end, freq="h", inclusive="left")
        series = g.set_index("hour")["units"].reindex(hours, fill_value=0.0).fillna(0.0)
        od = float(g["on_demand_rate_usd"].iloc[0])
        frames.append(backtest(series, od, od * a.one_year_ratio).assign(scenario=f"pool:{pool}"))
    # The same rule on generated demand shapes the warehouse may not have seen yet.
    od = SYNTHETIC_SCENARIO_ON_DEMAND_RATE
    synthetic = backtest_synthetic_scenarios(od, od * a.one_year_ratio)
    if not synthetic.empty:  # named so that no reader takes them for the warehouse's own pools
        synthetic["scenario"] = "synthetic:" + synthetic["scenario"].astype(str)
    frames.append(synthetic)
    table = pd.concat([f for f in frames if not f.empty], ignore_index=True) if frames else pd.DataFrame()
    return (
        table.rename(
            columns={
                "cost_usd": "cost",
                "on_demand_cost_usd": "on_demand_cost",
                "savings_vs_on_demand_pct": "savings_pct",
            }
        )[["scenario", "policy", "month", "cost", "on_demand_cost", "savings_pct", "regret_pct"]]
        if not table.empty
        else table
    )


def mix_words(shares: dict[str, float]) -> str:
    """'52 % reserved / 14 % savings plan / 30 % spot / 4 % on-demand' (options in that order)."""
    names = {"reserved": "reserved", "savings_plan": "savings plan", "spot": "spot", "on_demand": "on-demand"}
    return " / ".join(f"{shares.get(k, 0.0):.0%} {label}".replace("%", " %") for k, label in names.items())


def _money(value: float | None) -> Decimal | None:
    return None if value is None or not np.isfinite(value) else Decimal(str(round(value, 2)))


# The kinds each recommender owns: a run's rows of these are replaced together.
MIX_KINDS = ("reserved_instances", "savings_plan", "spot", "checkpointing", "mix")
STORAGE_KINDS = ("lifecycle", "ebs", "storage")


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    """One `recommendations` row of a run (sql/schema/021_recommendations.sql); money in USD a month."""

    kind: str
    scope: str
    action: str
    recommended_quantity: float | None = None
    hourly_commitment: float | None = None
    term_months: int | None = None
    upfront_cost: Decimal | None = None
    recurring_monthly_cost: Decimal | None = None
    estimated_monthly_cost: Decimal | None = None
    current_monthly_cost: Decimal | None = None
    estimated_monthly_savings_amount: Decimal | None = None
    estimated_savings_percentage: float | None = None
    average_utilization: float | None = None
    coverage: float | None = None
    break_even_months: float | None = None
    risk: str | None = None
    assumptions: str | None = None  # JSON
    detail: str | None = None  # JSON


def store_recommendations(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    as_of: date,
    kinds: tuple[str, ...],
    recommendations: list[Recommendation],
) -> None:
    """The one writer of `recommendations`: this run's rows of `kinds` replaced (in the caller's transaction)."""
    strays = sorted({r.kind for r in recommendations} - set(kinds))
    if strays:
        raise ValueError(f"recommendations of kinds {strays} would not replace this run's earlier ones")
    con.execute(
        "delete from recommendations where run_id = ? and list_contains(?, kind)", [run_id, list(kinds)]
    )
    rows = [{"run_id": run_id, "as_of": as_of, **asdict(r)} for r in recommendations]
    insert_rows(con, "recommendations", rows)


# The rows that are parts of the `mix` row: their savings add up to its saving.
MIX_PARTS = ("spot", "reserved_instances", "savings_plan")
# Rows that total others (kind -> the kinds of its parts): a headline counts the parts or the
# total, never both.
TOTALS = {"mix": MIX_PARTS, "storage": ("lifecycle", "ebs")}
# Rows that price another way to run the same GPU-hours the mix plans (what checkpointing would
# unlock, another GPU type), or take GPU-hours away that the mix prices (idle GPUs stopped,
# underused ones shrunk: at the mix's price, not today's): shown, never added to the mix's saving
# or a headline.
ALTERNATIVES = ("checkpointing", "gpu_choice", "idle_gpu", "underused_gpu")


def _cents(value: float) -> float:
    return float(Decimal(str(round(value, 2))))


def attribute_mix(rows: list[tuple], parts: dict[str, Any] | None, rec: mix.MixRecommendation) -> list[tuple]:
    """The mix's rows with the savings of `attribution.mix_parts`, on its one baseline.

    Each action row (spot, a pool's reservation, the savings plan) carries its step of the chain
    from today's bill to the plan, at most the bill of the pools it touches; the `mix` row is their
    sum, to the cent. A row's own saving against on-demand stays in its detail. Rows are the
    17-field tuples `_store_mix` builds (kind, scope, action, ..., current, savings, pct, ..., detail).
    """
    if not parts:
        return rows
    billed = parts["billed_by_pool"]
    by_key = {(p["kind"], p["scope"]): p for p in parts["parts"]}
    out, total = [], 0.0

    def as_part(row: tuple, part: dict[str, Any]) -> tuple:
        nonlocal total
        current = _cents(sum(billed.get(pool, 0.0) for pool in part["pools"]))
        saving = _cents(part["saving"])
        basis = "a step of the fleet mix, measured on today's bill"
        if saving > current:
            saving, basis = current, basis + "; capped at the bill of the pools it touches"
        total += saving
        detail = dict(row[16] or {})
        if row[10] is not None:
            detail["saving_vs_on_demand_over_term"] = row[10]
        detail.update(
            part_of="mix",
            touches=list(part["pools"]),
            billed_monthly_cost=current,
            estimated_monthly_savings_amount=saving,
            saving_basis=basis,
        )
        pct = 100 * saving / current if current else None
        return (*row[:8], current - saving, current, saving, pct, *row[12:16], detail)

    for row in rows:
        part = by_key.get((row[0], row[1])) if row[0] in MIX_PARTS else None
        if part is not None:
            out.append(as_part(row, part))
        elif row[0] in MIX_PARTS:  # an action without a step of its own saves nothing by itself
            out.append(as_part(row, {"saving": 0.0, "pools": []}))
        else:
            out.append(row)
    spot = by_key.get(("spot", "job classes"))
    if spot is not None and not any(r[0] == "spot" for r in rows) and abs(spot["saving"]) >= 0.005:
        empty = (
            "spot",
            "job classes",
            "No job class goes to spot: today's spot work moves to the options below",
        )
        out.insert(0, as_part((*empty, *([None] * 13), spot_detail(rec)), spot))
    for i, row in enumerate(out):
        if row[0] == "mix":
            bill = _cents(parts["baseline"]["current_monthly_bill"])
            saving = _cents(total)
            detail = dict(row[16] or {})
            detail["how_counted"] = (
                "the sum of the spot, reservation and savings-plan rows, each a step from today's bill "
                "to the plan; a headline counts those rows or this total, never both"
            )
            out[i] = (*row[:8], bill - saving, bill, saving, 100 * saving / bill if bill else None, *row[12:])
            out[i] = (*out[i][:16], detail)
    return out


def spot_detail(rec: mix.MixRecommendation) -> dict[str, Any]:
    """The `spot` row's detail: every job class the spot model considered, with the evidence of its
    verdict (`MixRecommendation.spot_record`), and what the phase policy costs a month."""
    return {"job_classes": [rec.class_dict(j) for j in rec.job_classes], "phase_policy": rec.phase_policy}


def _store_mix(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    as_of: date,
    rec: mix.MixRecommendation,
    summary: dict[str, Any],
    used: dict[str, Any],
    backtests: pd.DataFrame,
    commitments: dict[str, dict[str, Any]] | None = None,
) -> None:
    """The mix's rows; `commitments`: each commitment row's plan facts (`commitment_facts`), by scope."""
    facts = commitments or {}
    assumptions = json.dumps(used, default=str)
    rows = []
    for p in rec.pools:
        if p.plan.commit_units <= 0:
            continue
        fact = facts.get(p.pool, {})
        rows.append(
            (
                "reserved_instances",
                p.pool,
                provider_offers.unit_action(
                    fact.get("provider", "aws"),
                    p.pool,
                    p.plan.commit_units,
                    fact.get("instance_type"),
                    p.gpus_per_unit,
                    p.plan.term_months,
                    p.plan.payment_option,
                )
                + ": "
                + mix.utilisation_words(p.plan),
                p.plan.commit_units,
                None,
                p.plan.term_months,
                p.plan.upfront_cost,
                p.plan.recurring_hourly_cost * HOURS_PER_MONTH,
                p.plan.expected_cost,
                p.plan.on_demand_cost,
                p.plan.savings,
                p.plan.savings_pct,
                p.plan.purchase_utilization,
                p.plan.coverage,
                p.plan.break_even_months,
                "commitment outlives demand if it falls",
                {**p.to_dict(), "commitment": facts.get(p.pool, {})},
            )
        )
    scopes = provider_offers.plan_scopes(rec)
    for group, hourly in rec.hourly_by_plan.items():
        found = rec.savings_plans.get(group, rec.savings_plan)
        sp = {} if found is None else found.to_dict()
        scope = scopes[group]
        rows.append(
            (
                "savings_plan",
                scope,
                provider_offers.savings_plan_action(facts.get(scope, {}).get("provider", "aws"), hourly),
                None,
                hourly,
                12,
                0.0,
                hourly * HOURS_PER_MONTH,
                sp.get("expected_cost"),
                sp.get("on_demand_cost"),
                sp.get("savings"),
                sp.get("savings_pct"),
                sp.get("utilization"),
                sp.get("coverage"),
                None,  # nothing paid upfront: no break-even
                "commitment outlives demand if it falls",
                {**sp, "commitment": facts.get(scope, {})},
            )
        )
    spot_classes = [j for j in rec.job_classes if j.uses_spot]
    if spot_classes:
        share = rec.hours_share.get("spot", 0.0)
        rows.append(
            (
                "spot",
                "job classes",
                f"Run {share:.0%} of GPU-hours on spot: " + ", ".join(j.job_class for j in spot_classes[:6]),
                None,
                None,
                None,
                None,  # nothing to buy: no upfront cost, no break-even
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                mix.completion_words(rec),
                spot_detail(rec),
            )
        )
    for j in rec.job_classes:
        # Not counted in the fleet saving: this work stays on on-demand and commitments today.
        if j.unlock is None or j.unlock.mode == "on_demand" or not (j.unlock.monthly_saving_usd or 0) > 0:
            continue
        rows.append(
            (
                "checkpointing",
                j.job_class,
                f"Checkpoint {j.job_class} jobs every {j.unlock.interval_h:.1f} h (the Young/Daly interval "
                f"for {spot.save_words(j.unlock.checkpoint_h)}) so they can run on "
                f"{'deadline-safe spot' if j.unlock.mode == 'spot_deadline_safe' else 'spot'}: about "
                f"${j.unlock.monthly_saving_usd:,.0f} a month less than on-demand "
                f"({j.unlock.cost_ratio_vs_on_demand:.2f}x); not counted in the fleet saving",
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                f"{100 * j.unlock.completion_rate:.1f} % of simulated jobs would finish by their deadline",
                rec.class_dict(j),
            )
        )
    rows.append(
        (
            "mix",
            "fleet",
            "Run the fleet " + mix_words(rec.hours_share) + " of GPU-hours",
            None,
            rec.hourly_commitment,
            None,
            rec.upfront_cost,
            rec.recurring_cost,
            rec.estimated_monthly_cost,
            rec.current_monthly_bill_usd,
            rec.estimated_monthly_savings_amount,
            rec.estimated_savings_percentage,
            rec.average_utilization,
            rec.coverage,
            rec.break_even_months,
            mix.completion_words(rec)
            + (
                "; other jobs run on reserved or on-demand capacity"
                if rec.spot_completion_rate is not None
                else ""
            ),
            summary,
        )
    )
    rows = attribute_mix(rows, summary.get("attribution"), rec)
    recommendations = [
        Recommendation(
            kind=kind,
            scope=scope,
            action=action,
            recommended_quantity=qty,
            hourly_commitment=hourly,
            term_months=term,
            upfront_cost=_money(upfront),
            recurring_monthly_cost=_money(recurring),
            estimated_monthly_cost=_money(cost),
            current_monthly_cost=_money(current),
            estimated_monthly_savings_amount=_money(savings),
            estimated_savings_percentage=pct,
            average_utilization=util,
            coverage=cov,
            break_even_months=breakeven,
            risk=risk,
            assumptions=assumptions,
            detail=json.dumps(detail, default=str),
        )
        for (
            kind,
            scope,
            action,
            qty,
            hourly,
            term,
            upfront,
            recurring,
            cost,
            current,
            savings,
            pct,
            util,
            cov,
            breakeven,
            risk,
            detail,
        ) in rows
    ]
    with transaction(con):
        store_recommendations(con, run_id, as_of, MIX_KINDS, recommendations)
        con.execute("delete from backtests where run_id = ?", [run_id])
        if not backtests.empty:
            con.register("bt", backtests)
            con.execute(
                "insert into backtests by name select ? as run_id, ? as as_of, * from bt", [run_id, as_of]
            )
            con.unregister("bt")


def recommend_storage(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    as_of: date,
    *,
    apply: bool = False,
    artifacts_dir: Path | None = None,
    s3_client: Any = None,
) -> dict[str, Any]:
    """Checkpoint-storage policies from the latest inventories and EBS listings."""
    from athanor.ingest.inventory import INVENTORY_COLUMNS, read_ebs
    from athanor.recommend import lifecycle

    columns = INVENTORY_COLUMNS  # the canonical inventory shape, named once by the reader
    inventory = con.execute(
        f"select {', '.join(columns)} from storage_objects order by bucket, key, last_modified"
    ).df()
    # The warehouse keeps UTC as naive timestamps; the storage model works in aware UTC.
    inventory["last_modified"] = pd.to_datetime(inventory["last_modified"]).dt.tz_localize("UTC")
    listings = dict(con.execute("select kind, document from ebs_listings").fetchall())
    ebs = None
    if listings:
        ebs = read_ebs(
            json.loads(listings["volumes"]) if "volumes" in listings else None,
            json.loads(listings["snapshots"]) if "snapshots" in listings else None,
        )
    if inventory.empty and ebs is None:
        return {"buckets": 0, "note": "no storage inventory loaded"}
    existing = None
    if s3_client is not None:
        from athanor.recommend.lifecycle.apply import get_lifecycle

        existing = {b: get_lifecycle(s3_client, b) for b in inventory["bucket"].unique()}
    rec = lifecycle.recommend_lifecycle(inventory, ebs, as_of=as_of, existing_configs=existing)
    detail = rec.to_dict()
    applied = []
    if apply:
        if s3_client is None or artifacts_dir is None:
            raise ValueError("applying lifecycle rules needs a bucket connection and an artifacts folder")
        for bucket, config in rec.configs.items():
            result = lifecycle.apply_lifecycle(s3_client, bucket, config, artifacts_dir, dry_run=False)
            applied.append(result.to_dict())
    billed = billed_resources(con, as_of)
    recommendations = _storage_rows(rec, billed, {**detail, "applied": applied})
    with transaction(con):
        store_recommendations(con, run_id, as_of, STORAGE_KINDS, recommendations)
    total = recommendations[-1]
    return {
        "buckets": len(rec.configs),
        "estimated_monthly_savings_amount": float(total.estimated_monthly_savings_amount or 0),
        "priced_savings_year_usd": round(rec.savings_year_usd, 2),
        "applied": len(applied),
    }


def billed_resources(con: duckdb.DuckDBPyConnection, as_of: date) -> dict[str, float]:
    """What the bill charged each resource it names, a month: the planning window's effective
    cost scaled to a 730-hour month, keyed as `lifecycle.resource_key` names resources."""
    start, end = _window(as_of)
    rows = con.execute(sql("marts/billed_resources"), {"window_start": start, "window_end": end}).fetchall()
    scale = HOURS_PER_MONTH / (PLANNING_WINDOW_DAYS * 24)
    return {resource: float(cost) * scale for resource, cost, _ in rows}


# What each EBS action does to its resource, in the words a reader acts on (`plan_ebs`).
EBS_VERBS = {
    # The data goes to S3 and the volume's cost with it (the plan prices S3 only afterwards).
    "move-to-s3": "move the data of {n} in-use checkpoint volume{s} to S3 Intelligent-Tiering",
    "snapshot-then-delete": "snapshot and delete {n} unattached volume{s}",
    "delete-volume": "delete {n} unattached volume{s}",
    "delete-snapshot": "delete {n} old snapshot{s}",
}


def ebs_action_text(kinds: Iterable[str]) -> str:
    """'EBS: move the data of 33 in-use checkpoint volumes to S3 Intelligent-Tiering': what the
    actions do, counted by kind, never a clean-up of idle volumes the plan does not make."""
    counts = Counter(kinds)
    parts = [
        EBS_VERBS.get(kind, kind + " {n} resource{s}").format(n=n, s="s" if n != 1 else "")
        for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return "EBS: " + "; ".join(parts)


STORAGE_RISK = "protected checkpoints (latest per run, keep-tagged) are never expired"


def _storage_rows(rec: Any, billed: dict[str, float], summary: dict[str, Any]) -> list[Recommendation]:
    """One row per bucket prefix whose policy saves, one for the EBS clean-up, and their total.

    Every saving is held against the bill (`lifecycle.prefix_savings`, `lifecycle.ebs_savings`):
    at most what the bill charged the bucket or resource it touches, marked an estimate where the
    bill does not name it. The `storage` row is the sum of the rows above it, to the cent.
    """
    from athanor.recommend import lifecycle

    assumptions = json.dumps(rec.assumptions, default=str)
    rows: list[Recommendation] = []
    chosen = [
        p for p in rec.prefixes if p.chosen != lifecycle.DO_NOTHING.name() and p.before.total > p.after.total
    ]
    savings = lifecycle.prefix_savings(rec, billed)
    rules = {bucket: config.get("Rules", []) for bucket, config in rec.configs.items()}
    for p in chosen:
        s = savings[(p.bucket, p.prefix)]
        ours = [
            r
            for r in rules.get(p.bucket, [])
            if str(r.get("Filter", {}).get("Prefix", "")).startswith(p.prefix)
        ]
        rows.append(
            _storage_row(
                "lifecycle",
                s.scope,
                f"Set lifecycle policy '{p.chosen}' on {s.scope}",
                s,
                {
                    **p.to_dict(),
                    **s.to_dict(),
                    "part_of": "storage",
                    "lifecycle_configuration": {"Rules": ours},
                },
                assumptions,
            )
        )
    actions = lifecycle.ebs_savings(rec, billed)
    if actions:
        current = sum(a.billed_usd if a.billed_usd is not None else a.current_usd for a in actions)
        saving = sum(a.saving_usd for a in actions)
        estimated = [a.scope for a in actions if a.billed_usd is None]
        capped = [a.scope for a in actions if a.capped]
        basis = f"each action at most what the bill charged its resource ({len(capped)} capped)" + (
            f"; {len(estimated)} estimated from list prices, not in the bill" if estimated else ""
        )
        ebs = lifecycle.BilledSaving(
            scope="EBS volumes and snapshots",
            touches=tuple(t for a in actions for t in a.touches),
            current_usd=current,
            priced_saving_usd=sum(a.priced_saving_usd for a in actions),
            billed_usd=sum(a.billed_usd for a in actions if a.billed_usd is not None)
            if len(estimated) < len(actions)
            else None,
            saving_usd=saving,
            basis=basis,
        )
        rows.append(
            _storage_row(
                "ebs",
                ebs.scope,
                ebs_action_text(act.kind for act in rec.ebs.actions),
                ebs,
                {
                    **rec.ebs.to_dict(),
                    **ebs.to_dict(),
                    "current_monthly_cost": "billed cost of the resources touched (list price where the bill names none)",
                    "actions_against_bill": [
                        {"kind": act.kind, **a.to_dict()}
                        for act, a in zip(rec.ebs.actions, actions, strict=True)
                    ],
                    "part_of": "storage",
                },
                assumptions,
            )
        )
    current = sum((r.current_monthly_cost or Decimal(0) for r in rows), Decimal(0))
    saving = sum((r.estimated_monthly_savings_amount or Decimal(0) for r in rows), Decimal(0))
    rows.append(
        Recommendation(
            kind="storage",
            scope="all buckets",
            action=f"Checkpoint storage: save ${saving:,.0f} a month ({len(rows)} actions below)",
            current_monthly_cost=current,
            estimated_monthly_cost=current - saving,
            estimated_monthly_savings_amount=saving,
            estimated_savings_percentage=float(100 * saving / current) if current else None,
            assumptions=assumptions,
            detail=json.dumps(
                {
                    **summary,
                    "parts": [
                        {
                            "kind": r.kind,
                            "scope": r.scope,
                            "estimated_monthly_savings_amount": r.estimated_monthly_savings_amount,
                        }
                        for r in rows
                    ],
                    "how_counted": "the sum of the lifecycle and EBS rows, each held against the bill; "
                    "a headline counts those rows or this total, never both",
                },
                default=str,
            ),
        )
    )
    return rows


def _storage_row(
    kind: str, scope: str, action: str, s: Any, detail: dict[str, Any], assumptions: str
) -> Recommendation:
    current = _money(s.current_usd)
    saving = _money(s.saving_usd)
    return Recommendation(
        kind=kind,
        scope=scope,
        action=action,
        current_monthly_cost=current,
        estimated_monthly_cost=None if current is None or saving is None else current - saving,
        estimated_monthly_savings_amount=saving,
        estimated_savings_percentage=float(100 * saving / current)
        if current and saving is not None
        else None,
        risk=STORAGE_RISK,
        assumptions=assumptions,
        detail=json.dumps(detail, default=str),
    )
