"""The warehouse schema: reference tables and the DDL under `sql/schema/`."""

from __future__ import annotations

import duckdb

from athanor.reference import DATA_DIR
from athanor.warehouse.queries import SQL_DIR, sql


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Reload the reference tables, then apply every `sql/schema/*.sql` in name order (each idempotent).

    Reference data first: the catalog comments in the schema folder describe it too.
    """
    con.execute(sql("reference/instance_types"), {"path": str(DATA_DIR / "instance_types.csv")})
    for file in sorted((SQL_DIR / "schema").glob("*.sql")):
        con.execute(file.read_text())
