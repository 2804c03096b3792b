"""Backfilling `athanor_ingest` over three days: idempotent per partition, and restatement-safe.

Providers restate the whole current month in every delivery, so each day's billing file
replaces the day before's. Two ways of running three consecutive days are checked:

* `airflow dags test` for each day on one landing folder regenerated per day (the demo's
  delivery as of that day). The warehouse must equal the same three days loaded separately
  by the plain pipeline functions in another warehouse (each day run twice there: a re-run
  loads nothing), and its facts must equal a warehouse that only ever saw the last delivery.
* the Airflow 3 backfill (`airflow backfill create`, run by a real scheduler under
  `airflow standalone`). A backfill reads today's landing for every day, so the first day
  loads the deliveries and the later days must find nothing new: the warehouse equals one
  plain run for the first day.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from datetime import date
from pathlib import Path

import pytest

from athanor.demo import fleet as demo
from athanor.demo import storage as demo_storage
from athanor.flow import run_stage
from athanor.settings import Settings
from athanor.warehouse import connect
from tests.conftest import airflow_env
from tests.support.airflow_server import AirflowRunFailed, start_airflow

pytestmark = pytest.mark.integration

DAYS = [date(2026, 11, 28), date(2026, 11, 29), date(2026, 11, 30)]
CONFIG = demo.DemoConfig(days=21)  # window 2026-11-10 .. 2026-11-30: one billing month, restated daily
INGEST = "athanor_ingest"

# What a warehouse holds, table by table, in a fixed order; columns that record where or
# when a load ran (the landing path, wall-clock times) are left out.
CONTENT = {
    "billing_facts": ("select * from billing_facts", "load_id, source_file, source_row"),
    "job_run_facts": ("select * from job_run_facts", "source, job_id"),
    "storage_objects": ("select * from storage_objects", "bucket, key, version_id"),
    "loads": (
        """select load_id, kind, source_format, files, checksum_sha256, size_bytes, row_count,
                  billing_periods, billing_accounts, status, message from loads""",
        "load_id",
    ),
}


def write_delivery(landing: Path, day: date) -> None:
    """The demo's exports as delivered at the end of `day` (files of the same month are overwritten)."""
    demo.generate_landing(landing, CONFIG, as_of=day)
    demo_storage.generate_inventory(landing / "inventory", day)


def content(warehouse: Path, tables: tuple[str, ...] = tuple(CONTENT)) -> dict[str, tuple[int, str]]:
    """Per table: row count and an MD5 over every row, in key order."""
    con = connect(warehouse, read_only=True)
    try:
        out = {}
        for table in tables:
            query, order = CONTENT[table]
            out[table] = con.execute(
                f"select count(*), md5(coalesce(string_agg(t::varchar, '|' order by {order}), '')) from ({query}) t"
            ).fetchone()
        return out
    finally:
        con.close()


def ingest_in_process(home: Path, landing: Path, day: date, run_id: str) -> dict:
    """One day of ingest through the plain pipeline functions (no Airflow), as the form would run it."""
    settings = Settings.from_env(
        {"ATHANOR_HOME": str(home), "ATHANOR_LANDING": str(landing), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"}
    )
    context = {"params": {"as_of": day.isoformat(), "source": None, "dry_run": False}, "run_id": run_id}
    landed = run_stage("land", context, settings=settings)
    loaded = run_stage("load", context, landed, settings=settings)
    run_stage("validate", context, loaded, settings=settings)
    return loaded


def _airflow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(["airflow", *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"airflow {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def deliveries(tmp_path_factory: pytest.TempPathFactory) -> dict[date, Path]:
    """Each day's delivery in a folder of its own."""
    root = tmp_path_factory.mktemp("deliveries")
    for day in DAYS:
        write_delivery(root / day.isoformat(), day)
    return {day: root / day.isoformat() for day in DAYS}


def test_three_days_restate_the_month_like_separate_runs(tmp_path: Path, deliveries) -> None:
    # A: `airflow dags test` day after day, on one landing regenerated with each day's delivery.
    home = tmp_path / "dags_test"
    env = airflow_env(home / ".airflow", home)
    (home / ".airflow").mkdir(parents=True)
    _airflow(env, "db", "migrate")
    _airflow(env, "pools", "set", "athanor_duckdb_writer", "1", "DuckDB writer")
    for day in DAYS:
        write_delivery(home / "landing", day)
        _airflow(env, "dags", "test", INGEST, day.isoformat())
    backfilled = home / "warehouse" / "athanor.duckdb"

    # B: the same days, each from its own delivery folder, run separately (and again) in another warehouse.
    separate = tmp_path / "separate"
    for day in DAYS:
        ingest_in_process(separate, deliveries[day], day, f"first__{day}")
        again = ingest_in_process(separate, deliveries[day], day, f"again__{day}")
        assert again["loaded"] and all("unchanged" in line for line in again["loaded"]), again["loaded"]
    assert content(backfilled) == content(separate / "warehouse" / "athanor.duckdb")

    # C: only the last delivery. Restatement leaves exactly its facts, whatever came before.
    last_only = tmp_path / "last_only"
    ingest_in_process(last_only, deliveries[DAYS[-1]], DAYS[-1], "last_only")
    facts = ("billing_facts", "job_run_facts", "storage_objects")
    assert content(backfilled, facts) == content(last_only / "warehouse" / "athanor.duckdb", facts)

    # The ledger keeps the superseded deliveries as history: one billing load per file per day,
    # the first two days' replaced by the third's (2 files a day: FOCUS and CUR 2.0).
    con = connect(backfilled, read_only=True)
    try:
        statuses = con.execute(
            "select status, count(*) from loads where kind = 'billing' group by status order by status"
        ).fetchall()
        periods = con.execute("select distinct billing_period_start from billing_facts").fetchall()
    finally:
        con.close()
    assert statuses == [("loaded", 2), ("replaced", 4)]
    assert [p.date() for (p,) in periods] == [date(2026, 11, 1)]


def test_airflow_backfill_is_idempotent_per_day(tmp_path: Path, deliveries) -> None:
    home = tmp_path / "standalone"
    shutil.copytree(deliveries[DAYS[-1]], home / "landing")
    env = airflow_env(home / ".airflow", home)
    env["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] = "True"
    server = start_airflow(home / ".airflow", env)
    try:
        dag = server.wait_for_dag(INGEST)
        server.request(
            "POST", "/api/v2/pools", expect=(201,),
            json={"name": "athanor_duckdb_writer", "slots": 1, "description": "DuckDB writer"},
        )  # fmt: skip
        # Unpausing creates a run for the cron slot due now unless one exists: fill it with a dry
        # run (the form's "list, load nothing"), so only the backfill loads.
        dry = server.trigger(
            INGEST, {"as_of": None, "source": None, "dry_run": True}, dag["next_dagrun_logical_date"]
        )
        server.set_paused(INGEST, False)
        server.wait_for_run(INGEST, dry, timeout_s=120)
        after_dry_run = content(home / "warehouse" / "athanor.duckdb", ("billing_facts", "loads"))
        assert {table: rows for table, (rows, _) in after_dry_run.items()} == {"billing_facts": 0, "loads": 0}

        _airflow(
            server.env, "backfill", "create", "--dag-id", INGEST, "--max-active-runs", "1",
            "--from-date", DAYS[0].isoformat(), "--to-date", f"{DAYS[-1].isoformat()}T23:59:59+00:00",
        )  # fmt: skip
        runs = _wait_for_backfill(server, count=len(DAYS), timeout_s=150)
    finally:
        survivors = server.stop()
    assert survivors == []

    assert sorted(r["logical_date"][:10] for r in runs) == [d.isoformat() for d in DAYS]
    warehouse = home / "warehouse" / "athanor.duckdb"
    con = connect(warehouse, read_only=True)
    try:
        recorded = con.execute(
            """select as_of, summary from pipeline_runs
               where stage = 'load' and run_id like 'backfill%' order by as_of"""
        ).fetchall()
        statuses = {s for (s,) in con.execute("select distinct status from loads").fetchall()}
    finally:
        con.close()
    # Each run worked on its own day (from the logical date), and only the first loaded anything.
    assert [as_of for as_of, _ in recorded] == DAYS
    for _, summary in recorded[1:]:
        lines = json.loads(summary)["loaded"]
        assert lines and all("unchanged" in line for line in lines), lines
    assert statuses == {"loaded"}
    reference = tmp_path / "reference"
    ingest_in_process(reference, deliveries[DAYS[-1]], DAYS[0], "reference")
    assert content(warehouse) == content(reference / "warehouse" / "athanor.duckdb")


def _wait_for_backfill(server, count: int, timeout_s: float) -> list[dict]:
    """Wait until `count` backfill runs exist and all succeeded; fail at the first failed one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        runs = [r for r in server.runs(INGEST) if r["run_type"] == "backfill"]
        failed = [r for r in runs if r["state"] == "failed"]
        if failed:
            raise AirflowRunFailed(server.describe_run(INGEST, failed[0]["dag_run_id"]))
        if len(runs) >= count and all(r["state"] == "success" for r in runs):
            return runs
        server.assert_alive()
        time.sleep(1)
    raise AirflowRunFailed(
        f"backfill not done in {timeout_s:.0f} s: {[(r['dag_run_id'], r['state']) for r in runs]}"
    )
