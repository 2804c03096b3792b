"""A telemetry delivery that would thin out a GPU's samples is held like a shrinking bill.

The issue's case: a 760-sample DCGM file replaced 40,288 stored samples (exit 0, a warning) and
took the idle cost from $2,750 to $12,853. Here one GPU sampled every 5 minutes for 12 hours
(145 samples), then a file of the same GPU and hours sampled every 2 hours (7 samples): 7 is
less than half of 145 (ATHANOR_RESTATEMENT_MIN_SHARE), so it is refused in one line and the 145
stay. A file as dense as the first (a corrected delivery) still replaces them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from athanor.cli import main

HEADER = (
    "timestamp, name, pci.bus_id, uuid, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
    "power.draw [W]\n"
)
GPU = "GPU-6f2b7c1e-0d3a-4b5e-9f1a-2c3d4e5f6a70"
START = datetime(2026, 11, 3)


def smi(path: Path, every_minutes: int, utilisation: int, hours: int = 12) -> Path:
    """An nvidia-smi CSV of one GPU, a sample every `every_minutes` from START for `hours`."""
    lines = [HEADER]
    for step in range(hours * 60 // every_minutes + 1):
        at = START + timedelta(minutes=step * every_minutes)
        lines.append(
            f"{at:%Y/%m/%d %H:%M:%S}.000, NVIDIA A100-SXM4-40GB, 00000000:10:1C.0, {GPU}, "
            f"{utilisation} %, 30000 MiB, 40960 MiB, 250.00 W\n"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
    return path


def _samples(home: Path) -> list[tuple[int, int]]:
    with duckdb.connect(str(home / "warehouse" / "athanor.duckdb"), read_only=True) as con:
        return con.execute(
            "select count(*)::int, sum(utilisation_pct)::int from gpu_samples where gpu_id = ?", [GPU]
        ).fetchall()


@pytest.mark.slow
def test_a_thinned_telemetry_restatement_is_refused_and_the_samples_stay(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["ingest", str(smi(home / "d1" / "node-a.nvidia-smi.csv", 5, 80))]) == 0
    assert _samples(home) == [(145, 145 * 80)]
    capsys.readouterr()

    thin = smi(home / "d2" / "node-a.nvidia-smi.csv", 120, 1)
    assert main(["ingest", str(thin)]) == 1
    # One line; the other rule the file breaks is a warning (its samples would replace loaded ones).
    assert capsys.readouterr().err.splitlines() == [
        "error: node-a.nvidia-smi.csv: rule telemetry_restatement_collapsed failed, 1 bad GPU "
        f"(e.g. {GPU}: 7 samples, 145 before); "
        "1 more rule(s) failed: telemetry_sample_replaces_loaded"
    ]
    assert _samples(home) == [(145, 145 * 80)]  # nothing replaced

    # A delivery as dense (every 5 minutes, corrected figures) replaces them as before.
    assert main(["ingest", str(smi(home / "d3" / "node-a.nvidia-smi.csv", 5, 40))]) == 0
    assert _samples(home) == [(145, 145 * 40)]

    # The share is the billing restatement's setting; 0 turns the rule off.
    monkeypatch.setenv("ATHANOR_RESTATEMENT_MIN_SHARE", "0")
    assert main(["ingest", str(thin)]) == 0
    assert _samples(home) == [(7, 7)]
