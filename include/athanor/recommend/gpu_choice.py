"""Which GPU, how many, where: per workload class, the configuration to run it on.

For each class (job runs grouped by team / project / model unless told otherwise) the plan
prices every candidate configuration, an instance type x an instance count, each type in its
reference region (its first row in ``reference/data/prices.csv``; job logs name no region), among
the GPU types of the class's own cloud unless candidate types are named:

- memory is the hard constraint: a configuration whose total GPU memory is below the class's
  requirement (``athanor.model.performance``) is never recommended; with no requirement known,
  the class keeps at least the GPU memory it has now, per GPU and in total;
- hours per run scale from the class's observed hours on its current configuration: by n^alpha
  across GPU counts (the class's fitted scaling), and across GPU models by a speed-up taken, in
  order, from the class's own runs on both models (``fleet``), a published benchmark of its model
  family (``benchmark``, reference/data/gpu_benchmarks.csv) or the datasheet ratio of the figure
  that bounds it (``datasheet``), each with a low-high range (athanor.model.performance.Speedup);
- n^alpha is never extrapolated beyond 2x the GPU counts the class ran at: configurations of
  fewer than half its smallest or more than twice its largest GPU count are not offered;
- a move across GPU models carries its break-even speed-up (where its cost per run equals the
  current one) and its monthly saving at the range's ends; a move whose saving changes sign
  within the range is "benchmark first": shown, not counted;
- the recommendation is the cheapest configuration per run, at on-demand list prices, that fits
  in memory and finishes within ``deadline_slack`` x the current hours; a team budget, when set,
  may trade the deadline for cost (said so in the reason);
- the cost-time frontier lists the configurations no other one beats on both cost and hours;
- carbon per run = GPU-hours x power at the utilisation x PUE x grid intensity, power from the
  GPU model's idle-to-maximum curve (athanor.reference.power: idle watts at 0 %). Utilisation is
  the class's mean measured from GPU telemetry (athanor.recommend.gpu_usage) where its runs have
  samples; job logs carry none, so otherwise it is 1 (the upper bound), and the reason says
  which. A lower-carbon option at no extra cost (another region or type, same hours limit) is
  named when one exists.

How to buy the recommended capacity follows the class's phase (PHASE_PURCHASE): the mix
recommender's default, not a decision made here.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from athanor.model.performance import (
    MemoryRequirement,
    Observation,
    ScalingFit,
    Speedup,
    datasheet_speedup,
    fit_class_scaling,
    measured_speedup,
    memory_requirement,
)
from athanor.recommend.phases import PHASE_DEFAULTS, purchase_words
from athanor.reference import benchmarks, egress, power
from athanor.reference import gpus as catalog
from athanor.reference.vocabulary import HOURS_PER_MONTH, JOB_PHASES

DEFAULT_DEADLINE_SLACK = 1.5
INSTANCE_COUNTS = (1, 2, 4, 8)
# Several instances only of 8-GPU types: those are the multi-node clusters (EFA, InfiniBand) that
# training spans; a class's scaling fitted within a node says nothing of eight 1-GPU machines
# talking over the instance network.
MULTI_NODE_MIN_GPUS = 8
# A workload class: one model of one team's project, in one phase (exploring, tuning and
# production runs of a model differ in size and urgency). A column no run records is left out.
DEFAULT_GROUP_BY = ("team", "project", "model", "phase")
PHASES = JOB_PHASES
# The words of each phase's default purchase option; the mapping itself is recommend.phases'.
PHASE_PURCHASE = {name: d.words for name, d in PHASE_DEFAULTS.items()}
# Float sums of the same prices differ in the last bits: those differences are no reason to move.
_TOLERANCE = 1e-9
# n^alpha is trusted to this factor beyond the GPU counts a class ran at, in either direction.
SCALING_EXTRAPOLATION = 2.0


@dataclass(frozen=True)
class Candidate:
    """One GPU instance type priced in one region, with what the plan needs of its GPU."""

    instance_type: str
    provider: str
    region: str
    gpus_per_instance: int
    gpu_model: str
    memory_per_gpu_gib: float | None
    hourly_usd: float
    fp16_dense_tflops: float | None
    memory_bandwidth_gbps: float | None
    board_power_w: float | None
    gco2e_per_kwh: float | None
    pue: float
    # The type's reference region (first in prices.csv): where the plan prices and recommends it;
    # its other regions only compete as lower-carbon options at no extra cost.
    reference: bool = True
    # How the type is sold in this region (prices.csv purchase_options). The plan prices work at
    # on-demand list prices, so a shape sold only as spot, capacity blocks or flex-start (p5e,
    # a3-highgpu-1g) is never where it moves work; a class already on one is priced where it is.
    purchase_options: tuple[str, ...] = ("on_demand",)

    @property
    def sold_on_demand(self) -> bool:
        return "on_demand" in self.purchase_options

    def speed(self, bound: str) -> float | None:
        return self.fp16_dense_tflops if bound == "compute" else self.memory_bandwidth_gbps


def candidates_from_catalog(
    instance_types: Iterable[str] | None = None, provider: str | None = None
) -> list[Candidate]:
    """Every priced GPU type x region of the catalog (of some types, or of one provider)."""
    wanted = None if instance_types is None else {t.strip().lower() for t in instance_types}
    out = []
    for row in catalog.catalog(provider):
        inst, gpu, price = row.instance, row.gpu, row.price
        if gpu is None or price is None or price.on_demand_usd_per_h is None:
            continue
        if wanted is not None and inst.instance_type.lower() not in wanted:
            continue
        grid = catalog.grid_intensity(inst.provider, price.region)
        reference = catalog.reference_region(inst.instance_type)
        out.append(
            Candidate(
                instance_type=inst.instance_type,
                provider=inst.provider,
                region=price.region,
                gpus_per_instance=inst.gpu_count,
                gpu_model=inst.gpu_model,
                memory_per_gpu_gib=inst.gpu_memory_gib,
                hourly_usd=float(price.on_demand_usd_per_h),
                fp16_dense_tflops=gpu.fp16_dense_tflops,
                memory_bandwidth_gbps=gpu.memory_bandwidth_gbps,
                board_power_w=gpu.board_power_w,
                gco2e_per_kwh=None if grid is None else grid.gco2e_per_kwh,
                pue=catalog.pue(inst.provider),
                reference=price.region == reference,
                purchase_options=price.purchase_options,
            )
        )
    return out


@dataclass(frozen=True)
class Option:
    """A configuration evaluated for one class."""

    candidate: Candidate
    instance_count: int
    hours_per_run: float
    cost_per_run_usd: float
    kgco2e_per_run: float | None
    fits_memory: bool
    # Across GPU models only: the speed-up its hours rest on, and the speed-up at which its cost
    # per run equals the current one (price ratio x count ratio x the scaling term).
    speedup: Speedup | None = None
    break_even_speedup: float | None = None

    @property
    def gpus(self) -> int:
        return self.candidate.gpus_per_instance * self.instance_count

    @property
    def total_memory_gib(self) -> float | None:
        m = self.candidate.memory_per_gpu_gib
        return None if m is None else m * self.gpus

    @property
    def label(self) -> str:
        c = self.candidate
        return f"{self.instance_count} x {c.instance_type} ({self.gpus} x {c.gpu_model}, {c.region})"

    def config(self) -> dict[str, Any]:
        return {
            "instance_type": self.candidate.instance_type,
            "instance_count": self.instance_count,
            "gpus": self.gpus,
        }


@dataclass(frozen=True)
class ClassInput:
    """What the plan needs to know about one workload class."""

    job_class: str
    runs: int
    current_instance_type: str
    current_instance_count: int
    current_hours_per_run: float
    runs_per_month: float
    memory: MemoryRequirement
    scaling: ScalingFit
    team: str | None = None
    phase: str | None = None
    utilisation: float | None = None  # mean GPU utilisation 0-1; None: unknown, 1 is used
    # Median samples/s of the runs on the current configuration: the reference when the current
    # GPU has no datasheet speed (hours elsewhere then come from the fit's absolute prediction).
    current_samples_per_second: float | None = None
    model: str | None = None  # the model name of most runs: what a benchmark family matches
    observations: tuple[Observation, ...] = ()  # every run's throughput, with its GPU model
    gpu_counts: tuple[int, ...] = ()  # the GPU counts its runs used (n^alpha is trusted near them)
    job_ids: tuple[str, ...] = ()  # its runs, to find its data (checkpoints) by run id
    # The data a move to another region takes along (GiB), and what it is; None: size unknown.
    data_gib: float | None = None
    data_basis: str | None = None


@dataclass(frozen=True)
class DataTransfer:
    """The one-off copy of a class's data that its move to another region implies."""

    source_region: str
    target_region: str
    gib: float | None  # None: the class's data size is unknown
    usd: float | None  # None: not priced (size unknown, or a move to another cloud)
    note: str

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.source_region,
            "to": self.target_region,
            "gib": None if self.gib is None else round(self.gib, 3),
            "usd": None if self.usd is None else round(self.usd, 2),
            "note": self.note,
        }


def data_transfer(cls: ClassInput, cur: Candidate, rec: Candidate) -> DataTransfer | None:
    """What moving ``cls`` from ``cur``'s region to ``rec``'s costs in data transfer, once; None
    for a move within one region."""
    if cur.provider == rec.provider and cur.region == rec.region:
        return None
    where = f"{cur.provider} {cur.region} to {rec.provider} {rec.region}"
    if cls.data_gib is None:
        return DataTransfer(
            cur.region, rec.region, None, None,
            f"cross-region move ({where}): data transfer not priced (the class's data size is unknown)",
        )  # fmt: skip
    if cur.provider != rec.provider:
        return DataTransfer(
            cur.region, rec.region, cls.data_gib, None,
            f"cross-cloud move ({where}): data transfer not priced ({cls.data_gib:,.1f} GiB, {cls.data_basis}; "
            "internet egress is not in the catalogue)",
        )  # fmt: skip
    rate = egress.inter_region_rate(cur.provider)
    if rate is None:
        return DataTransfer(
            cur.region, rec.region, cls.data_gib, None,
            f"cross-region move ({where}): data transfer not priced (no published {cur.provider} rate)",
        )  # fmt: skip
    usd = cls.data_gib * float(rate.usd_per_gb)
    return DataTransfer(
        cur.region, rec.region, cls.data_gib, usd,
        f"cross-region move ({where}): copying its data, {cls.data_gib:,.1f} GiB ({cls.data_basis}), costs "
        f"${usd:,.2f} once at {rate.label()}",
    )  # fmt: skip


@dataclass(frozen=True)
class ClassPlan:
    job_class: str
    team: str | None
    runs: int
    phase: str | None
    purchase: str
    memory: MemoryRequirement
    scaling: ScalingFit
    current: Option | None
    recommended: Option | None
    monthly_savings_usd: float
    frontier: tuple[Option, ...]
    greener: Option | None
    reason: str
    options: tuple[Option, ...] = field(default=(), repr=False)  # every configuration priced
    # The recommended move's evidence (None for a stay or a move on the same GPU model).
    speedup: Speedup | None = None
    break_even_speedup: float | None = None
    monthly_savings_low_usd: float | None = None  # at speedup.low; the same GPU model: the saving
    monthly_savings_high_usd: float | None = None  # at speedup.high
    benchmark_first: bool = False  # the saving changes sign within the speed-up's range
    gpu_window: tuple[float, float] | None = None  # GPU counts offered: 2x beyond those observed
    # A move to another region (or cloud): the one-off copy of the class's data, where its size is
    # known; the note says what was priced, or that the transfer was not.
    data_transfer: DataTransfer | None = None
    # Types left out as destinations because they are not sold on demand, where one of them would
    # otherwise have been recommended (it fits, finishes in time and costs less per run).
    not_on_demand: tuple[str, ...] = ()

    @property
    def moves(self) -> bool:
        cur, rec = self.current, self.recommended
        return (
            cur is not None
            and rec is not None
            and (rec.candidate != cur.candidate or rec.instance_count != cur.instance_count)
        )

    @property
    def counted(self) -> bool:
        """A move the plan counts: it saves at the speed-up's whole range (not benchmark first)."""
        return self.moves and self.monthly_savings_usd > 0 and not self.benchmark_first

    def to_json(self) -> dict[str, Any]:
        """The shape `athanor gpu-plan --format json` prints (issue 16, exact)."""

        def both(attr: str, digits: int) -> dict[str, float | None]:
            def one(o: Option | None) -> float | None:
                v = None if o is None else getattr(o, attr)
                return None if v is None else round(v, digits)

            return {"current": one(self.current), "recommended": one(self.recommended)}

        return {
            "job_class": self.job_class,
            "runs": self.runs,
            "current": None if self.current is None else self.current.config(),
            "recommended": None if self.recommended is None else self.recommended.config(),
            "memory_required_gib": None if self.memory.total_gib is None else round(self.memory.total_gib, 2),
            "hours_per_run": both("hours_per_run", 3),
            "cost_per_run_usd": both("cost_per_run_usd", 2),
            "monthly_savings_usd": round(self.monthly_savings_usd, 2),
            "kgco2e_per_run": both("kgco2e_per_run", 3),
            "reason": self.reason,
            "speedup": None if self.speedup is None else self.speedup.to_json(),
            "break_even_speedup": None
            if self.break_even_speedup is None
            else round(self.break_even_speedup, 3),
            "monthly_savings_range_usd": {
                "low": None
                if self.monthly_savings_low_usd is None
                else round(self.monthly_savings_low_usd, 2),
                "value": round(self.monthly_savings_usd, 2),
                "high": None
                if self.monthly_savings_high_usd is None
                else round(self.monthly_savings_high_usd, 2),
            },
            "benchmark_first": self.benchmark_first,
            "counted": self.counted,
            "gpu_window": None if self.gpu_window is None else list(self.gpu_window),
            "data_transfer": None if self.data_transfer is None else self.data_transfer.to_json(),
        }


def kgco2e(gpu_hours: float, c: Candidate, utilisation: float | None) -> float | None:
    """GPU-hours x power at the utilisation (1 when unknown) x PUE x grid intensity, in kg.

    Power is the GPU model's idle-to-maximum curve (athanor.reference.power), the one the measured
    energy falls back on, so an idle GPU is never counted at zero watts; a GPU known only by its
    board power takes that curve's labelled fallback (idle a share of board power).
    """
    if c.gco2e_per_kwh is None:
        return None
    u = 1.0 if utilisation is None else utilisation
    board = power.curve(c.gpu_model)
    if board is None and c.board_power_w is not None:
        board = power.board_power_curve(c.gpu_model, c.board_power_w)
    if board is None:
        return None
    return gpu_hours * board.watts(u) / 1000 * c.pue * c.gco2e_per_kwh / 1000


def _find(candidates: Sequence[Candidate], instance_type: str) -> Candidate | None:
    matches = [c for c in candidates if c.instance_type.lower() == instance_type.strip().lower()]
    return next((c for c in matches if c.reference), matches[0] if matches else None)


def _speedup(cls: ClassInput, cur: Candidate, c: Candidate, bound: str) -> Speedup | None:
    """Throughput per GPU of ``c``'s GPU model over the current one's: fleet, benchmark, datasheet."""
    alpha = cls.scaling.alpha
    fleet = measured_speedup(
        [o for o in cls.observations if o.gpu_model == cur.gpu_model],
        [o for o in cls.observations if o.gpu_model == c.gpu_model],
        alpha,
    )
    if fleet is not None:
        return fleet
    bench = benchmarks.speedup(cls.model, cur.gpu_model, c.gpu_model, bound)
    if bench is not None:
        return Speedup(bench.value, bench.low, bench.high, "benchmark", bench.note)
    what = "dense FP16 TFLOPS" if bound == "compute" else "memory bandwidth"
    low = benchmarks.datasheet_exponent_low()
    target, now = c.speed(bound), cur.speed(bound)
    if target is None:
        return None
    if now is not None:
        return datasheet_speedup(
            target / now, low, f"datasheet {what} ratio, {c.gpu_model} {target:g} / {cur.gpu_model} {now:g}"
        )
    k, observed = cls.scaling.coefficient, cls.current_samples_per_second
    if k is None or not observed:
        return None
    # No datasheet figure for the current GPU: the fit on the class's other runs (k x speed x
    # n^alpha) on the target against the samples/s observed on the current configuration.
    ref_gpus = cur.gpus_per_instance * cls.current_instance_count
    return datasheet_speedup(
        k * target * ref_gpus**alpha / observed,
        low,
        f"no {what} figure for {cur.gpu_model}: its observed {observed:,.0f} samples/s against the "
        f"class's fit on other GPUs, scaled by the datasheet {what}",
    )


def _option(
    cls: ClassInput,
    cur: Candidate,
    c: Candidate,
    count: int,
    bound: str,
    speedups: dict[str, Speedup | None] | None = None,
) -> Option | None:
    gpus = c.gpus_per_instance * count
    ref_gpus = cur.gpus_per_instance * cls.current_instance_count
    speedup: Speedup | None = None
    if c == cur and count == cls.current_instance_count:
        hours = cls.current_hours_per_run
    else:
        if c.gpu_model != cur.gpu_model:
            cache = {} if speedups is None else speedups
            if c.gpu_model not in cache:
                cache[c.gpu_model] = _speedup(cls, cur, c, bound)
            speedup = cache[c.gpu_model]
            if speedup is None or speedup.value <= 0:
                return None
        alpha = cls.scaling.alpha
        hours = (
            cls.current_hours_per_run
            * ref_gpus**alpha
            / ((1.0 if speedup is None else speedup.value) * gpus**alpha)
        )
    fits = cls.memory.fits(gpus, c.memory_per_gpu_gib)
    if fits is None:
        # No requirement known: never less GPU memory than the class runs on now.
        now = cur.memory_per_gpu_gib
        fits = (
            now is not None
            and c.memory_per_gpu_gib is not None
            and c.memory_per_gpu_gib >= now
            and gpus * c.memory_per_gpu_gib >= now * cur.gpus_per_instance * cls.current_instance_count
        )
    cost = hours * count * c.hourly_usd
    current_cost = cls.current_hours_per_run * cls.current_instance_count * cur.hourly_usd
    return Option(
        candidate=c,
        instance_count=count,
        hours_per_run=hours,
        cost_per_run_usd=cost,
        kgco2e_per_run=kgco2e(hours * gpus, c, cls.utilisation),
        fits_memory=bool(fits),
        speedup=speedup,
        # cost(s) = cost x value / s equals the current cost at s = value x cost / current cost.
        break_even_speedup=None
        if speedup is None or current_cost <= 0
        else speedup.value * cost / current_cost,
    )


def _frontier(options: Iterable[Option]) -> tuple[Option, ...]:
    """Configurations no other one beats on both hours and cost, fastest first."""
    out: list[Option] = []
    for o in sorted(options, key=lambda o: (o.hours_per_run, o.cost_per_run_usd)):
        if not out or o.cost_per_run_usd < out[-1].cost_per_run_usd - _TOLERANCE:
            out.append(o)
    return tuple(out)


def _rank(o: Option, current: Option) -> tuple[float, int, int, float, float]:
    # Cheapest first. At equal cost: the current configuration (no move for nothing), then fewer
    # GPUs (equal cost on more GPUs rests on linear scaling, which real jobs rarely reach), then the
    # faster, then the lower-carbon one.
    same = o.candidate == current.candidate and o.instance_count == current.instance_count
    return (
        round(o.cost_per_run_usd, 6),
        0 if same else 1,
        o.gpus,
        o.hours_per_run,
        o.kgco2e_per_run or math.inf,
    )


def plan_class(
    cls: ClassInput,
    candidates: Sequence[Candidate],
    *,
    deadline_slack: float = DEFAULT_DEADLINE_SLACK,
    counts: Sequence[int] = INSTANCE_COUNTS,
    ignore_deadline: bool = False,
    same_provider: bool = True,
    allowed: Collection[str] | None = None,
) -> ClassPlan:
    """The plan for one class; ``candidates`` must include the current type. Candidates of other
    providers than the current type's compete only with ``same_provider=False``; with ``allowed``
    (instance types, lower case) only those and the current type do."""
    purchase = purchase_words(cls.phase)

    def bare(reason: str) -> ClassPlan:
        return ClassPlan(
            cls.job_class, cls.team, cls.runs, cls.phase, purchase, cls.memory, cls.scaling,
            None, None, 0.0, (), None, reason,
        )  # fmt: skip

    cur = _find(candidates, cls.current_instance_type)
    if cur is None:
        return bare(f"{cls.current_instance_type} has no GPU figures or price in the catalog: not compared")
    bound = cls.scaling.bound
    if cur.speed(bound) is None and (
        cls.current_samples_per_second is None or cls.scaling.coefficient is None
    ):
        what = "dense FP16 TFLOPS" if bound == "compute" else "memory bandwidth"
        return bare(
            f"no {what} figure for {cur.gpu_model} ({cur.instance_type}) and no throughput observed on it"
            " beside a fit on other GPUs: hours cannot be scaled"
        )
    current = _option(cls, cur, cur, cls.current_instance_count, bound)
    assert current is not None  # its hours are the observed ones
    observed = cls.gpu_counts or cls.scaling.gpu_counts or (current.gpus,)
    window = (min(observed) / SCALING_EXTRAPOLATION, max(observed) * SCALING_EXTRAPOLATION)
    speedups: dict[str, Speedup | None] = {}  # per GPU model, worked out once per class
    # Every configuration the class could run on; shapes not sold on demand (spot, capacity blocks
    # or flex-start only) are priced, but are never a destination: the plan is at on-demand prices.
    priced = [
        o
        for c in candidates
        if c.provider == cur.provider or not same_provider
        if allowed is None or c.instance_type.lower() in allowed or c.instance_type == cur.instance_type
        for n in counts
        if n == 1 or c.gpus_per_instance >= MULTI_NODE_MIN_GPUS
        if window[0] <= c.gpus_per_instance * n <= window[1]
        if (o := _option(cls, cur, c, n, bound, speedups)) is not None
    ]
    options = [
        o for o in priced if o.candidate.sold_on_demand or o.candidate.instance_type == cur.instance_type
    ]
    barred = [o for o in priced if o not in options]
    if not any(o.candidate == cur and o.instance_count == cls.current_instance_count for o in options):
        options.append(current)
    limit = deadline_slack * cls.current_hours_per_run * (1 + _TOLERANCE)

    def in_time(o: Option) -> bool:
        return ignore_deadline or o.hours_per_run <= limit

    here = [o for o in options if o.fits_memory and o.candidate.reference]
    eligible = [o for o in here if in_time(o)]
    recommended = min(eligible, key=lambda o: _rank(o, current)) if eligible else None
    greener = None
    if recommended is not None and recommended.kgco2e_per_run is not None:
        cheaper_or_equal = [
            o
            for o in options
            if o.fits_memory
            and in_time(o)
            and o.kgco2e_per_run is not None
            and o.cost_per_run_usd <= recommended.cost_per_run_usd * (1 + 1e-6)
            and o.kgco2e_per_run < recommended.kgco2e_per_run * (1 - 1e-6)
        ]
        greener = min(cheaper_or_equal, key=lambda o: (o.kgco2e_per_run, o.cost_per_run_usd), default=None)
    savings = (
        0.0
        if recommended is None
        else (current.cost_per_run_usd - recommended.cost_per_run_usd) * cls.runs_per_month
    )
    speedup = None if recommended is None else recommended.speedup
    at_low = at_high = None if recommended is None else savings
    if recommended is not None and speedup is not None:
        # Hours, hence cost per run, go as 1 / speed-up: cost at s = cost x value / s.
        def saving_at(s: float) -> float:
            new = recommended.cost_per_run_usd * speedup.value / s
            return (current.cost_per_run_usd - new) * cls.runs_per_month

        at_low, at_high = saving_at(speedup.low), saving_at(speedup.high)
    plan = ClassPlan(
        job_class=cls.job_class,
        team=cls.team,
        runs=cls.runs,
        phase=cls.phase,
        purchase=purchase,
        memory=cls.memory,
        scaling=cls.scaling,
        current=current,
        recommended=recommended,
        monthly_savings_usd=savings,
        frontier=_frontier(here),
        greener=greener,
        reason="",
        options=tuple(options),
        speedup=speedup,
        break_even_speedup=None if recommended is None else recommended.break_even_speedup,
        monthly_savings_low_usd=at_low,
        monthly_savings_high_usd=at_high,
        benchmark_first=at_low is not None
        and at_high is not None
        and min(at_low, at_high) < -_TOLERANCE
        and max(at_low, at_high) > _TOLERANCE,
        gpu_window=window,
        data_transfer=None
        if recommended is None
        or not (recommended.candidate != cur or recommended.instance_count != cls.current_instance_count)
        else data_transfer(cls, cur, recommended.candidate),
        # Named only where one would have been chosen: it fits, in time, and costs less.
        not_on_demand=tuple(
            sorted(
                {
                    o.candidate.instance_type
                    for o in barred
                    if o.fits_memory
                    and o.candidate.reference
                    and in_time(o)
                    and (
                        recommended is None or o.cost_per_run_usd < recommended.cost_per_run_usd - _TOLERANCE
                    )
                }
            )
        ),
    )
    return replace(plan, reason=_reason(plan, cls, deadline_slack, ignore_deadline))


def _pct(new: float, old: float) -> str:
    return f"{(new / old - 1) * 100:+.0f} %" if old else "n/a"


def _reason(p: ClassPlan, cls: ClassInput, slack: float, ignore_deadline: bool) -> str:
    cur, rec = p.current, p.recommended
    assert cur is not None
    parts = []
    if rec is None:
        need = "unknown" if p.memory.total_gib is None else f"{p.memory.total_gib:,.0f} GiB"
        parts.append(
            f"no configuration holds the memory ({need}) "
            f"within {slack:g} x the current hours: nothing to recommend"
        )
    elif rec.candidate == cur.candidate and rec.instance_count == cur.instance_count:
        parts.append(f"stay on {cur.label}: nothing cheaper fits in memory within {slack:g} x the hours")
    else:
        when = (
            "beyond the deadline slack, to meet the team budget"
            if ignore_deadline
            else f"within the {slack:g} x deadline slack"
        )
        parts.append(
            f"move to {rec.label}: {_pct(rec.cost_per_run_usd, cur.cost_per_run_usd)} cost per run, "
            f"{rec.hours_per_run / cur.hours_per_run:.2f} x the hours, {when}"
        )
    if rec is not None and p.speedup is not None and p.moves:
        sp = p.speedup
        parts.append(
            f"speed-up of {rec.candidate.gpu_model} over {cur.candidate.gpu_model} {sp.value:.2f} "
            f"({sp.low:.2f}-{sp.high:.2f}, {sp.source}: {sp.note}); break-even {p.break_even_speedup:.2f}; "
            f"saving ${p.monthly_savings_low_usd:,.0f} to ${p.monthly_savings_high_usd:,.0f} a month over the range"
        )
        if p.benchmark_first:
            parts.append("benchmark first: the saving changes sign within the range, the move is not counted")
    if p.gpu_window is not None:
        lo, hi = p.gpu_window
        parts.append(
            f"only {lo:g}-{hi:g} GPUs considered: n^alpha is not extrapolated beyond "
            f"{SCALING_EXTRAPOLATION:g} x the GPU counts the class ran at"
        )
    mem = p.memory
    if mem.total_gib is None:
        parts.append(
            "memory requirement unknown (no peak or parameter count): kept at least the current GPU memory"
        )
    else:
        parts.append(f"memory {mem.total_gib:,.1f} GiB ({mem.basis}: {mem.note})")
    s = p.scaling
    if cur.candidate.speed(s.bound) is None and cls.current_samples_per_second is not None:
        what = "dense FP16 TFLOPS" if s.bound == "compute" else "memory bandwidth"
        parts.append(
            f"no {what} figure for {cur.candidate.gpu_model}: hours elsewhere scaled from its observed "
            f"{cls.current_samples_per_second:,.0f} samples/s against the fit on the class's other runs"
        )
    if s.basis == "fitted":
        parts.append(f"{s.bound}-bound scaling alpha {s.alpha:.2f} ({s.note})")
    elif s.basis == "assumed":
        parts.append(f"{s.bound}-bound, {s.note}")
    else:
        parts.append("no throughput data: hours scaled by the datasheet TFLOPS ratio, linear in GPUs")
    if cls.utilisation is None:
        parts.append("GPU utilisation unknown: carbon at full board power")
    else:
        parts.append(
            f"carbon at the measured mean GPU utilisation, {100 * cls.utilisation:.0f} % (telemetry)"
        )
    if p.greener is not None and rec is not None:
        parts.append(
            f"lower carbon at no extra cost: {p.greener.label}, "
            f"{_pct(p.greener.kgco2e_per_run or 0, rec.kgco2e_per_run or 0)} CO2e"
        )
    if p.data_transfer is not None:
        parts.append(p.data_transfer.note)
    if p.not_on_demand:
        parts.append(
            "cheaper but not offered, as not sold on demand (spot, capacity blocks or flex-start only): "
            f"{', '.join(p.not_on_demand)}"
        )
    parts.append(f"buy as: {p.purchase}")
    return "; ".join(parts)


def apply_team_budgets(
    plans: Sequence[ClassPlan],
    classes: Sequence[ClassInput],
    candidates: Sequence[Candidate],
    budgets: Mapping[str, float],
    *,
    deadline_slack: float = DEFAULT_DEADLINE_SLACK,
    counts: Sequence[int] = INSTANCE_COUNTS,
    same_provider: bool = True,
    allowed: Collection[str] | None = None,
) -> list[ClassPlan]:
    """Where a team's recommended monthly cost exceeds its budget ($/month), let its classes run
    slower than the deadline, biggest saving first, until the team is within budget."""
    by_class = {c.job_class: c for c in classes}
    out = list(plans)
    for team, budget in budgets.items():
        idx = [i for i, p in enumerate(out) if p.team == team and p.recommended is not None]

        def monthly(i: int) -> float:
            p = out[i]
            return p.recommended.cost_per_run_usd * by_class[p.job_class].runs_per_month  # type: ignore[union-attr]

        total = sum(monthly(i) for i in idx)
        if total <= budget:
            continue
        relaxed = {
            i: plan_class(
                by_class[out[i].job_class], candidates, deadline_slack=deadline_slack, counts=counts,
                ignore_deadline=True, same_provider=same_provider, allowed=allowed,
            )
            for i in idx
        }  # fmt: skip
        gain = {
            i: monthly(i)
            - relaxed[i].recommended.cost_per_run_usd * by_class[out[i].job_class].runs_per_month  # type: ignore[union-attr]
            for i in idx
            if relaxed[i].recommended is not None
        }
        for i in sorted(gain, key=gain.__getitem__, reverse=True):
            if total <= budget or gain[i] <= 0:
                break
            total -= gain[i]
            out[i] = relaxed[i]
        if total > budget:
            for i in idx:
                out[i] = replace(
                    out[i],
                    reason=out[i].reason + f"; team {team} stays over its budget of ${budget:,.0f}/month",
                )
    return out


# --- classes from job runs ---------------------------------------------------------------------


def _catalog_figures(instance_type: str) -> tuple[float | None, float | None]:
    """(dense FP16 TFLOPS, memory bandwidth GB/s) per GPU of an instance type, from the catalog."""
    inst = catalog.gpu_instance(instance_type)
    g = None if inst is None else catalog.gpu(inst.gpu_model)
    return (None, None) if g is None else (g.fp16_dense_tflops, g.memory_bandwidth_gbps)


def _catalog_gpu_model(instance_type: str) -> str | None:
    inst = catalog.gpu_instance(instance_type)
    return None if inst is None else inst.gpu_model


def _catalog_spec(instance_type: str) -> tuple[int, float | None] | None:
    """(GPUs per instance, GiB per GPU) of a catalogued GPU instance type; None if not in the catalog."""
    inst = catalog.gpu_instance(instance_type)
    return None if inst is None else (inst.gpu_count, inst.gpu_memory_gib)


# Examples named per reason: enough to find the rows, few enough for one line.
_EXAMPLES = 3


def plausible_runs(
    runs: pd.DataFrame, spec: Callable[[str], tuple[int, float | None] | None] = _catalog_spec
) -> tuple[pd.DataFrame, list[str]]:
    """The runs a plan can rest on, and one note per reason others are left out.

    A run on a type the catalog does not know cannot be priced or scaled; one on fewer than one
    or more than its type's GPUs, or with a peak above its GPU's memory, is not what ran (a log's
    unit or column slip): kept, it would size the class's memory or GPU count on an impossibility.
    """
    specs = {t: spec(str(t)) for t in runs["instance_type"].dropna().unique()}
    count = runs["instance_type"].map(lambda t: None if specs.get(t) is None else specs[t][0])
    memory = runs["instance_type"].map(lambda t: None if specs.get(t) is None else specs[t][1])
    unknown = count.isna()
    gpus = pd.to_numeric(runs["gpus_per_instance"], errors="coerce")
    bad_gpus = ~unknown & ~((gpus >= 1) & (gpus <= count.astype("float64")))
    peak = pd.to_numeric(runs["peak_gpu_memory_gib"], errors="coerce").astype("float64")
    bad_peak = ~unknown & ~bad_gpus & peak.notna() & memory.notna() & (peak > memory.astype("float64"))
    notes = []

    def note(mask: pd.Series, why: str, example: Callable[[Any], str]) -> None:
        if mask.any():
            rows = runs[mask]
            shown = "; ".join(example(r) for r in rows.head(_EXAMPLES).itertuples(index=False))
            more = f"; and {len(rows) - _EXAMPLES} more" if len(rows) > _EXAMPLES else ""
            notes.append(
                f"{len(rows)} run{'s' if len(rows) != 1 else ''} {why}, left out of the plan: {shown}{more}"
            )

    note(
        unknown,
        "on instance types not in the GPU catalog (`athanor gpu-catalog` lists it)",
        lambda r: f"{r.job_id} on {r.instance_type}",
    )
    note(
        bad_gpus,
        "with gpus_per_instance outside 1 to its type's GPUs",
        lambda r: f"{r.job_id}: {r.gpus_per_instance} on {r.instance_type} ({specs[r.instance_type][0]})",
    )
    note(
        bad_peak,
        "with a peak GPU memory above its GPU's",
        lambda r: (
            f"{r.job_id}: {float(r.peak_gpu_memory_gib):,g} GiB on {r.instance_type} "
            f"({specs[r.instance_type][1]:g} GiB per GPU)"
        ),
    )
    return runs[~(unknown | bad_gpus | bad_peak)], notes


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


_OPTIONAL_COLUMNS = (
    "team",
    "project",
    "model",
    "model_params",
    "peak_gpu_memory_gib",
    "samples_per_second",
    "phase",
)


@dataclass(frozen=True)
class CurrentConfiguration:
    """A class's current configuration: the (instance type, count) most of its runs used, ties
    to the one with more hours. The one statement of a class's current size: the GPU plan moves
    from it and the fewer-GPUs step (gpu_usage.underused_recommendations) names it."""

    instance_type: str
    instance_count: int
    gpus: int  # instance_count x the GPUs per instance its runs on it recorded (the most common)
    runs: int  # the class's runs on it
    class_runs: int  # all the class's runs

    @property
    def label(self) -> str:
        return f"{self.instance_count} x {self.instance_type}"


def _classed_runs(
    runs: pd.DataFrame,
    group_by: Sequence[str],
    spec: Callable[[str], tuple[int, float | None] | None],
) -> tuple[pd.DataFrame, list[str]]:
    """The plausible runs with their `gpus`, `hours` and `job_class` columns, and the notes on
    the runs left out (plausible_runs)."""
    df = runs.copy()
    unknown = [c for c in group_by if c not in df.columns and c not in _OPTIONAL_COLUMNS]
    if unknown:
        raise ValueError(f"no job-run column {', '.join(unknown)} to group by")
    for col in (*group_by, *_OPTIONAL_COLUMNS):
        if col not in df.columns:
            df[col] = None
    df, skipped = plausible_runs(df[df["instance_type"].notna()], spec)
    df = df.copy()
    df["gpus"] = df["instance_count"].astype(int) * df["gpus_per_instance"].astype(int)
    df["hours"] = df["duration_s"].astype(float) / 3600.0
    # A grouping column no run records (a log without phases) would only append "unknown".
    cols = [c for c in group_by if df[c].notna().any()] or list(group_by)
    key = df[cols].astype("object").where(df[cols].notna(), "unknown").astype(str)
    # Column by column: a row-wise join calls Python once per job run (seconds at 100 k runs).
    df["job_class"] = functools.reduce(lambda joined, col: joined + "/" + key[col], cols[1:], key[cols[0]])
    return df, skipped


def _current_configuration(g: pd.DataFrame) -> CurrentConfiguration:
    """The current configuration of one class's runs (`_classed_runs` rows)."""
    counts = g["instance_count"].astype(int)
    configs = Counter(zip(g["instance_type"], counts, strict=True))
    gpu_hours = g.groupby(["instance_type", counts])["hours"].sum().to_dict()
    (itype, icount), n = max(configs.items(), key=lambda kv: (kv[1], gpu_hours.get(kv[0], 0.0)))
    on_it = g[(g["instance_type"] == itype) & (counts == icount)]
    return CurrentConfiguration(
        str(itype), int(icount), int(on_it["gpus"].astype(int).mode().max()), int(n), len(g)
    )


def current_configurations(
    runs: pd.DataFrame,
    *,
    group_by: Sequence[str] = DEFAULT_GROUP_BY,
    spec: Callable[[str], tuple[int, float | None] | None] = _catalog_spec,
) -> dict[str, CurrentConfiguration]:
    """Each class's current configuration, formed as class_inputs forms it (the same runs)."""
    df, _ = _classed_runs(runs, group_by, spec)
    return {str(c): _current_configuration(g) for c, g in df.groupby("job_class", sort=True)}


def class_inputs(
    runs: pd.DataFrame,
    *,
    group_by: Sequence[str] = DEFAULT_GROUP_BY,
    bound: str | None = None,
    figures: Callable[[str], tuple[float | None, float | None]] = _catalog_figures,
    gpu_models: Callable[[str], str | None] = _catalog_gpu_model,
    spec: Callable[[str], tuple[int, float | None] | None] = _catalog_spec,
) -> tuple[list[ClassInput], list[str]]:
    """Workload classes from job runs (the ``job_runs`` columns, the optional ones where present).

    ``figures`` gives an instance type's per-GPU (TFLOPS, bandwidth) for the throughput fit,
    ``gpu_models`` its GPU model (runs on two models give the class's own speed-up), ``spec``
    its (GPUs, GiB per GPU) to leave out impossible runs (``plausible_runs``).
    Returns the classes and one note per reason runs were left out or a class could not be formed
    (no run with a duration).
    """
    df, skipped = _classed_runs(runs, group_by, spec)
    classes = []
    for job_class, g in df.groupby("job_class", sort=True):
        current = _current_configuration(g)
        itype, icount = current.instance_type, current.instance_count
        on_current = g[(g["instance_type"] == itype) & (g["instance_count"].astype(int) == icount)]
        done = on_current[(on_current["state"] == "completed") & (on_current["hours"] > 0)]
        basis = done if len(done) else on_current[on_current["hours"] > 0]
        if basis.empty:
            skipped.append(f"{job_class}: no run on {icount} x {itype} with a duration")
            continue
        start = pd.to_datetime(g["start_time"]).min()
        end = pd.to_datetime(g["end_time"]).max()
        span_h = 0.0 if pd.isna(start) or pd.isna(end) else (end - start).total_seconds() / 3600
        observations = []
        for r in g.itertuples(index=False):
            sps = _num(r.samples_per_second)
            if sps is not None:
                tflops, bw = figures(r.instance_type)
                observations.append(Observation(int(r.gpus), sps, tflops, bw, gpu_models(r.instance_type)))
        observed_sps = [v for v in map(_num, on_current["samples_per_second"]) if v is not None and v > 0]
        phases = [p for p in g["phase"] if isinstance(p, str) and p]
        teams = [t for t in g["team"] if isinstance(t, str) and t]
        models = [m for m in g["model"] if isinstance(m, str) and m]
        classes.append(
            ClassInput(
                job_class=str(job_class),
                runs=len(g),
                current_instance_type=str(itype),
                current_instance_count=int(icount),
                current_hours_per_run=float(basis["hours"].median()),
                # A window shorter than a day is read as a day: a burst is not a monthly rate.
                runs_per_month=len(g) * HOURS_PER_MONTH / max(span_h, 24.0),
                memory=memory_requirement(
                    zip(map(_num, g["peak_gpu_memory_gib"]), g["gpus"].astype(int), strict=True),
                    map(_num, g["model_params"]),
                ),
                scaling=fit_class_scaling(observations, bound),  # type: ignore[arg-type]
                team=Counter(teams).most_common(1)[0][0] if teams else None,
                phase=Counter(phases).most_common(1)[0][0] if phases else None,
                current_samples_per_second=float(np.median(observed_sps)) if observed_sps else None,
                model=Counter(models).most_common(1)[0][0] if models else None,
                observations=tuple(observations),
                gpu_counts=tuple(sorted({int(n) for n in g["gpus"]})),
                job_ids=tuple(str(j) for j in g["job_id"] if isinstance(j, str) and j),
            )
        )
    return classes, skipped


def plan(
    runs: pd.DataFrame,
    *,
    deadline_slack: float = DEFAULT_DEADLINE_SLACK,
    candidate_types: Iterable[str] | None = None,
    group_by: Sequence[str] = DEFAULT_GROUP_BY,
    team_budgets: Mapping[str, float] | None = None,
    candidates: Sequence[Candidate] | None = None,
) -> list[ClassPlan]:
    """The GPU plan of every class in ``runs``: see the module docstring."""
    given = {} if candidates is None else {c.instance_type.lower(): c for c in candidates}

    def figures(instance_type: str) -> tuple[float | None, float | None]:
        c = given.get(str(instance_type).strip().lower())
        return (
            _catalog_figures(instance_type) if c is None else (c.fp16_dense_tflops, c.memory_bandwidth_gbps)
        )

    def gpu_models(instance_type: str) -> str | None:
        c = given.get(str(instance_type).strip().lower())
        return _catalog_gpu_model(instance_type) if c is None else c.gpu_model

    def spec(instance_type: str) -> tuple[int, float | None] | None:
        c = given.get(str(instance_type).strip().lower())
        return _catalog_spec(instance_type) if c is None else (c.gpus_per_instance, c.memory_per_gpu_gib)

    classes, _ = class_inputs(runs, group_by=group_by, figures=figures, gpu_models=gpu_models, spec=spec)
    return plan_classes(
        classes,
        deadline_slack=deadline_slack,
        candidate_types=candidate_types,
        team_budgets=team_budgets,
        candidates=candidates,
    )


def plan_classes(
    classes: Sequence[ClassInput],
    *,
    deadline_slack: float = DEFAULT_DEADLINE_SLACK,
    candidate_types: Iterable[str] | None = None,
    team_budgets: Mapping[str, float] | None = None,
    candidates: Sequence[Candidate] | None = None,
) -> list[ClassPlan]:
    """The plan of classes already formed (``class_inputs``)."""
    # Named candidates may come from any provider; by default a class is compared within its own.
    same_provider = candidate_types is None
    wanted = None if candidate_types is None else frozenset(t.strip().lower() for t in candidate_types)
    if candidates is None:
        candidates = candidates_from_catalog()
    plans = [
        plan_class(c, candidates, deadline_slack=deadline_slack, same_provider=same_provider, allowed=wanted)
        for c in classes
    ]
    if team_budgets:
        plans = apply_team_budgets(
            plans,
            classes,
            candidates,
            team_budgets,
            deadline_slack=deadline_slack,
            same_provider=same_provider,
            allowed=wanted,
        )
    return plans


TABLE_COLUMNS = (
    "job_class",
    "runs",
    "current",
    "recommended",
    "memory_gib",
    "hours_now",
    "hours_new",
    "usd_run_now",
    "usd_run_new",
    "usd_month_saved",
    "kg_co2e_now",
    "kg_co2e_new",
    "note",
)


def table_rows(plans: Sequence[ClassPlan]) -> list[tuple[object, ...]]:
    """One row per class for a terminal table (TABLE_COLUMNS).

    A class without a plan (a '-') carries its reason in `note` (a type outside the catalogue,
    no option within the deadline); a planned class's reasoning is long and stays in the JSON.
    """

    def cfg(o: Option | None) -> str:
        return "-" if o is None else f"{o.instance_count} x {o.candidate.instance_type}"

    def num(v: float | None, digits: int) -> object:
        return None if v is None else round(v, digits)

    rows = []
    for p in plans:
        cur, rec = p.current, p.recommended
        rows.append(
            (
                p.job_class,
                p.runs,
                cfg(cur),
                cfg(rec),
                num(p.memory.total_gib, 1),
                num(None if cur is None else cur.hours_per_run, 2),
                num(None if rec is None else rec.hours_per_run, 2),
                num(None if cur is None else cur.cost_per_run_usd, 2),
                num(None if rec is None else rec.cost_per_run_usd, 2),
                round(p.monthly_savings_usd, 2),
                num(None if cur is None else cur.kgco2e_per_run, 2),
                num(None if rec is None else rec.kgco2e_per_run, 2),
                p.reason if cur is None or rec is None else "",
            )
        )
    return rows
