"""Writing rows: every statement names the columns it fills.

An insert that relies on the table's column order breaks, or worse, shifts values into the
wrong columns, the day a column is added; tests/unit/test_warehouse_writers.py keeps them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import duckdb

from athanor.warehouse.queries import quote_ident


def insert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: Iterable[Mapping[str, Any]],
    *,
    replace: bool = False,
) -> int:
    """Insert rows given as {column: value}; columns a row leaves out take their default (null).

    `replace`: a row whose primary key is already there replaces it (`insert or replace`).
    Values are bound as DuckDB named parameters; tuples go in as lists (DuckDB would read a
    tuple as a STRUCT). Returns the number of rows written.
    """
    rows = list(rows)
    if not rows:
        return 0
    columns = list(rows[0])
    if any(list(row) != columns for row in rows):
        raise ValueError(f"rows for {table} name different columns")
    verb = "insert or replace" if replace else "insert"
    names = ", ".join(quote_ident(c) for c in columns)
    values = ", ".join(f"${c}" for c in columns)
    con.executemany(
        f"{verb} into {quote_ident(table)} ({names}) values ({values})",
        [{c: list(v) if isinstance(v, tuple) else v for c, v in row.items()} for row in rows],
    )
    return len(rows)
