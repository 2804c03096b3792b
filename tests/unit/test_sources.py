"""Each billing export format: detected from its columns, mapped into billing_facts by the conversion rules."""

from __future__ import annotations

import csv
import gzip
import shutil
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from athanor.ingest import billing
from athanor.ingest.billing import IngestError, ingest_billing, sources
from athanor.warehouse import connect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "billing"
D = Decimal


def write_csv(path: Path, rows: list[dict[str, str]], *, gz: bool = False) -> Path:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    opener = gzip.open if gz else open
    with opener(path, "wt", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    c = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    yield c
    c.close()


def facts(con: duckdb.DuckDBPyConnection, columns: str, where: str = "true") -> list[tuple]:
    """Fact rows in file order; the lines one source row expands into (a GCP row's usage and its
    credits) by cost, highest first, since loads keep no insertion order."""
    return con.execute(
        f"select {columns} from billing_facts where {where} order by source_file, source_row, billed_cost desc"
    ).fetchall()


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (["BilledCost", "ChargePeriodStart", "BillingAccountId", "EffectiveCost"], "focus"),
        (["bill_payer_account_id", "line_item_usage_start_date", "line_item_unblended_cost"], "cur2"),
        (["bill/PayerAccountId", "lineItem/UsageStartDate", "lineItem/UnblendedCost"], "cur_legacy"),
        (["BillingAccountId", "ChargeType", "MeterCategory", "BillingPeriodStartDate", "Cost"], "azure"),
        # MCA writes camelCase; the BOM is what Excel-friendly exports start with.
        (["\ufeffbillingAccountId", "chargeType", "meterCategory", "billingPeriodStartDate"], "azure"),
        (["billing_account_id", "usage_start_time", "cost", "currency", "service.description"], "gcp"),
        (["job_id", "start_time", "end_time"], None),
    ],
)
def test_detect_from_columns(columns: list[str], expected: str | None) -> None:
    fmt = sources.detect(columns)
    assert (fmt.name if fmt else None) == expected


@pytest.mark.slow
def test_detection_ignores_the_file_name(con, tmp_path: Path) -> None:
    # A GCP export named like a FOCUS CSV, without extension, still loads as GCP.
    disguised = tmp_path / "focus-export"
    shutil.copy(FIXTURES / "gcp" / "billing-export-202311.jsonl", disguised)
    assert ingest_billing(con, [disguised]).source_format == "gcp"


# ---------------------------------------------------------------- FOCUS quirks

FOCUS_ROW = {
    "BillingAccountId": "acct-1",
    "BillingCurrency": "USD",
    "BillingPeriodStart": "2024-09-01 00:00:00",
    "BillingPeriodEnd": "2024-10-01 00:00:00",
    "ChargePeriodStart": "2024-09-02T00:00:00Z",
    "ChargePeriodEnd": "2024-09-02T01:00:00Z",
    "ChargeCategory": "Usage",
    "ChargeFrequency": "Usage-Based",
    "PricingCategory": "Standard",
    "BilledCost": "1.50",
    "EffectiveCost": "1.50",
    "ConsumedQuantity": "1",
    "ConsumedUnit": "Hours",
    "x_UsageType": "USE1-BoxUsage:p5.48xlarge",
    "x_InstanceType": "",
    "x_Discounts": "none",
    "Tags": '{"team": "llm"}',
}


@pytest.mark.slow
def test_focus_quirks(con, tmp_path: Path) -> None:
    rows = [
        FOCUS_ROW,
        # Literal NULL and lower-case enums, as in the real sample; spot usage without an instance-type column.
        {**FOCUS_ROW, "ChargeFrequency": "usage-based", "PricingCategory": "dynamic", "ChargeCategory": "usage",
         "BilledCost": "2.25", "EffectiveCost": "2.25", "Tags": "NULL", "x_UsageType": "USE1-SpotUsage:p4d.24xlarge"},
        # Empty strings (Oracle rows) are nulls too.
        {**FOCUS_ROW, "PricingCategory": "", "BilledCost": "0.25", "EffectiveCost": "0", "Tags": "",
         "ConsumedUnit": "", "x_UsageType": ""},
    ]  # fmt: skip
    result = ingest_billing(con, [write_csv(tmp_path / "f.csv", rows)])
    assert result.billed_cost == {"USD": D("4.00")}  # 1.50 + 2.25 + 0.25
    got = facts(
        con,
        "charge_category, charge_frequency, pricing_category, charge_period_start::varchar, billing_period_start::varchar,"
        " x_instance_type, x_gpu_count, x_pricing_model, x_usage_hours, tags, x_provider_columns['x_Discounts']",
    )
    assert got[0] == ("Usage", "Usage-Based", "Standard", "2024-09-02 00:00:00", "2024-09-01 00:00:00",
                      "p5.48xlarge", 8, "on_demand", D(1), {"team": "llm"}, "none")  # fmt: skip
    assert got[1][:3] == ("Usage", "Usage-Based", "Dynamic")
    assert got[1][5:9] == ("p4d.24xlarge", 8, "spot", D(1))
    assert got[1][9] == {}
    assert got[2][2] is None and got[2][5] is None and got[2][9] == {}


@pytest.mark.slow
def test_focus_csv_gz_and_parquet_load_the_same(con, tmp_path: Path) -> None:
    rows = [FOCUS_ROW, {**FOCUS_ROW, "BilledCost": "3.125", "EffectiveCost": "3"}]
    plain = write_csv(tmp_path / "a.csv", rows)
    gz = write_csv(tmp_path / "b.csv.gz", rows, gz=True)
    parquet = tmp_path / "c.parquet"
    duckdb.execute(
        f"copy (select * from read_csv('{plain}', all_varchar=true)) to '{parquet}' (format parquet)"
    )
    assert ingest_billing(con, [plain]).billed_cost == {"USD": D("4.625")}
    first = facts(con, "* exclude (load_id, source_file)")
    for file in (gz, parquet):
        con.execute("delete from billing_facts")
        con.execute("delete from loads")
        assert ingest_billing(con, [file]).billed_cost == {"USD": D("4.625")}
        assert facts(con, "* exclude (load_id, source_file)") == first


@pytest.mark.slow
def test_focus_parquet_tags_parsed_once_per_set_give_each_row_its_own(con, tmp_path: Path) -> None:
    # A Parquet's JSON tags are parsed once per distinct text and joined back: every row must
    # get what the CSV (parsed line by line) gives it, the odd texts and repeats included.
    texts = ['{"team": "llm", "env": "prod"}', "", '{"team": "vision"}', "team=llm", None, "{}",
             '{"team": "llm", "env": "prod"}', "   ", '{"team": "vision"}', None]  # fmt: skip
    rows = [{**FOCUS_ROW, "Tags": text, "BilledCost": str(i + 1)} for i, text in enumerate(texts)]
    plain = write_csv(tmp_path / "a.csv", rows)
    parquet = tmp_path / "b.parquet"
    duckdb.execute(
        f"copy (select * replace (case when BilledCost in ('5', '10') then null else Tags end as Tags)"
        f" from read_csv('{plain}', all_varchar=true)) to '{parquet}' (format parquet)"
    )
    ingest_billing(con, [parquet])
    by_row = facts(con, "source_row, tags")
    assert by_row == [
        (1, {"team": "llm", "env": "prod"}), (2, {}), (3, {"team": "vision"}), (4, {}), (5, {}), (6, {}),
        (7, {"team": "llm", "env": "prod"}), (8, {}), (9, {"team": "vision"}), (10, {}),
    ]  # fmt: skip
    con.execute("delete from billing_facts")
    con.execute("delete from loads")
    ingest_billing(con, [plain])
    assert facts(con, "source_row, tags") == by_row


@pytest.mark.slow
def test_focus_parquet_with_a_typed_commitment_end_loads(con, tmp_path: Path) -> None:
    # A typed Parquet export carries x_CommitmentDiscountEnd as a timestamp, not text: the
    # staging's empty-string check used to fail the whole file on it.
    rows = [{**FOCUS_ROW, "x_CommitmentDiscountEnd": "2027-01-30T00:00:00Z"},
            {**FOCUS_ROW, "BilledCost": "3", "x_CommitmentDiscountEnd": ""}]  # fmt: skip
    plain = write_csv(tmp_path / "a.csv", rows)
    typed = tmp_path / "typed.parquet"
    duckdb.execute(
        "copy (select * replace (cast(nullif(x_CommitmentDiscountEnd, '') as timestamptz)"
        f" as x_CommitmentDiscountEnd) from read_csv('{plain}', all_varchar=true)) to '{typed}' (format parquet)"
    )
    assert ingest_billing(con, [typed]).billed_cost == {"USD": D("4.5")}  # 1.50 + 3
    ends = facts(con, "x_commitment_end::varchar")
    assert sorted(ends, key=str) == [("2027-01-30 00:00:00",), (None,)]


@pytest.mark.slow
def test_focus_parquet_with_zoned_times_and_odd_extra_columns_loads_each_value(con, tmp_path: Path) -> None:
    # A typed Parquet's TIMESTAMPTZ columns are read as their UTC wall time from the instant's
    # microseconds, and its columns FOCUS does not know are kept in x_provider_columns through a
    # struct cast: each value checked by hand, names with quotes and spaces, a name DuckDB
    # renames (x_Id beside x_id) and nulls (the CSV's empty values) included.
    rows = [
        {**FOCUS_ROW, "ChargePeriodStart": "2024-09-01T19:00:00-05:00", "ChargePeriodEnd": "2024-09-01T20:00:00-05:00",
         "x_Id": "a", "x_id": "b", "it's odd": "1", "with space": ""},
        {**FOCUS_ROW, "BilledCost": "3", "ChargePeriodStart": "2024-09-02T05:30:00+05:30",
         "ChargePeriodEnd": "2024-09-02T01:00:00Z", "x_Id": "c", "x_id": "", "it's odd": "", "with space": "x"},
    ]  # fmt: skip
    plain = write_csv(tmp_path / "a.csv", rows)
    typed = tmp_path / "typed.parquet"
    duckdb.execute(
        "copy (select * replace (cast(ChargePeriodStart as timestamptz) as ChargePeriodStart,"
        " cast(ChargePeriodEnd as timestamptz) as ChargePeriodEnd)"
        f" from read_csv('{plain}', all_varchar=true)) to '{typed}' (format parquet)"
    )
    assert ingest_billing(con, [typed]).billed_cost == {"USD": D("4.5")}  # 1.50 + 3
    got = facts(con, "charge_period_start::varchar, charge_period_end::varchar, x_provider_columns")
    assert got == [
        ("2024-09-02 00:00:00", "2024-09-02 01:00:00",
         {"x_Discounts": "none", "x_Id": "a", "x_id_1": "b", "it's odd": "1", "with space": None}),
        ("2024-09-02 00:00:00", "2024-09-02 01:00:00",
         {"x_Discounts": "none", "x_Id": "c", "x_id_1": None, "it's odd": None, "with space": "x"}),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "instant",
    [
        "2024-09-01 19:00:00-05",
        "1969-12-31 23:59:59.5+00",
        "0001-01-01 00:00:00+00",
        "infinity",
        "-infinity",
        None,
    ],
)
def test_a_zoned_time_reads_as_the_cast_to_utc_gives_it(instant: str | None) -> None:
    # The staging's UTC wall time of a TIMESTAMPTZ, against DuckDB's own cast in a UTC session:
    # the same value, infinities and null included.
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    expression = billing._as_utc_timestamp("t", "TIMESTAMP WITH TIME ZONE")
    ours, cast = con.execute(
        f"select {expression}, cast(t as timestamp) from (select ?::timestamptz as t)", [instant]
    ).fetchone()
    assert ours == cast
    assert (ours is None) == (instant is None)


def test_focus_missing_mandatory_column_is_named(con, tmp_path: Path) -> None:
    rows = [{k: v for k, v in FOCUS_ROW.items() if k != "BillingPeriodEnd"}]
    with pytest.raises(IngestError, match=r"column BillingPeriodEnd: missing mandatory FOCUS 1.0-1.2 column"):
        ingest_billing(con, [write_csv(tmp_path / "f.csv", rows)])


def test_bad_value_names_file_row_column_and_example(con, tmp_path: Path) -> None:
    rows = [FOCUS_ROW, {**FOCUS_ROW, "BilledCost": "12,50"}]
    with pytest.raises(IngestError) as err:
        ingest_billing(con, [write_csv(tmp_path / "f.csv", rows)])
    assert (
        str(err.value)
        == "f.csv row 2, column BilledCost: not a decimal number (1 bad row; e.g. row 2: '12,50')"
    )
    assert con.execute("select count(*) from billing_facts").fetchone()[0] == 0


# ---------------------------------------------------------------- AWS CUR 2.0

CUR_ROW = {
    "bill_payer_account_id": "111122223333",
    "bill_billing_period_start_date": "2026-11-01T00:00:00Z",
    "bill_billing_period_end_date": "2026-12-01T00:00:00Z",
    "line_item_usage_start_date": "2026-11-03T00:00:00Z",
    "line_item_usage_end_date": "2026-11-03T01:00:00Z",
    "line_item_currency_code": "USD",
    "line_item_line_item_type": "Usage",
    "line_item_product_code": "AmazonEC2",
    "line_item_usage_type": "USE1-BoxUsage:p4d.24xlarge",
    "line_item_usage_amount": "1",
    "line_item_unblended_cost": "21.96",
    "pricing_public_on_demand_rate": "21.96",
    "pricing_unit": "Hrs",
    "product_instance_type": "p4d.24xlarge",
    "product": '{"region": "us-east-1", "product_family": "Compute Instance"}',
    "resource_tags": '{"user_team": "llm"}',
    "reservation_reservation_a_r_n": "",
    "savings_plan_savings_plan_a_r_n": "",
}
RI = "arn:aws:ec2:us-east-1:111122223333:reserved-instances/r-1"
SP = "arn:aws:savingsplans::111122223333:savingsplan/sp-1"


@pytest.mark.slow
def test_cur2_cost_rules_per_line_item_type(con, tmp_path: Path) -> None:
    rows = [
        CUR_ROW,
        # Spot: the instance-type column is empty, the usage type names it.
        {**CUR_ROW, "line_item_usage_type": "USE1-SpotUsage:p4d.24xlarge", "product_instance_type": "",
         "line_item_unblended_cost": "7.90"},
        {**CUR_ROW, "line_item_line_item_type": "DiscountedUsage", "line_item_unblended_cost": "0",
         "reservation_reservation_a_r_n": RI, "reservation_effective_cost": "13.18"},
        {**CUR_ROW, "line_item_line_item_type": "RIFee", "line_item_unblended_cost": "9490.00", "line_item_usage_type": "HeavyUsage:p4d.24xlarge",
         "reservation_reservation_a_r_n": RI, "reservation_unused_amortized_upfront_fee_for_billing_period": "100.00",
         "reservation_unused_recurring_fee": "26.36"},
        {**CUR_ROW, "line_item_line_item_type": "Fee", "line_item_unblended_cost": "50000", "reservation_reservation_a_r_n": RI},
        {**CUR_ROW, "line_item_line_item_type": "SavingsPlanCoveredUsage", "line_item_unblended_cost": "21.96",
         "savings_plan_savings_plan_a_r_n": SP, "savings_plan_savings_plan_effective_cost": "15.37"},
        {**CUR_ROW, "line_item_line_item_type": "SavingsPlanNegation", "line_item_unblended_cost": "-21.96",
         "savings_plan_savings_plan_a_r_n": SP},
        {**CUR_ROW, "line_item_line_item_type": "SavingsPlanRecurringFee", "line_item_unblended_cost": "720.00",
         "savings_plan_savings_plan_a_r_n": SP, "savings_plan_total_commitment_to_date": "720.00",
         "savings_plan_used_commitment": "691.20"},
        # EDP: AWS writes the discounted amount in net_unblended_cost; BilledCost takes it.
        {**CUR_ROW, "line_item_unblended_cost": "10.00", "line_item_net_unblended_cost": "9.00"},
        {**CUR_ROW, "line_item_line_item_type": "Tax", "line_item_unblended_cost": "1.10", "line_item_usage_type": ""},
    ]  # fmt: skip
    result = ingest_billing(con, [write_csv(tmp_path / "cur.csv", rows)])
    # 21.96 + 7.90 + 0 + 9490 + 50000 + 21.96 - 21.96 + 720 + 9.00 + 1.10 = 60249.96
    assert result.billed_cost == {"USD": D("60249.96")}
    got = facts(con, "charge_category, pricing_category, billed_cost, effective_cost, commitment_discount_status,"
                     " x_instance_type, x_gpu_count, x_pricing_model, list_cost")  # fmt: skip
    expected_effective = [
        D("21.96"),
        D("7.90"),
        D("13.18"),
        D("126.36"),
        D(0),
        D("15.37"),
        D(0),
        D("28.80"),
        D("9.00"),
        D("1.10"),
    ]
    assert [r[3] for r in got] == expected_effective  # RIFee 100 + 26.36; SP fee 720 - 691.20
    assert [r[0] for r in got] == [
        "Usage",
        "Usage",
        "Usage",
        "Purchase",
        "Purchase",
        "Usage",
        "Usage",
        "Purchase",
        "Usage",
        "Tax",
    ]
    assert got[1][1] == "Dynamic" and got[1][5:8] == ("p4d.24xlarge", 8, "spot")
    assert got[2][1] == "Committed" and got[2][4] == "Used" and got[2][7] == "reserved"
    assert got[3][4] == "Unused" and got[7][4] == "Unused"
    assert got[5][7] == "savings_plan"
    assert got[0][8] == D("21.96")  # ListCost = on-demand rate x usage amount
    assert con.execute("select tags from billing_facts where source_row = 1").fetchone()[0] == {"team": "llm"}


def test_cur2_parquet_with_native_maps(con, tmp_path: Path) -> None:
    parquet = tmp_path / "cur.parquet"
    duckdb.execute(
        f"""copy (select '111122223333' as bill_payer_account_id, timestamp '2026-11-01' as bill_billing_period_start_date,
                timestamp '2026-12-01' as bill_billing_period_end_date, timestamp '2026-11-03' as line_item_usage_start_date,
                timestamp '2026-11-03 01:00' as line_item_usage_end_date, 'USD' as line_item_currency_code,
                'Usage' as line_item_line_item_type, 'USE1-SpotUsage:p5.48xlarge' as line_item_usage_type,
                1.0::double as line_item_usage_amount, 17.6::double as line_item_unblended_cost,
                map {{'region': 'us-east-1'}} as product, map {{'user_team': 'vision'}} as resource_tags,
                'extra' as line_item_custom_thing) to '{parquet}' (format parquet)"""
    )
    result = ingest_billing(con, [parquet])
    assert result.billed_cost == {"USD": D("17.6")}
    assert facts(
        con,
        "region_id, tags, x_instance_type, x_gpu_count, x_usage_type, x_operation, x_provider_columns, source_row",
    ) == [
        # CUR columns Athanor does not map are AWS's own schema, not extensions: not kept.
        ("us-east-1", {"team": "vision"}, "p5.48xlarge", 8, "USE1-SpotUsage:p5.48xlarge", None, None, 1)
    ]


@pytest.mark.slow
def test_cur2_parquet_tag_keys_lose_the_user_prefix_row_by_row(con, tmp_path: Path) -> None:
    # Tag sets repeat across rows (they are rewritten once per distinct set and joined back):
    # every row must still get its own set, nulls and empty maps included.
    tag_sets = [
        "map {'user_team': 'vision', 'user_env': 'prod'}",
        "null",
        "map {'user_team': 'llm', 'aws_createdBy': 'ci'}",
        "map {'user_team': 'vision', 'user_env': 'prod'}",
        "map {}::map(varchar, varchar)",
        "map {'user:team': 'llm', 'user_': 'blank'}",
        "map {'user_team': 'llm', 'aws_createdBy': 'ci'}",
    ]
    rows = " union all ".join(
        f"select {i} as i, {tags}::map(varchar, varchar) as resource_tags" for i, tags in enumerate(tag_sets)
    )
    parquet = tmp_path / "cur.parquet"
    duckdb.execute(
        f"""copy (select '111122223333' as bill_payer_account_id, timestamp '2026-11-01' as bill_billing_period_start_date,
                timestamp '2026-12-01' as bill_billing_period_end_date,
                timestamp '2026-11-03' + to_hours(i) as line_item_usage_start_date,
                timestamp '2026-11-03' + to_hours(i + 1) as line_item_usage_end_date, 'USD' as line_item_currency_code,
                'Usage' as line_item_line_item_type, 1.0::double as line_item_unblended_cost, resource_tags
                from ({rows}) order by i) to '{parquet}' (format parquet)"""
    )
    ingest_billing(con, [parquet])
    assert facts(con, "source_row, tags") == [
        (1, {"team": "vision", "env": "prod"}),
        (2, {}),
        (3, {"team": "llm", "aws_createdBy": "ci"}),
        (4, {"team": "vision", "env": "prod"}),
        (5, {}),
        (6, {"team": "llm", "": "blank"}),
        (7, {"team": "llm", "aws_createdBy": "ci"}),
    ]


@pytest.mark.slow
def test_legacy_cur_tag_columns_fold_into_tags_without_the_user_prefix(con, tmp_path: Path) -> None:
    row = {
        "bill/PayerAccountId": "111122223333",
        "bill/BillingPeriodStartDate": "2026-11-01T00:00:00Z",
        "bill/BillingPeriodEndDate": "2026-12-01T00:00:00Z",
        "lineItem/LineItemType": "Usage",
        "lineItem/UsageStartDate": "2026-11-03T00:00:00Z",
        "lineItem/UsageEndDate": "2026-11-03T01:00:00Z",
        "lineItem/UnblendedCost": "1.00",
        "lineItem/CurrencyCode": "USD",
        "resourceTags/user:team": "llm",
        "resourceTags/aws:createdBy": "ci",
    }
    rows = [row, {**row, "resourceTags/user:team": "", "resourceTags/aws:createdBy": ""}]
    ingest_billing(con, [write_csv(tmp_path / "cur.csv", rows)])
    # An empty cell is no tag, not a tag with an empty value.
    assert facts(con, "source_row, tags") == [(1, {"team": "llm", "aws:createdBy": "ci"}), (2, {})]


# ---------------------------------------------------------------- legacy CUR, multi-part


@pytest.mark.slow
def test_legacy_cur_waits_for_missing_parts_then_loads(con, tmp_path: Path) -> None:
    delivery = tmp_path / "asm-0001"
    shutil.copytree(FIXTURES / "cur-legacy" / "20231101-20231201" / "asm-0001", delivery)
    files = sorted(delivery.iterdir())
    part2 = delivery / "athanor-cur-2.csv.gz"
    held_back = part2.read_bytes()
    part2.unlink()
    waiting = ingest_billing(con, [f for f in files if f.exists()])
    assert waiting.status == "waiting" and waiting.missing == ("athanor-cur-2.csv.gz",)
    assert "waiting for parts (1 missing: athanor-cur-2.csv.gz)" in waiting.summary()
    assert con.execute("select count(*) from billing_facts").fetchone()[0] == 0

    part2.write_bytes(held_back)
    loaded = ingest_billing(con, files)
    assert (loaded.status, loaded.source_format, loaded.rows) == ("loaded", "cur_legacy", 40)
    # Independent sum of the 40 source rows, read with Python's csv module.
    want = D(0)
    for part in ("athanor-cur-1.csv.gz", "athanor-cur-2.csv.gz"):
        with gzip.open(delivery / part, "rt", newline="") as f:
            want += sum(D(r["lineItem/UnblendedCost"]) for r in csv.DictReader(f))
    assert loaded.billed_cost == {"USD": want}
    assert facts(con, "distinct source_file") == [("athanor-cur-1.csv.gz",), ("athanor-cur-2.csv.gz",)]


# ---------------------------------------------------------------- Azure

AZURE_ROW = {
    "BillingAccountId": "8611537",
    "BillingPeriodStartDate": "09/01/2023",
    "BillingPeriodEndDate": "09/30/2023",
    "SubscriptionId": "sub-1",
    "Date": "09/04/2023",
    "MeterCategory": "Virtual Machines",
    "Quantity": "24",
    "UnitOfMeasure": "1 Hour",
    "Cost": "2.64",
    "PayGPrice": "0.11",
    "UnitPrice": "0.11",
    "BillingCurrency": "USD",
    "ResourceLocation": "EastUS2",
    "ConsumedService": "Microsoft.Compute",
    "AdditionalInfo": '{"ServiceType":"Standard_D2s_v3"}',
    "Tags": '"env": "prod","org": "trey"',
    "ChargeType": "Usage",
    "Frequency": "UsageBased",
    "PricingModel": "OnDemand",
    "ReservationId": "",
    "benefitId": "",
}
RES = "/providers/Microsoft.Capacity/reservationOrders/o-1/reservations/r-1"


def test_azure_amortized_commitment_rows(con, tmp_path: Path) -> None:
    rows = [
        AZURE_ROW,
        # Amortized dataset: covered usage carries its prorated share, unused hours their waste.
        {**AZURE_ROW, "PricingModel": "Reservation", "Cost": "1.20", "benefitId": RES},
        {
            **AZURE_ROW,
            "ChargeType": "UnusedReservation",
            "PricingModel": "Reservation",
            "Cost": "0.30",
            "benefitId": RES,
        },
        {**AZURE_ROW, "PricingModel": "Spot", "Cost": "0.50", "UnitOfMeasure": "10 Hours", "Quantity": "2.4"},
    ]
    result = ingest_billing(con, [write_csv(tmp_path / "amortized.csv", rows)])
    # Billed: 2.64 + 0 + 0 + 0.50; the 1.20 and 0.30 are amortised, billed when the reservation was bought.
    assert result.billed_cost == {"USD": D("3.14")}
    got = facts(con, "charge_category, pricing_category, billed_cost, effective_cost, commitment_discount_status,"
                     " commitment_discount_category, consumed_quantity, x_usage_hours, region_id, tags,"
                     " charge_period_start::varchar, billing_period_end::varchar, x_instance_type")  # fmt: skip
    assert got[0] == ("Usage", "Standard", D("2.64"), D("2.64"), None, None, D(24), D(24), "eastus2",
                      {"env": "prod", "org": "trey"}, "2023-09-04 00:00:00", "2023-10-01 00:00:00", "Standard_D2s_v3")  # fmt: skip
    assert got[1][:6] == ("Usage", "Committed", D(0), D("1.20"), "Used", "Usage")
    assert got[2][:6] == ("Usage", "Committed", D(0), D("0.30"), "Unused", "Usage")
    assert got[3][:4] == ("Usage", "Dynamic", D("0.50"), D("0.50"))
    assert got[3][6] == D(24)  # 2.4 blocks of 10 hours
    reconciled = con.execute(
        "select file_billed_cost, loaded_billed_cost, reconciled from reconciliations"
    ).fetchall()
    assert reconciled == [(D("4.64"), D("4.64"), True)]  # every Cost landed: 2.64 + 1.20 + 0.30 + 0.50


def test_azure_mca_column_names(con, tmp_path: Path) -> None:
    mca = {
        "billingAccountId": "ba-1", "billingPeriodStartDate": "2024-05-01", "billingPeriodEndDate": "2024-05-31",
        "subscriptionId": "s", "date": "2024-05-02", "meterCategory": "Storage", "quantity": "1",
        "unitOfMeasure": "1 GB/Month", "costInBillingCurrency": "0.02", "costInUsd": "0.021",
        "paygCostInBillingCurrency": "0.03", "billingCurrency": "EUR", "chargeType": "Usage",
        "pricingModel": "OnDemand", "frequency": "UsageBased",
    }  # fmt: skip
    result = ingest_billing(con, [write_csv(tmp_path / "mca.csv", [mca])])
    assert result.billed_cost == {"EUR": D("0.02")}
    assert facts(con, "list_cost, billing_period_start::varchar, service_category") == [
        (D("0.03"), "2024-05-01 00:00:00", "Storage")
    ]


# ---------------------------------------------------------------- GCP


def test_gcp_credits_become_rows_and_net_into_effective_cost(con) -> None:
    result = ingest_billing(con, [FIXTURES / "gcp" / "billing-export-202311.jsonl"])
    # cost 23.47 + 1.25 + 10 + 6.50 + 2 = 43.22, credits -2 - 7: billed 34.22
    assert result.billed_cost == {"USD": D("34.22")}
    assert result.rows == 5
    got = facts(
        con,
        "source_row, charge_category, pricing_category, billed_cost, effective_cost, commitment_discount_id",
    )
    cud = "projects/ml-train/regions/us-central1/commitments/cud-cpu-1"
    assert sorted(got, key=lambda r: (r[0], r[1])) == [
        (1, "Credit", None, D(-2), D(0), None),
        (1, "Usage", "Standard", D("23.47"), D("21.47"), None),
        (2, "Usage", "Dynamic", D("1.25"), D("1.25"), None),
        (3, "Credit", None, D(-7), D(0), cud),
        (3, "Usage", "Committed", D(10), D(3), cud),
        (4, "Purchase", "Committed", D("6.5"), D("6.5"), None),
        (5, "Tax", None, D(2), D(2), None),
    ]
    # sum(EffectiveCost) equals sum(BilledCost): no credit counted twice.
    assert con.execute("select sum(effective_cost) from billing_facts").fetchone()[0] == D("34.22")
    # The invoice month is Pacific time: 2023-11-01 00:00 PDT is 07:00 UTC.
    period = con.execute(
        "select distinct billing_period_start::varchar, billing_period_end::varchar from billing_facts"
    )
    assert period.fetchall() == [("2023-11-01 07:00:00", "2023-12-01 08:00:00")]


@pytest.mark.slow
def test_gcp_csv_and_parquet_match_jsonl(con, tmp_path: Path) -> None:
    jsonl = FIXTURES / "gcp" / "billing-export-202311.jsonl"
    parquet, flat = tmp_path / "export.parquet", tmp_path / "export.csv"
    duckdb.execute(f"copy (select * from read_json('{jsonl}')) to '{parquet}' (format parquet)")
    # A query result saved as CSV: records flattened to dotted columns, repeated fields as JSON.
    duckdb.execute(
        f"""copy (select billing_account_id, service.id as "service.id", service.description as "service.description",
                   sku.id as "sku.id", sku.description as "sku.description", usage_start_time, usage_end_time,
                   project.id as "project.id", location.region as "location.region", cost, currency,
                   usage.amount as "usage.amount", usage.unit as "usage.unit", invoice.month as "invoice.month",
                   cost_type, to_json(credits) as credits, to_json(labels) as labels, to_json(system_labels) as system_labels
                 from read_json('{jsonl}')) to '{flat}' (header)"""
    )
    columns = "source_row, charge_category, billed_cost, effective_cost, tags, x_instance_type, sub_account_id, service_name"
    ingest_billing(con, [jsonl])
    want = facts(con, columns)
    for file in (parquet, flat):
        con.execute("delete from billing_facts")
        con.execute("delete from loads")
        assert ingest_billing(con, [file]).billed_cost == {"USD": D("34.22")}
        assert facts(con, columns) == want
