"""Spend forecast: the rest of the month and the next days, per team and in total, with a
calibrated prediction interval, reconciled so that the teams add up to the total, and its
backtest on the warehouse's own history.

Usage cost is forecast by statsmodels' ETS (additive error, additive trend, additive weekly
season), fitted per scope: the smoothing parameters of highest likelihood on a fixed grid, the
initial states by statsmodels' heuristic, so the fit is the same on every CPU (`fit_on_grid`). The trend is straight or damped, whichever forecast the scope's own
last months better in the backtest (30 days ahead; the lower AIC when the history is too short
to backtest): a steady growth is kept, a burst of big jobs is not extrapolated for 90 days.
Month-start charges (purchases, fees, tax, credits) are not a smooth series: each future month
gets the median of the months before, on the day of the month they landed last.

Reconciled hierarchy (per currency): the total's own model sets the fleet's usage day by day and
the teams share it in the proportions of their own models (top-down by forecast proportions);
month-start charges add up from the teams (bottom-up). Fitted separately, the teams' trends
added up to 46 % more than the total's for the demo's December. A service or account budget's
scope takes the total's forecast in its share of the last SHARE_DAYS billed days.

Calibrated intervals (split conformal, per horizon): the ETS model's own simulated intervals
held 54 % of the demo's days at 7 days ahead and 95 % of a team's at 30, since bursty job-driven
spend is not ETS noise. Each backtest day gives a score, how many times the model's own
half-interval (below or above the point) the actual fell from the point; the published paths are
widened or narrowed about their point by the scores' conformal quantile of the horizon the day
is in (1-7 days ahead: the 7-day backtest's; 8-30: the 30-day's; beyond: the longest backtested).
Sums over days (a month, a horizon) take their intervals from the calibrated paths' sums. The
backtest's coverage is judged out of fold: each fold's days against the factor of the other
folds (at 7 days the folds' days do not overlap; at 30 they do, origins being a week apart).
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
FOLDS = {7: 8}  # a week ahead: eight weeks of days to calibrate on, none shared by two folds
SIMULATIONS = 500
CHOOSE_BY_HORIZON = 30  # the backtest horizon that picks the trend's form
MAX_FACTOR = 1000.0  # a score beyond any useful widening (a zero-width side missed)
SHARE_DAYS = 28  # a service's or account's share of the total: its last four weeks
SEED = 20261201  # simulated paths are drawn the same way every run: the published bounds repeat
# The smoothing parameters `fit_on_grid` tries: level; trend as a share of the level's; season as
# a share of what the level leaves; damping within statsmodels' bounds (0.8-0.98).
LEVEL_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))
TREND_SHARE = (0.01, 0.05, 0.1, 0.2, 0.5)
SEASON_SHARE = (0.01, 0.05, 0.1, 0.2, 0.5, 0.9)
DAMPING_GRID = (0.8, 0.85, 0.9, 0.95, 0.98)


@dataclass(frozen=True)
class ScopeForecast:
    scope_kind: str
    scope_value: str
    currency: str
    days: pd.DatetimeIndex  # the forecast days, from the day after the last complete one (as_of)
    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    paths: np.ndarray = field(repr=False)  # days x simulations, month-start charges included
    month_to_date: float  # the billed cost of as_of's month so far (through the last complete day)
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


@dataclass(frozen=True)
class Base:
    """One scope's usage forecast from one origin: point (the paths' mean), simulated paths, the
    floor the paths are clamped at, and the month-start charges expected on each day."""

    point: np.ndarray  # days
    paths: np.ndarray  # days x simulations
    floor: np.ndarray  # days
    plan: np.ndarray  # days

    def scaled(self, ratio: np.ndarray) -> Base:
        """The usage part times a non-negative factor per day (a share of a reconciled total)."""
        r = ratio[:, None]
        return Base(self.point * ratio, self.paths * r, self.floor * ratio, self.plan)

    def interval(self, interval: float) -> tuple[np.ndarray, np.ndarray]:
        alpha = (1 - interval) / 2
        lower, upper = np.quantile(self.paths, [alpha, 1 - alpha], axis=1)
        return lower, upper

    def calibrated(self, factor: np.ndarray) -> Base:
        """Paths widened (factor > 1) or narrowed about the point, still no lower than the floor.

        The point stays: it is what the hierarchy adds up, and within the daily interval since
        the point is at or above the floor.
        """
        p = self.point[:, None]
        paths = np.maximum(p + factor[:, None] * (self.paths - p), self.floor[:, None])
        return Base(self.point, paths, self.floor, self.plan)


def smoothing_grid(damped: bool) -> np.ndarray:
    """Every (level, trend, season[, damping]) smoothing parameter set `fit_on_grid` tries, within
    ETS's admissible region (trend below level, season below what the level leaves)."""
    sets = [
        (alpha, alpha * trend, (1 - alpha) * season, *damping)
        for alpha in LEVEL_GRID
        for trend in TREND_SHARE
        for season in SEASON_SHARE
        for damping in ([(phi,) for phi in DAMPING_GRID] if damped else [()])
    ]
    return np.array(sets, dtype=float)


def fit_on_grid(model: object) -> object:
    """The ETS model's results at the smoothing parameters of highest likelihood on a fixed grid,
    its initial states from statsmodels' heuristic.

    statsmodels' own fit (numerical optimisation of the parameters and initial states) stopped at
    different optima on different CPUs: its L-BFGS-B runs on BLAS, whose kernels differ in the last
    bits, and the likelihood of a short, bursty spend series is flat with several optima, so a
    month's forecast moved up to 9 % between OpenBLAS's Haswell and SkylakeX kernels. The grid's
    likelihoods are computed by the model's compiled filter without BLAS, and the first set within
    a relative 1e-9 of the best wins: the same parameters, and forecasts, on any machine.
    """
    grid = smoothing_grid(bool(model.damped_trend))  # type: ignore[attr-defined]
    with np.errstate(all="ignore"):  # a diverging set's likelihood is not finite: never chosen
        llf = grid_loglike(model, grid)
    llf[~np.isfinite(llf)] = -np.inf
    best = llf.max()
    chosen = int(np.argmax(llf >= best - 1e-9 * max(1.0, abs(best))))
    return model.smooth(grid[chosen])  # type: ignore[attr-defined]


def ets_model(y: pd.Series, damped: bool) -> object:
    """The forecast's ETS model of a daily series, before fitting: additive error, trend (damped
    or not) and weekly season, initial states by statsmodels' heuristic (what `grid_loglike`
    computes)."""
    return _ets_model()(
        y,
        error="add",
        trend="add",
        damped_trend=damped,
        seasonal="add",
        seasonal_periods=7,
        initialization_method="heuristic",
    )


def grid_loglike(model: object, grid: np.ndarray) -> np.ndarray:
    """statsmodels' ETS log-likelihood at each row of `grid`, all rows in one pass over the days.

    Asked one set at a time (`model.loglike`) the grid took three quarters of the spend watch: 236
    thousand calls a night, each a few microseconds of filter behind 100 of Python. This runs the
    same recursion as statsmodels' compiled filter (`_ets_smooth_add_add`: additive error, trend
    and season, the heuristic initial states) with the sets as a vector: the same operations in
    the same order, so the same likelihoods (tests/unit/test_forecast_grid.py holds them to it).
    `grid` rows are (level, trend, season[, damping]) as `smoothing_grid` makes them.
    """
    if (model.error, model.trend, model.seasonal) != ("add", "add", "add"):  # type: ignore[attr-defined]
        raise ValueError("grid_loglike computes the additive-error, -trend and -season model only")
    y = np.asarray(model.endog, dtype=float)  # type: ignore[attr-defined]
    n, m = len(y), int(model.seasonal_periods)  # type: ignore[attr-defined]
    alpha = grid[:, 0]
    # statsmodels smooths with the trend's and season's shares, computed as it does, not taken
    # from TREND_SHARE / SEASON_SHARE (the round trip through the product differs in the last bit).
    beta_star = grid[:, 1] / alpha
    gamma_star = grid[:, 2] / (1 - alpha)
    phi = grid[:, 3] if grid.shape[1] > 3 else np.ones(len(grid))
    level = np.full(len(grid), float(model.initial_level))  # type: ignore[attr-defined]
    trend = np.full(len(grid), float(model.initial_trend))  # type: ignore[attr-defined]
    # season[:, t % m] holds s[t - m]: the state each day's forecast reads, then overwrites.
    season = np.tile(np.asarray(model.initial_seasonal, dtype=float), (len(grid), 1))  # type: ignore[attr-defined]
    residuals = np.empty((len(grid), n))
    for t in range(n):
        past = season[:, t % m]
        damped = phi * trend
        residuals[:, t] = y[t] - (level + damped + past)
        new_level = alpha * (y[t] - past) + (1 - alpha) * (level + damped)
        trend = beta_star * (new_level - level) + (1 - beta_star) * phi * trend
        season[:, t % m] = gamma_star * (y[t] - new_level) + (1 - gamma_star) * past
        level = new_level
    return -n / 2 * (np.log(2 * np.pi * np.mean(residuals**2, axis=1)) + 1)


def fit_base(
    usage: pd.Series,
    month_start: pd.Series,
    horizon: int,
    months: int = 3,
    seed: int = SEED,
    damped: bool | None = None,
) -> tuple[pd.DatetimeIndex, Base]:
    """Days and the usage forecast of `horizon` days after the series, before reconciliation.

    `usage` and `month_start` are daily, indexed by consecutive days. The plan leaves out the
    month-start charges already billed in a forecast month (they are not forecast again).
    `damped` None: the trend form of the lower AIC.
    """
    start = usage.index[-1] + pd.Timedelta(days=1)
    days = pd.date_range(start, periods=horizon, freq="D")
    y = usage.astype(float).asfreq("D")
    with warnings.catch_warnings():
        # statsmodels' notes on short or flat series; the fit is still used.
        warnings.simplefilter("ignore")
        fitted = min(
            (
                fit_on_grid(ets_model(y, damped))
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
    # A month's charges already billed (the 1st before as_of) are not expected again this month.
    plan = month_start_plan(month_start, days, months)
    billed = month_start.groupby(month_start.index.to_period("M")).sum()
    billed_months = {period for period, value in billed.items() if value != 0}
    plan[[d.to_period("M") in billed_months for d in days]] = 0.0
    return days, Base(point, clamped, np.full(horizon, floor), plan)


def fit_forecast(
    usage: pd.Series,
    month_start: pd.Series,
    horizon: int,
    interval: float,
    months: int = 3,
    seed: int = SEED,
    damped: bool | None = None,
) -> tuple[pd.DatetimeIndex, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Days, point forecast, lower, upper and simulated paths of one scope on its own (the model's
    own interval, neither calibrated nor reconciled), month-start charges included."""
    days, base = fit_base(usage, month_start, horizon, months, seed, damped)
    lower, upper = base.interval(interval)
    plan = base.plan
    return days, base.point + plan, lower + plan, upper + plan, base.paths + plan[:, None]


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
    coverage: float | None  # share of backtest days inside the calibrated daily interval


@dataclass(frozen=True)
class Fold:
    """One backtest origin: `cut` days of training, the forecast of the next `horizon` days, and
    what was billed on them (usage and month-start charges)."""

    horizon: int
    cut: int
    base: Base
    actual: np.ndarray


def backtest_folds(
    usage: pd.Series,
    month_start: pd.Series,
    damped: bool | None,
    horizon: int,
    folds: int = BACKTEST_FOLDS,
    months: int = 3,
) -> list[Fold]:
    """Refit at earlier origins on what was known then: as_of - h, then a week earlier each fold,
    as long as MIN_TRAIN_DAYS stay before one. The same origins for every scope of a history."""
    out = []
    for j in range(folds):
        cut = len(usage) - horizon - 7 * j  # days of training
        if cut < MIN_TRAIN_DAYS:
            break
        _, base = fit_base(usage.iloc[:cut], month_start.iloc[:cut], horizon, months, damped=damped)
        actual = (usage.iloc[cut : cut + horizon] + month_start.iloc[cut : cut + horizon]).to_numpy()
        out.append(Fold(horizon, cut, base, actual))
    return out


def mape(folds: list[Fold]) -> float | None:
    """Mean absolute percentage error of each fold's horizon total (folds billed 0 left out)."""
    errors = [
        abs((f.base.point + f.base.plan).sum() - f.actual.sum()) / abs(f.actual.sum())
        for f in folds
        if f.actual.sum() != 0
    ]
    return float(np.mean(errors)) if errors else None


def scores(base: Base, actual: np.ndarray, interval: float) -> np.ndarray:
    """Per day, how many of the model's half-intervals (below or above the point) the actual fell
    from the point: the day is inside the interval widened by a factor f when its score <= f."""
    lower, upper = base.interval(interval)
    usage = actual - base.plan
    above = usage >= base.point
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(
            above, (usage - base.point) / (upper - base.point), (base.point - usage) / (base.point - lower)
        )
    # A zero-width side (a scope always at its floor): 0 when the actual is the point, else a
    # score no factor reaches, so such a day counts as outside.
    return np.where(np.isnan(score), 0.0, np.minimum(score, MAX_FACTOR))


def conformal_factor(values: np.ndarray, interval: float) -> float:
    """The split-conformal quantile: the ceil((n + 1) x interval)-th smallest score (the largest
    when n is too small), so that a new day is inside with probability >= interval."""
    if len(values) == 0:
        return 1.0
    ordered = np.sort(values)
    k = min(int(np.ceil((len(values) + 1) * interval)), len(values))
    return float(ordered[k - 1])


def covered(base: Base, actual: np.ndarray, interval: float, factor: float) -> np.ndarray:
    """Whether each day's bill is inside the interval calibrated by `factor`."""
    lower, upper = base.calibrated(np.full(len(actual), factor)).interval(interval)
    usage = actual - base.plan
    return (usage >= lower) & (usage <= upper)


def reconcile(total: Base, parts: dict[tuple[str, str], Base], weights: dict[tuple[str, str], float]) -> dict:
    """The parts scaled to share the total's usage, day by day, in the proportions of their own
    points (their past `weights` on a day all points are 0); the total's month-start charges
    become the parts' sum. Returns the reconciled total and parts under the same keys."""
    keys = list(parts)
    points = np.array([np.maximum(parts[k].point, 0.0) for k in keys])  # parts x days
    past = np.array([max(weights.get(k, 0.0), 0.0) for k in keys])
    if past.sum() == 0:
        past = np.ones(len(keys))
    share = np.where(points.sum(axis=0) > 0, points / np.maximum(points.sum(axis=0), 1e-300), 0.0)
    share[:, points.sum(axis=0) == 0] = (past / past.sum())[:, None]
    out: dict = {}
    for i, key in enumerate(keys):
        part = parts[key]
        # The part's paths follow its own model's spread, scaled so that its mean is its share.
        flat = ~((part.point > 0) & (total.point > 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(flat, 0.0, share[i] * total.point / part.point)
        scaled = part.scaled(ratio)
        if flat.any():
            # A day whose own point (or the total's) is 0 or below takes the total's paths in its share.
            paths = scaled.paths.copy()
            paths[flat] = total.paths[flat] * share[i][flat, None]
            point = scaled.point.copy()
            point[flat] = total.point[flat] * share[i][flat]
            floor = scaled.floor.copy()
            floor[flat] = total.floor[flat] * share[i][flat]
            scaled = Base(point, paths, floor, part.plan)
        out[key] = scaled
    plan = np.sum([parts[k].plan for k in keys], axis=0) if keys else total.plan
    out[("total", "all")] = Base(total.point, total.paths, total.floor, plan)
    return out


def _chosen(mapes: dict[bool, float | None]) -> bool | None:
    """The trend form with the lower backtest MAPE at CHOOSE_BY_HORIZON; None (AIC) without one."""
    if any(v is None for v in mapes.values()):
        return None
    return min(mapes, key=lambda damped: (mapes[damped], damped))


def _factors(factor_by_horizon: dict[int, float], horizon: int) -> np.ndarray:
    """The factor of each day ahead (1-based): its horizon's, else the longest backtested one's."""
    if not factor_by_horizon:
        return np.ones(horizon)
    known = sorted(factor_by_horizon)
    lead = np.arange(1, horizon + 1)
    return np.array([factor_by_horizon[next((h for h in known if h >= k), known[-1])] for k in lead])


def forecast_scopes(
    costs: DailyCosts,
    scopes: list[tuple[str, str, str]],
    horizon: int,
    interval: float,
    months: int = 3,
    with_backtest: bool = True,
    month_first: date | None = None,
) -> tuple[list[ScopeForecast], list[Accuracy], list[str]]:
    """Forecasts of each (scope_kind, scope_value, currency), their backtest, and why some have none.

    Per currency the total and every team are fitted and reconciled; other scopes (a service or an
    account with a budget) take the total's forecast in their share of the last days.
    """
    out, accuracy, skipped = [], [], []
    wanted = set(scopes)
    series = {kind: scope_series(costs, kind) for kind in {"total", "team"} | {k for k, _, _ in scopes}}
    # The month to date counts from the run's month's 1st (the series may end before as_of).
    month_first = month_first or costs.as_of.replace(day=1)
    for currency in sorted({c for _, _, c in scopes}):
        fitted = [("total", "all")] + [("team", v) for v, c in series["team"] if c == currency]
        pairs = {key: series[key[0]].get((key[1], currency)) for key in fitted}
        if pairs[("total", "all")] is None or len(pairs[("total", "all")][0]) < MIN_TRAIN_DAYS:
            skipped += [
                f"{k}:{v} ({c}): fewer than {MIN_TRAIN_DAYS} billed days"
                for k, v, c in scopes
                if c == currency
            ]
            continue
        # Each scope's trend form, by its own backtest at the choosing horizon; its folds at the
        # other horizons with the form kept. The same origins for every scope, to reconcile them.
        folds: dict[tuple[str, str], dict[int, list[Fold]]] = {}
        trend: dict[tuple[str, str], bool | None] = {}
        for key in fitted:
            usage, month_start = pairs[key]
            damped = None
            if with_backtest:
                tried = {
                    d: backtest_folds(usage, month_start, d, CHOOSE_BY_HORIZON, months=months)
                    for d in (False, True)
                }
                damped = _chosen({d: mape(f) for d, f in tried.items()})
                folds[key] = {CHOOSE_BY_HORIZON: tried[bool(damped)]} | {
                    h: backtest_folds(
                        usage, month_start, bool(damped), h, FOLDS.get(h, BACKTEST_FOLDS), months
                    )
                    for h in BACKTEST_HORIZONS
                    if h != CHOOSE_BY_HORIZON
                }
            trend[key] = damped
        recent = {
            key: float(pairs[key][0].iloc[-SHARE_DAYS:].sum() + pairs[key][1].iloc[-SHARE_DAYS:].sum())
            for key in fitted
        }
        teams = [k for k in fitted if k[0] == "team"]

        # Backtest of the reconciled forecasts: MAPE, and coverage out of fold (each fold's days
        # against the factor the other folds' scores give); every fold's scores set the factor
        # the published forecast takes for that horizon.
        factors: dict[tuple[str, str], dict[int, float]] = {k: {} for k in fitted}
        for h in BACKTEST_HORIZONS if with_backtest else ():
            n = len(folds[("total", "all")][h])
            by_fold = [
                reconcile(folds[("total", "all")][h][j].base, {k: folds[k][h][j].base for k in teams}, recent)
                for j in range(n)
            ]
            for key in fitted:
                rows = [
                    Fold(h, folds[key][h][j].cut, by_fold[j][key], folds[key][h][j].actual) for j in range(n)
                ]
                fold_scores = [scores(f.base, f.actual, interval) for f in rows]
                inside, seen = 0, 0
                for j, f in enumerate(rows):
                    others = np.concatenate([s for i, s in enumerate(fold_scores) if i != j] or [np.zeros(0)])
                    factor = conformal_factor(others, interval) if len(others) else 1.0
                    inside += int(covered(f.base, f.actual, interval, factor).sum())
                    seen += len(f.actual)
                if n:
                    factors[key][h] = conformal_factor(np.concatenate(fold_scores), interval)
                if (key[0], key[1], currency) in wanted:
                    accuracy.append(
                        Accuracy(key[0], key[1], currency, h, n, mape(rows), inside / seen if seen else None)
                    )
        finals = {}
        for key in fitted:
            usage, month_start = pairs[key]
            days, finals[key] = fit_base(usage, month_start, horizon, months, damped=trend[key])
        finals = reconcile(finals[("total", "all")], {k: finals[k] for k in teams}, recent)
        for kind, value, c in scopes:
            if c != currency:
                continue
            if (kind, value) in finals:
                base = finals[(kind, value)].calibrated(_factors(factors[(kind, value)], horizon))
                usage, month_start = pairs[(kind, value)]
                damped = trend[(kind, value)]
            elif series[kind].get((value, currency)) is None:
                skipped.append(f"{kind}:{value} ({currency}): no billed day")
                continue
            else:
                # A service or account: its share of the last days of the reconciled total.
                usage, month_start = series[kind][(value, currency)]
                total = finals[("total", "all")].calibrated(_factors(factors[("total", "all")], horizon))
                mine = float(usage.iloc[-SHARE_DAYS:].sum() + month_start.iloc[-SHARE_DAYS:].sum())
                share = mine / recent[("total", "all")] if recent[("total", "all")] else 0.0
                base = Base(total.point * share, total.paths * share, total.floor * share, total.plan * share)
                damped = trend[("total", "all")]
            lower, upper = base.interval(interval)
            so_far = float(
                usage[usage.index.date >= month_first].sum()
                + month_start[month_start.index.date >= month_first].sum()
            )
            label = "damped" if damped else "linear" if damped is False else "by AIC"
            plan = base.plan
            out.append(
                ScopeForecast(
                    kind,
                    value,
                    currency,
                    days,
                    base.point + plan,
                    lower + plan,
                    upper + plan,
                    base.paths + plan[:, None],
                    so_far,
                    interval,
                    label,
                )
            )
    order = {s: i for i, s in enumerate(scopes)}
    out.sort(key=lambda f: order[(f.scope_kind, f.scope_value, f.currency)])
    accuracy.sort(key=lambda a: (order[(a.scope_kind, a.scope_value, a.currency)], a.horizon_days))
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
