"""Recommended lifecycle rules executed by a real S3 server (Ceph RadosGW, scripts/ceph-rgw.sh).

RGW runs with rgw_lc_debug_interval = 10, so one lifecycle "day" lasts 10 seconds; the test also
kicks `radosgw-admin lc process` so it need not wait for RGW's own schedule.

Intelligent-Tiering is not covered here: RGW stores a lifecycle rule that transitions to
INTELLIGENT_TIERING but refuses the class on objects (PutObject answers InvalidArgument), so such
a transition can never run on it. The IT configuration is covered by a round trip on moto in
tests/unit/test_lifecycle_rules.py. This test restricts the candidates to expiry-only policies.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest

from athanor.recommend.lifecycle import (
    apply_lifecycle,
    list_object_versions,
    recommend_lifecycle,
    restore_lifecycle,
)
from tests.support.rgw import RgwEndpoint  # the rgw_endpoint fixture comes from tests/conftest.py

RUNS = {
    # run prefix -> checkpoint keys, oldest first
    "teama/teama-llama8b-0001/": [
        f"teama/teama-llama8b-0001/checkpoint-{s}/model.safetensors" for s in (100, 200, 300, 400, 500)
    ],
    "teama/teama-vitl16-0002/": [f"teama/teama-vitl16-0002/step_{s}.pt" for s in (1000, 2000, 3000, 4000)],
    "teamb/teamb-dlrm-0003/": [
        f"teamb/teamb-dlrm-0003/global_step{s}/mp_rank_00_model_states.pt" for s in (50, 100, 150)
    ],
}
KEEP_LAST = 2


def _body(key: str, version: int = 0) -> bytes:
    return (f"{key}#{version}|".encode() * 400)[:6000]


def _versions(s3, bucket: str, key: str) -> list[dict]:
    resp = s3.list_object_versions(Bucket=bucket, Prefix=key)
    return [v for v in resp.get("Versions", []) if v["Key"] == key]


@pytest.mark.integration
def test_recommended_rules_run_on_rgw(rgw_endpoint: RgwEndpoint, tmp_path) -> None:
    s3 = rgw_endpoint.client()
    bucket = f"athanor-lc-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for keys in RUNS.values():
        for k in keys:
            s3.put_object(Bucket=bucket, Key=k, Body=_body(k))
    best = "teama/teama-llama8b-0001/best/model.safetensors"
    for v in range(3):  # best/ overwritten twice: two noncurrent versions
        s3.put_object(Bucket=bucket, Key=best, Body=_body(best, v))

    inventory = list_object_versions(s3, bucket)
    assert len(inventory) == sum(len(k) for k in RUNS.values()) + 3
    rec = recommend_lifecycle(
        inventory,
        as_of=datetime.now(UTC),
        keep_last=KEEP_LAST,
        noncurrent_days_options=(1,),
        min_noncurrent_days=1,
        transitions=(None,),
        glacier_ir_finished_runs=False,
        read_fraction=0.0,
    )
    config = rec.configs[bucket]
    stale = [k for keys in RUNS.values() for k in keys[:-KEEP_LAST]]
    protected = [k for keys in RUNS.values() for k in keys[-KEEP_LAST:]] + [best]
    # 5 + 4 + 3 checkpoints, 2 kept per run: 6 stale checkpoints, one expiry rule each.
    assert (
        len([r for r in config["Rules"] if "Expiration" in r and "Days" in r["Expiration"]])
        == len(stale)
        == 6
    )

    result = apply_lifecycle(s3, bucket, config, tmp_path, dry_run=False)
    assert result.applied and (tmp_path / f"lifecycle-previous-{bucket}.json").read_text().strip() == '"none"'
    assert {r["ID"] for r in s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]} == {
        r["ID"] for r in config["Rules"]
    }

    # Day 1 (10 s): stale current versions get delete markers, best/'s noncurrent versions go;
    # day 2: the stale data, now noncurrent, goes.
    deadline = time.monotonic() + 100
    while True:
        time.sleep(6)
        rgw_endpoint.admin("lc", "process")
        left = [k for k in stale if _versions(s3, bucket, k)] + (
            [best] if len(_versions(s3, bucket, best)) > 1 else []
        )
        if not left or time.monotonic() > deadline:
            break
    assert left == [], f"still stored after the rules ran: {left}"

    for k in protected:
        want = _body(k, 2) if k == best else _body(k)
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == want, k
        assert len(_versions(s3, bucket, k)) == 1

    restore_lifecycle(s3, bucket, result.previous_path)
    with pytest.raises(s3.exceptions.ClientError, match="NoSuchLifecycleConfiguration"):
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
