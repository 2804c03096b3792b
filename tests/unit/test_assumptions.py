"""Pricing assumptions: settings with documented defaults, overridable per run from the optimize
DAG's form, applied by the recommenders, and stored in full with every recommendation."""

from __future__ import annotations

import importlib
import json
import math
import sys
from dataclasses import replace
from datetime import date

import pytest

from athanor.recommend.commitments import commit_plan
from athanor.recommend.nightly import PricingAssumptions, recommend_purchases
from athanor.settings import PRICING_ASSUMPTIONS, PROJECT_ROOT, Settings


def test_settings_defaults_environment_and_bad_values() -> None:
    s = Settings.from_env({"ATHANOR_HOME": "/tmp/x"})
    assert (
        s.commit_discount_1y,
        s.commit_discount_3y,
        s.savings_plan_discount,
        s.deadline_slack,
        s.commit_min_utilization,
    ) == (0.40, 0.60, 0.28, 1.5, 0.0)
    s = Settings.from_env(
        {"ATHANOR_HOME": "/tmp/x", "ATHANOR_DEADLINE_SLACK": "2", "ATHANOR_COMMIT_DISCOUNT_3Y": "0.55"}
    )
    assert (s.deadline_slack, s.commit_discount_3y) == (2.0, 0.55)
    with pytest.raises(
        ValueError,
        match=r"commit_discount_1y \(ATHANOR_COMMIT_DISCOUNT_1Y\) must be between 0 and 0.99, got 40",
    ):
        Settings.from_env({"ATHANOR_COMMIT_DISCOUNT_1Y": "40"})
    with pytest.raises(
        ValueError, match=r"deadline_slack \(ATHANOR_DEADLINE_SLACK\) must be a number, got 'soon'"
    ):
        Settings.from_env({"ATHANOR_DEADLINE_SLACK": "soon"})


def test_every_pricing_setting_is_documented_in_the_readme() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    for name, (variable, *_) in PRICING_ASSUMPTIONS.items():
        default = Settings.__dataclass_fields__[name].default
        assert f"| `{variable}` | {default:g}" in readme.replace("0.40", "0.4").replace("0.60", "0.6")


def test_a_run_overrides_the_settings_from_its_form() -> None:
    settings = Settings.from_env({"ATHANOR_HOME": "/tmp/x", "ATHANOR_DEADLINE_SLACK": "2"})
    # Empty form fields keep the settings; a filled one wins and is listed as overridden.
    a = PricingAssumptions.from_settings(
        settings, {"deadline_slack": None, "commit_discount_3y": 0.5, "as_of": "x"}
    )
    assert (a.deadline_slack, a.commit_discount_3y, a.commit_discount_1y) == (2.0, 0.5, 0.4)
    assert a.overridden == ("commit_discount_3y",)
    assert (a.one_year_ratio, a.three_year_ratio) == (pytest.approx(0.6), pytest.approx(0.5))
    assert a.to_dict()["overridden"] == ["commit_discount_3y"]
    with pytest.raises(
        ValueError, match=r"commit_min_utilization \(ATHANOR_COMMIT_MIN_UTILIZATION\) must be between 0 and 1"
    ):
        PricingAssumptions.from_settings(settings, {"commit_min_utilization": 1.5})


def test_the_optimize_form_offers_each_assumption_and_the_flow_passes_it_on(monkeypatch, settings) -> None:
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "dags"))
    optimize = importlib.import_module("athanor_optimize")
    try:
        assert set(optimize.PRICING_PARAMS) == set(PRICING_ASSUMPTIONS)
        slack = optimize.PRICING_PARAMS["deadline_slack"]
        assert slack.value is None and slack.schema["minimum"] == 1.0
        assert "ATHANOR_DEADLINE_SLACK" in slack.description and "default 1.5" in slack.description
    finally:
        sys.modules.pop("athanor_optimize", None)

    from athanor import flow
    from athanor.recommend import nightly

    seen = {}

    def fake(con, run_id, as_of, assumptions=None):
        seen["assumptions"] = assumptions
        return {"pools": 0}

    monkeypatch.setattr(nightly, "recommend_purchases", fake)
    run = flow.RunContext(
        run_id="r", as_of=date(2026, 11, 30), params={"savings_plan_discount": 0.3}, settings=settings
    )
    flow.recommend_mix(run)
    assert seen["assumptions"].savings_plan_discount == 0.3
    assert seen["assumptions"].overridden == ("savings_plan_discount",)


def test_utilisation_floor_on_a_commitment_by_hand() -> None:
    # u = [2, 2, 4, 4], p_od = 1, p_c = 0.4: the optimum buys 4, used (2 + 2 + 4 + 4) / 16 = 75 %.
    plan = commit_plan([2, 2, 4, 4], 1.0, 0.4)
    assert (plan.commit_units, plan.purchase_utilization, plan.break_even_utilization) == (4, 0.75, 0.4)
    # Floor 80 %: 3 units are used (2 + 2 + 3 + 3) / 12 = 83 %. Per 4 hours 3 x 0.4 x 4 = 4.8 plus
    # 1 + 1 on-demand = 6.8 against 12 on-demand: saves 5.2 x 182.5 = 949 a month.
    plan = commit_plan([2, 2, 4, 4], 1.0, 0.4, min_utilization=0.8)
    assert (plan.commit_units, plan.cost_optimal_units) == (3, 4)
    assert plan.purchase_utilization == pytest.approx(10 / 12)
    assert plan.savings == pytest.approx(5.2 * 182.5)
    # Floor 90 %: 2 units, used every hour.
    plan = commit_plan([2, 2, 4, 4], 1.0, 0.4, min_utilization=0.9)
    assert (plan.commit_units, plan.purchase_utilization) == (2, 1.0)
    with pytest.raises(ValueError, match="min_utilization"):
        commit_plan([2, 2, 4, 4], 1.0, 0.4, min_utilization=1.2)


def _fill(con) -> None:
    """November 2026: a p4d pool in us-west-2 (3 instances every hour, on-demand) and 60 jobs of
    team ml on it, 4 h each, 2 starting every 12 h, checkpointing every 30 min (60-second saves);
    the team's fitted duration model of this run: lognormal, median 4 h."""
    con.execute(
        """insert into billing_facts (load_id, source_file, source_row, source_format, billing_account_id,
               billing_currency, billing_period_start, billing_period_end, charge_period_start,
               charge_period_end, charge_category, billed_cost, effective_cost, region_id,
               x_instance_type, x_instance_family, x_pricing_model, x_usage_hours)
           select 'L', 'f.csv', h, 'focus', 'a', 'USD', '2026-11-01', '2026-12-01',
                  timestamp '2026-11-01' + to_hours(h), timestamp '2026-11-01' + to_hours(h + 1), 'Usage',
                  3 * 21.96, 3 * 21.96, 'us-west-2', 'p4d.24xlarge', 'p4d', 'on_demand', 3
           from range(720) as t(h)"""
    )
    con.execute(
        """insert into job_run_facts (load_id, source_file, source_row, source, job_id, start_time, end_time,
               state, instance_type, instance_count, gpus_per_instance, pricing_model, team,
               checkpoint_interval_s, checkpoint_time_s, duration_s, censored, gpu_count, gpu_hours)
           select 'J', 'jobs.csv', i, 'generic', 'job-' || i,
                  timestamp '2026-11-01' + to_hours(6 * i), timestamp '2026-11-01' + to_hours(6 * i + 4),
                  'completed', 'p4d.24xlarge', 1, 8, 'on_demand', 'ml', 1800, 60, 4 * 3600, false, 8, 32
           from range(60) as t(i)"""
    )
    con.execute(
        """insert into duration_fits (run_id, as_of, group_by, group_key, n, censored, family, params, record)
           values ('r1', date '2026-11-30', 'team', 'team=ml', 60, 0, 'lognormal',
                   json_object('mu', ln(4 * 3600), 'sigma', 0.5), '{}'),
                  ('r1', date '2026-11-30', 'all', 'all', 60, 0, 'exponential',
                   json_object('rate_per_s', 1 / (4 * 3600)), '{}')"""
    )


def test_every_recommendation_stores_the_values_it_used(warehouse, settings) -> None:
    _fill(warehouse)
    settings = replace(settings, commit_discount_3y=0.5)
    a = PricingAssumptions.from_settings(settings, {"deadline_slack": 2.0})
    recommend_purchases(warehouse, "r1", date(2026, 11, 30), a)
    rows = warehouse.execute(
        """select kind, scope, assumptions, break_even_months, upfront_cost, risk from recommendations
           where run_id = 'r1' order by kind, scope"""
    ).fetchall()
    kinds = {kind for kind, *_ in rows}
    assert {"reserved_instances", "spot", "mix"} <= kinds
    for kind, scope, text, break_even, _, _ in rows:
        used = json.loads(text)
        # The settings and the run's override, and what the recommenders derived from them.
        assert (used["commit_discount_1y"], used["commit_discount_3y"], used["deadline_slack"]) == (
            0.4,
            0.5,
            2.0,
        )
        assert used["overridden"] == ["deadline_slack"]
        assert [o["rate_ratio"] for o in used["offers"]] == [pytest.approx(0.6), pytest.approx(0.5)]
        assert used["sp_discount_by_pool"] == {"p4d/us-west-2": 0.28}
        assert used["min_utilization"] == 0.0 and used["restart_time_h"] == 0.1
        assert used["planning_window"] == {
            "start": "2026-11-01T00:00:00",
            "end": "2026-12-01T00:00:00",
            "days": 30,
        }
        # The pool's own region: p4d.24xlarge is bucket 4 in us-west-2 (25 %/month), not us-east-1's 2.
        rate = used["interruption_rate_by_class"]["ml/p4d"]
        assert (rate["region"], rate["instance_type"], rate["interruption_bucket"]) == (
            "us-west-2",
            "p4d.24xlarge",
            4,
        )
        assert rate["rate_per_h"] == pytest.approx(-math.log(0.75) / 730)
        # The class's jobs come from the team's fit (censoring-aware), not from raw medians.
        assert used["duration_model_by_class"] == {
            "ml/p4d": "lognormal fitted on team=ml (60 jobs, 0 censored)"
        }
        # Nothing here is paid upfront: no break-even anywhere.
        assert break_even is None, (kind, scope)
    (spot_risk,) = [risk for kind, _, _, _, _, risk in rows if kind == "spot"]
    # 60 jobs x 20 simulated jobs each.
    assert spot_risk.startswith(
        "100.0% of spot jobs finish by their deadline (95% interval 99.7-100.0%, 1,200 "
    )
    (spot_upfront,) = [upfront for kind, _, _, _, upfront, _ in rows if kind == "spot"]
    assert spot_upfront is None  # nothing to buy
