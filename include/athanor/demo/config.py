"""The demo fleet's configuration: teams, instance types, commitments and prices, all in one frozen object.

Every generated file is a deterministic function of a `DemoConfig` (and the day delivered);
the story the defaults tell is in `athanor.demo.fleet`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from athanor.reference import InstanceType, instance, spot_advice

DEBUG, SWEEP, PRETRAIN = 0, 1, 2
CLASS_NAMES = ("debug", "sweep", "pretrain")


@dataclass(frozen=True)
class ModelSpec:
    model: str
    project: str
    checkpoint_time_s: float  # typical time to write one checkpoint
    # The simulated workload behind the job log's optional columns (athanor.demo.jobs.workload):
    params: float = 1e9  # parameters
    alpha: float = 0.9  # throughput ~ GPUs^alpha on one GPU model (scaling efficiency)
    samples_per_speed: float = 1.0  # samples/s on one GPU per TFLOPS (per GB/s if memory-bound)
    activation_gib: float = 12.0  # per GPU, on top of the model state
    memory_bound: bool = False
    # What the log records: 'all', 'params' (parameter count and phase, no metrics), 'phase'.
    records: str = "all"


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
            ModelSpec("vit-l", "foundation", 25.0, 304e6, 0.8, 4.0, 14.0),
            ModelSpec("dino-v2", "foundation", 20.0, 1.1e9, 0.85, 1.5, 18.0),
            ModelSpec("sam-h", "segmentation", 30.0, 636e6, 0.75, 0.8, 20.0),
            # A small detector trained on 8-GPU nodes: it scales poorly, one GPU would do.
            ModelSpec("yolo-x", "detection", 6.0, 99e6, 0.3, 6.0, 9.0),
        ),
        pretrain_models=(
            ModelSpec("vit-h", "foundation", 60.0, 632e6, 0.9, 2.5, 22.0),
            ModelSpec("siglip-so400m", "foundation", 45.0, 428e6, 0.9, 3.0, 20.0),
        ),
        spot_share=(0.15, 0.45, 0.15),
        committed_share=0.6,
        west_share=0.0,
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
            ModelSpec("llama8b", "sft", 45.0, 8.0e9, 0.9, 0.005, 16.0),
            ModelSpec("mistral7b", "sft", 40.0, 7.2e9, 0.9, 0.0055, 16.0),
            ModelSpec("llama70b", "sft", 240.0, 70e9, 0.92, 0.0006, 12.0),
            ModelSpec("qwen14b", "eval", 70.0, 14e9, 0.6, 0.002, 10.0, memory_bound=True),
        ),
        pretrain_models=(
            # The large model: sharded over 32-64 H100s, it must not move to small cards.
            ModelSpec("llama70b", "pretrain-v3", 300.0, 70e9, 0.93, 0.0006, 22.0),
            ModelSpec("moe-8x22b", "pretrain-v3", 420.0, 141e9, 0.85, 0.0004, 24.0),
        ),
        spot_share=(0.2, 0.35, 0.1),
        committed_share=0.6,
        west_share=0.0,
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
            ModelSpec("whisper-l", "asr", 18.0, 1.55e9, 0.8, 0.6, 16.0),
            ModelSpec("conformer-xl", "asr", 8.0, 600e6, 0.8, 1.0, 12.0, records="params"),
            ModelSpec("vits-tts", "tts", 4.0, 40e6, 0.3, 8.0, 6.0),
        ),
        pretrain_models=(ModelSpec("whisper-xl", "asr", 35.0, 3e9, 0.85, 0.3, 20.0),),
        spot_share=(0.2, 0.5, 0.25),
        committed_share=0.5,
        west_share=0.12,
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
            ModelSpec("dlrm-v2", "ranking", 15.0, 4.2e9, 0.7, 0.5, 10.0, memory_bound=True),
            ModelSpec("two-tower", "retrieval", 5.0, 50e6, 0.4, 30.0, 5.0),
            ModelSpec("dcn-v2", "ranking", 6.0, 100e6, 0.6, 10.0, 6.0, records="phase"),
        ),
        pretrain_models=(ModelSpec("hstu-1b", "ranking", 50.0, 1e9, 0.8, 0.5, 20.0),),
        spot_share=(0.3, 0.55, 0.2),
        committed_share=0.5,
        west_share=0.1,
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
    # Other spend (us-east-1 list prices). Storage is billed from the fleet's own buckets, volumes
    # and snapshots (athanor.demo.storage) at the reference price list's prices.
    egress_per_gb: Decimal = Decimal("0.09")
    # One cost spike for the spend watch to find: a team's data transfer out this many times its
    # usual volume on one day (a misconfigured sync copying a dataset out). A fixed day, so every
    # delivery (and restatement) of the month agrees on it.
    spike_team: str | None = "llm"
    spike_day: date = date(2026, 11, 25)
    spike_factor: float = 40.0
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


REGION_NAMES = {"us-east-1": "US East (N. Virginia)", "us-west-2": "US West (Oregon)"}
REGION_PREFIX = {"us-east-1": "USE1", "us-west-2": "USW2"}
AZS = {
    "us-east-1": ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"),
    "us-west-2": ("us-west-2a", "us-west-2b"),
}
