"""Cost by GPU-seconds on shared clusters: each billed machine-hour split over the jobs that held it.

On a Slurm (or Kubernetes) cluster of long-lived nodes no bill line names a job, so the
tag-based link (`job_run_costs`) leaves the whole cluster unattributed. This module:

1. builds `node_map` (`sql/marts/node_map.sql`): which billed instance each scheduler node
   name was, from `aws ec2 describe-instances` deliveries (`ec2_instances`), the telemetry's
   hosts that name their instance, and a bill tag named by the setting `node_tag_key`;
2. splits every billed GPU machine-hour's EffectiveCost over the jobs that held its GPUs in
   proportion to GPU-seconds held, the rest as the node's idle line
   (`sql/marts/gpu_allocation_hourly.sql`), into `gpu_allocation_hourly`, this module its one
   writer. A SageMaker training job's ml.* instance-hours, whose resource id names the job
   (`.../training-job/<name>`), are that job's whole where the job logs hold the name (source
   sagemaker). Machine-hours of no cluster and no known job keep the bill's tags (job_id, else team).

Nodes a job names that no source maps are listed (logged, and returned), never guessed: a
partition or a look-alike host name says nothing about which instance was billed.

`allocation_summary` is what `athanor allocation` prints and the report's "Cost by team and
job" section shows: billed = allocated + idle (+ what no team is named for), in cents that add
up to the period's bill.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import duckdb

import athanor
from athanor.warehouse import insert_rows, lake, sql, transaction

logger = logging.getLogger(__name__)

UNMAPPED_SHOWN = 10  # unmapped node names named in the log line; all are returned


@dataclass(frozen=True)
class AllocationResult:
    node_names: int
    machine_hours: int
    rows: int
    billed_usd: Decimal
    allocated_usd: Decimal
    idle_usd: Decimal
    unmapped_nodes: tuple[str, ...]
    months_reallocated: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "node_names": self.node_names,
            "machine_hours": self.machine_hours,
            "rows": self.rows,
            "billed_usd": str(self.billed_usd),
            "allocated_usd": str(self.allocated_usd),
            "idle_usd": str(self.idle_usd),
            "unmapped_nodes": len(self.unmapped_nodes),
            "months_reallocated": self.months_reallocated,
        }


def build_node_map(con: duckdb.DuckDBPyConnection, node_tag_key: str | None) -> int:
    """Rewrite `node_map` from its sources; the number of (node, instance) rows."""
    con.execute("delete from node_map")
    con.execute(
        "insert into node_map by name " + sql("marts/node_map", ec2_node_names=sql("marts/ec2_node_names")),
        {"node_tag_key": node_tag_key},
    )
    return int(con.execute("select count(*) from node_map").fetchone()[0])


def unmapped_nodes(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Node names jobs held that neither node_map nor an EC2 resource-based name maps
    (sql/marts/unmapped_nodes.sql)."""
    rows = con.execute(sql("marts/unmapped_nodes")).fetchall()
    return [r[0] for r in rows]


def allocate_gpus(
    con: duckdb.DuckDBPyConnection, run_id: str, node_tag_key: str | None = None
) -> AllocationResult:
    """Rebuild node_map, and gpu_allocation_hourly for every month whose inputs changed.

    A month of charge hours is allocated on its own (the allocation's window), and again only
    when what it reads has changed since (`changed_months`): a restated month, a late sacct
    log reaching back, a new instance listing (every month). Reallocating the whole history
    every night cost a 3 x 4M-line warehouse 49 s of its 83 s night, and grew with each month.
    """
    with transaction(con):
        names = build_node_map(con, node_tag_key)
        months, digests = changed_months(con)
        rows = machine_hours = 0
        for first in months:
            written, hours = _allocate_month(con, run_id, first)
            rows, machine_hours = rows + written, machine_hours + hours
        con.execute("delete from gpu_allocation_months")
        insert_rows(con, "gpu_allocation_months", [{"month": m, "digest": d} for m, d in digests.items()])
    unmapped = unmapped_nodes(con)
    # The whole table's split, as the log line's check that allocated + idle is the bill (one
    # scan of two columns; the page's cents come from allocation_summary).
    billed, allocated, idle = con.execute(
        """select coalesce(round(sum(cost_usd), 2), 0),
                  coalesce(round(sum(cost_usd) filter (where kind in ('job', 'tagged', 'team_tagged')), 2), 0),
                  coalesce(round(sum(cost_usd) filter (where kind = 'idle'), 2), 0)
           from gpu_allocation_hourly"""
    ).fetchone()
    result = AllocationResult(
        node_names=names,
        machine_hours=machine_hours,
        rows=rows,
        billed_usd=Decimal(billed),
        allocated_usd=Decimal(allocated),
        idle_usd=Decimal(idle),
        unmapped_nodes=tuple(unmapped),
        months_reallocated=len(months),
    )
    logger.info(
        "allocate_gpus: node_map %d names; %d of %d months reallocated (their inputs changed: %s), "
        "%d gpu_allocation_hourly rows written over %d billed GPU machine-hours; all months: billed $%s, "
        "to jobs and teams $%s, idle $%s",
        names,
        len(months),
        len(digests),
        ", ".join(f"{m:%Y-%m}" for m in months) or "none",
        result.rows,
        result.machine_hours,
        result.billed_usd,
        result.allocated_usd,
        result.idle_usd,
    )
    if unmapped:
        shown = ", ".join(unmapped[:UNMAPPED_SHOWN]) + (" ..." if len(unmapped) > UNMAPPED_SHOWN else "")
        logger.warning(
            "allocate_gpus: %d node names jobs held map to no billed instance (no describe-instances "
            "listing, telemetry host or bill tag names them); their jobs hold nothing: %s",
            len(unmapped),
            shown,
        )
    return result


def changed_months(con: duckdb.DuckDBPyConnection) -> tuple[list[datetime], dict[datetime, str]]:
    """The months to reallocate (those gone from the bill included), and every billed month's
    digest of its inputs now (sql/marts/gpu_allocation_inputs.sql), to store once allocated.

    Each digest also covers what all months read alike (gpu_allocation_shared_inputs.sql) and
    the allocation's own SQL and version, so a new release reallocates the history once.
    """
    shared = con.execute(sql("marts/gpu_allocation_shared_inputs")).fetchone()[0]
    code = hashlib.md5((athanor.__version__ + _allocation_sql()).encode(), usedforsecurity=False).hexdigest()
    digests = {
        month: hashlib.md5(f"{code}|{shared}|{own}".encode(), usedforsecurity=False).hexdigest()
        for month, own in con.execute(
            sql("marts/gpu_allocation_inputs", gpu_usage_lines=sql("marts/gpu_usage_lines"))
        ).fetchall()
    }
    stored = dict(con.execute("select month, digest from gpu_allocation_months").fetchall())
    months = sorted({m for m, d in digests.items() if stored.get(m) != d} | (set(stored) - set(digests)))
    return months, digests


def _allocation_sql() -> str:
    return sql("marts/gpu_allocation_hourly", gpu_usage_lines=sql("marts/gpu_usage_lines"))


def _allocate_month(con: duckdb.DuckDBPyConnection, run_id: str, first: datetime) -> tuple[int, int]:
    """Replace the month starting `first`: its machine-hours' rows, allocated over its window.
    Returns the rows written and their machine-hours."""
    end = datetime(first.year + first.month // 12, first.month % 12 + 1, 1)
    con.execute("delete from gpu_allocation_hourly where hour >= ? and hour < ?", [first, end])
    # The lake mode: the month's billing files alone, not the history's (the query keeps its window).
    with lake.narrowed(con, "billing_facts", "charge_period_start", first, end):
        con.execute(
            "insert into gpu_allocation_hourly by name select *, $run_id as run_id from ("
            + _allocation_sql()
            + ")",
            {"run_id": run_id, "window_start": first, "window_end": end},
        )
    rows, hours = con.execute(
        "select count(*), count(distinct (resource_id, hour)) from gpu_allocation_hourly where hour >= ? and hour < ?",
        [first, end],
    ).fetchone()
    return int(rows), int(hours)


def allocation_summary(
    con: duckdb.DuckDBPyConnection, since: datetime | None = None, until: datetime | None = None
) -> dict[str, Any]:
    """What `athanor allocation` prints for [since, until) (hours of gpu_allocation_hourly).

    Amounts are the exact shares summed, then rounded to the cent: `billed_usd` is the period's
    bill, and the team cells (allocated and idle per team, and what nobody's) share its cents by
    largest remainder, so teams add up to allocated + idle + unattributed = billed to the cent.
    (Each machine-hour's rows add up to that hour's rounded bill in `cost_cents_usd`; summing
    those over thousands of hours would drift from the period's bill by the hours' roundings.)
    A job's cost is its exact share rounded. `kinds` is the same bill by how its hours were
    shared (KINDS), adding up to the same cents."""
    where = "where (?::timestamp is null or hour >= ?::timestamp) and (?::timestamp is null or hour < ?::timestamp)"
    params = [since, since, until, until]
    cells = con.execute(
        f"""select team,
                   case when kind in ('job', 'tagged', 'team_tagged') then 'allocated' else kind end as part,
                   sum(cost_usd)
            from gpu_allocation_hourly {where}
            group by all
            order by team nulls last, part""",
        params,
    ).fetchall()
    exact = {(team, part): Decimal(value) for team, part, value in cells}
    cents = _largest_remainder(exact)
    jobs = con.execute(
        f"""select job_id, any_value(team), sum(gpu_seconds) / 3600, sum(cost_usd)
            from gpu_allocation_hourly {where} and kind in ('job', 'tagged')
            group by job_id, job_source
            order by sum(cost_usd) desc, job_id""",
        params,
    ).fetchall()

    # The same bill by how its hours were shared (the report's "by kind"): idle and nobody's are
    # the team cells' sums, the allocated kinds share the team cells' allocated cents by largest
    # remainder, so every figure of the page adds up to the same cent.
    by_kind = con.execute(
        f"""select case when kind = 'job' and job_source in ('kubernetes', 'dcgm') then 'pods'
                        when kind = 'job' then 'scheduler_jobs'
                        else kind end,
                   sum(cost_usd)
            from gpu_allocation_hourly {where}
            group by all""",
        params,
    ).fetchall()
    by_kind_exact = {k: Decimal(v) for k, v in by_kind}

    def part(name: str) -> Decimal:
        return sum((v for (_, p), v in cents.items() if p == name), Decimal(0))

    teams = sorted({t for t, p in cents if p != "unattributed"}, key=lambda t: (t is None, t or ""))
    kinds = {k: v for k, v in by_kind_exact.items() if k not in ("idle", "unattributed")}
    kind_cents = _largest_remainder(kinds, total=part("allocated")) | {
        k: part(k) for k in ("idle", "unattributed") if k in by_kind_exact
    }
    return {
        "billed_usd": float(sum(cents.values(), Decimal(0))),
        "allocated_usd": float(part("allocated")),
        "idle_usd": float(part("idle")),
        "unattributed_usd": float(part("unattributed")),
        "jobs": [
            {"job_id": j, "team": t, "gpu_hours": round(float(h), 6), "cost_usd": _money(c)}
            for j, t, h, c in jobs
        ],
        "teams": [
            {
                "team": t,
                "allocated_usd": float(cents.get((t, "allocated"), Decimal(0))),
                "idle_usd": float(cents.get((t, "idle"), Decimal(0))),
            }
            for t in teams
        ],
        "kinds": {
            k: float(kind_cents.get(k, Decimal(0))) for k in (*KINDS, *sorted(set(kind_cents) - set(KINDS)))
        },
    }


CENT = Decimal("0.01")
# allocation_summary's "kinds": bill lines tagged with a job id, machine-hours tagged with only a
# team, scheduler jobs (Slurm, generic, SageMaker), pods (a pod list or the DCGM exporter's labels),
# idle GPU-seconds, and hours nothing names (kind unattributed).
KINDS = ("tagged", "team_tagged", "scheduler_jobs", "pods", "idle", "unattributed")


def _largest_remainder(exact: dict[Any, Decimal], total: Decimal | None = None) -> dict[Any, Decimal]:
    """Each amount in cents, floors first, the cents the rounded total still lacks one each to the
    largest remainders (ties in key order), so the parts add up to the rounded total. `total`: a
    total in cents fixed elsewhere (within a cent per part of the exact sum); were it below the
    floors, a cent comes off the smallest remainders."""
    if total is None:
        total = sum(exact.values(), Decimal(0)).quantize(CENT)
    floors = {k: (v / CENT).to_integral_value(rounding="ROUND_FLOOR") * CENT for k, v in exact.items()}
    left = int((total - sum(floors.values(), Decimal(0))) / CENT)
    order = sorted(exact, key=lambda k: (-(exact[k] - floors[k]), str(k)))
    if left < 0:
        return {k: floors[k] - (CENT if i < -left else 0) for i, k in enumerate(reversed(order))}
    return {k: floors[k] + (CENT if i < left else 0) for i, k in enumerate(order)} if exact else {}


def _money(value: Decimal | float | int | None) -> float:
    """An exact amount as a JSON number of cents."""
    return float(Decimal(value or 0).quantize(CENT))
