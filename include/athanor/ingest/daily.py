"""The billing summaries (`billing_daily`, `billing_gpu_hourly`, `billing_job_daily`), kept
partition by partition by the load.

A billing load delivers whole (billing account, billing period) partitions: its rows replace
what earlier loads held for them (`sql/ingest/delete_restated.sql`). The summaries follow the
same rule inside the load's transaction: the delivered partitions' sums are deleted and summed
again from the load's own rows, so a nightly run costs what its delivery holds, not what the
warehouse holds. The readers that used to scan every billing line of the history (the spend
watch's daily series, the currency-history rule, the GPU demand mart, the costs by job tag)
read these instead.

A warehouse whose billing_facts was written outside the load (by hand, a repair) is not
covered: its row count differs from the lines the summaries count. The readers then sum the
lines themselves, as before the summaries existed (`daily_source`, `gpu_hourly_source`);
`billing_job_daily`, which the analysts' view job_run_costs reads, is summed again instead, by
the night's validate stage (`cover_every_job_line`).
"""

from __future__ import annotations

import logging

import duckdb

from athanor.warehouse import lake, sql, transaction

logger = logging.getLogger(__name__)

SUMMARIES = ("billing_daily", "billing_gpu_hourly", "billing_job_daily")


def refresh_billing_daily(con: duckdb.DuckDBPyConnection, load_id: str) -> dict[str, tuple[int, int]]:
    """Replace the sums of the partitions load `load_id` delivers in each of `SUMMARIES`; per
    table, (rows deleted, rows written).

    Call inside the load's transaction, after its rows are in `billing_facts` (staged, in the
    lake mode): with `cover_every_job_line`, the one writer of the summaries after the schema's backfill.
    """
    out = {}
    for table in SUMMARIES:
        deleted = con.execute(sql(f"ingest/{table}_delete"), {"load_id": load_id}).fetchone()[0]
        written = _insert_sums(con, table, "load_id = $load_id", {"load_id": load_id})
        logger.info("%s: load %s: %d rows of its partitions replaced by %d", table, load_id, deleted, written)
        out[table] = (int(deleted), written)
    return out


def _insert_sums(con: duckdb.DuckDBPyConnection, table: str, where: str, params: dict[str, str]) -> int:
    """Add to summary `table` the sums of the billing lines `where` selects; rows written."""
    # Spelled out, so the one-writer-per-table scan (tests/unit/test_warehouse_writers.py) sees each.
    insert = {
        "billing_daily": "insert into billing_daily by name ",
        "billing_gpu_hourly": "insert into billing_gpu_hourly by name ",
        "billing_job_daily": "insert into billing_job_daily by name ",
    }[table]
    return int(con.execute(insert + sql(f"ingest/{table}_lines", where=where), params).fetchone()[0])


def cover_every_job_line(con: duckdb.DuckDBPyConnection) -> int | None:
    """Sum `billing_job_daily` again from every billing line when it does not count them all;
    the rows written, or None when it did. job_run_costs reads only the summary, so a night
    checks it once (the validate stage) before anything publishes from it.

    It misses lines in a warehouse loaded before the table existed in the lake mode (the
    schema's backfill reads the file's empty billing_facts there), or whose billing_facts was
    written outside the load. In the lake mode billing_daily is the count to meet (counting the
    lake's view would read it whole): a load keeps both in one transaction.
    """
    summed = con.execute("select coalesce(sum(line_items), 0) from billing_job_daily").fetchone()[0]
    if lake.attached(con):
        lines = con.execute("select coalesce(sum(line_items), 0) from billing_daily").fetchone()[0]
    else:
        lines = con.execute("select count(*) from billing_facts").fetchone()[0]
    if summed == lines:
        return None
    logger.warning(
        "billing_job_daily counts %d billing lines of %d: summing it again from every line", summed, lines
    )
    with transaction(con):
        con.execute("delete from billing_job_daily")
        written = _insert_sums(con, "billing_job_daily", "true", {})
    logger.info("billing_job_daily: %d rows written from every billing line", written)
    return written


def summaries_cover(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the summaries account for every billing line: their line count equals the table's.

    Both counts are cheap (DuckDB keeps a table's row count; billing_daily is small). In the lake
    mode only loads write billing_facts, and counting its view would read the lake: trusted.
    """
    if lake.attached(con):
        return True
    facts = con.execute("select count(*) from billing_facts").fetchone()[0]
    summed = con.execute("select coalesce(sum(line_items), 0) from billing_daily").fetchone()[0]
    if facts != summed:
        logger.warning(
            "billing_daily counts %d billing lines, billing_facts holds %d (rows written outside the "
            "load?): reading the lines themselves",
            summed,
            facts,
        )
    return facts == summed


def daily_source(con: duckdb.DuckDBPyConnection) -> str:
    """What to read billing_daily's rows from: the table, or the same sums of every line."""
    return "billing_daily" if summaries_cover(con) else f"({sql('ingest/billing_daily_lines', where='true')})"


def gpu_hourly_source(con: duckdb.DuckDBPyConnection) -> str:
    """What to read billing_gpu_hourly's rows from: the table, or the same sums of every line."""
    if summaries_cover(con):
        return "billing_gpu_hourly"
    return f"({sql('ingest/billing_gpu_hourly_lines', where='true')})"
