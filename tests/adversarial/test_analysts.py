"""Analysts never trip over the nightly run: their commands read the published snapshot, as
`athanor query` does, and `--live` reads the warehouse itself (issue 30, Analysts)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from athanor import cli
from tests.adversarial.conftest import FIXTURES, GCP, JOBS

TELEMETRY = FIXTURES / "telemetry" / "gpu-node-01.nvidia-smi.csv"
ANALYSES = (
    ["forecast", "--format", "json"],
    ["anomalies", "--format", "json"],
    ["gpu-usage", "--format", "json"],
    ["gpu-plan", "--format", "json"],
)


@pytest.fixture
def published(home: Path) -> Path:
    """A home whose night has run: a warehouse and its snapshot, with billing, jobs and GPU samples."""
    landing = home / "landing"
    for folder, fixture in (("gcp", GCP), ("jobs", JOBS), ("telemetry", TELEMETRY)):
        (landing / folder).mkdir(parents=True)
        shutil.copy(fixture, landing / folder)
    assert cli.main(["run", "--source", str(landing)]) == 0
    return home / "warehouse" / "athanor.duckdb"


# A whole night, then four analyses while another process holds the warehouse: the slow tier.
@pytest.mark.slow
def test_analyses_answer_from_the_snapshot_while_a_run_holds_the_warehouse(
    published: Path, writer: Callable, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    live = {}
    for command in ANALYSES:
        assert cli.main([*command, "--live"]) == 0, capsys.readouterr().err
        live[command[0]] = json.loads(capsys.readouterr().out)
    # The fixture's night: 5 GCP lines ending 2023-11-05, 6 jobs, 8 samples of 2 GPUs.
    assert live["forecast"]["as_of"] == "2023-11-05"
    assert live["gpu-usage"]["gpu_hours"] == pytest.approx(0.3667)
    assert [p["job_class"] for p in live["gpu-plan"]][0] == "llm/llm-pretrain/llama-7b"

    with writer(published):
        for command in ANALYSES:
            code = cli.main(command)
            out, err = capsys.readouterr()
            assert code == 0, err
            assert json.loads(out) == live[command[0]], command[0]
        # --live still reads the warehouse, and says in one line that a writer holds it.
        assert cli.main(["forecast", "--live"]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: {published} is held by PID "), err
        assert err.endswith("analysts should read the snapshot\n") and err.count("\n") == 1
