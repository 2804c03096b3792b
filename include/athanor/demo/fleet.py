"""Demo fleet: 90 days of GPU training jobs and the cloud bills they produce.

Everything is a deterministic function of a frozen `DemoConfig` (seed 7 by default):
the same config and `as_of` give byte-identical files.

The story (all figures are `DemoConfig` fields):

- Four teams train on p4d.24xlarge, p4de.24xlarge, p5.48xlarge, g5.12xlarge and
  g6.48xlarge in us-east-1 (speech and recsys run a few jobs in us-west-2), at the
  on-demand and typical spot prices of the reference catalogue
  (`athanor.reference.instances`); spot moves +-5 % a day.
- Jobs: per team a mixture of short debugging runs (median 15 min), sweeps (median
  3 h) and a few multi-day pre-training runs (median 60 h, up to 20 days), lognormal
  bodies; submissions follow a weekly cycle (weekends at 45 %) with a 25 % rise over
  the window. Outcomes: completed, failed, cancelled (a few in the queue), preempted
  (spot, from AWS Spot Advisor interruption buckets: lambda = -ln(1 - f)/730 per
  instance-hour, times `spot_interruption_scale` = 6, so a job on N instances sees
  N*lambda), and running at the end.
- Billing: hourly line items per instance (a new `i-...` id per instance launch,
  fractional hours at the edges), two payer accounts:
  `111111111111` (vision + speech) delivered as FOCUS 1.2 CSV.gz, holding 2 p4d.24xlarge
  reserved instances (1 year, No Upfront, 0.60 x on-demand, expiring 61 days after
  end_date); `222222222222` (llm + recsys) delivered as AWS CUR 2.0 Parquet, holding a
  $40/h Compute Savings Plan (1 year, No Upfront, rates 0.64 x on-demand, expiring 152
  days after end_date). Commitments are applied hour by hour the way AWS does: to
  eligible non-spot usage, jobs labelled reserved/savings_plan first.
- Also S3 Standard storage of each team's checkpoint bucket (`demo-<team>-checkpoints`,
  0.023 $/GB-month, growing over the window), EBS gp3 (0.08), data transfer out (0.09
  $/GB) and to us-west-2 (0.02), and per payer and month one Tax line (6.25 % of the
  month's billed cost, to the cent) and one Credit (-1,000 $). Instances carry tags team,
  project, model and job_id; job_id is missing on about 10 % of instances.

With the defaults: about 3,100 jobs, 1.5 % of them over 48 h holding about 60 % of the
GPU-hours (close to the Philly trace), 7 still running at the end, a few preempted;
about 44,000 line items, RI utilisation about 60 % and Savings Plan utilisation about 75 %.

Time: jobs are submitted during the `days` days ending with `end_date`; the bills
cover the whole calendar months those days touch. A delivery "as of" day D contains
usage up to the end of day D (cutoff D+1 00:00 UTC): the month containing D is open
(no invoice id; the RI fee is billed for the whole month on day 1, as AWS does), earlier
months are final. The commitments exist before the first job: hours of the first month
before the window are unused commitment. Money is integer micro-dollars throughout (see
`athanor.demo.lines`).
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from athanor.demo.bills import write_cur2, write_focus
from athanor.demo.lines import LINE_SCHEMA, MICRO, QTY, FileTotals
from athanor.ingest.jobs import GENERIC_COLUMNS
from athanor.reference import HOURS_PER_MONTH, InstanceType, instance, spot_advice
from athanor.reference.storage import DEFAULT_PRICES as STORAGE_PRICES

# The job log is written in the generic schema the job-log reader documents.
JOB_COLUMNS = GENERIC_COLUMNS

DEBUG, SWEEP, PRETRAIN = 0, 1, 2
_CLASS_NAMES = ("debug", "sweep", "pretrain")


@dataclass(frozen=True)
class ModelSpec:
    model: str
    project: str
    checkpoint_time_s: float  # typical time to write one checkpoint


@dataclass(frozen=True)
class TeamSpec:
    name: str
    payer_account_id: str
    usage_account_id: str
    jobs_per_weekday: float
    class_mix: tuple[float, float, float]  # share of debug, sweep, pre-training jobs
    types: tuple[tuple[tuple[str, float], ...], ...]  # per class: (instance type, weight)
    pretrain_instances: tuple[int, int]  # inclusive range of instances per pre-training job
    sweep_instances: tuple[int, ...]  # choices for sweeps, uniformly
    models: tuple[ModelSpec, ...]  # debug and sweep jobs
    pretrain_models: tuple[ModelSpec, ...]
    spot_share: tuple[float, float, float]  # per class
    committed_share: float  # share of other jobs the scheduler puts on committed capacity
    west_share: float  # share of debug/sweep jobs in us-west-2
    bucket_gb: tuple[int, int]  # checkpoint bucket size at the first month start and at end_date
    ebs_gb: int
    egress_gb_per_day: float


# The fleet's instance types; GPUs, normalisation factors, on-demand and typical spot prices
# come from the reference catalogue (the demo moves spot +-spot_daily_jitter per day).
DEMO_INSTANCE_TYPES = ("p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "g5.12xlarge", "g6.48xlarge")
DEFAULT_INSTANCES = tuple(instance(t) for t in DEMO_INSTANCE_TYPES)

# Monthly fraction of instances interrupted, per region and type: the Spot Advisor snapshot's
# bucket for each, read as the bucket's middle (see athanor.reference.spot_advisor).
DEFAULT_INTERRUPTIONS = tuple(
    (region, t, spot_advice(region)[t].monthly_interruption_fraction)
    for region in ("us-east-1", "us-west-2")
    for t in DEMO_INSTANCE_TYPES
)

DEFAULT_TEAMS = (
    TeamSpec(
        name="vision",
        payer_account_id="111111111111",
        usage_account_id="100000000001",
        jobs_per_weekday=10.0,
        class_mix=(0.62, 0.35, 0.03),
        types=(
            (("g5.12xlarge", 0.5), ("g6.48xlarge", 0.3), ("p4d.24xlarge", 0.2)),
            (("p4d.24xlarge", 0.6), ("g6.48xlarge", 0.4)),
            (("p4d.24xlarge", 0.7), ("p4de.24xlarge", 0.3)),
        ),
        pretrain_instances=(4, 8),
        sweep_instances=(1, 1, 1, 2),
        models=(
            ModelSpec("vit-l", "foundation", 25.0),
            ModelSpec("dino-v2", "foundation", 20.0),
            ModelSpec("sam-h", "segmentation", 30.0),
            ModelSpec("yolo-x", "detection", 6.0),
        ),
        pretrain_models=(
            ModelSpec("vit-h", "foundation", 60.0),
            ModelSpec("siglip-so400m", "foundation", 45.0),
        ),
        spot_share=(0.15, 0.45, 0.15),
        committed_share=0.6,
        west_share=0.0,
        bucket_gb=(90_000, 140_000),
        ebs_gb=24_000,
        egress_gb_per_day=150.0,
    ),
    TeamSpec(
        name="llm",
        payer_account_id="222222222222",
        usage_account_id="200000000001",
        jobs_per_weekday=11.0,
        class_mix=(0.56, 0.41, 0.03),
        types=(
            (("p4de.24xlarge", 0.4), ("p4d.24xlarge", 0.3), ("p5.48xlarge", 0.3)),
            (("p5.48xlarge", 0.4), ("p4de.24xlarge", 0.4), ("p4d.24xlarge", 0.2)),
            (("p5.48xlarge", 0.8), ("p4de.24xlarge", 0.2)),
        ),
        pretrain_instances=(4, 8),
        sweep_instances=(1, 1, 2, 4),
        models=(
            ModelSpec("llama8b", "sft", 45.0),
            ModelSpec("mistral7b", "sft", 40.0),
            ModelSpec("llama70b", "sft", 240.0),
            ModelSpec("qwen14b", "eval", 70.0),
        ),
        pretrain_models=(
            ModelSpec("llama70b", "pretrain-v3", 300.0),
            ModelSpec("moe-8x22b", "pretrain-v3", 420.0),
        ),
        spot_share=(0.2, 0.35, 0.1),
        committed_share=0.6,
        west_share=0.0,
        bucket_gb=(260_000, 420_000),
        ebs_gb=40_000,
        egress_gb_per_day=380.0,
    ),
    TeamSpec(
        name="speech",
        payer_account_id="111111111111",
        usage_account_id="100000000002",
        jobs_per_weekday=7.0,
        class_mix=(0.62, 0.355, 0.025),
        types=(
            (("g5.12xlarge", 0.6), ("g6.48xlarge", 0.4)),
            (("p4d.24xlarge", 0.5), ("g6.48xlarge", 0.3), ("g5.12xlarge", 0.2)),
            (("p4d.24xlarge", 1.0),),
        ),
        pretrain_instances=(2, 4),
        sweep_instances=(1, 1, 1, 2),
        models=(
            ModelSpec("whisper-l", "asr", 18.0),
            ModelSpec("conformer-xl", "asr", 8.0),
            ModelSpec("vits-tts", "tts", 4.0),
        ),
        pretrain_models=(ModelSpec("whisper-xl", "asr", 35.0),),
        spot_share=(0.2, 0.5, 0.25),
        committed_share=0.5,
        west_share=0.12,
        bucket_gb=(40_000, 65_000),
        ebs_gb=12_000,
        egress_gb_per_day=80.0,
    ),
    TeamSpec(
        name="recsys",
        payer_account_id="222222222222",
        usage_account_id="200000000002",
        jobs_per_weekday=9.0,
        class_mix=(0.65, 0.33, 0.02),
        types=(
            (("g5.12xlarge", 0.7), ("g6.48xlarge", 0.3)),
            (("g6.48xlarge", 0.5), ("g5.12xlarge", 0.3), ("p4d.24xlarge", 0.2)),
            (("p4d.24xlarge", 1.0),),
        ),
        pretrain_instances=(2, 4),
        sweep_instances=(1, 1, 2),
        models=(
            ModelSpec("dlrm-v2", "ranking", 15.0),
            ModelSpec("two-tower", "retrieval", 5.0),
            ModelSpec("dcn-v2", "ranking", 6.0),
        ),
        pretrain_models=(ModelSpec("hstu-1b", "ranking", 50.0),),
        spot_share=(0.3, 0.55, 0.2),
        committed_share=0.5,
        west_share=0.1,
        bucket_gb=(30_000, 50_000),
        ebs_gb=16_000,
        egress_gb_per_day=250.0,
    ),
)


@dataclass(frozen=True)
class DemoConfig:
    """Every knob of the demo fleet. Money in dollars as Decimal, shares as fractions."""

    seed: int = 7
    end_date: date = date(2026, 11, 30)  # last day with submissions (inclusive)
    days: int = 90
    teams: tuple[TeamSpec, ...] = DEFAULT_TEAMS
    instances: tuple[InstanceType, ...] = DEFAULT_INSTANCES
    interruptions_per_month: tuple[tuple[str, str, float], ...] = DEFAULT_INTERRUPTIONS
    payer_names: tuple[tuple[str, str], ...] = (
        ("111111111111", "Demo Research (vision, speech)"),
        ("222222222222", "Demo Foundation Models (llm, recsys)"),
    )
    focus_payers: tuple[str, ...] = ("111111111111",)  # delivered as FOCUS; others as CUR 2.0
    weekend_factor: float = 0.45
    growth_over_window: float = 0.25
    spot_daily_jitter: float = 0.05
    median_work_h: tuple[float, float, float] = (0.25, 3.0, 60.0)  # debug, sweep, pre-training
    sigma_work: tuple[float, float, float] = (1.1, 0.9, 0.55)
    max_work_h: tuple[float, float, float] = (8.0, 120.0, 480.0)
    fail_share: tuple[float, float, float] = (0.16, 0.07, 0.05)
    cancel_share: tuple[float, float, float] = (0.10, 0.08, 0.05)
    queue_cancel_share: float = 0.01
    # Spot Advisor buckets are fleet-wide averages over all sizes; big GPU instances are
    # reclaimed far more often in practice. At the advisor's rates (scale 1) this fleet's
    # ~6,000 spot instance-hours would see one or two preemptions in 90 days.
    spot_interruption_scale: float = 6.0
    spot_give_up_share: tuple[float, float, float] = (0.7, 0.25, 0.1)  # after each preemption
    max_restarts: int = 6
    untagged_job_id_share: float = 0.10
    # Commitments held.
    ri_payer_account_id: str = "111111111111"
    ri_instance_type: str = "p4d.24xlarge"
    ri_region: str = "us-east-1"
    ri_count: int = 2
    ri_rate_fraction: Decimal = Decimal("0.60")  # 1-year No Upfront vs on-demand
    ri_expires_days_after_end: int = 61
    sp_payer_account_id: str = "222222222222"
    sp_commitment_per_h: Decimal = Decimal("40")
    sp_rate_fraction: Decimal = Decimal("0.64")  # Compute SP rate vs on-demand
    sp_expires_days_after_end: int = 152
    # Other spend (us-east-1 list prices; storage from the reference price list).
    s3_per_gb_month: Decimal = Decimal(str(STORAGE_PRICES.s3_standard_gb_month))
    ebs_gp3_per_gb_month: Decimal = Decimal(str(STORAGE_PRICES.ebs_gb_month["gp3"]))
    egress_per_gb: Decimal = Decimal("0.09")
    inter_region_per_gb: Decimal = Decimal("0.02")
    inter_region_gb_per_day: float = 200.0
    tax_rate: Decimal = Decimal("0.0625")
    credit_per_month: Decimal = Decimal("1000")

    @property
    def window_start(self) -> date:
        return self.end_date - timedelta(days=self.days - 1)

    def instance(self, instance_type: str) -> InstanceType:
        return next(spec for spec in self.instances if spec.instance_type == instance_type)

    def payer_name(self, payer: str) -> str:
        return dict(self.payer_names).get(payer, payer)


_REGION_NAMES = {"us-east-1": "US East (N. Virginia)", "us-west-2": "US West (Oregon)"}
_REGION_PREFIX = {"us-east-1": "USE1", "us-west-2": "USW2"}
_AZS = {
    "us-east-1": ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"),
    "us-west-2": ("us-west-2a", "us-west-2b"),
}


# ----------------------------------------------------------------------------- small helpers


def _epoch(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _month_start(day: date) -> date:
    return day.replace(day=1)


def _next_month(day: date) -> date:
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)


def _micro(amount: Decimal) -> int:
    return int((amount * MICRO).to_integral_value())


def _round_div(numerator: np.ndarray | int, denominator: int) -> np.ndarray | int:
    """Half-up rounded integer division of non-negative integers (exact money rounding)."""
    return (numerator * 2 + denominator) // (2 * denominator)


def _digest(*parts: object, size: int = 8) -> bytes:
    return hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=size).digest()


def _unit_hash(*parts: object) -> float:
    """A uniform number in [0, 1) from the parts (stable across runs and platforms)."""
    return int.from_bytes(_digest(*parts), "big") / 2.0**64


def _instance_id(*parts: object) -> str:
    return "i-0" + _digest(*parts).hex()[:16]


def _sku(*parts: object) -> str:
    return base64.b32encode(_digest("sku", *parts, size=10)).decode()[:16]


def _uuid(*parts: object) -> str:
    h = _digest(*parts, size=16).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _dollars(micro: int) -> str:
    return format(Decimal(micro).scaleb(-6).normalize(), "f")


# ----------------------------------------------------------------------------- jobs


@dataclass
class _Fleet:
    """The simulated truth: every job with its run segments, independent of any as_of."""

    jobs: pd.DataFrame  # one row per job; internal columns beyond JOB_COLUMNS
    segments: pd.DataFrame  # one row per run attempt: job, seg, start_s, end_s
    restarts: dict[int, list[int]] = field(default_factory=dict)  # job -> restart times (s)


def _lognormal_s(rng: np.random.Generator, median_h: float, sigma: float, max_h: float) -> int:
    hours = min(median_h * math.exp(sigma * rng.standard_normal()), max_h)
    return max(60, int(hours * 3600))


def _simulate(cfg: DemoConfig) -> _Fleet:
    interruptions = {(region, itype): f for region, itype, f in cfg.interruptions_per_month}
    window_start = _epoch(cfg.window_start)
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
            index = len(rows)
            segments.extend((index, seg_no, start, end) for seg_no, (start, end) in enumerate(runs))
            restarts[index] = restart_times
            rows.append(job)
    jobs = pd.DataFrame(rows)
    segs = pd.DataFrame(segments, columns=["job", "seg", "start_s", "end_s"])
    return _Fleet(jobs, segs, restarts)


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
    az = _AZS[region][int(rng.integers(len(_AZS[region])))]

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
        "job_class": _CLASS_NAMES[cls],
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


def _cutoff(cfg: DemoConfig, as_of: date | None) -> int:
    day = cfg.end_date if as_of is None else as_of
    if day > cfg.end_date or day < cfg.window_start:
        raise ValueError(f"as_of {day} is outside the demo window {cfg.window_start}..{cfg.end_date}")
    return _epoch(day + timedelta(days=1))


def _jobs_as_of(cfg: DemoConfig, fleet: _Fleet, cutoff: int) -> pd.DataFrame:
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
        }
    )
    return out.sort_values(["submit_time", "job_id"], kind="stable").reset_index(drop=True)


def generate_jobs(cfg: DemoConfig | None = None, as_of: date | None = None) -> pd.DataFrame:
    """The demo job-run log in the canonical job-run schema, as exported at the end of `as_of`.

    Timestamps are pandas datetime64[s, UTC] (NaT when empty); checkpoint columns NaN when unknown.
    """
    cfg = cfg or DemoConfig()
    return _jobs_as_of(cfg, _simulate(cfg), _cutoff(cfg, as_of))


def write_jobs_csv(jobs: pd.DataFrame, path: Path | str) -> int:
    """Write jobs in the generic job-run CSV format (ISO 8601 UTC, empty for missing). Returns rows."""
    out = pd.DataFrame(index=jobs.index)
    for name in JOB_COLUMNS:
        values = jobs[name]
        if name.endswith("_time"):
            out[name] = values.dt.strftime("%Y-%m-%dT%H:%M:%SZ").fillna("")
        elif name in ("checkpoint_interval_s", "checkpoint_time_s"):
            out[name] = [("" if pd.isna(v) else format(float(v), "g")) for v in values]
        else:
            out[name] = values.astype("string").fillna("")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(path, index=False, lineterminator="\n")
    return len(out)


# ----------------------------------------------------------------------------- billing

_LINE_ORDER = {
    "Usage": 0,
    "DiscountedUsage": 1,
    "SavingsPlanCoveredUsage": 2,
    "UnusedCommitment": 3,
    "RIFee": 4,
    "SavingsPlanRecurringFee": 5,
    "Tax": 6,
    "Credit": 7,
}


# invoice(period starts, payer or payers) -> invoice id per row, None while the month is open
_Invoice = Callable[[np.ndarray, "np.ndarray | str"], list["str | None"]]
_R = TypeVar("_R")


@dataclass(frozen=True)
class _Commitments:
    ri_arn: str
    ri_rate_micro: int  # per instance-hour
    ri_start: int
    ri_end: int
    sp_arn: str
    sp_commitment_micro: int  # per hour
    sp_start: int
    sp_end: int


def _commitments(cfg: DemoConfig) -> _Commitments:
    ri_end = cfg.end_date + timedelta(days=cfg.ri_expires_days_after_end)
    sp_end = cfg.end_date + timedelta(days=cfg.sp_expires_days_after_end)
    od = cfg.instance(cfg.ri_instance_type).on_demand_usd_per_h
    return _Commitments(
        ri_arn=f"arn:aws:ec2:{cfg.ri_region}:{cfg.ri_payer_account_id}:reserved-instances/"
        + _uuid(cfg.seed, "ri"),
        ri_rate_micro=_micro(od * cfg.ri_rate_fraction),
        ri_start=_epoch(ri_end - timedelta(days=365)),
        ri_end=_epoch(ri_end),
        sp_arn=f"arn:aws:savingsplans::{cfg.sp_payer_account_id}:savingsplan/" + _uuid(cfg.seed, "sp"),
        sp_commitment_micro=_micro(cfg.sp_commitment_per_h),
        sp_start=_epoch(sp_end - timedelta(days=365)),
        sp_end=_epoch(sp_end),
    )


def _months(cfg: DemoConfig, cutoff: int) -> list[tuple[date, int, int]]:
    """(first day, start, end) of every calendar month from the window's first month up to cutoff."""
    months = []
    day = _month_start(cfg.window_start)
    while _epoch(day) < cutoff:
        months.append((day, _epoch(day), _epoch(_next_month(day))))
        day = _next_month(day)
    return months


def _spot_rate_micro(cfg: DemoConfig, instance_type: str, region: str, day: int) -> int:
    """Spot price for a (type, region, day): the typical price +-jitter, to 0.0001 $/h."""
    base = _micro(cfg.instance(instance_type).spot_usd_per_h)
    u = _unit_hash(cfg.seed, "spot", instance_type, region, day)
    return int(round(base * (1.0 + cfg.spot_daily_jitter * (2.0 * u - 1.0)) / 100.0)) * 100


def _usage_lines(cfg: DemoConfig, fleet: _Fleet, cutoff: int) -> pd.DataFrame:
    """One row per instance per hour it ran before cutoff, with seconds and pricing inputs."""
    jobs, segs = fleet.jobs, fleet.segments
    counts = jobs["instance_count"].to_numpy()[segs["job"].to_numpy()]
    res = segs.loc[segs.index.repeat(counts)].reset_index(drop=True)
    res["k"] = res.groupby(["job", "seg"]).cumcount()
    res["end_s"] = np.minimum(res["end_s"].to_numpy(), cutoff)
    res = res[res["start_s"] < res["end_s"]].reset_index(drop=True)
    job_ids = jobs["job_id"].to_numpy()[res["job"].to_numpy()]
    res["resource_id"] = [
        _instance_id(cfg.seed, job, seg, k) for job, seg, k in zip(job_ids, res["seg"], res["k"], strict=True)
    ]
    # Some launches skip the job_id tag (a hand-started node, an old launch template).
    res["untagged"] = [
        _unit_hash(cfg.seed, "untagged", rid) < cfg.untagged_job_id_share for rid in res["resource_id"]
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
    od = {spec.instance_type: _micro(spec.on_demand_usd_per_h) for spec in cfg.instances}
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


def _apply_commitments(
    cfg: DemoConfig, lines: pd.DataFrame, com: _Commitments
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
        spec.instance_type: _micro(spec.on_demand_usd_per_h * cfg.sp_rate_fraction) for spec in cfg.instances
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
    cost = _round_div(cum_cov * r, 3600) - _round_div((cum_cov - covered) * r, 3600)
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
    full_cost = _round_div(sp["seconds"] * sp["sp_rate"], 3600)
    before = com.sp_commitment_micro - (full_cost.groupby(sp["hour_s"]).cumsum() - full_cost)
    partial_s = (np.maximum(before, 0) * 3600) // sp["sp_rate"]
    covered = np.where(before >= full_cost, sp["seconds"], np.minimum(partial_s, sp["seconds"])).astype(
        "int64"
    )
    cost = np.where(before >= full_cost, full_cost, _round_div(covered * sp["sp_rate"], 3600)).astype("int64")
    lines.loc[sp.index, "covered_s"] = covered
    lines.loc[sp.index, "covered_cost"] = cost
    lines.loc[sp.index[covered > 0], "commitment"] = com.sp_arn
    sp_used = (
        pd.DataFrame({"hour_s": sp["hour_s"], "used_s": covered, "used_micro": cost}).groupby("hour_s").sum()
    )
    return lines, pd.concat(
        {com.ri_arn: ri_used, com.sp_arn: sp_used}, names=["commitment", "hour_s"]
    ).reset_index()


class _Rows:
    """Collects canonical line-item columns group by group (missing columns become nulls)."""

    def __init__(self) -> None:
        self.groups: list[pa.Table] = []

    def add(self, n: int, **columns: object) -> None:
        if n == 0:
            return
        arrays = []
        for name, typ in zip(LINE_SCHEMA.names, LINE_SCHEMA.types, strict=True):
            value = columns.pop(name, None)
            if value is None:
                arrays.append(pa.nulls(n, typ))
            elif isinstance(value, (str, int, float)):
                arrays.append(
                    pa.array([value] * n, typ)
                    if not pa.types.is_timestamp(typ)
                    else pa.array([value] * n, pa.int64()).cast(typ)
                )
            elif pa.types.is_timestamp(typ):
                arrays.append(pa.array(np.asarray(value, dtype=np.int64)).cast(typ))
            else:
                arrays.append(pa.array(value, typ, from_pandas=True))
        if columns:
            raise KeyError(f"not canonical line-item columns: {sorted(columns)}")
        self.groups.append(pa.Table.from_arrays(arrays, schema=LINE_SCHEMA))

    def table(self) -> pa.Table:
        return pa.concat_tables(self.groups)


def _period_bounds(hour_s: np.ndarray | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Billing period (calendar month) start and end, in seconds, of each timestamp."""
    months = pd.to_datetime(np.asarray(hour_s), unit="s").to_numpy().astype("datetime64[M]")
    return months.astype("datetime64[s]").astype(np.int64), (months + 1).astype("datetime64[s]").astype(
        np.int64
    )


def billing_lines(cfg: DemoConfig | None = None, as_of: date | None = None) -> pa.Table:
    """The demo's canonical line items (`athanor.demo.lines.LINE_SCHEMA`; both payers, every month)
    as delivered at the end of `as_of`."""
    cfg = cfg or DemoConfig()
    return _billing_lines(cfg, _simulate(cfg), _cutoff(cfg, as_of))


def _billing_lines(cfg: DemoConfig, fleet: _Fleet, cutoff: int) -> pa.Table:
    com = _commitments(cfg)
    months = _months(cfg, cutoff)
    first_s = months[0][1]
    final_months = {start: end <= cutoff for _, start, end in months}
    usage, commit_use = _apply_commitments(cfg, _usage_lines(cfg, fleet, cutoff), com)
    rows = _Rows()
    payers = sorted({team.payer_account_id for team in cfg.teams})
    account_names = {team.usage_account_id: f"{team.name}-training" for team in cfg.teams}
    nf = {spec.instance_type: spec.normalization_factor for spec in cfg.instances}

    def invoice(period_start: np.ndarray, payer: np.ndarray | str) -> list[str | None]:
        payer_list = [payer] * len(period_start) if isinstance(payer, str) else list(payer)
        return [
            f"{datetime.fromtimestamp(int(s), UTC):%Y%m}{p[:4]}" if final_months[int(s)] else None
            for s, p in zip(period_start, payer_list, strict=True)
        ]

    # Instance hours: the uncovered part as Usage, the covered part as DiscountedUsage /
    # SavingsPlanCoveredUsage (a line the commitment only partly covers becomes two).
    for covered_part in (False, True):
        part = usage[usage["covered_s"] > 0] if covered_part else usage[usage["seconds"] > usage["covered_s"]]
        n = len(part)
        if n == 0:
            continue
        seconds = (part["covered_s"] if covered_part else part["seconds"] - part["covered_s"]).to_numpy()
        start = np.maximum(part["hour_s"], part["start_s"]).to_numpy()
        start = np.where(covered_part, start, start + part["covered_s"].to_numpy())  # uncovered rest follows
        end = start + seconds
        itype = part["instance_type"].to_numpy()
        region = part["region"].to_numpy()
        spot = part["spot"].to_numpy()
        od_rate = part["od_rate"].to_numpy()
        rate = part["rate"].to_numpy()
        list_cost = _round_div(seconds * od_rate, 3600)
        prefix = np.array([_REGION_PREFIX[r] for r in region], dtype=object)
        usage_type = prefix + np.where(spot, "-SpotUsage:", "-BoxUsage:") + itype
        is_ri = part["commitment"].to_numpy() == com.ri_arn
        p_start, p_end = _period_bounds(part["hour_s"])
        if covered_part:
            line_type = np.where(is_ri, "DiscountedUsage", "SavingsPlanCoveredUsage")
            effective = part["covered_cost"].to_numpy()
            billed = np.zeros(n, dtype=np.int64)
            c_rate = np.where(is_ri, com.ri_rate_micro, part["sp_rate"].to_numpy())
            description = [
                f"USD {_dollars(com.ri_rate_micro)} hourly fee per Linux/UNIX (Amazon VPC), {t} instance"
                if ri_line
                else f"Compute Savings Plan rate ${_dollars(int(r))} per hour for Linux/UNIX {t} in {g}"
                for t, g, r, ri_line in zip(itype, region, c_rate, is_ri, strict=True)
            ]
            commitment = dict(
                commitment_id=part["commitment"].to_numpy(),
                commitment_name=np.where(
                    is_ri,
                    f"{cfg.ri_count} x {cfg.ri_instance_type} RI, 1yr No Upfront",
                    f"Compute Savings Plan ${cfg.sp_commitment_per_h}/h, 1yr No Upfront",
                ),
                commitment_type=np.where(is_ri, "Reserved Instance", "Savings Plan"),
                commitment_category=np.where(is_ri, "Usage", "Spend"),
                commitment_status="Used",
                commitment_unit=np.where(is_ri, "Hours", "USD"),
                # RIs are counted in instance-hours, Savings Plans in dollars of commitment.
                commitment_quantity_e10=np.where(
                    is_ri, _round_div(seconds * QTY, 3600), effective * (QTY // MICRO)
                ),
                commitment_rate_micro=c_rate,
                commitment_start=np.where(is_ri, com.ri_start, com.sp_start),
                commitment_end=np.where(is_ri, com.ri_end, com.sp_end),
                pricing_category="Committed",
            )
        else:
            line_type = np.full(n, "Usage")
            effective = billed = _round_div(seconds * rate, 3600)
            description = [
                f"${_dollars(int(r))} per {'Spot' if s else 'On Demand'} Linux {t} Instance Hour"
                for t, r, s in zip(itype, rate, spot, strict=True)
            ]
            commitment = dict(pricing_category=np.where(spot, "Dynamic", "Standard"))
        payer = part["payer_account_id"].to_numpy()
        job_tag = part["job_id"].where(~part["untagged"].astype(bool), None).to_numpy()
        rows.add(
            n,
            payer_account_id=payer,
            payer_account_name=[cfg.payer_name(p) for p in payer],
            usage_account_id=part["usage_account_id"].to_numpy(),
            usage_account_name=[account_names[a] for a in part["usage_account_id"]],
            billing_period_start=p_start,
            billing_period_end=p_end,
            charge_start=start,
            charge_end=end,
            line_type=line_type,
            charge_category="Usage",
            charge_frequency="Usage-Based",
            product_code="AmazonEC2",
            service_name="Amazon Elastic Compute Cloud",
            service_category="Compute",
            service_subcategory="Virtual Machines",
            product_family="Compute Instance",
            region_id=region,
            region_name=[_REGION_NAMES[r] for r in region],
            availability_zone=part["availability_zone"].to_numpy(),
            resource_id=part["resource_id"].to_numpy(),
            resource_type="Instance",
            instance_type=itype,
            normalization_factor=[nf[t] for t in itype],
            usage_type=usage_type,
            operation=np.where(spot, "RunInstances:SV001", "RunInstances"),
            description=description,
            sku_id=[_sku(r, t, "spot" if s else "od") for r, t, s in zip(region, itype, spot, strict=True)],
            unit="Hrs",
            quantity_e10=_round_div(seconds * QTY, 3600),
            list_rate_micro=od_rate,
            rate_micro=rate,
            billed_micro=billed,
            effective_micro=effective,
            list_micro=list_cost,
            invoice_id=invoice(p_start, payer),
            tag_team=part["team"].to_numpy(),
            tag_project=part["project"].to_numpy(),
            tag_model=part["model"].to_numpy(),
            tag_job_id=job_tag,
            **commitment,
        )

    _commitment_lines(cfg, rows, com, commit_use, months, cutoff, invoice)
    _other_lines(cfg, rows, months, cutoff, first_s, invoice, account_names)
    table = rows.table()
    table = _tax_and_credit(cfg, rows, table, payers, months, cutoff, invoice)
    order = pa.array([_LINE_ORDER[t] for t in table.column("line_type").to_pylist()], pa.int8())
    table = table.append_column("_order", order)
    table = table.sort_by(
        [
            ("payer_account_id", "ascending"),
            ("charge_start", "ascending"),
            ("usage_account_id", "ascending"),
            ("_order", "ascending"),
            ("resource_id", "ascending"),
        ]
    )
    return table.drop_columns(["_order"])


def _commitment_lines(
    cfg: DemoConfig,
    rows: _Rows,
    com: _Commitments,
    use: pd.DataFrame,
    months: list[tuple[date, int, int]],
    cutoff: int,
    invoice: _Invoice,
) -> None:
    """Fees (Purchase) and unused commitment per hour (FOCUS Usage rows with status Unused)."""
    first_s = months[0][1]
    used = use.set_index(["commitment", "hour_s"])
    ri_name = f"{cfg.ri_count} x {cfg.ri_instance_type} RI, 1yr No Upfront"
    sp_name = f"Compute Savings Plan ${cfg.sp_commitment_per_h}/h, 1yr No Upfront"
    ri_prefix = _REGION_PREFIX[cfg.ri_region]
    r = com.ri_rate_micro
    common_ri = dict(
        payer_account_id=cfg.ri_payer_account_id,
        payer_account_name=cfg.payer_name(cfg.ri_payer_account_id),
        usage_account_id=cfg.ri_payer_account_id,
        usage_account_name=cfg.payer_name(cfg.ri_payer_account_id),
        product_code="AmazonEC2",
        service_name="Amazon Elastic Compute Cloud",
        service_category="Compute",
        service_subcategory="Virtual Machines",
        product_family="Compute Instance",
        region_id=cfg.ri_region,
        region_name=_REGION_NAMES[cfg.ri_region],
        resource_id=com.ri_arn,
        instance_type=cfg.ri_instance_type,
        normalization_factor=cfg.instance(cfg.ri_instance_type).normalization_factor,
        usage_type=f"{ri_prefix}-HeavyUsage:{cfg.ri_instance_type}",
        operation="RunInstances",
        sku_id=_sku(cfg.ri_region, cfg.ri_instance_type, "ri"),
        unit="Hrs",
        commitment_id=com.ri_arn,
        commitment_name=ri_name,
        commitment_type="Reserved Instance",
        commitment_category="Usage",
        commitment_unit="Hours",
        commitment_rate_micro=r,
        commitment_start=com.ri_start,
        commitment_end=com.ri_end,
    )
    common_sp = dict(
        payer_account_id=cfg.sp_payer_account_id,
        payer_account_name=cfg.payer_name(cfg.sp_payer_account_id),
        usage_account_id=cfg.sp_payer_account_id,
        usage_account_name=cfg.payer_name(cfg.sp_payer_account_id),
        product_code="ComputeSavingsPlans",
        service_name="Savings Plans for AWS Compute usage",
        service_category="Compute",
        service_subcategory="Virtual Machines",
        product_family="Savings Plans",
        resource_id=com.sp_arn,
        usage_type="ComputeSP:1yrNoUpfront",
        operation=None,
        sku_id=_sku("sp", cfg.sp_commitment_per_h),
        unit="Hrs",
        commitment_id=com.sp_arn,
        commitment_name=sp_name,
        commitment_type="Savings Plan",
        commitment_category="Spend",
        commitment_unit="USD",
        commitment_start=com.sp_start,
        commitment_end=com.sp_end,
    )

    # Reserved instances: the monthly RIFee is billed on the first day for the whole
    # month; its unused fields count every purchased hour not yet used (AWS semantics).
    ri_hours = np.arange(max(first_s, com.ri_start), min(cutoff, com.ri_end), 3600, dtype=np.int64)
    ri_used_s = used.reindex([(com.ri_arn, h) for h in ri_hours])["used_s"].fillna(0).to_numpy(np.int64)
    ri_used_m = used.reindex([(com.ri_arn, h) for h in ri_hours])["used_micro"].fillna(0).to_numpy(np.int64)
    unused_s = cfg.ri_count * 3600 - ri_used_s
    unused_m = cfg.ri_count * r - ri_used_m
    keep = unused_s > 0
    p_start, p_end = _period_bounds(ri_hours[keep])
    rows.add(
        int(keep.sum()),
        **common_ri,
        billing_period_start=p_start,
        billing_period_end=p_end,
        charge_start=ri_hours[keep],
        charge_end=ri_hours[keep] + 3600,
        line_type="UnusedCommitment",
        charge_category="Usage",
        charge_frequency="Usage-Based",
        pricing_category="Committed",
        description=f"Unused reservation hours, {cfg.ri_instance_type} (1yr No Upfront)",
        quantity_e10=_round_div(unused_s[keep] * QTY, 3600),
        list_rate_micro=None,
        rate_micro=r,
        billed_micro=0,
        effective_micro=unused_m[keep],
        list_micro=0,
        commitment_status="Unused",
        commitment_quantity_e10=_round_div(unused_s[keep] * QTY, 3600),
        invoice_id=invoice(p_start, cfg.ri_payer_account_id),
    )
    for _, m_start, m_end in months:
        start, end = max(m_start, com.ri_start), min(m_end, com.ri_end)
        if start >= end:
            continue
        purchased_s = cfg.ri_count * (end - start)
        in_month = (ri_hours >= m_start) & (ri_hours < m_end)
        fee = cfg.ri_count * ((end - start) // 3600) * r
        rows.add(
            1,
            **common_ri,
            billing_period_start=m_start,
            billing_period_end=m_end,
            charge_start=start,
            charge_end=end,
            line_type="RIFee",
            charge_category="Purchase",
            charge_frequency="Recurring",
            description=f"USD {_dollars(r)} hourly fee per Linux/UNIX (Amazon VPC), {cfg.ri_instance_type} instance",
            quantity_e10=purchased_s * QTY // 3600,
            list_rate_micro=None,
            rate_micro=r,
            billed_micro=fee,
            effective_micro=0,
            list_micro=fee,
            commitment_quantity_e10=purchased_s * QTY // 3600,
            commitment_count=cfg.ri_count,
            unused_quantity_e10=(purchased_s - int(ri_used_s[in_month].sum())) * QTY // 3600,
            unused_micro=fee - int(ri_used_m[in_month].sum()),
            invoice_id=invoice(np.array([m_start]), cfg.ri_payer_account_id)[0],
        )

    # Savings Plan: the recurring fee is billed every hour; what the hour's usage did not
    # consume is unused commitment.
    sp_hours = np.arange(max(first_s, com.sp_start), min(cutoff, com.sp_end), 3600, dtype=np.int64)
    sp_used_m = used.reindex([(com.sp_arn, h) for h in sp_hours])["used_micro"].fillna(0).to_numpy(np.int64)
    cap = com.sp_commitment_micro
    p_start, p_end = _period_bounds(sp_hours)
    inv = invoice(p_start, cfg.sp_payer_account_id)
    rows.add(
        len(sp_hours),
        **common_sp,
        billing_period_start=p_start,
        billing_period_end=p_end,
        charge_start=sp_hours,
        charge_end=sp_hours + 3600,
        line_type="SavingsPlanRecurringFee",
        charge_category="Purchase",
        charge_frequency="Recurring",
        description=f"1 year No Upfront Compute Savings Plan, ${_dollars(cap)}/hour commitment",
        quantity_e10=QTY,
        rate_micro=cap,
        billed_micro=cap,
        effective_micro=0,
        list_micro=cap,
        commitment_quantity_e10=cap * (QTY // MICRO),
        commitment_total_micro=cap,
        commitment_used_micro=sp_used_m,
        invoice_id=inv,
    )
    keep = sp_used_m < cap
    rows.add(
        int(keep.sum()),
        **common_sp,
        billing_period_start=p_start[keep],
        billing_period_end=p_end[keep],
        charge_start=sp_hours[keep],
        charge_end=sp_hours[keep] + 3600,
        line_type="UnusedCommitment",
        charge_category="Usage",
        charge_frequency="Usage-Based",
        pricing_category="Committed",
        description="Unused Compute Savings Plan commitment",
        quantity_e10=(cap - sp_used_m[keep]) * (QTY // MICRO),
        billed_micro=0,
        effective_micro=cap - sp_used_m[keep],
        list_micro=0,
        commitment_status="Unused",
        commitment_quantity_e10=(cap - sp_used_m[keep]) * (QTY // MICRO),
        invoice_id=[i for i, k in zip(inv, keep, strict=True) if k],
    )


def _bucket_name(team: TeamSpec) -> str:
    return f"demo-{team.name}-checkpoints"


def _other_lines(
    cfg: DemoConfig,
    rows: _Rows,
    months: list[tuple[date, int, int]],
    cutoff: int,
    first_s: int,
    invoice: _Invoice,
    account_names: dict[str, str],
) -> None:
    """Daily S3 storage of the checkpoint buckets, EBS gp3 volumes and data transfer per team."""
    days = np.arange(first_s, cutoff, 86400, dtype=np.int64)
    p_start, p_end = _period_bounds(days)
    days_in_month = (p_end - p_start) // 86400
    horizon = _epoch(cfg.end_date + timedelta(days=1))
    for team in cfg.teams:
        prefix = _REGION_PREFIX["us-east-1"]
        common = dict(
            payer_account_id=team.payer_account_id,
            payer_account_name=cfg.payer_name(team.payer_account_id),
            usage_account_id=team.usage_account_id,
            usage_account_name=account_names[team.usage_account_id],
            billing_period_start=p_start,
            billing_period_end=p_end,
            charge_start=days,
            charge_end=days + 86400,
            line_type="Usage",
            charge_category="Usage",
            charge_frequency="Usage-Based",
            pricing_category="Standard",
            region_id="us-east-1",
            region_name=_REGION_NAMES["us-east-1"],
            invoice_id=invoice(p_start, team.payer_account_id),
        )
        # Checkpoint bucket: grows linearly over the window (sizes fixed by date, not by as_of).
        progress = np.clip((days - first_s) / max(horizon - first_s, 1), 0.0, 1.0)
        gb = np.rint(team.bucket_gb[0] + progress * (team.bucket_gb[1] - team.bucket_gb[0])).astype(np.int64)
        s3_rate = _micro(cfg.s3_per_gb_month)
        rows.add(
            len(days),
            **common,
            product_code="AmazonS3",
            service_name="Amazon Simple Storage Service",
            service_category="Storage",
            service_subcategory="Object Storage",
            product_family="Storage",
            resource_id=_bucket_name(team),
            resource_type="Bucket",
            usage_type=f"{prefix}-TimedStorage-ByteHrs",
            operation="StandardStorage",
            description=f"${_dollars(s3_rate)} per GB - first 50 TB / month of storage used",
            sku_id=_sku("s3", "us-east-1", "standard"),
            unit="GB-Mo",
            quantity_e10=_round_div(gb * QTY, days_in_month),
            list_rate_micro=s3_rate,
            rate_micro=s3_rate,
            billed_micro=_round_div(gb * s3_rate, days_in_month),
            effective_micro=_round_div(gb * s3_rate, days_in_month),
            list_micro=_round_div(gb * s3_rate, days_in_month),
            tag_team=team.name,
            tag_project="checkpoints",
        )
        ebs_rate = _micro(cfg.ebs_gp3_per_gb_month)
        for volume in range(2):
            size = team.ebs_gb // 2
            cost = _round_div(np.full(len(days), size) * ebs_rate, days_in_month)
            rows.add(
                len(days),
                **common,
                product_code="AmazonEC2",
                service_name="Amazon Elastic Compute Cloud",
                service_category="Storage",
                service_subcategory="Block Storage",
                product_family="Storage",
                availability_zone=_AZS["us-east-1"][volume],
                resource_id="vol-0" + _digest(cfg.seed, team.name, "vol", volume).hex()[:16],
                resource_type="Volume",
                usage_type=f"{prefix}-EBS:VolumeUsage.gp3",
                operation="CreateVolume-Gp3",
                description=f"${_dollars(ebs_rate)} per GB-month of General Purpose (gp3) provisioned storage",
                sku_id=_sku("ebs", "us-east-1", "gp3"),
                unit="GB-Mo",
                quantity_e10=_round_div(np.full(len(days), size) * QTY, days_in_month),
                list_rate_micro=ebs_rate,
                rate_micro=ebs_rate,
                billed_micro=cost,
                effective_micro=cost,
                list_micro=cost,
                tag_team=team.name,
                tag_project="datasets",
            )
        transfers = [("DataTransfer-Out-Bytes", cfg.egress_per_gb, team.egress_gb_per_day, "out")]
        if team.west_share > 0:
            transfers.append(
                ("USW2-AWS-Out-Bytes", cfg.inter_region_per_gb, cfg.inter_region_gb_per_day, "west")
            )
        for usage, price, gb_per_day, kind in transfers:
            # Volumes vary day to day; stable per (seed, team, day), so restatements agree.
            mb = np.array(
                [
                    int(
                        gb_per_day
                        * 1000
                        * math.exp(0.35 * (_unit_hash(cfg.seed, team.name, kind, d) - 0.5) * 2)
                    )
                    for d in days
                ],
                dtype=np.int64,
            )
            rate = _micro(price)
            cost = _round_div(mb * rate, 1000)
            to_west = kind == "west"
            rows.add(
                len(days),
                **common,
                product_code="AWSDataTransfer",
                service_name="AWS Data Transfer",
                service_category="Networking",
                service_subcategory="Network Connectivity",
                product_family="Data Transfer",
                usage_type=f"{prefix}-{usage}",
                operation="RunInstances",
                description=(
                    f"${_dollars(rate)} per GB - US East (N. Virginia) data transfer to US West (Oregon)"
                    if to_west
                    else f"${_dollars(rate)} per GB - first 10 TB / month data transfer out beyond the global free tier"
                ),
                sku_id=_sku("transfer", kind),
                unit="GB",
                quantity_e10=mb * (QTY // 1000),
                list_rate_micro=rate,
                rate_micro=rate,
                billed_micro=cost,
                effective_micro=cost,
                list_micro=cost,
            )


def _tax_and_credit(
    cfg: DemoConfig,
    rows: _Rows,
    table: pa.Table,
    payers: list[str],
    months: list[tuple[date, int, int]],
    cutoff: int,
    invoice: _Invoice,
) -> pa.Table:
    """One Tax line (on the month's billed charges, to the cent) and one Credit per payer and month."""
    frame = pd.DataFrame(
        {
            "payer": table.column("payer_account_id").to_numpy(zero_copy_only=False),
            "period": table.column("billing_period_start").cast(pa.int64()).to_numpy(),
            "billed": table.column("billed_micro").to_numpy(),
        }
    )
    billed = frame.groupby(["payer", "period"])["billed"].sum()
    extra = _Rows()
    for payer in payers:
        for _, m_start, m_end in months:
            base = int(billed.get((payer, m_start), 0))
            tax = (
                int((Decimal(base) * cfg.tax_rate / 10_000).quantize(Decimal(1), rounding="ROUND_HALF_UP"))
                * 10_000
            )
            credit = -_micro(cfg.credit_per_month)
            for line_type, amount, description in (
                ("Tax", tax, f"Sales tax at {cfg.tax_rate * 100}% on charges of the period"),
                ("Credit", credit, "Promotional credit for ML research"),
            ):
                extra.add(
                    1,
                    payer_account_id=payer,
                    payer_account_name=cfg.payer_name(payer),
                    usage_account_id=payer,
                    usage_account_name=cfg.payer_name(payer),
                    billing_period_start=m_start,
                    billing_period_end=m_end,
                    charge_start=m_start,
                    charge_end=min(m_end, cutoff),
                    line_type=line_type,
                    charge_category=line_type,
                    charge_frequency="One-Time",
                    product_code="AmazonEC2",
                    service_name="Amazon Elastic Compute Cloud",
                    service_category="Compute",
                    service_subcategory="Virtual Machines",
                    product_family=None,
                    description=description,
                    quantity_e10=0,
                    billed_micro=amount,
                    effective_micro=amount,
                    list_micro=amount,
                    invoice_id=invoice(np.array([m_start]), payer)[0],
                )
    return pa.concat_tables([table, extra.table()])


# ----------------------------------------------------------------------------- landing


def _replace_atomically(path: Path, write: Callable[[Path], _R]) -> _R:
    """Write through a hidden temporary file in the same folder, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{path.name}")
    result = write(tmp)
    os.replace(tmp, path)
    return result


def generate_landing(out_dir: Path | str, cfg: DemoConfig | None = None, as_of: date | None = None) -> dict:
    """Write the demo's deliveries as of the end of `as_of` (default: cfg.end_date) under out_dir.

    Layout (paths relative to out_dir):
      billing/focus/<payer>/billing_period=YYYY-MM/focus-YYYY-MM.csv.gz         (FOCUS 1.2)
      billing/cur2/<payer>/BILLING_PERIOD=YYYY-MM/cur2-YYYY-MM-00001.snappy.parquet (CUR 2.0)
      jobs/jobs-YYYY-MM.csv                                                     (job-run schema, by submit month)

    Returns a summary: per file its rows and exact totals (billed / effective / list cost
    as decimal strings; for CUR: unblended / amortized / public on-demand cost).
    """
    cfg = cfg or DemoConfig()
    out = Path(out_dir)
    cutoff = _cutoff(cfg, as_of)
    fleet = _simulate(cfg)
    lines = _billing_lines(cfg, fleet, cutoff)
    jobs = _jobs_as_of(cfg, fleet, cutoff)
    months = _months(cfg, cutoff)
    files: list[dict[str, object]] = []
    payer_col = lines.column("payer_account_id")
    period_col = lines.column("billing_period_start").cast(pa.int64())
    for payer in sorted(set(payer_col.to_pylist())):
        for month, m_start, m_end in months:
            part = lines.filter(pc.and_(pc.equal(payer_col, payer), pc.equal(period_col, m_start)))
            label = f"{month:%Y-%m}"
            if payer in cfg.focus_payers:
                rel = Path("billing/focus", payer, f"billing_period={label}", f"focus-{label}.csv.gz")
                totals: FileTotals = _replace_atomically(
                    out / rel, lambda p, t=part: write_focus(t, p, "csv.gz")
                )
                kind = "focus-1.2"
            else:
                rel = Path(
                    "billing/cur2", payer, f"BILLING_PERIOD={label}", f"cur2-{label}-00001.snappy.parquet"
                )
                totals = _replace_atomically(out / rel, lambda p, t=part: write_cur2(t, p, "parquet"))
                kind = "cur-2.0"
            files.append(
                {
                    **totals.as_dict(),
                    "path": rel.as_posix(),
                    "kind": kind,
                    "billing_account_id": payer,
                    "billing_period": label,
                    "final": m_end <= cutoff,
                }
            )
    submit_month = jobs["submit_time"].dt.strftime("%Y-%m")
    for month, _, m_end in months:
        label = f"{month:%Y-%m}"
        rel = Path("jobs", f"jobs-{label}.csv")
        part = jobs[submit_month == label]
        n = _replace_atomically(out / rel, lambda p, j=part: write_jobs_csv(j, p))
        files.append(
            {"path": rel.as_posix(), "kind": "jobs", "rows": n, "period": label, "final": m_end <= cutoff}
        )
    return {
        "seed": cfg.seed,
        "end_date": cfg.end_date.isoformat(),
        "as_of": (as_of or cfg.end_date).isoformat(),
        "cutoff": _iso(cutoff),
        "jobs": len(jobs),
        "line_items": lines.num_rows,
        "files": files,
    }
