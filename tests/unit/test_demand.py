"""Next month's demand from a pool's history (athanor.model.demand)."""

from __future__ import annotations

import numpy as np
import pytest

from athanor.model.demand import forecast_next_month
from athanor.recommend.commitments import commitment_cost, optimal_commitment

OD = 21.96
COMMIT = 0.6 * OD


def _hours(daily_levels: np.ndarray) -> np.ndarray:
    return np.repeat(daily_levels, 24).astype(float)


def test_forecast_follows_a_clean_trend():
    # 8 weeks rising 0.5 unit a day. Centre of the 720 h window to the centre of a
    # 730 h month: (720 + 730)/2 h = 30.2083 days -> +15.104 units.
    history = _hours(10.0 + 0.5 * np.arange(56))
    fc = forecast_next_month(history)
    assert fc.model == "trend"
    assert fc.level_change == pytest.approx(0.5 * 1450 / 48)
    assert np.allclose(fc.units, history[-720:] + 0.5 * 1450 / 48)


def test_forecast_follows_a_step_down_and_ignores_a_short_burst():
    # 46 days at 20 then 10 days at 10: the window's pre-step hours move down by 10.
    fc = forecast_next_month(_hours(np.r_[np.full(46, 20.0), np.full(10, 10.0)]))
    assert fc.model == "step" and fc.level_change == pytest.approx(-10.0)
    assert np.allclose(fc.units, 10.0)
    # The same size of change *up* for 10 days is what a long research burst looks like: not followed.
    fc = forecast_next_month(_hours(np.r_[np.full(46, 10.0), np.full(10, 20.0)]))
    assert fc.model == "flat"
    # ... but a step up held for 16 days is.
    fc = forecast_next_month(_hours(np.r_[np.full(40, 10.0), np.full(16, 20.0)]))
    assert fc.model == "step" and fc.level_change == pytest.approx(10.0)


def test_forecast_of_flat_noise_is_the_console_replay():
    rng = np.random.default_rng(0)
    history = 20 + rng.normal(0, 3, 24 * 60)
    fc = forecast_next_month(history)
    assert fc.model == "flat"
    assert optimal_commitment(fc.units, COMMIT, OD) == optimal_commitment(history[-720:], COMMIT, OD)
    assert commitment_cost(fc.units, 5, COMMIT, OD) == commitment_cost(history[-720:], 5, COMMIT, OD)
