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
from tests.support.rows import hourly_usage_lines

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


# ------------------------------------------------------------------------------------ energy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "telemetry"
DAY0 = datetime(2026, 3, 1)


def smi_rows(
    gpu: str, values: list[float], watts: float | None, *, model: str, step_s: float = 60
) -> list[dict]:
    """One sample a minute of one GPU on host h1 (i-1): utilisation `values`, power `watts`."""
    return [
        {
            "load_id": "L1",
            "source_format": "nvidia_smi",
            "source_file": "h1.nvidia-smi.csv",
            "source_row": k + 1,
            "host": "h1",
            "gpu_id": gpu,
            "gpu_index": 0,
            "gpu_model": model,
            "instance_id": "i-1",
            "sampled_at": DAY0 + timedelta(seconds=step_s * k),
            "utilisation_pct": v,
            "memory_used_gib": 0.0,
            "memory_total_gib": 80.0,
            "power_w": watts,
        }
        for k, v in enumerate(values)
    ]


def hour_bill(gpus: int = 1, hours: int = 1) -> list[dict]:
    """An AWS p5.48xlarge-like usage line per hour of i-1 in us-east-1, $8 a GPU-hour."""
    return hourly_usage_lines(
        "i-1", DAY0, hours, cost=8.0 * gpus, gpus=gpus, instance_type="p5.48xlarge",
        billing_period=(datetime(2026, 3, 1), datetime(2026, 4, 1)), tags={"team": "nlp"},
        region_id="us-east-1",
    )  # fmt: skip


def test_an_idle_gpu_at_70_w_for_an_hour_is_0_07_kwh_not_zero(warehouse) -> None:
    from athanor.reference import gpus as catalog
    from athanor.warehouse import insert_rows

    # 60 samples a minute apart at 0 % and 70 W: one idle hour, 70 W x 1 h = 0.07 kWh, all measured.
    insert_rows(warehouse, "gpu_samples", smi_rows("g0", [0.0] * 60, 70.0, model="NVIDIA H100 80GB HBM3"))
    insert_rows(warehouse, "billing_facts", hour_bill())
    rows = gpu_usage.hourly(warehouse, DAY0, DAY0 + timedelta(days=1), IdleRule())
    assert rows["idle_gpu_hours"].sum() == pytest.approx(1.0)
    assert rows["measured_energy_kwh"].sum() == pytest.approx(0.07)
    assert rows["modelled_energy_kwh"].sum() == pytest.approx(0.0)
    assert rows["energy_kwh"].sum() == pytest.approx(0.07)
    # Carbon: 0.07 kWh x AWS's PUE x us-east-1's grid intensity, from the reference files.
    grid = catalog.grid_intensity("aws", "us-east-1").gco2e_per_kwh
    assert rows["kgco2e"].sum() == pytest.approx(0.07 * catalog.pue("aws") * grid / 1000)
    total = gpu_usage.energy_figures(warehouse, rows).iloc[0]
    assert total["measured_share"] == pytest.approx(1.0)


def test_without_power_an_idle_gpu_is_modelled_at_its_idle_watts_and_a_busy_one_on_the_curve(
    warehouse,
) -> None:
    from athanor.reference import power
    from athanor.warehouse import insert_rows

    # No power column: g0 idle at 0 % for an hour, g1 at 50 % for an hour (H100: 71.4 W idle, 700 W
    # max, from gpu_power.csv). g0: 71.4 W x 1 h = 0.0714 kWh; g1: (71.4 + 628.6 x 0.5) W = 0.3857 kWh.
    # A third paid GPU-hour of the 8-GPU... here a 3-GPU line: one GPU-hour unobserved, at idle: 0.0714.
    insert_rows(
        warehouse,
        "gpu_samples",
        smi_rows("g0", [0.0] * 60, None, model="NVIDIA H100 80GB HBM3")
        + smi_rows("g1", [50.0] * 60, None, model="NVIDIA H100 80GB HBM3"),
    )
    insert_rows(warehouse, "billing_facts", hour_bill(gpus=3))
    rows = gpu_usage.hourly(warehouse, DAY0, DAY0 + timedelta(days=1), IdleRule())
    curve = power.curve("H100-80GB")
    assert (curve.idle_w, curve.max_w) == (71.4, 700.0)
    by_gpu = rows.groupby(rows["gpu_id"].fillna("(unobserved)"))["modelled_energy_kwh"].sum().to_dict()
    assert by_gpu == {
        "g0": pytest.approx(0.0714),
        "g1": pytest.approx((71.4 + (700 - 71.4) * 0.5) / 1000),
        "(unobserved)": pytest.approx(0.0714),
    }
    assert rows["measured_energy_kwh"].sum() == 0.0
    assert set(rows["power_model"]) == {"H100-80GB"}
    assert gpu_usage.energy_figures(warehouse, rows).iloc[0]["measured_share"] == 0.0


def test_a_gpu_without_a_power_curve_has_unknown_energy_not_zero(warehouse) -> None:
    from athanor.warehouse import insert_rows

    insert_rows(warehouse, "gpu_samples", smi_rows("g0", [0.0] * 60, None, model="Mystery Accelerator 9000"))
    rows = gpu_usage.hourly(warehouse, DAY0, DAY0 + timedelta(days=1), IdleRule())
    assert rows["energy_kwh"].isna().all()
    assert gpu_usage.energy_figures(warehouse, rows).iloc[0]["unknown_gpu_hours"] == pytest.approx(1.0)


def test_the_real_h100_and_t4_captures_load_with_their_power(settings: Settings) -> None:
    # microsoft/VirtualClient captures (MIT, tests/fixtures/telemetry/SOURCES.md): the H100's
    # power.draw.average wins over its instant reading; the T4's average is [N/A], so its
    # power.draw.instant (9.31 W) is read.
    outcome = load(settings, FIXTURES / "h100-node", FIXTURES / "t4-node")
    assert outcome.errors == []
    assert [line.rsplit(", ", 1)[-1] for line in outcome.lines] == [
        "power read on 8 of 8",
        "power read on 1 of 1",
    ]
    con = connect(settings.warehouse)
    try:
        got = con.execute(
            "select host, gpu_index, gpu_model, utilisation_pct, power_w from gpu_samples order by host, gpu_index"
        ).fetchall()
    finally:
        con.close()
    averages = [70.89, 71.71, 70.78, 72.17, 70.89, 71.71, 70.78, 72.17]
    assert got == [("h100-node", i, "NVIDIA H100 80GB HBM3", 0.0, w) for i, w in enumerate(averages)] + [
        ("t4-node", 0, "Tesla T4", 2.0, 9.31)
    ]


def test_the_report_states_the_measured_share_per_team_and_class(warehouse) -> None:
    from athanor.publish.gpu_usage_section import load_gpu_usage
    from athanor.warehouse import insert_rows

    # g0 measured at 70 W for an hour (0.07 kWh); g1 without power at 0 %: H100 idle, 0.0714 kWh.
    insert_rows(
        warehouse,
        "gpu_samples",
        smi_rows("g0", [0.0] * 60, 70.0, model="NVIDIA H100 80GB HBM3")
        + smi_rows("g1", [0.0] * 60, None, model="NVIDIA H100 80GB HBM3"),
    )
    insert_rows(warehouse, "billing_facts", hour_bill(gpus=2))
    gpu_usage.measure_gpus(warehouse, "run-1", date(2026, 3, 1), IdleRule())
    section = load_gpu_usage(warehouse, date(2026, 3, 1), date(2026, 3, 2))
    assert section.energy["energy_kwh"] == pytest.approx(0.1414)
    assert section.energy["measured_share"] == pytest.approx(0.07 / 0.1414)
    assert [(r["team"], r["energy_kwh"]) for r in section.energy_by_team] == [("nlp", pytest.approx(0.1414))]
    assert [r["job_class"] for r in section.energy_by_class] == ["(no job)"]


def test_a_job_on_a_mig_slice_is_not_sent_to_a_smaller_slice_of_its_slice(warehouse, tmp_path: Path) -> None:
    from athanor.warehouse import insert_rows

    # Instance 10 (1g.10gb) runs pod tiny-0 at 30 % of its slice with 1 of its 10 GiB in use: on a
    # whole GPU that would be "run on 3/7 MIG slices"; on a slice those figures are of the slice.
    doc = json.loads(mig_file(tmp_path).read_text())
    for s in doc["data"]["result"]:
        if s["metric"].get("GPU_I_ID") == "10":
            s["metric"]["exported_pod"] = "tiny-0"
    labels = {"GPU_I_ID": "10", "GPU_I_PROFILE": "1g.10gb", "exported_pod": "tiny-0"}
    doc["data"]["result"] += [
        series("DCGM_FI_DEV_FB_USED", [1024.0] * 12, **labels),
        series("DCGM_FI_DEV_FB_FREE", [9216.0] * 12, **labels),
    ]
    file = tmp_path / "landing" / "dcgm-mig.json"
    file.write_text(json.dumps(doc))
    con = warehouse
    from athanor.ingest.telemetry import ingest_telemetry

    ingest_telemetry(con, [file], as_of=date(2026, 11, 30))
    tiny = {
        "load_id": "J1", "source_file": "jobs.csv", "source_row": 1, "source": "generic", "job_id": "tiny",
        "start_time": T0, "end_time": T0 + timedelta(hours=1), "state": "completed", "team": "cv",
        "project": "p", "model": "m", "phase": "tune", "duration_s": 3600.0, "censored": False,
        "gpu_count": 1, "gpu_hours": 1.0, "instance_type": "p4de.24xlarge", "instance_count": 1,
        "submit_time": T0, "gpus_per_instance": 1, "pricing_model": "on_demand",
    }  # fmt: skip
    insert_rows(con, "job_run_facts", [tiny])
    line = {
        "load_id": "B1", "source_file": "bill.csv", "source_row": 1, "source_format": "focus",
        "billing_account_id": "111", "billing_currency": "USD", "billing_period_start": datetime(2026, 11, 1),
        "billing_period_end": datetime(2026, 12, 1), "charge_period_start": T0,
        "charge_period_end": T0 + timedelta(hours=1), "charge_category": "Usage", "billed_cost": 4.0,
        "effective_cost": 4.0, "resource_id": "mig-node-1", "x_gpu_count": 1, "x_usage_hours": 1.0,
        "x_instance_type": "p4de.24xlarge", "tags": {"team": "cv"},
    }  # fmt: skip
    insert_rows(con, "billing_facts", [line])
    rule = IdleRule()
    rows = gpu_usage.hourly(con, T0, T0 + timedelta(hours=1), rule)
    assert set(rows.loc[rows["job_id"] == "tiny", "mig_instance"]) == {"10"}
    assert gpu_usage.underused_recommendations(con, rows, rule) == []
    # The same figures on a whole GPU: sent to MIG slices (what the guard keeps from a slice).
    whole = rows.assign(mig_instance=None)
    (rec,) = gpu_usage.underused_recommendations(con, whole, rule)
    assert "MIG slices" in rec.action
