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


def test_a_full_disk_while_copying_the_snapshot_leaves_the_previous_pair_and_no_temp_file(
    published: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = published
    before = _state(settings)
    assert json.loads(before["latest"]["recommendations.json"])["summary"]["spend_usd"] == 100.0
    partial: list[Path] = []

    def disk_fills_halfway(src: Path, dst: Path) -> None:
        data = Path(src).read_bytes()
        Path(dst).write_bytes(data[: len(data) // 2])
        partial.append(Path(dst))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))

    monkeypatch.setattr(snapshot_module, "copyfile", disk_fills_halfway)
    with pytest.raises(OSError) as failure:
        flow.publish(_run(settings, "run-2"))

    assert failure.value.errno == errno.ENOSPC
    assert partial and not partial[0].exists()  # the half-written copy is gone
    assert _leftovers(settings.reports, settings.snapshot.parent) == []
    assert _state(settings) == before  # report and snapshot: both yesterday's
    assert json.loads((settings.reports / "latest" / "recommendations.json").read_text())["run_id"] == "run-1"
    assert _snapshot_rows(settings.snapshot) == (1, "100.000000000000")

    # With space again, the next run publishes both, and they agree.
    monkeypatch.undo()
    flow.publish(_run(settings, "run-3"))
    summary = json.loads((settings.reports / "latest" / "recommendations.json").read_text())
    assert (summary["run_id"], summary["summary"]["spend_usd"]) == ("run-3", 350.0)
    assert _snapshot_rows(settings.snapshot) == (2, "350.000000000000")
    assert _leftovers(settings.reports, settings.snapshot.parent) == []


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


def test_a_snapshot_copy_is_staged_beside_and_removed_on_failure(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh.duckdb"
    con = connect(warehouse)
    try:
        snapshot = tmp_path / "snap" / "wh-snapshot.duckdb"
        staged = snapshot_module.stage_snapshot(con, warehouse, snapshot)
        assert staged.parent == snapshot.parent and staged.name.endswith(".tmp")
        assert staged.read_bytes() == warehouse.read_bytes()
        assert not snapshot.exists()  # only the caller's rename publishes it
        staged.unlink()
        # The warehouse vanished under us: the copy fails, nothing is left behind.
        with pytest.raises(FileNotFoundError):
            snapshot_module.stage_snapshot(con, tmp_path / "missing.duckdb", snapshot)
        assert list(snapshot.parent.iterdir()) == []
    finally:
        con.close()
