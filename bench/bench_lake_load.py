"""One month of billing rows loaded in the file mode and in the lake mode, each in a fresh process.

    .venv/bin/python bench/bench_lake_load.py [--rows 1000000] [--months 2]

Builds a CUR 2.0 Parquet month of `--rows` line items per account month, then times
`ingest_billing` (staging, quality gate, reconciliation; in the lake mode also the Iceberg
commit on RadosGW, catalog in PostgreSQL, started by bench/lake_servers.py) of the first
month into an empty warehouse, then of `--months - 1` more months, then of a restatement of
the first month. Prints a table (mode, step, rows, seconds, of which the lake commit, peak
RSS) and, last, the lake/file ratio of the restatement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

CHILD = """
import json, logging, resource, sys, time
from pathlib import Path
from athanor.ingest.billing import ingest_billing
from athanor.warehouse import connect

commits = []
class Commits(logging.Handler):
    def emit(self, record):
        if record.getMessage().startswith("lake table") and " committed " in record.getMessage():
            commits.append(float(record.getMessage().rsplit(" in ", 1)[1].split()[0]))
logging.getLogger("athanor.warehouse.lake").addHandler(Commits())
logging.getLogger("athanor.warehouse.lake").setLevel(logging.INFO)
con = connect(sys.argv[1], memory_limit="2GB")
started = time.monotonic()
result = ingest_billing(con, [Path(sys.argv[2])], as_of=__import__("datetime").date(2026, 12, 1))
seconds = time.monotonic() - started
total = con.execute("select count(*), sum(billed_cost) from billing_facts").fetchall()[0]
print(json.dumps({"rows": result.rows, "seconds": seconds, "commit": sum(commits),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "warehouse_rows": total[0], "warehouse_total": str(total[1])}))
"""


def month_file(folder: Path, month: int, rows: int, cost: str) -> Path:
    import duckdb

    start = f"2026-{month:02d}-01"
    end = f"2026-{month + 1:02d}-01" if month < 12 else "2027-01-01"
    path = folder / f"cur2-2026-{month:02d}-{cost.replace('.', '_')}.parquet"
    duckdb.execute(
        f"""copy (select '111122223333' as bill_payer_account_id,
                   timestamp '{start}' as bill_billing_period_start_date,
                   timestamp '{end}' as bill_billing_period_end_date,
                   timestamp '{start}' + to_hours(i % 672) as line_item_usage_start_date,
                   timestamp '{start}' + to_hours(i % 672 + 1) as line_item_usage_end_date,
                   'USD' as line_item_currency_code, 'Usage' as line_item_line_item_type,
                   'USE1-BoxUsage:p5.48xlarge' as line_item_usage_type, 1.0::double as line_item_usage_amount,
                   {cost} as line_item_unblended_cost, 'i-' || i as line_item_resource_id
                 from range({rows}) t(i)) to '{path}' (format parquet)"""
    )
    return path


def load(warehouse: Path, file: Path, env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(warehouse), str(file)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-4000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_mode(mode: str, files: list[Path], restated: Path, work: Path, extra: dict[str, str]) -> list[tuple]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_")}
    env.update(extra)
    warehouse = work / mode / "w.duckdb"
    rows = []
    for i, file in enumerate(files):
        step = "first month" if i == 0 else f"month {i + 1}"
        rows.append((mode, step, load(warehouse, file, env)))
    rows.append((mode, "restate month 1", load(warehouse, restated, env)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--months", type=int, default=2)
    args = parser.parse_args()
    from lake_servers import lake_servers

    with tempfile.TemporaryDirectory(prefix="bench-lake-") as tmp:
        work = Path(tmp)
        files = [month_file(work, 9 + i, args.rows, "0.25") for i in range(args.months)]
        restated = month_file(work, 9, args.rows, "0.5")
        results = run_mode("file", files, restated, work, {})
        with lake_servers(work) as lake_env:
            results += run_mode("lake", files, restated, work, lake_env)
    print(
        f"{'mode':5} {'step':16} {'rows':>10} {'load s':>8} {'commit s':>9} {'peak RSS MB':>12} {'rows in warehouse':>18}"
    )
    for mode, step, r in results:
        print(
            f"{mode:5} {step:16} {r['rows']:>10} {r['seconds']:>8.2f} {r['commit']:>9.2f} "
            f"{r['rss_mb']:>12.0f} {r['warehouse_rows']:>18}"
        )
    by = {(m, s): r for m, s, r in results}
    for step in ("first month", "restate month 1"):
        assert by[("file", step)]["warehouse_total"] == by[("lake", step)]["warehouse_total"], step
    ratio = by[("lake", "restate month 1")]["seconds"] / by[("file", "restate month 1")]["seconds"]
    print(f"lake/file restatement load ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
