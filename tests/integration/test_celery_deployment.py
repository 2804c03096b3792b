"""The distributed deployment for real: docker-compose.yaml's celery profile started on 127.0.0.1
from Debian's PostgreSQL and Redis (tests/support/celery_deployment.py), two Celery workers.

The demo night (the golden's exports, as of 2026-11-30) is run twice: by `athanor run` in this
process's machine (the undisturbed reference), and through the deployment's REST API (the
ingest triggered like the UI's form, the optimize run started by its asset). In the middle of
the Celery night's duration fits, the worker fitting the whole fleet ("all", the longest fit)
is SIGKILLed with every process under it, as a lost machine: the scheduler fails the task when
its heartbeats stop, and its retry runs on the other worker. The night's warehouse tables and
published files must equal the undisturbed run's, table by table (tests/support/golden.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from athanor.settings import PROJECT_ROOT
from tests.support.celery_deployment import CeleryDeployment
from tests.support.golden import compare, fingerprint, report

pytestmark = pytest.mark.integration

AS_OF = "2026-11-30"
INGEST, OPTIMIZE = "athanor_ingest", "athanor_optimize"
FITS = "fit_durations.each"
ATHANOR = str(PROJECT_ROOT / ".venv" / "bin" / "athanor")
# One machine, one BLAS: the two nights' floats differ only by DuckDB's parallel sums, which
# are not associative (the last bits), so a tolerance far below golden.REL_TOL's.
REL_TOL = 1e-9


def _athanor(home: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_")}
    env["ATHANOR_HOME"] = str(home)
    return subprocess.Popen(
        [ATHANOR, *args], cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def _wait(process: subprocess.Popen, timeout_s: float = 900) -> None:
    _, err = process.communicate(timeout=timeout_s)
    assert process.returncode == 0, f"{process.args}: exit {process.returncode}\n{err[-3000:]}"


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("demo")
    _wait(_athanor(home, "demo", "--out", "landing", "--as-of", AS_OF))
    return home / "landing"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, landing: Path):
    """`athanor run` of the same night in one process, started while the deployment comes up."""
    home = tmp_path_factory.mktemp("local")
    shutil.copytree(landing, home / "landing")
    # The landing by its full path, as the deployment's ATHANOR_LANDING: loads.source_uri is
    # compared with the home folder replaced.
    process = _athanor(home, "run", "--as-of", AS_OF, "--source", str(home / "landing"))
    yield home, process
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def undisturbed(reference) -> Path:
    home, process = reference
    _wait(process)
    return home


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory, landing: Path, reference):
    home = tmp_path_factory.mktemp("celery")
    shutil.copytree(landing, home / "landing")
    deployment = CeleryDeployment(home / "airflow", home)
    deployment.start(workers=2)
    try:
        yield deployment
    finally:
        survivors = deployment.stop()
    assert survivors == [], f"processes left running: {survivors}"


def _seconds(ti: dict) -> float:
    return (datetime.fromisoformat(ti["end_date"]) - datetime.fromisoformat(ti["start_date"])).total_seconds()


def _mapped(deployment: CeleryDeployment, run_id: str) -> list[dict]:
    body = deployment.api.request(
        "GET", f"/api/v2/dags/{OPTIMIZE}/dagRuns/{run_id}/taskInstances/{FITS}/listMapped"
    )
    return sorted(body["task_instances"], key=lambda ti: ti["map_index"])


def _fit_started(deployment: CeleryDeployment, run_id: str, map_index: int, label: str) -> bool:
    """The task's own log says the fit began (not just that the worker took the task)."""
    log = (
        deployment.root / "logs" / f"dag_id={OPTIMIZE}" / f"run_id={run_id}" / f"task_id={FITS}"
        / f"map_index={map_index}" / "attempt=1.log"
    )  # fmt: skip
    return log.exists() and f"fitting {label} (" in log.read_text(errors="replace")


def _kill_mid_fit(deployment: CeleryDeployment, run_id: str, timeout_s: float = 300) -> dict:
    """Wait until the fit of "all" (map index 0) is under way, then kill the worker running it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        deployment.api.assert_alive()
        for ti in _mapped(deployment, run_id) if _has_mapped(deployment, run_id) else []:
            if ti["map_index"] == 0 and ti["state"] == "running" and ti.get("pid"):
                if not _fit_started(deployment, run_id, 0, "all"):
                    continue
                worker = deployment.worker_of(int(ti["pid"]))
                assert worker, f"task process {ti['pid']} is under no worker"
                killed = deployment.kill_worker(worker)
                return {"worker": worker, "pids": killed, "at": time.monotonic()}
        time.sleep(0.2)
    raise AssertionError(f"the fit of 'all' was not seen running within {timeout_s:.0f} s")


def _has_mapped(deployment: CeleryDeployment, run_id: str) -> bool:
    states = deployment.api.task_states(OPTIMIZE, run_id)
    return states.get(FITS) is not None or states.get("fit_durations.plan") == "success"


def _wait_for_asset_run(deployment: CeleryDeployment, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        runs = [r for r in deployment.api.runs(OPTIMIZE) if r["run_type"] == "asset_triggered"]
        if runs:
            return str(runs[0]["dag_run_id"])
        time.sleep(0.5)
    raise AssertionError("the athanor_warehouse asset did not start athanor_optimize")


@pytest.fixture(scope="module")
def night(deployment: CeleryDeployment) -> dict:
    api = deployment.api
    t0 = time.monotonic()
    dags = {dag_id: api.wait_for_dag(dag_id, timeout_s=180) for dag_id in (INGEST, OPTIMIZE)}
    conf = {"as_of": AS_OF, "source": None, "dry_run": False}
    ingest_id = api.trigger(INGEST, conf, dags[INGEST]["next_dagrun_logical_date"])
    api.set_paused(OPTIMIZE, False)
    api.set_paused(INGEST, False)
    api.wait_for_run(INGEST, ingest_id, timeout_s=300)
    optimize_id = _wait_for_asset_run(deployment, timeout_s=90)
    killed = _kill_mid_fit(deployment, optimize_id)
    optimize = api.wait_for_run(OPTIMIZE, optimize_id, timeout_s=420)
    night = {
        "ingest_id": ingest_id,
        "optimize_id": optimize_id,
        "killed": killed,
        "recovered_s": time.monotonic() - killed["at"],
        "wall_s": time.monotonic() - t0,
        "optimize": optimize,
    }
    print(
        f"\nCelery night: {night['wall_s']:.1f} s from trigger to the optimize run's end; "
        f"{killed['worker']} killed mid-fit, the night ended {night['recovered_s']:.1f} s later; "
        f"deployment up in {sum(deployment.timings.values()):.1f} s {deployment.timings}"
    )
    return night


def test_the_fits_ran_on_both_workers_and_the_lost_one_was_retried_on_the_other(deployment, night) -> None:
    api, run_id = deployment.api, night["optimize_id"]
    assert set(api.task_states(OPTIMIZE, run_id).values()) == {"success"}
    mapped = _mapped(deployment, run_id)
    assert [ti["map_index"] for ti in mapped] == list(range(len(mapped)))
    assert len(mapped) == 5, "all + the four demo teams"
    assert all(ti["state"] == "success" for ti in mapped)
    tries = api.request("GET", f"/api/v2/dags/{OPTIMIZE}/dagRuns/{run_id}/taskInstances/{FITS}/0/tries")
    states = [t["state"] for t in sorted(tries["task_instances"], key=lambda t: t["try_number"])]
    assert states == ["failed", "success"], states
    # Each worker's own log names the fit tasks it ran: both took some before the kill.
    ran = {
        name: proc.log.read_text(errors="replace").count(FITS) for name, proc in deployment.workers().items()
    }
    assert all(count > 0 for count in ran.values()), ran
    survivor = next(name for name in deployment.workers() if name != night["killed"]["worker"])
    retried = (
        deployment.root / "logs" / f"dag_id={OPTIMIZE}" / f"run_id={run_id}" / f"task_id={FITS}"
        / "map_index=0" / "attempt=2.log"
    )  # fmt: skip
    assert "fitting all (" in retried.read_text(errors="replace")
    assert deployment.procs[survivor].popen.poll() is None
    print(f"\nfit tasks per worker (log mentions): {ran}; fits: {[round(_seconds(t), 1) for t in mapped]} s")


def test_the_disturbed_night_equals_the_undisturbed_one(deployment, night, undisturbed) -> None:
    """Every warehouse table and published file, as the golden compares them (tests/support/
    golden.py), every table's floats value by value to 1e-9."""
    celery = deployment.athanor_home
    every = {"stored_rows": 10**9}  # every table's floats, value by value
    expected = fingerprint(
        undisturbed, undisturbed / "reports" / AS_OF, undisturbed / "warehouse" / "athanor.duckdb", **every
    )
    actual = fingerprint(celery, celery / "reports" / AS_OF, celery / "warehouse" / "athanor.duckdb", **every)
    differing = compare(expected, actual, rel_tol=REL_TOL)
    assert not differing, "the Celery night differs from athanor run's: " + report(differing)
    assert actual["tables"]["duration_fits"]["rows"] == 5
