"""No reader or second writer stops the night: `athanor run` holds the warehouse from its first
stage to its last, a second writer waits a bounded time and fails in one line, and analysts
querying throughout a run neither break it nor are broken by it."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from athanor import cli, flow
from athanor.warehouse import connect
from tests.adversarial.conftest import GCP, JOBS

# Opens the live warehouse read-only, as an analyst's `duckdb -readonly` does; DuckDB refuses
# while another process has it open for writing.
PROBE = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1], read_only=True).close()
    print("opened")
except duckdb.IOException:
    print("locked")
"""

# An analyst running `athanor query` over and over until told to stop (a file appears);
# prints one exit code per query, then 'done'.
QUERY_LOOP = """
import contextlib, io, sys
from pathlib import Path
from athanor import cli
stop = Path(sys.argv[1])
codes = []
while not stop.exists():
    with contextlib.redirect_stdout(io.StringIO()):
        codes.append(cli.main(["query", "select count(*) from billing_facts", "--format", "csv"]))
    if len(codes) == 1:
        print("ready", flush=True)
print(",".join(map(str, codes)), flush=True)
"""

# Keeps the published snapshot open read-only (`duckdb -readonly warehouse/athanor-snapshot.duckdb`)
# and reads from it until stdin closes; prints the row count it saw at the start and at the end.
HOLD_SNAPSHOT = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
before = con.execute("select count(*) from billing_facts").fetchone()[0]
print("ready", flush=True)
sys.stdin.read()
print(before, con.execute("select count(*) from billing_facts").fetchone()[0], flush=True)
"""


def _landing(home: Path) -> Path:
    landing = home / "landing"
    (landing / "gcp").mkdir(parents=True)
    (landing / "jobs").mkdir()
    shutil.copy(GCP, landing / "gcp")
    shutil.copy(JOBS, landing / "jobs")
    return landing


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _child_env() -> dict[str, str]:
    # The child imports the same athanor as this test (a checkout's, or the one on PYTHONPATH).
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


@pytest.mark.slow
def test_a_second_writer_waits_the_set_time_then_fails_in_one_line(
    home: Path,
    writer: Callable,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    landing = _landing(home)
    warehouse = home / "warehouse" / "athanor.duckdb"
    connect(warehouse).close()  # an empty warehouse with its schema, as after `make demo`
    before = _sha(warehouse)
    monkeypatch.setenv("ATHANOR_WRITER_WAIT_S", "1.5")

    with writer(warehouse) as holder:
        started = time.monotonic()
        code = cli.main(["run", "--source", str(landing)])
        waited = time.monotonic() - started
        after = _sha(warehouse)

    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""  # nothing was landed, loaded or published
    assert err.count("\n") == 1, err
    assert err.startswith(f"error: {warehouse} is held by PID {holder.pid} (python")
    assert err.endswith(
        "; gave up after waiting 1.5 s (ATHANOR_WRITER_WAIT_S); analysts should read the snapshot\n"
    )
    assert 1.5 <= waited < 1.5 + 10  # bounded: the wait, plus start-up
    assert after == before
    assert not (home / "reports").exists()
    assert not (home / "warehouse" / "athanor-snapshot.duckdb").exists()


# Two whole nights beside probing processes: seconds of CPU, so the slow tier (`make test`).
@pytest.mark.slow
def test_the_run_keeps_the_warehouse_from_the_first_stage_to_the_last(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    landing = _landing(home)
    warehouse = home / "warehouse" / "athanor.duckdb"
    seen: dict[str, str] = {}

    def probing(name: str, function: Callable[..., dict]) -> Callable[..., dict]:
        def stage(*args: object) -> dict:
            # Between the previous stage and this one, another process tries the file.
            probe = subprocess.run(
                [sys.executable, "-c", PROBE, str(warehouse)], capture_output=True, text=True, check=True
            )
            seen[name] = probe.stdout.strip()
            return function(*args)

        return stage

    for name in ("validate", "fit_durations", "recommend_mix", "recommend_lifecycle", "publish"):
        stage = flow.STAGE[name]
        monkeypatch.setitem(
            flow.STAGE, name, dataclasses.replace(stage, function=probing(name, stage.function))
        )

    assert cli.main(["run", "--source", str(landing)]) == 0
    assert seen == {
        "validate": "locked",
        "fit_durations": "locked",
        "recommend_mix": "locked",
        "recommend_lifecycle": "locked",
        "publish": "locked",
    }
    # Once the run is over the file is free again.
    probe = subprocess.run([sys.executable, "-c", PROBE, str(warehouse)], capture_output=True, text=True)
    assert probe.stdout.strip() == "opened"


# Whole nights with analysts' processes querying throughout: the slow tier (`make test`).
@pytest.mark.slow
def test_analysts_reading_throughout_a_run_neither_break_it_nor_are_broken(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    landing = _landing(home)
    assert cli.main(["run", "--source", str(landing)]) == 0  # yesterday's run: a snapshot to read
    snapshot = home / "warehouse" / "athanor-snapshot.duckdb"
    first_snapshot = snapshot.stat().st_ino
    # Tonight's delivery: a second billing file (same rows, another name and account).
    text = GCP.read_text().replace("01A2B3-C4D5E6-F7G8H9", "0ZZZZZ-C4D5E6-F7G8H9")
    (landing / "gcp2").mkdir()
    (landing / "gcp2" / "billing-export-202311-b.jsonl").write_text(text)
    capsys.readouterr()

    stop = home / "stop-reading"
    env = _child_env()
    reader = subprocess.Popen(
        [sys.executable, "-c", QUERY_LOOP, str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_SNAPSHOT, str(snapshot)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "ready\n"
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        code = cli.main(["run", "--source", str(landing)])
    finally:
        stop.touch()
        assert holder.stdin is not None
        holder.stdin.close()
        reader_out, reader_err = reader.communicate(timeout=120)
        held_counts = holder.stdout.read()
        holder.wait(timeout=60)

    out, err = capsys.readouterr()
    assert code == 0, err
    assert "billing-export-202311-b.jsonl: gcp, 5 rows" in out
    codes = reader_out.strip().split(",")
    assert len(codes) >= 2 and set(codes) == {"0"}, reader_err
    assert "Traceback" not in reader_err
    # A file's 5 lines carry 2 credits, each a row of its own: 7 rows. The held snapshot kept
    # showing yesterday's 7; the new one has tonight's 14.
    assert held_counts.split() == ["7", "7"]
    assert snapshot.stat().st_ino != first_snapshot
    assert cli.main(["query", "select count(*) as n from billing_facts", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "n\n14\n"
