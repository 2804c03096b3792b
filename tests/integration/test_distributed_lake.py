"""A distributed engine on the lake: Dask, a scheduler and two workers on 127.0.0.1, reads the
Iceberg tables on Ceph RadosGW (catalog in PostgreSQL) and gives DuckDB's figures to the cent.

The demo's three months of billing and job logs go into the lake through `athanor ingest`; one
account's month is then delivered and restated by `ingest_billing`, so the engine must read a
copy-on-write snapshot without the replaced rows, and, as of the earlier snapshot, with them.
The cluster is started and stopped by PID here, on failure too.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from distributed import get_task_stream

from athanor.ingest.billing import ingest_billing
from athanor.model.nightly import EXPLAINED_DAYS
from athanor.settings import PROJECT_ROOT
from athanor.warehouse import connect, lake
from athanor.warehouse import distributed as engine
from tests.support.dask_cluster import DaskCluster, start_dask_cluster
from tests.unit.test_ingest import focus_rows, write

pytestmark = pytest.mark.integration
D = Decimal
AS_OF = date(2026, 11, 30)
# The nightly fit's window of the explained-spend figure (athanor.model.nightly).
START, END = AS_OF + timedelta(days=1 - EXPLAINED_DAYS), AS_OF + timedelta(days=1)


@pytest.fixture
def cluster(lake_settings: dict[str, str]) -> Iterator[DaskCluster]:
    """A scheduler and two single-threaded workers, with the lake's settings in their environment."""
    started = start_dask_cluster(2, threads=1)
    try:
        yield started
    finally:
        started.stop()
        assert all(p.poll() is not None for p in [started.scheduler, *started.workers])


def test_two_workers_read_the_lake_and_give_duckdbs_figures_to_the_cent(
    lake_settings: dict[str, str], cluster: DaskCluster, tmp_path: Path
) -> None:
    athanor = str(PROJECT_ROOT / ".venv" / "bin" / "athanor")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_") or k in lake_settings}
    env["ATHANOR_HOME"] = str(tmp_path)
    warehouse = tmp_path / "w.duckdb"
    subprocess.run(
        [athanor, "demo", "--out", "landing", "--as-of", str(AS_OF)], cwd=tmp_path, env=env, check=True
    )
    loaded = subprocess.run(
        [athanor, "ingest", "--warehouse", str(warehouse), "landing/billing", "landing/jobs"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert loaded.returncode == 0, loaded.stderr[-4000:]

    # One more account, in euros: a month delivered, then restated with other lines.
    con = connect(warehouse, memory_limit="512MB")
    ingest_billing(
        con, [write(tmp_path / "v1/hand.csv", focus_rows("acct-hand", "2026-10", ["1.10", "2.20"], "EUR"))]
    )
    before = lake.current_snapshots(lake.config())
    restated = ingest_billing(
        con,
        [
            write(
                tmp_path / "v2/hand.csv", focus_rows("acct-hand", "2026-10", ["1.50", "2.50", "3.005"], "EUR")
            )
        ],
    )
    assert restated.replaced_rows == 2
    cfg = lake.config()
    client = cluster.client()
    with get_task_stream(client) as tasks:
        totals = engine.monthly_totals(client, cfg)
        pools = engine.gpu_hours_by_pool(client, cfg)
        explained = engine.spend_explained(client, cfg, START, END)

    # Both workers read data files: the work was spread, not run where the client is.
    assert {task["worker"] for task in tasks.data} == set(client.scheduler_info()["workers"]), cluster.logs()

    assert totals == engine.duckdb_monthly_totals(con)
    hand = [t for t in totals if t.billing_account_id == "acct-hand"]
    assert [(t.billing_currency, t.lines, t.billed_cost, t.effective_cost) for t in hand] == [
        ("EUR", 3, D("7.005"), D("7.005"))
    ]
    # The demo writes one file per account and billing period, all in dollars: one row each, and
    # the hand account's; equal to DuckDB's to the last decimal (above).
    delivered = [path for path in (tmp_path / "landing" / "billing").rglob("*") if path.is_file()]
    assert len(totals) == len(delivered) + 1 and len(delivered) >= 6

    assert pools == engine.duckdb_gpu_hours_by_pool(con)
    assert pools and all(p.gpu_hours is not None and p.gpu_hours >= p.instance_hours > 0 for p in pools)

    reference = engine.duckdb_spend_explained(con, START, END)
    assert [(r.billing_currency, r.gpu_effective_cost, r.explained_cost) for r in explained] == [
        (r.billing_currency, r.gpu_effective_cost, r.explained_cost) for r in reference
    ]
    assert [r.explained_share for r in explained] == pytest.approx(
        [r.explained_share for r in reference], rel=1e-12
    )
    assert explained and 0 < explained[0].explained_share < 1  # the demo's jobs explain part of its GPU bill

    # As of the snapshot before the restatement: the month as first delivered.
    old = engine.monthly_totals(client, cfg, before)
    assert [(t.lines, t.billed_cost) for t in old if t.billing_account_id == "acct-hand"] == [(2, D("3.30"))]
    assert [t for t in old if t.billing_account_id != "acct-hand"] == [
        t for t in totals if t.billing_account_id != "acct-hand"
    ]
    con.close()
