"""`make demo`'s night in the embedded Airflow leaves nothing for the scheduler: the ingest's
asset event is recorded, but no optimize run is queued for the first `make airflow` to start
(it did, and rewrote the report), and the optimize DAG is left unpaused (issue 30)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from athanor.settings import PROJECT_ROOT
from tests.adversarial.conftest import GCP, JOBS
from tests.conftest import airflow_env

pytestmark = pytest.mark.integration


def test_the_demo_night_queues_no_optimize_run_for_the_scheduler(tmp_path: Path) -> None:
    home, airflow_home = tmp_path / "athanor", tmp_path / "airflow"
    for folder, fixture in (("gcp", GCP), ("jobs", JOBS)):
        (home / "landing" / folder).mkdir(parents=True)
        shutil.copy(fixture, home / "landing" / folder)
    airflow_home.mkdir()
    env = airflow_env(airflow_home, home)
    done = subprocess.run(
        ["bash", str(PROJECT_ROOT / "scripts" / "demo-night.sh"), "2026-11-30"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with sqlite3.connect(airflow_home / "airflow.db") as con:
        events = con.execute("select source_dag_id, source_task_id from asset_event").fetchall()
        queued = con.execute("select target_dag_id from asset_dag_run_queue").fetchall()
        paused = dict(con.execute("select dag_id, is_paused from dag").fetchall())
    assert ("athanor_ingest", "validate") in events  # the ingest still announced the day
    assert queued == []
    assert paused == {"athanor_ingest": 0, "athanor_optimize": 0}
    assert (home / "reports" / "latest" / "report.html").exists()
