"""MIG instances as fractions of their GPU, and energy from measured power (issue 32, items 3, 5).

Hand-computed: an A100 partitioned 3g + 2g + 1g + 1g (7 of 7 slices) sampled every 5 minutes
for one hour: each instance counts its hour at slices / 7 (3/7, 2/7, 1/7, 1/7), the four make
1.0 GPU-hour. Energy: a sample's power counts for the time the sample counts (until the next,
capped), so 70 W for an hour is 0.07 kWh.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from athanor.ingest.deliveries import ingest_paths
from athanor.recommend import gpu_usage
from athanor.recommend.gpu_usage import IdleRule
from athanor.settings import Settings
from athanor.warehouse import connect

T0 = datetime(2026, 11, 3, 14, 0)
UUID = "GPU-bbbbbbbb-0000-4000-8000-000000000000"
# (GPU_I_ID, GPU_I_PROFILE, engine active 0-1)
INSTANCES = (("1", "3g.40gb", 0.9), ("5", "2g.20gb", 0.5), ("9", "1g.10gb", 0.0), ("10", "1g.10gb", 0.3))


def series(name: str, values: list[float], **labels: str) -> dict:
    metric = {
        "__name__": name,
        "Hostname": "mig-node-1",
        "gpu": "0",
        "UUID": UUID,
        "modelName": "NVIDIA A100-SXM4-80GB",
        **labels,
    }
    # Prometheus answers in Unix seconds; T0 is naive UTC.
    stamps = [(T0 + timedelta(minutes=5 * k)).replace(tzinfo=UTC).timestamp() for k in range(len(values))]
    return {"metric": metric, "values": [[s, str(v)] for s, v in zip(stamps, values, strict=True)]}


def mig_file(tmp_path: Path, *, parent_power: bool = False) -> Path:
    result = []
    for gi, profile, active in INSTANCES:
        labels = {"GPU_I_ID": gi, "GPU_I_PROFILE": profile}
        result.append(series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", [active] * 12, **labels))
        # The exporter writes GPU_UTIL as 0 on MIG instances: the engine activity must win.
        result.append(series("DCGM_FI_DEV_GPU_UTIL", [0.0] * 12, **labels))
        # A device-level field: each instance carries the parent's whole board power.
        result.append(series("DCGM_FI_DEV_POWER_USAGE", [210.0] * 12, **labels))
    if parent_power:
        result.append(series("DCGM_FI_DEV_POWER_USAGE", [210.0] * 12))
    doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    file = tmp_path / "landing" / "dcgm-mig.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(doc))
    return file


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"ATHANOR_HOME": str(tmp_path), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"})


def load(settings: Settings, *files: Path):
    return ingest_paths(list(files), settings.warehouse, settings=settings, as_of=date(2026, 11, 30))


def test_a_mig_partitioned_gpu_loads_per_instance_and_its_instances_make_one_gpu_hour(
    settings: Settings, tmp_path: Path
) -> None:
    outcome = load(settings, mig_file(tmp_path, parent_power=True))
    assert outcome.errors == []
    # 4 instances x 12 instants; the parent's own power series (12 samples) is dropped, not a 5th GPU.
    assert "48 samples of 1 GPU (4 MIG instances) on 1 host" in outcome.lines[0]
    assert "skipped 12 samples of parent GPUs beside their MIG instances" in outcome.lines[0]
    con = connect(settings.warehouse)
    try:
        stored = con.execute(
            "select mig_instance, mig_profile, gpu_share, count(*), avg(utilisation_pct) from gpu_samples "
            "group by 1, 2, 3 order by cast(mig_instance as int)"
        ).fetchall()
        assert stored == [
            ("1", "3g.40gb", pytest.approx(3 / 7), 12, pytest.approx(90.0)),
            ("5", "2g.20gb", pytest.approx(2 / 7), 12, pytest.approx(50.0)),
            ("9", "1g.10gb", pytest.approx(1 / 7), 12, pytest.approx(0.0)),
            ("10", "1g.10gb", pytest.approx(1 / 7), 12, pytest.approx(30.0)),
        ]
        rows = gpu_usage.hourly(con, T0, T0 + timedelta(hours=1), IdleRule(below_pct=5.0, minutes=30.0))
    finally:
        con.close()
    per = rows.groupby("mig_instance")["observed_gpu_hours"].sum().to_dict()
    assert per == {
        "1": pytest.approx(3 / 7),
        "5": pytest.approx(2 / 7),
        "9": pytest.approx(1 / 7),
        "10": pytest.approx(1 / 7),
    }
    assert rows.loc[rows["gpu_id"] == UUID, "observed_gpu_hours"].sum() == pytest.approx(1.0)
    # Idle at that grain: instance 9 (0 % for the hour) is idle for its 1/7 GPU-hour, the rest busy.
    idle = rows.groupby("mig_instance")["idle_gpu_hours"].sum().to_dict()
    assert idle == {"1": 0.0, "5": 0.0, "9": pytest.approx(1 / 7), "10": 0.0}
    # Utilisation-hours: 3/7 x 0.9 + 2/7 x 0.5 + 1/7 x 0 + 1/7 x 0.3 = 4.0 / 7.
    assert rows["utilisation_gpu_hours"].sum() == pytest.approx((2.7 + 1.0 + 0.3) / 7)


def test_a_mig_instance_twice_at_one_instant_fails_the_uniqueness_rule_but_two_instances_do_not(
    settings: Settings, tmp_path: Path
) -> None:
    doc = json.loads(mig_file(tmp_path).read_text())
    doc["data"]["result"].append(doc["data"]["result"][0])  # instance 1's engine activity scraped twice
    twice = tmp_path / "landing" / "dcgm-mig.json"
    twice.write_text(json.dumps(doc))
    outcome = load(settings, twice)
    assert "rule telemetry_sample_unique failed on column sampled_at, 24 bad rows" in outcome.errors[0]
    assert f"{UUID} MIG 1 at 2026-11-03 14:00:00" in outcome.errors[0]


def test_a_mig_instance_without_a_profile_is_refused_naming_the_rule(
    settings: Settings, tmp_path: Path
) -> None:
    doc = json.loads(mig_file(tmp_path).read_text())
    doc["data"]["result"][0]["metric"]["GPU_I_PROFILE"] = "custom"
    bad = tmp_path / "landing" / "dcgm-mig.json"
    bad.write_text(json.dumps(doc))
    outcome = load(settings, bad)
    assert "rule telemetry_mig_profile" in outcome.errors[0]
    assert "column GPU_I_PROFILE" in outcome.errors[0]
