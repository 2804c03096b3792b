"""The same demo night on the compose deployment with the LocalExecutor and with Celery, and the
duration fits' wall time with one and with two Celery workers.

Each deployment is tests/support/celery_deployment.py's (PostgreSQL 15 and Redis from Debian,
airflow.env; no Docker engine here). One night: the ingest triggered through REST for
2026-11-30, the optimize run started by its asset. Then, on the Celery deployment, one worker
is stopped and the optimize DAG is run again for the same day (the fits of one worker). The
baseline is `athanor run` of the same landing, in one process, measured in the same run.

    .venv/bin/python bench/bench_celery.py [--group-by team]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.celery_deployment import CeleryDeployment  # noqa: E402

AS_OF = "2026-11-30"
INGEST, OPTIMIZE = "athanor_ingest", "athanor_optimize"
ROOT = Path(__file__).resolve().parents[1]


def _athanor(home: Path, *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_")}
    env["ATHANOR_HOME"] = str(home)
    started = time.monotonic()
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "athanor"), *args], cwd=home, env=env, check=True, capture_output=True
    )
    return time.monotonic() - started


def _span(tis: list[dict], prefix: str) -> float:
    chosen = [ti for ti in tis if ti["task_id"].startswith(prefix) and ti.get("end_date")]
    start = min(datetime.fromisoformat(ti["start_date"]) for ti in chosen)
    end = max(datetime.fromisoformat(ti["end_date"]) for ti in chosen)
    return (end - start).total_seconds()


def _run_s(run: dict) -> float:
    return (
        datetime.fromisoformat(run["end_date"]) - datetime.fromisoformat(run["start_date"])
    ).total_seconds()


def _task_instances(d: CeleryDeployment, dag_id: str, run_id: str) -> list[dict]:
    return d.api.request(
        "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 100}
    )["task_instances"]


def _night(d: CeleryDeployment) -> dict:
    api = d.api
    dags = {dag_id: api.wait_for_dag(dag_id, timeout_s=180) for dag_id in (INGEST, OPTIMIZE)}
    ingest_id = api.trigger(
        INGEST, {"as_of": AS_OF, "source": None, "dry_run": False}, dags[INGEST]["next_dagrun_logical_date"]
    )
    t0 = time.monotonic()
    api.set_paused(OPTIMIZE, False)
    api.set_paused(INGEST, False)
    ingest = api.wait_for_run(INGEST, ingest_id, timeout_s=900)
    deadline = time.monotonic() + 120
    while not (runs := [r for r in api.runs(OPTIMIZE) if r["run_type"] == "asset_triggered"]):
        assert time.monotonic() < deadline, "no asset-triggered optimize run"
        time.sleep(0.5)
    optimize = api.wait_for_run(OPTIMIZE, runs[0]["dag_run_id"], timeout_s=900)
    wall = time.monotonic() - t0
    tis = _task_instances(d, OPTIMIZE, optimize["dag_run_id"])
    return {
        "night_wall_s": wall,
        "ingest_s": _run_s(ingest),
        "optimize_s": _run_s(optimize),
        "fits_s": _span(tis, "fit_durations."),
        "mapped_fits_s": _span(tis, "fit_durations.each"),
    }


def _optimize_again(d: CeleryDeployment, group_by: str | None) -> dict:
    conf = {"as_of": AS_OF, "apply_lifecycle": False, **({"group_by": group_by} if group_by else {})}
    run_id = d.api.trigger(OPTIMIZE, conf, None)
    run = d.api.wait_for_run(OPTIMIZE, run_id, timeout_s=900)
    tis = _task_instances(d, OPTIMIZE, run_id)
    return {
        "optimize_s": _run_s(run),
        "fits_s": _span(tis, "fit_durations."),
        "mapped_fits_s": _span(tis, "fit_durations.each"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--group-by", default=None, help="also fit by these columns in the extra optimize runs"
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="athanor-bench-celery-"))
    rows: list[tuple[str, dict]] = []
    try:
        _athanor(scratch, "demo", "--out", "landing", "--as-of", AS_OF)
        local = scratch / "one-process"
        shutil.copytree(scratch / "landing", local / "landing")
        baseline = _athanor(local, "run", "--as-of", AS_OF, "--source", str(local / "landing"))
        rows.append(("athanor run (one process)", {"night_wall_s": baseline}))
        for executor in ("LocalExecutor", "CeleryExecutor"):
            home = scratch / executor
            shutil.copytree(scratch / "landing", home / "landing")
            d = CeleryDeployment(home / "airflow", home, executor=executor)
            try:
                d.start(workers=2)
                label = "LocalExecutor" if executor == "LocalExecutor" else "Celery, 2 workers"
                rows.append((label, _night(d)))
                if executor == "CeleryExecutor":
                    rows.append(("Celery, 2 workers, optimize again", _optimize_again(d, args.group_by)))
                    worker = d.procs["worker2"]
                    os.kill(worker.popen.pid, signal.SIGTERM)  # warm shutdown: nothing is running
                    worker.popen.wait(timeout=60)
                    rows.append(("Celery, 1 worker, optimize again", _optimize_again(d, args.group_by)))
            finally:
                d.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    columns = ["night_wall_s", "ingest_s", "optimize_s", "fits_s", "mapped_fits_s"]
    print(f"\n{'deployment':<36}" + "".join(f"{c:>15}" for c in columns))
    for label, figures in rows:
        print(
            f"{label:<36}"
            + "".join(f"{figures[c]:>15.1f}" if c in figures else f"{'-':>15}" for c in columns)
        )
    two = dict(rows)["Celery, 2 workers, optimize again"]["fits_s"]
    one = dict(rows)["Celery, 1 worker, optimize again"]["fits_s"]
    print(f"\nfits with 1 worker / 2 workers: {one / two:.2f}")
    print(f"Celery night / athanor run: {dict(rows)['Celery, 2 workers']['night_wall_s'] / baseline:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
