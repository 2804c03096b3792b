"""The report's "Unit economics" section: per model, week by week, what a run, a GPU-hour used and a
million training samples cost (the warehouse view `unit_economics_weekly`, per model and class), so
that a move to another GPU can be judged after the fact: a GPU-hour on H100 costs more, a million
samples should cost less.

The figures are sums of the view over its classes (`sql/report/unit_economics.sql`), divided here:
per week for the trend chart, over the period for the table. A run without a cost (neither
allocated on a shared cluster nor tagged in the bill) is counted, not priced.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import duckdb
from markupsafe import Markup

from athanor.publish import charts
from athanor.publish.queries import report_rows

# The models the chart draws, the costliest first (a legend of more is unreadable).
CHART_MODELS = 6
RATIOS = {
    "usd_per_run": ("cost_usd", "costed_runs", 1.0),
    "usd_per_gpu_hour": ("cost_usd", "gpu_hours", 1.0),
    "usd_per_million_samples": ("cost_of_sampled_runs_usd", "samples", 1e6),
}


def _ratio(row: dict[str, Any], name: str) -> float | None:
    top, bottom, scale = RATIOS[name]
    numerator, denominator = row.get(top), row.get(bottom)
    if numerator is None or not denominator:
        return None
    return float(numerator) / (float(denominator) / scale)


@dataclass(frozen=True)
class UnitEconomics:
    start: date
    end: date  # a Monday: the weeks shown end before it
    weekly: list[dict[str, Any]]  # one per week and model: the view's sums
    models: list[dict[str, Any]] = field(default_factory=list)  # one per model: the period's sums + ratios

    @property
    def has_data(self) -> bool:
        return any(r["costed_runs"] for r in self.weekly)

    @property
    def weeks(self) -> list[date]:
        return sorted({r["week"] for r in self.weekly})

    def trend(self, ratio: str) -> dict[str, list[float | None]]:
        """Model -> the ratio week by week (None: no costed run that week), the costliest models first."""
        by = {(r["week"], r["model"]): _ratio(r, ratio) for r in self.weekly}
        names = [m["model"] for m in self.models if m["costed_runs"]][:CHART_MODELS]
        return {m: [by.get((w, m)) for w in self.weeks] for m in names}

    def indexed(self, ratio: str) -> dict[str, list[float | None]]:
        """The trend of `ratio` per model as a share of the model's first week with a figure, x 100:
        models whose costs differ by orders of magnitude (a 70B LLM's million samples against a
        vision model's) on one scale, each line saying how its own cost moved."""
        out = {}
        for model, values in self.trend(ratio).items():
            first = next((v for v in values if v), None)
            if first is not None:
                out[model] = [None if v is None else 100.0 * v / first for v in values]
        return out

    def chart(self) -> Markup | None:
        """The weekly trend per model: $ per million samples where runs log throughput, else $ per
        GPU-hour, each model's first week = 100 (the table gives the dollars)."""
        series = self.indexed("usd_per_million_samples")
        what = "Cost per million samples"
        if not series:
            series = self.indexed("usd_per_gpu_hour")
            what = "Cost per GPU-hour"
        if not series:
            return None
        return charts.line_chart(
            "chart-unit-economics",
            [f"{w:%d %b}" for w in self.weeks],
            series,
            title=f"{what} by model, weekly (each model's first week = 100)",
            y_format=lambda v: f"{v:,.0f}",
            x_title="Week (Monday, UTC, of the runs' start)",
            y_title="Index (first week = 100)",
        )


def load_unit_economics(con: duckdb.DuckDBPyConnection, start: date, end: date) -> UnitEconomics:
    """The section's figures for the whole weeks within [start, end): a week still under way (the
    run's own) holds only the runs that finished in its first days, a figure unlike the others."""
    end = end - timedelta(days=end.weekday())  # the Monday on or before end: weeks before it are whole
    weekly = report_rows(con, "unit_economics", {"start": start, "end": end})
    totals: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(float))
    for r in weekly:
        t = totals[r["model"]]
        for k in ("runs", "costed_runs", "allocated_runs", "tagged_runs", "cost_usd", "gpu_hours", "samples"):
            t[k] += float(r[k] or 0)
        t["cost_of_sampled_runs_usd"] += float(r["cost_of_sampled_runs_usd"] or 0)
    models = []
    for model, t in totals.items():
        row = {"model": model, **{k: v for k, v in t.items()}}
        row["runs"], row["costed_runs"] = int(row["runs"]), int(row["costed_runs"])
        row.update({name: _ratio(row, name) for name in RATIOS})
        models.append(row)
    models.sort(key=lambda m: -m["cost_usd"])
    return UnitEconomics(start, end, weekly, models)
