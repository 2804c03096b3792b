"""Synthetic demand scenarios for the backtest: invented hourly GPU demand of a known
shape (steady, growing, weekly, stepped, spiky), deterministic by seed, six months each.

They test the commitment rule on shapes a fleet's own history may not show yet; they
carry no price: the caller of the backtest chooses the rates. Every generator returns a ``pd.Series`` of units per hour (instance-hours,
non-negative floats) on an hourly UTC ``DatetimeIndex``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

SYNTHETIC_SCENARIOS: tuple[str, ...] = ("stationary", "trend", "weekly", "step", "spiky")


def _index(start: str, months: int) -> pd.DatetimeIndex:
    begin = pd.Timestamp(start, tz="UTC")
    end = begin + pd.DateOffset(months=months)
    return pd.date_range(begin, end, freq="h", inclusive="left")


def _noise(rng: np.random.Generator, hours: int, sd: float, rho: float = 0.8) -> np.ndarray:
    """AR(1) noise with stationary standard deviation ``sd`` (busy hours cluster)."""
    shocks = rng.normal(0.0, sd * np.sqrt(1.0 - rho**2), hours)
    out = np.empty(hours)
    prev = rng.normal(0.0, sd)
    for i in range(hours):
        prev = rho * prev + shocks[i]
        out[i] = prev
    return out


def _diurnal(index: pd.DatetimeIndex, amplitude: float) -> np.ndarray:
    """Busier in the (UTC) working day: peak at 15:00."""
    hour = index.hour.to_numpy()
    return amplitude * np.cos(2 * np.pi * (hour - 15) / 24)


def stationary(seed: int = 0, months: int = 6, start: str = "2026-01-01", base: float = 20.0) -> pd.Series:
    """A steady fleet: level, a daily cycle and noise."""
    rng = np.random.default_rng(seed)
    idx = _index(start, months)
    units = base + _diurnal(idx, 0.1 * base) + _noise(rng, idx.size, 0.15 * base)
    return pd.Series(np.maximum(units, 0.0), index=idx, name="units")


def trend(
    seed: int = 0,
    months: int = 6,
    start: str = "2026-01-01",
    base: float = 12.0,
    growth_per_month: float = 4.0,
) -> pd.Series:
    """A growing fleet: +``growth_per_month`` units every month."""
    rng = np.random.default_rng(seed)
    idx = _index(start, months)
    t_months = np.arange(idx.size) / 730.0
    level = base + growth_per_month * t_months
    units = level + _diurnal(idx, 0.1 * base) + _noise(rng, idx.size, 0.15 * base)
    return pd.Series(np.maximum(units, 0.0), index=idx, name="units")


def weekly(seed: int = 0, months: int = 6, start: str = "2026-01-01", base: float = 20.0) -> pd.Series:
    """Weekday training, quiet weekends (weekends at 55 % of the weekday level)."""
    rng = np.random.default_rng(seed)
    idx = _index(start, months)
    weekend = idx.day_of_week.to_numpy() >= 5
    level = np.where(weekend, 0.55 * base, base)
    units = level + _diurnal(idx, 0.1 * base) + _noise(rng, idx.size, 0.12 * base)
    return pd.Series(np.maximum(units, 0.0), index=idx, name="units")


def step(
    seed: int = 0,
    months: int = 6,
    start: str = "2026-01-01",
    base: float = 24.0,
    steps: tuple[tuple[int, float], ...] = ((68, 0.5), (128, 1.6)),
) -> pd.Series:
    """Level shifts: at each (day, factor) the level is multiplied (a team leaves, a project lands)."""
    rng = np.random.default_rng(seed)
    idx = _index(start, months)
    day = np.arange(idx.size) // 24
    level = np.full(idx.size, base)
    for at_day, factor in steps:
        level = np.where(day >= at_day, level * factor, level)
    units = level + _diurnal(idx, 0.08 * base) + _noise(rng, idx.size, 0.1 * base)
    return pd.Series(np.maximum(units, 0.0), index=idx, name="units")


def spiky(
    seed: int = 0,
    months: int = 6,
    start: str = "2026-01-01",
    base: float = 8.0,
    bursts_per_day: float = 0.6,
) -> pd.Series:
    """A steady base plus research bursts: Poisson arrivals, lognormal lengths (median 10 h), 5-40 units high."""
    rng = np.random.default_rng(seed)
    idx = _index(start, months)
    units = base + _noise(rng, idx.size, 0.1 * base)
    n_bursts = rng.poisson(bursts_per_day * idx.size / 24)
    starts = rng.integers(0, idx.size, n_bursts)
    lengths = np.ceil(rng.lognormal(np.log(10.0), 1.0, n_bursts)).astype(int)
    heights = rng.uniform(5.0, 40.0, n_bursts)
    for s, n, h in zip(starts, lengths, heights, strict=True):
        units[s : s + n] += h
    return pd.Series(np.maximum(units, 0.0), index=idx, name="units")


SYNTHETIC_GENERATORS: dict[str, Callable[..., pd.Series]] = {
    "stationary": stationary,
    "trend": trend,
    "weekly": weekly,
    "step": step,
    "spiky": spiky,
}


def make_synthetic_demand(name: str, seed: int = 0, months: int = 6, start: str = "2026-01-01") -> pd.Series:
    """Hourly demand of one named synthetic scenario (see ``SYNTHETIC_SCENARIOS``)."""
    try:
        generator = SYNTHETIC_GENERATORS[name]
    except KeyError as exc:
        raise ValueError(f"unknown scenario {name!r}; choose from {SYNTHETIC_SCENARIOS}") from exc
    return generator(seed=seed, months=months, start=start)
