"""The billing summaries (`billing_daily`, `billing_gpu_hourly`), kept partition by partition by the load.

A billing load delivers whole (billing account, billing period) partitions: its rows replace
what earlier loads held for them (`sql/ingest/delete_restated.sql`). The summary follows the
same rule inside the load's transaction: the delivered partitions' daily sums are deleted and
summed again from the load's own rows, so a nightly run costs what its delivery holds, not
what the warehouse holds. The readers that used to scan every billing line of the history (the
spend watch's daily series, the currency-history rule, the GPU demand mart) read these instead.
"""

from __future__ import annotations

import logging

import duckdb

from athanor.warehouse import sql

logger = logging.getLogger(__name__)


def refresh_billing_daily(con: duckdb.DuckDBPyConnection, load_id: str) -> dict[str, tuple[int, int]]:
    """Replace the sums of the partitions load `load_id` delivers in `billing_daily` and
    `billing_gpu_hourly`; per table, (rows deleted, rows written).

    Call inside the load's transaction, after its rows are in `billing_facts` (staged, in the
    lake mode): the one writer of both tables after the schema's backfill.
    """
    out = {}
    for table in ("billing_daily", "billing_gpu_hourly"):
        deleted = con.execute(sql(f"ingest/{table}_delete"), {"load_id": load_id}).fetchone()[0]
        written = con.execute(sql(f"ingest/{table}_insert"), {"load_id": load_id}).fetchone()[0]
        logger.info("%s: load %s: %d rows of its partitions replaced by %d", table, load_id, deleted, written)
        out[table] = (int(deleted), int(written))
    return out
