"""Loading deliveries into the warehouse: recognise each file's kind, load it in one transaction.

Billing files go through `athanor.ingest.billing` (one delivery per folder and format); job logs,
S3 inventories and EBS listings are loaded here. Every kind passes its data-quality suite
inside its own transaction, so a rejected delivery leaves the warehouse as it was.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb

from athanor.ingest.billing import (
    IngestError,
    checksum,
    ingest_billing,
    read_columns,
    record_failure,
    sources,
)
from athanor.settings import Settings
from athanor.warehouse import LoadRecord, connect, insert_rows, record_load, transaction

logger = logging.getLogger(__name__)

# The data-quality suite a delivery kind's parse failure is recorded under (as rule 'parse').
PARSE_SUITE = {
    "billing": "billing_facts",
    "jobs": "job_run_facts",
    "inventory": "storage_objects",
    "ebs": "ebs_listings",
}


@dataclass
class IngestOutcome:
    lines: list[str] = field(default_factory=list)  # one summary line per delivery
    errors: list[str] = field(default_factory=list)  # one reason per delivery that failed
    failed: list[list[Path]] = field(default_factory=list)  # the files of each failed delivery
    loaded: int = 0
    unrecognised: int = 0  # files of no known format or unreadable (among `failed`)


# ---------------------------------------------------------------------------- ingest


def classify(con: duckdb.DuckDBPyConnection, file: Path) -> str:
    """'billing:<format>', 'jobs', 'inventory', 'ebs' or 'unknown', from the file's content."""
    from athanor.ingest import jobs

    keys = _json_keys(file)
    if {"fileSchema", "sourceBucket"} <= keys:
        return "inventory"
    if keys & {"Volumes", "Snapshots"}:
        return "ebs"
    try:
        fmt = sources.detect(list(read_columns(con, file)))
        if fmt is not None:
            return f"billing:{fmt.name}"
    except IngestError:
        pass
    try:
        jobs.detect_job_format(file)
        return "jobs"
    except (ValueError, OSError, UnicodeDecodeError):
        return "unknown"


def _json_keys(file: Path) -> set[str]:
    """Top-level keys of a small JSON object file (empty for anything else)."""
    if file.suffix != ".json" or file.stat().st_size > 50_000_000:
        return set()
    try:
        doc = json.loads(file.read_text())
    except (ValueError, UnicodeDecodeError):
        return set()
    return set(doc) if isinstance(doc, dict) else set()


def ingest_paths(
    paths: list[Path], warehouse: Path, *, settings: Settings, as_of: date | None = None
) -> IngestOutcome:
    """Load every delivery found under `paths`; a bad one is reported and the rest still load."""
    from athanor.land import landing

    deliveries: list[tuple[str, list[Path], bool]] = []  # (uri, files, given explicitly)
    outcome = IngestOutcome()
    for root in paths:
        if not root.exists():
            outcome.errors.append(f"{root}: no such file or folder")
        elif root.is_file():
            deliveries.append((str(root), [root], True))
        else:
            for d in landing.list_deliveries(str(root)):
                if d.ready:
                    deliveries.append((d.uri, landing.fetch(d, settings.home / ".cache" / "landing"), False))
                else:
                    outcome.lines.append(f"{d.uri}: waiting for parts {', '.join(d.missing)}; not loaded yet")
    return ingest_deliveries(deliveries, warehouse, settings=settings, as_of=as_of, outcome=outcome)


def ingest_deliveries(
    deliveries: list[tuple[str, list[Path], bool]],
    warehouse: Path,
    *,
    settings: Settings,
    as_of: date | None = None,
    outcome: IngestOutcome | None = None,
    run_id: str | None = None,
    quarantine: bool = False,
) -> IngestOutcome:
    """Load deliveries given as (uri, local files, files named explicitly by the user).

    `quarantine`: the caller moves every rejected delivery to quarantine, so the ledger says
    'quarantined' for it ('failed' otherwise).
    """
    outcome = outcome or IngestOutcome()
    failed_status = "quarantined" if quarantine else "failed"
    job_as_of = datetime.combine(as_of, datetime.max.time()) if as_of else None
    con = connect(
        warehouse,
        memory_limit=settings.duckdb_memory_limit,
        threads=settings.duckdb_threads,
        wait_s=settings.writer_wait_s,
    )
    try:
        for uri, files, explicit in deliveries:
            by_kind: dict[str, list[Path]] = defaultdict(list)
            for file in files:
                try:
                    by_kind[classify(con, file)].append(file)
                except IngestError as exc:
                    outcome.errors.append(str(exc))
                    outcome.failed.append([file])
            for kind in sorted(k for k in by_kind if k.startswith("billing:")):
                # The billing files of one format in one delivery load together (multi-part exports).
                _load(
                    outcome,
                    con,
                    by_kind[kind],
                    "billing",
                    lambda fs, uri=uri: _billing_lines(con, fs, uri, run_id, settings),
                    run_id,
                    failed_status,
                )
            for file in by_kind["jobs"]:
                _load(
                    outcome,
                    con,
                    [file],
                    "jobs",
                    lambda fs: ingest_job_file(con, fs[0], job_as_of, run_id),
                    run_id,
                    failed_status,
                )
            for file in by_kind["inventory"]:
                _load(
                    outcome,
                    con,
                    [file],
                    "inventory",
                    lambda fs: ingest_inventory(con, fs[0], run_id),
                    run_id,
                    failed_status,
                )
            for file in by_kind["ebs"]:
                _load(outcome, con, [file], "ebs", lambda fs: ingest_ebs(con, fs[0]), run_id, failed_status)
            if explicit:
                # Inside a folder, files of no known format (e.g. inventory data parts) are not
                # deliveries of their own; a file the user named explicitly must be one.
                for file in by_kind["unknown"]:
                    outcome.errors.append(f"{file.name}: not a known billing, job-log or inventory format")
                    outcome.failed.append([file])
    finally:
        con.close()
    return outcome


def _billing_lines(
    con: duckdb.DuckDBPyConnection, files: list[Path], uri: str, run_id: str | None, settings: Settings
) -> str:
    """Load one billing delivery; its summary line, then any data-quality warnings."""
    from athanor.quality import QualityError, store_results, warnings_for_load

    try:
        result = ingest_billing(con, files, source_uri=uri, run_id=run_id)
    except QualityError as exc:
        # The load rolled back; the verdict is kept, for the report and the operator.
        store_results(con, exc.outcome, settings.artifacts)
        raise
    if result.status != "loaded":
        return result.summary()
    return "\n".join([result.summary(), *(f"  warning: {w}" for w in warnings_for_load(con, result.load_id))])


def _load(
    outcome: IngestOutcome,
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    kind: str,
    load: Callable[[list[Path]], str],
    run_id: str | None = None,
    failed_status: str = "failed",
) -> None:
    from athanor.quality import QualityError

    clock = time.perf_counter()
    try:
        line = load(files)
    except (IngestError, ValueError) as exc:
        outcome.errors.append(str(exc))
        outcome.failed.append(files)
        if not isinstance(exc, QualityError):  # a rule's failure is in dq_results already
            _record_parse_failure(con, files, kind, exc, run_id)
        record_failure(con, files, kind, exc, status=failed_status)
        logger.info(
            "%s rejected (%s, %s) after %.1f s: %s",
            ", ".join(f.name for f in files),
            kind,
            failed_status,
            time.perf_counter() - clock,
            exc,
        )
        return
    outcome.lines.append(line)
    outcome.loaded += 1
    logger.info("%s (%.1f s)", line.replace("\n", "; "), time.perf_counter() - clock)


def _record_parse_failure(
    con: duckdb.DuckDBPyConnection, files: list[Path], kind: str, exc: Exception, run_id: str | None
) -> None:
    """A delivery that could not be read, as the failed result of rule 'parse' in dq_results."""
    from athanor.ingest.jobs.problems import JobRunError
    from athanor.quality import BatchContext, RuleResult, ValidationOutcome, store_results

    names = tuple(f.name for f in files)
    # observed_value says what is wrong; examples say where (row and value).
    if isinstance(exc, IngestError):
        column, observed, where = exc.column, exc.rule, (exc.file,)
        bad = exc.bad_rows if exc.bad_rows is not None else (1 if exc.row else None)
        examples = tuple(exc.examples) or ((f"row {exc.row}: {exc.rule}",) if exc.row else ())
    elif isinstance(exc, JobRunError):
        columns = {p.column for p in exc.problems}
        column, observed, where, bad = (
            (columns.pop() if len(columns) == 1 else None),
            None,
            (exc.file,),
            exc.total,
        )
        if exc.problems:
            observed = exc.problems[0].rule
        examples = tuple(str(p).removeprefix(f"{exc.file} ") for p in exc.problems[:5])
    else:
        column, observed, where, bad, examples = None, str(exc), names, None, ()
    load_id = checksum(files)[0][:16]
    result = RuleResult(
        rule="parse",
        column=column,
        severity="error",
        success=False,
        unexpected_count=bad,
        examples=examples,
        files=where,
        observed_value=observed,
    )
    context = BatchContext(run_id or f"load-{load_id}", load_id, names)
    store_results(con, ValidationOutcome(PARSE_SUITE[kind], "+".join(names), context, (result,)))


def _already_loaded(con: duckdb.DuckDBPyConnection, load_id: str) -> bool:
    return (
        con.execute("select 1 from loads where load_id = ? and status = 'loaded'", [load_id]).fetchone()
        is not None
    )


def _ledger(
    con: duckdb.DuckDBPyConnection,
    load_id: str,
    kind: str,
    fmt: str,
    files: list[Path],
    digest: str,
    size: int,
    rows: int,
) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    record = LoadRecord(
        load_id=load_id,
        kind=kind,
        source_format=fmt,
        source_uri=str(files[0].parent),
        files=tuple(f.name for f in files),
        checksum_sha256=digest,
        size_bytes=size,
        row_count=rows,
        status="loaded",
        started_at=now,
        finished_at=now,
    )
    record_load(con, record)


def _quality_gate(
    con: duckdb.DuckDBPyConnection, table: str, load_id: str, files: list[Path], run_id: str | None
) -> None:
    """Validate a load's rows inside its transaction; an error-level failure rolls it back."""
    from athanor.quality import BatchContext, QualityError, store_results, validate_batch

    context = BatchContext(run_id or f"load-{load_id}", load_id, tuple(f.name for f in files))
    outcome = validate_batch(con, table, table, context=context)
    if not outcome.ok:
        raise QualityError(outcome)
    store_results(con, outcome)


def ingest_job_file(
    con: duckdb.DuckDBPyConnection, file: Path, as_of: datetime | None = None, run_id: str | None = None
) -> str:
    """Load one job-log file; a job reported again (e.g. finished since) replaces its earlier row."""
    from athanor.ingest import jobs

    digest, size = checksum([file])
    load_id = digest[:16]
    if _already_loaded(con, load_id):
        return f"{file.name}: unchanged since load {load_id}, skipped"
    frame = jobs.read_job_runs(file, as_of=as_of)
    frame = frame.assign(load_id=load_id, source_file=file.name)
    with transaction(con):
        con.register("incoming_jobs", frame)
        con.execute(
            "delete from job_run_facts where (source, job_id) in (select source, job_id from incoming_jobs)"
        )
        columns = [r[0] for r in con.execute("describe job_run_facts").fetchall()]
        con.execute(f"insert into job_run_facts by name select {', '.join(columns)} from incoming_jobs")
        con.unregister("incoming_jobs")
        _quality_gate(con, "job_run_facts", load_id, [file], run_id)
        _ledger(con, load_id, "jobs", str(frame["source"].iloc[0]), [file], digest, size, len(frame))
    censored = float(frame["censored"].mean()) if len(frame) else 0.0
    return f"{file.name}: {frame['source'].iloc[0]} job log, {len(frame):,} jobs, {censored:.0%} censored"


def ingest_inventory(con: duckdb.DuckDBPyConnection, manifest: Path, run_id: str | None = None) -> str:
    """Load one S3 Inventory delivery; it replaces the bucket's previous inventory."""
    from athanor.ingest.checkpoints import index_checkpoints
    from athanor.recommend import lifecycle

    # The manifest lists every data file with its MD5: a changed part changes the manifest.
    digest, size = checksum([manifest])
    load_id = digest[:16]
    if _already_loaded(con, load_id):
        return f"{manifest.parent.name}/manifest.json: unchanged since load {load_id}, skipped"
    frame = lifecycle.read_inventory(manifest)
    stamp = manifest.parent.name[:10]  # AWS names the folder <date>T<hh>-<mm>Z
    inventory_date = date.fromisoformat(stamp) if _is_date(stamp) else datetime.now(UTC).date()
    index = index_checkpoints(frame, inventory_date).objects
    frame = frame.assign(
        load_id=load_id,
        inventory_date=inventory_date,
        run_id=index["run"].to_numpy(),
        step=index["step"].to_numpy(),
    )
    # Inventory CSVs leave fields that do not apply empty (a delete marker has no storage
    # class, a STANDARD object no tier); the warehouse says so with NULL.
    for column in ("storage_class", "it_access_tier", "version_id", "etag"):
        frame[column] = frame[column].replace("", None)
    with transaction(con):
        con.register("incoming_objects", frame)
        con.execute(
            "delete from storage_objects where bucket in (select distinct bucket from incoming_objects)"
        )
        columns = [r[0] for r in con.execute("describe storage_objects").fetchall()]
        con.execute(f"insert into storage_objects by name select {', '.join(columns)} from incoming_objects")
        con.unregister("incoming_objects")
        _quality_gate(con, "storage_objects", load_id, [manifest], run_id)
        _ledger(con, load_id, "inventory", "s3_inventory", [manifest], digest, size, len(frame))
    total_gb = frame["size_bytes"].sum() / 1e9
    return f"{manifest.parent.name}/manifest.json: S3 inventory, {len(frame):,} object versions, {total_gb:,.0f} GB"


def ingest_ebs(con: duckdb.DuckDBPyConnection, file: Path) -> str:
    """Load a DescribeVolumes / DescribeSnapshots listing; it replaces the previous one of its kind."""
    from athanor.ingest.inventory import read_ebs

    digest, size = checksum([file])
    load_id = digest[:16]
    if _already_loaded(con, load_id):
        return f"{file.name}: unchanged since load {load_id}, skipped"
    document = json.loads(file.read_text())
    kind = "volumes" if "Volumes" in document else "snapshots"
    parsed = read_ebs(document if kind == "volumes" else None, document if kind == "snapshots" else None)
    items = len(parsed.volumes if kind == "volumes" else parsed.snapshots)
    with transaction(con):
        listing = {
            "load_id": load_id,
            "kind": kind,
            "source_file": file.name,
            "items": items,
            "document": json.dumps(document),
        }
        insert_rows(con, "ebs_listings", [listing], replace=True)
        _ledger(con, load_id, "ebs", f"ebs_{kind}", [file], digest, size, items)
    return f"{file.name}: EBS {kind}, {items:,} items"


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
        return True
    except ValueError:
        return False
