"""The job phase read from the warehouse's job runs into the purchase mix (sql/marts/job_classes.sql,
athanor.recommend.nightly.recommend_purchases), on the p4d fleet of tests/unit/test_assumptions.py:
3 p4d.24xlarge every hour of November in us-west-2, 60 checkpointing jobs of team ml, 32 GPU-hours each."""

from __future__ import annotations

import json
from datetime import date

import pytest

from athanor.recommend.nightly import PricingAssumptions, build_demand_mart, recommend_purchases
from athanor.warehouse import sql
from tests.unit.test_assumptions import _fill

NOVEMBER = {"window_start": "2026-11-01", "window_end": "2026-12-01"}


def _mix(con) -> dict[str, tuple]:
    recommend_purchases(con, "r1", date(2026, 11, 30), PricingAssumptions(deadline_slack=2.0))
    return {
        kind: (scope, json.loads(detail), savings)
        for kind, scope, detail, savings in con.execute(
            """select kind, scope, detail, estimated_monthly_savings_amount from recommendations
               where run_id = 'r1'"""
        ).fetchall()
    }


def test_a_class_per_phase_named_after_it(warehouse) -> None:
    _fill(warehouse)
    warehouse.execute("update job_run_facts set phase = case when source_row < 20 then 'explore' end")
    build_demand_mart(warehouse)
    classes = warehouse.execute(
        f"select job_class, phase, jobs, gpu_hours from ({sql('marts/job_classes')})", NOVEMBER
    ).fetchall()
    # 20 explore jobs and 40 without a phase: two classes, the one without keeps today's name.
    assert classes == [("ml/p4d", None, 40, 1280.0), ("ml/p4d/explore", "explore", 20, 640.0)]


def test_production_jobs_stay_off_spot_and_the_detail_says_why(warehouse) -> None:
    _fill(warehouse)
    warehouse.execute("update job_run_facts set phase = 'production'")
    rows = _mix(warehouse)
    # Without a phase these jobs go to spot (test_assumptions); as production work they do not.
    assert "spot" not in rows
    _, mix, saving = rows["mix"]
    (cls,) = mix["job_classes"]
    assert (cls["job_class"], cls["mode"], cls["phase"]) == ("ml/p4d/production", "on_demand", "production")
    assert cls["default_purchase"] == "dedicated capacity (a capacity reservation) with an SLA"
    assert cls["reason"].startswith("phase production: bought as dedicated capacity")
    # 60 jobs x 32 GPU-hours in the 720-hour window = 1,920 GPU-hours; a month: 1,920 x 730 / 720.
    assert mix["phases"]["production"]["gpu_hours_per_month"] == pytest.approx(1920 * 730 / 720)
    assert mix["gpu_hours_share"]["spot"] == 0.0
    # The saving is still the sum of its parts, on today's bill.
    parts = mix["attribution"]["parts"]
    assert float(saving) == pytest.approx(sum(p["saving"] for p in parts), abs=0.01)
    assert "The job phase sets the default purchase option: production" in mix["explanation"]


@pytest.mark.slow
def test_explore_jobs_buy_no_commitment(warehouse) -> None:
    # Jobs that do not checkpoint stay on on-demand. As explore work they are left out when
    # commitments are sized: their 1,920 GPU-hours are 240 of the pool's 2,160 instance-hours
    # (8 GPUs each), so the savings plan is sized on 3 - 1/3 instances an hour instead of 3.
    _fill(warehouse)
    warehouse.execute("update job_run_facts set checkpoint_interval_s = null")
    _, before, _ = _mix(warehouse)["mix"]
    warehouse.execute("update job_run_facts set phase = 'explore'")
    _, mix, _ = _mix(warehouse)["mix"]
    (pool,) = mix["pools"]
    assert pool["uncommitted_share"] == pytest.approx(240 / 2160)
    assert pool["phase_shares"] == pytest.approx({"explore": 240 / 2160, "none": 1 - 240 / 2160})
    assert mix["phases"]["explore"]["default_purchase"] == "spot or on-demand"
    # The bill shows the pool for fewer than 90 days: 1-year terms only (athanor.recommend.plan).
    # Over a year of demand shrinking 20 % a year (mean factor 0.2 / ln 1.25 = 0.896), a third unit
    # at 0.6x on-demand pays where the base is 3 an hour (used 3 x 0.896 - 2 = 0.69 of its hours),
    # not where explore leaves 3 - 1/3 (2.667 x 0.896 - 2 = 0.39): three units before, two now,
    # nothing on spot.
    assert before["recommended_quantity"] == {"p4d/us-west-2": 3.0}
    assert mix["recommended_quantity"] == {"p4d/us-west-2": 2.0}
    assert {p["term_months"] for p in (*before["pools"], *mix["pools"])} == {12}
    # Three units cover the flat base before; with two, a savings plan takes part of the rest.
    assert before["hourly_commitment"] == 0 < mix["hourly_commitment"]
    assert mix["gpu_hours_share"]["spot"] == 0.0
