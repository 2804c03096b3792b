"""Spot instances for checkpointed training jobs: wall time, checkpoint interval,
completion rate (analytic and Monte Carlo), a deadline-safe policy and
interruption rates from the AWS Spot Advisor feed.

Model (the same in the formulas and in the simulators): a job needs ``work_h``
hours of compute. It checkpoints every ``interval_h`` hours of work; to keep the
segments equal the interval is shortened to ``work_h / ceil(work_h / interval_h)``.
One *attempt* of a segment runs the work and then writes a checkpoint
(``checkpoint_h``), the last segment included (the final save). Interruptions
arrive as a Poisson process at ``rate_per_h`` (already multiplied by the number
of instances: a job on N instances dies when any of them is reclaimed, about
N·λ). An interruption loses the work since the last checkpoint and costs
``restart_h`` (new instance, load the checkpoint) before the next attempt; the
restart itself is not interrupted.

A job class is described by the quantile function of its job durations: the
fitted, censoring-aware distribution of ``athanor.model.durations`` where there is
one (``athanor.model.demand.ClassDurations``), else a lognormal through the median
and p90. Its completion rate is the share of simulated jobs (durations drawn from
that distribution, interruptions event by event) that finish by their deadline,
stated with a Wilson interval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import signal, stats

# How a Spot Advisor bucket reads as one number (BUCKET_MONTHLY_FRACTION, re-exported here) and
# how much it weighs against the fleet's own spot runs: one source, the reference module.
from athanor.reference.spot_advisor import BUCKET_MONTHLY_FRACTION, PRIOR_INSTANCE_HOURS
from athanor.reference.vocabulary import HOURS_PER_MONTH

# z-score of the 90th percentile of a standard normal: p90 = median·exp(z90·σ).
_Z90 = 1.2815515655446004

# Job logs have one-second resolution; a simulated job is never shorter.
MIN_WORK_H = 1.0 / 3600.0

# Confidence level of every completion interval.
COMPLETION_CONFIDENCE = 0.95

# Equal-probability durations the deadline-safe policy is simulated on, per class.
DURATION_POINTS = 9


# --------------------------------------------------------------------------- rates


def monthly_fraction_to_rate_per_h(fraction: float) -> float:
    """Hourly Poisson rate λ whose chance of ≥1 interruption in a 730 h month is ``fraction``."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"monthly interruption fraction must be in [0, 1), got {fraction}")
    return -math.log1p(-fraction) / HOURS_PER_MONTH


@dataclass(frozen=True)
class InterruptionEstimate:
    """A pool's interruptions per instance-hour: the Spot Advisor's figure updated by the fleet's runs.

    Conjugate Gamma-Poisson: interruptions arrive as a Poisson process of rate λ per
    instance-hour; the prior is Gamma(shape a, rate b) with b = ``prior_instance_hours``
    pseudo instance-hours and a = prior rate x b, so its mean is the advisor's rate. After k
    interruptions in h instance-hours the posterior is Gamma(a + k, b + h), whose mean
    (a + k) / (b + h) is the rate ``used``: the advisor's where the fleet has run little spot,
    the fleet's own where it has run much more than b instance-hours.
    """

    interruptions: int  # k: restarts and preemptions of the fleet's spot runs in the pool
    instance_hours: float  # h: those runs' instance-hours (wall time x instances)
    prior_rate_per_h: float  # the advisor bucket's rate
    prior_instance_hours: float = PRIOR_INSTANCE_HOURS  # b

    def __post_init__(self) -> None:
        if self.interruptions < 0 or self.instance_hours < 0 or self.prior_rate_per_h < 0:
            raise ValueError("interruptions, instance-hours and the prior rate must be >= 0")
        if self.prior_instance_hours <= 0:
            raise ValueError("the prior's strength must be > 0 pseudo instance-hours")

    @property
    def shape(self) -> float:
        return self.prior_rate_per_h * self.prior_instance_hours + self.interruptions

    @property
    def rate(self) -> float:
        return self.prior_instance_hours + self.instance_hours

    @property
    def observed(self) -> float | None:
        """k / h; None when the fleet ran no spot instance-hours in the pool."""
        return self.interruptions / self.instance_hours if self.instance_hours > 0 else None

    @property
    def used(self) -> float:
        """The posterior mean (a + k) / (b + h)."""
        return self.shape / self.rate

    def interval(self, level: float = COMPLETION_CONFIDENCE) -> tuple[float, float]:
        """Equal-tailed credible interval of λ (the posterior's quantiles)."""
        if self.shape <= 0:
            return 0.0, 0.0
        low, high = stats.gamma(self.shape, scale=1.0 / self.rate).ppf([(1 - level) / 2, (1 + level) / 2])
        return float(low), float(high)

    def to_dict(self) -> dict[str, object]:
        """The per-class ``interruptions_per_instance_hour`` record (rates per instance-hour)."""
        low, high = self.interval()
        return {
            "observed": self.observed,
            "instance_hours_observed": self.instance_hours,
            "interruptions_observed": self.interruptions,
            "prior": self.prior_rate_per_h,
            "prior_instance_hours": self.prior_instance_hours,
            "used": self.used,
            "low": low,
            "high": high,
            "method": "Gamma-Poisson: the Spot Advisor rate as a Gamma prior worth "
            f"{self.prior_instance_hours:g} instance-hours, updated by the fleet's spot runs; "
            f"used = posterior mean, low-high its {100 * COMPLETION_CONFIDENCE:.0f} % interval",
        }


def fleet_interruption_rate(
    interruptions: int,
    instance_hours: float,
    prior_rate_per_h: float,
    prior_instance_hours: float = PRIOR_INSTANCE_HOURS,
) -> InterruptionEstimate:
    """The pool's rate from k interruptions in h spot instance-hours, the advisor's rate as prior."""
    return InterruptionEstimate(
        int(interruptions), float(instance_hours), float(prior_rate_per_h), prior_instance_hours
    )


def job_rate_per_h(instance_rate_per_h: float, instance_count: int) -> float:
    """A job on N instances stops when any one is reclaimed: about N·λ."""
    return float(instance_rate_per_h) * max(int(instance_count), 1)


def load_spot_advisor(path: str | Path, region: str = "us-east-1", os: str = "Linux") -> pd.DataFrame:
    """Spot Advisor feed -> one row per instance type with savings and hourly interruption rate."""
    feed = json.loads(Path(path).read_text())
    try:
        types = feed["spot_advisor"][region][os]
    except KeyError as exc:
        raise KeyError(f"no Spot Advisor entries for region={region!r} os={os!r}") from exc
    rows = []
    for instance_type, entry in sorted(types.items()):
        bucket = int(entry["r"])
        fraction = BUCKET_MONTHLY_FRACTION[bucket]
        rows.append(
            {
                "instance_type": instance_type,
                "savings_pct": float(entry["s"]),
                "interruption_bucket": bucket,
                "monthly_interruption_fraction": fraction,
                "rate_per_h": monthly_fraction_to_rate_per_h(fraction),
            }
        )
    return pd.DataFrame(rows)


def load_interruption_rates(
    spot_advisor_json_path: str | Path, region: str = "us-east-1", os: str = "Linux"
) -> dict[str, float]:
    """{instance_type: interruption rate per instance-hour} from a Spot Advisor snapshot."""
    table = load_spot_advisor(spot_advisor_json_path, region=region, os=os)
    return dict(zip(table["instance_type"], table["rate_per_h"].astype(float), strict=True))


# ---------------------------------------------------------------- wall time and τ


def expected_wall_time_h(
    work_h: float, rate_per_h: float, checkpoint_h: float, restart_h: float, interval_h: float
) -> float:
    """First-order expected wall time E[T] ≈ D(1 + C/τ + λ(R + τ/2))."""
    return work_h * (1.0 + checkpoint_h / interval_h + rate_per_h * (restart_h + interval_h / 2.0))


def young_interval_h(checkpoint_h: float, rate_per_h: float) -> float:
    """Young's checkpoint interval τ* = sqrt(2C/λ)."""
    if rate_per_h <= 0:
        return math.inf
    return math.sqrt(2.0 * checkpoint_h / rate_per_h)


def daly_interval_h(checkpoint_h: float, rate_per_h: float) -> float:
    """Daly's higher-order interval, for when C·λ is not small (μ = 1/λ)."""
    if rate_per_h <= 0:
        return math.inf
    mtbf_h = 1.0 / rate_per_h
    c = checkpoint_h
    if c >= 2.0 * mtbf_h:
        return mtbf_h
    return math.sqrt(2.0 * c * mtbf_h) * (1.0 + math.sqrt(c / (2.0 * mtbf_h)) / 3.0 + c / (18.0 * mtbf_h)) - c


def segments(work_h: float, interval_h: float) -> tuple[int, float]:
    """(number of equal segments, work per segment) for a job checkpointing every ``interval_h``."""
    if work_h <= 0:
        raise ValueError("work_h must be > 0")
    if not math.isfinite(interval_h) or interval_h >= work_h:
        return 1, float(work_h)
    count = math.ceil(work_h / interval_h - 1e-12)
    return count, work_h / count


def _segment_arrays(work_h: np.ndarray, interval_h: float) -> tuple[np.ndarray, np.ndarray]:
    """``segments`` for many jobs at once: (segment counts, work per segment)."""
    if np.any(work_h <= 0):
        raise ValueError("work_h must be > 0")
    if not math.isfinite(interval_h):
        return np.ones(work_h.shape, dtype=np.int64), work_h.astype(float)
    count = np.where(interval_h >= work_h, 1, np.ceil(work_h / interval_h - 1e-12)).astype(np.int64)
    return count, work_h / count


def _exact_wall_times_h(
    work_h: np.ndarray, rate_per_h: float, checkpoint_h: float, restart_h: float, interval_h: float
) -> np.ndarray:
    """``exact_expected_wall_time_h`` of every job in ``work_h`` (inf where it overflows)."""
    count, seg_h = _segment_arrays(work_h, interval_h)
    attempt_h = seg_h + checkpoint_h
    if rate_per_h <= 0:
        return count * attempt_h
    with np.errstate(over="ignore"):
        return count * np.expm1(rate_per_h * attempt_h) * (1.0 / rate_per_h + restart_h)


def exact_expected_wall_time_h(
    work_h: float, rate_per_h: float, checkpoint_h: float, restart_h: float, interval_h: float
) -> float:
    """Exact E[T] under the module's model: n·(e^{λa} − 1)(1/λ + R), a = segment + C."""
    count, seg_h = segments(work_h, interval_h)
    attempt_h = seg_h + checkpoint_h
    if rate_per_h <= 0:
        return count * attempt_h
    # Per segment: a geometric number of failed attempts, each costing the time to
    # the interruption (exponential truncated at a) plus the restart.
    return count * math.expm1(rate_per_h * attempt_h) * (1.0 / rate_per_h + restart_h)


def spot_pays(spot_rate: float, on_demand_rate: float, expected_wall_h: float, work_h: float) -> bool:
    """Spot pays when p_spot·E[T]/D < p_od (the extra wall time is billed at the spot rate)."""
    return spot_rate * expected_wall_h / work_h < on_demand_rate


# ------------------------------------------------------------ completion rate


def _trunc_exp_pmf(rate_per_h: float, upper_h: float, step_h: float, size: int) -> np.ndarray:
    """Exponential(λ) conditioned on X < upper, discretised to grid points i·step (rounding)."""
    edges = (np.arange(size + 1) - 0.5) * step_h
    edges[0] = 0.0
    edges = np.minimum(edges, upper_h)
    cdf = -np.expm1(-rate_per_h * edges)
    pmf = np.diff(cdf)
    return pmf / -math.expm1(-rate_per_h * upper_h)


def completion_probability(
    work_h: float,
    rate_per_h: float,
    checkpoint_h: float,
    restart_h: float,
    interval_h: float,
    deadline_h: float | None = None,
    max_restarts: int | None = None,
    grid_points: int = 4096,
) -> float:
    """P(job finishes by ``deadline_h`` with at most ``max_restarts`` restarts), numerically.

    Wall time = n·a + Σ_{j≤K}(X_j + R) with K ~ NegBinomial(n, e^{−λa}) failed
    attempts and X_j the time to each interruption (exponential truncated at a).
    We sum over K the probability that the losses fit in the slack, convolving
    the truncated-exponential pmf on a grid over [0, slack] (exact on that range
    because every term is non-negative).
    """
    count, seg_h = segments(work_h, interval_h)
    attempt_h = seg_h + checkpoint_h
    if rate_per_h <= 0:
        return 1.0 if deadline_h is None or count * attempt_h <= deadline_h else 0.0
    success = math.exp(-rate_per_h * attempt_h)
    failures = stats.nbinom(count, success)
    if deadline_h is None:
        return 1.0 if max_restarts is None else float(failures.cdf(max_restarts))
    slack_h = deadline_h - count * attempt_h
    if slack_h < 0:
        return 0.0
    k_max = int(failures.ppf(1.0 - 1e-12))
    if max_restarts is not None:
        k_max = min(k_max, max_restarts)
    if restart_h > 0:
        k_max = min(k_max, int(slack_h // restart_h))
    step_h = slack_h / (grid_points - 1) if slack_h > 0 else 1.0
    loss_pmf = _trunc_exp_pmf(rate_per_h, attempt_h, step_h, grid_points)
    sum_pmf = np.zeros(grid_points)
    sum_pmf[0] = 1.0  # zero failures: no loss
    total = 0.0
    for k in range(k_max + 1):
        if k > 0:
            sum_pmf = signal.fftconvolve(sum_pmf, loss_pmf)[:grid_points].clip(min=0.0)
        budget_h = slack_h - k * restart_h
        if budget_h < 0:
            break
        idx = min(int(math.floor(budget_h / step_h + 1e-9)), grid_points - 1)
        total += float(failures.pmf(k)) * float(sum_pmf[: idx + 1].sum())
    return min(max(total, 0.0), 1.0)


# --------------------------------------------------------------- Monte Carlo


@dataclass(frozen=True)
class SpotSimulation:
    """Per-job outcome of ``simulate_spot_jobs`` (arrays of length n_jobs)."""

    wall_time_h: np.ndarray
    restarts: np.ndarray
    completed: np.ndarray  # finished within the deadline and the retry budget

    @property
    def completion_rate(self) -> float:
        return float(self.completed.mean())

    @property
    def mean_wall_time_h(self) -> float:
        return float(self.wall_time_h.mean())


def simulate_spot_jobs(
    n_jobs: int,
    work_h: float | np.ndarray,
    rate_per_h: float,
    checkpoint_h: float,
    restart_h: float,
    interval_h: float,
    deadline_h: float | np.ndarray | None = None,
    max_restarts: int | None = None,
    seed: int = 0,
    max_events: int = 1_000_000,
) -> SpotSimulation:
    """Simulate jobs on spot event by event: exponential interruption times, lost work, restarts.

    ``work_h`` and ``deadline_h`` are one value for every job or one per job.
    """
    rng = np.random.default_rng(seed)
    work = np.broadcast_to(np.asarray(work_h, dtype=float), (n_jobs,))
    count, seg_h = _segment_arrays(work, interval_h)
    attempt_h = seg_h + checkpoint_h
    wall = np.zeros(n_jobs)
    restarts = np.zeros(n_jobs, dtype=np.int64)
    done_segments = np.zeros(n_jobs, dtype=np.int64)
    active = np.arange(n_jobs)
    for _ in range(max_events):
        if active.size == 0:
            break
        if rate_per_h > 0:
            to_interrupt = rng.exponential(1.0 / rate_per_h, size=active.size)
        else:
            to_interrupt = np.full(active.size, np.inf)
        ok = to_interrupt >= attempt_h[active]
        wall[active] += np.where(ok, attempt_h[active], to_interrupt + restart_h)
        done_segments[active] += ok
        restarts[active] += ~ok
        active = active[done_segments[active] < count[active]]
    else:
        raise RuntimeError("simulation did not finish: interruption rate too high for this job")
    completed = np.ones(n_jobs, dtype=bool)
    if deadline_h is not None:
        completed &= wall <= np.asarray(deadline_h, dtype=float) + 1e-9
    if max_restarts is not None:
        completed &= restarts <= max_restarts
    return SpotSimulation(wall_time_h=wall, restarts=restarts, completed=completed)


# ---------------------------------------------------- deadline-safe policy


@dataclass(frozen=True)
class DeadlineSafeResult:
    """Outcome of the Uniform Progress policy against pure spot and pure on-demand."""

    n_jobs: int
    deadline_h: float
    missed_deadlines: int
    mean_wall_time_h: float
    mean_spot_hours: float
    mean_on_demand_hours: float
    mean_cost_usd: float
    pure_spot_mean_cost_usd: float
    pure_spot_completion_rate: float
    on_demand_cost_usd: float

    @property
    def completion_rate(self) -> float:
        return 1.0 - self.missed_deadlines / self.n_jobs

    @property
    def savings_vs_on_demand_pct(self) -> float:
        return 100.0 * (1.0 - self.mean_cost_usd / self.on_demand_cost_usd)

    def to_dict(self) -> dict[str, float]:
        return {
            "n_jobs": self.n_jobs,
            "deadline_h": self.deadline_h,
            "missed_deadlines": self.missed_deadlines,
            "completion_rate": self.completion_rate,
            "mean_wall_time_h": self.mean_wall_time_h,
            "mean_spot_hours": self.mean_spot_hours,
            "mean_on_demand_hours": self.mean_on_demand_hours,
            "mean_cost_usd": self.mean_cost_usd,
            "pure_spot_mean_cost_usd": self.pure_spot_mean_cost_usd,
            "pure_spot_completion_rate": self.pure_spot_completion_rate,
            "on_demand_cost_usd": self.on_demand_cost_usd,
            "savings_vs_on_demand_pct": self.savings_vs_on_demand_pct,
        }


_NONE, _SPOT, _OD = 0, 1, 2


def simulate_uniform_progress(
    n_jobs: int,
    work_h: float,
    rate_per_h: float,
    checkpoint_h: float,
    restart_h: float,
    interval_h: float,
    deadline_h: float,
    spot_rate: float,
    on_demand_rate: float,
    seed: int = 0,
    max_events: int = 1_000_000,
) -> DeadlineSafeResult:
    """Deadline-safe spot ("Uniform Progress", Can't Be Late, NSDI 2024), simulated.

    At each checkpoint: run the next segment on spot if checkpointed progress is
    at or above the uniform-progress line D·t/deadline *and* an interruption at
    the very end of that segment would still leave time to restart on
    on-demand and finish (the segment is shortened to fit the slack when
    needed); if behind the line but safe, run one segment on on-demand; once
    not even a short spot segment is safe, finish on on-demand without
    checkpoints. Switching instance type, or restarting after an interruption,
    costs ``restart_h``. The slack deadline − t − remaining work never drops
    below the cost of that last restart, so no deadline is missed when
    deadline ≥ work.
    """
    rng = np.random.default_rng(seed)
    _, seg_h = segments(work_h, interval_h)
    eps = 1e-9
    t = np.zeros(n_jobs)
    done = np.zeros(n_jobs)  # checkpointed work, hours
    mode = np.full(n_jobs, _NONE)
    pending = np.zeros(n_jobs, dtype=bool)  # interrupted: the next start pays the restart
    spot_h = np.zeros(n_jobs)
    od_h = np.zeros(n_jobs)
    active = np.arange(n_jobs)
    for _ in range(max_events):
        if active.size == 0:
            break
        ta, wa, ma, pa = t[active], done[active], mode[active], pending[active]
        remaining_h = work_h - wa
        start_spot = np.where(pa | (ma == _OD), restart_h, 0.0)
        start_od = np.where(pa | (ma == _SPOT), restart_h, 0.0)
        slack_h = deadline_h - ta - remaining_h
        # Longest spot segment whose worst case (lost at its end, then restart on on-demand) still fits.
        fits_h = slack_h - start_spot - checkpoint_h - restart_h
        spot_work = np.minimum(np.minimum(seg_h, remaining_h), fits_h)
        # A short segment costs its checkpoint and, later, a switch to on-demand: below a
        # quarter of the regular segment (or C, or R) it is not worth it.
        safe = spot_work >= np.minimum(remaining_h, max(checkpoint_h, restart_h, 0.25 * seg_h, 1e-6)) - eps
        ahead = wa >= work_h * ta / deadline_h - eps
        go_spot = safe & ahead
        od_segment = safe & ~ahead
        finish = ~safe

        # Finish on on-demand: no more checkpoints needed.
        idx = active[finish]
        dt = start_od[finish] + remaining_h[finish]
        t[idx] += dt
        od_h[idx] += dt
        done[idx] = work_h

        # One segment on on-demand (checkpoint unless it is the last one).
        idx = active[od_segment]
        seg = np.minimum(seg_h, remaining_h[od_segment])
        last = seg >= remaining_h[od_segment] - eps
        dt = start_od[od_segment] + seg + np.where(last, 0.0, checkpoint_h)
        t[idx] += dt
        od_h[idx] += dt
        done[idx] = np.where(last, work_h, done[idx] + seg)
        mode[idx] = _OD
        pending[idx] = False

        # One attempt on spot.
        idx = active[go_spot]
        if idx.size:
            seg = spot_work[go_spot]
            attempt = seg + checkpoint_h
            if rate_per_h > 0:
                x = rng.exponential(1.0 / rate_per_h, size=idx.size)
            else:
                x = np.full(idx.size, np.inf)
            ok = x >= attempt
            dt = start_spot[go_spot] + np.where(ok, attempt, x)
            t[idx] += dt
            spot_h[idx] += dt
            finished = ok & (seg >= remaining_h[go_spot] - eps)
            done[idx] = np.where(finished, work_h, done[idx] + np.where(ok, seg, 0.0))
            mode[idx] = _SPOT
            pending[idx] = ~ok
        active = active[done[active] < work_h - eps]
    else:
        raise RuntimeError("uniform-progress simulation did not finish")
    pure = simulate_spot_jobs(
        n_jobs, work_h, rate_per_h, checkpoint_h, restart_h, interval_h, deadline_h=deadline_h, seed=seed + 1
    )
    cost = spot_h * spot_rate + od_h * on_demand_rate
    return DeadlineSafeResult(
        n_jobs=n_jobs,
        deadline_h=deadline_h,
        missed_deadlines=int((t > deadline_h + 1e-6).sum()),
        mean_wall_time_h=float(t.mean()),
        mean_spot_hours=float(spot_h.mean()),
        mean_on_demand_hours=float(od_h.mean()),
        mean_cost_usd=float(cost.mean()),
        pure_spot_mean_cost_usd=float(pure.wall_time_h.mean() * spot_rate),
        pure_spot_completion_rate=pure.completion_rate,
        on_demand_cost_usd=work_h * on_demand_rate,
    )


# ------------------------------------------------------- per job class decision


def wilson_interval(successes: int, trials: int, level: float = COMPLETION_CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of a proportion (``(0, 1)`` without trials)."""
    if trials <= 0:
        return 0.0, 1.0
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def lognormal_ppf_h(median_h: float, p90_h: float) -> Callable[[np.ndarray], np.ndarray]:
    """Quantile function (hours) of the lognormal with that median and p90."""
    sigma = math.log(p90_h / median_h) / _Z90 if p90_h > median_h > 0 else 0.0
    return lambda q: median_h * np.exp(sigma * stats.norm.ppf(q))


def duration_points_h(median_h: float, p90_h: float, points: int = 9) -> np.ndarray:
    """Representative job durations: equal-probability quantiles of a lognormal with that median/p90."""
    return lognormal_ppf_h(median_h, p90_h)((np.arange(points) + 0.5) / points)


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _interval_words(low: float, high: float) -> str:
    return f"{100 * COMPLETION_CONFIDENCE:.0f} % interval {100 * low:.1f}-{100 * high:.1f} %"


@dataclass(frozen=True)
class CheckpointUnlock:
    """What a class that does not checkpoint would gain by checkpointing at the Young/Daly interval."""

    interval_h: float  # checkpoint every this many hours of work
    checkpoint_h: float  # one save
    mode: str  # the mode the class would then get
    cost_ratio_vs_on_demand: float
    completion_rate: float
    monthly_saving_usd: float | None  # against running the class on on-demand

    def to_dict(self) -> dict[str, object]:
        return {
            "checkpoint_interval_h": self.interval_h if math.isfinite(self.interval_h) else None,
            "checkpoint_time_h": self.checkpoint_h,
            "mode": self.mode,
            "cost_ratio_vs_on_demand": self.cost_ratio_vs_on_demand,
            "completion_rate": self.completion_rate,
            "monthly_saving_usd": self.monthly_saving_usd,
        }


@dataclass(frozen=True)
class SpotAssessment:
    """Whether a job class should run on spot, and what that costs and risks."""

    job_class: str
    mode: str  # "spot" | "spot_deadline_safe" | "on_demand"
    rate_per_h: float  # job-level rate N·λ
    interval_h: float  # checkpoint interval used (Daly)
    wall_time_ratio: float  # E[T]/D, GPU-hour weighted over the class's durations
    cost_ratio_vs_on_demand: float  # expected cost of the chosen mode / on-demand cost
    spot_hours_share: float  # share of the class's billed hours that run on spot
    spot_dollar_share: float  # share of the class's dollars paid at spot rates
    completion_rate: float  # share of jobs finishing by their deadline in the chosen mode
    spot_completion_rate: float  # the same for plain spot (whatever the mode)
    reason: str
    # Of the simulated jobs behind completion_rate: how many, and the Wilson interval
    # (None on on-demand: nothing is simulated, every job runs to the end).
    simulated_jobs: int = 0
    completed_jobs: int = 0
    completion_interval: tuple[float, float] | None = None
    checkpointed: bool = True
    duration_model: str = "lognormal through the median and p90"
    monthly_on_demand_usd: float | None = None  # the class's work at on-demand prices, a month
    unlock: CheckpointUnlock | None = None  # set when the class does not checkpoint
    # Share of the class's GPU-hours already on spot today, and the spot rate / on-demand rate.
    spot_share_today: float = 0.0
    spot_price_ratio: float = math.nan
    # Plain spot's completion at the high and the low end of the interruption rate's interval
    # (the class's low and high predicted completion); None where not computed.
    spot_completion_bounds: tuple[float, float] | None = None

    @property
    def uses_spot(self) -> bool:
        return self.mode != "on_demand"

    @property
    def monthly_saving_usd(self) -> float | None:
        """What the verdict saves a month against how the class runs today (None without its cost).

        The class's work already on spot (``spot_share_today``) is already paid at the spot
        rate, with the rework its interruptions cost: the verdict saves nothing on it when it
        stays on spot, and loses the spot discount on it when it leaves. The rest is priced
        at on-demand today and at ``cost_ratio_vs_on_demand`` under the verdict. A class
        entirely on spot at the rate it is billed shows no spot saving.
        """
        if self.monthly_on_demand_usd is None:
            return None
        today = min(max(self.spot_share_today, 0.0), 1.0)
        if self.uses_spot:
            return self.monthly_on_demand_usd * (1.0 - today) * (1.0 - self.cost_ratio_vs_on_demand)
        if today == 0.0:
            return self.monthly_on_demand_usd * (1.0 - self.cost_ratio_vs_on_demand)
        return -self.monthly_on_demand_usd * today * (1.0 - self.spot_price_ratio)

    def to_dict(self) -> dict[str, object]:
        return {
            "job_class": self.job_class,
            "mode": self.mode,
            "rate_per_h": self.rate_per_h,
            "checkpoint_interval_h": self.interval_h if math.isfinite(self.interval_h) else None,
            "wall_time_ratio": self.wall_time_ratio,
            "cost_ratio_vs_on_demand": self.cost_ratio_vs_on_demand,
            "spot_hours_share": self.spot_hours_share,
            "spot_dollar_share": self.spot_dollar_share,
            "completion_rate": self.completion_rate,
            "completion_interval": None
            if self.completion_interval is None
            else list(self.completion_interval),
            "simulated_jobs": self.simulated_jobs,
            "completed_jobs": self.completed_jobs,
            "spot_completion_rate": self.spot_completion_rate
            if math.isfinite(self.spot_completion_rate)
            else None,
            "checkpointed": self.checkpointed,
            "duration_model": self.duration_model,
            "monthly_on_demand_usd": self.monthly_on_demand_usd,
            "monthly_saving_usd": self.monthly_saving_usd,
            "spot_share_today": self.spot_share_today,
            "checkpoint_unlock": None if self.unlock is None else self.unlock.to_dict(),
            "reason": self.reason,
        }


def uninterrupted_time_h(work_h: np.ndarray, checkpoint_h: float, interval_h: float) -> np.ndarray:
    """Wall time of each job when nothing interrupts it: its work plus its checkpoint saves.

    A job's deadline is ``deadline_slack`` times this: the job logs' durations already hold
    the saves a job makes, so the slack is over the time it takes undisturbed, and a job of
    a few seconds is not late merely because its final save takes as long as its work.
    """
    count, seg_h = _segment_arrays(np.asarray(work_h, dtype=float), interval_h)
    return count * (seg_h + checkpoint_h)


def stratified_durations_h(
    ppf_h: Callable[[np.ndarray], np.ndarray], n: int, rng: np.random.Generator
) -> np.ndarray:
    """``n`` job durations drawn from a distribution, one in each of ``n`` equal-probability slices."""
    u = (np.arange(n) + rng.random(n)) / n
    return np.maximum(np.asarray(ppf_h(u), dtype=float), MIN_WORK_H)


def assess_job_class(
    job_class: str,
    median_duration_h: float | None = None,
    p90_duration_h: float | None = None,
    *,
    instance_count: int,
    instance_rate_per_h: float,
    checkpoint_h: float,
    restart_h: float,
    deadline_slack: float,
    spot_rate: float,
    on_demand_rate: float,
    min_completion: float = 0.95,
    mode: str | None = None,
    points: int = DURATION_POINTS,
    safe_sim_jobs: int = 400,
    seed: int = 0,
    duration_ppf_h: Callable[[np.ndarray], np.ndarray] | None = None,
    duration_model: str | None = None,
    sim_jobs: int = 2000,
    checkpointed: bool = True,
    monthly_on_demand_usd: float | None = None,
    spot_share_today: float = 0.0,
) -> SpotAssessment:
    """Decide spot / deadline-safe spot / on-demand for a class of jobs.

    The class's durations come from ``duration_ppf_h`` (hours; the fitted
    distribution) or, without it, a lognormal through the median and p90.
    ``sim_jobs`` jobs are drawn from it (stratified) and run on spot event by
    event: the share that finish within ``deadline_slack`` times their
    uninterrupted time (``uninterrupted_time_h``) is the completion rate, with
    its Wilson interval. Plain spot if it pays
    (p_spot·E[T]/D < p_od, E[T] exact per simulated job, GPU-hour weighted) and
    at least ``min_completion`` of the jobs finish; else the deadline-safe policy
    if it is cheaper than on-demand (simulated on ``points`` equal-probability
    durations); else on-demand. A class whose jobs do not checkpoint
    (``checkpointed=False``) restarts from zero when interrupted: it stays on
    on-demand, and ``unlock`` says what checkpointing at the Young/Daly interval
    would save (``monthly_on_demand_usd`` prices it). Pass ``mode`` to evaluate a
    fixed choice (e.g. under doubled interruption rates). ``spot_share_today``: the share
    of the class's GPU-hours on spot today (``SpotAssessment.monthly_saving_usd``).
    """
    if duration_ppf_h is None:
        if median_duration_h is None or p90_duration_h is None:
            raise ValueError("give the class's duration distribution or its median and p90")
        duration_ppf_h = lognormal_ppf_h(median_duration_h, p90_duration_h)
    model = duration_model or "lognormal through the median and p90"
    common_args = dict(
        instance_count=instance_count,
        instance_rate_per_h=instance_rate_per_h,
        checkpoint_h=checkpoint_h,
        restart_h=restart_h,
        deadline_slack=deadline_slack,
        spot_rate=spot_rate,
        on_demand_rate=on_demand_rate,
        min_completion=min_completion,
        points=points,
        safe_sim_jobs=safe_sim_jobs,
        seed=seed,
        duration_ppf_h=duration_ppf_h,
        duration_model=model,
        sim_jobs=sim_jobs,
        monthly_on_demand_usd=monthly_on_demand_usd,
        spot_share_today=spot_share_today,
    )
    rate = job_rate_per_h(instance_rate_per_h, instance_count)
    today = {"spot_share_today": spot_share_today, "spot_price_ratio": spot_rate / on_demand_rate}
    if not checkpointed:
        # Restarted from zero on every interruption, these jobs stay on on-demand (whatever
        # `mode` asks); price what checkpointing at the Young/Daly interval would unlock.
        would = assess_job_class(job_class, **common_args) if checkpoint_h > 0 else None
        unlock = None
        if would is not None:
            unlock = CheckpointUnlock(
                interval_h=would.interval_h,
                checkpoint_h=checkpoint_h,
                mode=would.mode,
                cost_ratio_vs_on_demand=would.cost_ratio_vs_on_demand,
                completion_rate=would.completion_rate,
                monthly_saving_usd=would.monthly_saving_usd,
            )
        return SpotAssessment(
            job_class=job_class,
            mode="on_demand",
            rate_per_h=rate,
            interval_h=math.inf,
            wall_time_ratio=1.0,
            cost_ratio_vs_on_demand=1.0,
            spot_hours_share=0.0,
            spot_dollar_share=0.0,
            completion_rate=1.0,
            spot_completion_rate=math.nan if would is None else would.spot_completion_rate,
            reason=_unlock_reason(would, checkpoint_h),
            checkpointed=False,
            duration_model=model,
            monthly_on_demand_usd=monthly_on_demand_usd,
            unlock=unlock,
            **today,
        )

    rng = np.random.default_rng(seed)
    durations = np.maximum(duration_ppf_h((np.arange(points) + 0.5) / points), MIN_WORK_H)
    work = stratified_durations_h(duration_ppf_h, sim_jobs, rng)
    interval = daly_interval_h(checkpoint_h, rate) if checkpoint_h > 0 else math.inf
    walls = _exact_wall_times_h(work, rate, checkpoint_h, restart_h, interval)
    wall_ratio = float(walls.sum() / work.sum())  # GPU-hour weighted
    if math.isfinite(wall_ratio):
        sim = simulate_spot_jobs(
            sim_jobs, work, rate, checkpoint_h, restart_h, interval,
            deadline_h=deadline_slack * uninterrupted_time_h(work, checkpoint_h, interval),
            seed=seed + 1,
        )  # fmt: skip
        completed = int(sim.completed.sum())
    else:
        completed = 0  # some jobs would practically never finish
    completion = completed / sim_jobs
    spot_cost_ratio = spot_rate * wall_ratio / on_demand_rate
    interval_words = _interval_words(*wilson_interval(completed, sim_jobs))
    common = {
        "job_class": job_class,
        "rate_per_h": rate,
        "interval_h": interval,
        "wall_time_ratio": wall_ratio,
        "spot_completion_rate": completion,
        "duration_model": model,
        "monthly_on_demand_usd": monthly_on_demand_usd,
        **today,
    }
    on_demand = SpotAssessment(
        **common,
        mode="on_demand",
        cost_ratio_vs_on_demand=1.0,
        spot_hours_share=0.0,
        spot_dollar_share=0.0,
        completion_rate=1.0,
        reason=f"spot would cost {spot_cost_ratio:.2f}x on-demand once interruptions are paid for",
    )
    plain = SpotAssessment(
        **common,
        mode="spot",
        cost_ratio_vs_on_demand=spot_cost_ratio,
        spot_hours_share=1.0,
        spot_dollar_share=1.0,
        completion_rate=completion,
        simulated_jobs=sim_jobs,
        completed_jobs=completed,
        completion_interval=wilson_interval(completed, sim_jobs),
        reason=(
            f"spot at {spot_cost_ratio:.2f}x on-demand; {_pct(completion)} of {sim_jobs:,} simulated jobs "
            f"finish by the deadline ({interval_words})"
        ),
    )
    if mode == "on_demand" or (mode is None and spot_cost_ratio >= 1.0):
        return on_demand
    if mode == "spot" or (mode is None and completion >= min_completion):
        return plain
    safe_cost = safe_spot_h = safe_od_h = safe_spot_usd = 0.0
    missed = 0
    for i, d in enumerate(durations):
        res = simulate_uniform_progress(
            safe_sim_jobs,
            d,
            rate,
            checkpoint_h,
            restart_h,
            interval,
            deadline_slack * float(uninterrupted_time_h(np.array([d]), checkpoint_h, interval)[0]),
            spot_rate,
            on_demand_rate,
            seed=seed + 7919 * i,
        )
        safe_cost += res.mean_cost_usd
        safe_spot_h += res.mean_spot_hours
        safe_spot_usd += res.mean_spot_hours * spot_rate
        safe_od_h += res.mean_on_demand_hours
        missed += res.missed_deadlines
    safe_ratio = safe_cost / (on_demand_rate * durations.sum())
    if mode == "spot_deadline_safe" or (deadline_slack >= 1.0 and safe_ratio < 1.0):
        trials = safe_sim_jobs * durations.size
        return SpotAssessment(
            **common,
            mode="spot_deadline_safe",
            cost_ratio_vs_on_demand=safe_ratio,
            spot_hours_share=safe_spot_h / (safe_spot_h + safe_od_h),
            spot_dollar_share=safe_spot_usd / safe_cost,
            completion_rate=(trials - missed) / trials,
            simulated_jobs=trials,
            completed_jobs=trials - missed,
            completion_interval=wilson_interval(trials - missed, trials),
            reason=(
                f"plain spot finishes only {_pct(completion)} by the deadline ({interval_words}); "
                f"uniform-progress spot met every deadline of {trials:,} simulated jobs at "
                f"{safe_ratio:.2f}x on-demand"
            ),
        )
    return replace(on_demand, reason=f"deadlines too tight for spot ({_pct(completion)} would finish)")


def save_words(checkpoint_h: float) -> str:
    """'a 22-second save', 'a 3-minute save'."""
    seconds = 3600.0 * checkpoint_h
    return f"a {seconds:.0f}-second save" if seconds < 90 else f"a {seconds / 60:.0f}-minute save"


def _unlock_reason(would: SpotAssessment | None, checkpoint_h: float) -> str:
    head = "most jobs of this class do not checkpoint, so an interruption restarts them from zero: kept on on-demand"
    if would is None:
        return f"{head} (no checkpoint time known to price checkpointing)"
    every = f"checkpointing every {would.interval_h:.1f} h (the Young/Daly interval for {save_words(checkpoint_h)})"
    if not would.uses_spot:
        return f"{head}; even {every}, {would.reason}"
    saving = would.monthly_saving_usd
    return (
        f"{head}. {every[0].upper() + every[1:]} would let them run on "
        f"{'deadline-safe spot' if would.mode == 'spot_deadline_safe' else 'spot'} at "
        f"{would.cost_ratio_vs_on_demand:.2f}x on-demand with {_pct(would.completion_rate)} finishing by "
        f"the deadline" + (f", about ${saving:,.0f} a month less" if saving is not None else "")
    )
