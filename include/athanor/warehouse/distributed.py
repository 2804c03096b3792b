"""The lake's tables read by Dask distributed: the analysts' and heavy marts' path beyond one machine.

In the lake mode (`athanor.warehouse.lake`) the fact tables are Iceberg tables whose current
snapshot is a list of Parquet data files on a bucket. Here a Dask cluster (a scheduler and
workers on as many machines as there are) reads them: one task per data file reads its
columns through pyarrow's S3 filesystem, filters and sums that file alone in Arrow, and a tree
of combining tasks sums the partial sums. The client process only plans (pyiceberg lists the
snapshot's files) and receives the final few rows. Every function takes the cluster's
`distributed.Client`, or None to run the same graph on Dask's threads in this process.

What each task reads is what the DuckDB view reads (`lake._view`): the snapshot's data files,
read with the table's own schema (a column added since a file was written reads as null). The
tables are written copy-on-write, so a restated partition's replaced rows are simply not in the
snapshot; a snapshot with delete files (another writer, merge-on-read) is refused by
`lake.data_files`, as the view refuses it. Rows of a load in progress are staged in the
writer's DuckDB file and are not the lake's until its commit: this engine, like any second
engine, reads committed snapshots only.

Money stays exact: Arrow sums DECIMAL(38, 12) as decimals in every task and every combine, and
the results are Python `Decimal`s, equal to DuckDB's to the last of the 12 decimals. The DuckDB
side of each figure is a query in `sql/distributed/` (or the mart's own file), run by the
`duckdb_*` functions, so a test compares the two row for row.

Workers need this package importable and the bucket's credentials in their environment (the
AWS SDK's usual chain: an instance role, or AWS_* variables), like any process of the lake mode;
credentials never travel in the task graph.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from athanor.warehouse import lake
from athanor.warehouse.queries import sql

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    from distributed import Client

logger = logging.getLogger(__name__)

# Partial results one combining task sums at a time: a tree of depth log_8(files), so no task
# holds every file's partials and the combines run on several workers at once.
FAN_IN = 8


@dataclass(frozen=True)
class MonthlyTotal:
    """One billing account's billing period in one currency (sql/distributed/account_month_totals.sql)."""

    billing_account_id: str
    billing_period_start: datetime
    billing_currency: str
    lines: int
    billed_cost: Decimal
    effective_cost: Decimal


@dataclass(frozen=True)
class PoolHours:
    """One GPU pool's billed usage (sql/distributed/gpu_hours_by_pool.sql)."""

    pool: str | None  # family/region; None where a line names no instance family
    instance_hours: Decimal
    gpu_hours: Decimal | None  # None where no line names its GPUs per instance


@dataclass(frozen=True)
class ExplainedSpend:
    """One currency's row of the spend-explained mart (sql/marts/spend_explained.sql)."""

    billing_currency: str
    gpu_effective_cost: Decimal
    explained_cost: Decimal | None  # None when no GPU line's job_id tag names a known job
    explained_share: float | None  # a ratio, not money: compared with a tolerance


@dataclass(frozen=True)
class TableScan:
    """What the tasks of one table read: a snapshot's data files, with the table's schema."""

    cfg: lake.LakeConfig
    table: str
    snapshot_id: int | None
    files: tuple[str, ...]
    schema: pa.Schema


def plan(cfg: lake.LakeConfig, name: str, snapshot_id: int | None = None) -> TableScan:
    """The data files of table `name` at `snapshot_id` (default: its current snapshot)."""
    tbl = lake.table(cfg, name)
    if snapshot_id is None:
        current = tbl.current_snapshot()
        snapshot_id = current.snapshot_id if current else None
    files = tuple(lake.data_files(tbl, snapshot_id)) if snapshot_id is not None else ()
    scan = TableScan(cfg, name, snapshot_id, files, tbl.schema().as_arrow())
    logger.info(
        "distributed: %s.%s snapshot %s, %d data file(s)", cfg.namespace, name, snapshot_id, len(files)
    )
    return scan


# ---------------------------------------------------------------------- tasks (run on the workers)


def _read(scan: TableScan, path: str, columns: Sequence[str], where: Any = None) -> pa.Table:
    """One data file's `columns` (rows matching the Arrow expression `where`), as the view reads it."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(path, filesystem=lake.filesystem(scan.cfg), format="parquet", schema=scan.schema)
    return dataset.to_table(columns=list(columns), filter=where)


def _monthly_partial(scan: TableScan, path: str) -> pa.Table:
    rows = _read(
        scan,
        path,
        ("billing_account_id", "billing_period_start", "billing_currency", "billed_cost", "effective_cost"),
    )
    return (
        rows.group_by(["billing_account_id", "billing_period_start", "billing_currency"])
        .aggregate([([], "count_all"), ("billed_cost", "sum"), ("effective_cost", "sum")])
        .rename_columns(
            [
                "billing_account_id",
                "billing_period_start",
                "billing_currency",
                "lines",
                "billed_cost",
                "effective_cost",
            ]
        )
    )


def _pool_partial(scan: TableScan, path: str) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    where = (
        (ds.field("x_usage_hours") > pa.scalar(Decimal(0), pa.decimal128(38, 12)))
        & (ds.field("charge_category") == "Usage")
        & ds.field("x_instance_type").is_valid()
    )
    rows = _read(scan, path, ("x_instance_family", "region_id", "x_gpu_count", "x_usage_hours"), where)
    # The SQL's family || '/' || coalesce(region, 'global'): null when the family is.
    text = rows["x_instance_family"].type  # Iceberg's strings are Arrow's large_string
    pool = pc.binary_join_element_wise(
        rows["x_instance_family"],
        pc.coalesce(rows["region_id"], pa.scalar("global", text)),
        pa.scalar("/", text),
    )
    # By GPUs per instance too: hours x GPUs is taken once per pool at the end, in Decimal,
    # instead of a DECIMAL(38, 12) x integer product in every row, which Arrow would widen past 38 digits.
    keyed = pa.table({"pool": pool, "x_gpu_count": rows["x_gpu_count"], "hours": rows["x_usage_hours"]})
    return (
        keyed.group_by(["pool", "x_gpu_count"])
        .aggregate([("hours", "sum")])
        .rename_columns(["pool", "x_gpu_count", "hours"])
    )


def _job_ids_partial(scan: TableScan, path: str) -> set[str]:
    return set(_read(scan, path, ("job_id",))["job_id"].to_pylist())


def _union(*parts: set[str]) -> set[str]:
    return set().union(*parts)


def _explained_partial(
    scan: TableScan, path: str, job_ids: set[str], start: datetime, end: datetime
) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    window = pa.timestamp("us")
    # The window as constants in the file's scan: Parquet's row-group statistics skip the rest.
    where = (
        ds.field("x_instance_type").is_valid()
        & (ds.field("charge_category") == "Usage")
        & (ds.field("charge_period_start") >= pa.scalar(start, window))
        & (ds.field("charge_period_start") < pa.scalar(end, window))
    )
    rows = _read(scan, path, ("billing_currency", "effective_cost", "tags"), where)
    tags = rows["tags"]
    job_id = pc.map_lookup(tags, pa.scalar("job_id", tags.type.key_type), "first")
    # The mart's left join on the distinct job ids: a line is explained when its tag names one.
    known = pc.fill_null(pc.is_in(job_id, value_set=pa.array(sorted(job_ids), job_id.type)), False)
    cost = rows["effective_cost"]
    explained = pc.if_else(known, cost, pa.scalar(None, cost.type))
    keyed = pa.table({"billing_currency": rows["billing_currency"], "cost": cost, "explained": explained})
    return (
        keyed.group_by(["billing_currency"])
        .aggregate([("cost", "sum"), ("explained", "sum")])
        .rename_columns(["billing_currency", "cost", "explained"])
    )


def _combine(keys: Sequence[str], sums: Sequence[str], *parts: pa.Table) -> pa.Table:
    """The partial sums of several files (or combines) summed per key: still exact decimals."""
    import pyarrow as pa

    table = pa.concat_tables(parts)
    # Arrow's sum of an all-null group is null, as SQL's: an all-null partial stays null.
    return table.group_by(list(keys)).aggregate([(c, "sum") for c in sums]).rename_columns([*keys, *sums])


# ---------------------------------------------------------------------- the graphs (on the client)


def _tree(parts: list[Any], combine: Callable[..., Any], *args: Any) -> Any:
    """Delayed `parts` combined FAN_IN at a time until one is left."""
    from dask import delayed

    while len(parts) > 1:
        parts = [delayed(combine)(*args, *parts[i : i + FAN_IN]) for i in range(0, len(parts), FAN_IN)]
    return parts[0]


def _compute(client: Client | None, what: str, graph: Any) -> Any:
    """The graph's result, on the cluster of `client`; None: Dask's threads in this process
    (the same graph on one machine, for a laptop or a test without a cluster)."""
    import dask

    started = time.monotonic()
    if client is None:
        (result,) = dask.compute(graph, scheduler="threads")
        where = "this process's threads"
    else:
        result = client.compute(graph).result()
        where = f"{len(client.scheduler_info(n_workers=-1)['workers'])} worker(s)"
    logger.info("distributed: %s computed on %s in %.2f s", what, where, time.monotonic() - started)
    return result


def _snapshot(snapshots: dict[str, int] | None, name: str) -> int | None:
    return (snapshots or {}).get(name)


def monthly_totals(
    client: Client | None, cfg: lake.LakeConfig, snapshots: dict[str, int] | None = None
) -> list[MonthlyTotal]:
    """Lines, billed and effective cost per billing account, billing period and currency.

    `snapshots`: table -> snapshot id (what a run recorded, `lake.run_snapshots`); default current.
    """
    from dask import delayed

    scan = plan(cfg, "billing_facts", _snapshot(snapshots, "billing_facts"))
    if not scan.files:
        return []
    keys = ("billing_account_id", "billing_period_start", "billing_currency")
    parts = [delayed(_monthly_partial)(scan, path) for path in scan.files]
    table = _compute(
        client, "monthly totals", _tree(parts, _combine, keys, ("lines", "billed_cost", "effective_cost"))
    )
    rows = [MonthlyTotal(**row) for row in table.to_pylist()]
    return sorted(rows, key=lambda r: (r.billing_account_id, r.billing_period_start, r.billing_currency))


def gpu_hours_by_pool(
    client: Client | None, cfg: lake.LakeConfig, snapshots: dict[str, int] | None = None
) -> list[PoolHours]:
    """Billed instance-hours and GPU-hours of compute usage per GPU pool (family/region)."""
    from dask import delayed

    scan = plan(cfg, "billing_facts", _snapshot(snapshots, "billing_facts"))
    if not scan.files:
        return []
    parts = [delayed(_pool_partial)(scan, path) for path in scan.files]
    table = _compute(client, "GPU-hours by pool", _tree(parts, _combine, ("pool", "x_gpu_count"), ("hours",)))
    pools: dict[str | None, tuple[Decimal, Decimal | None]] = {}
    for row in table.to_pylist():
        hours, gpu_hours = pools.get(row["pool"], (Decimal(0), None))
        if row["x_gpu_count"] is not None:
            gpu_hours = (gpu_hours or Decimal(0)) + row["hours"] * row["x_gpu_count"]
        pools[row["pool"]] = (hours + row["hours"], gpu_hours)
    found = [PoolHours(pool, hours, gpu_hours) for pool, (hours, gpu_hours) in pools.items()]
    return sorted(found, key=lambda r: (r.pool is None, r.pool or ""))


def spend_explained(
    client: Client | None,
    cfg: lake.LakeConfig,
    start: date | datetime,
    end: date | datetime,
    snapshots: dict[str, int] | None = None,
) -> list[ExplainedSpend]:
    """The spend-explained mart for charges starting in [start, end): GPU usage cost per currency
    and the part of it on lines whose job_id tag names a job of job_run_facts.

    A broadcast join: the distinct job ids (one task per job-run file, unioned) go to every
    billing task, which looks each line's tag up in them; the job runs are thousands of rows,
    the billing lines millions.
    """
    from dask import delayed

    start, end = _at_midnight(start), _at_midnight(end)
    billing = plan(cfg, "billing_facts", _snapshot(snapshots, "billing_facts"))
    jobs = plan(cfg, "job_run_facts", _snapshot(snapshots, "job_run_facts"))
    if not billing.files:
        return []
    job_ids = _tree(
        [delayed(_job_ids_partial)(jobs, path) for path in jobs.files] or [delayed(set)()], _union
    )
    parts = [delayed(_explained_partial)(billing, path, job_ids, start, end) for path in billing.files]
    table = _compute(
        client, "spend explained", _tree(parts, _combine, ("billing_currency",), ("cost", "explained"))
    )
    found = []
    for row in sorted(table.to_pylist(), key=lambda r: r["billing_currency"]):
        cost, explained = row["cost"], row["explained"]
        if cost is None:  # the currency's lines all fell outside the window in every file
            continue
        share = float((explained or Decimal(0)) / cost) if cost else None
        found.append(ExplainedSpend(row["billing_currency"], cost, explained, share))
    return found


def _at_midnight(day: date | datetime) -> datetime:
    return day if isinstance(day, datetime) else datetime(day.year, day.month, day.day)


# ---------------------------------------------------------------------- DuckDB's figures


def duckdb_monthly_totals(con: duckdb.DuckDBPyConnection) -> list[MonthlyTotal]:
    """The same figures by DuckDB on `con` (in the lake mode, its views over the same snapshot)."""
    return [MonthlyTotal(*row) for row in con.execute(sql("distributed/account_month_totals")).fetchall()]


def duckdb_gpu_hours_by_pool(con: duckdb.DuckDBPyConnection) -> list[PoolHours]:
    rows = [PoolHours(*row) for row in con.execute(sql("distributed/gpu_hours_by_pool")).fetchall()]
    return sorted(rows, key=lambda r: (r.pool is None, r.pool or ""))


def duckdb_spend_explained(
    con: duckdb.DuckDBPyConnection, start: date | datetime, end: date | datetime
) -> list[ExplainedSpend]:
    rows = con.execute(sql("marts/spend_explained"), {"start": start, "end": end}).fetchall()
    return [ExplainedSpend(currency, cost, explained, share) for currency, cost, explained, share in rows]
