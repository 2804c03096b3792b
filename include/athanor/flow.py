"""The nightly flow: its stages, in order, declared once, and one function per stage.

Data flows one way: land -> load (billing, jobs, storage; see `athanor.ingest.deliveries`) ->
validate -> fit durations -> recommend (mix, lifecycle) -> publish. Each stage reads what it
needs from the warehouse and writes its own tables, replacing its own rows for the run.
The DAGs and `athanor run` both build themselves from `STAGES`; a stage function takes the
run and the summaries of the stages named in its `inputs`, and returns a small JSON-able
summary. The task context is read as a plain mapping, so this module imports nothing from
Airflow.

Every stage logs at INFO (logger per module) what it read, loaded, skipped, rejected and wrote,
and `run_stage` records it in `pipeline_runs` with its start and end; a dry run writes nothing.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from athanor.errors import DataRejected, UnknownParams
from athanor.ingest.daily import cover_every_job_line
from athanor.settings import Settings
from athanor.warehouse import connect, insert_rows, lake, snapshots
from athanor.warehouse.connection import configure

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunContext:
    run_id: str
    as_of: date | None  # None: "the latest day in the warehouse"
    params: dict[str, Any]
    settings: Settings
    # Builds a boto3 S3 client for bucket sources (from an Airflow connection in a task).
    s3_client: Callable[[], Any] | None = None
    # The warehouse, held open for the whole of a run in one process (`holding_warehouse`).
    held: duckdb.DuckDBPyConnection | None = None
    # The snapshot's files being written while the stages run (`athanor run`); publish takes them.
    snapshot_ahead: snapshots.WriteAhead | None = None

    def connect(self, *, lake_views: bool = True) -> duckdb.DuckDBPyConnection:
        """A connection of this stage's own; closing it leaves a held warehouse held.

        `lake_views=False`: for writing the run's own small tables only (`record_stage`), no
        views of the lake's fact tables (attaching them costs about 0.5 s a connection)."""
        s = self.settings
        if self.held is not None:
            con = self.held.cursor()
            configure(con, memory_limit=s.duckdb_memory_limit, threads=s.duckdb_threads)
        else:
            con = connect(
                s.warehouse,
                memory_limit=s.duckdb_memory_limit,
                threads=s.duckdb_threads,
                wait_s=s.writer_wait_s,
                lake_views=False,  # attached below, once
            )
        # The lake mode: the stages after `validate` read the snapshots it recorded for the run.
        if lake_views:
            lake.attach_for_run(con, lake.LakeConfig.from_settings(s), self.run_id)
        return con

    @property
    def dry_run(self) -> bool:
        """List what would load and write nothing: no warehouse, no files, no asset event."""
        return bool(self.params.get("dry_run"))


@contextmanager
def holding_warehouse(settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
    """Hold the warehouse file from the first stage to the last, for a run in one process.

    DuckDB locks the file while a process has it open. Opened and closed stage by stage, it
    is free between stages: an analyst's read-only open or another writer taking it there
    crashed the next stage. Held here, every connection of this process (the stages' own
    and the loader's) shares the one open database, and others are kept out for the whole
    run. Another holder at the start: wait `writer_wait_s`, then `WarehouseBusy`.
    """
    con = connect(
        settings.warehouse,
        memory_limit=settings.duckdb_memory_limit,
        threads=settings.duckdb_threads,
        wait_s=settings.writer_wait_s,
        # Its cursors see none of its temporary views: each stage's own attaches the lake.
        lake_views=False,
    )
    try:
        yield con
    finally:
        con.close()


# ---------------------------------------------------------------------------- stages


def land(run: RunContext) -> dict:
    """List the deliveries at the landing source; mirror a bucket's into the local cache."""
    from athanor.land import landing

    started = _now()
    source = str(run.params.get("source") or run.settings.landing)
    client = run.s3_client() if landing.is_s3(source) and run.s3_client else None
    ready, waiting = [], []
    for d in landing.list_deliveries(source, client):
        if not d.ready:
            waiting.append(f"{d.uri}: waiting for parts {', '.join(d.missing)}")
            logger.info("land: %s waits for %d missing part(s), not loaded yet", d.uri, len(d.missing))
        elif run.dry_run:
            ready.append({"uri": d.uri, "files": [o.key for o in d.objects]})
        else:
            files = landing.fetch(d, run.settings.home / ".cache" / "landing", client)
            ready.append({"uri": d.uri, "files": [str(f) for f in files]})
    files = sum(len(d["files"]) for d in ready)
    logger.info(
        "land: %d deliveries (%d files) ready and %d waiting at %s%s",
        len(ready),
        files,
        len(waiting),
        source,
        " (dry run: listed, nothing fetched)" if run.dry_run else "",
    )
    # land holds no writer slot: the load stage records its pipeline_runs row from these times.
    return {
        "source": source,
        "deliveries": ready,
        "waiting": waiting,
        "started_at": started.isoformat(),
        "finished_at": _now().isoformat(),
    }


def load(run: RunContext, landed: dict) -> dict:
    """Load every new delivery; quarantine and alert the bad ones, and the night goes on.

    A rejected delivery is held back (moved to quarantine, its alert naming the quarantine
    folder and the release command); everything else still loads, and the report says what
    was held back. Its counts say what the night really did: loaded, unchanged, empty, waiting,
    rejected.
    """
    if run.dry_run:
        return _dry_load(run, landed)
    deliveries = [(d["uri"], [Path(f) for f in d["files"]], False) for d in landed["deliveries"]]
    # Imported here, not at the top: the DAG files import this module at parse time.
    from athanor.ingest.deliveries import ingest_deliveries

    outcome = ingest_deliveries(
        deliveries,
        run.settings.warehouse,
        settings=run.settings,
        as_of=run.as_of,
        run_id=run.run_id,
        quarantine=True,
    )
    from athanor.quality import quarantine

    quarantined = [
        str(quarantine(files, reason, run.settings.quarantine, run.run_id))
        for files, reason in zip(outcome.failed, outcome.errors, strict=True)
    ]
    for path in quarantined:
        logger.warning("load: moved to quarantine: %s", path)
    counts = {**outcome.counts, "waiting": outcome.counts["waiting"] + len(landed["waiting"])}
    summary = {
        "loaded": outcome.lines,
        "counts": counts,
        "waiting": landed["waiting"],
        "errors": outcome.errors,
        "quarantined": quarantined,
        "unrecognised": outcome.unrecognised,  # files of no known format or unreadable, among errors
    }
    if quarantined:
        summary["alerts"] = _alert_quarantined(run, quarantined, outcome.errors)
    logger.info("load: %s", ", ".join(f"{n} {status}" for status, n in counts.items()))
    return summary


def _dry_load(run: RunContext, landed: dict) -> dict:
    """What a real load would do with each delivery, writing nothing: one it would skip as
    unchanged (its files' checksum is a load of the ledger) is said so, not "would load"."""
    from athanor.ingest.billing import checksum
    from athanor.land import landing

    local = not landing.is_s3(landed["source"])
    known = _loaded_ids(run.settings.warehouse) if local else set()
    root = Path(landed["source"])
    counts = {"would_load": 0, "unchanged": 0}
    for d in landed["deliveries"]:
        files = [root if root.is_file() else root / key for key in d["files"]]
        # A billing delivery loads as one (its files together), a job log or listing file by file.
        ids = {checksum(files)[0][:16]} if local else set()
        each = {checksum([f])[0][:16] for f in files} if local else set()
        if local and (ids <= known or each <= known):
            counts["unchanged"] += 1
            logger.info("load (dry run): would skip %s: unchanged since its last load", d["uri"])
        else:
            counts["would_load"] += 1
            logger.info("load (dry run): would load %s: %s", d["uri"], ", ".join(d["files"]))
    logger.info(
        "load (dry run): a real run would load %d deliveries and skip %d unchanged",
        counts["would_load"],
        counts["unchanged"],
    )
    return {
        "dry_run": True,
        "counts": counts,
        "deliveries": landed["deliveries"],
        "waiting": landed["waiting"],
    }


def _loaded_ids(warehouse: Path) -> set[str]:
    """The load ids the ledger holds as loaded, read without writing (none: no warehouse yet)."""
    if not warehouse.exists():
        return set()
    try:
        con = duckdb.connect(str(warehouse), read_only=True)
    except duckdb.Error as exc:  # held by a writer: every delivery is then "would load"
        logger.warning(
            "load (dry run): cannot read the ledger (%s): unchanged deliveries not told apart", exc
        )
        return set()
    try:
        rows = con.execute("select load_id from loads where status in ('loaded', 'replaced')").fetchall()
    finally:
        con.close()
    return {load_id for (load_id,) in rows}


def _alert_quarantined(run: RunContext, paths: list[str], reasons: list[str]) -> dict:
    """One alert per delivery held back: why, where it is, and the command that releases it."""
    from athanor.watch.alerts import Alert, send_new

    alerts = [
        Alert(
            key=f"quarantine:{path}",
            kind="quarantine",
            message=f"Athanor held back a delivery: {reason}. It is in quarantine at {path}; "
            f"once fixed (or to load it as it is), run: athanor quarantine release {path}",
        )
        for path, reason in zip(paths, reasons, strict=True)
    ]
    con = run.connect()
    try:
        return send_new(con, alerts, run.run_id, run.settings.alert_webhook)
    finally:
        con.close()


def validate(run: RunContext, loaded: dict) -> dict:
    """The run's data-quality verdict: every load was gated on its way in; sum up what was found.

    Also decides whether the warehouse changed for the run's day since that day's last report:
    only then does the ingest announce it (the `athanor_warehouse` asset, carrying the day).
    """
    if run.dry_run:
        logger.info("validate (dry run): nothing was loaded, nothing to check; no asset event")
        return {"dry_run": True, "asset_event": None, "not_emitted": "dry run"}
    con = run.connect()
    try:
        unreconciled = con.execute("select count(*) from reconciliations where not reconciled").fetchone()[0]
        rules = con.execute(
            """select severity, count(*) filter (where not success), count(*)
               from dq_results where run_id = ? group by all order by 1""",
            [run.run_id],
        ).fetchall()
        last_load, last_report = con.execute(
            """select (select max(finished_at) from loads where status in ('loaded', 'replaced')),
                      (select max(finished_at) from pipeline_runs
                       where stage = 'publish' and status = 'success' and (?::date is null or as_of = ?::date))""",
            [run.as_of, run.as_of],
        ).fetchone()
        # job_run_costs (and the unit economics) and the spend explained by job runs read the
        # costs by job tag from this summary: summed again here where it misses billing lines.
        cover_every_job_line(con)
        snapshots = lake.record_snapshots(con, run.run_id, lake.LakeConfig.from_settings(run.settings))
    finally:
        con.close()
    if unreconciled:
        # Loads reconcile inside their transaction; a row here means the ledger was edited by hand.
        raise DataRejected(
            f"{unreconciled} loaded file(s) do not reconcile to the cent (see reconciliations)"
        )
    # What the night really did with its deliveries (not one summary line per delivery).
    counts = loaded.get("counts") or {}
    summary = {
        "rules_checked": sum(total for _, _, total in rules),
        "warnings": sum(failed for severity, failed, _ in rules if severity == "warn"),
        "loaded": counts.get("loaded", 0),
        "unchanged": counts.get("unchanged", 0),
        "rejected": counts.get("rejected", 0),
    }
    if snapshots:
        summary["lake_snapshots"] = snapshots  # the run's read-only view: lake.open_as_of
    day = run.as_of.isoformat() if run.as_of else None
    if last_load is None:
        summary |= {"asset_event": None, "not_emitted": "the warehouse holds no delivery yet"}
    elif last_report is not None and last_load <= last_report:
        summary |= {
            "asset_event": None,
            "not_emitted": f"nothing loaded since the report for {day or 'the latest day'} "
            f"was published at {last_report:%Y-%m-%d %H:%M:%S} UTC",
        }
    else:
        summary["asset_event"] = {"as_of": day}
    logger.info(
        "validate: %d deliveries loaded, %d unchanged, %d rejected; %d rule results of this run, "
        "%d warnings; %s",
        summary["loaded"],
        summary["unchanged"],
        summary["rejected"],
        summary["rules_checked"],
        summary["warnings"],
        f"warehouse updated for {day or 'the latest day'}: announcing it"
        if summary["asset_event"]
        else f"not announcing the warehouse: {summary['not_emitted']}",
    )
    return summary


def _latest_day(con: duckdb.DuckDBPyConnection) -> date:
    latest = con.execute("select max(charge_period_start) from billing_facts").fetchone()[0]
    return latest.date() if latest else datetime.now(UTC).date()


def _as_of(run: RunContext, con: duckdb.DuckDBPyConnection) -> date:
    return run.as_of or _latest_day(con)


def fit_durations(run: RunContext) -> dict:
    """Fit duration distributions overall and per group, store them with history, flag drift."""
    from athanor.model import nightly as fits

    group_by = fits.group_by_of(run.params)
    con = run.connect()
    try:
        as_of = _as_of(run, con)
        # Without a day of its own the run fits every job loaded (the report's day is then the
        # latest billed one, which job logs need not share).
        frame = fits.read_jobs(con, run.as_of)
        if frame.empty:
            return {"groups": 0}
        # The steps Airflow spreads over workers (fan_out below), here in one process.
        records = fits.fit_all(con, run.run_id, frame, group_by)
        return fits.store(con, run.run_id, as_of, fits.assemble(frame, group_by, records))
    finally:
        con.close()


def plan_fits(run: RunContext) -> dict:
    """Read the jobs known on the run's day and name the groups to fit, one task each."""
    from athanor.model import nightly as fits

    group_by = fits.group_by_of(run.params)
    folder = fits.run_folder(run.settings.home, run.run_id)
    con = run.connect()
    try:
        frame = fits.read_jobs(con, run.as_of)
        # Groups whose jobs are those of their stored fit need no task: their records ride along.
        reused = fits.reusable(con, frame, group_by) if len(frame) else {}
    finally:
        con.close()
    labels = [label for label in fits.plan(frame, group_by) if label not in reused] if len(frame) else []
    if labels or reused:
        fits.save_jobs(frame, folder)
    logger.info("fit_durations: %d groups to fit: %s", len(labels), ", ".join(labels) or "none")
    return {"items": labels, "folder": str(folder), "group_by": group_by, "reused": reused}


def fit_group(run: RunContext, planned: dict, label: str) -> dict:
    """Fit one group named by `plan_fits` (no warehouse: any worker can)."""
    from athanor.model import nightly as fits

    return fits.fit(fits.load_jobs(Path(planned["folder"])), planned["group_by"], label)


def store_fits(run: RunContext, planned: dict, records: list[dict]) -> dict:
    """Store the fits of `plan_fits`' groups (small groups borrow), flag drift."""
    from athanor.model import nightly as fits

    reused = planned.get("reused") or {}
    if not planned["items"] and not reused:
        return {"groups": 0}
    folder = Path(planned["folder"])
    frame = fits.load_jobs(folder)
    con = run.connect()
    try:
        as_of = _as_of(run, con)
        by_label = {r["group"]: r for r in records} | reused
        summary = fits.store(con, run.run_id, as_of, fits.assemble(frame, planned["group_by"], by_label))
        fits.remember(con, run.run_id, frame, planned["group_by"], by_label, list(reused))
    finally:
        con.close()
    fits.drop_jobs(folder)
    return summary


def recommend_mix(run: RunContext) -> dict:
    """Commitments per pool, savings plan, spot share and their walk-forward backtest."""
    from athanor.recommend import nightly as recommend

    con = run.connect()
    try:
        as_of = _as_of(run, con)
        # The settings' pricing assumptions, each overridable from the optimize DAG's form.
        assumptions = recommend.PricingAssumptions.from_settings(run.settings, run.params)
        result = recommend.recommend_purchases(con, run.run_id, as_of, assumptions)
    finally:
        con.close()
    logger.info("recommend_mix for %s: %s", as_of, _brief(result))
    return result


def compose_plan(run: RunContext) -> dict:
    """One plan in order (idle, GPU moves, commitments, spot, storage) from the recommenders' rows."""
    from athanor.recommend import plan

    con = run.connect()
    try:
        as_of = _as_of(run, con)
        result = plan.compose_plan(con, run.run_id, as_of)
    finally:
        con.close()
    logger.info("compose_plan for %s: %s", as_of, _brief(result))
    return result


def recommend_lifecycle(run: RunContext) -> dict:
    """Checkpoint-storage policies per bucket, priced over 12 months."""
    from athanor.recommend import nightly as recommend

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
    logger.info(
        "recommend_lifecycle for %s (%s): %s", as_of, "applied" if apply else "dry run", _brief(result)
    )
    return result


def measure_gpus(run: RunContext) -> dict:
    """How busy the paid GPUs were (busy, idle, unobserved GPU-hours), idle GPUs to stop, underused ones."""
    from athanor.recommend import gpu_usage

    con = run.connect()
    try:
        as_of = _as_of(run, con)
        result = gpu_usage.measure_gpus(
            con, run.run_id, as_of, gpu_usage.IdleRule.from_settings(run.settings)
        )
    finally:
        con.close()
    logger.info("measure_gpus for %s: %s", as_of, _brief(result))
    return result


def allocate_gpus(run: RunContext) -> dict:
    """Each billed GPU machine-hour's cost split over the jobs that held its GPUs, the rest idle."""
    from athanor.recommend import allocation

    con = run.connect()
    try:
        result = allocation.allocate_gpus(con, run.run_id, run.settings.node_tag_key)
    finally:
        con.close()
    return result.as_dict()


def recommend_gpus(run: RunContext) -> dict:
    """Per workload class, which GPU type and how many to run on (the GPU plan)."""
    from athanor.recommend import gpu_plan
    from athanor.recommend import nightly as recommend

    con = run.connect()
    try:
        as_of = _as_of(run, con)
        # The purchase mix's deadline slack (the settings, or the run's form): one meaning of late.
        slack = recommend.PricingAssumptions.from_settings(run.settings, run.params).deadline_slack
        result = gpu_plan.recommend_gpus(con, run.run_id, as_of, deadline_slack=slack)
    finally:
        con.close()
    logger.info("recommend_gpus for %s: %s", as_of, _brief(result))
    return result


def watch_spend(run: RunContext) -> dict:
    """Cost anomalies, the spend forecast and budgets; each new alert sent to the webhook once."""
    from athanor.watch.nightly import watch_spend as watch

    con = run.connect()
    try:
        as_of = _as_of(run, con)
        result = watch(con, run.run_id, as_of, run.settings.watch, run.settings.alert_webhook)
    finally:
        con.close()
    logger.info("watch_spend for %s: %s", as_of, _brief(result))
    return result


def publish(run: RunContext) -> dict:
    """Render the report and publish the analysts' snapshot."""
    from athanor.publish import build_report

    started = _now()
    con = run.connect()
    try:
        as_of = _as_of(run, con)
        # The report and the snapshot go out together or not at all, so they never disagree.
        snapshot = run.settings.snapshot
        published = {
            "report": str(run.settings.reports / as_of.isoformat() / "report.html"),
            "snapshot": str(snapshot),
            "as_of": as_of.isoformat(),
        }
        if run.settings.report_bucket:
            published["bucket"] = run.settings.report_bucket

        def record() -> None:
            # This stage's pipeline_runs row goes in before the warehouse is copied: the
            # snapshot holds it, and the warehouse is not left newer than its snapshot.
            record_stage(run, "publish", started, _now(), "success", published, con=con)

        try:
            paths = build_report(
                con,
                as_of,
                run.settings.reports,
                run.run_id,
                snapshot=snapshot,
                warehouse=run.settings.warehouse,
                before_snapshot=record,
                snapshot_ahead=run.snapshot_ahead,
            )
        except Exception as exc:
            # The 'success' row may be in already (written for the snapshot to hold): put the
            # failure in its place now, on this connection, while the staged files just removed
            # have given back their space. run_stage records it too, if it still can.
            try:
                failure = {"error": _without_secrets(str(exc), run.settings)}
                record_stage(run, "publish", started, _now(), "failed", failure, con=con)
            except Exception as also:  # noqa: BLE001 - the publish error is the one to raise
                logger.error("publish: could not record the failure in pipeline_runs: %s", also)
            raise
    finally:
        con.close()
    logger.info(
        "publish: wrote the report for %s to %s (%d CSV, %d lifecycle files); %s; snapshot %s",
        as_of,
        paths.dated_dir,
        len(paths.csv),
        len(paths.lifecycle),
        f"{paths.latest_dir} now shows {as_of}"
        if paths.latest_moved
        else f"{paths.latest_dir} kept: it shows a later day",
        snapshot,
    )
    if run.settings.report_bucket:
        from athanor.publish import publish_report

        if run.s3_client is None:
            raise ValueError(f"ATHANOR_REPORT_BUCKET={run.settings.report_bucket} needs a bucket connection")
        keys = publish_report(run.s3_client(), paths, run.settings.report_bucket)
        published["bucket_objects"] = len(keys)
        logger.info("publish: uploaded %d objects to %s", len(keys), run.settings.report_bucket)
    return published


def _without_secrets(message: str, settings: Settings) -> str:
    """`message` with the settings' secrets (the alert webhook, the lake catalog URL) masked."""
    for name in ("alert_webhook", "lake_catalog_uri"):
        secret = getattr(settings, name)
        if secret and len(secret) > 3:
            message = message.replace(secret, f"<{name}>")
    return message


def _brief(summary: dict) -> str:
    """A stage summary for a log line: its scalar figures, not the nested detail."""
    return ", ".join(f"{k}={v}" for k, v in summary.items() if isinstance(v, str | int | float | bool)) or "-"


def _safe(name: str) -> str:
    """A run id as a folder name (Airflow's contain ':' and '+')."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def record_stage(
    run: RunContext,
    stage: str,
    started: datetime,
    finished: datetime,
    status: str,
    summary: dict,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
) -> None:
    """The one writer of `pipeline_runs`: a stage of a run, its times (UTC) and summary.

    `con`: the stage's own connection, left open (else one is opened and closed here).
    """
    own = con is None
    con = run.connect(lake_views=False) if own else con
    try:
        row = {
            "run_id": run.run_id,
            "stage": stage,
            "as_of": run.as_of,
            "started_at": started,
            "finished_at": finished,
            "status": status,
            "summary": json.dumps(summary, default=str),
        }
        insert_rows(con, "pipeline_runs", [row], replace=True)
    finally:
        if own:
            con.close()


# ------------------------------------------------------------------------ the flow


@dataclass(frozen=True)
class FanOut:
    """How Airflow spreads a stage over workers: plan -> one mapped task per item -> gather.

    `plan(run, *inputs)` returns {"items": [...], ...} and holds the writer slot;
    `each(run, planned, item)` returns a JSON-able result without touching the warehouse, so
    it takes no slot and runs on any worker; `gather(run, planned, results)` writes and
    returns the stage's summary. `athanor run` calls the stage's function instead, which does
    the same steps in one process and must store the same rows.
    """

    plan: Callable[..., dict]
    each: Callable[..., dict]
    gather: Callable[..., dict]


@dataclass(frozen=True)
class Stage:
    name: str
    dag_id: str
    function: Callable[..., dict]
    after: tuple[str, ...] = ()  # stages that must finish first (same DAG)
    inputs: tuple[str, ...] = ()  # of those, the ones whose summary the function takes
    writes_warehouse: bool = True  # takes the single writer slot
    emits: str | None = None  # the asset this stage updates, by name
    records_itself: bool = False  # writes its own pipeline_runs row on success (publish)
    fan_out: FanOut | None = None  # in Airflow: mapped over the items its plan names


# The one place the order is written: the DAGs, `athanor run` and the tests read it.
STAGES: tuple[Stage, ...] = (
    Stage("land", "athanor_ingest", land, writes_warehouse=False),
    Stage("load", "athanor_ingest", load, after=("land",), inputs=("land",)),
    Stage(
        "validate",
        "athanor_ingest",
        validate,
        after=("load",),
        inputs=("load",),
        emits="athanor_warehouse",
    ),
    Stage(
        "fit_durations",
        "athanor_optimize",
        fit_durations,
        # One fit per workload group, spread over the workers.
        fan_out=FanOut(plan_fits, fit_group, store_fits),
    ),
    Stage("recommend_lifecycle", "athanor_optimize", recommend_lifecycle),
    Stage("measure_gpus", "athanor_optimize", measure_gpus),
    # Cost by GPU-seconds on shared clusters (gpu_allocation_hourly), published with the rest.
    Stage("allocate_gpus", "athanor_optimize", allocate_gpus),
    # The GPU plan's carbon estimate takes the utilisation measure_gpus measured.
    Stage("recommend_gpus", "athanor_optimize", recommend_gpus, after=("measure_gpus",)),
    # Commitments and spot are sized on the demand the idle stops and GPU moves leave (the plan).
    Stage("watch_spend", "athanor_optimize", watch_spend),
    # The commitments say how their quantity changes without the days the spend watch flags.
    Stage(
        "recommend_mix",
        "athanor_optimize",
        recommend_mix,
        after=("fit_durations", "measure_gpus", "recommend_gpus", "watch_spend"),
    ),
    Stage(
        "compose_plan",
        "athanor_optimize",
        compose_plan,
        after=("recommend_mix", "recommend_lifecycle", "recommend_gpus"),
    ),
    Stage(
        "publish",
        "athanor_optimize",
        publish,
        after=("compose_plan", "allocate_gpus"),
        emits="athanor_report",
        records_itself=True,
    ),
)
STAGE: dict[str, Stage] = {stage.name: stage for stage in STAGES}


def stages_of(dag_id: str) -> list[Stage]:
    """The stages one DAG runs, in flow order."""
    return [stage for stage in STAGES if stage.dag_id == dag_id]


def _params(context: Mapping[str, Any]) -> dict[str, Any]:
    """The run's params; a key its DAG does not declare is refused, with the valid ones.

    Airflow merges a run's conf into its params key by key, unknown keys too: a misspelt
    `{"dryrun": true}` would otherwise be ignored and the intended dry run load for real.
    """
    params = dict(context.get("params") or {})
    declared = getattr(context.get("dag"), "params", None)
    if declared is not None:
        unknown = sorted(set(params) - set(declared.keys()))
        if unknown:
            raise UnknownParams(
                f"unknown conf key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
                f"this DAG takes {', '.join(sorted(declared.keys()))}"
            )
    return params


def _day(value: Any) -> date:
    return value.date() if isinstance(value, datetime) else date.fromisoformat(str(value)[:10])


def _moment(value: Any) -> datetime | None:
    return value if value is None or isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _event_days(context: Mapping[str, Any]) -> list[date] | None:
    """The days the asset events that triggered this run were for (None: not asset-triggered)."""
    events = context.get("triggering_asset_events") or {}
    if not events:
        return None
    days = []
    for per_asset in events.values():
        for event in per_asset:
            extra = getattr(event, "extra", None)
            if extra is None and isinstance(event, Mapping):
                extra = event.get("extra")
            if (extra or {}).get("as_of"):
                days.append(_day(extra["as_of"]))
    return days


def as_of_from(context: Mapping[str, Any]) -> date | None:
    """The one place that decides which day a run works on.

    In order: an explicit `as_of` param (the form); for a run started by the ingest's asset,
    the day its events carry (the newest, when several were merged into one run); for a run
    with a data interval (the nightly schedule, its backfills, and manual runs of it), the last
    UTC day complete at the interval's end: the run that fires at 2026-12-01 02:30 covers
    2026-11-30; otherwise the logical date's day. None (an asset event without a day, a run
    without a date) means "the latest day in the warehouse".
    """
    explicit = _params(context).get("as_of")
    if explicit:
        return _day(explicit)
    event_days = _event_days(context)
    if event_days is not None:
        if len(set(event_days)) > 1:
            logger.warning(
                "this run consumed asset events for %s: it works on the newest",
                ", ".join(sorted(map(str, set(event_days)))),
            )
        return max(event_days) if event_days else None
    start, end = (_moment(context.get(k)) for k in ("data_interval_start", "data_interval_end"))
    if start is not None and end is not None and end > start:
        return _day(end - timedelta(days=1))
    logical = context.get("logical_date")
    return _day(logical) if logical is not None else None


def run_id_from(context: Mapping[str, Any]) -> str:
    return str(context.get("run_id") or f"manual__{datetime.now(UTC):%Y%m%dT%H%M%S}")


def _recordable(stages: Iterable[tuple[str, Any]]) -> list[tuple[str, dict]]:
    """Summaries of input stages without a writer slot, to be recorded by the stage that has one."""
    return [
        (name, summary)
        for name, summary in stages
        if not STAGE[name].writes_warehouse and isinstance(summary, dict) and "started_at" in summary
    ]


def run_stage(
    name: str,
    context: Mapping[str, Any],
    *inputs: Any,
    settings: Settings | None = None,
    s3_client: Callable[[], Any] | None = None,
    held: duckdb.DuckDBPyConnection | None = None,
    part: str | None = None,
    snapshot_ahead: snapshots.WriteAhead | None = None,
) -> dict:
    """Run stage `name` for the run described by `context`; returns a small JSON-able summary.

    The stage's row in `pipeline_runs` (and those of the stages before it that hold no writer
    slot) is written here, success or failure; a dry run writes none. `part` ("plan", "each",
    "gather") runs one step of a fanned-out stage: the row spans plan's start to gather's end,
    and a failed "each" is not recorded (it holds no writer slot; its task's log says why).
    """
    settings = settings or Settings.from_env()
    run = RunContext(
        run_id=run_id_from(context),
        as_of=as_of_from(context),
        params=_params(context),
        settings=settings,
        s3_client=s3_client,
        held=held,
        snapshot_ahead=snapshot_ahead,
    )
    stage = STAGE[name]
    function = stage.function if part is None else getattr(stage.fan_out, part)
    logger.info(
        "%s%s: run %s for %s%s",
        name,
        f" ({part})" if part else "",
        run.run_id,
        run.as_of or "the latest day in the warehouse",
        " (dry run)" if run.dry_run else "",
    )
    record = stage.writes_warehouse and not run.dry_run and part != "each"
    if record and part in (None, "plan"):
        for earlier, done in _recordable(zip(stage.inputs, inputs, strict=True)):
            times = [datetime.fromisoformat(done[k]) for k in ("started_at", "finished_at")]
            kept = {k: v for k, v in done.items() if k not in ("started_at", "finished_at")}
            record_stage(run, earlier, *times, "success", kept)
    started, clock = _now(), time.perf_counter()
    if part == "gather":
        started = datetime.fromisoformat(inputs[0]["started_at"])
    try:
        summary = function(run, *inputs)
    except Exception as exc:
        finished = _now()
        # A message that quotes the webhook URL (its token) goes neither to the log nor to
        # pipeline_runs, which the snapshot copies to every analyst.
        error = _without_secrets(str(exc), settings)
        logger.error("%s failed after %.1f s: %s", name, time.perf_counter() - clock, error)
        if record:
            failure = {"error": error, **getattr(exc, "summary", {})}
            try:
                record_stage(run, name, started, finished, "failed", failure)
            except Exception as also:  # noqa: BLE001  # the stage's own error is the one to report
                # One line: a traceback here (a full disk) would bury the stage's own error.
                logger.error("%s: could not record the failure in pipeline_runs: %s", name, also)
        raise
    finished = _now()
    if part == "plan":
        summary["started_at"] = started.isoformat()
    elif record and not stage.records_itself:
        record_stage(run, name, started, finished, "success", summary)
    logger.info("%s done in %.1f s", name, time.perf_counter() - clock)
    return summary
