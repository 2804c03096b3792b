"""Benchmark: a nightly run after one restated month, against loading that month alone.

    .venv/bin/python bench/bench_nightly.py --months M --rows-per-month N [--mode file|lake]

1. Builds a warehouse of M months (ending 2026-11) of N FOCUS 1.2 billing rows each, plus one
   job run per ~2,000 billing rows in the generic job-log format, then runs the nightly of the
   last day once (`athanor run`), as production would have last night. The latest month's
   billing and every month's job log go through the product's own load (`athanor ingest`).
   The older billing months, with `--history copy` (the default), are that loaded month moved
   to theirs inside the warehouse by SQL, each with its own `loads` row and its partition
   summaries kept by the load's own function (`athanor.ingest.daily.refresh_billing_daily`):
   loading 12 x 8 M lines through the product takes about 1.5 hours on a 2-core machine, the
   copy a few minutes, and the timed steps below do not depend on how history got there.
   `--history loads` loads every month through `athanor ingest` instead (the lake mode's only
   way: its history lives in Iceberg). Delivery files are generated fast: one month with the
   demo's bench writer (`athanor.demo.bench.generate_focus_rows`), the other months (`loads`
   only) by DuckDB SQL moving that month's rows to theirs.
2. Lands a restatement of the latest month (the same month: ~2 % of its lines gone, ~10 % of
   the on-demand and spot lines cheaper) and times ONE `athanor run` in a fresh process:
   every stage of `athanor.flow.STAGES`, publish and the analysts' snapshot included.
3. Times `athanor ingest` of that same delivery into an empty warehouse in a fresh process.
   `--repeat K` does 2 and 3 for K nights in a row, each with another restatement (on a
   shared machine one pair of runs varies by ~20 %); the ratio is the median of the nights'.
   `--reuse` skips 1 and times more nights on the warehouse an earlier run built (file mode).

It prints the per-stage breakdown of the night whose ratio is the median (from
`pipeline_runs`), a table (months, night, rows in warehouse, nightly s, month-load s, ratio,
peak RSS of each process, DuckDB-read s), `nightly/month-load ratio: X`, then against the
physical limit (4. DuckDB alone reading the same delivery into a table of a new database file,
fresh process, same session settings, same run) `month-load/duckdb-read ratio: Z` and, last,
`nightly/duckdb-read ratio: Y`.

`--mode lake` sets ATHANOR_WAREHOUSE_MODE=lake for every process, with the catalog database
and the bucket from `lake_servers()` in bench/lake_servers.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "bench" / "nightly"
LAST_MONTH = date(2026, 11, 1)
ROWS_PER_JOB = 2_000
MIB = 1 << 20


def months_ending(last: date, count: int) -> list[date]:
    """The `count` first-of-months up to and including `last`, oldest first."""
    index = last.year * 12 + last.month - 1
    return [date(i // 12, i % 12 + 1, 1) for i in range(index - count + 1, index + 1)]


def _next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


# ------------------------------------------------------------------ delivery files


def template(rows: int) -> Path:
    """One month (2026-11) of synthetic FOCUS Parquet from the demo's bench writer, written once."""
    import duckdb

    from athanor.demo.bench import generate_focus_rows

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"template-{rows}.parquet"
    if path.exists() and duckdb.execute(f"select count(*) from '{path}'").fetchone()[0] != rows:
        path.unlink()  # written by an earlier bench that kept fewer distinct lines
    if not path.exists():
        raw = path.with_name(path.name + ".raw")
        tmp = path.with_name(path.name + ".tmp")
        # The writer draws instances at random, so some lines repeat another exactly (same
        # instance, hour and price), which the loader rightly rejects as delivered twice: ~1 % at
        # 2 M lines a month, ~6 % at 8 M. Draw 12 % more and keep the first N distinct ones.
        generate_focus_rows(
            rows + rows * 12 // 100 + 100, raw, fmt="parquet", period=LAST_MONTH.strftime("%Y-%m")
        )
        con = duckdb.connect()
        con.execute("set memory_limit = '1GB'; set threads = 2")
        con.execute(
            f"""copy (select * exclude (line_key, n) from (
                     select *, hash(*columns(*)) as line_key, row_number() over () as n from read_parquet('{raw}'))
                 qualify row_number() over (partition by line_key order by n) = 1
                 order by n limit {int(rows)}) to '{tmp}' (format parquet, row_group_size 122880)"""
        )
        written = con.execute(f"select count(*) from read_parquet('{tmp}')").fetchone()[0]
        con.close()
        raw.unlink()
        if written != rows:
            tmp.unlink()
            raise SystemExit(f"the bench writer gave {written:,} distinct lines, not {rows:,}")
        os.replace(tmp, path)
    return path


# The template's rows moved to another month: hour offsets are scaled to the month's length (in
# seconds, so that distinct hours stay distinct in a shorter month) and every charge stays inside
# its billing period; commitment terms move with the month, as
# text: the FOCUS staging reads x_CommitmentDiscountStart/End as text (nullif(x, '')) and fails
# on the typed timestamps the demo writer puts in Parquet.
_MOVE = """
copy (
    select * replace (
        timestamptz '{start}' as BillingPeriodStart,
        timestamptz '{end}' as BillingPeriodEnd,
        timestamptz '{start}' + to_seconds(
            (epoch(ChargePeriodStart - timestamptz '{t_start}') // 3600 * ({hours} - 1) * 3600 // ({t_hours} - 1))::bigint
        ) as ChargePeriodStart,
        timestamptz '{start}' + to_seconds(
            (epoch(ChargePeriodStart - timestamptz '{t_start}') // 3600 * ({hours} - 1) * 3600 // ({t_hours} - 1))::bigint
        ) + (ChargePeriodEnd - ChargePeriodStart) as ChargePeriodEnd,
        strftime(x_CommitmentDiscountStart + (timestamptz '{start}' - timestamptz '{t_start}'), '%Y-%m-%dT%H:%M:%SZ')
            as x_CommitmentDiscountStart,
        strftime(x_CommitmentDiscountEnd + (timestamptz '{start}' - timestamptz '{t_start}'), '%Y-%m-%dT%H:%M:%SZ')
            as x_CommitmentDiscountEnd
    )
    from read_parquet('{template}')
    {where}
) to '{out}' (format parquet, row_group_size 122880)
"""

# Restatement `night` of the month: ~2 % of the lines dropped, ~10 % of the uncommitted ones
# 3 % cheaper (billed and effective cost together, so they stay equal and under the list cost);
# each night drops other lines, so every night's delivery differs from the one before.
_RESTATE = """
copy (
    select * replace (
        case when CommitmentDiscountId is null and hash(ResourceId, ChargePeriodStart) % 10 = 3
             then round(BilledCost * 0.97, 6)::decimal(38, 6) else BilledCost end as BilledCost,
        case when CommitmentDiscountId is null and hash(ResourceId, ChargePeriodStart) % 10 = 3
             then round(EffectiveCost * 0.97, 6)::decimal(38, 6) else EffectiveCost end as EffectiveCost,
        case when CommitmentDiscountId is null and hash(ResourceId, ChargePeriodStart) % 10 = 3
             then round(PricingCurrencyEffectiveCost * 0.97, 6)::decimal(38, 6)
             else PricingCurrencyEffectiveCost end as PricingCurrencyEffectiveCost
    )
    from read_parquet('{source}')
    where hash(ResourceId, ChargePeriodStart, ChargeDescription) % 50 <> {night}
) to '{out}' (format parquet, row_group_size 122880)
"""

# Jobs of the month in the generic job-log schema: deterministic, spread over the month, a
# mix of states (some censored), four teams, the bench fleet's instance types.
_JOBS = """
copy (
    with j as (
        select i,
               timestamp '{start}' + to_seconds((hash(i, '{start}', 's') % {seconds})::bigint) as submit,
               60 + hash(i, '{start}', 'q') % 900 as queued,
               1800 + hash(i, '{start}', 'd') % 36000 as ran
        from range({count}) t(i)
    )
    select 'bench-{month}-' || i as job_id,
           strftime(submit, '%Y-%m-%dT%H:%M:%SZ') as submit_time,
           strftime(submit + to_seconds(queued), '%Y-%m-%dT%H:%M:%SZ') as start_time,
           strftime(least(submit + to_seconds(queued + ran), timestamp '{end}' - interval 1 second),
                    '%Y-%m-%dT%H:%M:%SZ') as end_time,
           ['completed', 'completed', 'completed', 'failed', 'preempted', 'cancelled'][1 + i % 6] as state,
           ['p4d.24xlarge', 'p5.48xlarge', 'g5.12xlarge', 'g6.48xlarge'][1 + i % 4] as instance_type,
           1 + i % 3 as instance_count,
           [8, 8, 4, 8][1 + i % 4] as gpus_per_instance,
           ['on_demand', 'spot', 'reserved', 'savings_plan'][1 + (i // 4) % 4] as pricing_model,
           ['vision', 'llm', 'speech', 'recsys'][1 + i % 4] as team,
           ['foundation', 'pretrain', 'asr', 'ranking'][1 + i % 4] as project,
           ['vit-h', 'llama70b', 'whisper-l', 'dlrm'][1 + i % 4] as model
    from j order by submit
) to '{out}' (format csv, header true)
"""


def write_deliveries(
    work: Path, months: list[date], rows: int, billed: set[date]
) -> dict[date, tuple[Path | None, Path]]:
    """Every month's job-log CSV, and the billing Parquet of the months in `billed` (kept
    between runs of the same size)."""
    import duckdb

    source = template(rows)
    out = work / "deliveries"
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("set memory_limit = '1GB'; set threads = 2")
    files = {}
    for month in months:
        end = _next_month(month)
        billing = out / f"focus-{month:%Y-%m}.parquet" if month in billed else None
        jobs = out / f"jobs-{month:%Y-%m}.csv"
        hours = (end - month).days * 24
        if billing is not None and not billing.exists():
            con.execute(
                _MOVE.format(
                    start=f"{month} 00:00:00+00",
                    end=f"{end} 00:00:00+00",
                    hours=hours,
                    t_start=f"{LAST_MONTH} 00:00:00+00",
                    t_hours=30 * 24,
                    template=source,
                    where="",
                    out=billing,
                )
            )
        if not jobs.exists():
            con.execute(
                _JOBS.format(
                    start=month,
                    end=end,
                    month=f"{month:%Y%m}",
                    seconds=hours * 3600 - 12 * 3600,
                    count=max(rows // ROWS_PER_JOB, 10),
                    out=jobs,
                )
            )
        files[month] = (billing, jobs)
    con.close()
    return files


def write_restatement(billing: Path, landing: Path, night: int) -> Path:
    """The month's restatement for `night`, alone in the landing folder (a second file of the
    same month beside it would be read as one delivery with every line twice)."""
    import duckdb

    shutil.rmtree(landing, ignore_errors=True)
    landing.mkdir(parents=True)
    out = landing / f"{billing.stem}-restated-{night}.parquet"
    con = duckdb.connect()
    con.execute("set memory_limit = '1GB'; set threads = 2")
    con.execute(_RESTATE.format(source=billing, out=out, night=night))
    con.close()
    return out


# The loaded month's lines moved to an older month, by whole days from the period start (the
# days a shorter month lacks are left out); lineage names the month's own file.
_COPY_MONTH = """
insert into billing_facts by name
select * replace (
    $load_id as load_id,
    $file as source_file,
    billing_period_start + $shift as billing_period_start,
    billing_period_end + $shift + $shorter as billing_period_end,
    charge_period_start + $shift as charge_period_start,
    charge_period_end + $shift as charge_period_end,
    x_commitment_end + $shift as x_commitment_end
)
from billing_facts
where load_id = $source and charge_period_start + $shift < billing_period_end + $shift + $shorter
"""

_COPY_LOAD = """
insert into loads by name
select * replace (
    $load_id as load_id,
    [$file] as files,
    sha256($load_id) as checksum_sha256,
    [$period] as billing_periods,
    (select count(*) from billing_facts where load_id = $load_id) as row_count
)
from loads where load_id = $source
"""


def copy_history(warehouse: Path, months: list[date]) -> None:
    """Fill `months` of billing history with the one loaded month moved to each (see the module's
    docstring), one transaction per month, partition summaries kept as a load keeps them."""
    import duckdb

    from athanor.ingest.daily import refresh_billing_daily

    con = duckdb.connect(str(warehouse))
    try:
        con.execute("set threads = 2")
        source, source_period = con.execute(
            """select load_id, billing_period_start from loads join billing_facts using (load_id)
               where kind = 'billing' and status = 'loaded' limit 1"""
        ).fetchone()
        source_month = source_period.date()
        for month in months:
            load_id = f"bench{month:%Y%m}"
            con.execute("begin")
            con.execute(
                _COPY_MONTH,
                {
                    "load_id": load_id,
                    "source": source,
                    "file": f"focus-{month:%Y-%m}.parquet",
                    "shift": month - source_month,
                    "shorter": (_next_month(month) - month) - (_next_month(source_month) - source_month),
                },
            )
            con.execute(
                _COPY_LOAD,
                {
                    "load_id": load_id,
                    "source": source,
                    "file": f"focus-{month:%Y-%m}.parquet",
                    "period": f"{month:%Y-%m}",
                },
            )
            refresh_billing_daily(con, load_id)
            con.execute("commit")
        con.execute("checkpoint")
    finally:
        con.close()


# ------------------------------------------------------------------ measured processes


# Linux carries a process's peak RSS across fork and exec, so a child forked from this process
# (which holds gigabytes after generating deliveries) would report at least this process's peak.
# A small interpreter in between forks the measured command from a fresh image and reports
# the command's own peak (and its children's) from wait4, in KiB, on its last line of stderr.
_PEAK_RSS = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
print(f"peak-rss-kib {usage.ru_maxrss}", file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measure(command: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """Run a command in a fresh process; its wall seconds and peak RSS (MiB, its own and its
    children's). Fails loudly with the tail of its log."""
    started = time.perf_counter()
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        done = subprocess.run(
            [sys.executable, "-c", _PEAK_RSS, *command], env=env, stdout=out, stderr=subprocess.PIPE, cwd=ROOT
        )
        out.write(done.stderr)
    seconds = time.perf_counter() - started
    if done.returncode:
        tail = log.read_text(errors="replace").splitlines()[-30:]
        raise SystemExit(f"failed (exit {done.returncode}): {' '.join(command)}\n" + "\n".join(tail))
    peak = int(done.stderr.decode().splitlines()[-1].removeprefix("peak-rss-kib "))
    return seconds, peak / 1024


# The physical limit a night is measured against: DuckDB alone, in a fresh process with the
# warehouse's session settings (2 GB, 2 threads), reading the delivery into a table of a new
# database file; no checks, no lineage, no marts.
_DUCKDB_READ = """
import sys, duckdb
con = duckdb.connect(sys.argv[2])
con.execute("set memory_limit = '2GB'; set threads = 2")
con.execute("create table delivery as select * from read_parquet(?)", [sys.argv[1]])
con.execute("checkpoint")
con.close()
"""


def duckdb_read(delivery: Path, work: Path, env: dict[str, str], log: Path) -> tuple[float, float]:
    """DuckDB alone reading `delivery` into a table in a fresh process: wall seconds, peak RSS MiB."""
    database = work / "duckdb-read.duckdb"
    database.unlink(missing_ok=True)
    try:
        return measure([sys.executable, "-c", _DUCKDB_READ, str(delivery), str(database)], env, log)
    finally:
        database.unlink(missing_ok=True)


def athanor(*args: str) -> list[str]:
    # -v: each step's log, with its time, goes to the bench log.
    return [sys.executable, "-m", "athanor.cli", "-v", *args]


@contextlib.contextmanager
def servers(mode: str, work: Path) -> Iterator[dict[str, str]]:
    """Extra environment for the mode: none for file; lake mode's servers and settings."""
    if mode == "file":
        yield {}
        return
    sys.path.insert(0, str(ROOT / "bench"))
    from lake_servers import lake_servers  # type: ignore[import-not-found]

    with lake_servers(work) as extra:
        yield {"ATHANOR_WAREHOUSE_MODE": "lake", **dict(extra)}


def stage_times(warehouse: Path, run_id: str) -> list[tuple[str, float]]:
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(
            """select stage, epoch(finished_at - started_at) from pipeline_runs
               where run_id = ? order by started_at, finished_at""",
            [run_id],
        ).fetchall()
    finally:
        con.close()


def nights_timed(warehouse: Path) -> int | None:
    """How many restated nights runs of this bench timed on the warehouse (None: not built)."""
    import duckdb

    if not warehouse.exists():
        return None
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        built, last = con.execute(
            """select count(*) filter (where run_id = 'bench-last-night'),
                      max(try_cast(regexp_extract(run_id, '^bench-restated-(\\d+)$', 1) as integer))
               from pipeline_runs where stage = 'publish' and status = 'success'"""
        ).fetchone()
    finally:
        con.close()
    return None if not built else (-1 if last is None else last) + 1


def warehouse_rows(warehouse: Path) -> int:
    """The billing lines the warehouse holds, from the load ledger (in the DuckDB file in both
    modes; the lake mode's billing_facts is not)."""
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(
            "select coalesce(sum(row_count), 0) from loads where kind = 'billing' and status = 'loaded'"
        ).fetchone()[0]
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--months", type=int, required=True)
    parser.add_argument("--rows-per-month", type=int, required=True)
    parser.add_argument("--mode", choices=["file", "lake"], default="file")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="restated nights in a row, each timed with its month-load; the ratio is their median",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="time the nights on the warehouse an earlier run of the same size built (no build; "
        "the nights go on from the last one timed there)",
    )
    parser.add_argument(
        "--history",
        choices=["copy", "loads"],
        default=None,
        help="how the older months get into the warehouse (default: copy in file mode, loads in lake mode)",
    )
    args = parser.parse_args(argv)
    history = args.history or ("copy" if args.mode == "file" else "loads")
    if args.mode == "lake" and args.reuse:
        parser.error("--reuse is for the file mode: the lake's servers start empty each run")
    if args.mode == "lake" and history == "copy":
        parser.error("--history copy writes the DuckDB file; the lake mode's history is loaded")
    months = months_ending(LAST_MONTH, args.months)
    work = CACHE / f"{args.mode}-{history}-{args.months}x{args.rows_per_month}"
    home = work / "home"
    first_night = nights_timed(home / "warehouse" / "athanor.duckdb") if args.reuse else 0
    if first_night is None:
        parser.error(f"--reuse: no warehouse built by an earlier run under {home}")
    if not args.reuse:
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
    log = work / "bench.log"
    if not args.reuse:
        log.unlink(missing_ok=True)
    as_of = _next_month(months[-1]).toordinal() - 1
    as_of_day = date.fromordinal(as_of).isoformat()

    clock = time.perf_counter()
    loaded = set(months) if history == "loads" else {months[-1]}
    files = write_deliveries(work, months, args.rows_per_month, loaded)
    print(
        f"deliveries: {len(months)} months x {args.rows_per_month:,} rows ready in "
        f"{time.perf_counter() - clock:.0f} s",
        flush=True,
    )

    def env_for(root: Path, extra: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_")}
        return env | {
            "ATHANOR_HOME": str(root),
            "ATHANOR_WAREHOUSE": str(root / "warehouse" / "athanor.duckdb"),
            "ATHANOR_LANDING": str(root / "landing"),
            "ATHANOR_SNAPSHOT": str(root / "warehouse" / "athanor-snapshot.duckdb"),
            "ATHANOR_ALERT_WEBHOOK": "",
            "PYTHONPATH": str(ROOT / "include"),
            **extra,
        }

    with servers(args.mode, work) as extra:
        env = env_for(home, extra)
        if not args.reuse:
            (home / "landing").mkdir()
            clock = time.perf_counter()
            # The history, month by month as it was delivered (see the docstring for `copy`), and
            # last night's run.
            for month in sorted(months, key=lambda m: m not in loaded):
                measure(athanor("ingest", *(str(f) for f in files[month] if f is not None)), env, log)
            if history == "copy":
                copy_history(home / "warehouse" / "athanor.duckdb", months[:-1])
            measure(athanor("run", "--as-of", as_of_day, "--run-id", "bench-last-night"), env, log)
            built = time.perf_counter() - clock
            print(
                f"warehouse built in {built:.0f} s (history by {history}, and last night's run)", flush=True
            )

        # Tonight (and the nights after, with --repeat): the latest month restated, one nightly
        # run; then the same delivery alone into an empty warehouse, in a fresh process.
        nights = []
        for night in range(first_night, first_night + args.repeat):
            restated = write_restatement(files[months[-1]][0], home / "landing", night)
            run_id = f"bench-restated-{night}"
            nightly_s, nightly_rss = measure(
                athanor("run", "--as-of", as_of_day, "--run-id", run_id), env, log
            )
            fresh = work / "fresh"
            shutil.rmtree(fresh, ignore_errors=True)
            fresh.mkdir()
            # An empty warehouse in the lake mode is an empty namespace too: the bucket and
            # catalog are shared, and the night's tables already hold this delivery.
            alone = {"ATHANOR_LAKE_NAMESPACE": f"month_load_{night}"} if args.mode == "lake" else {}
            load_s, load_rss = measure(athanor("ingest", str(restated)), env_for(fresh, extra | alone), log)
            shutil.rmtree(fresh, ignore_errors=True)
            read_s, _ = duckdb_read(restated, work, env, log)
            nights.append(
                {
                    "night": night,
                    "rows": warehouse_rows(home / "warehouse" / "athanor.duckdb"),
                    "nightly_s": round(nightly_s, 2),
                    "month_load_s": round(load_s, 2),
                    "ratio": round(nightly_s / load_s, 3),
                    "duckdb_read_s": round(read_s, 2),
                    "read_ratio": round(nightly_s / read_s, 3),
                    "load_read_ratio": round(load_s / read_s, 3),
                    "nightly_rss_mib": round(nightly_rss),
                    "load_rss_mib": round(load_rss),
                    "stages": {
                        s: round(t, 2) for s, t in stage_times(home / "warehouse" / "athanor.duckdb", run_id)
                    },
                }
            )

    median = statistics.median(n["ratio"] for n in nights)
    typical = min(nights, key=lambda n: abs(n["ratio"] - median))
    print(f"\nper-stage time of night {typical['night']} (pipeline_runs):")
    print(f"{'stage':<22}{'s':>9}")
    for stage, seconds in typical["stages"].items():
        print(f"{stage:<22}{seconds:>9.1f}")
    # The rest: the process's start-up and imports, opening the warehouse, and whatever a stage
    # does after recording its row (publish writes the analysts' snapshot after its record).
    print(f"{'(outside the stages)':<22}{typical['nightly_s'] - sum(typical['stages'].values()):>9.1f}")
    print(f"{'(whole process)':<22}{typical['nightly_s']:>9.1f}")
    print()
    print(
        f"{'mode':<6}{'months':>7}{'night':>6}{'rows in warehouse':>19}{'nightly s':>11}{'month-load s':>14}"
        f"{'ratio':>7}{'nightly RSS MiB':>17}{'load RSS MiB':>14}{'duckdb-read s':>15}"
    )
    for n in nights:
        print(
            f"{args.mode:<6}{args.months:>7}{n['night']:>6}{n['rows']:>19,}{n['nightly_s']:>11.1f}"
            f"{n['month_load_s']:>14.1f}{n['ratio']:>7.2f}{n['nightly_rss_mib']:>17}{n['load_rss_mib']:>14}"
            f"{n['duckdb_read_s']:>15.1f}"
        )
    print(
        json.dumps(
            {
                "mode": args.mode,
                "months": args.months,
                "rows_per_month": args.rows_per_month,
                "history": history,
                "nights": nights,
            }  # fmt: skip
        )
    )
    print(f"nightly/month-load ratio: {median:.2f}")
    # Against the physical limit: the night, and the month's load alone, over DuckDB reading the
    # same delivery into a table (medians over the nights, each measured in the same run).
    print(f"month-load/duckdb-read ratio: {statistics.median(n['load_read_ratio'] for n in nights):.2f}")
    print(f"nightly/duckdb-read ratio: {statistics.median(n['read_ratio'] for n in nights):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
