"""Recorded price files (tests/fixtures/prices, the providers' own formats) read by
athanor.reference.price_files into commitment-rate rows, and the optimiser pricing with them.

The published figures are written out here by hand from the files (see their README) and the
arithmetic of each effective rate is shown beside it.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from athanor.recommend import nightly
from athanor.reference import price_files
from athanor.reference.commitment_rates import load_commitment_rates, unit_rates

PRICES = Path(__file__).parents[1] / "fixtures" / "prices"
AWS_FILES = [PRICES / "aws_ec2_offer_us-east-1.json", PRICES / "aws_savings_plans_us-east-1.json"]
AZURE_FILES = [PRICES / "azure_retail_prices_eastus.json"]
AWS_RI_FILES = [PRICES / "aws_ec2_reserved_us-east-1.json"]
AS_OF = date(2026, 9, 27)
RI_AS_OF = date(2025, 11, 30)


def _key(r) -> tuple:
    return (r.provider, r.instance_type, r.region, r.offer, r.term_months, r.payment_option)


def test_the_recorded_aws_files_give_the_published_savings_plan_rates() -> None:
    got = price_files.rates_from_files(AWS_FILES, "aws_price_list_2026_09", AS_OF)
    assert got.problems == []
    rates = {_key(r): (r.effective_usd_per_h, r.on_demand_usd_per_h) for r in got.rates}
    assert rates == {
        ("aws", "p4de.24xlarge", "us-east-1", "ec2_instance_sp", 12, "no_upfront"): (17.40137, 27.44705),
        ("aws", "p4de.24xlarge", "us-east-1", "ec2_instance_sp", 36, "no_upfront"): (11.71777, 27.44705),
        ("aws", "p5.48xlarge", "us-east-1", "ec2_instance_sp", 12, "no_upfront"): (34.6752, 55.04),
        ("aws", "p5.48xlarge", "us-east-1", "ec2_instance_sp", 36, "no_upfront"): (23.77728, 55.04),
        ("aws", "p5en.48xlarge", "us-east-1", "ec2_instance_sp", 12, "no_upfront"): (39.87648, 63.296),
        ("aws", "p5en.48xlarge", "us-east-1", "ec2_instance_sp", 36, "no_upfront"): (27.34387, 63.296),
        # p6-b200: AWS publishes no 1-year Instance plan for it; the 1-year rate is a Compute plan's.
        ("aws", "p6-b200.48xlarge", "us-east-1", "compute_sp", 12, "no_upfront"): (89.72208, 113.9328),
        ("aws", "p6-b200.48xlarge", "us-east-1", "ec2_instance_sp", 36, "no_upfront"): (49.21897, 113.9328),
    }
    # p4d.24xlarge has an on-demand rate in the offer file but no savings plan figure in this copy.
    assert got.on_demand[("aws", "p4d.24xlarge", "us-east-1")] == 21.957642


def test_the_recorded_reserved_instance_file_gives_standard_and_convertible_rates() -> None:
    got = price_files.rates_from_files(AWS_RI_FILES, "vantage_ec2_ri_2025_11", RI_AS_OF)
    assert got.problems == []
    rates = {_key(r)[1:5]: (r.effective_usd_per_h, r.on_demand_usd_per_h) for r in got.rates}
    # No Upfront: the hourly fee is the whole rate.
    assert {k: v for k, v in rates.items() if k[0] == "p4d.24xlarge"} == {
        ("p4d.24xlarge", "us-east-1", "standard_ri", 12): (13.921094, 21.957642),
        ("p4d.24xlarge", "us-east-1", "standard_ri", 36): (9.374219, 21.957642),
        ("p4d.24xlarge", "us-east-1", "convertible_ri", 12): (16.705312, 21.957642),
        ("p4d.24xlarge", "us-east-1", "convertible_ri", 36): (14.998754, 21.957642),
    }
    # p5.48xlarge has no 1-year Standard RI in the copy; its 3-year Standard RI is the 3-year
    # EC2 Instance Savings Plan rate of the 2026-09 file to the cent (23.77728).
    assert {k[2:]: v[0] for k, v in rates.items() if k[0] == "p5.48xlarge"} == {
        ("standard_ri", 36): 23.77728,
        ("convertible_ri", 12): 43.344,
        ("convertible_ri", 36): 40.42138,
    }
    assert {r.payment_option for r in got.rates} == {"no_upfront"}
    assert not {"p5en.48xlarge", "p6-b200.48xlarge", "p3.2xlarge"} & {r.instance_type for r in got.rates}


def test_the_recorded_azure_page_gives_reservations_per_hour_of_the_term() -> None:
    got = price_files.rates_from_files(AZURE_FILES, "azure_retail_prices_2026_09", AS_OF)
    assert got.problems == []  # the 5-year reservation is skipped, not a problem
    rates = {_key(r)[1:5]: r.effective_usd_per_h for r in got.rates}
    assert rates == {
        ("Standard_ND96amsr_A100_v4", "eastus", "azure_reservation", 12): round(
            183722 / 8760, 6
        ),  # 20.972831
        ("Standard_ND96amsr_A100_v4", "eastus", "azure_reservation", 36): round(
            378926 / 26280, 6
        ),  # 14.418798
        ("Standard_ND96isr_H100_v5", "eastus", "azure_reservation", 12): round(551221 / 8760, 6),  # 62.924772
        ("Standard_ND96isr_H100_v5", "eastus", "azure_reservation", 36): round(
            1134310 / 26280, 6
        ),  # 43.162481
    }
    assert {r.on_demand_usd_per_h for r in got.rates} == {32.77, 98.32}


def test_the_shipped_table_is_what_the_reader_builds_from_the_recorded_files() -> None:
    built = price_files.rates_from_files(AWS_FILES, "aws_price_list_2026_09", AS_OF).rates
    built += price_files.rates_from_files(AZURE_FILES, "azure_retail_prices_2026_09", AS_OF).rates
    built += price_files.rates_from_files(AWS_RI_FILES, "vantage_ec2_ri_2025_11", RI_AS_OF).rates
    shipped = [r for r in load_commitment_rates() if r.provider in ("aws", "azure")]
    assert sorted(shipped, key=_key) == sorted(built, key=_key)


def test_the_p5_and_p4d_us_east_1_rates_the_optimiser_uses_are_the_published_ones() -> None:
    # Done means (issue 31): p4d.24xlarge and p5.48xlarge, us-east-1, 1 and 3 years.
    ref = pd.DataFrame(
        {"instance_type": ["p4d.24xlarge", "p5.48xlarge", "Standard_ND96amsr_A100_v4"]},
        index=pd.Index(["p4d", "p5", "NDamsr_A100_v4"], name="instance_family"),
    )
    a = nightly.PricingAssumptions(commit_discount_1y=0.40, commit_discount_3y=0.60)
    pools = ["p4d/us-east-1", "p5/us-east-1", "NDamsr_A100_v4/eastus"]
    offers, labels = nightly.pool_offers(pools, ref, a)
    ratio = {p: {o.term_months: o.rate_ratio for o in offers[p]} for p in pools}
    # p5: 34.6752 / 55.04 = 0.63 and 23.77728 / 55.04 = 0.432, the recorded file's figures.
    doc = json.loads((PRICES / "aws_savings_plans_us-east-1.json").read_text())
    p5 = {t["leaseContractLength"]["duration"] * 12: float(t["rates"][0]["discountedRate"]["price"])
          for t in doc["terms"]["savingsPlan"] if t["rates"][0]["discountedUsageType"] == "BoxUsage:p5.48xlarge"}  # fmt: skip
    assert p5 == {12: 34.6752, 36: 23.77728}
    assert ratio["p5/us-east-1"] == {12: pytest.approx(p5[12] / 55.04), 36: pytest.approx(p5[36] / 55.04)}
    assert ratio["p5/us-east-1"] == {12: pytest.approx(0.63), 36: pytest.approx(0.432)}
    assert labels["p5/us-east-1"][12].startswith(
        "published rate, aws_price_list_2026_09, 2026-09-27: ec2_instance_sp"
    )
    # p4d: the recorded Reserved Instance file's Standard, No Upfront rates, the lowest unit offer:
    # 13.921094 / 21.957642 = 0.634 (1 year) and 9.374219 / 21.957642 = 0.427 (3 years).
    ri = json.loads(AWS_RI_FILES[0].read_text())
    p4d = {int(t["termAttributes"]["LeaseContractLength"][0]) * 12: float(d["pricePerUnit"]["USD"])
           for t in ri["terms"]["Reserved"]["H7NGEAC6UEHNTKSJ"].values()
           if t["termAttributes"]["OfferingClass"] == "standard"
           for d in t["priceDimensions"].values() if d["unit"] == "Hrs"}  # fmt: skip
    assert p4d == {12: 13.921094, 36: 9.374219}
    assert ratio["p4d/us-east-1"] == {
        12: pytest.approx(p4d[12] / 21.957642),
        36: pytest.approx(p4d[36] / 21.957642),
    }
    assert ratio["p4d/us-east-1"] == {12: pytest.approx(0.634, abs=5e-4), 36: pytest.approx(0.427, abs=5e-4)}
    assert labels["p4d/us-east-1"][12].startswith(
        "published rate, vantage_ec2_ri_2025_11, 2025-11-30: standard_ri"
    )
    assert labels["p4d/us-east-1"][36].startswith(
        "published rate, vantage_ec2_ri_2025_11, 2025-11-30: standard_ri"
    )
    # Azure ND A100 v4 (80 GB): 183722 / 8760 / 32.77 = 0.64; 378926 / 26280 / 32.77 = 0.44.
    assert ratio["NDamsr_A100_v4/eastus"] == {
        12: pytest.approx(183722 / 8760 / 32.77, abs=1e-6),
        36: pytest.approx(378926 / 26280 / 32.77, abs=1e-6),
    }
    assert labels["NDamsr_A100_v4/eastus"][36].startswith(
        "published rate, azure_retail_prices_2026_09, 2026-09-27"
    )


def test_reserved_terms_amortise_the_upfront_fee_and_query_api_items_read_alike() -> None:
    # Round test figures in the Price List Query API's shape (a PriceList of JSON strings).
    product = {"sku": "S1", "attributes": {"instanceType": "x.8xlarge", "regionCode": "us-east-1",
               "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA",
               "capacitystatus": "Used", "marketoption": "OnDemand", "licenseModel": "No License required"}}  # fmt: skip

    def dims(*pairs):
        return {f"d{i}": {"unit": u, "pricePerUnit": {"USD": str(v)}} for i, (u, v) in enumerate(pairs)}

    terms = {
        "OnDemand": {"S1.A": {"priceDimensions": dims(("Hrs", 10.0))}},
        "Reserved": {
            "S1.B": {"termAttributes": {"LeaseContractLength": "1yr", "OfferingClass": "standard",
                                        "PurchaseOption": "Partial Upfront"},
                     "priceDimensions": dims(("Quantity", 17520.0), ("Hrs", 3.0))},
            "S1.C": {"termAttributes": {"LeaseContractLength": "3yr", "OfferingClass": "convertible",
                                        "PurchaseOption": "All Upfront"},
                     "priceDimensions": dims(("Quantity", 105120.0), ("Hrs", 0.0))},
        },
    }  # fmt: skip
    windows = {**product, "sku": "S2", "attributes": {**product["attributes"], "operatingSystem": "Windows"}}
    doc = {"PriceList": [json.dumps({"product": product, "terms": terms}),
                         json.dumps({"product": windows, "terms": {"OnDemand": {"S2.A": {"priceDimensions": dims(("Hrs", 99.0))}}}})]}  # fmt: skip
    got = price_files.rates_from_documents([("query.json", doc)], "t", AS_OF)
    rates = {(r.offer, r.term_months, r.payment_option): r.effective_usd_per_h for r in got.rates}
    # 3 + 17520 / 8760 = 5.00; 105120 / 26280 = 4.00; the Windows product is not read.
    assert rates == {("standard_ri", 12, "partial_upfront"): 5.0, ("convertible_ri", 36, "all_upfront"): 4.0}
    assert got.on_demand == {("aws", "x.8xlarge", "us-east-1"): 10.0}


def test_a_rate_without_its_on_demand_price_is_named_and_the_rest_load() -> None:
    page = json.loads(AZURE_FILES[0].read_text())
    page["Items"] = [
        i for i in page["Items"] if not (i["type"] == "Consumption" and "H100" in i["armSkuName"])
    ]
    page["Items"].append({**page["Items"][0], "currencyCode": "EUR"})
    got = price_files.rates_from_documents([("page.json", page)], "t", AS_OF)
    assert {r.instance_type for r in got.rates} == {"Standard_ND96amsr_A100_v4"}
    words = [str(p) for p in got.problems]
    assert (
        "page.json item 7 (Standard_ND96amsr_A100_v4, eastus, Consumption, ): currencyCode must be USD"
        in words
    )
    assert sum("no on-demand rate of Standard_ND96isr_H100_v5 in eastus" in w for w in words) == 2


def test_sagemaker_savings_plan_rates_pair_with_sagemaker_on_demand(tmp_path: Path) -> None:
    # The Savings Plans reader keeps SageMaker's ml.* usage; round test figures.
    sp = {"products": [{"sku": "K", "productFamily": "SageMakerSavingsPlans",
                        "attributes": {"purchaseOption": "No Upfront", "purchaseTerm": "1yr"}}],
          "terms": {"savingsPlan": [{"sku": "K", "rates": [
              {"discountedUsageType": "USE1-Train:ml.p4d.24xlarge", "discountedServiceCode": "AmazonSageMaker",
               "discountedOperation": "RunInstance", "rateCode": "K.1",
               "discountedRate": {"price": "20.0", "currency": "USD"}},
              {"discountedUsageType": "USW2-BoxUsage:p5.48xlarge", "discountedServiceCode": "AmazonEC2",
               "discountedOperation": "RunInstances:0002", "rateCode": "K.2",
               "discountedRate": {"price": "1.0", "currency": "USD"}}]}]}}  # fmt: skip
    offer = {"products": {"M": {"sku": "M", "attributes": {
        "instanceType": "ml.p4d.24xlarge", "regionCode": "us-east-1", "operatingSystem": "Linux"}}},
        "terms": {"OnDemand": {"M": {"M.A": {"priceDimensions": {"x": {"unit": "Hrs", "pricePerUnit": {"USD": "25"}}}}}}}}  # fmt: skip
    got = price_files.rates_from_documents([("sp.json", sp), ("sm.json", offer)], "t", AS_OF)
    assert [(r.instance_type, r.offer, r.rate_ratio) for r in got.rates] == [
        ("ml.p4d.24xlarge", "sagemaker_sp", 0.8)
    ]


def test_written_rows_replace_their_own_and_keep_the_others(tmp_path: Path) -> None:
    path = tmp_path / "commitment_rates.csv"
    (tmp_path / "sources.csv").write_text("source_id,title,url,date,note\nt,x,,2026,\nold,x,,2025,\n")
    got = price_files.rates_from_files(AZURE_FILES, "t", AS_OF).rates
    assert price_files.write_commitment_rates(got, path) == 4
    assert price_files.write_commitment_rates(got[:1], path) == 4  # idempotent
    older = price_files.with_source(got[:1], "old")
    assert price_files.write_commitment_rates(older, path) == 5
    assert len(load_commitment_rates.__wrapped__(path)) == 5
    assert unit_rates("Standard_ND96amsr_A100_v4", "eastus", path=path)[12].effective_usd_per_h == 20.972831


def test_the_command_line_merges_the_files_rates_into_the_table(tmp_path: Path, capsys) -> None:
    out = tmp_path / "commitment_rates.csv"
    (tmp_path / "sources.csv").write_text(
        "source_id,title,url,date,note\nazure_retail_prices_2026_09,x,,2026,\n"
    )
    args = [
        str(AZURE_FILES[0]),
        "--source-id",
        "azure_retail_prices_2026_09",
        "--as-of",
        "2026-09-27",
        "--out",
        str(out),
    ]
    assert price_files.main(args) == 0
    assert capsys.readouterr().out == "4 rates from 1 files into commitment_rates.csv (4 rows)\n"
    shipped = sorted(
        (_key(r), r.effective_usd_per_h) for r in load_commitment_rates() if r.provider == "azure"
    )
    assert sorted((_key(r), r.effective_usd_per_h) for r in load_commitment_rates.__wrapped__(out)) == shipped
