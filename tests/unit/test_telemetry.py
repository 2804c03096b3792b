"""GPU telemetry: each format read as the tool writes it, into gpu_samples, with hand-computed
values; bad files refused naming file, row, column and rule; restated deliveries replacing."""

from __future__ import annotations

import json
import shutil
from datetime import date, datetime
from pathlib import Path

import pytest

from athanor.ingest.deliveries import classify, ingest_paths
from athanor.ingest.telemetry import groups
from athanor.settings import Settings
from athanor.warehouse import connect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TELEMETRY = FIXTURES / "telemetry"
SAGEMAKER_JOBS = FIXTURES / "jobs" / "sagemaker-spot.json"
COLUMNS = "host, gpu_id, gpu_index, sampled_at, utilisation_pct, memory_used_gib, memory_total_gib, power_w"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"ATHANOR_HOME": str(tmp_path), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"})


def rows(settings: Settings, sql: str, params: list | None = None) -> list[tuple]:
    con = connect(settings.warehouse, read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def samples(settings: Settings, where: str = "true") -> list[tuple]:
    return rows(
        settings, f"select {COLUMNS} from gpu_samples where {where} order by gpu_index, sampled_at, host"
    )


def ingest(settings: Settings, *paths: Path, as_of: date = date(2026, 11, 30)):
    return ingest_paths(list(paths), settings.warehouse, settings=settings, as_of=as_of)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


# ---------------------------------------------------------------------------------- nvidia-smi


def test_nvidia_smi_csv_with_units_brackets_and_a_gap(settings: Settings) -> None:
    outcome = ingest(settings, TELEMETRY / "gpu-node-01.nvidia-smi.csv")
    assert outcome.errors == []
    assert outcome.lines[0].startswith(
        "gpu-node-01.nvidia-smi.csv: nvidia_smi telemetry, 8 samples of 2 GPUs on 1 host, "
        "2026-11-03 14:00 to 2026-11-03 14:10 UTC, 1 without utilisation ([N/A])"
    )
    g0, g1 = "GPU-6f2b7c1e-0d3a-4b5e-9f1a-2c3d4e5f6a70", "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
    # MiB / 1024: 30000 MiB = 29.296875 GiB, 40960 MiB = 40 GiB; [N/A] / [Not Supported] are null;
    # the index is the rank by PCI bus id (10:1C before 20:1C); 14:02 -> 14:10 is a gap.
    assert samples(settings) == [
        ("gpu-node-01", g0, 0, at("2026-11-03 14:00:01.123"), 87.0, 30000 / 1024, 40.0, 250.12),
        ("gpu-node-01", g0, 0, at("2026-11-03 14:01:01.123"), 91.0, 30002 / 1024, 40.0, 262.5),
        ("gpu-node-01", g0, 0, at("2026-11-03 14:02:01.123"), 100.0, 30004 / 1024, 40.0, 301.0),
        ("gpu-node-01", g0, 0, at("2026-11-03 14:10:01.123"), None, 30004 / 1024, 40.0, 80.0),
        ("gpu-node-01", g1, 1, at("2026-11-03 14:00:01.125"), 0.0, 0.0, 40.0, 55.03),
        ("gpu-node-01", g1, 1, at("2026-11-03 14:01:01.125"), 0.0, 0.0, 40.0, None),
        ("gpu-node-01", g1, 1, at("2026-11-03 14:02:01.125"), 2.0, 0.5, 40.0, None),
        ("gpu-node-01", g1, 1, at("2026-11-03 14:10:01.125"), 0.0, 0.0, 40.0, 54.0),
    ]
    assert rows(settings, "select distinct gpu_model, source_format, instance_id, pod from gpu_samples") == [
        ("NVIDIA A100-SXM4-40GB", "nvidia_smi", None, None)
    ]
    assert rows(settings, "select kind, source_format, row_count, status from loads") == [
        ("gpu_telemetry", "nvidia_smi", 8, "loaded")
    ]


@pytest.mark.slow
def test_nounits_and_noheader_forms_read_the_same_values(settings: Settings) -> None:
    assert ingest(settings, TELEMETRY / "gpu-node-02.nvidia-smi.nounits.csv").errors == []
    assert ingest(settings, TELEMETRY / "gpu-node-03.nvidia-smi.csv").errors == []
    nounits = samples(settings, "host = 'gpu-node-02'")
    assert [(r[2], r[3], r[4], r[5], r[7]) for r in nounits] == [
        (0, at("2026-11-03 14:00:01.123"), 87.0, 30000 / 1024, 250.12),
        (0, at("2026-11-03 14:01:01.123"), 91.0, 30002 / 1024, 262.5),
        (1, at("2026-11-03 14:00:01.125"), 0.0, 0.0, 55.03),
        (1, at("2026-11-03 14:01:01.125"), 0.0, 0.0, None),
    ]
    # Header-less: the documented query's fields in order; memory.used and memory.total may
    # hold the same value without the line being taken for a header naming a column twice.
    noheader = samples(settings, "host = 'gpu-node-03'")
    assert [(r[1], r[2], r[4], r[6]) for r in noheader] == [
        ("GPU-8d4e9f30-0d3a-4b5e-9f1a-2c3d4e5f6a70", 0, 87.0, 40.0),
        ("GPU-2c3d4e5f-4e5f-6071-8293-a4b5c6d7e8f9", 1, 0.0, 40.0),
    ]


def test_a_hostname_column_names_the_host_and_an_index_column_the_gpu(settings: Settings) -> None:
    assert ingest(settings, TELEMETRY / "fleet-smi.csv").errors == []
    assert [(r[0], r[2], r[4], r[5], r[6]) for r in samples(settings)] == [
        ("gpu-node-21", 0, 99.0, 70000 / 1024, 81559 / 1024),
        ("gpu-node-22", 0, 1.0, 0.5, 81559 / 1024),
    ]


def test_a_header_less_file_with_repeated_values_is_not_refused(settings: Settings, tmp_path: Path) -> None:
    file = tmp_path / "gpu-node-09.nvidia-smi.csv"
    file.write_text(
        "2026/11/03 14:00:01.000, NVIDIA L4, 00000000:01:00.0, GPU-9, 100 %, 23034 MiB, 23034 MiB, 72.00 W\n"
    )
    assert ingest(settings, file).errors == []
    assert [(r[0], r[1], r[4], r[5], r[6]) for r in samples(settings)] == [
        ("gpu-node-09", "GPU-9", 100.0, 23034 / 1024, 23034 / 1024)
    ]


# ---------------------------------------------------------------------------------- Prometheus


def test_prometheus_dcgm_query_range(settings: Settings) -> None:
    outcome = ingest(settings, TELEMETRY / "dcgm-query-range.json")
    assert outcome.errors == []
    assert "skipped series of other metrics: DCGM_FI_DEV_GPU_TEMP (1)" in outcome.lines[0]
    got = rows(
        settings,
        f"select {COLUMNS}, gpu_model, pod, namespace from gpu_samples order by gpu_index, sampled_at",
    )
    g0, g1 = "GPU-aaaaaaaa-0000-4000-8000-000000000000", "GPU-aaaaaaaa-0000-4000-8000-000000000001"
    # GPU 0 has GR_ENGINE_ACTIVE: it wins over GPU_UTIL (0.912345 -> 91.2345 %, not 100);
    # total = used + free + reserved = 61440 + 19478 + 582 = 81500 MiB. GPU 1 has no
    # exported_pod: its pod label is the exporter's own, no workload; its NaN is null.
    # 14:01 -> 14:05 is a gap in collection.
    host = "gpu-node-11"
    model, pod = "NVIDIA A100-SXM4-80GB", ("train-llama-0", "llm")
    assert got == [
        (
            host,
            g0,
            0,
            at("2026-11-03 14:00:00"),
            pytest.approx(91.2345),
            60.0,
            81500 / 1024,
            391.5,
            model,
            *pod,
        ),
        (host, g0, 0, at("2026-11-03 14:01:00"), 88.0, 60.0, 81500 / 1024, 402.25, model, *pod),
        (host, g0, 0, at("2026-11-03 14:05:00"), 50.0, 61442 / 1024, 81500 / 1024, 300.0, model, *pod),
        (host, g1, 1, at("2026-11-03 14:00:00"), 0.0, 0.0, 80.0, 61.2, model, None, None),
        (host, g1, 1, at("2026-11-03 14:01:00"), None, 0.0, 80.0, 61.4, model, None, None),
        (host, g1, 1, at("2026-11-03 14:05:00"), 3.0, 0.0, 80.0, 61.0, model, None, None),
    ]


def test_one_metric_per_file_meets_in_one_sample(settings: Settings) -> None:
    outcome = ingest(settings, TELEMETRY / "prometheus-split")
    assert outcome.errors == []
    assert outcome.loaded == 1  # the two files of the folder are one delivery
    assert [(r[3], r[4], r[5]) for r in samples(settings)] == [
        (at("2026-11-03 14:00:00"), 5.0, 1.0),
        (at("2026-11-03 14:01:00"), 6.0, 2.0),
        (at("2026-11-03 14:05:00"), 7.0, 3.0),
    ]


def test_a_series_without_its_metric_name_is_refused(settings: Settings, tmp_path: Path) -> None:
    doc = json.loads((TELEMETRY / "dcgm-query-range.json").read_text())
    del doc["data"]["result"][0]["metric"]["__name__"]
    file = tmp_path / "avg.json"
    file.write_text(json.dumps(doc))
    outcome = ingest(settings, file)
    assert outcome.loaded == 0
    assert "avg.json row 1, column __name__: series without __name__" in outcome.errors[0]


# ---------------------------------------------------------------------------------- CloudWatch


def test_cloudwatch_gpu_utilization_is_divided_among_the_hosts_gpus(settings: Settings) -> None:
    # The job log first: llm-7b-spot-0001 ran on ml.p4d.24xlarge, 8 A100-40GB each.
    outcome = ingest(settings, SAGEMAKER_JOBS, TELEMETRY / "cloudwatch")
    assert outcome.errors == []
    assert "40 samples of 16 GPUs on 2 hosts" in outcome.lines[1]
    assert "CPUUtilization (1)" in outcome.lines[1]
    per_instant = rows(
        settings,
        "select host, sampled_at, count(*), min(utilisation_pct), max(utilisation_pct), "
        "min(memory_used_gib), max(memory_total_gib), any_value(job_name), any_value(gpu_model) "
        "from gpu_samples group by all order by host, sampled_at",
    )
    job, host1, host2 = "llm-7b-spot-0001", "llm-7b-spot-0001/algo-1", "llm-7b-spot-0001/algo-2"
    # 800 / 8 GPUs = 100 %; memory 640 / 8 = 80 % of 40 GiB = 32 GiB. Timestamps came newest first.
    assert per_instant == [
        (host1, at("2026-11-03 01:00:00"), 8, 100.0, 100.0, 32.0, 40.0, job, "A100-40GB"),
        (host1, at("2026-11-03 01:05:00"), 8, 50.0, 50.0, 16.0, 40.0, job, "A100-40GB"),
        (host1, at("2026-11-03 01:10:00"), 8, 12.5, 12.5, 4.0, 40.0, job, "A100-40GB"),
        (host2, at("2026-11-03 01:05:00"), 8, 1.0, 1.0, None, 40.0, job, "A100-40GB"),
        (host2, at("2026-11-03 01:10:00"), 8, 0.0, 0.0, None, 40.0, job, "A100-40GB"),
    ]
    assert rows(settings, "select distinct gpu_id from gpu_samples where host = ? order by 1", [host2]) == [
        (f"{host2}:{i}",) for i in range(8)
    ]


def test_cloudwatch_dimensions_from_the_saved_request(settings: Settings) -> None:
    outcome = ingest(settings, SAGEMAKER_JOBS, TELEMETRY / "cloudwatch-request")
    assert outcome.errors == []
    # ml.g5.12xlarge: 4 A10G of 22.35 GiB each (the catalogue's, from DescribeInstanceTypes).
    # 400 / 4 = 100 %; memory 200 / 4 = 50 % of 22.35 = 11.175 GiB.
    assert rows(
        settings,
        "select sampled_at, count(*), max(utilisation_pct), max(memory_used_gib) from gpu_samples "
        "group by all order by 1",
    ) == [
        (at("2026-11-03 02:00:00"), 4, 100.0, pytest.approx(11.175)),
        (at("2026-11-03 02:01:00"), 4, 50.0, pytest.approx(5.5875)),
    ]


def test_cloudwatch_without_the_jobs_instance_type_or_its_dimensions_is_refused(settings: Settings) -> None:
    outcome = ingest(settings, TELEMETRY / "cloudwatch", TELEMETRY / "cloudwatch-no-dimensions.json")
    assert outcome.loaded == 0
    assert "rule telemetry_gpu_count_known" in outcome.errors[0]
    assert "llm-7b-spot-0001-gpu.json, column Host" in outcome.errors[0]
    assert "cloudwatch-no-dimensions.json, column Label" in outcome.errors[1]
    assert "rule telemetry_dimensions_known" in outcome.errors[1]


# ---------------------------------------------------------------------------------- refused


def test_a_value_in_another_unit_is_refused_naming_row_and_column(settings: Settings) -> None:
    outcome = ingest(settings, TELEMETRY / "bad-units.nvidia-smi.csv")
    assert outcome.errors == [
        "bad-units.nvidia-smi.csv row 3, column memory.used: not a number in MiB (nor a bracketed "
        "value such as [N/A]) (1 bad row; e.g. row 3: '30002 MB')"
    ]
    assert rows(settings, "select count(*) from gpu_samples") == [(0,)]
    assert rows(settings, "select kind, status from loads") == [("gpu_telemetry", "failed")]
    assert rows(settings, "select rule, column_name, unexpected_count from dq_results where not success") == [
        ("parse", "memory.used", 1)
    ]


def test_a_file_without_its_host_is_refused(settings: Settings) -> None:
    outcome = ingest(settings, TELEMETRY / "no-host.csv")
    assert len(outcome.errors) == 1
    assert outcome.errors[0].startswith("no-host.csv: nvidia-smi output does not name its host")


def test_utilisation_over_100_fails_the_quality_gate_and_loads_nothing(settings: Settings) -> None:
    outcome = ingest(settings, TELEMETRY / "over-100.nvidia-smi.csv")
    assert outcome.errors[0].startswith(
        "over-100.nvidia-smi.csv: rule telemetry_utilisation_in_range failed on column utilisation_pct, "
        "1 bad row (e.g. row 1: 130.0)"
    )
    assert rows(settings, "select count(*) from gpu_samples") == [(0,)]
    assert rows(
        settings,
        "select suite, severity, unexpected_count from dq_results where rule = 'telemetry_utilisation_in_range'",
    ) == [("gpu_samples", "error", 1)]


def test_a_sample_twice_and_a_clock_out_of_range_fail_their_rules(settings: Settings, tmp_path: Path) -> None:
    head = (TELEMETRY / "gpu-node-01.nvidia-smi.csv").read_text().splitlines()
    twice = tmp_path / "twice.nvidia-smi.csv"
    twice.write_text("\n".join([head[0], head[1], head[1], head[2]]) + "\n")
    early = tmp_path / "early.nvidia-smi.csv"
    early.write_text("\n".join([head[0], head[1].replace("2026/11/03", "1970/01/01")]) + "\n")
    outcome = ingest(settings, twice, early)
    assert "rule telemetry_sample_unique failed on column sampled_at, 2 bad rows" in outcome.errors[0]
    assert "(e.g. row 1: GPU-6f2b7c1e" in outcome.errors[0]
    assert "rule telemetry_sampled_at_in_range failed on column sampled_at, 1 bad row" in outcome.errors[1]
    assert rows(settings, "select count(*) from gpu_samples") == [(0,)]


# ---------------------------------------------------------------------------------- replacing


def test_a_file_delivered_again_restates_its_span(settings: Settings, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    file = landing / "gpu-node-01.nvidia-smi.csv"
    shutil.copy(TELEMETRY / "gpu-node-01.nvidia-smi.csv", file)
    ingest(settings, file)
    load_id = rows(settings, "select load_id from loads")[0][0]
    assert ingest(settings, file).lines == [
        f"gpu-node-01.nvidia-smi.csv: unchanged since load {load_id}, skipped"
    ]
    # Corrected: the 14:01 lines dropped, one value changed; 14:00 to 14:10 is restated whole.
    lines = file.read_text().splitlines()
    lines[1] = lines[1].replace("87 %", "88 %")
    file.write_text("\n".join(lines[:3] + lines[5:]) + "\n")
    outcome = ingest(settings, file)
    assert (
        "6 samples of 2 GPUs" in outcome.lines[0] and "replacing 8 samples loaded before" in outcome.lines[0]
    )
    assert rows(
        settings, "select count(*), max(utilisation_pct) filter (where source_row = 1) from gpu_samples"
    ) == [(6, 88.0)]


@pytest.mark.slow
def test_a_log_rotated_under_the_same_name_adds_a_day(settings: Settings, tmp_path: Path) -> None:
    file = tmp_path / "gpu-node-01.nvidia-smi.csv"
    shutil.copy(TELEMETRY / "gpu-node-01.nvidia-smi.csv", file)
    ingest(settings, file)
    file.write_text(file.read_text().replace("2026/11/03", "2026/11/04"))
    outcome = ingest(settings, file)
    assert "replacing" not in outcome.lines[0]
    assert rows(
        settings, "select cast(sampled_at as date), count(*) from gpu_samples group by 1 order by 1"
    ) == [
        (date(2026, 11, 3), 8),
        (date(2026, 11, 4), 8),
    ]


def test_an_overlapping_export_restates_the_instants_it_covers(settings: Settings, tmp_path: Path) -> None:
    ingest(settings, TELEMETRY / "dcgm-query-range.json")
    doc = json.loads((TELEMETRY / "dcgm-query-range.json").read_text())
    for series in doc["data"]["result"]:
        # The next export: 14:05 again, then 14:06 (same figures).
        last = series["values"][2]
        series["values"] = [last, [last[0] + 60, last[1]]]
    nxt = tmp_path / "next.json"
    nxt.write_text(json.dumps(doc))
    outcome = ingest(settings, nxt)
    assert "replacing 2 samples loaded before" in outcome.lines[0]
    # The warning names the rows replaced, in the file they came from.
    assert "warning: dcgm-query-range.json: rule telemetry_sample_replaces_loaded failed" in outcome.lines[0]
    assert rows(
        settings,
        "select gpu_index, count(*), count(*) filter (where source_file = 'next.json') from gpu_samples group by 1 order by 1",
    ) == [(0, 4, 2), (1, 4, 2)]


# ---------------------------------------------------------------------------------- recognising


@pytest.mark.parametrize(
    "name",
    [
        "gpu-node-01.nvidia-smi.csv",
        "gpu-node-02.nvidia-smi.nounits.csv",
        "gpu-node-03.nvidia-smi.csv",
        "fleet-smi.csv",
        "dcgm-query-range.json",
        "cloudwatch/llm-7b-spot-0001-gpu.json",
        "cloudwatch-request/vision-sweep.request.json",
    ],
)
def test_each_format_is_recognised_from_content(settings: Settings, name: str) -> None:
    con = connect(settings.warehouse)
    try:
        assert classify(con, TELEMETRY / name) == "gpu_telemetry"
    finally:
        con.close()


def test_the_files_of_one_format_in_a_delivery_load_together() -> None:
    files = [
        TELEMETRY / "gpu-node-01.nvidia-smi.csv",
        TELEMETRY / "fleet-smi.csv",
        TELEMETRY / "prometheus-split" / "gpu-util.json",
        TELEMETRY / "prometheus-split" / "fb-used.json",
    ]
    assert groups(files) == [
        [TELEMETRY / "fleet-smi.csv", TELEMETRY / "gpu-node-01.nvidia-smi.csv"],
        [TELEMETRY / "prometheus-split" / "fb-used.json", TELEMETRY / "prometheus-split" / "gpu-util.json"],
    ]
