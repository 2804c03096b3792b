"""The DuckDB warehouse: connections, schema migration, SQL files, analyst snapshots."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import duckdb

from athanor.reference import DATA_DIR

# The repository's sql/ folder, shipped inside the package (a link in a checkout).
SQL_DIR = Path(__file__).resolve().parents[1] / "sql"


@cache
def sql(name: str) -> str:
    """The text of `sql/<name>.sql` (one statement per file)."""
    return (SQL_DIR / f"{name}.sql").read_text()


def quote_ident(name: str) -> str:
    """Quote an identifier that comes from data (a column or tag key)."""
    return '"' + name.replace('"', '""') + '"'


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
    con.execute(f"set memory_limit = '{memory_limit}'")
    con.execute(f"set threads = {int(threads)}")
    # Every timestamp in the warehouse is UTC; offsets in source files are converted on read.
    con.execute("set TimeZone = 'UTC'")
    if not read_only:
        migrate(con)
    return con


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Reload the reference tables, then apply every `sql/schema/*.sql` in name order (each idempotent).

    Reference data first: the catalog comments in the schema folder describe it too.
    """
    con.execute(sql("reference/instance_types"), {"path": str(DATA_DIR / "instance_types.csv")})
    for file in sorted((SQL_DIR / "schema").glob("*.sql")):
        con.execute(file.read_text())


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


def publish_snapshot(con: duckdb.DuckDBPyConnection, warehouse: Path, snapshot: Path) -> Path:
    """Publish a read-only copy for analysts: write it beside, then rename over the old one.

    A rename is atomic on one filesystem, so the path always names a whole snapshot,
    never a half-written file, and never the writer's lock. Readers should open it with
    `open_snapshot`, which also survives a rename landing in the middle of DuckDB's open.
    """
    con.execute("checkpoint")
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    tmp = snapshot.with_name(f".{snapshot.name}.{os.getpid()}.tmp")
    shutil.copyfile(warehouse, tmp)
    os.replace(tmp, snapshot)
    return snapshot


def open_snapshot(path: Path | str, *, attempts: int = 20) -> duckdb.DuckDBPyConnection:
    """Open a published snapshot read-only, retrying if a publish swapped it mid-open.

    DuckDB 2.0 opens the file by its path several times while connecting (seen with
    strace); a rename between those opens pairs the old file's header with the new
    file's blocks and fails with an IO error. The inode tells whether that happened.
    """
    path = str(path)
    for _ in range(attempts):
        before = os.stat(path).st_ino
        try:
            con = duckdb.connect(path, read_only=True)
        except duckdb.IOException:
            if os.stat(path).st_ino != before:
                continue
            raise
        if os.stat(path).st_ino == before:
            con.execute("set TimeZone = 'UTC'")
            return con
        con.close()
    raise duckdb.IOException(f"{path} kept changing while it was being opened ({attempts} attempts)")
