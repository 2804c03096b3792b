"""Writing rows: every statement names the columns it fills.

An insert that relies on the table's column order breaks, or worse, shifts values into the
wrong columns, the day a column is added; tests/unit/test_warehouse_writers.py keeps them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import duckdb

from athanor.warehouse.queries import quote_ident

if TYPE_CHECKING:  # pyarrow is imported where a batch is built: the DAG files import this module
    import pyarrow as pa


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
    tuple as a STRUCT). From `ARROW_FROM_ROWS` rows on they go in as one Arrow table, one
    statement: DuckDB runs a parameterised insert once per row (480 forecast rows took 0.6 s).
    Where Arrow cannot type a column (mixed kinds of value), they are bound row by row as
    below. Either way the insert casts each value to its column's type. Returns the number of
    rows written.
    """
    rows = list(rows)
    if not rows:
        return 0
    columns = list(rows[0])
    if any(list(row) != columns for row in rows):
        raise ValueError(f"rows for {table} name different columns")
    verb = "insert or replace" if replace else "insert"
    names = ", ".join(quote_ident(c) for c in columns)
    bound = [{c: list(v) if isinstance(v, tuple) else v for c, v in row.items()} for row in rows]
    if len(rows) >= ARROW_FROM_ROWS and (batch := _arrow_table(bound)) is not None:
        con.register(_BATCH, batch)  # a name of this connection alone, until unregistered
        try:
            con.execute(f"{verb} into {quote_ident(table)} ({names}) select {names} from {_BATCH}")
        finally:
            con.unregister(_BATCH)
        return len(rows)
    values = ", ".join(f"${c}" for c in columns)
    con.executemany(f"{verb} into {quote_ident(table)} ({names}) values ({values})", bound)
    return len(rows)


ARROW_FROM_ROWS = 20
_BATCH = "_athanor_rows"


def _arrow_table(rows: list[dict[str, Any]]) -> pa.Table | None:
    """`rows` as an Arrow table, each column's type inferred from its values; None where a
    column mixes values Arrow gives no one type (a number and a text), a value is a mapping
    (a STRUCT whose fields would differ row to row), or decimals need more than 38 digits
    (Arrow's decimal256, which DuckDB does not read)."""
    import pyarrow as pa

    if any(isinstance(v, Mapping) for row in rows for v in row.values()):
        return None
    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        return None
    return None if any(pa.types.is_decimal256(field.type) for field in table.schema) else table
