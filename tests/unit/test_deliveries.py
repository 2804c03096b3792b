"""Dispatching deliveries: each file's kind from its content, one transaction per delivery, and
what the run is told (one line per delivery, one reason per rejected one)."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from athanor.ingest.deliveries import classify, ingest_deliveries, ingest_paths
from athanor.settings import Settings
from athanor.warehouse import connect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GCP = FIXTURES / "billing" / "gcp" / "billing-export-202311.jsonl"
JOBS = FIXTURES / "jobs"
CUR = FIXTURES / "billing" / "cur-legacy" / "20231101-20231201"
INVENTORY_SCHEMA = (
    "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, StorageClass, "
    "IntelligentTieringAccessTier, ETag"
)


def inventory(root: Path, day: str, rows: list[list[str]]) -> Path:
    """An S3 Inventory delivery of bucket `ckpt` as AWS lays it out; returns its manifest."""
    data = root / "ckpt" / "data" / f"{day}.csv.gz"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_bytes(gzip.compress("".join(",".join(f'"{v}"' for v in r) + "\n" for r in rows).encode()))
    manifest = root / "ckpt" / f"{day}T01-00Z" / "manifest.json"
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
                        "key": f"ckpt/data/{data.name}",
                        "size": data.stat().st_size,
                        "MD5checksum": hashlib.md5(data.read_bytes()).hexdigest(),
                    }
                ],
            }
        )
    )
    return manifest


def volumes(path: Path, *sizes_gib: int) -> Path:
    path.write_text(
        json.dumps(
            {
                "Volumes": [
                    {
                        "VolumeId": f"vol-{i}",
                        "Size": size,
                        "VolumeType": "gp3",
                        "State": "available",
                        "CreateTime": "2026-01-01T00:00:00+00:00",
                        "Attachments": [],
                    }
                    for i, size in enumerate(sizes_gib)
                ]
            }
        )
    )
    return path


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"ATHANOR_HOME": str(tmp_path), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"})


def rows(settings: Settings, sql: str) -> list[tuple]:
    con = connect(settings.warehouse, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# ------------------------------------------------------------------------------ classify


def test_each_kind_is_recognised_from_content(tmp_path: Path, settings: Settings) -> None:
    manifest = inventory(
        tmp_path / "inv", "2026-12-01", [["ckpt", "a", "v1", "true", "false", "1", "", "", "", ""]]
    )
    disguised = tmp_path / "bills.csv"  # JSON Lines under a CSV name: the content decides
    shutil.copy(GCP, disguised)
    notes = tmp_path / "notes.txt"
    notes.write_text("nothing to load\n")
    con = connect(settings.warehouse)
    try:
        kinds = {
            path.name: classify(con, path)
            for path in [
                disguised,
                CUR / "asm-0001" / "athanor-cur-1.csv.gz",
                JOBS / "jobs.csv",
                JOBS / "sacct.txt",
                JOBS / "sagemaker-jobs.jsonl",
                JOBS / "sagemaker-spot.json",
                manifest,
                volumes(tmp_path / "volumes.json", 100),
                notes,
                # A legacy CUR manifest names the parts; it is not a delivery by itself.
                CUR / "athanor-cur-Manifest.json",
            ]
        }
    finally:
        con.close()
    assert kinds == {
        "bills.csv": "billing:gcp",
        "athanor-cur-1.csv.gz": "billing:cur_legacy",
        "jobs.csv": "jobs",
        "sacct.txt": "jobs",
        "sagemaker-jobs.jsonl": "jobs",
        "sagemaker-spot.json": "jobs",
        "manifest.json": "inventory",
        "volumes.json": "ebs",
        "notes.txt": "unknown",
        "athanor-cur-Manifest.json": "unknown",
    }


# ------------------------------------------------------------------------ ingest_paths


def test_a_multi_part_delivery_waits_for_its_missing_part(tmp_path: Path, settings: Settings) -> None:
    delivery = tmp_path / "cur" / "asm-0001"
    delivery.mkdir(parents=True)
    shutil.copy(CUR / "asm-0001" / "athanor-cur-Manifest.json", delivery)
    shutil.copy(CUR / "asm-0001" / "athanor-cur-1.csv.gz", delivery)
    outcome = ingest_paths([tmp_path / "cur"], settings.warehouse, settings=settings)
    assert (outcome.lines, outcome.errors, outcome.loaded) == (
        [f"{delivery}: waiting for parts athanor-cur-2.csv.gz; not loaded yet"],
        [],
        0,
    )
    assert rows(settings, "select count(*) from loads") == [(0,)]


def test_unknown_files_are_refused_in_a_folder_as_when_named(tmp_path: Path, settings: Settings) -> None:
    folder = tmp_path / "jobs"
    folder.mkdir()
    shutil.copy(JOBS / "jobs.csv", folder)
    (folder / "README.txt").write_text("exported by the scheduler\n")
    outcome = ingest_paths([folder], settings.warehouse, settings=settings)
    refused = "README.txt: not a known billing, job-log or inventory format (first line: 'exported by the scheduler')"
    assert (outcome.lines, outcome.errors, outcome.loaded, outcome.unrecognised) == (
        ["jobs.csv: generic job log, 6 jobs, 50% censored"],
        [refused],
        1,
        1,
    )
    assert outcome.failed == [[folder / "README.txt"]]
    named = ingest_paths(
        [folder / "README.txt", tmp_path / "gone.csv"], settings.warehouse, settings=settings
    )
    assert named.errors == [f"{tmp_path / 'gone.csv'}: no such file or folder", refused]
    assert named.failed == [[folder / "README.txt"]]


def test_the_data_parts_of_a_landed_inventory_are_not_refused(tmp_path: Path, settings: Settings) -> None:
    landing = tmp_path / "landing"
    row = ["ckpt", "a", "v1", "true", "false", "1", "2026-11-01T00:00:00.000Z", "STANDARD", "", "e1"]
    inventory(landing, "2026-12-01", [row])
    outcome = ingest_paths([landing], settings.warehouse, settings=settings)
    assert (outcome.lines, outcome.errors) == (
        ["2026-12-01T01-00Z/manifest.json: S3 inventory, 1 object versions, 0 GB"],
        [],
    )
    # Without its manifest, a data part is a file of no known format like any other.
    alone = ingest_paths([landing / "ckpt" / "data"], settings.warehouse, settings=settings)
    first_line = ",".join(f'"{v}"' for v in row)
    assert alone.errors == [
        f"2026-12-01.csv.gz: not a known billing, job-log or inventory format (first line: {first_line!r})"
    ]


def test_a_rejected_job_log_is_named_recorded_and_the_rest_still_loads(
    tmp_path: Path, settings: Settings
) -> None:
    bad = tmp_path / "bad" / "jobs.csv"
    bad.parent.mkdir()
    bad.write_text((JOBS / "jobs.csv").read_text().replace("completed,p4d", "exploded,p4d"))
    outcome = ingest_paths([bad, JOBS / "sacct.txt"], settings.warehouse, settings=settings)
    assert outcome.errors == [
        "jobs.csv row 1, column state: not one of completed, failed, cancelled, preempted, running ('exploded')"
    ]
    assert outcome.failed == [[bad]]
    assert outcome.loaded == 1
    assert rows(settings, "select kind, status, files from loads order by status") == [
        ("jobs", "failed", ["jobs.csv"]),
        ("jobs", "loaded", ["sacct.txt"]),
    ]


# ----------------------------------------------------------------- jobs, inventory, EBS


@pytest.mark.slow
def test_a_job_reported_again_replaces_its_earlier_row(tmp_path: Path, settings: Settings) -> None:
    as_of = date(2026, 11, 3)
    first = ingest_deliveries(
        [("jobs", [JOBS / "jobs.csv"], True)], settings.warehouse, settings=settings, as_of=as_of
    )
    assert first.lines == ["jobs.csv: generic job log, 6 jobs, 50% censored"]
    # Loaded with a day, the running j-0004 (started 06:00) is censored at the day's last
    # microsecond: 18 h.
    assert rows(
        settings, "select state, censored, duration_s from job_run_facts where job_id = 'j-0004'"
    ) == [("running", True, pytest.approx(18 * 3600, abs=1e-5))]
    later = tmp_path / "jobs-later.csv"
    lines = (JOBS / "jobs.csv").read_text().splitlines()
    header, j4 = lines[0], next(line for line in lines if line.startswith("j-0004,"))
    later.write_text(header + "\n" + j4.replace(",,running,", ",2026-11-03T09:00:00Z,completed,") + "\n")
    second = ingest_deliveries([("jobs", [later], True)], settings.warehouse, settings=settings, as_of=as_of)
    assert second.lines == ["jobs-later.csv: generic job log, 1 jobs, 0% censored"]
    assert rows(settings, "select count(*) from job_run_facts") == [(6,)]
    assert rows(
        settings, "select state, censored, duration_s from job_run_facts where job_id = 'j-0004'"
    ) == [("completed", False, 3 * 3600)]


@pytest.mark.slow
def test_an_inventory_replaces_the_buckets_previous_one(tmp_path: Path, settings: Settings) -> None:
    day1 = inventory(
        tmp_path / "inv1",
        "2026-11-30",
        [
            ["ckpt", "run-a/checkpoint-1/model.bin", "v1", "true", "false", "2000000000", "2026-11-01T00:00:00.000Z", "STANDARD", "", "e1"],
            ["ckpt", "run-a/checkpoint-2/model.bin", "v2", "true", "false", "1000000000", "2026-11-02T00:00:00.000Z", "STANDARD", "", "e2"],
            ["ckpt", "old.txt", "v3", "true", "true", "", "2026-11-03T00:00:00.000Z", "", "", ""],
        ],
    )  # fmt: skip
    outcome = ingest_paths([day1], settings.warehouse, settings=settings)
    assert outcome.lines == ["2026-11-30T01-00Z/manifest.json: S3 inventory, 3 object versions, 3 GB"]
    # The delete marker has no storage class: NULL, not ''.
    assert rows(settings, "select key, storage_class, inventory_date from storage_objects order by key") == [
        ("old.txt", None, date(2026, 11, 30)),
        ("run-a/checkpoint-1/model.bin", "STANDARD", date(2026, 11, 30)),
        ("run-a/checkpoint-2/model.bin", "STANDARD", date(2026, 11, 30)),
    ]
    day2 = inventory(
        tmp_path / "inv2",
        "2026-12-01",
        [["ckpt", "run-a/checkpoint-2/model.bin", "v2", "true", "false", "1000000000", "2026-11-02T00:00:00.000Z", "STANDARD", "", "e2"]],
    )  # fmt: skip
    assert ingest_paths([day2], settings.warehouse, settings=settings).loaded == 1
    assert rows(settings, "select key, inventory_date from storage_objects") == [
        ("run-a/checkpoint-2/model.bin", date(2026, 12, 1))
    ]


def test_an_ebs_listing_loads_once(tmp_path: Path, settings: Settings) -> None:
    listing = volumes(tmp_path / "volumes.json", 100, 500)
    first = ingest_paths([listing], settings.warehouse, settings=settings)
    assert first.lines == ["volumes.json: EBS volumes, 2 items"]
    again = ingest_paths([listing], settings.warehouse, settings=settings)
    [(load_id,)] = rows(settings, "select load_id from loads")
    assert again.lines == [f"volumes.json: unchanged since load {load_id}, skipped"]
    assert rows(settings, "select kind, source_format, row_count, status from loads") == [
        ("ebs", "ebs_volumes", 2, "loaded")
    ]
    assert rows(settings, "select kind, source_file, items from ebs_listings") == [
        ("volumes", "volumes.json", 2)
    ]


@pytest.mark.slow
def test_the_ledger_keys_a_delivery_by_its_name_and_bytes(tmp_path: Path, settings: Settings) -> None:
    jobs = JOBS / "jobs.csv"
    ingest_paths([jobs], settings.warehouse, settings=settings)
    load_id = hashlib.sha256(b"jobs.csv\0" + jobs.read_bytes()).hexdigest()[:16]
    assert ingest_paths([jobs], settings.warehouse, settings=settings).lines == [
        f"jobs.csv: unchanged since load {load_id}, skipped"
    ]
    # Under another name it is another delivery; its jobs replace the same jobs' rows.
    copy = tmp_path / "renamed.csv"
    shutil.copy(jobs, copy)
    assert ingest_paths([copy], settings.warehouse, settings=settings).loaded == 1
    assert rows(settings, "select count(*), count(distinct load_id) from job_run_facts") == [(6, 1)]
    assert rows(settings, "select files from loads order by files") == [(["jobs.csv"],), (["renamed.csv"],)]
