"""Every cloud gets its commitment advice in its own words (issue 31, item 2): an Azure pool an Azure
reservation, a GCP pool a resource-based committed use discount, each cloud's pools their own
savings plan (GCP's GPUs none), from the one optimiser (athanor.recommend.mix, nightly, plan;
athanor.recommend.provider_offers).

The bills are built here, small and steady so the figures can be checked by hand: November 2026,
the planning window's 30 days (720 hours; the window is 30 days whatever the bill holds, so the
bill covers it: fewer days would leave the rest of the window's hours at zero demand), every hour
the same machines. A bill of fewer than 90 days gives 1-year terms only (plan.term_limits), and
demand is planned to fall 20 % a year (commitments.DEFAULT_ANNUAL_DEMAND_DECLINE), which the
expected utilisation shows, not the saving of the month measured.

The on-demand rate of a pool is the catalogue's, in the type's reference region (the same rate the
bills below charge); the commitment rates are recorded price files written by the tests.
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from datetime import date, datetime, timedelta
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from athanor.ingest.billing import ingest_billing
from athanor.recommend import attribution, mix, nightly, plan, provider_offers
from athanor.recommend.commitments import CommitmentOffer
from athanor.reference import commitment_rates, instance

AS_OF = date(2026, 11, 30)
HOURS = 720  # November: the planning window
MONTH = 730  # hours in a month, as AWS (and the mix) count it
HEADER = (
    "provider,instance_type,region,offer,term_months,payment_option,effective_usd_per_h,"
    "on_demand_usd_per_h,source_id,as_of\n"
)


def _rates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: str) -> None:
    """A recorded commitment price file the nightly pricing reads instead of the shipped one."""
    (tmp_path / "sources.csv").write_text("source_id,title,url,date,note\nfixture,test figures,,2026,\n")
    path = tmp_path / "commitment_rates.csv"
    path.write_text(HEADER + rows)
    monkeypatch.setattr(nightly, "unit_rates", partial(commitment_rates.unit_rates, path=path))


def _hours():
    start = datetime(2026, 11, 1)
    for h in range(HOURS):
        yield start + timedelta(hours=h), start + timedelta(hours=h + 1)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _azure_focus(path: Path, vms: list[tuple[str, str, str]]) -> Path:
    """A Microsoft FOCUS export: one Standard_ND96asr_v4 line per VM per hour in eastus, its size
    in x_SkuDetails (as Cost Management writes it). `vms`: (name, EffectiveCost, commitment id or
    '') per VM; a VM under a reservation is PricingCategory Committed, category Usage."""
    columns = [
        "BilledCost", "EffectiveCost", "ListCost", "BillingAccountId", "BillingCurrency",
        "BillingPeriodStart", "BillingPeriodEnd", "ChargeCategory", "ChargePeriodStart",
        "ChargePeriodEnd", "ChargeFrequency", "PricingCategory", "CommitmentDiscountId",
        "CommitmentDiscountCategory", "CommitmentDiscountType", "CommitmentDiscountStatus",
        "ConsumedQuantity", "ConsumedUnit", "ProviderName", "RegionId", "ServiceName",
        "ServiceCategory", "ResourceId", "SkuId", "x_SkuDetails", "Tags",
    ]  # fmt: skip
    list_price = str(instance("Standard_ND96asr_v4").on_demand_usd_per_h)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for start, end in _hours():
            for name, cost, commitment in vms:
                w.writerow([
                    "0" if commitment else cost, cost, list_price, "ea-1", "USD",
                    "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "Usage", _iso(start), _iso(end),
                    "Usage-Based", "Committed" if commitment else "Standard", commitment,
                    "Usage" if commitment else "", "Reservation" if commitment else "",
                    "Used" if commitment else "", "1", "Hours", "Microsoft", "eastus",
                    "Virtual Machines", "Compute",
                    f"/subscriptions/s1/resourceGroups/ml/providers/Microsoft.Compute/virtualMachines/{name}",
                    "DZH318Z0BQ4L", json.dumps({"ServiceType": "Standard_ND96asr_v4", "VCPUs": 96}), "{}",
                ])  # fmt: skip
    return path


def _steps(con) -> list[dict]:
    nightly.recommend_purchases(con, "r1", AS_OF, nightly.PricingAssumptions())
    plan.compose_plan(con, "r1", AS_OF)
    return plan.document(con, "r1")["steps"]


def _explanation(con) -> str:
    (detail,) = con.execute(
        "select detail from recommendations where run_id = 'r1' and kind = 'mix'"
    ).fetchone()
    return json.loads(detail)["explanation"]


@pytest.mark.slow
def test_an_azure_focus_bill_of_steady_nd_a100_v4_yields_an_azure_reservation_step(
    warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two Standard_ND96asr_v4 VMs every hour of November, on demand at the catalogue's eastus
    # rate p_od (27.197 $/h when written). A recorded 1-year Azure reservation at 17.68 $/h against
    # 27.20 $/h on demand: 0.65x, used for the pool whatever its bill charges.
    _rates(
        tmp_path,
        monkeypatch,
        "azure,Standard_ND96asr_v4,eastus,azure_reservation,12,no_upfront,17.68,27.20,fixture,2026-06-01\n"
        "azure,Standard_ND96asr_v4,eastus,azure_reservation,36,no_upfront,10.88,27.20,fixture,2026-06-01\n",
    )
    p_od = float(instance("Standard_ND96asr_v4").on_demand_usd_per_h)
    bill = _azure_focus(tmp_path / "focus-azure.csv", [("nd-0", str(p_od), ""), ("nd-1", str(p_od), "")])
    loaded = ingest_billing(warehouse, [bill], as_of=AS_OF)
    assert loaded.rows == 2 * HOURS
    # The size comes from x_SkuDetails: the lines join the catalogue's ND A100 v4 family.
    assert warehouse.execute(
        "select distinct x_instance_type, x_instance_family, region_id, x_pricing_model from billing_facts"
    ).fetchall() == [("Standard_ND96asr_v4", "NDasr_A100_v4", "eastus", "on_demand")]

    (step,) = _steps(warehouse)
    # Two VMs every hour at a reservation of 0.65x p_od: both pay (break-even 65 % of the hours,
    # used 100 %). The month saves 2 x p_od x (1 - 0.65) x 730 = 13,897.67 at 27.197 $/h; today's
    # bill, 2 x p_od x 730 = 39,707.62, is the chain's start, so that is the step's saving.
    assert step["kind"] == "reserved_instances" and step["scope"] == "NDasr_A100_v4/eastus"
    assert step["monthly_savings"] == pytest.approx(round(2 * p_od * 0.35 * MONTH, 2), abs=0.01)
    assert (step["provider"], step["offer"], step["offer_name"]) == (
        "azure",
        "azure_reservation",
        "Azure reservation",
    )
    assert step["action"].startswith(
        "Buy an Azure reservation (1-year, billed monthly) for 2 more Standard_ND96asr_v4 VMs in eastus: "
    )
    assert (step["units"], step["term_months"]) == (2.0, 12)
    assert step["term_rule"] == "1 year at most: the bill shows this pool for 30 days, fewer than 90"
    # The evidence: the recorded rate with its source and date.
    assert step["rates"].startswith("published rate, fixture, 2026-06-01: azure_reservation 12-month")
    # The facts every AWS step carries: payable over the term (2 x 0.65 p_od x 730 x 12), the
    # break-even utilisation, and the saving if demand falls 20 %: 1.6 VMs an hour leave 0.4 of
    # the second reservation idle, 1.6 x p_od - 2 x 0.65 x p_od = 0.3 p_od an hour.
    assert step["commitment_usd"] == pytest.approx(round(2 * 0.65 * p_od * MONTH * 12, 2), abs=0.01)
    assert step["break_even_utilization"] == pytest.approx(0.65)
    assert step["saving_if_demand_falls_20pct"] == pytest.approx(round(0.3 * p_od * MONTH, 2), abs=0.01)
    # Nothing is left for a savings plan; no AWS words anywhere, the mix's explanation included.
    assert "Reserve" not in step["action"] and "units" not in step["action"]
    explanation = _explanation(warehouse)
    assert explanation.startswith(
        "Buy an Azure reservation (1-year, billed monthly) for 2 more Standard_ND96asr_v4 VMs in eastus, "
    )
    assert "Commit to" not in explanation and "savings plan" not in explanation


@pytest.mark.slow
def test_an_azure_reservation_held_is_netted_as_an_aws_one_is(
    warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same two VMs, one of them under a reservation the bill shows (Committed / Usage, its
    # amortised 0.65 x p_od an hour). The purchase is sized net of it: 1 more VM.
    _rates(
        tmp_path,
        monkeypatch,
        "azure,Standard_ND96asr_v4,eastus,azure_reservation,12,no_upfront,17.68,27.20,fixture,2026-06-01\n",
    )
    p_od = float(instance("Standard_ND96asr_v4").on_demand_usd_per_h)
    held = "/providers/Microsoft.Capacity/reservationOrders/o1/reservations/r1"
    bill = _azure_focus(
        tmp_path / "focus-azure.csv", [("nd-0", str(p_od), ""), ("nd-1", str(round(0.65 * p_od, 6)), held)]
    )
    ingest_billing(warehouse, [bill], as_of=AS_OF)
    assert warehouse.execute(
        "select x_pricing_model, count(*) from billing_facts group by 1 order by 1"
    ).fetchall() == [("on_demand", HOURS), ("reserved", HOURS)]

    (step,) = [s for s in _steps(warehouse) if s["kind"] == "reserved_instances"]
    # One VM left on demand: one more reservation saves p_od x 0.35 x 730 (6,948.83 at 27.197).
    assert step["units"] == 1.0
    assert step["action"].startswith("Buy an Azure reservation (1-year, billed monthly) for 1 more ")
    assert step["monthly_savings"] == pytest.approx(round(p_od * 0.35 * MONTH, 2), abs=0.01)


CUD = "projects/ml-train/regions/us-central1/commitments/a100-1y"


def _gcp_export(path: Path, machines: int, covered: int = 0) -> Path:
    """A GCP billing export: each a2-highgpu-8g machine-hour in us-central1 as Google bills it,
    its 8 A100 GPUs (23.471264 $), 96 vCPUs (3.034656 $) and 680 GiB (2.881160 $) on three lines:
    29.38708 $ an hour, the catalogue's rate. The first `covered` machines are under a
    resource-based commitment: each line credited back in full (COMMITTED_USAGE_DISCOUNT)."""
    skus = [
        ("Nvidia Tesla A100 GPU running in Americas", 8 * 3600, "seconds", 23.471264),
        ("A2 Instance Core running in Americas", 96 * 3600, "seconds", 3.034656),
        ("A2 Instance Ram running in Americas", 680 * 3600, "gibibyte second", 2.881160),
    ]
    with path.open("w") as f:
        for start, end in _hours():
            for m in range(machines):
                for description, amount, unit, cost in skus:
                    row = {
                        "billing_account_id": "01A2B3-C4D5E6-F7G8H9",
                        "project": {"id": "ml-train", "name": "ML training"},
                        "location": {"location": "us-central1", "region": "us-central1"},
                        "invoice": {"month": "202611"},
                        "currency": "USD",
                        "usage_start_time": start.strftime("%Y-%m-%d %H:%M:%S UTC"),
                        "usage_end_time": end.strftime("%Y-%m-%d %H:%M:%S UTC"),
                        "labels": [],
                        "system_labels": [{"key": "compute.googleapis.com/machine_spec", "value": "a2-highgpu-8g"}],
                        "credits": [
                            {"name": "Committed use discount: A2", "full_name": "Committed use discount: A2",
                             "id": CUD, "type": "COMMITTED_USAGE_DISCOUNT", "amount": -cost}
                        ] if m < covered else [],
                        "cost_type": "regular",
                        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
                        "sku": {"id": description[:12], "description": description},
                        "usage": {"amount": amount, "unit": unit, "amount_in_pricing_units": 1.0, "pricing_unit": "hour"},
                        "cost": cost,
                        "cost_at_list": cost,
                        "resource": {"name": f"trainer-{m}"},
                    }  # fmt: skip
                    f.write(json.dumps(row) + "\n")
    return path


@pytest.mark.slow
def test_a_gcp_bill_of_steady_a2_highgpu_usage_yields_a_committed_use_step(
    warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two a2-highgpu-8g machines every hour of November in us-central1. The 1-year resource-based
    # CUD as published (cyclenerd_gcp_pricing_2025_03): 18.513656 $/h against 29.387080 on demand,
    # 0.63x.
    _rates(
        tmp_path,
        monkeypatch,
        "gcp,a2-highgpu-8g,us-central1,gcp_cud,12,no_upfront,18.513656,29.387080,fixture,2025-03-06\n"
        "gcp,a2-highgpu-8g,us-central1,gcp_cud,36,no_upfront,10.285667,29.387080,fixture,2025-03-06\n",
    )
    p_od = float(instance("a2-highgpu-8g").on_demand_usd_per_h)  # 29.38708 when written
    ingest_billing(warehouse, [_gcp_export(tmp_path / "gcp-2026-11.jsonl", 2)], as_of=AS_OF)
    # The GPU lines carry the machine-hours (8 GPU-hours are one machine-hour); the vCPU and memory
    # lines their share of the machine's cost: the pool's bill is 2 x 29.38708 x 720 = 42,317.40.
    hours, cost = warehouse.execute(
        "select sum(usage_hours), sum(effective_cost_usd) from billing_gpu_hourly"
    ).fetchone()
    assert (hours, float(cost)) == (2.0 * HOURS, pytest.approx(2 * 29.38708 * HOURS))

    steps = _steps(warehouse)
    (step,) = steps
    # 2 x (p_od - 0.63 p_od) x 730 = 15,875.20 at 29.38708 $/h; no spot step: the bill is the
    # machines' on-demand cost, as the mix prices them, so nothing else moves.
    ratio = 18.513656 / 29.387080
    assert step["kind"] == "reserved_instances" and step["scope"] == "a2-highgpu/us-central1"
    assert step["monthly_savings"] == pytest.approx(round(2 * p_od * (1 - ratio) * MONTH, 2), abs=0.01)
    assert (step["provider"], step["offer"]) == ("gcp", "gcp_cud")
    assert step["offer_name"] == "GCP committed use discount (resource-based)"
    assert step["action"].startswith(
        "Buy a GCP committed use discount (resource-based, 1-year, billed monthly) in us-central1 for 2 "
        "more a2-highgpu-8g machines (16 GPUs with their vCPUs and memory): "
    )
    assert step["rates"].startswith(
        "published rate, fixture, 2025-03-06: gcp_cud 12-month no_upfront $18.5137/h"
    )
    assert step["break_even_utilization"] == pytest.approx(round(ratio, 4))
    assert _explanation(warehouse).startswith("Buy a GCP committed use discount (resource-based, 1-year")
    # If demand falls 20 %: 1.6 machines an hour against 2 committed, 1.6 p_od - 2 x 0.63 p_od.
    assert step["saving_if_demand_falls_20pct"] == pytest.approx(
        round((1.6 - 2 * ratio) * p_od * MONTH, 2), abs=0.01
    )


def test_each_cloud_gets_its_own_savings_plan_and_gcp_none() -> None:
    # Three pools, 730 hours of flat demand, reservations at the on-demand price (never bought), demand not
    # declining: each cloud's savings plan covers its own pools in full, at 0.72x on demand.
    pools = {
        "p4d/us-east-1": (2.0, 10.0),
        "NDasr_A100_v4/eastus": (3.0, 20.0),
        "a2-highgpu/us-central1": (1.0, 30.0),
    }
    hours = pd.RangeIndex(MONTH, name="hour")
    demand = pd.concat(
        pd.DataFrame({"hour": hours, "pool": p, "units": np.full(MONTH, u), "on_demand_rate": r})
        for p, (u, r) in pools.items()
    )
    jobs = pd.DataFrame(
        [
            {"job_class": f"c/{p}", "pool": p, "gpu_hours": 1.0, "jobs": 1, "median_duration_h": 4.0,
             "p90_duration_h": 8.0, "instance_count": 1, "checkpoint_time_h": 0.05, "restart_time_h": 0.1,
             "deadline_slack": 2.0, "spot_rate": 0.3 * r, "on_demand_rate": r, "interruption_rate_per_h": 0.0,
             "interruptible": False}
            for p, (_, r) in pools.items()
        ]
    )  # fmt: skip
    providers = provider_offers.pool_providers(
        pools, {"p4d": "p4d.24xlarge", "NDasr_A100_v4": "Standard_ND96asr_v4", "a2-highgpu": "a2-highgpu-8g"}
    )
    assert providers == {
        "p4d/us-east-1": "aws",
        "NDasr_A100_v4/eastus": "azure",
        "a2-highgpu/us-central1": "gcp",
    }
    prices = provider_offers.by_cloud(
        mix.MixPrices(
            offers=(CommitmentOffer(12, "no_upfront", 1.0, 0.0),),
            sp_discount_by_pool=dict.fromkeys(pools, 0.28),
            annual_demand_decline=0.0,
        ),
        providers,
    )
    assert prices.sp_discount_by_pool == {"p4d/us-east-1": 0.28, "NDasr_A100_v4/eastus": 0.28}
    rec = mix.recommend_mix(demand, jobs, prices=prices, price_phase_policy=False)
    # AWS: 2 units x 10 $/h x 0.72 = 14.40 $/h; Azure: 3 x 20 x 0.72 = 43.20 $/h; GCP: none.
    assert {g: sp.hourly_commitment for g, sp in rec.savings_plans.items()} == {
        "aws": pytest.approx(14.4),
        "azure": pytest.approx(43.2),
    }
    assert rec.hourly_commitment == pytest.approx(57.6)
    parts = attribution.mix_parts(
        demand, jobs, rec,
        current_bill_usd=(2 * 10 + 3 * 20 + 30) * MONTH,
        billed_by_pool={p: u * r * MONTH for p, (u, r) in pools.items()},
        billed_by_option={"on_demand": (2 * 10 + 3 * 20 + 30) * MONTH},
        existing_by_pool={}, gpus_per_unit_by_pool={}, prices=prices,
    )  # fmt: skip
    # Each plan saves 28 % of its own pools' on-demand cost: 0.28 x 20 x 730 = 4,088 and
    # 0.28 x 60 x 730 = 12,264; the GCP pool stays on demand.
    assert [(p.kind, p.scope, p.pools, round(p.saving_usd, 2)) for p in parts.parts] == [
        ("spot", "job classes", tuple(sorted(pools)), 0.0),
        ("savings_plan", "all AWS pools", ("p4d/us-east-1",), 4088.0),
        ("savings_plan", "all Azure pools", ("NDasr_A100_v4/eastus",), 12264.0),
    ]
    assert provider_offers.savings_plan_action("azure", 43.2) == (
        "Buy an Azure savings plan for compute of $43.200/hour (1-year, billed monthly)"
    )
    assert provider_offers.savings_plan_action("aws", 14.4) == "Buy a compute savings plan of $14.400/hour"
    one = provider_offers.unit_action("aws", "p4de/us-east-1", 1, "p4de.24xlarge", 8, 12, "no_upfront")
    assert one == "Reserve 1 more p4de unit (1-year, no upfront) in us-east-1"
    # One plan in the fleet keeps the scope AWS fleets always had; an Azure plan alone beside AWS
    # pools a plan could cover is still 'all Azure pools'.
    assert provider_offers.savings_plan_scopes(["aws"]) == {"aws": "all pools"}
    azure_only = replace(rec, savings_plans={"azure": rec.savings_plans["azure"]}, hourly_commitment=43.2)
    assert provider_offers.plan_scopes(azure_only)["azure"] == "all Azure pools"


@pytest.mark.slow
def test_a_gcp_committed_use_discount_held_is_netted(
    warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same two machines, the first under a resource-based commitment its credits show: the
    # GPU line credited in full covers that machine's hours, so 1 machine is held and 1 more bought.
    _rates(
        tmp_path,
        monkeypatch,
        "gcp,a2-highgpu-8g,us-central1,gcp_cud,12,no_upfront,18.513656,29.387080,fixture,2025-03-06\n",
    )
    p_od = float(instance("a2-highgpu-8g").on_demand_usd_per_h)
    ingest_billing(warehouse, [_gcp_export(tmp_path / "gcp-2026-11.jsonl", 2, covered=1)], as_of=AS_OF)
    start, end = datetime(2026, 11, 1), datetime(2026, 12, 1)
    assert nightly.commitments_held(warehouse, start, end) == {
        "a2-highgpu/us-central1": [(pytest.approx(1.0), nightly.HOURS_PER_YEAR)]
    }
    (step,) = [s for s in _steps(warehouse) if s["kind"] == "reserved_instances"]
    assert step["units"] == 1.0
    assert step["action"].startswith(
        "Buy a GCP committed use discount (resource-based, 1-year, billed monthly) in us-central1 for 1 more"
    )
    # The one machine left on demand: p_od x (1 - 0.63) x 730 = 7,937.60 a month at 29.38708 $/h.
    ratio = 18.513656 / 29.387080
    assert step["monthly_savings"] == pytest.approx(round(p_od * (1 - ratio) * MONTH, 2), abs=0.01)


def test_the_report_names_another_clouds_commitment_in_its_words() -> None:
    from tests.unit.test_report_savings import _rec

    azure = _rec(
        "reserved_instances",
        "NDasr_A100_v4/eastus",
        1.0,
        {"commitment": {"provider": "azure", "offer_name": "Azure reservation"}},
    )
    gcp = _rec(
        "reserved_instances",
        "a2-highgpu/us-central1",
        1.0,
        {"commitment": {"provider": "gcp", "offer_name": "GCP committed use discount (resource-based)"}},
    )
    aws = _rec(
        "reserved_instances",
        "p4d/us-east-1",
        1.0,
        {"commitment": {"provider": "aws", "offer_name": "Reserved Instances"}},
    )
    plan_row = _rec(
        "savings_plan",
        "all Azure pools",
        1.0,
        {"commitment": {"provider": "azure", "offer_name": "Azure savings plan for compute"}},
    )
    assert [r.label for r in (azure, gcp, aws, plan_row)] == [
        "Azure reservation",
        "GCP committed use discount (resource-based)",
        "Reserved instances",  # AWS's label as it always was
        "Azure savings plan for compute",
    ]


@pytest.mark.slow
def test_an_azure_export_of_daily_lines_is_sized_as_its_hours(
    warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Azure exports a day per line: the two VMs as 60 lines of 24 hours. Each is spread over the
    # 24 hours it covers (sql/ingest/billing_gpu_hourly_lines.sql), so the pool holds 2 VMs every
    # hour, as the hourly bill does, and the same reservation follows; summed into midnight, 48
    # VM-hours in 1 hour of 24 would have bought none.
    _rates(
        tmp_path,
        monkeypatch,
        "azure,Standard_ND96asr_v4,eastus,azure_reservation,12,no_upfront,17.68,27.20,fixture,2026-06-01\n",
    )
    p_od = instance("Standard_ND96asr_v4").on_demand_usd_per_h
    columns = (
        "BilledCost,EffectiveCost,BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,"
        "ChargeCategory,ChargePeriodStart,ChargePeriodEnd,PricingCategory,ConsumedQuantity,ConsumedUnit,"
        "ProviderName,RegionId,ResourceId,x_SkuDetails\n"
    )
    rows = "".join(
        f"{24 * p_od},{24 * p_od},ea-1,USD,2026-11-01T00:00:00Z,2026-12-01T00:00:00Z,Usage,"
        f"2026-11-{d:02d}T00:00:00Z,{'2026-12-01' if d == 30 else f'2026-11-{d + 1:02d}'}T00:00:00Z,"
        f'Standard,24,Hours,Microsoft,eastus,nd-{vm},"{{""ServiceType"": ""Standard_ND96asr_v4""}}"\n'
        for d in range(1, 31)
        for vm in range(2)
    )
    (tmp_path / "focus-daily.csv").write_text(columns + rows)
    ingest_billing(warehouse, [tmp_path / "focus-daily.csv"], as_of=AS_OF)
    # 60 lines, 720 hours of 2 VM-hours each; the cost of each hour 2 x p_od, to the cent.
    assert warehouse.execute(
        "select count(*), min(usage_hours), max(usage_hours), sum(effective_cost_usd) from billing_gpu_hourly"
    ).fetchone() == (HOURS, 2.0, 2.0, 2 * 24 * 30 * p_od)
    (step,) = _steps(warehouse)
    assert (step["units"], step["provider"]) == (2.0, "azure")
    assert step["monthly_savings"] == pytest.approx(round(2 * float(p_od) * 0.35 * MONTH, 2), abs=0.01)


def test_a_commitment_names_the_offer_its_published_rate_came_from() -> None:
    rate = commitment_rates.CommitmentRate(
        "aws", "p5.48xlarge", "us-east-1", "ec2_instance_sp", 12, "no_upfront", 38.5, 55.0, "fixture", AS_OF
    )
    assert provider_offers.unit_offer("aws", "p5/us-east-1", rate.label()) == (
        "ec2_instance_sp",
        "EC2 Instance Savings Plan",
    )
    flat = "assumption: flat 40 % 1-year discount (0.60x on-demand, ...)"
    assert provider_offers.unit_offer("aws", "p4d/us-east-1", flat) == ("standard_ri", "Reserved Instances")
    assert provider_offers.unit_offer("aws", "ml.p4d/us-east-1", flat)[0] == "sagemaker_sp"
    assert provider_offers.unit_offer("azure", "NDasr_A100_v4/eastus", flat)[0] == "azure_reservation"
    assert provider_offers.unit_offer("gcp", "a2-highgpu/us-central1", None)[0] == "gcp_cud"


def test_aws_pools_keep_their_words(warehouse) -> None:
    # The p4d fleet of tests/unit/test_assumptions.py (3 p4d.24xlarge every hour of November in
    # us-west-2), its jobs not checkpointing, so none goes to spot: 3 units reserved, in the words
    # AWS rows always had, and the offer fields name AWS's Reserved Instances.
    from tests.unit.test_assumptions import _fill

    _fill(warehouse)
    warehouse.execute("update job_run_facts set checkpoint_interval_s = null")
    nightly.recommend_purchases(warehouse, "r1", AS_OF, nightly.PricingAssumptions(deadline_slack=2.0))
    action, detail = warehouse.execute(
        "select action, detail from recommendations where run_id = 'r1' and kind = 'reserved_instances'"
    ).fetchone()
    assert action.startswith("Reserve 3 more p4d units (1-year, no upfront) in us-west-2: expected ")
    facts = json.loads(detail)["commitment"]
    assert (facts["provider"], facts["offer"], facts["offer_name"]) == (
        "aws",
        "standard_ri",
        "Reserved Instances",
    )
    assert _explanation(warehouse).startswith("Commit to 3 p4d units for 1 year (no upfront), expected ")


@pytest.mark.slow
def test_a_fleet_on_aws_and_azure_buys_a_savings_plan_per_cloud(warehouse, tmp_path: Path) -> None:
    # The p4d fleet (3 an hour in us-west-2) and the two ND A100 v4 VMs (eastus), with
    # reservations at 0.90x on demand and savings plans at 0.70x: each cloud's plan takes what its
    # reservations leave, on its own pools. The nightly rows, the plan's steps and the chain
    # of savings name each in its cloud's words, and the steps add up to the mix's saving.
    from tests.unit.test_assumptions import _fill

    _fill(warehouse)
    warehouse.execute("update job_run_facts set checkpoint_interval_s = null")
    p_od = float(instance("Standard_ND96asr_v4").on_demand_usd_per_h)
    bill = _azure_focus(tmp_path / "focus-azure.csv", [("nd-0", str(p_od), ""), ("nd-1", str(p_od), "")])
    ingest_billing(warehouse, [bill], as_of=AS_OF)
    a = nightly.PricingAssumptions(
        deadline_slack=2.0, commit_discount_1y=0.1, commit_discount_3y=0.1, savings_plan_discount=0.3
    )
    nightly.recommend_purchases(warehouse, "r1", AS_OF, a)
    plan.compose_plan(warehouse, "r1", AS_OF)
    plans = [s for s in plan.document(warehouse, "r1")["steps"] if s["kind"] == "savings_plan"]
    assert [(s["scope"], s["provider"], s["offer"], s["offer_name"]) for s in plans] == [
        ("all AWS pools", "aws", "compute_sp", "compute savings plan"),
        ("all Azure pools", "azure", "azure_savings_plan", "Azure savings plan for compute"),
    ]
    assert plans[0]["action"].startswith("Buy a compute savings plan of $")
    assert plans[1]["action"].startswith("Buy an Azure savings plan for compute of $")
    assert plans[1]["action"].endswith("/hour (1-year, billed monthly)")
    assert plans[1]["rates"].endswith("not a published rate, applied to the Azure savings plan for compute")
    (detail, saving) = warehouse.execute(
        "select detail, estimated_monthly_savings_amount from recommendations where run_id = 'r1' and kind = 'mix'"
    ).fetchone()
    mix_detail = json.loads(detail)
    parts = mix_detail["attribution"]["parts"]
    assert [p["pools"] for p in parts if p["kind"] == "savings_plan"] == [
        ["p4d/us-west-2"],
        ["NDasr_A100_v4/eastus"],
    ]
    assert float(saving) == pytest.approx(sum(p["saving"] for p in parts), abs=0.01)
    # Each plan's $/h is the sum the fleet buys.
    hourly = {g: sp["hourly_commitment"] for g, sp in mix_detail["savings_plans"].items()}
    assert set(hourly) == {"aws", "azure"}
    assert mix_detail["hourly_commitment"] == pytest.approx(sum(hourly.values()))
