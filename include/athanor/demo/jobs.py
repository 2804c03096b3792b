"""The demo's training jobs: every job simulated once (its run segments and restarts), then
the job log as a scheduler would export it at the end of any day.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from athanor.demo.config import AZS, CLASS_NAMES, DEBUG, PRETRAIN, SWEEP, DemoConfig, ModelSpec, TeamSpec
from athanor.demo.stable import epoch
from athanor.ingest.jobs import GENERIC_COLUMNS
from athanor.model.performance import BYTES_PER_PARAM_MIXED_ADAM, GIB, memory_from_params
from athanor.reference import HOURS_PER_MONTH
from athanor.reference import gpus as catalog

# The job log is written in the generic schema the job-log reader documents.
JOB_COLUMNS = GENERIC_COLUMNS
# What each kind of demo job is for (the job log's phase column).
PHASE_OF_CLASS = ("explore", "tune", "production")  # debug, sweep, pre-training
# The simulated A10G's dense FP16 speed. The catalog has no sourced figure for it (see
# reference/data/README.md), so the plan cannot use this one: it only drives the simulation.
SIMULATED_TFLOPS = {"A10G": 70.0}


@dataclass
class Fleet:
    """The simulated truth: every job with its run segments, independent of any as_of."""

    jobs: pd.DataFrame  # one row per job; internal columns beyond JOB_COLUMNS
    segments: pd.DataFrame  # one row per run attempt: job, seg, start_s, end_s
    restarts: dict[int, list[int]] = field(default_factory=dict)  # job -> restart times (s)


def _lognormal_s(rng: np.random.Generator, median_h: float, sigma: float, max_h: float) -> int:
    hours = min(median_h * math.exp(sigma * rng.standard_normal()), max_h)
    return max(60, int(hours * 3600))


def simulate(cfg: DemoConfig) -> Fleet:
    """The fleet `cfg` describes, as a copy the caller may change.

    One `athanor demo` asks for it once per export it writes (the bills and job log, the
    storage inventory, the telemetry), and it is the same fleet each time: simulated once per
    process and config (about 1 s for the default demo), then copied (about 1 ms).
    """
    fleet = _simulated(cfg)
    restarts = {job: list(times) for job, times in fleet.restarts.items()}
    return Fleet(fleet.jobs.copy(), fleet.segments.copy(), restarts)


@functools.lru_cache(maxsize=2)
def _simulated(cfg: DemoConfig) -> Fleet:
    interruptions = {(region, itype): f for region, itype, f in cfg.interruptions_per_month}
    window_start = epoch(cfg.window_start)
    rows: list[dict[str, object]] = []
    segments: list[tuple[int, int, int, int]] = []
    restarts: dict[int, list[int]] = {}
    for team_index, team in enumerate(cfg.teams):
        rng = np.random.default_rng([cfg.seed, team_index])
        submits: list[int] = []
        for day in range(cfg.days):
            day_start = window_start + day * 86400
            weekday = (cfg.window_start + timedelta(days=day)).weekday()
            rate = team.jobs_per_weekday * (cfg.weekend_factor if weekday >= 5 else 1.0)
            rate *= 1.0 + cfg.growth_over_window * day / max(cfg.days - 1, 1)
            for _ in range(rng.poisson(rate)):
                # Working hours (around 15:00 UTC) for most submissions, the rest at any time.
                hour = rng.normal(15.0, 3.5) if rng.random() < 0.7 else rng.uniform(0, 24)
                submits.append(day_start + int(min(max(hour, 0.0), 23.999) * 3600))
        submits.sort()
        for number, submit in enumerate(submits, start=1):
            job, runs, restart_times = _simulate_job(cfg, team, rng, number, submit, interruptions)
            job.update(workload(cfg, team, team_index, number, job))
            index = len(rows)
            segments.extend((index, seg_no, start, end) for seg_no, (start, end) in enumerate(runs))
            restarts[index] = restart_times
            rows.append(job)
    jobs = pd.DataFrame(rows)
    segs = pd.DataFrame(segments, columns=["job", "seg", "start_s", "end_s"])
    return Fleet(jobs, segs, restarts)


def _simulate_job(
    cfg: DemoConfig,
    team: TeamSpec,
    rng: np.random.Generator,
    number: int,
    submit: int,
    interruptions: dict[tuple[str, str], float],
) -> tuple[dict[str, object], list[tuple[int, int]], list[int]]:
    """One job: its log record, its run segments (start, end) and its restart times."""
    cls = int(rng.choice(3, p=np.array(team.class_mix) / sum(team.class_mix)))
    names, weights = zip(*team.types[cls], strict=True)
    instance_type = names[int(rng.choice(len(names), p=np.array(weights) / sum(weights)))]
    spec = cfg.instance(instance_type)
    if cls == PRETRAIN:
        model = team.pretrain_models[int(rng.integers(len(team.pretrain_models)))]
        count = int(rng.integers(team.pretrain_instances[0], team.pretrain_instances[1] + 1))
    else:
        model = team.models[int(rng.integers(len(team.models)))]
        count = 1 if cls == DEBUG else int(team.sweep_instances[int(rng.integers(len(team.sweep_instances)))])
    region = "us-west-2" if cls != PRETRAIN and rng.random() < team.west_share else "us-east-1"
    az = AZS[region][int(rng.integers(len(AZS[region])))]

    if rng.random() < team.spot_share[cls]:
        pricing = "spot"
    elif rng.random() < team.committed_share:
        ri_pool = (
            team.payer_account_id == cfg.ri_payer_account_id
            and instance_type == cfg.ri_instance_type
            and region == cfg.ri_region
        )
        sp_pool = team.payer_account_id == cfg.sp_payer_account_id
        pricing = "reserved" if ri_pool else "savings_plan" if sp_pool else "on_demand"
    else:
        pricing = "on_demand"

    interval_s: float | None = None
    ckpt_s: float | None = None
    if cls != DEBUG and rng.random() < (0.85 if cls == SWEEP else 0.95):
        interval_s = float(rng.choice([900, 1800, 3600]) if cls == SWEEP else rng.choice([1800, 3600]))
        ckpt_s = round(model.checkpoint_time_s * math.exp(0.25 * rng.standard_normal()), 1)

    work_s = _lognormal_s(rng, cfg.median_work_h[cls], cfg.sigma_work[cls], cfg.max_work_h[cls])
    if interval_s and ckpt_s:
        work_s = int(work_s * (1.0 + ckpt_s / interval_s))  # time spent writing checkpoints
    queue_s = int(rng.exponential((120.0, 600.0, 2700.0)[cls]))
    outcome = rng.random()
    state = "completed"
    run_s = work_s
    if outcome < cfg.fail_share[cls]:
        state = "failed"
        run_s = max(30, int(work_s * rng.beta(0.7, 2.0)))  # most crashes come early
    elif outcome < cfg.fail_share[cls] + cfg.cancel_share[cls]:
        state = "cancelled"
        run_s = max(30, int(work_s * rng.uniform(0.05, 0.9)))

    job: dict[str, object] = {
        "job_id": f"{team.name}-{model.model}-{number:04d}",
        "submit_s": submit,
        "instance_type": instance_type,
        "instance_count": count,
        "gpus_per_instance": spec.gpu_count,
        "pricing_model": pricing,
        "team": team.name,
        "project": model.project,
        "model": model.model,
        "checkpoint_interval_s": interval_s,
        "checkpoint_time_s": ckpt_s,
        "job_class": CLASS_NAMES[cls],
        "region": region,
        "availability_zone": az,
        "payer_account_id": team.payer_account_id,
        "usage_account_id": team.usage_account_id,
    }
    if rng.random() < cfg.queue_cancel_share:
        job.update(start_s=None, end_s=submit + 60 + int(queue_s * rng.uniform(0.2, 1.0)))
        job.update(final_state="cancelled")
        return job, [], []

    start = submit + queue_s
    segs: list[tuple[int, int]] = []
    restart_times: list[int] = []
    if pricing != "spot":
        segs.append((start, start + run_s))
        end = start + run_s
    else:
        monthly = interruptions.get((region, instance_type), 0.1)
        per_second = cfg.spot_interruption_scale * count * -math.log(1.0 - monthly) / HOURS_PER_MONTH / 3600.0
        remaining, t = run_s, start
        while True:
            to_preemption = int(rng.exponential(1.0 / per_second))
            if to_preemption >= remaining:
                segs.append((t, t + remaining))
                t += remaining
                break
            to_preemption = max(to_preemption, 1)
            segs.append((t, t + to_preemption))
            t += to_preemption
            # Progress since the last checkpoint is lost; without checkpoints all of it is.
            kept = (to_preemption // int(interval_s)) * int(interval_s) if interval_s else 0
            remaining -= kept
            if rng.random() < cfg.spot_give_up_share[cls] or len(restart_times) >= cfg.max_restarts:
                state = "preempted"
                break
            t += int(rng.uniform(300, 2700))  # waiting for spot capacity again
            restart_times.append(t)
        end = t
    job.update(start_s=start, end_s=end, final_state=state)
    return job, segs, restart_times


def _model_spec(team: TeamSpec, model: object, project: object) -> ModelSpec:
    return next(m for m in (*team.models, *team.pretrain_models) if (m.model, m.project) == (model, project))


def workload(
    cfg: DemoConfig, team: TeamSpec, team_index: int, number: int, job: dict[str, object]
) -> dict[str, object]:
    """The job log's optional workload columns for one job, from its own random stream (the rest
    of the simulation draws exactly as before).

    samples/s = samples_per_speed x GPU speed x GPUs^alpha (speed: dense FP16 TFLOPS, or memory
    bandwidth for memory-bound models), +-4 %. Peak GPU memory per GPU: the training state at 16
    bytes per parameter, replicated when it fits on one GPU (plain data parallel) else sharded
    over all GPUs (FSDP), plus activations, +-2 %, at most 95 % of the card.
    """
    spec = _model_spec(team, job["model"], job["project"])
    rng = np.random.default_rng([cfg.seed, team_index, number, 16])
    inst = cfg.instance(str(job["instance_type"]))
    gpu = catalog.gpu(inst.gpu_model)
    gpus = int(job["instance_count"]) * inst.gpu_count  # type: ignore[call-overload]
    phase = PHASE_OF_CLASS[CLASS_NAMES.index(str(job["job_class"]))]
    out: dict[str, object] = {
        "phase": phase,
        "model_params": None,
        "peak_gpu_memory_gib": None,
        "samples_per_second": None,
    }
    if spec.records in ("all", "params"):
        out["model_params"] = int(spec.params)
    if spec.records != "all" or gpu is None:
        return out
    card_gib = catalog.gpu_instance(inst.instance_type).gpu_memory_gib  # type: ignore[union-attr]
    state_gib = spec.params * BYTES_PER_PARAM_MIXED_ADAM / GIB
    sharded = memory_from_params(spec.params) > 0.9 * card_gib
    peak = (state_gib / gpus if sharded else state_gib) + spec.activation_gib
    peak = min(peak * (1 + 0.02 * rng.standard_normal()), 0.95 * card_gib)
    speed = gpu.memory_bandwidth_gbps if spec.memory_bound else gpu.fp16_dense_tflops
    speed = speed or SIMULATED_TFLOPS[inst.gpu_model]
    sps = spec.samples_per_speed * speed * gpus**spec.alpha * math.exp(0.04 * rng.standard_normal())
    out.update(peak_gpu_memory_gib=round(peak, 1), samples_per_second=round(sps, 3))
    return out


def cutoff_of(cfg: DemoConfig, as_of: date | None) -> int:
    day = cfg.end_date if as_of is None else as_of
    if day > cfg.end_date or day < cfg.window_start:
        raise ValueError(f"as_of {day} is outside the demo window {cfg.window_start}..{cfg.end_date}")
    return epoch(day + timedelta(days=1))


def jobs_as_of(cfg: DemoConfig, fleet: Fleet, cutoff: int) -> pd.DataFrame:
    """The job-run log as a scheduler would export it at `cutoff` (canonical job-run schema)."""
    jobs = fleet.jobs
    start = jobs["start_s"]
    started = start.notna() & (start < cutoff)
    queue_cancelled = start.isna() & (jobs["end_s"] < cutoff)
    visible = (jobs["submit_s"] < cutoff) & (started | queue_cancelled)
    view = jobs[visible].copy()
    running = view["start_s"].notna() & (view["end_s"] > cutoff)
    view["state"] = np.where(running, "running", view["final_state"])
    view["end_s"] = view["end_s"].where(~running)
    view["restart_count"] = [sum(1 for t in fleet.restarts[i] if t < cutoff) for i in view.index]

    def ts(seconds: pd.Series) -> pd.Series:
        return pd.to_datetime(seconds, unit="s", utc=True).astype("datetime64[s, UTC]")

    out = pd.DataFrame(
        {
            "job_id": view["job_id"].astype("string"),
            "submit_time": ts(view["submit_s"]),
            "start_time": ts(view["start_s"]),
            "end_time": ts(view["end_s"]),
            "state": view["state"].astype("string"),
            "instance_type": view["instance_type"].astype("string"),
            "instance_count": view["instance_count"].astype("int64"),
            "gpus_per_instance": view["gpus_per_instance"].astype("int64"),
            "pricing_model": view["pricing_model"].astype("string"),
            "team": view["team"].astype("string"),
            "project": view["project"].astype("string"),
            "model": view["model"].astype("string"),
            "checkpoint_interval_s": view["checkpoint_interval_s"].astype("float64"),
            "checkpoint_time_s": view["checkpoint_time_s"].astype("float64"),
            "restart_count": view["restart_count"].astype("int64"),
            "model_params": view["model_params"].astype("Int64"),
            # A job that never started has no measurements.
            "peak_gpu_memory_gib": view["peak_gpu_memory_gib"]
            .astype("float64")
            .where(view["start_s"].notna()),
            "samples_per_second": view["samples_per_second"].astype("float64").where(view["start_s"].notna()),
            "phase": view["phase"].astype("string"),
        }
    )
    return out.sort_values(["submit_time", "job_id"], kind="stable").reset_index(drop=True)


def generate_jobs(cfg: DemoConfig | None = None, as_of: date | None = None) -> pd.DataFrame:
    """The demo job-run log in the canonical job-run schema, as exported at the end of `as_of`.

    Timestamps are pandas datetime64[s, UTC] (NaT when empty); checkpoint columns NaN when unknown.
    """
    cfg = cfg or DemoConfig()
    return jobs_as_of(cfg, simulate(cfg), cutoff_of(cfg, as_of))


def write_jobs_csv(jobs: pd.DataFrame, path: Path | str) -> int:
    """Write jobs in the generic job-run CSV format (ISO 8601 UTC, empty for missing). Returns rows."""
    out = pd.DataFrame(index=jobs.index)
    for name in JOB_COLUMNS:
        values = jobs[name]
        if name.endswith("_time"):
            out[name] = values.dt.strftime("%Y-%m-%dT%H:%M:%SZ").fillna("")
        elif name in ("checkpoint_interval_s", "checkpoint_time_s"):
            out[name] = [("" if pd.isna(v) else format(float(v), "g")) for v in values]
        elif name in ("peak_gpu_memory_gib", "samples_per_second"):
            out[name] = [("" if pd.isna(v) else format(float(v), ".10g")) for v in values]
        else:
            out[name] = values.astype("string").fillna("")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(path, index=False, lineterminator="\n")
    return len(out)
