"""A fault while publishing (a full disk, a rename refused) leaves the previous report and
snapshot in place, as a pair, with no temporary file left to keep the disk full."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from datetime import date
from pathlib import Path

import duckdb
import pytest

from athanor import flow
from athanor.settings import Settings
from athanor.warehouse import connect
from athanor.warehouse import snapshots as snapshot_module

AS_OF = date(2026, 11, 30)


def _bill(warehouse: Path, row: int, cost: str) -> None:
    """One USD usage line of 2026-11-10 in the warehouse."""
    con = connect(warehouse)
    try:
        con.execute(
            """insert into billing_facts (load_id, source_file, source_row, source_format, billing_account_id,
                   billing_currency, billing_period_start, billing_period_end, charge_period_start,
                   charge_period_end, charge_category, billed_cost, effective_cost)
               values ('l1', 'f.csv', ?, 'focus', 'acct', 'USD', '2026-11-01', '2026-12-01',
                       '2026-11-10 00:00', '2026-11-10 01:00', 'Usage', ?, ?)""",
            [row, cost, cost],
        )
    finally:
        con.close()


def _run(settings: Settings, run_id: str) -> flow.RunContext:
    return flow.RunContext(run_id=run_id, as_of=AS_OF, params={}, settings=settings)


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _snapshot_rows(path: Path) -> tuple[int, str]:
    with duckdb.connect(str(path), read_only=True) as con:
        count, total = con.execute("select count(*), sum(effective_cost) from billing_facts").fetchone()
    return count, str(total)


def _leftovers(*folders: Path) -> list[str]:
    return sorted(
        p.name for folder in folders for p in folder.iterdir() if ".tmp" in p.name or ".old-" in p.name
    )


@pytest.fixture
def published(home: Path) -> Settings:
    """Yesterday's good publication: one bill line of 100.00, run-1's report and snapshot."""
    settings = Settings.from_env()
    _bill(settings.warehouse, 1, "100.00")
    flow.publish(_run(settings, "run-1"))
    _bill(settings.warehouse, 2, "250.00")  # tonight's load: the next report would say 350.00
    return settings


def _state(settings: Settings) -> dict[str, object]:
    return {
        "latest": _tree(settings.reports / "latest"),
        "dated": _tree(settings.reports / AS_OF.isoformat()),
        "snapshot": settings.snapshot.read_bytes(),
    }


@pytest.mark.slow
def test_a_full_disk_while_copying_the_snapshot_leaves_the_previous_pair_and_no_temp_file(
    published: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = published
    before = _state(settings)
    assert json.loads(before["latest"]["recommendations.json"])["summary"]["spend_usd"] == 100.0
    parts_before = _tree(snapshot_module.parts_dir(settings.snapshot))
    assert len(parts_before) == 1  # yesterday's one billing partition
    partial: list[Path] = []

    # Tonight's row changed the partition: its file is written again, and the disk fills.
    def disk_fills_halfway(con, table, spec, values, columns, path: Path) -> tuple[int, tuple[str, ...]]:
        Path(path).write_bytes(b"PAR1" + b"\0" * 4096)
        partial.append(Path(path))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(snapshot_module, "_write_parquet", disk_fills_halfway)
    with pytest.raises(OSError) as failure:
        flow.publish(_run(settings, "run-2"))

    assert failure.value.errno == errno.ENOSPC
    assert partial and not partial[0].exists()  # the half-written file is gone
    assert _leftovers(settings.reports, settings.snapshot.parent) == []
    assert _state(settings) == before  # report and snapshot: both yesterday's
    assert _tree(snapshot_module.parts_dir(settings.snapshot)) == parts_before
    assert json.loads((settings.reports / "latest" / "recommendations.json").read_text())["run_id"] == "run-1"
    assert _snapshot_rows(settings.snapshot) == (1, "100.000000000000")

    # With space again, the next run publishes both, and they agree.
    monkeypatch.undo()
    flow.publish(_run(settings, "run-3"))
    summary = json.loads((settings.reports / "latest" / "recommendations.json").read_text())
    assert (summary["run_id"], summary["summary"]["spend_usd"]) == ("run-3", 350.0)
    assert _snapshot_rows(settings.snapshot) == (2, "350.000000000000")
    assert _leftovers(settings.reports, settings.snapshot.parent) == []


@pytest.mark.slow
def test_a_refused_snapshot_rename_puts_the_report_back(
    published: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = published
    before = _state(settings)
    replace = os.replace

    def refuse_the_snapshot(src: os.PathLike, dst: os.PathLike) -> None:
        if Path(dst) == settings.snapshot:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
        replace(src, dst)

    # The report's folders were swapped in first; the snapshot's rename is the last step.
    monkeypatch.setattr(os, "replace", refuse_the_snapshot)
    with pytest.raises(OSError, match="Input/output error"):
        flow.publish(_run(settings, "run-2"))
    monkeypatch.undo()

    assert _state(settings) == before
    assert _leftovers(settings.reports, settings.snapshot.parent) == []


@pytest.mark.slow
def test_a_copy_left_by_a_killed_run_is_removed_by_the_next(published: Settings) -> None:
    settings = published
    dead = subprocess.Popen(["true"])  # a process that has ended: its id names no one now
    dead.wait()
    stale = settings.snapshot.with_name(f".{settings.snapshot.name}.{dead.pid}.tmp")
    stale.write_bytes(b"\0" * 4096)  # what a run killed mid-copy leaves

    flow.publish(_run(settings, "run-2"))

    assert not stale.exists()
    assert _leftovers(settings.reports, settings.snapshot.parent) == []
    assert _snapshot_rows(settings.snapshot) == (2, "350.000000000000")


def test_a_snapshot_copy_is_staged_beside_and_removed_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = tmp_path / "wh.duckdb"
    _bill(warehouse, 1, "100.00")
    con = connect(warehouse)
    try:
        snapshot = tmp_path / "snap" / "wh-snapshot.duckdb"
        staged = snapshot_module.stage_snapshot(con, warehouse, snapshot)
        assert staged.parent == snapshot.parent and staged.name.endswith(".tmp")
        assert _snapshot_rows(staged) == (1, "100.000000000000")
        assert not snapshot.exists()  # only the caller's rename publishes it
        staged.unlink()

        # Building the small file fails after the partition's Parquet file was written:
        # neither the file nor the temporary snapshot is left behind.
        def fails(*args: object) -> None:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

        monkeypatch.setattr(snapshot_module, "_fact_view", fails)
        with pytest.raises(OSError):
            snapshot_module.stage_snapshot(con, warehouse, snapshot)
        assert sorted(p.name for p in snapshot.parent.rglob("*") if p.is_file()) == []
    finally:
        con.close()
