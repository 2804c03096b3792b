"""One service is one group: CUR product codes, FOCUS spellings and units land under the FOCUS names."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from athanor.ingest.billing import ingest_billing
from athanor.reference.services import focus_service_name, focus_unit, service_names, units
from athanor.warehouse import connect
from tests.unit.test_sources import CUR_ROW, write_csv

FOCUS_ROW = {
    "BillingAccountId": "444455556666",
    "BillingCurrency": "USD",
    "BillingPeriodStart": "2026-11-01T00:00:00Z",
    "BillingPeriodEnd": "2026-12-01T00:00:00Z",
    "ChargePeriodStart": "2026-11-03T00:00:00Z",
    "ChargePeriodEnd": "2026-11-03T01:00:00Z",
    "ChargeCategory": "Usage",
    "PricingCategory": "Standard",
    "BilledCost": "21.96",
    "EffectiveCost": "21.96",
    "ListCost": "21.96",
    "ServiceName": "Amazon Elastic Compute Cloud",
    "ServiceCategory": "Compute",
    "PricingUnit": "Hours",
    "ConsumedUnit": "Hours",
    "ConsumedQuantity": "1",
    "PricingQuantity": "1",
    "x_InstanceType": "p4d.24xlarge",
    "ProviderName": "AWS",
}


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    c = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    yield c
    c.close()


def test_the_mapping_reads_from_the_reference_files() -> None:
    assert focus_service_name("AmazonEC2") == "Amazon Elastic Compute Cloud"
    assert focus_service_name("AmazonCloudWatch") == "Amazon CloudWatch"
    assert focus_service_name("Some New Service") == "Some New Service"  # unknown: as written
    assert service_names()["AmazonS3"].service_category == "Storage"
    assert focus_unit("GB-Mo") == "GB-Months"
    assert focus_unit(" Hrs ") == "Hours"
    assert focus_unit("Requests") == "Requests"
    assert all(key == key.lower().strip() for key in units())  # staging matches lower(trim(unit))


@pytest.mark.slow
def test_a_service_billed_in_cur_and_in_focus_is_one_group(con, tmp_path: Path) -> None:
    cur = [
        CUR_ROW,  # AmazonEC2, Hrs
        {
            **CUR_ROW,
            "line_item_usage_type": "USE1-EBS:VolumeUsage.gp3",
            "line_item_unblended_cost": "80.00",
            "pricing_unit": "GB-Mo",
            "product_instance_type": "",
            "product": '{"region": "us-east-1", "product_family": "Storage"}',
        },
        {
            **CUR_ROW,
            "line_item_product_code": "AmazonS3",
            "line_item_usage_type": "USE1-TimedStorage-ByteHrs",
            "line_item_unblended_cost": "23.00",
            "pricing_unit": "GB-Mo",
            "product_instance_type": "",
            "product": '{"region": "us-east-1", "product_family": "Storage"}',
        },
    ]
    focus = [
        FOCUS_ROW,
        {
            **FOCUS_ROW,
            "ServiceName": "Amazon Simple Storage Service",
            "ServiceCategory": "Storage",
            "BilledCost": "46.00",
            "EffectiveCost": "46.00",
            "PricingUnit": "GB-Months",
            "ConsumedUnit": "GB-Months",
            "x_InstanceType": "",
        },
        {
            **FOCUS_ROW,
            "ServiceName": "AmazonCloudWatch",
            "ServiceCategory": "Management and Governance",
            "BilledCost": "3.00",
            "EffectiveCost": "3.00",
            "PricingUnit": "Metrics",
            "ConsumedUnit": "Metrics",
            "x_InstanceType": "",
        },
    ]
    ingest_billing(con, [write_csv(tmp_path / "cur.csv", cur)])
    ingest_billing(con, [write_csv(tmp_path / "focus.csv", focus)])
    by_service = con.execute(
        """select service_name, service_category, list(distinct pricing_unit order by pricing_unit),
                  sum(billed_cost)::double
           from billing_facts group by all order by all"""
    ).fetchall()
    assert by_service == [
        ("Amazon CloudWatch", "Management and Governance", ["Metrics"], 3.0),
        ("Amazon Elastic Compute Cloud", "Compute", ["Hours"], 21.96 + 21.96),
        # EBS bills under EC2: its category is Storage, as AWS's FOCUS export says.
        ("Amazon Elastic Compute Cloud", "Storage", ["GB-Months"], 80.0),
        ("Amazon Simple Storage Service", "Storage", ["GB-Months"], 23.0 + 46.0),
    ]
    units_used = con.execute(
        "select distinct consumed_unit from billing_facts where consumed_unit is not null order by 1"
    ).fetchall()
    assert units_used == [("GB-Months",), ("Hours",), ("Metrics",)]
