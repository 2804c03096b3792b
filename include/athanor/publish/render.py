"""The report page: ReportData -> one self-contained HTML file (inline CSS, SVG and JS)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from athanor.publish import charts, gpu_section
from athanor.publish.artifacts import published
from athanor.publish.data import (
    AGE_BANDS,
    MAX_DURATION_GROUPS,
    SPEND_DIMENSIONS,
    WEEKS,
    DurationGroup,
    ReportData,
)

TOP_LABELS = 7  # series per spend chart; the rest are summed into "Other"
HOURS_48_LOG10 = math.log10(48.0)
# Duration histograms share one axis: log10(hours) from 36 s to 1,000 h, quarter-decade bins.
LOG_H_LO, LOG_H_HI, LOG_H_STEP = -2.0, 3.0, 0.25
DURATION_TICKS = (
    (math.log10(1 / 60), "1 min"),
    (math.log10(10 / 60), "10 min"),
    (0.0, "1 h"),
    (math.log10(6), "6 h"),
    (math.log10(24), "1 d"),
    (math.log10(24 * 7), "1 wk"),
    (math.log10(24 * 30), "30 d"),
)
DIMENSION_TITLES = {
    "pricing_category": "pricing category",
    "team": "team (tag)",
    "instance_family": "instance family",
    "service": "service",
}
PRICING_LABELS = {"Standard": "Standard (on-demand)", "Dynamic": "Dynamic (spot)", "Committed": "Committed"}
# One EBS action's verb (`lifecycle.policy.plan_ebs` kinds), as the storage table lists them.
EBS_ACTION_LABELS = {
    "move-to-s3": "move its data to S3 Intelligent-Tiering",
    "snapshot-then-delete": "snapshot, then delete the volume",
    "delete-volume": "delete the volume",
    "delete-snapshot": "delete the snapshot",
}
OPTION_LABELS = {
    "reserved": "Reserved instances (held and new)",
    "savings_plan": "Savings plans",
    "spot": "Spot",
    "on_demand": "On-demand",
    "committed": "Commitments the bill does not name",
    "other": "Other",
}


# ---------------------------------------------------------------- formatting


def money(value: float | None, cents: bool = False, currency: str = "USD") -> str:
    """$12,345 (or -$1,234); other currencies by their code: EUR 12,345. An em dash when unknown."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    prefix = "$" if currency == "USD" else f"{currency} "
    text = f"{prefix}{abs(value):,.2f}" if cents else f"{prefix}{abs(value):,.0f}"
    return f"-{text}" if round(value, 2 if cents else 0) < 0 else text


def percent(value: float | None, digits: int = 1) -> str:
    """A value already in percent: 12.3 %."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.{digits}f} %"


def fraction(value: float | None, digits: int = 1) -> str:
    """A fraction shown as a percentage: 0.123 -> 12.3 %."""
    return "—" if value is None else percent(100.0 * value, digits)


def signed_percent(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:+.1f} %"


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 72 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def gigabytes(size_bytes: float | None) -> str:
    if size_bytes is None:
        return "—"
    gb = size_bytes / 1e9
    return f"{gb:,.1f} GB" if gb < 10_000 else f"{gb / 1000:,.1f} TB"


def tebibytes(size_gib: float | None) -> str:
    """An EBS size as AWS states it, in GiB: 512 GiB, or 4.0 TiB from 1,024 GiB on."""
    if size_gib is None:
        return "—"
    return f"{size_gib:,.0f} GiB" if size_gib < 1024 else f"{size_gib / 1024:,.1f} TiB"


def number(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def sort_key(value: Any) -> str:
    """data-sort attribute of a numeric cell (missing values sort first), rounded as the JSON
    and CSV files are, so the page too comes out byte for byte the same from the same input."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-Infinity"
    return repr(published(float(value)))


# ---------------------------------------------------------------- charts


@dataclass(frozen=True)
class Chart:
    id: str
    svg: Markup


def _weeks(data: ReportData) -> list[date]:
    weeks, week = [], data.windows.weeks_start
    while week <= data.as_of:
        weeks.append(week)
        week += timedelta(weeks=1)
    return weeks


def week_label(week: date, as_of: date) -> str:
    """'Nov 23'; the week the report's day falls in says how much of it there is: 'Nov 30 (1 day)'."""
    days = (as_of - week).days + 1
    text = week.strftime("%b %d")
    return text if days >= 7 else f"{text} ({days} day{'s' if days > 1 else ''})"


def partial_week_days(data: ReportData) -> int | None:
    """Days of the last week shown, when it is not a whole week yet."""
    days = data.as_of.weekday() + 1  # Monday to the report's day, both included
    return days if days < 7 else None


def commitment_label(commitment: Any) -> str:
    """A commitment as a reader knows it: its name, or for a bare ARN its type, short id and account."""
    name = commitment.name or ""
    if name and not name.startswith("arn:"):
        return name
    arn = commitment.commitment_discount_id or name
    parts = arn.split(":")
    if len(parts) >= 6 and parts[0] == "arn":
        account, resource = parts[4], parts[5]
        short = resource.rsplit("/", 1)[-1][:8]
        kind = commitment.type or resource.split("/", 1)[0].replace("-", " ")
        return f"{kind} {short}… (account {account})" if account else f"{kind} {short}…"
    return arn or "—"


def is_synthetic(scenario: str) -> bool:
    """A backtest on generated demand (`backtest_synthetic`), not on the warehouse's own pools."""
    from athanor.recommend.backtest_synthetic import SYNTHETIC_SCENARIOS

    return scenario.startswith("synthetic:") or scenario in SYNTHETIC_SCENARIOS


def spend_charts(data: ReportData) -> list[Chart]:
    """One stacked weekly chart per spend dimension (top labels, the rest as Other), and per
    billing currency when there are several: a bar never stacks two currencies."""
    if not data.weekly_spend:
        return []
    currencies = sorted({row.currency for row in data.weekly_spend})
    return [
        chart
        for currency in currencies
        for chart in _spend_charts(data, currency, suffix="" if len(currencies) == 1 else currency)
    ]


def _spend_charts(data: ReportData, currency: str, suffix: str) -> list[Chart]:
    weeks = _weeks(data)
    index = {w: i for i, w in enumerate(weeks)}
    out = []
    for dimension in SPEND_DIMENSIONS:
        by_label: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(weeks))
        for row in data.weekly_spend:
            if row.currency == currency and row.dimension == dimension and row.week in index:
                by_label[row.label][index[row.week]] += row.cost
        # A label that cost nothing in any week (a line kind with zero cost) has nothing to show.
        ranked = sorted((k for k in by_label if any(by_label[k])), key=lambda k: (-sum(by_label[k]), k))
        series: dict[str, list[float]] = {}
        for label in ranked[:TOP_LABELS]:
            name = PRICING_LABELS.get(label, label) if dimension == "pricing_category" else label
            series[name] = by_label[label]
        if len(ranked) > TOP_LABELS:
            series["Other"] = [sum(by_label[k][i] for k in ranked[TOP_LABELS:]) for i in range(len(weeks))]
        chart_id = f"chart-spend-{dimension}" + (f"-{suffix.lower()}" if suffix else "")
        title = f"Weekly spend by {DIMENSION_TITLES[dimension]}" + (f", {suffix}" if suffix else "")
        out.append(
            Chart(
                chart_id,
                charts.stacked_bars(
                    chart_id,
                    [week_label(w, data.as_of) for w in weeks],
                    series,
                    title=title,
                    y_format=lambda v, currency=currency: money(v, currency=currency),
                    x_title="Week starting Monday (UTC)",
                    y_title=f"Effective cost ({currency})",
                ),
            )
        )
    return out


def commitment_chart(data: ReportData) -> Chart | None:
    if not any(w.utilisation is not None or w.coverage is not None for w in data.commitment_weeks):
        return None
    weeks = sorted({w.week for w in data.commitment_weeks})
    currencies = sorted({w.currency for w in data.commitment_weeks})

    def pct(v: float | None) -> float | None:
        return None if v is None else 100.0 * v

    # Utilisation is a ratio of money, so one line per billing currency when there are several.
    series: dict[str, list[float | None]] = {}
    for currency in currencies:
        by_week = {w.week: w for w in data.commitment_weeks if w.currency == currency}
        suffix = f" ({currency})" if len(currencies) > 1 else ""
        for name in ("utilisation", "coverage"):
            series[name + suffix] = [
                pct(getattr(by_week[week], name)) if week in by_week else None for week in weeks
            ]
    return Chart(
        "chart-commitments",
        charts.line_chart(
            "chart-commitments",
            [week_label(week, data.as_of) for week in weeks],
            series,
            title="Commitment utilisation and coverage per week",
            y_format=lambda v: f"{v:.0f} %",
            y_max=100.0,
            x_title="Week starting Monday (UTC)",
            y_title="Share (%)",
        ),
    )


def backtest_chart(data: ReportData, synthetic: bool = False) -> Chart | None:
    """Total cost by policy over the scored months: the warehouse's own pools (the real
    backtest), or with `synthetic` the generated demand shapes, never the two added together."""
    rows = [r for r in data.backtest if is_synthetic(r.scenario) == synthetic]
    if not rows:
        return None
    totals: dict[str, float] = defaultdict(float)
    for row in rows:
        totals[row.policy] += row.cost_usd  # USD: the backtest prices the USD billing
    policies = sorted(totals, key=lambda p: (p != "on_demand", p))
    months = max(r.months for r in rows)
    scenarios = len({r.scenario for r in rows})
    chart_id = "chart-backtest-synthetic" if synthetic else "chart-backtest"
    title = (
        f"Synthetic scenarios (generated demand, not your bill): {scenarios} shapes, total cost by policy"
        if synthetic
        else f"Backtest on your {scenarios} pools, {months} scored month{'s' if months != 1 else ''}: total cost by policy"
    )
    return Chart(
        chart_id,
        charts.stacked_bars(
            chart_id,
            policies,
            {"total cost over the scored months": [totals[p] for p in policies]},
            title=title,
            y_format=money,
            x_title="Commitment policy",
            y_title="Cost over the scored months (USD)",
        ),
    )


def fitted_log_density(group: DurationGroup, log10_h: np.ndarray) -> np.ndarray | None:
    """The fitted density over log10(hours): f(x)·x·ln 10 with x in seconds; None if unknown."""
    from athanor.model.durations import model_pdf

    x_s = 3600.0 * np.power(10.0, log10_h)
    try:
        pdf = np.asarray(model_pdf(group.family, group.params, x_s), dtype=float)
    except (KeyError, ValueError, TypeError):
        return None
    return pdf * x_s * math.log(10)


def duration_chart(index: int, group: DurationGroup) -> Chart:
    edges = np.arange(LOG_H_LO, LOG_H_HI + LOG_H_STEP / 2, LOG_H_STEP)
    stacks: dict[str, list[float]] = {}
    if group.durations_s:
        hours = np.maximum(np.asarray(group.durations_s, dtype=float), 1.0) / 3600.0
        # Durations outside the axis are counted in its end bins rather than dropped.
        u = np.clip(np.log10(hours), LOG_H_LO, LOG_H_HI - 1e-9)
        censored = np.asarray(group.censored_flags, dtype=bool)
        scale = 1.0 / (u.size * LOG_H_STEP)  # density per log10(hour), comparable with the curve
        stacks["completed"] = list(np.histogram(u[~censored], bins=edges)[0] * scale)
        stacks["censored"] = list(np.histogram(u[censored], bins=edges)[0] * scale)
    grid = np.linspace(LOG_H_LO, LOG_H_HI, 201)
    density = fitted_log_density(group, grid)
    chart_id = f"chart-durations-{index}"
    return Chart(
        chart_id,
        charts.histogram(
            chart_id,
            list(edges),
            stacks,
            title=f"{group.group_key}: {group.n:,} jobs, fitted {group.family}",
            curve=None if density is None else (list(grid), list(density)),
            curve_label=f"fitted {group.family}",
            x_ticks=DURATION_TICKS,
            markers=((HOURS_48_LOG10, "48 h"),),
            y_format=lambda v: f"{v:.2f}",
            frame=charts.Frame(width=560, height=280),
            x_title="Job duration (log scale)",
            y_title="Density per log10(hours)",
        ),
    )


def storage_chart(data: ReportData) -> Chart | None:
    if not data.storage:
        return None
    bands = [b for b in AGE_BANDS if any(c.age_band == b for c in data.storage)]
    classes = sorted({c.storage_class for c in data.storage})
    series = {k: [0.0] * len(bands) for k in classes}
    for cell in data.storage:
        series[cell.storage_class][bands.index(cell.age_band)] += cell.size_bytes / 1e9
    return Chart(
        "chart-storage",
        charts.stacked_bars(
            "chart-storage",
            bands,
            series,
            title="Checkpoint storage by age and storage class (GB)",
            y_format=lambda v: f"{v:,.0f} GB",
            x_title="Age of the object version",
            y_title="Stored (GB)",
        ),
    )


# ---------------------------------------------------------------- page


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("athanor.publish", "templates"),
        autoescape=True,  # every value from the warehouse is escaped; charts arrive as Markup
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        money=money,
        percent=percent,
        fraction=fraction,
        signed_percent=signed_percent,
        duration=duration,
        gigabytes=gigabytes,
        tebibytes=tebibytes,
        number=number,
        sort_key=sort_key,
    )
    return env


def dq_status(data: ReportData) -> str:
    """'pass', 'warn' (only non-error rules failed), 'fail' (or a bill stopped arriving), or 'none'
    (no results yet)."""
    if data.spend_watch and data.spend_watch.stale:
        return "fail"  # every check passed on what arrived: what did not arrive is the failure
    if not data.dq:
        return "none"
    failed = data.dq_failed
    if not failed:
        return "pass"
    if all((r.severity or "error").lower() in ("warning", "warn", "info") for r in failed):
        return "warn"
    return "fail"


def dq_passed_by_suite(data: ReportData) -> list[tuple[str, int, int]]:
    """(suite, checks passed, checks run) per suite, by name: the page lists the failures and
    counts the passes (thousands of rows of "pass" hid the few that failed); data_quality.csv
    keeps every check."""
    passed: dict[str, int] = defaultdict(int)
    run: dict[str, int] = defaultdict(int)
    for r in data.dq or []:
        suite = r.suite or "(no suite)"
        run[suite] += 1
        passed[suite] += r.success
    return [(suite, passed[suite], run[suite]) for suite in sorted(run)]


def render_html(data: ReportData) -> str:
    """The whole report page as one HTML string."""
    durations = [duration_chart(i, g) for i, g in enumerate(data.durations[:MAX_DURATION_GROUPS])]
    backtest_policies = sorted({r.policy for r in data.backtest}, key=lambda p: (p != "on_demand", p))
    backtest_table: dict[str, dict[str, Any]] = defaultdict(dict)
    # The real backtest (the warehouse's pools) first, the synthetic scenarios after it.
    for row in sorted(data.backtest, key=lambda r: (is_synthetic(r.scenario), r.scenario)):
        backtest_table[row.scenario][row.policy] = row
    dq_rows = sorted(data.dq_failed, key=lambda r: ((r.severity or ""), r.rule))
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            data=data,
            weeks=WEEKS,
            spend_charts=spend_charts(data),
            commitment_chart=commitment_chart(data),
            backtest_chart=backtest_chart(data),
            synthetic_chart=backtest_chart(data, synthetic=True),
            is_synthetic=is_synthetic,
            commitment_label=commitment_label,
            partial_week_days=partial_week_days(data),
            attribution=data.mix_attribution,
            option_labels=OPTION_LABELS,
            ebs_verbs=EBS_ACTION_LABELS,
            backtest_policies=backtest_policies,
            backtest_table=dict(backtest_table),
            duration_charts=durations,
            storage_chart=storage_chart(data),
            gpu_unit_cost_chart=gpu_section.unit_cost_chart(),
            gpu_price_age=gpu_section.price_age(data.as_of),
            gpu_frontiers=gpu_section.frontier_charts(data.gpu_plan),
            dq_status=dq_status(data),
            dq_rows=dq_rows,
            dq_passed=dq_passed_by_suite(data),
            storage_total=next((r for r in data.recommendations if r.kind == "storage"), None),
            mix_total=next((r for r in data.recommendations if r.kind == "mix"), None),
        )
    )
