"""The daily billing summary the load keeps by partition equals a full recompute from billing_facts."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from athanor.ingest.billing import ingest_billing
from athanor.ingest.daily import cover_every_job_line
from athanor.warehouse import SQL_DIR, connect, sql
from tests.unit.test_ingest import focus_rows, write

D = Decimal
OCT, NOV = datetime(2026, 10, 1), datetime(2026, 11, 1)
SUMMARY = """select billing_account_id, billing_period_start, day, billing_currency, kind, service, account,
                    team, effective_cost, line_items
             from billing_daily order by all"""


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    c = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    yield c
    c.close()


def daily(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute(SUMMARY).fetchall()


def recomputed(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """The summary summed again from every billing line: the schema's backfill on an empty table."""
    con.execute("create temp table kept as from billing_daily")
    con.execute("delete from billing_daily")
    con.execute((SQL_DIR / "schema" / "045_billing_daily.sql").read_text())
    out = daily(con)
    con.execute("delete from billing_daily")
    con.execute("insert into billing_daily by name from kept")
    con.execute("drop table kept")
    return out


def row(account: str, period: datetime, day: str, cost: str, lines: int = 1) -> tuple:
    # focus_rows: no service, sub-account or tag, all usage in USD.
    return (account, period, date.fromisoformat(day), "USD", "usage", "(unknown)", account, "(untagged)",
            D(cost), lines)  # fmt: skip


@pytest.mark.slow
def test_a_load_sums_its_partition_by_day(con, tmp_path: Path) -> None:
    # Rows i land on day 1 + i % 9: 1.00 and 2.00 on the 1st and 2nd, 4.00 on the 3rd; the 10th row
    # (i = 9) is on the 1st again: 1.00 + 0.25.
    costs = ["1.00", "2.00", "4.00", "0", "0", "0", "0", "0", "0", "0.25"]
    ingest_billing(con, [write(tmp_path / "oct.csv", focus_rows("acct", "2026-10", costs))])
    summary = daily(con)
    assert summary[:3] == [
        row("acct", OCT, "2026-10-01", "1.25", 2),
        row("acct", OCT, "2026-10-02", "2.00"),
        row("acct", OCT, "2026-10-03", "4.00"),
    ]
    assert len(summary) == 9
    assert summary == recomputed(con)


@pytest.mark.slow
def test_a_restatement_a_second_partition_and_a_deleted_day(con, tmp_path: Path) -> None:
    ingest_billing(
        con, [write(tmp_path / "v1/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00", "4.00"]))]
    )
    ingest_billing(con, [write(tmp_path / "v1/nov.csv", focus_rows("acct", "2026-11", ["3.00"]))])
    # Another partition (another account, the same month) leaves acct's sums alone.
    ingest_billing(con, [write(tmp_path / "v1/b.csv", focus_rows("acct-b", "2026-10", ["5.00"]))])
    assert daily(con) == [
        row("acct", OCT, "2026-10-01", "1.00"),
        row("acct", OCT, "2026-10-02", "2.00"),
        row("acct", OCT, "2026-10-03", "4.00"),
        row("acct", NOV, "2026-11-01", "3.00"),
        row("acct-b", OCT, "2026-10-01", "5.00"),
    ]
    # October restated: new costs on the 1st and 2nd, and no charge on the 3rd any more (its
    # day is deleted from the summary); November and acct-b keep theirs.
    ingest_billing(con, [write(tmp_path / "v2/oct.csv", focus_rows("acct", "2026-10", ["1.50", "2.50"]))])
    assert daily(con) == [
        row("acct", OCT, "2026-10-01", "1.50"),
        row("acct", OCT, "2026-10-02", "2.50"),
        row("acct", NOV, "2026-11-01", "3.00"),
        row("acct-b", OCT, "2026-10-01", "5.00"),
    ]
    assert daily(con) == recomputed(con)
    # The sums by job tag follow the same partitions: equal to the lines summed again, and
    # counting every line, so the night's check has nothing to re-sum.
    by_job = "select * from billing_job_daily order by all"
    assert (
        con.execute(by_job).fetchall()
        == con.execute(sql("ingest/billing_job_daily_lines", where="true") + " order by all").fetchall()
    )
    assert con.execute("select sum(line_items), sum(effective_cost) from billing_job_daily").fetchone() == (
        4,
        D("12.00"),  # acct: October 1.50 + 2.50 (its 4.00 restated away), November 3.00; acct-b 5.00
    )
    assert cover_every_job_line(con) is None
    # And the schema's backfill (a warehouse from before the table) sums them the same way.
    kept = con.execute(by_job).fetchall()
    con.execute("delete from billing_job_daily")
    con.execute((SQL_DIR / "schema" / "005_billing_job_daily.sql").read_text())
    assert con.execute(by_job).fetchall() == kept


@pytest.mark.slow
def test_a_rejected_load_leaves_the_summary_as_it_was(con, tmp_path: Path) -> None:
    ingest_billing(con, [write(tmp_path / "v1/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00"]))])
    before = daily(con)
    bad = focus_rows("acct", "2026-10", ["1.00", "2.00", "3.00"])
    bad[1]["BilledCost"] = "two dollars"
    with pytest.raises(Exception, match="BilledCost"):
        ingest_billing(con, [write(tmp_path / "v2/oct.csv", bad)])
    assert daily(con) == before


@pytest.mark.slow
def test_the_summary_reconciles_with_billing_facts(con, tmp_path: Path) -> None:
    ingest_billing(con, [write(tmp_path / "a.csv", focus_rows("acct", "2026-10", ["1.00", "2.00", "4.00"]))])
    ingest_billing(
        con, [write(tmp_path / "b.csv", focus_rows("acct-eu", "2026-11", ["0.10", "0.20"], "EUR"))]
    )
    restated = ["7.00", "1.00", "1.00"]
    ingest_billing(con, [write(tmp_path / "c.csv", focus_rows("acct", "2026-10", restated))])
    per_currency = """select billing_currency, sum({cost}), sum({lines}) from {table} group by 1 order by 1"""
    facts = con.execute(
        per_currency.format(cost="effective_cost", lines="1", table="billing_facts")
    ).fetchall()
    summary = con.execute(
        per_currency.format(cost="effective_cost", lines="line_items", table="billing_daily")
    ).fetchall()
    assert facts == summary == [("EUR", D("0.30"), 2), ("USD", D("9.00"), 3)]
