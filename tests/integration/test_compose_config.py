"""docker-compose.yaml as a compose implementation reads it: valid, LocalExecutor by default,
Celery behind a profile, and refusing to start without each secret.

No Docker engine runs here: Debian's docker-compose (v1, installed by scripts/system-deps.sh,
which `make test` runs) parses and interpolates the file with `config` without one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.unit.test_compose import CELERY_SERVICES, COMPOSE, CORE_SERVICES, ENV_EXAMPLE

pytestmark = pytest.mark.integration


def compose_binary() -> str:
    found = shutil.which("docker-compose")
    assert found, "docker-compose is not installed: run scripts/system-deps.sh (`make test` does)"
    return found


def _env_file(tmp_path: Path, **overrides: str) -> Path:
    """.env.example with its empty secrets filled in by dummies (and overrides applied)."""
    lines = []
    for line in ENV_EXAMPLE.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            value = overrides.pop(name, value or f"dummy-{name.lower()}")
            line = f"{name}={value}"
        lines.append(line)
    lines += [f"{k}={v}" for k, v in overrides.items()]
    path = tmp_path / "test.env"
    path.write_text("\n".join(lines) + "\n")
    return path


def _config(env_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    # A clean environment, so nothing from the caller's shell fills a missing secret.
    return subprocess.run(
        [compose_binary(), "-f", str(COMPOSE), "--env-file", str(env_file), *extra, "config"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        timeout=60,
    )


def test_config_is_valid_and_local_executor_by_default(tmp_path: Path) -> None:
    result = _config(_env_file(tmp_path))
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert set(services) == CORE_SERVICES | CELERY_SERVICES
    for name in CORE_SERVICES - {"postgres"}:
        assert services[name]["environment"]["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor", name
        assert "profiles" not in services[name], name
    for name in CELERY_SERVICES:
        assert services[name]["profiles"] == ["celery"], name
    init = services["airflow-init"]
    assert (
        services["airflow-apiserver"]["depends_on"]["airflow-init"]["condition"]
        == "service_completed_successfully"
    )
    assert init["environment"]["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith(
        "postgresql+psycopg2://airflow:dummy-"
    )


def test_celery_profile_switches_the_executor(tmp_path: Path) -> None:
    result = _config(_env_file(tmp_path, AIRFLOW__CORE__EXECUTOR="CeleryExecutor"), "--profile", "celery")
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert services["airflow-worker"]["environment"]["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert services["airflow-worker"]["command"] == "celery worker"
    assert services["airflow-worker"]["depends_on"]["redis"]["condition"] == "service_healthy"


@pytest.mark.parametrize(
    "secret",
    [
        "POSTGRES_PASSWORD",
        "AIRFLOW__CORE__FERNET_KEY",
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "_AIRFLOW_WWW_USER_PASSWORD",
    ],
)
def test_refuses_to_run_without_each_secret(tmp_path: Path, secret: str) -> None:
    result = _config(_env_file(tmp_path, **{secret: ""}))
    assert result.returncode != 0
    assert f"set {secret} in .env" in result.stderr
