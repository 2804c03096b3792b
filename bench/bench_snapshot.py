"""The analysts' snapshot after one restated month: the full copy of the warehouse file that
every publish made before (baseline) against the partitioned snapshot, which writes only the
restated month's Parquet files and a small DuckDB file (athanor.warehouse.snapshots).

The warehouse holds N billing lines in months of R lines (2 billing accounts each), one load
per month; the latest month is then delivered again (a new load for both accounts, restating
it) and published. With R fixed, more rows means more months of history: the full copy grows
with them, the partitioned publish should not. The copy is timed as it ran (the warehouse just
written, so mostly in the page cache) and again with the file's pages dropped first
(posix_fadvise DONTNEED), as after a night of other work.

Usage: python bench/bench_snapshot.py [--rows N ...] [--rows-per-month R]
(default 1,000,000 rows of 12 months; the issue's sizes: --rows 10000000 30000000, months of
833,333 lines: 12 and 36 months)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from datetime import datetime
from pathlib import Path

from athanor.warehouse import connect, sql
from athanor.warehouse import snapshots as snap

ACCOUNTS = 2
TOTALS = "select count(*), sum(billed_cost) from billing_facts"


def load_month(con, load: str, month: int, rows: int) -> None:
    """One delivery of `rows` lines for month `month` (1 = January 2024) of both accounts."""
    con.execute(
        """insert into billing_facts (load_id, source_file, source_row, source_format, provider_name,
               billing_account_id, billing_currency, billing_period_start, billing_period_end,
               charge_period_start, charge_period_end, charge_category, charge_description,
               pricing_category, pricing_quantity, pricing_unit, billed_cost, effective_cost, list_cost,
               region_id, resource_id, service_name, sku_id, tags, x_instance_type, x_pricing_model,
               x_usage_hours)
           select $load, 'bill.csv.gz', range + 1, 'focus', 'AWS', 'acct-' || (range % 2),
                  'USD', (timestamp '2024-01-01' + to_months($month - 1)),
                  (timestamp '2024-01-01' + to_months($month - 1)) + interval 1 month,
                  (timestamp '2024-01-01' + to_months($month - 1)) + (range % 672) * interval 1 hour,
                  (timestamp '2024-01-01' + to_months($month - 1)) + (range % 672 + 1) * interval 1 hour,
                  'Usage', 'p4d.24xlarge usage', 'Standard', 1, 'Hours',
                  (range % 977) / 100, (range % 977) / 100 * 0.7, (range % 977) / 100,
                  'us-east-1', 'i-' || lpad((range % 50000)::varchar, 17, '0'), 'Amazon EC2',
                  'SKU' || (range % 300), map {'team': 'team-' || (range % 7)}, 'p4d.24xlarge',
                  'on_demand', 1
           from range($rows)""",
        {"load": load, "month": month, "rows": rows},
    )
    con.execute(
        """insert or replace into loads (load_id, kind, source_uri, files, checksum_sha256, size_bytes,
               row_count, status, started_at, finished_at)
           values (?, 'billing', 'landing', ['bill.csv.gz'], ?, 1, ?, 'loaded', ?, ?)""",
        [load, load, rows, datetime(2026, 12, 1), datetime(2026, 12, 1, 0, 5)],
    )


def full_copy(con, warehouse: Path, snapshot: Path, *, cached: bool) -> float:
    """What every publish did before: checkpoint, copy the whole file, rename it into place."""
    con.execute("checkpoint")
    if not cached:
        fd = os.open(warehouse, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages are not dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    started = time.perf_counter()
    con.execute("checkpoint")
    tmp = snapshot.with_name(f".{snapshot.name}.copy.tmp")
    shutil.copyfile(warehouse, tmp)
    os.replace(tmp, snapshot)
    elapsed = time.perf_counter() - started
    snapshot.unlink()
    return elapsed


def partitioned(con, snapshot: Path) -> tuple[float, snap.StagedSnapshot]:
    started = time.perf_counter()
    staged = snap.stage(con, snapshot)
    os.replace(staged.path, staged.target)
    staged.remove_unreferenced()
    return time.perf_counter() - started, staged


def run(rows: int, per_month: int, root: Path) -> dict:
    warehouse = root / "athanor.duckdb"
    con = connect(warehouse, memory_limit="3GB", threads=2)
    months = max(rows // per_month, 1)
    for month in range(1, months + 1):
        load_month(con, f"load-{month:02d}", month, per_month)
    con.execute("checkpoint")
    size_mb = warehouse.stat().st_size / 1e6

    copied = root / "copy" / "athanor-snapshot.duckdb"
    copied.parent.mkdir()
    published = root / "athanor-snapshot.duckdb"
    first_s, first = partitioned(con, published)

    # The latest month delivered again: a new load restates both accounts' month.
    load_month(con, "load-restated", months, per_month)
    con.execute(sql("ingest/delete_restated"), {"load_id": "load-restated"})
    # Both ways start with a checkpoint, which writes the restated month: done once here, untimed.
    con.execute("checkpoint")
    copy_s = full_copy(con, warehouse, copied, cached=True)
    uncached_s = full_copy(con, warehouse, copied, cached=False)
    after_s, after = partitioned(con, published)

    live = con.execute(TOTALS).fetchone()
    con.close()
    with snap.open_snapshot(published) as reader:
        assert reader.execute(TOTALS).fetchone() == live, "the snapshot disagrees with the warehouse"
    snapshot_mb = published.stat().st_size / 1e6
    return {
        "rows": live[0],
        "months": months,
        "warehouse MB": size_mb,
        "full copy s": copy_s,
        "uncached copy s": uncached_s,
        "first publish s": first_s,
        "files (first)": len(first.written),
        "restated publish s": after_s,
        "files written": len(after.written),
        "rows written": after.rows_written,
        "snapshot file MB": snapshot_mb,
        "ratio": copy_s / after_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--rows-per-month", type=int, help="default: a twelfth of the first --rows")
    args = parser.parse_args()
    per_month = args.rows_per_month or args.rows[0] // 12
    header = (
        f"{'rows':>12}{'months':>7}{'wh MB':>8}{'copy s':>8}{'uncached copy s':>16}{'first publish s':>16}"
        f"{'restated publish s':>19}{'files':>6}{'rows written':>13}{'snap MB':>8}{'copy/new':>9}"
        f"{'uncached/new':>13}"
    )
    print(header, flush=True)
    for rows in args.rows:
        root = Path(tempfile.mkdtemp(prefix="athanor-bench-snapshot-"))
        try:
            r = run(rows, per_month, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(
            f"{r['rows']:>12,}{r['months']:>7}{r['warehouse MB']:>8,.0f}{r['full copy s']:>8.2f}"
            f"{r['uncached copy s']:>16.2f}{r['first publish s']:>16.2f}{r['restated publish s']:>19.2f}"
            f"{r['files written']:>6}{r['rows written']:>13,}{r['snapshot file MB']:>8.1f}{r['ratio']:>9.2f}"
            f"{r['uncached copy s'] / r['restated publish s']:>13.2f}",
            flush=True,
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:,.0f} MB; restated publish: the latest month's files written, the rest reused")


if __name__ == "__main__":
    main()
