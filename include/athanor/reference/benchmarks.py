"""Published per-workload training benchmarks per GPU model (`data/gpu_benchmarks.csv`).

The GPU plan's second source of a cross-GPU speed-up, after the class's own runs and before the
datasheet (athanor.recommend.gpu_choice). One row per MLPerf Training benchmark x system: the
score in minutes (MLPerf's rule: the fastest and the slowest run dropped, the mean of the rest)
and the fastest and slowest kept runs, each row citing ``sources.csv``. Only figures read from a
stored source are listed: a family without a row falls back to the datasheet.

A benchmark applies to a class whose model name contains one of its ``model_match`` names (a
BERT row to ``bert-base``, ``roberta-l``). It compares two GPU models of the same round and GPU
count. A catalog GPU without rows borrows those of its twin: same architecture and the same
datasheet figure that bounds the class (dense FP16 for compute-bound, memory bandwidth for
memory-bound work), so an A100-40GB reads as the benchmarked A100-80GB for compute-bound work
only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from athanor.reference import gpus as catalog
from athanor.reference.gpus import _cited, _rows, _unique
from athanor.reference.paths import DATA_DIR

BENCHMARKS_CSV = DATA_DIR / "gpu_benchmarks.csv"
_HEADER = (
    "benchmark",
    "model_family",
    "model_match",
    "gpu_model",
    "accelerator",
    "gpus",
    "minutes",
    "minutes_fastest_kept",
    "minutes_slowest_kept",
    "runs",
    "system",
    "software",
    "status",
    "round",
    "run_dates",
    "source_id",
)


@dataclass(frozen=True)
class BenchmarkResult:
    benchmark: str
    model_family: str
    model_match: tuple[str, ...]  # lower-case names a class's model name may contain
    gpu_model: str  # as gpus.csv names it
    accelerator: str  # as the submission names it
    gpus: int
    minutes: float  # the score: mean of the runs left after dropping the fastest and slowest
    minutes_fastest_kept: float
    minutes_slowest_kept: float
    runs: int
    system: str
    software: str
    status: str
    round: str
    run_dates: str
    source_id: str

    def matches(self, model: str | None) -> bool:
        name = (model or "").lower()
        return any(m in name for m in self.model_match)


@dataclass(frozen=True)
class BenchmarkSpeedup:
    """Throughput of ``to`` over ``from`` on one benchmark: time on ``from`` / time on ``to``."""

    benchmark: str
    model_family: str
    value: float  # score / score
    low: float  # slowest kept run on the faster side against the fastest on the other
    high: float
    round: str
    source_id: str
    from_row: BenchmarkResult
    to_row: BenchmarkResult

    @property
    def note(self) -> str:
        return (
            f"{self.round} {self.model_family}: {self.from_row.gpus} x {self.from_row.accelerator} "
            f"{self.from_row.minutes:g} min, {self.to_row.gpus} x {self.to_row.accelerator} "
            f"{self.to_row.minutes:g} min (source {self.source_id})"
        )


@cache
def results() -> tuple[BenchmarkResult, ...]:
    """Every row of gpu_benchmarks.csv, in the file's order; each GPU model must be in gpus.csv."""
    rows = _rows(BENCHMARKS_CSV, _HEADER)
    _unique(BENCHMARKS_CSV, ((r["benchmark"], r["round"], r["system"]) for r in rows))
    out = []
    for i, r in enumerate(rows, start=2):
        catalog.gpu(r["gpu_model"])  # a KeyError names a GPU gpus.csv lacks
        out.append(
            BenchmarkResult(
                benchmark=r["benchmark"],
                model_family=r["model_family"],
                model_match=tuple(m.strip().lower() for m in r["model_match"].split("|") if m.strip()),
                gpu_model=r["gpu_model"],
                accelerator=r["accelerator"],
                gpus=int(r["gpus"]),
                minutes=float(r["minutes"]),
                minutes_fastest_kept=float(r["minutes_fastest_kept"]),
                minutes_slowest_kept=float(r["minutes_slowest_kept"]),
                runs=int(r["runs"]),
                system=r["system"],
                software=r["software"],
                status=r["status"],
                round=r["round"],
                run_dates=r["run_dates"],
                source_id=_cited(BENCHMARKS_CSV, f"row {i}", r["source_id"]),
            )
        )
    return tuple(out)


def _figure(gpu_model: str, bound: str) -> tuple[str, float] | None:
    try:
        g = catalog.gpu(gpu_model)
    except KeyError:
        return None
    figure = None if g is None else (g.fp16_dense_tflops if bound == "compute" else g.memory_bandwidth_gbps)
    return None if g is None or figure is None else (g.architecture, figure)


def _benchmarked_as(gpu_model: str, bound: str) -> str | None:
    """The GPU model whose rows stand for ``gpu_model``: itself, else its twin (module docstring)."""
    listed = {r.gpu_model for r in results()}
    if gpu_model in listed:
        return gpu_model
    mine = _figure(gpu_model, bound)
    twins = sorted(m for m in listed if mine is not None and _figure(m, bound) == mine)
    return twins[0] if twins else None


def speedup(model: str | None, from_gpu: str, to_gpu: str, bound: str = "compute") -> BenchmarkSpeedup | None:
    """The benchmark speed-up of ``to_gpu`` over ``from_gpu`` for a class of that model name: the
    first matching benchmark (file order) with both GPU models at the same GPU count in one round."""
    a, b = _benchmarked_as(from_gpu, bound), _benchmarked_as(to_gpu, bound)
    if a is None or b is None or a == b:
        return None
    for r in results():
        if r.gpu_model != a or not r.matches(model):
            continue
        other = next(
            (
                o
                for o in results()
                if o.gpu_model == b and o.benchmark == r.benchmark and o.round == r.round and o.gpus == r.gpus
            ),
            None,
        )
        if other is not None:
            return BenchmarkSpeedup(
                benchmark=r.benchmark,
                model_family=r.model_family,
                value=r.minutes / other.minutes,
                low=r.minutes_fastest_kept / other.minutes_slowest_kept,
                high=r.minutes_slowest_kept / other.minutes_fastest_kept,
                round=r.round,
                source_id=r.source_id,
                from_row=r,
                to_row=other,
            )
    return None


@cache
def datasheet_exponent_low() -> float:
    """How much of a datasheet ratio the benchmarks realise at worst: the least of
    ln(measured speed-up) / ln(dense FP16 ratio) over the table's pairs of GPU models.

    The GPU plan's datasheet speed-up d is given the range [d^g, d] (d > 1) or [d, d^g] (d < 1)
    with this g: a newer GPU's peak is reached only by the compute-bound part of a run, so the
    realised ratio lies between the peak ratio and a power of it the benchmarks have seen. On the
    v2.1 table: DLRM, 1.697 / 1.063 = 1.596 against 989 / 312 = 3.170, g = 0.405."""
    out = 1.0
    for r in results():
        for o in results():
            if o.benchmark != r.benchmark or o.round != r.round or o.gpus != r.gpus:
                continue
            fa, fb = _figure(r.gpu_model, "compute"), _figure(o.gpu_model, "compute")
            if fa is None or fb is None or fb[1] <= fa[1]:
                continue
            measured = r.minutes / o.minutes
            if measured > 1:
                out = min(out, math.log(measured) / math.log(fb[1] / fa[1]))
    return out
