"""Billing export formats: how each is recognised and mapped into `billing_facts`.

A format is recognised from its columns (never from the file name). Each one has
a staging query `sql/staging/<name>.sql` that reads the temp view `src` (the raw
file under the format's canonical column names, every column the format knows
present, missing optional ones as NULL) and returns rows shaped like `billing_facts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def exact_names(columns: list[str], known: tuple[str, ...]) -> dict[str, str]:
    """Known column -> raw column, for formats whose files use the known names verbatim."""
    present = set(columns)
    return {name: name for name in known if name in present}


@dataclass(frozen=True)
class BillingFormat:
    name: str
    description: str
    # Raw column names whose presence identifies the format; all must be in the file.
    signature: frozenset[str]
    # Canonical columns a valid file must have.
    required: tuple[str, ...]
    # Every canonical column the staging SQL reads; absent optional ones become NULL.
    known: tuple[str, ...]
    money: tuple[str, ...]
    timestamps: tuple[str, ...]
    # Columns that must not be null on any row.
    not_null: tuple[str, ...]
    currency_column: str
    # SQL over `src`: the amount one source row bills, summed per currency for reconciliation.
    file_total: str
    # SQL over `billing_facts`: what must add up to `file_total` once loaded.
    loaded_total: str = "billed_cost"
    # SQL over `billing_facts`: how many source rows landed (GCP credits add rows of their own).
    loaded_rows: str = "count(*)"
    # (start, end) pairs where end must not precede start.
    periods: tuple[tuple[str, str], ...] = ()
    # How a timestamp column is parsed ({} is the quoted column); NULL marks a bad value.
    parse_timestamp: str = "try_cast({} as timestamptz)"
    # Raw columns -> {canonical: raw}; the default takes the known names verbatim.
    resolve: Callable[[list[str], tuple[str, ...]], dict[str, str]] = exact_names
    # Canonical columns assembled from flattened raw columns: (column, raw-name prefix), e.g.
    # GCP CSV 'service.description' -> service {"description": ...}. Keys are the suffixes;
    # the result is a MAP when the column is in `maps`, else a JSON object as text.
    nested: tuple[tuple[str, str], ...] = ()
    # Canonical columns staging reads as MAP(VARCHAR, VARCHAR), whether the file holds a
    # native map (Parquet), JSON text (CSV) or flattened columns (`nested`).
    maps: tuple[str, ...] = ()
    # Text columns holding nested values as JSON, or as Python literals (see ingest.literals),
    # which are read as JSON; a value that is neither is refused with its row.
    json_text: tuple[str, ...] = ()
    # A map column whose keys lose a prefix on the way in, and the prefixes: CUR writes
    # user-defined tags as user_<key> (2.0) or user:<key> (legacy); analysts know them by <key>.
    key_prefixes: tuple[str, tuple[str, ...]] | None = None
    # Keep the columns the format does not know in x_provider_columns. Off for CUR: its
    # hundreds of AWS columns are not provider extensions, and a per-row map of them costs
    # more than the rest of the load (measured in bench/bench_ingest.py).
    keep_extras: bool = True
    # Signature matched ignoring case (Azure changed the case of its columns between versions).
    case_insensitive: bool = False
    # The staging query reads money as DECIMAL(38,12) and timestamps as UTC TIMESTAMP, cast in
    # the view `src` (see ingest.source_select); off for formats whose staging parses its own.
    typed_source: bool = False
    # The staging query `sql/staging/<staging>.sql`; formats that differ only in naming share one.
    staging: str = ""

    def prefixes_cut_from(self, column: str) -> tuple[str, ...]:
        """The prefixes cut from `column`'s map keys: none unless it is the key_prefixes column."""
        return self.key_prefixes[1] if self.key_prefixes and self.key_prefixes[0] == column else ()

    @property
    def staging_sql(self) -> str:
        return "staging/" + (self.staging or self.name)

    def matches(self, columns: set[str]) -> bool:
        if self.case_insensitive:
            return {c.lower() for c in self.signature} <= {c.lower() for c in columns}
        return self.signature <= columns


def formats() -> tuple[BillingFormat, ...]:
    from athanor.ingest.sources import azure, cur2, cur_legacy, focus, gcp

    return (focus.FORMAT, cur2.FORMAT, cur_legacy.FORMAT, azure.FORMAT, gcp.FORMAT)


def detect(columns: list[str]) -> BillingFormat | None:
    """The billing format whose signature columns are all present, if any."""
    present = {c.lstrip("\ufeff") for c in columns}
    for fmt in formats():
        if fmt.matches(present):
            return fmt
    return None
