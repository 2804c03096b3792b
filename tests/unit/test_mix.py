"""The purchase mix: reserved units, savings plan, spot and on-demand together (athanor.recommend.mix)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from athanor.model.demand import ClassDurations
from athanor.recommend.commitments import CommitmentOffer
from athanor.recommend.mix import MixPrices, explain, recommend_mix


def _fleet(spot_gpu_hours: float = 3 * 720, checkpoint_h: float = 0.0):
    hours = pd.date_range("2026-11-01", periods=720, freq="h", tz="UTC")
    demand = pd.DataFrame({"hour": hours, "pool": "p4d/us-east-1", "units": 10.0, "on_demand_rate": 1.0})
    jobs = pd.DataFrame(
        [
            {
                "job_class": "research/p4d",
                "pool": "p4d/us-east-1",
                "gpu_hours": spot_gpu_hours,
                "jobs": 100,
                "median_duration_h": 4.0,
                "p90_duration_h": 12.0,
                "instance_count": 1,
                "checkpoint_time_h": checkpoint_h,
                "restart_time_h": 0.1,
                "deadline_slack": 2.0,
                "spot_rate": 0.3,
                "on_demand_rate": 1.0,
                "interruption_rate_per_h": 0.0,
            }
        ]
    )
    return demand, jobs


ONE_YEAR = MixPrices(offers=(CommitmentOffer(12, "no_upfront", 0.6),), annual_demand_decline=0.0)


def test_mix_by_hand():
    # 10 units every hour at 1 $/unit-hour; a spot class holds 3 units' worth of
    # GPU-hours (1 GPU per unit) and never gets interrupted: spot at 0.3x.
    # Base 7 units -> commit 7 (1 year at 0.6). Per month:
    #   reserved 7 * 0.6 * 730 = 3066, spot 3 * 0.3 * 730 = 657, on-demand 0
    #   total 3723 vs all on-demand 7300 -> saves 3577.
    demand, jobs = _fleet()
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool={"p4d/us-east-1": 1})
    assert rec.pools[0].plan.commit_units == 7
    assert rec.estimated_monthly_cost == pytest.approx(3723.0)
    assert rec.estimated_monthly_savings_amount == pytest.approx(3577.0)
    assert rec.estimated_savings_percentage == pytest.approx(100 * 3577 / 7300)
    assert rec.hours_share == pytest.approx(
        {"reserved": 0.7, "savings_plan": 0.0, "spot": 0.3, "on_demand": 0.0}
    )
    assert rec.cost_share["spot"] == pytest.approx(657 / 3723)
    assert rec.average_utilization == pytest.approx(1.0)
    assert rec.coverage == pytest.approx(0.7)
    assert rec.expected_completion_rate == pytest.approx(1.0)
    # Demand -20 %: 8 units -> spot 2.4, base 5.6 under the 7 committed:
    #   3066 + 2.4*0.3*730 = 3591.6 vs on-demand 5840.
    drop = rec.sensitivity["demand_drops_20pct"]
    assert drop["estimated_monthly_cost"] == pytest.approx(3591.6)
    assert drop["estimated_monthly_savings_amount"] == pytest.approx(5840 - 3591.6)


def test_mix_against_a_current_bill_and_to_dict():
    demand, jobs = _fleet()
    rec = recommend_mix(demand, jobs, ONE_YEAR, current_monthly_bill_usd=5000.0,
                        gpus_per_unit_by_pool={"p4d/us-east-1": 1})  # fmt: skip
    assert rec.estimated_monthly_savings_amount == pytest.approx(5000 - 3723)
    d = rec.to_dict()
    for key in (
        "recommended_quantity",
        "hourly_commitment",
        "estimated_monthly_savings_amount",
        "estimated_savings_percentage",
        "average_utilization",
        "coverage",
        "break_even_months",
        "upfront_cost",
        "recurring_cost",
        "gpu_hours_share",
        "cost_share",
        "expected_completion_rate",
        "sensitivity",
    ):
        assert key in d
    assert d["recurring_cost"] == pytest.approx(7 * 0.6 * 730)
    json.dumps(d, allow_nan=False)
    text = explain(rec)
    assert "Commit to 7 p4d units for 1 year" in text
    assert "30% of GPU-hours on spot" in text
    assert "$1,277 a month" in text


def test_mix_keeps_non_interruptible_work_off_spot():
    demand, jobs = _fleet()
    jobs["interruptible"] = False
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool={"p4d/us-east-1": 1})
    assert rec.hours_share["spot"] == 0.0
    assert rec.pools[0].plan.commit_units == 10


def test_mix_shares_add_up_with_a_savings_plan_and_interruptions():
    rng = np.random.default_rng(3)
    hours = pd.date_range("2026-11-01", periods=720, freq="h", tz="UTC")
    demand = pd.concat(
        [
            pd.DataFrame(
                {"hour": hours, "pool": "p4d", "units": rng.gamma(8, 1.0, 720), "on_demand_rate": 21.96}
            ),
            pd.DataFrame(
                {"hour": hours, "pool": "g5", "units": rng.gamma(3, 2.0, 720), "on_demand_rate": 5.67}
            ),
        ]
    )
    _, jobs = _fleet()
    jobs = pd.concat([jobs.assign(pool="p4d", gpu_hours=8000.0, interruption_rate_per_h=0.01, spot_rate=7.9,
                                  on_demand_rate=21.96, checkpoint_time_h=0.1)] * 1)  # fmt: skip
    rec = recommend_mix(
        demand,
        jobs,
        MixPrices(sp_discount_by_pool={"p4d": 0.3, "g5": 0.35}),
        gpus_per_unit_by_pool={"p4d": 8, "g5": 4},
    )
    assert sum(rec.hours_share.values()) == pytest.approx(1.0)
    assert sum(rec.cost_share.values()) == pytest.approx(1.0)
    assert rec.estimated_monthly_cost == pytest.approx(sum(rec.costs.dollars.values()))
    assert 0 < rec.hours_share["spot"] < 1
    assert rec.estimated_monthly_cost < rec.costs.on_demand_cost_usd
    # Doubling interruptions can only make spot dearer.
    dbl = rec.sensitivity["interruption_rates_double"]
    assert dbl["estimated_monthly_cost"] >= rec.estimated_monthly_cost
    assert rec.break_even_months is None  # nothing is paid upfront: no break-even to state


def test_spot_completion_is_pooled_over_simulated_jobs_with_its_interval():
    # The spot class has 100 jobs: 20 simulated per job = 2,000, none interrupted (λ = 0), all on time.
    # Wilson at k = n = 2000: low = 2000 / (2000 + 1.959964²) = 0.9980830.
    demand, jobs = _fleet()
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool={"p4d/us-east-1": 1})
    assert rec.spot_simulated_jobs == 2000
    assert rec.spot_completion_rate == 1.0
    assert rec.spot_completion_interval == pytest.approx((0.9980830, 1.0), abs=1e-6)
    assert (
        "100.0% of spot jobs finish by their deadline (95% interval 99.8-100.0%, 2,000 simulated jobs)"
        in explain(rec)
    )
    # Two classes of 100 and 50 jobs pool 2,000 + 1,000 simulated jobs.
    two = pd.concat([jobs, jobs.assign(job_class="speech/p4d", jobs=50)], ignore_index=True)
    rec = recommend_mix(demand, two, ONE_YEAR, gpus_per_unit_by_pool={"p4d/us-east-1": 1})
    assert rec.spot_simulated_jobs == 3000
    assert rec.to_dict()["spot_completion_interval"] == pytest.approx([3000 / (3000 + 1.959964**2), 1.0])


def test_break_even_only_where_something_is_paid_upfront():
    # 7 units bought at 0.6 $/h with half the 12-month term paid upfront:
    #   upfront 0.5 x 7 x 0.6 x 12 x 730 = 18,396; on-demand avoided a month 7 x 730 = 5,110;
    #   recurring fee a month 0.5 x 7 x 0.6 x 730 = 1,533; break-even 18,396 / (5,110 - 1,533) = 5.1428571.
    demand, jobs = _fleet()
    half_upfront = MixPrices(
        offers=(CommitmentOffer(12, "partial_upfront", 0.6, 0.5),), annual_demand_decline=0.0
    )
    rec = recommend_mix(demand, jobs, half_upfront, gpus_per_unit_by_pool={"p4d/us-east-1": 1})
    assert rec.pools[0].plan.commit_units == 7
    assert rec.upfront_cost == pytest.approx(18396.0)
    assert rec.break_even_months == pytest.approx(18396 / 3577)
    assert "the upfront payment is paid back in 5.1 months" in explain(rec)
    # No upfront: no break-even at all (not "0.0 months").
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool={"p4d/us-east-1": 1})
    assert rec.break_even_months is None and rec.pools[0].plan.break_even_months is None
    assert rec.to_dict()["break_even_months"] is None


def test_low_utilisation_commitments_are_explained_and_floored():
    # Demand 10 units half the hours, 2 units the other half; p_c / p_od = 0.4. A unit above 2 is
    # used half the hours (> 40 %): the cost optimum buys 10, used (2 + 10) / 20 = 60 % of the time.
    hours = pd.date_range("2026-11-01", periods=720, freq="h", tz="UTC")
    units = np.where(np.arange(720) % 2 == 0, 10.0, 2.0)
    demand = pd.DataFrame({"hour": hours, "pool": "p4d/us-east-1", "units": units, "on_demand_rate": 1.0})
    _, jobs = _fleet(spot_gpu_hours=0.0)
    at_40 = MixPrices(offers=(CommitmentOffer(12, "no_upfront", 0.4),), annual_demand_decline=0.0)
    rec = recommend_mix(demand, jobs, at_40, gpus_per_unit_by_pool={"p4d/us-east-1": 1})
    plan = rec.pools[0].plan
    assert (plan.commit_units, plan.purchase_utilization, plan.break_even_utilization) == (10, 0.6, 0.4)
    assert (
        "expected 60% utilised; a unit at 0.40x the on-demand rate pays for itself when used more than 40% "
        "of its hours (p_c/p_od)" in explain(rec)
    )
    # A 70 % floor: c units above the 2 always used are used (2 + c) / (2c) of their hours:
    # >= 0.7 while 2 + c >= 1.4 c, i.e. c <= 5 (5 units: 7 / 10 = 70 %).
    floored = MixPrices(offers=at_40.offers, annual_demand_decline=0.0, min_utilization=0.7)
    rec = recommend_mix(demand, jobs, floored, gpus_per_unit_by_pool={"p4d/us-east-1": 1})
    plan = rec.pools[0].plan
    assert (plan.commit_units, plan.cost_optimal_units) == (5, 10)
    assert plan.purchase_utilization == pytest.approx(0.7)
    assert "the utilisation floor of 70% buys 5 instead of the cost-optimal 10" in explain(rec)


def test_a_class_that_does_not_checkpoint_stays_on_demand_and_prices_checkpointing():
    # Every job 4 h (a fitted lognormal of width ~0), λ = 1e-6 per instance-hour, C = 0.05 h:
    # Daly's interval (~316 h) leaves one segment, E[T] = expm1(1e-6 x 4.05) x (1e6 + 0.1) h, so spot
    # costs 0.3 x E[T] / 4 of on-demand. The class's 2,160 GPU-hours in the 720-hour window are
    # 2,190 $ a month on on-demand (1 GPU a unit, 1 $/h): checkpointing would save 2,190 x (1 - ratio).
    demand, jobs = _fleet(checkpoint_h=0.05)
    jobs = jobs.assign(checkpointed=False, interruption_rate_per_h=1e-6)
    fitted = ClassDurations("team=research", "lognormal", {"mu": math.log(4 * 3600), "sigma": 1e-9}, 100, 7)
    rec = recommend_mix(
        demand, jobs, ONE_YEAR, gpus_per_unit_by_pool={"p4d/us-east-1": 1},
        durations_by_class={"research/p4d": fitted},
    )  # fmt: skip
    (cls,) = rec.job_classes
    assert cls.mode == "on_demand" and rec.hours_share["spot"] == 0.0
    assert rec.pools[0].plan.commit_units == 10  # all the work stays on commitments
    assert cls.duration_model == "lognormal fitted on team=research (100 jobs, 7 censored)"
    ratio = 0.3 * math.expm1(1e-6 * 4.05) * (1e6 + 0.1) / 4.0
    assert cls.unlock.cost_ratio_vs_on_demand == pytest.approx(ratio, rel=1e-6)
    assert cls.unlock.monthly_saving_usd == pytest.approx(2190 * (1 - ratio), rel=1e-6)  # 1,524.79
    assert "research/p4d do not checkpoint" in explain(rec) and "about $1,525 a month" in explain(rec)
    json.dumps(rec.to_dict(), allow_nan=False)
