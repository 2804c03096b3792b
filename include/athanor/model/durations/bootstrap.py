"""Parametric-bootstrap goodness of fit and percentile-bootstrap quantile CIs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from athanor.model.durations.distributions import QUANTILES, model_cdf, model_ppf
from athanor.model.durations.families import _FAMILY_TABLE, MIXTURE, _fit_single, _Model
from athanor.model.durations.mixtures import _refit_mixture
from athanor.model.durations.sample import _ks, _Sample


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
