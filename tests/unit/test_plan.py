"""The plan's demand and terms (athanor.recommend.plan), with hand-computed values.

A GPU move changes the demand commitments are sized on: the class's hours leave its pool hour by
hour and arrive in the new pool scaled by the plan's GPU-hours per run, so the source pool's
commitment falls to its residual demand and the target's rises.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from athanor.recommend import mix, plan
from athanor.recommend.commitments import CommitmentOffer

HOURS = 720
MONTH = 730 / HOURS  # a 720-hour window scaled to a 730-hour month


def window(**units: float) -> pd.DataFrame:
    index = pd.date_range("2026-11-01", periods=HOURS, freq="h", name="hour")
    return pd.DataFrame({pool: np.full(HOURS, float(u)) for pool, u in units.items()}, index=index)


def on_demand_only(pools: list[str]) -> pd.DataFrame:
    """One job class per pool that stays off spot (it does not checkpoint): no spot share."""
    return pd.DataFrame(
        [
            {
                "job_class": f"c/{pool}",
                "pool": pool,
                "gpu_hours": 1.0,
                "jobs": 1,
                "median_duration_h": 4.0,
                "p90_duration_h": 12.0,
                "instance_count": 1,
                "checkpoint_time_h": 0.05,
                "restart_time_h": 0.1,
                "deadline_slack": 2.0,
                "spot_rate": 0.3,
                "on_demand_rate": 1.0,
                "interruption_rate_per_h": 0.0,
                "interruptible": False,
            }
            for pool in pools
        ]
    )


def plan_mix(wide: pd.DataFrame, rates: dict[str, float], prices: mix.MixPrices) -> mix.MixRecommendation:
    long = wide.reset_index().melt(id_vars="hour", var_name="pool", value_name="units")
    long["on_demand_rate"] = long["pool"].map(rates)
    return mix.recommend_mix(
        long, on_demand_only(list(wide.columns)), prices=prices, price_phase_policy=False
    )


def commitments(wide: pd.DataFrame, rates: dict[str, float]) -> dict[str, float]:
    """The reserved units the mix buys per pool on `wide` (1-year, 0.6x on-demand, no spot)."""
    prices = mix.MixPrices(offers=(CommitmentOffer(12, "no_upfront", 0.6, 0.0),), annual_demand_decline=0.0)
    return {p.pool: p.plan.commit_units for p in plan_mix(wide, rates, prices).pools}


def test_a_class_moving_p4d_to_p5_lowers_the_p4d_commitment_and_raises_p5s() -> None:
    # p4d holds 10 units every hour, p5 2. The class holds 4 p4d units every hour (4 x 720 x
    # 730/720 = 2,920 unit-hours a month); on p5 it needs half the unit-hours (scale 0.5): 2 units.
    # With flat demand the cost-optimal commitment is the demand itself: p4d 10 -> 6, p5 2 -> 4.
    rates = {"p4d/us-east-1": 32.77, "p5/us-east-1": 98.32}
    wide = window(**{"p4d/us-east-1": 10, "p5/us-east-1": 2})
    move = plan.Move(
        "vision/vit/production", "p4d/us-east-1", "p5/us-east-1", 4 * HOURS * MONTH, 0.5, 98.32, 8.0
    )
    adjusted = plan.adjust_demand(wide, rates, {}, {}, [move], {})

    assert adjusted.after_moves["p4d/us-east-1"].to_numpy() == pytest.approx(np.full(HOURS, 6.0))
    assert adjusted.after_moves["p5/us-east-1"].to_numpy() == pytest.approx(np.full(HOURS, 4.0))
    assert commitments(wide, rates) == {"p4d/us-east-1": 10.0, "p5/us-east-1": 2.0}
    assert commitments(adjusted.after_moves, adjusted.rates) == {"p4d/us-east-1": 6.0, "p5/us-east-1": 4.0}
    assert [(k, s, pools) for k, s, pools, _ in adjusted.states] == [
        ("gpu_choice", "vision/vit/production", ("p4d/us-east-1", "p5/us-east-1"))
    ]


def test_a_move_follows_its_class_hour_by_hour_and_never_takes_a_pool_below_zero() -> None:
    # The class runs only in the first half of the window, 6 units an hour: 6 x 360 x 730/720
    # unit-hours a month. The pool has 4 units an hour: the move takes 4 (all there is) in those
    # hours and nothing in the others; the new pool (not in the window) gets 4 x 2 = 8 there.
    wide = window(**{"g6/us-east-1": 4})
    shape = np.r_[np.full(360, 6.0), np.zeros(360)]
    move = plan.Move("c", "g6/us-east-1", "g6e/us-east-1", 6 * 360 * MONTH, 2.0, 10.0, 4.0)
    adjusted = plan.adjust_demand(wide, {"g6/us-east-1": 13.35}, {}, {}, [move], {"c": shape})

    after = adjusted.after_moves
    assert after["g6/us-east-1"].to_numpy() == pytest.approx(np.r_[np.zeros(360), np.full(360, 4.0)])
    assert after["g6e/us-east-1"].to_numpy() == pytest.approx(np.r_[np.full(360, 8.0), np.zeros(360)])
    assert adjusted.rates["g6e/us-east-1"] == 10.0 and adjusted.gpus_per_unit["g6e/us-east-1"] == 4.0


def test_idle_capacity_comes_off_its_pool_in_proportion_to_its_demand() -> None:
    # 10 units an hour is 7,300 unit-hours a month; 730 of them idle is a tenth: 9 units an hour.
    wide = window(**{"p5/us-east-1": 10, "g5/us-east-1": 3})
    adjusted = plan.adjust_demand(wide, {}, {}, {"p5/us-east-1": 730.0}, [], {})
    assert adjusted.idle_shares == {"p5/us-east-1": pytest.approx(0.1)}
    assert adjusted.after_idle["p5/us-east-1"].to_numpy() == pytest.approx(np.full(HOURS, 9.0))
    assert adjusted.after_idle["g5/us-east-1"].to_numpy() == pytest.approx(np.full(HOURS, 3.0))


@pytest.mark.parametrize(
    ("before", "after", "previous", "days", "limit", "words"),
    [
        (1000.0, 1000.0, 1000.0, 90, None, "steady demand"),
        (1000.0, 880.0, 1000.0, 120, 12, "the plan leaves 88% of today's demand"),
        (1000.0, 1000.0, 1000.0, 87, 12, "for 87 days, fewer than 90"),
        (850.0, 850.0, 1000.0, 120, 12, "its demand fell 15%"),
        (1600.0, 1600.0, 1000.0, 120, 12, "rose 60%"),
        (0.0, 500.0, 0.0, 0, 12, "moves work into this pool"),
    ],
)
def test_term_limits(
    before: float, after: float, previous: float, days: int, limit: int | None, words: str
) -> None:
    found = plan.term_limits({"p": before}, {"p": after}, {"p": previous}, {"p": days})["p"]
    assert found.max_term_months == limit
    assert words in found.reason


def test_a_pool_limited_to_one_year_is_offered_no_longer_term() -> None:
    offers = (CommitmentOffer(12, "no_upfront", 0.6, 0.0), CommitmentOffer(36, "no_upfront", 0.4, 0.0))
    limited = mix.MixPrices(offers=offers, max_term_months_by_pool={"a": 12}, annual_demand_decline=0.0)
    assert mix.offers_for(limited, "a") == offers[:1]
    assert mix.offers_for(limited, "b") == offers
    # A flat demand buys the 3-year term where it may (cheaper), the 1-year where it is limited.
    rec = plan_mix(window(a=5, b=5), {"a": 10.0, "b": 10.0}, limited)
    assert {p.pool: p.plan.term_months for p in rec.pools} == {"a": 12, "b": 36}


def test_fewer_gpus_for_a_moved_class_is_sized_after_the_move_and_says_where() -> None:
    from athanor.recommend.plan import Step, _apart_steps

    move = Step(
        kind="gpu_choice",
        scope="vision/yolo/tune",
        counted=True,
        monthly_savings=446.29,
        action="Run vision/yolo/tune on 1 x g6e.12xlarge instead of 1 x p4d.24xlarge",
        evidence="datasheets",
        fields={
            "from": {"instance_type": "p4d.24xlarge", "instance_count": 1},
            "to": {"instance_type": "g6e.12xlarge", "instance_count": 1},
        },
        order=8,
    )
    recs = {
        ("underused_gpu", scope): {
            "action": f"Run {scope} on 1 GPU instead of 8: 12 % of its GPU-hours are on GPUs its jobs use",
            "estimated_monthly_savings_amount": 100,
        }
        for scope in ("vision/yolo/tune", "llm/sft/tune")
    }
    unmoved, moved = _apart_steps(recs, [move])
    assert (moved.scope, moved.assumes) == ("vision/yolo/tune", [8])
    assert moved.action.endswith(
        "(measured on p4d.24xlarge; the plan moves it to 1 x g6e.12xlarge: size it there)"
    )
    assert (unmoved.scope, unmoved.assumes) == ("llm/sft/tune", [])
    assert unmoved.action == recs[("underused_gpu", "llm/sft/tune")]["action"]
