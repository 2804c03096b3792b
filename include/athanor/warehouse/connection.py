"""Opening the warehouse: one place sets the session (memory, threads, UTC) and the schema is current.

DuckDB lets one process at a time open the file for writing (and none while a reader holds
it). A writer that finds it held waits up to `wait_s`, then fails with `WarehouseBusy`,
whose message names the holder.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

logger = logging.getLogger(__name__)

LOCK_POLL_S = 0.25  # how often a waiting writer tries the lock again
# DuckDB's message when another process holds the file (2.0): "... Conflicting lock is held
# in /usr/bin/python3.11 (PID 1234) ...".
_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


class WarehouseBusy(duckdb.IOException):
    """Another process held the warehouse file for longer than the wait; `str()` is one line.

    A `duckdb.IOException`, so code that falls back on a lock conflict still does.
    """


def connect(
    path: Path | str,
    *,
    read_only: bool = False,
    memory_limit: str = "2GB",
    threads: int = 2,
    wait_s: float = 0.0,
    lake_views: bool = True,
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse file (created with its schema when new, unless read-only).

    While another process holds the file, try again for up to `wait_s` seconds.
    `lake_views=False`: no views of the lake's fact tables on this connection (lake mode).
    """
    path = Path(path)
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    con = _open(path, read_only=read_only, wait_s=wait_s)
    configure(con, memory_limit=memory_limit, threads=threads)
    if not read_only:
        from athanor.warehouse.migrations import migrate  # it needs transaction(), below

        migrate(con)
    from athanor.warehouse import lake

    # The lake mode: the fact tables become views over their Iceberg tables' current snapshots.
    if lake_views:
        lake.attach(con, lake.config())
    return con


def _open(path: Path, *, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + max(wait_s, 0.0)
    waiting = False
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            holder = lock_holder(exc)
            if holder is None:
                raise  # not a lock conflict: a missing folder, a corrupt file
            left = deadline - time.monotonic()
            if left <= 0:
                raise WarehouseBusy(
                    f"{path} is held by {holder}; gave up after waiting {wait_s:g} s "
                    "(ATHANOR_WRITER_WAIT_S); analysts should read the snapshot"
                ) from exc
            if not waiting:
                logger.info("%s is held by %s; waiting up to %g s for it", path, holder, wait_s)
                waiting = True
            time.sleep(min(LOCK_POLL_S, left))


def lock_holder(exc: BaseException) -> str | None:
    """Who holds the file, from DuckDB's lock-conflict message: 'PID 1234 (python3.11 athanor)'.

    None when `exc` is not a lock conflict. Only program names are shown, never arguments:
    a command line can carry SQL or credentials, and this text goes to logs and alerts.
    """
    text = str(exc)
    if "Could not set lock" not in text and "Conflicting lock" not in text:
        return None
    found = _HOLDER.search(text)
    if not found:
        return "another process"
    pid = found["pid"]
    names = [Path(found["program"]).name]
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        argv = []
    # A Python program: its script says more than the interpreter does (`athanor`, `airflow`).
    if len(argv) > 1 and names[0].startswith("python") and argv[1] and not argv[1].startswith(b"-"):
        names.append(Path(argv[1].decode(errors="replace")).name)
    return f"PID {pid} ({' '.join(names)})"


def configure(con: duckdb.DuckDBPyConnection, *, memory_limit: str = "2GB", threads: int = 2) -> None:
    """The session settings every warehouse connection runs with."""
    con.execute(f"set memory_limit = '{memory_limit}'")
    con.execute(f"set threads = {int(threads)}")
    # Every timestamp in the warehouse is UTC; offsets in source files are converted on read.
    con.execute("set TimeZone = 'UTC'")


@contextmanager
def any_insertion_order(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """While inside, let DuckDB write rows in whatever order its threads finish them.

    For inserts whose readers never rely on row order: fact rows carry their own lineage
    (source_file, source_row). Keeping the order makes DuckDB insert on one thread (10M FOCUS
    CSV.gz rows: the staging insert takes 32 s, against 27 s without). A COPY has an option of
    its own, `preserve_order`, which the snapshot's Parquet files use. The setting is global to
    the database instance: the previous value comes back afterwards (before the load's quality
    gate, whose examples some rules take in scan order). A cursor of its own sets it, because
    the caller's transaction may be aborted by then, and an aborted transaction refuses
    statements.
    """
    with con.cursor() as own:
        before = bool(own.execute("select current_setting('preserve_insertion_order')").fetchone()[0])
        own.execute("set preserve_insertion_order = false")
        try:
            yield
        finally:
            own.execute(f"set preserve_insertion_order = {before}")


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
