"""`make demo`'s night without Airflow, run once per test session and shared by the modules that
only read what it published: `athanor demo` then `athanor run` for DEMO_DAY in a file warehouse,
each in a fresh process, with no setting but ATHANOR_HOME.

Under pytest-xdist each worker is a process of its own: the first module to ask builds the night
while holding a lock in the session's temporary root (shared by its workers, new every session);
the others wait for it, then read the same folder. A consumer that needs to change something
copies it first (the golden test copies the warehouse file). A failed build leaves nothing
behind, so each module that asks builds it again from scratch and reports the same failure.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from datetime import date
from pathlib import Path

import pytest

from athanor.settings import PROJECT_ROOT

DEMO_DAY = date(2026, 11, 30)
ATHANOR = str(PROJECT_ROOT / ".venv" / "bin" / "athanor")


def _athanor_env(home: Path) -> dict[str, str]:
    """The caller's environment with no Athanor setting but ATHANOR_HOME: the embedded defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_")}
    env["ATHANOR_HOME"] = str(home)
    return env


def _session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this session shares (xdist gives each worker a subfolder)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def published_demo_night(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The home folder of the session's demo night: landing/, warehouse/, reports/<DEMO_DAY>/."""
    root = _session_root(tmp_path_factory)
    home, done = root / "demo-night", root / "demo-night.done"
    with (root / "demo-night.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir()
            env = _athanor_env(home)
            try:
                for args in (
                    ["demo", "--out", "landing", "--as-of", DEMO_DAY.isoformat()],
                    ["run", "--as-of", DEMO_DAY.isoformat(), "--source", "landing"],
                ):
                    run = subprocess.run([ATHANOR, *args], cwd=home, env=env, capture_output=True, text=True)
                    assert run.returncode == 0, f"athanor {' '.join(args)}:\n{run.stderr[-3000:]}"
            except BaseException:
                shutil.rmtree(home, ignore_errors=True)
                raise
            done.touch()
    return home
