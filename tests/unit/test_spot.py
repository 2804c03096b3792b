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


def test_completion_rate_of_a_spot_assigned_class_matches_monte_carlo():
    # A class the model sends to spot; its completion rate averages 9 duration points.
    kwargs = dict(median_duration_h=12.0, p90_duration_h=40.0, instance_count=8, instance_rate_per_h=0.004,
                  checkpoint_h=0.2, restart_h=0.3, deadline_slack=1.25, spot_rate=7.9, on_demand_rate=21.96)  # fmt: skip
    verdict = spot.assess_job_class("train", min_completion=0.85, **kwargs)
    assert verdict.mode == "spot"
    durations = spot.duration_points_h(12.0, 40.0)
    rng = np.random.default_rng(5)
    picks = rng.integers(0, durations.size, 10_000)  # 10,000 jobs drawn from the class
    done = 0
    for i, d in enumerate(durations):
        n = int((picks == i).sum())
        sim = spot.simulate_spot_jobs(n, d, verdict.rate_per_h, 0.2, 0.3, verdict.interval_h,
                                      deadline_h=1.25 * d, seed=100 + i)  # fmt: skip
        done += int(sim.completed.sum())
    assert abs(done / 10_000 - verdict.completion_rate) < 0.01


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
