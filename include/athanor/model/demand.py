"""Demand model: next month's hourly demand of a pool from its history, and the
durations of the jobs a job class brings.

A recent window replayed (what the cloud consoles do), moved to the level a
clear trend or a level step in the recent weeks points to. A job class's
durations are the fitted, censoring-aware distribution of its workload group
(`duration_fits`), so that the spot simulation draws its jobs from what the
fits say rather than from the medians of the jobs that happened to finish.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from athanor.model.durations import QUANTILE_NAMES, beyond_text, model_ppf


@dataclass(frozen=True)
class ClassDurations:
    """A job class's duration distribution: a fitted model from `duration_fits`, in hours."""

    group_key: str  # the fit used, e.g. 'team=llm' or 'all'
    family: str
    params: dict[str, Any]
    n: int  # jobs behind the fit
    censored: int  # of which right-censored (still running, preempted, cancelled)
    borrowed_from: str | None = None  # a small group borrows its ancestor's fit
    # The fit's quantiles (p50, p90, p99) above the longest duration its jobs were watched
    # (data_limit_s): draws from that tail are the model's extrapolation, not the fleet's.
    beyond_data: tuple[str, ...] = ()
    data_limit_s: float | None = None

    def ppf_h(self, q: np.ndarray | float) -> np.ndarray:
        """Quantiles in hours."""
        return np.asarray(model_ppf(self.family, self.params, q), dtype=float) / 3600.0

    def describe(self) -> str:
        """'lognormal_mixture fitted on team=llm (895 jobs, 90 censored)', plus which quantiles
        are beyond the data: '; p99 > 145 days (beyond the data)'."""
        text = f"{self.family} fitted on {self.group_key} ({self.n:,} jobs, {self.censored:,} censored)"
        text += f", borrowed from {self.borrowed_from}" if self.borrowed_from else ""
        if self.beyond_data and self.data_limit_s is not None:
            text += f"; {'/'.join(self.beyond_data)} {beyond_text(self.data_limit_s)}"
        return text


def _group_items(group_key: str) -> dict[str, str]:
    """'team=llm,instance_family=p4d' -> {'team': 'llm', 'instance_family': 'p4d'}; 'all' -> {}."""
    if group_key == "all":
        return {}
    return dict(item.split("=", 1) for item in group_key.split(","))


def class_durations(fits: Iterable[Mapping[str, Any]], **labels: str) -> ClassDurations | None:
    """The most specific fit whose group the class belongs to (e.g. team=, instance_family=).

    ``fits``: rows with group_key, family, params (dict or JSON text), n, censored and
    optionally borrowed_from, data_limit_s and the p50/p90/p99 `_beyond_data` flags. A fit matches when every column of its group names the
    class's value; among matches the one with the most columns wins ('all' matches
    every class). None when no fit matches.
    """
    best: tuple[int, Mapping[str, Any]] | None = None
    for fit in fits:
        items = _group_items(str(fit["group_key"]))
        if all(labels.get(col) == value for col, value in items.items()):
            if best is None or len(items) > best[0]:
                best = (len(items), fit)
    if best is None:
        return None
    fit = best[1]
    params = fit["params"]
    if isinstance(params, str):
        params = json.loads(params)
    return ClassDurations(
        group_key=str(fit["group_key"]),
        family=str(fit["family"]),
        params=dict(params),
        n=int(fit["n"]),
        censored=int(fit["censored"]),
        borrowed_from=fit.get("borrowed_from") or None,
        beyond_data=tuple(q for q in QUANTILE_NAMES if fit.get(f"{q}_beyond_data")),
        data_limit_s=fit.get("data_limit_s"),
    )


@dataclass(frozen=True)
class DemandForecast:
    """A forecast of next month's hourly demand and the change it followed."""

    units: np.ndarray
    model: str  # "flat" | "trend" | "step"
    level_change: float  # units added to the recent window's level


def _daily_levels(hours: np.ndarray) -> np.ndarray:
    """Deseasonalised daily medians (medians shrug off research spikes).

    The day-of-week effect is the median, per weekday, of the daily medians
    minus their centred 7-day moving average (classical decomposition): a
    moving average follows a trend exactly and a step after a few days, so
    neither leaks into the weekday effect.
    """
    days = hours.size // 24
    daily = np.median(hours[hours.size - 24 * days :].reshape(days, 24), axis=1)
    if days < 14:
        return daily
    moving = np.convolve(daily, np.ones(7) / 7.0, mode="valid")  # centred on days 3 .. days-4
    detrended = daily[3 : days - 3] - moving
    dow = np.arange(days) % 7
    effect = np.array([np.median(detrended[dow[3 : days - 3] == k]) for k in range(7)])
    return daily - (effect - effect.mean())[dow]


def forecast_next_month(
    history: Sequence[float] | np.ndarray,
    lookback_h: int = 720,
    horizon_h: int = 730,
    detect_days: int = 56,
    min_detect_days: int = 42,
    trend_min_t: float = 6.0,
    trend_min_change: float = 0.10,
    step_min_t: float = 8.0,
    step_min_change: float = 0.20,
    step_min_days_after: int = 7,
    step_up_min_days_after: int = 14,
    min_consistency: float = 0.8,
) -> DemandForecast:
    """Next month's demand: the last ``lookback_h`` hours moved to the level the recent weeks point to.

    On deseasonalised daily medians of the last ``detect_days`` (whole weeks, as
    many as the history has, at least ``min_detect_days``) we test a linear trend (Theil-Sen)
    and a single level step (best split; the step must lie inside the replay
    window and be followed by ``step_min_days_after`` days, a step up by
    ``step_up_min_days_after``: demand is a base plus bursts, so a burst of
    research that lasts a week looks like a step up, never like a step down).
    Noise is the MAD of the
    residuals. A change is followed only if it is clear (t-statistic), material
    (relative change of the level) and, for a step, consistent
    (``min_consistency`` of the days on each side of the midpoint). The
    thresholds were set on the synthetic scenarios of ``athanor.recommend.backtest_synthetic`` so
    that 30 seeds of stationary, weekly and spiky demand raise no false change.
    Without a change the forecast is the window itself: the same replay the
    cloud consoles use.
    """
    u = np.asarray(history, dtype=float)
    window = u[-lookback_h:]
    flat = DemandForecast(units=window.copy(), model="flat", level_change=0.0)
    weeks = min(detect_days, u.size // 24) // 7
    if weeks < min_detect_days // 7:
        return flat
    y = _daily_levels(u[-weeks * 7 * 24 :])
    n = y.size
    level = max(float(np.median(y)), 1e-9)
    floor = 1e-3 * level  # a noiseless series still needs a finite t

    def mad(values: np.ndarray) -> float:
        return max(1.4826 * float(np.median(np.abs(values))), floor)

    x = np.arange(n, dtype=float)
    xc = x - x.mean()
    slope, intercept = stats.theilslopes(y, x)[:2]
    trend_resid = y - (intercept + slope * x)
    t_trend = abs(slope) / (mad(trend_resid) / math.sqrt(float((xc**2).sum())))
    days_ahead = (lookback_h + horizon_h) / 2.0 / 24.0  # centre of the window to centre of next month
    trend_change = float(slope) * days_ahead
    trend_ok = t_trend >= trend_min_t and abs(trend_change) >= trend_min_change * level

    window_days = lookback_h // 24
    best: tuple[float, int, float, float] | None = None  # (t, split, step, robust sse)
    for k in range(max(3, n - window_days + 1), n - step_min_days_after + 1):
        pre, post = y[:k], y[k:]
        delta = float(np.median(post) - np.median(pre))
        if abs(delta) < step_min_change * level or (delta > 0 and n - k < step_up_min_days_after):
            continue
        resid = np.concatenate([pre - np.median(pre), post - np.median(post)])
        # Medians are ~1.25x noisier than means for normal noise.
        t = abs(delta) / (1.2533 * mad(resid) * math.sqrt(1.0 / k + 1.0 / (n - k)))
        mid = float(np.median(pre)) + delta / 2.0
        sign = 1.0 if delta >= 0 else -1.0
        consistent = min(float(np.mean(sign * (post - mid) > 0)), float(np.mean(sign * (pre - mid) < 0)))
        sae = float(np.abs(resid).sum())
        # The split that fits best locates the step; its t-statistic then says whether it is real.
        if consistent >= min_consistency and (best is None or sae < best[3]):
            best = (t, k, delta, sae)
    step_ok = best is not None and best[0] >= step_min_t
    if best is not None and step_ok and (not trend_ok or best[3] < float(np.abs(trend_resid).sum())):
        _, split, delta, _ = best
        shifted = window.copy()
        cut_h = window.size - 24 * (n - split)  # first hour after the step
        shifted[: max(cut_h, 0)] += delta
        return DemandForecast(units=np.maximum(shifted, 0.0), model="step", level_change=delta)
    if trend_ok:
        return DemandForecast(
            units=np.maximum(window + trend_change, 0.0), model="trend", level_change=trend_change
        )
    return flat
