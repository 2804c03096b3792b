"""No file can run the night out of memory.

Formats are detected from a bounded prefix (a job log's detector used to decompress the whole
file), gzip files are decompressed as streams with a cap (a setting: ATHANOR_MAX_EXPANDED_GB,
ATHANOR_MAX_EXPANSION_RATIO), and a header of implausibly many columns is refused before DuckDB
plans it. Each is one clear line; the memory guard measures the peak RSS of a real `athanor
ingest` process fed compression bombs of 1 MB that expand to 1 GiB (made in the test, in a temp
folder, without ever holding 1 GiB).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

from athanor.cli import main
from tests.unit.test_bad_inputs import COLUMNS, good_rows, write_csv

GIB = 1 << 30
JOB_HEADER = b"job_id,submit_time,start_time,end_time,state,instance_type,instance_count,gpus_per_instance,pricing_model\n"
FOCUS_HEADER = ",".join(COLUMNS).encode() + b"\n"
# Runs a command and prints its exit code and the peak RSS (kB) of the processes it waited for:
# only that command, not whatever else the test process ran before.
MEASURE = textwrap.dedent(
    """
    import resource, subprocess, sys
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
    """
)


def gzip_bomb(path: Path, first: bytes, expanded: int, lying_trailer: bool = False) -> Path:
    """A gzip of `first` then ASCII zeros, `expanded` bytes in all, written as a stream.

    Deflate output after a full flush does not depend on what came before, so the compressed
    block of one MiB of zeros is made once and repeated. `lying_trailer`: an empty second member
    follows, so the file's last trailer states 0 bytes.
    """
    zeros = b"0" * (1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    opening = deflate.compress(first) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    blocks = (expanded - len(first)) // len(zeros)
    crc = zlib.crc32(first)
    for _ in range(blocks):
        crc = zlib.crc32(zeros, crc)
    size = len(first) + blocks * len(zeros)
    with path.open("wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")  # gzip header, no name, mtime 0
        f.write(opening)
        for _ in range(blocks):
            f.write(block)
        f.write(deflate.flush(zlib.Z_FINISH))
        f.write(crc.to_bytes(4, "little") + (size % 2**32).to_bytes(4, "little"))
        if lying_trailer:
            f.write(zlib.compress(b"", wbits=31))  # a whole gzip member holding nothing
    return path


# Inflates the whole GiB to count it (seconds of CPU).
@pytest.mark.slow
def test_the_bomb_is_what_it_says(tmp_path: Path) -> None:
    bomb = gzip_bomb(tmp_path / "b.gz", JOB_HEADER, GIB)
    assert 1.0e6 < bomb.stat().st_size < 1.2e6  # a thousand times smaller
    # Read back as a stream: 1 GiB (to the MiB below), the header first.
    import gzip

    total, start = 0, b""
    with gzip.open(bomb) as z:
        while chunk := z.read(1 << 24):
            start = start or chunk[: len(JOB_HEADER)]
            total += len(chunk)
    assert (start, total) == (JOB_HEADER, len(JOB_HEADER) + (GIB - len(JOB_HEADER)) // (1 << 20) * (1 << 20))


def test_detection_reads_a_bounded_prefix(tmp_path: Path) -> None:
    bomb = gzip_bomb(tmp_path / "jobs.csv.gz", JOB_HEADER, GIB)
    from athanor.ingest import sniff
    from athanor.ingest.jobs import detect_job_format

    started = time.perf_counter()
    assert len(sniff.head(bomb)) == sniff.HEAD_BYTES == 1 << 20

    assert detect_job_format(bomb) == "generic"
    # A whole decompression of 1 GB takes seconds; two prefixes of 1 MiB take milliseconds.
    assert time.perf_counter() - started < 2.0


# Writes four 1 GiB bombs and a real `athanor ingest` inflates each up to its cap.
@pytest.mark.slow
def test_bombs_are_refused_in_one_line_each_and_memory_stays_bounded(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    gzip_bomb(landing / "jobs-bomb.csv.gz", JOB_HEADER, GIB)
    gzip_bomb(landing / "jobs-lying.csv.gz", JOB_HEADER, GIB, lying_trailer=True)
    gzip_bomb(landing / "focus-bomb.csv.gz", FOCUS_HEADER, GIB)
    gzip_bomb(landing / "zeros-lying.gz", b"", GIB, lying_trailer=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_")}
    env |= {"ATHANOR_HOME": str(tmp_path), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"}
    command = [sys.executable, "-m", "athanor.cli", "ingest", str(landing)]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *command], env=env, capture_output=True, text=True, timeout=600
    )
    *errors, measured = done.stderr.splitlines()
    code, peak_kb = map(int, measured.split())
    assert (code, done.stdout) == (1, "")
    bomb = r"gzip of 1\.\d MB expands to more than 2\d\d\.\d MB{}: refused as a likely compression bomb \(limits: ATHANOR_MAX_EXPANSION_RATIO, ATHANOR_MAX_EXPANDED_GB\)"
    patterns = [
        r"error: focus-bomb\.csv\.gz: " + bomb.format("; its trailer states 1\\.1 GB"),
        r"error: jobs-bomb\.csv\.gz: " + bomb.format("; its trailer states 1\\.1 GB"),
        # The trailer says 0 bytes: the reader's own count stops it at the cap.
        r"error: jobs-lying\.csv\.gz: " + bomb.format(""),
        # Counted as it streams before anything reads it: the lying trailer is no evidence.
        r"error: zeros-lying\.gz: " + bomb.format(""),
    ]
    print(f"peak RSS of athanor ingest: {peak_kb / 1e3:.0f} MB")
    assert len(errors) == len(patterns), errors
    for line, pattern in zip(errors, patterns, strict=True):
        assert re.fullmatch(pattern, line), line
    # 1 GiB of content never sat in memory (the old detector took the process to 2.24 GB): the
    # peak is the interpreter, DuckDB and pandas plus at most the cap of one stream (~210 MB).
    assert peak_kb < 900_000, f"peak RSS {peak_kb / 1e3:.0f} MB"


def test_ten_thousand_columns_are_refused_before_duckdb_plans_them(home: Path, capsys) -> None:
    # 1.1 MB: the FOCUS signature, then 9,997 more columns, over 50 rows.
    header = ["BilledCost", "ChargePeriodStart", "BillingAccountId"] + [f"x_{i}" for i in range(9_997)]
    rows = "\n".join(",".join(["1"] * len(header)) for _ in range(50))
    wide = home / "wide.csv"
    wide.write_text(",".join(header) + "\n" + rows + "\n")
    assert 1.0e6 < wide.stat().st_size < 1.3e6
    started = time.perf_counter()
    assert main(["ingest", str(wide)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: wide.csv: 10,000 columns in the header, more than the 2,000 allowed "
        "(no billing or job export has so many; limit: ATHANOR_MAX_COLUMNS)"
    ]
    assert time.perf_counter() - started < 30


@pytest.mark.slow
def test_the_column_limit_is_a_setting(home: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("ATHANOR_MAX_COLUMNS", "20")
    file = write_csv(home / "focus.csv", good_rows())
    assert main(["ingest", str(file)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: focus.csv: 26 columns in the header, more than the 20 allowed "
        "(no billing or job export has so many; limit: ATHANOR_MAX_COLUMNS)"
    ]
    monkeypatch.setenv("ATHANOR_MAX_COLUMNS", "26")
    assert main(["ingest", str(file)]) == 0
