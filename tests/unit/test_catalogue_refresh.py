"""`athanor gpu-catalog --refresh` (issue 31, item 3): the price catalogue read again from the
AWS Price List, Azure Retail Prices and GCP Cloud Billing Catalog APIs, replayed from answers
recorded in each API's own shape (tests/fixtures/price_apis/day1, README there); no network.

Every expected figure is worked out by hand in the comments.
"""

from __future__ import annotations

import json
import urllib.error
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.cli import main
from athanor.reference import gpus, refresh

DAY1 = Path(__file__).resolve().parents[1] / "fixtures" / "price_apis" / "day1"
ON = date(2026, 12, 6)


@pytest.fixture
def catalogue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "catalogue"
    monkeypatch.setenv("ATHANOR_CATALOGUE", str(folder))
    return folder


def test_refresh_prints_what_changed_and_the_loaders_read_it(catalogue: Path) -> None:
    fetch = refresh.RecordedFetcher(DAY1)
    result = refresh.refresh(fetch, on=ON)
    lines = result.lines()
    # AWS: p4d's list price to the cent of the Price List (21.96 rounded before), a reserved term
    # and no capacity-block product in this answer.
    assert "changed: aws p4d.24xlarge us-east-1 on-demand: 21.96 -> 21.957642" in lines
    assert (
        "changed: aws p4d.24xlarge us-east-1 purchase options: on_demand;spot;capacity_block -> "
        "on_demand;spot;reservation" in lines
    )
    # p5.48xlarge: the Linux on-demand 55.04 unchanged (the Windows product at 57, the unused
    # capacity reservation and the Capacity Block product, both at $0.00, are not read as its
    # price); the Capacity Block product and a reserved term are options.
    assert (
        "changed: aws p5.48xlarge us-east-1 purchase options: on_demand;spot;capacity_block -> "
        "on_demand;spot;capacity_block;reservation" in lines
    )
    assert not any("p5.48xlarge us-east-1 on-demand" in line for line in lines)
    # The block rate is not in the Price List ($0.00 usage): p6-b200's stays AWS's page's 113.664.
    assert not any("capacity-block" in line for line in lines)
    # A region the API sells in and the catalogue lacked; one the answer no longer lists.
    assert "added: aws g4dn.xlarge eu-west-1 row (on_demand 0.587; on_demand;reservation)" in lines
    assert any(line.startswith("removed: aws p6-b200.48xlarge us-west-2 row") for line in lines)
    # Azure: MI300X had no price; the Linux pay-as-you-go and Spot meters (the Windows one, 52.416,
    # is not read); the H100 reservation term adds the option; a Low Priority meter is not spot.
    assert (
        "added: azure Standard_ND96isr_MI300X_v5 eastus row (on_demand 48, spot 14.4; on_demand;spot)"
        in lines
    )
    assert (
        "changed: azure Standard_ND96isr_H100_v5 eastus purchase options: on_demand -> on_demand;reservation"
        in lines
    )
    # GCP: a machine is its SKUs summed. a3-highgpu-8g on demand = 8 GPUs x 10.00 + 208 vCPU x
    # 0.033 + 1,872 GiB x 0.0044 = 80 + 6.864 + 8.2368 = 95.1008; spot 8 x 3 + 208 x 0.01 + 1,872 x
    # 0.0013 = 24 + 2.08 + 2.4336 = 28.5136. A 1-year GPU commitment SKU: it can be committed.
    assert "changed: gcp a3-highgpu-8g us-east4 on-demand: 87.83247 -> 95.1008" in lines
    assert "changed: gcp a3-highgpu-8g us-east4 spot: - -> 28.5136" in lines
    # a3-highgpu-1g: 10 + 26 x 0.033 + 234 x 0.0044 = 11.8876 on its SKUs, still not sold on demand.
    assert "changed: gcp a3-highgpu-1g us-east4 on-demand: 10.97906 -> 11.8876" in lines
    assert (
        "changed: gcp a3-highgpu-1g us-east4 purchase options: spot;flex_start -> spot;reservation;flex_start"
        in lines
    )
    # a3-highgpu-4g (no price before, spot or flex-start only): 4 x 10 + 104 x 0.033 + 936 x 0.0044
    # = 47.5504 on its SKUs, spot 4 x 3 + 104 x 0.01 + 936 x 0.0013 = 14.2568; a region it gains is
    # not sold on demand either.
    assert (
        "added: gcp a3-highgpu-4g europe-west4 row (on_demand 47.5504, spot 14.2568; spot;reservation)"
        in lines
    )
    assert lines[-1] == f"25 changed, 3 added, 6 removed; written to {catalogue / 'prices.csv'}"

    # The loaders now read the refreshed copy, with the fetch day and the API as source.
    assert gpus.prices_file() == catalogue / "prices.csv"
    mi300x = gpus.price("Standard_ND96isr_MI300X_v5")
    assert (mi300x.on_demand_usd_per_h, mi300x.spot_usd_per_h, mi300x.as_of) == (
        Decimal("48"),
        Decimal("14.4"),
        ON,
    )
    assert gpus.source(mi300x.on_demand_source).date == "2026-12-06"
    assert not gpus.price("a3-highgpu-1g").sold_on_demand
    assert gpus.price("p4d.24xlarge").region == "us-east-1"  # the reference region stays first
    assert str(gpus.price("p6-b200.48xlarge").capacity_block_usd_per_h) == "113.664"
    age = gpus.price_age(ON)
    assert age.refreshed and age.newest == ON

    # What was asked: every catalogued AWS type in one ANY_OF filter, Linux, shared tenancy; each
    # API's next page by its own token or link.
    aws = [req for api, req in fetch.requests if api == "aws_pricing"]
    assert [r["page"] for r in aws] == ["", "recorded-aws-page-2"]
    any_of = next(f for f in aws[0]["Filters"] if f["Type"] == "ANY_OF")
    assert any_of["Field"] == "instanceType" and "p6-b200.48xlarge" in any_of["Value"].split(",")
    assert {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"} in aws[0]["Filters"]
    azure = [req for api, req in fetch.requests if api == "azure_retail"]
    assert "armSkuName+eq+%27Standard_ND96isr_MI300X_v5%27" in azure[0]["url"]
    assert azure[1]["url"] == azure[1]["page"]  # NextPageLink as given
    gcp = [req for api, req in fetch.requests if api == "gcp_billing"]
    assert gcp[1]["url"].endswith("pageToken=recorded-gcp-page-2")


def test_a_second_refresh_with_the_same_answers_changes_nothing(catalogue: Path) -> None:
    refresh.refresh(refresh.RecordedFetcher(DAY1), on=ON)
    written = (catalogue / "prices.csv").read_bytes(), (catalogue / "prices.csv").stat().st_mtime_ns
    # A day later, the same answers: no row moves, so no date or source moves either.
    again = refresh.refresh(refresh.RecordedFetcher(DAY1), on=date(2026, 12, 7))
    assert again.changes == [] and again.written is None
    assert again.lines()[-1] == (
        "no price changed: 18 type x region rows checked, the catalogue is as the price APIs answer (nothing written)"
    )
    assert ((catalogue / "prices.csv").read_bytes(), (catalogue / "prices.csv").stat().st_mtime_ns) == written


def test_without_network_the_refresh_fails_in_one_line_and_writes_nothing(
    catalogue: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def offline(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(refresh.urllib.request, "urlopen", offline)
    assert main(["gpu-catalog", "--refresh", "--provider", "azure"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "error: cannot reach the Azure Retail Prices API: <urlopen error [Errno -3] Temporary failure in name "
        "resolution>; the catalogue is unchanged"
    ]
    assert not catalogue.exists()
    # A provider that answers and one that does not: still nothing written (all or nothing).
    assert main(["gpu-catalog", "--refresh", "--recorded", str(DAY1 / "missing")]) == 1
    assert not catalogue.exists()


def test_the_cli_replays_recorded_answers_twice(catalogue: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpu-catalog", "--refresh", "--recorded", str(DAY1)]) == 0
    first = capsys.readouterr().out.splitlines()
    assert first[-1].startswith("25 changed, 3 added, 6 removed")
    assert main(["gpu-catalog", "--refresh", "--recorded", str(DAY1)]) == 0
    assert (
        capsys.readouterr().out.splitlines()[-1].startswith("no price changed: 18 type x region rows checked")
    )
    # The catalogue lists the refreshed rows with their options and dates.
    assert main(["gpu-catalog", "--format", "json"]) == 0
    assert '"purchase_options": "on_demand;spot"' in capsys.readouterr().out


def test_the_network_fetcher_pages_the_aws_price_list_with_next_token(
    catalogue: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # boto3's own client, its answers stubbed (botocore Stubber): the request the refresh makes is
    # checked against the Price List API's model, NextToken included.
    import boto3
    from botocore.stub import ANY, Stubber

    client = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    pages = [json.loads((DAY1 / f"aws_pricing_{n}.json").read_text())["response"] for n in (1, 2)]
    with Stubber(client) as stub:
        stub.add_response(
            "get_products", pages[0], {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "Filters": ANY}
        )
        stub.add_response(
            "get_products",
            pages[1],
            {
                "ServiceCode": "AmazonEC2",
                "FormatVersion": "aws_v1",
                "Filters": ANY,
                "NextToken": "recorded-aws-page-2",
            },
        )
        monkeypatch.setattr(boto3, "client", lambda *a, **k: client)
        result = refresh.refresh(refresh.network_fetcher(), on=ON, providers=["aws"])
        stub.assert_no_pending_responses()
    assert "changed: aws p4d.24xlarge us-east-1 on-demand: 21.96 -> 21.957642" in result.lines()
