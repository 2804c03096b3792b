"""SageMaker ml.* billing lines in GPU pools (issue 31, item 2): a CUR 2.0 line of
ml.p4d.24xlarge counts its GPUs (the EC2 shape's: 8 A100) in a pool of its own, ml.p4d/<region>,
priced at the bill's list rate, and the pool is offered a SageMaker Savings Plan, not an EC2
Reserved Instance or Compute Savings Plan (neither covers SageMaker)."""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from athanor.ingest.billing import ingest_billing
from athanor.recommend import nightly
from athanor.warehouse import connect

ROW = {
    "bill_payer_account_id": "111122223333",
    "bill_billing_period_start_date": "2026-11-01T00:00:00Z",
    "bill_billing_period_end_date": "2026-12-01T00:00:00Z",
    "line_item_usage_start_date": "2026-11-03T00:00:00Z",
    "line_item_usage_end_date": "2026-11-03T01:00:00Z",
    "line_item_currency_code": "USD",
    "line_item_line_item_type": "Usage",
    "line_item_product_code": "AmazonSageMaker",
    "line_item_usage_type": "USE1-Train:ml.p4d.24xlarge",
    "line_item_usage_amount": "1",
    "line_item_unblended_cost": "25.25",
    "pricing_public_on_demand_rate": "25.25",
    "pricing_unit": "Hrs",
    "product_instance_type": "ml.p4d.24xlarge",
    "product": '{"region": "us-east-1", "product_family": "ML Instance"}',
    "resource_tags": '{"user_team": "recsys"}',
    "reservation_reservation_a_r_n": "",
    "savings_plan_savings_plan_a_r_n": "",
}


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    c = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    yield c
    c.close()


def _cur(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.slow
def test_an_ml_p4d_line_lands_in_a_sagemaker_gpu_pool_of_8_a100(con, tmp_path: Path) -> None:
    rows = [
        ROW,
        {**ROW, "line_item_usage_start_date": "2026-11-03T01:00:00Z", "line_item_usage_end_date": "2026-11-03T02:00:00Z",
         "line_item_usage_amount": "2", "line_item_unblended_cost": "50.50"},  # two instances that hour
        # SageMaker's training volume is not an instance-hour.
        {**ROW, "line_item_usage_type": "USE1-Train:VolumeUsage.gp2", "product_instance_type": "",
         "line_item_usage_amount": "0.5", "line_item_unblended_cost": "0.07", "pricing_public_on_demand_rate": "0.14",
         "pricing_unit": "GB-Mo"},
        # The same shape on EC2 stays in the EC2 pool.
        {**ROW, "line_item_product_code": "AmazonEC2", "line_item_usage_type": "USE1-BoxUsage:p4d.24xlarge",
         "product_instance_type": "p4d.24xlarge", "line_item_unblended_cost": "21.96",
         "pricing_public_on_demand_rate": "21.96", "product": '{"region": "us-east-1", "product_family": "Compute Instance"}'},
    ]  # fmt: skip
    ingest_billing(con, [_cur(tmp_path / "cur.csv", rows)])
    facts = con.execute(
        "select x_instance_type, x_instance_family, x_gpu_count, x_gpu_model, x_usage_hours, x_pricing_model"
        " from billing_facts order by source_row"
    ).fetchall()
    assert facts[0] == ("ml.p4d.24xlarge", "ml.p4d", 8, "A100-40GB", 1, "on_demand")
    assert facts[1][4] == 2
    assert facts[2][4] is None  # the volume
    assert facts[3][:3] == ("p4d.24xlarge", "p4d", 8)

    nightly.build_demand_mart(con)
    pools = con.execute(
        "select pool, hour, units, on_demand_units, on_demand_rate_usd from mart_gpu_demand_hourly order by pool, hour"
    ).fetchall()
    # ml.p4d.24xlarge is its family's reference size: 1 instance-hour = 1 unit; the catalogue has
    # no SageMaker price, so the pool is priced at the bill's list cost per unit-hour: 25.25 / 1
    # and 50.50 / 2.
    assert [(p, h.hour, u, od, r) for p, h, u, od, r in pools] == [
        ("ml.p4d/us-east-1", 0, 1.0, 1.0, 25.25),
        ("ml.p4d/us-east-1", 1, 2.0, 2.0, 25.25),
        ("p4d/us-east-1", 0, 1.0, 1.0, 21.96),
    ]
    family = con.execute(
        "select gpu_count, reference_instance_type from ref_instance_families where instance_family = 'ml.p4d'"
    ).fetchone()
    assert family == (8, "ml.p4d.24xlarge")  # 8 A100 GPUs per pool unit
    gpu_hours = con.execute(
        "select sum(m.units * r.gpu_count) from mart_gpu_demand_hourly as m join ref_instance_families as r"
        " on r.instance_family = split_part(m.pool, '/', 1) where m.pool = 'ml.p4d/us-east-1'"
    ).fetchone()[0]
    assert gpu_hours == 24.0  # (1 + 2) instance-hours x 8 GPUs


def test_a_sagemaker_pool_is_offered_a_sagemaker_savings_plan() -> None:
    ref = pd.DataFrame(
        {"instance_type": ["ml.p4d.24xlarge", "p4d.24xlarge"]},
        index=pd.Index(["ml.p4d", "p4d"], name="instance_family"),
    )
    a = nightly.PricingAssumptions(commit_discount_1y=0.40, commit_discount_3y=0.60)
    offers, labels = nightly.pool_offers(["ml.p4d/us-east-1", "p4d/us-east-1"], ref, a)
    # No SageMaker Savings Plans rate was found for ml.p4d.24xlarge: the flat fallback, named as
    # a SageMaker Savings Plan and as an assumption.
    assert [o.rate_ratio for o in offers["ml.p4d/us-east-1"]] == [pytest.approx(0.60), pytest.approx(0.40)]
    assert labels["ml.p4d/us-east-1"][12].startswith(
        "assumption: flat 40 % 1-year SageMaker Savings Plan discount (0.60x on-demand"
    )
    assert "no published SageMaker Savings Plan rate" in labels["ml.p4d/us-east-1"][36]
    assert "SageMaker" not in labels["p4d/us-east-1"][12]
    assert nightly.is_sagemaker_pool("ml.p4d/us-east-1") and not nightly.is_sagemaker_pool("p4d/us-east-1")


def test_a_published_sagemaker_rate_prices_the_sagemaker_pool_and_not_the_ec2_one(
    tmp_path: Path, monkeypatch
) -> None:
    from functools import partial

    from athanor.reference import commitment_rates

    (tmp_path / "sources.csv").write_text("source_id,title,url,date,note\nfixture,test figures,,2026,\n")
    path = tmp_path / "commitment_rates.csv"
    path.write_text(
        "provider,instance_type,region,offer,term_months,payment_option,effective_usd_per_h,"
        "on_demand_usd_per_h,source_id,as_of\n"
        "aws,ml.p4d.24xlarge,us-east-1,sagemaker_sp,12,no_upfront,20.00,25.00,fixture,2026-06-01\n"
    )
    monkeypatch.setattr(nightly, "unit_rates", partial(commitment_rates.unit_rates, path=path))
    ref = pd.DataFrame({"instance_type": ["ml.p4d.24xlarge"]}, index=pd.Index(["ml.p4d"]))
    offers, labels = nightly.pool_offers(["ml.p4d/us-east-1"], ref, nightly.PricingAssumptions())
    assert offers["ml.p4d/us-east-1"][0].rate_ratio == pytest.approx(0.8)  # 20.00 / 25.00
    assert labels["ml.p4d/us-east-1"][12].startswith(
        "published rate, fixture, 2026-06-01: sagemaker_sp 12-month"
    )
