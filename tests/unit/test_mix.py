"""The purchase mix: reserved units, savings plan, spot and on-demand together (athanor.recommend.mix)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

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
    assert math.isfinite(rec.break_even_months)
