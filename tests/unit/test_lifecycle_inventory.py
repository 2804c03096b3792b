"""S3 Inventory / EBS / live-listing ingestion into the canonical shape, and its validation."""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import date
from pathlib import Path

import boto3
import pandas as pd
import pytest
from moto import mock_aws

from athanor.demo.storage import generate_ebs, generate_inventory
from athanor.ingest.inventory import (
    INVENTORY_COLUMNS,
    InventoryError,
    find_manifests,
    list_object_versions,
    read_ebs,
    read_inventory,
    write_csv_gz,
)

SCHEMA = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, StorageClass, IntelligentTieringAccessTier, ETag"
AS_OF = date(2026, 12, 1)


def _delivery(tmp_path: Path, rows: list[list[str]], schema: str = SCHEMA, md5: str | None = None) -> Path:
    data = tmp_path / "b" / "data" / "part-1.csv.gz"
    data.parent.mkdir(parents=True)
    write_csv_gz(data, rows)
    manifest = tmp_path / "b" / "2026-12-01T01-00Z" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    digest = md5 or hashlib.md5(data.read_bytes()).hexdigest()
    manifest.write_text(
        json.dumps(
            {
                "sourceBucket": "b",
                "destinationBucket": "arn:aws:s3:::inv",
                "version": "2016-11-30",
                "creationTimestamp": "1764550800000",
                "fileFormat": "CSV",
                "fileSchema": schema,
                "files": [
                    {"key": "b/data/part-1.csv.gz", "size": data.stat().st_size, "MD5checksum": digest}
                ],
            }
        )
    )
    return manifest


GOOD = [
    [
        "b",
        "run+one/checkpoint-5/model%2Bv2.bin",
        "v1",
        "true",
        "false",
        "1024",
        "2026-11-30T10:00:00.000Z",
        "STANDARD",
        "",
        "e1",
    ],
    [
        "b",
        "run+one/checkpoint-5/model%2Bv2.bin",
        "v0",
        "false",
        "false",
        "512",
        "2026-11-01T10:00:00.000Z",
        "STANDARD_IA",
        "",
        "e0",
    ],
    ["b", "gone.txt", "v9", "true", "true", "", "2026-11-29T00:00:00.000Z", "", "", ""],
    [
        "b",
        "it.bin",
        "null",
        "true",
        "false",
        "0",
        "2026-10-01T00:00:00.000Z",
        "INTELLIGENT_TIERING",
        "ARCHIVE_INSTANT_ACCESS",
        "e2",
    ],
]


def test_csv_delivery_reads_into_canonical_frame(tmp_path: Path) -> None:
    df = read_inventory(_delivery(tmp_path, GOOD))
    assert list(df.columns) == INVENTORY_COLUMNS
    # Form-encoded keys: '+' is a space, %2B a literal plus.
    assert df.loc[0, "key"] == "run one/checkpoint-5/model+v2.bin"
    assert df["size_bytes"].tolist() == [1024, 512, 0, 0]
    assert df["is_delete_marker"].tolist() == [False, False, True, False]
    assert df["is_latest"].tolist() == [True, False, True, True]
    assert str(df["last_modified"].dt.tz) == "UTC"
    assert df.loc[0, "last_modified"] == pd.Timestamp("2026-11-30T10:00:00Z")
    assert df.loc[3, "it_access_tier"] == "ARCHIVE_INSTANT_ACCESS"


@pytest.mark.parametrize(
    ("row_index", "column", "value", "rule"),
    [
        (1, 5, "-3", "size must be >= 0"),
        (1, 5, "12x", "size must be an integer"),
        (0, 7, "STANDARDISH", "unknown storage class"),
        (3, 3, "yes", "must be true or false"),
        (0, 6, "yesterday", "ISO 8601"),
    ],
)
def test_bad_row_is_named_by_file_row_column_and_rule(tmp_path: Path, row_index, column, value, rule) -> None:
    rows = [list(r) for r in GOOD]
    rows[row_index][column] = value
    with pytest.raises(InventoryError, match=rule) as err:
        read_inventory(_delivery(tmp_path, rows))
    assert err.value.row == row_index + 1  # rows count from 1, there is no header
    assert err.value.file.endswith("part-1.csv.gz")
    assert err.value.column is not None and "row" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_md5_mismatch_missing_file_and_missing_field_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="MD5"):
        read_inventory(_delivery(tmp_path / "a", GOOD, md5="0" * 32))
    manifest = _delivery(tmp_path / "b", GOOD)
    (manifest.parent.parent / "data" / "part-1.csv.gz").unlink()
    with pytest.raises(InventoryError, match="missing"):
        read_inventory(manifest)
    with pytest.raises(InventoryError, match="required field") as err:
        read_inventory(
            _delivery(tmp_path / "c", [r[:5] + r[6:] for r in GOOD], schema=SCHEMA.replace(" Size,", ""))
        )
    assert err.value.column == "Size"


def test_wrong_column_count_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="CSV"):
        read_inventory(_delivery(tmp_path, [r[:9] for r in GOOD]))


def test_demo_csv_and_parquet_deliveries_agree(tmp_path: Path) -> None:
    csv_manifest = generate_inventory(tmp_path / "csv", AS_OF, seed=3)
    pq_manifest = generate_inventory(tmp_path / "pq", AS_OF, seed=3, file_format="Parquet")
    assert csv_manifest.parts[-3:] == ("athanor-demo-checkpoints", "2026-12-01T01-00Z", "manifest.json")
    a = read_inventory(csv_manifest).sort_values(["key", "version_id"]).reset_index(drop=True)
    b = read_inventory(pq_manifest).sort_values(["key", "version_id"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert a["key"].str.contains(" ").any()  # "train log.txt" survived URL encoding
    assert a["key"].str.contains("=").any()  # Lightning's epoch=..-step=.. too
    assert find_manifests(tmp_path / "csv") == [csv_manifest]


def test_demo_is_deterministic_by_seed(tmp_path: Path) -> None:
    m1 = generate_inventory(tmp_path / "1", AS_OF, seed=11)
    m2 = generate_inventory(tmp_path / "2", AS_OF, seed=11)
    files = json.loads(m1.read_text())["files"]
    assert files == json.loads(m2.read_text())["files"]
    with gzip.open(m1.parent.parent / "data" / Path(files[0]["key"]).name, "rt") as fh:
        first = fh.readline()
    assert first.startswith('"athanor-demo-checkpoints","')
    df = read_inventory(m1)
    runs = df["key"].str.extract(r"^[a-z]+/([a-z]+-[a-z0-9]+-\d{4})/")[0].dropna().unique()
    assert len(runs) >= 24  # dozens of runs named <team>-<model>-<nnnn>
    assert df["is_delete_marker"].sum() > 0 and (~df["is_latest"] & ~df["is_delete_marker"]).sum() > 0
    assert df["key"].str.contains("/best/").any()
    assert df["size_bytes"].max() > 5 * 1024**3


def test_ebs_listing(tmp_path: Path) -> None:
    vpath, spath = generate_ebs(tmp_path, AS_OF, seed=7)
    ebs = read_ebs(vpath, spath)
    assert set(ebs.volumes["state"]) == {"in-use", "available"}
    assert (ebs.volumes["instance_id"] != "").sum() == (ebs.volumes["state"] == "in-use").sum()
    assert ebs.volumes["size_gib"].dtype.kind == "i"
    assert str(ebs.snapshots["start_time"].dt.tz) == "UTC"
    raw = {
        "Volumes": [
            {
                "VolumeId": "vol-1",
                "Size": 100,
                "VolumeType": "gp3",
                "State": "available",
                "CreateTime": "2026-01-01T00:00:00+00:00",
                "Attachments": [],
                "Tags": [{"Key": "Name", "Value": "x"}],
            }
        ]
    }
    one = read_ebs(raw).volumes.iloc[0]
    assert (one["volume_id"], one["size_gib"], one["name"], one["instance_id"]) == ("vol-1", 100, "x", "")
    with pytest.raises(InventoryError, match="Volumes"):
        read_ebs({"Snapshots": []})


@mock_aws
def test_live_listing_paginates_versions_and_markers() -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="live")
    s3.put_bucket_versioning(Bucket="live", VersioningConfiguration={"Status": "Enabled"})
    for i in range(7):
        s3.put_object(Bucket="live", Key=f"p/k{i:04d}", Body=b"ab")
    s3.put_object(Bucket="live", Key="p/k0000", Body=b"abcd")
    s3.delete_object(Bucket="live", Key="p/k0001")
    s3.put_object(Bucket="live", Key="other", Body=b"x")
    df = list_object_versions(s3, "live", prefix="p/", page_size=2)  # 9 entries: 5 pages
    assert len(df) == 7 + 1 + 1
    k0 = df[df["key"] == "p/k0000"].sort_values("is_latest")
    assert k0["size_bytes"].tolist() == [2, 4] and k0["is_latest"].tolist() == [False, True]
    marker = df[df["is_delete_marker"]]
    assert marker["key"].tolist() == ["p/k0001"] and marker["is_latest"].tolist() == [True]
    assert list(df.columns) == INVENTORY_COLUMNS
