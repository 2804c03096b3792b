"""The analysts' snapshot after one restated month: the full copy of the warehouse file that
every publish made before (baseline) against the partitioned snapshot, which writes only the
restated month's Parquet files and a small DuckDB file (athanor.warehouse.snapshots).

The warehouse holds 12 months x 2 billing accounts of billing lines, one load per month; the
latest month is then delivered again (a new load for both accounts, restating it) and published.

Usage: python bench/bench_snapshot.py [--rows N ...]   (default 1,000,000; the issue's sizes:
--rows 10000000 30000000)
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

MONTHS, ACCOUNTS = 12, 2
TOTALS = "select count(*), sum(billed_cost) from billing_facts"


def load_month(con, load: str, month: int, rows: int) -> None:
    """One delivery of `rows` lines for month `month` (1-12 of 2026) of both accounts."""
    con.execute(
        """insert into billing_facts (load_id, source_file, source_row, source_format, provider_name,
               billing_account_id, billing_currency, billing_period_start, billing_period_end,
               charge_period_start, charge_period_end, charge_category, charge_description,
               pricing_category, pricing_quantity, pricing_unit, billed_cost, effective_cost, list_cost,
               region_id, resource_id, service_name, sku_id, tags, x_instance_type, x_pricing_model,
               x_usage_hours)
           select $load, 'bill.csv.gz', range + 1, 'focus', 'AWS', 'acct-' || (range % 2),
                  'USD', make_timestamp(2026, $month, 1, 0, 0, 0),
                  make_timestamp(2026, $month, 1, 0, 0, 0) + interval 1 month,
                  make_timestamp(2026, $month, 1, 0, 0, 0) + (range % 672) * interval 1 hour,
                  make_timestamp(2026, $month, 1, 0, 0, 0) + (range % 672 + 1) * interval 1 hour,
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


def full_copy(con, warehouse: Path, snapshot: Path) -> float:
    """What every publish did before: checkpoint, copy the whole file, rename it into place."""
    started = time.perf_counter()
    con.execute("checkpoint")
    tmp = snapshot.with_name(f".{snapshot.name}.copy.tmp")
    shutil.copyfile(warehouse, tmp)
    os.replace(tmp, snapshot)
    return time.perf_counter() - started


def partitioned(con, snapshot: Path) -> tuple[float, snap.StagedSnapshot]:
    started = time.perf_counter()
    staged = snap.stage(con, snapshot)
    os.replace(staged.path, staged.target)
    staged.remove_unreferenced()
    return time.perf_counter() - started, staged


def run(rows: int, root: Path) -> dict:
    warehouse = root / "athanor.duckdb"
    con = connect(warehouse, memory_limit="3GB", threads=2)
    per_month = rows // MONTHS
    for month in range(1, MONTHS + 1):
        load_month(con, f"load-{month:02d}", month, per_month)
    con.execute("checkpoint")
    size_mb = warehouse.stat().st_size / 1e6

    copied = root / "copy" / "athanor-snapshot.duckdb"
    copied.parent.mkdir()
    published = root / "athanor-snapshot.duckdb"
    first_s, first = partitioned(con, published)

    # December delivered again: a new load restates both accounts' month.
    load_month(con, "load-12-restated", MONTHS, per_month)
    con.execute(sql("ingest/delete_restated"), {"load_id": "load-12-restated"})
    copy_s = full_copy(con, warehouse, copied)
    shutil.rmtree(copied.parent)
    copied.parent.mkdir()
    after_s, after = partitioned(con, published)

    live = con.execute(TOTALS).fetchone()
    con.close()
    with snap.open_snapshot(published) as reader:
        assert reader.execute(TOTALS).fetchone() == live, "the snapshot disagrees with the warehouse"
    snapshot_mb = published.stat().st_size / 1e6
    return {
        "rows": live[0],
        "warehouse MB": size_mb,
        "full copy s": copy_s,
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
    args = parser.parse_args()
    header = (
        f"{'rows':>12}{'wh MB':>9}{'full copy s':>13}{'first publish s':>17}{'restated publish s':>20}"
        f"{'files':>7}{'rows written':>14}{'snap MB':>9}{'copy/new':>10}"
    )
    print(header, flush=True)
    for rows in args.rows:
        root = Path(tempfile.mkdtemp(prefix="athanor-bench-snapshot-"))
        try:
            r = run(rows, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(
            f"{r['rows']:>12,}{r['warehouse MB']:>9,.0f}{r['full copy s']:>13.2f}{r['first publish s']:>17.2f}"
            f"{r['restated publish s']:>20.2f}{r['files written']:>7}{r['rows written']:>14,}"
            f"{r['snapshot file MB']:>9.1f}{r['ratio']:>10.1f}",
            flush=True,
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:,.0f} MB; restated publish = one month of {MONTHS} rewritten, the rest reused")


if __name__ == "__main__":
    main()
