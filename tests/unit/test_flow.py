"""The nightly flow in this process: every stage, in the declared order, on a landing folder made
of the fixture exports (five GCP billing rows of 2023-11, six job runs); which day a run works on
(schedule, form, asset event); what a dry run leaves behind (nothing); when the ingest announces
the warehouse; and the day a report shows."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from datetime import date, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pytest

from athanor import flow
from athanor.settings import Settings
from athanor.warehouse import sql

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


def tree_digest(root: Path) -> dict[str, str]:
    """SHA-256 of every file under `root`, by relative path: any write anywhere shows."""
    return {
        str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(root.rglob("*"))
        if f.is_file()
    }


def ingest(settings: Settings, run: dict) -> dict[str, dict]:
    """The ingest DAG's stages, in order, as its tasks run them; each stage's summary."""
    out: dict[str, dict] = {}
    for stage in flow.stages_of("athanor_ingest"):
        out[stage.name] = flow.run_stage(stage.name, run, *[out[n] for n in stage.inputs], settings=settings)
    return out


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


@pytest.mark.slow
def test_land_lists_each_folder_as_a_delivery(nightly) -> None:
    settings, summaries = nightly
    landing = Path(settings.landing)
    land = dict(summaries["land"])
    started, finished = (datetime.fromisoformat(land.pop(k)) for k in ("started_at", "finished_at"))
    assert started <= finished
    assert land == {
        "source": str(landing),
        "deliveries": [
            {"uri": str(landing / "gcp"), "files": [str(landing / "gcp" / GCP.name)]},
            {"uri": str(landing / "jobs"), "files": [str(landing / "jobs" / JOBS.name)]},
        ],
        "waiting": [],
    }


@pytest.mark.slow
def test_load_loads_both_deliveries_and_records_the_stage(nightly) -> None:
    settings, summaries = nightly
    load = summaries["load"]
    # cost 23.47 + 1.25 + 10 + 6.50 + 2, credits -2 - 7; preempted, running, cancelled: 3 of 6 censored.
    assert untimed(load.pop("loaded")) == [
        "billing-export-202311.jsonl: gcp, 5 rows, billed USD 34.22, periods 2023-11",
        "jobs.csv: generic job log, 6 jobs, 50% censored",
    ]
    assert load == {
        "counts": {"loaded": 2, "unchanged": 0, "empty": 0, "waiting": 0, "rejected": 0},
        "waiting": [],
        "errors": [],
        "quarantined": [],
        "unrecognised": 0,
    }
    assert query(
        settings.warehouse, "select sum(billed_cost)::varchar, count(distinct source_row) from billing_facts"
    ) == [("34.220000000000", 5)]


def test_every_stage_is_recorded_with_its_own_times(nightly) -> None:
    settings, summaries = nightly
    rows = query(
        settings.warehouse,
        "select stage, status, started_at, finished_at, summary from pipeline_runs where run_id = ? order by started_at",
        [RUN["run_id"]],
    )
    # One row per stage, in the order they ran (land's is written by load, which holds the writer slot).
    assert [(stage, status) for stage, status, *_ in rows] == [(s.name, "success") for s in flow.STAGES]
    for (_, _, started, finished, _), (_, _, next_started, _, _) in zip(rows, rows[1:], strict=False):
        assert started <= finished <= next_started
    # Loading and fitting take time: their rows are not instants.
    spans = {stage: finished - started for stage, _, started, finished, _ in rows}
    assert spans["load"] > timedelta(0) and spans["fit_durations"] > timedelta(0)
    recorded = {stage: json.loads(summary) for stage, *_, summary in rows}
    assert recorded["validate"] == summaries["validate"]
    assert recorded["land"]["deliveries"] == summaries["land"]["deliveries"]
    assert recorded["publish"] == summaries["publish"]


def test_validate_sums_up_the_gates_of_this_run(nightly) -> None:
    settings, summaries = nightly
    [(checked, failed)] = query(
        settings.warehouse,
        "select count(*), count(*) filter (where not success) from dq_results where run_id = ?",
        [RUN["run_id"]],
    )
    assert failed == 0 and checked > 0
    # Two deliveries loaded, no report yet for the run's day: the ingest announces the warehouse.
    assert summaries["validate"] == {
        "rules_checked": checked,
        "warnings": 0,
        "loaded": 2,
        "unchanged": 0,
        "rejected": 0,
        "asset_event": {"as_of": None},
    }


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
        "benchmark_first": 0,
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


def test_the_snapshot_holds_the_whole_run_and_is_not_older_than_the_warehouse(nightly) -> None:
    settings, _ = nightly
    # publish's own row goes in before the copy, so analysts see the finished run and
    # `athanor query` does not warn that the warehouse changed after the snapshot.
    in_snapshot = query(
        settings.snapshot, "select stage from pipeline_runs where run_id = ?", [RUN["run_id"]]
    )
    assert sorted(stage for (stage,) in in_snapshot) == sorted(s.name for s in flow.STAGES)
    assert settings.warehouse.stat().st_mtime_ns <= settings.snapshot.stat().st_mtime_ns


@pytest.mark.slow
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
    before = tree_digest(tmp_path)
    summaries = ingest(settings, run)
    landed = summaries["land"]
    assert landed["deliveries"] == [
        {"uri": str(tmp_path / "landing" / "gcp"), "files": ["gcp/billing-export-202311.jsonl"]},
        {"uri": str(tmp_path / "landing" / "jobs"), "files": ["jobs/jobs.csv"]},
    ]
    assert summaries["load"] == {
        "dry_run": True,
        "counts": {"would_load": 2, "unchanged": 0},
        "deliveries": landed["deliveries"],
        "waiting": [],
    }
    assert summaries["validate"] == {"dry_run": True, "asset_event": None, "not_emitted": "dry run"}
    assert not settings.warehouse.exists()
    assert tree_digest(tmp_path) == before


@pytest.mark.slow
def test_a_dry_run_on_a_loaded_warehouse_changes_no_file(tmp_path: Path) -> None:
    landing = landing_of_fixtures(tmp_path)
    settings = settings_for(tmp_path)
    ingest(settings, {"run_id": "night-1", "params": {"as_of": "2023-11-05"}})
    # A new delivery waits in the landing; the dry run lists it and leaves every file as it was.
    (landing / "jobs" / "more-jobs.csv").write_text(JOBS.read_text().replace("j-000", "k-000"))
    before = tree_digest(tmp_path)
    summaries = ingest(settings, {"run_id": "dry-1", "params": {"as_of": "2023-11-06", "dry_run": True}})
    assert tree_digest(tmp_path) == before
    assert [d["files"] for d in summaries["load"]["deliveries"]] == [
        ["gcp/billing-export-202311.jsonl"],
        ["jobs/jobs.csv", "jobs/more-jobs.csv"],
    ]
    assert summaries["validate"]["asset_event"] is None


@pytest.mark.slow
def test_the_ingest_announces_the_warehouse_only_when_the_day_has_news(tmp_path: Path) -> None:
    landing_of_fixtures(tmp_path)
    settings = settings_for(tmp_path)

    def announced(run_id: str, day: str) -> dict | None:
        return ingest(settings, {"run_id": run_id, "params": {"as_of": day}})["validate"]["asset_event"]

    assert announced("r1", "2023-11-05") == {"as_of": "2023-11-05"}  # loaded two deliveries
    # Nothing new, but the day has no report yet (its optimize run may have failed): again.
    assert announced("r2", "2023-11-05") == {"as_of": "2023-11-05"}
    flow.run_stage("publish", {"run_id": "o1", "params": {"as_of": "2023-11-05"}}, settings=settings)
    validate = ingest(settings, {"run_id": "r3", "params": {"as_of": "2023-11-05"}})["validate"]
    assert validate["asset_event"] is None
    assert re.fullmatch(
        r"nothing loaded since the report for 2023-11-05 was published at 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC",
        validate["not_emitted"],
    )
    # Another day without a report (a backfill) is announced; a new delivery is announced too.
    assert announced("r4", "2023-11-06") == {"as_of": "2023-11-06"}
    flow.run_stage("publish", {"run_id": "o2", "params": {"as_of": "2023-11-06"}}, settings=settings)
    (Path(settings.landing) / "jobs" / "more-jobs.csv").write_text(JOBS.read_text().replace("j-000", "k-000"))
    assert announced("r5", "2023-11-06") == {"as_of": "2023-11-06"}


@pytest.mark.slow
def test_latest_only_moves_forward(tmp_path: Path) -> None:
    landing_of_fixtures(tmp_path)
    settings = settings_for(tmp_path)
    ingest(settings, {"run_id": "r1", "params": {}})

    def publish(day: str) -> None:
        flow.run_stage("publish", {"run_id": f"o-{day}", "params": {"as_of": day}}, settings=settings)

    def shown(folder: str) -> str:
        return json.loads((settings.reports / folder / "recommendations.json").read_text())["as_of"]

    publish("2023-11-05")
    publish("2023-11-03")  # a backfill of an earlier day: its own folder, latest stays
    assert shown("latest") == "2023-11-05"
    assert (shown("2023-11-03"), shown("2023-11-05")) == ("2023-11-03", "2023-11-05")
    publish("2023-11-06")
    assert shown("latest") == "2023-11-06"
    publish("2023-11-06")  # the same day again replaces it
    assert shown("latest") == "2023-11-06"
    assert sorted(p.name for p in settings.reports.iterdir()) == [
        "2023-11-03",
        "2023-11-05",
        "2023-11-06",
        "latest",
    ]


@pytest.mark.slow
def test_fits_see_the_jobs_as_known_at_the_end_of_the_day(tmp_path: Path) -> None:
    landing = tmp_path / "landing" / "jobs"
    landing.mkdir(parents=True)
    header = JOBS.read_text().splitlines()[0]
    rows = [  # job, start, end, state
        ("a", "2026-11-01T10:00:00Z", "2026-11-03T10:00:00Z", "completed"),  # ran across the night
        ("b", "2026-11-01T00:00:00Z", "2026-11-01T12:00:00Z", "completed"),
        ("d", "2026-11-01T01:00:00Z", "2026-11-01T07:00:00Z", "completed"),
        ("c", "2026-11-02T12:00:00Z", "2026-11-02T13:00:00Z", "completed"),  # not started on 11-01
    ]
    (landing / "jobs.csv").write_text(
        "\n".join(
            [header]
            + [f"{j},{s},{s},{e},{st},p4d.24xlarge,1,8,on_demand,llm,p,m,600,20,0," for j, s, e, st in rows]
        )
        + "\n"
    )
    settings = settings_for(tmp_path)
    ingest(settings, {"run_id": "r", "params": {"as_of": "2026-11-03"}})
    flow.run_stage(
        "fit_durations", {"run_id": "fit-11-01", "params": {"as_of": "2026-11-01"}}, settings=settings
    )
    flow.run_stage(
        "fit_durations", {"run_id": "fit-11-03", "params": {"as_of": "2026-11-03"}}, settings=settings
    )
    # On 11-01 (to 23:59:59.999999), job a had run 13 h 59 min 59.999999 s and was still running
    # (censored); b and d had finished after 12 h and 6 h; c did not exist yet. By the end of
    # 11-03 all four had finished: 48 h, 12 h, 6 h, 1 h.
    with duckdb.connect(str(settings.warehouse), read_only=True) as con:
        known = con.execute(
            sql("marts/job_durations"),
            {"as_of_end": datetime(2026, 11, 1, 23, 59, 59, 999999), "window_start": None},
        ).fetchall()
    assert [(r[0], r[1], r[2]) for r in known] == [
        ("a", 50399.999999, True),
        ("b", 43200.0, False),
        ("d", 21600.0, False),
    ]
    assert query(
        settings.warehouse,
        "select run_id, as_of, n, censored from duration_fits where group_by = 'all' order by run_id",
    ) == [("fit-11-01", date(2026, 11, 1), 3, 1), ("fit-11-03", date(2026, 11, 3), 4, 0)]


@pytest.mark.slow
def test_a_bad_delivery_is_quarantined_and_the_load_goes_on(tmp_path: Path) -> None:
    landing = landing_of_fixtures(tmp_path)
    rows = [json.loads(line) for line in GCP.read_text().splitlines()]
    rows[2]["cost"] = "ten"
    (landing / "gcp" / GCP.name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    settings = settings_for(tmp_path)
    run = {"run_id": "manual-bad", "params": {}}
    landed = flow.run_stage("land", run, settings=settings)
    # Held back, not stopping the night (issue 30): the load succeeds and names it.
    (error,) = flow.run_stage("load", run, landed, settings=settings)["errors"]
    assert error.startswith("billing-export-202311.jsonl row 3, column cost")
    # The bills went to quarantine; the job log of the same night loaded.
    assert not (landing / "gcp" / GCP.name).exists()
    assert (settings.quarantine / "manual-bad" / GCP.name / GCP.name).is_file()
    recorded = query(
        settings.warehouse,
        "select stage, status, summary from pipeline_runs where run_id = 'manual-bad' order by started_at",
    )
    assert [(stage, status) for stage, status, _ in recorded] == [("land", "success"), ("load", "success")]
    summary = json.loads(recorded[1][2])
    assert summary["errors"] == [error]
    assert untimed(summary["loaded"]) == ["jobs.csv: generic job log, 6 jobs, 50% censored"]
    assert summary["quarantined"] == [str(settings.quarantine / "manual-bad" / GCP.name)]
    # The ledger says what happened to it, as the docs name it; the parse failure is a rule result.
    assert query(settings.warehouse, "select files, status from loads where kind = 'billing'") == [
        ([GCP.name], "quarantined")
    ]
    assert query(
        settings.warehouse,
        """select suite, rule, column_name, severity, success, observed_value, unexpected_count,
                  examples, files from dq_results where rule = 'parse'""",
    ) == [
        (
            "billing_facts",
            "parse",
            "cost",
            "error",
            False,
            "not a decimal number",
            1,
            ["row 3: '\"ten\"'"],
            [GCP.name],
        )
    ]


def test_a_job_log_that_cannot_be_read_is_a_parse_result(tmp_path: Path) -> None:
    landing = landing_of_fixtures(tmp_path)
    (landing / "gcp" / GCP.name).unlink()
    text = JOBS.read_text().replace("2026-11-03T01:40:00Z", "yesterday-ish")
    (landing / "jobs" / JOBS.name).write_text(text)
    settings = settings_for(tmp_path)
    run = {"run_id": "bad-jobs", "params": {}}
    loaded = flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    assert "jobs.csv row 1, column end_time" in loaded["errors"][0]
    assert query(
        settings.warehouse,
        """select suite, rule, column_name, observed_value, unexpected_count, examples, files
           from dq_results where run_id = 'bad-jobs'""",
    ) == [
        (
            "job_run_facts",
            "parse",
            "end_time",
            "not a timestamp",
            2,
            [
                "row 1, column end_time: not a timestamp ('yesterday-ish')",
                "row 1, column end_time: end missing for a job that is not running (state completed)",
            ],
            [JOBS.name],
        )
    ]
    assert query(settings.warehouse, "select status from loads") == [("quarantined",)]


def test_the_day_a_run_works_on() -> None:
    # The form wins.
    assert flow.as_of_from(
        {"params": {"as_of": "2026-11-30"}, "logical_date": datetime(2026, 12, 1, 2, 30)}
    ) == date(2026, 11, 30)
    # The nightly run of 2026-12-01 02:30: data interval [11-30 02:30, 12-01 02:30), logical date
    # its start (a data-interval timetable): it covers 11-30, whichever date a caller reads.
    night = {
        "params": {},
        "logical_date": datetime(2026, 11, 30, 2, 30),
        "data_interval_start": datetime(2026, 11, 30, 2, 30),
        "data_interval_end": datetime(2026, 12, 1, 2, 30),
    }
    assert flow.as_of_from(night) == date(2026, 11, 30)
    # `airflow dags test DAG 2026-12-01T02:30` infers the same interval with logical date 12-01.
    assert flow.as_of_from({**night, "logical_date": datetime(2026, 12, 1, 2, 30)}) == date(2026, 11, 30)
    # An interval ending at midnight covers the day before it.
    assert flow.as_of_from(
        {"data_interval_start": "2026-11-30T00:00:00+00:00", "data_interval_end": "2026-12-01T00:00:00+00:00"}
    ) == date(2026, 11, 30)
    # No interval (a manual run of an asset-scheduled DAG: start == end): the logical date's day.
    instant = datetime(2026, 11, 30, 0, 0)
    assert flow.as_of_from(
        {"logical_date": instant, "data_interval_start": instant, "data_interval_end": instant}
    ) == date(2026, 11, 30)
    assert flow.as_of_from({"logical_date": "2026-12-01T02:30:00+00:00"}) == date(2026, 12, 1)
    assert flow.as_of_from({"params": {"as_of": None}}) is None
    assert flow.run_id_from({"run_id": "r-7"}) == "r-7"
    assert flow.run_id_from({}).startswith("manual__")


def test_an_asset_triggered_run_works_on_the_day_its_event_names() -> None:
    def event(day: str | None) -> SimpleNamespace:
        return SimpleNamespace(extra={"as_of": day} if day else {})

    # Airflow gives asset-triggered runs an interval spanning the events' times: never the day.
    late = {
        "data_interval_start": datetime(2026, 12, 3, 17, 0),
        "data_interval_end": datetime(2026, 12, 3, 18, 0),
    }
    assert flow.as_of_from({**late, "triggering_asset_events": {"warehouse": [event("2026-11-15")]}}) == date(
        2026, 11, 15
    )
    # Several days' events merged into one run: the newest day.
    merged = {"warehouse": [event("2026-11-28"), event("2026-11-30"), event("2026-11-29")]}
    assert flow.as_of_from({**late, "triggering_asset_events": merged}) == date(2026, 11, 30)
    # An event without a day (from an older ingest): the latest day in the warehouse.
    assert flow.as_of_from({**late, "triggering_asset_events": {"warehouse": [event(None)]}}) is None
    # The form still wins.
    assert flow.as_of_from({"params": {"as_of": "2026-11-01"}, "triggering_asset_events": merged}) == date(
        2026, 11, 1
    )
    # Events as plain mappings (a serialized context) read the same.
    assert flow.as_of_from({"triggering_asset_events": {"w": [{"extra": {"as_of": "2026-11-02"}}]}}) == date(
        2026, 11, 2
    )


def test_the_scheduler_runs_the_night_of_december_1_for_november_30(monkeypatch) -> None:
    """The scheduler's own arithmetic (the serialized DAG's timetable, clock at 2026-12-01 02:30)."""
    import pendulum
    from airflow.dag_processing.dagbag import DagBag
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.timetables import interval
    from airflow.timetables.base import TimeRestriction

    from athanor.settings import PROJECT_ROOT

    dag = DagBag(dag_folder=str(PROJECT_ROOT / "dags" / "athanor_ingest.py")).dags["athanor_ingest"]
    timetable = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag)).timetable
    monkeypatch.setattr(interval, "utcnow", lambda: pendulum.datetime(2026, 12, 1, 2, 30, 5))
    info = timetable.next_dagrun_info(
        last_automated_data_interval=None,
        restriction=TimeRestriction(earliest=dag.start_date, latest=None, catchup=dag.catchup),
    )
    assert info.run_after == pendulum.datetime(2026, 12, 1, 2, 30)
    context = {
        "logical_date": info.logical_date,
        "data_interval_start": info.data_interval.start,
        "data_interval_end": info.data_interval.end,
        "params": {"as_of": None, "source": None, "dry_run": False},
    }
    assert flow.as_of_from(context) == date(2026, 11, 30)


@pytest.mark.slow
def test_the_task_announces_its_day_or_ends_skipped(tmp_path: Path, monkeypatch) -> None:
    """The DAG's task wrapper: the asset event carries the day; no news means no event."""
    from airflow.sdk.exceptions import AirflowSkipException

    from athanor_common import ASSETS, REPORT_ASSET, WAREHOUSE_ASSET, run_stage

    landing_of_fixtures(tmp_path)
    for key, value in {"ATHANOR_HOME": str(tmp_path), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"}.items():
        monkeypatch.setenv(key, value)

    def task_run(stage: str, run_id: str, params: dict, *inputs: dict) -> tuple[dict, SimpleNamespace]:
        outlets = {asset: SimpleNamespace(extra={}) for asset in ASSETS.values()}
        context = {"run_id": run_id, "params": params, "outlet_events": outlets}
        summary = run_stage(stage, context, *inputs)
        return summary, outlets[WAREHOUSE_ASSET] if stage == "validate" else outlets[REPORT_ASSET]

    def nightly(run_id: str, params: dict) -> tuple[dict, SimpleNamespace]:
        landed, _ = task_run("land", run_id, params)
        loaded, _ = task_run("load", run_id, params, landed)
        return task_run("validate", run_id, params, loaded)

    _, outlet = nightly("r1", {"as_of": "2023-11-05"})
    assert outlet.extra == {"as_of": "2023-11-05"}
    with pytest.raises(AirflowSkipException, match="^athanor_warehouse not updated: dry run$"):
        nightly("dry", {"as_of": "2023-11-05", "dry_run": True})
    _, report = task_run("publish", "o1", {"as_of": "2023-11-05"})
    assert report.extra == {"as_of": "2023-11-05"}
    with pytest.raises(AirflowSkipException, match="^athanor_warehouse not updated: nothing loaded since"):
        nightly("r2", {"as_of": "2023-11-05"})


def test_stages_of_each_dag_in_flow_order() -> None:
    assert [s.name for s in flow.stages_of("athanor_ingest")] == ["land", "load", "validate"]
    assert [s.name for s in flow.stages_of("athanor_optimize")] == [
        "fit_durations",
        "recommend_lifecycle",
        "measure_gpus",
        "allocate_gpus",
        "recommend_gpus",
        "watch_spend",
        "recommend_mix",
        "compose_plan",
        "publish",
    ]


def test_the_dag_files_import_no_data_library_at_parse_time() -> None:
    """The scheduler parses the DAG files often: the libraries the stages use load in the tasks."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    heavy = ["pyarrow", "pandas", "numpy", "scipy", "great_expectations", "pyiceberg", "statsmodels"]
    script = (
        "import sys, athanor_ingest, athanor_optimize; "
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": f"{root / 'include'}:{root / 'dags'}"}
    loaded = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == ""
