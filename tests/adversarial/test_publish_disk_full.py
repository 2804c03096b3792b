"""A disk that fills while the snapshot's small file is written: the error says "No space left
on device" (not "cannot rollback - no transaction is active"), `pipeline_runs` says the
publish failed (not 'success', written for the snapshot just before), and the report and the
snapshot are yesterday's.

DuckDB ends the transaction itself when its write fails on a full disk; the fault is made
here by doing just that, then raising DuckDB's IOException, at the small file's last step.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from athanor import flow
from athanor.settings import Settings
from athanor.warehouse import snapshots as snapshot_module
from tests.adversarial.test_publish_faults import _run, _state, published  # noqa: F401 - fixture

ENOSPC = 'IO Error: Could not write file ".athanor-snapshot.duckdb.tmp": No space left on device'


@pytest.mark.slow
def test_a_full_disk_in_the_small_file_reports_enospc_and_a_failed_publish(
    published: Settings,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = published
    before = _state(settings)

    def disk_full(con: duckdb.DuckDBPyConnection, *args: object) -> None:
        con.execute("rollback")  # what DuckDB does to the transaction when the write fails
        raise duckdb.IOException(ENOSPC)

    monkeypatch.setattr(snapshot_module, "_write_manifest", disk_full)
    with pytest.raises(duckdb.IOException) as failure:
        flow.run_stage("publish", {"run_id": "run-2", "params": {"as_of": "2026-11-30"}}, settings=settings)
    monkeypatch.undo()

    assert str(failure.value) == ENOSPC
    assert _state(settings) == before  # report and snapshot: both yesterday's
    with duckdb.connect(str(settings.warehouse), read_only=True) as con:
        rows = con.execute(
            "select run_id, status, summary from pipeline_runs where stage = 'publish' order by run_id"
        ).fetchall()
    assert [(run_id, status) for run_id, status, _ in rows] == [("run-1", "success"), ("run-2", "failed")]
    assert json.loads(rows[1][2]) == {"error": ENOSPC}


@pytest.mark.slow
def test_the_next_run_with_space_publishes(published: Settings, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    def disk_full(con: duckdb.DuckDBPyConnection, *args: object) -> None:
        con.execute("rollback")
        raise duckdb.IOException(ENOSPC)

    monkeypatch.setattr(snapshot_module, "_write_manifest", disk_full)
    with pytest.raises(duckdb.IOException):
        flow.publish(_run(published, "run-2"))
    monkeypatch.undo()
    flow.publish(_run(published, "run-3"))
    summary = json.loads((published.reports / "latest" / "recommendations.json").read_text())
    assert (summary["run_id"], summary["summary"]["spend_usd"]) == ("run-3", 350.0)
    assert not any(".tmp" in p.name for p in Path(published.snapshot).parent.iterdir())
