"""Load billing deliveries into the warehouse: detect, check, stage, replace, reconcile.

A delivery is the set of files a provider writes for one export at one time (one
file, or the parts of a multi-part export). Each delivery loads in one
transaction: either all of it lands, with its ledger row and its reconciliation,
or nothing changes. A re-delivered billing period replaces what earlier
deliveries loaded for the same billing account and period, because providers
restate whole months.
"""

from __future__ import annotations

import gzip
import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from athanor import sources
from athanor.sources import BillingFormat
from athanor.warehouse import quote_ident, sql, transaction


class IngestError(Exception):
    """A delivery that cannot be loaded. `str()` is one line: file, row, column, rule, examples."""

    def __init__(
        self,
        file: str,
        rule: str,
        *,
        column: str | None = None,
        row: int | None = None,
        bad_rows: int | None = None,
        examples: Iterable[str] = (),
    ) -> None:
        self.file, self.rule, self.column, self.row = file, rule, column, row
        self.bad_rows, self.examples = bad_rows, list(examples)
        where = file + (f" row {row}" if row else "") + (f", column {column}" if column else "")
        detail = f"{where}: {rule}"
        if bad_rows is not None:
            detail += f" ({bad_rows} bad row{'s' if bad_rows != 1 else ''}"
            detail += f"; e.g. {', '.join(self.examples)})" if self.examples else ")"
        super().__init__(detail)


@dataclass(frozen=True)
class LoadResult:
    load_id: str
    files: tuple[str, ...]
    source_format: str
    status: str  # loaded | unchanged
    rows: int
    billed_cost: dict[str, Decimal] = field(default_factory=dict)  # per currency, never summed across
    billing_periods: tuple[str, ...] = ()
    replaced_rows: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        name = ", ".join(self.files)
        if self.status == "unchanged":
            return f"{name}: unchanged since load {self.load_id}, skipped"
        money = ", ".join(f"{cur} {amount:,.2f}" for cur, amount in sorted(self.billed_cost.items()))
        periods = ", ".join(self.billing_periods)
        line = f"{name}: {self.source_format}, {self.rows:,} rows, billed {money}, periods {periods}"
        if self.replaced_rows:
            line += f", restated ({self.replaced_rows:,} earlier rows replaced)"
        return line + f" [{self.seconds:.1f}s]"


def checksum(files: Iterable[Path]) -> tuple[str, int]:
    """sha256 over the files' bytes in name order, and their total size."""
    digest, size = hashlib.sha256(), 0
    for file in sorted(files, key=lambda p: p.name):
        digest.update(file.name.encode() + b"\0")
        with file.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
    return digest.hexdigest(), size


def container(path: Path) -> str:
    """'parquet', 'csv.gz' or 'csv' from the file's first bytes (names lie)."""
    with path.open("rb") as f:
        head = f.read(4)
    if not head:
        raise IngestError(path.name, "file is empty (0 bytes)")
    if head == b"PAR1":
        return "parquet"
    if head[:2] == b"\x1f\x8b":
        return "csv.gz"
    return "csv"


def _reader(path: Path) -> tuple[str, dict[str, object]]:
    """A table-function call that reads the raw file, and its bound parameters."""
    kind = container(path)
    if kind == "parquet":
        return "read_parquet($path)", {"path": str(path)}
    # Everything as text first: casts happen in staging, where a bad value can be
    # reported with its row instead of failing the sniffer. Real FOCUS exports
    # write nulls as the literal NULL (Oracle rows use empty strings).
    options = "all_varchar = true, header = true, nullstr = ['NULL', ''], encoding = 'utf-8'"
    compression = "gzip" if kind == "csv.gz" else "none"
    return f"read_csv($path, {options}, compression = '{compression}')", {"path": str(path)}


def read_columns(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, str]:
    """Column name -> DuckDB type of a billing file, without reading its rows."""
    reader, params = _reader(path)
    try:
        rel = con.execute(f"describe select * from {reader}", params).fetchall()
    except (duckdb.Error, EOFError, gzip.BadGzipFile) as exc:
        raise IngestError(path.name, f"unreadable: {_first_line(exc)}") from None
    return {name: dtype for name, dtype, *_ in rel}


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def detect_format(con: duckdb.DuckDBPyConnection, path: Path) -> BillingFormat:
    columns = read_columns(con, path)
    fmt = sources.detect(list(columns))
    if fmt is None:
        shown = ", ".join(list(columns)[:6])
        raise IngestError(path.name, f"not a known billing export format (columns: {shown}, ...)")
    return fmt


def _stage_source(con: duckdb.DuckDBPyConnection, path: Path, fmt: BillingFormat) -> int:
    """Read the file into temp table `src_raw` and expose it as view `src`; returns data rows."""
    columns = read_columns(con, path)
    missing = [c for c in fmt.required if c not in columns]
    if missing:
        raise IngestError(path.name, f"missing mandatory {fmt.description} column(s)", column=", ".join(missing))
    reader, params = _reader(path)
    try:
        con.execute(f"create or replace temp table src_raw as select * from {reader}", params)
    except (duckdb.Error, EOFError, gzip.BadGzipFile) as exc:
        raise IngestError(path.name, f"unreadable: {_first_line(exc)}") from None
    rows, first_rowid = con.execute("select count(*), min(rowid) from src_raw").fetchone()
    if rows == 0:
        raise IngestError(path.name, "no data rows (header only)")

    known = set(fmt.known)
    # Temp-table rowids follow insertion order but start at an offset in file-backed databases.
    select = [f"rowid - {int(first_rowid)} + 1 as __row"]
    for name in fmt.known:
        if name not in columns:
            select.append(f"null::varchar as {quote_ident(name)}")
        elif columns[name].startswith("MAP"):
            select.append(f"to_json({quote_ident(name)})::varchar as {quote_ident(name)}")
        else:
            select.append(quote_ident(name))
    extras = [c for c in columns if c not in known]
    if extras:
        keys = ", ".join("'" + c.replace("'", "''") + "'" for c in extras)
        values = ", ".join(f"{quote_ident(c)}::varchar" for c in extras)
        select.append(f"map([{keys}], [{values}]) as __extras")
    else:
        select.append("null::map(varchar, varchar) as __extras")
    con.execute(f"create or replace temp view src as select {', '.join(select)} from src_raw")
    return rows


def _check_source(con: duckdb.DuckDBPyConnection, path: Path, fmt: BillingFormat) -> None:
    """Rules a file must pass before it can be staged at all; raises on the first broken one."""
    checks: list[tuple[str, str, str]] = []  # (column, rule, predicate that marks a bad row)
    for col in fmt.not_null:
        checks.append((col, "must not be null", f"{quote_ident(col)} is null"))
    for col in fmt.money:
        q = quote_ident(col)
        checks.append(
            (col, "not a decimal number", f"{q} is not null and try_cast({q} as decimal(38, 12)) is null")
        )
    for col in fmt.timestamps:
        q = quote_ident(col)
        checks.append((col, "not a timestamp", f"{q} is not null and try_cast({q} as timestamptz) is null"))
    for start, end in fmt.periods:
        s, e = quote_ident(start), quote_ident(end)
        checks.append(
            (end, f"{end} before {start}", f"try_cast({e} as timestamptz) < try_cast({s} as timestamptz)")
        )
    aggregates = ", ".join(f"count(*) filter (where {pred}), min(__row) filter (where {pred})" for _, _, pred in checks)
    counts = con.execute(f"select {aggregates} from src").fetchone()
    for i, (col, rule, pred) in enumerate(checks):
        bad, first = counts[2 * i], counts[2 * i + 1]
        if bad:
            examples = con.execute(
                f"select __row, {quote_ident(col)}::varchar from src where {pred} order by __row limit 3"
            ).fetchall()
            shown = [f"row {r}: {v!r}" if v is not None else f"row {r}: null" for r, v in examples]
            raise IngestError(path.name, rule, column=col, row=first, bad_rows=bad, examples=shown)


def ingest_billing(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    *,
    source_uri: str | None = None,
) -> LoadResult:
    """Load one billing delivery (all its files) in one transaction."""
    started = time.monotonic()
    files = sorted(files, key=lambda p: p.name)
    digest, size = checksum(files)
    load_id = digest[:16]
    names = tuple(f.name for f in files)
    uri = source_uri or str(files[0].parent)
    known = con.execute(
        "select status from loads where load_id = ? and status in ('loaded', 'replaced')", [load_id]
    ).fetchone()
    if known:
        fmt_name = con.execute("select source_format from loads where load_id = ?", [load_id]).fetchone()[0]
        return LoadResult(load_id, names, fmt_name, "unchanged", 0)

    formats = {f.name: detect_format(con, f) for f in files}
    if len({fmt.name for fmt in formats.values()}) > 1:
        raise IngestError(uri, "one delivery mixes export formats: " + ", ".join(f"{k}={v.name}" for k, v in formats.items()))
    fmt = formats[files[0].name]
    started_at = datetime.now(UTC).replace(tzinfo=None)

    with transaction(con):
        con.execute("create or replace temp table delivery as select * from billing_facts limit 0")
        reconciliations = []
        for file in files:
            file_rows = _stage_source(con, file, fmt)
            _check_source(con, file, fmt)
            con.execute(
                f"insert into delivery by name {sql('staging/' + fmt.name)}",
                {"load_id": load_id, "source_file": file.name},
            )
            totals = con.execute(
                f"""select {quote_ident(fmt.currency_column)}, sum(cast({quote_ident(fmt.billed_cost_column)} as decimal(38, 12)))
                    from src group by all""",
            ).fetchall()
            reconciliations.append((file, file_rows, dict(totals)))

        keys = con.execute(
            "select distinct billing_account_id, billing_period_start from delivery"
        ).fetchall()
        replaced = con.execute(
            """delete from billing_facts
               where (billing_account_id, billing_period_start) in
                     (select distinct billing_account_id, billing_period_start from delivery)"""
        ).fetchone()[0]
        con.execute("insert into billing_facts by name select * from delivery")
        # Deliveries whose every row was restated away stay in the ledger as history.
        con.execute(
            """update loads set status = 'replaced'
               where kind = 'billing' and status = 'loaded'
                 and load_id not in (select distinct load_id from billing_facts)"""
        )
        billed: dict[str, Decimal] = {}
        for file, file_rows, file_totals in reconciliations:
            loaded = dict(
                con.execute(
                    """select billing_currency, sum(billed_cost) from billing_facts
                       where load_id = ? and source_file = ? group by all""",
                    [load_id, file.name],
                ).fetchall()
            )
            loaded_rows = con.execute(
                "select count(*) from billing_facts where load_id = ? and source_file = ?", [load_id, file.name]
            ).fetchone()[0]
            for currency in sorted(set(file_totals) | set(loaded), key=str):
                want, got = file_totals.get(currency), loaded.get(currency)
                ok = loaded_rows == file_rows and want == got
                con.execute(
                    "insert into reconciliations values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [load_id, file.name, currency, file_rows, loaded_rows, want, got,
                     (got or 0) - (want or 0), ok, started_at],
                )
                if not ok:
                    raise IngestError(
                        file.name,
                        f"does not reconcile: file has {file_rows} rows / {currency} {want}, "
                        f"loaded {loaded_rows} rows / {currency} {got}",
                    )
                billed[currency] = billed.get(currency, Decimal(0)) + (got or Decimal(0))
        periods = tuple(sorted({p.strftime("%Y-%m") for _, p in keys}))
        accounts = sorted({a for a, _ in keys})
        rows = sum(r for _, r, _ in reconciliations)
        con.execute(
            "insert into loads values (?, 'billing', ?, ?, ?, ?, ?, ?, ?, ?, 'loaded', null, ?, ?)",
            [load_id, fmt.name, uri, list(names), digest, size, rows, list(periods), accounts,
             started_at, datetime.now(UTC).replace(tzinfo=None)],
        )
        con.execute("drop table delivery")
    return LoadResult(
        load_id, names, fmt.name, "loaded", rows, billed, periods, replaced, time.monotonic() - started
    )


def record_failure(
    con: duckdb.DuckDBPyConnection, files: list[Path], kind: str, error: Exception, source_uri: str | None = None
) -> None:
    """Write a failed delivery to the ledger (outside the rolled-back load transaction)."""
    digest, size = checksum(files)
    now = datetime.now(UTC).replace(tzinfo=None)
    con.execute(
        """insert or replace into loads values (?, ?, null, ?, ?, ?, ?, null, null, null, 'failed', ?, ?, ?)""",
        [digest[:16], kind, source_uri or str(files[0].parent), [f.name for f in files], digest, size,
         str(error), now, now],
    )
