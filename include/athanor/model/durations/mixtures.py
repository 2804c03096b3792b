"""Lognormal mixtures: censored EM on ln duration, polished by BFGS on the same likelihood."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from athanor.model.durations.families import _HALF_LOG_2PI, MIXTURE, _bfgs, _log_moments, _Model, _sym
from athanor.model.durations.sample import _dot, _Sample

_MIN_MIX_SIGMA = 0.02
_MIN_MIX_WEIGHT = 1e-10


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
