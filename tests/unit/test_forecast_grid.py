"""The spend forecast's grid likelihoods (athanor.watch.forecast.grid_loglike) are statsmodels'
own, set by set, and the grid picks the same smoothing parameters as asking statsmodels one set at
a time did."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from athanor.watch.forecast import _ets_model, ets_model, fit_on_grid, grid_loglike, smoothing_grid


def _model(values: np.ndarray, damped: bool):
    y = pd.Series(values, index=pd.date_range("2026-08-01", periods=len(values), freq="D"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ets_model(y, damped)


def _series() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    days = np.arange(120)
    weekly = np.where(days % 7 >= 5, -300.0, 100.0)
    return {
        "growing with a weekly cycle": 5_000 + 12 * days + weekly + rng.normal(0, 80, len(days)),
        # a team's bursty spend: nothing most days, a big job some days
        "bursty": np.where(rng.random(90) < 0.2, rng.gamma(2.0, 4_000.0, 90), 0.0),
        "flat": np.full(60, 1234.5),
        "refunds": np.concatenate([np.full(30, 800.0), np.full(5, -200.0), np.full(30, 850.0)]),
    }


@pytest.mark.parametrize("damped", [False, True], ids=["linear", "damped"])
@pytest.mark.parametrize("name", list(_series()))
def test_each_sets_likelihood_is_statsmodels_own(name: str, damped: bool) -> None:
    model = _model(_series()[name], damped)
    grid = smoothing_grid(damped)[::7]  # every 7th set: statsmodels alone takes ~0.1 ms a set
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        theirs = np.array([model.loglike(params) for params in grid])
        mine = grid_loglike(model, grid)
    finite = np.isfinite(theirs)
    assert np.array_equal(finite, np.isfinite(mine))
    np.testing.assert_allclose(mine[finite], theirs[finite], rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", ["growing with a weekly cycle", "bursty"])
def test_the_grid_picks_the_set_statsmodels_one_by_one_picked(name: str) -> None:
    model = _model(_series()[name], damped=True)
    grid = smoothing_grid(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        llf = np.array([model.loglike(params) for params in grid])
        chosen = fit_on_grid(model)
    llf[~np.isfinite(llf)] = -np.inf
    best = llf.max()
    expected = grid[int(np.argmax(llf >= best - 1e-9 * max(1.0, abs(best))))]
    np.testing.assert_array_equal(np.asarray(chosen.params, dtype=float), expected)


def test_a_model_it_does_not_compute_is_refused() -> None:
    y = pd.Series(np.arange(1.0, 40.0), index=pd.date_range("2026-08-01", periods=39, freq="D"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _ets_model()(y, error="mul", trend="add", seasonal="add", seasonal_periods=7)
    with pytest.raises(ValueError, match="additive"):
        grid_loglike(model, smoothing_grid(False))
