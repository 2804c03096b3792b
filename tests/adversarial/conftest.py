"""What the adversarial tests share: an Athanor home of their own (or a module's shared copy), and a
writer in another process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from athanor.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GCP = FIXTURES / "billing" / "gcp" / "billing-export-202311.jsonl"
JOBS = FIXTURES / "jobs" / "jobs.csv"

# A second process that opens the warehouse for writing and keeps it until its stdin closes:
# DuckDB's file lock is per process, so a conflict needs another one.
HOLD_WRITER = (
    "import sys, duckdb; con = duckdb.connect(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
)


def athanor_home(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ATHANOR_HOME in `folder` (also the working folder: a stray relative write lands there and
    is seen), no Athanor or AWS setting from the caller's shell."""
    for name in list(os.environ):
        if name.startswith(("ATHANOR_", "AWS_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ATHANOR_HOME", str(folder))
    monkeypatch.setenv("ATHANOR_DUCKDB_MEMORY_LIMIT", "1GB")
    # boto3 clients built by the CLI never ask the EC2 metadata service for credentials.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.chdir(folder)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An Athanor home of the test's own, in its temp folder (see `athanor_home`)."""
    athanor_home(tmp_path, monkeypatch)
    # main() lets SIGPIPE end the process, as a Unix filter should; pytest's process keeps its own.
    previous = signal.getsignal(signal.SIGPIPE)
    yield tmp_path
    signal.signal(signal.SIGPIPE, previous)


@pytest.fixture
def unchanged(shared_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> Settings:
    """A module's shared copy (its own `shared_home` fixture) as this test's Athanor home and
    working folder: its Settings. For the tests that must change nothing, and check so."""
    from athanor.settings import Settings

    athanor_home(shared_home, monkeypatch)
    capsys.readouterr()
    return Settings.from_env()


@pytest.fixture
def writer() -> Callable[[Path], AbstractContextManager[subprocess.Popen]]:
    """`with writer(path) as proc:` another process holds `path` open for writing meanwhile."""

    @contextmanager
    def holding(path: Path) -> Iterator[subprocess.Popen]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD_WRITER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            yield proc
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=60)

    return holding


@pytest.fixture(scope="module")
def gcp_published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GCP fixture (7 lines, $34.22) loaded and published as the analysts' snapshot, as after a
    nightly run: its warehouse folder, built once per module; each test works on its own copy."""
    from athanor.cli import main
    from athanor.settings import Settings
    from athanor.warehouse import connect, publish_snapshot

    home = tmp_path_factory.mktemp("template")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATHANOR_HOME", str(home))
        patch.setenv("ATHANOR_DUCKDB_MEMORY_LIMIT", "1GB")
        settings = Settings.from_env()
        assert main(["ingest", str(GCP), "--warehouse", str(settings.warehouse)]) == 0
        con = connect(settings.warehouse, memory_limit="1GB")
        publish_snapshot(con, settings.warehouse, settings.snapshot)
        con.close()
    return settings.warehouse.parent
