"""Warehouse -> recommenders -> warehouse: the purchase mix and the checkpoint lifecycle.

This module only moves data: it builds the inputs `athanor.recommend.mix` and
`athanor.recommend.lifecycle` expect from the warehouse's marts, and stores what they
recommend in `recommendations` and `backtests` (replacing this run's rows).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from athanor.recommend import mix, spot
from athanor.recommend.backtest import backtest, backtest_synthetic_scenarios
from athanor.reference import HOURS_PER_MONTH, HOURS_PER_YEAR, instance, spot_advice
from athanor.warehouse import insert_rows, sql, transaction

PLANNING_WINDOW_DAYS = 30
# The synthetic backtest scenarios are priced as a p4d.24xlarge fleet (its us-east-1 on-demand
# $/h in the reference catalogue): they compare commitment rules, one list price serves them all.
SYNTHETIC_SCENARIO_ON_DEMAND_RATE = float(instance("p4d.24xlarge").on_demand_usd_per_h)


@dataclass(frozen=True)
class PricingAssumptions:
    """Rates the recommendation assumes; GPU commitment prices are not public (BRIEF.md)."""

    one_year_ratio: float = 0.60
    three_year_ratio: float = 0.40
    savings_plan_discount: float = 0.28
    deadline_slack: float = 1.5  # a job may take 1.5x its run time before it is late
    restart_time_h: float = 0.1  # re-provision + reload a checkpoint after an interruption
    region: str = "us-east-1"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def interruption_rates(region: str = "us-east-1") -> dict[str, float]:
    """Spot interruptions per instance-hour by instance type, from the Spot Advisor snapshot."""
    return {
        instance_type: spot.monthly_fraction_to_rate_per_h(advice.monthly_interruption_fraction)
        for instance_type, advice in spot_advice(region).items()
    }


def build_demand_mart(con: duckdb.DuckDBPyConnection) -> int:
    con.execute(f"create or replace table mart_gpu_demand_hourly as {sql('marts/gpu_demand_hourly')}")
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
    """Recommend commitments, savings plan and spot share; backtest the commitment rule."""
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
            "select instance_family, gpu_count as gpus, spot_usd_per_h as spot from ref_instance_families"
        )
        .df()
        .set_index("instance_family")
    )
    rates = interruption_rates(a.region)
    if not classes.empty:
        family = classes["pool"].str.split("/").str[0]
        classes["deadline_slack"] = a.deadline_slack
        classes["restart_time_h"] = a.restart_time_h
        classes["on_demand_rate"] = [
            float(window.loc[window["pool"] == p, "on_demand_rate"].iloc[0]) for p in classes["pool"]
        ]
        classes["spot_rate"] = [
            float(ref.loc[f, "spot"]) if f in ref.index and pd.notna(ref.loc[f, "spot"]) else od * 0.4
            for f, od in zip(family, classes["on_demand_rate"], strict=True)
        ]
        classes["interruption_rate_per_h"] = [
            next((r for t, r in rates.items() if t.split(".")[0] == f), float("nan")) for f in family
        ]
        classes["p90_duration_h"] = np.maximum(classes["p90_duration_h"], classes["median_duration_h"])
    gpus_per_unit = {p: float(ref.loc[p.split("/")[0], "gpus"]) for p in window["pool"].unique()}
    current_bill = float(demand["effective_cost_usd"].sum()) * HOURS_PER_MONTH / (PLANNING_WINDOW_DAYS * 24)
    prices = mix.MixPrices(
        offers=(
            mix.CommitmentOffer(12, "no_upfront", a.one_year_ratio, 0.0),
            mix.CommitmentOffer(36, "no_upfront", a.three_year_ratio, 0.0),
        ),
        sp_discount_by_pool={p: a.savings_plan_discount for p in window["pool"].unique()},
    )
    rec = mix.recommend_mix(
        window,
        classes,
        prices=prices,
        rates=rates,
        current_monthly_bill_usd=current_bill,
        existing_by_pool=existing,
        gpus_per_unit_by_pool=gpus_per_unit,
    )
    summary = rec.to_dict()
    summary["explanation"] = mix.explain(rec)
    backtests = _backtests(con, as_of, a)
    _store_mix(con, run_id, as_of, rec, summary, a, backtests)
    return {
        "pools": len(rec.pools),
        "estimated_monthly_savings_amount": round(rec.estimated_monthly_savings_amount, 2),
        "estimated_savings_percentage": round(rec.estimated_savings_percentage, 1),
        "explanation": summary["explanation"],
    }


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
        frames.append(backtest(series, od, od * a.one_year_ratio).assign(scenario=f"demo:{pool}"))
    # The same rule on generated demand shapes the warehouse may not have seen yet.
    od = SYNTHETIC_SCENARIO_ON_DEMAND_RATE
    frames.append(backtest_synthetic_scenarios(od, od * a.one_year_ratio))
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
MIX_KINDS = ("reserved_instances", "savings_plan", "spot", "mix")
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


def _store_mix(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    as_of: date,
    rec: mix.MixRecommendation,
    summary: dict[str, Any],
    a: PricingAssumptions,
    backtests: pd.DataFrame,
) -> None:
    assumptions = json.dumps(a.to_dict())
    rows = []
    for p in rec.pools:
        if p.plan.commit_units <= 0:
            continue
        term = "3-year" if p.plan.term_months == 36 else "1-year"
        rows.append(
            (
                "reserved_instances",
                p.pool,
                f"Reserve {p.plan.commit_units:g} more {p.pool.split('/')[0]} units ({term}, {p.plan.payment_option.replace('_', ' ')}) in {p.pool.split('/')[-1]}",
                p.plan.commit_units,
                None,
                p.plan.term_months,
                p.plan.upfront_cost,
                p.plan.recurring_hourly_cost * HOURS_PER_MONTH,
                p.plan.expected_cost,
                p.plan.on_demand_cost,
                p.plan.savings,
                p.plan.savings_pct,
                p.plan.utilization,
                p.plan.coverage,
                p.plan.break_even_months,
                "commitment outlives demand if it falls",
                p.to_dict(),
            )
        )
    if rec.savings_plan is not None and rec.hourly_commitment > 0:
        sp = rec.savings_plan.to_dict()
        rows.append(
            (
                "savings_plan",
                "all pools",
                f"Buy a compute savings plan of ${rec.hourly_commitment:,.3f}/hour",
                None,
                rec.hourly_commitment,
                12,
                0.0,
                rec.hourly_commitment * HOURS_PER_MONTH,
                sp.get("expected_cost"),
                sp.get("on_demand_cost"),
                sp.get("savings"),
                sp.get("savings_pct"),
                sp.get("utilization"),
                sp.get("coverage"),
                0.0,
                "commitment outlives demand if it falls",
                sp,
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
                0.0,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                0.0,
                f"{(rec.spot_completion_rate or 0):.1%} of spot jobs finish by their deadline",
                {"job_classes": [j.to_dict() for j in rec.job_classes]},
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
            f"completion {rec.expected_completion_rate:.1%}",
            summary,
        )
    )
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
    from athanor.ingest.inventory import read_ebs
    from athanor.recommend import lifecycle

    columns = [
        "bucket",
        "key",
        "version_id",
        "is_latest",
        "is_delete_marker",
        "size_bytes",
        "last_modified",
        "storage_class",
        "it_access_tier",
        "etag",
    ]
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
    rows = []
    for p in rec.prefixes:
        saving_year = p.before.total - p.after.total
        if p.chosen == lifecycle.DO_NOTHING.name() or saving_year <= 0:
            continue
        rows.append(
            (
                "lifecycle",
                f"s3://{p.bucket}/{p.prefix}",
                f"Set lifecycle policy '{p.chosen}' on s3://{p.bucket}/{p.prefix}",
                p.before.total / rec.horizon_months,
                p.after.total / rec.horizon_months,
                saving_year,
                p.to_dict(),
            )
        )
    if rec.ebs and rec.ebs.actions:
        before, after = rec.ebs.before.total, rec.ebs.after.total
        rows.append(
            (
                "ebs",
                "EBS volumes and snapshots",
                f"Clean up {len(rec.ebs.actions)} idle EBS volumes/snapshots",
                before / rec.horizon_months,
                after / rec.horizon_months,
                before - after,
                rec.ebs.to_dict(),
            )
        )
    summary_detail = {**detail, "applied": applied}
    recommendations = [
        Recommendation(
            kind=kind,
            scope=scope,
            action=action,
            current_monthly_cost=_money(before_m),
            estimated_monthly_cost=_money(after_m),
            estimated_monthly_savings_amount=_money(saving_year / rec.horizon_months),
            estimated_savings_percentage=100.0 * (before_m - after_m) / before_m if before_m else 0.0,
            risk="protected checkpoints (latest per run, keep-tagged) are never expired",
            assumptions=json.dumps(detail["assumptions"], default=str),
            detail=json.dumps(d, default=str),
        )
        for kind, scope, action, before_m, after_m, saving_year, d in rows
    ]
    recommendations.append(
        Recommendation(
            kind="storage",
            scope="all buckets",
            action=f"Checkpoint storage: save ${rec.savings_year_usd:,.0f} a year",
            current_monthly_cost=_money(rec.before.total / rec.horizon_months),
            estimated_monthly_cost=_money(rec.after.total / rec.horizon_months),
            estimated_monthly_savings_amount=_money(rec.savings_month_usd),
            detail=json.dumps(summary_detail, default=str),
        )
    )
    with transaction(con):
        store_recommendations(con, run_id, as_of, STORAGE_KINDS, recommendations)
    return {
        "buckets": len(rec.configs),
        "savings_year_usd": round(rec.savings_year_usd, 2),
        "applied": len(applied),
    }
