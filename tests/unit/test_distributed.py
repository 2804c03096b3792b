"""athanor.warehouse.distributed without servers: a lake on this machine (SQLite catalog, file://
warehouse) read by the engine's graphs on Dask's threads (client None: the same tasks and
combines, no scheduler). The real servers and a scheduler with two worker processes:
tests/integration/test_distributed_lake.py."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal as D
from pathlib import Path

import pytest

from athanor.ingest.billing import ingest_billing
from athanor.warehouse import connect, lake
from athanor.warehouse import distributed as engine
from tests.unit.test_ingest import focus_rows, write


@pytest.fixture
def local_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ATHANOR_WAREHOUSE_MODE", "lake")
    monkeypatch.setenv("ATHANOR_LAKE_CATALOG_URI", f"sqlite:///{tmp_path / 'catalog.db'}")
    monkeypatch.setenv("ATHANOR_LAKE_WAREHOUSE", f"file://{tmp_path / 'lake'}")
    (tmp_path / "lake").mkdir()
    con = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    yield con
    con.close()


# No cluster: Dask's threaded scheduler in this process runs the same graph.
THREADS = None


@pytest.mark.slow
def test_an_empty_lake_gives_no_rows(local_lake) -> None:
    cfg = lake.config()
    assert engine.monthly_totals(THREADS, cfg) == engine.duckdb_monthly_totals(local_lake) == []
    assert engine.gpu_hours_by_pool(THREADS, cfg) == engine.duckdb_gpu_hours_by_pool(local_lake) == []
    window = (date(2026, 10, 1), date(2026, 11, 1))
    assert (
        engine.spend_explained(THREADS, cfg, *window)
        == engine.duckdb_spend_explained(local_lake, *window)
        == []
    )


# Four loads into a lake: seconds of CPU, out of test-fast (the integration test restates too).
@pytest.mark.slow
def test_monthly_totals_read_the_restated_month_and_as_of_the_snapshot_before(
    local_lake, tmp_path: Path
) -> None:
    con, cfg = local_lake, lake.config()
    ingest_billing(
        con, [write(tmp_path / "a/oct.csv", focus_rows("acct-a", "2026-10", ["0.000000000001", "2.5"]))]
    )
    ingest_billing(con, [write(tmp_path / "a/nov.csv", focus_rows("acct-a", "2026-11", ["4"], "EUR"))])
    ingest_billing(con, [write(tmp_path / "b/oct.csv", focus_rows("acct-b", "2026-10", ["10.05", "0.05"]))])
    before = lake.current_snapshots(cfg)
    ingest_billing(con, [write(tmp_path / "b2/oct.csv", focus_rows("acct-b", "2026-10", ["7.77"]))])

    totals = engine.monthly_totals(THREADS, cfg)
    oct_, nov = datetime(2026, 10, 1), datetime(2026, 11, 1)
    assert [
        (t.billing_account_id, t.billing_period_start, t.billing_currency, t.lines, t.billed_cost)
        for t in totals
    ] == [
        ("acct-a", oct_, "USD", 2, D("2.500000000001")),
        ("acct-a", nov, "EUR", 1, D("4")),
        ("acct-b", oct_, "USD", 1, D("7.77")),
    ]
    assert totals == engine.duckdb_monthly_totals(con)
    old = engine.monthly_totals(THREADS, cfg, before)
    assert [
        (t.billing_account_id, t.lines, t.billed_cost) for t in old if t.billing_account_id == "acct-b"
    ] == [("acct-b", 2, D("10.10"))]
