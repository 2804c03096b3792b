"""The analysts' read-only copy of the warehouse: published atomically, opened safely."""

from __future__ import annotations

import os
import re
from pathlib import Path
from shutil import copyfile

import duckdb


def stage_snapshot(con: duckdb.DuckDBPyConnection, warehouse: Path, snapshot: Path) -> Path:
    """Copy the warehouse beside `snapshot` under a temporary name, for the caller to rename.

    On any failure (a full disk above all) the partial copy is removed before the error
    goes up: left behind, it would keep the disk full and fail the next run at connect.
    Copies left by runs that were killed are removed first, for the same reason.
    """
    con.execute("checkpoint")
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_copies(snapshot)
    tmp = snapshot.with_name(f".{snapshot.name}.{os.getpid()}.tmp")
    try:
        copyfile(warehouse, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def remove_stale_copies(snapshot: Path) -> list[Path]:
    """Remove temporary copies of `snapshot` whose process is gone; returns what was removed."""
    pattern = re.compile(rf"\.{re.escape(snapshot.name)}\.(\d+)\.tmp")
    removed = []
    for path in snapshot.parent.glob(f".{snapshot.name}.*.tmp"):
        found = pattern.fullmatch(path.name)
        if found and not _alive(int(found[1])):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process is not copying yet: a copy with its number is a leftover
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def publish_snapshot(con: duckdb.DuckDBPyConnection, warehouse: Path, snapshot: Path) -> Path:
    """Publish a read-only copy for analysts: write it beside, then rename over the old one.

    A rename is atomic on one filesystem, so the path always names a whole snapshot,
    never a half-written file, and never the writer's lock. Readers should open it with
    `open_snapshot`, which also survives a rename landing in the middle of DuckDB's open.
    The report publishes the snapshot together with itself (`athanor.publish.build_report`).
    """
    tmp = stage_snapshot(con, warehouse, snapshot)
    try:
        os.replace(tmp, snapshot)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
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
