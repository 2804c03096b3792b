"""The fleet mix's saving, split into the actions that make it, so that the parts add up.

The mix saves `current bill - planned cost`. Its actions are measured one after the other on
one baseline, the current bill of the pools the mix plans (effective cost of their GPU usage
over the planning window, scaled to a 730-hour month):

1. spot: from the bill as it is to the same demand with the recommended job classes on spot,
   today's commitments kept and nothing bought;
2. reservations, pool by pool, on what spot leaves;
3. the savings plan, on what the reservations leave; its end is the planned cost.

Each step is the month simulated hour by hour (`athanor.recommend.mix`), so the steps telescope:
the parts add up to the mix's saving exactly. The order is the one the mix is built in (spot
takes its share first, reserved units the base, the plan the rest); another order would move
money between the parts, never change their sum.

A second view, `by_option`, says where the money goes: the bill by pricing model today and the
plan's dollars per purchase option (reserved, savings plan, spot, on-demand), whose changes
add up to the same saving.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from athanor.recommend import mix
from athanor.recommend.commitments import existing_profile
from athanor.recommend.provider_offers import plan_scopes
from athanor.recommend.savings_plan import pivot_demand

OPTIONS = ("reserved", "savings_plan", "spot", "on_demand")


@dataclass(frozen=True)
class MixPart:
    """One action's share of the mix saving, a month."""

    kind: str  # spot | reserved_instances | savings_plan
    scope: str  # the pool (reservations), 'job classes' (spot), 'all pools' / 'all <cloud> pools' (savings plans)
    saving_usd: float
    pools: tuple[str, ...]  # the pools whose bill it changes

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "scope": self.scope, "saving": self.saving_usd, "pools": list(self.pools)}


@dataclass(frozen=True)
class MixParts:
    baseline_usd: float  # the current bill of the planned pools, a month
    parts: tuple[MixPart, ...]
    planned_usd: float  # the end of the chain: the plan's monthly cost
    billed_by_pool: dict[str, float]  # the current bill of each pool, a month
    by_option: dict[str, dict[str, float]]  # option -> {current, planned, change}

    @property
    def saving_usd(self) -> float:
        return float(sum(p.saving_usd for p in self.parts))

    def part(self, kind: str, scope: str | None = None) -> MixPart | None:
        return next((p for p in self.parts if p.kind == kind and (scope is None or p.scope == scope)), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": {
                "current_monthly_bill": self.baseline_usd,
                "what": "effective cost of the planned pools' GPU usage over the planning window, "
                "scaled to a 730-hour month",
            },
            "parts": [p.to_dict() for p in self.parts],
            "parts_order": "spot, then reservations pool by pool, then the savings plan, each on what "
            "the previous steps leave; they add up to the mix's saving",
            "planned_monthly_cost": self.planned_usd,
            "billed_by_pool": self.billed_by_pool,
            "by_option": self.by_option,
        }


def mix_parts(
    window: pd.DataFrame,
    classes: pd.DataFrame,
    rec: mix.MixRecommendation,
    *,
    current_bill_usd: float,
    billed_by_pool: Mapping[str, float],
    billed_by_option: Mapping[str, float],
    existing_by_pool: Mapping[str, Sequence[Sequence[float]]] | None,
    gpus_per_unit_by_pool: Mapping[str, float],
    prices: mix.MixPrices,
    earlier: Sequence[tuple[str, str, tuple[str, ...], pd.DataFrame]] = (),
    today: pd.DataFrame | None = None,
) -> MixParts:
    """The chain of monthly costs from the current bill to the plan, over the same demand and
    commitments `recommend_mix` was given (`window`, `classes`, `existing_by_pool`).

    `today`, `earlier`: where the mix was planned on demand the plan changed first (idle stops,
    GPU moves: `athanor.recommend.plan`), today's demand (hour x pool) and the demand after each
    of those steps, (kind, scope, pools, hour x pool) in order. Spot is then measured on today's
    demand, each such step next, at the mix's prices, and the purchases last."""
    wide = pivot_demand(window)
    pools = [str(p) for p in wide.columns]
    hours = wide.shape[0]
    od_by_pool = window.groupby("pool")["on_demand_rate"].mean()
    od_rates = np.array([float(od_by_pool[p]) for p in pools])
    gpus = np.array([float(gpus_per_unit_by_pool.get(p, 1.0)) for p in pools])
    sp_disc = np.array([float((prices.sp_discount_by_pool or {}).get(p, 0.0)) for p in pools])
    groups = mix.sp_groups_of(prices, pools)
    existing_hourly = np.zeros((hours, len(pools)))
    existing_rate = np.zeros(len(pools))
    for j, pool in enumerate(pools):  # as recommend_mix prices what is held
        held = [tuple(h) for h in (existing_by_pool or {}).get(pool, ())]
        existing_hourly[:, j] = existing_profile(held, hours)
        rated = [(h[0], h[2]) for h in held if len(h) > 2]
        unrated = sum(h[0] for h in held if len(h) <= 2)
        total = sum(h[0] for h in held)
        default_rate = mix.pool_offers(prices, pool)[0].rate_ratio * od_rates[j]
        existing_rate[j] = (
            (sum(q * r for q, r in rated) + unrated * default_rate) / total if total > 0 else 0.0
        )
    demand_gpu_h = {p: float(wide[p].sum()) * gpus[j] for j, p in enumerate(pools)}
    shares = mix._spot_shares(classes, rec.job_classes, demand_gpu_h) if len(classes) else {}
    plans = {p.pool: p for p in rec.pools}
    bought = [plans[p] for p in pools]
    none = [replace(p, plan=replace(p.plan, commit_units=0)) for p in bought]

    def cost(
        pool_plans: Sequence[mix.PoolPlan], hourly: Mapping[str, float], demand: pd.DataFrame = wide
    ) -> mix.MixCosts:
        return mix._mix_costs(
            demand,
            od_rates,
            shares,
            pool_plans,
            existing_hourly,
            existing_rate,
            sp_disc,
            hourly,
            gpus,
            groups,
        )

    def aligned(demand: pd.DataFrame) -> pd.DataFrame:
        """`demand` with `wide`'s hours and pools (a pool it lacks: no demand)."""
        return demand.reindex(columns=wide.columns, fill_value=0.0).set_axis(wide.index, axis=0)

    on_spot = {j.job_class for j in rec.job_classes if j.uses_spot}
    spot_pools = (
        tuple(
            sorted(
                {str(p) for c, p in zip(classes["job_class"], classes["pool"], strict=True) if c in on_spot}
            )
        )
        if len(classes)
        else ()
    )
    steps: list[tuple[str, str, tuple[str, ...], float]] = []
    previous = float(current_bill_usd)
    after_spot = cost(none, {}, aligned(today) if today is not None and earlier else wide).total_usd
    steps.append(("spot", "job classes", spot_pools or tuple(pools), previous - after_spot))
    previous = after_spot
    for kind, scope, touched, demand in earlier:
        now = cost(none, {}, aligned(demand)).total_usd
        steps.append((kind, scope, touched, previous - now))
        previous = now
    chain = list(none)
    for j, pool in enumerate(pools):
        if bought[j].plan.commit_units <= 0:
            continue
        chain[j] = bought[j]
        now = cost(chain, {}).total_usd
        steps.append(("reserved_instances", pool, (pool,), previous - now))
        previous = now
    # One savings plan per cloud that sells one (athanor.recommend.provider_offers), in the order
    # the mix sized them, each on what the reservations and the plans before it leave.
    hourly = rec.hourly_by_plan
    scopes = plan_scopes(rec)
    running: dict[str, float] = {}
    for group, commitment in hourly.items():
        running[group] = commitment
        now = cost(bought, dict(running)).total_usd
        covered = tuple(p for p, g in zip(pools, groups, strict=True) if g == group)
        steps.append(("savings_plan", scopes[group], covered, previous - now))
        previous = now
    planned = cost(bought, hourly)
    # Every pricing model the bill has (a commitment it does not name stays apart), then the plan's.
    options = list(OPTIONS) + sorted(set(billed_by_option) - set(OPTIONS))
    by_option = {
        k: {
            "current": float(billed_by_option.get(k, 0.0)),
            "planned": float(planned.dollars.get(k, 0.0)),
            "change": float(billed_by_option.get(k, 0.0)) - float(planned.dollars.get(k, 0.0)),
        }
        for k in options
    }
    return MixParts(
        baseline_usd=float(current_bill_usd),
        parts=tuple(MixPart(kind, scope, float(saving), touched) for kind, scope, touched, saving in steps),
        planned_usd=planned.total_usd,
        billed_by_pool={p: float(billed_by_pool.get(p, 0.0)) for p in pools},
        by_option=by_option,
    )
