"""The nightly report: HTML for people, JSON and CSV for machines, under reports/<date>/ and reports/latest/.

With the analysts' snapshot of the warehouse, published in the same step: every part is
written under a temporary name first, then all are renamed into place, or none is.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from athanor.publish.artifacts import (
    publish_to_bucket,
    recommendations_document,
    write_csvs,
    write_json,
    write_lifecycle,
)
from athanor.publish.data import ReportData, load_report_data
from athanor.publish.render import render_html
from athanor.warehouse import snapshots

__all__ = [
    "ReportData",
    "ReportPaths",
    "build_report",
    "load_report_data",
    "publish_report",
    "publish_to_bucket",
]

LATEST = "latest"


@dataclass(frozen=True)
class ReportPaths:
    """Where one report landed; file paths point into the dated folder."""

    dated_dir: Path
    latest_dir: Path
    html: Path
    recommendations_json: Path
    csv: tuple[Path, ...]
    lifecycle: tuple[Path, ...]
    latest_moved: bool = True  # False: latest/ already showed a later day and was kept
    snapshot: Path | None = None  # the analysts' snapshot published with the report, if any


def _swap_in(staged: Path, target: Path) -> Path | None:
    """Put the finished folder or file `staged` at `target`; return where the previous one is
    kept until the whole publication has succeeded (None: there was none).

    A folder takes two renames on one filesystem: a reader sees the old complete folder or
    the new complete one (for an instant, none), never a half-written one. A file is replaced
    in one atomic rename, its predecessor kept through a hard link, so its path always names
    a whole file (readers of the snapshot rely on that).
    """
    if not target.exists():
        os.rename(staged, target)
        return None
    backup = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
    if staged.is_dir():
        os.rename(target, backup)
        try:
            os.rename(staged, target)
        except OSError:
            os.rename(backup, target)
            raise
        return backup
    try:
        os.link(target, backup)
    except OSError:  # a filesystem without hard links: the path is missing for an instant
        os.rename(target, backup)
    try:
        os.replace(staged, target)
    except OSError:
        if not target.exists():
            os.rename(backup, target)
        else:
            backup.unlink()
        raise
    return backup


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _swap_all(pairs: list[tuple[Path, Path]]) -> None:
    """Swap every (staged, target) pair in, in order; if one fails, put back those already done."""
    done: list[tuple[Path, Path | None]] = []
    try:
        for staged, target in pairs:
            done.append((target, _swap_in(staged, target)))
    except BaseException:
        for target, backup in reversed(done):
            if backup is None:
                _remove(target)
            elif backup.is_dir():
                _remove(target)
                os.rename(backup, target)
            else:
                os.replace(backup, target)
        raise
    for _, backup in done:
        if backup is not None:
            _remove(backup)


def _write_report(data: ReportData, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "report.html").write_text(render_html(data), encoding="utf-8")
    write_json(folder / "recommendations.json", recommendations_document(data))
    write_csvs(data, folder)
    write_lifecycle(data, folder)


def _day_shown(folder: Path) -> date | None:
    """The day a published report folder is for (None: no readable report there)."""
    try:
        return date.fromisoformat(json.loads((folder / "recommendations.json").read_text())["as_of"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_report(
    con: duckdb.DuckDBPyConnection,
    as_of: date,
    out_dir: Path,
    run_id: str,
    *,
    snapshot: Path | None = None,
    warehouse: Path | None = None,
    before_snapshot: Callable[[], None] | None = None,
    snapshot_ahead: snapshots.WriteAhead | None = None,
) -> ReportPaths:
    """Render the report for `as_of` into out_dir/<as_of>/ and copy it to out_dir/latest/.

    latest/ only moves forward: a run for an earlier day (a backfill) leaves it on the later day.
    With `snapshot`, a copy of `warehouse` (the file `con` has open) is published there in the
    same step: on any failure, a full disk included, nothing is left behind and the previous
    report and snapshot stay as they were. `before_snapshot` runs once the report is rendered,
    just before the warehouse is copied: what it writes to the warehouse is in the snapshot.
    `snapshot_ahead`: the snapshot's files written while the run's stages ran, for it to use.
    """
    if snapshot is not None and warehouse is None:
        raise ValueError("publishing a snapshot needs the warehouse file it copies")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_report_data(con, as_of, run_id)
    token = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    dated = out_dir / as_of.isoformat()
    latest = out_dir / LATEST
    staged = out_dir / f".{as_of.isoformat()}.tmp-{token}"
    staged_latest = out_dir / f".{LATEST}.tmp-{token}"
    shown = _day_shown(latest)
    move_latest = shown is None or shown <= as_of
    staged_snapshot = None
    try:
        _write_report(data, staged)
        swaps = [(staged, dated)]
        if move_latest:
            shutil.copytree(staged, staged_latest)
            swaps.append((staged_latest, latest))
        if snapshot is not None and warehouse is not None:
            if before_snapshot is not None:
                before_snapshot()
            staged_snapshot = snapshots.stage(con, Path(snapshot), snapshot_ahead)
            swaps.append((staged_snapshot.path, Path(snapshot)))
        _swap_all(swaps)
        if staged_snapshot is not None:
            staged_snapshot.remove_unreferenced()
    finally:
        shutil.rmtree(staged, ignore_errors=True)
        shutil.rmtree(staged_latest, ignore_errors=True)
        if staged_snapshot is not None:
            staged_snapshot.discard()
    return ReportPaths(
        dated_dir=dated,
        latest_dir=latest,
        html=dated / "report.html",
        recommendations_json=dated / "recommendations.json",
        csv=tuple(sorted(dated.glob("*.csv"))),
        lifecycle=tuple([dated / "lifecycle.json", *sorted((dated / "lifecycle").glob("*.json"))]),
        latest_moved=move_latest,
        snapshot=None if snapshot is None else Path(snapshot),
    )


def publish_report(s3_client: object, paths: ReportPaths, url: str) -> list[str]:
    """Upload a built report to s3://bucket/prefix/<as_of>/ and mirror it to .../latest/."""
    base = url.rstrip("/")
    keys = publish_to_bucket(s3_client, paths.dated_dir, f"{base}/{paths.dated_dir.name}")
    keys += publish_to_bucket(s3_client, paths.latest_dir, f"{base}/{LATEST}", delete_stale=True)
    return keys
