"""Benchmark: the lake read by Dask distributed on 1 and 2 workers, against DuckDB on the same snapshot.

    .venv/bin/python bench/bench_distributed.py [--months 2] [--rows-per-month 1000000] [--repeat 3]

1. Starts the lake's servers (bench/lake_servers.py: PostgreSQL for the catalog, Ceph RadosGW
   for the bucket) and loads `--months` months of `--rows-per-month` synthetic FOCUS lines
   (bench/bench_nightly.py's deliveries: the demo's bench writer, GPU instances of the bench
   fleet) and a job log whose job ids are about half of the lines' job_id tags, each through
   `athanor ingest` in lake mode.
2. Times the three figures of `athanor.warehouse.distributed` (monthly totals per billing
   account, GPU-hours per pool, the spend-explained mart over the whole history) by DuckDB on
   the lake's views (1 and 2 threads) and by a local Dask cluster on 127.0.0.1 of 1, then 2
   single-threaded workers (Arrow's own thread pool held to one thread per worker, so a worker
   is a core). Each figure: one warm-up call, then the median of `--repeat` calls; every engine's
   figures must equal DuckDB's (the bench stops otherwise).

Prints a table (engine, workers or threads, figure, rows in the table, data files, median s,
cold s), the cluster's start-up time and each worker's resident memory after the figures. On a 2-core machine the scheduler, the client, RadosGW
and the workers share the same two cores: the table says what the engine costs here, not how
it scales on machines of their own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from bench_nightly import LAST_MONTH, months_ending, write_deliveries  # noqa: E402
from lake_servers import lake_servers  # noqa: E402

from tests.support.dask_cluster import start_dask_cluster  # noqa: E402

# Job ids the bench writer tags its instances with (athanor.demo.bench): team-model-k, k < 5000,
# the team being k % 4. Every second k is a job here, so about half the tagged spend is explained.
_JOBS = """
copy (
    with k as (select i as k from range(0, 5000, 2) t(i))
    select ['vision', 'llm', 'speech', 'recsys'][1 + k % 4] || '-' ||
               ['vit-h', 'llama70b', 'whisper-l', 'dlrm'][1 + k % 4] || '-' || k as job_id,
           strftime(timestamp '{start}' + to_seconds(k * 60), '%Y-%m-%dT%H:%M:%SZ') as submit_time,
           strftime(timestamp '{start}' + to_seconds(k * 60 + 300), '%Y-%m-%dT%H:%M:%SZ') as start_time,
           strftime(timestamp '{start}' + to_seconds(k * 60 + 300 + 3600 * (1 + k % 9)), '%Y-%m-%dT%H:%M:%SZ')
               as end_time,
           'completed' as state,
           ['p4d.24xlarge', 'p5.48xlarge', 'g5.12xlarge', 'g6.48xlarge'][1 + k % 4] as instance_type,
           1 as instance_count,
           [8, 8, 4, 8][1 + k % 4] as gpus_per_instance,
           'on_demand' as pricing_model,
           ['vision', 'llm', 'speech', 'recsys'][1 + k % 4] as team,
           'bench' as project,
           ['vit-h', 'llama70b', 'whisper-l', 'dlrm'][1 + k % 4] as model
    from k order by k
) to '{out}' (format csv, header true)
"""


def load_lake(work: Path, months: int, rows: int, env: dict[str, str]) -> float:
    """The months' billing and the job log into the lake through `athanor ingest`; its seconds."""
    import duckdb

    chosen = months_ending(LAST_MONTH, months)
    deliveries = write_deliveries(work, chosen, rows, billed=set(chosen))
    jobs = work / "deliveries" / "jobs-bench.csv"
    duckdb.execute(_JOBS.format(start=chosen[0], out=jobs))
    started = time.perf_counter()
    for path in [*(billing for billing, _ in deliveries.values() if billing), jobs]:
        done = subprocess.run(
            [sys.executable, "-m", "athanor.cli", "ingest", "--warehouse", str(work / "w.duckdb"), str(path)],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise SystemExit(f"athanor ingest {path.name} failed:\n{done.stderr[-3000:]}")
        print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else path.name, flush=True)
    return time.perf_counter() - started


def timed(call: Callable[[], Any], repeat: int) -> tuple[Any, float, float]:
    """(result, cold seconds, median of `repeat` warm seconds)."""
    started = time.perf_counter()
    result = call()
    cold = time.perf_counter() - started
    warm = []
    for _ in range(repeat):
        started = time.perf_counter()
        again = call()
        warm.append(time.perf_counter() - started)
        assert again == result
    return result, cold, statistics.median(warm)


def same(found: list[Any], expected: list[Any]) -> bool:
    """Equal rows: every figure exactly (money is DECIMAL), but a ratio (the explained share, a
    float division each engine does its own way) to 1e-12."""
    import math
    from dataclasses import astuple

    def exact(row: Any) -> tuple:
        return tuple(v for v in astuple(row) if not isinstance(v, float))

    def ratios(row: Any) -> list[float]:
        return [v for v in astuple(row) if isinstance(v, float)]

    return [exact(r) for r in found] == [exact(r) for r in expected] and all(
        math.isclose(a, b, rel_tol=1e-12)
        for f, e in zip(found, expected, strict=True)
        for a, b in zip(ratios(f), ratios(e), strict=True)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--months", type=int, default=2)
    parser.add_argument("--rows-per-month", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", default="1,2", help="cluster sizes to time, comma-separated")
    args = parser.parse_args(argv)

    import psutil

    from athanor.warehouse import connect, lake
    from athanor.warehouse import distributed as engine

    end = _next_month(LAST_MONTH)
    start = months_ending(LAST_MONTH, args.months)[0]
    rows_out: list[tuple[str, str, str, int, int, float, float]] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-distributed-") as tmp,
        lake_servers(Path(tmp)) as lake_settings,
    ):
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_") or k in lake_settings}
        env["ATHANOR_HOME"] = str(work)
        load_s = load_lake(work, args.months, args.rows_per_month, env)
        cfg = lake.config()
        assert cfg is not None
        billing = engine.plan(cfg, "billing_facts")
        files = len(billing.files)

        figures: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
            "monthly totals": (engine.monthly_totals, engine.duckdb_monthly_totals),
            "GPU-hours by pool": (engine.gpu_hours_by_pool, engine.duckdb_gpu_hours_by_pool),
            "spend explained": (
                lambda client, c: engine.spend_explained(client, c, start, end),
                lambda con: engine.duckdb_spend_explained(con, start, end),
            ),
        }
        reference: dict[str, Any] = {}
        con = connect(work / "w.duckdb", memory_limit="2GB")
        (total,) = con.execute("select count(*) from billing_facts").fetchone()
        for threads in (1, 2):
            con.execute(f"set threads = {threads}")
            for name, (_, on_duckdb) in figures.items():
                result, cold, warm = timed(lambda f=on_duckdb: f(con), args.repeat)
                reference.setdefault(name, result)
                assert same(result, reference[name]), name
                rows_out.append(("duckdb", f"{threads} thread(s)", name, total, files, warm, cold))
                print(f"measured: {rows_out[-1]}", flush=True)
        con.close()

        startup: dict[int, float] = {}
        peaks: dict[int, list[float]] = {}
        for workers in (int(n) for n in args.workers.split(",")):
            # Arrow's thread pool to one thread: a worker is one core's worth of work.
            cluster = start_dask_cluster(
                workers, threads=1, memory_limit="1500MiB", env={"OMP_NUM_THREADS": "1"}
            )
            try:
                startup[workers] = cluster.started_s
                client = cluster.client()
                for name, (on_dask, _) in figures.items():
                    result, cold, warm = timed(lambda f=on_dask, c=client: f(c, cfg), args.repeat)
                    if not same(result, reference[name]):
                        raise SystemExit(f"{name} on {workers} Dask worker(s) differs from DuckDB's")
                    rows_out.append(("dask", f"{workers} worker(s)", name, total, files, warm, cold))
                    print(f"measured: {rows_out[-1]}", flush=True)
                # Resident memory now, not the peak: a worker's ru_maxrss starts at this process's,
                # which Linux carries from the fork across the exec.
                peaks[workers] = [psutil.Process(p.pid).memory_info().rss / 2**20 for p in cluster.workers]
            finally:
                cluster.stop()

    print(
        f"\nlake: {total:,} billing lines in {files} data files, loaded in {load_s:.1f} s through athanor ingest"
    )
    print(f"{'engine':7} {'size':12} {'figure':18} {'rows':>10} {'files':>6} {'median s':>9} {'cold s':>7}")
    for engine_name, size, name, n, f, warm, cold in rows_out:
        print(f"{engine_name:7} {size:12} {name:18} {n:>10,} {f:>6} {warm:>9.2f} {cold:>7.2f}")
    for workers, seconds in startup.items():
        print(
            f"dask cluster of {workers} worker(s) up in {seconds:.1f} s; each worker's RSS after the figures "
            + ", ".join(f"{mib:.0f}" for mib in peaks[workers])
            + " MiB"
        )
    print("every engine's figures equal DuckDB's (DECIMAL, exact)")
    return 0


def _next_month(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1)


if __name__ == "__main__":
    sys.exit(main())
