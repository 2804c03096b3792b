"""Instance-hours of the simulated jobs, priced, and the commitments applied to them hour by hour.

Grain of the usage frame: one row per instance per clock hour it ran before the cutoff.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
import pandas as pd

from athanor.demo.config import DemoConfig
from athanor.demo.jobs import Fleet
from athanor.demo.stable import (
    epoch,
    instance_id,
    month_start,
    next_month,
    round_div,
    to_micro,
    unit_hash,
    uuid_of,
)
from athanor.demo.telemetry import idle_tail_s


@dataclass(frozen=True)
class Commitments:
    ri_arn: str
    ri_rate_micro: int  # per instance-hour
    ri_start: int
    ri_end: int
    sp_arn: str
    sp_commitment_micro: int  # per hour
    sp_start: int
    sp_end: int


def commitments_of(cfg: DemoConfig) -> Commitments:
    ri_end = cfg.end_date + timedelta(days=cfg.ri_expires_days_after_end)
    sp_end = cfg.end_date + timedelta(days=cfg.sp_expires_days_after_end)
    od = cfg.instance(cfg.ri_instance_type).on_demand_usd_per_h
    return Commitments(
        ri_arn=f"arn:aws:ec2:{cfg.ri_region}:{cfg.ri_payer_account_id}:reserved-instances/"
        + uuid_of(cfg.seed, "ri"),
        ri_rate_micro=to_micro(od * cfg.ri_rate_fraction),
        ri_start=epoch(ri_end - timedelta(days=365)),
        ri_end=epoch(ri_end),
        sp_arn=f"arn:aws:savingsplans::{cfg.sp_payer_account_id}:savingsplan/" + uuid_of(cfg.seed, "sp"),
        sp_commitment_micro=to_micro(cfg.sp_commitment_per_h),
        sp_start=epoch(sp_end - timedelta(days=365)),
        sp_end=epoch(sp_end),
    )


def billing_months(cfg: DemoConfig, cutoff: int) -> list[tuple[date, int, int]]:
    """(first day, start, end) of every calendar month from the window's first month up to cutoff."""
    months = []
    day = month_start(cfg.window_start)
    while epoch(day) < cutoff:
        months.append((day, epoch(day), epoch(next_month(day))))
        day = next_month(day)
    return months


def _spot_rate_micro(cfg: DemoConfig, instance_type: str, region: str, day: int) -> int:
    """Spot price for a (type, region, day): the typical price +-jitter, to 0.0001 $/h."""
    base = to_micro(cfg.instance(instance_type).spot_usd_per_h)
    u = unit_hash(cfg.seed, "spot", instance_type, region, day)
    return int(round(base * (1.0 + cfg.spot_daily_jitter * (2.0 * u - 1.0)) / 100.0)) * 100


def usage_lines(cfg: DemoConfig, fleet: Fleet, cutoff: int) -> pd.DataFrame:
    """One row per instance per hour it ran before cutoff, with seconds and pricing inputs."""
    jobs, segs = fleet.jobs, fleet.segments
    counts = jobs["instance_count"].to_numpy()[segs["job"].to_numpy()]
    res = segs.loc[segs.index.repeat(counts)].reset_index(drop=True)
    res["k"] = res.groupby(["job", "seg"]).cumcount()
    # Some nodes stay up, idle, after their job: billed like any other hour (athanor.demo.telemetry).
    res["end_s"] = np.minimum(res["end_s"].to_numpy() + idle_tail_s(cfg, jobs, res), cutoff)
    res = res[res["start_s"] < res["end_s"]].reset_index(drop=True)
    job_ids = jobs["job_id"].to_numpy()[res["job"].to_numpy()]
    res["resource_id"] = [
        instance_id(cfg.seed, job, seg, k) for job, seg, k in zip(job_ids, res["seg"], res["k"], strict=True)
    ]
    # Some launches skip the job_id tag (a hand-started node, an old launch template).
    res["untagged"] = [
        unit_hash(cfg.seed, "untagged", rid) < cfg.untagged_job_id_share for rid in res["resource_id"]
    ]

    first_hour = res["start_s"].to_numpy() // 3600
    last_hour = (res["end_s"].to_numpy() + 3599) // 3600
    n_hours = last_hour - first_hour
    lines = res.loc[res.index.repeat(n_hours)].reset_index(drop=True)
    within = np.arange(len(lines)) - np.repeat(np.cumsum(n_hours) - n_hours, n_hours)
    hour_start = (np.repeat(first_hour, n_hours) + within) * 3600
    lines["hour_s"] = hour_start
    lines["seconds"] = np.minimum(lines["end_s"], hour_start + 3600) - np.maximum(
        lines["start_s"], hour_start
    )
    lines = lines[lines["seconds"] > 0].reset_index(drop=True)
    for name in (
        "job_id",
        "instance_type",
        "pricing_model",
        "team",
        "project",
        "model",
        "region",
        "availability_zone",
        "payer_account_id",
        "usage_account_id",
    ):
        lines[name] = jobs[name].to_numpy()[lines["job"].to_numpy()]
    lines["spot"] = lines["pricing_model"] == "spot"
    od = {spec.instance_type: to_micro(spec.on_demand_usd_per_h) for spec in cfg.instances}
    lines["od_rate"] = lines["instance_type"].map(od).astype("int64")
    day = (lines["hour_s"] // 86400).to_numpy()
    spot_keys = set(
        zip(
            lines["instance_type"][lines["spot"]],
            lines["region"][lines["spot"]],
            day[lines["spot"]],
            strict=True,
        )
    )
    spot_price = {key: _spot_rate_micro(cfg, *key) for key in spot_keys}
    lines["rate"] = [
        spot_price[(t, r, d)] if s else o
        for t, r, d, s, o in zip(
            lines["instance_type"], lines["region"], day, lines["spot"], lines["od_rate"], strict=True
        )
    ]
    return lines


def apply_commitments(
    cfg: DemoConfig, lines: pd.DataFrame, com: Commitments
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split usage lines into covered and uncovered parts, hour by hour, as AWS applies RIs and SPs.

    Returns (lines with covered_s, covered_cost and commitment columns, per-hour
    commitment use: hour_s, commitment, used_s, used_micro).
    """
    lines = lines.copy()
    lines["covered_s"] = 0
    lines["covered_cost"] = 0
    lines["commitment"] = ""
    sp_rate = {
        spec.instance_type: to_micro(spec.on_demand_usd_per_h * cfg.sp_rate_fraction)
        for spec in cfg.instances
    }
    lines["sp_rate"] = lines["instance_type"].map(sp_rate).astype("int64")

    # Reserved instances: regional, so any AZ; each RI covers one instance-hour per hour.
    ri = lines[
        (lines["payer_account_id"] == cfg.ri_payer_account_id)
        & (lines["instance_type"] == cfg.ri_instance_type)
        & (lines["region"] == cfg.ri_region)
        & ~lines["spot"]
        & (lines["hour_s"] >= com.ri_start)
        & (lines["hour_s"] < com.ri_end)
    ].copy()
    ri["first"] = ri["pricing_model"] != "reserved"
    ri = ri.sort_values(["hour_s", "first", "job_id", "resource_id"], kind="stable")
    cap_s = cfg.ri_count * 3600
    cum = ri.groupby("hour_s")["seconds"].cumsum()
    covered = np.clip(cap_s - (cum - ri["seconds"]), 0, ri["seconds"]).astype("int64")
    cum_cov = covered.groupby(ri["hour_s"]).cumsum()
    # Telescoping rounding: the covered costs of an hour add up to round(covered_s * rate).
    r = com.ri_rate_micro
    cost = round_div(cum_cov * r, 3600) - round_div((cum_cov - covered) * r, 3600)
    lines.loc[ri.index, "covered_s"] = covered
    lines.loc[ri.index, "covered_cost"] = cost
    lines.loc[ri.index[covered.to_numpy() > 0], "commitment"] = com.ri_arn
    ri_used = (
        pd.DataFrame({"hour_s": ri["hour_s"], "used_s": covered, "used_micro": cost}).groupby("hour_s").sum()
    )

    # Compute Savings Plan: any region and type of the payer's non-spot usage, up to
    # the hourly commitment valued at SP rates.
    sp = lines[
        (lines["payer_account_id"] == cfg.sp_payer_account_id)
        & ~lines["spot"]
        & (lines["hour_s"] >= com.sp_start)
        & (lines["hour_s"] < com.sp_end)
    ].copy()
    sp["first"] = sp["pricing_model"] != "savings_plan"
    sp = sp.sort_values(["hour_s", "first", "job_id", "resource_id"], kind="stable")
    full_cost = round_div(sp["seconds"] * sp["sp_rate"], 3600)
    before = com.sp_commitment_micro - (full_cost.groupby(sp["hour_s"]).cumsum() - full_cost)
    partial_s = (np.maximum(before, 0) * 3600) // sp["sp_rate"]
    covered = np.where(before >= full_cost, sp["seconds"], np.minimum(partial_s, sp["seconds"])).astype(
        "int64"
    )
    cost = np.where(before >= full_cost, full_cost, round_div(covered * sp["sp_rate"], 3600)).astype("int64")
    lines.loc[sp.index, "covered_s"] = covered
    lines.loc[sp.index, "covered_cost"] = cost
    lines.loc[sp.index[covered > 0], "commitment"] = com.sp_arn
    sp_used = (
        pd.DataFrame({"hour_s": sp["hour_s"], "used_s": covered, "used_micro": cost}).groupby("hour_s").sum()
    )
    return lines, pd.concat(
        {com.ri_arn: ri_used, com.sp_arn: sp_used}, names=["commitment", "hour_s"]
    ).reset_index()
