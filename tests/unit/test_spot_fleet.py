"""Spot from the fleet's own history (issue 28, item 3): interruption rates updated from the fleet's
spot runs with the Spot Advisor as the prior, spot prices from the bill, completion predicted
against observed, and the phase policy priced (athanor.recommend.spot, .phases, .mix, .nightly).

Advisor rates: bucket b reads as the monthly fraction f (2.5, 12.5, 25 % for buckets 0, 2, 4)
and λ = -ln(1 - f) / 730 per instance-hour: 3.468193e-5, 1.829197e-4, 3.940850e-4. The prior is
worth 200 pseudo instance-hours: Gamma(a = 200 λ, b = 200).
"""

from __future__ import annotations

import json
import math
from datetime import date

import pytest

from athanor.recommend import phases, spot
from athanor.recommend.mix import MixPrices, explain, recommend_mix
from athanor.recommend.nightly import PricingAssumptions, recommend_purchases
from athanor.settings import Settings
from tests.unit.test_assumptions import _fill
from tests.unit.test_mix_phases import ONE_YEAR, _phased

ADVISOR = {0: 3.468192874560257e-05, 2: 1.829197159240036e-04, 4: 3.940850307558642e-04}
GPUS = {"p4d/us-east-1": 1}


def test_the_advisor_rates_and_the_prior_strength_by_hand() -> None:
    for bucket, rate in ADVISOR.items():
        assert spot.monthly_fraction_to_rate_per_h(spot.BUCKET_MONTHLY_FRACTION[bucket]) == pytest.approx(
            rate
        )
    assert spot.PRIOR_INSTANCE_HOURS == 200.0


@pytest.mark.parametrize("bucket", [0, 2, 4])
def test_a_pool_with_2000_instance_hours_gets_the_fleets_own_rate(bucket: int) -> None:
    # 100 interruptions in 2,000 instance-hours: 0.05 observed. Posterior mean (a + k) / (b + h):
    # bucket 0: (200 x 3.468193e-5 + 100) / 2,200 = 100.0069364 / 2,200 = 0.04545770
    # bucket 2: (0.0365839 + 100) / 2,200 = 0.04547117;  bucket 4: (0.0788170 + 100) / 2,200 = 0.04549037
    by_hand = {0: 0.04545770, 2: 0.04547117, 4: 0.04549037}
    found = spot.fleet_interruption_rate(100, 2000.0, ADVISOR[bucket])
    assert found.observed == 0.05
    assert found.used == pytest.approx(by_hand[bucket], rel=1e-6)
    # Near the fleet's 0.05 (within 10 %) whatever the bucket; the advisor's own figure is 100-1,400x lower.
    assert abs(found.used - 0.05) / 0.05 < 0.1
    record = found.to_dict()
    assert (record["observed"], record["instance_hours_observed"], record["prior"]) == (
        0.05,
        2000.0,
        ADVISOR[bucket],
    )
    assert record["used"] == found.used
    assert record["low"] < found.used < record["high"]


@pytest.mark.parametrize("bucket", [0, 2, 4])
def test_a_pool_with_50_instance_hours_stays_near_its_prior(bucket: int) -> None:
    # No interruption in 50 instance-hours (observed 0): (200 λ + 0) / (200 + 50) = 0.8 λ, not 0.
    found = spot.fleet_interruption_rate(0, 50.0, ADVISOR[bucket])
    assert found.observed == 0.0
    assert found.used == pytest.approx(0.8 * ADVISOR[bucket], rel=1e-12)
    # Without any spot run the advisor's figure is used as it is.
    assert spot.fleet_interruption_rate(0, 0.0, ADVISOR[bucket]).used == pytest.approx(ADVISOR[bucket])
    assert spot.fleet_interruption_rate(0, 0.0, ADVISOR[bucket]).observed is None


def test_the_rate_interval_is_the_gamma_posteriors() -> None:
    # Gamma(shape 3, rate 1,000): its 2.5 % and 97.5 % quantiles are chi2(6) quantiles / 2,000:
    # 1.237344 / 2,000 and 14.449375 / 2,000.
    found = spot.fleet_interruption_rate(3, 800.0, 0.0, prior_instance_hours=200.0)
    assert found.used == pytest.approx(0.003)
    low, high = found.interval()
    assert (low, high) == (
        pytest.approx(1.237344 / 2000, rel=1e-5),
        pytest.approx(14.449375 / 2000, rel=1e-5),
    )
    assert spot.fleet_interruption_rate(0, 10.0, 0.0).interval() == (0.0, 0.0)


def test_a_class_already_on_spot_at_the_billed_rate_shows_no_spot_saving() -> None:
    # 10-hour jobs, λ = 1e-6, 30-minute saves: spot pays at 0.315002x on-demand (test_spot). On a
    # class that costs 1,000 a month at on-demand prices: entirely on spot today -> 0; a quarter on
    # spot -> 1,000 x 0.75 x (1 - 0.315002) = 513.7487; none (as before) -> 684.9983.
    def saving(today: float) -> float:
        return spot.assess_job_class(
            "c", duration_ppf_h=lambda q: 10.0 + 0.0 * q, instance_count=1, instance_rate_per_h=1e-6,
            checkpoint_h=0.5, restart_h=0.1, deadline_slack=1.5, spot_rate=0.3, on_demand_rate=1.0,
            monthly_on_demand_usd=1000.0, spot_share_today=today, sim_jobs=200,
        ).monthly_saving_usd  # fmt: skip

    ratio = 0.3 * math.expm1(1e-6 * 10.5) * (1e6 + 0.1) / 10.0
    assert saving(1.0) == 0.0
    assert saving(0.25) == pytest.approx(1000 * 0.75 * (1 - ratio), rel=1e-9)
    assert saving(0.0) == pytest.approx(684.998317, abs=1e-5)


def test_a_class_moved_off_spot_loses_its_spot_discount() -> None:
    # The same class kept on on-demand (mode fixed), 40 % on spot today at 0.3x: the move costs
    # 1,000 x 0.4 x (1 - 0.3) = 280 a month.
    verdict = spot.assess_job_class(
        "c", duration_ppf_h=lambda q: 10.0 + 0.0 * q, instance_count=1, instance_rate_per_h=1e-6,
        checkpoint_h=0.5, restart_h=0.1, deadline_slack=1.5, spot_rate=0.3, on_demand_rate=1.0,
        monthly_on_demand_usd=1000.0, spot_share_today=0.4, sim_jobs=200, mode="on_demand",
    )  # fmt: skip
    assert verdict.monthly_saving_usd == pytest.approx(-280.0)


# ----------------------------------------------------------------------------- the phase policy
# The fleet of test_mix_phases: one production class of 3 units' worth of work that spot would run at
# 0.3x. Kept off spot: all 10 units reserved, 10 x 0.6 x 730 = 4,380 a month; on spot: 7 reserved
# + the class at 0.3 = 3,066 + 657 = 3,723. The policy's price: 4,380 - 3,723 = 657 a month.


def _production(ended: int, completed: int, policy: str):
    demand, jobs = _phased("production")
    jobs = jobs.assign(spot_runs_ended=ended, spot_runs_completed=completed)
    prices = MixPrices(offers=ONE_YEAR.offers, annual_demand_decline=0.0, spot_phase_policy=policy)
    return recommend_mix(demand, jobs, prices, gpus_per_unit_by_pool=GPUS)


def test_the_phase_policys_price_is_the_plan_with_it_minus_without_it() -> None:
    rec = _production(0, 0, "evidence")  # no spot run of its own: the phase keeps it off spot
    assert rec.job_classes[0].mode == "on_demand"
    assert rec.estimated_monthly_cost == pytest.approx(4380.0)
    off = _production(0, 0, "off")
    assert off.job_classes[0].mode == "spot" and off.estimated_monthly_cost == pytest.approx(3723.0)
    policy = rec.phase_policy
    assert policy["monthly_cost"] == pytest.approx(657.0)
    assert policy["monthly_cost"] == pytest.approx(rec.estimated_monthly_cost - off.estimated_monthly_cost)
    assert (policy["plan_monthly_cost"], policy["plan_monthly_cost_without_policy"]) == (
        pytest.approx(4380.0),
        pytest.approx(3723.0),
    )
    assert policy["kept_off_spot"] == ["research/p4d"] and policy["would_use_spot_without_policy"] == [
        "research/p4d"
    ]
    assert policy["words"].startswith("Keeping production/tune off spot costs $657 a month (research/p4d")
    assert "Keeping production/tune off spot costs $657 a month" in explain(rec)
    # With the policy off there is nothing to price.
    assert off.phase_policy["monthly_cost"] == 0.0 and off.phase_policy["phases_kept_off_spot"] == []
    json.dumps(rec.to_dict(), allow_nan=False)


def test_spot_work_that_demonstrably_completes_is_not_moved_off_spot_by_its_phase() -> None:
    # 10 of its 10 ended spot runs completed: under the default policy the spot model decides (3,723,
    # nothing to price); only 'strict' keeps it off spot, and then its cost (657 a month) is shown.
    rec = _production(10, 10, "evidence")
    (cls,) = rec.job_classes
    assert cls.mode == "spot" and rec.estimated_monthly_cost == pytest.approx(3723.0)
    assert cls.reason.startswith("phase production, but 10 of its 10 spot runs that ended completed")
    assert rec.phase_policy["lifted_by_evidence"] == ["research/p4d"]
    assert rec.phase_policy["monthly_cost"] == pytest.approx(0.0)
    strict = _production(10, 10, "strict")
    assert strict.job_classes[0].mode == "on_demand"
    assert strict.phase_policy["monthly_cost"] == pytest.approx(657.0)
    # Too few runs (4 < 5), or too few of them completed (9 of 10 < 95 %): the phase's default holds.
    assert _production(4, 4, "evidence").phase_policy["monthly_cost"] == pytest.approx(657.0)
    assert _production(10, 9, "evidence").phase_policy["monthly_cost"] == pytest.approx(657.0)


def test_the_spot_phase_policy_setting() -> None:
    assert Settings.from_env({}).spot_phase_policy == "evidence"
    assert Settings.from_env({"ATHANOR_SPOT_PHASE_POLICY": " Strict "}).spot_phase_policy == "strict"
    with pytest.raises(ValueError, match="ATHANOR_SPOT_PHASE_POLICY must be one of evidence, strict, off"):
        Settings.from_env({"ATHANOR_SPOT_PHASE_POLICY": "sometimes"})
    assert phases.observed_completion(57, 60) == 0.95 and phases.observed_completion(0, 0) is None


# ------------------------------------------------------------------------ from the warehouse
# tests/unit/test_assumptions._fill: 60 jobs of team ml on p4d.24xlarge, 4 h on one instance each,
# in a p4d pool of us-west-2 (Spot Advisor bucket 4: 3.940850e-4). Here they ran on spot, 12 of
# them restarted once (i % 5 == 0) and 3 were preempted (i = 1, 2, 3); the bill's spot hours of
# p4d.24xlarge in us-west-2 cost 7.50 $/h (the catalogue says 7.90).


def _spot_fleet(con) -> None:
    _fill(con)
    con.execute(
        """update job_run_facts set pricing_model = 'spot',
               restart_count = case when source_row % 5 = 0 then 1 else 0 end,
               state = case when source_row in (1, 2, 3) then 'preempted' else 'completed' end,
               censored = source_row in (1, 2, 3)"""
    )
    con.execute(
        "update billing_facts set x_pricing_model = 'spot', effective_cost = 3 * 7.5, billed_cost = 3 * 7.5"
    )


def test_the_warehouses_spot_runs_and_bill_set_the_class_rate_and_price(warehouse) -> None:
    _spot_fleet(warehouse)
    recommend_purchases(warehouse, "r1", date(2026, 11, 30), PricingAssumptions(deadline_slack=2.0))
    detail, assumptions = warehouse.execute(
        "select detail, assumptions from recommendations where run_id = 'r1' and kind = 'mix'"
    ).fetchone()
    (cls,) = json.loads(detail)["job_classes"]
    assert (cls["job_class"], cls["pool"], cls["instance_type"]) == (
        "ml/p4d",
        "p4d/us-west-2",
        "p4d.24xlarge",
    )
    # 12 restarts + 3 preemptions = 15 interruptions in 60 x 4 = 240 instance-hours: 0.0625 observed;
    # used (200 x 3.940850e-4 + 15) / (200 + 240) = 15.0788170 / 440 = 0.03427004.
    rate = cls["interruptions_per_instance_hour"]
    assert (rate["interruptions_observed"], rate["instance_hours_observed"]) == (15, 240.0)
    assert rate["observed"] == 0.0625 and rate["prior"] == pytest.approx(ADVISOR[4])
    assert rate["used"] == pytest.approx(0.03427004, rel=1e-6)
    used = json.loads(assumptions)["interruption_rate_by_class"]["ml/p4d"]
    assert (
        used["used_rate_per_h"] == pytest.approx(0.03427004, rel=1e-6)
        and used["observed_interruptions"] == 15
    )
    # The class's spot runs: 57 of 60 completed.
    completion = cls["completion"]
    assert (completion["observed"], completion["observed_runs"]) == (0.95, 60)
    assert completion["low"] <= completion["predicted"] <= completion["high"]
    # The bill's rate, not the catalogue's; the class is all on spot at it: no spot saving.
    assert (cls["spot_rate"], cls["spot_rate_source"]) == (pytest.approx(7.5), "bill")
    assert cls["spot_share_today"] == 1.0
    assert cls["mode"] == "spot" and cls["monthly_saving_usd"] == 0.0
