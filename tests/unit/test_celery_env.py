"""One set of Airflow settings for docker-compose.yaml and the harness that runs its deployment on
real servers (tests/support/celery_deployment.py): airflow.env, read by both.

Compose's own `environment` may hold only what differs between a container and this machine
(addresses, secrets, the executor): the harness sets exactly those keys, so a setting added to
one and not the other fails here.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.support.celery_deployment import (
    ADDRESS_KEYS,
    AIRFLOW_ENV,
    SERVICES,
    WORKER_SERVICE,
    compose_services,
    init_commands,
    read_env_file,
    service_command,
)
from tests.unit.test_compose import CELERY_SERVICES, CORE_SERVICES


def _airflow_services() -> dict:
    return {
        name: service
        for name, service in compose_services().items()
        if name in (CORE_SERVICES | CELERY_SERVICES) - {"postgres", "redis"}
    }


def test_every_airflow_service_reads_the_env_file() -> None:
    for name, service in _airflow_services().items():
        assert service["env_file"] == ["airflow.env"], name


def test_compose_sets_only_addresses_secrets_and_the_executor_besides_it() -> None:
    shared = read_env_file()
    # Container-only switches, not Airflow or Athanor settings: the init job's admin user and
    # uid, the worker's dumb-init signal mode.
    container_only = {
        "AIRFLOW_UID",
        "_AIRFLOW_WWW_USER_USERNAME",
        "_AIRFLOW_WWW_USER_PASSWORD",
        "DUMB_INIT_SETSID",
    }
    for name, service in _airflow_services().items():
        environment = set(service["environment"]) - container_only
        assert environment == ADDRESS_KEYS, name
        assert not environment & set(shared), f"{name} overrides airflow.env: {environment & set(shared)}"


def test_the_env_file_holds_the_settings_the_deployment_depends_on() -> None:
    shared = read_env_file()
    assert shared["AIRFLOW__CORE__AUTH_MANAGER"].endswith("FabAuthManager")
    assert shared["AIRFLOW__CELERY__WORKER_CONCURRENCY"] == "1"
    assert int(shared["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"]) <= 120
    assert "AIRFLOW__CORE__EXECUTOR" not in shared  # .env chooses it, as compose's default says


def test_the_harness_runs_what_the_services_run() -> None:
    assert [service_command(s) for s in SERVICES] == [
        ["airflow", "api-server"],
        ["airflow", "dag-processor"],
        ["airflow", "scheduler"],
        ["airflow", "triggerer"],
    ]
    assert service_command(WORKER_SERVICE) == ["airflow", "celery", "worker"]
    commands = init_commands()
    assert commands[0] == "airflow db migrate"
    assert commands[1].startswith(
        'airflow users create --role Admin --username="${_AIRFLOW_WWW_USER_USERNAME}"'
    )
    assert commands[2].startswith("airflow pools set athanor_duckdb_writer 1 ")


def test_the_admin_password_is_read_as_a_value_even_when_it_starts_with_a_dash() -> None:
    # Airflow's own parser, on the init line as the shell would expand it.
    from airflow.cli.cli_parser import get_parser

    line = init_commands()[1]
    password = "-Xq_9-dash"
    expanded = line.replace("${_AIRFLOW_WWW_USER_USERNAME}", "admin").replace(
        "${_AIRFLOW_WWW_USER_PASSWORD}", password
    )
    args = get_parser().parse_args(shlex.split(expanded)[1:])
    assert (args.username, args.password, args.role) == ("admin", password, "Admin")


def test_a_line_compose_would_misread_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "airflow.env"
    bad.write_text("# fine\nAIRFLOW__CORE__PARALLELISM=8\nexport FOO=bar\n")
    with pytest.raises(ValueError, match=r"airflow\.env:3: not a KEY=value line: 'export FOO=bar'"):
        read_env_file(bad)
    assert read_env_file(AIRFLOW_ENV)["AIRFLOW__CORE__PARALLELISM"] == "8"
