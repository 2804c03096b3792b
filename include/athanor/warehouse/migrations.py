"""The warehouse schema: the DDL under `sql/schema/` and the reference tables, applied once per version.

Each definition (a schema file; a reference table, its SQL with its data file) is recorded in
`schema_migrations` with the SHA-256 of what was applied. Opening a warehouse whose rows all
match the package applies nothing. Otherwise, in one transaction, the reference tables that
changed are reloaded, then every schema file runs again in name order. The files are
idempotent (`create table if not exists`, `add column if not exists`, `create or replace
view`), so a warehouse of any earlier version, recorded or not, gains what it lacks; running
all of them is also what the comments need, since `create or replace` drops an object's
comments and `090_comments.sql` sets them again.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from athanor.reference import DATA_DIR
from athanor.reference.paths import effective
from athanor.warehouse.connection import transaction
from athanor.warehouse.queries import SQL_DIR
from athanor.warehouse.rows import insert_rows

log = logging.getLogger(__name__)

SCHEMA_DIR = SQL_DIR / "schema"
# Reference table -> the data files its SQL (sql/reference/<name>.sql) loads, by parameter name.
REFERENCE_DATA = {
    "instance_types": {"instances": DATA_DIR / "instances.csv", "prices": DATA_DIR / "prices.csv"},
    "service_names": {"services": DATA_DIR / "services.csv"},
    "units": {"units": DATA_DIR / "units.csv"},
}


@dataclass(frozen=True)
class Definition:
    name: str  # 'schema/001_loads' | 'reference/instance_types'
    sha256: str
    statement: str
    params: dict[str, Any] | None = None


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def references() -> list[Definition]:
    """The reference tables: loaded before the schema, whose comments and views describe them."""
    out = []
    for table, packaged in REFERENCE_DATA.items():
        # A refreshed price catalogue (athanor gpu-catalog --refresh) replaces the packaged file.
        files = {name: effective(path) for name, path in packaged.items()}
        statement = (SQL_DIR / "reference" / f"{table}.sql").read_text()
        sha = _digest(statement.encode(), *(files[name].read_bytes() for name in sorted(files)))
        params = {name: str(path) for name, path in files.items()}
        out.append(Definition(f"reference/{table}", sha, statement, params))
    return out


def schema() -> list[Definition]:
    """Every `sql/schema/*.sql`, in name order (the order they must run in)."""
    return [
        Definition(f"schema/{file.stem}", _digest(text.encode()), text)
        for file in sorted(SCHEMA_DIR.glob("*.sql"))
        for text in [file.read_text()]
    ]


def applied(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Definition name -> SHA-256 as recorded in the warehouse (empty before versioning existed)."""
    try:
        return dict(con.execute("select name, sha256 from schema_migrations").fetchall())
    except duckdb.CatalogException:
        return {}


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Bring the warehouse's schema and reference tables up to date; the definitions that changed.

    An empty list means the warehouse was current and nothing ran.
    """
    current = references() + schema()
    for attempt in range(_ATTEMPTS):
        recorded = applied(con)
        stale = [d for d in current if recorded.get(d.name) != d.sha256]
        if not stale:
            return []
        try:
            return _apply(con, current, stale)
        except duckdb.TransactionException:
            # Another connection of this process (the same database instance) is migrating the
            # file: DuckDB refuses the second writer of the same catalog entries. Wait, look again.
            if attempt == _ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    return []


_ATTEMPTS = 10


def _apply(con: duckdb.DuckDBPyConnection, current: list[Definition], stale: list[Definition]) -> list[str]:
    started = time.monotonic()
    at = datetime.now(UTC).replace(tzinfo=None)
    ddl = [d for d in current if d.name.startswith("schema/")]
    reloaded = [d for d in stale if d.name.startswith("reference/")]
    with transaction(con):
        for d in reloaded:
            con.execute(d.statement, d.params)
        for d in ddl:
            con.execute(d.statement)
        _record(con, reloaded + ddl, current, at)
    names = [d.name for d in stale]
    log.info("warehouse schema: applied %s (%.2fs)", ", ".join(names), time.monotonic() - started)
    return names


def _record(
    con: duckdb.DuckDBPyConnection, done: list[Definition], current: list[Definition], at: datetime
) -> None:
    """The one writer of `schema_migrations`: what was applied, and nothing the package no longer has."""
    insert_rows(
        con,
        "schema_migrations",
        [{"name": d.name, "sha256": d.sha256, "applied_at": at} for d in done],
        replace=True,
    )
    con.execute("delete from schema_migrations where not list_contains(?, name)", [[d.name for d in current]])
