"""The report's "GPU utilisation" section: busy, idle and unobserved GPU-hours of the report's period,
the idle cost by team, a day-by-hour heat map of busy share, the idle and underused GPUs, and the
GPUs' energy (which share measured, which modelled) and carbon per team and workload class.

Everything is read from `gpu_usage_hourly` (written by the nightly `measure_gpus` stage) over the
report's 30-day period and summed by `sql/marts/gpu_usage_groups.sql`, so each figure is a
warehouse query away (tests/unit/test_gpu_usage.py reconciles them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import duckdb
from markupsafe import Markup

from athanor.publish import charts
from athanor.warehouse import sql

HEAT_COLOUR = (0, 114, 178)  # the palette's blue: busy share 1 is full colour, 0 is white


@dataclass(frozen=True)
class UsageGroup:
    """One team x workload class x instance type of the period (sql/marts/gpu_usage_groups.sql)."""

    team: str
    job_class: str
    instance_type: str
    paid_gpu_hours: float | None
    gpu_hours: float
    observed_gpu_hours: float
    busy_gpu_hours: float
    idle_gpu_hours: float
    unobserved_gpu_hours: float
    idle_cost_usd: float | None
    mean_utilisation: float | None
    mean_memory_used_gib: float | None


@dataclass(frozen=True)
class GpuUsage:
    start: datetime
    end: datetime
    totals: dict[str, Any]
    groups: list[UsageGroup]
    idle_cost_by_team: dict[str, dict[str, float]]  # team -> instance type -> USD
    busy_share: dict[date, dict[int, float]]  # day -> hour of day -> busy / observed
    unpriced_idle_gpu_hours: float
    rule: str
    teams: list[str] = field(default_factory=list)
    # Energy and carbon (sql/marts/gpu_energy_groups.sql): the totals, per team, per workload class.
    energy: dict[str, Any] = field(default_factory=dict)
    energy_by_team: list[dict[str, Any]] = field(default_factory=list)
    energy_by_class: list[dict[str, Any]] = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        return bool(self.groups)

    def idle_chart(self) -> Markup | None:
        if not any(v for per in self.idle_cost_by_team.values() for v in per.values()):
            return None
        teams = sorted(self.idle_cost_by_team, key=lambda t: -sum(self.idle_cost_by_team[t].values()))
        types = sorted({k for per in self.idle_cost_by_team.values() for k in per})
        return charts.stacked_bars(
            "chart-gpu-idle-cost",
            teams,
            {k: [self.idle_cost_by_team[t].get(k, 0.0) for t in teams] for k in types},
            title="Idle GPU cost by team, by instance type",
            y_format=lambda v: f"${v:,.0f}",
            x_title="Team",
            y_title="Idle cost (USD)",
        )

    def heat_map(self) -> Markup | None:
        return busy_heat_map(self.busy_share) if self.busy_share else None


def _float(v: Any) -> float | None:
    return None if v is None or v != v else float(v)


def load_gpu_usage(con: duckdb.DuckDBPyConnection, start: date, end: date) -> GpuUsage:
    """The section's figures for [start, end) (UTC days), from gpu_usage_hourly."""
    s, e = (datetime.combine(d, datetime.min.time()) for d in (start, end))
    window = {"start": s, "end": e}
    hours = "(select * from gpu_usage_hourly where hour >= $start and hour < $end)"
    total_row = con.execute(
        sql("marts/gpu_usage_groups", group_columns="'all' as scope", rows=hours), window
    ).df()
    per = con.execute(
        sql("marts/gpu_usage_groups", group_columns="team, job_class, instance_type", rows=hours), window
    ).df()
    by_team = con.execute(
        f"select team, instance_type, sum(idle_cost_usd) from {hours} where idle_cost_usd > 0 group by all",
        window,
    ).fetchall()
    heat = con.execute(
        f"""select day, hour(hour) as h, sum(busy_gpu_hours) / sum(observed_gpu_hours)
            from {hours} where observed_gpu_hours > 0 group by all""",
        window,
    ).fetchall()
    rule = con.execute(
        f"select any_value(idle_below_pct), any_value(idle_minutes), any_value(sample_cap_s) from {hours}",
        window,
    ).fetchone()
    energy = [
        [
            {k: (_float(v) if k not in ("scope", "team", "job_class") else v) for k, v in r.items()}
            for r in con.execute(sql("marts/gpu_energy_groups", group_columns=by, rows=hours), window)
            .df()
            .to_dict("records")
        ]
        for by in ("'all' as scope", "team", "job_class")
    ]
    # Measured from the first day with telemetry (measure_gpus): the period may start before it.
    first = con.execute(f"select min(day) from {hours}", window).fetchone()[0]
    if first is not None:
        s = max(s, datetime.combine(first, datetime.min.time()))
    t = total_row.iloc[0].to_dict() if len(total_row) else {}
    idle_cost: dict[str, dict[str, float]] = {}
    for team, itype, usd in by_team:
        idle_cost.setdefault(str(team), {})[str(itype)] = float(usd)
    busy: dict[date, dict[int, float]] = {}
    for day, h, share in heat:
        busy.setdefault(day, {})[int(h)] = float(share)
    below, minutes, cap = rule if rule else (None, None, None)
    words = (
        ""
        if below is None
        else f"Idle: below {below:g} % utilisation for at least {minutes:g} min in a row; a sample counts "
        f"until the next sample of its GPU, at most "
        + ("twice the GPU's median sampling interval" if cap is None else f"{cap / 60:g} min")
    )
    return GpuUsage(
        start=s,
        end=e,
        totals={k: _float(v) for k, v in t.items() if k != "scope"},
        groups=[
            UsageGroup(
                team=r.team,
                job_class=r.job_class,
                instance_type=r.instance_type,
                paid_gpu_hours=_float(r.paid_gpu_hours),
                gpu_hours=float(r.gpu_hours),
                observed_gpu_hours=float(r.observed_gpu_hours),
                busy_gpu_hours=float(r.busy_gpu_hours),
                idle_gpu_hours=float(r.idle_gpu_hours),
                unobserved_gpu_hours=float(r.unobserved_gpu_hours),
                idle_cost_usd=_float(r.idle_cost_usd),
                mean_utilisation=_float(r.mean_utilisation),
                mean_memory_used_gib=_float(r.mean_memory_used_gib),
            )
            for r in per.itertuples(index=False)
        ],
        idle_cost_by_team=idle_cost,
        busy_share=busy,
        unpriced_idle_gpu_hours=float(t.get("unpriced_idle_gpu_hours") or 0.0),
        rule=words,
        teams=sorted(idle_cost),
        energy=energy[0][0] if energy[0] else {},
        energy_by_team=sorted(energy[1], key=lambda r: -(r["energy_kwh"] or 0)),
        energy_by_class=sorted(energy[2], key=lambda r: -(r["energy_kwh"] or 0)),
    )


def _fill(share: float) -> str:
    r, g, b = (round(255 - (255 - c) * max(0.0, min(1.0, share))) for c in HEAT_COLOUR)
    return f"#{r:02x}{g:02x}{b:02x}"


def busy_heat_map(
    busy: dict[date, dict[int, float]], *, title: str = "Busy share of observed GPU time"
) -> Markup:
    """Days down, hours of the day (UTC) across; a cell's colour is its busy share, blank where
    nothing was observed."""
    days = sorted(busy)
    cell_w, cell_h = 26, 14
    frame = charts.Frame(
        width=84 + 24 * cell_w + 16, height=36 + len(days) * cell_h + 60, left=84, right=16, top=36, bottom=60
    )
    parts = charts._open("chart-gpu-busy-heat", title, frame, x_title="Hour of day (UTC)", y_title="")
    for i, day in enumerate(days):
        y = frame.top + i * cell_h
        if i % max(1, len(days) // 15) == 0:
            parts.append(
                f'<text x="{frame.left - 6}" y="{y + cell_h - 3}" class="tick" text-anchor="end">{day:%d %b}</text>'
            )
        for h, share in sorted(busy[day].items()):
            x = frame.left + h * cell_w
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell_w - 1}" height="{cell_h - 1}" fill="{_fill(share)}">'
                f"<title>{day:%Y-%m-%d} {h:02d}:00 UTC: {100 * share:.0f} % busy</title></rect>"
            )
    y_axis = frame.top + len(days) * cell_h + 14
    for h in range(0, 24, 3):
        parts.append(
            f'<text x="{frame.left + h * cell_w + cell_w / 2:.1f}" y="{y_axis}" class="tick" '
            f'text-anchor="middle">{h:02d}</text>'
        )
    # A legend of five shades: what full and empty colour mean.
    lx, ly = frame.left, frame.height - 14
    for k, share in enumerate((0.0, 0.25, 0.5, 0.75, 1.0)):
        parts.append(
            f'<rect x="{lx + k * 60}" y="{ly - 10}" width="12" height="10" fill="{_fill(share)}" stroke="#999"/>'
        )
        parts.append(f'<text x="{lx + k * 60 + 16}" y="{ly}" class="legend">{100 * share:.0f} %</text>')
    parts.append("</svg>")
    return Markup("\n".join(parts))


def period(as_of: date, days: int = 30) -> tuple[date, date]:
    """The report's period: the `days` days ending with as_of, [start, end)."""
    end = as_of + timedelta(days=1)
    return end - timedelta(days=days), end
