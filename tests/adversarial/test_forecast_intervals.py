"""Every forecast interval contains its own point forecast.

A scope billed on one day of ninety (a team's single transfer charge) has a model whose mean is
below zero on many days: the paths are raised to the floor (no negative usage cost), and so
must the point be, by the same lift, or the interval of a month's sum lies wholly above it
(16 of 60 such intervals did).
"""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from athanor.watch.forecast import ScopeForecast, fit_forecast

DAYS = pd.date_range("2026-09-01", "2026-11-30", freq="D")


@pytest.mark.parametrize("billed", ["2026-10-10", "2026-11-01", "2026-11-25"])
def test_a_one_day_scope_has_every_interval_around_its_point(billed: str) -> None:
    usage = pd.Series(0.0, index=DAYS)
    usage[billed] = 500.0
    days, point, lower, upper, paths = fit_forecast(usage, pd.Series(0.0, index=DAYS), 60, 0.8)
    assert ((lower <= point) & (point <= upper)).all()
    forecast = ScopeForecast("team", "x", "USD", days, point, lower, upper, paths, 0.0, 0.8)
    first = days[0].date()
    for k in range(60):
        cost, low, high = forecast.total(first, first + timedelta(days=k))
        assert low <= cost <= high, (k, low, cost, high)
