"""Load billing deliveries into the warehouse: detect, check, stage, replace, reconcile.

A delivery is the set of files a provider writes for one export at one time (one
file, or the parts of a multi-part export). Each delivery loads in one
transaction: either all of it lands, with its ledger row and its reconciliation,
or nothing changes. A re-delivered billing period replaces what earlier
deliveries loaded for the same billing account and period, because providers
restate whole months.

The happy path reads each file twice at most: one aggregate pass (rule checks and
the file's own cost totals per currency) and one pass that stages it straight
into `billing_facts`. Parquet is read in place (`file_row_number` gives the
lineage row); CSV and JSON are first copied into a temp table, whose rowid is
the file's row order.
"""

from __future__ import annotations

import gzip
import hashlib
import json
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
    status: str  # loaded | unchanged | waiting (a multi-part delivery with parts still missing)
    rows: int
    billed_cost: dict[str, Decimal] = field(default_factory=dict)  # per currency, never summed across
    billing_periods: tuple[str, ...] = ()
    replaced_rows: int = 0
    seconds: float = 0.0
    missing: tuple[str, ...] = ()  # parts a manifest lists that are not there yet

    def summary(self) -> str:
        name = ", ".join(self.files)
        if self.status == "unchanged":
            return f"{name}: unchanged since load {self.load_id}, skipped"
        if self.status == "waiting":
            shown = ", ".join(self.missing[:3]) + (", ..." if len(self.missing) > 3 else "")
            return f"{name}: waiting for parts ({len(self.missing)} missing: {shown}), skipped"
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
    """'parquet', 'csv', 'csv.gz', 'jsonl' or 'jsonl.gz' from the file's first bytes (names lie)."""
    with path.open("rb") as f:
        head = f.read(4)
    if not head:
        raise IngestError(path.name, "file is empty (0 bytes)")
    if head == b"PAR1":
        return "parquet"
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as f:
                inner = f.read(64)
        except (OSError, EOFError) as exc:
            raise IngestError(path.name, f"unreadable gzip: {_first_line(exc)}") from None
        return "jsonl.gz" if inner.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{" else "csv.gz"
    # BigQuery writes JSON exports one object per line.
    return "jsonl" if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{" else "csv"


def _reader(path: Path, *, row_numbers: bool = False) -> str:
    """A table-function call over `$path` that reads the raw file."""
    kind = container(path)
    if kind == "parquet":
        return "read_parquet($path, file_row_number = true)" if row_numbers else "read_parquet($path)"
    compression = "gzip" if kind.endswith(".gz") else "none"
    if kind.startswith("jsonl"):
        return f"read_json($path, format = 'newline_delimited', compression = '{compression}')"
    # Everything as text first: casts happen in staging, where a bad value can be
    # reported with its row instead of failing the sniffer. Real FOCUS exports
    # write nulls as the literal NULL (Oracle rows use empty strings).
    options = "all_varchar = true, header = true, nullstr = ['NULL', ''], encoding = 'utf-8'"
    return f"read_csv($path, {options}, compression = '{compression}')"


def read_columns(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, str]:
    """Column name -> DuckDB type of a billing file, without reading its rows."""
    reader = _reader(path)
    try:
        rel = con.execute(f"describe select * from {reader}", {"path": str(path)}).fetchall()
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


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _as_text(raw: str, dtype: str) -> str:
    """Nested values (structs, maps, lists, JSON) reach staging as JSON text; the rest as read."""
    column = quote_ident(raw)
    if dtype.startswith(("STRUCT", "MAP", "JSON")) or dtype.endswith("]"):
        return f"to_json({column})::varchar"
    return column


_MAP = "map(varchar, varchar)"


def _as_map(raw: str, dtype: str) -> str:
    """A raw column as MAP(VARCHAR, VARCHAR): native maps pass through, JSON text is parsed."""
    column = quote_ident(raw)
    if dtype == "MAP(VARCHAR, VARCHAR)":
        return column
    if dtype.startswith(("MAP", "STRUCT")):
        return f"try_cast(to_json({column}) as {_MAP})"
    return f"try_cast(try_cast(nullif(trim({column}::varchar), '') as json) as {_MAP})"


def _fold(name: str, parts: list[tuple[str, str]], as_map: bool) -> str:
    """Flattened columns (key, raw column) folded back into one map or JSON object."""
    if as_map:
        # Only the keys a row has a value for: legacy CUR repeats every tag column on every row.
        entries = ", ".join(f"{{'key': {_literal(k)}, 'value': {quote_ident(c)}::varchar}}" for k, c in parts)
        return f"map_from_entries(list_filter([{entries}], lambda e: e.value is not null)) as {quote_ident(name)}"
    pairs = ", ".join(f"{_literal(k)}, {quote_ident(c)}" for k, c in parts)
    return f"json_object({pairs})::varchar as {quote_ident(name)}"


def source_select(fmt: BillingFormat, columns: dict[str, str]) -> list[str]:
    """Select items exposing a raw file under the format's canonical column names.

    Every known column is present (NULL when the file lacks it); map columns are
    MAP(VARCHAR, VARCHAR); flattened records are folded back; columns the format
    does not know are kept verbatim in the map `__extras` (the provider's own x_
    columns among them) when the format keeps them.
    """
    found = fmt.resolve(list(columns), fmt.known)
    used = set(found.values())
    items = []
    for name in fmt.known:
        is_map = name in fmt.maps
        if name in found:
            raw = found[name]
            value = _as_map(raw, columns[raw]) if is_map else _as_text(raw, columns[raw])
            items.append(f"{value} as {quote_ident(name)}")
            continue
        parts = [
            (c[len(prefix) :], c)
            for target, prefix in fmt.nested
            if target == name
            for c in columns
            if c.startswith(prefix)
        ]
        if parts:
            items.append(_fold(name, parts, is_map))
            used.update(c for _, c in parts)
        else:
            items.append(f"null::{_MAP if is_map else 'varchar'} as {quote_ident(name)}")
    extras = [c for c in columns if c not in used] if fmt.keep_extras else []
    if extras:
        keys = ", ".join(_literal(c) for c in extras)
        values = ", ".join(f"{_as_text(c, columns[c])}::varchar" for c in extras)
        items.append(f"map([{keys}], [{values}]) as __extras")
    else:
        items.append(f"null::{_MAP} as __extras")
    return items


def _stage_source(con: duckdb.DuckDBPyConnection, path: Path, fmt: BillingFormat) -> None:
    """Expose the file as view `src` under canonical names, with `__row` its 1-based data row."""
    columns = read_columns(con, path)
    found = fmt.resolve(list(columns), fmt.known)
    missing = [c for c in fmt.required if c not in found and not _foldable(fmt, c, columns)]
    if missing:
        raise IngestError(
            path.name, f"missing mandatory {fmt.description} column(s)", column=", ".join(missing)
        )
    select = source_select(fmt, columns)
    params = {"path": str(path)}
    try:
        if container(path) == "parquet":
            # A view cannot take parameters: the path goes in as a quoted literal.
            reader = _reader(path, row_numbers=True).replace("$path", _literal(str(path)))
            select.insert(0, "file_row_number + 1 as __row")
            con.execute(f"create or replace temp view src as select {', '.join(select)} from {reader}")
        else:
            # No row number option for CSV/JSON: a temp table's rowids follow insertion
            # order, which DuckDB keeps equal to file order.
            con.execute(f"create or replace temp table src_raw as select * from {_reader(path)}", params)
            first = con.execute("select min(rowid) from src_raw").fetchone()[0] or 0
            # Temp-table rowids start at an offset in file-backed databases.
            select.insert(0, f"rowid - {int(first)} + 1 as __row")
            con.execute(f"create or replace temp view src as select {', '.join(select)} from src_raw")
    except (duckdb.Error, EOFError, gzip.BadGzipFile) as exc:
        raise IngestError(path.name, f"unreadable: {_first_line(exc)}") from None


def _foldable(fmt: BillingFormat, name: str, columns: dict[str, str]) -> bool:
    return any(target == name and any(c.startswith(prefix) for c in columns) for target, prefix in fmt.nested)


@dataclass(frozen=True)
class _FileTotals:
    rows: int
    billed: dict[str | None, Decimal]  # per currency, straight from the file's cost column


def _checks(fmt: BillingFormat) -> list[tuple[str, str, str]]:
    """(column, rule, predicate marking a bad row) for every rule a file must pass."""
    checks: list[tuple[str, str, str]] = []
    for col in fmt.not_null:
        checks.append((col, "must not be null", f"{quote_ident(col)} is null"))
    for col in fmt.money:
        q = quote_ident(col)
        checks.append(
            (
                col,
                "not a decimal number",
                f"{q} is not null and try_cast({q}::varchar as decimal(38, 12)) is null",
            )
        )
    for col in fmt.timestamps:
        q = quote_ident(col)
        checks.append(
            (col, "not a timestamp", f"{q} is not null and {fmt.parse_timestamp.format(q)} is null")
        )
    for start, end in fmt.periods:
        s, e = fmt.parse_timestamp.format(quote_ident(start)), fmt.parse_timestamp.format(quote_ident(end))
        checks.append((end, f"{end} before {start}", f"{e} < {s}"))
    return checks


def _check_and_total(con: duckdb.DuckDBPyConnection, path: Path, fmt: BillingFormat) -> _FileTotals:
    """One pass over `src`: every rule's bad-row count and the file's cost per currency.

    Raises on the first broken rule, naming the column, the first bad row and examples.
    """
    checks = _checks(fmt)
    aggregates = ", ".join(
        f"count(*) filter (where {pred}), min(__row) filter (where {pred})" for _, _, pred in checks
    )
    # The total uses try_cast so that a bad value reaches its rule below instead of aborting the pass.
    total = fmt.file_total.replace("cast(", "try_cast(")
    groups = con.execute(
        f"select upper({quote_ident(fmt.currency_column)}), count(*), sum({total}), {aggregates} from src group by all"
    ).fetchall()
    rows = sum(g[1] for g in groups)
    if rows == 0:
        raise IngestError(path.name, "no data rows (header only)")
    for i, (col, rule, pred) in enumerate(checks):
        bad = sum(g[3 + 2 * i] for g in groups)
        if bad:
            first = min(g[4 + 2 * i] for g in groups if g[4 + 2 * i] is not None)
            examples = con.execute(
                f"select __row, {quote_ident(col)}::varchar from src where {pred} order by __row limit 3"
            ).fetchall()
            shown = [f"row {r}: {v!r}" if v is not None else f"row {r}: null" for r, v in examples]
            raise IngestError(path.name, rule, column=col, row=first, bad_rows=bad, examples=shown)
    return _FileTotals(rows, {g[0]: g[2] for g in groups})


def read_manifest(path: Path) -> list[str] | None:
    """The part names a legacy CUR manifest (`<report>-Manifest.json`) lists, or None if not one."""
    try:
        with path.open("rb") as f:
            if f.read(1) != b"{":
                return None
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    keys = doc.get("reportKeys") if isinstance(doc, dict) else None
    return [str(k) for k in keys] if isinstance(keys, list) else None


def ingest_billing(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    *,
    source_uri: str | None = None,
    run_id: str | None = None,
    validate: bool = True,
) -> LoadResult:
    """Load one billing delivery (all its files) in one transaction.

    `validate=False` skips the data-quality gate (the benchmark uses it to time the load
    and the validation apart); the parse checks and the reconciliation always run.

    A legacy CUR manifest among `files` names the delivery's parts: the delivery
    waits (status 'waiting', nothing loaded) until every part is there.
    """
    started = time.monotonic()
    files = sorted(files, key=lambda p: p.name)
    manifests = {f: keys for f in files if (keys := read_manifest(f)) is not None}
    if manifests:
        listed = {key.rsplit("/", 1)[-1] for keys in manifests.values() for key in keys}
        present = {f.name for f in files}
        missing = tuple(sorted(listed - present))
        files = [f for f in files if f not in manifests]
        if missing:
            names = tuple(f.name for f in [*manifests, *files])
            return LoadResult("", names, "cur_legacy", "waiting", 0, missing=missing)
    if not files:
        raise IngestError(source_uri or "delivery", "no data files")
    digest, size = checksum(files)
    load_id = digest[:16]
    names = tuple(f.name for f in files)
    uri = source_uri or str(files[0].parent)
    known = con.execute(
        "select source_format from loads where load_id = ? and status in ('loaded', 'replaced')", [load_id]
    ).fetchone()
    if known:
        return LoadResult(load_id, names, known[0], "unchanged", 0)

    formats = {f.name: detect_format(con, f) for f in files}
    if len({fmt.name for fmt in formats.values()}) > 1:
        mixed = ", ".join(f"{k}={v.name}" for k, v in formats.items())
        raise IngestError(uri, "one delivery mixes export formats: " + mixed)
    fmt = formats[files[0].name]
    started_at = datetime.now(UTC).replace(tzinfo=None)
    params = {"load_id": load_id, "source_format": fmt.name}

    with transaction(con):
        file_totals: dict[str, _FileTotals] = {}
        for file in files:
            _stage_source(con, file, fmt)
            file_totals[file.name] = _check_and_total(con, file, fmt)
            # Straight into the fact table: the transaction hides it until the checks below pass.
            try:
                con.execute(
                    f"insert into billing_facts by name {sql(fmt.staging_sql)}",
                    {**params, "source_file": file.name},
                )
            except duckdb.Error as exc:
                # The checks above catch bad values with their row; this is what they do not foresee.
                raise IngestError(file.name, f"cannot be staged: {_first_line(exc)}") from None
        con.execute("drop view if exists src")
        con.execute("drop table if exists src_raw")

        # Before the restatement: some rules compare the delivery with the rows it replaces.
        # An error-level failure raises QualityError and the whole load rolls back.
        if validate:
            from athanor.quality import check_delivery  # lazy: Great Expectations imports slowly

            check_delivery(
                con, fmt, load_id=load_id, file_names=names, file_figures=file_totals, run_id=run_id
            )
        replaced = _replace_restated(con, load_id)
        billed = _reconcile(con, load_id, fmt, file_totals, started_at)
        keys = con.execute(
            "select distinct billing_account_id, strftime(billing_period_start, '%Y-%m') from billing_facts where load_id = ?",
            [load_id],
        ).fetchall()
        periods = tuple(sorted({p for _, p in keys}))
        accounts = sorted({a for a, _ in keys})
        rows = sum(t.rows for t in file_totals.values())
        con.execute(
            "insert or replace into loads values (?, 'billing', ?, ?, ?, ?, ?, ?, ?, ?, 'loaded', null, ?, ?)",
            [load_id, fmt.name, uri, list(names), digest, size, rows, list(periods), accounts,
             started_at, datetime.now(UTC).replace(tzinfo=None)],
        )  # fmt: skip
    return LoadResult(
        load_id, names, fmt.name, "loaded", rows, billed, periods, replaced, time.monotonic() - started
    )


def _replace_restated(con: duckdb.DuckDBPyConnection, load_id: str) -> int:
    """Delete what earlier loads held for the (account, period) pairs this load restates."""
    replaced = con.execute(
        """delete from billing_facts
           where load_id <> $load_id
             and (billing_account_id, billing_period_start) in
                 (select distinct billing_account_id, billing_period_start from billing_facts where load_id = $load_id)""",
        {"load_id": load_id},
    ).fetchone()[0]
    if replaced:
        # Deliveries whose every row was restated away stay in the ledger as history.
        con.execute(
            """update loads set status = 'replaced'
               where kind = 'billing' and status = 'loaded'
                 and load_id not in (select distinct load_id from billing_facts)"""
        )
    return int(replaced)


def _reconcile(
    con: duckdb.DuckDBPyConnection,
    load_id: str,
    fmt: BillingFormat,
    file_totals: dict[str, _FileTotals],
    checked_at: datetime,
) -> dict[str, Decimal]:
    """Compare each file's own totals with what landed; record them; raise unless equal to the cent."""
    loaded = con.execute(
        f"""select source_file, billing_currency, {fmt.loaded_rows}, sum({fmt.loaded_total}), sum(billed_cost),
                   count(*) filter (where charge_period_end < charge_period_start)
            from billing_facts where load_id = ? group by all""",
        [load_id],
    ).fetchall()
    landed = {(f, c): (n, total, billed) for f, c, n, total, billed, _ in loaded}
    billed_by_currency: dict[str, Decimal] = {}
    for file, totals in file_totals.items():
        loaded_rows = sum(n for (f, _), (n, _, _) in landed.items() if f == file)
        currencies = {c for f, c in landed if f == file} | set(totals.billed)
        for currency in sorted(currencies, key=str):
            want = totals.billed.get(currency)
            _, got, billed = landed.get((file, currency), (0, None, None))
            ok = loaded_rows == totals.rows and want == got
            con.execute(
                "insert into reconciliations values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    load_id,
                    file,
                    currency,
                    totals.rows,
                    loaded_rows,
                    want,
                    got,
                    (got or 0) - (want or 0),
                    ok,
                    checked_at,
                ],
            )
            if not ok:
                raise IngestError(
                    file,
                    f"does not reconcile: file has {totals.rows} rows / {currency} {want}, "
                    f"loaded {loaded_rows} rows / {currency} {got}",
                )
            billed_by_currency[currency] = billed_by_currency.get(currency, Decimal(0)) + (
                billed or Decimal(0)
            )
    return billed_by_currency


def record_failure(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    kind: str,
    error: Exception,
    source_uri: str | None = None,
) -> None:
    """Write a failed delivery to the ledger (outside the rolled-back load transaction)."""
    digest, size = checksum(files)
    now = datetime.now(UTC).replace(tzinfo=None)
    con.execute(
        """insert or replace into loads values (?, ?, null, ?, ?, ?, ?, null, null, null, 'failed', ?, ?, ?)""",
        [digest[:16], kind, source_uri or str(files[0].parent), [f.name for f in files], digest, size,
         str(error), now, now],
    )  # fmt: skip
