"""The parametric families and their censored maximum-likelihood fit (BFGS, analytic gradients)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from athanor.model.durations.sample import _dot, _Sample

MIXTURE = "lognormal_mixture"
FAMILIES: tuple[str, ...] = ("exponential", "lognormal", "weibull", "gamma", "loglogistic")

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


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
