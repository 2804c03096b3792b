"""CSV text DuckDB's sniffer refuses although it is an export: line endings that mix CRLF and
LF, and rows that do not match their header.

Exports that went through Windows tools (an Azure MCA cost export opened and saved, files
concatenated from two systems) end some lines with CRLF and others with LF. DuckDB's sniffer
then finds no dialect; its strict mode off reads such a file but also lets a row with one
field too many through silently, so the file is read through a copy with LF line endings
instead (`lf_copy`), made once per file and process and removed at exit.

When DuckDB still cannot parse a CSV whose header names a known format, `field_count_problem`
names the first line that does not match the header, for the operator to fix.
"""

from __future__ import annotations

import atexit
import csv
import gzip
import io
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from athanor.ingest import sniff

# (file, size, modification time) -> its copy with LF line endings.
_COPIES: dict[tuple[str, int, int], Path] = {}
_FOLDER: list[Path] = []


def mixed_line_endings(data: bytes) -> bool:
    """Whether `data` ends some lines with CRLF and others with a bare LF."""
    crlf = data.count(b"\r\n")
    return 0 < crlf < data.count(b"\n")


def lf_copy(path: Path) -> Path | None:
    """A copy of CSV `path` (decompressed) with every line ending LF, when its first
    `sniff.HEAD_BYTES` mix CRLF and LF; None for a file DuckDB reads as it is.

    The copy keeps the file's name (DuckDB's messages then name the file as the original),
    in a folder of its own under the system's temporary folder.
    """
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key in _COPIES:
        return _COPIES[key]
    if not mixed_line_endings(sniff.head(path)):
        return None
    folder = Path(tempfile.mkdtemp(prefix="lf-", dir=_folder()))
    copy = folder / path.name.removesuffix(".gz")
    with _binary(path) as source, copy.open("wb") as target:
        for line in source:  # split at LF: a CRLF line ends in b"\r\n"
            target.write(line[:-2] + b"\n" if line.endswith(b"\r\n") else line)
    _COPIES[key] = copy
    return copy


def copies_of(path: Path) -> list[Path]:
    """The LF copies made of `path` (to name the file by its own name in DuckDB's messages)."""
    return [copy for (name, _, _), copy in _COPIES.items() if name == str(path)]


def _folder() -> Path:
    if not _FOLDER:
        _FOLDER.append(Path(tempfile.mkdtemp(prefix="athanor-csv-")))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    return _FOLDER[0]


@contextmanager
def _binary(path: Path) -> Iterator[IO[bytes]]:
    with path.open("rb") as raw:
        if raw.read(2) == sniff.GZIP_MAGIC:
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw) as z:
                yield z
        else:
            raw.seek(0)
            yield raw


def field_count_problem(path: Path, header: list[str]) -> str | None:
    """The first line whose number of fields differs from the header's, said in one phrase.

    Reads the file with Python's csv module (quotes as RFC 4180 has them; any line ending),
    with the delimiter the header was split by. None when every row matches the header.
    """
    delimiter = _delimiter(header, path)
    with _binary(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")
        rows = csv.reader(text, delimiter=delimiter)
        if next(rows, None) is None:
            return None
        for row in rows:
            if row and len(row) != len(header):
                return (
                    f"line {rows.line_num} has {len(row)} fields, the header {len(header)} "
                    f"(delimiter {delimiter!r})"
                )
    return None


def _delimiter(header: list[str], path: Path) -> str:
    """The delimiter that splits the first line into `header` (`sniff.header_columns` chose it)."""
    first = sniff.head(path, 1 << 20).decode("utf-8", errors="replace").lstrip("\ufeff")
    line = first.split("\n", 1)[0].rstrip("\r")
    for delimiter in sniff._DELIMITERS:
        if next(csv.reader([line], delimiter=delimiter), []) == header:
            return delimiter
    return ","
