"""A gzip's expansion is counted as it streams, for every kind of delivery: the trailer's size
field (4 bytes, modulo 4 GiB, of the last member only) is no evidence.

The issue's case, a 10.3 MB FOCUS gzip expanding to 4.61 GB, passed because its trailer stated
the size less 4 GiB. These files do the same at a small scale, fast: a cap of 5 MB
(ATHANOR_MAX_EXPANDED_GB=0.005) and files of 20 MB whose trailer states 1,000 bytes, either
patched (what the wrap does to a 4 GiB file) or after an empty second member.
"""

from __future__ import annotations

import hashlib
import json
import re
import tracemalloc
import zlib
from pathlib import Path

import duckdb
import pytest

from athanor.cli import main
from athanor.ingest import jobs, sniff
from tests.unit.test_bad_inputs import good_rows, write_csv

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPANDED = 20_000_000
BOMB = (
    r"error: {name}: gzip of \d+\.\d kB expands to more than 5\.0 MB: refused as a likely compression "
    r"bomb \(limits: ATHANOR_MAX_EXPANSION_RATIO, ATHANOR_MAX_EXPANDED_GB\)"
)
JOB_HEADER = "job_id,submit_time,start_time,end_time,state,instance_type,instance_count,gpus_per_instance,pricing_model\n"
JOB_ROW = "j-1,2026-11-03T00:00:00Z,2026-11-03T00:10:00Z,2026-11-03T01:40:00Z,completed,p4d.24xlarge,1,8,on_demand\n"
INVENTORY_SCHEMA = (
    "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, StorageClass, "
    "IntelligentTieringAccessTier, ETag"
)
INVENTORY_ROW = (
    '"ckpt","runs/r1/step-100/model.pt","v1","true","false","1000","2026-11-01T00:00:00.000Z",'
    '"STANDARD","","e1"\n'
)


def lying_gzip(path: Path, header: str, row: str, expanded: int = EXPANDED, lie: str = "wrap") -> Path:
    """`header`, then `row` over and over to `expanded` bytes, gzipped; the last trailer states
    1,000 bytes. `lie`: "wrap" patches the trailer's size field (as 4 GiB + 1,000 bytes would
    wrap it), "member" appends an empty second member (whose own trailer says 0)."""
    block = row * (1_000_000 // len(row))
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = [deflate.compress(header.encode())]
    written = len(header)
    while written < expanded:
        body.append(deflate.compress(block.encode()))
        written += len(block)
    body.append(deflate.flush())
    data = b"".join(body)
    if lie == "wrap":
        data = data[:-4] + (1000).to_bytes(4, "little")
    else:
        data += zlib.compress(b"", wbits=31)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    assert path.stat().st_size * 100 < expanded  # a hundred times smaller than what it holds
    return path


@pytest.fixture
def small_cap(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATHANOR_MAX_EXPANDED_GB", "0.005")
    return home


def _ingest_refused(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and re.fullmatch(BOMB.format(name=re.escape(path.name)), err[0]), err


def _warehouse_rows(home: Path) -> dict[str, int]:
    warehouse = home / "warehouse" / "athanor.duckdb"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return {
            t: con.execute(f"select count(*) from {t}").fetchone()[0]
            for t in ("billing_facts", "job_run_facts", "storage_objects", "gpu_samples")
        }


@pytest.mark.parametrize("lie", ["wrap", "member"])
def test_a_billing_gzip_whose_trailer_understates_is_refused(
    small_cap: Path, lie: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = write_csv(small_cap / "one.csv", good_rows()).read_text()
    header, first_row = text.splitlines(keepends=True)[:2]
    bomb = lying_gzip(small_cap / "focus.csv.gz", header, first_row, lie=lie)
    _ingest_refused(bomb, capsys)
    assert _warehouse_rows(small_cap) == {
        "billing_facts": 0,
        "job_run_facts": 0,
        "storage_objects": 0,
        "gpu_samples": 0,
    }


def test_a_telemetry_gzip_whose_trailer_understates_is_refused(
    small_cap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (FIXTURES / "telemetry" / "gpu-node-01.nvidia-smi.csv").read_text().splitlines(keepends=True)
    bomb = lying_gzip(small_cap / "node.nvidia-smi.csv.gz", lines[0], lines[1])
    _ingest_refused(bomb, capsys)
    assert _warehouse_rows(small_cap)["gpu_samples"] == 0


def test_an_inventory_part_whose_trailer_understates_is_refused(
    small_cap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The manifest alone is named: its part is reached through it, not looked at as a delivery.
    part = lying_gzip(small_cap / "inv" / "ckpt" / "data" / "part-0.csv.gz", "", INVENTORY_ROW, lie="member")
    manifest = small_cap / "inv" / "ckpt" / "2026-11-02T01-00Z" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "sourceBucket": "ckpt",
                "destinationBucket": "arn:aws:s3:::inventory",
                "fileFormat": "CSV",
                "fileSchema": INVENTORY_SCHEMA,
                "files": [
                    {
                        "key": "ckpt/data/part-0.csv.gz",
                        "size": part.stat().st_size,
                        "MD5checksum": hashlib.md5(part.read_bytes()).hexdigest(),
                    }
                ],
            }
        )
    )
    assert main(["ingest", str(manifest)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and re.fullmatch(BOMB.format(name="part-0.csv.gz"), err[0]), err
    assert _warehouse_rows(small_cap)["storage_objects"] == 0


def test_a_job_log_bomb_is_refused_before_its_content_is_held(small_cap: Path) -> None:
    # 200 MB behind a trailer stating 1,000 bytes, against a cap of 50 MB.
    bomb = lying_gzip(small_cap / "jobs.csv.gz", JOB_HEADER, JOB_ROW, expanded=200_000_000, lie="member")
    limits = sniff.InputLimits(max_expanded_bytes=50_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(sniff.BrokenFile, match="expands to more than 50.0 MB"):
            jobs.read_job_runs(bomb, limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Counting keeps one chunk (1 MiB) at a time; holding the stream up to the cap took 50 MB.
    assert peak < 8_000_000, f"peak {peak / 1e6:.1f} MB"


@pytest.mark.slow
def test_an_honest_gzip_under_the_cap_loads_and_is_counted_once(
    small_cap: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = write_csv(small_cap / "one.csv", good_rows()).read_text()
    honest = small_cap / "focus.csv.gz"
    honest.write_bytes(zlib.compress(text.encode(), wbits=31))
    counted: list[Path] = []
    real_open = sniff.gzip.open

    def counting(path, *args, **kwargs):
        counted.append(Path(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(sniff, "MAX_DEFLATE_RATIO", 1_000_000)  # no file is too small to count
    monkeypatch.setattr(sniff.gzip, "open", counting)
    assert main(["ingest", str(honest)]) == 0, capsys.readouterr().err
    assert _warehouse_rows(small_cap)["billing_facts"] == len(good_rows())
    # Kind, format and header each look at the file: its expansion was counted once.
    assert counted.count(honest) == 1
