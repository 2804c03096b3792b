"""Durations as a weighted sample of unique (duration, completed) rows; Kaplan-Meier and KS on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

MIN_DURATION_S = 1.0


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


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Dot product without BLAS: OpenBLAS threads a long ddot, and its spinning threads
    made fits up to 10x slower on a busy 2-core machine."""
    return float(np.einsum("i,i->", a, b))
