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

import logging
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import duckdb

from athanor.warehouse import sql, transaction

logger = logging.getLogger(__name__)

# The whole billed history is allocated every night (a late sacct log or instance listing changes
# earlier hours); these bound "everything".
ALL_TIME = (datetime(1970, 1, 1), datetime(9999, 1, 1))
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "node_names": self.node_names,
            "machine_hours": self.machine_hours,
            "rows": self.rows,
            "billed_usd": str(self.billed_usd),
            "allocated_usd": str(self.allocated_usd),
            "idle_usd": str(self.idle_usd),
            "unmapped_nodes": len(self.unmapped_nodes),
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
    """Rebuild node_map and gpu_allocation_hourly for the whole billed history."""
    with transaction(con):
        names = build_node_map(con, node_tag_key)
        con.execute("delete from gpu_allocation_hourly")
        _insert(con, run_id)
    unmapped = unmapped_nodes(con)
    rows, machine_hours = con.execute(
        "select count(*), count(distinct (resource_id, hour)) from gpu_allocation_hourly"
    ).fetchone()
    totals = allocation_summary(con)
    result = AllocationResult(
        node_names=names,
        machine_hours=int(machine_hours),
        rows=int(rows),
        billed_usd=Decimal(str(totals["billed_usd"])),
        allocated_usd=Decimal(str(totals["allocated_usd"])),
        idle_usd=Decimal(str(totals["idle_usd"])),
        unmapped_nodes=tuple(unmapped),
    )
    logger.info(
        "allocate_gpus: node_map %d names; wrote %d gpu_allocation_hourly rows over %d billed GPU "
        "machine-hours: billed $%s, to jobs and teams $%s, idle $%s",
        names,
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


def _insert(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    con.execute(
        "insert into gpu_allocation_hourly by name select *, $run_id as run_id from ("
        + sql("marts/gpu_allocation_hourly")
        + ")",
        {"run_id": run_id, "window_start": ALL_TIME[0], "window_end": ALL_TIME[1]},
    )


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
