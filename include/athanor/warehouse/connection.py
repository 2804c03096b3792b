"""Opening the warehouse: one place sets the session (memory, threads, UTC) and the schema is current."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb


def connect(
    path: Path | str,
    *,
    read_only: bool = False,
    memory_limit: str = "2GB",
    threads: int = 2,
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse file (created with its schema when new, unless read-only)."""
    path = Path(path)
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path), read_only=read_only)
    configure(con, memory_limit=memory_limit, threads=threads)
    if not read_only:
        from athanor.warehouse.migrations import migrate  # it needs transaction(), below

        migrate(con)
    return con


def configure(con: duckdb.DuckDBPyConnection, *, memory_limit: str = "2GB", threads: int = 2) -> None:
    """The session settings every warehouse connection runs with."""
    con.execute(f"set memory_limit = '{memory_limit}'")
    con.execute(f"set threads = {int(threads)}")
    # Every timestamp in the warehouse is UTC; offsets in source files are converted on read.
    con.execute("set TimeZone = 'UTC'")


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One all-or-nothing unit of work: commit on success, roll back on any error."""
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")
