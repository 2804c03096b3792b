"""The nightly flow as plain functions: one per DAG task, each safe to re-run.

Data flows one way: landing -> load (billing, jobs, storage) -> validate ->
(durations, demand) -> mix / lifecycle -> publish. Each stage reads what it needs
from the warehouse and writes its own tables, replacing its own rows for the run.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import duckdb

from athanor import sources
from athanor.errors import DataRejected
from athanor.ingest import IngestError, checksum, ingest_billing, read_columns, record_failure
from athanor.settings import Settings
from athanor.warehouse import connect, publish_snapshot, sql, transaction


@dataclass(frozen=True)
class RunContext:
    run_id: str
    as_of: date | None  # None: "the latest day in the warehouse"
    params: dict[str, Any]
    settings: Settings
    # Builds a boto3 S3 client for bucket sources (from an Airflow connection in a task).
    s3_client: Callable[[], Any] | None = None

    def connect(self) -> duckdb.DuckDBPyConnection:
        s = self.settings
        return connect(s.warehouse, memory_limit=s.duckdb_memory_limit, threads=s.duckdb_threads)


@dataclass
class IngestOutcome:
    lines: list[str] = field(default_factory=list)  # one summary line per delivery
    errors: list[str] = field(default_factory=list)  # one reason per delivery that failed
    failed: list[list[Path]] = field(default_factory=list)  # the files of each failed delivery
    loaded: int = 0


# ---------------------------------------------------------------------------- ingest


def classify(con: duckdb.DuckDBPyConnection, file: Path) -> str:
    """'billing:<format>', 'jobs', 'inventory', 'ebs' or 'unknown', from the file's content."""
    from athanor import jobs

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
    from athanor import landing

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
) -> IngestOutcome:
    """Load deliveries given as (uri, local files, files named explicitly by the user)."""
    outcome = outcome or IngestOutcome()
    job_as_of = datetime.combine(as_of, datetime.max.time()) if as_of else None
    con = connect(warehouse, memory_limit=settings.duckdb_memory_limit, threads=settings.duckdb_threads)
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
                )
            for file in by_kind["jobs"]:
                _load(outcome, con, [file], "jobs", lambda fs: ingest_job_file(con, fs[0], job_as_of, run_id))
            for file in by_kind["inventory"]:
                _load(outcome, con, [file], "inventory", lambda fs: ingest_inventory(con, fs[0], run_id))
            for file in by_kind["ebs"]:
                _load(outcome, con, [file], "ebs", lambda fs: ingest_ebs(con, fs[0]))
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
) -> None:
    try:
        outcome.lines.append(load(files))
        outcome.loaded += 1
    except (IngestError, ValueError) as exc:
        outcome.errors.append(str(exc))
        outcome.failed.append(files)
        record_failure(con, files, kind, exc)


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
    con.execute(
        "insert or replace into loads values (?, ?, ?, ?, ?, ?, ?, ?, null, null, 'loaded', null, ?, ?)",
        [load_id, kind, fmt, str(files[0].parent), [f.name for f in files], digest, size, rows, now, now],
    )


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
    from athanor import jobs

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
    from athanor import lifecycle
    from athanor.storage.checkpoints import index_checkpoints

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
    from athanor.storage.inventory import read_ebs

    digest, size = checksum([file])
    load_id = digest[:16]
    if _already_loaded(con, load_id):
        return f"{file.name}: unchanged since load {load_id}, skipped"
    document = json.loads(file.read_text())
    kind = "volumes" if "Volumes" in document else "snapshots"
    parsed = read_ebs(document if kind == "volumes" else None, document if kind == "snapshots" else None)
    items = len(parsed.volumes if kind == "volumes" else parsed.snapshots)
    with transaction(con):
        con.execute(
            "insert or replace into ebs_listings values (?, ?, ?, ?, ?)",
            [load_id, kind, file.name, items, json.dumps(document)],
        )
        _ledger(con, load_id, "ebs", f"ebs_{kind}", [file], digest, size, items)
    return f"{file.name}: EBS {kind}, {items:,} items"


def _safe(name: str) -> str:
    """A run id as a folder name (Airflow's contain ':' and '+')."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------- stages


def land(run: RunContext) -> dict:
    """List the deliveries at the landing source; mirror a bucket's into the local cache."""
    from athanor import landing

    source = str(run.params.get("source") or run.settings.landing)
    client = run.s3_client() if landing.is_s3(source) and run.s3_client else None
    ready, waiting = [], []
    for d in landing.list_deliveries(source, client):
        if not d.ready:
            waiting.append(f"{d.uri}: waiting for parts {', '.join(d.missing)}")
        elif run.params.get("dry_run"):
            ready.append({"uri": d.uri, "files": [o.key for o in d.objects]})
        else:
            files = landing.fetch(d, run.settings.home / ".cache" / "landing", client)
            ready.append({"uri": d.uri, "files": [str(f) for f in files]})
    return {"source": source, "deliveries": ready, "waiting": waiting}


def load(run: RunContext, landed: dict) -> dict:
    """Load every new delivery; quarantine the bad ones and fail naming each of them."""
    if run.params.get("dry_run"):
        return {"dry_run": True, "deliveries": landed["deliveries"], "waiting": landed["waiting"]}
    deliveries = [(d["uri"], [Path(f) for f in d["files"]], False) for d in landed["deliveries"]]
    outcome = ingest_deliveries(
        deliveries, run.settings.warehouse, settings=run.settings, as_of=run.as_of, run_id=run.run_id
    )
    from athanor.quality import quarantine

    quarantined = [
        str(quarantine(files, reason, run.settings.quarantine, run.run_id))
        for files, reason in zip(outcome.failed, outcome.errors, strict=True)
    ]
    summary = {
        "loaded": outcome.lines,
        "waiting": landed["waiting"],
        "errors": outcome.errors,
        "quarantined": quarantined,
    }
    _record_stage(run, "load", "failed" if outcome.errors else "success", summary)
    if outcome.errors:
        raise DataRejected(
            f"{len(outcome.errors)} deliver{'ies' if len(outcome.errors) != 1 else 'y'} rejected "
            f"(moved to quarantine): " + " | ".join(outcome.errors)
        )
    return summary


def validate(run: RunContext, loaded: dict) -> dict:
    """The run's data-quality verdict: every load was gated on its way in; sum up what was found."""
    con = run.connect()
    try:
        unreconciled = con.execute("select count(*) from reconciliations where not reconciled").fetchone()[0]
        rules = con.execute(
            """select severity, count(*) filter (where not success), count(*)
               from dq_results where run_id = ? group by all order by 1""",
            [run.run_id],
        ).fetchall()
    finally:
        con.close()
    if unreconciled:
        # Loads reconcile inside their transaction; a row here means the ledger was edited by hand.
        raise DataRejected(
            f"{unreconciled} loaded file(s) do not reconcile to the cent (see reconciliations)"
        )
    return {
        "rules_checked": sum(total for _, _, total in rules),
        "warnings": sum(failed for severity, failed, _ in rules if severity == "warn"),
        "loaded": len(loaded.get("loaded", [])),
    }


def _latest_day(con: duckdb.DuckDBPyConnection) -> date:
    latest = con.execute("select max(charge_period_start) from billing_facts").fetchone()[0]
    return latest.date() if latest else datetime.now(UTC).date()


def _as_of(run: RunContext, con: duckdb.DuckDBPyConnection) -> date:
    return run.as_of or _latest_day(con)


def _drift_reason(row: dict[str, Any]) -> str | None:
    if not row["flagged"]:
        return None
    if row["family_changed"]:
        return f"family changed: {row['previous_family']} -> {row['current_family']}"
    return f"p90 moved {row['p90_rel_shift']:+.0%}"


def fit_durations(run: RunContext) -> dict:
    """Fit duration distributions overall and per group, store them with history, flag drift."""
    from athanor import durations

    group_by = [c.strip() for c in str(run.params.get("group_by") or "team").split(",") if c.strip()]
    con = run.connect()
    try:
        as_of = _as_of(run, con)
        frame = con.execute(sql("marts/job_durations")).df()
        if frame.empty:
            return {"groups": 0}
        fits = [(["all"], f) for f in durations.fit_groups(frame, [])]
        fits += [(group_by, f) for f in durations.fit_groups(frame, group_by)]
        records = [(",".join(level), f.to_record()) for level, f in fits]
        previous_run = con.execute(
            "select run_id from duration_fits where run_id <> ? order by as_of desc, run_id desc limit 1",
            [run.run_id],
        ).fetchone()
        previous = []
        if previous_run:
            previous = [
                json.loads(r)
                for (r,) in con.execute(
                    "select record from duration_fits where run_id = ?", [previous_run[0]]
                ).fetchall()
            ]
        drift = {
            row["group"]: _drift_reason(row)
            for row in durations.compare_fits(previous, [r for _, r in records])
        }
        with transaction(con):
            con.execute("delete from duration_fits where run_id = ?", [run.run_id])
            for level, r in records:
                con.execute(
                    "insert into duration_fits values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        run.run_id,
                        as_of,
                        level,
                        r["group"],
                        r["n"],
                        r["censored"],
                        r["family"],
                        json.dumps(r["params"]),
                        r.get("aic"),
                        r.get("bic"),
                        r.get("ks"),
                        r.get("ks_pvalue"),
                        r.get("p50_s"),
                        r.get("p90_s"),
                        r.get("p99_s"),
                        r.get("share_jobs_under_48h"),
                        r.get("share_gpu_hours_under_48h"),
                        drift.get(r["group"]),
                        json.dumps(r, default=str),
                    ],
                )
        explained = {
            currency: round(float(share or 0.0), 4)
            for currency, _, _, share in con.execute(sql("marts/spend_explained")).fetchall()
        }
    finally:
        con.close()
    return {
        "groups": len(records),
        "drift": {g: reason for g, reason in drift.items() if reason},
        "gpu_spend_explained_by_job_runs": explained,
    }


def recommend_mix(run: RunContext, fits: dict | None = None) -> dict:
    """Commitments per pool, savings plan, spot share and their walk-forward backtest."""
    from athanor import recommend

    con = run.connect()
    try:
        as_of = _as_of(run, con)
        result = recommend.recommend_purchases(con, run.run_id, as_of)
    finally:
        con.close()
    return result


def recommend_lifecycle(run: RunContext) -> dict:
    """Checkpoint-storage policies per bucket, priced over 12 months."""
    from athanor import recommend

    con = run.connect()
    try:
        as_of = _as_of(run, con)
        apply = bool(run.params.get("apply_lifecycle"))
        result = recommend.recommend_storage(
            con,
            run.run_id,
            as_of,
            apply=apply,
            artifacts_dir=run.settings.artifacts / _safe(run.run_id),
            s3_client=run.s3_client() if apply and run.s3_client else None,
        )
    finally:
        con.close()
    return result


def publish(run: RunContext, *upstream: dict) -> dict:
    """Render the report and publish the analysts' snapshot."""
    from athanor.report import build_report

    con = run.connect()
    try:
        as_of = _as_of(run, con)
        paths = build_report(con, as_of, run.settings.reports, run.run_id)
        snapshot = publish_snapshot(con, run.settings.warehouse, run.settings.snapshot)
    finally:
        con.close()
    return {"report": str(paths.html), "snapshot": str(snapshot), "as_of": as_of.isoformat()}


def _record_stage(run: RunContext, stage: str, status: str, summary: dict) -> None:
    con = run.connect()
    try:
        now = datetime.now(UTC).replace(tzinfo=None)
        con.execute(
            "insert or replace into pipeline_runs values (?, ?, ?, ?, ?, ?, ?)",
            [run.run_id, stage, run.as_of, now, now, status, json.dumps(summary, default=str)],
        )
    finally:
        con.close()
