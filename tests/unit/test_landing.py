"""Landing: one interface for a local folder and an S3 bucket (moto here; real RadosGW in integration)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from athanor.ingest.billing import ingest_billing
from athanor.land.landing import fetch, list_deliveries, split_s3
from athanor.land.manifests import CurManifest, parse_cur_manifest, read_cur_manifest
from athanor.warehouse import connect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "billing"


def build_landing(root: Path) -> Path:
    """A landing folder: a GCP export in one folder, a two-part legacy CUR (manifest) in another."""
    shutil.copytree(FIXTURES / "gcp", root / "gcp")
    shutil.copytree(FIXTURES / "cur-legacy", root / "cur")
    return root


def upload(client, folder: Path, bucket: str, prefix: str) -> None:
    client.create_bucket(Bucket=bucket)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), bucket, prefix + path.relative_to(folder).as_posix())


@pytest.fixture
def s3():
    with mock_aws():
        yield boto3.client("s3", region_name="us-east-1")


def test_split_s3() -> None:
    assert split_s3("s3://b/landing/x/") == ("b", "landing/x/")
    assert split_s3("s3://b") == ("b", "")


def test_local_folder_deliveries(tmp_path: Path) -> None:
    root = build_landing(tmp_path / "landing")
    deliveries = list_deliveries(str(root))
    shape = [(d.name, d.manifest, [o.key for o in d.objects], d.ready) for d in deliveries]
    assert shape == [
        # The period-level copy of the manifest names the delivery and claims the assembly's parts.
        ("cur/20231101-20231201", "cur/20231101-20231201/athanor-cur-Manifest.json",
         ["cur/20231101-20231201/asm-0001/athanor-cur-1.csv.gz", "cur/20231101-20231201/asm-0001/athanor-cur-2.csv.gz"],
         True),
        ("gcp", None, ["gcp/billing-export-202311.jsonl"], True),
    ]  # fmt: skip
    assert fetch(deliveries[1], tmp_path / "cache") == [root / "gcp" / "billing-export-202311.jsonl"]


def test_missing_part_makes_the_delivery_wait(tmp_path: Path) -> None:
    root = build_landing(tmp_path / "landing")
    (root / "cur/20231101-20231201/asm-0001/athanor-cur-2.csv.gz").unlink()
    cur = [d for d in list_deliveries(str(root)) if d.manifest][0]
    assert (cur.ready, cur.missing) == (False, ("athanor-cur-2.csv.gz",))
    assert [o.key.rsplit("/", 1)[-1] for o in cur.objects] == ["athanor-cur-1.csv.gz"]


def test_newer_assembly_supersedes_the_older(tmp_path: Path) -> None:
    root = build_landing(tmp_path / "landing")
    period = root / "cur/20231101-20231201"
    shutil.copytree(period / "asm-0001", period / "asm-0002")
    manifest = json.loads((period / "athanor-cur-Manifest.json").read_text())
    manifest["assemblyId"] = "asm-0002"
    manifest["reportKeys"] = [k.replace("asm-0001", "asm-0002") for k in manifest["reportKeys"]]
    for path in (period / "athanor-cur-Manifest.json", period / "asm-0002" / "athanor-cur-Manifest.json"):
        path.write_text(json.dumps(manifest))
    import os

    old = period / "asm-0001" / "athanor-cur-Manifest.json"
    os.utime(old, (1, 1))  # written long before the restatement
    cur = [d for d in list_deliveries(str(root)) if d.name.startswith("cur")]
    assert len(cur) == 1
    assert {o.key.split("/")[2] for o in cur[0].objects} == {"asm-0002"}


@pytest.mark.slow
def test_bucket_lists_like_the_folder_and_loads_the_same(s3, tmp_path: Path) -> None:
    root = build_landing(tmp_path / "landing")
    upload(s3, root, "exports", "billing/")
    local = list_deliveries(str(root))
    remote = list_deliveries("s3://exports/billing", s3_client=s3)
    assert [(d.name, [o.key for o in d.objects], d.missing) for d in remote] == [
        (d.name, [o.key for o in d.objects], d.missing) for d in local
    ]
    totals = []
    for deliveries, name in ((local, "local"), (remote, "remote")):
        con = connect(tmp_path / f"{name}.duckdb", memory_limit="512MB")
        for d in deliveries:
            ingest_billing(con, fetch(d, tmp_path / "cache"), source_uri=d.uri)
        totals.append(
            con.execute(
                "select source_format, sum(billed_cost), count(*) from billing_facts group by 1 order by 1"
            ).fetchall()
        )
        con.close()
    assert totals[0] == totals[1]
    assert [t[0] for t in totals[0]] == ["cur_legacy", "gcp"]


def test_fetch_downloads_again_only_when_the_object_changed(s3, tmp_path: Path, monkeypatch) -> None:
    s3.create_bucket(Bucket="bills")
    s3.put_object(Bucket="bills", Key="in/gcp/export.jsonl", Body=b'{"v": 1}\n')
    downloads = []
    real = s3.download_file

    def counting(bucket, key, filename, *args, **kwargs):
        downloads.append(key)
        return real(bucket, key, filename, *args, **kwargs)

    monkeypatch.setattr(s3, "download_file", counting)
    cache = tmp_path / "cache"
    [delivery] = list_deliveries("s3://bills/in", s3_client=s3)
    first = fetch(delivery, cache)
    fetch(list_deliveries("s3://bills/in", s3_client=s3)[0], cache)
    assert downloads == ["in/gcp/export.jsonl"]
    assert first == [cache / "bills" / "in" / "gcp" / "export.jsonl"]

    s3.put_object(Bucket="bills", Key="in/gcp/export.jsonl", Body=b'{"v": 2}\n')
    [changed] = list_deliveries("s3://bills/in", s3_client=s3)
    assert fetch(changed, cache)[0].read_bytes() == b'{"v": 2}\n'
    assert len(downloads) == 2
    # The cache's own bookkeeping is hidden from folder walks (dot files).
    assert sorted(
        p.name for p in (cache / "bills" / "in" / "gcp").iterdir() if not p.name.startswith(".")
    ) == ["export.jsonl"]


def test_bucket_without_client_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs an S3 client"):
        list_deliveries("s3://bills/in")


def test_one_reader_for_legacy_cur_manifests(tmp_path: Path) -> None:
    folder = FIXTURES / "cur-legacy" / "20231101-20231201"
    manifest = read_cur_manifest(folder / "athanor-cur-Manifest.json")
    assert manifest == CurManifest(
        report_keys=(
            "cur/athanor-cur/20231101-20231201/asm-0001/athanor-cur-1.csv.gz",
            "cur/athanor-cur/20231101-20231201/asm-0001/athanor-cur-2.csv.gz",
        ),
        assembly_id="asm-0001",
        billing_period='{"end": "20231201T000000.000Z", "start": "20231101T000000.000Z"}',
    )
    assert manifest.part_names == ("athanor-cur-1.csv.gz", "athanor-cur-2.csv.gz")
    # A data part, another JSON document and a missing file are no CUR manifests.
    assert read_cur_manifest(folder / "asm-0001" / "athanor-cur-1.csv.gz") is None
    assert parse_cur_manifest(b'{"sourceBucket": "b", "files": []}') is None  # S3 Inventory
    assert parse_cur_manifest(b'{"reportKeys": "not a list"}') is None
    assert parse_cur_manifest(b"[1, 2]") is None and parse_cur_manifest(b"\xff{") is None
    assert read_cur_manifest(tmp_path / "gone-Manifest.json") is None
