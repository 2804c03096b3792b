"""Commitment sizing, savings plans and the purchase mix (athanor.recommend.mix)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from athanor.recommend import mix
from athanor.recommend.mix import (
    CommitmentOffer,
    MixPrices,
    apply_savings_plan,
    brute_force_commitment,
    commit_plan,
    commitment_cost,
    existing_profile,
    explain,
    optimal_commitment,
    plan_terms,
    read_demand_csv,
    recommend_mix,
    savings_plan_cost,
    savings_plan_plan,
    term_demand,
)

# ----------------------------------------------------------- the quantile rule


def test_hand_computed_case_with_a_tie():
    # u = [0,1,2,3,4], p_c = 0.6, p_od = 1, H = 5:
    #   cost(0) = 0         + (0+1+2+3+4) = 10
    #   cost(1) = 1*0.6*5=3 + (0+0+1+2+3) = 9
    #   cost(2) = 2*0.6*5=6 + (0+0+0+1+2) = 9
    #   cost(3) = 9         + 1           = 10
    # d = 1 - 0.6 = 0.4, H*d = 2 (whole) -> flat between the 2nd and 3rd values:
    # 1 and 2 both cost 9; the rule keeps the smaller commitment.
    u = [0, 1, 2, 3, 4]
    assert [commitment_cost(u, c, 0.6, 1.0) for c in range(4)] == pytest.approx([10, 9, 9, 10])
    assert optimal_commitment(u, 0.6, 1.0) == 1.0
    assert optimal_commitment(u, 0.6, 1.0, integer=False) == 1.0
    assert commitment_cost(u, 1.5, 0.6, 1.0) == pytest.approx(9.0)  # 4.5 + 0.5+1.5+2.5


def test_hand_computed_case_unique():
    # p_c = 0.5: d = 0.5, H*d = 2.5 -> rank 3 -> c = 2.
    # cost(1) = 2.5 + 6 = 8.5, cost(2) = 5 + 3 = 8, cost(3) = 7.5 + 1 = 8.5
    u = [0, 1, 2, 3, 4]
    assert optimal_commitment(u, 0.5, 1.0) == 2.0
    assert commitment_cost(u, 2, 0.5, 1.0) == pytest.approx(8.0)


def test_no_commitment_when_it_is_not_cheaper():
    assert optimal_commitment([5, 5, 5], 1.0, 1.0) == 0.0
    assert optimal_commitment([5, 5, 5], 1.2, 1.0) == 0.0


@pytest.mark.parametrize("integer", [True, False])
def test_quantile_rule_matches_brute_force(integer):
    rng = np.random.default_rng(42)
    for _ in range(300):
        hours = int(rng.integers(1, 60))
        if rng.random() < 0.5:
            u = rng.integers(0, 12, hours).astype(float)  # whole instances: many ties
        else:
            u = rng.gamma(2.0, 3.0, hours)
        od = float(rng.uniform(1.0, 30.0))
        pc = od * float(rng.choice([0.3, 0.4, 0.5, 0.6, 0.75, rng.uniform(0.05, 0.99)]))
        fast = optimal_commitment(u, pc, od, integer=integer)
        slow = brute_force_commitment(u, pc, od, integer=integer)
        assert commitment_cost(u, fast, pc, od) == pytest.approx(commitment_cost(u, slow, pc, od), rel=1e-12)
        assert fast == pytest.approx(slow)


# ------------------------------------------------------------------ commit_plan


def test_commit_plan_fields_by_hand():
    # u = [2,2,4,4], p_od = 1, p_c = 0.4: d = 0.6, H*d = 2.4 -> rank 3 -> c = 4.
    # Per hour-set: on-demand 12, with c=4: 4*0.4*4 = 6.4. Month factor 730/4 = 182.5.
    plan = commit_plan([2, 2, 4, 4], on_demand_rate=1.0, commit_rate=0.4)
    assert plan.commit_units == 4
    assert plan.on_demand_cost == pytest.approx(12 * 182.5)  # 2190
    assert plan.expected_cost == pytest.approx(6.4 * 182.5)  # 1168
    assert plan.savings == pytest.approx(2190 - 1168)
    assert plan.estimated_monthly_savings_amount == plan.savings
    assert plan.savings_pct == pytest.approx(100 * 1022 / 2190)
    assert plan.utilization == pytest.approx(12 / 16)  # used 2+2+4+4 of 4*4 held
    assert plan.coverage == pytest.approx(1.0)
    assert plan.upfront_cost == 0 and plan.break_even_months == 0
    assert plan.recurring_hourly_cost == pytest.approx(1.6)


def test_commit_plan_nets_existing_and_upfront_break_even():
    # One unit already held: residual [1,1,3,3] -> c = 3 (rank 3), 4 held in total.
    # Upfront half of a 12-month term: 0.5 * 3 * 0.4 * 12 * 730 = 5256.
    # Avoided on-demand a month: (1+1+3+3) * 182.5 = 1460; recurring 0.5*3*0.4*730 = 438.
    # Break-even = 5256 / (1460 - 438) = 5.1429 months.
    plan = commit_plan([2, 2, 4, 4], 1.0, 0.4, existing_units=1.0, upfront_fraction=0.5, term_months=12)
    assert plan.commit_units == 3
    assert plan.on_demand_cost == pytest.approx(8 * 182.5)
    assert plan.expected_cost == pytest.approx(3 * 0.4 * 4 * 182.5)
    assert plan.upfront_cost == pytest.approx(5256.0)
    assert plan.recurring_hourly_cost == pytest.approx(0.6)
    assert plan.break_even_months == pytest.approx(5256 / 1022)
    assert plan.payment_option == "partial_upfront"


def test_commit_plan_expiring_commitments_are_netted_hour_by_hour():
    # Two units held for the first two hours only: residual [0,0,4,4] -> c = 4.
    # Utilisation of everything held: (2+2+4+4) / (6+6+4+4) = 0.6.
    plan = commit_plan([2, 2, 4, 4], 1.0, 0.4, existing_units=[2, 2, 0, 0])
    assert plan.commit_units == 4
    assert plan.utilization == pytest.approx(0.6)
    assert plan.existing_units == pytest.approx(1.0)
    d = plan.to_dict()
    for key in ("commit_units", "expected_cost", "on_demand_cost", "savings_pct", "utilization", "coverage"):
        assert key in d
    json.dumps(d, allow_nan=False)


def test_existing_profile_and_term_demand():
    assert existing_profile([(2, 2.5), (1, 10)], 4).tolist() == [3, 3, 3, 1]  # 2.5 h rounds up to 3 hours
    demand = term_demand(np.full(24, 10.0), 12, annual_decline=0.2)
    assert demand.size == 8760
    assert demand[0] == 10.0
    assert demand[-1] == pytest.approx(10.0 * 0.8 ** (8759 / 8760))


def test_plan_terms_sizes_each_term_on_its_declining_demand():
    u = np.full(720, 10.0)
    plans = plan_terms(u, 1.0, annual_decline=0.2)
    one, three = plans
    assert (one.term_months, three.term_months) == (12, 36)
    for plan, ratio, months in ((one, 0.6, 12), (three, 0.4, 36)):
        demand = term_demand(u, months, 0.2)
        assert plan.commit_units == brute_force_commitment(demand, ratio, 1.0)
    # The 3-year term commits less than it would on flat demand (10 units).
    assert three.commit_units < 10
    assert mix.best_plan(plans).savings == max(p.savings for p in plans)
    # With no decline and flat demand the deeper discount wins.
    assert mix.best_plan(plan_terms(u, 1.0, annual_decline=0.0)).term_months == 36


def test_plan_terms_with_existing_that_expire_mid_term():
    # 4 units held for half a year on flat demand of 10: a 1-year purchase at
    # 0.4x sees a residual of 6 for 6 months and 10 for the other 6. Between 6
    # and 10 the cost's slope is 0.4*H - 1*(H/2) < 0, so c = 10 (d = 0.6 > 0.5).
    offer = (CommitmentOffer(12, rate_ratio=0.4),)
    plans = plan_terms(np.full(48, 10.0), 1.0, offers=offer, existing=[(4, 8760 / 2)], annual_decline=0.0)
    assert plans[0].commit_units == 10
    assert plans[0].existing_units == pytest.approx(2.0)  # 4 units for half the term
    # ... but 6 units if those 4 run to the end of the term.
    plans = plan_terms(np.full(48, 10.0), 1.0, offers=offer, existing=[(4, 8760)], annual_decline=0.0)
    assert plans[0].commit_units == 6
    # At 0.6x (d = 0.4 < 0.5) the half-year of residual 6 decides: c = 6 either way.
    plans = plan_terms(np.full(48, 10.0), 1.0, offers=(CommitmentOffer(12, rate_ratio=0.6),),
                       existing=[(4, 8760 / 2)], annual_decline=0.0)  # fmt: skip
    assert plans[0].commit_units == 6


def test_read_demand_csv_sorts_by_hour(tmp_path):
    path = tmp_path / "demand.csv"
    path.write_text("hour,units\n2026-11-01T02:00:00Z,3\n2026-11-01T00:00:00Z,1\n2026-11-01T01:00:00Z,2\n")
    assert read_demand_csv(path).tolist() == [1.0, 2.0, 3.0]
    bad = tmp_path / "bad.csv"
    bad.write_text("hour,count\n2026-11-01T00:00:00Z,1\n")
    with pytest.raises(ValueError, match="units"):
        read_demand_csv(bad)


# ----------------------------------------------------------------- savings plan


def _long(hours: list[dict[str, float]]) -> pd.DataFrame:
    idx = pd.date_range("2026-11-01", periods=len(hours), freq="h", tz="UTC")
    return pd.DataFrame(
        [
            {"hour": h, "pool": p, "units": u}
            for h, row in zip(idx, hours, strict=True)
            for p, u in row.items()
        ]
    )


# Pool names sort so that the deeper discount is *not* the first column.
OD = {"a-low": 20.0, "b-high": 10.0}
DISC = {"a-low": 0.2, "b-high": 0.5}  # savings-plan rates 16 and 5 $/unit-hour


def test_savings_plan_goes_to_the_deepest_discount_first():
    # One hour, b-high 2 units, a-low 1 unit, S = 12 $/h:
    # b-high first: 2 units * 5 = 10 $, then a-low gets 2 $ / 16 = 0.125 units.
    # Cost = 12 + 20 * (1 - 0.125) = 29.5 (on-demand: 40).
    x = np.array([[1.0, 2.0]])
    od = np.array([20.0, 10.0])
    disc = np.array([0.2, 0.5])
    assert apply_savings_plan(x, od, disc, 12.0).tolist() == [[0.125, 2.0]]
    assert savings_plan_cost(x, od, disc, 12.0) == pytest.approx(29.5)


def test_savings_plan_size_on_a_hand_built_example():
    # Hours: (b 2, a 1), (b 1, a 0), (0, 0). Kinks of S: hour 1 at 10 and 26, hour 2 at 5.
    # Slope of the total cost: S<5: -1 -1 +1 = -1; 5<=S<10: -1 +1 +1 = +1 -> S* = 5.
    # cost(5) = (5 + 10*1 + 20*1) + (5 + 0) + 5 = 45; on-demand 50.
    demand = _long([{"a-low": 1, "b-high": 2}, {"a-low": 0, "b-high": 1}, {"a-low": 0, "b-high": 0}])
    plan = savings_plan_plan(demand, OD, DISC)
    assert plan.hourly_commitment == pytest.approx(5.0)
    month = 730 / 3
    assert plan.expected_cost == pytest.approx(45 * month)
    assert plan.on_demand_cost == pytest.approx(50 * month)
    assert plan.savings == pytest.approx(5 * month)
    assert plan.utilization == pytest.approx(10 / 15)  # 5 $ used in hours 1 and 2, none in hour 3
    assert plan.coverage == pytest.approx(20 / 50)  # 1 unit of b-high (10 $) in each of hours 1-2
    assert plan.coverage_by_pool == pytest.approx({"a-low": 0.0, "b-high": 20 / 30})


def test_savings_plan_search_matches_brute_force_and_never_double_counts():
    rng = np.random.default_rng(7)
    pools = ["p4d", "p5", "g5"]
    od = {"p4d": 21.96, "p5": 55.04, "g5": 5.67}
    disc = {"p4d": 0.3, "p5": 0.25, "g5": 0.4}
    for _ in range(15):
        hours = 48
        rows = [{p: float(rng.gamma(2.0, 2.0)) for p in pools} for _ in range(hours)]
        demand = _long(rows)
        ri = {p: float(rng.integers(0, 4)) for p in pools}
        plan = savings_plan_plan(demand, od, disc, ri, increment_usd=0.0)
        u = np.array([[r[p] for p in pools] for r in rows])
        x = np.maximum(u - np.array([ri[p] for p in pools]), 0.0)
        rates, d = np.array([od[p] for p in pools]), np.array([disc[p] for p in pools])
        # The cost is convex piecewise linear: its minimum is at a kink; try them all.
        kinks = {0.0}
        order = np.argsort(-d)
        for row in x:
            kinks.update(np.cumsum(row[order] * rates[order] * (1 - d[order])).tolist())
        brute = min(savings_plan_cost(x, rates, d, s) for s in kinks)
        assert savings_plan_cost(x, rates, d, plan.hourly_commitment) == pytest.approx(brute, rel=1e-12)
        covered = apply_savings_plan(x, rates, d, plan.hourly_commitment)
        ri_used = np.minimum(u, np.array([ri[p] for p in pools]))
        assert np.all(ri_used + covered <= u + 1e-9)  # RI + SP never cover more than demand


def test_savings_plan_rounds_to_the_cheaper_increment():
    demand = _long([{"a-low": 1, "b-high": 2}, {"a-low": 0, "b-high": 1.0003}, {"a-low": 0, "b-high": 0}])
    plan = savings_plan_plan(demand, OD, DISC, increment_usd=0.001)
    assert plan.hourly_commitment * 1000 == pytest.approx(round(plan.hourly_commitment * 1000))


# ------------------------------------------------------------------------- mix


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
