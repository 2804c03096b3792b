"""The real, public billing samples in ../shared/data/billing load with totals equal to their own sums."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.ingest.billing import ingest_billing
from athanor.warehouse import connect

pytestmark = pytest.mark.realdata

BILLING = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "billing"


def column_sums(path: Path, cost: str, currency: str) -> tuple[int, dict[str, Decimal]]:
    """Rows and per-currency cost totals, read with Python's csv module (independent of DuckDB)."""
    totals: dict[str, Decimal] = {}
    rows = 0
    with path.open(newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            rows += 1
            value = row[cost]
            if value not in ("", "NULL"):
                totals[row[currency]] = totals.get(row[currency], Decimal(0)) + Decimal(value)
    return rows, totals


@pytest.fixture
def con(tmp_path: Path):
    c = connect(tmp_path / "w.duckdb", memory_limit="1GB")
    yield c
    c.close()


def test_focus_sample(con) -> None:
    path = BILLING / "focus-1.0-sample.csv"
    rows, totals = column_sums(path, "BilledCost", "BillingCurrency")
    result = ingest_billing(con, [path])
    assert (result.source_format, result.rows) == ("focus", rows) == ("focus", 1000)
    assert result.billed_cost == totals
    # Both spellings in the file ('Usage-Based', 'Usage-based') land as the FOCUS value.
    frequencies = {
        r[0] for r in con.execute("select distinct charge_frequency from billing_facts").fetchall()
    }
    assert frequencies <= {"Usage-Based", "One-Time", "Recurring", None}
    by_provider = dict(con.execute("select provider_name, count(*) from billing_facts group by 1").fetchall())
    assert by_provider == {"AWS": 942, "Microsoft": 51, "Oracle": 7}


def test_legacy_cur_sample(con) -> None:
    path = BILLING / "aws-cur-legacy-sample.csv"
    rows, totals = column_sums(path, "lineItem/UnblendedCost", "lineItem/CurrencyCode")
    result = ingest_billing(con, [path])
    assert (result.source_format, result.rows) == ("cur_legacy", 1281) == ("cur_legacy", rows)
    assert result.billed_cost == totals
    assert con.execute("select count(*) from billing_facts where charge_category = 'Tax'").fetchone()[0] == 12
    assert con.execute("select distinct billing_period_start::varchar from billing_facts").fetchall() == [
        ("2023-11-01 00:00:00",)
    ]


def test_azure_ea_sample(con) -> None:
    path = BILLING / "azure-ea-actual-cost-sample.csv"
    rows, totals = column_sums(path, "Cost", "BillingCurrency")
    result = ingest_billing(con, [path])
    assert (result.source_format, result.rows) == ("azure", rows) == ("azure", 11)
    # Actual-cost data: every Cost is billed as is (covered usage is 0 in this dataset).
    assert result.billed_cost == {c: v.quantize(Decimal("1E-12")) for c, v in totals.items()}
    purchase = con.execute(
        "select billed_cost, effective_cost, commitment_discount_type from billing_facts where charge_category = 'Purchase'"
    ).fetchall()
    assert purchase == [(Decimal("3.25"), Decimal(0), "Reservation")]
