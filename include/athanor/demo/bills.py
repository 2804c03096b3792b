"""Write billing line items as FOCUS 1.2 and AWS CUR 2.0 files, exactly and reproducibly.

Both writers take the same *canonical line-item frame* (`LINE_SCHEMA`, a pyarrow
table; grain: one row per charge per charge period) and render it the way each
format represents the charge. Money is carried as integer micro-dollars and
quantities as integers of 1e-10 units, so every file total is exact and the
same bytes come out for the same input:

- FOCUS CSV: money with 6 decimals, quantities with 10, timestamps ISO 8601 with
  `Z`, `Tags` a JSON object string, provider extensions as `x_` columns.
- CUR 2.0 Parquet: money and quantities as DOUBLE (what AWS writes; each value is
  the double nearest the exact micro-dollar amount, so sums agree to the cent),
  `product` and `resource_tags` as MAP<string,string>. CUR CSV: fixed decimals
  and the maps as JSON strings.

How commitments appear (the canonical `line_type` is the CUR line item type):

| canonical line_type     | FOCUS 1.2                                            | CUR 2.0                                  |
|-------------------------|------------------------------------------------------|------------------------------------------|
| Usage                   | Usage, Standard (on-demand) or Dynamic (spot)        | Usage                                    |
| DiscountedUsage         | Usage, Committed, Status Used, Billed 0, Effective RI | DiscountedUsage (unblended 0)            |
| SavingsPlanCoveredUsage | Usage, Committed, Status Used, Billed 0, Effective SP | SavingsPlanCoveredUsage (unblended = on-demand) + a SavingsPlanNegation row |
| UnusedCommitment        | Usage, Status Unused, Billed 0, Effective = unused    | (no row: folded into RIFee / SavingsPlanRecurringFee) |
| RIFee                   | Purchase, Recurring, Effective 0                      | RIFee with reservation_unused_*          |
| SavingsPlanRecurringFee | Purchase, Recurring, Effective 0                      | SavingsPlanRecurringFee with used/total commitment |
| Tax / Credit            | Tax / Credit                                          | Tax / Credit                             |

With these rules, FOCUS sum(BilledCost) equals CUR sum(line_item_unblended_cost),
and FOCUS sum(EffectiveCost) equals the usual CUR amortized-cost formula (see
`athanor.demo.cur2_format`) wherever the RI month is complete.

The rendering lives in `focus_format` and `cur2_format`, the frame in `lines`; this module
writes files.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from athanor.demo.cur2_format import render_cur2
from athanor.demo.focus_format import render_focus
from athanor.demo.lines import FileTotals, Rendered, as_lines


class _Sink:
    """Writes tables chunk by chunk to csv, csv.gz or parquet with fixed, reproducible settings.

    For csv.gz, compression of one chunk runs in a worker thread while the caller renders
    the next (zlib releases the GIL); at most one chunk waits, so memory stays bounded.
    """

    def __init__(self, path: Path, fmt: str) -> None:
        if fmt not in ("csv", "csv.gz", "parquet"):
            raise ValueError(f"unknown format {fmt!r}: use csv, csv.gz or parquet")
        self.path, self.fmt = path, fmt
        path.parent.mkdir(parents=True, exist_ok=True)
        self._pq: pq.ParquetWriter | None = None
        self._raw: BinaryIO | None = None
        self._gz: gzip.GzipFile | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[int] | None = None
        self._header = True

    def write(self, table: pa.Table) -> None:
        if self.fmt == "parquet":
            if self._pq is None:
                self._pq = pq.ParquetWriter(
                    self.path,
                    table.schema,
                    compression="snappy",
                    version="2.6",
                    use_dictionary=True,
                    write_statistics=True,
                )
            self._pq.write_table(table, row_group_size=1 << 20)
            return
        buffer = io.BytesIO()
        options = pacsv.WriteOptions(include_header=self._header, quoting_style="needed")
        pacsv.write_csv(table, buffer, options)
        self._header = False
        if self._raw is None:
            self._raw = self.path.open("wb")
            if self.fmt == "csv.gz":
                # mtime=0 and no file name in the gzip header: same input, same bytes.
                self._gz = gzip.GzipFile(filename="", fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)
                self._pool = ThreadPoolExecutor(max_workers=1)
        if self._gz is None:
            self._raw.write(buffer.getbuffer())
            return
        if self._pending is not None:
            self._pending.result()
        self._pending = self._pool.submit(self._gz.write, buffer.getvalue())  # type: ignore[union-attr]

    def close(self) -> None:
        try:
            if self._pending is not None:
                self._pending.result()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
            if self._pq is not None:
                self._pq.close()
            if self._gz is not None:
                self._gz.close()
            if self._raw is not None:
                self._raw.close()


def write_parts(parts: Iterator[Rendered], path: Path, fmt: str) -> FileTotals:
    sink = _Sink(path, fmt)
    rows = billed = effective = listed = 0
    try:
        for part in parts:
            sink.write(part.table)
            totals = part.totals()
            rows += totals.rows
            billed += totals.billed_micro
            effective += totals.effective_micro
            listed += totals.list_micro
    finally:
        sink.close()
    return FileTotals(str(path), fmt, rows, billed, effective, listed)


def write_focus(lines: pa.Table | object, path: Path | str, fmt: str = "csv.gz") -> FileTotals:
    """Write canonical lines as one FOCUS 1.2 file (csv.gz, csv or parquet)."""
    table = as_lines(lines)
    return write_parts(iter([render_focus(table, typed=fmt == "parquet")]), Path(path), fmt)


def write_cur2(lines: pa.Table | object, path: Path | str, fmt: str = "parquet") -> FileTotals:
    """Write canonical lines as one AWS CUR 2.0 file (parquet or csv)."""
    if fmt not in ("parquet", "csv", "csv.gz"):
        raise ValueError(f"unknown format {fmt!r}")
    table = as_lines(lines)
    return write_parts(iter([render_cur2(table, csv_text=fmt != "parquet")]), Path(path), fmt)
