"""The publish stage puts the report into a bucket on a real S3-compatible server (Ceph RadosGW)."""

from __future__ import annotations

from pathlib import Path

import pytest

from athanor.flow import RunContext, publish
from athanor.settings import Settings
from athanor.warehouse import connect
from tests.unit.test_report import AS_OF, fill_small_warehouse

pytestmark = pytest.mark.integration


def test_publish_puts_the_report_in_the_bucket(rgw_endpoint, tmp_path: Path) -> None:
    s3 = rgw_endpoint.client()
    s3.create_bucket(Bucket="athanor-reports")
    settings = Settings.from_env(
        {"ATHANOR_HOME": str(tmp_path), "ATHANOR_REPORT_BUCKET": "s3://athanor-reports/nightly"}
    )
    con = connect(settings.warehouse)
    fill_small_warehouse(con)
    con.close()
    run = RunContext("run-1", AS_OF, {}, settings, s3_client=lambda: s3)

    published = publish(run)

    local = Path(published["report"])
    day = published["as_of"]
    for key in (f"nightly/{day}/report.html", "nightly/latest/report.html"):
        body = s3.get_object(Bucket="athanor-reports", Key=key)["Body"].read()
        assert body == local.read_bytes(), key
    listed = {
        o["Key"] for o in s3.list_objects_v2(Bucket="athanor-reports", Prefix="nightly/latest/")["Contents"]
    }
    assert "nightly/latest/recommendations.json" in listed
    assert published["bucket_objects"] == len(
        s3.list_objects_v2(Bucket="athanor-reports", Prefix="nightly/")["Contents"]
    )
