"""Censored duration fits: recovery on synthetic data, hand-computed cases, groups, drift, io."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, stats

from athanor.model import durations as D
from athanor.model.durations.families import _FAMILY_TABLE
from athanor.model.durations.sample import _Sample

FIXTURES = Path(__file__).parents[1] / "fixtures" / "jobs"

TRUTH = {
    "lognormal": {"mu": 8.0, "sigma": 1.2},
    "weibull": {"shape": 1.5, "scale_s": 3600.0},
    "gamma": {"shape": 2.0, "scale_s": 1800.0},
}
SCIPY = {
    "exponential": lambda p: stats.expon(scale=1 / p["rate_per_s"]),
    "lognormal": lambda p: stats.lognorm(s=p["sigma"], scale=math.exp(p["mu"])),
    "weibull": lambda p: stats.weibull_min(c=p["shape"], scale=p["scale_s"]),
    "gamma": lambda p: stats.gamma(a=p["shape"], scale=p["scale_s"]),
    "loglogistic": lambda p: stats.fisk(c=p["shape"], scale=p["scale_s"]),
}


def _censoring_scale(dist, share: float = 0.3) -> float:
    """Scale of exponential censoring times C (independent of T) with P(C < T) = share."""
    t = dist.rvs(size=200_000, random_state=np.random.default_rng(99))
    return optimize.brentq(
        lambda sc: np.mean(1 - np.exp(-t / sc)) - share, 1e-3 * np.median(t), 1e4 * np.median(t)
    )


def _censored_sample(dist, n: int, cens_scale: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = dist.rvs(size=n, random_state=rng)
    c = rng.exponential(cens_scale, n)
    return np.minimum(t, c), t > c


def _mle_only(x: np.ndarray, cens: np.ndarray | None) -> D.DurationFit:
    return D.fit_durations(x, cens, gof_replicates=0, ci_replicates=0, mixture="never")


# A hundred fits of 10,000 durations per family.
@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(TRUTH))
def test_recovers_family_and_params_over_100_seeds(family: str) -> None:
    dist = SCIPY[family](TRUTH[family])
    scale = _censoring_scale(dist)
    right, worst_err, cens_shares = 0, 0.0, []
    for seed in range(100):
        x, cens = _censored_sample(dist, 10_000, scale, seed)
        cens_shares.append(cens.mean())
        fit = _mle_only(x, cens)
        right += fit.family == family
        own = fit.candidates[family]["params"]
        worst_err = max(worst_err, *(abs(own[k] / v - 1) for k, v in TRUTH[family].items()))
    assert abs(np.mean(cens_shares) - 0.3) < 0.01
    assert right >= 95
    assert worst_err < 0.05


def test_ignoring_censoring_biases_and_censored_fit_does_not() -> None:
    truth = {"mu": 8.0, "sigma": 1.2}
    dist = SCIPY["lognormal"](truth)
    x, cens = _censored_sample(dist, 20_000, _censoring_scale(dist), seed=7)
    naive = D.fit_family("lognormal", x, None)["params"]
    honest = D.fit_family("lognormal", x, cens)["params"]
    # Treating cut-short jobs as finished pulls the median down: exp(mu) shrinks a lot.
    assert truth["mu"] - naive["mu"] > 0.3
    assert abs(honest["mu"] - truth["mu"]) < 0.03
    assert abs(honest["sigma"] / truth["sigma"] - 1) < 0.02
    # Same for Weibull: the naive scale is biased low, the censored one is not.
    wtruth = TRUTH["weibull"]
    wd = SCIPY["weibull"](wtruth)
    wx, wc = _censored_sample(wd, 20_000, _censoring_scale(wd), seed=8)
    assert D.fit_family("weibull", wx, None)["params"]["scale_s"] < 0.85 * wtruth["scale_s"]
    assert abs(D.fit_family("weibull", wx, wc)["params"]["scale_s"] / wtruth["scale_s"] - 1) < 0.02


def test_exponential_censored_mle_equals_closed_form() -> None:
    # events at 10, 30, 100 s; censored at 20, 40 s: rate = 3 events / 200 s total = 0.015 /s.
    x = np.array([10.0, 20.0, 30.0, 40.0, 100.0])
    cens = np.array([False, True, False, True, False])
    fit = D.fit_family("exponential", x, cens)
    assert fit["params"]["rate_per_s"] == pytest.approx(0.015, rel=1e-6)
    # loglik = 3 ln(0.015) - 0.015 * 200
    assert fit["loglik"] == pytest.approx(3 * math.log(0.015) - 3.0, rel=1e-9)
    # A bigger random case against the same formula.
    rng = np.random.default_rng(3)
    t, c = rng.exponential(500.0, 5000), rng.exponential(900.0, 5000)
    xs, cs = np.minimum(t, c), t > c
    expected = (~cs).sum() / np.maximum(xs, 1.0).sum()  # durations under 1 s count as 1 s
    assert D.fit_family("exponential", xs, cs)["params"]["rate_per_s"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("family", D.FAMILIES)
def test_loglik_matches_scipy_and_is_a_maximum(family: str) -> None:
    dist = stats.lognorm(s=1.0, scale=2000.0)
    x, cens = _censored_sample(dist, 2000, 4000.0, seed=11)
    fit = D.fit_family(family, x, cens)

    def scipy_loglik(p: dict) -> float:
        d = SCIPY[family](p)
        return float(d.logpdf(x[~cens]).sum() + d.logsf(x[cens]).sum())

    assert fit["loglik"] == pytest.approx(scipy_loglik(fit["params"]), rel=1e-9)
    assert fit["aic"] == pytest.approx(2 * len(fit["params"]) - 2 * fit["loglik"])
    assert fit["bic"] == pytest.approx(len(fit["params"]) * math.log(2000) - 2 * fit["loglik"])
    for key in fit["params"]:
        for factor in (0.99, 1.01):
            moved = dict(fit["params"], **{key: fit["params"][key] * factor})
            assert scipy_loglik(moved) < fit["loglik"]


def test_lognormal_matches_scipy_censored_fit() -> None:
    x, cens = _censored_sample(stats.lognorm(s=0.8, scale=600.0), 800, 1200.0, seed=2)
    data = stats.CensoredData(uncensored=x[~cens], right=x[cens])
    s_hat, _, scale_hat = stats.lognorm.fit(data, floc=0)
    ours = D.fit_family("lognormal", x, cens)["params"]
    assert ours["sigma"] == pytest.approx(s_hat, rel=1e-3)
    assert math.exp(ours["mu"]) == pytest.approx(scale_hat, rel=1e-3)


@pytest.mark.parametrize("family", D.FAMILIES)
def test_analytic_gradients_match_finite_differences(family: str) -> None:
    x, cens = _censored_sample(stats.lognorm(s=1.0, scale=2000.0), 500, 4000.0, seed=5)
    s = _Sample.from_arrays(x, cens)
    fam = _FAMILY_TABLE[family]
    theta = fam.start(s) + 0.1
    num = optimize.approx_fprime(theta, lambda th: fam.nll(th, s)[0], 1e-7)
    assert np.allclose(fam.nll(theta, s)[1], num, rtol=1e-3, atol=1e-6)


def test_kaplan_meier_hand_case() -> None:
    # Sorted: 1 event, 2 event, 2 censored, 3 event, 4 censored (events first at ties).
    # S(1) = 4/5 = 0.8; S(2) = 0.8 * 3/4 = 0.6; S(3) = 0.6 * 1/2 = 0.3 (2 still at risk).
    times, surv = D.kaplan_meier(
        np.array([3.0, 2.0, 1.0, 4.0, 2.0]), np.array([False, True, False, True, False])
    )
    assert times.tolist() == [1.0, 2.0, 3.0]
    assert np.allclose(surv, [0.8, 0.6, 0.3])


def test_ks_without_censoring_equals_scipy_kstest() -> None:
    x = stats.gamma(a=2.0, scale=900.0).rvs(size=3000, random_state=np.random.default_rng(4)) + 1.0
    fit = _mle_only(x, None)
    assert fit.ks == pytest.approx(stats.kstest(x, fit.cdf).statistic, abs=1e-12)


def test_zero_durations_are_floored_at_one_second() -> None:
    x = np.array([0.0, 0.0, 1.0, 5.0, 30.0, 60.0, 600.0, 3600.0])
    floored = np.maximum(x, 1.0)
    ours = D.fit_family("lognormal", x)["params"]
    # Uncensored lognormal MLE: mean and (population) sd of ln x.
    assert ours["mu"] == pytest.approx(np.log(floored).mean(), rel=1e-7)
    assert ours["sigma"] == pytest.approx(np.log(floored).std(), rel=1e-6)


def test_quantiles_and_bootstrap_cis() -> None:
    truth = {"mu": 7.0, "sigma": 1.0}
    dist = SCIPY["lognormal"](truth)
    x, cens = _censored_sample(dist, 5000, _censoring_scale(dist), seed=21)
    fit = D.fit_durations(x, cens, gof_replicates=19, ci_replicates=99, mixture="never", seed=1)
    assert fit.family == "lognormal"
    fitted = SCIPY["lognormal"](fit.params)
    for q, name in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
        point = getattr(fit, f"{name}_s")
        lo, hi = getattr(fit, f"{name}_ci_s")
        assert point == pytest.approx(fitted.ppf(q), rel=1e-9)
        assert lo < point < hi
        assert lo < dist.ppf(q) < hi
        assert (hi - lo) / point < 0.2
    assert fit.p50_s < fit.p90_s < fit.p99_s
    assert fit.ks_pvalue is not None and fit.ks_pvalue > 0.05
    assert fit.share_jobs_under_48h == pytest.approx(fitted.cdf(48 * 3600.0))


def test_gpu_hour_shares_hand_case() -> None:
    x = np.array([3600.0, 7200.0, 200_000.0, 900.0])
    gpus = np.array([8, 1, 2, 0])
    # GPU-seconds: 28,800 + 7,200 + 400,000 + 0 = 436,000; under 48 h (172,800 s): 36,000.
    fit = D.fit_durations(x, None, gpus, gof_replicates=0, ci_replicates=0, mixture="never")
    assert fit.share_gpu_hours_under_48h == pytest.approx(36_000 / 436_000)
    assert fit.gpu_hours_share_over_threshold == pytest.approx(400_000 / 436_000)
    fit_1h = D.fit_durations(
        x, None, gpus, gof_replicates=0, ci_replicates=0, mixture="never", threshold_s=3600.0
    )
    assert fit_1h.gpu_hours_share_over_threshold == pytest.approx(407_200 / 436_000)
    assert fit.share_jobs_under_48h_empirical == pytest.approx(0.75)


def _two_lognormals(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    comp = rng.random(n) < 0.3
    t = np.exp(np.where(comp, 4.0 + 0.5 * rng.standard_normal(n), 8.0 + 1.0 * rng.standard_normal(n)))
    c = rng.exponential(8000.0, n)
    return np.minimum(t, c), t > c


def test_mixture_em_recovers_weights_with_censoring() -> None:
    x, cens = _two_lognormals(20_000, seed=1)
    assert 0.2 < cens.mean() < 0.4
    fit = D.fit_lognormal_mixture(x, cens, n_components=2)
    p = fit["params"]
    assert p["weights"] == pytest.approx([0.3, 0.7], abs=0.02)
    assert p["mus"] == pytest.approx([4.0, 8.0], abs=0.05)
    assert p["sigmas"] == pytest.approx([0.5, 1.0], abs=0.05)
    # EM log-likelihood equals the censored mixture likelihood computed with scipy.
    w, mu, sg = (np.array(p[k]) for k in ("weights", "mus", "sigmas"))
    pdf = (stats.lognorm.pdf(x[~cens, None], s=sg, scale=np.exp(mu)) * w).sum(axis=1)
    sf = (stats.lognorm.sf(x[cens, None], s=sg, scale=np.exp(mu)) * w).sum(axis=1)
    assert fit["loglik"] == pytest.approx(np.log(pdf).sum() + np.log(sf).sum(), rel=1e-9)


@pytest.mark.slow
def test_bimodal_data_gets_a_mixture_that_fits_better() -> None:
    x, cens = _two_lognormals(4000, seed=2)
    fit = D.fit_durations(x, cens, gof_replicates=19, ci_replicates=19, seed=3)
    assert fit.mixture and fit.family == D.MIXTURE
    assert len(fit.params["weights"]) >= 2
    best_single = min(v["bic"] for k, v in fit.candidates.items() if k in D.FAMILIES)
    assert fit.bic < best_single
    single = _mle_only(x, cens)
    assert fit.ks < single.ks
    # The mixture's CDF evaluated by hand from its params.
    p = fit.params
    by_hand = sum(
        w * stats.norm.cdf((math.log(5000.0) - m) / s)
        for w, m, s in zip(p["weights"], p["mus"], p["sigmas"], strict=True)
    )
    assert fit.cdf(5000.0) == pytest.approx(by_hand)
    assert fit.cdf(fit.p90_s) == pytest.approx(0.9, abs=1e-9)


@pytest.mark.parametrize(
    "family, params",
    [
        ("weibull", {"shape": 0.7, "scale_s": 3000.0}),
        (D.MIXTURE, {"weights": [0.4, 0.6], "mus": [4.0, 8.0], "sigmas": [0.3, 1.5]}),
    ],
)
def test_pdf_integrates_to_cdf(family: str, params: dict) -> None:
    upper = 20_000.0
    area, _ = integrate.quad(lambda t: float(D.model_pdf(family, params, t)), 0, upper, limit=200)
    assert area == pytest.approx(float(D.model_cdf(family, params, upper)), abs=1e-6)


def test_mixture_quantiles_are_found_to_the_last_float() -> None:
    """The bisection stops once no bracket can narrow: each quantile still splits the CDF at q."""
    params = {"weights": [0.5, 0.3, 0.2], "mus": [7.0, 9.5, 11.0], "sigmas": [0.8, 0.6, 1.2]}
    q = np.concatenate([(np.arange(2000) + 0.5) / 2000, [1e-9, 0.5, 1 - 1e-9]])
    x = D.model_ppf(D.MIXTURE, params, q)
    assert (np.diff(x[:2000]) > 0).all()
    assert (D.model_cdf(D.MIXTURE, params, x * (1 - 1e-12)) <= q).all()
    assert (D.model_cdf(D.MIXTURE, params, x * (1 + 1e-12)) >= q).all()
    assert D.model_cdf(D.MIXTURE, params, x) == pytest.approx(q, rel=1e-9, abs=1e-15)


def test_a_mixtures_quantiles_asked_again_are_the_same_without_a_second_bisection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The spot assessment draws a class's durations once per scenario: the bisection runs once."""
    from athanor.model.durations import distributions

    distributions._cached_mixture_ppf.cache_clear()
    bisect = distributions._mixture_ppf
    bisected: list[int] = []  # the size of each array bisected
    monkeypatch.setattr(distributions, "_mixture_ppf", lambda p, q: bisected.append(q.size) or bisect(p, q))
    params = {"weights": [0.6, 0.4], "mus": [8.0, 10.0], "sigmas": [0.7, 0.9]}
    q = (np.arange(2000) + 0.37) / 2000
    first = D.model_ppf(D.MIXTURE, params, q)
    first[:] = 0.0  # a caller's changes stay its own
    again = D.model_ppf(D.MIXTURE, {k: tuple(v) for k, v in params.items()}, q.copy())
    assert bisected == [2000] and again.min() > 0
    # The same floats as a fresh bisection of the same model and quantiles, in this process (so
    # compared exactly: both sides come from one computation on one CPU).
    assert np.array_equal(again, bisect(params, q))
    # Other quantiles are bisected anew, and a large array is not kept.
    big = np.full(distributions.CACHED_QUANTILES + 1, 0.5)
    for asked in (q[:10], big, big):
        D.model_ppf(D.MIXTURE, params, asked)
    assert bisected == [2000, 10, big.size, big.size]


def _groups_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    parts = []
    for team, model, n, mu in (("a", "m1", 400, 6.0), ("a", "m2", 60, 9.0), ("b", "m3", 40, 7.0)):
        parts.append(
            pd.DataFrame(
                {
                    "team": team,
                    "model": model,
                    "duration_s": np.exp(mu + rng.standard_normal(n)),
                    "censored": rng.random(n) < 0.2,
                    "gpu_count": 8,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_small_groups_borrow_from_nearest_big_enough_ancestor() -> None:
    df = _groups_frame()
    opts = {"gof_replicates": 0, "ci_replicates": 0, "mixture": "never"}
    fits = {f.group: f for f in D.fit_groups(df, ["team", "model"], min_group_size=100, **opts)}
    assert sorted(fits) == ["team=a,model=m1", "team=a,model=m2", "team=b,model=m3"]
    assert fits["team=a,model=m1"].borrowed_from is None
    # (a, m2) has 60 jobs < 100: its parent team=a has 460, so it uses team a's fit.
    assert fits["team=a,model=m2"].borrowed_from == "team=a"
    # (b, m3) has 40 jobs and team b too: it goes up to all jobs.
    assert fits["team=b,model=m3"].borrowed_from == "all"
    team_a = df[df.team == "a"]
    parent = _mle_only(team_a.duration_s.to_numpy(), team_a.censored.to_numpy())
    small = fits["team=a,model=m2"]
    assert small.family == parent.family and small.params == parent.params
    assert small.p90_s == pytest.approx(parent.p90_s)
    assert small.n == 60 and small.censored == int(df[df.model == "m2"].censored.sum())
    assert small.aic is None and small.ks_pvalue is None
    rec = small.to_record()
    assert rec["borrowed_from"] == "team=a" and rec["group"] == "team=a,model=m2"
    # Parallel fitting gives the same numbers (seeds derive from the group label).
    par = D.fit_groups(df, ["team", "model"], min_group_size=100, workers=2, **opts)
    assert [f.to_record() for f in par] == [fits[f.group].to_record() for f in par]


def test_no_group_columns_gives_all() -> None:
    df = _groups_frame()
    fits = D.fit_groups(df, [], gof_replicates=0, ci_replicates=0, mixture="never")
    assert [f.group for f in fits] == ["all"] and fits[0].n == len(df)


def test_record_is_json_with_required_keys() -> None:
    x, cens = _censored_sample(stats.weibull_min(c=1.2, scale=900.0), 1000, 2000.0, seed=9)
    rec = D.fit_durations(x, cens, gof_replicates=9, ci_replicates=9).to_record()
    text = json.dumps(rec, allow_nan=False)
    required = {
        "group", "n", "censored", "censored_share", "family", "params", "aic", "bic", "ks",
        "ks_pvalue", "p50_s", "p90_s", "p99_s", "p50_ci_s", "p90_ci_s", "p99_ci_s",
        "share_jobs_under_48h", "share_gpu_hours_under_48h", "gpu_hours_share_over_threshold",
        "candidates", "mixture", "borrowed_from",
    }  # fmt: skip
    assert required <= set(json.loads(text))
    assert rec["censored"] == int(cens.sum())
    assert rec["censored_share"] == pytest.approx(cens.mean())
    assert set(rec["candidates"]) == set(D.FAMILIES)
    assert len(rec["p90_ci_s"]) == 2
    table = D.format_table([rec])
    assert "all" in table and rec["family"] in table and len(table.splitlines()) == 3
    header, rule, row = table.splitlines()
    assert header.split()[:4] == ["group", "n", "cens", "family"] and set(rule) == {"-", " "}
    # Counts are right-aligned under their heading.
    assert row.split()[1] == "1000" and row.index(" 1000 ") + 5 == header.index(" n ") + 2


def test_compare_fits_flags_family_change_and_p90_shift() -> None:
    prev = [
        {"group": "team=a", "family": "lognormal", "p90_s": 1000.0},
        {"group": "team=b", "family": "weibull", "p90_s": 1000.0},
        {"group": "team=c", "family": "gamma", "p90_s": 1000.0},
        {"group": "team=gone", "family": "gamma", "p90_s": 10.0},
    ]
    cur = [
        {"group": "team=a", "family": "lognormal", "p90_s": 1200.0},  # +20 %: quiet
        {"group": "team=b", "family": "weibull", "p90_s": 700.0},  # -30 %: flagged
        {"group": "team=c", "family": "lognormal", "p90_s": 1000.0},  # family changed
        {"group": "team=new", "family": "gamma", "p90_s": 10.0},
    ]
    rows = {r["group"]: r for r in D.compare_fits(prev, cur, p90_shift=0.25)}
    assert not rows["team=a"]["flagged"] and rows["team=a"]["p90_rel_shift"] == pytest.approx(0.2)
    assert rows["team=b"]["flagged"] and rows["team=b"]["p90_shifted"]
    assert rows["team=b"]["p90_rel_shift"] == pytest.approx(-0.3)
    assert rows["team=c"]["flagged"] and rows["team=c"]["family_changed"]
    assert not rows["team=c"]["p90_shifted"]
    assert rows["team=new"]["status"] == "new" and rows["team=gone"]["status"] == "gone"
    assert not rows["team=new"]["flagged"]


def _job_runs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": ["j1", "j2", "j3", "j4", "j5"],
            "submit_time": ["2026-11-01T00:00:00Z"] * 5,
            "start_time": [
                "2026-11-01T00:00:00Z",
                "2026-11-01T01:00:00Z",
                "2026-11-01T02:00:00Z",
                "2026-11-01T03:00:00Z",
                "",
            ],
            "end_time": ["2026-11-01T00:30:00Z", "2026-11-01T03:00:00Z", "2026-11-01T02:00:10Z", "", ""],
            "state": ["completed", "preempted", "failed", "running", "cancelled"],
            "instance_type": ["p4d.24xlarge"] * 5,
            "instance_count": [2, 1, 1, 4, 1],
            "gpus_per_instance": [8, 8, 0, 8, 8],
            "pricing_model": ["on_demand"] * 5,
            "team": ["a", "a", "b", "b", "b"],
        }
    )


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_load_job_run_file(tmp_path, suffix: str) -> None:
    path = tmp_path / f"runs{suffix}"
    runs = _job_runs()
    runs.to_csv(path, index=False) if suffix == ".csv" else runs.to_parquet(path)
    df = D.load_durations(path)
    # j5 never started: dropped. j4 is running; as_of = latest stamp = 03:00:00 (j2's end),
    # so j4 has run 0 s so far.
    assert df.job_id.tolist() == ["j1", "j2", "j3", "j4"]
    assert df.duration_s.tolist() == [1800.0, 7200.0, 10.0, 0.0]
    assert df.censored.tolist() == [False, True, False, True]
    assert df.gpu_count.tolist() == [16.0, 8.0, 0.0, 32.0]
    later = D.load_durations(path, as_of="2026-11-01T05:00:00Z")
    assert later.duration_s.tolist()[3] == 7200.0


def test_load_rejects_end_before_start(tmp_path) -> None:
    runs = _job_runs()
    runs.loc[0, "end_time"] = "2026-10-31T23:00:00Z"
    path = tmp_path / "bad.csv"
    runs.to_csv(path, index=False)
    # Refused by the job-log reader, with its message: file, row, column.
    with pytest.raises(ValueError, match="row 1, column end_time: end before start"):
        D.load_durations(path)


def test_load_drops_jobs_started_after_as_of(tmp_path) -> None:
    path = tmp_path / "runs.csv"
    _job_runs().to_csv(path, index=False)
    # At 02:30 j4 (started 03:00) did not exist yet; the others keep their logged durations.
    df = D.load_durations(path, as_of="2026-11-01T02:30:00Z")
    assert df.job_id.tolist() == ["j1", "j2", "j3"]
    assert df.duration_s.tolist() == [1800.0, 7200.0, 10.0]


def test_load_slurm_log_through_the_ingest_reader() -> None:
    df = D.load_durations(FIXTURES / "sacct.txt")
    # 1008 and 1009 never started; 1007 is running: sacct's Elapsed (3 h), censored.
    assert df.job_id.tolist() == ["1001", "1002", "1003", "1004", "1005", "1006", "1007", "1010_3"]
    assert df.duration_s.tolist() == [93784.0, 5400.0, 2700.0, 600.0, 86400.0, 184.0, 10800.0, 1200.0]
    assert df.censored.tolist() == [False, False, True, True, False, False, True, False]
    assert df.gpu_count.tolist() == [16.0, 16.0, 8.0, 4.0, 8.0, 8.0, 16.0, 1.0]


def test_load_refuses_a_file_that_is_neither_a_job_log_nor_one_number_column(tmp_path) -> None:
    path = tmp_path / "two.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a known job-log format"):
        D.load_durations(path)


def test_load_plain_duration_column(tmp_path) -> None:
    path = tmp_path / "runtime.csv"
    path.write_text("runtime\n0.0\n12\n3600\n")
    df = D.load_durations(path)
    assert df.duration_s.tolist() == [0.0, 12.0, 3600.0]
    assert not df.censored.any() and (df.gpu_count == 1).all()
