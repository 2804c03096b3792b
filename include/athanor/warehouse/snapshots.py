"""The analysts' read-only copy of the warehouse: published atomically, opened safely."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb


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
