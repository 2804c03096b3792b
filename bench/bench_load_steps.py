"""Benchmark: a month's load, step by step, against DuckDB alone reading the same delivery.

    .venv/bin/python bench/bench_load_steps.py [--rows 4000000] [--repeat 3]

On the nightly bench's one-month FOCUS 1.2 Parquet (`bench_nightly.template`, N lines), each
step in a fresh child process with the warehouse's session settings (2 GB, 2 threads), the
steps taking turns `--repeat` times (the machine's speed drifts by a fifth within an hour, so
each ratio is the median of the turns' own ratios, a step against the read run just before it):

1. read: DuckDB alone, `create table ... as select * from read_parquet(file)` into a new
   database file, then a checkpoint (bench_nightly's limit);
2. typed insert: the load's staging alone (`athanor.ingest.billing._stage_file`: the file read
   under its canonical names, money as DECIMAL(38, 12), tags and provider columns as maps,
   lineage, the file's own totals beside it) into an empty warehouse, committed and checkpointed;
3. load: `ingest_billing(validate=False)`: 2. plus the partition summaries, the reconciliation
   and the ledger;
4. load + quality gate: `ingest_billing(validate=True)`, Great Expectations imported before the
   clock starts: 3. plus the rules and their suite;
5. `athanor ingest FILE`: the whole command into an empty home, interpreter start to exit, as
   the nightly bench's month-load times it (4. plus the imports, Great Expectations' among them,
   and the schema).

For each: wall seconds, the CPU seconds of its process over the timed step (user + system, all
threads), and both against the read. Each step adds to the one before it work the product does
by design, so the table is the floor under a month-load that none of those steps is cut from.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_nightly import CACHE, template  # noqa: E402 - the bench folder is no package

MEMORY_LIMIT = "2GB"  # the warehouse's default session settings (athanor.warehouse.connect)
THREADS = 2
STEPS = {
    "read": "read (DuckDB alone)",
    "insert": "typed insert",
    "load": "load",
    "validated": "load + quality gate",
    "command": "athanor ingest",
}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(step: str, file: str, home: str) -> None:
    """Run one step in this (child) process; print its wall and CPU seconds as JSON."""
    import duckdb

    path, database = Path(file), Path(home) / "warehouse.duckdb"
    if step == "read":
        con = duckdb.connect(str(database))
        con.execute(f"set memory_limit = '{MEMORY_LIMIT}'; set threads = {THREADS}")
        started, cpu = time.perf_counter(), _cpu_s()
        con.execute("create table delivery as select * from read_parquet(?)", [file])
        con.execute("checkpoint")
    else:
        from athanor.ingest import billing
        from athanor.warehouse import any_insertion_order, connect, transaction

        con = connect(database, memory_limit=MEMORY_LIMIT, threads=THREADS)
        if step == "insert":
            fmt = billing.detect_format(con, path)
            params = {"load_id": "bench", "source_format": fmt.name}
            started, cpu = time.perf_counter(), _cpu_s()
            with transaction(con), any_insertion_order(con):  # as `ingest_billing` stages
                billing._stage_file(con, path, fmt, params)
        else:
            if step == "validated":
                import great_expectations  # noqa: F401 - once per process: the command's row has it
            started, cpu = time.perf_counter(), _cpu_s()
            billing.ingest_billing(con, [path], validate=step == "validated")
        con.execute("checkpoint")
    seconds, cpu_s = time.perf_counter() - started, _cpu_s() - cpu
    con.close()
    print(json.dumps({"seconds": seconds, "cpu_s": cpu_s}))


def _children_cpu_s() -> float:
    """CPU seconds of every child this process has waited for (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(step: str, file: Path) -> dict[str, float]:
    """One step in a fresh process, in an empty folder of its own."""
    home = CACHE / f"load-steps-{step}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    # Every step with the embedded defaults: an Athanor setting of the caller's shell (the lake
    # mode, a memory limit) would change what some steps do and not others.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_")}
    env |= {"ATHANOR_HOME": str(home), "PYTHONPATH": str(ROOT / "include")}
    try:
        if step == "command":
            command = [sys.executable, "-m", "athanor.cli", "ingest", str(file)]
        else:
            command = [sys.executable, __file__, "--child", step, str(file), str(home)]
        started, cpu = time.perf_counter(), _children_cpu_s()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        seconds, cpu_s = time.perf_counter() - started, _children_cpu_s() - cpu
        if done.returncode:
            raise SystemExit(f"{step} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        if step == "command":
            return {"seconds": seconds, "cpu_s": cpu_s}  # the whole process is the step
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=3, metavar=("STEP", "FILE", "HOME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0

    file = template(args.rows)
    print(f"delivery: {file.name}, {args.rows:,} FOCUS 1.2 lines ({file.stat().st_size / 2**20:,.0f} MiB)")
    runs: dict[str, list[dict[str, float]]] = {step: [] for step in STEPS}
    for turn in range(max(args.repeat, 1)):
        for step, results in runs.items():
            results.append(measure(step, file))
            print(f"  turn {turn + 1}: {STEPS[step]:<22} {results[-1]['seconds']:6.1f} s", flush=True)
    # Medians over the turns; each ratio is the median of the turn's own ratios (a step against
    # the read run just before it), which a slow spell of the machine moves least.
    median = {
        step: {k: statistics.median(r[k] for r in results) for k in ("seconds", "cpu_s")}
        for step, results in runs.items()
    }
    ratio = {
        step: {
            k: statistics.median(r[k] / read[k] for r, read in zip(results, runs["read"], strict=True))
            for k in ("seconds", "cpu_s")
        }
        for step, results in runs.items()
    }
    print(f"\nmedians of {len(runs['read'])} turns")
    print(f"{'step':<24}{'s':>8}{'CPU-s':>9}{'x read':>9}{'x read CPU':>12}")
    for step, label in STEPS.items():
        m, r = median[step], ratio[step]
        print(f"{label:<24}{m['seconds']:8.1f}{m['cpu_s']:9.1f}{r['seconds']:9.2f}{r['cpu_s']:12.2f}")
    print(f"\ntyped-insert/duckdb-read ratio: {ratio['insert']['seconds']:.2f}")
    print(f"month-load/duckdb-read ratio: {ratio['command']['seconds']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
