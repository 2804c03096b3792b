"""The nightly flow as plain functions: one per DAG task, each safe to re-run."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from athanor.ingest import IngestError, checksum, ingest_billing, read_columns, record_failure
from athanor.settings import Settings
from athanor import sources
from athanor.warehouse import connect, transaction


@dataclass
class IngestOutcome:
    lines: list[str] = field(default_factory=list)  # one summary line per delivery
    errors: list[str] = field(default_factory=list)  # one reason per delivery that failed
    loaded: int = 0


def _data_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(
        p for p in path.rglob("*") if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )


def classify(con: duckdb.DuckDBPyConnection, file: Path) -> str:
    """'billing', 'jobs' or 'unknown', from the file's content."""
    try:
        columns = read_columns(con, file)
        if sources.detect(list(columns)) is not None:
            return "billing"
    except IngestError:
        pass
    from athanor import jobs

    try:
        jobs.detect_job_format(file)
        return "jobs"
    except (ValueError, OSError, UnicodeDecodeError):
        return "unknown"


def ingest_paths(paths: list[Path], warehouse: Path, *, settings: Settings) -> IngestOutcome:
    """Load every delivery found under `paths`; a bad one is reported and the rest still load."""
    outcome = IngestOutcome()
    con = connect(warehouse, memory_limit=settings.duckdb_memory_limit, threads=settings.duckdb_threads)
    try:
        billing: dict[Path, list[Path]] = defaultdict(list)
        job_files: list[Path] = []
        for root in paths:
            if not root.exists():
                outcome.errors.append(f"{root}: no such file or folder")
                continue
            for file in _data_files(root):
                try:
                    kind = classify(con, file)
                except IngestError as exc:
                    outcome.errors.append(str(exc))
                    continue
                if kind == "billing":
                    # The files of one folder form one delivery (multi-part exports).
                    billing[file.parent if root.is_dir() else file].append(file)
                elif kind == "jobs":
                    job_files.append(file)
                elif root.is_file():
                    outcome.errors.append(f"{file.name}: not a known billing or job-log format")
        for files in billing.values():
            _load(outcome, con, files, "billing", lambda fs: ingest_billing(con, fs).summary())
        for file in job_files:
            _load(outcome, con, [file], "jobs", lambda fs: ingest_job_file(con, fs[0]))
    finally:
        con.close()
    return outcome


def _load(outcome: IngestOutcome, con: duckdb.DuckDBPyConnection, files: list[Path], kind: str, load) -> None:
    try:
        outcome.lines.append(load(files))
        outcome.loaded += 1
    except (IngestError, ValueError) as exc:
        outcome.errors.append(str(exc))
        record_failure(con, files, kind, exc)


def ingest_job_file(con: duckdb.DuckDBPyConnection, file: Path, as_of: datetime | None = None) -> str:
    """Load one job-log file; a job reported again (e.g. finished since) replaces its earlier row."""
    from athanor import jobs

    digest, size = checksum([file])
    load_id = digest[:16]
    if con.execute("select 1 from loads where load_id = ? and status = 'loaded'", [load_id]).fetchone():
        return f"{file.name}: unchanged since load {load_id}, skipped"
    frame = jobs.read_job_runs(file, as_of=as_of)
    frame = frame.assign(load_id=load_id, source_file=file.name)
    now = datetime.now(UTC).replace(tzinfo=None)
    with transaction(con):
        con.register("incoming_jobs", frame)
        con.execute(
            """delete from job_run_facts
               where (source, job_id) in (select source, job_id from incoming_jobs)"""
        )
        con.execute("insert into job_run_facts by name select * exclude (platform) from incoming_jobs")
        con.unregister("incoming_jobs")
        con.execute(
            "insert or replace into loads values (?, 'jobs', ?, ?, ?, ?, ?, ?, null, null, 'loaded', null, ?, ?)",
            [load_id, str(frame["source"].iloc[0]), str(file.parent), [file.name], digest, size, len(frame), now, now],
        )
    summary = jobs.summarise(frame)
    return f"{file.name}: {frame['source'].iloc[0]} job log, {len(frame):,} jobs, {summary.get('censored_share', 0):.0%} censored"


