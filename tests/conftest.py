"""Shared test fixtures: where the reference data is, a scratch warehouse, the Airflow env."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from athanor.settings import PROJECT_ROOT, Settings

# CI replays the same examples every run (a red CI must be reproducible); a developer's runs
# keep exploring new ones.
hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

try:  # the real S3-compatible server (Ceph RadosGW), started once per session on demand
    from tests.support.rgw import rgw_endpoint  # noqa: F401
except ImportError:  # pragma: no cover - only while the support module is absent
    pass


def shared_data() -> Path:
    """The read-only reference exports and traces that sit beside the repository."""
    return PROJECT_ROOT.parent / "shared" / "data"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings whose every path is inside the test's temp folder."""
    env = {
        "ATHANOR_HOME": str(tmp_path),
        "ATHANOR_WAREHOUSE": str(tmp_path / "warehouse" / "athanor.duckdb"),
        "ATHANOR_LANDING": str(tmp_path / "landing"),
        "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB",
    }
    return Settings.from_env(env)


@pytest.fixture
def warehouse(settings: Settings):
    from athanor.warehouse import connect

    con = connect(settings.warehouse, memory_limit="1GB")
    yield con
    con.close()


def airflow_env(home: Path, athanor_home: Path) -> dict[str, str]:
    """Environment for running the project's DAGs in an embedded Airflow under `home`."""
    env = dict(os.environ)
    env.update(
        {
            "PATH": f"{PROJECT_ROOT / '.venv' / 'bin'}:{env.get('PATH', '')}",
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT_ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__API_AUTH__JWT_SECRET": "athanor-test-" + "x" * 52,
            "ATHANOR_HOME": str(athanor_home),
            "ATHANOR_WAREHOUSE": str(athanor_home / "warehouse" / "athanor.duckdb"),
            "ATHANOR_LANDING": str(athanor_home / "landing"),
            "ATHANOR_REPORTS": str(athanor_home / "reports"),
            "ATHANOR_QUARANTINE": str(athanor_home / "quarantine"),
            "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB",
        }
    )
    return env
