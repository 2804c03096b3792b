"""Which fitted quantiles the data support, and how an unsupported one is published.

A fitted model can be evaluated anywhere, but the data say nothing about durations beyond the
longest time any job of the group was watched: its longest completed run, or, for a censored
run (preempted, cancelled, still running), the end of its observation. A censored-MLE fit of a
heavily censored group extrapolates its tail into that void (on the Alibaba GPU trace, a p99
of millions of days for a class whose longest run was 145 days), and the KS check cannot
object, since it only compares the curves over the observed range. So a quantile above that
limit is published as "> N days (beyond the data)", never as a number, by every surface: the
CLI's table, duration_fits.csv and the report all take it from `published_quantiles`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from athanor.model.durations.distributions import QUANTILES
from athanor.model.durations.sample import MIN_DURATION_S

# The names the records, the warehouse and the CSV give QUANTILES (p50_s, p50_beyond_data, ...).
QUANTILE_NAMES = tuple(f"p{round(100 * q)}" for q in QUANTILES)
# Above this share of censored runs the fit rests more on the model than on observed ends.
MOSTLY_CENSORED = 0.5
DAY_S = 86400.0


def data_limit_s(duration_s: np.ndarray) -> float:
    """The longest time a job was watched (completed or censored), floored as the fit floors."""
    return float(np.max(np.maximum(np.asarray(duration_s, dtype=float), MIN_DURATION_S)))


def beyond_data(record: Mapping[str, Any]) -> list[str]:
    """The quantile names (p50, p90, p99) whose fitted value exceeds the record's data limit.

    A record without a limit (stored before the limit was kept) has none flagged.
    """
    limit = record.get("data_limit_s")
    if limit is None:
        return []
    out = []
    for name in QUANTILE_NAMES:
        value = record.get(f"{name}_s")
        if value is not None and (not math.isfinite(value) or value > limit):
            out.append(name)
    return out


def beyond_text(limit_s: float) -> str:
    """'> 145 days (beyond the data)': the limit rounded down, so the statement stays true."""
    if limit_s >= 2 * DAY_S:
        amount = f"{math.floor(limit_s / DAY_S):,} days"
    elif limit_s >= DAY_S:
        amount = "1 day"
    elif limit_s >= 3600.0:
        amount = f"{math.floor(limit_s / 3600.0)} h"
    else:
        amount = f"{math.floor(limit_s)} s"
    return f"> {amount} (beyond the data)"


def censored_note(n: int, censored: int) -> str | None:
    """A note for a group with more than half its runs censored, else None."""
    if not n or censored / n <= MOSTLY_CENSORED:
        return None
    return (
        f"{censored:,} of {n:,} runs censored ({100 * censored / n:.0f} %): the fit's tail "
        "rests on the model more than on runs seen to end"
    )


def published_quantiles(record: Mapping[str, Any]) -> dict[str, Any]:
    """What every surface publishes of a record's quantiles.

    ``{name}_s``: the fitted value, or None when it is beyond the data; ``{name}_beyond_data``:
    the flag; ``{name}_text``: None, or the "> N days (beyond the data)" wording.
    """
    flagged = set(beyond_data(record))
    limit = record.get("data_limit_s")
    out: dict[str, Any] = {}
    for name in QUANTILE_NAMES:
        beyond = name in flagged
        out[f"{name}_s"] = None if beyond else record.get(f"{name}_s")
        out[f"{name}_beyond_data"] = beyond
        out[f"{name}_text"] = beyond_text(limit) if beyond else None
    return out
