"""The Philly GPU trace (83,154 real runtimes): the chosen model must capture the heavy tail."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from athanor.model import durations as D
from tests.conftest import shared_data

PHILLY = shared_data() / "traces" / "philly-runtime-seconds.csv"

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def runtimes() -> np.ndarray:
    return D.load_durations(PHILLY)["duration_s"].to_numpy()


@pytest.fixture(scope="module")
def philly_fit(runtimes: np.ndarray) -> D.DurationFit:
    return D.fit_durations(runtimes, gof_replicates=19, ci_replicates=20, seed=0)


def test_trace_is_what_sources_md_says(runtimes: np.ndarray) -> None:
    assert runtimes.size == 83_154
    over = runtimes > 48 * 3600
    assert 0.015 < over.mean() < 0.025  # "about 2 % of jobs"
    assert 0.58 < runtimes[over].sum() / runtimes.sum() < 0.64  # "about 61 % of GPU time"


def test_chosen_model_beats_lognormal_on_ks_and_tail(runtimes: np.ndarray, philly_fit: D.DurationFit) -> None:
    floored = np.maximum(runtimes, 1.0)
    lognormal = D.fit_family("lognormal", runtimes)["params"]
    ln_dist = stats.lognorm(s=lognormal["sigma"], scale=np.exp(lognormal["mu"]))
    ln_ks = stats.kstest(floored, ln_dist.cdf).statistic
    assert philly_fit.ks == pytest.approx(stats.kstest(floored, philly_fit.cdf).statistic, abs=1e-12)
    assert philly_fit.ks <= ln_ks

    empirical_p99 = np.quantile(runtimes, 0.99)
    assert abs(ln_dist.ppf(0.99) / empirical_p99 - 1) > 0.4  # the baseline really misses
    assert abs(philly_fit.p99_s / empirical_p99 - 1) < 0.25
    lo, hi = philly_fit.p99_ci_s
    assert lo < philly_fit.p99_s < hi


def test_multimodal_trace_gets_a_mixture_and_shares_match(
    runtimes: np.ndarray, philly_fit: D.DurationFit
) -> None:
    assert philly_fit.mixture and philly_fit.family == D.MIXTURE
    empirical_under = np.mean(runtimes <= 48 * 3600)
    assert philly_fit.share_jobs_under_48h_empirical == pytest.approx(empirical_under)
    assert abs(philly_fit.share_jobs_under_48h - empirical_under) < 0.01
    # GPU-hours on one GPU per job: the share held by jobs over 48 h.
    over = runtimes[runtimes > 48 * 3600].sum() / runtimes.sum()
    assert philly_fit.gpu_hours_share_over_threshold == pytest.approx(over)
    assert philly_fit.share_gpu_hours_under_48h == pytest.approx(1 - over)


def test_censored_at_an_observation_window_no_quantile_beyond_it_is_published_as_fitted(
    runtimes: np.ndarray,
) -> None:
    """Each run watched for at most 7 days (0.36 % of runs are longer: censored there), then at
    most 1 day (3.5 %). The fitted p99 (about 3.5 and 4.7 days) lies inside the 7-day window and
    past the 1-day one: there it is published as "> 1 day (beyond the data)", never as a figure."""
    for window_s, beyond in ((7 * 86400.0, []), (86400.0, ["p99"])):
        fit = D.fit_durations(
            np.minimum(runtimes, window_s), runtimes > window_s, gof_replicates=19, ci_replicates=0, seed=0
        )
        record = fit.to_record()
        assert record["data_limit_s"] == window_s and record["beyond_data"] == beyond
        shown = D.published_quantiles(record)
        table = D.format_table([record])
        for q in D.QUANTILE_NAMES:
            if q in beyond:
                assert record[f"{q}_s"] > window_s and shown[f"{q}_s"] is None
                assert shown[f"{q}_text"] == "> 1 day (beyond the data)" in table
            else:
                assert shown[f"{q}_s"] == record[f"{q}_s"] <= window_s
