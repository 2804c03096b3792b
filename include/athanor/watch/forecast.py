"""Spend forecast: the rest of the month and the next days, per team and in total, with a
prediction interval, and its backtest on the warehouse's own history.

Usage cost is forecast by statsmodels' ETS (additive error, additive trend, additive weekly
season), fitted per scope. The trend is straight or damped, whichever forecast the scope's own
last months better in the backtest (30 days ahead; the lower AIC when the history is too short
to backtest): a steady growth is kept, a burst of big jobs is not extrapolated for 90 days.
Intervals come from simulated paths of the fitted model: per day, and for a sum of days (a
month, a horizon) from the paths' sums, since the interval of a sum is not the sum of intervals.
Month-start charges (purchases, fees, tax, credits) are not a smooth series: each future month
gets the median of the months before, on the day of the month they landed last.
"""

from __future__ import annotations

import functools
import logging
import warnings
from dataclasses import dataclass, field
from datetime import date, timedelta

import numpy as np
import pandas as pd

from athanor.watch.series import MONTH_START, USAGE, DailyCosts

log = logging.getLogger(__name__)

MIN_TRAIN_DAYS = 28  # four weekly cycles: fewer and the season is not identified
BACKTEST_HORIZONS = (7, 30, 90)
BACKTEST_FOLDS = 4  # origins a week apart, the latest first
SIMULATIONS = 500
CHOOSE_BY_HORIZON = 30  # the backtest horizon that picks the trend's form
SEED = 20261201  # simulated paths are drawn the same way every run: the published bounds repeat


@dataclass(frozen=True)
class ScopeForecast:
    scope_kind: str
    scope_value: str
    currency: str
    days: pd.DatetimeIndex  # the forecast days, from the day after as_of
    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    paths: np.ndarray = field(repr=False)  # days x simulations, month-start charges included
    month_to_date: float  # the billed cost of as_of's month so far
    interval: float
    trend: str = "linear"  # linear | damped

    def total(self, first: date, last: date) -> tuple[float, float, float]:
        """Forecast sum over [first, last] with its interval (simulated)."""
        mask = (self.days.date >= first) & (self.days.date <= last)
        if not mask.any():
            return 0.0, 0.0, 0.0
        sums = self.paths[mask].sum(axis=0)
        alpha = (1 - self.interval) / 2
        low, high = np.quantile(sums, [alpha, 1 - alpha])
        return float(self.cost[mask].sum()), float(low), float(high)


def month_start_plan(month_start: pd.Series, days: pd.DatetimeIndex, months: int) -> np.ndarray:
    """Expected month-start charges on each of `days`: per month, the median of the `months` months
    before (0 for a month without), on the day of the month they landed in the latest month."""
    plan = np.zeros(len(days))
    if month_start.empty:
        return plan
    by_month = month_start.groupby(month_start.index.to_period("M")).sum()
    latest = month_start[month_start != 0]
    landing_day = latest.index.max().day if len(latest) else 1
    known = dict(by_month)
    for period in sorted({d.to_period("M") for d in days}):
        past = [known.get(period - k, 0.0) for k in range(1, months + 1) if (period - k) in known]
        if not past:
            continue
        amount = float(np.median(past))
        known.setdefault(period, amount)
        day = min(landing_day, period.days_in_month)
        target = pd.Timestamp(period.start_time.date().replace(day=day))
        where = days == target
        if where.any():
            plan[where] += amount
    return plan


@functools.cache
def _ets_model() -> type:
    """statsmodels' ETSModel whose fitted results leave out the parameters' covariance matrix.

    Its results compute that matrix as soon as they exist, from a numerical Hessian: a quarter
    of each fit's time (1.3 of 5.4 s of a night's 85 fits), for standard errors that nothing
    here reads. The point forecast, the simulated paths and the AIC do not depend on it.
    """
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel, ETSResults, ETSResultsWrapper

    class Results(ETSResults):
        @property
        def cov_params_approx(self) -> np.ndarray:
            return np.full((len(self.params), len(self.params)), np.nan)

    class Model(ETSModel):
        @property
        def _res_classes(self) -> dict:
            return {"fit": (Results, ETSResultsWrapper)}

    return Model


def fit_forecast(
    usage: pd.Series,
    month_start: pd.Series,
    horizon: int,
    interval: float,
    months: int = 3,
    seed: int = SEED,
    damped: bool | None = None,
) -> tuple[pd.DatetimeIndex, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Days, point forecast, lower, upper and simulated paths for `horizon` days after the series.

    `usage` and `month_start` are daily, indexed by consecutive days. Paths include the month-start
    charges already billed in the forecast months, counted once (they are not forecast again).
    `damped` None: the trend form of the lower AIC.
    """
    ets = _ets_model()
    start = usage.index[-1] + pd.Timedelta(days=1)
    days = pd.date_range(start, periods=horizon, freq="D")
    y = usage.astype(float).asfreq("D")
    with warnings.catch_warnings():
        # Convergence chatter of the optimiser on short or flat series; the fit is still used.
        warnings.simplefilter("ignore")
        fitted = min(
            (
                ets(y, error="add", trend="add", damped_trend=damped, seasonal="add", seasonal_periods=7).fit(
                    disp=False, maxiter=200
                )
                for damped in ((False, True) if damped is None else (damped,))
            ),
            key=lambda r: r.aic,
        )
        paths = np.asarray(
            fitted.simulate(horizon, anchor="end", repetitions=SIMULATIONS, rng=np.random.default_rng(seed)),
            dtype=float,
        ).reshape(horizon, SIMULATIONS)
        point = np.asarray(fitted.forecast(horizon), dtype=float)
    # Usage cost goes no lower than the history went (0, unless it had refunds). Raising the paths
    # to the floor raises their mean: the point forecast takes that lift too (the clamped paths'
    # mean less the raw paths' mean), so it stays the mean of the distribution the intervals are
    # quantiles of. Clamping the model's mean alone left a scope billed on one day of 90 with a
    # point at 0 below an interval of clamped paths (16 of 60 intervals of the month sums).
    # Where no path reaches the floor the lift is exactly 0 and the point is the model's own.
    floor = min(0.0, float(y.min()))
    clamped = np.maximum(paths, floor)
    point = point + (clamped.mean(axis=1) - paths.mean(axis=1))
    paths = clamped
    alpha = (1 - interval) / 2
    lower, upper = np.quantile(paths, [alpha, 1 - alpha], axis=1)
    # A month's charges already billed (the 1st before as_of) are not expected again this month.
    plan = month_start_plan(month_start, days, months)
    billed = month_start.groupby(month_start.index.to_period("M")).sum()
    billed_months = {period for period, value in billed.items() if value != 0}
    plan[[d.to_period("M") in billed_months for d in days]] = 0.0
    return days, point + plan, lower + plan, upper + plan, paths + plan[:, None]


def scope_series(costs: DailyCosts, scope_kind: str) -> dict[tuple[str, str], tuple[pd.Series, pd.Series]]:
    """(scope_value, currency) -> (usage, month-start) daily series of one scope kind."""
    usage = costs.wide(USAGE, (scope_kind,))
    month = costs.wide(MONTH_START, (scope_kind,))
    out = {}
    for column in sorted(set(usage.columns) | set(month.columns)):
        _, value, currency = column
        u = usage[column] if column in usage else pd.Series(0.0, index=costs.days())
        m = month[column] if column in month else pd.Series(0.0, index=costs.days())
        out[(value, currency)] = (u, m)
    return out


@dataclass(frozen=True)
class Accuracy:
    scope_kind: str
    scope_value: str
    currency: str
    horizon_days: int
    folds: int
    mape: float | None  # of the horizon's total, mean over the folds
    coverage: float | None  # share of backtest days inside the daily interval


def backtest(
    usage: pd.Series,
    month_start: pd.Series,
    scope: tuple[str, str, str],
    interval: float,
    damped: bool | None,
    horizons: tuple[int, ...] = BACKTEST_HORIZONS,
    folds: int = BACKTEST_FOLDS,
    months: int = 3,
) -> list[Accuracy]:
    """Refit at earlier origins on what was known then and compare each horizon's total with the bill.

    Origins are as_of - h, then a week earlier each fold, as long as MIN_TRAIN_DAYS stay before one.
    """
    out = []
    for h in horizons:
        errors, inside, seen = [], 0, 0
        for j in range(folds):
            cut = len(usage) - h - 7 * j  # days of training
            if cut < MIN_TRAIN_DAYS:
                break
            _, cost, lower, upper, _ = fit_forecast(
                usage.iloc[:cut], month_start.iloc[:cut], h, interval, months, damped=damped
            )
            actual = (usage.iloc[cut : cut + h] + month_start.iloc[cut : cut + h]).to_numpy()
            if actual.sum() != 0:
                errors.append(abs(cost.sum() - actual.sum()) / abs(actual.sum()))
            inside += int(((actual >= lower) & (actual <= upper)).sum())
            seen += len(actual)
        out.append(
            Accuracy(
                *scope,
                h,
                len(errors),
                float(np.mean(errors)) if errors else None,
                inside / seen if seen else None,
            )
        )
    return out


def _chosen(accuracy: dict[bool, list[Accuracy]]) -> bool | None:
    """The trend form with the lower backtest MAPE at CHOOSE_BY_HORIZON; None (AIC) without one."""
    mape = {
        damped: next((a.mape for a in rows if a.horizon_days == CHOOSE_BY_HORIZON), None)
        for damped, rows in accuracy.items()
    }
    if any(v is None for v in mape.values()):
        return None
    return min(mape, key=lambda damped: (mape[damped], damped))


def forecast_scopes(
    costs: DailyCosts,
    scopes: list[tuple[str, str, str]],
    horizon: int,
    interval: float,
    months: int = 3,
    with_backtest: bool = True,
) -> tuple[list[ScopeForecast], list[Accuracy], list[str]]:
    """Forecasts of each (scope_kind, scope_value, currency), their backtest, and why some have none."""
    out, accuracy, skipped = [], [], []
    series = {kind: scope_series(costs, kind) for kind in {k for k, _, _ in scopes}}
    month_first = costs.as_of.replace(day=1)
    for scope in scopes:
        kind, value, currency = scope
        pair = series[kind].get((value, currency))
        if pair is None or len(pair[0]) < MIN_TRAIN_DAYS:
            skipped.append(f"{kind}:{value} ({currency}): fewer than {MIN_TRAIN_DAYS} billed days")
            continue
        usage, month_start = pair
        damped = None
        if with_backtest:
            # Both trend forms at the horizon that chooses between them, the other horizons for
            # the form whose rows are kept only: the same figures from a third fewer fits.
            tried = {
                d: backtest(usage, month_start, scope, interval, d, (CHOOSE_BY_HORIZON,), months=months)
                for d in (False, True)
            }
            damped = _chosen(tried)
            others = tuple(h for h in BACKTEST_HORIZONS if h != CHOOSE_BY_HORIZON)
            kept = tried[bool(damped)] + backtest(
                usage, month_start, scope, interval, bool(damped), others, months=months
            )
            accuracy += sorted(kept, key=lambda a: BACKTEST_HORIZONS.index(a.horizon_days))
        days, cost, lower, upper, paths = fit_forecast(
            usage, month_start, horizon, interval, months, damped=damped
        )
        so_far = float(
            usage[usage.index.date >= month_first].sum()
            + month_start[month_start.index.date >= month_first].sum()
        )
        trend = "damped" if damped else "linear" if damped is False else "by AIC"
        out.append(
            ScopeForecast(kind, value, currency, days, cost, lower, upper, paths, so_far, interval, trend)
        )
    return out, accuracy, skipped


def month_ends(as_of: date, horizon: int) -> list[tuple[date, date]]:
    """(first, last) of as_of's month and of each following month the horizon covers whole."""
    out = []
    first = as_of.replace(day=1)
    end = as_of + timedelta(days=horizon)
    while True:
        nxt = (first.replace(day=28) + timedelta(days=4)).replace(day=1)
        last = nxt - timedelta(days=1)
        if last > end:
            break
        out.append((first, last))
        first = nxt
    return out
