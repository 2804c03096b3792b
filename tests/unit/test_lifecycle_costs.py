"""The cost model against hand-computed bills (30-day months, actions 1 day after due)."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest

from athanor.ingest.checkpoints import index_checkpoints
from athanor.ingest.inventory import read_ebs
from athanor.recommend.lifecycle import recommend_lifecycle
from athanor.recommend.lifecycle.policy import DO_NOTHING, PolicySpec, plan_ebs, s3_it_cost, simulate
from athanor.recommend.lifecycle.pricing import (
    DEFAULT_PRICES,
    GIB,
    INTELLIGENT_TIERING,
    STANDARD_IA,
    it_gb_month,
)

AS_OF = date(2026, 12, 1)
NOW = pd.Timestamp("2026-12-01T00:00:00Z")


def inv(rows: list[dict]) -> pd.DataFrame:
    base = {
        "bucket": "b",
        "is_latest": True,
        "is_delete_marker": False,
        "storage_class": "STANDARD",
        "it_access_tier": "",
        "etag": "",
    }
    out = []
    for i, r in enumerate(rows):
        row = {**base, "version_id": f"v{i}", **r}
        row["last_modified"] = NOW - pd.Timedelta(days=row.pop("days_old"))
        out.append(row)
    return pd.DataFrame(out)


def objects(rows: list[dict], keep_last: int = 1) -> pd.DataFrame:
    return index_checkpoints(inv(rows), AS_OF, keep_last=keep_last).objects


def test_intelligent_tiering_tier_mix() -> None:
    # r = 0.25 read per month. Month 0 all frequent: 0.023.
    # Months 1-2: 75 % quiet >= 30 d -> infrequent: 0.25*0.023 + 0.75*0.0125 = 0.015125.
    # Months 3+: quiet >= 90 d is 0.75^3 = 0.421875 -> archive instant;
    #   0.25*0.023 + (0.75-0.421875)*0.0125 + 0.421875*0.004 = 0.0115390625.
    # Year per GiB: 0.023 + 2*0.015125 + 9*0.0115390625 = 0.1571015625
    assert it_gb_month(0, 0.25) == pytest.approx(0.023)
    assert it_gb_month(2, 0.25) == pytest.approx(0.015125)
    assert it_gb_month(3, 0.25) == pytest.approx(0.0115390625)
    t = s3_it_cost(1.0, 1, read_fraction=0.25, prices=DEFAULT_PRICES)
    assert t.storage.sum() == pytest.approx(0.1571015625)
    assert t.monitoring.sum() == pytest.approx(12 * 0.0025 / 1000)
    assert t.requests.sum() == pytest.approx(0.005 / 1000)  # one PUT


def test_standard_ia_early_delete_is_charged_the_rest_of_30_days() -> None:
    rows = [
        {"key": "t/run/step_1.pt", "days_old": 10, "size_bytes": 10 * GIB, "storage_class": "STANDARD_IA"},
        {"key": "t/run/step_2.pt", "days_old": 5, "size_bytes": 1 * GIB},
    ]
    objs = objects(rows, keep_last=1)
    only_old = objs[objs["key"] == "t/run/step_1.pt"]
    cost = simulate(only_old, PolicySpec(keep_last_k=True), read_fraction=0.1)
    # Expired on day 1 (delete marker), data gone on day 2: 2 days of IA = 10*0.0125*2/30.
    assert cost.storage.sum() == pytest.approx(10 * 0.0125 * 2 / 30)
    # It entered IA 10 days ago, leaves on day 2: 12 days served, 18 more billed.
    assert cost.early_delete.sum() == pytest.approx(10 * 0.0125 * 18 / 30)
    assert cost.retrieval.sum() == pytest.approx(0.1 * 10 * 0.01 * 2 / 30)
    # Doing nothing: 12 months of IA plus retrieval of 10 % a month.
    base = simulate(only_old, DO_NOTHING, read_fraction=0.1)
    assert base.total == pytest.approx(12 * 10 * 0.0125 + 12 * 0.1 * 10 * 0.01)


def test_small_objects_minimum_size_and_it_monitoring() -> None:
    rows = [
        {"key": "p/big.bin", "days_old": 400, "size_bytes": GIB},
        {"key": "p/tiny.json", "days_old": 400, "size_bytes": 64 * 1024},
        {"key": "p/ia-tiny.json", "days_old": 400, "size_bytes": 1024, "storage_class": "STANDARD_IA"},
    ]
    objs = objects(rows)
    cost = simulate(objs, PolicySpec(transition=INTELLIGENT_TIERING), read_fraction=1.0)
    # r = 1: IT stays in the frequent tier (0.023), so storage is the same as Standard;
    # the 64 KiB object is not transitioned; the 1 KiB IA object is billed as 128 KiB.
    tiny_gib, ia_gib = 64 * 1024 / GIB, 128 * 1024 / GIB
    assert cost.storage.sum() == pytest.approx(12 * (0.023 + tiny_gib * 0.023 + ia_gib * 0.0125))
    # One monitored object, in IT from day 1: 29/30 of month 1 and 11 full months.
    assert cost.monitoring.sum() == pytest.approx((29 / 30 + 11) * 0.0025 / 1000)
    assert cost.requests.sum() == pytest.approx(0.01 / 1000)  # one transition to IT
    assert cost.retrieval.sum() == pytest.approx(12 * 1024 / GIB * 0.01)  # IA reads the real bytes


def test_standard_ia_after_30_days_and_glacier_ir_for_finished_runs() -> None:
    objs = objects([{"key": "p/new.bin", "days_old": 5, "size_bytes": 10 * GIB}])
    ia = simulate(objs, PolicySpec(transition=STANDARD_IA), read_fraction=0.0)
    # Moves on day 30 - 5 + 1 = 26: 26 days Standard + 4 days IA, then 11 months IA.
    assert ia.storage[0] == pytest.approx(10 * (0.023 * 26 + 0.0125 * 4) / 30)
    assert ia.storage[1:].sum() == pytest.approx(11 * 10 * 0.0125)
    assert ia.requests.sum() == pytest.approx(0.01 / 1000)

    rows = [{"key": "t/old-run/step_1.pt", "days_old": 200, "size_bytes": 100 * GIB}]
    gir = simulate(objects(rows), PolicySpec(glacier_ir_finished_runs=True), read_fraction=0.1)
    # Finished 200 days ago: to Glacier IR on day 1. 1 day Standard, then 0.004.
    assert gir.storage.sum() == pytest.approx(100 * 0.023 / 30 + 100 * 0.004 * (29 / 30 + 11))
    assert gir.retrieval.sum() == pytest.approx(0.1 * 100 * 0.03 * (29 / 30 + 11))
    assert gir.requests.sum() == pytest.approx(0.02 / 1000)
    assert gir.early_delete.sum() == 0


def test_noncurrent_expiry_and_newer_noncurrent_versions() -> None:
    rows = [
        {"key": "p/a", "days_old": 50, "size_bytes": 10 * GIB, "is_latest": False},
        {"key": "p/a", "days_old": 20, "size_bytes": 10 * GIB, "is_latest": False},
        {"key": "p/a", "days_old": 1, "size_bytes": 0},
    ]
    objs = objects(rows)
    nc = objs[~objs["is_latest"]]
    cost = simulate(nc, PolicySpec(noncurrent_expiry_days=30), read_fraction=0)
    # v0 noncurrent for 20 days -> deleted day 11; v1 noncurrent for 1 day -> deleted day 30.
    assert cost.storage.sum() == pytest.approx(10 * 0.023 * (11 + 30) / 30)
    keep1 = simulate(nc, PolicySpec(noncurrent_expiry_days=30, newer_noncurrent_versions=1), read_fraction=0)
    # The newest noncurrent version is kept all year; only v0 goes on day 11.
    assert keep1.storage.sum() == pytest.approx(10 * 0.023 * 11 / 30 + 12 * 10 * 0.023)


def _seed_inventory() -> pd.DataFrame:
    rows = [{"key": f"ckpt/shard-{i:04d}.bin", "days_old": 20, "size_bytes": 100 * GIB} for i in range(1000)]
    # 750 older versions of the shards, replaced 60 days ago (written 90 days ago).
    rows += [
        {"key": f"ckpt/shard-{i:04d}.bin", "days_old": 90, "size_bytes": 100 * GIB, "is_latest": False}
        for i in range(750)
    ]
    df = inv(rows)
    # Their successors were written 60 days ago: make the current versions that old for those keys.
    df.loc[df["is_latest"] & (df.index < 750), "last_modified"] = NOW - pd.Timedelta(days=60)
    return df


def test_seed_case_ebs_to_intelligent_tiering_120k_to_38k() -> None:
    """BRIEF seed case: $120k a year of checkpoint storage brought to ~$38k.

    Before: 75 EBS gp3 checkpoint volumes of 1,000 GiB = 75,000 GiB * 0.08 = $6,000/month;
    S3 Standard: 1,000 current shards of 100 GiB (100,000 GiB) + 750 noncurrent (75,000 GiB)
    = 175,000 GiB * 0.023 = $4,025/month. Total $10,025/month = $120,300/year.
    After (30-day noncurrent expiry + Intelligent-Tiering, EBS moved to S3 IT with 2:1 compression),
    checkpoints are read every month (r = 1) so IT stays in its frequent tier:
      S3 month 1: noncurrent (noncurrent 60 d) deleted day 1: 75,000*0.023/30 = 57.50;
                  current: 1 day Standard + 29 days IT, both 0.023: 100,000*0.023 = 2,300.
      S3 months 2-12: 2,300 each -> storage 2,357.50 + 11*2,300 = 27,657.50
      IT monitoring: 1,000 objects * 0.0025/1000 * (29/30 + 11) = 0.0299167; transitions 1,000*0.01/1000 = 0.01
      EBS data in S3: 37,500 GiB * 0.023 * 12 = 10,350; 375 objects of 100 GiB: monitoring
                  375*0.0025/1000*12 = 0.01125, PUTs 375*0.005/1000 = 0.001875
      Year: 27,657.50 + 0.0399167 + 10,350 + 0.013125 = 38,007.553
    """
    volumes = {
        "Volumes": [
            {
                "VolumeId": f"vol-{i:03d}",
                "Size": 1000,
                "VolumeType": "gp3",
                "State": "in-use",
                "CreateTime": "2026-01-01T00:00:00Z",
                "Attachments": [{"InstanceId": f"i-{i}"}],
                "Tags": [{"Key": "Purpose", "Value": "checkpoints"}],
            }
            for i in range(75)
        ]
    }
    rec = recommend_lifecycle(
        _seed_inventory(),
        read_ebs(volumes, {"Snapshots": []}),
        as_of=AS_OF,
        keep_last=None,
        read_fraction=1.0,
        transitions=(INTELLIGENT_TIERING,),
        glacier_ir_finished_runs=False,
        min_noncurrent_days=30,
        ebs_options={"compression_ratio": 0.5, "s3_object_gib": 100},
    )
    assert rec.before.total == pytest.approx(120_300.0)
    assert rec.after.total == pytest.approx(
        27_657.50 + 0.0299167 + 0.01 + 10_350 + 0.01125 + 0.001875, abs=1e-3
    )
    assert rec.savings_year_usd == pytest.approx(120_300.0 - 38_007.553, abs=1e-2)
    (plan,) = rec.prefixes
    assert plan.chosen == "noncurrent-30d+intelligent-tiering"
    # 7-day expiry would be cheaper but breaks the 30-day retention: priced, not chosen.
    seven = plan.candidate("noncurrent-7d+intelligent-tiering")
    assert not seven.allowed and seven.cost.total <= plan.after.total
    assert [a.kind for a in rec.ebs.actions] == ["move-to-s3"] * 75
    d = rec.to_dict()
    assert d["summary"]["cost_12m_before_usd"] == 120_300.0
    assert d["summary"]["break_even_month"] == 1
    assert np.allclose(d["monthly_before_usd"], [10_025.0] * 12)


def test_ebs_cleanups() -> None:
    volumes = {
        "Volumes": [
            {
                "VolumeId": "vol-old",
                "Size": 100,
                "VolumeType": "gp3",
                "State": "available",
                "CreateTime": "2026-10-01T00:00:00Z",
            },
            {
                "VolumeId": "vol-new",
                "Size": 100,
                "VolumeType": "gp3",
                "State": "available",
                "CreateTime": "2026-11-25T00:00:00Z",
            },
            {
                "VolumeId": "vol-kept",
                "Size": 100,
                "VolumeType": "gp2",
                "State": "available",
                "CreateTime": "2025-01-01T00:00:00Z",
                "Tags": [{"Key": "athanor-keep", "Value": "true"}],
            },
            {
                "VolumeId": "vol-live",
                "Size": 500,
                "VolumeType": "gp3",
                "State": "in-use",
                "CreateTime": "2025-01-01T00:00:00Z",
                "Attachments": [{"InstanceId": "i-1"}],
                "Tags": [{"Key": "Name", "Value": "db"}],
            },
        ]
    }
    snaps = {
        "Snapshots": [
            {
                "SnapshotId": "snap-a",
                "VolumeId": "vol-live",
                "VolumeSize": 500,
                "StartTime": "2026-01-01T00:00:00Z",
                "State": "completed",
            },
            {
                "SnapshotId": "snap-b",
                "VolumeId": "vol-live",
                "VolumeSize": 500,
                "StartTime": "2026-02-01T00:00:00Z",
                "State": "completed",
            },
            {
                "SnapshotId": "snap-c",
                "VolumeId": "vol-gone",
                "VolumeSize": 50,
                "StartTime": "2026-11-20T00:00:00Z",
                "State": "completed",
            },
        ]
    }
    plan = plan_ebs(read_ebs(volumes, snaps), AS_OF, unattached_after_days=30, snapshot_after_days=90)
    acts = {(a.kind, a.resource_id) for a in plan.actions}
    # vol-old is 61 days unattached; vol-new only 6; vol-kept is tagged; snap-b is vol-live's newest.
    assert acts == {("snapshot-then-delete", "vol-old"), ("delete-snapshot", "snap-a")}
    # Before: volumes 100*0.08*2 + 100*0.10 + 500*0.08 = 66; snapshots (500+500+50)*0.05 = 52.5
    assert plan.before.monthly[0] == pytest.approx(118.5)
    # After: vol-old becomes a 100 GiB snapshot (5.00) instead of 8.00; snap-a (25.00) goes.
    assert plan.after.monthly[0] == pytest.approx(118.5 - 8 + 5 - 25)
