"""The `loads` ledger: one row per delivery Athanor has seen, whatever happened to it.

Its rows are written here and nowhere else: `record_load` (a delivery loaded or failed) and
`mark_replaced` (deliveries whose every row a restatement took away).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

import duckdb

from athanor.warehouse.rows import insert_rows


@dataclass(frozen=True, kw_only=True)
class LoadRecord:
    """One `loads` row, its fields in the table's order (sql/schema/001_loads.sql says what each holds)."""

    load_id: str
    kind: str  # billing | jobs | inventory | ebs
    source_format: str | None = None
    source_uri: str
    files: tuple[str, ...]
    checksum_sha256: str
    size_bytes: int
    row_count: int | None = None
    billing_periods: tuple[str, ...] | None = None
    billing_accounts: tuple[str, ...] | None = None
    status: str  # loaded | failed (replaced: see mark_replaced)
    message: str | None = None
    started_at: datetime
    finished_at: datetime | None


def record_load(con: duckdb.DuckDBPyConnection, record: LoadRecord) -> None:
    """Write a delivery's row; a delivery seen before (same load_id) is overwritten."""
    insert_rows(con, "loads", [asdict(record)], replace=True)


def mark_replaced(con: duckdb.DuckDBPyConnection, load_ids: list[str] | None = None) -> None:
    """Billing deliveries none of whose rows are left (a later delivery restated them all).

    `load_ids`: those deliveries, as the caller found them (the lake mode: `lake.emptied_loads`,
    which reads only the files that matter); else every load without a row in billing_facts.
    """
    if load_ids is not None:
        con.execute(
            """update loads set status = 'replaced'
               where kind = 'billing' and status = 'loaded' and list_contains(?, load_id)""",
            [load_ids],
        )
        return
    con.execute(
        """update loads set status = 'replaced'
           where kind = 'billing' and status = 'loaded'
             and load_id not in (select distinct load_id from billing_facts)"""
    )
