"""Analysts' SQL on the warehouse, read-only in fact, not by convention.

`athanor query` runs whatever text it is given, so two locks guard the warehouse:

1. Only reading statements run: each statement of the text is parsed by DuckDB and its
   kind checked against `ALLOWED` before anything executes; a script with one refused
   statement runs none of them.
2. The session itself cannot reach anything else: the file is opened read-only, DuckDB's
   external access is off (no COPY, EXPORT, ATTACH of other files, `read_csv`/`read_text`/
   `glob` of local files, no http, no extension install or load) and the configuration is
   locked, so no later `SET` or `PRAGMA` can turn any of that back on. The one exception is
   the snapshot's own Parquet folder, which its fact tables' views read (`snapshots`).

The second lock alone would suffice; the first names the refused statement in plain words
and keeps the guarantee if a future DuckDB lets something new through the settings.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from athanor.warehouse.snapshots import manifest_dirs, open_snapshot

# The statement kinds `athanor query` runs. SELECT covers WITH, FROM-first queries, VALUES,
# TABLE, DESCRIBE, SHOW and SUMMARIZE; PRAGMA and CALL the catalog functions
# (`pragma show_tables`, `call pragma_database_size()`). A PRAGMA or CALL that changes a
# setting or touches a file is refused by the locked session.
ALLOWED = frozenset(
    {
        duckdb.StatementType.SELECT,
        duckdb.StatementType.EXPLAIN,
        duckdb.StatementType.PRAGMA,
        duckdb.StatementType.CALL,
    }
)
ALLOWED_TEXT = "SELECT, EXPLAIN, PRAGMA and CALL"

# Applied in this order; `lock_configuration` last, since after it no setting changes.
LOCKDOWN = (
    ("enable_external_access", "false"),
    ("autoinstall_known_extensions", "false"),
    ("autoload_known_extensions", "false"),
    ("allow_community_extensions", "false"),
    ("allow_persistent_secrets", "false"),
    ("lock_configuration", "true"),
)


class QueryRefused(ValueError):
    """A statement `athanor query` does not run; `str()` is the one-line reason."""


def open_readonly(
    path: Path | str, *, snapshot: bool, memory_limit: str = "2GB", threads: int = 2
) -> duckdb.DuckDBPyConnection:
    """Open a warehouse file (the published snapshot, or the live file) for analysts' SQL.

    The live file is opened read-only; DuckDB then refuses it while a writer holds it
    (`duckdb.IOException`), and holds a shared lock while open, so a load cannot start
    until the query ends. The snapshot is never written, so readers of it never meet a writer.
    """
    con = open_snapshot(path) if snapshot else duckdb.connect(str(path), read_only=True)
    try:
        con.execute(f"set memory_limit = '{memory_limit}'")
        con.execute(f"set threads = {int(threads)}")
        con.execute("set TimeZone = 'UTC'")
        # Before external access goes off: afterwards DuckDB refuses to widen what it allows.
        folders = [folder.rstrip("/") + "/" for folder in manifest_dirs(con)] if snapshot else []
        if folders:
            con.execute("set allowed_directories = ?", [folders])
        for name, value in LOCKDOWN:
            con.execute(f"set {name} = {value}")
    except BaseException:
        con.close()
        raise
    return con


def check_statements(con: duckdb.DuckDBPyConnection, text: str) -> None:
    """Refuse the whole text unless every statement in it is of an allowed kind."""
    statements = con.extract_statements(text)
    if not statements:
        raise QueryRefused("athanor query: no SQL statement given")
    for statement in statements:
        try:
            kind = statement.type
        except ValueError:
            # The Python binding does not name every kind DuckDB parses (UPDATE EXTENSIONS).
            kind = None
        if kind not in ALLOWED:
            raise QueryRefused(
                f"athanor query is read-only: {_kind_name(statement, kind)} is not allowed "
                f"(it runs {ALLOWED_TEXT} only)"
            )


def _kind_name(statement: object, kind: duckdb.StatementType | None) -> str:
    """The refused statement in the user's words (INSTALL, TRUNCATE, USE), not DuckDB's kind
    (LOAD, DELETE, SET); DuckDB's kind when the text starts otherwise (WITH ... DELETE)."""
    words = str(getattr(statement, "query", "")).split()
    first = words[0].upper() if words else ""
    if kind is None or first == "FORCE":  # UPDATE EXTENSIONS, FORCE INSTALL
        return " ".join(words[:2]).upper() or "this statement"
    if first == "PRAGMA":  # the reading pragmas are allowed; this one sets an option
        return "a PRAGMA that sets an option"
    if first.isalpha() and first != "WITH":
        return first
    return kind.name.replace("_", " ")


def run_readonly(con: duckdb.DuckDBPyConnection, text: str) -> tuple[list[str], list[tuple]]:
    """Column names and rows of the last statement of `text`, after `check_statements`.

    Raises `QueryRefused` for a refused statement or a locked-out access, and DuckDB's own
    error for anything else (a typo, a missing table).
    """
    check_statements(con, text)
    try:
        cur = con.execute(text)
    except duckdb.PermissionException as exc:
        raise QueryRefused(
            f"athanor query reads only the warehouse: no files, network or extensions ({_first_line(exc)})"
        ) from None
    except duckdb.InvalidInputException as exc:
        message = _first_line(exc)
        if "configuration has been locked" in message:
            raise QueryRefused(f"athanor query cannot change settings ({message})") from None
        if "read-only mode" in message:
            raise QueryRefused(f"athanor query is read-only ({message})") from None
        raise
    except duckdb.BinderException as exc:
        message = _first_line(exc)
        # The snapshot's fact tables are views over Parquet files: a write to one fails to bind.
        if "base table" in message:
            raise QueryRefused(f"athanor query is read-only ({message})") from None
        raise
    columns = [d[0] for d in cur.description or []]
    return columns, (cur.fetchall() if columns else [])


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
