"""kill -9 in the middle of a billing load leaves the warehouse exactly as it was; the next run completes it."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from athanor.ingest.billing import ingest_billing
from athanor.warehouse import connect

# A child process loading 1.5 M rows, killed mid-way: seconds of every core, not a unit test.
pytestmark = pytest.mark.integration

ROWS = 1_500_000  # big enough that a load takes several seconds on two cores

CHILD = """
import sys
from pathlib import Path
from athanor.ingest.billing import ingest_billing
from athanor.warehouse import connect
con = connect(sys.argv[1], memory_limit="1GB")
print("start", flush=True)
ingest_billing(con, [Path(sys.argv[2])])
print("done", flush=True)
"""


def cur2_parquet(path: Path, rows: int, cost: str) -> Path:
    duckdb.execute(
        f"""copy (select '111122223333' as bill_payer_account_id, timestamp '2026-11-01' as bill_billing_period_start_date,
                   timestamp '2026-12-01' as bill_billing_period_end_date,
                   timestamp '2026-11-01' + to_hours(i % 720) as line_item_usage_start_date,
                   timestamp '2026-11-01' + to_hours(i % 720 + 1) as line_item_usage_end_date,
                   'USD' as line_item_currency_code, 'Usage' as line_item_line_item_type,
                   'USE1-BoxUsage:p5.48xlarge' as line_item_usage_type, 1.0::double as line_item_usage_amount,
                   {cost} as line_item_unblended_cost, 'i-' || i as line_item_resource_id
                 from range({rows}) t(i)) to '{path}' (format parquet)"""
    )
    return path


def state(db: Path) -> tuple[str, list[tuple]]:
    con = connect(db, memory_limit="1GB")
    digest = hashlib.sha256()
    for row in con.execute("select * from billing_facts order by all").fetchall():
        digest.update(repr(row).encode())
    loads = con.execute("select load_id, status, row_count from loads order by all").fetchall()
    con.close()
    return digest.hexdigest(), loads


def test_kill_during_load_then_rerun(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    small = cur2_parquet(tmp_path / "v1.parquet", 1000, "1.0::double")
    con = connect(db, memory_limit="1GB")
    first = ingest_billing(con, [small])
    con.close()
    before = state(db)

    # The restatement of the same month, 1.5M rows, loaded by a child we kill mid-way.
    big = cur2_parquet(tmp_path / "v2.parquet", ROWS, "round((i % 100) / 100, 2)::double")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(big)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "start"
    time.sleep(1.5)
    os.kill(child.pid, signal.SIGKILL)
    rest = child.stdout.read()
    assert child.wait() == -signal.SIGKILL
    assert "done" not in rest, "the load finished before the kill: make the file bigger"

    assert state(db) == before  # nothing of the half load is visible, the old month is intact

    con = connect(db, memory_limit="1GB")
    second = ingest_billing(con, [big])
    # 15,000 cycles of 0.00 .. 0.99: each cycle sums to 49.50, so 742,500.00 in all.
    assert second.billed_cost == {"USD": 742500}
    assert con.execute(
        "select count(*), count(distinct source_row), sum(billed_cost) from billing_facts"
    ).fetchone() == (ROWS, ROWS, 742500)
    assert con.execute("select load_id, status from loads order by status").fetchall() == [
        (second.load_id, "loaded"),
        (first.load_id, "replaced"),
    ]
    con.close()
