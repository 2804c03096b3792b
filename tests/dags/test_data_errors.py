"""A task that fails on data ends with the reason in one line: no traceback, no retry (issue 30).

Airflow 3.3's task runner logs every exception it catches with its traceback, an
AirflowFailException raised `from None` included (a dozen frames of the runner and the
operator above the one line that matters); a SystemExit it logs as one line, 'Task exited'
with its code. `athanor.errors.DataErrorExit` is that SystemExit, and the DAGs' retry policy
fails it at once, where a SystemExit would otherwise be retried.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from athanor.settings import PROJECT_ROOT
from tests.conftest import airflow_env

UNKNOWN_KEY = "unknown conf key 'dryrun': this DAG takes dry_run"


@pytest.fixture
def common(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("ATHANOR_HOME", str(tmp_path))
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "dags"))
    import athanor_common

    return athanor_common


def test_a_data_error_ends_the_task_as_one_line_and_is_not_retried(common) -> None:
    from airflow.sdk.definitions.retry_policy import RetryAction

    # A misspelt conf key: the first data error a run can meet (flow._params).
    context = {"params": {"dryrun": True}, "dag": SimpleNamespace(params={"dry_run": False}), "run_id": "r1"}
    with pytest.raises(SystemExit) as raised:
        common.run_stage("land", context)
    exc = raised.value
    assert not isinstance(exc, Exception)  # what Airflow logs as 'Task exited', without a traceback
    assert (exc.code, str(exc), exc.__cause__, exc.__suppress_context__) == (
        UNKNOWN_KEY,
        UNKNOWN_KEY,
        None,
        True,
    )
    decision = common.DEFAULT_ARGS["retry_policy"].evaluate(exc, try_number=1, max_tries=3)
    assert (decision.action, decision.reason) == (RetryAction.FAIL, "bad data: a retry cannot fix it")
    # Any other failure keeps the retries it has (a bucket timing out).
    other = common.DEFAULT_ARGS["retry_policy"].evaluate(TimeoutError("bucket"), try_number=1, max_tries=3)
    assert other.action == RetryAction.DEFAULT


TINY_DAG = """
from datetime import datetime

from airflow.sdk import dag, task

from athanor_common import DEFAULT_ARGS, run_stage


@dag(schedule=None, start_date=datetime(2026, 1, 1), default_args=DEFAULT_ARGS, params={"dry_run": False})
def tiny():
    @task
    def land(**context):
        return run_stage("land", context)

    land()


tiny()
"""


@pytest.mark.integration
def test_the_task_log_of_a_data_error_is_its_reason_without_a_traceback(tmp_path: Path) -> None:
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "tiny.py").write_text(TINY_DAG)
    env = airflow_env(tmp_path / "airflow", tmp_path / "athanor")
    env["AIRFLOW__CORE__DAGS_FOLDER"] = str(dags)
    env["PYTHONPATH"] = str(PROJECT_ROOT / "dags")
    airflow = [sys.executable, "-m", "airflow"]
    subprocess.run([*airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=300)
    run = subprocess.run(
        [*airflow, "dags", "test", "tiny", "2026-01-02", "--conf", '{"dryrun": true}'],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = run.stdout + run.stderr
    assert run.returncode != 0
    assert "Traceback" not in log and "AirflowFailException" not in log
    exited = [line for line in log.splitlines() if "Task exited" in line]
    assert len(exited) == 1 and f'exit_code="{UNKNOWN_KEY}"' in exited[0]
    assert "action=fail" in log and "up_for_retry" not in log
