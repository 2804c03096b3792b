"""What a landed file holds, judged from a bounded prefix, and reading it within limits.

Nothing here reads a whole file to decide what it is: detection looks at the first
`HEAD_BYTES` of the content (a gzip is decompressed as a stream, and only that far). What
a file cannot be, it is refused for with one line saying why:

- a gzip cut short (no end marker) or corrupt;
- a gzip that expands beyond `max_expanded_bytes`, or, once past `RATIO_FLOOR_BYTES`, more
  than `max_expansion_ratio` times its size (real exports compress 5-50x; a compression
  bomb about 1000x). The decompressed bytes are counted as they stream, keeping nothing,
  before any reader takes the file, whatever its kind: the trailer's size field is no
  evidence (it holds the size modulo 4 GiB, of the last member only). Only a gzip too small
  to reach the cap even at deflate's largest ratio (`MAX_DEFLATE_RATIO`) is not decompressed.
  DuckDB decompresses billing and inventory files itself, once the count has passed;
- text that is not UTF-8: UTF-16/32 (with or without a byte-order mark), or bytes invalid in
  UTF-8 (Latin-1 / Windows-1252), named as such;
- a header with more columns than `max_columns` (DuckDB runs out of memory planning a
  10,000-column CSV) or with a column name twice (DuckDB would load the second as
  `<name>_1`; column names compare case-insensitively, as in SQL).

The limits are settings (`athanor.settings.Settings`): ATHANOR_MAX_COLUMNS (2000),
ATHANOR_MAX_EXPANDED_GB (20) and ATHANOR_MAX_EXPANSION_RATIO (200).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

from athanor.ingest.errors import IngestError
from athanor.settings import Settings

GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 1 << 20  # what detection reads of a file's content, at most
# Below this expanded size the ratio is not held against a file: a small file harms nothing,
# and tiny gzips of repetitive text reach high ratios honestly.
RATIO_FLOOR_BYTES = 100_000_000
# Deflate's largest expansion (RFC 1951: a 258-byte match coded in as little as 2 bits) is
# about 1032:1; a gzip member's header and trailer only lower it.
MAX_DEFLATE_RATIO = 1032
_CHUNK = 1 << 20
# (file, size, modification time, cap) -> its expanded size, for the files counted already:
# a night looks at each file several times (its kind, its format, its header).
_COUNTED: dict[tuple[str, int, int, int], int] = {}
_DELIMITERS = (",", ";", "\t", "|")
# (leading bytes, encoding): UTF-32 before UTF-16, whose little-endian mark starts UTF-32's.
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32 LE"),
    (b"\x00\x00\xfe\xff", "UTF-32 BE"),
    (b"\xff\xfe", "UTF-16 LE"),
    (b"\xfe\xff", "UTF-16 BE"),
)
_NOT_TEXT = (
    (b"PK\x03\x04", "a ZIP archive (an Excel workbook is one), not a CSV, JSON or Parquet file"),
    (b"%PDF", "a PDF document, not a CSV, JSON or Parquet file"),
)


@dataclass(frozen=True)
class InputLimits:
    max_columns: int = Settings.max_columns
    max_expanded_bytes: int = Settings.max_expanded_bytes
    max_expansion_ratio: float = Settings.max_expansion_ratio

    @classmethod
    def from_settings(cls, settings: Settings) -> InputLimits:
        return cls(settings.max_columns, settings.max_expanded_bytes, settings.max_expansion_ratio)

    def expanded_cap(self, compressed_size: int) -> int:
        """The most bytes a gzip of `compressed_size` bytes may expand to."""
        by_ratio = max(RATIO_FLOOR_BYTES, int(self.max_expansion_ratio * compressed_size))
        return min(self.max_expanded_bytes, by_ratio)


DEFAULT_LIMITS = InputLimits()


class BrokenFile(IngestError):
    """A file no reader can take, whatever kind it was meant to be (cut short, not UTF-8, ...)."""


def is_gzip(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(2) == GZIP_MAGIC


def _truncated(path: Path) -> BrokenFile:
    return BrokenFile(
        path.name,
        "truncated gzip: the compressed stream ends before its end marker "
        "(the file was cut short; deliver it again)",
    )


def _corrupt(path: Path, exc: BaseException) -> BrokenFile:
    return BrokenFile(path.name, f"not a valid gzip stream ({exc})")


def head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first `size` bytes of the file's content; a gzip is decompressed only that far."""
    with path.open("rb") as f:
        if f.read(2) != GZIP_MAGIC:
            f.seek(0)
            return f.read(size)
        f.seek(0)
        try:
            with gzip.GzipFile(fileobj=f) as z:
                return z.read(size)
        except EOFError:
            raise _truncated(path) from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise _corrupt(path, exc) from None


def check_expansion(path: Path, limits: InputLimits = DEFAULT_LIMITS) -> int | None:
    """Refuse a gzip that expands past the limits, counting its bytes as they stream.

    Returns the expanded size (None: not a gzip, or one too small to reach the cap). Nothing is
    kept while counting, so a bomb costs time, never memory. The trailer's size field is not
    trusted: it wraps at 4 GiB and describes the last member only; when it states more than
    the cap, the refusal quotes it. A stream cut short or corrupt is refused as such.
    """
    stat = path.stat()
    size = stat.st_size
    if size < 18 or not is_gzip(path):  # 10-byte header + 8-byte trailer
        return None
    cap = limits.expanded_cap(size)
    if size * MAX_DEFLATE_RATIO <= cap:
        return None
    key = (str(path.resolve()), size, stat.st_mtime_ns, cap)
    if key in _COUNTED:
        return _COUNTED[key]
    with path.open("rb") as f:
        f.seek(-4, 2)
        stated = int.from_bytes(f.read(4), "little")
    total = 0
    try:
        with gzip.open(path, "rb") as z:
            while chunk := z.read(_CHUNK):
                total += len(chunk)
                if total > cap:
                    raise _too_big(path, size, cap, stated if stated > cap else None)
    except EOFError:
        raise _truncated(path) from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise _corrupt(path, exc) from None
    if len(_COUNTED) >= 4096:
        _COUNTED.clear()
    _COUNTED[key] = total
    return total


def _too_big(path: Path, size: int, cap: int, stated: int | None = None) -> BrokenFile:
    said = f"; its trailer states {_bytes(stated)}" if stated is not None else ""
    return BrokenFile(
        path.name,
        f"gzip of {_bytes(size)} expands to more than {_bytes(cap)}{said}: refused as a likely "
        "compression bomb (limits: ATHANOR_MAX_EXPANSION_RATIO, ATHANOR_MAX_EXPANDED_GB)",
    )


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} bytes"


def expand(path: Path, limits: InputLimits = DEFAULT_LIMITS) -> bytes:
    """The file's content: a gzip is counted first (`check_expansion`, keeping nothing), and
    read only once it is known to fit the limits."""
    if not is_gzip(path):
        return path.read_bytes()
    check_expansion(path, limits)
    size = path.stat().st_size
    cap = limits.expanded_cap(size)
    chunks, total = [], 0
    try:
        with gzip.open(path, "rb") as z:
            while chunk := z.read(_CHUNK):
                total += len(chunk)
                if total > cap:  # the file grew since it was counted
                    raise _too_big(path, size, cap)
                chunks.append(chunk)
    except EOFError:
        raise _truncated(path) from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise _corrupt(path, exc) from None
    return b"".join(chunks)


def read_problem(path: Path, limits: InputLimits = DEFAULT_LIMITS) -> BrokenFile | None:
    """Why the file cannot be read to its end as UTF-8 text, if it cannot: a gzip cut short,
    corrupt or too big, or a byte invalid in UTF-8 past the prefix detection looked at.

    Streams the whole file and keeps nothing: for explaining a failed read, not for every load.
    """
    gz = is_gzip(path)
    size = path.stat().st_size
    cap = limits.expanded_cap(size) if gz else None
    decoder = codecs.getincrementaldecoder("utf-8")()
    total, lines, binary = 0, 0, False
    try:
        with gzip.open(path, "rb") if gz else path.open("rb") as f:
            head_bytes = f.read(4)
            binary = head_bytes == b"PAR1"
            chunk = head_bytes
            while chunk:
                if cap is not None and total + len(chunk) > cap:
                    return _too_big(path, size, cap)
                if not binary:
                    try:
                        decoder.decode(chunk)
                    except UnicodeDecodeError as exc:
                        offset = total + exc.start
                        line = lines + chunk.count(b"\n", 0, exc.start) + 1
                        return BrokenFile(path.name, _not_utf8(chunk, exc.start, offset, line))
                    lines += chunk.count(b"\n")
                total += len(chunk)
                chunk = f.read(_CHUNK)
    except EOFError:
        return _truncated(path)
    except (gzip.BadGzipFile, zlib.error) as exc:
        return _corrupt(path, exc)
    return None


def encoding_problem(data: bytes, complete: bool = False) -> str | None:
    """What keeps `data` from being UTF-8 text, if anything (None for UTF-8 or a Parquet file).

    `data` is a file's first bytes (`complete`: the whole of it); a character cut in two at
    the end of a prefix is not a problem.
    """
    if data[:4] == b"PAR1":
        return None
    for magic, what in _NOT_TEXT:
        if data.startswith(magic):
            return what
    for bom, name in _BOMS:
        if data.startswith(bom):
            return f"{name} text (with a byte-order mark); Athanor reads UTF-8: export the file as UTF-8"
    sample = data[:4096]
    if len(sample) >= 8 and b"\0" in sample:
        # ASCII text in UTF-16 has a NUL beside nearly every character, on one side.
        even, odd = sample[0::2].count(0), sample[1::2].count(0)
        half = len(sample) // 2
        for nuls, other, order in ((odd, even, "LE"), (even, odd, "BE")):
            if nuls > half * 0.3 and other < nuls * 0.1:
                return (
                    f"UTF-16 {order} text (without a byte-order mark); Athanor reads UTF-8: "
                    "export the file as UTF-8"
                )
        return "binary data, not text (NUL bytes), and not a Parquet file"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not complete and exc.reason == "unexpected end of data":
            return None
        return _not_utf8(data, exc.start, exc.start, data.count(b"\n", 0, exc.start) + 1)
    return None


def _not_utf8(data: bytes, at: int, offset: int, line: int) -> str:
    return (
        f"not UTF-8: byte 0x{data[at]:02X} at offset {offset:,} (line {line}) is invalid in UTF-8; "
        f"the file looks {_eight_bit_guess(data)}: export it as UTF-8"
    )


def _eight_bit_guess(data: bytes) -> str:
    controls = sum(1 for b in data[:65536] if b < 0x20 and b not in b"\t\r\n")
    if controls:
        return "binary, not text"
    try:
        data.decode("cp1252")
        return "Latin-1 / Windows-1252 encoded"
    except UnicodeDecodeError:
        return "encoded in a single-byte code page (Latin-1 or similar)"


def header_columns(data: bytes, complete: bool) -> list[str] | None:
    """The column names of a CSV header (or a JSON Lines file's first object) at the start of
    `data`; None for other content (a JSON document, Parquet).

    Raises ValueError when the first line does not end within `data` (a header longer than
    HEAD_BYTES is no export's).
    """
    if data[:4] == b"PAR1":
        return None
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    end = text.find("\n")
    if end < 0 and not complete:
        stripped = text.lstrip()
        if stripped[:1] in ("{", "["):
            return None  # one JSON document on one long line (an EBS listing, a manifest)
        raise ValueError(f"the first line is longer than {_bytes(len(data))}")
    line = (text if end < 0 else text[:end]).rstrip("\r")
    if line.lstrip()[:1] == "[":
        return None
    if line.lstrip()[:1] == "{":
        try:
            pairs = json.loads(line, object_pairs_hook=lambda items: items)
        except ValueError:
            return None  # a JSON document spread over lines
        except RecursionError:
            return None  # nested past the decoder's depth: the reader of its kind refuses it
        return [key for key, _ in pairs] if isinstance(pairs, list) else None
    # The delimiter that splits the header most: DuckDB's sniffer picks the same for a real export.
    return max((next(csv.reader([line], delimiter=d), []) for d in _DELIMITERS), key=len)


def parquet_columns(path: Path) -> list[str]:
    """A Parquet file's column names, from its footer."""
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)


def check_unique(path: Path, columns: list[str] | None) -> None:
    """Refuse a header with a column name twice (compared as SQL does: ignoring case)."""
    seen: dict[str, int] = {}
    for position, name in enumerate(columns or (), start=1):
        key = name.lstrip("\ufeff").strip().lower()
        if not key:
            continue  # unnamed columns (a trailing delimiter) are numbered by the reader
        if key in seen:
            first = seen[key]
            earlier = columns[first - 1]  # type: ignore[index]
            same = "" if earlier == name else f" and {earlier!r} (names ignore case)"
            raise BrokenFile(
                path.name,
                f"duplicate column name: header columns {first} and {position} are both named "
                f"{name!r}{same}; which one holds the data is ambiguous",
            )
        seen[key] = position


def check_content(path: Path, limits: InputLimits = DEFAULT_LIMITS) -> tuple[bytes, list[str] | None]:
    """Every check that needs no more than the file's prefix: (that prefix, the header's columns).

    Raises IngestError for an empty file, a broken or oversized gzip, text that is not UTF-8,
    and a header of more columns than the limit. Column names are not checked for repeats
    here: a header-less data file (an S3 Inventory part) may repeat values in its first row.
    """
    if path.stat().st_size == 0:
        raise BrokenFile(path.name, "file is empty (0 bytes)")
    check_expansion(path, limits)
    data = head(path)
    complete = len(data) < HEAD_BYTES
    problem = encoding_problem(data, complete)
    if problem:
        raise BrokenFile(path.name, problem)
    if data[:4] == b"PAR1":
        try:
            columns: list[str] | None = parquet_columns(path)
        except (OSError, ValueError) as exc:
            raise BrokenFile(path.name, f"unreadable Parquet file ({exc})") from None
    else:
        try:
            columns = header_columns(data, complete)
        except ValueError as exc:
            raise BrokenFile(path.name, f"{exc}: not a CSV header") from None
    if columns is not None and len(columns) > limits.max_columns:
        raise BrokenFile(
            path.name,
            f"{len(columns):,} columns in the header, more than the {limits.max_columns:,} allowed "
            "(no billing or job export has so many; limit: ATHANOR_MAX_COLUMNS)",
        )
    return data, columns
