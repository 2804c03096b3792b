"""Walk-forward backtest of the commitment rule, and the synthetic demand scenarios it runs on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from athanor.recommend.backtest import (
    BACKTEST_POLICIES,
    backtest,
    backtest_synthetic_scenarios,
    summarize_backtest,
)
from athanor.recommend.backtest_synthetic import SYNTHETIC_SCENARIOS, make_synthetic_demand

OD = 21.96
COMMIT = 0.6 * OD


@pytest.fixture(scope="module")
def results() -> dict[tuple[str, int], pd.DataFrame]:
    return {
        (name, seed): backtest(make_synthetic_demand(name, seed=seed), OD, COMMIT)
        for name in SYNTHETIC_SCENARIOS
        for seed in range(5)
    }


def _total(table: pd.DataFrame, policy: str) -> float:
    return float(table.loc[table["policy"] == policy, "cost_usd"].sum())


# ------------------------------------------------------------------ scenarios


@pytest.mark.parametrize("name", SYNTHETIC_SCENARIOS)
def test_scenarios_are_deterministic_hourly_and_non_negative(name):
    a, b = make_synthetic_demand(name, seed=3), make_synthetic_demand(name, seed=3)
    pd.testing.assert_series_equal(a, b)
    assert not a.equals(make_synthetic_demand(name, seed=4))
    assert (a >= 0).all()
    assert a.index.freqstr == "h" and str(a.index.tz) == "UTC"
    assert len(a) == (pd.Timestamp("2026-07-01") - pd.Timestamp("2026-01-01")) // pd.Timedelta(hours=1)


def test_unknown_scenario_is_refused():
    with pytest.raises(ValueError, match="unknown scenario"):
        make_synthetic_demand("sinusoidal")


# ------------------------------------------------------------------- backtest


def test_backtest_shape_and_bounds(results):
    table = results[("weekly", 0)]
    # Six months: decisions at the end of Jan..May, scored on Feb..Jun.
    assert sorted(table["month"].unique()) == ["2026-02", "2026-03", "2026-04", "2026-05", "2026-06"]
    assert set(table["policy"]) == set(BACKTEST_POLICIES)
    # The hindsight optimum is a lower bound for every policy, every month.
    assert (table["cost_usd"] >= table["optimal_cost_usd"] - 1e-6).all()
    hind = table[table["policy"] == "hindsight"]
    assert np.allclose(hind["cost_usd"], hind["optimal_cost_usd"])
    od = table[table["policy"] == "on_demand"]
    assert (od["commit_units"] == 0).all() and np.allclose(od["cost_usd"], od["on_demand_cost_usd"])


def test_backtest_scores_the_next_month_by_hand():
    # Jan: 2 units every hour; Feb: 4 units. Console replays January -> 2 units;
    # February's cost at 2 units: 2*COMMIT*672 + OD*2*672.
    idx = pd.date_range("2026-01-01", "2026-03-01", freq="h", inclusive="left", tz="UTC")
    units = pd.Series(np.where(idx.month == 1, 2.0, 4.0), index=idx)
    table = backtest(units, OD, COMMIT, policies=("console", "hindsight"))
    console = table[table["policy"] == "console"].iloc[0]
    assert console["commit_units"] == 2
    assert console["cost_usd"] == pytest.approx(2 * COMMIT * 672 + OD * 2 * 672)
    assert table[table["policy"] == "hindsight"].iloc[0]["commit_units"] == 4


def test_regret_on_stationary_demand_is_small(results):
    for seed in range(5):
        summary = summarize_backtest(results[("stationary", seed)]).set_index("policy")
        assert summary.loc["athanor", "regret_pct"] <= 3.0
        # Committing at the minimum leaves a lot on the table: the quantile matters.
        assert summary.loc["minimum", "regret_pct"] > 10.0


@pytest.mark.parametrize("name", SYNTHETIC_SCENARIOS)
def test_never_dearer_than_the_console_and_cheaper_on_trend_and_step(results, name):
    # Seed 0 scenario by scenario, as the bench prints it.
    ours, console = _total(results[(name, 0)], "athanor"), _total(results[(name, 0)], "console")
    assert ours <= console + 1e-6
    if name in ("trend", "step"):
        assert ours < console
    # And summed over five seeds (a single seed can lose a unit to noise).
    ours5 = sum(_total(results[(name, s)], "athanor") for s in range(5))
    console5 = sum(_total(results[(name, s)], "console") for s in range(5))
    assert ours5 <= console5 + 1e-6
    if name in ("trend", "step"):
        assert ours5 < console5


def test_synthetic_scenarios_are_backtested_at_the_callers_prices(results):
    table = backtest_synthetic_scenarios(OD, COMMIT)
    assert table["scenario"].unique().tolist() == list(SYNTHETIC_SCENARIOS)
    stationary = table[table["scenario"] == "stationary"].drop(columns="scenario").reset_index(drop=True)
    pd.testing.assert_frame_equal(stationary, results[("stationary", 0)])
    # Halving both prices halves every cost and leaves the decisions alone.
    half = backtest_synthetic_scenarios(OD / 2, COMMIT / 2)
    assert np.allclose(half["cost_usd"], table["cost_usd"] / 2)
    assert (half["commit_units"] == table["commit_units"]).all()
