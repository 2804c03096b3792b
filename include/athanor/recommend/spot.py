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
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import signal, stats

HOURS_PER_MONTH = 730.0  # AWS's billing month

# Spot Advisor buckets are ranges of "% of instances interrupted per month"
# (<5, 5-10, 10-15, 15-20, >20). We take the midpoint; for the open-ended top
# bucket 25 % (a documented assumption, not an AWS figure).
BUCKET_MONTHLY_FRACTION: dict[int, float] = {0: 0.025, 1: 0.075, 2: 0.125, 3: 0.175, 4: 0.25}

# z-score of the 90th percentile of a standard normal: p90 = median·exp(z90·σ).
_Z90 = 1.2815515655446004


# --------------------------------------------------------------------------- rates


def monthly_fraction_to_rate_per_h(fraction: float) -> float:
    """Hourly Poisson rate λ whose chance of ≥1 interruption in a 730 h month is ``fraction``."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"monthly interruption fraction must be in [0, 1), got {fraction}")
    return -math.log1p(-fraction) / HOURS_PER_MONTH


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
    work_h: float,
    rate_per_h: float,
    checkpoint_h: float,
    restart_h: float,
    interval_h: float,
    deadline_h: float | None = None,
    max_restarts: int | None = None,
    seed: int = 0,
    max_events: int = 1_000_000,
) -> SpotSimulation:
    """Simulate jobs on spot event by event: exponential interruption times, lost work, restarts."""
    rng = np.random.default_rng(seed)
    count, seg_h = segments(work_h, interval_h)
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
        ok = to_interrupt >= attempt_h
        wall[active] += np.where(ok, attempt_h, to_interrupt + restart_h)
        done_segments[active] += ok
        restarts[active] += ~ok
        active = active[done_segments[active] < count]
    else:
        raise RuntimeError("simulation did not finish: interruption rate too high for this job")
    completed = np.ones(n_jobs, dtype=bool)
    if deadline_h is not None:
        completed &= wall <= deadline_h + 1e-9
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

    @property
    def uses_spot(self) -> bool:
        return self.mode != "on_demand"

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
            "spot_completion_rate": self.spot_completion_rate,
            "reason": self.reason,
        }


def duration_points_h(median_h: float, p90_h: float, points: int = 9) -> np.ndarray:
    """Representative job durations: equal-probability quantiles of a lognormal with that median/p90."""
    sigma = math.log(p90_h / median_h) / _Z90 if p90_h > median_h > 0 else 0.0
    probs = (np.arange(points) + 0.5) / points
    return median_h * np.exp(sigma * stats.norm.ppf(probs))


def assess_job_class(
    job_class: str,
    median_duration_h: float,
    p90_duration_h: float,
    instance_count: int,
    instance_rate_per_h: float,
    checkpoint_h: float,
    restart_h: float,
    deadline_slack: float,
    spot_rate: float,
    on_demand_rate: float,
    min_completion: float = 0.95,
    mode: str | None = None,
    points: int = 9,
    safe_sim_jobs: int = 400,
    seed: int = 0,
) -> SpotAssessment:
    """Decide spot / deadline-safe spot / on-demand for a class of jobs.

    Plain spot if it pays (p_spot·E[T]/D < p_od) and at least ``min_completion``
    of the jobs finish within ``deadline_slack × duration``; else the
    deadline-safe policy if it is cheaper than on-demand (simulated); else
    on-demand. Durations are a lognormal fitted to the median and p90. Pass
    ``mode`` to evaluate a fixed choice (e.g. under doubled interruption rates).
    """
    rate = job_rate_per_h(instance_rate_per_h, instance_count)
    durations = duration_points_h(median_duration_h, p90_duration_h, points)
    interval = daly_interval_h(checkpoint_h, rate) if checkpoint_h > 0 else math.inf
    walls = np.array(
        [exact_expected_wall_time_h(d, rate, checkpoint_h, restart_h, interval) for d in durations]
    )
    wall_ratio = float(walls.sum() / durations.sum())  # GPU-hour weighted
    completion = float(
        np.mean(
            [
                completion_probability(
                    d, rate, checkpoint_h, restart_h, interval, deadline_h=deadline_slack * d
                )
                for d in durations
            ]
        )
    )
    spot_cost_ratio = spot_rate * wall_ratio / on_demand_rate
    common = {
        "job_class": job_class,
        "rate_per_h": rate,
        "interval_h": interval,
        "wall_time_ratio": wall_ratio,
        "spot_completion_rate": completion,
    }
    on_demand = SpotAssessment(
        **common,
        mode="on_demand",
        cost_ratio_vs_on_demand=1.0,
        spot_hours_share=0.0,
        spot_dollar_share=0.0,
        completion_rate=1.0,
        reason=f"spot costs {spot_cost_ratio:.2f}x on-demand once interruptions are paid for",
    )
    plain = SpotAssessment(
        **common,
        mode="spot",
        cost_ratio_vs_on_demand=spot_cost_ratio,
        spot_hours_share=1.0,
        spot_dollar_share=1.0,
        completion_rate=completion,
        reason=f"spot at {spot_cost_ratio:.2f}x on-demand, {100 * completion:.1f}% finish by the deadline",
    )
    if mode == "on_demand" or (mode is None and spot_cost_ratio >= 1.0):
        return on_demand
    if mode == "spot" or (mode is None and completion >= min_completion):
        return plain
    safe_cost = safe_spot_h = safe_od_h = safe_spot_usd = 0.0
    for i, d in enumerate(durations):
        res = simulate_uniform_progress(
            safe_sim_jobs,
            d,
            rate,
            checkpoint_h,
            restart_h,
            interval,
            deadline_slack * d,
            spot_rate,
            on_demand_rate,
            seed=seed + 7919 * i,
        )
        safe_cost += res.mean_cost_usd
        safe_spot_h += res.mean_spot_hours
        safe_spot_usd += res.mean_spot_hours * spot_rate
        safe_od_h += res.mean_on_demand_hours
    safe_ratio = safe_cost / (on_demand_rate * durations.sum())
    if mode == "spot_deadline_safe" or (deadline_slack >= 1.0 and safe_ratio < 1.0):
        return SpotAssessment(
            **common,
            mode="spot_deadline_safe",
            cost_ratio_vs_on_demand=safe_ratio,
            spot_hours_share=safe_spot_h / (safe_spot_h + safe_od_h),
            spot_dollar_share=safe_spot_usd / safe_cost,
            completion_rate=1.0,
            reason=(
                f"plain spot finishes only {100 * completion:.1f}% by the deadline; "
                f"uniform-progress spot meets every deadline at {safe_ratio:.2f}x on-demand"
            ),
        )
    return SpotAssessment(
        **{
            **asdict(on_demand),
            "reason": f"deadlines too tight for spot ({100 * completion:.1f}% would finish)",
        }
    )
