"""Benchmark GPU telemetry ingestion against DuckDB reading the same files on its own.

The file set: nvidia-smi `--query-gpu=timestamp,name,pci.bus_id,uuid,utilization.gpu,
memory.used,memory.total,power.draw --format=csv` output as the tool writes it (header with
units, values such as `87 %`, `30000 MiB`, `250.12 W`), one file per host of 8 GPUs, one
sample per GPU per `--every-s` seconds, busy and idle stretches of a few hours. The issue's
case is `--full`: 1,000 GPUs, one sample a minute for 70 days = 100,800,000 samples (about
14 GB of CSV); the default is 100 GPUs for 7 days (1,008,000 samples), cheap enough for
`make bench`.

Measured, each in a fresh child process with the product's DuckDB settings (memory_limit,
threads), its peak RSS from wait4:

* baseline: `create table t as select * from read_csv(<the files>)` into a new database file:
  DuckDB reading the same files alone (its sniffer, every value as it guesses);
* ingest:   `athanor.ingest.telemetry.ingest_telemetry` of the same files into a new warehouse:
  every value parsed and checked, the gpu_samples quality suite (Great Expectations, in
  DuckDB), the restatement and the ledger, in one transaction;
* summary:  in the same child, per GPU-hour: samples, busy and idle samples (utilisation
  below 5 %), mean utilisation (`create table gpu_hours as ...`, 1.68 M rows at full size).

It prints a table: rows, seconds, rows/s, peak RSS, and the ratio (ingest + summary) /
baseline.

    .venv/bin/python bench/bench_gpu_samples.py                  # 1 M samples
    .venv/bin/python bench/bench_gpu_samples.py --gpus 1000 --days 7   # 10 M
    .venv/bin/python bench/bench_gpu_samples.py --full           # 100 M (1,000 GPUs, 70 days)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "bench"
GPUS_PER_HOST = 8
GIB = 1 << 30

# One host's file: `$samples` instants x 8 GPUs. Busy stretches of 4 hours, every third one
# idle (0-2 %), shifted per host, so a summary has both to count.
_HOST_SELECT = """
select
    strftime(timestamp '2026-09-01' + to_seconds(t * $every + 17) + to_milliseconds(g * 2 + 123),
             '%Y/%m/%d %H:%M:%S.%g')                                     as "timestamp",
    ' NVIDIA H100 80GB HBM3'                                             as " name",
    printf(' 00000000:%02X:00.0', 16 * (g + 1))                          as " pci.bus_id",
    printf(' GPU-%08x-0000-4000-8000-%012x', $host, g)                    as " uuid",
    ' ' || (case when (t * $every // 14400 + $host) % 3 = 0 then hash(t, g, $host) % 3
                 else 60 + hash(t, g, $host) % 41 end)::varchar || ' %'   as " utilization.gpu [%]",
    ' ' || (case when (t * $every // 14400 + $host) % 3 = 0 then 0
                 else 60000 + hash(g, $host) % 20000 end)::varchar || ' MiB' as " memory.used [MiB]",
    ' 81559 MiB'                                                         as " memory.total [MiB]",
    printf(' %.2f W', 70 + (hash(t, g) % 60000) / 100.0)                 as " power.draw [W]"
from range($samples) as s(t), range(8) as gg(g)
order by t, g
"""


def generate(gpus: int, days: int, every_s: int) -> Path:
    """Write (once) the file set: one `<host>.nvidia-smi.csv` per 8 GPUs."""
    import duckdb

    hosts = max(1, gpus // GPUS_PER_HOST)
    samples = days * 86400 // every_s
    folder = CACHE / f"nvidia-smi-{hosts * GPUS_PER_HOST}gpus-{days}d-{every_s}s"
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    con = duckdb.connect()
    con.execute("set memory_limit = '2GB'")
    for host in range(hosts):
        select = (
            _HOST_SELECT.replace("$samples", str(samples))
            .replace("$every", str(every_s))
            .replace("$host", str(host))
        )
        path = folder / f"gpu-node-{host:04d}.nvidia-smi.csv"
        # nvidia-smi separates fields with ', ': the blank is written at the start of each field.
        con.execute(f"copy ({select}) to '{path}' (format csv, header true, delimiter ',', quote '')")
    con.close()
    (folder / ".complete").write_text("")
    return folder


_SUMMARY = """
create table gpu_hours as
select
    gpu_id,
    date_trunc('hour', sampled_at)                            as hour,
    count(*)                                                  as samples,
    count(*) filter (where utilisation_pct >= 5)              as busy_samples,
    count(*) filter (where utilisation_pct < 5)               as idle_samples,
    avg(utilisation_pct)                                      as mean_utilisation_pct
from gpu_samples
group by all
"""


def child(mode: str, folder: str, db: str, memory_limit: str, threads: int) -> None:
    """One measurement in this (child) process; prints its figures as JSON."""
    import duckdb

    for suffix in ("", ".wal"):
        Path(db + suffix).unlink(missing_ok=True)
    files = sorted(Path(folder).glob("*.csv"))
    out: dict[str, float] = {}
    if mode == "baseline":
        con = duckdb.connect(db)
        con.execute(f"set memory_limit = '{memory_limit}'")
        con.execute(f"set threads = {threads}")
        started = time.perf_counter()
        con.execute("create table t as select * from read_csv(?)", [[str(f) for f in files]])
        con.execute("checkpoint")
        out["seconds"] = time.perf_counter() - started
        out["rows"] = con.execute("select count(*) from t").fetchall()[0][0]
    else:
        import great_expectations  # noqa: F401 - a once-per-process import, not ingest time

        from athanor.ingest.telemetry import ingest_telemetry
        from athanor.warehouse import connect

        con = connect(Path(db), memory_limit=memory_limit, threads=threads)
        started = time.perf_counter()
        line = ingest_telemetry(con, files)
        con.execute("checkpoint")
        out["seconds"] = time.perf_counter() - started
        out["rows"] = con.execute("select count(*) from gpu_samples").fetchall()[0][0]
        started = time.perf_counter()
        con.execute(_SUMMARY)
        out["summary_seconds"] = time.perf_counter() - started
        out["gpu_hours"] = con.execute("select count(*) from gpu_hours").fetchall()[0][0]
        busy, idle = con.execute("select sum(busy_samples), sum(idle_samples) from gpu_hours").fetchall()[0]
        out["busy_share"] = busy / (busy + idle)
        out["line"] = line.splitlines()[0][-140:]
    con.close()
    print(json.dumps(out))


def measure(mode: str, folder: Path, memory_limit: str, threads: int) -> dict:
    db = CACHE / f"bench-gpu-{mode}.duckdb"
    command = [sys.executable, __file__, "--child", mode, str(folder), str(db), memory_limit, str(threads)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    text = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    for suffix in ("", ".wal"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    shutil.rmtree(str(db) + ".tmp", ignore_errors=True)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{mode} failed (exit {os.waitstatus_to_exitcode(status)})")
    result = json.loads(text.strip().splitlines()[-1])
    result["rss_bytes"] = usage.ru_maxrss * 1024  # Linux reports KiB
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=100)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--every-s", type=int, default=60)
    parser.add_argument(
        "--full", action="store_true", help="the issue's case: 1,000 GPUs, 70 days, every minute"
    )
    parser.add_argument("--memory-limit", default=os.environ.get("ATHANOR_DUCKDB_MEMORY_LIMIT", "2GB"))
    parser.add_argument("--threads", type=int, default=int(os.environ.get("ATHANOR_DUCKDB_THREADS", "2")))
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, folder, db, memory_limit, threads = args.child
        child(mode, folder, db, memory_limit, int(threads))
        return 0
    if args.full:
        args.gpus, args.days, args.every_s = 1000, 70, 60

    started = time.perf_counter()
    folder = generate(args.gpus, args.days, args.every_s)
    size = sum(f.stat().st_size for f in folder.glob("*.csv"))
    print(
        f"file set: {folder.name}, {len(list(folder.glob('*.csv')))} files, {size / 1e9:,.2f} GB "
        f"(ready in {time.perf_counter() - started:,.0f} s); DuckDB memory_limit {args.memory_limit}, "
        f"threads {args.threads}",
        flush=True,
    )
    base = measure("baseline", folder, args.memory_limit, args.threads)
    ours = measure("ingest", folder, args.memory_limit, args.threads)
    total = ours["seconds"] + ours["summary_seconds"]
    print()
    print(f"{'step':<44}{'rows':>14}{'seconds':>10}{'rows/s':>14}{'peak RSS':>12}")
    for label, rows, seconds, rss in (
        ("DuckDB alone: read_csv into a table", base["rows"], base["seconds"], base["rss_bytes"]),
        ("athanor: ingest (parse, checks, ledger)", ours["rows"], ours["seconds"], None),
        ("athanor: summary per GPU-hour", ours["gpu_hours"], ours["summary_seconds"], None),
        ("athanor: ingest + summary", ours["rows"], total, ours["rss_bytes"]),
    ):
        shown_rss = f"{rss / GIB:,.2f} GiB" if rss else ""
        print(f"{label:<44}{rows:>14,}{seconds:>10,.1f}{rows / seconds:>14,.0f}{shown_rss:>12}")
    print()
    print(f"ratio (ingest + summary) / DuckDB alone: {total / base['seconds']:.2f}x")
    print(f"busy share of samples: {ours['busy_share']:.3f}; ingest said: ...{ours['line']}")
    return 0 if ours["rows"] == base["rows"] else 1


if __name__ == "__main__":
    sys.exit(main())
