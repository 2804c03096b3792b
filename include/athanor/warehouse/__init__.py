"""The DuckDB warehouse: connections, schema migrations, the loads ledger, analyst snapshots.

- `connection`: `connect()` (session settings, schema brought up to date, a bounded wait while
  another process holds the file: `WarehouseBusy`) and `transaction()`;
- `migrations`: the schema under `sql/schema/` and the reference tables, applied once per version;
- `ledger`: the `loads` table, one row per delivery, and its one writer;
- `rows`: `insert_rows`, the way every writer inserts (columns named, values bound);
- `snapshots`: the read-only copy analysts open (staged, then renamed into place);
- `queries`: SQL text from `sql/`, and the one way fragments go into it;
- `docs`: docs/warehouse.md from the catalog comments.
"""

from athanor.warehouse.connection import WarehouseBusy, any_insertion_order, connect, transaction
from athanor.warehouse.ledger import LoadRecord, mark_replaced, record_load
from athanor.warehouse.migrations import migrate
from athanor.warehouse.queries import SQL_DIR, quote_ident, sql
from athanor.warehouse.rows import insert_rows
from athanor.warehouse.snapshots import open_snapshot, publish_snapshot, stage_snapshot

__all__ = [
    "SQL_DIR",
    "LoadRecord",
    "WarehouseBusy",
    "any_insertion_order",
    "connect",
    "insert_rows",
    "mark_replaced",
    "migrate",
    "open_snapshot",
    "publish_snapshot",
    "quote_ident",
    "record_load",
    "sql",
    "stage_snapshot",
    "transaction",
]
