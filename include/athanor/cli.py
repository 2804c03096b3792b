"""The `athanor` command: the same functions the DAGs call, for a terminal."""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import gc
import io
import json
import logging
import math
import re
import sys
import traceback
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime
from decimal import Context, Decimal
from pathlib import Path
from typing import NoReturn

from athanor.errors import DataRejected
from athanor.settings import MAX_FORECAST_HORIZON_DAYS, Settings


def decimal_text(value: Decimal) -> str:
    """A DECIMAL as it prints: exact, without the zeros its scale pads with past the cents.

    Money is DECIMAL(38,12) in the warehouse, so `sum(EffectiveCost)` would print
    34.220000000000; rounding to cents instead would make the printed lines no longer add up
    to the printed total, so nothing is dropped but zeros: 34.22, 0.000123, -2.00.
    """
    if not value.is_finite():
        return str(value)
    exact = Context(prec=80)  # beyond DECIMAL(38,x): the default 28 digits would round
    scale = -value.as_tuple().exponent
    trimmed = value.normalize(exact)
    if -trimmed.as_tuple().exponent < min(scale, 2):
        trimmed = value.quantize(Decimal(1).scaleb(-min(scale, 2)), context=exact)
    return format(trimmed, "f")


def _json_default(value: object) -> object:
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def format_rows(
    columns: Sequence[str], rows: Sequence[Sequence[object]], fmt: str, *, neutralise: bool = True
) -> str:
    """Render query results as an aligned table, CSV or JSON (a list of objects).

    CSV text cells a spreadsheet would run as formulas are neutralised as in the report's
    CSVs, unless `neutralise` is off (for programs reading the output).
    """
    if fmt == "json":
        return json.dumps([dict(zip(columns, r, strict=True)) for r in rows], default=_json_default, indent=2)
    if fmt == "csv":
        from athanor.publish.artifacts import neutralise as formula_safe

        safe = formula_safe if neutralise else (lambda v: v)

        def cell(v: object) -> object:
            # A number is no formula, whatever its sign: only text cells are neutralised.
            return decimal_text(v) if isinstance(v, Decimal) else safe(v)

        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([safe(c) for c in columns])
        writer.writerows(["" if v is None else cell(v) for v in r] for r in rows)
        return out.getvalue().rstrip("\n")
    from tabulate import tabulate

    # Values are shown as the warehouse returns them, DECIMALs without their padding zeros:
    # no number re-formatting by tabulate.
    cells = [
        [("" if v is None else decimal_text(v) if isinstance(v, Decimal) else str(v)) for v in r]
        for r in rows
    ]
    table = tabulate(cells, headers=list(columns), tablefmt="simple", disable_numparse=True)
    return f"{table}\n({len(rows)} row{'s' if len(rows) != 1 else ''})"


def _cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from athanor.ingest.deliveries import ingest_paths

    warehouse = Path(args.warehouse) if args.warehouse else settings.warehouse
    outcome = ingest_paths([Path(p) for p in args.paths], warehouse, settings=settings)
    for line in outcome.lines:
        print(line)
    for error in outcome.errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if outcome.errors else 0


def _cmd_query(args: argparse.Namespace, settings: Settings) -> int:
    """Analysts' SQL: the published snapshot by default, so a reader never meets the nightly run's
    writer; `--live` (or `--warehouse FILE`) reads a warehouse file itself, read-only."""
    import duckdb

    from athanor.warehouse.readonly import open_readonly, run_readonly

    live = Path(args.warehouse) if args.warehouse else settings.warehouse
    # Before the first nightly run has published a snapshot the live file is all there is.
    snapshot = not (args.warehouse or args.live) and settings.snapshot.exists()
    path = settings.snapshot if snapshot else live
    if not path.exists():
        print(f"error: no warehouse at {path} (run `athanor ingest` or `make demo` first)", file=sys.stderr)
        return 1
    if snapshot and live.exists() and live.stat().st_mtime_ns > path.stat().st_mtime_ns:
        published = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        print(
            f"note: reading the snapshot published {published:%Y-%m-%d %H:%M} UTC; the warehouse "
            "has changed since (`--live` reads it)",
            file=sys.stderr,
        )
    try:
        from athanor.warehouse import lake

        con = open_readonly(
            path,
            snapshot=snapshot,
            memory_limit=settings.duckdb_memory_limit,
            threads=settings.duckdb_threads,
            max_temp=settings.query_max_temp,
            # The lake mode: the fact tables as the snapshot ids the published run read (or
            # --lake-snapshot), their data files the only others the session may read.
            before_lockdown=lambda con: lake.attach_for_query(
                con, settings, args.lake_snapshot, published=snapshot
            ),
        )
    except duckdb.IOException as exc:
        if not _lock_conflict(exc):
            raise
        hint = (
            "leave out --live to read the snapshot"
            if args.live and settings.snapshot.exists()
            else "try again when it ends"
        )
        print(
            f"error: {path} is being written by another process (a load or the nightly run); {hint}",
            file=sys.stderr,
        )
        return 1
    try:
        columns, rows = run_readonly(con, args.sql, timeout_s=settings.query_timeout_s)
    finally:
        con.close()
    print(format_rows(columns, rows, args.format, neutralise=not args.raw_csv))
    return 0


def _cmd_durations(args: argparse.Namespace, settings: Settings) -> int:
    from athanor.model import durations
    from athanor.model.durations.read import load_fit_jobs

    try:
        # The jobs the night's fit for that day sees (its window, running jobs censored at the
        # day's end): the CLI, the report and duration_fits.csv then show the same figures.
        frame = load_fit_jobs(args.file, args.as_of, args.window_days)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    group_by = [c.strip() for c in args.group_by.split(",")] if args.group_by else []
    missing = [c for c in group_by if c not in frame.columns]
    if missing:
        print(f"error: {Path(args.file).name}: no column {', '.join(missing)} to group by", file=sys.stderr)
        return 1
    replicates = (
        {} if args.bootstrap is None else {"gof_replicates": args.bootstrap, "ci_replicates": args.bootstrap}
    )
    fits = durations.fit_groups(frame, group_by, **replicates)
    records = [f.to_record() for f in fits]
    print(
        json.dumps(records, indent=2, default=_json_default)
        if args.format == "json"
        else durations.format_table(records)
    )
    return 0


def _cmd_commit_plan(args: argparse.Namespace, settings: Settings) -> int:
    from athanor.recommend import commitments

    try:
        units = commitments.read_demand_csv(args.demand)
    except (ValueError, OSError, KeyError) as exc:
        print(f"error: {Path(args.demand).name}: {exc}", file=sys.stderr)
        return 1
    plan = commitments.commit_plan(
        units,
        args.on_demand_rate,
        args.commit_rate,
        upfront_fraction=args.upfront_fraction,
        term_months=args.term_months,
    )
    if args.format == "json":
        print(json.dumps(plan.to_dict(), indent=2, default=_json_default))
    else:
        d = plan.to_dict()
        keys = [
            "commit_units",
            "expected_cost",
            "on_demand_cost",
            "estimated_monthly_savings_amount",
            "savings_pct",
            "utilization",
            "coverage",
            "break_even_months",
            "upfront_cost",
            "recurring_hourly_cost",
        ]
        print(format_rows(["field", "value"], [(k, d[k]) for k in keys], "table"))
    return 0


def _cmd_gpu_plan(args: argparse.Namespace, settings: Settings) -> int:
    """Which GPU type and how many per workload class, from job logs or the warehouse's job_runs."""
    from athanor.recommend import gpu_choice, gpu_plan

    if args.jobs:
        runs, notes = gpu_plan.runs_from_files([Path(p) for p in args.jobs])
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    else:
        path, snapshot = _analyst_source(args, settings)
        if not path.exists():
            print(
                f"error: no warehouse at {path} (give job-log files, or run `athanor ingest`)",
                file=sys.stderr,
            )
            return 1
        with _analyst_reading(path, snapshot, settings) as con:
            runs = gpu_plan.read_job_runs(con)
    classes, notes = gpu_choice.class_inputs(
        runs,
        group_by=[c.strip() for c in args.group_by.split(",") if c.strip()]
        if args.group_by
        else gpu_choice.DEFAULT_GROUP_BY,
    )
    for note in notes:  # runs left out (impossible values, unknown types) and classes not formed
        print(f"note: {note}", file=sys.stderr)
    plans = gpu_choice.plan_classes(
        classes, deadline_slack=args.deadline_slack, candidate_types=args.candidates
    )
    if args.format == "json":
        print(json.dumps([p.to_json() for p in plans], indent=2, default=_json_default))
    else:
        print(format_rows(gpu_choice.TABLE_COLUMNS, gpu_choice.table_rows(plans), "table"))
    return 0


def _cmd_gpu_catalog(args: argparse.Namespace, settings: Settings) -> int:
    from athanor.reference import gpus

    if args.refresh:
        return _refresh_catalog(args)
    records = gpus.catalog_records()
    if args.format == "json":
        print(json.dumps(records, indent=2, default=_json_default))
    else:
        columns = list(records[0]) if records else []
        print(format_rows(columns, [tuple(r.values()) for r in records], "table"))
    return 0


def _refresh_catalog(args: argparse.Namespace) -> int:
    """`gpu-catalog --refresh`: prices from the three price APIs (or recorded answers), what changed."""
    import os

    from athanor.reference import refresh

    providers = [p.strip() for p in (args.provider or ",".join(refresh.PROVIDERS)).split(",") if p.strip()]
    unknown = [p for p in providers if p not in refresh.PROVIDERS]
    if unknown:
        print(
            f"error: --provider {unknown[0]!r} is not one of {', '.join(refresh.PROVIDERS)}", file=sys.stderr
        )
        return 2
    key = os.environ.get(refresh.GCP_KEY_VARIABLE) or None
    if args.recorded:
        fetch: refresh.Fetcher = refresh.RecordedFetcher(Path(args.recorded))
    else:
        fetch = refresh.network_fetcher(gcp_api_key=key)
        if "gcp" in providers and key is None and args.provider is None:
            # Asked for everything, GCP without its key: the others still refresh.
            providers.remove("gcp")
            print(
                f"note: GCP skipped: its Cloud Billing Catalog API needs an API key ({refresh.GCP_KEY_VARIABLE})"
            )
    try:
        result = refresh.refresh(fetch, on=datetime.now(UTC).date(), providers=providers)
    except refresh.FetchError as e:
        print(f"error: {e}; the catalogue is unchanged", file=sys.stderr)
        return 1
    for line in result.lines():
        print(line)
    return 0


def _cmd_gpu_usage(args: argparse.Namespace, settings: Settings) -> int:
    """Busy, idle and unobserved GPU-hours and the cost of idle ones, from every sample in the warehouse."""
    from athanor.recommend import gpu_usage

    path, snapshot = _analyst_source(args, settings)
    if not path.exists():
        print(f"error: no warehouse at {path} (load GPU telemetry with `athanor ingest`)", file=sys.stderr)
        return 1
    rule = gpu_usage.IdleRule(
        settings.idle_below_pct if args.idle_below is None else args.idle_below,
        settings.idle_minutes if args.idle_minutes is None else args.idle_minutes,
        settings.gpu_sample_cap_minutes,
    )
    with _analyst_reading(path, snapshot, settings) as con:
        span = gpu_usage.sample_span(con)
        # No sample: an empty window, so the figures are zeros with the same shape.
        rows = gpu_usage.hourly(con, *(span or gpu_usage.NO_WINDOW), rule)
        figures = gpu_usage.summary(con, rows)
        notes = gpu_usage.notes(con, rows, rule)
    if span:
        notes.insert(0, f"window: {span[0]:%Y-%m-%d} to {span[1]:%Y-%m-%d} (UTC, end excluded), every sample")
    if args.format == "json":
        print(json.dumps(figures, indent=2))
    else:
        columns = (
            "team",
            "instance_type",
            "gpu_hours",
            "idle_gpu_hours",
            "idle_cost_usd",
            "mean_utilisation",
        )
        total = ("(all)", "", figures["gpu_hours"], figures["idle_gpu_hours"], figures["idle_cost_usd"], None)
        print(
            format_rows(columns, [tuple(g[c] for c in columns) for g in figures["groups"]] + [total], "table")
        )
        print(f"unobserved GPU-hours: {figures['unobserved_gpu_hours']}")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _cmd_allocation(args: argparse.Namespace, settings: Settings) -> int:
    """GPU cost per job and team by GPU-seconds held, idle apart (the allocate_gpus stage's table)."""
    from athanor.recommend import allocation

    path, snapshot = _analyst_source(args, settings)
    if not path.exists():
        print(f"error: no warehouse at {path} (run `athanor run` first)", file=sys.stderr)
        return 1
    if args.since and args.until and args.since >= args.until:
        print(
            f"error: --since {args.since} is not before --until {args.until} (the end is excluded)",
            file=sys.stderr,
        )
        return 2
    since = datetime.combine(args.since, datetime.min.time()) if args.since else None
    until = datetime.combine(args.until, datetime.min.time()) if args.until else None
    with _analyst_reading(path, snapshot, settings) as con:
        figures = allocation.allocation_summary(con, since, until)
        hours = con.execute("select count(*) from gpu_allocation_hourly").fetchone()[0]
    if not hours:
        print(
            "note: gpu_allocation_hourly is empty: `athanor run` allocates the bill (stage allocate_gpus)",
            file=sys.stderr,
        )
    if args.format == "json":
        print(json.dumps(figures, indent=2))
    else:
        print(
            format_rows(
                ("team", "allocated_usd", "idle_usd"),
                [(t["team"] or "(no team)", t["allocated_usd"], t["idle_usd"]) for t in figures["teams"]]
                + [("(all)", figures["allocated_usd"], figures["idle_usd"])],
                "table",
            )
        )
        print(
            f"billed ${figures['billed_usd']:,.2f} = allocated ${figures['allocated_usd']:,.2f}"
            f" + idle ${figures['idle_usd']:,.2f} + nobody's ${figures['unattributed_usd']:,.2f}"
        )
        print(
            format_rows(
                ("job_id", "team", "gpu_hours", "cost_usd"),
                [tuple(j[c] for c in ("job_id", "team", "gpu_hours", "cost_usd")) for j in figures["jobs"]],
                "table",
            )
        )
    return 0


def _cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from athanor.demo import fleet as demo
    from athanor.demo import storage as demo_storage
    from athanor.demo.telemetry import write_telemetry

    if args.out is None and settings.landing.startswith("s3://"):
        raise ValueError(f"demo: ATHANOR_LANDING is a bucket ({settings.landing}); pass --out FOLDER")
    out = Path(args.out or settings.landing)
    as_of = date.fromisoformat(args.as_of) if args.as_of else None
    cfg = demo.DemoConfig(seed=args.seed, **({"end_date": as_of} if as_of else {}))
    summary = demo.generate_landing(out, cfg, as_of=as_of)
    day = as_of or cfg.end_date
    demo_storage.generate_storage(out, cfg, as_of)  # the buckets and volumes the bill charges
    write_telemetry(out, cfg, as_of)  # the GPUs' utilisation, of the instances the bill charges
    from athanor.demo.cluster import write_cluster

    write_cluster(out, cfg, as_of)  # the shared Slurm cluster: untagged bill, sacct, instance listings
    from athanor.demo.budgets import write_budgets

    budgets = write_budgets(settings.home)  # outside the landing folder: it is no delivery
    if budgets:
        print(f"demo budgets to {budgets} (used when ATHANOR_BUDGETS is not set)")
    files = summary.get("files", [])
    print(f"demo exports for {cfg.days} days to {day} (seed {args.seed}): {len(files)} files in {out}")
    return 0


def _cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the whole nightly flow in this process (what the two DAGs do, without Airflow)."""
    from athanor.errors import DataRejected
    from athanor.flow import STAGES, holding_warehouse, run_stage
    from athanor.warehouse import WarehouseBusy, snapshots

    context = {"params": {"as_of": args.as_of, "source": args.source}, "run_id": args.run_id}
    stage_options = {"settings": settings, "s3_client": lambda: s3_client(settings)}
    if args.dry_run:
        return _dry_run(context, stage_options)
    results: dict[str, dict] = {}
    try:
        with holding_warehouse(settings) as held, contextlib.ExitStack() as later:
            ahead = None
            for stage in STAGES:
                inputs = [results[name] for name in stage.inputs]
                results[stage.name] = run_stage(
                    stage.name, context, *inputs, held=held, snapshot_ahead=ahead, **stage_options
                )
                # With --verbose the log has said each delivery's line already, with its time.
                if stage.name == "load" and not args.verbose:
                    for line in results["load"].get("loaded", []):
                        print(line)
                if stage.name == "validate":
                    # The facts are final from here: the snapshot's new files are written
                    # while the optimize stages run, for publish to take.
                    ahead = later.enter_context(snapshots.WriteAhead(held, settings.snapshot))
                elif ahead is not None:
                    # And a table a stage rewrites (the allocation), once that stage is done.
                    ahead.also(snapshots.rewritten_by(stage.name))
    except (DataRejected, WarehouseBusy) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    mix, published = results["recommend_mix"], results["publish"]
    print(mix.get("explanation", ""))
    print(f"report: {published['report']}")
    return 0


def _dry_run(context: dict, stage_options: dict) -> int:
    """`athanor run --dry-run`: the ingest DAG's stages with its `dry_run` param, and no more
    (the optimize stages run on the asset event a dry run never emits)."""
    from athanor.flow import run_stage, stages_of

    context = {**context, "params": {**context["params"], "dry_run": True}}
    results: dict[str, dict] = {}
    for stage in stages_of("athanor_ingest"):
        inputs = [results[name] for name in stage.inputs]
        results[stage.name] = run_stage(stage.name, context, *inputs, **stage_options)
    landed = results["load"]
    for delivery in landed.get("deliveries", []):
        print(f"would load {delivery['uri']}: {', '.join(delivery['files'])}")
    for line in landed.get("waiting", []):
        print(line)
    print("dry run: nothing fetched, loaded or published")
    return 0


def s3_client(settings: Settings):
    """A boto3 S3 client for the CLI: credentials from boto3's usual chain (the `AWS_*` variables,
    profiles), the endpoint (S3-compatible servers) and region from the settings."""
    import boto3

    return boto3.client("s3", endpoint_url=settings.s3_endpoint_url, region_name=settings.aws_region)


def _cmd_lifecycle(args: argparse.Namespace, settings: Settings) -> int:
    from athanor.recommend import lifecycle

    try:
        inventory = lifecycle.read_inventories([Path(p) for p in args.inventory])
        ebs = (
            lifecycle.read_ebs(args.ebs_volumes, args.ebs_snapshots)
            if (args.ebs_volumes or args.ebs_snapshots)
            else None
        )
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    as_of = date.fromisoformat(args.as_of) if args.as_of else datetime.now().date()
    client = s3_client(settings) if args.apply else None
    existing = None
    if client is not None:
        from athanor.recommend.lifecycle.apply import get_lifecycle

        existing = {args.bucket: get_lifecycle(client, args.bucket)}
    rec = lifecycle.recommend_lifecycle(
        inventory, ebs, as_of=as_of, keep_last=args.keep_last, existing_configs=existing
    )
    print(rec.to_json() if args.format == "json" else rec.format_table())
    if args.apply:
        if args.bucket not in rec.configs:
            print(f"error: no rules were recommended for bucket {args.bucket}", file=sys.stderr)
            return 1
        artifacts = settings.artifacts / f"lifecycle-{datetime.now():%Y%m%dT%H%M%S}"
        result = lifecycle.apply_lifecycle(
            client, args.bucket, rec.configs[args.bucket], artifacts, dry_run=False
        )
        print(result.diff_text, file=sys.stderr)
        print(
            f"applied to {args.bucket}; previous configuration saved to {result.previous_path} "
            f"(undo: athanor lifecycle-restore {args.bucket} {result.previous_path})",
            file=sys.stderr,
        )
    return 0


def _cmd_lifecycle_restore(args: argparse.Namespace, settings: Settings) -> int:
    from athanor.recommend import lifecycle

    lifecycle.restore_lifecycle(s3_client(settings), args.bucket, Path(args.previous))
    print(f"restored the lifecycle configuration of {args.bucket} from {args.previous}")
    return 0


def _cmd_quarantine(args: argparse.Namespace, settings: Settings) -> int:
    from athanor.quality import list_quarantine, release

    if args.action == "list":
        held = list_quarantine(settings.quarantine)
        if args.format == "json":
            # The whole reason (the table cuts it at 120 characters) and the files as a list.
            records = [
                {
                    "quarantined_at": d.quarantined_at,
                    "run_id": d.run_id,
                    "delivery": d.delivery,
                    "files": list(d.files),
                    "reason": d.reason,
                    "path": str(d.path),
                }
                for d in held
            ]
            print(json.dumps(records, indent=2))
            return 0
        rows = [
            (d.quarantined_at, d.run_id, d.delivery, ", ".join(d.files), d.reason[:120], str(d.path))
            for d in held
        ]
        print(format_rows(["quarantined_at", "run_id", "delivery", "files", "reason", "path"], rows, "table"))
        return 0
    if not args.path:
        print("error: give the quarantine folder to release (see `athanor quarantine list`)", file=sys.stderr)
        return 1
    # `athanor run` mirrors a bucket's objects here (athanor.flow.land); files quarantined from
    # the mirror go back to their bucket.
    mirror = settings.home / ".cache" / "landing"
    from athanor.ingest.deliveries import allow_release

    allow_release(args.path, settings)  # the ledger notes it: the next load takes it as it is
    moved = release(
        args.path, settings.quarantine, bucket_mirror=mirror, s3_client=lambda: s3_client(settings)
    )
    folders = dict.fromkeys(location.rsplit("/", 1)[0] for location in moved)
    print(f"released {len(moved)} file(s) to {', '.join(folders)}; the next run loads them")
    return 0


def _watch_warehouse(args: argparse.Namespace, settings: Settings):
    path, snapshot = _analyst_source(args, settings)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "no warehouse (run `athanor ingest` first)", str(path))
    return _analyst_reading(path, snapshot, settings)


def _analyst_source(args: argparse.Namespace, settings: Settings) -> tuple[Path, bool]:
    """The published snapshot unless `--live` or `--warehouse FILE` (as `athanor query` reads):
    a run holding the warehouse never stops an analyst's command."""
    from athanor.warehouse.readonly import analyst_source

    path, snapshot, note = analyst_source(settings, args.warehouse, args.live)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return path, snapshot


def _analyst_reading(path: Path, snapshot: bool, settings: Settings):
    from athanor.warehouse.readonly import reading

    return reading(path, snapshot=snapshot, settings=settings)


def _cmd_plan(args: argparse.Namespace, settings: Settings) -> int:
    """The latest night's plan, from the analysts' snapshot (`--live`: the warehouse, read-only)."""
    import duckdb

    from athanor.publish.artifacts import as_published
    from athanor.recommend import plan
    from athanor.warehouse.snapshots import open_snapshot

    live = args.live or not settings.snapshot.exists()
    path = settings.warehouse if live else settings.snapshot
    if not path.exists():
        print(f"error: no warehouse at {path} (run `athanor run` or `make demo` first)", file=sys.stderr)
        return 1
    con = duckdb.connect(str(path), read_only=True) if live else open_snapshot(path)
    try:
        has_table = con.execute(
            "select count(*) from duckdb_tables() where table_name = 'plan_steps' and schema_name = 'main'"
        ).fetchone()[0]
        found = plan.document(con) if has_table else None
    finally:
        con.close()
    if found is None:
        print(
            f"error: {path} holds no plan yet (the nightly run's compose_plan stage writes it)",
            file=sys.stderr,
        )
        return 1
    if args.format == "json":
        # Rounded as recommendations.json rounds its `plan`: the two print the same figures.
        print(json.dumps(as_published(found), indent=2))
        return 0
    rows = [
        (
            s["order"],
            s["kind"],
            s["scope"],
            "yes" if s["counted"] else "apart",
            "" if s["monthly_savings"] is None else f"{s['monthly_savings']:,.2f}",
            ",".join(str(o) for o in s["assumes"]),
            s["action"],
        )
        for s in found["steps"]
    ]
    print(
        f"plan of {found['as_of']}: {found['total_monthly_savings']:,.2f} {found['currency']} a month (counted steps)"
    )
    print(
        format_rows(["order", "kind", "scope", "counted", "monthly saving", "after", "action"], rows, "table")
    )
    return 0


def _cmd_anomalies(args: argparse.Namespace, settings: Settings) -> int:
    """Daily cost anomalies per service, account and team (athanor.watch.anomalies), nothing written."""
    from athanor.watch.anomalies import describe_line, find_anomalies
    from athanor.watch.series import latest_day

    with _watch_warehouse(args, settings) as con:
        as_of = latest_day(con)
        if as_of is None:
            print("[]" if args.format == "json" else "no billing data in the warehouse")
            return 0
        since = date.fromisoformat(args.since) if args.since else None
        found = find_anomalies(con, as_of, settings.watch, since=since)
    if args.format == "json":
        print(json.dumps([a.as_json() for a in found], indent=2))
        return 0
    rows = [
        (
            a.day,
            a.scope,
            a.kind,
            a.currency,
            f"{a.expected:,.2f}",
            f"{a.actual:,.2f}",
            f"{a.excess:,.2f}",
            "; ".join(f"{describe_line(t)} +{t['excess']:,.2f}" for t in a.top_lines[:2]),
        )
        for a in found
    ]
    print(
        format_rows(
            ["day", "scope", "kind", "currency", "expected", "actual", "excess", "top lines"], rows, "table"
        )
    )
    return 0


def _cmd_forecast(args: argparse.Namespace, settings: Settings) -> int:
    """Spend forecast per team and in total, with its backtest (athanor.watch.forecast), nothing written."""
    from athanor.watch.nightly import compute, forecast_summary
    from athanor.watch.series import latest_day

    with _watch_warehouse(args, settings) as con:
        as_of = latest_day(con)
        if as_of is None:
            print("no billing data in the warehouse", file=sys.stderr)
            return 1
        watch = compute(con, as_of, settings.watch, horizon_days=args.horizon_days, anomalies=False)
    summary = forecast_summary(watch, args.horizon_days or settings.watch.forecast_horizon_days)
    if args.format == "json":
        print(json.dumps(summary, indent=2))
        return 0
    rows = [
        (
            s["scope"],
            s["currency"],
            f"{s['month_to_date']:,.2f}",
            f"{s['month']['cost']:,.2f} [{s['month']['lower']:,.2f}, {s['month']['upper']:,.2f}]",
            f"{s['next_days']['cost']:,.2f} [{s['next_days']['lower']:,.2f}, {s['next_days']['upper']:,.2f}]",
        )
        for s in summary["scopes"]
    ]
    interval = f"{summary['interval']:.0%} interval"
    print(
        f"forecast after {summary['as_of']} ({summary['month']} month; next {summary['horizon_days']} days; {interval})"
    )
    print(
        format_rows(
            ["scope", "currency", "month to date", "month whole", f"next {summary['horizon_days']} days"],
            rows,
            "table",
        )
    )
    accuracy = [
        (
            a["scope"],
            a["horizon_days"],
            a["folds"],
            "" if a["mape"] is None else f"{a['mape']:.1%}",
            "" if a["interval_coverage"] is None else f"{a['interval_coverage']:.0%}",
        )
        for a in summary["backtest"]
    ]
    print(f"backtest (MAPE of each horizon's total; days inside the calibrated {interval})")
    print(format_rows(["scope", "horizon_days", "folds", "mape", "interval_coverage"], accuracy, "table"))
    stale = [f for f in summary["freshness"] if f["stale"]]
    for f in stale:
        print(
            f"stale bill: {f['provider']} account {f['billing_account']}: last charge day "
            f"{f['last_charge_day']}, {f['lag_days']} days before {summary['as_of']}; the days after "
            f"{summary['complete_through']} are forecast, budgets unknown",
            file=sys.stderr,
        )
    return 0


def _deadline_slack(text: str) -> float:
    """--deadline-slack: how many times its current hours a run may take (0.5: half). Zero or less
    leaves no time at all, and nan or inf compares with nothing: every plan would be arbitrary."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: a finite number above 0 (1.5: half as long again)")
    return value


def _instance_types(text: str) -> list[str]:
    """--candidates: GPU instance types the catalog knows (a typo would silently compare nothing)."""
    from athanor.reference import gpus

    types = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in types if gpus.gpu_instance(t) is None]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"not in the GPU catalog: {', '.join(unknown)} (`athanor gpu-catalog` lists the instance types)"
        )
    if not types:
        raise argparse.ArgumentTypeError("no instance type named")
    return types


def _horizon_days(text: str) -> int:
    """--horizon-days: 1 to MAX_FORECAST_HORIZON_DAYS (its time and memory grow with the horizon)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days") from None
    if not 1 <= value <= MAX_FORECAST_HORIZON_DAYS:
        raise argparse.ArgumentTypeError(
            f"{value}: a forecast reaches 1 to {MAX_FORECAST_HORIZON_DAYS} days ahead"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="athanor", description="GPU cloud-bill analytics on DuckDB")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="detect, validate and load export files or folders")
    p.add_argument("paths", nargs="+", help="files or folders (folders are walked; one delivery per folder)")
    p.add_argument(
        "--warehouse", help="DuckDB file (default: $ATHANOR_WAREHOUSE or warehouse/athanor.duckdb)"
    )
    p.set_defaults(func=_cmd_ingest)

    p = sub.add_parser("query", help="run read-only SQL on the analysts' snapshot of the warehouse")
    p.add_argument("sql", help="SELECT, EXPLAIN, PRAGMA or CALL statements (see the README)")
    p.add_argument("--live", action="store_true", help="read the warehouse itself, not the snapshot")
    p.add_argument(
        "--lake-snapshot",
        type=int,
        help="lake mode: read the fact table that has this Iceberg snapshot id as of it (default: the published run's)",
    )
    p.add_argument("--warehouse", help="read this DuckDB file itself (read-only)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument(
        "--raw-csv",
        action="store_true",
        help="leave CSV cells starting with = + - @ as they are (for programs, not spreadsheets)",
    )
    p.set_defaults(func=_cmd_query)

    p = sub.add_parser("durations", help="fit task-duration distributions to a job-run or durations file")
    p.add_argument("file", help="job-run CSV/Parquet (canonical schema) or a one-column CSV of seconds")
    p.add_argument("--group-by", help="comma-separated columns, e.g. team or team,model")
    p.add_argument(
        "--bootstrap",
        type=int,
        help="bootstrap replicates for CIs and the fit p-value (default: the nightly's, 99 and 49)",
    )
    p.add_argument(
        "--as-of",
        type=date.fromisoformat,
        help="fit the jobs as known at the end of this day (YYYY-MM-DD; default: the file's last day)",
    )
    p.add_argument(
        "--window-days",
        type=int,
        help="only jobs that started in the last N days up to --as-of (default: the nightly's; 0: all)",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_durations)

    p = sub.add_parser("commit-plan", help="cost-minimising commitment for an hourly demand series")
    p.add_argument("demand", help="CSV with columns hour, units")
    p.add_argument("--on-demand-rate", type=float, required=True, help="$ per unit-hour on demand")
    p.add_argument("--commit-rate", type=float, required=True, help="effective $ per unit-hour committed")
    p.add_argument("--upfront-fraction", type=float, default=0.0, help="0 no upfront, 1 all upfront")
    p.add_argument(
        "--term-months",
        type=int,
        default=12,
        help="commitment term in months (default: 12; AWS sells 12 and 36)",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_commit_plan)

    p = sub.add_parser("gpu-plan", help="which GPU type and how many each workload class should run on")
    p.add_argument("jobs", nargs="*", help="job-log files or folders (default: job_runs in the warehouse)")
    p.add_argument("--warehouse", help="DuckDB file to read job_runs from (read-only)")
    p.add_argument("--live", action="store_true", help=LIVE_HELP)
    p.add_argument(
        "--deadline-slack",
        type=_deadline_slack,
        default=1.5,
        help="a run may take this many times its current hours (a finite number above 0)",
    )
    p.add_argument(
        "--candidates",
        type=_instance_types,
        help="comma-separated instance types to compare (any cloud; `athanor gpu-catalog` lists them)",
    )
    p.add_argument("--group-by", help="comma-separated job-run columns (default: team,project,model,phase)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_gpu_plan)

    p = sub.add_parser("gpu-catalog", help="GPU instance types with their figures and $/TFLOPS-day")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument(
        "--refresh",
        action="store_true",
        help="read the prices again from the AWS Price List, Azure Retail Prices and GCP Cloud Billing "
        "Catalog APIs, write them to $ATHANOR_CATALOGUE (default $ATHANOR_HOME/catalogue) and print what changed",
    )
    p.add_argument(
        "--provider", help="with --refresh: comma-separated providers to ask (default: aws,azure,gcp)"
    )
    p.add_argument("--recorded", help="with --refresh: replay the API answers recorded in this folder")
    p.set_defaults(func=_cmd_gpu_catalog)

    p = sub.add_parser("gpu-usage", help="busy, idle and unobserved GPU-hours and the cost of idle ones")
    p.add_argument(
        "--warehouse", help="DuckDB file to read gpu_samples, billing and job runs from (read-only)"
    )
    p.add_argument("--live", action="store_true", help=LIVE_HELP)
    p.add_argument(
        "--idle-below", type=float, help="idle below this %% utilisation (ATHANOR_IDLE_BELOW_PCT, 5)"
    )
    p.add_argument(
        "--idle-minutes", type=float, help="for at least this many minutes (ATHANOR_IDLE_MINUTES, 30)"
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_gpu_usage)

    p = sub.add_parser("allocation", help="GPU cost per job and team by GPU-seconds held, idle apart")
    p.add_argument("--warehouse", help="DuckDB file to read gpu_allocation_hourly from (read-only)")
    p.add_argument("--live", action="store_true", help=LIVE_HELP)
    p.add_argument("--since", type=date.fromisoformat, help="first day (UTC) of the machine-hours counted")
    p.add_argument(
        "--until", type=date.fromisoformat, help="the day after the last one counted (end excluded)"
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_allocation)

    p = sub.add_parser("demo", help="write realistic demo exports (billing, job logs, inventory) to a folder")
    p.add_argument("--out", help="folder (default: $ATHANOR_LANDING, where `athanor run` looks)")
    p.add_argument("--as-of", help="delivery day (default: the demo's last day, 2026-11-30)")
    p.add_argument("--seed", type=int, default=7, help="random seed of the demo fleet (default: 7)")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("run", help="run the whole nightly flow here, without Airflow")
    p.add_argument("--as-of", help="the day to run for (default: latest day in the warehouse)")
    p.add_argument("--source", help="folder or s3://bucket/prefix (default: $ATHANOR_LANDING)")
    p.add_argument(
        "--run-id",
        default=f"cli__{datetime.now():%Y%m%dT%H%M%S}",
        help="id the run's rows carry in the warehouse (run_id) and quarantine (default: cli__<local time>)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list what would load, as the ingest DAG's dry_run does: nothing fetched, written or published",
    )
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser(
        "lifecycle", help="price checkpoint-storage policies from S3 Inventory (and EBS listings)"
    )
    p.add_argument("inventory", nargs="+", help="manifest.json files or folders holding inventory deliveries")
    p.add_argument("--ebs-volumes", help="DescribeVolumes JSON")
    p.add_argument("--ebs-snapshots", help="DescribeSnapshots JSON")
    p.add_argument("--as-of", help="day the ages are counted from (default: today)")
    p.add_argument("--keep-last", type=int, default=3, help="checkpoints per run that are never expired")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--apply", action="store_true", help="put the rules on --bucket (default: dry run)")
    p.add_argument("--bucket", help="bucket to apply to (with --apply)")
    p.set_defaults(func=_cmd_lifecycle)

    p = sub.add_parser(
        "lifecycle-restore", help="put back a bucket's lifecycle configuration saved by --apply"
    )
    p.add_argument("bucket", help="the bucket whose lifecycle configuration to put back (a name, no s3://)")
    p.add_argument("previous", help="the lifecycle-previous-<bucket>.json written when applying")
    p.set_defaults(func=_cmd_lifecycle_restore)

    p = sub.add_parser("quarantine", help="list rejected deliveries, or release one to be loaded again")
    p.add_argument("action", choices=["list", "release"], help="list the held deliveries, or release PATH")
    p.add_argument("path", nargs="?", help="quarantine folder to release")
    p.add_argument(
        "--format", choices=["table", "json"], default="table", help="output of `list` (default: table)"
    )
    p.set_defaults(func=_cmd_quarantine)

    p = sub.add_parser(
        "plan",
        help="the latest night's plan for the GPU fleet, in order, with the saving of each step",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--live", action="store_true", help="read the warehouse itself instead of the snapshot")
    p.set_defaults(func=_cmd_plan)

    p = sub.add_parser("anomalies", help="daily cost anomalies per service, account and team")
    p.add_argument("--warehouse", help="DuckDB file (read-only; default: the published snapshot)")
    p.add_argument("--live", action="store_true", help=LIVE_HELP)
    p.add_argument(
        "--since", help="first day judged, YYYY-MM-DD (default: the last ATHANOR_ANOMALY_LOOKBACK_DAYS)"
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_anomalies)

    p = sub.add_parser("forecast", help="spend forecast per team and in total, with its backtest")
    p.add_argument("--warehouse", help="DuckDB file (read-only; default: the published snapshot)")
    p.add_argument("--live", action="store_true", help=LIVE_HELP)
    p.add_argument(
        "--horizon-days",
        type=_horizon_days,
        help=f"days ahead, 1 to {MAX_FORECAST_HORIZON_DAYS} (default: $ATHANOR_FORECAST_HORIZON_DAYS, 90)",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_forecast)

    # Accepted before or after the command; SUPPRESS keeps a subcommand's default from
    # overwriting `athanor --debug <command>`.
    for command in sub.choices.values():
        for action in command._actions:
            if action.dest == "format" and not action.help:
                action.help = f"output format (default: {action.default})"
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
        command.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
        )
    return parser


LIVE_HELP = "read the warehouse itself (read-only), not the snapshot the last run published"
DEBUG_HELP = "on failure, print the traceback as well as the one-line error"
VERBOSE_HELP = "log each step to stderr as it happens: what it read, loaded, skipped, rejected and wrote"


def _lock_conflict(exc: BaseException) -> bool:
    return "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)


def error_line(exc: BaseException) -> str:
    """One line saying why a command failed, for the errors an operator can meet and act on."""
    import duckdb

    text = " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.errno is not None:
        where = f": {exc.filename}" if exc.filename else ""
        if exc.errno == errno.ENOSPC:
            return f"no space left on device{where} (free some space, then run again)"
        if isinstance(exc, FileNotFoundError):
            return f"no such file or folder{where}"
        if isinstance(exc, PermissionError):
            return f"permission denied{where}"
        return f"{exc.strerror or text}{where}"
    if isinstance(exc, duckdb.Error):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, duckdb.IOException) and _lock_conflict(exc):
            held = re.search(r'lock on file "([^"]+)".*?\(PID (\d+)\)', first)
            if held:
                return (
                    f"{held[1]} is in use by another process (PID {held[2]}, a load or the nightly run); "
                    "try again when it ends"
                )
        return first
    if type(exc).__module__.startswith("botocore"):
        bucket = re.search(r'Invalid bucket name "([^"]*)"', str(exc))
        if bucket:  # botocore goes on to quote two regular expressions
            return (
                f"invalid bucket name {bucket[1]!r}: a bucket name is 3 to 63 lowercase letters, digits, "
                "dots and hyphens (no s3://, no prefix)"
            )
        # ParamValidationError puts the reason on the lines after a generic header.
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return " ".join(lines[1:] if len(lines) > 1 and lines[0].endswith(":") else lines)
    if isinstance(exc, ValueError | LookupError | DataRejected) and text:
        return text
    return f"{type(exc).__name__}: {text or 'no detail'} (run with --debug for the traceback)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; any failure is one line on stderr and exit code 1 (`--debug`: and the trace)."""
    import signal

    # `athanor query ... | head` should stop quietly, like any Unix filter.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    with _logging_to_stderr(args.verbose):
        return _run_command(args)


@contextlib.contextmanager
def _logging_to_stderr(enabled: bool) -> Iterator[None]:
    """`--verbose`: Athanor's INFO log on stderr, what Airflow's task logs show for a run outside
    Airflow (without it, Python prints warnings only). Removed after the command, for callers
    that run several in one process."""
    if not enabled:
        yield
        return
    logger = logging.getLogger("athanor")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _run_command(args: argparse.Namespace) -> int:
    if getattr(args, "apply", False) and not getattr(args, "bucket", None):
        print("error: --apply needs --bucket", file=sys.stderr)
        return 2
    try:
        return int(args.func(args, Settings.from_env()))
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {error_line(exc)}", file=sys.stderr)
        return 1


def entry() -> NoReturn:
    """The `athanor` command (and `python -m athanor.cli`): `main`, then the process ends.

    `main` stays callable in a process that goes on (tests, notebooks); this is for one that
    exits. Python's exit runs one last cyclic collection over every object still alive, for
    memory the operating system takes back anyway: after a night (Great Expectations,
    statsmodels and pandas loaded; the file mode at 3 x 2 M lines) the process ended 1.1-1.3 s
    after its last stage, 0.2 s with those objects frozen, which the collection leaves out. Each
    command has closed its files and connections by then (Airflow's task processes end with
    `os._exit`, without that collection, and do not come here).
    """
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry()
