"""Backfilling `athanor_ingest` over three days: idempotent per partition, and restatement-safe.

Providers restate the whole current month in every delivery, so each day's billing file
replaces the day before's. Two ways of running three consecutive days are checked:

* `airflow dags test` for each day's nightly run (the one firing at 02:30 UTC the next day)
  on one landing folder regenerated per day (the demo's delivery as of that day). The
  warehouse must equal the same three days loaded separately by the plain pipeline functions
  in another warehouse (each day run twice there: a re-run loads nothing), and its facts must
  equal a warehouse that only ever saw the last delivery.
* the Airflow 3 backfill (`airflow backfill create`, run by a real scheduler under
  `airflow standalone`), with `athanor_optimize` following the asset. A backfill reads today's
  landing for every day, so the first day loads the deliveries and the later days must find
  nothing new: the warehouse equals one plain run for the first day. Each day still has no
  report, so each ingest run announces its day and the optimize runs leave three dated
  reports, each for its own day, with `latest` on the newest.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from datetime import date, timedelta
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
INGEST, OPTIMIZE = "athanor_ingest", "athanor_optimize"

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
        _airflow(env, "dags", "test", INGEST, f"{day + timedelta(days=1)}T02:30:00+00:00")
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
        server.set_paused(OPTIMIZE, False)  # before any asset event, so it is queued for this DAG
        server.set_paused(INGEST, False)
        server.wait_for_run(INGEST, dry, timeout_s=120)
        # The dry run wrote nothing (not even an empty warehouse) and announced nothing.
        assert not (home / "warehouse").exists()
        assert server.task_states(INGEST, dry)["validate"] == "skipped"

        _create_backfill(
            server, DAYS[0].isoformat() + "T00:00:00+00:00", f"{DAYS[-1].isoformat()}T23:59:59+00:00"
        )
        runs, optimized = _wait_for_runs(server, count=len(DAYS))
    finally:
        survivors = server.stop()
    assert survivors == []
    assert [r["run_type"] for r in server_runs_of(optimized)] == ["asset_triggered"] * len(DAYS)

    # Three dated reports, each for its own day, and latest on the newest.
    reports = home / "reports"

    def day_shown(folder: str) -> str:
        return json.loads((reports / folder / "recommendations.json").read_text())["as_of"]

    assert sorted(p.name for p in reports.iterdir() if not p.name.startswith(".")) == [
        *(d.isoformat() for d in DAYS),
        "latest",
    ]
    assert [day_shown(d.isoformat()) for d in DAYS] == [d.isoformat() for d in DAYS]
    assert day_shown("latest") == DAYS[-1].isoformat()

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


def _create_backfill(server, from_date: str, to_date: str) -> None:
    """`airflow backfill create` as the UI does it, through the api-server.

    The CLI writes the SQLite metadata DB from a process of its own and, with the scheduler busy
    (optimize runs under way), met "database is locked"; a locked write through the API is retried.
    """
    body = {"dag_id": INGEST, "from_date": from_date, "to_date": to_date, "max_active_runs": 1}
    headers = {"Authorization": f"Bearer {server.token}"}
    for attempt in range(5):
        response = server.client.post(f"{server.url}/api/v2/backfills", json=body, headers=headers)
        if response.status_code == 200:
            return
        # Airflow answers a locked SQLite with 500, or with 503 where it names the lock itself.
        assert response.status_code in (500, 503) and "locked" in response.text, response.text[:2000]
        time.sleep(2 * (attempt + 1))
    raise AssertionError("POST /api/v2/backfills: the metadata DB stayed locked")


def server_runs_of(runs: list[dict]) -> list[dict]:
    return sorted(runs, key=lambda r: r["run_after"])


# The runs go one after the other (each DAG has max_active_runs=1, the backfill too, and every
# writer holds the one-slot DuckDB pool): ingest day 1, its optimize, ingest day 2, ... On a busy
# 2-core machine the six runs took more than 600 s, so the wait is on progress, not on a fixed
# deadline: it fails when no task of either DAG has changed state or written to its log for
# STALL_S, or after CAP_S.
STALL_S = 600
CAP_S = 3600


def _progress(server, runs: dict[str, list[dict]]) -> tuple:
    """What moves while the runs work: every run's state, the task states of those not finished and
    how much the task logs hold."""
    seen = []
    for dag_id, dag_runs in runs.items():
        for r in dag_runs:
            tasks: tuple = ()
            if r["state"] not in ("success", "failed"):
                body = server.request(
                    "GET",
                    f"/api/v2/dags/{dag_id}/dagRuns/{r['dag_run_id']}/taskInstances",
                    params={"limit": 100},
                )
                tasks = tuple(
                    sorted(
                        (t["task_id"], t.get("map_index", -1), str(t["state"]))
                        for t in body["task_instances"]
                    )
                )
            seen.append((dag_id, r["dag_run_id"], r["state"], tasks))
    # A long task changes no state, but its log grows (the stages log what they read and wrote).
    logs = server.home / "logs"
    written = sum(f.stat().st_size for f in logs.rglob("*.log")) if logs.is_dir() else 0
    return (written, *sorted(seen))


def _wait_for_runs(
    server, count: int, stall_s: float = STALL_S, cap_s: float = CAP_S
) -> tuple[list[dict], list[dict]]:
    """Wait until `count` backfill runs of the ingest and `count` optimize runs all succeeded; fail at
    the first failed one, when nothing moved for `stall_s`, or after `cap_s`."""
    started = last_move = time.monotonic()
    last: tuple = ()
    while True:
        runs = {
            INGEST: [r for r in server.runs(INGEST) if r["run_type"] == "backfill"],
            OPTIMIZE: server.runs(OPTIMIZE),
        }
        for dag_id, dag_runs in runs.items():
            failed = [r for r in dag_runs if r["state"] == "failed"]
            if failed:
                raise AirflowRunFailed(server.describe_run(dag_id, failed[0]["dag_run_id"]))
        if all(
            len(dag_runs) >= count and all(r["state"] == "success" for r in dag_runs)
            for dag_runs in runs.values()
        ):
            return runs[INGEST], runs[OPTIMIZE]
        now = time.monotonic()
        progress = _progress(server, runs)
        if progress != last:
            last, last_move = progress, now
        states = {
            dag_id: [(r["dag_run_id"], r["state"]) for r in dag_runs] for dag_id, dag_runs in runs.items()
        }
        if now - last_move > stall_s or now - started > cap_s:
            why = (
                f"nothing moved for {now - last_move:.0f} s"
                if now - last_move > stall_s
                else f"not done in {cap_s:.0f} s"
            )
            raise AirflowRunFailed(f"{why} ({now - started:.0f} s in all): {states}")
        server.assert_alive()
        time.sleep(2)
