"""The deployment an operator runs: `airflow standalone`, driven only through its REST API.

21 days of demo exports land in a temp folder; the test creates the writer pool, triggers
`athanor_ingest` with the form's params, lets the `athanor_warehouse` asset start
`athanor_optimize`, then checks the report, the recommendations, the analysts' snapshot and
the plugin's report link, and finally that stopping the server leaves no process behind.
The measured times are printed (start to healthy, each run) for the README.

Last, `make airflow` itself (scripts/airflow-standalone.sh) on a fresh home with its DAGs
unpaused: the first nightly run, queued as soon as the DAG is parsed, succeeds at its first
try (under a plain `airflow standalone` it could be queued before the api-server listened and
fail with "Connection refused").
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import time
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.demo import fleet as demo
from athanor.demo import storage as demo_storage
from athanor.settings import PROJECT_ROOT
from athanor.warehouse import connect
from tests.conftest import airflow_env
from tests.support.airflow_server import AirflowServer, free_port, start_airflow

pytestmark = pytest.mark.integration

AS_OF = date(2026, 11, 30)
INGEST, OPTIMIZE = "athanor_ingest", "athanor_optimize"
ASSET_WAIT_S = 60  # after the ingest succeeds: how long the asset gets to start the optimize run


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("athanor")
    summary = demo.generate_landing(home / "landing", demo.DemoConfig(days=21), as_of=AS_OF)
    demo_storage.generate_inventory(home / "landing" / "inventory", AS_OF)
    env = airflow_env(home / ".airflow", home)
    # Paused until the pool exists and the manual run is queued (see `flow`).
    env["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] = "True"
    server = start_airflow(home / ".airflow", env)
    timings = {"start_to_healthy_s": server.healthy_after_s}
    try:
        yield server, home, summary, timings
    finally:
        server.stop()


def _run_seconds(run: dict) -> float:
    """Airflow's own start-to-end time of a run (ISO timestamps with offsets)."""
    return (
        datetime.fromisoformat(run["end_date"]) - datetime.fromisoformat(run["start_date"])
    ).total_seconds()


def _wait_for_asset_run(server: AirflowServer, timeout_s: float) -> dict | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        runs = [r for r in server.runs(OPTIMIZE) if r["run_type"] == "asset_triggered"]
        if runs:
            return runs[0]
        time.sleep(1)
    return None


@pytest.fixture(scope="module")
def flow(deployment) -> dict:
    """Trigger the ingest like the UI's form, then wait for the asset-triggered optimize run."""
    server, _, _, timings = deployment
    t0 = time.monotonic()
    dags = {dag_id: server.wait_for_dag(dag_id) for dag_id in (INGEST, OPTIMIZE)}
    timings["dags_parsed_s"] = time.monotonic() - t0
    assert all(d["is_paused"] for d in dags.values())
    server.request(
        "POST", "/api/v2/pools", expect=(201,),
        json={"name": "athanor_duckdb_writer", "slots": 1, "description": "DuckDB allows one writer"},
    )  # fmt: skip
    # The form's params as the UI sends them; the logical date is the slot the cron schedule
    # would fill next, so unpausing does not add a scheduled run of its own for that slot.
    conf = {"as_of": AS_OF.isoformat(), "source": None, "dry_run": False}
    ingest_id = server.trigger(INGEST, conf, dags[INGEST]["next_dagrun_logical_date"])
    t_trigger = time.monotonic()
    server.set_paused(OPTIMIZE, False)  # before the asset event, so it is queued for this DAG
    server.set_paused(INGEST, False)
    ingest = server.wait_for_run(INGEST, ingest_id, timeout_s=150)
    timings["ingest_wall_s"] = time.monotonic() - t_trigger
    timings["ingest_run_s"] = _run_seconds(ingest)

    t_ingest_done = time.monotonic()
    optimize = _wait_for_asset_run(server, ASSET_WAIT_S)
    path = "asset"
    if optimize is None:  # the fallback the operator has: trigger it from the form
        path = "rest"
        optimize = {"dag_run_id": server.trigger(OPTIMIZE, {"as_of": None, "apply_lifecycle": False}, None)}
    timings["asset_to_optimize_queued_s"] = time.monotonic() - t_ingest_done
    optimize = server.wait_for_run(OPTIMIZE, optimize["dag_run_id"], timeout_s=150)
    timings["optimize_wall_s"] = time.monotonic() - t_ingest_done
    timings["optimize_run_s"] = _run_seconds(optimize)
    return {"ingest": ingest, "optimize": optimize, "optimize_path": path, "conf": conf}


def test_ingest_then_optimize_run_through_rest(deployment, flow, capsys) -> None:
    server, home, _, timings = deployment
    ingest, optimize = flow["ingest"], flow["optimize"]
    assert ingest["conf"] == flow["conf"]
    assert server.task_states(INGEST, ingest["dag_run_id"]) == {
        "land": "success", "load": "success", "validate": "success"
    }  # fmt: skip
    assert set(server.task_states(OPTIMIZE, optimize["dag_run_id"]).values()) == {"success"}
    # Unpausing added no scheduled ingest run: the manual run took the cron slot.
    assert [r["dag_run_id"] for r in server.runs(INGEST)] == [ingest["dag_run_id"]]
    # The form's as_of, not the logical date (today's slot), decided the partition.
    con = connect(home / "warehouse" / "athanor-snapshot.duckdb", read_only=True)
    try:
        recorded = con.execute(
            "select as_of from pipeline_runs where run_id = ? and stage = 'load'", [ingest["dag_run_id"]]
        ).fetchall()
    finally:
        con.close()
    assert recorded == [(AS_OF,)]
    with capsys.disabled():
        print(f"\nairflow standalone timings (optimize started by: {flow['optimize_path']}):")
        for name, seconds in timings.items():
            print(f"  {name:<28} {seconds:6.1f} s")
    assert flow["optimize_path"] == "asset", "the athanor_warehouse asset did not start athanor_optimize"


def test_task_logs_say_what_each_stage_did(deployment, flow) -> None:
    """The operator's view: the load task's log in the UI (read here from its file) names each delivery."""
    server, home, _, _ = deployment
    run_id = flow["ingest"]["dag_run_id"]
    logs = home / ".airflow" / "logs" / f"dag_id={INGEST}" / f"run_id={run_id}"

    def log_of(task: str) -> str:
        return "".join(
            f.read_text(errors="replace") for f in sorted((logs / f"task_id={task}").glob("*.log"))
        )

    load = log_of("load")
    for line in (
        "focus-2026-11.csv.gz: focus, ",
        "cur2-2026-11-00001.snappy.parquet: cur2, ",
        "2026-11-30T01-00Z/manifest.json: S3 inventory, ",
        "jobs-2026-11.csv: generic job log, ",
        "load done in ",
    ):
        assert line in load, line
    assert "warehouse updated for 2026-11-30: announcing it" in log_of("validate")
    # The asset event carried the day to the optimize run, which worked on it.
    optimize_logs = (
        home / ".airflow" / "logs" / f"dag_id={OPTIMIZE}" / f"run_id={flow['optimize']['dag_run_id']}"
    )
    publish = "".join(
        f.read_text(errors="replace") for f in sorted(optimize_logs.rglob("task_id=publish/*.log"))
    )
    assert "publish: wrote the report for 2026-11-30" in publish


def test_outputs_are_published(deployment, flow) -> None:
    _, home, summary, _ = deployment
    html = (home / "reports" / AS_OF.isoformat() / "report.html").read_text()
    assert "Summary" in html
    assert (home / "reports" / "latest" / "report.html").read_text() == html
    recs = json.loads((home / "reports" / "latest" / "recommendations.json").read_text())
    assert recs["schema_version"].startswith("2.")
    con = connect(home / "warehouse" / "athanor-snapshot.duckdb", read_only=True)
    try:
        billing_rows, billed_usd = con.execute(
            "select count(*), sum(billed_cost) from billing_facts"
        ).fetchone()
        jobs = con.execute("select count(*) from job_run_facts").fetchone()[0]
        kinds = {k for (k,) in con.execute("select distinct kind from recommendations").fetchall()}
    finally:
        con.close()
    # One fact row per line item the generator wrote, and its exact totals, summed over the bills.
    bills = [f for f in summary["files"] if f["kind"] != "jobs"]
    assert billing_rows == sum(int(f["rows"]) for f in bills)
    assert billed_usd == sum(Decimal(str(f["billed_cost"])) for f in bills)
    assert jobs == summary["jobs"]
    assert {"mix", "lifecycle"} <= kinds


def test_plugin_serves_the_latest_report(deployment, flow) -> None:
    server, home, _, _ = deployment
    index = server.client.get(f"{server.url}/athanor/")
    assert index.status_code == 200 and "latest/report.html" in index.text
    page = server.client.get(f"{server.url}/athanor/latest/report.html")
    assert page.status_code == 200
    assert page.text == (home / "reports" / "latest" / "report.html").read_text()


def test_stop_leaves_no_process_behind(deployment, flow) -> None:
    server, _, _, _ = deployment
    assert server.processes(), "the deployment should be running before it is stopped"
    survivors = server.stop()
    assert survivors == []
    assert server.process.returncode is not None


def test_make_airflow_runs_the_first_night_at_the_first_try(tmp_path: Path) -> None:
    home = tmp_path / "athanor"
    fixtures = PROJECT_ROOT / "tests" / "fixtures"
    for source, folder in (
        (fixtures / "billing" / "gcp" / "billing-export-202311.jsonl", "gcp"),
        (fixtures / "jobs" / "jobs.csv", "jobs"),
    ):
        (home / "landing" / folder).mkdir(parents=True)
        shutil.copy(source, home / "landing" / folder)
    airflow_home = home / ".airflow"
    env = airflow_env(airflow_home, home)  # DAGs unpaused at creation, as `make airflow` has them
    env["AIRFLOW__API__PORT"] = str(free_port())
    for inherited in ("AIRFLOW__API__BASE_URL", "AIRFLOW__CORE__EXECUTION_API_SERVER_URL"):
        env.pop(inherited, None)
    log_path = tmp_path / "make-airflow.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            ["bash", str(PROJECT_ROOT / "scripts" / "airflow-standalone.sh")],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = AirflowServer(url="", home=airflow_home, process=process, log_path=log_path, env=env)
    try:
        tries = _first_nightly_run(server, airflow_home / "airflow.db", timeout_s=420)
    finally:
        survivors = server.stop()
    assert survivors == []
    assert tries == [("land", "success", 1), ("load", "success", 1), ("validate", "success", 1)]
    text = log_path.read_text(errors="replace")
    assert text.index("api-server up after") < text.index("Airflow UI: http://127.0.0.1:")


def _first_nightly_run(server: AirflowServer, db: Path, timeout_s: float) -> list[tuple]:
    """Task states and tries of the first ingest run, once it has ended."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        server.assert_alive()
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
                ended = con.execute(
                    "select run_id from dag_run where dag_id = ? and state in ('success', 'failed')", [INGEST]
                ).fetchone()
                if ended:
                    return con.execute(
                        """select task_id, state, try_number from task_instance
                           where dag_id = ? and run_id = ? order by task_id""",
                        [INGEST, ended[0]],
                    ).fetchall()
        except sqlite3.OperationalError:
            pass  # not migrated yet, or busy
        time.sleep(2)
    raise AssertionError(f"no ingest run ended in {timeout_s:.0f} s; log tail:\n{server.log_tail()}")
