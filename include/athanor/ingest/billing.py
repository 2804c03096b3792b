"""Load billing deliveries into the warehouse: detect, stage, check, replace, reconcile.

A delivery is the set of files a provider writes for one export at one time (one
file, or the parts of a multi-part export). Each delivery loads in one
transaction: either all of it lands, with its ledger row and its reconciliation,
or nothing changes. A re-delivered billing period replaces what earlier
deliveries loaded for the same billing account and period, because providers
restate whole months.

The happy path reads each file into `billing_facts` once, with one
`insert ... select` that casts strictly and stops at the first row breaking a
rule. Beside it, on a second cursor, a light pass totals the file's own cost per
currency for the reconciliation; it reads only the few columns the totals need
and runs while the insert is still parsing. The checks that need typed values
(periods) and the reconciliation then read the load's own rows back, which is
cheap in a column store. Only when something is wrong does a slower diagnosis
pass read the file again, to name the file, row, column, rule and examples.

Row lineage: Parquet gives each row its `file_row_number`; CSV and JSON readers
have no such column, so the rows are numbered in file order by a streaming
`row_number()` into a materialised CTE, and the heavy mapping after it runs in
parallel.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import time
import zlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, ParamSpec

import duckdb

from athanor.ingest import csvtext, literals, sniff, sources
from athanor.ingest.daily import refresh_billing_daily
from athanor.ingest.errors import IngestError
from athanor.ingest.sniff import DEFAULT_LIMITS, InputLimits
from athanor.ingest.sources import BillingFormat
from athanor.land.manifests import read_cur_manifest
from athanor.land.names import shown, shown_all
from athanor.warehouse import (
    LoadRecord,
    any_insertion_order,
    insert_rows,
    lake,
    mark_replaced,
    quote_ident,
    record_load,
    sql,
    transaction,
)

# What reading a bad or broken file raises.
_READ_ERRORS = (duckdb.Error, EOFError, gzip.BadGzipFile, zlib.error)

__all__ = [
    "IngestError",
    "LoadResult",
    "checksum",
    "checksum_named",
    "ingest_billing",
    "read_columns",
    "record_failure",
]

P = ParamSpec("P")


@dataclass(frozen=True)
class LoadResult:
    load_id: str
    files: tuple[str, ...]
    source_format: str
    # loaded | unchanged | waiting (a multi-part delivery with parts still missing) | empty (no rows)
    status: str
    rows: int
    billed_cost: dict[str, Decimal] = field(default_factory=dict)  # per currency, never summed across
    billing_periods: tuple[str, ...] = ()
    replaced_rows: int = 0
    seconds: float = 0.0
    missing: tuple[str, ...] = ()  # parts a manifest lists that are not there yet

    def summary(self) -> str:
        name = shown_all(self.files)
        if self.status == "unchanged":
            return f"{name}: unchanged since load {self.load_id}, skipped"
        if self.status == "empty":
            return f"{name}: {self.source_format}, no rows (header only): nothing to load"
        if self.status == "waiting":
            parts = shown_all(self.missing[:3]) + (", ..." if len(self.missing) > 3 else "")
            return f"{name}: waiting for parts ({len(self.missing)} missing: {parts}), skipped"
        money = ", ".join(f"{cur} {amount:,.2f}" for cur, amount in sorted(self.billed_cost.items()))
        periods = ", ".join(self.billing_periods)
        line = f"{name}: {self.source_format}, {self.rows:,} rows, billed {money}, periods {periods}"
        if self.replaced_rows:
            line += f", restated ({self.replaced_rows:,} earlier rows replaced)"
        return line + f" [{self.seconds:.1f}s]"


def checksum(files: Iterable[Path]) -> tuple[str, int]:
    """sha256 over the files' bytes in name order, and their total size."""
    return checksum_named((file.name, file) for file in files)


def checksum_named(files: Iterable[tuple[str, Path]]) -> tuple[str, int]:
    """`checksum` of files known under other names (name, where the bytes are now), e.g. in quarantine."""
    digest, size = hashlib.sha256(), 0
    for name, file in sorted(files, key=lambda pair: pair[0]):
        digest.update(name.encode() + b"\0")
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
        inner = sniff.head(path, 64)
        return "jsonl.gz" if inner.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{" else "csv.gz"
    # BigQuery writes JSON exports one object per line.
    return "jsonl" if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{" else "csv"


def _reader(path: Path, kind: str, *, row_numbers: bool = False, types: dict[str, str] | None = None) -> str:
    """A table-function call that reads the raw file (`kind` from `container`).

    The path is a quoted literal, not a parameter, because the call also goes into views.
    `types`: CSV columns the reader parses itself (raw name -> DuckDB type) instead of text.
    """
    where = _literal(str(path))
    if kind.startswith("csv") and (copy := csvtext.lf_copy(path)) is not None:
        where, kind = _literal(str(copy)), "csv"  # mixed CRLF / LF line endings: see csvtext
    if kind == "parquet":
        return f"read_parquet({where}, file_row_number = true)" if row_numbers else f"read_parquet({where})"
    compression = "gzip" if kind.endswith(".gz") else "none"
    if kind.startswith("jsonl"):
        return f"read_json({where}, format = 'newline_delimited', compression = '{compression}')"
    # Everything as text first: casts happen in staging, where a bad value can be
    # reported with its row instead of failing the sniffer. Real FOCUS exports
    # write nulls as the literal NULL (Oracle rows use empty strings).
    options = "all_varchar = true, header = true, nullstr = ['NULL', ''], encoding = 'utf-8'"
    if types:
        options += ", types = {" + ", ".join(f"{_literal(c)}: {_literal(t)}" for c, t in types.items()) + "}"
    return f"read_csv({where}, {options}, compression = '{compression}')"


def read_columns(
    con: duckdb.DuckDBPyConnection, path: Path, limits: InputLimits = DEFAULT_LIMITS
) -> dict[str, str]:
    """Column name -> DuckDB type of a billing file, without reading its rows.

    The checks that need only the file's first bytes run first (`sniff.check_content`), so
    DuckDB never plans a file of ten thousand columns nor decompresses a bomb.
    """
    sniff.check_content(path, limits)
    try:
        rel = con.execute(f"describe select * from {_reader(path, container(path))}").fetchall()
    except _READ_ERRORS as exc:
        raise _unreadable(path, exc) from None
    return {name: dtype for name, dtype, *_ in rel}


def _unreadable(path: Path, exc: BaseException) -> IngestError:
    """Why DuckDB could not read a file: a broken gzip or bad text when that is it (DuckDB's
    messages name neither clearly, and carry the local path), else DuckDB's first line."""
    return sniff.read_problem(path) or IngestError(path.name, f"unreadable: {_first_line(exc, path)}")


def _first_line(exc: BaseException, path: Path | None = None) -> str:
    line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    # DuckDB names the file by its full local path; the message names it once, by its name.
    for read in [path, *csvtext.copies_of(path)] if path is not None else []:
        line = line.replace(str(read), path.name)
    return line


def detect_format(
    con: duckdb.DuckDBPyConnection, path: Path, limits: InputLimits = DEFAULT_LIMITS
) -> BillingFormat:
    columns = read_columns(con, path, limits)
    fmt = sources.detect(list(columns))
    if fmt is None:
        first = shown_all(list(columns)[:6])
        raise IngestError(path.name, f"not a known billing export format (columns: {first}, ...)")
    # DuckDB has renamed a repeated column by now (`BilledCost_1`): the header says which.
    sniff.check_unique(path, sniff.check_content(path, limits)[1])
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
    # One JSON parse (casting to JSON, then to a map, parses twice); try(): text that is not a
    # JSON object reads as no tags, as a failed cast would. Empty text is caught before the
    # parse: an error sends try() row by row, which costs 15x where many rows are untagged.
    return f"""try(from_json(nullif({column}::varchar, ''), '"{_MAP.upper()}"'))"""


_MONEY = "decimal(38, 12)"

# DuckDB casts '4/1/25' to the year 4 (it takes any Y/M/D order with any separator), so a
# US-style date would load 2,000 years early and still reconcile. Formats that do not
# document another layout (Azure writes MM/DD/YYYY, see its parse_timestamp) must write
# ISO 8601.
NOT_ISO = "not an ISO 8601 timestamp (YYYY-MM-DD[Thh:mm:ss][Z|+hh:mm]; day/month order is ambiguous)"


def _iso_shape(text: str) -> str:
    """SQL: `text` (not null) starts with a four-digit year and '-', what tells ISO 8601 from
    the other layouts DuckDB casts (what follows, the cast checks). For the diagnosis."""
    return f"regexp_matches({text}, '^[0-9]{{4}}-')"


def _iso_guard(text: str) -> str:
    """SQL: the fast path's cheaper form of `_iso_shape`, on every value: the fifth character.

    About 1 % of the timestamp cast's cost (the pattern costs ten times that). A value with a
    '-' there that is not a year reads in Y-M-D order or fails the cast as not a timestamp.
    """
    return f"substr({text}, 5, 1) = '-'"


def _reads_iso_only(fmt: BillingFormat) -> bool:
    return fmt.parse_timestamp == BillingFormat.parse_timestamp


def _as_utc_timestamp(value: str, dtype: str) -> str:
    """A raw timestamp as TIMESTAMP in UTC (the session's time zone is UTC, see warehouse.connect)."""
    if dtype == "TIMESTAMP":
        return value
    if dtype == "TIMESTAMP WITH TIME ZONE":
        # The instant's UTC wall time from its microseconds: the cast converts through the
        # session's time zone calendar, value by value (2.1 CPU-s against 0.1 for four columns
        # of 3.9M lines). Infinities have no microseconds; the cast keeps them as they are.
        return f"case when isfinite({value}) then make_timestamp(epoch_us({value})) else cast({value} as timestamp) end"
    if dtype == "DATE" or dtype.startswith("TIMESTAMP_"):
        return f"cast({value} as timestamp)"
    # Text: ISO 8601 with or without 'T', with 'Z', an offset or none (then UTC). Parsing as
    # TIMESTAMP is much cheaper but ignores an offset, so it only takes the strings that cannot
    # carry one: ending in 'Z', a bare date (10 characters) or date and time to the second (19).
    return (
        f"case when ends_with({value}, 'Z') or length({value}) in (10, 19) then cast({value} as timestamp)"
        f" else cast(cast({value} as timestamptz) as timestamp) end"
    )


def _numeric(dtype: str) -> bool:
    return dtype == "VARCHAR" or dtype.startswith("DECIMAL") or dtype in {
        "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
        "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE",
    }  # fmt: skip


def _fold(name: str, parts: list[tuple[str, str]], as_map: bool) -> str:
    """Flattened columns (key, raw column) folded back into one map or JSON object."""
    if as_map:
        # Only the keys a row has a value for: legacy CUR repeats every tag column on every row.
        entries = ", ".join(f"{{'key': {_literal(k)}, 'value': {quote_ident(c)}::varchar}}" for k, c in parts)
        return f"map_from_entries(list_filter([{entries}], lambda e: e.value is not null)) as {quote_ident(name)}"
    pairs = ", ".join(f"{_literal(k)}, {quote_ident(c)}" for k, c in parts)
    return f"json_object({pairs})::varchar as {quote_ident(name)}"


def _unprefixed(fmt: BillingFormat, column: str, key: str) -> str:
    """A map key without the prefix the format strips from `column`'s keys (see key_prefixes)."""
    for prefix in fmt.prefixes_cut_from(column):
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _without_key_prefixes(value: str, prefixes: tuple[str, ...]) -> str:
    """A MAP expression rebuilt with `prefixes` cut from its keys."""
    cases = " ".join(f"when starts_with(k, {_literal(p)}) then k[{len(p) + 1}:]" for p in prefixes)
    return f"map(list_transform(map_keys({value}), lambda k: case {cases} else k end), map_values({value}))"


def source_select(
    fmt: BillingFormat,
    columns: dict[str, str],
    *,
    typed: bool = False,
    maps_as_read: frozenset[str] = frozenset(),
    iso_guard: bool = False,
) -> list[str]:
    """Select items exposing a raw file under the format's canonical column names.

    Every known column is present (NULL when the file lacks it); map columns are
    MAP(VARCHAR, VARCHAR); flattened records are folded back; columns the format
    does not know are kept verbatim in the map `__extras` (the provider's own x_
    columns among them) when the format keeps them.

    `typed` (for formats with `typed_source`): money columns come out as DECIMAL(38,12)
    and timestamps as UTC TIMESTAMP, cast strictly, once, from whatever the file holds.
    A Parquet TIMESTAMP then passes through untouched instead of going through a
    time-zone conversion per value.

    The format's `key_prefixes` are cut from that map's keys: for flattened columns in the
    names, for maps read whole on every row. A map column in `maps_as_read` is left as the
    file holds it (JSON text as text, a native map as `_as_map` reads it), for the caller to
    build once per distinct value (`_build_maps_once_per_value`).

    `iso_guard` (the fast path): a text timestamp that is not ISO 8601 stops the query with an
    error, and the diagnosis names it (formats reading only ISO 8601, see `_reads_iso_only`).
    """
    found = fmt.resolve(list(columns), fmt.known)
    used = set(found.values())
    items = []
    for name in fmt.known:
        is_map = name in fmt.maps
        if name in found:
            raw = found[name]
            if is_map and name in maps_as_read:
                value = _map_as_read(raw, columns[raw])
            elif is_map:
                value = _as_map(raw, columns[raw])
                if fmt.prefixes_cut_from(name):
                    value = _without_key_prefixes(value, fmt.prefixes_cut_from(name))
            elif name in fmt.money and not _numeric(columns[raw]):
                # As text, so that a Parquet boolean or date fails the decimal cast (casting
                # `true` would give 1) and then the "not a decimal number" rule.
                value = f"{quote_ident(raw)}::varchar"
            elif name in fmt.json_text and columns[raw] == "VARCHAR":
                value = literals.read(quote_ident(raw))
                if iso_guard:  # the fast path: staging would read a value not JSON as no value
                    refused = f"athanor: {literals.NOT_JSON}"
                    value = (
                        f"case when {literals.is_bad(value)} then error({_literal(refused)}) else {value} end"
                    )
            else:
                value = _as_text(raw, columns[raw])
            if iso_guard and name in fmt.timestamps and columns[raw] == "VARCHAR" and _reads_iso_only(fmt):
                value = f"case when not {_iso_guard(value)} then error('athanor: {NOT_ISO}') else {value} end"
            if typed and name in fmt.money:
                value = f"cast({value} as {_MONEY})"
            elif typed and name in fmt.timestamps:
                value = _as_utc_timestamp(value, columns[raw])
            items.append(f"{value} as {quote_ident(name)}")
            continue
        if typed and (name in fmt.money or name in fmt.timestamps):
            items.append(f"null::{_MONEY if name in fmt.money else 'timestamp'} as {quote_ident(name)}")
            continue
        parts = [
            (_unprefixed(fmt, name, c[len(prefix) :]), c)
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
        # A struct cast to a map gives the map that map([keys], [values]) builds (same keys in
        # the same order, nulls kept) without its check of every row's keys: 0.4 CPU-s against
        # 3.7 for two extras over 3.9M lines. The keys are the file's column names, which DuckDB
        # has made unique (a repeated name is renamed), so the struct's names cannot clash.
        fields = ", ".join(f"{_literal(c)}: {_as_text(c, columns[c])}::varchar" for c in extras)
        items.append(f"cast({{{fields}}} as {_MAP}) as __extras")
    else:
        items.append(f"null::{_MAP} as __extras")
    return items


def _missing_columns(path: Path, fmt: BillingFormat, columns: dict[str, str]) -> None:
    found = fmt.resolve(list(columns), fmt.known)
    missing = [c for c in fmt.required if c not in found and not _foldable(fmt, c, columns)]
    if missing:
        raise IngestError(
            path.name, f"missing mandatory {fmt.description} column(s)", column=", ".join(missing)
        )


def _create_source_view(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    fmt: BillingFormat,
    columns: dict[str, str],
    *,
    fast_path: bool = False,
) -> None:
    """Expose the file as temp view `src` under canonical names, `__row` its 1-based data row.

    For the `fast_path` (the insert), values are typed (`typed_source` formats) and a row
    that breaks a not-null rule raises at once (`error()` inside the row number, which
    every staging query reads); `_diagnose` then finds the precise message. Without it,
    the view shows raw values, for the diagnosis' rules to examine: a strict cast there
    would stop it before it can name the row.
    """
    _missing_columns(path, fmt, columns)
    kind = container(path)
    typed = fast_path and fmt.typed_source
    # Two shortcuts of the fast path, each where it pays (see the functions): CSV money parsed
    # by the reader; Parquet tag maps built once per distinct tag set (re-reading a Parquet
    # column is cheap, re-reading a CSV is not).
    parsed = _parsed_by_reader(fmt, columns) if typed and kind.startswith("csv") else {}
    columns = {**columns, **parsed}
    built_once = _maps_built_per_value(fmt, columns) if fast_path and kind == "parquet" else {}
    select = source_select(fmt, columns, typed=typed, maps_as_read=frozenset(built_once), iso_guard=fast_path)
    reader = _reader(path, kind, row_numbers=True, types=parsed)
    if kind == "parquet":
        source, row = reader, "file_row_number + 1"
    else:
        # No row-number option for CSV/JSON. row_number() over () numbers rows in the order the
        # reader yields them (file order) but runs on one thread; materialising right after it
        # keeps the casting and mapping that follow parallel.
        source = f"(with numbered as materialized (select row_number() over () as __n, * from {reader}) select * from numbered)"
        row = "__n"
    select.insert(0, f"{row} as __row")
    view = f"select {', '.join(select)} from {source}"
    if built_once:
        view = _build_maps_once_per_value(view, _reader(path, kind), built_once)
    if fast_path and fmt.not_null:
        broken = " or ".join(f"{quote_ident(c)} is null" for c in fmt.not_null)
        view = f"""select * replace (case when {broken} then error('athanor: a row breaks a not-null rule')
                                     else __row end as __row) from ({view})"""
    con.execute(f"create or replace temp view src as {view}")


def _parsed_by_reader(fmt: BillingFormat, columns: dict[str, str]) -> dict[str, str]:
    """Raw money columns of a CSV -> the DECIMAL type its reader parses them as (fast path).

    Parsing in the reader costs less than reading text and casting it after (a 10M-row FOCUS
    CSV.gz loads about 2 s faster), with the same results: both use DuckDB's decimal cast. A
    bad value fails the insert; the diagnosis then reads the file as text and names it.
    Timestamps stay text: the reader's time-zone-aware parse costs more than `_as_utc_timestamp`.
    """
    found = fmt.resolve(list(columns), fmt.known)
    return {found[c]: _MONEY for c in fmt.money if c in found}


def _map_as_read(raw: str, dtype: str) -> str:
    """A map column as the file holds it: text as text (parsed later), other types as maps."""
    return f"{quote_ident(raw)}::varchar" if dtype == "VARCHAR" else _as_map(raw, dtype)


def _maps_built_per_value(fmt: BillingFormat, columns: dict[str, str]) -> dict[str, tuple[str, str]]:
    """The map columns that cost work per line to build, each as (its value as read, the
    expression building the map from `as_read`): JSON text to parse, keys to cut a prefix from."""
    found = fmt.resolve(list(columns), fmt.known)
    out = {}
    for name in fmt.maps:
        raw = found.get(name)
        if raw is None:
            continue
        dtype, prefixes = columns[raw], fmt.prefixes_cut_from(name)
        if dtype != "VARCHAR" and not prefixes:
            continue  # a native map: nothing to build
        build = _as_map("as_read", "VARCHAR") if dtype == "VARCHAR" else "as_read"
        out[name] = (_map_as_read(raw, dtype), _without_key_prefixes(build, prefixes) if prefixes else build)
    return out


def _build_maps_once_per_value(view: str, reader: str, maps: dict[str, tuple[str, str]]) -> str:
    """`view` with each of `maps` built once per distinct value as read, joined back.

    Parsing a tag map's JSON or rebuilding its keys costs more than anything else staging does
    per line, and a month holds far fewer distinct tag sets than lines: a 4M-line FOCUS Parquet
    with 5,004 sets parses its tags in 0.4 s this way, 2.8 s line by line; a 10M-line CUR 2.0
    Parquet loaded in 17.3 s, not 20.2 s. Were every line's set distinct, it would cost about
    2.3 times the per-line build (3M lines with unique tag sets). The join matches on the hash,
    then the value itself, so a hash collision cannot swap tags.
    """
    joins, replaced = [], []
    for i, (name, (as_read, build)) in enumerate(maps.items()):
        column = quote_ident(name)
        joins.append(
            f"""left join (select hash(as_read) as read_hash, as_read, {build} as built
                          from (select distinct {as_read} as as_read from {reader})) as set_{i}
                 on set_{i}.read_hash = hash(v.{column}) and set_{i}.as_read = v.{column}"""
        )
        replaced.append(f"set_{i}.built as {column}")
    return f"select v.* replace ({', '.join(replaced)}) from ({view}) as v " + " ".join(joins)


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
        parsed = fmt.parse_timestamp.format(q)
        checks.append((col, "not a timestamp", f"{q} is not null and {parsed} is null"))
        if _reads_iso_only(fmt):
            checks.append((col, NOT_ISO, f"{parsed} is not null and not {_iso_shape(f'{q}::varchar')}"))
    for col in fmt.json_text:
        checks.append((col, literals.NOT_JSON, literals.is_bad(quote_ident(col))))
    for start, end in fmt.periods:
        s, e = fmt.parse_timestamp.format(quote_ident(start)), fmt.parse_timestamp.format(quote_ident(end))
        checks.append((end, f"{end} before {start}", f"{e} < {s}"))
    return checks


def _file_totals(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: BillingFormat, columns: dict[str, str]
) -> _FileTotals:
    """The file's own row count and cost per currency, read from the file, not from what landed.

    Runs on its own cursor beside the insert; it reads only the columns the totals use.
    try_cast: a bad value is the insert's (and then the diagnosis') to report, not this pass's.
    """
    reader = _reader(path, container(path))
    total = fmt.file_total.replace("cast(", "try_cast(")
    groups = con.execute(
        f"""select upper({quote_ident(fmt.currency_column)}), count(*), sum({total})
            from (select {", ".join(source_select(fmt, columns))} from {reader}) group by all"""
    ).fetchall()
    return _FileTotals(sum(g[1] for g in groups), {g[0]: g[2] for g in groups})


def _diagnose(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: BillingFormat, columns: dict[str, str], failure: str
) -> IngestError:
    """Why a file failed the fast path: every rule's bad rows, the first one named with examples.

    Reads the file again, twice: it only ever runs on a bad file. It works on its own
    cursor, outside the load's transaction, which the failure has aborted.
    """
    with con.cursor() as cur:
        return _diagnosis(cur, path, fmt, columns, failure)


def _diagnosis(
    cur: duckdb.DuckDBPyConnection, path: Path, fmt: BillingFormat, columns: dict[str, str], failure: str
) -> IngestError:
    try:
        _create_source_view(cur, path, fmt, columns)
        checks = _checks(fmt)
        aggregates = ", ".join(
            f"count(*) filter (where {pred}), min(__row) filter (where {pred})" for _, _, pred in checks
        )
        counts = cur.execute(f"select count(*), {aggregates} from src").fetchone()
    except IngestError as exc:
        return exc
    except _READ_ERRORS as exc:
        return _unreadable(path, exc)
    if counts[0] == 0:
        return IngestError(path.name, "no data rows (header only)")
    for i, (col, rule, pred) in enumerate(checks):
        bad, first = counts[1 + 2 * i], counts[2 + 2 * i]
        if bad:
            examples = cur.execute(
                f"select __row, {quote_ident(col)}::varchar from src where {pred} order by __row limit 3"
            ).fetchall()
            found = [f"row {r}: {v!r}" if v is not None else f"row {r}: null" for r, v in examples]
            return IngestError(path.name, rule, column=col, row=first, bad_rows=bad, examples=found)
    # The rules above catch bad values with their row; this is what they do not foresee.
    return IngestError(path.name, f"cannot be staged: {failure}")


def _stage_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    fmt: BillingFormat,
    params: dict[str, str],
    limits: InputLimits = DEFAULT_LIMITS,
) -> _FileTotals:
    """Insert one file's rows into `billing_facts` (inside the caller's transaction); its own totals.

    The file-totals pass runs on a second cursor while this one inserts. On any failure
    the error names file, row, column and rule (found by `_diagnose` on a third cursor,
    since the load's transaction is aborted by then).
    """
    columns = read_columns(con, path, limits)  # once: every pass below reads the file under these columns
    with con.cursor() as side, ThreadPoolExecutor(max_workers=1) as pool:
        totals = pool.submit(_file_totals, side, path, fmt, columns)
        try:
            _create_source_view(con, path, fmt, columns, fast_path=True)
            con.execute(
                f"insert into {lake.staging(con, 'billing_facts')} by name {sql(fmt.staging_sql)}",
                {**params, "source_file": path.name},
            )
            con.execute("drop view src")
        except BaseException as exc:
            side.interrupt()  # its figures are no longer needed
            if isinstance(exc, _READ_ERRORS):
                raise _diagnose(con, path, fmt, columns, _first_line(exc, path)) from None
            raise
        try:
            figures = totals.result()
        except _READ_ERRORS as exc:
            raise _unreadable(path, exc) from None
    # A header-only file is a normal delivery (an empty day of an Azure EA export): it adds
    # nothing, and the delivery's other files still load (`ingest_billing` says so).
    return figures


class _NothingToLoad(Exception):  # noqa: N818 - not an error: the delivery holds no rows
    """Every file of a delivery is a header without rows: its load rolls back, said as `result`."""

    def __init__(self, result: LoadResult) -> None:
        super().__init__(result.summary())
        self.result = result


def _empty_loads_nothing(load: Callable[P, LoadResult]) -> Callable[P, LoadResult]:
    """`load`, except that a delivery of header-only files loads nothing: status 'empty'."""

    @functools.wraps(load)
    def loading(*args: P.args, **kwargs: P.kwargs) -> LoadResult:
        try:
            return load(*args, **kwargs)
        except _NothingToLoad as empty:
            return empty.result

    return loading


@_empty_loads_nothing
def ingest_billing(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    *,
    source_uri: str | None = None,
    run_id: str | None = None,
    validate: bool = True,
    as_of: date | None = None,
    limits: InputLimits = DEFAULT_LIMITS,
) -> LoadResult:
    """Load one billing delivery (all its files) in one transaction.

    `validate=False` skips the data-quality gate (the benchmark uses it to time the load
    and the validation apart); the parse checks and the reconciliation always run.
    `as_of`: the run's day, which bounds plausible dates (rules *_period_in_range; default today).

    A restatement that would shrink an account's month sharply (rule restated_period_collapsed)
    is refused, unless the ledger says the operator released this very delivery from quarantine
    (status 'released', see `athanor.ingest.deliveries.allow_release`): then it loads, warned.

    A legacy CUR manifest among `files` names the delivery's parts: the delivery
    waits (status 'waiting', nothing loaded) until every part is there.
    """
    started = time.monotonic()
    files = sorted(files, key=lambda p: p.name)
    manifests = {f: m for f in files if (m := read_cur_manifest(f)) is not None}
    if manifests:
        listed = {name for m in manifests.values() for name in m.part_names}
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

    formats = {f.name: detect_format(con, f, limits) for f in files}
    if len({fmt.name for fmt in formats.values()}) > 1:
        mixed = ", ".join(f"{shown(k)}={v.name}" for k, v in formats.items())
        raise IngestError(uri, "one delivery mixes export formats: " + mixed)
    fmt = formats[files[0].name]
    started_at = datetime.now(UTC).replace(tzinfo=None)
    params = {"load_id": load_id, "source_format": fmt.name}
    if fmt.json_text:
        # Outside the transaction: a function created inside it is not seen by the cursor that
        # totals the file beside the insert until the transaction commits.
        literals.register(con)

    if validate:
        from athanor.quality.runner import start_importing_gx

        start_importing_gx()  # while DuckDB stages the files: the rules below need it
    with transaction(con):
        with any_insertion_order(con):
            file_totals = {file.name: _stage_file(con, file, fmt, params, limits) for file in files}
        if not any(totals.rows for totals in file_totals.values()):
            raise _NothingToLoad(LoadResult(load_id, names, fmt.name, "empty", 0))
        if lake.attached(con):
            # The load's reads of the lake (its rules, what it replaces) need only the files of
            # its partitions and charge hours: literal filters, planned by pyiceberg.
            lake.narrow_to_load(con, "billing_facts", load_id)
        landed = _landed(con, load_id, fmt)
        for file in files:
            if any(group.bad_periods for group in landed if group.file == file.name):
                # The one rule the insert cannot check on raw text; the diagnosis names the rows.
                raise _diagnose(
                    con, file, fmt, read_columns(con, file, limits), "a period ends before it starts"
                )

        # Before the restatement: some rules compare the delivery with the rows it replaces.
        # An error-level failure raises QualityError and the whole load rolls back.
        if validate:
            from athanor.quality import check_delivery  # lazy: Great Expectations imports slowly

            check_delivery(
                con,
                fmt,
                load_id=load_id,
                file_names=names,
                file_figures=file_totals,
                run_id=run_id,
                as_of=as_of,
                config=_released_config(con, load_id),
            )
        replaced = _replace_restated(con, load_id)
        refresh_billing_daily(con, load_id)  # the daily summary of just the partitions delivered
        billed = _reconcile(con, load_id, landed, file_totals, started_at)
        periods = tuple(sorted({group.period for group in landed}))
        accounts = sorted({group.account for group in landed})
        rows = sum(t.rows for t in file_totals.values())
        record = LoadRecord(
            load_id=load_id,
            kind="billing",
            source_format=fmt.name,
            source_uri=uri,
            files=names,
            checksum_sha256=digest,
            size_bytes=size,
            row_count=rows,
            billing_periods=periods,
            billing_accounts=tuple(accounts),
            status="loaded",
            started_at=started_at,
            finished_at=datetime.now(UTC).replace(tzinfo=None),
        )
        record_load(con, record)
        if lake.attached(con):
            # Last, so that a failure above leaves the lake as it was; see athanor.warehouse.lake.
            lake.commit_load(con, "billing_facts", load_id)
    return LoadResult(
        load_id, names, fmt.name, "loaded", rows, billed, periods, replaced, time.monotonic() - started
    )


def _released_config(con: duckdb.DuckDBPyConnection, load_id: str) -> Any:
    """The quality settings for a delivery the operator released: its shrink is accepted."""
    released = con.execute(
        "select 1 from loads where load_id = ? and status = 'released'", [load_id]
    ).fetchone()
    if not released:
        return None
    from athanor.quality import QualityConfig

    return QualityConfig.from_env().with_severity(restated_period_collapsed="warn")


def _replace_restated(con: duckdb.DuckDBPyConnection, load_id: str) -> int:
    """Delete what earlier loads held for the (account, period) pairs this load restates.

    In the lake mode count them and leave them out of the load's view of billing_facts: the
    load's Iceberg commit replaces them (`commit_load`).
    """
    if lake.attached(con):
        replaced = lake.replaced_rows(con, "billing_facts", load_id)
        emptied = lake.emptied_loads(con, "billing_facts", load_id) if replaced else []
        lake.hide_replaced(con, "billing_facts", load_id)
        if emptied:
            # The view holds only this load's partitions now: the emptied loads, from the lake.
            mark_replaced(con, emptied)
        return int(replaced)
    replaced = con.execute(sql("ingest/delete_restated"), {"load_id": load_id}).fetchone()[0]
    if replaced:
        # Deliveries whose every row was restated away stay in the ledger as history.
        mark_replaced(con)
    return int(replaced)


@dataclass(frozen=True)
class _Landed:
    """What one load put in billing_facts for one file, currency, account and billing period."""

    file: str
    currency: str
    account: str
    period: str  # YYYY-MM
    rows: int  # source rows (the format's loaded_rows)
    total: Decimal  # the format's loaded_total, to compare with the file's own total
    billed: Decimal
    bad_periods: int  # rows whose charge or billing period ends before it starts


def _landed(con: duckdb.DuckDBPyConnection, load_id: str, fmt: BillingFormat) -> list[_Landed]:
    """One read of the load's rows: the reconciliation figures, the period rule and the ledger keys."""
    query = sql("ingest/landed", loaded_rows=fmt.loaded_rows, loaded_total=fmt.loaded_total)
    groups = con.execute(query, {"load_id": load_id}).fetchall()
    return [_Landed(*group) for group in groups]


def _reconcile(
    con: duckdb.DuckDBPyConnection,
    load_id: str,
    landed: list[_Landed],
    file_totals: dict[str, _FileTotals],
    checked_at: datetime,
) -> dict[str, Decimal]:
    """Compare each file's own totals with what landed; record them; raise unless equal to the cent."""
    billed_by_currency: dict[str, Decimal] = {}
    for file, totals in file_totals.items():
        mine = [group for group in landed if group.file == file]
        loaded_rows = sum(group.rows for group in mine)
        for currency in sorted({group.currency for group in mine} | set(totals.billed), key=str):
            want = totals.billed.get(currency)
            same = [group for group in mine if group.currency == currency]
            got = sum((group.total for group in same), Decimal(0)) if same else None
            ok = loaded_rows == totals.rows and want == got
            row = {
                "load_id": load_id,
                "source_file": file,
                "billing_currency": currency,
                "file_rows": totals.rows,
                "loaded_rows": loaded_rows,
                "file_billed_cost": want,
                "loaded_billed_cost": got,
                "difference": (got or 0) - (want or 0),
                "reconciled": ok,
                "checked_at": checked_at,
            }
            insert_rows(con, "reconciliations", [row])
            if not ok:
                raise IngestError(
                    file,
                    f"does not reconcile: file has {totals.rows} rows / {currency} {want}, "
                    f"loaded {loaded_rows} rows / {currency} {got}",
                )
            billed = sum((group.billed for group in same), Decimal(0))
            billed_by_currency[currency] = billed_by_currency.get(currency, Decimal(0)) + billed
    return billed_by_currency


def record_failure(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    kind: str,
    error: Exception,
    source_uri: str | None = None,
    status: str = "failed",
) -> None:
    """Write a failed delivery to the ledger (outside the rolled-back load transaction).

    `status`: 'failed', or 'quarantined' when the caller moves the delivery to quarantine.
    """
    digest, size = checksum(files)
    now = datetime.now(UTC).replace(tzinfo=None)
    record = LoadRecord(
        load_id=digest[:16],
        kind=kind,
        source_uri=source_uri or str(files[0].parent),
        files=tuple(f.name for f in files),
        checksum_sha256=digest,
        size_bytes=size,
        status=status,
        message=str(error),
        started_at=now,
        finished_at=now,
    )
    record_load(con, record)
