"""The report's GPU section: the catalog's unit cost ($/TFLOPS-day) ranked, and per workload class
the configuration it runs on, the one the plan recommends and the cost-time frontier between them.

The plan is read from `gpu_plan` (written by the nightly `recommend_gpus` stage); the ranking
from the reference catalog itself, each type in its reference region.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date

import duckdb
from markupsafe import Markup

from athanor.publish import charts
from athanor.reference.gpus import PriceAge
from athanor.warehouse import sql

# Frontier charts drawn: the classes the plan moves, the biggest saving first.
MAX_FRONTIER_CHARTS = 6
FRONTIER_HOURS_SHOWN = 3.0


@dataclass(frozen=True)
class FrontierPoint:
    instance_type: str
    instance_count: int
    gpus: int
    region: str
    hours_per_run: float
    cost_per_run_usd: float
    kgco2e_per_run: float | None

    @property
    def label(self) -> str:
        return f"{self.instance_count} x {self.instance_type}"


@dataclass(frozen=True)
class GpuPlanRow:
    """One class of the plan (sql/report/gpu_plan.sql)."""

    job_class: str
    team: str | None
    phase: str | None
    runs: int
    runs_per_month: float | None
    current_instance_type: str
    current_instance_count: int
    current_gpus: int | None
    recommended_instance_type: str | None
    recommended_instance_count: int | None
    recommended_gpus: int | None
    recommended_region: str | None
    memory_required_gib: float | None
    memory_basis: str | None
    scaling_bound: str | None
    scaling_alpha: float | None
    scaling_basis: str | None
    hours_per_run_current: float | None
    hours_per_run_recommended: float | None
    cost_per_run_current_usd: float | None
    cost_per_run_recommended_usd: float | None
    monthly_savings_usd: float | None
    kgco2e_per_run_current: float | None
    kgco2e_per_run_recommended: float | None
    greener_option: str | None
    purchase: str | None
    deadline_slack: float
    reason: str
    frontier: tuple[FrontierPoint, ...] = ()
    # A move across GPU models: the speed-up it rests on (fleet | benchmark | datasheet), its
    # range, where the move stops saving, and whether the plan counts it.
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    speedup_source: str | None = None
    break_even_speedup: float | None = None
    monthly_savings_low_usd: float | None = None
    monthly_savings_high_usd: float | None = None
    benchmark_first: bool = False
    counted: bool = False

    @property
    def current(self) -> str:
        return f"{self.current_instance_count} x {self.current_instance_type}"

    @property
    def recommended(self) -> str | None:
        if self.recommended_instance_type is None:
            return None
        return f"{self.recommended_instance_count} x {self.recommended_instance_type}"

    @property
    def moves(self) -> bool:
        return self.recommended is not None and self.recommended != self.current


def _frontier(text: str | None) -> tuple[FrontierPoint, ...]:
    try:
        points = json.loads(text) if text else []
    except ValueError:
        return ()
    return tuple(
        FrontierPoint(
            instance_type=str(p["instance_type"]),
            instance_count=int(p["instance_count"]),
            gpus=int(p["gpus"]),
            region=str(p["region"]),
            hours_per_run=float(p["hours_per_run"]),
            cost_per_run_usd=float(p["cost_per_run_usd"]),
            kgco2e_per_run=None if p.get("kgco2e_per_run") is None else float(p["kgco2e_per_run"]),
        )
        for p in points
        if isinstance(p, dict)
    )


def load_gpu_plan(con: duckdb.DuckDBPyConnection, as_of: date, run_id: str) -> list[GpuPlanRow]:
    """The plan of run `run_id` (else the latest one as of `as_of`); empty without a gpu_plan table."""
    found = con.execute(
        "select count(*) from duckdb_tables() where table_name = 'gpu_plan' and schema_name = current_schema()"
    ).fetchone()
    if not found or not found[0]:
        return []
    cur = con.execute(sql("report/gpu_plan"), {"as_of": as_of, "run_id": run_id})
    columns = [d[0] for d in cur.description or []]
    rows = [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]
    return [GpuPlanRow(**{**r, "frontier": _frontier(r["frontier"])}) for r in rows]


def price_age(as_of: date) -> PriceAge:
    """How old the catalogue's GPU prices are on the report's day ('prices as of ..., N days old')."""
    from athanor.reference import gpus

    return gpus.price_age(as_of)


def unit_cost_chart() -> Markup | None:
    """Every priced GPU type with a dense FP16 figure, in its reference region, cheapest first."""
    from athanor.reference import gpus

    ranked = [r for r in gpus.catalog_records() if r["usd_per_tflops_day"] is not None]
    if not ranked:
        return None
    return charts.ranked_bars(
        "chart-gpu-unit-cost",
        [f"{r['instance_type']} ({r['gpus']} x {r['gpu_model']}, {r['region']})" for r in ranked],
        [float(r["usd_per_tflops_day"]) for r in ranked],  # type: ignore[arg-type]
        [str(r["provider"]) for r in ranked],
        title="$ per dense FP16 TFLOPS-day, on demand",
        x_format=lambda v: f"${v:.3f}",
        label_width=340,
        width=900,
    )


def frontier_charts(plan: list[GpuPlanRow]) -> list[tuple[GpuPlanRow, Markup]]:
    """(class, chart) for the classes the plan moves, the biggest monthly saving first."""
    out = []
    for row in [r for r in plan if r.moves and r.frontier][:MAX_FRONTIER_CHARTS]:
        marked = []
        if row.hours_per_run_current is not None and row.cost_per_run_current_usd is not None:
            marked.append((row.hours_per_run_current, row.cost_per_run_current_usd, f"now: {row.current}"))
        if row.hours_per_run_recommended is not None and row.cost_per_run_recommended_usd is not None:
            marked.append(
                (row.hours_per_run_recommended, row.cost_per_run_recommended_usd, f"plan: {row.recommended}")
            )
        # The frontier runs on to very slow configurations (one small GPU for a 64-GPU job): the
        # chart keeps the part a reader would consider, up to FRONTIER_HOURS_SHOWN x the slower mark.
        horizon = FRONTIER_HOURS_SHOWN * max((m[0] for m in marked), default=0.0)
        shown = [p for p in row.frontier if not marked or p.hours_per_run <= horizon]
        chart_id = f"chart-gpu-frontier-{len(out)}"
        out.append(
            (
                row,
                charts.frontier_chart(
                    chart_id,
                    [(p.hours_per_run, p.cost_per_run_usd, f"{p.label} ({p.region})") for p in shown],
                    marked,
                    title=row.job_class,
                    y_format=lambda v: f"${v:,.0f}",
                    x_format=lambda v: f"{v:,.0f} h" if v >= 10 else f"{v:,.1f} h",
                    frame=charts.Frame(width=560, height=260, right=36),
                ),
            )
        )
    return out
