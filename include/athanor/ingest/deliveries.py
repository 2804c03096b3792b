"""Loading deliveries into the warehouse: recognise each file's kind, load it in one transaction.

Billing files go through `athanor.ingest.billing` (one delivery per folder and format); job logs,
S3 inventories and EBS listings are loaded here. Every kind passes its data-quality suite
inside its own transaction, so a rejected delivery leaves the warehouse as it was.

No file stops the others: one that cannot be read (cut short, not UTF-8, a compression bomb,
too many or repeated columns; see `athanor.ingest.sniff`) or that is of no known format is
rejected with one line naming it, like a delivery that fails its checks, and the night's other
deliveries still load. The only files of no known format let through are the data parts of
an S3 Inventory whose manifest has landed too (the manifest's delivery reads them).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pandas as pd

from athanor.ingest import sniff, telemetry
from athanor.ingest.billing import (
    IngestError,
    checksum,
    ingest_billing,
    read_columns,
    record_failure,
    sources,
)
from athanor.ingest.sniff import DEFAULT_LIMITS, BrokenFile, InputLimits
from athanor.land.names import shown, shown_all
from athanor.settings import Settings
from athanor.warehouse import LoadRecord, connect, insert_rows, lake, record_load, sql, transaction

logger = logging.getLogger(__name__)

# The data-quality suite a delivery kind's parse failure is recorded under (as rule 'parse').
PARSE_SUITE = {
    "billing": "billing_facts",
    "jobs": "job_run_facts",
    "inventory": "storage_objects",
    "ebs": "ebs_listings",
    "ec2_instances": "ec2_instances",
    "gpu_telemetry": "gpu_samples",
}


@dataclass
class IngestOutcome:
    lines: list[str] = field(default_factory=list)  # one summary line per delivery
    errors: list[str] = field(default_factory=list)  # one reason per delivery that failed
    failed: list[list[Path]] = field(default_factory=list)  # the files of each failed delivery
    loaded: int = 0  # deliveries taken, whatever their status (loaded, unchanged, empty, waiting)
    unrecognised: int = 0  # files of no known format or unreadable (among `failed`)
    # Deliveries per what happened to them: loaded | unchanged | empty | waiting | rejected.
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DELIVERY_STATUSES, 0))


DELIVERY_STATUSES = ("loaded", "unchanged", "empty", "waiting", "rejected")


def line_status(line: str) -> str:
    """What a delivery's summary line says happened to it (the loaders' one phrasing of each)."""
    first = line.split("\n", 1)[0]
    if ": unchanged since load " in first:
        return "unchanged"
    if first.endswith(": nothing to load"):
        return "empty"
    if ": waiting for parts " in first:
        return "waiting"
    return "loaded"


# ---------------------------------------------------------------------------- ingest


def classify(con: duckdb.DuckDBPyConnection, file: Path, limits: InputLimits = DEFAULT_LIMITS) -> str:
    """'billing:<format>', 'jobs', 'inventory', 'ebs', 'gpu_telemetry' or 'unknown', from the file's content.

    Reads only the file's first bytes (`sniff.HEAD_BYTES`), unless DuckDB cannot read it as a
    table: then why is looked for in the whole file, as a stream. Raises `BrokenFile` for a
    file no reader can take: empty, a gzip cut short, corrupt or expanding past the limits,
    text not in UTF-8, a header of more columns than the limit, or (billing files and job
    logs) a column named twice.
    """
    from athanor.ingest.jobs.detect import ShapeError
    from athanor.ingest.jobs.detect import detect as job_log_format

    data, header = sniff.check_content(file, limits)
    keys = _json_keys(file)
    if {"fileSchema", "sourceBucket"} <= keys:
        return "inventory"
    if keys & {"Volumes", "Snapshots"}:
        return "ebs"
    if "Reservations" in keys:  # aws ec2 describe-instances: the node map's instances
        return "ec2_instances"
    if telemetry.detect(data, header) is not None:
        if telemetry.is_header(header):  # a header-less nvidia-smi line may repeat a value
            sniff.check_unique(file, header)
        return telemetry.KIND
    try:
        fmt = sources.detect(list(read_columns(con, file, limits)))
    except BrokenFile:
        raise
    except IngestError as exc:
        fmt = None  # not a table DuckDB reads: maybe a job log
        _unparsed_export(file, header, exc)
    if fmt is not None:
        sniff.check_unique(file, header)
        return f"billing:{fmt.name}"
    _unparsed_export(file, header, None)
    try:
        job_log_format(data, file.name)
    except ShapeError as exc:  # a job log by its shape: how to write it, not "not a known format"
        problem = exc.problems[0]
        raise IngestError(file.name, f"{problem.rule}: {problem.detail}") from None
    except ValueError:
        return "unknown"
    sniff.check_unique(file, header)
    return "jobs"


def _unparsed_export(file: Path, header: list[str] | None, exc: IngestError | None) -> None:
    """Raise why DuckDB did not read as a table a CSV whose header names a billing format.

    DuckDB's sniffer either fails ('unreadable') or, finding no delimiter that splits every
    row alike, reads each line as one column: either way the format went unrecognised,
    although the header carries its columns. The first line that does not match the header
    is what to fix.
    """
    if not header or len(header) < 2 or file.suffix == ".json":
        return
    fmt = sources.detect(header)
    if fmt is None:
        return
    from athanor.ingest import csvtext

    where = csvtext.field_count_problem(file, header)
    said = f" ({exc.rule})" if exc is not None else ""
    raise IngestError(
        file.name,
        f"a {fmt.name} export by its header, but DuckDB could not parse it as CSV{said}: "
        + (where or "every line has the header's number of fields; check the quoting"),
    )


def _not_recognised(file: Path) -> IngestError:
    """Why a file of no known format is rejected, with its first line to recognise it by."""
    first = sniff.head(file, 200).decode("utf-8", errors="replace").lstrip("\ufeff").split("\n", 1)[0]
    return IngestError(
        file.name,
        f"not a known billing, job-log or inventory format (first line: {first.rstrip()[:80]!r})",
    )


def _inventory_parts(manifests: list[Path]) -> set[Path]:
    """The data files the S3 Inventory manifests name, where they are on disk."""
    from athanor.ingest.inventory import InventoryError, _locate, read_manifest

    parts = set()
    for manifest in manifests:
        try:
            entries = read_manifest(manifest).files
        except InventoryError:
            continue  # the manifest's own load reports it
        for entry in entries:
            found = _locate(manifest.parent, str(entry.get("key", "")))
            if found is not None:
                parts.add(found.resolve())
    return parts


def _json_keys(file: Path) -> set[str]:
    """Top-level keys of a small JSON object file (empty for anything else)."""
    if file.suffix != ".json" or file.stat().st_size > 50_000_000:
        return set()
    try:
        doc = json.loads(file.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested too deep: its reader refuses it
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
            outcome.errors.append(f"{shown(root)}: no such file or folder")
        elif root.is_file():
            deliveries.append((str(root), [root], True))
        else:
            found = landing.list_deliveries(str(root))
            if not found:
                outcome.lines.append(f"{shown(root)}: nothing to load (no files in the folder)")
            for d in found:
                if d.ready:
                    deliveries.append((d.uri, landing.fetch(d, settings.home / ".cache" / "landing"), False))
                else:
                    outcome.lines.append(
                        f"{shown(d.uri)}: waiting for parts {shown_all(d.missing)}; not loaded yet"
                    )
                    outcome.counts["waiting"] += 1
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
    limits = InputLimits.from_settings(settings)
    if not deliveries and not outcome.lines and not outcome.errors:
        outcome.lines.append("nothing to load: no delivery has landed")
    con = connect(
        warehouse,
        memory_limit=settings.duckdb_memory_limit,
        threads=settings.duckdb_threads,
        wait_s=settings.writer_wait_s,
    )
    try:
        # Every file's kind first: an inventory manifest anywhere in the night's deliveries
        # accounts for its data parts, wherever they sit.
        classified: list[tuple[str, bool, dict[str, list[Path]]]] = []
        for uri, files, explicit in deliveries:
            by_kind: dict[str, list[Path]] = defaultdict(list)
            for file in files:
                try:
                    by_kind[classify(con, file, limits)].append(file)
                except IngestError as exc:
                    _reject(outcome, con, [file], "unknown", exc, run_id, failed_status)
            classified.append((uri, explicit, by_kind))
        parts = _inventory_parts([f for _, _, by_kind in classified for f in by_kind["inventory"]])
        for uri, explicit, by_kind in classified:
            for kind in sorted(k for k in by_kind if k.startswith("billing:")):
                # The billing files of one format in one delivery load together (multi-part exports).
                _load(
                    outcome,
                    con,
                    by_kind[kind],
                    "billing",
                    lambda fs, uri=uri: _billing_lines(con, fs, uri, run_id, settings, as_of),
                    run_id,
                    failed_status,
                )
            # Instance listings before job logs: a job on nodes they name takes their instance type.
            for file in by_kind["ec2_instances"]:
                _load(
                    outcome,
                    con,
                    [file],
                    "ec2_instances",
                    lambda fs: ingest_ec2_instances(con, fs[0]),
                    run_id,
                    failed_status,
                )
            for file in by_kind["jobs"]:
                _load(
                    outcome,
                    con,
                    [file],
                    "jobs",
                    lambda fs: ingest_job_file(
                        con, fs[0], job_as_of, run_id, limits, settings.job_reject_max_share
                    ),
                    run_id,
                    failed_status,
                )
            for file in by_kind["inventory"]:
                _load(
                    outcome,
                    con,
                    [file],
                    "inventory",
                    lambda fs: ingest_inventory(con, fs[0], run_id, limits),
                    run_id,
                    failed_status,
                )
            for file in by_kind["ebs"]:
                _load(outcome, con, [file], "ebs", lambda fs: ingest_ebs(con, fs[0]), run_id, failed_status)
            # A file named on the command line must be a delivery itself, even an inventory part.
            read_by_manifest = [f for f in by_kind["unknown"] if not explicit and f.resolve() in parts]
            if read_by_manifest:
                logger.info(
                    "%s: %d S3 Inventory data file(s), read with their manifest: %s",
                    shown(uri),
                    len(read_by_manifest),
                    shown_all(f.name for f in read_by_manifest),
                )
            for file in by_kind["unknown"]:
                if file not in read_by_manifest:
                    _reject(outcome, con, [file], "unknown", _not_recognised(file), run_id, failed_status)
        # Telemetry last: a CloudWatch answer divides its figures by the GPUs of the job's
        # instance type, which the night's SageMaker job logs (any delivery) may bring.
        for _uri, _explicit, by_kind in classified:
            for group in telemetry.groups(by_kind[telemetry.KIND]):
                _load(
                    outcome,
                    con,
                    group,
                    telemetry.KIND,
                    lambda fs: telemetry.ingest_telemetry(con, fs, run_id=run_id, as_of=as_of),
                    run_id,
                    failed_status,
                )
    finally:
        con.close()
    return outcome


def allow_release(entry: Path | str, settings: Settings) -> str | None:
    """Before `athanor quarantine release` puts a delivery back: note in the ledger that the
    operator releases it, so that its next load takes it as it is.

    The one rule a release overrides is restated_period_collapsed (a restatement shrinking a
    month sharply is held until someone looks): the released delivery then loads, warned. The
    delivery is found by its load id, the checksum of its files under their original names,
    which the files keep when they go back. Returns that load id, or None when the warehouse
    has not seen the delivery (nothing to note). Refuses an entry outside the quarantine as
    `release` does (`ReleaseRefused`).
    """
    from athanor.ingest.billing import checksum_named
    from athanor.quality.quarantine import MANIFEST, ReleaseRefused, entry_path

    folder = entry_path(entry, settings.quarantine)
    try:
        listed = json.loads((folder / MANIFEST).read_text())["files"]
        files = [(str(item["original_name"]), folder / Path(str(item["name"])).name) for item in listed]
        load_id = checksum_named(files)[0][:16]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReleaseRefused(f"{shown(folder / MANIFEST)} is not a quarantine manifest ({exc})") from None
    if not settings.warehouse.exists():
        return None
    con = connect(
        settings.warehouse,
        memory_limit=settings.duckdb_memory_limit,
        threads=settings.duckdb_threads,
        wait_s=settings.writer_wait_s,
    )
    try:
        columns = [f.name for f in dataclasses.fields(LoadRecord)]
        row = con.execute(f"select {', '.join(columns)} from loads where load_id = ?", [load_id]).fetchone()
        if row is None:
            return None
        held = dict(zip(columns, row, strict=True))
        message = f"released from quarantine {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; was: {held['message']}"
        record_load(con, LoadRecord(**{**held, "status": "released", "message": message}))
    finally:
        con.close()
    logger.info("%s: released by the operator; its next load takes it as it is", load_id)
    return load_id


def _billing_lines(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    uri: str,
    run_id: str | None,
    settings: Settings,
    as_of: date | None = None,
) -> str:
    """Load one billing delivery; its summary line, then any data-quality warnings."""
    from athanor.quality import QualityError, store_results, warnings_for_load

    try:
        result = ingest_billing(
            con,
            files,
            source_uri=uri,
            run_id=run_id,
            as_of=as_of,
            limits=InputLimits.from_settings(settings),
        )
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
    clock = time.perf_counter()
    try:
        line = load(files)
    except (IngestError, ValueError) as exc:
        _reject(outcome, con, files, kind, exc, run_id, failed_status, clock)
        return
    except _INPUT_ERRORS as exc:
        # What a reader raises on a file it cannot take, where no rule named it first.
        text = " ".join(str(exc).split()) or type(exc).__name__
        for file in files:
            text = text.replace(str(file), file.name)  # DuckDB names the file by its local path
        reason = IngestError(shown_all(f.name for f in files), f"unreadable: {text[:300]}")
        _reject(outcome, con, files, kind, reason, run_id, failed_status, clock)
        return
    outcome.lines.append(line)
    outcome.loaded += 1
    outcome.counts[line_status(line)] += 1
    logger.info("%s (%.1f s)", line.replace("\n", "; "), time.perf_counter() - clock)


# Raised by readers on a file they cannot take (a file's fault: the other deliveries go on).
# A full disk, a lock or a missing warehouse is not the file's fault: those still stop the load.
_INPUT_ERRORS = (
    EOFError,
    zlib.error,
    gzip.BadGzipFile,
    duckdb.InvalidInputException,
    duckdb.ConversionException,
    duckdb.OutOfMemoryException,
)


def _reject(
    outcome: IngestOutcome,
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    kind: str,
    exc: Exception,
    run_id: str | None,
    failed_status: str,
    clock: float | None = None,
) -> None:
    """A delivery that will not load: its one-line reason for the run, its row in the ledger."""
    from athanor.quality import QualityError

    outcome.errors.append(str(exc))
    outcome.failed.append(files)
    outcome.counts["rejected"] += 1
    if kind == "unknown":
        outcome.unrecognised += 1
    elif not isinstance(exc, QualityError):  # a rule's failure is in dq_results already
        _record_parse_failure(con, files, kind, exc, run_id)
    record_failure(con, files, kind, exc, status=failed_status)
    # WARNING in the nightly run: a delivery held back is what the operator must see in the
    # task log. `athanor ingest` says it as its error line already (and Python would print a
    # WARNING to stderr a second time).
    logger.log(
        logging.WARNING if failed_status == "quarantined" else logging.INFO,
        "%s rejected (%s, %s)%s: %s",
        shown_all(f.name for f in files),
        kind,
        failed_status,
        f" after {time.perf_counter() - clock:.1f} s" if clock is not None else "",
        exc,
    )


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
        examples = tuple(str(p).removeprefix(f"{shown(exc.file)} ") for p in exc.problems[:5])
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
    con: duckdb.DuckDBPyConnection,
    file: Path,
    as_of: datetime | None = None,
    run_id: str | None = None,
    limits: InputLimits = DEFAULT_LIMITS,
    max_bad_share: float = 0.1,
) -> str:
    """Load one job-log file; a job reported again (e.g. finished since) replaces its earlier row.

    A Slurm log's bad records are rejected alone while at most `max_bad_share` of it (the
    summary line counts them); a job whose nodes the node map knows is on the instance type the
    map says, not its partition's name (the bill, not the scheduler, knows what ran)."""
    from athanor.ingest import jobs

    digest, size = checksum([file])
    load_id = digest[:16]
    if _already_loaded(con, load_id):
        return f"{shown(file.name)}: unchanged since load {load_id}, skipped"
    frame = jobs.read_job_runs(file, as_of=as_of, limits=limits, max_bad_share=max_bad_share)
    rejected = sum(frame.attrs.get("rejected", {}).values())
    frame = _instance_types_from_node_map(con, frame)
    frame = frame.assign(load_id=load_id, source_file=file.name)
    with transaction(con):
        con.register("incoming_jobs", frame)
        if not lake.attached(con):  # in the lake mode the load's Iceberg commit replaces them
            con.execute(
                "delete from job_run_facts where (source, job_id) in (select source, job_id from incoming_jobs)"
            )
        columns = [r[0] for r in con.execute("describe job_run_facts").fetchall()]
        staged = lake.staging(con, "job_run_facts")
        con.execute(f"insert into {staged} by name select {', '.join(columns)} from incoming_jobs")
        con.unregister("incoming_jobs")
        if lake.attached(con):
            lake.hide_replaced(con, "job_run_facts", load_id)
        _quality_gate(con, "job_run_facts", load_id, [file], run_id)
        _ledger(con, load_id, "jobs", str(frame["source"].iloc[0]), [file], digest, size, len(frame))
        if lake.attached(con):  # last: a failure above leaves the lake as it was
            lake.commit_load(con, "job_run_facts", load_id)
    censored = float(frame["censored"].mean()) if len(frame) else 0.0
    return (
        f"{shown(file.name)}: {frame['source'].iloc[0]} job log, {len(frame):,} jobs, {censored:.0%} censored"
        + (f", {rejected} problem(s) in rejected records" if rejected else "")
    )


def _instance_types_from_node_map(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> pd.DataFrame:
    """Slurm jobs and Kubernetes pods on nodes an `ec2_instances` listing names: the instance type
    of the first node (by PrivateDnsName or its short name, the Name tag or the instance id),
    not the partition."""
    if "node_list" not in frame or not frame["node_list"].notna().any():
        return frame
    names = con.execute(
        sql("ingest/job_node_instance_types", ec2_node_names=sql("marts/ec2_node_names"))
    ).fetchall()
    if not names:
        return frame
    kinds = dict(names)
    first = frame["node_list"].str.split(",").str[0]
    mapped = first.map(kinds).fillna(first.str.split(".").str[0].map(kinds))
    found = mapped.notna() & frame["source"].isin(["slurm", "kubernetes"])
    if found.any():
        logger.info("job instance types from the node map: %d of %d jobs", int(found.sum()), len(frame))
    return frame.assign(instance_type=frame["instance_type"].mask(found, mapped))


def ingest_inventory(
    con: duckdb.DuckDBPyConnection,
    manifest: Path,
    run_id: str | None = None,
    limits: InputLimits = DEFAULT_LIMITS,
) -> str:
    """Load one S3 Inventory delivery; it replaces the bucket's previous inventory."""
    from athanor.ingest.checkpoints import index_checkpoints
    from athanor.recommend import lifecycle

    # The manifest lists every data file with its MD5: a changed part changes the manifest.
    digest, size = checksum([manifest])
    load_id = digest[:16]
    if _already_loaded(con, load_id):
        return f"{shown(manifest.parent.name + '/manifest.json')}: unchanged since load {load_id}, skipped"
    frame = lifecycle.read_inventory(manifest, limits)
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
        if not lake.attached(con):  # in the lake mode the load's Iceberg commit replaces them
            con.execute(
                "delete from storage_objects where bucket in (select distinct bucket from incoming_objects)"
            )
        columns = [r[0] for r in con.execute("describe storage_objects").fetchall()]
        staged = lake.staging(con, "storage_objects")
        con.execute(f"insert into {staged} by name select {', '.join(columns)} from incoming_objects")
        con.unregister("incoming_objects")
        if lake.attached(con):
            lake.hide_replaced(con, "storage_objects", load_id)
        _quality_gate(con, "storage_objects", load_id, [manifest], run_id)
        _ledger(con, load_id, "inventory", "s3_inventory", [manifest], digest, size, len(frame))
        if lake.attached(con):  # last: a failure above leaves the lake as it was
            lake.commit_load(con, "storage_objects", load_id)
    total_gb = frame["size_bytes"].sum() / 1e9
    name = shown(manifest.parent.name + "/manifest.json")
    return f"{name}: S3 inventory, {len(frame):,} object versions, {total_gb:,.0f} GB"


def ingest_ebs(con: duckdb.DuckDBPyConnection, file: Path) -> str:
    """Load a DescribeVolumes / DescribeSnapshots listing; it replaces the previous one of its kind."""
    from athanor.ingest.inventory import read_ebs

    digest, size = checksum([file])
    load_id = digest[:16]
    if _already_loaded(con, load_id):
        return f"{shown(file.name)}: unchanged since load {load_id}, skipped"
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
    return f"{shown(file.name)}: EBS {kind}, {items:,} items"


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
        return True
    except ValueError:
        return False


def ingest_ec2_instances(con: duckdb.DuckDBPyConnection, file: Path) -> str:
    """Load an `aws ec2 describe-instances` listing: each instance it names replaces its earlier
    row (instances missing from it, terminated since, keep theirs: the node map needs them)."""
    from athanor.ingest.inventory import EC2_INSTANCE_COLUMNS, read_ec2_instances

    digest, size = checksum([file])
    load_id = digest[:16]
    if _already_loaded(con, load_id):
        return f"{shown(file.name)}: unchanged since load {load_id}, skipped"
    frame = read_ec2_instances(file).assign(load_id=load_id, source_file=file.name)
    columns = ", ".join(("load_id", "source_file", *EC2_INSTANCE_COLUMNS))
    with transaction(con):
        con.register("incoming_instances", frame)
        con.execute(
            "delete from ec2_instances where instance_id in (select instance_id from incoming_instances)"
        )
        con.execute(
            f"insert into ec2_instances ({columns}) select {columns} from incoming_instances "
            "qualify row_number() over (partition by instance_id order by launch_time desc nulls last) = 1"
        )
        con.unregister("incoming_instances")
        _ledger(con, load_id, "ec2_instances", "describe_instances", [file], digest, size, len(frame))
    gpu = frame["instance_type"].fillna("").str.match(r"^(p\d|g\d)")
    logger.info(
        "%s: read %d EC2 instances (%d of GPU families p/g), loaded into ec2_instances",
        shown(file.name),
        len(frame),
        int(gpu.sum()),
    )
    return f"{shown(file.name)}: EC2 instances, {len(frame):,} instances"
