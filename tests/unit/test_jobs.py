"""Job-run parsers: generic CSV/Parquet, Slurm sacct, SageMaker DescribeTrainingJob.

Every expected number is worked out by hand from the fixture files in
tests/fixtures/jobs/ (the arithmetic is in the comments).
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from athanor.ingest.jobs import (
    COLUMNS,
    JobRunError,
    detect_job_format,
    parse_slurm_elapsed,
    parse_tres_gpus,
    read_job_runs,
    summarise,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jobs"
AS_OF = "2026-11-03T12:30:00Z"
PARTITIONS = {
    "p4d": "p4d.24xlarge",
    "p4d-spot": "p4d.24xlarge",
    "g5": "g5.12xlarge",
    "p5": "p5.48xlarge",
}
HEADER = "job_id,submit_time,start_time,end_time,state,instance_type,instance_count,gpus_per_instance,pricing_model"
GOOD = "j-{n},2026-11-03T04:00:00Z,2026-11-03T05:00:00Z,2026-11-03T06:00:00Z,completed,p4d.24xlarge,1,8,on_demand"


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text)


def by_id(df: pd.DataFrame) -> dict[str, dict]:
    return {row["job_id"]: row for row in df.to_dict("records")}


def write_csv(tmp_path: Path, lines: list[str], name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def error_of(path: Path, **kwargs) -> str:
    with pytest.raises(JobRunError) as caught:
        read_job_runs(path, **kwargs)
    return str(caught.value)


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("jobs.csv", "generic"),
        ("sacct.txt", "slurm"),
        ("sagemaker-spot.json", "sagemaker"),
        ("sagemaker-jobs.jsonl", "sagemaker"),
    ],
)
def test_detect_fixture_formats(name: str, expected: str) -> None:
    assert detect_job_format(FIXTURES / name) == expected


def test_detection_uses_content_not_file_name(tmp_path: Path) -> None:
    # A sacct dump named like a CSV, and a gzip-wrapped JSON Lines file named .csv.
    misnamed = tmp_path / "jobs.csv"
    misnamed.write_bytes((FIXTURES / "sacct.txt").read_bytes())
    gz = tmp_path / "export.csv"
    gz.write_bytes(gzip.compress((FIXTURES / "sagemaker-jobs.jsonl").read_bytes()))
    assert detect_job_format(misnamed) == "slurm"
    assert detect_job_format(gz) == "sagemaker"
    assert len(read_job_runs(gz)) == 6


def test_detect_parquet_by_magic(tmp_path: Path) -> None:
    path = tmp_path / "runs.bin"
    pd.read_csv(FIXTURES / "jobs.csv", dtype=str).to_parquet(path)
    assert detect_job_format(path) == "generic"


def test_unknown_format_names_file_and_first_line(tmp_path: Path) -> None:
    path = write_csv(tmp_path, ["a,b,c", "1,2,3"], name="mystery.csv")
    assert error_of(path) == "mystery.csv: not a known job-log format (first line: 'a,b,c')"


def test_fixed_width_sacct_gets_a_hint(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path,
        [
            "JobID           JobName  State",
            "------------ ---------- ----------",
            "1001         train      COMPLETED",
        ],
        name="sacct.out",
    )
    assert error_of(path) == "sacct.out: sacct output in fixed-width columns: run sacct with --parsable2 (-P)"


def test_json_that_is_not_describe_training_job(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"TrainingJobSummaries": []}))
    assert error_of(path) == (
        "other.json: JSON without TrainingJobName: not a SageMaker DescribeTrainingJob document"
    )


# --------------------------------------------------------------------------- generic


def test_generic_csv_mapping() -> None:
    df = read_job_runs(FIXTURES / "jobs.csv", as_of=AS_OF)
    assert list(df.columns) == list(COLUMNS)
    assert {c: str(t) for c, t in df.dtypes.items()} == COLUMNS
    assert "notes" not in df.columns  # unknown extra column dropped
    assert list(df["source_row"]) == [1, 2, 3, 4, 5, 6]
    assert set(df["source"]) == {"generic"}
    jobs_ = by_id(df)

    j1 = jobs_["j-0001"]
    # 00:10 -> 01:40 = 5400 s; 2 instances x 8 GPUs x 1.5 h = 24 GPU-hours
    assert j1["duration_s"] == 5400.0
    assert j1["gpu_count"] == 16
    assert j1["gpu_hours"] == pytest.approx(24.0)
    assert (j1["team"], j1["project"], j1["model"]) == ("llm", "llm-pretrain", "llama-7b")
    assert (j1["checkpoint_interval_s"], j1["checkpoint_time_s"]) == (1800.0, 45.5)
    assert j1["checkpointing"] is True
    assert j1["censored"] is False
    assert j1["platform"] == "ec2"

    j2 = jobs_["j-0002"]
    # +02:00 offsets: 03:00/03:30/05:00 local = 01:00/01:30/03:00 UTC; 1.5 h x 8 GPUs = 12
    assert (j2["submit_time"], j2["start_time"], j2["end_time"]) == (
        ts("2026-11-03 01:00"),
        ts("2026-11-03 01:30"),
        ts("2026-11-03 03:00"),
    )
    assert j2["gpu_hours"] == pytest.approx(12.0)
    assert (j2["state"], j2["pricing_model"], j2["restart_count"], j2["censored"]) == (
        "preempted",
        "spot",
        2,
        True,
    )
    assert pd.isna(j2["project"]) and pd.isna(j2["model"])

    j3 = jobs_["j-0003"]
    # 'YYYY-MM-DD HH:MM:SS' is UTC; 04:00:00 -> 04:45:30 = 2730 s; 4 GPUs x 2730/3600 h = 3.0333 GPU-h
    assert j3["start_time"] == ts("2026-11-03 04:00:00")
    assert j3["duration_s"] == 2730.0
    assert j3["gpu_hours"] == pytest.approx(4 * 2730 / 3600)
    assert j3["restart_count"] == 0  # empty -> 0
    assert math.isnan(j3["checkpoint_interval_s"])
    assert pd.isna(j3["checkpointing"])
    assert j3["pricing_model"] == "reserved"

    j4 = jobs_["j-0004"]
    # running: as_of 12:30 - start 06:00 = 6.5 h = 23400 s; 4 x 8 GPUs x 6.5 h = 208
    assert (j4["state"], j4["duration_s"], j4["gpu_hours"]) == ("running", 23400.0, pytest.approx(208.0))
    assert pd.isna(j4["end_time"])
    assert (j4["instance_type"], j4["platform"]) == ("p4de.24xlarge", "sagemaker")  # ml. prefix dropped
    assert j4["pricing_model"] == "savings_plan"

    j5 = jobs_["j-0005"]
    # cancelled before it started: no duration, no GPU time, censored
    assert pd.isna(j5["start_time"]) and math.isnan(j5["duration_s"])
    assert (j5["gpu_hours"], j5["censored"]) == (0.0, True)

    j6 = jobs_["j-0006"]
    # milliseconds kept; 30 s x 16 Trainium chips = 480/3600 h; 'Completed' and 'on-demand' normalised
    assert j6["start_time"] == ts("2026-11-03 07:00:01.250")
    assert j6["duration_s"] == 30.0
    assert j6["gpu_hours"] == pytest.approx(16 * 30 / 3600)
    assert (j6["state"], j6["state_detail"], j6["pricing_model"]) == ("completed", "Completed", "on_demand")


def test_generic_running_without_as_of_has_no_duration() -> None:
    j4 = by_id(read_job_runs(FIXTURES / "jobs.csv"))["j-0004"]
    assert math.isnan(j4["duration_s"]) and math.isnan(j4["gpu_hours"])


def test_generic_parquet_matches_csv(tmp_path: Path) -> None:
    # Typed Parquet (tz-aware timestamps, integer and float columns) gives the CSV's table.
    raw = pd.read_csv(FIXTURES / "jobs.csv", dtype=str, keep_default_na=False)
    for column in ("submit_time", "start_time", "end_time"):
        raw[column] = pd.to_datetime(raw[column].replace("", None), format="ISO8601", utc=True)
    for column in ("instance_count", "gpus_per_instance"):
        raw[column] = raw[column].astype("int64")
    for column in ("checkpoint_interval_s", "checkpoint_time_s", "restart_count"):
        raw[column] = pd.to_numeric(raw[column].replace("", None)).astype("float64")
    path = tmp_path / "jobs.parquet"
    raw.to_parquet(path)
    from_parquet = read_job_runs(path, as_of=AS_OF)
    from_csv = read_job_runs(FIXTURES / "jobs.csv", as_of=AS_OF)
    pd.testing.assert_frame_equal(from_parquet, from_csv)


def test_header_only_file_gives_an_empty_typed_table(tmp_path: Path) -> None:
    df = read_job_runs(write_csv(tmp_path, [HEADER]))
    assert len(df) == 0
    assert {c: str(t) for c, t in df.dtypes.items()} == COLUMNS


# --------------------------------------------------------------------------- slurm


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-02:03:04", 93784.0),  # 86400 + 2*3600 + 3*60 + 4
        ("02:03:04", 7384.0),  # 2*3600 + 3*60 + 4
        ("03:04.5", 184.5),  # 3*60 + 4.5
        ("00:00:00", 0.0),
        ("10-00:00:00", 864000.0),
    ],
)
def test_parse_slurm_elapsed(text: str, seconds: float) -> None:
    assert parse_slurm_elapsed(text) == seconds


def test_parse_slurm_elapsed_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not a Slurm duration: '1h'"):
        parse_slurm_elapsed("1h")


@pytest.mark.parametrize(
    ("tres", "gpus"),
    [
        ("billing=96,cpu=96,gres/gpu=8,mem=1100G,node=1", 8),
        ("cpu=192,gres/gpu:a100=16,mem=2200G,node=2", 16),
        ("gres/gpu:a100=4,gres/gpu:v100=2", 6),  # typed only: summed
        ("gres/gpu=8,gres/gpu:a100=8", 8),  # total and typed: the total, not 16
        ("cpu=4,mem=16G", 0),
        ("", 0),
    ],
)
def test_parse_tres_gpus(tres: str, gpus: int) -> None:
    assert parse_tres_gpus(tres) == gpus


def test_slurm_mapping() -> None:
    df = read_job_runs(FIXTURES / "sacct.txt", as_of=AS_OF, partition_map=PARTITIONS)
    assert {c: str(t) for c, t in df.dtypes.items()} == COLUMNS
    # Steps (.batch, .extern, .0) are skipped; array task 1010_3 is a job of its own.
    assert list(df["job_id"]) == [
        "1001",
        "1002",
        "1003",
        "1004",
        "1005",
        "1006",
        "1007",
        "1008",
        "1009",
        "1010_3",
    ]
    # data line numbers (header not counted) of the allocation lines
    assert list(df["source_row"]) == [1, 5, 7, 8, 9, 10, 12, 14, 15, 16]
    assert set(df["source"]) == {"slurm"} and set(df["platform"]) == {"ec2"}
    j = by_id(df)

    # 01:00 Nov 3 -> 03:03:04 Nov 4 = Elapsed 1-02:03:04 = 93784 s; 16 GPUs -> 93784*16/3600 GPU-h
    assert j["1001"]["duration_s"] == 93784.0
    assert j["1001"]["gpu_hours"] == pytest.approx(93784 * 16 / 3600)
    assert (j["1001"]["instance_type"], j["1001"]["instance_count"], j["1001"]["gpus_per_instance"]) == (
        "p4d.24xlarge",
        2,
        8,
    )
    assert (j["1001"]["team"], j["1001"]["project"], j["1001"]["model"]) == (
        "llm",
        "llm-pretrain",
        "llama-7b",
    )
    assert j["1001"]["checkpoint_interval_s"] == 1800.0
    assert j["1001"]["submit_time"] == ts("2026-11-03 00:00:00")

    # gres/gpu:a100=16 on 2 nodes for 1.5 h: 2 x 8 x 1.5 = 24 GPU-hours
    assert (j["1002"]["gpus_per_instance"], j["1002"]["gpu_hours"]) == (8, pytest.approx(24.0))
    assert (j["1002"]["state"], j["1002"]["state_detail"]) == ("failed", "FAILED")

    # partition 'p4d-spot' -> spot; 45 min x 8 GPUs = 6 GPU-h
    assert (j["1003"]["state"], j["1003"]["pricing_model"], j["1003"]["gpu_hours"]) == (
        "preempted",
        "spot",
        pytest.approx(6.0),
    )
    assert (j["1004"]["state"], j["1004"]["state_detail"]) == ("cancelled", "CANCELLED by 12345")
    assert j["1004"]["instance_type"] == "g5.12xlarge"
    assert (j["1005"]["state"], j["1005"]["state_detail"], j["1005"]["duration_s"]) == (
        "failed",
        "TIMEOUT",
        86400.0,
    )
    assert (j["1006"]["state"], j["1006"]["state_detail"], j["1006"]["duration_s"]) == (
        "failed",
        "NODE_FAIL",
        184.0,
    )
    # RUNNING, End Unknown: as_of 12:30 - start 09:00 = 3.5 h = 12600 s; 16 GPUs x 3.5 h = 56
    assert pd.isna(j["1007"]["end_time"])
    assert (j["1007"]["state"], j["1007"]["duration_s"], j["1007"]["gpu_hours"]) == (
        "running",
        12600.0,
        pytest.approx(56.0),
    )
    # cancelled before start (Start None, no AllocTRES): no duration, 0 GPU-h, censored
    assert pd.isna(j["1008"]["start_time"]) and j["1008"]["end_time"] == ts("2026-11-03 10:20")
    assert (j["1008"]["state"], j["1008"]["gpu_hours"], j["1008"]["censored"]) == ("cancelled", 0.0, True)
    assert math.isnan(j["1008"]["duration_s"])
    # PENDING is the current state of a live job
    assert (j["1009"]["state"], j["1009"]["state_detail"], j["1009"]["instance_count"]) == (
        "running",
        "PENDING",
        4,
    )
    # unmapped partition keeps its name; '|' inside the trailing Comment is rejoined
    assert (j["1010_3"]["instance_type"], j["1010_3"]["project"], j["1010_3"]["state"]) == (
        "gpu",
        "arrays",
        "failed",
    )
    assert list(df["censored"]) == [False, False, True, True, False, False, True, True, True, False]
    assert df.attrs["warnings"] == []


def test_slurm_running_without_as_of_uses_elapsed() -> None:
    # sacct's Elapsed (03:00:00) is the run time at the moment of the dump.
    j = by_id(read_job_runs(FIXTURES / "sacct.txt"))["1007"]
    assert (j["duration_s"], j["gpu_hours"]) == (10800.0, pytest.approx(48.0))
    assert j["instance_type"] == "p4d"  # no partition map: the partition name


def test_slurm_partition_pricing_and_bad_pricing_config() -> None:
    df = read_job_runs(FIXTURES / "sacct.txt", partition_pricing={"p5": "reserved", "p4d-spot": "on_demand"})
    j = by_id(df)
    assert (j["1005"]["pricing_model"], j["1003"]["pricing_model"], j["1001"]["pricing_model"]) == (
        "reserved",
        "on_demand",
        "on_demand",
    )
    with pytest.raises(ValueError, match="partition_pricing: 'cheap' is not one of"):
        read_job_runs(FIXTURES / "sacct.txt", partition_pricing={"p5": "cheap"})


def test_slurm_local_time_zone(tmp_path: Path) -> None:
    # Berlin is UTC+1 on 3 Nov 2026 (summer time ended 25 Oct): 01:00 local = 00:00 UTC.
    j = by_id(read_job_runs(FIXTURES / "sacct.txt", slurm_tz="Europe/Berlin"))["1001"]
    assert (j["start_time"], j["submit_time"]) == (ts("2026-11-03 00:00"), ts("2026-11-02 23:00"))


def test_slurm_parsable_with_trailing_pipe(tmp_path: Path) -> None:
    # `sacct --parsable` (not 2) ends each line with '|'
    lines = (FIXTURES / "sacct.txt").read_text().splitlines()
    path = tmp_path / "sacct-p.txt"
    path.write_text("\n".join(line + "|" for line in lines) + "\n")
    pd.testing.assert_frame_equal(
        read_job_runs(path, as_of=AS_OF), read_job_runs(FIXTURES / "sacct.txt", as_of=AS_OF)
    )


def test_slurm_uneven_gpus_warn(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_text(
        "JobID|Partition|Submit|Start|End|State|AllocTRES|NNodes\n"
        "7|p4d|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T01:00:00|COMPLETED|gres/gpu=3|2\n"
    )
    df = read_job_runs(path)
    # 3 GPUs over 2 nodes: per-instance rounds down to 1, GPU-hours use the true 3
    assert (df["gpus_per_instance"][0], df["gpu_count"][0], df["gpu_hours"][0]) == (1, 3, 3.0)
    assert df.attrs["warnings"] == [
        "sacct.txt row 1: 3 GPUs do not divide evenly over 2 nodes;"
        " gpus_per_instance rounded down to 1 (gpu_count keeps 3)"
    ]


# --------------------------------------------------------------------------- sagemaker


def test_sagemaker_spot_array() -> None:
    df = read_job_runs(FIXTURES / "sagemaker-spot.json", as_of=AS_OF)
    assert {c: str(t) for c, t in df.dtypes.items()} == COLUMNS
    assert list(df["source_row"]) == [1, 2, 3]
    assert set(df["platform"]) == {"sagemaker"} and set(df["source"]) == {"sagemaker"}
    j = by_id(df)

    a = j["llm-7b-spot-0001"]
    # completed after 2 spot interruptions, both followed by a restart
    assert (a["state"], a["restart_count"], a["pricing_model"], a["checkpointing"]) == (
        "completed",
        2,
        "spot",
        True,
    )
    assert (a["instance_type"], a["instance_count"], a["gpus_per_instance"]) == ("p4d.24xlarge", 2, 8)
    # 01:00 -> 05:30 = 16200 s; 2 x 8 GPUs x 4.5 h = 72 GPU-h; BillableTimeInSeconds kept
    assert (a["duration_s"], a["gpu_hours"], a["billable_s"]) == (16200.0, pytest.approx(72.0), 9000.0)
    assert a["submit_time"] == ts("2026-11-03 00:55")
    assert (a["team"], a["project"], a["model"]) == ("llm", "llm-pretrain", "llama-7b")  # 'Project' key

    b = j["vision-sweep-spot-0002"]
    # Stopped with the last transition Interrupted -> preempted; 2 interruptions, 1 restart
    assert (b["state"], b["state_detail"], b["restart_count"], b["censored"]) == (
        "preempted",
        "Stopped/Interrupted",
        1,
        True,
    )
    # 02:00 -> 03:15 = 4500 s; 4 GPUs x 1.25 h = 5 GPU-h; no CheckpointConfig
    assert (b["duration_s"], b["gpu_hours"], b["checkpointing"]) == (4500.0, pytest.approx(5.0), False)

    c = j["llm-70b-od-0003"]
    # epoch-second timestamps; running: 12:30 - 06:00 = 6.5 h; 4 x 8 GPUs x 6.5 h = 208 GPU-h
    assert (c["submit_time"], c["start_time"]) == (ts("2026-11-03 05:50"), ts("2026-11-03 06:00"))
    assert (c["state"], c["duration_s"], c["gpu_hours"]) == ("running", 23400.0, pytest.approx(208.0))
    assert (c["pricing_model"], c["checkpoint_interval_s"], c["checkpointing"]) == ("on_demand", 3600.0, True)
    assert math.isnan(c["billable_s"])


def test_sagemaker_json_lines() -> None:
    df = read_job_runs(FIXTURES / "sagemaker-jobs.jsonl")
    j = by_id(df)
    # line numbers: line 3 is blank
    assert list(df["source_row"]) == [1, 2, 4, 5, 6, 7]
    # 10:05 -> 12:35 = 9000 s; 8 L4 x 2.5 h = 20 GPU-h
    assert (j["l4-finetune-0101"]["gpu_hours"], j["l4-finetune-0101"]["team"]) == (
        pytest.approx(20.0),
        "search",
    )
    # trn1.32xlarge has 16 Trainium chips; 2 instances x 16 x 0.5 h = 16
    assert (j["trn-pretrain-0102"]["state"], j["trn-pretrain-0102"]["gpu_hours"]) == (
        "failed",
        pytest.approx(16.0),
    )
    assert j["user-stopped-0103"]["state"] == "cancelled"
    # stopped by MaxRuntimeExceeded: a time-limit failure, like Slurm's TIMEOUT
    assert (j["too-slow-0104"]["state"], j["too-slow-0104"]["state_detail"]) == (
        "failed",
        "Stopped/MaxRuntimeExceeded",
    )
    assert (j["cpu-prep-0105"]["gpus_per_instance"], j["cpu-prep-0105"]["gpu_hours"]) == (0, 0.0)
    # interrupted, then gave up waiting for spot capacity: preempted, no restart happened
    assert (j["no-capacity-0106"]["state"], j["no-capacity-0106"]["restart_count"]) == ("preempted", 0)
    assert df.attrs["warnings"] == [
        "sagemaker-jobs.jsonl: instance type 'c5.4xlarge' not in the GPU table (document 6);"
        " gpus_per_instance set to 0"
    ]


def test_sagemaker_single_pretty_document(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "sagemaker-spot.json").read_text())[1]
    path = tmp_path / "describe.json"
    path.write_text(json.dumps(doc, indent=2))
    df = read_job_runs(path)
    assert (list(df["job_id"]), list(df["source_row"]), list(df["state"])) == (
        ["vision-sweep-spot-0002"],
        [1],
        ["preempted"],
    )


# --------------------------------------------------------------------------- bad input


def test_missing_column(tmp_path: Path) -> None:
    header = HEADER.replace(",state", "")
    path = write_csv(tmp_path, [header, "j-1,2026-11-03T04:00:00Z,,,p4d.24xlarge,1,8,on_demand"])
    assert error_of(path) == "jobs.csv, column state: required column missing"


def test_end_before_start(tmp_path: Path) -> None:
    bad = GOOD.format(n=17).replace("05:00:00Z,2026-11-03T06:00:00Z", "05:00:00Z,2026-11-03T04:00:00Z")
    path = write_csv(tmp_path, [HEADER, *[GOOD.format(n=n) for n in range(1, 17)], bad])
    assert error_of(path) == (
        "jobs.csv row 17, column end_time: end before start (2026-11-03T04:00:00Z < 2026-11-03T05:00:00Z)"
    )


def test_duplicate_job_id(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [HEADER, GOOD.format(n=1), GOOD.format(n=2), GOOD.format(n=1)])
    assert error_of(path) == "jobs.csv row 3, column job_id: duplicate job_id ('j-1' first at row 1)"


def test_bad_state(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [HEADER, GOOD.format(n=1).replace("completed", "done")])
    assert error_of(path) == (
        "jobs.csv row 1, column state: not one of completed, failed, cancelled, preempted, running ('done')"
    )


def test_non_numeric_instance_count(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [HEADER, GOOD.format(n=1).replace(",1,8,", ",two,8,")])
    assert error_of(path) == "jobs.csv row 1, column instance_count: not an integer ('two')"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (",1,8,", ",0,8,", "jobs.csv row 1, column instance_count: must be >= 1 (0)"),
        (",1,8,", ",1,-8,", "jobs.csv row 1, column gpus_per_instance: must be >= 0 (-8)"),
        (",1,8,", ",1.5,8,", "jobs.csv row 1, column instance_count: not an integer ('1.5')"),
        (
            "T05:00:00Z",
            "T25:00:00Z",
            "jobs.csv row 1, column start_time: not a timestamp ('2026-11-03T25:00:00Z')",
        ),
        (
            "on_demand",
            "free",
            "jobs.csv row 1, column pricing_model: not one of on_demand, spot, reserved, savings_plan ('free')",
        ),
        ("j-1,", ",", "jobs.csv row 1, column job_id: job_id is empty"),
        (
            "2026-11-03T06:00:00Z",
            "",
            "jobs.csv row 1, column end_time: end missing for a job that is not running (state completed)",
        ),
    ],
)
def test_row_rules(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = write_csv(tmp_path, [HEADER, GOOD.format(n=1).replace(old, new, 1)])
    assert error_of(path) == message


def test_negative_restart_count(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [HEADER + ",restart_count", GOOD.format(n=1) + ",-1"])
    assert error_of(path) == "jobs.csv row 1, column restart_count: must be >= 0 (-1)"


def test_many_problems_are_counted_and_the_first_few_shown(tmp_path: Path) -> None:
    rows = [GOOD.format(n=n).replace("completed", "done") for n in range(1, 8)]  # 7 bad states
    rows[1] = rows[1].replace(",1,8,", ",x,8,")  # row 2 also has a bad instance_count
    path = write_csv(tmp_path, [HEADER, *rows])
    state_rule = "column state: not one of completed, failed, cancelled, preempted, running ('done')"
    assert error_of(path) == (
        "jobs.csv: 8 problems, first 5:\n"
        f"  jobs.csv row 1, {state_rule}\n"
        f"  jobs.csv row 2, {state_rule}\n"
        "  jobs.csv row 2, column instance_count: not an integer ('x')\n"
        f"  jobs.csv row 3, {state_rule}\n"
        f"  jobs.csv row 4, {state_rule}"
    )


def test_error_is_a_value_error_with_structured_problems(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [HEADER, GOOD.format(n=1), GOOD.format(n=1)])
    with pytest.raises(ValueError) as caught:
        read_job_runs(path)
    err = caught.value
    assert isinstance(err, JobRunError)
    assert (err.file, err.total) == ("jobs.csv", 1)
    assert (err.problems[0].row, err.problems[0].column, err.problems[0].rule) == (
        2,
        "job_id",
        "duplicate job_id",
    )


def test_slurm_bad_rows_name_sacct_fields(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_text(
        "JobID|Partition|Submit|Start|End|State|AllocTRES|NNodes\n"
        "7|p4d|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T01:00:00|EXPLODED|gres/gpu=8|1\n"
        "8|p4d|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T01:00:00|COMPLETED|gres/gpu=8|n/a\n"
        "9|p4d|2026-11-03T00:00:00|2026-11-03T02:00:00|2026-11-03T01:00:00|COMPLETED|gres/gpu=8|1\n"
    )
    assert error_of(path) == (
        "sacct.txt: 3 problems, first 3:\n"
        "  sacct.txt row 1, column State: unknown Slurm job state ('EXPLODED')\n"
        "  sacct.txt row 2, column NNodes: not an integer ('n/a')\n"
        "  sacct.txt row 3, column End: end before start (2026-11-03T01:00:00Z < 2026-11-03T02:00:00Z)"
    )


def test_slurm_missing_field(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_text("JobID|Partition|Submit|Start|End|State|NNodes\n7|p4d||||COMPLETED|1\n")
    assert error_of(path) == "sacct.txt, column AllocTRES: required column missing"


def test_sagemaker_bad_documents_name_fields(tmp_path: Path) -> None:
    docs = json.loads((FIXTURES / "sagemaker-spot.json").read_text())
    del docs[0]["ResourceConfig"]["InstanceCount"]
    docs[1]["TrainingJobStatus"] = "Exploded"
    docs[2]["TrainingJobName"] = docs[0]["TrainingJobName"]
    path = tmp_path / "sm.json"
    path.write_text(json.dumps(docs))
    assert error_of(path) == (
        "sm.json: 3 problems, first 3:\n"
        "  sm.json document 1, field ResourceConfig.InstanceCount: required field missing\n"
        "  sm.json document 2, field TrainingJobStatus: not one of Completed, Failed, Stopped, InProgress,"
        " Stopping ('Exploded')\n"
        "  sm.json document 3, field TrainingJobName: duplicate job_id ('llm-7b-spot-0001' first at document 1)"
    )


def test_broken_json_line(tmp_path: Path) -> None:
    lines = (FIXTURES / "sagemaker-jobs.jsonl").read_text().splitlines()
    lines[3] = lines[3][:40]
    path = tmp_path / "sm.jsonl"
    path.write_text("\n".join(lines))
    assert error_of(path).startswith("sm.jsonl document 4: not valid JSON (")


# --------------------------------------------------------------------------- summary and tables


def test_summarise_slurm_fixture() -> None:
    summary = summarise(read_job_runs(FIXTURES / "sacct.txt", as_of=AS_OF, partition_map=PARTITIONS))
    assert (summary["jobs"], summary["censored"], summary["censored_share"]) == (10, 5, 0.5)
    by_state = summary["gpu_hours_by_state"]
    assert by_state["completed"] == pytest.approx(93784 * 16 / 3600)  # 1001
    # 1002: 24; 1005: 24 h x 8 = 192; 1006: 184 s x 8; 1010_3: 1200 s x 1
    assert by_state["failed"] == pytest.approx(24 + 192 + 184 * 8 / 3600 + 1200 / 3600)
    assert by_state["cancelled"] == pytest.approx(600 * 4 / 3600)  # 1004; 1008 never started
    assert (by_state["preempted"], by_state["running"]) == (pytest.approx(6.0), pytest.approx(56.0))
    assert summary["gpu_hours"] == pytest.approx(sum(by_state.values()))
    assert summary["by_source"] == {"slurm": 10}
    assert summary["jobs_without_duration"] == 0


def test_summarise_counts_running_jobs_without_duration() -> None:
    summary = summarise(read_job_runs(FIXTURES / "jobs.csv"))
    assert summary["jobs_without_duration"] == 1  # j-0004 runs, no as_of
    assert summary["gpu_hours_by_state"]["running"] == 0.0


def test_sagemaker_gpus_come_from_the_reference_catalogue(tmp_path: Path) -> None:
    # ml.g6e.12xlarge: 4 L40S GPUs in reference/data/instances.csv.
    doc = json.loads((FIXTURES / "sagemaker-spot.json").read_text())[1]
    doc["ResourceConfig"] = {"InstanceType": "ml.g6e.12xlarge", "InstanceCount": 2}
    path = tmp_path / "describe.json"
    path.write_text(json.dumps(doc))
    df = read_job_runs(path)
    assert (df["instance_type"][0], df["gpus_per_instance"][0], df["gpu_count"][0]) == ("g6e.12xlarge", 4, 8)
    assert df.attrs["warnings"] == []


def test_ragged_csv_is_a_job_run_error(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [HEADER, GOOD.format(n=1) + ",extra,fields"])
    assert error_of(path) == "jobs.csv: unreadable file (a row has more fields than the header)"
    # a later row with surplus fields: pandas' own tokenizer message, with the line number
    path = write_csv(tmp_path, [HEADER, GOOD.format(n=1), GOOD.format(n=2) + ",extra"])
    assert error_of(path) == (
        "jobs.csv: unreadable file (Error tokenizing data. C error: Expected 9 fields in line 3, saw 10)"
    )


def test_sacct_line_with_missing_fields(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_text(
        "JobID|Partition|Submit|Start|End|State|AllocTRES|NNodes\n"
        "7|p4d|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T01:00:00|COMPLETED|gres/gpu=8\n"
    )
    assert error_of(path) == "sacct.txt row 1: expected 8 fields, found 7"


def test_non_utf8_sacct(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_bytes(b"JobID|Partition|Submit|Start|End|State|AllocTRES|NNodes\n7|p\xe9|\n")
    # header: 55 characters (bytes 0-54) + newline (55); '7' 56, '|' 57, 'p' 58; 0xe9 is byte 59
    assert error_of(path) == "sacct.txt: not UTF-8 text (byte offset 59)"


# --------------------------------------------------------------------------- workload figures


def test_workload_figures_from_each_format(tmp_path: Path) -> None:
    extra = ",model_params,peak_gpu_memory_gib,samples_per_second,phase"
    path = write_csv(
        tmp_path,
        [
            HEADER + extra,
            GOOD.format(n=1) + ",7e9,61.5,3200,Tune",
            GOOD.format(n=2) + ",,,,",  # missing stays missing
        ],
    )
    rows = by_id(read_job_runs(path))
    assert (rows["j-1"]["model_params"], rows["j-1"]["peak_gpu_memory_gib"]) == (7_000_000_000, 61.5)
    assert (rows["j-1"]["samples_per_second"], rows["j-1"]["phase"]) == (3200.0, "tune")
    assert pd.isna(rows["j-2"]["model_params"]) and pd.isna(rows["j-2"]["samples_per_second"])
    assert pd.isna(rows["j-2"]["phase"])

    # Slurm: the Comment convention (sacct has no field for them).
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(
        "JobID|Submit|Start|End|State|Partition|NNodes|AllocTRES|Comment\n"
        "7|2026-11-03T04:00:00|2026-11-03T05:00:00|2026-11-03T06:00:00|COMPLETED|p4d|1|gres/gpu=8|"
        "model=llama8b model_params=8000000000 samples_per_second=2304.5 phase=explore\n"
    )
    job = read_job_runs(sacct, partition_map=PARTITIONS).iloc[0]
    assert (job["model_params"], job["samples_per_second"], job["phase"]) == (
        8_000_000_000,
        2304.5,
        "explore",
    )
    assert pd.isna(job["peak_gpu_memory_gib"])

    # SageMaker: the final metrics (Hugging Face's name too), else tags.
    doc = json.loads((FIXTURES / "sagemaker-spot.json").read_text())[1]
    doc["FinalMetricDataList"] = [{"MetricName": "train_samples_per_second", "Value": 812.25}]
    doc["Tags"] = [
        {"Key": "model_params", "Value": "70000000000"},
        {"Key": "peak_gpu_memory_gib", "Value": "77.5"},
        {"Key": "phase", "Value": "production"},
    ]
    describe = tmp_path / "describe.json"
    describe.write_text(json.dumps(doc))
    job = read_job_runs(describe).iloc[0]
    assert (job["model_params"], job["peak_gpu_memory_gib"]) == (70_000_000_000, 77.5)
    assert (job["samples_per_second"], job["phase"]) == (812.25, "production")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ",phase\n{row},debug",
            "jobs.csv row 1, column phase: not one of explore, tune, production ('debug')",
        ),
        (",samples_per_second\n{row},0", "jobs.csv row 1, column samples_per_second: must be > 0 (0.0)"),
        (",model_params\n{row},7.5e8x", "jobs.csv row 1, column model_params: not an integer ('7.5e8x')"),
    ],
)
def test_bad_workload_figures(tmp_path: Path, extra: str, message: str) -> None:
    header, row = extra.split("\n")
    path = write_csv(tmp_path, [HEADER + header, row.format(row=GOOD.format(n=1))])
    assert error_of(path) == message
