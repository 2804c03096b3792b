"""docker-compose.yaml, read as YAML: no secret in it, every path it uses exists, the pool the DAGs use.

What a compose implementation makes of the file (interpolation, profiles, refusing to start
without a secret) is checked by tests/integration/test_compose_config.py with `docker-compose config`.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yaml"
ENV_EXAMPLE = REPO / ".env.example"
# Folders the app writes; airflow-init creates them, git ignores them (see .gitignore).
DATA_FOLDERS = ("landing", "warehouse", "reports", "quarantine", "artifacts")
CORE_SERVICES = {
    "postgres",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-init",
}
CELERY_SERVICES = {"redis", "airflow-worker", "flower"}


def _raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())  # safe_load resolves anchors and << merges


def test_services_profiles_and_executor_as_written() -> None:
    services = _raw()["services"]
    assert set(services) == CORE_SERVICES | CELERY_SERVICES
    for name in CORE_SERVICES - {"postgres"}:
        environment = services[name]["environment"]
        assert environment["AIRFLOW__CORE__EXECUTOR"] == "${AIRFLOW__CORE__EXECUTOR:-LocalExecutor}", name
        assert "profiles" not in services[name], name
    for name in CELERY_SERVICES:
        assert services[name]["profiles"] == ["celery"], name
    assert (
        services["airflow-apiserver"]["depends_on"]["airflow-init"]["condition"]
        == "service_completed_successfully"
    )
    assert services["airflow-worker"]["command"] == "celery worker"
    assert services["airflow-worker"]["depends_on"]["redis"]["condition"] == "service_healthy"


def test_no_secret_is_written_in_the_file() -> None:
    required = set(re.findall(r"\$\{(\w+):\?", COMPOSE.read_text()))
    assert required == {
        "POSTGRES_PASSWORD",
        "AIRFLOW__CORE__FERNET_KEY",
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "_AIRFLOW_WWW_USER_PASSWORD",
    }
    example = dict(
        line.split("=", 1)
        for line in ENV_EXAMPLE.read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    for name in required:
        assert example.get(name) == "", f"{name} must be listed in .env.example, empty"
    for service_name, service in _raw()["services"].items():
        for key, value in (service.get("environment") or {}).items():
            text = str(value)
            if re.search(r"PASSWORD|SECRET|FERNET", key) or re.search(r"://[^/@\s]*:[^/@\s]*@", text):
                assert "${" in text and ":?" in text, f"{service_name}.{key} holds a literal secret"


def test_every_mounted_path_and_build_input_exists() -> None:
    services = _raw()["services"]
    mounted = set()
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                mounted.add(source[2:])
    assert {"dags", "plugins", "include", "sql", *DATA_FOLDERS} <= mounted
    ignored = REPO.joinpath(".gitignore").read_text().splitlines()
    for path in sorted(mounted):
        if path in DATA_FOLDERS:
            # Made by the app (and by airflow-init) at run time, never committed.
            assert f"/{path}/" in ignored, f"{path}/ should be gitignored"
        else:
            assert (REPO / path).is_dir(), f"mounted ./{path} does not exist"
    init_script = " ".join(services["airflow-init"]["command"])
    for folder in DATA_FOLDERS:
        assert f"/opt/athanor/{folder}" in init_script, f"airflow-init does not create {folder}/"

    build = services["airflow-apiserver"]["build"]
    dockerfile = REPO / build["context"] / build["dockerfile"]
    assert dockerfile.is_file()
    text = dockerfile.read_text()
    assert re.search(r"^FROM apache/airflow:3\.3\.2-python3\.11$", text, re.M)
    sources = [
        src
        for line in re.findall(r"^COPY (.+)$", text, re.M)
        for src in line.split()[:-1]
        if not src.startswith("--")
    ]
    assert {"requirements.txt", "requirements.lock", "pyproject.toml", "include", "sql"} <= set(sources)
    for src in sources:
        assert (REPO / src).exists(), f"Dockerfile copies {src}, which is not in the repo"


def test_init_creates_the_writer_pool_the_dags_use() -> None:
    common = (REPO / "dags" / "athanor_common.py").read_text()
    pool = re.search(r'^WRITER_POOL = "([^"]+)"', common, re.M)
    assert pool, "dags/athanor_common.py no longer defines WRITER_POOL"
    script = " ".join(_raw()["services"]["airflow-init"]["command"])
    assert f"airflow pools set {pool.group(1)} 1 " in script
    assert "airflow db migrate" in script
    assert "airflow users create --role Admin" in script
