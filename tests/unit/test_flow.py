"""The nightly flow in this process: every stage, in the declared order, on a landing folder made
of the fixture exports (five GCP billing rows of 2023-11, six job runs)."""

from __future__ import annotations

import json
import re
import shutil
from datetime import date, datetime
from pathlib import Path

import duckdb
import pytest

from athanor import flow
from athanor.errors import DataRejected
from athanor.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GCP = FIXTURES / "billing" / "gcp" / "billing-export-202311.jsonl"
JOBS = FIXTURES / "jobs" / "jobs.csv"
RUN = {"run_id": "scheduled__2023-11-05T02:30:00+00:00", "params": {}}


def settings_for(home: Path, **env: str) -> Settings:
    return Settings.from_env({"ATHANOR_HOME": str(home), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB", **env})


def landing_of_fixtures(home: Path) -> Path:
    landing = home / "landing"
    (landing / "gcp").mkdir(parents=True)
    (landing / "jobs").mkdir()
    shutil.copy(GCP, landing / "gcp")
    shutil.copy(JOBS, landing / "jobs")
    return landing


def untimed(lines: list[str]) -> list[str]:
    return [re.sub(r" \[\d+\.\ds\]$", "", line) for line in lines]


@pytest.fixture(scope="module")
def nightly(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, dict[str, dict]]:
    """The whole flow, run once: the settings and each stage's summary."""
    home = tmp_path_factory.mktemp("home")
    landing_of_fixtures(home)
    settings = settings_for(home)
    summaries: dict[str, dict] = {}
    for stage in flow.STAGES:
        inputs = [summaries[name] for name in stage.inputs]
        summaries[stage.name] = flow.run_stage(stage.name, RUN, *inputs, settings=settings)
    return settings, summaries


def query(path: Path, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def test_land_lists_each_folder_as_a_delivery(nightly) -> None:
    settings, summaries = nightly
    landing = Path(settings.landing)
    assert summaries["land"] == {
        "source": str(landing),
        "deliveries": [
            {"uri": str(landing / "gcp"), "files": [str(landing / "gcp" / GCP.name)]},
            {"uri": str(landing / "jobs"), "files": [str(landing / "jobs" / JOBS.name)]},
        ],
        "waiting": [],
    }


def test_load_loads_both_deliveries_and_records_the_stage(nightly) -> None:
    settings, summaries = nightly
    load = summaries["load"]
    # cost 23.47 + 1.25 + 10 + 6.50 + 2, credits -2 - 7; preempted, running, cancelled: 3 of 6 censored.
    assert untimed(load.pop("loaded")) == [
        "billing-export-202311.jsonl: gcp, 5 rows, billed USD 34.22, periods 2023-11",
        "jobs.csv: generic job log, 6 jobs, 50% censored",
    ]
    assert load == {"waiting": [], "errors": [], "quarantined": []}
    assert query(
        settings.warehouse, "select sum(billed_cost)::varchar, count(distinct source_row) from billing_facts"
    ) == [("34.220000000000", 5)]
    assert query(settings.warehouse, "select run_id, stage, status from pipeline_runs") == [
        (RUN["run_id"], "load", "success")
    ]


def test_validate_sums_up_the_gates_of_this_run(nightly) -> None:
    settings, summaries = nightly
    [(checked, failed)] = query(
        settings.warehouse,
        "select count(*), count(*) filter (where not success) from dq_results where run_id = ?",
        [RUN["run_id"]],
    )
    assert failed == 0 and checked > 0
    assert summaries["validate"] == {"rules_checked": checked, "warnings": 0, "loaded": 2}


def test_fit_durations_fits_the_runs_that_have_a_duration(nightly) -> None:
    settings, summaries = nightly
    # Started runs with an end: j-0001 and j-0002 (llm, the preempted one censored), j-0003 (vision),
    # j-0006 (research). j-0004 is still running (no as_of given) and j-0005 never started.
    assert query(
        settings.warehouse, "select group_by, group_key, n, censored from duration_fits order by all"
    ) == [
        ("all", "all", 4, 1),
        ("team", "team=llm", 2, 1),
        ("team", "team=research", 1, 0),
        ("team", "team=vision", 1, 0),
    ]
    # 2023 bills and 2026 job runs: none of the GPU spend is explained by a job run.
    assert summaries["fit_durations"] == {
        "groups": 4,
        "drift": {},
        "gpu_spend_explained_by_job_runs": {"USD": 0.0},
    }


def test_recommendations_on_a_gcp_fleet_without_buckets(nightly) -> None:
    _, summaries = nightly
    # The GCP bill's A100 hour (a2-highgpu-1g: 1 GPU in the instance catalogue) is a pool to plan.
    assert summaries["recommend_mix"]["pools"] == 1
    assert summaries["recommend_lifecycle"] == {"buckets": 0, "note": "no storage inventory loaded"}
    # The job runs are of 2026, the bills of 2023: no run in the 90 days the GPU plan reads.
    assert summaries["recommend_gpus"] == {
        "classes": 0,
        "moves": 0,
        "estimated_monthly_savings_amount": 0,
        "deadline_slack": 1.5,
        "skipped": [],
    }


def test_publish_writes_the_report_for_the_latest_billed_day(nightly) -> None:
    settings, summaries = nightly
    # No as_of in the run: the latest usage in the bills, 2023-11-05 10:00 UTC.
    assert summaries["publish"] == {
        "report": str(settings.reports / "2023-11-05" / "report.html"),
        "snapshot": str(settings.snapshot),
        "as_of": "2023-11-05",
    }
    assert Path(summaries["publish"]["report"]).is_file()
    # The analysts' copy holds the five bill rows and the two credits GCP nests in them.
    assert query(settings.snapshot, "select count(*) from billing_facts") == [(7,)]


def test_a_report_bucket_without_a_connection_is_refused(nightly) -> None:
    settings, _ = nightly
    with_bucket = settings_for(settings.home, ATHANOR_REPORT_BUCKET="s3://reports/athanor")
    with pytest.raises(
        ValueError, match=r"^ATHANOR_REPORT_BUCKET=s3://reports/athanor needs a bucket connection$"
    ):
        flow.run_stage("publish", RUN, settings=with_bucket)


def test_dry_run_lists_and_loads_nothing(tmp_path: Path) -> None:
    landing_of_fixtures(tmp_path)
    settings = settings_for(tmp_path)
    run = {"run_id": "manual-dry", "params": {"dry_run": True}}
    landed = flow.run_stage("land", run, settings=settings)
    assert landed["deliveries"] == [
        {"uri": str(tmp_path / "landing" / "gcp"), "files": ["gcp/billing-export-202311.jsonl"]},
        {"uri": str(tmp_path / "landing" / "jobs"), "files": ["jobs/jobs.csv"]},
    ]
    assert flow.run_stage("load", run, landed, settings=settings) == {
        "dry_run": True,
        "deliveries": landed["deliveries"],
        "waiting": [],
    }
    assert not settings.warehouse.exists()


def test_a_bad_delivery_is_quarantined_and_fails_the_load(tmp_path: Path) -> None:
    landing = landing_of_fixtures(tmp_path)
    rows = [json.loads(line) for line in GCP.read_text().splitlines()]
    rows[2]["cost"] = "ten"
    (landing / "gcp" / GCP.name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    settings = settings_for(tmp_path)
    run = {"run_id": "manual-bad", "params": {}}
    landed = flow.run_stage("land", run, settings=settings)
    with pytest.raises(
        DataRejected, match=r"^1 delivery rejected \(moved to quarantine\): billing-export-202311\.jsonl"
    ):
        flow.run_stage("load", run, landed, settings=settings)
    # The bills went to quarantine; the job log of the same night loaded.
    assert not (landing / "gcp" / GCP.name).exists()
    assert (settings.quarantine / "manual-bad" / GCP.name / GCP.name).is_file()
    [(status, summary)] = query(
        settings.warehouse, "select status, summary from pipeline_runs where run_id = 'manual-bad'"
    )
    summary = json.loads(summary)
    assert status == "failed"
    assert untimed(summary["loaded"]) == ["jobs.csv: generic job log, 6 jobs, 50% censored"]
    assert summary["quarantined"] == [str(settings.quarantine / "manual-bad" / GCP.name)]


def test_the_day_a_run_works_on() -> None:
    assert flow.as_of_from(
        {"params": {"as_of": "2026-11-30"}, "logical_date": datetime(2026, 12, 1, 2, 30)}
    ) == date(2026, 11, 30)
    assert flow.as_of_from({"params": {}, "logical_date": datetime(2026, 12, 1, 2, 30)}) == date(2026, 12, 1)
    assert flow.as_of_from({"logical_date": "2026-12-01T02:30:00+00:00"}) == date(2026, 12, 1)
    assert flow.as_of_from({"params": {"as_of": None}}) is None  # asset-triggered: the latest day
    assert flow.run_id_from({"run_id": "r-7"}) == "r-7"
    assert flow.run_id_from({}).startswith("manual__")


def test_stages_of_each_dag_in_flow_order() -> None:
    assert [s.name for s in flow.stages_of("athanor_ingest")] == ["land", "load", "validate"]
    assert [s.name for s in flow.stages_of("athanor_optimize")] == [
        "fit_durations",
        "recommend_mix",
        "recommend_lifecycle",
        "recommend_gpus",
        "publish",
    ]
