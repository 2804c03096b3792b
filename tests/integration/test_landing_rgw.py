"""Landing against a real S3 server (Ceph RadosGW): a delivery in a bucket loads like the same folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from athanor.ingest.billing import ingest_billing
from athanor.land.landing import fetch, list_deliveries
from athanor.warehouse import connect

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "billing"


def test_bucket_delivery_loads_like_the_local_folder(rgw_endpoint, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    shutil.copytree(FIXTURES / "gcp", landing / "gcp")
    shutil.copytree(FIXTURES / "cur-legacy", landing / "cur")
    s3 = rgw_endpoint.client()
    bucket = "athanor-landing-test"
    s3.create_bucket(Bucket=bucket)
    for path in sorted(landing.rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), bucket, "exports/" + path.relative_to(landing).as_posix())

    totals = []
    for source, client in ((str(landing), None), (f"s3://{bucket}/exports", s3)):
        con = connect(tmp_path / f"{len(totals)}.duckdb", memory_limit="512MB")
        deliveries = list_deliveries(source, s3_client=client)
        assert all(d.ready for d in deliveries)
        for delivery in deliveries:
            ingest_billing(con, fetch(delivery, tmp_path / "cache"), source_uri=delivery.uri)
        totals.append(
            con.execute(
                "select source_format, billing_currency, count(*), sum(billed_cost), sum(effective_cost)"
                " from billing_facts group by all order by all"
            ).fetchall()
        )
        con.close()
    assert totals[0] == totals[1]
    assert [t[0] for t in totals[1]] == ["cur_legacy", "gcp"]

    # A second listing of the unchanged bucket downloads nothing and loads nothing new.
    cached = sorted((tmp_path / "cache").rglob("*.gz"))
    stamps = [p.stat().st_mtime_ns for p in cached]
    con = connect(tmp_path / "1.duckdb", memory_limit="512MB")
    results = [
        ingest_billing(con, fetch(d, tmp_path / "cache"))
        for d in list_deliveries(f"s3://{bucket}/exports", s3)
    ]
    con.close()
    assert {r.status for r in results} == {"unchanged"}
    assert [p.stat().st_mtime_ns for p in cached] == stamps
