"""Spot model: wall time, checkpoint intervals, completion rates, deadline-safe policy, rates."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from athanor.recommend import spot


def _shared_data() -> Path:
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


# ------------------------------------------------------------- formulas by hand


def test_expected_wall_time_first_order():
    # D=24, λ=0.02, C=0.1, R=0.2, τ=3: 24 * (1 + 0.1/3 + 0.02*(0.2 + 1.5)) = 24 * 1.0673333 = 25.616
    assert spot.expected_wall_time_h(24, 0.02, 0.1, 0.2, 3.0) == pytest.approx(25.616)


def test_young_and_daly_intervals():
    # Young: sqrt(2*0.1/0.02) = sqrt(10) = 3.16228
    assert spot.young_interval_h(0.1, 0.02) == pytest.approx(math.sqrt(10))
    # Daly, μ = 50: sqrt(2*0.1*50) = 3.16228; 1 + sqrt(0.1/100)/3 + 0.1/900
    #   = 1 + 0.0105409 + 0.0001111 = 1.0106520 -> 3.16228 * 1.0106520 - 0.1 = 3.09596
    assert spot.daly_interval_h(0.1, 0.02) == pytest.approx(3.095962, abs=1e-6)
    # C >= 2μ: τ = μ. C = 5, λ = 0.5 -> μ = 2.
    assert spot.daly_interval_h(5.0, 0.5) == pytest.approx(2.0)
    assert spot.young_interval_h(0.1, 0.0) == math.inf


def test_interval_minimises_first_order_wall_time():
    # Young's τ is the stationary point of C/τ + λτ/2.
    c, lam = 0.25, 0.01
    tau = spot.young_interval_h(c, lam)
    at = spot.expected_wall_time_h(100, lam, c, 0.5, tau)
    assert at < spot.expected_wall_time_h(100, lam, c, 0.5, tau * 1.2)
    assert at < spot.expected_wall_time_h(100, lam, c, 0.5, tau / 1.2)


def test_exact_wall_time_per_segment():
    # One segment of 2 h work + 0.5 h checkpoint (a = 2.5), λ = 0.1, R = 1:
    # E[T] = (e^{0.25} - 1) * (1/0.1 + 1) = 0.2840254 * 11 = 3.1242797
    assert spot.exact_expected_wall_time_h(2.0, 0.1, 0.5, 1.0, 5.0) == pytest.approx(0.28402542 * 11)
    # Segments are equalised: 10 h at τ = 3 -> 4 segments of 2.5 h.
    assert spot.segments(10.0, 3.0) == (4, 2.5)


def test_spot_pays():
    # 7.9 * 25.616 / 24 = 8.43 < 21.96: pays; 21 * 1.0673 = 22.4 > 21.96: does not.
    assert spot.spot_pays(7.9, 21.96, 25.616, 24)
    assert not spot.spot_pays(21.0, 21.96, 25.616, 24)


# ------------------------------------------------------------ interruption rates


def test_bucket_to_hourly_rate_by_hand():
    # bucket 2 -> 10-15 % -> f = 0.125 -> λ = -ln(0.875)/730 = 0.1335314/730 = 1.829197e-4 per hour
    assert spot.BUCKET_MONTHLY_FRACTION[2] == 0.125
    assert spot.monthly_fraction_to_rate_per_h(0.125) == pytest.approx(0.13353139 / 730)
    assert spot.job_rate_per_h(1.829197e-4, 8) == pytest.approx(8 * 1.829197e-4)
    with pytest.raises(ValueError):
        spot.monthly_fraction_to_rate_per_h(1.0)


def test_rates_from_the_real_spot_advisor_snapshot():
    path = _shared_data() / "spot" / "spot-advisor-data-2025-06-28.json"
    rates = spot.load_interruption_rates(path, region="us-east-1", os="Linux")
    feed = json.loads(path.read_text())["spot_advisor"]["us-east-1"]["Linux"]
    assert len(rates) == len(feed)
    # In this snapshot p4d.24xlarge is bucket 2 and p5.48xlarge bucket 4 (>20 %: 25 % assumed).
    assert feed["p4d.24xlarge"]["r"] == 2 and feed["p5.48xlarge"]["r"] == 4
    assert rates["p4d.24xlarge"] == pytest.approx(-math.log(0.875) / 730)
    assert rates["p5.48xlarge"] == pytest.approx(-math.log(0.75) / 730)  # 3.94085e-4
    table = spot.load_spot_advisor(path)
    assert table.set_index("instance_type").loc["p4d.24xlarge", "savings_pct"] == feed["p4d.24xlarge"]["s"]
    with pytest.raises(KeyError, match="mars-east-1"):
        spot.load_interruption_rates(path, region="mars-east-1")


# ------------------------------------------------------------- completion rates

CASES = [
    # work_h, λ (job), C, R, deadline slack
    (24.0, 0.02, 0.1, 0.2, 1.15),
    (48.0, 0.05, 0.25, 0.3, 1.3),
    (10.0, 0.3, 0.2, 0.1, 2.0),
    (100.0, 0.01, 0.5, 0.5, 1.1),
]


@pytest.mark.parametrize(("work", "lam", "c", "r", "slack"), CASES)
def test_completion_rate_matches_monte_carlo_within_one_point(work, lam, c, r, slack):
    tau = spot.daly_interval_h(c, lam)
    estimate = spot.completion_probability(work, lam, c, r, tau, deadline_h=slack * work)
    sim = spot.simulate_spot_jobs(10_000, work, lam, c, r, tau, deadline_h=slack * work, seed=11)
    assert abs(sim.completion_rate - estimate) < 0.01
    # The simulator's mean wall time agrees with the exact expectation too (within 1 %).
    assert sim.mean_wall_time_h == pytest.approx(
        spot.exact_expected_wall_time_h(work, lam, c, r, tau), rel=0.01
    )


def test_retry_budget_is_a_negative_binomial():
    # 4 segments, attempt 2.5 h, λ = 0.1: P(success) = e^{-0.25}; P(K <= 2) = NB(4, e^-0.25).cdf(2)
    expected = stats.nbinom(4, math.exp(-0.25)).cdf(2)
    assert spot.completion_probability(8.0, 0.1, 0.5, 0.2, 2.0, max_restarts=2) == pytest.approx(expected)
    sim = spot.simulate_spot_jobs(10_000, 8.0, 0.1, 0.5, 0.2, 2.0, max_restarts=2, seed=3)
    assert abs(sim.completion_rate - expected) < 0.01


@pytest.mark.slow
def test_completion_rate_of_a_spot_assigned_class_matches_the_analytic_rate():
    # The class's completion is simulated on stratified draws of its durations; the analytic
    # completion probability of the very same durations must agree within 3 standard errors.
    kwargs = dict(median_duration_h=12.0, p90_duration_h=40.0, instance_count=8, instance_rate_per_h=0.004,
                  checkpoint_h=0.2, restart_h=0.3, deadline_slack=1.25, spot_rate=7.9, on_demand_rate=21.96)  # fmt: skip
    verdict = spot.assess_job_class("train", min_completion=0.85, sim_jobs=400, seed=4, **kwargs)
    assert verdict.mode == "spot" and verdict.simulated_jobs == 400
    work = spot.stratified_durations_h(spot.lognormal_ppf_h(12.0, 40.0), 400, np.random.default_rng(4))
    deadlines = 1.25 * spot.uninterrupted_time_h(work, 0.2, verdict.interval_h)
    p = np.array([
        spot.completion_probability(d, verdict.rate_per_h, 0.2, 0.3, verdict.interval_h, deadline_h=t, grid_points=512)
        for d, t in zip(work, deadlines, strict=True)
    ])  # fmt: skip
    standard_error = math.sqrt(float((p * (1 - p)).sum())) / p.size
    assert abs(verdict.completion_rate - p.mean()) < 3 * standard_error
    assert verdict.completion_interval == pytest.approx(
        spot.wilson_interval(verdict.completed_jobs, verdict.simulated_jobs)
    )


def test_duration_points_follow_the_lognormal():
    points = spot.duration_points_h(2.0, 8.0, points=9)
    assert points[4] == pytest.approx(2.0)  # the middle point is the median
    sigma = math.log(4.0) / 1.2815515655446004
    assert points[0] == pytest.approx(2.0 * math.exp(sigma * stats.norm.ppf(0.5 / 9)))


# ---------------------------------------------------------- deadline-safe policy


@pytest.mark.parametrize(
    ("work", "lam", "c", "r", "slack"),
    [
        (24.0, 0.02, 0.1, 0.2, 1.15),
        (48.0, 0.2, 0.25, 0.5, 1.3),
        (10.0, 0.5, 0.2, 0.3, 1.5),
        (6.0, 1.0, 0.1, 0.1, 2.0),
    ],
)
def test_uniform_progress_never_misses_a_deadline(work, lam, c, r, slack):
    tau = spot.daly_interval_h(c, lam)
    res = spot.simulate_uniform_progress(3000, work, lam, c, r, tau, slack * work, 7.9, 21.96, seed=9)
    assert res.missed_deadlines == 0
    assert res.completion_rate == 1.0
    assert res.mean_spot_hours > 0  # it does use spot
    # (It is not always cheaper than on-demand: at high λ the lost spot time can
    # outweigh the discount, which is why assess_job_class compares the two.)
    json.dumps(res.to_dict(), allow_nan=False)


def test_uniform_progress_is_cheaper_than_on_demand_where_plain_spot_misses():
    # Plain spot misses ~12 % of these deadlines; the safe policy misses none and still saves.
    tau = spot.daly_interval_h(0.1, 0.02)
    res = spot.simulate_uniform_progress(3000, 24.0, 0.02, 0.1, 0.2, tau, 27.6, 7.9, 21.96, seed=1)
    assert res.pure_spot_completion_rate < 0.9
    assert res.missed_deadlines == 0
    assert res.pure_spot_mean_cost_usd < res.mean_cost_usd < res.on_demand_cost_usd


def test_assess_job_class_modes():
    base = dict(median_duration_h=24.0, p90_duration_h=60.0, instance_count=1, checkpoint_h=0.1, restart_h=0.2,
                spot_rate=7.9, on_demand_rate=21.96, safe_sim_jobs=200)  # fmt: skip
    assert spot.assess_job_class("calm", instance_rate_per_h=1e-4, deadline_slack=1.5, **base).mode == "spot"
    tight = spot.assess_job_class("tight", instance_rate_per_h=0.02, deadline_slack=1.15, **base)
    assert tight.mode == "spot_deadline_safe"
    assert tight.completion_rate == 1.0 and tight.spot_completion_rate < 0.95
    assert 0 < tight.spot_hours_share < 1 and tight.cost_ratio_vs_on_demand < 1
    dear = spot.assess_job_class("dear", instance_rate_per_h=1e-4, deadline_slack=1.5,
                                 **{**base, "spot_rate": 21.9})  # fmt: skip
    assert dear.mode == "on_demand"
    forced = spot.assess_job_class(
        "tight", instance_rate_per_h=0.02, deadline_slack=1.15, mode="spot", **base
    )
    assert forced.mode == "spot" and forced.completion_rate == tight.spot_completion_rate


def test_uniform_progress_by_hand_without_interruptions():
    # λ = 0, D = 10, τ = 5, C = 0.5, deadline 20: two spot segments of 5 + 0.5 h = 11 h at 7.9 $/h = 86.9 $.
    res = spot.simulate_uniform_progress(10, 10.0, 0.0, 0.5, 0.2, 5.0, 20.0, 7.9, 21.96)
    assert res.mean_spot_hours == pytest.approx(11.0) and res.mean_on_demand_hours == 0.0
    assert res.mean_cost_usd == pytest.approx(86.9)
    # Deadline 10.5: a spot segment needs room for C + R (0.7 h) beyond the work: on-demand throughout.
    res = spot.simulate_uniform_progress(10, 10.0, 0.0, 0.5, 0.2, 5.0, 10.5, 7.9, 21.96)
    assert res.mean_on_demand_hours == pytest.approx(10.0) and res.mean_spot_hours == 0.0
    # Deadline 12.2: the first segment shrinks to fit (12.2 - 10 - 0.5 - 0.2 = 1.5 h of work on spot),
    # after which there is no room left for another: 1.5 + 0.5 h on spot, restart 0.2 + 8.5 h on-demand.
    res = spot.simulate_uniform_progress(10, 10.0, 0.0, 0.5, 0.2, 5.0, 12.2, 7.9, 21.96)
    assert res.mean_spot_hours == pytest.approx(2.0)
    assert res.mean_on_demand_hours == pytest.approx(8.7)
    assert res.mean_wall_time_h == pytest.approx(10.7)


# ------------------------------------------------- job classes from fitted durations


def test_wilson_interval_by_hand():
    # k = n: low = n / (n + z²), z = 1.959964 -> z² = 3.841459; 2000 / 2003.841459 = 0.9980830.
    assert spot.wilson_interval(2000, 2000) == pytest.approx((0.9980830, 1.0), abs=1e-6)
    # k = 0: the mirror image.
    assert spot.wilson_interval(0, 2000) == pytest.approx((0.0, 1 - 0.9980830), abs=1e-6)
    # k = 90, n = 100: centre (90 + z²/2) / (100 + z²) = 91.920729 / 103.841459 = 0.8852026,
    # half-width z / (100 + z²) x sqrt(90 x 10 / 100 + z²/4) = 0.0188746 x sqrt(9.960365) = 0.0595683.
    low, high = spot.wilson_interval(90, 100)
    assert low == pytest.approx(0.8852026 - 0.0595683, abs=1e-6)
    assert high == pytest.approx(0.8852026 + 0.0595683, abs=1e-6)
    assert spot.wilson_interval(0, 0) == (0.0, 1.0)


def test_simulated_jobs_each_with_its_own_work():
    # No interruptions: wall = segments * (segment + C). τ = 2, C = 0.5:
    # 1 h -> 1 x (1 + 0.5) = 1.5; 2.5 h -> 2 x (1.25 + 0.5) = 3.5; 4 h -> 2 x (2 + 0.5) = 5.0.
    work = np.array([1.0, 2.5, 4.0])
    sim = spot.simulate_spot_jobs(3, work, 0.0, 0.5, 0.1, 2.0, deadline_h=np.array([2.0, 3.0, 8.0]))
    assert sim.wall_time_h.tolist() == [1.5, 3.5, 5.0]
    assert sim.completed.tolist() == [True, False, True]  # 3.5 > 3.0
    assert spot.uninterrupted_time_h(work, 0.5, 2.0).tolist() == [1.5, 3.5, 5.0]
    # One work value for every job gives the same draws as before the per-job form.
    same = spot.simulate_spot_jobs(500, np.full(500, 8.0), 0.1, 0.5, 0.2, 2.0, seed=3)
    assert (
        same.wall_time_h.tolist()
        == spot.simulate_spot_jobs(500, 8.0, 0.1, 0.5, 0.2, 2.0, seed=3).wall_time_h.tolist()
    )


def _two_point_ppf(q):
    # Half the jobs take 1 h, half 100 h (a fitted distribution no median/p90 lognormal resembles).
    return np.where(np.asarray(q) < 0.5, 1.0, 100.0)


def test_completion_is_drawn_from_the_fitted_distribution():
    # No checkpoints (C = 0: one attempt), λ = 0.01/h, restart 60 h: any interruption restarts
    # from zero and cannot fit in the 0.5 x work of slack, so a job finishes iff it is never
    # interrupted: 0.5 e^-0.01 + 0.5 e^-1 = 0.5 x 0.9900498 + 0.5 x 0.3678794 = 0.6789646.
    verdict = spot.assess_job_class(
        "two-point", duration_ppf_h=_two_point_ppf, duration_model="two points", instance_count=1,
        instance_rate_per_h=0.01, checkpoint_h=0.0, restart_h=60.0, deadline_slack=1.5, spot_rate=0.3,
        on_demand_rate=1.0, mode="spot", sim_jobs=20_000, seed=2,
    )  # fmt: skip
    assert verdict.simulated_jobs == 20_000
    assert verdict.completion_rate == pytest.approx(0.6789646, abs=0.01)  # 3 standard errors: 0.0099
    low, high = verdict.completion_interval
    assert low < 0.6789646 < high
    assert verdict.duration_model == "two points"
    assert "of 20,000 simulated jobs finish by the deadline (95 % interval" in verdict.reason


def test_a_fixed_duration_by_hand():
    # Every job 10 h, no interruptions, C = 0.5 h and no finite interval (λ = 0): one segment,
    # wall 10.5 h -> E[T]/D = 1.05; spot at 0.3 $/h vs 1 $/h: 0.315x on-demand; all finish.
    verdict = spot.assess_job_class(
        "fixed", duration_ppf_h=lambda q: np.full(np.shape(q), 10.0), instance_count=1,
        instance_rate_per_h=0.0, checkpoint_h=0.5, restart_h=0.1, deadline_slack=1.5, spot_rate=0.3,
        on_demand_rate=1.0, sim_jobs=2000, monthly_on_demand_usd=1000.0,
    )  # fmt: skip
    assert verdict.mode == "spot"
    assert verdict.wall_time_ratio == pytest.approx(1.05)
    assert verdict.cost_ratio_vs_on_demand == pytest.approx(0.315)
    assert (verdict.completed_jobs, verdict.simulated_jobs) == (2000, 2000)
    assert verdict.completion_interval == pytest.approx((0.9980830, 1.0), abs=1e-6)
    assert verdict.monthly_saving_usd == pytest.approx(685.0)  # 1000 x (1 - 0.315)


def test_a_class_that_does_not_checkpoint_says_what_checkpointing_would_save():
    # Every job 10 h, λ = 1e-6/h, C = 0.5 h. Daly: sqrt(2 x 0.5 x 1e6) = 1000 h, x (1 + sqrt(0.5/2e6)/3
    # + 0.5/18e6) = 1000.16669, - 0.5 = 999.66669 h: one segment per job. Checkpointed, a job takes
    # E[T] = expm1(1e-6 x 10.5) x (1e6 + 0.1) = 10.5000561 h -> ratio 1.05000561 -> spot (0.3 $/h) at
    # 0.315001683x; saving on a 1,000 $/month class: 1000 x (1 - 0.315001683) = 684.998317.
    verdict = spot.assess_job_class(
        "no-ckpt", duration_ppf_h=lambda q: np.full(np.shape(q), 10.0), instance_count=1,
        instance_rate_per_h=1e-6, checkpoint_h=0.5, restart_h=0.1, deadline_slack=1.5, spot_rate=0.3,
        on_demand_rate=1.0, checkpointed=False, monthly_on_demand_usd=1000.0,
    )  # fmt: skip
    assert verdict.mode == "on_demand" and not verdict.uses_spot and not verdict.checkpointed
    assert verdict.cost_ratio_vs_on_demand == 1.0 and verdict.monthly_saving_usd == 0.0
    unlock = verdict.unlock
    assert unlock.interval_h == pytest.approx(999.66669, abs=1e-4)
    assert unlock.mode == "spot"
    expected_ratio = 0.3 * math.expm1(1e-6 * 10.5) * (1e6 + 0.1) / 10.0
    assert unlock.cost_ratio_vs_on_demand == pytest.approx(expected_ratio, rel=1e-9)
    assert unlock.monthly_saving_usd == pytest.approx(1000 * (1 - expected_ratio), rel=1e-9)
    assert unlock.monthly_saving_usd == pytest.approx(684.998317, abs=1e-5)
    assert verdict.reason == (
        "most jobs of this class do not checkpoint, so an interruption restarts them from zero: kept on "
        "on-demand. Checkpointing every 999.7 h (the Young/Daly interval for a 30-minute save) would let "
        "them run on spot at 0.32x on-demand with 100.0 % finishing by the deadline, about $685 a month less"
    )
    assert "spot costs" not in verdict.reason
    json.dumps(verdict.to_dict(), allow_nan=False)


def test_interruption_rates_of_the_pools_own_region():
    from athanor.recommend.nightly import interruption_rate

    # Snapshot: p4d.24xlarge is bucket 2 in us-east-1 (12.5 %/month) and bucket 4 in us-west-2 (25 %).
    east = interruption_rate("p4d.24xlarge", "us-east-1")
    west = interruption_rate("p4d.24xlarge", "us-west-2")
    assert (east.interruption_bucket, west.interruption_bucket) == (2, 4)
    assert east.rate_per_h == pytest.approx(-math.log(0.875) / 730)  # 1.829197e-4
    assert west.rate_per_h == pytest.approx(-math.log(0.75) / 730)  # 3.940850e-4
    assert east.source == "Spot Advisor"
    # A size the snapshot lacks takes its family's worst bucket in that region: g6 in us-west-2
    # has buckets 4, 4, 4, 4, 4, 2, 1, 4 -> 4.
    assert interruption_rate("g6.99xlarge", "us-west-2").interruption_bucket == 4
    # A family it lacks entirely: the top bucket, and said so.
    unknown = interruption_rate("x9.large", "us-east-1")
    assert unknown.interruption_bucket == 4 and "assumed" in unknown.source
