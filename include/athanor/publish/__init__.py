"""The nightly report: HTML for people, JSON and CSV for machines, under reports/<date>/ and reports/latest/."""

from __future__ import annotations

import os
import shutil
import uuid
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


def _swap_in(staged: Path, target: Path) -> None:
    """Put the finished folder `staged` at `target`, replacing what was there.

    Two renames on one filesystem: a reader sees the old complete folder or the new
    complete one (for an instant, none), never a half-written one.
    """
    old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
    if target.exists():
        os.rename(target, old)
    try:
        os.rename(staged, target)
    except OSError:
        if old.exists():
            os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _write_report(data: ReportData, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "report.html").write_text(render_html(data), encoding="utf-8")
    write_json(folder / "recommendations.json", recommendations_document(data))
    write_csvs(data, folder)
    write_lifecycle(data, folder)


def build_report(con: duckdb.DuckDBPyConnection, as_of: date, out_dir: Path, run_id: str) -> ReportPaths:
    """Render the report for `as_of` into out_dir/<as_of>/ and copy it to out_dir/latest/."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_report_data(con, as_of, run_id)
    token = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    dated = out_dir / as_of.isoformat()
    latest = out_dir / LATEST
    staged = out_dir / f".{as_of.isoformat()}.tmp-{token}"
    staged_latest = out_dir / f".{LATEST}.tmp-{token}"
    try:
        _write_report(data, staged)
        shutil.copytree(staged, staged_latest)
        _swap_in(staged, dated)
        _swap_in(staged_latest, latest)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
        shutil.rmtree(staged_latest, ignore_errors=True)
    return ReportPaths(
        dated_dir=dated,
        latest_dir=latest,
        html=dated / "report.html",
        recommendations_json=dated / "recommendations.json",
        csv=tuple(sorted(dated.glob("*.csv"))),
        lifecycle=tuple([dated / "lifecycle.json", *sorted((dated / "lifecycle").glob("*.json"))]),
    )


def publish_report(s3_client: object, paths: ReportPaths, url: str) -> list[str]:
    """Upload a built report to s3://bucket/prefix/<as_of>/ and mirror it to .../latest/."""
    base = url.rstrip("/")
    keys = publish_to_bucket(s3_client, paths.dated_dir, f"{base}/{paths.dated_dir.name}")
    keys += publish_to_bucket(s3_client, paths.latest_dir, f"{base}/{LATEST}", delete_stale=True)
    return keys
