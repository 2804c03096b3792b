"""Model choice for one group: every family by AIC, a mixture when none fits, the record it yields."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from athanor.model.durations.bootstrap import _gof_pvalue, _quantile_cis
from athanor.model.durations.distributions import QUANTILES, model_cdf, model_pdf, model_ppf
from athanor.model.durations.families import FAMILIES, MIXTURE, _fit_single, _Model
from athanor.model.durations.mixtures import _fit_mixture
from athanor.model.durations.sample import _km_at, _km_quantile, _ks, _Sample
from athanor.model.durations.support import QUANTILE_NAMES, beyond_data, censored_note, data_limit_s

HOURS_48_S = 48 * 3600.0


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
    # The longest time a job behind the fit was watched (athanor.model.durations.support):
    # quantiles above it are beyond the data. None on records stored before it was kept.
    data_limit_s: float | None = None

    @property
    def censored_share(self) -> float:
        return self.censored / self.n if self.n else 0.0

    @property
    def beyond_data(self) -> list[str]:
        """The quantiles (p50, p90, p99) above the data limit."""
        figures = {f"{name}_s": getattr(self, f"{name}_s") for name in QUANTILE_NAMES}
        return beyond_data({"data_limit_s": self.data_limit_s, **figures})

    @property
    def censored_note(self) -> str | None:
        return censored_note(self.n, self.censored)

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
        rec["beyond_data"] = self.beyond_data
        rec["censored_note"] = self.censored_note
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
        data_limit_s=data_limit_s(raw),
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
        # The quantiles are the parent's, fitted on the parent's jobs: so is the limit they are judged by.
        data_limit_s=parent.data_limit_s,
    )
