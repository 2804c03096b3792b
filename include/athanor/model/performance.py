"""Performance model of a workload class: the GPU memory it needs and how its throughput scales.

Memory (the hard constraint). A class's requirement is a total across the GPUs of a
configuration, because ZeRO-3 / FSDP shard model state over every GPU:

- observed: the smallest ``peak_gpu_memory_gib x GPUs`` of the class's runs. A run that
  completed with that total shows it suffices; a larger total from a run with more GPUs is data
  parallelism replicating state, not a need. Where the parameter count is known too and the
  whole training state (the rule below) fits in the smallest per-GPU peak, the runs are plain
  data parallel, each GPU holding a full replica: the requirement is that peak per GPU, on any
  number of GPUs (a small model on 8 GPUs fits on one).
- from ``model_params`` when no peak was recorded: mixed-precision training with Adam keeps
  BYTES_PER_PARAM_MIXED_ADAM = 16 bytes per parameter (2 bf16/fp16 weights, 2 gradients, 4 fp32
  master weights, 4 + 4 Adam moments), times ACTIVATION_HEADROOM for activations and buffers.
  70 B parameters: 70e9 x 16 x 1.2 / 2^30 = 1,251.7 GiB, i.e. two 8 x 80 GB nodes, not one.
- neither: unknown, said so; the plan then keeps the class on at least the memory it has now.

Throughput. ``samples/s = k x speed x n^alpha`` for n GPUs of one model, where speed is the
GPU's dense FP16 TFLOPS (compute-bound classes) or its memory bandwidth (memory-bound ones) and
alpha the class's scaling efficiency, fitted by least squares on log(samples/s / speed) against
log n from its runs at different GPU counts (alpha = 1 is linear scaling; the brief's BERT case,
3,200 samples/s on 8 A100 and 2,304 on 4, gives alpha = log2(3200/2304) = 0.474). Runs at one
GPU count leave alpha unidentified: linear is assumed and said so. A class without throughput
data falls back to the datasheet ratio (speed x n), marked ``datasheet``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

BYTES_PER_PARAM_MIXED_ADAM = 16
# Activations, communication buffers and allocator fragmentation on top of the model state: a
# stated rule of thumb (20 %), not a measurement. Observed peaks, where recorded, replace it.
ACTIVATION_HEADROOM = 1.2
GIB = 2**30

Bound = Literal["compute", "memory"]
MemoryBasis = Literal["observed", "model_params", "unknown"]
ScalingBasis = Literal["fitted", "assumed", "datasheet"]
SpeedupSource = Literal["fleet", "benchmark", "datasheet"]

# The fleet's own speed-up needs this many runs with throughput on each of the two GPU models:
# fewer leave the median a single run's noise.
FLEET_MIN_RUNS = 3
# The fleet speed-up's range: a percentile bootstrap interval of the ratio of medians, resampling
# the runs of each GPU model apart; seeded, so a night's plan is reproducible.
FLEET_CONFIDENCE = 0.90
FLEET_RESAMPLES = 2000
FLEET_SEED = 0


@dataclass(frozen=True)
class MemoryRequirement:
    total_gib: float | None  # the least GPU memory of a configuration, all GPUs; None when unknown
    basis: MemoryBasis
    note: str
    # Set for data-parallel classes (each GPU holds a replica): every GPU needs this much, and
    # one GPU is enough. total_gib is then the same figure.
    per_gpu_gib: float | None = None

    def fits(self, gpus: int, memory_per_gpu_gib: float | None) -> bool | None:
        """Whether n GPUs of that memory hold the requirement; None when either side is unknown."""
        if self.total_gib is None or memory_per_gpu_gib is None:
            return None
        if self.per_gpu_gib is not None:
            return memory_per_gpu_gib >= self.per_gpu_gib
        return gpus * memory_per_gpu_gib >= self.total_gib


def memory_from_params(model_params: float, headroom: float = ACTIVATION_HEADROOM) -> float:
    """GiB needed in total to train a model of that many parameters with mixed-precision Adam."""
    return model_params * BYTES_PER_PARAM_MIXED_ADAM * headroom / GIB


def memory_requirement(
    peaks: Iterable[tuple[float | None, int]], model_params: Iterable[float | None] = ()
) -> MemoryRequirement:
    """A class's requirement from its runs' (peak GiB per GPU, GPUs), else from its parameters."""
    seen = [(p, n) for p, n in peaks if p is not None and not math.isnan(p) and n > 0]
    params = [p for p in model_params if p is not None and not math.isnan(p) and p > 0]
    if seen:
        smallest_peak = min(p for p, _ in seen)
        if params and memory_from_params(max(params)) <= smallest_peak:
            return MemoryRequirement(
                smallest_peak,
                "observed",
                f"smallest observed peak per GPU over {len(seen)} run(s); the full training state of "
                f"{max(params):.3g} parameters ({memory_from_params(max(params)):,.1f} GiB) fits on one "
                "GPU: data parallel, a replica per GPU",
                per_gpu_gib=smallest_peak,
            )
        return MemoryRequirement(
            min(p * n for p, n in seen), "observed", f"smallest observed peak x GPUs over {len(seen)} run(s)"
        )
    if params:
        largest = max(params)
        return MemoryRequirement(
            memory_from_params(largest),
            "model_params",
            f"{largest:.3g} parameters x {BYTES_PER_PARAM_MIXED_ADAM} B (mixed-precision Adam) "
            f"x {ACTIVATION_HEADROOM} headroom, sharded (ZeRO-3/FSDP)",
        )
    return MemoryRequirement(None, "unknown", "no peak GPU memory or parameter count recorded")


@dataclass(frozen=True)
class Observation:
    """One run's throughput on a configuration: n GPUs of one model."""

    gpus: int
    samples_per_second: float
    fp16_dense_tflops: float | None  # per GPU
    memory_bandwidth_gbps: float | None  # per GPU
    gpu_model: str | None = None  # as the catalog names it; the fleet's speed-up pairs runs by it

    def speed(self, bound: Bound) -> float | None:
        return self.fp16_dense_tflops if bound == "compute" else self.memory_bandwidth_gbps


@dataclass(frozen=True)
class ScalingFit:
    bound: Bound
    alpha: float  # throughput ~ n^alpha at a fixed GPU model
    coefficient: float | None  # k: samples/s per unit speed at one GPU; None without data
    basis: ScalingBasis
    points: int
    gpu_counts: tuple[int, ...]
    residual: float | None  # sum of squared log residuals of the fit
    note: str

    def relative(self, speed: float | None, gpus: int) -> float | None:
        """speed x n^alpha: throughput up to the constant k (enough to compare configurations)."""
        if speed is None or speed <= 0 or gpus <= 0:
            return None
        return speed * gpus**self.alpha

    def samples_per_second(self, speed: float | None, gpus: int) -> float | None:
        rel = self.relative(speed, gpus)
        return None if rel is None or self.coefficient is None else self.coefficient * rel


def fit_scaling(observations: Sequence[Observation], bound: Bound = "compute") -> ScalingFit:
    """Fit alpha (and k) by least squares on log(samples/s / speed) = log k + alpha log n."""
    usable = [
        o
        for o in observations
        if o.gpus > 0
        and o.samples_per_second is not None
        and not math.isnan(o.samples_per_second)
        and o.samples_per_second > 0
        and (o.speed(bound) or 0) > 0
    ]
    if not usable:
        return ScalingFit(
            bound, 1.0, None, "datasheet", 0, (), None, "no throughput data: datasheet ratio, linear in GPUs"
        )
    x = np.log([o.gpus for o in usable])
    y = np.log([o.samples_per_second / o.speed(bound) for o in usable])  # type: ignore[operator]
    counts = tuple(sorted({o.gpus for o in usable}))
    if len(counts) < 2:
        # One GPU count: the efficiency is not identifiable, linear scaling assumed.
        k = float(np.exp(np.mean(y - x)))
        resid = float(np.sum((y - x - np.log(k)) ** 2))
        return ScalingFit(
            bound,
            1.0,
            k,
            "assumed",
            len(usable),
            counts,
            resid,
            f"runs at {counts[0]} GPUs only: linear assumed",
        )
    alpha, log_k = np.polyfit(x, y, 1)
    resid = float(np.sum((y - (alpha * x + log_k)) ** 2))
    note = f"fitted on {len(usable)} runs at {', '.join(map(str, counts))} GPUs"
    fitted = float(alpha)
    # Superlinear scaling is measurement noise here, and negative would reward shrinking without
    # end: the efficiency used is kept within [0, 1].
    used = min(max(fitted, 0.0), 1.0)
    if used != fitted:
        note += f" (fit {fitted:.3f} held to {used:.0f})"
        log_k = float(np.mean(y - used * x))
    return ScalingFit(bound, used, float(np.exp(log_k)), "fitted", len(usable), counts, resid, note)


def fit_class_scaling(observations: Sequence[Observation], bound: Bound | None = None) -> ScalingFit:
    """The class's fit; without a stated bound, compute-bound unless its runs span two or more GPU
    models and the memory-bandwidth fit explains them better (smaller squared log residual)."""
    if bound is not None:
        return fit_scaling(observations, bound)
    compute = fit_scaling(observations, "compute")
    models = {(o.fp16_dense_tflops, o.memory_bandwidth_gbps) for o in observations}
    if len(models) < 2 or compute.basis != "fitted":
        return compute
    memory = fit_scaling(observations, "memory")
    if (
        memory.basis == "fitted"
        and memory.points == compute.points
        and memory.residual is not None
        and compute.residual is not None
        and memory.residual < compute.residual
    ):
        return memory
    return compute


def hours_on(
    fit: ScalingFit,
    *,
    ref_hours: float,
    ref_speed: float | None,
    ref_gpus: int,
    speed: float | None,
    gpus: int,
) -> float | None:
    """Hours a run that took ``ref_hours`` on the reference configuration takes on another."""
    ref = fit.relative(ref_speed, ref_gpus)
    new = fit.relative(speed, gpus)
    if ref is None or new is None:
        return None
    return ref_hours * ref / new


def hours_from_observed(
    fit: ScalingFit, *, ref_hours: float, ref_samples_per_second: float, speed: float | None, gpus: int
) -> float | None:
    """Hours on another configuration when the reference one has no datasheet speed: its observed
    throughput against the fit's prediction (k x speed x n^alpha) for the other one."""
    new = fit.samples_per_second(speed, gpus)
    if new is None or new <= 0 or ref_samples_per_second <= 0:
        return None
    return ref_hours * ref_samples_per_second / new


@dataclass(frozen=True)
class Speedup:
    """Throughput of a class on one GPU model over another, per GPU at equal GPU counts: where it
    comes from and how far it may be off. Hours on the other model are hours / speed-up."""

    value: float
    low: float
    high: float
    source: SpeedupSource
    note: str

    def to_json(self) -> dict[str, Any]:
        return {
            "value": round(self.value, 3),
            "low": round(self.low, 3),
            "high": round(self.high, 3),
            "source": self.source,
        }


def _per_gpu_scaled(observations: Iterable[Observation], alpha: float) -> np.ndarray:
    return np.array(
        [
            o.samples_per_second / o.gpus**alpha
            for o in observations
            if o.gpus > 0 and o.samples_per_second is not None and o.samples_per_second > 0
        ]
    )


def measured_speedup(
    current: Sequence[Observation], target: Sequence[Observation], alpha: float
) -> Speedup | None:
    """The class's own speed-up of the target GPU model over its current one, from its runs on both.

    Estimator: each run's samples/s brought to one GPU by the class's scaling (samples/s / n^alpha;
    runs at equal GPU counts are compared as measured), then median on the target over median on
    the current model. Range: the FLEET_CONFIDENCE percentile bootstrap interval of that ratio.
    None with fewer than FLEET_MIN_RUNS runs on either side.
    """
    a, b = _per_gpu_scaled(current, alpha), _per_gpu_scaled(target, alpha)
    if len(a) < FLEET_MIN_RUNS or len(b) < FLEET_MIN_RUNS:
        return None
    value = float(np.median(b) / np.median(a))

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    # Imported here: scipy.stats is about 1 s of import, and the demo's generator imports this
    # module for its memory figures alone.
    from scipy import stats

    ci = stats.bootstrap(
        (a, b),
        ratio,
        vectorized=True,
        paired=False,
        confidence_level=FLEET_CONFIDENCE,
        n_resamples=FLEET_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(FLEET_SEED),
    ).confidence_interval
    return Speedup(
        value,
        min(float(ci.low), value),
        max(float(ci.high), value),
        "fleet",
        f"the class's own runs: median samples/s per GPU^{alpha:.2f} over {len(b)} runs against {len(a)}, "
        f"{100 * FLEET_CONFIDENCE:.0f} % bootstrap interval",
    )


def datasheet_speedup(ratio: float, exponent_low: float, note: str) -> Speedup:
    """A datasheet ratio d with its range: realised speed-ups fall short of the peak ratio, so the
    range runs from d to d^exponent_low (athanor.reference.benchmarks.datasheet_exponent_low), below
    d for a faster GPU and above it for a slower one."""
    other = ratio**exponent_low
    return Speedup(ratio, min(ratio, other), max(ratio, other), "datasheet", note)
