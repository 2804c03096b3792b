"""Analysts' SQL on the warehouse, read-only in fact, not by convention.

`athanor query` runs whatever text it is given, so two locks guard the warehouse:

1. Only reading statements run: each statement of the text is parsed by DuckDB and its
   kind checked against `ALLOWED` before anything executes; a script with one refused
   statement runs none of them.
2. The session itself cannot reach anything else: the file is opened read-only, DuckDB's
   external access is off (no COPY, EXPORT, ATTACH of other files, `read_csv`/`read_text`/
   `glob` of local files, no http, no extension install or load) and the configuration is
   locked, so no later `SET` or `PRAGMA` can turn any of that back on. The one exception is
   the Parquet files the fact tables' views read, the snapshot's own (`snapshots`) and, in the
   lake mode, the lake's data files: each is allowed by its exact path (`allowed_paths`),
   never a folder, so no statement that slipped through could create a file beside them or
   reach a sibling folder through `..`.

`EXPLAIN ANALYZE` runs the statement it explains, so an `EXPLAIN` is checked by the statement
inside it: it runs where that statement would. A query also has a time limit (`run_readonly`)
and a cap on the spill files it may write (`open_readonly`): settings `ATHANOR_QUERY_TIMEOUT_S`
and `ATHANOR_QUERY_MAX_TEMP` (a cross join once spilled 1.3 GB before it was killed).

The second lock alone would suffice; the first names the refused statement in plain words
and keeps the guarantee if a future DuckDB lets something new through the settings.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from athanor.warehouse.snapshots import manifest_files, open_snapshot

if TYPE_CHECKING:
    from athanor.settings import Settings

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
    path: Path | str,
    *,
    snapshot: bool,
    memory_limit: str = "2GB",
    threads: int = 2,
    max_temp: str = "1GB",
    before_lockdown: Callable[[duckdb.DuckDBPyConnection], list[str]] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open a warehouse file (the published snapshot, or the live file) for analysts' SQL.

    `before_lockdown` runs on the connection while it may still be set up (the lake's views)
    and returns the files those need to read, allowed by their exact paths.

    The live file is opened read-only; DuckDB then refuses it while a writer holds it
    (`duckdb.IOException`), and holds a shared lock while open, so a load cannot start
    until the query ends. The snapshot is never written, so readers of it never meet a writer.
    """
    con = open_snapshot(path) if snapshot else duckdb.connect(str(path), read_only=True)
    try:
        con.execute(f"set memory_limit = '{memory_limit}'")
        con.execute(f"set threads = {int(threads)}")
        con.execute("set TimeZone = 'UTC'")
        con.execute("set max_temp_directory_size = ?", [max_temp])
        # Before external access goes off: afterwards DuckDB refuses to widen what it allows.
        # Files, not their folder: an allowed folder is writable as well as readable.
        files = manifest_files(con) if snapshot else []
        if before_lockdown is not None:
            files += before_lockdown(con)
        if files:
            con.execute("set allowed_paths = ?", [files])
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
        _check_statement(con, statement, explained=False)


def _check_statement(con: duckdb.DuckDBPyConnection, statement: object, *, explained: bool) -> None:
    try:
        kind = statement.type  # type: ignore[attr-defined]
    except ValueError:
        # The Python binding does not name every kind DuckDB parses (UPDATE EXTENSIONS).
        kind = None
    if kind not in ALLOWED:
        what = _kind_name(statement, kind)
        inside = f"EXPLAIN of {what}" if explained else what
        raise QueryRefused(
            f"athanor query is read-only: {inside} is not allowed (it runs {ALLOWED_TEXT} only)"
        )
    if kind == duckdb.StatementType.EXPLAIN:
        # EXPLAIN ANALYZE executes what it explains: the explained statement must pass too.
        _check_statement(con, _explained(con, str(statement.query)), explained=True)  # type: ignore[attr-defined]


def _explained(con: duckdb.DuckDBPyConnection, text: str) -> object:
    """The statement an `EXPLAIN [ANALYZE] [(options)] ...` explains, parsed by DuckDB."""
    tokens = duckdb.tokenize(text)
    ends = [start for start, _ in tokens[1:]] + [len(text)]
    # (where the word starts, the word): comments left out.
    words = [
        (start, text[start:end].strip())
        for (start, kind), end in zip(tokens, ends, strict=True)
        if kind != duckdb.token_type.comment
    ]
    after = 1  # words[0] is EXPLAIN; ANALYZE, or options in parentheses, may follow
    if after < len(words) and words[after][1].upper() == "ANALYZE":
        after += 1
    starts = [words[after][0]] if after < len(words) else []
    if after < len(words) and words[after][1] == "(":
        depth = 0
        for index in range(after, len(words)):
            depth += words[index][1].count("(") - words[index][1].count(")")
            if depth <= 0:
                starts += [words[index + 1][0]] if index + 1 < len(words) else []
                break
    for start in starts:
        # `explain (select 1)` explains a statement, `explain (analyze) ...` has options: whichever parses.
        try:
            inner = con.extract_statements(text[start:])
        except duckdb.Error:
            continue
        if len(inner) == 1:
            return inner[0]
    raise QueryRefused("athanor query is read-only: an EXPLAIN of a statement it cannot read is not allowed")


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


def run_readonly(
    con: duckdb.DuckDBPyConnection, text: str, *, timeout_s: float | None = None
) -> tuple[list[str], list[tuple]]:
    """Column names and rows of the last statement of `text`, after `check_statements`.

    Raises `QueryRefused` for a refused statement or a locked-out access, and DuckDB's own
    error for anything else (a typo, a missing table).
    """
    check_statements(con, text)
    try:
        with _time_limit(con, timeout_s):
            cur = con.execute(text)
            columns = [d[0] for d in cur.description or []]
            rows = cur.fetchall() if columns else []
    except duckdb.InterruptException:
        raise QueryRefused(
            f"athanor query stopped after {timeout_s:g} s, its time limit (ATHANOR_QUERY_TIMEOUT_S)"
        ) from None
    except duckdb.OutOfMemoryException as exc:
        raise QueryRefused(
            f"athanor query ran out of its memory or spill space ({_first_line(exc)}); "
            "narrow the query, or raise ATHANOR_DUCKDB_MEMORY_LIMIT / ATHANOR_QUERY_MAX_TEMP"
        ) from None
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
    return columns, rows


@contextmanager
def _time_limit(con: duckdb.DuckDBPyConnection, timeout_s: float | None) -> Iterator[None]:
    """Interrupt whatever `con` runs once `timeout_s` have passed (None: no limit)."""
    if timeout_s is None:
        yield
        return
    timer = threading.Timer(timeout_s, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def analyst_source(settings: Settings, warehouse: str | None, live: bool) -> tuple[Path, bool, str | None]:
    """Which file an analyst's command reads: (path, is it the snapshot, a note for stderr).

    The published snapshot, as `athanor query` reads, so a command never meets the nightly
    run's writer; `--live`, `--warehouse FILE`, or no snapshot published yet: the warehouse
    file itself, read-only. The note says when the snapshot is older than the warehouse.
    """
    live_path = Path(warehouse) if warehouse else settings.warehouse
    snapshot = not (warehouse or live) and settings.snapshot.exists()
    path = settings.snapshot if snapshot else live_path
    note = None
    if snapshot and live_path.exists() and live_path.stat().st_mtime_ns > path.stat().st_mtime_ns:
        published = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        note = (
            f"reading the snapshot published {published:%Y-%m-%d %H:%M} UTC; the warehouse "
            "has changed since (`--live` reads it)"
        )
    return path, snapshot, note


@contextmanager
def reading(path: Path, *, snapshot: bool, settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection for Athanor's own analyses (forecast, anomalies, gpu-usage,
    gpu-plan): the snapshot, or the live file as `connect(read_only=True)` opens it.

    Not locked down like `open_readonly`: these run the project's SQL, not an analyst's.
    """
    from athanor.warehouse import lake
    from athanor.warehouse.connection import configure, connect

    if not snapshot:
        with connect(path, read_only=True, memory_limit=settings.duckdb_memory_limit) as con:
            yield con
        return
    con = open_snapshot(path)
    try:
        configure(con, memory_limit=settings.duckdb_memory_limit, threads=settings.duckdb_threads)
        # The lake mode: the fact tables as the snapshot ids the published run read.
        lake.attach_for_query(con, settings, None, published=True)
        yield con
    finally:
        con.close()
