"""The savings Athanor publishes add up and stay within the bill: the mix's parts sum to its
saving on one baseline, and a storage saving is never more than what the bill charged what it
touches (or says it is an estimate)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from athanor.recommend import attribution, mix, nightly
from athanor.recommend.commitments import CommitmentOffer, CommitPlan
from athanor.recommend.lifecycle import ebs_savings, prefix_savings, resource_key
from athanor.recommend.lifecycle.policy import CostTable, EbsAction, EbsPlan

POOL = "p4d/us-east-1"


def _plan(units: float, rate: float = 6.0) -> CommitPlan:
    return CommitPlan(
        commit_units=units, existing_units=0.0, term_months=12, payment_option="no_upfront", commit_rate=rate,
        on_demand_rate=10.0, expected_cost=0.0, on_demand_cost=0.0, savings=999.0, savings_pct=0.0,
        utilization=1.0, coverage=0.5, break_even_months=None, upfront_cost=0.0, recurring_hourly_cost=rate,
        hours=10,
    )  # fmt: skip


def _rec(hourly_commitment: float) -> mix.MixRecommendation:
    costs = mix.MixCosts(hours={}, dollars={}, on_demand_cost_usd=0.0)
    return mix.MixRecommendation(
        pools=[mix.PoolPlan(POOL, 10.0, 0.0, _plan(1.0), 8.0)],
        job_classes=[],
        hourly_commitment=hourly_commitment,
        savings_plan=None,
        costs=costs,
        current_monthly_bill_usd=15_000.0,
        expected_completion_rate=1.0,
        spot_completion_rate=None,
        sensitivity={},
    )


def test_the_mix_parts_are_steps_from_the_bill_and_add_up_to_its_saving() -> None:
    # 10 hours of 2 units/h at 10 $/h; one reserved unit at 6 $/h; a 3.6 $/h savings plan at a
    # 40 % discount (6 $/h a unit, so 0.6 units/h). A 10-hour window is 73 times a 730-hour month.
    window = pd.DataFrame({"hour": range(10), "pool": POOL, "units": 2.0, "on_demand_rate": 10.0})
    prices = mix.MixPrices(offers=(CommitmentOffer(12, rate_ratio=0.6),), sp_discount_by_pool={POOL: 0.4})
    parts = attribution.mix_parts(
        window,
        pd.DataFrame(columns=["job_class", "pool"]),
        _rec(3.6),
        current_bill_usd=15_000.0,
        billed_by_pool={POOL: 15_000.0},
        billed_by_option={"on_demand": 12_000.0, "spot": 3_000.0},
        existing_by_pool={},
        gpus_per_unit_by_pool={POOL: 8.0},
        prices=prices,
    )
    # No new purchase, no spot class: 2 x 10 x 10 = 200 a window -> 14,600 a month.
    # One reserved unit: 60 + 100 = 160 -> 11,680. The plan: 60 + 36 + 0.4 x 10 x 10 = 136 -> 9,928.
    assert [(p.kind, p.scope, round(p.saving_usd, 6)) for p in parts.parts] == [
        ("spot", "job classes", 15_000.0 - 14_600.0),
        ("reserved_instances", POOL, 14_600.0 - 11_680.0),
        ("savings_plan", "all pools", 11_680.0 - 9_928.0),
    ]
    assert parts.planned_usd == pytest.approx(9_928.0)
    assert parts.saving_usd == pytest.approx(15_000.0 - 9_928.0)  # 5,072: the parts add up exactly
    # Where the money goes: the bill by pricing model against the plan's dollars per option.
    by_option = parts.by_option
    assert by_option["reserved"] == {
        "current": 0.0,
        "planned": pytest.approx(4_380.0),
        "change": pytest.approx(-4_380.0),
    }
    assert by_option["savings_plan"]["planned"] == pytest.approx(2_628.0)  # 36 x 73
    assert by_option["on_demand"]["planned"] == pytest.approx(2_920.0)  # 40 x 73
    assert sum(o["change"] for o in by_option.values()) == pytest.approx(parts.saving_usd)


def _row(kind: str, scope: str, savings: float | None, detail: dict | None = None) -> tuple:
    return (
        kind,
        scope,
        "act",
        None,
        None,
        None,
        None,
        None,
        1.0,
        2.0,
        savings,
        3.0,
        None,
        None,
        None,
        "risk",
        detail or {},
    )


def test_the_stored_rows_carry_the_parts_and_the_mix_row_their_sum() -> None:
    parts = {
        "baseline": {"current_monthly_bill": 15_000.0},
        "billed_by_pool": {POOL: 15_000.0, "p5/us-east-1": 100.0},
        "parts": [
            {"kind": "spot", "scope": "job classes", "saving": 400.004, "pools": [POOL]},
            {"kind": "reserved_instances", "scope": POOL, "saving": 2_920.0, "pools": [POOL]},
            {
                "kind": "reserved_instances",
                "scope": "p5/us-east-1",
                "saving": 250.0,
                "pools": ["p5/us-east-1"],
            },
            {
                "kind": "savings_plan",
                "scope": "all pools",
                "saving": 1_752.0,
                "pools": [POOL, "p5/us-east-1"],
            },
        ],
    }
    rows = [
        _row("reserved_instances", POOL, 999.0),
        _row("reserved_instances", "p5/us-east-1", 300.0),
        _row("savings_plan", "all pools", 50.0),
        _row("checkpointing", "llm/p5", None),
        _row("mix", "fleet", 12_345.0),
    ]
    out = {(r[0], r[1]): r for r in nightly.attribute_mix(rows, parts, _rec(3.6))}
    # The spot part had no row (no spot class): one is added so the parts stay itemised.
    assert out[("spot", "job classes")][10] == 400.0
    ri = out[("reserved_instances", POOL)]
    assert (ri[9], ri[10], ri[8]) == (15_000.0, 2_920.0, 12_080.0)  # current = the pool's bill
    assert ri[16]["saving_vs_on_demand_over_term"] == 999.0 and ri[16]["part_of"] == "mix"
    # A part larger than the bill of the pools it touches is cut to that bill.
    capped = out[("reserved_instances", "p5/us-east-1")]
    assert capped[10] == 100.0 and "capped" in capped[16]["saving_basis"]
    assert out[("savings_plan", "all pools")][9] == 15_100.0
    assert out[("checkpointing", "llm/p5")][10] is None  # an alternative: untouched, not counted
    total = out[("mix", "fleet")]
    assert total[10] == 400.0 + 2_920.0 + 100.0 + 1_752.0  # 5,172.00, the parts to the cent
    assert (total[9], total[8]) == (15_000.0, 15_000.0 - 5_172.0)


def _prefix(bucket: str, prefix: str, before_month: float, after_month: float) -> SimpleNamespace:
    months = 12
    before = CostTable.zeros(months)
    before.storage += before_month
    after = CostTable.zeros(months)
    after.storage += after_month
    return SimpleNamespace(bucket=bucket, prefix=prefix, before=before, after=after)


def test_prefix_savings_share_their_bucket_bill() -> None:
    rec = SimpleNamespace(
        horizon_months=12,
        prefixes=[
            _prefix("ckpt", "a/", 300.0, 60.0),  # saves 240 a month at list prices
            _prefix("ckpt", "b/", 100.0, 20.0),  # saves 80
            _prefix("small", "c/", 50.0, 10.0),  # saves 40; its bucket was billed more
            _prefix("unbilled", "d/", 30.0, 5.0),  # the bill does not name this bucket
        ],
    )
    got = prefix_savings(rec, {"ckpt": 160.0, "small": 60.0})
    # ckpt: the policies remove 320 of its 400 priced (80 %); the bill charged 160, so they can
    # save at most 80 % of 160 = 128: both are scaled by 128 / 320.
    assert got[("ckpt", "a/")].saving_usd == pytest.approx(96.0)
    assert got[("ckpt", "b/")].saving_usd == pytest.approx(32.0)
    assert got[("ckpt", "a/")].capped and "capped" in got[("ckpt", "a/")].basis
    # small: 80 % of its 60 billed is 48, more than the 40 priced: the priced figure stands.
    assert got[("small", "c/")].saving_usd == pytest.approx(40.0) and not got[("small", "c/")].capped
    assert got[("small", "c/")].basis == "within what the bill charged bucket small"
    unbilled = got[("unbilled", "d/")]
    assert unbilled.saving_usd == pytest.approx(25.0) and unbilled.billed_usd is None
    assert unbilled.basis.startswith("estimate from inventory prices")


def test_ebs_savings_are_cut_to_each_resource_bill() -> None:
    plan = EbsPlan(
        actions=[
            EbsAction("delete-snapshot", "snap-1", 1000, 50.0, 0.0, "old"),
            EbsAction("snapshot-then-delete", "vol-1", 500, 40.0, 12.5, "unattached"),
            EbsAction("delete-snapshot", "snap-gone", 200, 10.0, 0.0, "old"),
        ],
        before=CostTable.zeros(12),
        after=CostTable.zeros(12),
    )
    billed = {"snap-1": 20.0, "vol-1": 40.5}
    got = {s.scope: s for s in ebs_savings(SimpleNamespace(ebs=plan), billed)}
    # Deleting a snapshot removes all of it: at most its whole bill (it was priced at its volume's size).
    assert got["snap-1"].saving_usd == 20.0 and got["snap-1"].capped
    # 27.5 of 40 priced (68.75 %) of a 40.5 bill is 27.84: the priced 27.5 stands.
    assert got["vol-1"].saving_usd == pytest.approx(27.5) and not got["vol-1"].capped
    cut = {s.scope: s for s in ebs_savings(SimpleNamespace(ebs=plan), {"vol-1": 30.0})}
    assert cut["vol-1"].saving_usd == pytest.approx(30.0 * 27.5 / 40.0)  # 20.625: the share of a smaller bill
    assert got["snap-gone"].saving_usd == 10.0 and got["snap-gone"].billed_usd is None


@pytest.mark.parametrize(
    ("resource_id", "key"),
    [
        ("arn:aws:s3:::demo-llm-checkpoints", "demo-llm-checkpoints"),
        ("arn:aws:ec2:us-east-1:200000000001:snapshot/snap-0abc", "snap-0abc"),
        ("vol-0abc", "vol-0abc"),
        ("demo-llm-checkpoints", "demo-llm-checkpoints"),
        ("", None),
    ],
)
def test_the_bill_and_the_inventories_name_a_resource_alike(resource_id: str, key: str | None) -> None:
    assert resource_key(resource_id) == key


def test_the_sql_cuts_resource_ids_as_python_does(tmp_path) -> None:
    from athanor.warehouse import connect, sql

    con = connect(tmp_path / "w.duckdb")
    ids = ["arn:aws:s3:::bucket-a", "arn:aws:ec2:us-east-1:1:snapshot/snap-9", "vol-7", "i-0abc"]
    for i, resource in enumerate(ids):
        con.execute(
            """insert into billing_facts (load_id, source_file, source_row, source_format, billing_account_id,
                   billing_currency, billing_period_start, billing_period_end, charge_period_start,
                   charge_period_end, charge_category, billed_cost, effective_cost, resource_id)
               values ('l', 'f', ?, 'focus', 'a', 'USD', '2026-11-01', '2026-12-01', '2026-11-10',
                   '2026-11-11', 'Usage', 1, ?, ?)""",
            [i, float(i + 1), resource],
        )
    rows = con.execute(
        sql("marts/billed_resources"), {"window_start": "2026-11-01", "window_end": "2026-12-01"}
    ).fetchall()
    assert {r: c for r, c, _ in rows} == {resource_key(x): float(i + 1) for i, x in enumerate(ids)}
    con.close()


def test_one_baseline_rewrites_the_what_ifs_against_todays_bill() -> None:
    rec = replace(
        _rec(0.0),
        current_monthly_bill_usd=1_000.0,
        sensitivity={
            "base": {"on_demand_monthly_cost": 2_000.0, "estimated_monthly_cost": 700.0},
            "demand_drops_20pct": {"on_demand_monthly_cost": 1_600.0, "estimated_monthly_cost": 650.0},
            "interruption_rates_double": {"on_demand_monthly_cost": 2_000.0, "estimated_monthly_cost": 760.0},
        },
    )
    text = "It saves $300 a month (30%). If demand falls 20% it still saves 59% against on-demand; if spot interruptions double, 62%."
    out = nightly.one_baseline(text, rec)
    # Demand -20 %: today's bill scaled to it is 800, the plan 650 -> 150 (19 %). Doubled: 1,000 - 760.
    assert out == (
        "It saves $300 a month (30%). Against today's bill scaled to the same demand: if demand falls 20%, "
        "the plan saves $150 a month (19% of that bill); if spot interruptions double, $240 a month "
        "(24% of that bill)."
    )
    assert "against on-demand" not in out
    assert np.isclose(0.19, 150 / 800, atol=0.005)
