"""Warehouse -> GPU plan -> warehouse: which GPU type, and how many, each workload class should run on.

Reads the job runs (`job_runs`) of the planning window, plans every class with
`athanor.recommend.gpu_choice`, and stores the plan: one `gpu_plan` row per class (this module
is the table's one writer) and a `recommendations` row of kind `gpu_choice` for each class the
plan moves to another configuration at a saving.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from athanor.recommend import gpu_choice, gpu_usage
from athanor.recommend.nightly import Recommendation, store_recommendations
from athanor.reference import gpus
from athanor.reference.egress import BYTES_PER_GB
from athanor.warehouse import insert_rows, sql, transaction

GPU_KINDS = ("gpu_choice",)
# The runs a plan reads: those that started in the 90 days up to the end of as_of.
PLAN_WINDOW_DAYS = 90
JOB_RUN_COLUMNS = (
    "job_id",
    "team",
    "project",
    "model",
    "phase",
    "state",
    "start_time",
    "end_time",
    "duration_s",
    "instance_type",
    "instance_count",
    "gpus_per_instance",
    "model_params",
    "peak_gpu_memory_gib",
    "samples_per_second",
)


def read_job_runs(con: duckdb.DuckDBPyConnection, as_of: date | None = None) -> pd.DataFrame:
    """The job runs a plan reads: every started run, or those of the window ending with as_of."""
    where, params = "start_time is not null and instance_type is not null", []
    if as_of is not None:
        end = datetime.combine(as_of + timedelta(days=1), datetime.min.time())
        where += " and start_time >= ? and start_time < ?"
        params = [end - timedelta(days=PLAN_WINDOW_DAYS), end]
    return con.execute(
        f"select {', '.join(JOB_RUN_COLUMNS)} from job_runs where {where} order by start_time, job_id", params
    ).df()


def class_data(
    con: duckdb.DuckDBPyConnection, classes: Sequence[gpu_choice.ClassInput]
) -> list[gpu_choice.ClassInput]:
    """Each class with the size of the data a move to another region takes along: the largest
    latest checkpoint among its runs (storage inventory run ids matched to job ids). A class whose
    runs have no checkpoint in the inventory keeps an unknown size (its move's transfer unpriced)."""
    latest = con.execute(sql("marts/latest_checkpoints")).fetchall()
    by_run = {str(run): (int(step), int(size or 0)) for run, step, size, _ in latest}
    out = []
    for c in classes:
        found = [(by_run[j][1], by_run[j][0], j) for j in c.job_ids if j in by_run]
        if not found:
            out.append(c)
            continue
        size, step, run = max(found)
        out.append(
            replace(
                c,
                data_gib=size / BYTES_PER_GB,
                data_basis=f"the latest checkpoint of run {run}, step {step}, the largest of "
                f"{len(found)} run{'s' if len(found) != 1 else ''} with checkpoints",
            )
        )
    return out


def runs_from_files(paths: Sequence[Path]) -> tuple[pd.DataFrame, list[str]]:
    """Job runs read from job-log files, as `athanor ingest` reads them, without a warehouse. A folder
    gives every file in it that is a job log; the notes name the files skipped."""
    from athanor.ingest import jobs

    frames, notes = [], []
    for root in paths:
        if not root.exists():
            raise FileNotFoundError(2, "No such file or directory", str(root))
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for file in files:
            if root.is_dir():
                try:
                    jobs.detect_job_format(file)
                except (jobs.JobRunError, OSError, ValueError):
                    notes.append(f"{file}: not a job log, skipped")
                    continue
            frame = jobs.read_job_runs(file)
            frames.append(frame[frame["start_time"].notna() & frame["instance_type"].notna()])
    runs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(JOB_RUN_COLUMNS))
    return runs, notes


def _money(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(round(value, 2)))


def _option(o: gpu_choice.Option) -> dict[str, Any]:
    return {
        **o.config(),
        "region": o.candidate.region,
        "hours_per_run": round(o.hours_per_run, 4),
        "cost_per_run_usd": round(o.cost_per_run_usd, 2),
        "kgco2e_per_run": None if o.kgco2e_per_run is None else round(o.kgco2e_per_run, 4),
    }


def plan_rows(
    plans: Sequence[gpu_choice.ClassPlan],
    classes: Mapping[str, gpu_choice.ClassInput],
    run_id: str,
    as_of: date,
    deadline_slack: float,
) -> list[dict[str, Any]]:
    """`gpu_plan` rows, one per class (columns named: sql/schema/026_gpu_plan.sql, 027_gpu_plan_speedup.sql)."""
    rows = []
    for p in plans:
        cls = classes[p.job_class]
        cur, rec = p.current, p.recommended
        rows.append(
            {
                "run_id": run_id,
                "as_of": as_of,
                "job_class": p.job_class,
                "team": p.team,
                "phase": p.phase,
                "runs": p.runs,
                "runs_per_month": round(cls.runs_per_month, 4),
                "current_instance_type": cls.current_instance_type,
                "current_instance_count": cls.current_instance_count,
                "current_gpus": None if cur is None else cur.gpus,
                "recommended_instance_type": None if rec is None else rec.candidate.instance_type,
                "recommended_instance_count": None if rec is None else rec.instance_count,
                "recommended_gpus": None if rec is None else rec.gpus,
                "recommended_region": None if rec is None else rec.candidate.region,
                "memory_required_gib": p.memory.total_gib,
                "memory_basis": p.memory.basis,
                "scaling_bound": p.scaling.bound,
                "scaling_alpha": p.scaling.alpha,
                "scaling_basis": p.scaling.basis,
                "hours_per_run_current": None if cur is None else cur.hours_per_run,
                "hours_per_run_recommended": None if rec is None else rec.hours_per_run,
                "cost_per_run_current_usd": None if cur is None else _money(cur.cost_per_run_usd),
                "cost_per_run_recommended_usd": None if rec is None else _money(rec.cost_per_run_usd),
                "monthly_savings_usd": _money(p.monthly_savings_usd),
                "kgco2e_per_run_current": None if cur is None else cur.kgco2e_per_run,
                "kgco2e_per_run_recommended": None if rec is None else rec.kgco2e_per_run,
                "greener_option": None if p.greener is None else p.greener.label,
                "purchase": p.purchase,
                "deadline_slack": deadline_slack,
                "reason": p.reason,
                "frontier": json.dumps([_option(o) for o in p.frontier]),
                "speedup": None if p.speedup is None else p.speedup.value,
                "speedup_low": None if p.speedup is None else p.speedup.low,
                "speedup_high": None if p.speedup is None else p.speedup.high,
                "speedup_source": None if p.speedup is None else p.speedup.source,
                "speedup_note": None if p.speedup is None else p.speedup.note,
                "break_even_speedup": p.break_even_speedup,
                "monthly_savings_low_usd": _money(p.monthly_savings_low_usd),
                "monthly_savings_high_usd": _money(p.monthly_savings_high_usd),
                "benchmark_first": p.benchmark_first,
                "counted": p.counted,
                "gpu_window_min": None if p.gpu_window is None else p.gpu_window[0],
                "gpu_window_max": None if p.gpu_window is None else p.gpu_window[1],
                "data_transfer_gib": None if p.data_transfer is None else p.data_transfer.gib,
                "data_transfer_usd": None if p.data_transfer is None else _money(p.data_transfer.usd),
                "data_transfer_note": None if p.data_transfer is None else p.data_transfer.note,
            }
        )
    return rows


def recommendations(
    plans: Sequence[gpu_choice.ClassPlan],
    classes: Mapping[str, gpu_choice.ClassInput],
    deadline_slack: float,
    as_of: date | None = None,
) -> list[Recommendation]:
    """A `gpu_choice` recommendation for each class the plan moves at a saving."""
    out = []
    for p in plans:
        cur, rec = p.current, p.recommended
        if cur is None or rec is None or p.monthly_savings_usd <= 0:
            continue
        per_month = classes[p.job_class].runs_per_month
        current = cur.cost_per_run_usd * per_month
        out.append(
            Recommendation(
                kind="gpu_choice",
                scope=p.job_class,
                action=(
                    ("Benchmark first: " if p.benchmark_first else "")
                    + f"Run {p.job_class} on {rec.instance_count} x {rec.candidate.instance_type} "
                    f"({rec.gpus} x {rec.candidate.gpu_model}) instead of {cur.instance_count} x "
                    f"{cur.candidate.instance_type}: {rec.hours_per_run / cur.hours_per_run:.2f} x the hours, "
                    f"${rec.cost_per_run_usd:,.2f} a run instead of ${cur.cost_per_run_usd:,.2f}"
                ),
                recommended_quantity=float(rec.instance_count),
                estimated_monthly_cost=_money(rec.cost_per_run_usd * per_month),
                current_monthly_cost=_money(current),
                estimated_monthly_savings_amount=_money(p.monthly_savings_usd),
                estimated_savings_percentage=100 * p.monthly_savings_usd / current if current else None,
                risk=(
                    f"hours scaled by a {p.scaling.basis} {p.scaling.bound}-bound model"
                    + (
                        ""
                        if p.speedup is None
                        else f" and a {p.speedup.source} speed-up of {p.speedup.value:.2f} "
                        f"({p.speedup.low:.2f}-{p.speedup.high:.2f}; break-even {p.break_even_speedup:.2f})"
                    )
                    + "; a slower run than modelled delays the class's results"
                    + (
                        "; the saving changes sign within the speed-up's range: benchmark before moving"
                        if p.benchmark_first
                        else ""
                    )
                ),
                assumptions=json.dumps(
                    {
                        "deadline_slack": deadline_slack,
                        "prices": "on-demand list prices of the catalog, each type in its reference region",
                        # How old those prices are on the plan's day (the oldest price row's date).
                        "prices_as_of": None if as_of is None else gpus.price_age(as_of).headline(),
                        "runs_per_month": round(per_month, 4),
                        "memory": {"basis": p.memory.basis, "note": p.memory.note},
                        "scaling": {
                            "bound": p.scaling.bound,
                            "alpha": p.scaling.alpha,
                            "note": p.scaling.note,
                        },
                        "purchase": p.purchase,
                        "speedup": None
                        if p.speedup is None
                        else {**p.speedup.to_json(), "note": p.speedup.note},
                        "break_even_speedup": p.break_even_speedup,
                        "benchmark_first": p.benchmark_first,
                        "data_transfer": None if p.data_transfer is None else p.data_transfer.to_json(),
                    }
                ),
                detail=json.dumps({**p.to_json(), "frontier": [_option(o) for o in p.frontier]}),
            )
        )
    return out


def recommend_gpus(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    as_of: date,
    *,
    deadline_slack: float = gpu_choice.DEFAULT_DEADLINE_SLACK,
    team_budgets: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Plan every workload class of the window's job runs; store the plan and its recommendations."""
    runs = read_job_runs(con, as_of)
    formed, skipped = gpu_choice.class_inputs(runs) if len(runs) else ([], [])
    # GPU utilisation measured from telemetry (measure_gpus) replaces the assumed 1 in the carbon estimate.
    end = datetime.combine(as_of + timedelta(days=1), datetime.min.time())
    measured = gpu_usage.class_utilisation(con, end - timedelta(days=PLAN_WINDOW_DAYS), end)
    formed = [replace(c, utilisation=measured[c.job_class]) if c.job_class in measured else c for c in formed]
    # The checkpoints a cross-region move copies along (storage inventory), where the runs have any.
    formed = class_data(con, formed)
    plans = gpu_choice.plan_classes(formed, deadline_slack=deadline_slack, team_budgets=team_budgets)
    classes = {c.job_class: c for c in formed}
    recs = recommendations(plans, classes, deadline_slack, as_of)
    with transaction(con):
        con.execute("delete from gpu_plan where run_id = ?", [run_id])
        insert_rows(con, "gpu_plan", plan_rows(plans, classes, run_id, as_of, deadline_slack))
        store_recommendations(con, run_id, as_of, GPU_KINDS, recs)
    return {
        "classes": len(plans),
        "moves": len(recs),
        # Counted moves only: a benchmark-first move is listed, its saving not added.
        "estimated_monthly_savings_amount": round(sum(p.monthly_savings_usd for p in plans if p.counted), 2),
        "benchmark_first": sum(p.benchmark_first for p in plans),
        "deadline_slack": deadline_slack,
        "skipped": skipped,
    }
