"""athanor.reference: the catalogue, the Spot Advisor snapshot, the FOCUS columns, the vocabularies.

Expected values are copied by hand from the files in include/athanor/reference/data/.
"""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest

from athanor import reference
from athanor.reference import (
    CENSORED_STATES,
    JOB_STATES,
    STORAGE_CLASSES,
    InstanceType,
    focus_columns,
    gpus_per_instance,
    instance,
    instance_types,
    spot_advice,
)
from athanor.warehouse import connect


def test_catalogue_rows_as_in_the_file() -> None:
    assert instance("p4d.24xlarge") == InstanceType(
        "p4d.24xlarge", "p4d", 8, "A100-40GB", 192.0, Decimal("21.96"), Decimal("7.90"), "aws", "us-east-1"
    )
    assert instance("g5.12xlarge") == InstanceType(
        "g5.12xlarge", "g5", 4, "A10G", 96.0, Decimal("5.67"), Decimal("2.40"), "aws", "us-east-1"
    )
    # p5e is sold only as capacity blocks (its one row, us-east-2): no on-demand or spot price.
    p5e = instance("p5e.48xlarge")
    assert (p5e.gpu_count, p5e.on_demand_usd_per_h, p5e.spot_usd_per_h, p5e.region) == (
        8,
        None,
        None,
        "us-east-2",
    )
    assert instance("trn1.32xlarge").gpu_count == 16  # Trainium chips
    # g6e.48xlarge's only price row is us-west-2 (prices.csv): that is its reference region.
    assert (instance("g6e.48xlarge").region, instance("g6e.48xlarge").on_demand_usd_per_h) == (
        "us-west-2",
        Decimal("30.13118"),
    )
    # One list for every provider: 44 AWS (with p6-b200 and six g4dn sizes), 9 Azure (with ND
    # MI300X v5), 16 GCP types (with a3-highgpu-4g).
    assert len(instance_types()) == 69
    assert instance_types()[0].instance_type == "p4d.24xlarge"
    assert [t.provider for t in instance_types()].count("azure") == 9


def test_azure_and_gcp_types_weigh_sizes_by_gpus() -> None:
    # No normalisation factor is published outside AWS: the GPU count stands in.
    assert instance("Standard_ND96asr_v4") == InstanceType(
        "Standard_ND96asr_v4",
        "NDasr_A100_v4",
        8,
        "A100-40GB",
        8.0,
        Decimal("27.197"),
        None,
        "azure",
        "eastus",
    )
    assert instance("a2-highgpu-1g").normalization_factor == 1.0
    assert gpus_per_instance("A2-HIGHGPU-8G") == 8


def test_catalogue_is_frozen_and_read_once() -> None:
    with pytest.raises(AttributeError):
        instance("p5.48xlarge").gpu_count = 4  # type: ignore[misc]
    assert instance("p5.48xlarge") is instance("p5.48xlarge")


def test_unknown_instance_type() -> None:
    with pytest.raises(KeyError, match="c5.xlarge"):
        instance("c5.xlarge")
    assert gpus_per_instance("c5.xlarge") is None


def test_gpus_per_instance_reads_sagemaker_names() -> None:
    assert gpus_per_instance("ml.p4d.24xlarge") == 8
    assert gpus_per_instance(" ML.G5.2XLARGE ") == 1
    assert gpus_per_instance("g6e.24xlarge") == 4


def test_normalization_factor_follows_the_size() -> None:
    # AWS: xlarge 8, and each size step doubles up to 16xlarge; 12xlarge 96, 24xlarge 192.
    sizes = {"xlarge": 8, "2xlarge": 16, "4xlarge": 32, "8xlarge": 64, "12xlarge": 96, "16xlarge": 128,
             "24xlarge": 192, "32xlarge": 256, "48xlarge": 384}  # fmt: skip
    for row in (t for t in instance_types() if t.provider == "aws"):
        assert row.normalization_factor == sizes[row.instance_type.split(".")[1]], row.instance_type
        assert row.instance_type.startswith(row.instance_family + ".")


def test_warehouse_table_is_the_same_file(tmp_path) -> None:
    con = connect(tmp_path / "wh.duckdb")
    rows = con.execute(
        "select instance_type, gpu_count, normalization_factor, on_demand_usd_per_h, spot_usd_per_h, provider, region"
        " from ref_instance_types where instance_type not like 'ml.%' order by instance_type"
    ).fetchall()
    assert rows == sorted(
        (
            t.instance_type,
            t.gpu_count,
            t.normalization_factor,
            t.on_demand_usd_per_h,
            t.spot_usd_per_h,
            t.provider,
            t.region,
        )
        for t in instance_types()
    )
    # SageMaker's ml.* twins: one per AWS type, with the EC2 shape's GPUs and no catalogue price.
    twins = con.execute(
        "select m.instance_type, m.gpu_count = e.gpu_count, m.on_demand_usd_per_h"
        " from ref_instance_types m join ref_instance_types e on m.instance_type = 'ml.' || e.instance_type"
    ).fetchall()
    aws = [t.instance_type for t in instance_types() if t.provider == "aws"]
    assert sorted(t for t, _, _ in twins) == sorted("ml." + a for a in aws)
    assert {(same, price) for _, same, price in twins} == {(True, None)}


def test_spot_advice_snapshot() -> None:
    east = spot_advice("us-east-1")
    # us-east-1,p4d.24xlarge,67,2 and us-west-2,p5.48xlarge,46,1 in the file.
    assert (east["p4d.24xlarge"].savings_pct, east["p4d.24xlarge"].interruption_bucket) == (67, 2)
    assert east["p4d.24xlarge"].monthly_interruption_fraction == 0.125
    assert spot_advice("us-west-2")["p5.48xlarge"].monthly_interruption_fraction == 0.075
    assert spot_advice("mars-north-1") == {}
    with reference.DATA_DIR.joinpath("spot_advisor_gpu.csv").open() as f:
        east_rows = sum(1 for row in csv.DictReader(f) if row["region"] == "us-east-1")
    assert len(east) == east_rows == 56


def test_focus_columns() -> None:
    columns = focus_columns()
    assert len(columns) == 57
    assert columns[:3] == ("AvailabilityZone", "BilledCost", "BillingAccountId")
    assert {"EffectiveCost", "ChargePeriodStart", "Tags"} <= set(columns)
    assert len(set(columns)) == len(columns)


def test_vocabularies() -> None:
    assert CENSORED_STATES < set(JOB_STATES)
    assert set(JOB_STATES) - CENSORED_STATES == {"completed", "failed"}
    assert reference.BILLING_PRICING_MODELS[:4] == reference.JOB_PRICING_MODELS
    # 11 S3 classes, 7 EBS volume types, and the snapshot tier 'archive' ('standard' is both).
    assert len(STORAGE_CLASSES) == 11 + 7 + 1 == len(set(STORAGE_CLASSES))
    assert reference.HOURS_PER_MONTH * 12 == reference.HOURS_PER_YEAR


def test_storage_prices_and_rules() -> None:
    from athanor.reference.storage import DEFAULT_PRICES, GIB, STANDARD_IA

    assert DEFAULT_PRICES.storage_gb_month("STANDARD") == 0.023
    assert DEFAULT_PRICES.storage_gb_month(STANDARD_IA) == 0.0125
    assert DEFAULT_PRICES.storage_gb_month("ONEZONE_IA") == 0.0125
    assert (DEFAULT_PRICES.min_days("DEEP_ARCHIVE"), DEFAULT_PRICES.min_days("STANDARD")) == (180, 0)
    assert DEFAULT_PRICES.ebs_volume_gb_month("gp3") == 0.08
    assert DEFAULT_PRICES.ebs_volume_gb_month("unknown") == 0.08  # priced as gp3
    # every EBS volume type of the vocabulary has a price
    assert set(DEFAULT_PRICES.ebs_gb_month) == set(reference.EBS_VOLUME_TYPES)
    assert GIB == 1_073_741_824


@pytest.mark.slow
def test_azure_and_gcp_billing_lines_get_gpus_from_the_catalogue(tmp_path) -> None:
    from athanor.ingest.billing import ingest_billing

    azure = tmp_path / "azure.csv"
    header = ("BillingAccountId,BillingPeriodStartDate,BillingPeriodEndDate,SubscriptionId,Date,MeterCategory,"
              "Quantity,UnitOfMeasure,Cost,PayGPrice,UnitPrice,BillingCurrency,ResourceLocation,ConsumedService,"
              "AdditionalInfo,ChargeType,Frequency,PricingModel")  # fmt: skip
    row = ('8611537,09/01/2023,09/30/2023,sub-1,09/04/2023,Virtual Machines,10,1 Hour,271.97,27.197,27.197,USD,'
           'EastUS,Microsoft.Compute,"{""ServiceType"":""Standard_ND96asr_v4""}",Usage,UsageBased,OnDemand')  # fmt: skip
    azure.write_text(header + "\n" + row + "\n")
    gcp = Path(__file__).resolve().parents[1] / "fixtures" / "billing" / "gcp" / "billing-export-202311.jsonl"
    with connect(tmp_path / "wh.duckdb") as con:
        ingest_billing(con, [azure])
        ingest_billing(con, [gcp])
        got = con.execute(
            "select distinct x_instance_type, x_instance_family, x_gpu_count, x_gpu_model from billing_facts"
            " where x_instance_type is not null order by 1"
        ).fetchall()
        # The GCP fixture's A100 line meters 3,600 GPU-seconds on a2-highgpu-1g: one instance-hour.
        gcp_hours = con.execute(
            "select sum(x_usage_hours) from billing_facts where x_instance_type = 'a2-highgpu-1g'"
        ).fetchone()[0]
    assert got == [
        ("Standard_ND96asr_v4", "NDasr_A100_v4", 8, "A100-40GB"),
        ("a2-highgpu-1g", "a2-highgpu", 1, "A100-40GB"),
    ]
    assert gcp_hours == 1
