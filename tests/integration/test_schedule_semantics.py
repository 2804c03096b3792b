"""Which day an Airflow run of the ingest works on, what it announces, and what a dry run leaves.

`airflow dags test athanor_ingest 2026-12-01T02:30:00+00:00` runs the DAG with the data
interval the scheduler gives the run that fires at 2026-12-01 02:30 UTC: [11-30 02:30,
12-01 02:30) (tests/unit/test_flow.py checks that with the scheduler's own timetable code at
that clock). The run must process 2026-11-30: every stage recorded for that day, jobs still
running measured to the end of that day, and the `athanor_warehouse` asset event naming it.
The metadata DB lives outside ATHANOR_HOME, so a dry run can be checked file by file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from athanor.demo import fleet as demo
from athanor.demo import storage as demo_storage
from athanor.warehouse import connect
from tests.conftest import airflow_env

pytestmark = pytest.mark.integration

DAY = date(2026, 11, 30)
NIGHT = "2026-12-01T02:30:00+00:00"  # when the nightly run for DAY fires
INGEST = "athanor_ingest"


def _airflow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(["airflow", *args], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"airflow {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(root.rglob("*"))
        if f.is_file()
    }


def metadata(airflow_home: Path, query: str) -> list[tuple]:
    with sqlite3.connect(airflow_home / "airflow.db") as con:
        return con.execute(query).fetchall()


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory):
    """Demo exports as delivered at the end of DAY, and the ingest run of the following night."""
    root = tmp_path_factory.mktemp("night")
    home, airflow_home = root / "athanor", root / "airflow"
    demo.generate_landing(home / "landing", demo.DemoConfig(days=14), as_of=DAY)
    demo_storage.generate_inventory(home / "landing" / "inventory", DAY)
    airflow_home.mkdir()
    env = airflow_env(airflow_home, home)
    env["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "INFO"  # what scripts/airflow-env.sh sets
    _airflow(env, "db", "migrate")
    _airflow(env, "pools", "set", "athanor_duckdb_writer", "1", "DuckDB writer")
    done = _airflow(env, "dags", "test", INGEST, NIGHT)
    return home, airflow_home, env, done.stdout + done.stderr


def test_the_night_of_december_1_processes_november_30(night) -> None:
    home, airflow_home, _, _ = night
    # The run Airflow made: the scheduler's interval for the 12-01 02:30 slot.
    assert metadata(airflow_home, "select data_interval_start, data_interval_end from dag_run") == [
        ("2026-11-30 02:30:00.000000", "2026-12-01 02:30:00.000000")
    ]
    con = connect(home / "warehouse" / "athanor.duckdb", read_only=True)
    try:
        stages = con.execute("select stage, as_of, status from pipeline_runs order by started_at").fetchall()
        running = con.execute(
            "select start_time, duration_s from job_run_facts where state = 'running' order by job_id"
        ).fetchall()
        latest_start = con.execute("select max(start_time) from job_run_facts").fetchone()[0]
    finally:
        con.close()
    assert stages == [("land", DAY, "success"), ("load", DAY, "success"), ("validate", DAY, "success")]
    # Jobs still running were measured to the last moment of 11-30, not of the day the run fired.
    end_of_day = datetime(2026, 11, 30, 23, 59, 59, 999999)
    assert running, "the demo has jobs running at the end of the day"
    for start, duration in running:
        assert duration == pytest.approx((end_of_day - start).total_seconds(), abs=1e-6)
    assert latest_start < end_of_day
    # The asset event names the day: the optimize run it starts builds that day's report.
    assert metadata(airflow_home, "select source_task_id, extra from asset_event") == [
        ("validate", json.dumps({"as_of": DAY.isoformat()}))
    ]


def test_the_task_log_says_what_each_stage_did(night) -> None:
    _, _, _, output = night
    for line in (
        "land: 5 deliveries (5 files) ready and 0 waiting at",
        "focus-2026-11.csv.gz: focus, ",
        "cur2-2026-11-00001.snappy.parquet: cur2, ",
        "2026-11-30T01-00Z/manifest.json: S3 inventory, ",
        "jobs-2026-11.csv: generic job log, ",
        "warehouse updated for 2026-11-30: announcing it",
    ):
        assert line in output, line


def test_a_dry_run_changes_no_file_and_announces_nothing(night) -> None:
    home, airflow_home, env, _ = night
    before = tree_digest(home)
    events = metadata(airflow_home, "select count(*) from asset_event")
    next_night = (datetime.fromisoformat(NIGHT) + timedelta(days=1)).isoformat()
    done = _airflow(env, "dags", "test", INGEST, next_night, "--conf", json.dumps({"dry_run": True}))
    assert tree_digest(home) == before
    assert metadata(airflow_home, "select count(*) from asset_event") == events
    states = metadata(
        airflow_home,
        f"""select task_id, state from task_instance
            where run_id = (select run_id from dag_run where logical_date like '{next_night[:10]}%')
            order by task_id""",
    )
    assert states == [("land", "success"), ("load", "success"), ("validate", "skipped")]
    assert "athanor_warehouse not updated: dry run" in done.stdout + done.stderr
