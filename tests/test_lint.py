"""The tree stays as `make lint` wants it: ruff's checks (with Airflow's AIR rules) and format."""

from __future__ import annotations

import subprocess
import sys

from athanor.settings import PROJECT_ROOT


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=PROJECT_ROOT, capture_output=True, text=True
    )


def test_ruff_check_passes() -> None:
    result = _ruff("check", ".")
    assert result.returncode == 0, result.stdout[-3000:]


def test_ruff_format_is_clean() -> None:
    result = _ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout[-3000:]
