"""How busy the paid GPUs were: GPU samples -> busy, idle and unobserved GPU-hours, priced by the bill.

The counting is `sql/marts/gpu_usage_hourly.sql`; this module picks its window and settings,
stores it (`gpu_usage_hourly`, this module its one writer), sums it up per team, class,
instance type and day (`sql/marts/gpu_usage_groups.sql`) and turns it into recommendations:

- `idle_gpu`: per team and instance type, the idle GPU-hours of its machines and what the bill
  charged for them, a month: instances to stop (an idle shut-down after `idle_minutes`);
- `underused_gpu`: per workload class, jobs that keep most of their GPUs idle (fewer GPUs) or use
  a small part of each GPU's compute and memory (smaller GPUs or MIG slices).

Both are shown beside the purchase mix, never added to its headline: they take GPU-hours away
that the mix prices (stopping an idle instance saves at the price the mix leaves, not today's),
so adding both would count the same dollars twice.

Choices, and why:

- A sample stands for the time until the next sample of its GPU, at most a cap (the setting, or
  twice the GPU's median interval: a collector that scrapes every 30 s and misses one scrape
  still counts; an hour-long outage does not turn into an hour of the last value). What the cap
  cuts off is unobserved: never idle, and it ends an idle stretch.
- Idle is a stretch below `idle_below_pct` lasting at least `idle_minutes`; shorter dips (data
  loading, a checkpoint write) are part of a busy job.
- Paid GPU-hours come from the bill (usage hours x GPUs per instance); a billed hour's GPU-hours
  no sample covers are unobserved. The price of an idle hour is the effective cost per GPU-hour
  of the machine-hour's billing lines: reserved and savings-plan hours at their amortised rate.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import duckdb
import pandas as pd

from athanor.recommend.gpu_choice import DEFAULT_GROUP_BY, CurrentConfiguration
from athanor.recommend.gpu_choice import current_configurations as current_configurations_of
from athanor.recommend.nightly import Recommendation, store_recommendations
from athanor.reference.vocabulary import HOURS_PER_MONTH, MIG_SLICES
from athanor.warehouse import sql, transaction

logger = logging.getLogger(__name__)

USAGE_KINDS = ("idle_gpu", "underused_gpu")
# The days the nightly run measures (and replaces): the 30 ending with as_of, like the report's period.
WINDOW_DAYS = 30
# A job "uses" a GPU whose mean utilisation over the job reaches the idle threshold; a class keeps
# most of its GPUs idle when at most this share of its GPU-hours are on GPUs it uses.
FEWER_GPUS_SHARE = 0.5
# Busy time this light (utilisation and memory both below it) fits on a slice of the GPU.
SMALLER_GPU_SHARE = 0.5
TOP_MACHINES = 5  # named in an idle_gpu recommendation's detail, the costliest first
NO_WINDOW = (datetime(1970, 1, 1), datetime(1970, 1, 1))  # an empty window: no rows, typed columns

HOURLY_COLUMNS = (
    "hour",
    "day",
    "machine",
    "resource_id",
    "host",
    "instance_id",
    "gpu_id",
    "mig_instance",
    "mig_profile",
    "gpu_share",
    "gpu_model",
    "job_id",
    "team",
    "job_class",
    "instance_type",
    "paid_gpu_hours",
    "observed_gpu_hours",
    "busy_gpu_hours",
    "idle_gpu_hours",
    "unobserved_gpu_hours",
    "usd_per_gpu_hour",
    "paid_cost_usd",
    "idle_cost_usd",
    "utilisation_gpu_hours",
    "busy_utilisation_gpu_hours",
    "busy_memory_gib_gpu_hours",
    "busy_memory_share_gpu_hours",
    "peak_memory_share",
    "region",
    "power_gpu_hours",
    "measured_energy_kwh",
    "modelled_energy_kwh",
    "energy_kwh",
    "power_model",
    "kgco2e",
)


@dataclass(frozen=True)
class IdleRule:
    """When a GPU counts as idle, and how long a sample counts for."""

    below_pct: float = 5.0  # utilisation under this, in %, is low
    minutes: float = 30.0  # for at least this long in a row
    cap_minutes: float | None = None  # a sample counts at most this long (None: 2 x median interval)

    def __post_init__(self) -> None:
        if not 0 < self.below_pct <= 100:
            raise ValueError(
                f"idle threshold (ATHANOR_IDLE_BELOW_PCT) must be in (0, 100] %, got {self.below_pct:g}"
            )
        if not self.minutes > 0:
            raise ValueError(f"idle minutes (ATHANOR_IDLE_MINUTES) must be above 0, got {self.minutes:g}")
        if self.cap_minutes is not None and not self.cap_minutes > 0:
            raise ValueError(
                f"sample cap (ATHANOR_GPU_SAMPLE_CAP_MINUTES) must be above 0 minutes, got {self.cap_minutes:g}"
            )

    @classmethod
    def from_settings(cls, settings: Any) -> IdleRule:
        return cls(settings.idle_below_pct, settings.idle_minutes, settings.gpu_sample_cap_minutes)

    @property
    def cap_s(self) -> float | None:
        return None if self.cap_minutes is None else self.cap_minutes * 60.0

    def params(self) -> dict[str, Any]:
        return {"idle_below_pct": self.below_pct, "idle_minutes": self.minutes, "cap_s": self.cap_s}

    def words(self) -> str:
        cap = (
            "twice the GPU's median sampling interval"
            if self.cap_minutes is None
            else f"{self.cap_minutes:g} min"
        )
        return (
            f"idle: below {self.below_pct:g} % utilisation for at least {self.minutes:g} min; "
            f"a sample counts until the next, at most {cap}"
        )


def job_class_expression(con: duckdb.DuckDBPyConnection) -> str:
    """The SQL of a job's workload class, as the GPU plan forms it: the DEFAULT_GROUP_BY columns some
    job run records, joined by '/', 'unknown' for a run without one (gpu_choice.class_inputs)."""
    recorded = con.execute(
        "select " + ", ".join(f"count({c}) > 0" for c in DEFAULT_GROUP_BY) + " from job_runs"
    ).fetchone()
    columns = [c for c, seen in zip(DEFAULT_GROUP_BY, recorded, strict=True) if seen] or list(
        DEFAULT_GROUP_BY
    )
    parts = ", ".join(f"coalesce(cast(j.{c} as varchar), 'unknown')" for c in columns)
    return f"concat_ws('/', {parts})"


def sample_span(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime] | None:
    """[first sample's day, the day after the last sample's) in UTC; None without samples."""
    first, last = con.execute("select min(sampled_at), max(sampled_at) from gpu_samples").fetchone()
    if first is None:
        return None
    start = datetime.combine(first.date(), datetime.min.time())
    return start, datetime.combine(last.date() + timedelta(days=1), datetime.min.time())


def hourly(
    con: duckdb.DuckDBPyConnection, window_start: datetime, window_end: datetime, rule: IdleRule
) -> pd.DataFrame:
    """The GPU usage rows (gpu_usage_hourly's columns but the settings) of [window_start, window_end)."""
    query = sql("marts/gpu_usage_hourly", job_class=job_class_expression(con))
    params = {"window_start": window_start, "window_end": window_end, **rule.params()}
    return with_energy(con.execute(query, params).df())


# Below this many GPU-hours a row has nothing to model (float noise of subtracted hours).
_EPSILON_H = 1e-9


def _grid(instance_type: str | None, region: str | None) -> float | None:
    """kg CO2e per kWh at the GPU: PUE x grid intensity of the region, for the instance's provider
    (else the one provider whose grid file names the region); None without a region on file."""
    from athanor.reference import gpus as catalog

    if not region:
        return None
    spec = catalog.gpu_instance(instance_type) if instance_type else None
    providers = (
        [spec.provider] if spec else [p for p in catalog.PROVIDERS if catalog.grid_intensity(p, region)]
    )
    if len(providers) != 1:
        return None
    grid = catalog.grid_intensity(providers[0], region)
    return None if grid is None else catalog.pue(providers[0]) * grid.gco2e_per_kwh / 1000


def with_energy(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with their energy and carbon: measured_energy_kwh (from the mart: sampled power x
    the time each sample counts), modelled_energy_kwh where no power was sampled (the GPU model's
    curve, athanor.reference.power: observed time without power at its utilisation, unobserved
    paid GPU-hours at idle power), energy_kwh, power_model and kgco2e (x PUE x grid intensity)."""
    from athanor.reference import power

    out = rows.copy()
    if out.empty:
        for column in ("modelled_energy_kwh", "energy_kwh", "power_model", "kgco2e"):
            out[column] = pd.Series(dtype="object" if column == "power_model" else "float64")
        return out
    unpowered = (out["observed_gpu_hours"] - out["power_gpu_hours"]).clip(lower=0.0)
    idle_hours = unpowered + out["unobserved_gpu_hours"]
    needs = idle_hours > _EPSILON_H
    keys = (
        out[["gpu_model", "instance_type"]]
        .astype(object)
        .where(out[["gpu_model", "instance_type"]].notna(), None)
    )
    models = {
        k: power.model_of(k[0], None if k[1] in (None, "(unknown)") else k[1])
        for k in set(map(tuple, keys.values))
    }
    model = pd.Series([models[tuple(k)] for k in keys.values], index=out.index, dtype=object)
    curves = {m: power.curve(m) for m in set(model.dropna())}
    idle_w = model.map(lambda m: curves[m].idle_w if curves.get(m) else float("nan")).astype(float)
    max_w = model.map(lambda m: curves[m].max_w if curves.get(m) else float("nan")).astype(float)
    modelled = (idle_w * idle_hours + (max_w - idle_w) * out["unpowered_utilisation_gpu_hours"]) / 1000
    out["modelled_energy_kwh"] = modelled.where(needs, 0.0)  # NaN (unknown), never 0, without a curve
    out["energy_kwh"] = out["measured_energy_kwh"] + out["modelled_energy_kwh"]
    out["power_model"] = model.where(needs & idle_w.notna(), None)
    places = {k: _grid(k[0], k[1]) for k in set(zip(out["instance_type"], out["region"], strict=True))}
    factor = pd.Series(
        [places[k] for k in zip(out["instance_type"], out["region"], strict=True)],
        index=out.index,
        dtype=float,
    )
    out["kgco2e"] = out["energy_kwh"] * factor
    return out


def energy_figures(
    con: duckdb.DuckDBPyConnection, rows: pd.DataFrame | str, by: Sequence[str] = ()
) -> pd.DataFrame:
    """Energy and carbon of `rows` (a frame shaped as gpu_usage_hourly, or a table name) per `by`
    columns, one row of totals without (sql/marts/gpu_energy_groups.sql): kWh measured and
    modelled, the measured share, kg CO2e, and the GPU-hours of GPUs without a power curve."""
    return _grouped(con, "marts/gpu_energy_groups", rows, by)


def groups(con: duckdb.DuckDBPyConnection, rows: pd.DataFrame | str, by: Sequence[str] = ()) -> pd.DataFrame:
    """The figures of `rows` (a frame shaped as gpu_usage_hourly, or a table name) per `by` columns;
    one row of totals without `by`."""
    return _grouped(con, "marts/gpu_usage_groups", rows, by)


def _grouped(
    con: duckdb.DuckDBPyConnection, mart: str, rows: pd.DataFrame | str, by: Sequence[str]
) -> pd.DataFrame:
    """`mart` (a grouping query over {rows} by {group_columns}) run on a table name or a frame."""
    relation = rows if isinstance(rows, str) else "gpu_grouped_rows"
    if not isinstance(rows, str):
        con.register(relation, rows)
    try:
        columns = ", ".join(by) if by else "'all' as scope"
        return con.execute(sql(mart, group_columns=columns, rows=relation)).df()
    finally:
        if not isinstance(rows, str):
            con.unregister(relation)


def _num(value: Any, digits: int) -> float | None:
    if value is None:
        return None
    v = float(value)
    return None if math.isnan(v) else round(v, digits)


def summary(con: duckdb.DuckDBPyConnection, rows: pd.DataFrame | str) -> dict[str, Any]:
    """The shape `athanor gpu-usage --format json` prints (issue 17, exact): totals, then per team
    and instance type. Hours to 4 decimals, dollars to the cent, utilisation 0-1 of busy time."""
    total = groups(con, rows)
    per = groups(con, rows, ("team", "instance_type"))
    t = total.iloc[0] if len(total) else None

    def figure(row: Any, name: str, digits: int) -> float | None:
        return None if row is None else _num(row[name], digits)

    return {
        "gpu_hours": figure(t, "gpu_hours", 4) or 0.0,
        "idle_gpu_hours": figure(t, "idle_gpu_hours", 4) or 0.0,
        "unobserved_gpu_hours": figure(t, "unobserved_gpu_hours", 4) or 0.0,
        "idle_cost_usd": figure(t, "idle_cost_usd", 2),
        "groups": [
            {
                "team": r.team,
                "instance_type": r.instance_type,
                "gpu_hours": _num(r.gpu_hours, 4),
                "idle_gpu_hours": _num(r.idle_gpu_hours, 4),
                "idle_cost_usd": _num(r.idle_cost_usd, 2),
                "mean_utilisation": _num(r.mean_utilisation, 4),
            }
            for r in per.itertuples(index=False)
        ],
    }


def notes(con: duckdb.DuckDBPyConnection, rows: pd.DataFrame | str, rule: IdleRule) -> list[str]:
    """What a reader of the figures must know: the rule, and what has no price or no sample."""
    total = groups(con, rows)
    out = [rule.words(), "mean_utilisation: of busy time, 0-1"]
    if total.empty:
        return [*out, "no GPU samples in the warehouse"]
    t = total.iloc[0]
    unpriced = float(t["unpriced_idle_gpu_hours"] or 0)
    if unpriced > 0:
        out.append(
            f"{unpriced:,.2f} idle GPU-hours are in hours no USD billing line covers (a machine no bill "
            "names by instance id, host or SageMaker job name, or an hour outside its billed ones): no "
            "idle_cost_usd for them"
        )
    if float(t["unobserved_gpu_hours"] or 0) > 0:
        out.append(
            f"{float(t['unobserved_gpu_hours']):,.2f} GPU-hours had no sample (paid but not monitored, or "
            "gaps beyond the cap): neither busy nor idle"
        )
    return out


# --------------------------------------------------------------------------- the nightly stage


def window(as_of: date) -> tuple[datetime, datetime]:
    """The WINDOW_DAYS days ending with as_of, [start, end) in UTC."""
    end = datetime.combine(as_of + timedelta(days=1), datetime.min.time())
    return end - timedelta(days=WINDOW_DAYS), end


def store_hourly(
    con: duckdb.DuckDBPyConnection,
    rows: pd.DataFrame,
    window_start: datetime,
    window_end: datetime,
    rule: IdleRule,
    run_id: str,
) -> int:
    """Replace the window's hours of gpu_usage_hourly with `rows` (in the caller's transaction)."""
    con.execute("delete from gpu_usage_hourly where hour >= ? and hour < ?", [window_start, window_end])
    if rows.empty:
        return 0
    frame = rows[list(HOURLY_COLUMNS)].assign(
        idle_below_pct=rule.below_pct, idle_minutes=rule.minutes, sample_cap_s=rule.cap_s, run_id=run_id
    )
    con.register("gpu_usage_new", frame)
    try:
        names = ", ".join(frame.columns)
        con.execute(f"insert into gpu_usage_hourly ({names}) select {names} from gpu_usage_new")
    finally:
        con.unregister("gpu_usage_new")
    return len(frame)


def _money(value: float | None) -> Decimal | None:
    return None if value is None or not math.isfinite(value) else Decimal(str(round(value, 2)))


def _span_hours(rows: pd.DataFrame) -> float:
    """Hours from the first measured hour to the end of the last: what a month is scaled from."""
    if rows.empty:
        return 0.0
    hours = pd.to_datetime(rows["hour"])
    return (hours.max() - hours.min()).total_seconds() / 3600 + 1.0


def idle_recommendations(rows: pd.DataFrame, rule: IdleRule) -> list[Recommendation]:
    """An `idle_gpu` row per team and instance type whose billed machines sat idle."""
    billed = rows[rows["resource_id"].notna() & (rows["idle_gpu_hours"] > 0)]
    if billed.empty:
        return []
    span = _span_hours(rows)
    month = HOURS_PER_MONTH / span
    out = []
    paid = rows[rows["resource_id"].notna()].groupby(["team", "instance_type"])["paid_cost_usd"].sum()
    for (team, itype), g in billed.groupby(["team", "instance_type"], sort=True):
        idle_h = float(g["idle_gpu_hours"].sum())
        idle_usd = float(g["idle_cost_usd"].fillna(0).sum())
        if idle_usd <= 0:
            continue
        current = float(paid.get((team, itype), 0.0)) * month
        saving = min(idle_usd * month, current)
        machines = (
            g.groupby("machine")
            .agg(idle_gpu_hours=("idle_gpu_hours", "sum"), idle_cost_usd=("idle_cost_usd", "sum"))
            .sort_values("idle_cost_usd", ascending=False)
        )
        top = machines.head(TOP_MACHINES)
        days = span / 24
        out.append(
            Recommendation(
                kind="idle_gpu",
                scope=f"{team}/{itype}",
                action=(
                    f"Stop {team}'s {itype} instances once idle for {rule.minutes:g} min: "
                    f"{idle_h:,.1f} idle GPU-hours (${idle_usd:,.2f}) in the last {days:.0f} days on "
                    f"{len(machines)} machine{'s' if len(machines) != 1 else ''}, most on {top.index[0]}"
                ),
                recommended_quantity=float(len(machines)),
                estimated_monthly_cost=_money(current - saving),
                current_monthly_cost=_money(current),
                estimated_monthly_savings_amount=_money(saving),
                estimated_savings_percentage=100 * saving / current if current else None,
                average_utilization=None,
                risk=(
                    "the idle stretches are past ones: a machine kept warm on purpose (an interactive "
                    "notebook, a standby node) costs this by choice"
                ),
                assumptions=json.dumps(
                    {
                        "idle_below_pct": rule.below_pct,
                        "idle_minutes": rule.minutes,
                        "sample_cap_minutes": rule.cap_minutes,
                        "measured_hours": round(span, 2),
                        "month": f"scaled to {HOURS_PER_MONTH:g} hours from the measured hours",
                        "price": "effective cost per GPU-hour of each machine-hour's billing lines",
                    }
                ),
                detail=json.dumps(
                    {
                        "idle_gpu_hours": round(idle_h, 4),
                        "idle_cost_usd": round(idle_usd, 2),
                        "machines": [
                            {
                                "machine": m,
                                "idle_gpu_hours": round(float(r.idle_gpu_hours), 4),
                                "idle_cost_usd": round(float(r.idle_cost_usd), 2),
                            }
                            for m, r in top.iterrows()
                        ],
                        "touches": [str(m) for m in machines.index],
                        "billed_monthly_cost": round(current, 2),
                        "saving_basis": "idle GPU-hours at the bill's own price, within the bill of the "
                        "machines it touches; not added to the headline (the mix prices these hours)",
                    }
                ),
            )
        )
    return out


def _slices(share: float) -> int:
    return max(1, math.ceil(share * MIG_SLICES - 1e-9))


def job_figures(con: duckdb.DuckDBPyConnection, rows: pd.DataFrame, rule: IdleRule) -> pd.DataFrame:
    """Per linked job: its GPUs, the GPU-hours on GPUs it used, busy utilisation, peak memory, cost."""
    linked = rows[rows["job_id"].notna() & rows["gpu_id"].notna() & (rows["observed_gpu_hours"] > 0)]
    if linked.empty:
        return pd.DataFrame()
    # A MIG instance is a GPU of its own here (dropna=False: a whole GPU's mig_instance is null).
    # Keyed by machine too: a multi-node job's GPUs are those of all its nodes (4 x 8 = 32), even
    # where two nodes report the same GPU id.
    linked = linked.assign(
        gpu_key=linked["machine"].fillna("").astype(str)
        + "/"
        + linked["gpu_id"]
        + "/"
        + linked["mig_instance"].fillna("")
    )
    linked = linked.assign(on_mig=linked["mig_instance"].notna())
    per_gpu = linked.groupby(["job_class", "job_id", "gpu_key"], as_index=False).agg(
        on_mig=("on_mig", "max"),
        observed=("observed_gpu_hours", "sum"),
        busy=("busy_gpu_hours", "sum"),
        util=("utilisation_gpu_hours", "sum"),
        busy_util=("busy_utilisation_gpu_hours", "sum"),
        peak_memory_share=("peak_memory_share", "max"),
        paid_cost_usd=("paid_cost_usd", "sum"),
    )
    per_gpu["used"] = per_gpu["util"] / per_gpu["observed"] * 100 >= rule.below_pct
    per_gpu["used_hours"] = per_gpu["observed"].where(per_gpu["used"], 0.0)
    jobs = per_gpu.groupby(["job_class", "job_id"], as_index=False).agg(
        gpus_seen=("gpu_key", "nunique"),
        on_mig=("on_mig", "max"),
        gpus_used=("used", "sum"),
        observed=("observed", "sum"),
        used_hours=("used_hours", "sum"),
        busy=("busy", "sum"),
        busy_util=("busy_util", "sum"),
        peak_memory_share=("peak_memory_share", "max"),
        paid_cost_usd=("paid_cost_usd", "sum"),
    )
    allocated = con.execute("select job_id, max(gpu_count) as gpus from job_runs group by job_id").df()
    jobs = jobs.merge(allocated, on="job_id", how="left")
    jobs["gpus"] = jobs["gpus"].fillna(jobs["gpus_seen"]).astype(int)
    return jobs


def current_configurations(
    con: duckdb.DuckDBPyConnection, as_of: date | None = None
) -> dict[str, CurrentConfiguration]:
    """Each class's current configuration as the GPU plan reads it (the same runs, the same rule):
    the one statement of a class's current size on the page."""
    # Imported here: gpu_plan imports this module (the measured utilisation of its carbon figure).
    from athanor.recommend.gpu_plan import read_job_runs

    runs = read_job_runs(con, as_of)
    return current_configurations_of(runs) if len(runs) else {}


def _sizes(gpus: Sequence[int]) -> str:
    """'16 and 32 GPUs' for the jobs' sizes, each once, smallest first."""
    n = sorted(set(gpus))
    head = ", ".join(str(g) for g in n[:-1])
    return (f"{head} and {n[-1]}" if head else str(n[-1])) + f" GPU{'s' if n[-1] != 1 else ''}"


def _fewer_gpus_action(
    job_class: str, g: pd.DataFrame, gpus: int, keep: int, used_share: float, cur: CurrentConfiguration | None
) -> str:
    """The fewer-GPUs step's words. Its size is that of the jobs GPU telemetry saw; where it is not
    the class's current configuration (the GPU plan's, gpu_choice.current_configurations), it says
    so and names that configuration, so the page never gives a class two current sizes."""
    plural = "s" if keep != 1 else ""
    share = f"{100 * used_share:.0f} %"
    if cur is None or cur.gpus == gpus:
        now = "" if cur is None else f" ({cur.label}, its current configuration)"
        return (
            f"Run {job_class} on {keep} GPU{plural} instead of {gpus}{now}: "
            f"{share} of its GPU-hours are on GPUs its jobs use"
        )
    n = len(g)
    return (
        f"Run {job_class}'s jobs on at most {keep} GPU{plural}, not the {_sizes(g['gpus'].astype(int))} "
        f"of the {n} job{'s' if n != 1 else ''} GPU telemetry saw: {share} of their GPU-hours are on GPUs "
        f"they use. A measure of those jobs, not of its current configuration, {cur.label} "
        f"({cur.gpus} GPUs, {cur.runs} of its {cur.class_runs} runs)"
    )


def underused_recommendations(
    con: duckdb.DuckDBPyConnection, rows: pd.DataFrame, rule: IdleRule, as_of: date | None = None
) -> list[Recommendation]:
    """An `underused_gpu` row per workload class whose jobs leave most of their GPUs, or most of each
    GPU, unused: fewer GPUs, or smaller GPUs / MIG slices. The saving is an estimate at the bill's
    price per GPU-hour (a smaller configuration's own price is the GPU plan's to find). `as_of`:
    the GPU plan's window of job runs, whose current configuration per class the step names."""
    jobs = job_figures(con, rows, rule)
    if jobs.empty:
        return []
    configs = current_configurations(con, as_of)
    month = HOURS_PER_MONTH / max(_span_hours(rows), 1.0)
    out = []
    for job_class, g in jobs.groupby("job_class", sort=True):
        observed = float(g["observed"].sum())
        paid = float(g["paid_cost_usd"].fillna(0).sum()) * month
        if observed <= 0 or paid <= 0:
            continue
        used_share = float(g["used_hours"].sum()) / observed
        busy = float(g["busy"].sum())
        mean_util = float(g["busy_util"].sum()) / busy if busy > 0 else 0.0
        peak_mem = float(g["peak_memory_share"].max()) if g["peak_memory_share"].notna().any() else None
        # The usual size of the jobs telemetry saw (they may differ from the class's current one).
        gpus = int(g["gpus"].mode().max())
        cur = configs.get(str(job_class))
        figures = {
            "jobs": len(g),
            "gpus_per_job": gpus,
            "telemetry_job_gpus": sorted(int(n) for n in g["gpus"]),
            "current_configuration": None if cur is None else cur.label,
            "current_gpus": None if cur is None else cur.gpus,
            "share_of_gpu_hours_on_used_gpus": round(used_share, 4),
            "mean_utilisation_of_busy_time": round(mean_util, 4),
            "peak_memory_share": None if peak_mem is None else round(peak_mem, 4),
        }
        if used_share <= FEWER_GPUS_SHARE and gpus > 1:
            keep = min(gpus, 2 ** math.ceil(math.log2(max(used_share * gpus, 1.0))))
            if keep >= gpus:
                continue
            fraction = keep / gpus
            action = _fewer_gpus_action(str(job_class), g, gpus, keep, used_share, cur)
            # Each job keeps min(keep, its GPUs): a job already at or under `keep` saves nothing
            # (a class's jobs need not all be of its usual size).
            job_gpus = g["gpus"].astype(float)
            kept = (g["paid_cost_usd"].fillna(0) * job_gpus.clip(upper=keep) / job_gpus).sum()
            saving = paid - float(kept) * month
        elif (
            peak_mem is not None
            and mean_util < SMALLER_GPU_SHARE
            and peak_mem < SMALLER_GPU_SHARE
            # A class already on MIG instances: its utilisation and memory are of its slice, not
            # of a whole GPU, so "k/7 slices" would be a share of a share.
            and not bool(g["on_mig"].any())
        ):
            slices = _slices(max(mean_util, peak_mem))
            if slices >= MIG_SLICES:
                continue
            fraction = slices / MIG_SLICES
            action = (
                f"Run {job_class} on smaller GPUs or {slices}/{MIG_SLICES} MIG slices: busy at "
                f"{100 * mean_util:.0f} % utilisation, at most {100 * peak_mem:.0f} % of GPU memory"
            )
            saving = paid * (1 - fraction)
        else:
            continue
        out.append(
            Recommendation(
                kind="underused_gpu",
                scope=str(job_class),
                action=action,
                recommended_quantity=float(fraction),
                estimated_monthly_cost=_money(paid - saving),
                current_monthly_cost=_money(paid),
                estimated_monthly_savings_amount=_money(saving),
                estimated_savings_percentage=100 * saving / paid,
                average_utilization=mean_util,
                risk=(
                    "an estimate: the price per GPU-hour taken as it is on a smaller configuration, "
                    "which the GPU plan prices for real; a job's peak may need the GPUs it leaves idle"
                ),
                assumptions=json.dumps(
                    {
                        "idle_below_pct": rule.below_pct,
                        "a used GPU": "its mean utilisation over the job reaches the idle threshold",
                        "fewer_gpus_when_share_at_most": FEWER_GPUS_SHARE,
                        "smaller_gpu_when_below": SMALLER_GPU_SHARE,
                        "mig_slices": MIG_SLICES,
                    }
                ),
                detail=json.dumps(
                    {
                        **figures,
                        "billed_monthly_cost": round(paid, 2),
                        "saving_basis": "an estimate at the bill's price per GPU-hour; not added to the "
                        "headline (the GPU plan and the mix price these hours)",
                    }
                ),
            )
        )
    return out


def measure_gpus(con: duckdb.DuckDBPyConnection, run_id: str, as_of: date, rule: IdleRule) -> dict[str, Any]:
    """Count the window's GPU usage, store it, and store the idle and underused recommendations."""
    start, end = window(as_of)
    samples, first = con.execute(
        "select count(*), min(sampled_at) from gpu_samples where sampled_at >= ? and sampled_at < ?",
        [start, end],
    ).fetchone()
    # Measured from the first day with telemetry: before it the whole fleet was unmonitored, and
    # the bill alone would call every paid GPU-hour 'unobserved' (a collector down later is news).
    measured = datetime.combine(first.date(), datetime.min.time()) if first else None
    rows = hourly(con, *((measured, end) if measured else NO_WINDOW), rule)
    recs = idle_recommendations(rows, rule) + underused_recommendations(con, rows, rule, as_of)
    with transaction(con):
        written = store_hourly(con, rows, start, end, rule, run_id)
        store_recommendations(con, run_id, as_of, USAGE_KINDS, recs)
    figures = summary(con, rows)
    energy = energy_figures(con, rows).iloc[0] if not rows.empty else None
    if energy is not None:
        logger.info(
            "measure_gpus: energy %.1f kWh, %.1f %% from measured power (%.1f kWh), %.1f kWh modelled from "
            "utilisation-to-power curves; %.1f kg CO2e; %.1f GPU-hours of GPUs without a power curve left out",
            energy["energy_kwh"],
            100 * (energy["measured_share"] if pd.notna(energy["measured_share"]) else 0.0),
            energy["measured_energy_kwh"],
            energy["modelled_energy_kwh"],
            energy["kgco2e"],
            energy["unknown_gpu_hours"],
        )
    logger.info(
        "measure_gpus: read %d GPU samples of %s..%s (from the first day with samples); wrote %d gpu_usage_hourly rows and %d recommendations "
        "(%d idle_gpu, %d underused_gpu); %s GPU-hours, %s idle, %s unobserved, idle cost $%s",
        samples,
        (measured or start).date(),
        (end - timedelta(days=1)).date(),
        written,
        len(recs),
        sum(r.kind == "idle_gpu" for r in recs),
        sum(r.kind == "underused_gpu" for r in recs),
        figures.get("gpu_hours"),
        figures.get("idle_gpu_hours"),
        figures.get("unobserved_gpu_hours"),
        figures.get("idle_cost_usd"),
    )
    return {
        "samples": int(samples),
        "rows": written,
        "recommendations": len(recs),
        "gpu_hours": figures.get("gpu_hours"),
        "idle_gpu_hours": figures.get("idle_gpu_hours"),
        "unobserved_gpu_hours": figures.get("unobserved_gpu_hours"),
        "idle_cost_usd": figures.get("idle_cost_usd"),
    }


def class_utilisation(
    con: duckdb.DuckDBPyConnection, start: datetime | None = None, end: datetime | None = None
) -> dict[str, float]:
    """Measured mean GPU utilisation (0-1, over observed time) per workload class, from the stored
    hours in [start, end): what the GPU plan's carbon estimate uses instead of 1."""
    found = con.execute(
        """select job_class, sum(utilisation_gpu_hours) / sum(observed_gpu_hours)
           from gpu_usage_hourly
           where job_id is not null and observed_gpu_hours > 0
             and (?::timestamp is null or hour >= ?::timestamp) and (?::timestamp is null or hour < ?::timestamp)
           group by job_class""",
        [start, start, end, end],
    ).fetchall()
    return {str(c): float(u) for c, u in found if u is not None}
