"""End to end through a real Airflow: migrated SQLite metadata DB, both DAGs run by `airflow dags test`.

Demo exports (30 days to 2026-11-30) land in a temp folder and are ingested by the nightly run
that covers that day (the one firing at 2026-12-01 02:30 UTC); the optimize run is told the day,
as the ingest's asset event would tell it. The night is `make demo`'s own script
(scripts/demo-night.sh), so what it leaves for the scheduler is checked here too. The assertions
are on the warehouse rows (against the generator's own per-file totals), on the report's
content, on the metadata database (no optimize run queued), on a re-run (nothing loads twice,
identical content, nothing announced) and on a bad delivery (run fails naming the file, the
delivery goes to quarantine, loaded data stays as it was).
"""

from __future__ import annotations

import csv
import gzip
import json
import sqlite3
import subprocess
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.demo import fleet as demo
from athanor.flow import STAGES
from athanor.settings import PROJECT_ROOT
from athanor.warehouse import connect
from tests.conftest import airflow_env

pytestmark = pytest.mark.integration

AS_OF = date(2026, 11, 30)
NIGHT = "2026-12-01T02:30:00+00:00"  # the nightly run that covers AS_OF
OPTIMIZE_CONF = json.dumps({"as_of": AS_OF.isoformat(), "apply_lifecycle": False})
# The metadata database as the night left it: later tests run more `dags test`s in the same home.
AFTER_NIGHT = "airflow-after-night.db"


def _airflow(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["airflow", *args], env=env, capture_output=True, text=True, timeout=900, check=check
    )


def _content_hash(warehouse: Path) -> tuple:
    con = connect(warehouse, read_only=True)
    try:
        return con.execute(
            """select count(*), sum(billed_cost), sum(effective_cost),
                      (select count(*) from job_run_facts), (select count(*) from storage_objects),
                      (select count(*) from loads where status = 'loaded'),
                      md5(string_agg(load_id || source_file || source_row || billed_cost, ',' order by load_id, source_file, source_row))
               from billing_facts"""
        ).fetchone()
    finally:
        con.close()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("athanor")
    cfg = demo.DemoConfig(days=30)
    summary = demo.generate_landing(home / "landing", cfg, as_of=AS_OF)
    from athanor.demo import storage as demo_storage

    demo_storage.generate_inventory(home / "landing" / "inventory", AS_OF)
    env = airflow_env(home / ".airflow", home)
    (home / ".airflow").mkdir()
    # `make demo`'s night: migrate, the writer pool, then `airflow dags test` of the ingest and of
    # the optimize, told the day (OPTIMIZE_CONF: checked in the metadata database below).
    night = subprocess.run(
        ["bash", str(PROJECT_ROOT / "scripts" / "demo-night.sh"), AS_OF.isoformat()],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert night.returncode == 0, night.stdout[-3000:] + night.stderr[-3000:]
    live, kept = sqlite3.connect(home / ".airflow" / "airflow.db"), sqlite3.connect(home / AFTER_NIGHT)
    try:
        live.backup(kept)
    finally:
        live.close()
        kept.close()
    return home, env, summary


def test_billing_lands_with_the_generators_totals(deployment) -> None:
    home, _, summary = deployment
    con = connect(home / "warehouse" / "athanor.duckdb", read_only=True)
    try:
        for file in summary["files"]:
            if file["kind"] != "focus-1.2":
                continue
            name = Path(str(file["path"])).name
            rows, billed = con.execute(
                "select count(*), sum(BilledCost) from focus_charges where x_SourceFile = ?", [name]
            ).fetchone()
            assert rows == file["rows"], name
            assert billed == Decimal(str(file["billed_cost"])), name
        jobs = con.execute("select count(*) from job_runs").fetchone()[0]
        assert jobs == summary["jobs"]
        assert con.execute("select count(*) from reconciliations where not reconciled").fetchone()[0] == 0
    finally:
        con.close()


def test_report_and_recommendations_are_published(deployment) -> None:
    home, _, _ = deployment
    html = (home / "reports" / "latest" / "report.html").read_text()
    assert "Summary" in html and "Recommended purchase mix" in html
    assert (home / "reports" / AS_OF.isoformat() / "report.html").exists()
    recs = json.loads((home / "reports" / "latest" / "recommendations.json").read_text())
    assert recs["schema_version"].startswith("2.")
    con = connect(home / "warehouse" / "athanor-snapshot.duckdb", read_only=True)
    try:
        kinds = {k for (k,) in con.execute("select distinct kind from recommendations").fetchall()}
        fits = con.execute("select count(*) from duration_fits").fetchone()[0]
    finally:
        con.close()
    assert {"mix", "lifecycle"} <= kinds
    assert fits >= 2  # overall plus at least one team


def test_the_night_queues_no_optimize_run_for_the_scheduler(deployment) -> None:
    """`make demo`'s night leaves nothing for the scheduler: the asset events are recorded, but
    no optimize run is queued for the first `make airflow` to start (it did, and
    rewrote the report), and the optimize DAG is left unpaused (issue 30)."""
    home, _, _ = deployment
    with sqlite3.connect(home / AFTER_NIGHT) as con:
        events = con.execute(
            "select source_dag_id, source_task_id, extra from asset_event order by id"
        ).fetchall()
        queued = con.execute("select target_dag_id from asset_dag_run_queue").fetchall()
        paused = dict(con.execute("select dag_id, is_paused from dag").fetchall())
        runs = con.execute("select dag_id, conf from dag_run order by dag_id").fetchall()
    # The ingest announced the day (the warehouse), and so did the optimize (the report).
    day = json.dumps({"as_of": AS_OF.isoformat()})
    assert events == [("athanor_ingest", "validate", day), ("athanor_optimize", "publish", day)]
    assert queued == []
    assert paused == {"athanor_ingest": 0, "athanor_optimize": 0}
    # The two `dags test` runs and no other; the optimize's told the day, the lifecycle not applied.
    assert [(dag, json.loads(conf)) for dag, conf in runs] == [
        ("athanor_ingest", {}),
        ("athanor_optimize", json.loads(OPTIMIZE_CONF)),
    ]


def test_every_stage_of_both_runs_is_recorded_for_the_day(deployment) -> None:
    home, _, _ = deployment
    con = connect(home / "warehouse" / "athanor.duckdb", read_only=True)
    try:
        rows = con.execute(
            "select stage, as_of, status, started_at <= finished_at from pipeline_runs order by started_at"
        ).fetchall()
    finally:
        con.close()
    assert sorted(r[0] for r in rows) == sorted(stage.name for stage in STAGES)
    assert {r[1:] for r in rows} == {(AS_OF, "success", True)}


def test_rerun_loads_nothing_twice(deployment) -> None:
    home, env, _ = deployment
    warehouse = home / "warehouse" / "athanor.duckdb"
    before = _content_hash(warehouse)
    again = _airflow(env, "dags", "test", "athanor_ingest", NIGHT, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _content_hash(warehouse) == before
    # Nothing new since the day's report: the asset is not updated, no optimize would start.
    assert "athanor_warehouse not updated: nothing loaded since the report for 2026-11-30" in (
        again.stdout + again.stderr
    )


def test_bad_delivery_is_held_back_the_night_goes_on_and_nothing_is_lost(deployment) -> None:
    home, env, _ = deployment
    warehouse = home / "warehouse" / "athanor.duckdb"
    before = _content_hash(warehouse)
    bad = home / "landing" / "billing" / "focus" / "111111111111" / "billing_period=2026-12"
    bad.mkdir(parents=True)
    good = next((home / "landing" / "billing" / "focus" / "111111111111").glob("*/focus-2026-11.csv.gz"))
    with gzip.open(good, "rt", newline="") as f:
        reader = csv.reader(f)
        header, row = next(reader), next(reader)
    row[header.index("BilledCost")] = "twelve"
    with (bad / "focus-2026-12.csv").open("w", newline="") as f:
        csv.writer(f).writerows([header, row])
    # A rejected delivery is quarantined and alerted; the night goes on for everything else.
    night = _airflow(env, "dags", "test", "athanor_ingest", NIGHT, check=False)
    assert night.returncode == 0, (night.stdout + night.stderr)[-2000:]
    output = night.stdout + night.stderr
    assert "focus-2026-12.csv row 1, column BilledCost: not a decimal number" in output
    assert not (bad / "focus-2026-12.csv").exists()
    assert list((home / "quarantine").rglob("focus-2026-12.csv"))
    assert _content_hash(warehouse) == before
    con = connect(warehouse, read_only=True)
    try:
        ledger = con.execute("select status from loads where files = ['focus-2026-12.csv']").fetchall()
        parse = con.execute(
            "select column_name, observed_value, examples from dq_results where rule = 'parse'"
        ).fetchall()
    finally:
        con.close()
    assert ledger == [("quarantined",)]
    assert parse == [("BilledCost", "not a decimal number", ["row 1: 'twelve'"])]
