"""One plan for the GPU fleet, in the order a FinOps lead acts on it, each step sized after the
steps before it:

1. stop idle capacity (`idle_gpu`): the pool's demand falls by the unit-hours its machines sat
   idle in the telemetry, scaled to a month;
2. move workload classes to the GPU type and count the GPU plan picks (`gpu_choice`, only the
   moves it counts: not those whose saving changes sign within their speed-up's range): the
   class's hours leave its pool, hour by hour, and arrive in the new pool scaled by the plan's
   GPU-hours per run;
3. spot for the classes whose own runs show they tolerate it (the purchase mix): spot's classes
   leave the demand before commitments are sized, so no commitment covers hours spot takes;
4. commit (`reserved_instances`, `savings_plan`) on the demand that remains after 1-3, with a
   term no longer than the pool's evidence supports (`term_limits`);
5. storage (`lifecycle`, `ebs`).

The money of steps 1-4 is one chain of monthly costs, each simulated hour by hour by the
purchase mix (`athanor.recommend.attribution`): from today's GPU bill to today's demand with
spot's classes on spot (spot's saving); then each idle stop and each move, priced as the mix
prices the hours they remove and add (held commitments cover hours first, so idle or moved
hours under one save nothing until it ends); then the reservations and the savings plan bought
on what remains. The GPU steps therefore add up to today's GPU bill less the plan's GPU cost,
and the plan's total is the sum of its counted steps. What the plan does not count (moves
to benchmark first, fewer GPUs for an underused class, checkpointing) is listed apart.

`recommend_purchases` (`athanor.recommend.nightly`) calls `adjust_demand` and `term_limits`
before it plans the mix; `compose` (the `compose_plan` stage) reads what the recommenders stored
and writes `plan_steps`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from athanor.reference import HOURS_PER_MONTH
from athanor.warehouse import insert_rows, sql, transaction

# A pool keeps a 3-year term only while its demand is steady: the plan leaves at least this share
# of today's demand in it, its last 30 days moved less than these shares against the 30 before
# (a fall, or a surge a 3-year term would lock in), and the bill shows it for at least this long.
LONG_TERM_MIN_REMAINING = 0.9
LONG_TERM_MAX_FALL = 0.10
LONG_TERM_MAX_SURGE = 0.50
LONG_TERM_MIN_HISTORY_DAYS = 90
SHORT_TERM_MONTHS = 12

# Not counted in the plan's total, and why (each is listed apart on the page).
APART = {
    "underused_gpu": "another GPU count for the class: benchmark the smaller count first",
    "checkpointing": "what checkpointing would save on spot: the class must checkpoint first",
}
STORAGE_KINDS = ("lifecycle", "ebs")
# What a commitment step carries from the commitment's facts (nightly.commitment_facts).
COMMITMENT_FACTS = (
    "commitment_usd",
    "break_even_utilization",
    "break_even_month",
    "expected_utilization",
    "saving_if_demand_falls_20pct",
    "saving_if_moves_not_made",
    "term_rule",
    "units_without_flagged_days",
)
SPEEDUP_EVIDENCE = {
    "fleet": "the class's own runs on both GPU models (measured speed-up)",
    "benchmark": "a published benchmark of the model family (MLPerf Training)",
    "datasheet": "the GPUs' datasheets (no run or benchmark of the class on both)",
}
COMMITMENT_KINDS = ("reserved_instances", "savings_plan")


@dataclass(frozen=True)
class Move:
    """A counted GPU plan move, as demand: what leaves one pool and arrives in another."""

    job_class: str
    from_pool: str
    to_pool: str
    # Unit-hours a month the class holds in its pool today (from the GPU plan: runs a month x
    # hours a run x instances, in the pool's units).
    units_per_month: float
    scale: float  # destination unit-hours per source unit-hour (the plan's GPU-hours per run)
    to_rate: float  # on-demand $ per destination unit-hour
    to_gpus_per_unit: float


@dataclass
class Adjusted:
    """The planning window's hourly demand before and after the idle and move steps."""

    before: pd.DataFrame  # hour x pool, units
    after_idle: pd.DataFrame
    after_moves: pd.DataFrame
    rates: dict[str, float]  # on-demand $ per unit-hour, every pool (new ones too)
    gpus_per_unit: dict[str, float]
    idle_shares: dict[str, float] = field(default_factory=dict)  # pool -> share of its demand stopped
    # (kind, scope, pools it changes, hour x pool demand after it), one per step, in order.
    states: list[tuple[str, str, tuple[str, ...], pd.DataFrame]] = field(default_factory=list)

    def long(self) -> pd.DataFrame:
        """`after_moves` as the mix reads demand: hour, pool, units, on_demand_rate."""
        frame = self.after_moves.reset_index().melt(id_vars="hour", var_name="pool", value_name="units")
        frame["on_demand_rate"] = frame["pool"].map(self.rates)
        return frame

    def demand_by_pool(self) -> dict[str, dict[str, float]]:
        """Unit-hours a month per pool: today, after the idle stops, after the moves."""
        month = HOURS_PER_MONTH / max(len(self.before), 1)
        return {
            p: {
                "today": round(float(self.before[p].sum()) * month if p in self.before else 0.0, 4),
                "after_idle": round(
                    float(self.after_idle[p].sum()) * month if p in self.after_idle else 0.0, 4
                ),
                "after_moves": round(float(self.after_moves[p].sum()) * month, 4),
            }
            for p in self.after_moves.columns
        }


def adjust_demand(
    wide: pd.DataFrame,
    rates: Mapping[str, float],
    gpus_per_unit: Mapping[str, float],
    idle: Mapping[str, float],
    moves: Sequence[Move],
    occupancy: Mapping[str, np.ndarray],
) -> Adjusted:
    """Steps 1 and 2 as demand: each pool less the unit-hours a month its idle machines held
    (`idle`, taken in proportion to its hourly demand), then each move's hours taken out of its
    pool hour by hour (never below zero) and added to its new pool, scaled.

    `wide`: hour x pool units of the planning window; `rates`: on-demand $ per unit-hour of its
    pools; `occupancy`: each moved class's hourly shape (any scale; uniform where missing),
    rescaled to its `units_per_month`. `states` keeps the demand after each step, for the
    purchase mix's chain of costs to price them (`athanor.recommend.attribution`).
    """
    month = HOURS_PER_MONTH / len(wide)
    out = Adjusted(wide.copy(), wide.copy(), wide.copy(), dict(rates), dict(gpus_per_unit))
    after_idle = wide.copy()
    for pool in sorted(idle):
        demand = float(after_idle[pool].sum()) * month if pool in after_idle else 0.0
        if demand <= 0 or idle[pool] <= 0:
            continue
        out.idle_shares[pool] = min(1.0, idle[pool] / demand)
        after_idle[pool] = after_idle[pool] * (1.0 - out.idle_shares[pool])
        out.states.append(("idle_capacity", pool, (pool,), after_idle.copy()))
    moved = after_idle.copy()
    for m in moves:
        if m.from_pool not in moved:
            continue
        shape = np.asarray(occupancy.get(m.job_class, np.ones(len(moved))), dtype=float)
        if shape.sum() <= 0:
            shape = np.ones(len(moved))
        taken = shape / shape.sum() * m.units_per_month / month
        taken = np.minimum(taken, moved[m.from_pool].to_numpy())  # no pool below zero
        if m.to_pool not in moved:
            moved[m.to_pool] = 0.0
            out.rates[m.to_pool] = m.to_rate
            out.gpus_per_unit[m.to_pool] = m.to_gpus_per_unit
        moved[m.from_pool] = moved[m.from_pool].to_numpy() - taken
        moved[m.to_pool] = moved[m.to_pool].to_numpy() + taken * m.scale
        out.states.append(("gpu_choice", m.job_class, (m.from_pool, m.to_pool), moved.copy()))
    out.after_idle, out.after_moves = after_idle, moved
    return out


@dataclass(frozen=True)
class TermLimit:
    max_term_months: int | None  # None: any term offered
    reason: str


def term_limits(
    before: Mapping[str, float],
    after: Mapping[str, float],
    previous: Mapping[str, float],
    history_days: Mapping[str, int],
) -> dict[str, TermLimit]:
    """The longest term each pool's evidence supports.

    `before`/`after`: the pool's unit-hours in the planning window today and after the plan's
    idle stops and moves; `previous`: its unit-hours in the 30 days before the window;
    `history_days`: days of the bill with demand in the pool. A pool keeps the long term only if
    the plan leaves at least `LONG_TERM_MIN_REMAINING` of its demand, its demand moved less than
    `LONG_TERM_MAX_FALL` down or `LONG_TERM_MAX_SURGE` up against the 30 days before, and the
    bill shows it for `LONG_TERM_MIN_HISTORY_DAYS` days; otherwise 1 year at most.
    """
    out = {}
    for pool, now in after.items():
        today, prior, days = before.get(pool, 0.0), previous.get(pool, 0.0), history_days.get(pool, 0)
        if today <= 0 or now < LONG_TERM_MIN_REMAINING * today:
            reason = (
                "the plan moves work into this pool: its demand there is not yet observed"
                if today <= 0
                else f"the plan leaves {now / today:.0%} of today's demand in this pool"
            )
        elif days < LONG_TERM_MIN_HISTORY_DAYS:
            reason = f"the bill shows this pool for {days} days, fewer than {LONG_TERM_MIN_HISTORY_DAYS}"
        elif prior > 0 and today < (1 - LONG_TERM_MAX_FALL) * prior:
            reason = f"its demand fell {1 - today / prior:.0%} against the 30 days before"
        elif prior > 0 and today > (1 + LONG_TERM_MAX_SURGE) * prior:
            reason = (
                f"its demand rose {today / prior - 1:.0%} against the 30 days before: a surge, not a base"
            )
        elif prior <= 0:
            reason = "no demand in the 30 days before the window: no trend to size a long term on"
        else:
            out[pool] = TermLimit(None, "steady demand the plan keeps: any term")
            continue
        out[pool] = TermLimit(SHORT_TERM_MONTHS, f"1 year at most: {reason}")
    return out


# --- Reading the moves and idle shares from the warehouse -------------------------------------


def counted_moves(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    pool_of_family: Mapping[str, str],
    gpus_per_unit: Mapping[str, float],
) -> list[Move]:
    """The GPU plan's counted moves of the run, as demand between pools (largest saving first)."""
    rows = con.execute(
        """select job_class, current_instance_type, current_instance_count, current_gpus,
                  recommended_instance_type, recommended_instance_count, recommended_gpus,
                  recommended_region, runs_per_month, hours_per_run_current, hours_per_run_recommended,
                  cost_per_run_recommended_usd
           from gpu_plan
           where run_id = ? and coalesce(counted, false) and monthly_savings_usd > 0
             and recommended_instance_type is not null
           order by monthly_savings_usd desc, job_class""",
        [run_id],
    ).fetchall()
    moves = []
    for (
        job_class,
        cur_type,
        cur_count,
        cur_gpus,
        rec_type,
        rec_count,
        rec_gpus,
        rec_region,
        per_month,
        cur_hours,
        rec_hours,
        rec_cost,
    ) in rows:
        cur_family, rec_family = cur_type.split(".")[0], rec_type.split(".")[0]
        from_pool = pool_of_family.get(cur_family)
        if from_pool is None or not (per_month and cur_hours and rec_hours and cur_gpus and rec_gpus):
            continue
        to_pool = f"{rec_family}/{rec_region or from_pool.split('/')[-1]}"
        from_unit = gpus_per_unit.get(from_pool) or float(cur_gpus) / float(cur_count)
        to_unit = gpus_per_unit.get(to_pool) or float(rec_gpus) / float(rec_count)
        gpu_hours_now = float(per_month) * float(cur_hours) * float(cur_gpus)
        gpu_hours_then = float(per_month) * float(rec_hours) * float(rec_gpus)
        rate_per_gpu_h = float(rec_cost) / (float(rec_hours) * float(rec_gpus))
        moves.append(
            Move(
                job_class=job_class,
                from_pool=from_pool,
                to_pool=to_pool,
                units_per_month=gpu_hours_now / from_unit,
                scale=(gpu_hours_then / to_unit) / (gpu_hours_now / from_unit),
                to_rate=rate_per_gpu_h * to_unit,
                to_gpus_per_unit=to_unit,
            )
        )
    return moves


def class_occupancy(
    con: duckdb.DuckDBPyConnection, hours: pd.DatetimeIndex, job_classes: Sequence[str]
) -> dict[str, np.ndarray]:
    """Each class's instance-hours per hour of the window (its runs' overlap with each hour)."""
    from athanor.recommend.gpu_usage import job_class_expression

    if not job_classes:
        return {}
    start, end = hours[0].to_pydatetime(), hours[-1].to_pydatetime() + timedelta(hours=1)
    frame = con.execute(
        sql("marts/plan_class_hourly", job_class=job_class_expression(con)),
        {"window_start": start, "window_end": end},
    ).df()
    index = {h: i for i, h in enumerate(hours)}
    out = {}
    for job_class, rows in frame[frame["job_class"].isin(job_classes)].groupby("job_class"):
        shape = np.zeros(len(hours))
        for hour, value in zip(rows["hour"], rows["instance_hours"], strict=True):
            i = index.get(pd.Timestamp(hour))
            if i is not None:
                shape[i] += float(value)
        out[str(job_class)] = shape
    return out


def idle_units(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    pool_of_family: Mapping[str, str],
    gpus_per_unit: Mapping[str, float],
) -> tuple[dict[str, float], dict[str, str]]:
    """Per pool, the unit-hours a month its idle machines held (the run's `idle_gpu` rows: idle
    GPU-hours of billed machines over the measured hours, scaled to a month), and the pool of each
    `idle_gpu` row's scope."""
    rows = con.execute(
        """select scope, cast(json_extract(detail, '$.idle_gpu_hours') as double),
                  cast(json_extract(assumptions, '$.measured_hours') as double)
           from recommendations where run_id = ? and kind = 'idle_gpu' order by scope""",
        [run_id],
    ).fetchall()
    units: dict[str, float] = {}
    pools: dict[str, str] = {}
    for scope, idle_h, measured_h in rows:
        pool = pool_of_family.get(scope.split("/")[-1].split(".")[0])
        if pool is None or not idle_h or not measured_h:
            continue
        pools[scope] = pool
        per_month = idle_h * HOURS_PER_MONTH / measured_h / gpus_per_unit.get(pool, 1.0)
        units[pool] = units.get(pool, 0.0) + per_month
    return units, pools


# --- Composing the plan from what the recommenders stored -------------------------------------


@dataclass(eq=False)
class Step:
    kind: str
    scope: str
    counted: bool
    monthly_savings: float | None
    action: str
    evidence: str
    after: list[Step] = field(default_factory=list)  # the earlier steps it is sized after
    fields: dict[str, Any] = field(default_factory=dict)
    order: int = 0  # its place in the plan, set once the plan is in order

    @property
    def assumes(self) -> list[int]:
        return sorted(s.order for s in self.after)


def _records(
    con: duckdb.DuckDBPyConnection, table: str, run_id: str, where: str = "true", order: str = "all"
) -> list[dict[str, Any]]:
    """The run's rows of `table` as dicts (NULL stays None)."""
    cur = con.execute(f"select * from {table} where run_id = ? and ({where}) order by {order}", [run_id])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _json(text: Any) -> Any:
    if text is None or isinstance(text, dict | list):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return None


def _cents(value: Any) -> float | None:
    return None if value is None else round(float(value), 2)


Recs = dict[tuple[str, str], dict[str, Any]]  # the run's recommendations by (kind, scope)


def compose(con: duckdb.DuckDBPyConnection, run_id: str) -> list[Step]:
    """The run's plan, in order, from its recommendations and GPU plan."""
    recs: Recs = {(r["kind"], r["scope"]): r for r in _records(con, "recommendations", run_id)}
    mix = recs.get(("mix", "fleet"))
    # What recommend_purchases priced of the idle stops and moves (PlanDemand.to_dict).
    planned = (_json(mix["detail"]) or {}).get("plan", {}) if mix else {}
    idle = _idle_steps(recs, planned)
    moves, to_benchmark = _move_steps(_records(
        con,
        "gpu_plan",
        run_id,
        "recommended_instance_type is not null and monthly_savings_usd > 0",
        "coalesce(counted, false) desc, monthly_savings_usd desc, job_class",
    ), planned, idle)  # fmt: skip
    spot = _spot_step(recs)
    commitments = _commitment_steps(recs, idle, moves, spot)
    steps = [
        *idle.values(),
        *moves,
        *([spot] if spot else []),
        *commitments,
        *_storage_steps(recs),
        *to_benchmark,
        *_apart_steps(recs, moves),
    ]
    for i, step in enumerate(steps):
        step.order = i + 1
    return steps


def _idle_steps(recs: Recs, planned: dict[str, Any]) -> dict[str, Step]:
    """1. Idle capacity, per pool: the idle_gpu rows of its instance types are its evidence."""
    pool_of = planned.get("idle_pool_of_scope", {})
    out = {}
    for pool, saving in sorted(planned.get("idle_savings", {}).items()):
        scopes = [
            scope for (kind, scope) in sorted(recs) if kind == "idle_gpu" and pool_of.get(scope) == pool
        ]
        share = planned.get("idle_shares", {}).get(pool, 0.0)
        out[pool] = Step(
            kind="idle_capacity",
            scope=pool,
            counted=True,
            monthly_savings=_cents(saving),
            action=f"Stop machines in {pool} once idle ({', '.join(scopes)}): their idle hours, scaled "
            f"to a month, are {share:.1%} of the pool's billed hours",
            evidence="the fleet's telemetry: idle GPU-hours of billed machines",
            fields={"pool": pool, "idle_share": round(share, 6), "from": scopes},
        )
    return out


def _move_steps(
    gpu_plan: list[dict[str, Any]], planned: dict[str, Any], idle: dict[str, Step]
) -> tuple[list[Step], list[Step]]:
    """2. The GPU plan's moves: those the plan counts (priced in the chain), and those to benchmark
    first (their list-price saving, listed apart)."""
    saving_of = planned.get("move_savings", {})
    pools_of = planned.get("move_pools", {})
    counted_moves: list[Step] = []
    to_benchmark: list[Step] = []
    for r in gpu_plan:
        counted = bool(r.get("counted")) and r["job_class"] in saving_of
        from_pool, to_pool = pools_of.get(r["job_class"], [None, None])
        source = r.get("speedup_source")
        evidence = (
            SPEEDUP_EVIDENCE.get(source, f"the speed-up's source: {source}")
            if source
            else f"same GPU model: hours scaled by a {r['scaling_basis']} model"
        )
        (counted_moves if counted else to_benchmark).append(
            Step(
                kind="gpu_choice",
                scope=r["job_class"],
                counted=counted,
                monthly_savings=_cents(saving_of[r["job_class"]] if counted else r["monthly_savings_usd"]),
                action=f"Run {r['job_class']} on {r['recommended_instance_count']} x "
                f"{r['recommended_instance_type']} instead of {r['current_instance_count']} x "
                f"{r['current_instance_type']}" + ("" if counted else ": benchmark first, not counted"),
                evidence=evidence
                + ("" if counted else "; its saving at list prices changes sign within the range"),
                after=[idle[p] for p in (from_pool, to_pool) if p in idle],
                fields={
                    "job_class": r["job_class"],
                    "from": {
                        "instance_type": r["current_instance_type"],
                        "instance_count": int(r["current_instance_count"]),
                    },
                    "to": {
                        "instance_type": r["recommended_instance_type"],
                        "instance_count": int(r["recommended_instance_count"]),
                    },
                    "from_pool": from_pool,
                    "to_pool": to_pool,
                    "speedup": {
                        "value": r.get("speedup"),
                        "low": r.get("speedup_low"),
                        "high": r.get("speedup_high"),
                        "source": source,
                    },
                    "break_even_speedup": r.get("break_even_speedup"),
                    "benchmark_first": bool(r.get("benchmark_first")),
                    "list_price_saving": {
                        "value": _cents(r["monthly_savings_usd"]),
                        "low": _cents(r.get("monthly_savings_low_usd")),
                        "high": _cents(r.get("monthly_savings_high_usd")),
                    },
                },
            )
        )
    return counted_moves, to_benchmark


def _spot_step(recs: Recs) -> Step | None:
    """3. Spot: its classes leave the demand before commitments are sized on what remains. It is
    measured on today's demand, first in the chain of costs (`attribution.mix_parts`)."""
    row = recs.get(("spot", "job classes"))
    if row is None:
        return None
    detail = _json(row["detail"]) or {}
    classes = [
        {
            "job_class": c.get("job_class"),
            "uses_spot": c.get("uses_spot"),
            "interruptions_per_instance_hour": c.get("interruptions_per_instance_hour"),
            "completion": c.get("completion"),
            "spot_rate_source": c.get("spot_rate_source"),
            "monthly_saving": c.get("monthly_saving_usd"),
        }
        for c in detail.get("job_classes", [])
    ]
    return Step(
        kind="spot",
        scope="job classes",
        counted=True,
        monthly_savings=_cents(row["estimated_monthly_savings_amount"]),
        action=row["action"],
        evidence="the fleet's own spot runs (interruptions, Spot Advisor as the prior; completion) "
        "and the bill's spot prices",
        fields={"classes": classes, "phase_policy": detail.get("phase_policy") or {}},
    )


def _commitment_steps(recs: Recs, idle: dict[str, Step], moves: list[Step], spot: Step | None) -> list[Step]:
    """4. Reservations per pool, then the savings plan, sized on what the steps before leave:
    a reservation after its pool's idle stop and the moves in or out of it, the savings plan
    after every one of them; both after spot."""
    rows = sorted(
        ((kind, scope, r) for (kind, scope), r in recs.items() if kind in COMMITMENT_KINDS),
        key=lambda found: (COMMITMENT_KINDS.index(found[0]), found[1]),
    )
    out = []
    for kind, scope, r in rows:
        facts = (_json(r["detail"]) or {}).get("commitment", {})
        touching = [m for m in moves if scope in (m.fields["from_pool"], m.fields["to_pool"])]
        earlier = [idle[scope], *touching] if scope in idle else touching
        if kind == "savings_plan":
            earlier = [*idle.values(), *moves]
        out.append(
            Step(
                kind=kind,
                scope=scope,
                counted=True,
                monthly_savings=_cents(r["estimated_monthly_savings_amount"]),
                action=r["action"],
                evidence=facts.get("evidence", "the bill's hourly demand after the steps before"),
                after=[*earlier, *([spot] if spot else [])],
                fields={
                    "pool": scope,
                    # The cloud and what it calls the commitment (athanor.recommend.provider_offers):
                    # the kind is one for every cloud, the words are the cloud's own.
                    "provider": facts.get("provider", "aws"),
                    "offer": facts.get("offer"),
                    "offer_name": facts.get("offer_name"),
                    "units": r["recommended_quantity"],
                    "term_months": r["term_months"],
                    **{name: facts.get(name) for name in COMMITMENT_FACTS},
                    "flagged_days": facts.get("flagged_days", []),
                    "rates": facts.get(
                        "rates", "assumed discounts (settings): enter a quote to replace them"
                    ),
                },
            )
        )
    return out


def _storage_steps(recs: Recs) -> list[Step]:
    """5. Storage: lifecycle rules per prefix, the EBS clean-up."""
    return [
        Step(
            kind=kind,
            scope=scope,
            counted=True,
            monthly_savings=_cents(r["estimated_monthly_savings_amount"]),
            action=r["action"],
            evidence="the storage inventory and the bill's storage prices",
        )
        for (kind, scope), r in sorted(recs.items())
        if kind in STORAGE_KINDS
    ]


def _apart_steps(recs: Recs, moves: Sequence[Step] = ()) -> list[Step]:
    """What the plan lists apart and never adds (APART says why). Fewer GPUs for a class the plan
    counts a move of is sized after that move, and says so: its GPU count is of the machines the
    class leaves, so on its own it would contradict the move's."""
    moved = {m.scope: m for m in moves if m.kind == "gpu_choice" and m.counted}
    out = []
    for (kind, scope), r in sorted(recs.items()):
        if kind not in APART:
            continue
        move = moved.get(scope) if kind == "underused_gpu" else None
        action = r["action"]
        if move is not None:
            to = move.fields["to"]
            action += (
                f" (measured on {move.fields['from']['instance_type']}; the plan moves it to "
                f"{to['instance_count']} x {to['instance_type']}: size it there)"
            )
        out.append(
            Step(
                kind=kind,
                scope=scope,
                counted=False,
                monthly_savings=_cents(r["estimated_monthly_savings_amount"]),
                action=action,
                evidence=APART[kind],
                after=[move] if move is not None else [],
            )
        )
    return out


def total(steps: Sequence[Step]) -> float:
    """The plan's monthly saving: its counted steps, added."""
    return round(sum(s.monthly_savings or 0.0 for s in steps if s.counted), 2)


def store(con: duckdb.DuckDBPyConnection, run_id: str, as_of: date, steps: Sequence[Step]) -> None:
    rows = [
        {
            "run_id": run_id,
            "as_of": as_of,
            "step_order": s.order,
            "kind": s.kind,
            "scope": s.scope,
            "counted": s.counted,
            "monthly_savings_usd": None if s.monthly_savings is None else Decimal(f"{s.monthly_savings:.2f}"),
            "assumes": json.dumps(s.assumes),
            "action": s.action,
            "evidence": s.evidence,
            "detail": json.dumps(s.fields, default=_plain),
        }
        for s in steps
    ]
    with transaction(con):
        con.execute("delete from plan_steps where run_id = ?", [run_id])
        insert_rows(con, "plan_steps", rows)


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


def compose_plan(con: duckdb.DuckDBPyConnection, run_id: str, as_of: date) -> dict[str, Any]:
    steps = compose(con, run_id)
    store(con, run_id, as_of, steps)
    counted = [s for s in steps if s.counted]
    return {
        "steps": len(steps),
        "counted": len(counted),
        "total_monthly_savings": total(steps),
    }


def document(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> dict[str, Any] | None:
    """The plan of a run (default: the latest run that composed one) as `athanor plan` prints it."""
    found = con.execute(
        "select run_id, as_of from plan_steps where run_id = coalesce(?, run_id) "
        "order by as_of desc, run_id desc limit 1",
        [run_id],
    ).fetchone()
    if found is None:
        return None
    run_id, as_of = found
    steps = []
    for order, kind, scope, counted, saving, assumes, action, evidence, detail in con.execute(
        """select step_order, kind, scope, counted, monthly_savings_usd, assumes, action, evidence, detail
           from plan_steps where run_id = ? order by step_order""",
        [run_id],
    ).fetchall():
        steps.append(
            {
                "order": order,
                "kind": kind,
                "scope": scope,
                "counted": counted,
                "monthly_savings": None if saving is None else float(saving),
                "assumes": _json(assumes) or [],
                "action": action,
                "evidence": evidence,
                **(_json(detail) or {}),
            }
        )
    return {
        "as_of": as_of.isoformat() if isinstance(as_of, date | datetime) else str(as_of),
        "run_id": run_id,
        "currency": "USD",
        "total_monthly_savings": round(sum(s["monthly_savings"] or 0.0 for s in steps if s["counted"]), 2),
        "steps": steps,
    }
