"""Savings plans sized on what reserved units leave (athanor.recommend.savings_plan)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from athanor.recommend.savings_plan import apply_savings_plan, savings_plan_cost, savings_plan_plan


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
