"""Commitment sizing for one pool: the quantile rule, plans, terms (athanor.recommend.commitments)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from athanor.recommend.commitments import (
    CommitmentOffer,
    best_plan,
    brute_force_commitment,
    commit_plan,
    commitment_cost,
    existing_profile,
    optimal_commitment,
    plan_terms,
    read_demand_csv,
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
    assert plan.upfront_cost == 0 and plan.break_even_months is None  # nothing upfront to pay back
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
    assert best_plan(plans).savings == max(p.savings for p in plans)
    # With no decline and flat demand the deeper discount wins.
    assert best_plan(plan_terms(u, 1.0, annual_decline=0.0)).term_months == 36


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
