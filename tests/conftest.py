"""Shared test fixtures: where the reference data is, a scratch warehouse, the Airflow env;
and the guard that keeps the fast tier fast.

Tiers: `integration` (real servers, whole DAGs, large loads) and `realdata` (the files in
../shared/data) are marked; every other test is a unit test, run by `make test-fast`. Outside
`integration`, a test may not reach the network (loopback servers a test starts itself are
fine) or run apt.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import subprocess
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

# New warehouse files start as a copy of one migrated empty warehouse (tests/support/warehouse_template.py).
from tests.support.warehouse_template import real_warehouse_migrations, warehouse_template  # noqa: E402, F401

# A test in one of these folders must carry the folder's marker, or `-m "not integration"`
# would run it in the fast tier.
TIERS = ("integration", "realdata")
PACKAGE_MANAGERS = {"apt", "apt-get", "dpkg", "aptitude"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [
        item.nodeid
        for item in items
        for tier in TIERS
        if tier in Path(item.nodeid.split("::", 1)[0]).parts[:-1] and item.get_closest_marker(tier) is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "tests outside the unit tier without their marker (add `pytestmark = pytest.mark.<tier>`): "
            + ", ".join(unmarked)
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    # athanor.cli.main() lets SIGPIPE end the process (a Unix filter); left so after a test that
    # calls it, the next socket or pipe a peer closed kills pytest, or an xdist worker, outright
    # (the server side of tests/adversarial/test_alerts.py after tests/unit/test_watch.py).
    sigpipe = signal.getsignal(signal.SIGPIPE)
    try:
        # Around the whole protocol, not in a fixture: module- and session-scoped fixtures a
        # unit test sets up are guarded too.
        if item.get_closest_marker("integration"):
            return (yield)
        with pytest.MonkeyPatch.context() as patch:
            _stay_on_this_machine(patch)
            return (yield)
    finally:
        signal.signal(signal.SIGPIPE, sigpipe)


def _refuse(what: str) -> None:
    # pytest.fail raises an exception `except Exception` does not catch: code under test that
    # tolerates network errors cannot hide the attempt.
    pytest.fail(f"a unit test must not {what}; mark it `integration` if it has to", pytrace=False)


def _loopback(host: object) -> bool:
    if host in (None, "", "localhost"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _stay_on_this_machine(patch: pytest.MonkeyPatch) -> None:
    """A connection beyond loopback, a name lookup or apt fails the test."""

    def guarded(real):
        def connect(sock: socket.socket, address: object, *args: object):
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
                _refuse(f"connect to {address!r}")
            return real(sock, address, *args)

        return connect

    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: object, *args: object, **kwargs: object):
        if not _loopback(host):
            try:  # an address needs no lookup; only where it connects matters
                ipaddress.ip_address(str(host))
            except ValueError:
                _refuse(f"look up the name {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    real_popen_init = subprocess.Popen.__init__

    def popen_init(self: subprocess.Popen, args: object, *rest: object, **kwargs: object) -> None:
        argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
        words = str(argv[0]).split() if kwargs.get("shell") else [str(a) for a in argv[:2]]
        if any(Path(w).name in PACKAGE_MANAGERS for w in words):
            _refuse(f"run {args!r} (system packages belong in scripts/system-deps.sh)")
        real_popen_init(self, args, *rest, **kwargs)

    patch.setattr(socket.socket, "connect", guarded(socket.socket.connect))
    patch.setattr(socket.socket, "connect_ex", guarded(socket.socket.connect_ex))
    patch.setattr(socket, "getaddrinfo", getaddrinfo)
    patch.setattr(subprocess.Popen, "__init__", popen_init)


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


@pytest.fixture(scope="session")
def migrated_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed warehouse file with the whole schema, made once per session (per xdist worker)."""
    from athanor.warehouse import connect

    path = tmp_path_factory.mktemp("migrated") / "athanor.duckdb"
    connect(path, memory_limit="1GB").close()
    return path


@pytest.fixture
def warehouse(settings: Settings, migrated_warehouse: Path):
    from athanor.warehouse import connect

    # A copy of the migrated file instead of a new one: every migration costs ~0.35 CPU-s a test,
    # and connect() still runs migrate() on the copy, which finds the schema current.
    settings.warehouse.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(migrated_warehouse, settings.warehouse)
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
