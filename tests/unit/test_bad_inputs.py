"""Bad billing deliveries: each one gives a clear error (or a warning) and leaves loaded data as it was.

Every case loads a good November 2026 FOCUS delivery first, then the bad one (a
restatement of the same account and month, so a bad file that slipped through
would visibly replace the good rows), and compares the warehouse before/after.
Cases marked "quality hook" need `athanor.quality.check_delivery` wired into
`ingest_billing` (see the quality package's report); the others are ingest's own checks.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from athanor.ingest.billing import IngestError, ingest_billing
from athanor.quality import QualityError, quarantine, release
from athanor.warehouse import connect

COLUMNS = [
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "PricingCategory",
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ConsumedQuantity",
    "ConsumedUnit",
    "PricingQuantity",
    "PricingUnit",
    "ResourceId",
    "ServiceName",
    "SkuId",
    "RegionId",
    "ProviderName",
    "Tags",
    "x_InstanceType",
]
DAYS = 20  # one line per day, 2026-11-01 .. 2026-11-20, 10.00 USD each: 200.00 USD


def good_rows(days: int = DAYS, cost: str = "10.00") -> list[dict[str, str]]:
    rows = []
    for day in range(1, days + 1):
        rows.append(
            {
                "BillingAccountId": "acct-1",
                "BillingAccountName": "Research",
                "BillingCurrency": "USD",
                "BillingPeriodStart": "2026-11-01T00:00:00Z",
                "BillingPeriodEnd": "2026-12-01T00:00:00Z",
                "ChargePeriodStart": f"2026-11-{day:02d}T00:00:00Z",
                "ChargePeriodEnd": f"2026-11-{day + 1:02d}T00:00:00Z",
                "ChargeCategory": "Usage",
                "ChargeClass": "",
                "ChargeDescription": "p4d.24xlarge on demand",
                "ChargeFrequency": "Usage-Based",
                "PricingCategory": "Standard",
                "BilledCost": cost,
                "EffectiveCost": cost,
                "ListCost": cost,
                "ConsumedQuantity": "1",
                "ConsumedUnit": "Hours",
                "PricingQuantity": "1",
                "PricingUnit": "Hours",
                "ResourceId": "i-0abc",
                "ServiceName": "Amazon Elastic Compute Cloud",
                "SkuId": "SKU1",
                "RegionId": "us-east-1",
                "ProviderName": "AWS",
                "Tags": '{"team": "llm"}',
                "x_InstanceType": "p4d.24xlarge",
            }
        )
    return rows


def write_csv(
    path: Path, rows: list[dict[str, str]], columns: list[str] = COLUMNS, delimiter: str = ","
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=columns, delimiter=delimiter, extrasaction="ignore", lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows(rows)
    data = buffer.getvalue().encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path


def state(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    """The warehouse content a bad delivery must not change."""
    return {
        "billing_facts": con.execute("select * from billing_facts order by all").fetchall(),
        "loads": con.execute(
            "select load_id, status, files, row_count from loads where status <> 'failed' order by all"
        ).fetchall(),
        "reconciliations": con.execute(
            "select * exclude (checked_at) from reconciliations order by all"
        ).fetchall(),
    }


@pytest.fixture(scope="module")
def base_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse holding the good November delivery (built once, copied per test)."""
    root = tmp_path_factory.mktemp("base")
    con = connect(root / "wh.duckdb")
    ingest_billing(con, [write_csv(root / "good" / "focus-2026-11.csv", good_rows())])
    con.close()
    return root / "wh.duckdb"


@pytest.fixture
def wh(base_warehouse: Path, tmp_path: Path):
    shutil.copyfile(base_warehouse, tmp_path / "wh.duckdb")
    con = connect(tmp_path / "wh.duckdb")
    yield con
    con.close()


def rejected(con: duckdb.DuckDBPyConnection, files: list[Path], error=IngestError) -> str:
    """Load a bad delivery: it must raise `error`, and the warehouse must stay as it was."""
    before = state(con)
    with pytest.raises(error) as caught:
        ingest_billing(con, files)
    assert state(con) == before
    return str(caught.value)


def facts(con: duckdb.DuckDBPyConnection, columns: str) -> list[tuple]:
    """`columns` of billing_facts in file order."""
    return con.execute(f"select {columns} from billing_facts order by source_file, source_row").fetchall()


def total(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """(account, currency, rows, BilledCost) per account and currency."""
    return con.execute(
        "select billing_account_id, billing_currency, count(*), sum(billed_cost) from billing_facts group by all order by all"
    ).fetchall()


def dq_warnings(con: duckdb.DuckDBPyConnection, load_id: str) -> list[tuple]:
    return con.execute(
        """select rule, unexpected_count, examples from dq_results
           where load_id = ? and not success order by rule""",
        [load_id],
    ).fetchall()


# --- unreadable files --------------------------------------------------------------------


@pytest.mark.slow
def test_empty_file(wh, tmp_path):
    (tmp_path / "focus.csv").write_bytes(b"")
    assert rejected(wh, [tmp_path / "focus.csv"]) == "focus.csv: file is empty (0 bytes)"


def test_header_only(wh, tmp_path):
    # An empty day is a normal delivery: nothing to load, nothing written (issue 30).
    file = write_csv(tmp_path / "focus.csv", [])
    before = state(wh)
    result = ingest_billing(wh, [file])
    assert (result.status, result.rows) == ("empty", 0)
    assert result.summary() == "focus.csv: focus, no rows (header only): nothing to load"
    assert state(wh) == before


def test_truncated_gzip(wh, tmp_path):
    whole = write_csv(tmp_path / "whole" / "focus.csv.gz", good_rows()).read_bytes()
    (tmp_path / "focus.csv.gz").write_bytes(whole[: len(whole) // 2])
    assert rejected(wh, [tmp_path / "focus.csv.gz"]) == (
        "focus.csv.gz: truncated gzip: the compressed stream ends before its end marker "
        "(the file was cut short; deliver it again)"
    )


@pytest.mark.slow
def test_semicolon_delimiter_is_sniffed_and_loads(wh, tmp_path):
    # DuckDB's CSV sniffer detects the delimiter: a ';' export reads as the same table.
    file = write_csv(tmp_path / "focus.csv", good_rows(cost="12.00"), delimiter=";")
    ingest_billing(wh, [file])
    assert total(wh) == [("acct-1", "USD", 20, Decimal("240"))]  # 20 x 12.00


@pytest.mark.slow
def test_utf8_bom_loads(wh, tmp_path):
    file = write_csv(tmp_path / "focus.csv", good_rows(cost="11.00"))
    file.write_bytes(b"\xef\xbb\xbf" + file.read_bytes())
    result = ingest_billing(wh, [file])
    # 20 days x 11.00 = 220.00 USD, replacing the good 200.00
    assert result.billed_cost == {"USD": Decimal("220")}
    assert total(wh) == [("acct-1", "USD", 20, Decimal("220"))]


def test_non_utf8_file(wh, tmp_path):
    rows = good_rows()
    rows[2]["ChargeDescription"] = "Réservation"
    file = write_csv(tmp_path / "focus.csv", rows)
    file.write_bytes(file.read_bytes().decode().encode("latin-1"))
    assert rejected(wh, [file]) == EXPECTED["non_utf8"]


def test_duplicated_header_line(wh, tmp_path):
    # Two exports concatenated: the second header becomes a data row.
    file = write_csv(tmp_path / "focus.csv", good_rows())
    text = file.read_text()
    header = text.splitlines()[0]
    file.write_text(text + header + "\n")
    assert rejected(wh, [file]) == EXPECTED["duplicated_header"]


def test_missing_mandatory_column(wh, tmp_path):
    file = write_csv(tmp_path / "focus.csv", good_rows(), [c for c in COLUMNS if c != "EffectiveCost"])
    assert rejected(wh, [file]) == EXPECTED["missing_column"]


@pytest.mark.slow
def test_extra_unknown_column_loads(wh, tmp_path):
    rows = [{**row, "x_CostCenter": "cc-42"} for row in good_rows()]
    file = write_csv(tmp_path / "focus.csv", rows, COLUMNS + ["x_CostCenter"])
    ingest_billing(wh, [file])
    kept = facts(wh, "x_provider_columns['x_CostCenter']")
    assert kept == [("cc-42",)] * DAYS


# --- bad values ----------------------------------------------------------------------------


def test_cost_with_text(wh, tmp_path):
    rows = good_rows()
    rows[3]["BilledCost"] = "ten dollars"
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file]) == EXPECTED["cost_text"]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-inf"])
def test_nan_and_infinity_in_costs(wh, tmp_path, value):
    rows = good_rows()
    rows[4]["BilledCost"] = value
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file]) == EXPECTED["nan"].format(value=value)


@pytest.mark.slow
def test_timestamps_in_three_formats_and_offsets_load_as_utc(wh, tmp_path, monkeypatch):
    # 4 rows restate the 20 loaded: a shrink this test is not about (see test_restatement.py).
    monkeypatch.setenv("ATHANOR_RESTATEMENT_MIN_SHARE", "0")
    rows = good_rows(days=4)
    rows[0]["ChargePeriodStart"], rows[0]["ChargePeriodEnd"] = "2026-11-01T00:00:00Z", "2026-11-01T01:00:00Z"
    rows[1]["ChargePeriodStart"], rows[1]["ChargePeriodEnd"] = "2026-11-02 00:00:00", "2026-11-02 01:00:00"
    rows[2]["ChargePeriodStart"], rows[2]["ChargePeriodEnd"] = (
        "2026-11-03T09:00:00+09:00",
        "2026-11-03T10:00:00+09:00",
    )
    rows[3]["ChargePeriodStart"], rows[3]["ChargePeriodEnd"] = (
        "2026-11-03T19:00:00-05:00",
        "2026-11-03T20:00:00-05:00",
    )
    file = write_csv(tmp_path / "focus.csv", rows)
    ingest_billing(wh, [file])
    assert facts(wh, "charge_period_start, charge_period_end") == [
        (datetime(2026, 11, 1, 0), datetime(2026, 11, 1, 1)),
        (datetime(2026, 11, 2, 0), datetime(2026, 11, 2, 1)),
        (datetime(2026, 11, 3, 0), datetime(2026, 11, 3, 1)),  # 09:00 at +09:00 is 00:00 UTC
        (datetime(2026, 11, 4, 0), datetime(2026, 11, 4, 1)),  # 19:00 at -05:00 is 00:00 UTC next day
    ]


def test_unparseable_timestamp(wh, tmp_path):
    rows = good_rows()
    rows[5]["ChargePeriodStart"] = "yesterday"
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file]) == EXPECTED["bad_timestamp"]


def test_null_in_mandatory_column(wh, tmp_path):
    rows = good_rows()
    rows[6]["BillingAccountId"] = ""
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file]) == EXPECTED["null_account"]


def test_charge_period_end_before_start(wh, tmp_path):
    rows = good_rows()
    rows[7]["ChargePeriodEnd"] = "2026-11-07T00:00:00Z"  # starts 2026-11-08
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file]) == EXPECTED["end_before_start"]


# --- rules of the quality hook -----------------------------------------------------------


@pytest.mark.slow
def test_charge_period_after_billing_period(wh, tmp_path):
    rows = good_rows()
    rows[2]["ChargePeriodStart"], rows[2]["ChargePeriodEnd"] = "2026-12-01T00:00:00Z", "2026-12-01T01:00:00Z"
    file = write_csv(tmp_path / "focus-2026-11.csv.gz", rows)
    assert rejected(wh, [file], QualityError) == (
        "focus-2026-11.csv.gz: rule charge_period_within_billing_period failed on column ChargePeriodStart, "
        "1 bad row (e.g. row 3: 2026-12-01 00:00:00)"
    )


@pytest.mark.slow
def test_charge_period_before_billing_period_warns_and_loads(wh, tmp_path):
    # Late-billed usage: real exports do it (the public FOCUS sample has such a row).
    rows = good_rows()
    rows[2]["ChargePeriodStart"], rows[2]["ChargePeriodEnd"] = "2026-10-31T23:00:00Z", "2026-11-01T00:00:00Z"
    file = write_csv(tmp_path / "focus-2026-11.csv.gz", rows)
    result = ingest_billing(wh, [file])
    assert result.status == "loaded" and result.rows == 20
    assert dq_warnings(wh, result.load_id) == [
        ("charge_period_billed_late", 1, ["row 3: 2026-10-31 23:00:00"])
    ]


@pytest.mark.slow
def test_duplicate_line_items_within_a_file(wh, tmp_path):
    rows = good_rows()
    rows.append(dict(rows[4]))  # row 21 repeats row 5
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file], QualityError) == (
        "focus.csv: rule line_item_unique failed, 1 bad row (e.g. row 21: same line item as focus.csv row 5)"
    )


@pytest.mark.slow
def test_duplicate_line_items_across_files(wh, tmp_path):
    rows = good_rows()
    part1 = write_csv(tmp_path / "delivery" / "part-1.csv", rows[:12])
    part2 = write_csv(tmp_path / "delivery" / "part-2.csv", rows[10:])  # days 11-12 in both parts
    assert rejected(wh, [part1, part2], QualityError) == (
        "part-2.csv: rule line_item_unique failed, 2 bad rows "
        "(e.g. row 1: same line item as part-1.csv row 11, row 2: same line item as part-1.csv row 12)"
    )


@pytest.mark.slow
def test_unknown_charge_category(wh, tmp_path):
    rows = good_rows()
    rows[8]["ChargeCategory"] = "Usages"
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file], QualityError) == (
        "focus.csv: rule charge_category_in_set failed on column ChargeCategory, 1 bad row (e.g. row 9: Usages)"
    )


@pytest.mark.slow
def test_negative_cost_on_usage_is_rejected_but_credit_loads(wh, tmp_path):
    rows = good_rows()
    rows[9]["BilledCost"] = "-5.00"
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file], QualityError) == (
        "focus.csv: rule cost_negative_only_for_credits failed on column BilledCost, 1 bad row (e.g. row 10: -5)"
    )
    rows[9]["ChargeCategory"], rows[9]["ConsumedQuantity"], rows[9]["PricingQuantity"] = "Credit", "", ""
    ingest_billing(wh, [write_csv(tmp_path / "fixed" / "focus.csv", rows)])
    assert total(wh) == [("acct-1", "USD", 20, Decimal("185"))]  # 19 x 10.00 - 5.00


@pytest.mark.slow
def test_mixed_currencies(wh, tmp_path):
    rows = good_rows()
    rows[11]["BillingCurrency"] = "EUR"
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file], QualityError) == (
        "focus.csv: rule currency_consistent_per_account failed on column BillingCurrency, 1 bad row "
        "(e.g. row 12: EUR (account acct-1 bills in USD))"
    )


def test_currency_not_iso(wh, tmp_path):
    rows = [{**row, "BillingCurrency": "US$"} for row in good_rows()]
    file = write_csv(tmp_path / "focus.csv", rows)
    assert rejected(wh, [file], QualityError) == (
        "focus.csv: rule billing_currency_is_iso_code failed on column BillingCurrency, 20 bad rows "
        "(e.g. row 1: US$, row 2: US$, row 3: US$, row 4: US$, row 5: US$, ...)"
    )


@pytest.mark.slow
def test_line_item_already_loaded_under_another_period(wh, tmp_path):
    # A December file that repeats November's line items under a December billing period.
    rows = [
        {**row, "BillingPeriodStart": "2026-12-01T00:00:00Z", "BillingPeriodEnd": "2027-01-01T00:00:00Z"}
        for row in good_rows()
    ]
    file = write_csv(tmp_path / "focus-dec.csv", rows)
    message = rejected(wh, [file], QualityError)
    assert message.startswith(
        "focus-dec.csv: rule line_item_not_already_loaded failed, 20 bad rows (e.g. row 1: "
    )
    assert "row 1: already loaded from focus-2026-11.csv row 1" in message


# --- warnings: the delivery loads and the warning is stored ----------------------------------


@pytest.mark.slow
def test_restated_month_with_fewer_rows_warns(wh, tmp_path):
    file = write_csv(tmp_path / "focus.csv", good_rows(days=15))
    result = ingest_billing(wh, [file])
    assert result.rows == 15 and result.replaced_rows == 20
    assert dq_warnings(wh, result.load_id) == [
        ("restated_period_shrank", 1, ["acct-1 2026-11: 15 rows, 20 before"]),
    ]


@pytest.mark.slow
def test_same_file_under_another_name_warns(wh, tmp_path):
    before = facts(wh, "* exclude (load_id, source_file)")
    file = write_csv(tmp_path / "focus-2026-11-copy.csv", good_rows())
    result = ingest_billing(wh, [file])
    assert result.status == "loaded"
    ((rule, count, examples),) = dq_warnings(wh, result.load_id)
    assert (rule, count) == ("delivery_repeats_loaded_file", 1)
    assert examples[0].startswith("same content as focus-2026-11.csv (load ")
    assert facts(wh, "* exclude (load_id, source_file)") == before  # identical content, new lineage


@pytest.mark.slow
def test_same_totals_with_other_lines_under_another_name_loads_without_warning(wh, tmp_path):
    # The rule hashes rows only for files whose row count and cost match: here they do, and the
    # fingerprint must still tell one resource's line from another's.
    rows = good_rows()
    rows[3]["ResourceId"] = "i-0def"
    result = ingest_billing(wh, [write_csv(tmp_path / "focus-2026-11-fixed.csv", rows)])
    assert result.status == "loaded" and result.replaced_rows == DAYS
    assert dq_warnings(wh, result.load_id) == []


@pytest.mark.slow
def test_cost_jump_is_loaded_not_dropped(wh, tmp_path):
    rows = good_rows()
    rows[17]["BilledCost"] = rows[17]["EffectiveCost"] = (
        "1000.00"  # day 18: 100x the 10.00 of every day before
    )
    result = ingest_billing(wh, [write_csv(tmp_path / "focus.csv", rows)])
    # Not a quality warning: the spend watch judges it (tests/unit/test_watch.py).
    assert dq_warnings(wh, result.load_id) == []
    assert total(wh) == [("acct-1", "USD", 20, Decimal("1190"))]  # 19 x 10 + 1000


# --- Parquet ------------------------------------------------------------------------------


def test_zero_byte_parquet(wh, tmp_path):
    (tmp_path / "focus.parquet").write_bytes(b"")
    assert rejected(wh, [tmp_path / "focus.parquet"]) == "focus.parquet: file is empty (0 bytes)"


@pytest.mark.slow
def test_parquet_parts_with_different_schemas_load(wh, tmp_path):
    # Parquet writes real nulls: the CSV convention of empty strings does not apply.
    rows = [{k: (v or None) for k, v in row.items()} for row in good_rows()]
    typed = pa.table(
        {
            c: [r[c] for r in rows[:10]]
            if c not in ("BilledCost", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd")
            else (
                [float(r[c]) for r in rows[:10]]
                if "Cost" in c
                else [datetime.fromisoformat(r[c].replace("Z", "")) for r in rows[:10]]
            )
            for c in COLUMNS
        }
    )
    text = pa.table(
        {c: [r[c] for r in rows[10:]] for c in COLUMNS + ["x_Extra"] if c != "x_Extra"}
        | {"x_Extra": ["y"] * 10}
    )
    (tmp_path / "d").mkdir()
    pq.write_table(typed, tmp_path / "d" / "part-1.parquet")
    pq.write_table(text, tmp_path / "d" / "part-2.parquet")
    result = ingest_billing(wh, [tmp_path / "d" / "part-1.parquet", tmp_path / "d" / "part-2.parquet"])
    assert result.rows == 20 and result.billed_cost == {"USD": Decimal("200")}


def test_parquet_with_wrong_types_for_the_format(wh, tmp_path):
    rows = good_rows()
    table = pa.table({c: [r[c] for r in rows] for c in COLUMNS} | {"BilledCost": [True] * DAYS})
    pq.write_table(table, tmp_path / "focus.parquet")
    assert rejected(wh, [tmp_path / "focus.parquet"]) == EXPECTED["parquet_bool_cost"]


# --- tags ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_very_long_tag_values_load_verbatim(wh, tmp_path):
    long_value = "x" * 100_000
    rows = [{**row, "Tags": json.dumps({"note": long_value})} for row in good_rows()]
    ingest_billing(wh, [write_csv(tmp_path / "focus.csv", rows)])
    assert facts(wh, "length(tags['note'])") == [(100_000,)] * DAYS


@pytest.mark.slow
def test_tags_with_quotes_commas_newlines_and_formulas_load_verbatim(wh, tmp_path):
    tricky = {"owner": 'O"Brien, Pat', "note": "line1\nline2", "cmd": "=cmd|' /C calc'!A0", "plus": "+1,2"}
    rows = [{**row, "Tags": json.dumps(tricky)} for row in good_rows()]
    ingest_billing(wh, [write_csv(tmp_path / "focus.csv", rows)])
    stored = facts(wh, "tags")
    assert stored == [(tricky,)] * DAYS


# --- file names ------------------------------------------------------------------------------


def test_path_traversal_name_stays_inside_quarantine_and_landing(wh, tmp_path):
    rows = good_rows()
    rows[0]["BilledCost"] = "oops"
    bad = write_csv(tmp_path / "landing" / "..%2F..%2Fetc%2Fcron.d%2Fx.csv", rows)
    sneaky = tmp_path / "landing" / "..\\..\\evil.csv"
    sneaky.write_bytes(bad.read_bytes())
    message = rejected(wh, [sneaky])
    assert (
        message
        == "..\\..\\evil.csv row 1, column BilledCost: not a decimal number (1 bad row; e.g. row 1: 'oops')"
    )
    qdir = tmp_path / "quarantine"
    target = quarantine([sneaky], message, qdir, run_id="../../run")
    assert target.resolve().is_relative_to(qdir.resolve())
    assert sorted(p.name for p in target.iterdir()) == ["evil.csv", "manifest.json", "validation.json"]
    # Back into the folder it came from, under its own name (a backslash is no separator here).
    (released,) = release(target, qdir)
    assert released == str(sneaky) and sneaky.read_bytes() == bad.read_bytes()


EXPECTED = {
    # Row 3's "Réservation" in Latin-1: 'é' is the byte 0xE9, on line 4 (after the header).
    "non_utf8": (
        "focus.csv: not UTF-8: byte 0xE9 at offset 1,032 (line 4) is invalid in UTF-8; "
        "the file looks Latin-1 / Windows-1252 encoded: export it as UTF-8"
    ),
    "duplicated_header": (
        "focus.csv row 21, column BilledCost: not a decimal number (1 bad row; e.g. row 21: 'BilledCost')"
    ),
    "missing_column": "focus.csv, column EffectiveCost: missing mandatory FOCUS 1.0-1.2 column(s)",
    "cost_text": "focus.csv row 4, column BilledCost: not a decimal number (1 bad row; e.g. row 4: 'ten dollars')",
    "nan": "focus.csv row 5, column BilledCost: not a decimal number (1 bad row; e.g. row 5: '{value}')",
    "bad_timestamp": (
        "focus.csv row 6, column ChargePeriodStart: not a timestamp (1 bad row; e.g. row 6: 'yesterday')"
    ),
    "null_account": "focus.csv row 7, column BillingAccountId: must not be null (1 bad row; e.g. row 7: null)",
    "end_before_start": (
        "focus.csv row 8, column ChargePeriodEnd: ChargePeriodEnd before ChargePeriodStart "
        "(1 bad row; e.g. row 8: '2026-11-07T00:00:00Z')"
    ),
    "parquet_bool_cost": (
        "focus.parquet row 1, column BilledCost: not a decimal number "
        "(20 bad rows; e.g. row 1: 'true', row 2: 'true', row 3: 'true')"
    ),
}
