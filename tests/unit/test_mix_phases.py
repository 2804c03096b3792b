"""The job phase sets the mix's default purchase option (athanor.recommend.phases, .mix).

The fleet of tests/unit/test_mix.py: 10 p4d units every hour of a 720-hour window at 1 $/unit-hour
(one GPU a unit), a class holding 3 units' worth of GPU-hours (2,160), never interrupted, spot at
0.3 $/h, one offer: a 1-year reservation at 0.6 x on-demand. A month is 730 hours.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from athanor.recommend import attribution, gpu_choice, phases
from athanor.recommend.commitments import CommitmentOffer
from athanor.recommend.mix import MixPrices, explain, recommend_mix
from tests.unit.test_mix import _fleet

POOL = "p4d/us-east-1"
GPUS = {POOL: 1}
ONE_YEAR = MixPrices(offers=(CommitmentOffer(12, "no_upfront", 0.6),), annual_demand_decline=0.0)
WITH_PLAN = MixPrices(offers=ONE_YEAR.offers, annual_demand_decline=0.0, sp_discount_by_pool={POOL: 0.3})


def _phased(phase: object, *, spot_rate: float = 0.3, gpu_hours: float = 3 * 720) -> tuple:
    demand, jobs = _fleet(spot_gpu_hours=gpu_hours)
    return demand, jobs.assign(phase=[phase], spot_rate=spot_rate)


@pytest.mark.parametrize("phase", [None, float("nan"), pd.NA])
def test_no_phase_keeps_the_mix_as_it_was(phase: object) -> None:
    # test_mix_by_hand: 3 units to spot at 0.3, 7 reserved at 0.6: 3066 + 657 = 3723 a month.
    demand, jobs = _phased(phase)
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool=GPUS)
    assert rec.pools[0].plan.commit_units == 7
    assert rec.estimated_monthly_cost == pytest.approx(3723.0)
    assert rec.pools[0].uncommitted_share == 0.0
    assert rec.to_dict()["job_classes"][0]["default_purchase"] == "not stated (no phase recorded)"
    assert "job phase" not in explain(rec)


def test_explore_on_spot_is_what_the_spot_recommender_allows() -> None:
    # Spot pays (0.3x, nothing interrupted): explore goes where a class with no phase goes.
    demand, jobs = _phased("explore")
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool=GPUS)
    assert rec.job_classes[0].mode == "spot"
    assert (rec.pools[0].plan.commit_units, rec.estimated_monthly_cost) == (7, pytest.approx(3723.0))


def test_explore_off_spot_buys_no_commitment_for_it() -> None:
    # Spot at 1.5 $/h costs more than on-demand: the class stays on on-demand, and being explore
    # work it is left out when reservations are sized: 10 - 3 = 7 units reserved (the old mix
    # reserved all 10, 4,380 a month). Per month: 7 x 0.6 x 730 = 3,066 reserved + 3 x 730 =
    # 2,190 on-demand = 5,256.
    demand, jobs = _phased("explore", spot_rate=1.5)
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool=GPUS)
    assert rec.job_classes[0].mode == "on_demand"
    assert rec.pools[0].plan.commit_units == 7
    assert rec.pools[0].uncommitted_share == pytest.approx(0.3)
    assert rec.estimated_monthly_cost == pytest.approx(5256.0)
    assert rec.costs.dollars == pytest.approx(
        {"reserved": 3066.0, "savings_plan": 0.0, "spot": 0.0, "on_demand": 2190.0}
    )
    by_phase = rec.to_dict()["phases"]
    assert by_phase["explore"]["gpu_hours_per_month"] == pytest.approx(2190.0)  # 2,160 x 730 / 720
    assert by_phase["explore"]["spot_class_gpu_hours_per_month"] == 0.0
    assert by_phase["none"]["gpu_hours_per_month"] == pytest.approx(7300.0 - 2190.0)
    assert rec.pools[0].phase_shares == pytest.approx({"explore": 0.3, "none": 0.7})
    assert (
        "The job phase sets the default purchase option: explore 2,190 GPU-hours a month, spot or "
        "on-demand (0 in classes sent to spot; no commitment bought for it)." in explain(rec)
    )


def test_a_fleet_of_explore_work_only_gets_no_commitment() -> None:
    # All 7,200 GPU-hours of the window are explore work that spot does not pay for: no
    # reservation, no savings plan (even with a 30 % plan on offer); 7,300 a month on on-demand.
    demand, jobs = _phased("explore", spot_rate=1.5, gpu_hours=10 * 720)
    rec = recommend_mix(demand, jobs, WITH_PLAN, gpus_per_unit_by_pool=GPUS)
    assert rec.pools[0].plan.commit_units == 0
    assert rec.hourly_commitment == 0.0
    assert rec.estimated_monthly_cost == pytest.approx(7300.0)
    assert rec.hours_share["on_demand"] == pytest.approx(1.0)
    # The same work with no phase is committed: 10 units reserved, 4,380 a month.
    demand, jobs = _phased(None, spot_rate=1.5, gpu_hours=10 * 720)
    rec = recommend_mix(demand, jobs, WITH_PLAN, gpus_per_unit_by_pool=GPUS)
    assert rec.pools[0].plan.commit_units == 10
    assert rec.estimated_monthly_cost == pytest.approx(4380.0)


def test_explore_work_still_uses_commitments_already_held() -> None:
    # 10 units already reserved (1,000 hours left, at the offer's 0.6): the bill discounts any
    # matching usage, so explore work runs on them; nothing new is bought. 10 x 0.6 x 730 = 4,380.
    demand, jobs = _phased("explore", spot_rate=1.5, gpu_hours=10 * 720)
    rec = recommend_mix(
        demand, jobs, ONE_YEAR, gpus_per_unit_by_pool=GPUS, existing_by_pool={POOL: [(10, 1000)]}
    )
    assert rec.pools[0].plan.commit_units == 0
    assert rec.estimated_monthly_cost == pytest.approx(4380.0)
    assert rec.hours_share["reserved"] == pytest.approx(1.0)


@pytest.mark.parametrize("phase", ["production", "tune"])
def test_production_and_tune_work_is_committed_not_sent_to_spot(phase: str) -> None:
    # Spot would pay (0.3x), but the phase's default is a commitment or dedicated capacity: the
    # 3 units stay off spot and all 10 are reserved, 10 x 0.6 x 730 = 4,380 a month (the old mix:
    # 3,723 with the class on spot).
    demand, jobs = _phased(phase)
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool=GPUS)
    (cls,) = rec.job_classes
    assert cls.mode == "on_demand" and rec.hours_share["spot"] == 0.0
    assert rec.pools[0].plan.commit_units == 10
    assert rec.estimated_monthly_cost == pytest.approx(4380.0)
    words = phases.PHASE_DEFAULTS[phase].words
    assert cls.reason == (
        f"phase {phase}: bought as {words} (the phase's default), not spot; "
        "spot would cost 0.30x on-demand once interruptions are paid for"
    )
    detail = rec.to_dict()
    assert detail["job_classes"][0]["phase"] == phase
    assert detail["job_classes"][0]["default_purchase"] == words
    assert detail["phases"][phase]["option"] == phases.PHASE_DEFAULTS[phase].option
    assert f"{phase} 2,190 GPU-hours a month, {words} (kept off spot)" in explain(rec)
    json.dumps(detail, allow_nan=False)


def test_production_that_does_not_checkpoint_is_not_told_to_checkpoint_for_spot() -> None:
    demand, jobs = _phased("production")
    jobs = jobs.assign(checkpointed=False, checkpoint_time_h=0.05)
    rec = recommend_mix(demand, jobs, ONE_YEAR, gpus_per_unit_by_pool=GPUS)
    assert rec.job_classes[0].unlock is None
    assert rec.job_classes[0].reason == (
        "phase production: bought as dedicated capacity (a capacity reservation) with an SLA "
        "(the phase's default), not spot"
    )
    assert "do not checkpoint" not in explain(rec)


def test_phased_mix_parts_add_up_to_its_saving() -> None:
    # Three classes in one pool: explore off spot (2 units), production that spot would take
    # (3 units), no phase on spot (1 unit); a 30 % savings plan on offer. Whatever the split, the
    # parts are steps from the bill and add up to bill - plan.
    demand, base = _fleet()
    jobs = pd.concat(
        [
            base.assign(job_class="a/p4d/explore", phase="explore", gpu_hours=2 * 720.0, spot_rate=1.5),
            base.assign(job_class="b/p4d/production", phase="production", gpu_hours=3 * 720.0),
            base.assign(job_class="c/p4d", phase=None, gpu_hours=1 * 720.0),
        ],
        ignore_index=True,
    )
    bill = 7300.0
    rec = recommend_mix(demand, jobs, WITH_PLAN, gpus_per_unit_by_pool=GPUS, current_monthly_bill_usd=bill)
    # Reserved on 10 - 1 (spot) - 2 (explore on on-demand) = 7 units; the plan may take the rest.
    assert rec.pools[0].plan.commit_units == 7
    assert [c.mode for c in rec.job_classes] == ["on_demand", "on_demand", "spot"]
    parts = attribution.mix_parts(
        demand,
        jobs,
        rec,
        current_bill_usd=bill,
        billed_by_pool={POOL: bill},
        billed_by_option={"on_demand": bill},
        existing_by_pool={},
        gpus_per_unit_by_pool=GPUS,
        prices=WITH_PLAN,
    )
    assert parts.planned_usd == pytest.approx(rec.estimated_monthly_cost)
    assert parts.saving_usd == pytest.approx(rec.estimated_monthly_savings_amount)
    assert parts.saving_usd <= bill


def test_the_gpu_plan_states_the_same_default_the_mix_applies() -> None:
    assert gpu_choice.PHASE_PURCHASE == {k: d.words for k, d in phases.PHASE_DEFAULTS.items()}
    assert gpu_choice.PHASE_PURCHASE["explore"] == "spot or on-demand"
    assert phases.purchase_words(None) == "not stated (no phase recorded)"
    with pytest.raises(ValueError, match="unknown job phase 'pilot'"):
        phases.default_for("pilot")
