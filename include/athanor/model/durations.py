"""Task-duration distributions: censored maximum-likelihood fits, model choice, mixtures, drift.

Rules this module follows (the report and the recommenders rely on them):

* **Units.** Durations are seconds. Durations below ``MIN_DURATION_S`` (1 s) are floored
  to 1 s before fitting, because job logs have one-second resolution (the Philly trace
  holds 0.0 s jobs) and every family here lives on x > 0. GPU-hour shares use the raw
  durations (a 0 s job holds no GPU time).
* **Censoring.** Preempted, cancelled and still-running jobs are right-censored at their
  observed length: they add ``logsf`` to the log-likelihood, completed and failed jobs
  add ``logpdf``. Location is fixed at 0.
* **Families.** exponential (rate_per_s), lognormal (mu, sigma of ln seconds), weibull
  (shape, scale_s), gamma (shape, scale_s), loglogistic (scipy ``fisk``: shape, scale_s).
  Each is fitted by BFGS on its log-parameters with an analytic gradient (gamma's
  shape derivative of ln Q is a forward difference), starting from the ln-moments of a
  censored lognormal fit.
* **Model choice.** The family with the lowest AIC wins; BIC is reported too. Fit is
  checked with a KS distance between the Kaplan-Meier curve and the fitted CDF, and a
  parametric-bootstrap p-value that refits the family on every simulated sample.
  Simulated samples get the same censoring pattern: censoring times are drawn from the
  reverse Kaplan-Meier estimate of the censoring distribution (mass beyond the last
  censoring time means "never censored"), and are rounded to whole seconds when the data
  are whole seconds, so ties affect real and simulated KS alike.
* **Mixtures.** When the best family's bootstrap p-value is below ``mixture_pvalue``
  (default 0.01), or at the floor 1/(B+1) that B replicates can show, lognormal
  mixtures with 2..4 components are fitted by EM on ln duration (a censored observation
  contributes the truncated-normal moments, so censoring is respected), polished by
  BFGS on the same likelihood (EM alone crawls when components overlap), from a
  quantile-spread start and two random ones. The number of components is chosen by BIC, and the mixture replaces the single family when its BIC
  is lower. It is reported with family ``lognormal_mixture`` and params
  ``{weights, mus, sigmas}``. Component sigmas are floored at 0.02 (ln units) so that a
  component cannot collapse onto a spike of tied durations.
* **Quantiles.** p50/p90/p99 of the chosen model, with percentile-bootstrap CIs
  (resample jobs with replacement, refit the chosen family). Bootstrap refits, here and
  in the p-value, start from the fitted parameters; a mixture is refitted from the fitted
  mixture (no fresh EM), which can only make its p-value slightly optimistic.
* **Shares.** ``share_jobs_under_48h`` is the model's CDF at 48 h (the Kaplan-Meier
  value is reported beside it); ``share_gpu_hours_under_48h`` and
  ``gpu_hours_share_over_threshold`` are empirical, weighting each job by
  duration_s x gpu_count ("under" means <= the limit, "over" means > the threshold).
* **Groups and borrowing.** ``fit_groups`` fits each group with at least
  ``min_group_size`` jobs (and two distinct completed durations) on its own. A smaller
  group uses the fit of its nearest ancestor that is big enough: for
  group_by=["team", "model"] the parent is the team, then all jobs. The borrowed record
  keeps the group's own n, censoring and GPU-hour shares, takes family, params,
  quantiles and CIs from the ancestor (``borrowed_from`` names it), reports the KS
  distance of the ancestor's model to the group's own data, and leaves aic, bic and the
  p-value empty (nothing was fitted on this group). "all" is always fitted.
* **Drift.** ``compare_fits`` flags a group whose family changed or whose p90 moved by
  more than ``p90_shift`` (relative) since the previous run.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

MIN_DURATION_S = 1.0
HOURS_48_S = 48 * 3600.0
MIXTURE = "lognormal_mixture"
FAMILIES: tuple[str, ...] = ("exponential", "lognormal", "weibull", "gamma", "loglogistic")
CENSORED_STATES = frozenset({"preempted", "cancelled", "running"})
QUANTILES = (0.5, 0.9, 0.99)

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_MIN_MIX_SIGMA = 0.02
_MIN_MIX_WEIGHT = 1e-10


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class _Sample:
    """Durations collapsed to unique (x, event) rows with counts, sorted for Kaplan-Meier.

    Rows are ordered by x and, at tied x, events before censorings (the usual KM rule).
    Collapsing ties makes whole-second logs (Philly: 83k jobs, 17k distinct values) cheap.
    """

    x: np.ndarray
    event: np.ndarray
    w: np.ndarray
    integer: bool
    n: float  # jobs
    d: float  # completed jobs (events)
    yo: np.ndarray = field(repr=False)
    xo: np.ndarray = field(repr=False)
    wo: np.ndarray = field(repr=False)
    yc: np.ndarray = field(repr=False)
    xc: np.ndarray = field(repr=False)
    wc: np.ndarray = field(repr=False)

    @classmethod
    def from_rows(cls, x: np.ndarray, event: np.ndarray, w: np.ndarray, integer: bool) -> _Sample:
        keep = w > 0
        x, event, w = x[keep], event[keep], w[keep].astype(float)
        return cls(
            x=x,
            event=event,
            w=w,
            integer=integer,
            n=float(w.sum()),
            d=float(w[event].sum()),
            yo=np.log(x[event]),
            xo=x[event],
            wo=w[event],
            yc=np.log(x[~event]),
            xc=x[~event],
            wc=w[~event],
        )

    @classmethod
    def from_arrays(cls, duration_s: np.ndarray, censored: np.ndarray | None = None) -> _Sample:
        x = np.asarray(duration_s, dtype=float)
        if x.size == 0:
            raise ValueError("no durations to fit")
        if not np.all(np.isfinite(x)) or np.any(x < 0):
            raise ValueError("durations must be finite and >= 0 seconds")
        event = np.ones(x.size, dtype=bool) if censored is None else ~np.asarray(censored, dtype=bool)
        x = np.maximum(x, MIN_DURATION_S)
        integer = bool(np.all(x == np.round(x)))
        order = np.lexsort((~event, x))
        x, event = x[order], event[order]
        start = np.flatnonzero(np.r_[True, (x[1:] != x[:-1]) | (event[1:] != event[:-1])])
        counts = np.diff(np.r_[start, x.size])
        return cls.from_rows(x[start], event[start], counts, integer)


def _km_curve(s: _Sample) -> tuple[np.ndarray, np.ndarray]:
    """Kaplan-Meier survival just after each row, and just before it."""
    at_risk = s.n - np.cumsum(s.w) + s.w
    factor = np.where(s.event, 1.0 - s.w / at_risk, 1.0)
    after = np.cumprod(factor)
    before = np.r_[1.0, after[:-1]]
    return after, before


def kaplan_meier(duration_s: np.ndarray, censored: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Kaplan-Meier survival: (distinct event times in s, S just after each)."""
    s = _Sample.from_arrays(duration_s, censored)
    after, _ = _km_curve(s)
    return s.x[s.event], after[s.event]


def _km_at(s: _Sample, t: float) -> float:
    after, _ = _km_curve(s)
    i = np.searchsorted(s.x, t, side="right")
    return 1.0 if i == 0 else float(after[i - 1])


def _km_quantile(s: _Sample, q: float) -> float | None:
    after, _ = _km_curve(s)
    hit = np.flatnonzero(1.0 - after >= q - 1e-12)
    return float(s.x[hit[0]]) if hit.size else None


def _ks(s: _Sample, cdf: Callable[[np.ndarray], np.ndarray]) -> float:
    """sup |KM CDF - F| over the observed range (both sides of every KM step)."""
    after, before = _km_curve(s)
    f = cdf(s.x)
    return float(max(np.max(np.abs(f - (1 - after))), np.max(np.abs(f - (1 - before)))))


# --------------------------------------------------------------------------- families


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Dot product without BLAS: OpenBLAS threads a long ddot, and its spinning threads
    made fits up to 10x slower on a busy 2-core machine."""
    return float(np.einsum("i,i->", a, b))


# Each family: start(sample) -> theta0, nll(theta, sample) -> (mean nll, gradient),
# params(theta) -> dict, theta_of(params), dist(params) -> frozen scipy, draw(params, n, rng).


def _log_moments(s: _Sample) -> tuple[float, float, float]:
    """Mean and sd of ln x over all rows (censored ones included, which is fine for a start)."""
    y = np.log(s.x)
    m = float(np.average(y, weights=s.w))
    sd = float(np.sqrt(np.average((y - m) ** 2, weights=s.w)))
    med = float(y[np.searchsorted(np.cumsum(s.w), 0.5 * s.n)])
    return m, max(sd, 1e-3), med


def _nll_exponential(th: np.ndarray, s: _Sample) -> tuple[float, np.ndarray]:
    lr = th[0]
    r = math.exp(lr)
    total_s = _dot(s.w, s.x)  # censored jobs add exposure, not events
    ll = s.d * lr - r * total_s
    g = s.d - r * total_s
    return -ll / s.n, np.array([-g / s.n])


def _nll_lognormal(th: np.ndarray, s: _Sample) -> tuple[float, np.ndarray]:
    mu, ls = th
    sg = math.exp(ls)
    zo = (s.yo - mu) / sg
    zo2 = _dot(s.wo, zo * zo)
    ll = -s.d * (ls + _HALF_LOG_2PI) - 0.5 * zo2 - _dot(s.wo, s.yo)
    g_mu = _dot(s.wo, zo) / sg
    g_ls = -s.d + zo2
    if s.wc.size:
        zc = (s.yc - mu) / sg
        lsf = special.log_ndtr(-zc)
        mills = np.exp(-0.5 * zc * zc - _HALF_LOG_2PI - lsf)
        ll += _dot(s.wc, lsf)
        g_mu += _dot(s.wc, mills) / sg
        g_ls += _dot(s.wc, mills * zc)
    return -ll / s.n, -np.array([g_mu, g_ls]) / s.n


def _nll_weibull(th: np.ndarray, s: _Sample) -> tuple[float, np.ndarray]:
    lk, lsc = th
    k = math.exp(lk)
    kwo = np.minimum(k * (s.yo - lsc), 700.0)  # exp overflow guard during line search
    uo = np.exp(kwo)
    ll = s.d * lk + _dot(s.wo, kwo - s.yo - uo)
    g_lk = s.d + _dot(s.wo, kwo - uo * kwo)
    g_ls = _dot(s.wo, k * uo - k)
    if s.wc.size:
        kwc = np.minimum(k * (s.yc - lsc), 700.0)
        uc = np.exp(kwc)
        ll -= _dot(s.wc, uc)
        g_lk -= _dot(s.wc, uc * kwc)
        g_ls += k * _dot(s.wc, uc)
    return -ll / s.n, -np.array([g_lk, g_ls]) / s.n


def _nll_loglogistic(th: np.ndarray, s: _Sample) -> tuple[float, np.ndarray]:
    la, lb = th
    b = math.exp(lb)
    zo = b * (s.yo - la)
    so = special.expit(zo)
    ll = s.d * lb + _dot(s.wo, zo - s.yo - 2.0 * np.logaddexp(0.0, zo))
    g_la = -b * _dot(s.wo, 1.0 - 2.0 * so)
    g_lb = s.d + _dot(s.wo, zo * (1.0 - 2.0 * so))
    if s.wc.size:
        zc = b * (s.yc - la)
        sc = special.expit(zc)
        ll -= _dot(s.wc, np.logaddexp(0.0, zc))
        g_la += b * _dot(s.wc, sc)
        g_lb -= _dot(s.wc, sc * zc)
    return -ll / s.n, -np.array([g_la, g_lb]) / s.n


def _log_gammaincc(a: float, v: np.ndarray) -> np.ndarray:
    """ln Q(a, v), with the large-v asymptotic series where Q underflows."""
    q = special.gammaincc(a, v)
    with np.errstate(divide="ignore"):
        out = np.log(q)
    tiny = q < 1e-300
    if np.any(tiny):
        vt = v[tiny]
        series = 1.0 + (a - 1.0) / vt + (a - 1.0) * (a - 2.0) / vt**2
        out[tiny] = (a - 1.0) * np.log(vt) - vt - special.gammaln(a) + np.log(np.abs(series))
    return out


def _nll_gamma(th: np.ndarray, s: _Sample) -> tuple[float, np.ndarray]:
    la, lt = th
    a = math.exp(la)
    vo = s.xo * math.exp(-lt)
    ll = _dot(s.wo, a * (s.yo - lt) - s.yo - vo) - s.d * special.gammaln(a)
    g_la = a * (_dot(s.wo, s.yo - lt) - s.d * special.digamma(a))
    g_lt = -a * s.d + _dot(s.wo, vo)
    if s.wc.size:
        vc = s.xc * math.exp(-lt)
        lq = _log_gammaincc(a, vc)
        ll += _dot(s.wc, lq)
        g_lt += _dot(s.wc, np.exp(a * np.log(vc) - vc - special.gammaln(a) - lq))
        # d ln Q / d ln a has no closed form: forward difference in ln a.
        h = 1e-6
        g_la += _dot(s.wc, _log_gammaincc(a * math.exp(h), vc) - lq) / h
    return -ll / s.n, -np.array([g_la, g_lt]) / s.n


@dataclass(frozen=True)
class _Family:
    name: str
    n_params: int
    start: Callable[[_Sample], np.ndarray]
    nll: Callable[[np.ndarray, _Sample], tuple[float, np.ndarray]]
    params: Callable[[np.ndarray], dict[str, float]]
    theta_of: Callable[[dict[str, Any]], np.ndarray]
    dist: Callable[[dict[str, Any]], Any]
    draw: Callable[[dict[str, Any], int, np.random.Generator], np.ndarray]


def _start_weibull(s: _Sample) -> np.ndarray:
    m, sd, _ = _log_moments(s)
    k = math.pi / (sd * math.sqrt(6))  # ln of a Weibull is Gumbel-min: sd = pi/(k sqrt 6)
    return np.array([math.log(k), m + np.euler_gamma / k])


def _start_gamma(s: _Sample) -> np.ndarray:
    mean = float(np.average(s.x, weights=s.w))
    m, _, _ = _log_moments(s)
    gap = max(math.log(mean) - m, 1e-6)
    a = (3 - gap + math.sqrt((gap - 3) ** 2 + 24 * gap)) / (12 * gap)  # Minka's approximation
    return np.array([math.log(a), math.log(mean / a)])


def _start_loglogistic(s: _Sample) -> np.ndarray:
    _, sd, med = _log_moments(s)
    b = math.pi / (sd * math.sqrt(3))  # ln of a log-logistic is logistic: sd = pi/(b sqrt 3)
    return np.array([med, math.log(b)])


def _start_lognormal(s: _Sample) -> np.ndarray:
    m, sd, _ = _log_moments(s)
    return np.array([m, math.log(sd)])


def _start_exponential(s: _Sample) -> np.ndarray:
    return np.array([-math.log(float(np.average(s.x, weights=s.w)))])


def _fisk_draw(p: dict[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(n)
    return p["scale_s"] * np.exp((np.log(u) - np.log1p(-u)) / p["shape"])


_FAMILY_TABLE: dict[str, _Family] = {
    "exponential": _Family(
        "exponential",
        1,
        _start_exponential,
        _nll_exponential,
        lambda th: {"rate_per_s": math.exp(th[0])},
        lambda p: np.array([math.log(p["rate_per_s"])]),
        lambda p: stats.expon(scale=1.0 / p["rate_per_s"]),
        lambda p, n, rng: rng.exponential(1.0 / p["rate_per_s"], n),
    ),
    "lognormal": _Family(
        "lognormal",
        2,
        _start_lognormal,
        _nll_lognormal,
        lambda th: {"mu": float(th[0]), "sigma": math.exp(th[1])},
        lambda p: np.array([p["mu"], math.log(p["sigma"])]),
        lambda p: stats.lognorm(s=p["sigma"], scale=math.exp(p["mu"])),
        lambda p, n, rng: np.exp(p["mu"] + p["sigma"] * rng.standard_normal(n)),
    ),
    "weibull": _Family(
        "weibull",
        2,
        _start_weibull,
        _nll_weibull,
        lambda th: {"shape": math.exp(th[0]), "scale_s": math.exp(th[1])},
        lambda p: np.array([math.log(p["shape"]), math.log(p["scale_s"])]),
        lambda p: stats.weibull_min(c=p["shape"], scale=p["scale_s"]),
        lambda p, n, rng: p["scale_s"] * rng.weibull(p["shape"], n),
    ),
    "gamma": _Family(
        "gamma",
        2,
        _start_gamma,
        _nll_gamma,
        lambda th: {"shape": math.exp(th[0]), "scale_s": math.exp(th[1])},
        lambda p: np.array([math.log(p["shape"]), math.log(p["scale_s"])]),
        lambda p: stats.gamma(a=p["shape"], scale=p["scale_s"]),
        lambda p, n, rng: rng.gamma(p["shape"], p["scale_s"], n),
    ),
    "loglogistic": _Family(
        "loglogistic",
        2,
        _start_loglogistic,
        _nll_loglogistic,
        lambda th: {"shape": math.exp(th[1]), "scale_s": math.exp(th[0])},
        lambda p: np.array([math.log(p["scale_s"]), math.log(p["shape"])]),
        lambda p: stats.fisk(c=p["shape"], scale=p["scale_s"]),
        _fisk_draw,
    ),
}


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class _Model:
    """A fitted model: family, params, the log-likelihood (in seconds) and parameter count."""

    family: str
    params: dict[str, Any]
    loglik: float
    n_params: int
    # The optimiser's point and inverse Hessian: bootstrap refits start from both, which
    # roughly halves their iterations.
    theta: np.ndarray | None = field(default=None, repr=False, compare=False)
    hess_inv: np.ndarray | None = field(default=None, repr=False, compare=False)

    def aic(self) -> float:
        return 2 * self.n_params - 2 * self.loglik

    def bic(self, n: float) -> float:
        return self.n_params * math.log(n) - 2 * self.loglik


def _start_from_lognormal(family: str, mu: float, sigma: float) -> np.ndarray:
    """Match the mean and sd of ln x of a censored lognormal fit (a censoring-aware start)."""
    if family == "weibull":
        k = math.pi / (sigma * math.sqrt(6))
        return np.array([math.log(k), mu + np.euler_gamma / k])
    if family == "loglogistic":
        return np.array([mu, math.log(math.pi / (sigma * math.sqrt(3)))])
    if family == "gamma":
        # Var ln x = trigamma(a) ~ 1/a + 1/(2a^2), and E ln x = digamma(a) + ln scale.
        v = sigma * sigma
        a = (1 + math.sqrt(1 + 2 * v)) / (2 * v)
        return np.array([math.log(a), mu - float(special.digamma(a))])
    if family == "exponential":
        return np.array([-(mu + 0.5 * sigma * sigma)])
    return np.array([mu, math.log(sigma)])


def _bfgs(
    nll: Callable[..., tuple[float, np.ndarray]],
    theta0: np.ndarray,
    args: tuple[Any, ...],
    hess_inv0: np.ndarray | None = None,
) -> optimize.OptimizeResult:
    options: dict[str, Any] = {"gtol": 1e-7, "maxiter": 500}
    if hess_inv0 is not None:
        options["hess_inv0"] = hess_inv0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        try:
            return optimize.minimize(nll, theta0, args=args, jac=True, method="BFGS", options=options)
        except ValueError:  # hess_inv0 not positive definite: start from the identity
            options.pop("hess_inv0", None)
            return optimize.minimize(nll, theta0, args=args, jac=True, method="BFGS", options=options)


def _sym(h: Any) -> np.ndarray | None:
    h = np.asarray(h, dtype=float)
    return 0.5 * (h + h.T) if h.ndim == 2 and np.all(np.isfinite(h)) else None


def _fit_single(
    family: str,
    s: _Sample,
    theta0: np.ndarray | None = None,
    lognormal: _Model | None = None,
    hess_inv0: np.ndarray | None = None,
) -> _Model | None:
    """Censored MLE of one family, from theta0, else from a lognormal fit, else from moments."""
    fam = _FAMILY_TABLE[family]
    if theta0 is None and lognormal is not None:
        theta0 = _start_from_lognormal(family, lognormal.params["mu"], lognormal.params["sigma"])
    if theta0 is None:
        theta0 = fam.start(s)
    res = _bfgs(fam.nll, theta0, (s,), hess_inv0)
    if not np.all(np.isfinite(res.x)) or not np.isfinite(res.fun):
        return None
    return _Model(family, fam.params(res.x), -float(res.fun) * s.n, fam.n_params, res.x, _sym(res.hess_inv))


def fit_family(family: str, duration_s: np.ndarray, censored: np.ndarray | None = None) -> dict[str, Any]:
    """Censored MLE of one family: {family, params, loglik, aic, bic}."""
    s = _Sample.from_arrays(duration_s, censored)
    m = _fit_single(family, s) if family != MIXTURE else None
    if m is None:
        raise ValueError(f"could not fit {family}")
    return {
        "family": family,
        "params": m.params,
        "loglik": m.loglik,
        "aic": m.aic(),
        "bic": m.bic(s.n),
    }


# --------------------------------------------------------------------------- mixtures


def _mix_estep(
    s: _Sample, w: np.ndarray, mu: np.ndarray, sd: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Log-likelihood of ln x (no Jacobian), responsibilities x counts, z-scores, Mills ratios."""
    lw = np.log(w)[:, None]
    zo = (s.yo[None, :] - mu[:, None]) / sd[:, None]
    lpo = lw - np.log(sd)[:, None] - 0.5 * zo * zo - _HALF_LOG_2PI
    mo = lpo.max(axis=0)
    lseo = mo + np.log(np.exp(lpo - mo).sum(axis=0))
    ro = np.exp(lpo - lseo) * s.wo
    ll = _dot(s.wo, lseo)
    if s.wc.size:
        zc = (s.yc[None, :] - mu[:, None]) / sd[:, None]
        lsf = special.log_ndtr(-zc)
        lpc = lw + lsf
        mc = lpc.max(axis=0)
        lsec = mc + np.log(np.exp(lpc - mc).sum(axis=0))
        rc = np.exp(lpc - lsec) * s.wc
        ll += _dot(s.wc, lsec)
        mills = np.exp(-0.5 * zc * zc - _HALF_LOG_2PI - lsf)
    else:
        rc = np.zeros((w.size, 0))
        zc = mills = rc
    return ll, ro, zo, rc, zc, mills


def _mix_unpack(th: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # sigma = floor + e^t keeps the floor without bounds (bounded L-BFGS-B calls LAPACK,
    # which multithreaded OpenBLAS made 50x slower on a busy machine).
    return special.softmax(th[:k]), th[k : 2 * k], _MIN_MIX_SIGMA + np.exp(th[2 * k :])


def _mix_nll(th: np.ndarray, s: _Sample, k: int) -> tuple[float, np.ndarray]:
    """Mean negative log-likelihood of the mixture in (weight logits, mus, ln(sigma - floor))."""
    w, mu, sd = _mix_unpack(th, k)
    ll, ro, zo, rc, zc, mills = _mix_estep(s, w, mu, sd)
    g_a = ro.sum(axis=1) + rc.sum(axis=1) - s.n * w
    g_mu = ((ro * zo).sum(axis=1) + (rc * mills).sum(axis=1)) / sd
    g_lsd = (ro * (zo * zo - 1)).sum(axis=1) + (rc * mills * zc).sum(axis=1)
    g_t = g_lsd * (sd - _MIN_MIX_SIGMA) / sd
    return -(ll - _dot(s.wo, s.yo)) / s.n, -np.concatenate([g_a, g_mu, g_t]) / s.n


def _mix_polish(s: _Sample, k: int, th0: np.ndarray, hess_inv0: np.ndarray | None = None) -> _Model:
    """Quasi-Newton on the same likelihood: EM crawls when components overlap."""
    res = _bfgs(_mix_nll, th0, (s, k), hess_inv0)
    ok = np.isfinite(res.fun) and res.fun <= _mix_nll(th0, s, k)[0]
    th = res.x if ok else th0
    m = _mix_model(-_mix_nll(th, s, k)[0] * s.n, *_mix_unpack(th, k))
    return _Model(m.family, m.params, m.loglik, m.n_params, th, _sym(res.hess_inv) if ok else None)


def _mix_theta(w: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    return np.concatenate(
        [np.log(np.maximum(w, _MIN_MIX_WEIGHT)), mu, np.log(np.maximum(sd - _MIN_MIX_SIGMA, 1e-6))]
    )


def _mix_em(
    s: _Sample,
    w: np.ndarray,
    mu: np.ndarray,
    sd: np.ndarray,
    max_iter: int = 400,
    tol: float = 1e-8,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """EM for a censored normal mixture of ln x; returns (loglik in seconds, w, mu, sd)."""
    prev = -np.inf
    yo2 = s.yo * s.yo
    for _ in range(max_iter):
        ll, ro, _, rc, zc, mills = _mix_estep(s, w, mu, sd)
        if ll - prev < tol * s.n:
            break
        prev = ll
        # einsum, not @: a matrix-vector product goes to multithreaded OpenBLAS, whose
        # spinning threads made EM ~10x slower on a busy 2-core machine.
        r0, r1, r2 = ro.sum(axis=1), np.einsum("kn,n->k", ro, s.yo), np.einsum("kn,n->k", ro, yo2)
        nk = r0 + rc.sum(axis=1)
        # A censored ln x is a normal truncated below at c: E[Y] = mu + sd*mills and
        # E[(Y - mu)^2] = sd^2 (1 + z*mills), z = (c - mu)/sd.
        e1c = mu[:, None] + sd[:, None] * mills
        mu_new = (r1 + (rc * e1c).sum(axis=1)) / np.maximum(nk, 1e-300)
        dmu = mu - mu_new
        sq_o = r2 - 2 * mu_new * r1 + mu_new * mu_new * r0
        sq_c = (
            rc
            * (
                sd[:, None] ** 2 * (1 + zc * mills)
                + 2 * dmu[:, None] * sd[:, None] * mills
                + dmu[:, None] ** 2
            )
        ).sum(axis=1)
        sd = np.maximum(np.sqrt((sq_o + sq_c) / np.maximum(nk, 1e-300)), _MIN_MIX_SIGMA)
        mu = mu_new
        w = np.maximum(nk / s.n, _MIN_MIX_WEIGHT)
        w = w / w.sum()
    else:
        ll = _mix_estep(s, w, mu, sd)[0]
    return ll - _dot(s.wo, s.yo), w, mu, sd


def _mix_model(ll: float, w: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> _Model:
    order = np.argsort(mu)
    params = {
        "weights": [float(v) for v in w[order]],
        "mus": [float(v) for v in mu[order]],
        "sigmas": [float(v) for v in sd[order]],
    }
    return _Model(MIXTURE, params, ll, 3 * w.size - 1)


def _fit_mixture(s: _Sample, k: int, rng: np.random.Generator, n_starts: int = 3) -> _Model:
    """EM from a quantile-spread start and random starts (EM finds local optima), then polish."""
    y = np.log(s.x)
    cum = np.cumsum(s.w) / s.n
    _, sd_all, _ = _log_moments(s)
    starts = [y[np.searchsorted(cum, (2 * np.arange(k) + 1) / (2 * k))]]
    for _ in range(n_starts - 1):
        starts.append(np.sort(y[np.searchsorted(cum, rng.random(k))]))
    best: _Model | None = None
    for mu0 in starts:
        _, w, mu, sd = _mix_em(
            s, np.full(k, 1.0 / k), mu0.astype(float), np.full(k, sd_all / k), max_iter=100
        )
        m = _mix_polish(s, k, _mix_theta(w, mu, sd))
        if best is None or m.loglik > best.loglik:
            best = m
    assert best is not None
    return best


def _refit_mixture(s: _Sample, m: _Model) -> _Model:
    p = m.params
    k = len(p["weights"])
    if m.theta is None:
        return _mix_polish(
            s, k, _mix_theta(np.array(p["weights"]), np.array(p["mus"]), np.array(p["sigmas"]))
        )
    return _mix_polish(s, k, m.theta, m.hess_inv)


def fit_lognormal_mixture(
    duration_s: np.ndarray,
    censored: np.ndarray | None = None,
    n_components: int = 2,
    seed: int = 0,
) -> dict[str, Any]:
    """Censored EM fit of a lognormal mixture: {family, params, loglik, aic, bic}."""
    s = _Sample.from_arrays(duration_s, censored)
    m = _fit_mixture(s, n_components, np.random.default_rng(seed))
    return {
        "family": MIXTURE,
        "params": m.params,
        "loglik": m.loglik,
        "aic": m.aic(),
        "bic": m.bic(s.n),
    }


# --------------------------------------------------------------------------- evaluation


def _closed_form_cdf(family: str, p: dict[str, Any], x: np.ndarray) -> np.ndarray:
    # Closed forms instead of frozen scipy distributions: freezing one costs ~0.3 ms
    # (docstring formatting), and the bootstrap evaluates thousands of CDFs per group.
    with np.errstate(divide="ignore", over="ignore"):
        if family == "exponential":
            return -np.expm1(-p["rate_per_s"] * x)
        if family == "lognormal":
            return special.ndtr((np.log(x) - p["mu"]) / p["sigma"])
        if family == "weibull":
            return -np.expm1(-((x / p["scale_s"]) ** p["shape"]))
        if family == "gamma":
            return special.gammainc(p["shape"], x / p["scale_s"])
        if family == "loglogistic":
            return special.expit(p["shape"] * (np.log(x) - math.log(p["scale_s"])))
    raise ValueError(f"unknown family {family!r}")


def _closed_form_ppf(family: str, p: dict[str, Any], q: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore"):
        if family == "exponential":
            return -np.log1p(-q) / p["rate_per_s"]
        if family == "lognormal":
            return np.exp(p["mu"] + p["sigma"] * special.ndtri(q))
        if family == "weibull":
            return p["scale_s"] * (-np.log1p(-q)) ** (1.0 / p["shape"])
        if family == "gamma":
            return p["scale_s"] * special.gammaincinv(p["shape"], q)
        if family == "loglogistic":
            return p["scale_s"] * (q / (1.0 - q)) ** (1.0 / p["shape"])
    raise ValueError(f"unknown family {family!r}")


def model_cdf(family: str, params: dict[str, Any], x: np.ndarray | float) -> np.ndarray:
    """CDF of a fitted model (a record's family and params) at durations x in seconds."""
    x = np.asarray(x, dtype=float)
    if family == MIXTURE:
        y = np.log(np.maximum(x, 1e-300))[..., None]
        z = (y - np.asarray(params["mus"])) / np.asarray(params["sigmas"])
        return np.where(x > 0, np.einsum("...k,k->...", special.ndtr(z), np.asarray(params["weights"])), 0.0)
    return _closed_form_cdf(family, params, np.maximum(x, 0.0))


def model_pdf(family: str, params: dict[str, Any], x: np.ndarray | float) -> np.ndarray:
    """Density (per second) of a fitted model at durations x in seconds."""
    x = np.asarray(x, dtype=float)
    if family == MIXTURE:
        xs = np.maximum(x, 1e-300)
        sg = np.asarray(params["sigmas"])
        z = (np.log(xs)[..., None] - np.asarray(params["mus"])) / sg
        dens = np.einsum(
            "...k,k->...", np.exp(-0.5 * z * z - _HALF_LOG_2PI) / sg, np.asarray(params["weights"])
        )
        return np.where(x > 0, dens / xs, 0.0)
    return _FAMILY_TABLE[family].dist(params).pdf(x)


def model_ppf(family: str, params: dict[str, Any], q: np.ndarray | float) -> np.ndarray:
    """Quantiles (seconds) of a fitted model."""
    q = np.asarray(q, dtype=float)
    if family != MIXTURE:
        return _closed_form_ppf(family, params, q)
    mus, sg = np.asarray(params["mus"]), np.asarray(params["sigmas"])
    lo = np.full(q.shape, float(np.min(mus - 12 * sg)))
    hi = np.full(q.shape, float(np.max(mus + 12 * sg)))
    for _ in range(80):  # bisection on ln x: the mixture CDF is monotone
        mid = 0.5 * (lo + hi)
        below = model_cdf(MIXTURE, params, np.exp(mid)) < q
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return np.exp(0.5 * (lo + hi))


def _draw(m: _Model, n: int, rng: np.random.Generator) -> np.ndarray:
    if m.family == MIXTURE:
        p = m.params
        comp = rng.choice(len(p["weights"]), size=n, p=np.asarray(p["weights"]))
        z = rng.standard_normal(n)
        return np.exp(np.asarray(p["mus"])[comp] + np.asarray(p["sigmas"])[comp] * z)
    return _FAMILY_TABLE[m.family].draw(m.params, n, rng)


def _refit(m: _Model, s: _Sample) -> _Model | None:
    if s.d < 2:
        return None
    if m.family == MIXTURE:
        return _refit_mixture(s, m)
    theta = m.theta if m.theta is not None else _FAMILY_TABLE[m.family].theta_of(m.params)
    return _fit_single(m.family, s, theta, hess_inv0=m.hess_inv)


def _censoring_sampler(s: _Sample) -> Callable[[int, np.random.Generator], np.ndarray]:
    """Draws censoring times from the reverse Kaplan-Meier of the censoring distribution."""
    if s.wc.size == 0:
        return lambda n, rng: np.full(n, np.inf)
    # Roles swapped: a censoring is the "event"; at tied times it comes first here.
    order = np.lexsort((s.event, s.x))
    x, cens, w = s.x[order], ~s.event[order], s.w[order]
    at_risk = s.n - np.cumsum(w) + w
    surv = np.cumprod(np.where(cens, 1.0 - w / at_risk, 1.0))
    mass = np.r_[1.0, surv[:-1]] - surv
    times = np.r_[x[cens], np.inf]  # mass left after the last censoring: never censored
    probs = np.r_[mass[cens], max(float(surv[-1]), 0.0)]
    probs = probs / probs.sum()
    cum = np.cumsum(probs)
    return lambda n, rng: times[np.minimum(np.searchsorted(cum, rng.random(n), side="right"), times.size - 1)]


def _simulate(m: _Model, s: _Sample, censor: Callable[..., np.ndarray], rng: np.random.Generator) -> _Sample:
    n = int(round(s.n))
    t = _draw(m, n, rng)
    c = censor(n, rng)
    x = np.minimum(t, c)
    if s.integer:
        x = np.round(x)
    return _Sample.from_arrays(x, t > c)


def _gof_pvalue(m: _Model, s: _Sample, ks: float, replicates: int, rng: np.random.Generator) -> float:
    """Parametric bootstrap: simulate, censor the same way, refit, and compare KS distances."""
    censor = _censoring_sampler(s)
    exceed = 0
    done = 0
    for _ in range(replicates):
        sim = _simulate(m, s, censor, rng)
        fit = _refit(m, sim)
        if fit is None:
            continue
        done += 1
        exceed += _ks(sim, lambda x, f=fit: model_cdf(f.family, f.params, x)) >= ks
    return (1 + exceed) / (1 + done)


def _quantile_cis(
    m: _Model, s: _Sample, replicates: int, level: float, rng: np.random.Generator
) -> list[tuple[float, float]] | None:
    """Percentile bootstrap CIs of QUANTILES: resample jobs, refit the chosen family."""
    if replicates <= 0:
        return None
    probs = s.w / s.n
    draws = []
    for _ in range(replicates):
        counts = rng.multinomial(int(round(s.n)), probs)
        fit = _refit(m, _Sample.from_rows(s.x, s.event, counts, s.integer))
        if fit is not None:
            draws.append(model_ppf(fit.family, fit.params, np.array(QUANTILES)))
    if len(draws) < 2:
        return None
    arr = np.array(draws)
    lo = np.quantile(arr, (1 - level) / 2, axis=0)
    hi = np.quantile(arr, 1 - (1 - level) / 2, axis=0)
    return [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]


# --------------------------------------------------------------------------- results


@dataclass
class DurationFit:
    """The chosen duration model of one workload group, with its checks and shares."""

    group: str
    n: int
    censored: int
    family: str
    params: dict[str, Any]
    loglik: float | None
    aic: float | None
    bic: float | None
    ks: float
    ks_pvalue: float | None
    p50_s: float
    p90_s: float
    p99_s: float
    p50_ci_s: tuple[float, float] | None
    p90_ci_s: tuple[float, float] | None
    p99_ci_s: tuple[float, float] | None
    share_jobs_under_48h: float
    share_jobs_under_48h_empirical: float
    share_gpu_hours_under_48h: float | None
    gpu_hours_share_over_threshold: float | None
    threshold_s: float
    empirical_p50_s: float | None
    empirical_p90_s: float | None
    empirical_p99_s: float | None
    candidates: dict[str, dict[str, Any]]
    mixture: bool
    borrowed_from: str | None = None

    @property
    def censored_share(self) -> float:
        return self.censored / self.n if self.n else 0.0

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        return model_cdf(self.family, self.params, x)

    def pdf(self, x: np.ndarray | float) -> np.ndarray:
        return model_pdf(self.family, self.params, x)

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        return model_ppf(self.family, self.params, q)

    def to_record(self) -> dict[str, Any]:
        """JSON-able dict (NaN becomes None, tuples become lists)."""
        rec: dict[str, Any] = {
            "group": self.group,
            "n": self.n,
            "censored": self.censored,
            "censored_share": self.censored_share,
        }
        for name in self.__dataclass_fields__:
            if name not in rec:
                rec[name] = _jsonable(getattr(self, name))
        rec["censored_share"] = _jsonable(self.censored_share)
        return rec


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple | np.ndarray):
        return [_jsonable(x) for x in v]
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return None if not math.isfinite(float(v)) else float(v)
    return v


def _gpu_shares(
    raw_s: np.ndarray, gpu_count: np.ndarray | None, threshold_s: float
) -> tuple[float | None, float | None]:
    weight = raw_s * (1.0 if gpu_count is None else np.asarray(gpu_count, dtype=float))
    total = float(weight.sum())
    if total <= 0:
        return None, None
    under = float(weight[raw_s <= HOURS_48_S].sum()) / total
    over = float(weight[raw_s > threshold_s].sum()) / total
    return under, over


def _candidate(m: _Model, n: float) -> dict[str, Any]:
    return {"aic": m.aic(), "bic": m.bic(n), "loglik": m.loglik, "params": m.params}


def fit_durations(
    duration_s: np.ndarray,
    censored: np.ndarray | None = None,
    gpu_count: np.ndarray | None = None,
    *,
    group: str = "all",
    families: Sequence[str] = FAMILIES,
    gof_replicates: int = 49,
    ci_replicates: int = 99,
    ci_level: float = 0.95,
    mixture: str = "auto",
    mixture_pvalue: float = 0.01,
    max_components: int = 4,
    threshold_s: float = HOURS_48_S,
    seed: int = 0,
) -> DurationFit:
    """Fit every family, pick by AIC, check fit, fall back to a lognormal mixture if needed.

    mixture: "auto" (try mixtures when the bootstrap p-value < mixture_pvalue),
    "never", or "always" (try them regardless; still chosen only on lower BIC).
    gof_replicates=0 skips the bootstrap p-value (then "auto" never tries mixtures);
    ci_replicates=0 skips the quantile CIs.
    """
    if mixture not in ("auto", "never", "always"):
        raise ValueError(f"mixture must be auto, never or always, not {mixture!r}")
    raw = np.asarray(duration_s, dtype=float)
    s = _Sample.from_arrays(raw, censored)
    if s.xo.size < 2:
        raise ValueError(f"group {group}: need at least two distinct completed durations")
    rng = np.random.default_rng([seed, zlib.crc32(group.encode())])

    ln = _fit_single("lognormal", s)
    fits = {
        f: m
        for f in families
        if (m := ln if f == "lognormal" else _fit_single(f, s, lognormal=ln)) is not None
    }
    if not fits:
        raise ValueError(f"group {group}: no family could be fitted")
    candidates = {f: _candidate(m, s.n) for f, m in fits.items()}
    chosen = min(fits.values(), key=_Model.aic)
    ks = _ks(s, lambda x: model_cdf(chosen.family, chosen.params, x))
    pvalue = _gof_pvalue(chosen, s, ks, gof_replicates, rng) if gof_replicates > 0 else None

    # With B replicates the smallest attainable p-value is 1/(B+1); reaching that floor
    # (no simulated sample as far off as the data) also counts as "no family fits".
    p_floor = 1.0 / (gof_replicates + 1)
    want_mixture = mixture == "always" or (
        mixture == "auto" and pvalue is not None and pvalue <= max(mixture_pvalue, p_floor)
    )
    if want_mixture and s.xo.size >= 10:
        mixes = [_fit_mixture(s, k, rng) for k in range(2, max_components + 1)]
        for m in mixes:
            k = len(m.params["weights"])
            candidates[f"{MIXTURE}_{k}"] = _candidate(m, s.n)
        best_mix = min(mixes, key=lambda m: m.bic(s.n))
        if best_mix.bic(s.n) < chosen.bic(s.n):
            chosen = best_mix
            ks = _ks(s, lambda x: model_cdf(chosen.family, chosen.params, x))
            if gof_replicates > 0:
                pvalue = _gof_pvalue(chosen, s, ks, gof_replicates, rng)

    qs = model_ppf(chosen.family, chosen.params, np.array(QUANTILES))
    cis = _quantile_cis(chosen, s, ci_replicates, ci_level, rng)
    gpu_under, gpu_over = _gpu_shares(raw, gpu_count, threshold_s)
    emp = [_km_quantile(s, q) for q in QUANTILES]
    return DurationFit(
        group=group,
        n=int(raw.size),
        censored=int(raw.size - round(s.d)),
        family=chosen.family,
        params=chosen.params,
        loglik=chosen.loglik,
        aic=chosen.aic(),
        bic=chosen.bic(s.n),
        ks=ks,
        ks_pvalue=pvalue,
        p50_s=float(qs[0]),
        p90_s=float(qs[1]),
        p99_s=float(qs[2]),
        p50_ci_s=cis[0] if cis else None,
        p90_ci_s=cis[1] if cis else None,
        p99_ci_s=cis[2] if cis else None,
        share_jobs_under_48h=float(model_cdf(chosen.family, chosen.params, HOURS_48_S)),
        share_jobs_under_48h_empirical=1.0 - _km_at(s, HOURS_48_S),
        share_gpu_hours_under_48h=gpu_under,
        gpu_hours_share_over_threshold=gpu_over,
        threshold_s=threshold_s,
        empirical_p50_s=emp[0],
        empirical_p90_s=emp[1],
        empirical_p99_s=emp[2],
        candidates=candidates,
        mixture=chosen.family == MIXTURE,
    )


def _borrow(parent: DurationFit, group: str, frame: pd.DataFrame, threshold_s: float) -> DurationFit:
    raw = frame["duration_s"].to_numpy(dtype=float)
    cens = frame["censored"].to_numpy(dtype=bool)
    s = _Sample.from_arrays(raw, cens)
    gpu_under, gpu_over = _gpu_shares(raw, frame["gpu_count"].to_numpy(dtype=float), threshold_s)
    emp = [_km_quantile(s, q) for q in QUANTILES]
    return DurationFit(
        group=group,
        n=int(raw.size),
        censored=int(cens.sum()),
        family=parent.family,
        params=parent.params,
        loglik=None,
        aic=None,
        bic=None,
        ks=_ks(s, lambda x: model_cdf(parent.family, parent.params, x)),
        ks_pvalue=None,
        p50_s=parent.p50_s,
        p90_s=parent.p90_s,
        p99_s=parent.p99_s,
        p50_ci_s=parent.p50_ci_s,
        p90_ci_s=parent.p90_ci_s,
        p99_ci_s=parent.p99_ci_s,
        share_jobs_under_48h=parent.share_jobs_under_48h,
        share_jobs_under_48h_empirical=1.0 - _km_at(s, HOURS_48_S),
        share_gpu_hours_under_48h=gpu_under,
        gpu_hours_share_over_threshold=gpu_over,
        threshold_s=threshold_s,
        empirical_p50_s=emp[0],
        empirical_p90_s=emp[1],
        empirical_p99_s=emp[2],
        candidates={},
        mixture=parent.mixture,
        borrowed_from=parent.group,
    )


# --------------------------------------------------------------------------- groups


def group_label(columns: Sequence[str], values: Sequence[Any]) -> str:
    """'team=vision,model=resnet', or 'all' for no columns."""
    if not columns:
        return "all"
    return ",".join(f"{c}={'' if pd.isna(v) else v}" for c, v in zip(columns, values, strict=True))


def _fit_frame_job(args: tuple[str, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]) -> DurationFit:
    label, x, cens, gpus, options = args
    return fit_durations(x, cens, gpus, group=label, **options)


def _own_fit_ok(frame: pd.DataFrame, min_group_size: int) -> bool:
    done = frame.loc[~frame["censored"].astype(bool), "duration_s"]
    return len(frame) >= min_group_size and np.maximum(done, MIN_DURATION_S).nunique() >= 2


def fit_groups(
    df: pd.DataFrame,
    group_by: Sequence[str] | None = None,
    min_group_size: int = 100,
    *,
    workers: int = 1,
    **fit_options: Any,
) -> list[DurationFit]:
    """Fit one model per group (columns duration_s, censored, gpu_count + group columns).

    Small groups borrow the fit of their nearest big-enough ancestor (see module docstring).
    workers > 1 fits groups in parallel processes. fit_options go to ``fit_durations``.
    """
    group_by = list(group_by or [])
    missing = {"duration_s", "censored", "gpu_count", *group_by} - set(df.columns)
    if missing:
        raise ValueError(f"missing columns: {sorted(missing)}")
    threshold_s = float(fit_options.get("threshold_s", HOURS_48_S))

    def frames(level: int) -> dict[tuple[Any, ...], pd.DataFrame]:
        if level == 0:
            return {(): df}
        cols = group_by[:level]
        return {
            (k if isinstance(k, tuple) else (k,)): g for k, g in df.groupby(cols, dropna=False, sort=True)
        }

    levels = {lv: frames(lv) for lv in range(len(group_by) + 1)}
    targets = levels[len(group_by)]
    to_fit: dict[str, pd.DataFrame] = {}
    source: dict[tuple[Any, ...], str] = {}  # target key -> label of the fit it uses
    for key in targets:
        for lv in range(len(group_by), -1, -1):
            anc = levels[lv][key[:lv]]
            if lv == 0 or _own_fit_ok(anc, min_group_size):
                label = group_label(group_by[:lv], key[:lv])
                to_fit[label] = anc
                source[key] = label
                break

    jobs = [
        (
            label,
            f["duration_s"].to_numpy(dtype=float),
            f["censored"].to_numpy(dtype=bool),
            f["gpu_count"].to_numpy(dtype=float),
            fit_options,
        )
        for label, f in to_fit.items()
    ]
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            fitted = list(pool.map(_fit_frame_job, jobs, chunksize=max(1, len(jobs) // (8 * workers))))
    else:
        fitted = [_fit_frame_job(j) for j in jobs]
    by_label = {f.group: f for f in fitted}

    out = []
    for key, frame in targets.items():
        label = group_label(group_by, key)
        fit = by_label[source[key]]
        out.append(fit if source[key] == label else _borrow(fit, label, frame, threshold_s))
    return out


# --------------------------------------------------------------------------- drift


def compare_fits(
    previous: Iterable[dict[str, Any]], current: Iterable[dict[str, Any]], p90_shift: float = 0.25
) -> list[dict[str, Any]]:
    """Per group: did the family change, or did p90 move by more than p90_shift (relative)?"""
    prev = {r["group"]: r for r in previous}
    cur = {r["group"]: r for r in current}
    out = []
    for g in sorted(prev.keys() | cur.keys()):
        a, b = prev.get(g), cur.get(g)
        row: dict[str, Any] = {
            "group": g,
            "status": "both" if a and b else ("new" if b else "gone"),
            "previous_family": a["family"] if a else None,
            "current_family": b["family"] if b else None,
            "previous_p90_s": a["p90_s"] if a else None,
            "current_p90_s": b["p90_s"] if b else None,
            "family_changed": False,
            "p90_rel_shift": None,
            "p90_shifted": False,
        }
        if a and b:
            row["family_changed"] = a["family"] != b["family"]
            if a["p90_s"] and a["p90_s"] > 0:
                shift = (b["p90_s"] - a["p90_s"]) / a["p90_s"]
                row["p90_rel_shift"] = shift
                row["p90_shifted"] = abs(shift) > p90_shift
        row["flagged"] = row["family_changed"] or row["p90_shifted"]
        out.append(row)
    return out


# --------------------------------------------------------------------------- io


def _read_table(path: Path) -> pd.DataFrame:
    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    return pd.read_csv(path)


def _timestamps(col: pd.Series) -> pd.Series:
    col = col.replace("", None)
    try:
        return pd.to_datetime(col, utc=True, format="ISO8601")
    except (ValueError, TypeError):
        return pd.to_datetime(col, utc=True, format="mixed")


def load_durations(path: str | Path, as_of: Any = None) -> pd.DataFrame:
    """Durations from a job-run file (canonical schema) or a one-column CSV of seconds.

    Job-run files give duration_s = end - start (running jobs: as_of - start; as_of
    defaults to the latest timestamp in the file), censored = state in preempted /
    cancelled / running or no end_time, gpu_count = instance_count * gpus_per_instance
    (an empty count means 1 instance, empty GPUs mean 0; an absent column means 1), and
    keep the tag columns. Jobs that never started are dropped; an end before its
    start is an error. A plain file's single numeric column is taken as uncensored
    seconds on one GPU.
    """
    path = Path(path)
    raw = _read_table(path)
    if {"start_time", "end_time", "state"} <= set(raw.columns):
        return _job_run_durations(raw, as_of)
    numeric = [c for c in raw.columns if pd.api.types.is_numeric_dtype(raw[c])]
    if len(numeric) != 1:
        raise ValueError(
            f"{path.name}: expected a job-run file or one numeric column, got {list(raw.columns)}"
        )
    x = raw[numeric[0]].dropna().to_numpy(dtype=float)
    if np.any(x < 0):
        raise ValueError(f"{path.name}: negative durations in column {numeric[0]}")
    return pd.DataFrame({"duration_s": x, "censored": False, "gpu_count": 1.0})


def _column(frame: pd.DataFrame, name: str, missing: float) -> np.ndarray:
    if name not in frame:
        return np.ones(len(frame))
    return pd.to_numeric(frame[name], errors="coerce").fillna(missing).to_numpy(dtype=float)


def _job_run_durations(raw: pd.DataFrame, as_of: Any) -> pd.DataFrame:
    stamps = {c: _timestamps(raw[c]) for c in ("submit_time", "start_time", "end_time") if c in raw}
    if as_of is None:
        as_of = max(s.max() for s in stamps.values() if s.notna().any())
    as_of = pd.Timestamp(as_of)
    as_of = as_of.tz_localize("UTC") if as_of.tzinfo is None else as_of.tz_convert("UTC")
    started = stamps["start_time"].notna()
    start, end = stamps["start_time"][started], stamps["end_time"][started]
    frame = raw.loc[started].copy()
    running = end.isna()
    duration_s = (end.fillna(as_of) - start).dt.total_seconds()
    bad = duration_s < 0
    if bad.any():
        example = frame.loc[bad].iloc[0].get("job_id", frame.index[bad][0])
        raise ValueError(f"{int(bad.sum())} jobs end before they start (e.g. job {example})")
    state = frame["state"].astype(str).str.strip().str.lower()
    out = pd.DataFrame(
        {
            "duration_s": duration_s.to_numpy(dtype=float),
            "censored": (state.isin(CENSORED_STATES) | running).to_numpy(dtype=bool),
            "gpu_count": _column(frame, "instance_count", 1.0) * _column(frame, "gpus_per_instance", 0.0),
        }
    )
    for col in ("job_id", "state", "team", "project", "model", "instance_type", "pricing_model"):
        if col in frame:
            out[col] = frame[col].to_numpy()
    return out


# --------------------------------------------------------------------------- table


def _fmt_s(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    if v < 120:
        return f"{v:.0f}s"
    if v < 7200:
        return f"{v / 60:.1f}m"
    if v < 48 * 3600 * 4:
        return f"{v / 3600:.1f}h"
    return f"{v / 86400:.1f}d"


def _fmt_share(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def format_table(records: Sequence[dict[str, Any]]) -> str:
    """Fixed-width table of fit records (one line per group)."""
    header = (
        "group",
        "n",
        "cens",
        "family",
        "p50",
        "p90",
        "p99",
        "KS",
        "p",
        "<48h jobs",
        "<48h GPU-h",
        "note",
    )
    rows = []
    for r in records:
        family = r["family"]
        if r.get("mixture"):
            family = f"lognormal x{len(r['params']['weights'])}"
        pval = r.get("ks_pvalue")
        rows.append(
            (
                str(r["group"]),
                str(r["n"]),
                _fmt_share(r.get("censored_share")),
                family,
                _fmt_s(r.get("p50_s")),
                _fmt_s(r.get("p90_s")),
                _fmt_s(r.get("p99_s")),
                f"{r['ks']:.3f}" if r.get("ks") is not None else "-",
                "-" if pval is None else f"{pval:.2f}",
                _fmt_share(r.get("share_jobs_under_48h")),
                _fmt_share(r.get("share_gpu_hours_under_48h")),
                f"from {r['borrowed_from']}" if r.get("borrowed_from") else "",
            )
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    numeric = {1, 2, 4, 5, 6, 7, 8, 9, 10}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])
