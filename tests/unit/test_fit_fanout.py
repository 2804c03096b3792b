"""The duration fits as Airflow spreads them (plan -> one task per group -> gather) store the same
rows as `athanor run`'s one-process stage, whatever order the groups finish in.

The job log: team `big` 150 jobs, team `mid` 120, team `tiny` 30 (fewer than the 100 a group
needs to stand alone, so it borrows the fit of all 300 jobs).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pytest

from athanor import flow
from athanor.model import nightly as fits
from athanor.model.durations import fit_groups
from athanor.settings import Settings

HEADER = (
    "job_id,submit_time,start_time,end_time,state,instance_type,instance_count,gpus_per_instance,"
    "pricing_model,team,project,model,checkpoint_interval_s,checkpoint_time_s,restart_count,notes"
)
TEAMS = {"big": (150, 3.0), "mid": (120, 1.0), "tiny": (30, 6.0)}  # jobs, median hours
DAY = {"as_of": "2026-11-30"}


def _job_log(path: Path) -> None:
    rng = np.random.default_rng(7)
    lines = [HEADER]
    start = datetime(2026, 11, 1)
    for team, (n, median_h) in TEAMS.items():
        hours = rng.lognormal(np.log(median_h), 0.8, n)
        for i, h in enumerate(hours):
            begin = start + timedelta(hours=int(i * 4))
            end = begin + timedelta(seconds=round(float(h) * 3600))
            state = "preempted" if i % 9 == 0 else "completed"
            lines.append(
                f"{team}-{i:03d},{begin:%Y-%m-%dT%H:%M:%SZ},{begin:%Y-%m-%dT%H:%M:%SZ},"
                f"{end:%Y-%m-%dT%H:%M:%SZ},{state},p4d.24xlarge,1,8,on_demand,{team},p,m,600,20,0,"
            )
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse holding the job log (and nothing else), to copy per test."""
    home = tmp_path_factory.mktemp("fanout")
    _job_log(home / "landing" / "jobs" / "jobs.csv")
    settings = Settings.from_env({"ATHANOR_HOME": str(home), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"})
    run = {"run_id": "ingest", "params": DAY}
    landed = flow.run_stage("land", run, settings=settings)
    flow.run_stage("load", run, landed, settings=settings)
    return settings.warehouse


def _settings(tmp_path: Path, warehouse: Path) -> Settings:
    settings = Settings.from_env({"ATHANOR_HOME": str(tmp_path), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"})
    settings.warehouse.parent.mkdir(parents=True, exist_ok=True)
    settings.warehouse.write_bytes(warehouse.read_bytes())
    return settings


def _fanned(settings: Settings, run_id: str, *, reverse: bool) -> tuple[dict, dict]:
    """plan -> each -> gather as the DAG's tasks call them, results through JSON like XComs."""
    run = {"run_id": run_id, "params": DAY}
    planned = flow.run_stage("fit_durations", run, settings=settings, part="plan")
    planned = json.loads(json.dumps(planned))
    items = list(reversed(planned["items"])) if reverse else planned["items"]
    results = [
        json.loads(
            json.dumps(flow.run_stage("fit_durations", run, planned, item, settings=settings, part="each"))
        )
        for item in items
    ]
    summary = flow.run_stage("fit_durations", run, planned, results, settings=settings, part="gather")
    return planned, summary


def _fits(warehouse: Path, run_id: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(
            """select * exclude (run_id) from duration_fits where run_id = ?
               order by group_by, group_key""",
            [run_id],
        ).fetchall()


@pytest.mark.slow
def test_plan_names_each_group_that_stands_alone_once(loaded: Path, tmp_path: Path) -> None:
    settings = _settings(tmp_path, loaded)
    planned, _ = _fanned(settings, "fanned", reverse=False)
    # "all" is fitted once (the whole fleet, and the ancestor tiny borrows from).
    assert planned["items"] == ["all", "team=big", "team=mid"]
    assert planned["group_by"] == ["team"]


@pytest.mark.slow
def test_fanned_out_fits_store_what_the_one_process_stage_stores(loaded: Path, tmp_path: Path) -> None:
    settings = _settings(tmp_path, loaded)
    flow.run_stage("fit_durations", {"run_id": "one-process", "params": DAY}, settings=settings)
    planned, summary = _fanned(settings, "fanned", reverse=True)

    alone = _fits(settings.warehouse, "one-process")
    assert _fits(settings.warehouse, "fanned") == alone
    # all + three teams; tiny's 30 jobs borrow the fit of all 300.
    assert [(row[1], row[2], row[3]) for row in alone] == [
        ("all", "all", 300),
        ("team", "team=big", 150),
        ("team", "team=mid", 120),
        ("team", "team=tiny", 30),
    ]
    records = {row[2]: json.loads(row[17]) for row in alone}  # record: 020_model_outputs.sql's last
    assert records["team=tiny"]["borrowed_from"] == "all"
    assert records["team=tiny"]["family"] == records["all"]["family"]
    assert summary["groups"] == 4
    # The jobs file the fit tasks shared is gone once the fits are stored.
    assert not Path(planned["folder"]).exists()
    # One pipeline_runs row for the stage, from plan's start to gather's end.
    with duckdb.connect(str(settings.warehouse), read_only=True) as con:
        started, finished = con.execute(
            "select started_at, finished_at from pipeline_runs where run_id = 'fanned' and stage = 'fit_durations'"
        ).fetchone()
    assert started == datetime.fromisoformat(planned["started_at"]) < finished


@pytest.mark.slow
def test_the_same_fits_as_fitting_each_level_whole(loaded: Path) -> None:
    """What the stage stored before it was split: fit_groups over all jobs, then over teams."""
    with duckdb.connect(str(loaded), read_only=True) as con:
        frame = fits.read_jobs(con, datetime(2026, 11, 30).date())
    records = {label: fits.fit(frame, ["team"], label) for label in reversed(fits.plan(frame, ["team"]))}
    stored = fits.assemble(frame, ["team"], records)
    before = [("all", f.to_record()) for f in fit_groups(frame, [])]
    before += [("team", f.to_record()) for f in fit_groups(frame, ["team"])]
    assert json.loads(json.dumps(stored)) == json.loads(json.dumps(before))


def test_a_fit_missing_from_gather_fails_naming_the_group(loaded: Path, tmp_path: Path) -> None:
    settings = _settings(tmp_path, loaded)
    run = {"run_id": "lost", "params": DAY}
    planned = flow.run_stage("fit_durations", run, settings=settings, part="plan")
    results = [flow.run_stage("fit_durations", run, planned, "all", settings=settings, part="each")]
    with pytest.raises(ValueError, match=r"no fit for the planned group\(s\) team=big, team=mid"):
        flow.run_stage("fit_durations", run, planned, results, settings=settings, part="gather")
    assert _fits(settings.warehouse, "lost") == []


def test_a_night_without_jobs_plans_nothing_and_stores_nothing(tmp_path: Path) -> None:
    settings = Settings.from_env({"ATHANOR_HOME": str(tmp_path), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"})
    from athanor.warehouse import connect

    connect(settings.warehouse).close()  # migrated, empty
    run = {"run_id": "empty", "params": DAY}
    planned = flow.run_stage("fit_durations", run, settings=settings, part="plan")
    assert planned["items"] == []
    assert flow.run_stage("fit_durations", run, planned, [], settings=settings, part="gather") == {
        "groups": 0
    }
    assert not Path(planned["folder"]).exists()
