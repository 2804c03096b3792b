"""The demo generator: determinism, exact totals, how commitments and spot appear, job tails, restatement."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import math
import re
from collections import defaultdict
from dataclasses import replace
from datetime import date
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from athanor.demo import bench, bills
from athanor.demo import fleet as demo
from athanor.demo import jobs as demo_jobs
from athanor.demo.arrow import decimal_text
from athanor.demo.focus_format import FOCUS_COLUMNS, focus_table
from athanor.demo.lines import micro_to_str

# A small world (30 days, 2 months) for the tests that generate several times.
SMALL = demo.DemoConfig(end_date=date(2026, 11, 20), days=30)


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _focus_rows(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


def _dec(text: str) -> Decimal:
    return Decimal(text) if text else Decimal(0)


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The default demo (90 days, seed 7) as delivered on its end date."""
    root = tmp_path_factory.mktemp("landing")
    return root, demo.generate_landing(root)


def _file(summary: dict, kind: str, period: str) -> dict:
    return next(
        f
        for f in summary["files"]
        if f["kind"] == kind and f.get("billing_period", f.get("period")) == period
    )


# ----------------------------------------------------------------------------- determinism


@pytest.mark.slow
def test_same_config_gives_identical_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    first = demo.generate_landing(tmp_path / "a", SMALL)
    demo.generate_landing(tmp_path / "b", SMALL)
    demo.generate_landing(tmp_path / "c", replace(SMALL, seed=8))
    a, b, c = (_digests(tmp_path / name) for name in "abc")
    assert len(a) == len(first["files"]) == 2 * 2 + 2  # 2 payers x 2 months + 2 job files
    assert a == b
    assert a.keys() == c.keys()
    assert all(a[name] != c[name] for name in a)  # every file changes with the seed
    assert not list((tmp_path / "a").rglob(".tmp-*"))  # no temporary files left behind


# ----------------------------------------------------------------------------- totals


@pytest.mark.slow
def test_focus_file_totals_match_the_summary_exactly(landing: tuple[Path, dict]) -> None:
    root, summary = landing
    focus_files = [f for f in summary["files"] if f["kind"] == "focus-1.2"]
    assert [f["billing_period"] for f in focus_files] == ["2026-09", "2026-10", "2026-11"]
    for entry in focus_files:
        rows = _focus_rows(root / entry["path"])
        assert len(rows) == entry["rows"]
        assert list(rows[0]) == list(FOCUS_COLUMNS)
        for column, key in (
            ("BilledCost", "billed_cost"),
            ("EffectiveCost", "effective_cost"),
            ("ListCost", "list_cost"),
        ):
            assert sum(_dec(r[column]) for r in rows) == Decimal(entry[key]), (entry["path"], column)


@pytest.mark.slow
def test_cur2_file_totals_match_the_summary_to_the_cent(landing: tuple[Path, dict]) -> None:
    root, summary = landing
    cur_files = [f for f in summary["files"] if f["kind"] == "cur-2.0"]
    assert len(cur_files) == 3
    for entry in cur_files:
        table = pq.read_table(root / entry["path"])
        assert table.num_rows == entry["rows"]
        df = table.to_pandas()
        # The amortized-cost formula, written out independently of the writer.
        lt = df["line_item_line_item_type"]
        amortized = np.select(
            [
                lt == "SavingsPlanCoveredUsage",
                lt == "SavingsPlanRecurringFee",
                lt == "SavingsPlanNegation",
                lt == "DiscountedUsage",
                lt == "RIFee",
            ],
            [
                df["savings_plan_savings_plan_effective_cost"],
                df["savings_plan_total_commitment_to_date"] - df["savings_plan_used_commitment"],
                0.0,
                df["reservation_effective_cost"],
                df["reservation_unused_amortized_upfront_fee_for_billing_period"]
                + df["reservation_unused_recurring_fee"],
            ],
            default=df["line_item_unblended_cost"],
        )
        for values, key in (
            (df["line_item_unblended_cost"], "billed_cost"),
            (amortized, "effective_cost"),
            (df["pricing_public_on_demand_cost"], "list_cost"),
        ):
            total = Decimal(repr(math.fsum(values))).quantize(Decimal("0.01"))
            assert total == Decimal(entry[key]).quantize(Decimal("0.01")), (entry["path"], key)


@pytest.mark.slow
def test_both_writers_agree_on_billed_and_effective_cost(tmp_path: Path) -> None:
    """Same canonical lines: FOCUS BilledCost == CUR unblended, FOCUS EffectiveCost == CUR amortized."""
    lines = demo.billing_lines(demo.DemoConfig(), as_of=date(2026, 11, 5))
    october = lines.filter(pc.equal(lines.column("billing_period_start").cast(pa.int64()), 1_790_812_800))
    assert october.num_rows > 0  # 1_790_812_800 = 2026-10-01T00:00:00Z
    for payer in ("111111111111", "222222222222"):
        part = october.filter(pc.equal(october.column("payer_account_id"), payer))
        focus = bills.write_focus(part, tmp_path / f"{payer}.csv", "csv")
        cur = bills.write_cur2(part, tmp_path / f"{payer}.parquet", "parquet")
        assert focus.billed_micro == cur.billed_micro
        assert focus.effective_micro == cur.effective_micro  # October is a complete month
        # Spot and commitments make the amortized bill cheaper than on-demand prices.
        assert 0 < cur.effective_micro < cur.list_micro


# ----------------------------------------------------------------------------- commitments


def test_reserved_instance_hour_computed_by_hand(landing: tuple[Path, dict]) -> None:
    root, summary = landing
    rows = _focus_rows(root / _file(summary, "focus-1.2", "2026-10")["path"])
    used = [r for r in rows if r["CommitmentDiscountStatus"] == "Used"]
    full_hour = next(r for r in used if r["PricingQuantity"] == "1.0000000000")
    # 1-year No Upfront RI at 0.60 x 21.96 = 13.176 $/h effective; billed through the fee.
    assert full_hour["x_InstanceType"] == "p4d.24xlarge"
    assert full_hour["PricingCategory"] == "Committed"
    assert full_hour["CommitmentDiscountType"] == "Reserved Instance"
    assert full_hour["CommitmentDiscountCategory"] == "Usage"
    assert full_hour["CommitmentDiscountUnit"] == "Hours"
    assert full_hour["BilledCost"] == "0.000000"
    assert full_hour["EffectiveCost"] == "13.176000"
    assert full_hour["ListCost"] == "21.960000"

    # The monthly fee: 2 RIs x 744 hours (31 days) x 13.176 = 19,605.888 $, billed, not effective.
    purchase = [r for r in rows if r["ChargeCategory"] == "Purchase"]
    assert len(purchase) == 1
    assert purchase[0]["BilledCost"] == "19605.888000"
    assert purchase[0]["EffectiveCost"] == "0.000000"
    assert purchase[0]["PricingQuantity"] == "1488.0000000000"

    # Every hour, used + unused RI hours = 2 and their effective costs add up to 2 x 13.176.
    hours: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for r in rows:
        if r["CommitmentDiscountType"] == "Reserved Instance" and r["CommitmentDiscountStatus"]:
            hour = r["ChargePeriodStart"][:13]
            hours[hour][0] += _dec(r["CommitmentDiscountQuantity"])
            hours[hour][1] += _dec(r["EffectiveCost"])
    assert len(hours) == 744
    assert all(abs(q - 2) < Decimal("1e-8") and cost == Decimal("26.352") for q, cost in hours.values())
    # Over the month, the fee is fully amortised: sum of RI effective costs == the fee.
    assert sum(cost for _, cost in hours.values()) == Decimal("19605.888")


def test_savings_plan_rows_follow_cur2_conventions(landing: tuple[Path, dict]) -> None:
    root, summary = landing
    df = pq.read_table(root / _file(summary, "cur-2.0", "2026-10")["path"]).to_pandas()
    covered = df[df["line_item_line_item_type"] == "SavingsPlanCoveredUsage"]
    negation = df[df["line_item_line_item_type"] == "SavingsPlanNegation"]
    assert len(covered) == len(negation) > 0
    assert sorted(covered["line_item_resource_id"]) == sorted(negation["line_item_resource_id"])
    p5 = covered[(covered["line_item_usage_type"] == "USE1-BoxUsage:p5.48xlarge")]
    full = p5[p5["line_item_usage_amount"] == 1.0].iloc[0]
    assert full["line_item_unblended_cost"] == pytest.approx(55.04, abs=1e-9)
    assert full["savings_plan_savings_plan_rate"] == pytest.approx(35.2256, abs=1e-9)  # 0.64 x 55.04
    assert full["savings_plan_savings_plan_effective_cost"] == pytest.approx(35.2256, abs=1e-9)
    # A covered row and its negation cancel in unblended cost.
    assert math.fsum(covered["line_item_unblended_cost"]) + math.fsum(
        negation["line_item_unblended_cost"]
    ) == (pytest.approx(0.0, abs=1e-6))
    fees = df[df["line_item_line_item_type"] == "SavingsPlanRecurringFee"]
    assert len(fees) == 744 and (fees["line_item_unblended_cost"] == 40.0).all()
    # Each hour's used commitment is the sum of that hour's SP effective costs (to the micro-dollar).
    used = covered.groupby("line_item_usage_start_date")["savings_plan_savings_plan_effective_cost"].sum()
    hour = used.index[0]
    fee_row = fees[fees["line_item_usage_start_date"] == hour].iloc[0]
    assert fee_row["savings_plan_used_commitment"] == pytest.approx(used.iloc[0], abs=1e-6)
    assert (fees["savings_plan_used_commitment"] <= 40.0 + 1e-9).all()
    assert set(fees["savings_plan_offering_type"]) == {"ComputeSavingsPlans"}
    assert not (df["line_item_line_item_type"] == "UnusedCommitment").any()


def test_commitment_expiry_dates_follow_the_config(landing: tuple[Path, dict]) -> None:
    root, summary = landing
    rows = _focus_rows(root / _file(summary, "focus-1.2", "2026-11")["path"])
    df = pq.read_table(root / _file(summary, "cur-2.0", "2026-11")["path"]).to_pandas()
    # end_date 2026-11-30 + 61 days = 2027-01-30 (RI); + 152 days = 2027-05-01 (SP).
    assert set(df["savings_plan_end_time"].dropna()) == {"2027-05-01T00:00:00Z"}
    ri_rows = [r for r in rows if r["CommitmentDiscountType"] == "Reserved Instance"]
    assert {r["x_CommitmentDiscountEnd"] for r in ri_rows} == {"2027-01-30T00:00:00Z"}
    assert {r["x_CommitmentDiscountStart"] for r in ri_rows} == {"2026-01-30T00:00:00Z"}  # 1-year term
    assert {r["x_CommitmentDiscountEnd"] for r in rows if not r["CommitmentDiscountType"]} == {""}
    assert any(r["CommitmentDiscountStatus"] == "Unused" for r in rows)


# ----------------------------------------------------------------------------- spot and tags


def test_spot_lines_have_no_product_instance_type_and_a_spot_usage_type(landing: tuple[Path, dict]) -> None:
    root, summary = landing
    df = pq.read_table(root / _file(summary, "cur-2.0", "2026-11")["path"]).to_pandas()
    spot = df[df["pricing_term"] == "Spot"]
    assert len(spot) > 100
    assert spot["product_instance_type"].isna().all()
    assert spot["line_item_usage_type"].str.fullmatch(r"(USE1|USW2)-SpotUsage:[a-z0-9]+\.[0-9]*xlarge").all()
    assert (spot["line_item_unblended_cost"] < spot["pricing_public_on_demand_cost"]).all()
    on_demand = df[
        (df["line_item_line_item_type"] == "Usage") & df["line_item_usage_type"].str.contains("BoxUsage")
    ]
    assert on_demand["product_instance_type"].notna().all()

    rows = _focus_rows(root / _file(summary, "focus-1.2", "2026-11")["path"])
    dynamic = [r for r in rows if r["PricingCategory"] == "Dynamic"]
    assert dynamic and all("-SpotUsage:" in r["x_UsageType"] and r["x_InstanceType"] for r in dynamic)


def test_job_id_tag_missing_on_about_a_tenth_of_instance_lines(landing: tuple[Path, dict]) -> None:
    root, summary = landing
    rows = [
        r for f in ("2026-09", "2026-10") for r in _focus_rows(root / _file(summary, "focus-1.2", f)["path"])
    ]
    instance_rows = [json.loads(r["Tags"]) for r in rows if r["ResourceType"] == "Instance"]
    missing = sum("job_id" not in tags for tags in instance_rows) / len(instance_rows)
    assert 0.04 < missing < 0.2
    assert all(tags["team"] in ("vision", "speech") for tags in instance_rows)


# ----------------------------------------------------------------------------- jobs


def test_jobs_follow_the_job_run_schema_and_are_heavy_tailed() -> None:
    jobs = demo.generate_jobs()
    assert tuple(jobs.columns) == demo.JOB_COLUMNS
    assert 2000 <= len(jobs) <= 4000
    assert set(jobs["state"]) <= {"completed", "failed", "cancelled", "preempted", "running"}
    assert {"completed", "failed", "cancelled", "running"} <= set(jobs["state"])
    assert set(jobs["pricing_model"]) == {"on_demand", "spot", "reserved", "savings_plan"}
    assert jobs["job_id"].is_unique and jobs["job_id"].str.fullmatch(r"[a-z]+-[a-z0-9.-]+-\d{4}").all()
    assert (jobs.loc[jobs["state"] == "preempted", "pricing_model"] == "spot").all()
    assert (jobs.loc[jobs["restart_count"] > 0, "pricing_model"] == "spot").all()
    running = jobs["state"] == "running"
    assert jobs.loc[running, "end_time"].isna().all() and jobs.loc[~running, "end_time"].notna().all()

    started = jobs[jobs["start_time"].notna()]
    end = started["end_time"].fillna(pd.Timestamp("2026-12-01", tz="UTC"))
    hours = (end - started["start_time"]).dt.total_seconds() / 3600
    gpu_hours = hours * started["instance_count"] * started["gpus_per_instance"]
    long = hours > 48
    assert hours.quantile(0.99) / hours.median() > 20
    assert long.mean() < 0.05  # few jobs run over two days ...
    assert gpu_hours[long].sum() / gpu_hours.sum() > 0.4  # ... but they hold much of the GPU time
    # Fewer submissions at weekends.
    weekday = jobs["submit_time"].dt.day_of_week
    assert (weekday >= 5).sum() / 2 < (weekday < 5).sum() / 5 * 0.7


def test_jobs_csv_writes_empty_end_time_for_running_jobs(landing: tuple[Path, dict]) -> None:
    root, summary = landing
    jobs = pd.read_csv(root / "jobs" / "jobs-2026-11.csv", dtype=str, keep_default_na=False)
    assert tuple(jobs.columns) == demo.JOB_COLUMNS
    assert len(jobs) == _file(summary, "jobs", "2026-11")["rows"]
    running = jobs[jobs["state"] == "running"]
    assert len(running) > 0 and (running["end_time"] == "").all()
    assert jobs["submit_time"].str.fullmatch(r"2026-11-\d\dT\d\d:\d\d:\d\dZ").all()


# ----------------------------------------------------------------------------- restatement


@pytest.mark.slow
def test_current_month_grows_and_earlier_months_stay_identical(tmp_path: Path) -> None:
    early = demo.generate_landing(tmp_path / "d", SMALL, as_of=date(2026, 11, 10))
    late = demo.generate_landing(tmp_path / "d3", SMALL, as_of=date(2026, 11, 13))
    a, b = _digests(tmp_path / "d"), _digests(tmp_path / "d3")
    for name in a:
        if "billing" in name and "2026-10" in name:
            assert a[name] == b[name], name  # October is final in both deliveries
    for kind in ("focus-1.2", "cur-2.0"):
        before, after = _file(early, kind, "2026-11"), _file(late, kind, "2026-11")
        assert before["rows"] < after["rows"]
        assert not before["final"] and _file(early, kind, "2026-10")["final"]
    # The open month has no invoice id yet; the closed one has.
    open_rows = _focus_rows(tmp_path / "d" / _file(early, "focus-1.2", "2026-11")["path"])
    closed_rows = _focus_rows(tmp_path / "d" / _file(early, "focus-1.2", "2026-10")["path"])
    assert {r["InvoiceId"] for r in open_rows} == {""}
    assert "" not in {r["InvoiceId"] for r in closed_rows}
    # No usage after the cutoff (end of 2026-11-10); the RI fee covers the whole month.
    usage_ends = [r["ChargePeriodEnd"] for r in open_rows if r["ChargeCategory"] == "Usage"]
    assert max(usage_ends) <= "2026-11-11T00:00:00Z"


def test_as_of_outside_the_window_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside the demo window"):
        demo.generate_landing(tmp_path, SMALL, as_of=date(2026, 12, 1))


# ----------------------------------------------------------------------------- big files


@pytest.mark.parametrize("kind", ["cur2", "focus"])
@pytest.mark.slow
def test_streamed_synthetic_files_have_exact_rows_and_totals(tmp_path: Path, kind: str) -> None:
    n = 25_000
    if kind == "cur2":
        totals = bench.generate_cur2_rows(n, tmp_path / "x.parquet", seed=3, chunk_rows=10_000)
        again = bench.generate_cur2_rows(n, tmp_path / "y.parquet", seed=3, chunk_rows=10_000)
        df = pq.read_table(tmp_path / "x.parquet").to_pandas()
        billed = Decimal(repr(math.fsum(df["line_item_unblended_cost"])))
        assert pq.ParquetFile(tmp_path / "x.parquet").metadata.num_row_groups == 3
    else:
        totals = bench.generate_focus_rows(n, tmp_path / "x.csv.gz", seed=3, chunk_rows=10_000)
        again = bench.generate_focus_rows(n, tmp_path / "y.csv.gz", seed=3, chunk_rows=10_000)
        df = pd.read_csv(tmp_path / "x.csv.gz", dtype=str, keep_default_na=False)
        billed = sum(Decimal(v) for v in df["BilledCost"])
        assert list(df.columns) == list(FOCUS_COLUMNS)
    assert totals.rows == len(df) == n
    assert billed.quantize(Decimal("0.01")) == Decimal(micro_to_str(totals.billed_micro)).quantize(
        Decimal("0.01")
    )
    x, y = (tmp_path / f"x.{totals.fmt}").read_bytes(), (tmp_path / f"y.{totals.fmt}").read_bytes()
    assert x == y and totals == replace(again, path=totals.path)


def test_focus_parquet_keeps_exact_decimals(tmp_path: Path) -> None:
    lines = bench.synthetic_lines(1, 0, 2_000, 2_000, np.datetime64("2026-10-01"))
    totals = bills.write_focus(lines, tmp_path / "f.parquet", "parquet")
    table = pq.read_table(tmp_path / "f.parquet")
    assert table.schema.field("BilledCost").type == pa.decimal128(38, 6)
    assert sum(table.column("BilledCost").to_pylist()) == Decimal(micro_to_str(totals.billed_micro))


def test_tag_values_that_need_json_escaping_are_refused() -> None:
    lines = bench.synthetic_lines(1, 0, 3, 3, np.datetime64("2026-10-01"))
    bad = lines.set_column(
        lines.schema.get_field_index("tag_project"), "tag_project", pa.array(['a"b', "x", "y"])
    )
    with pytest.raises(ValueError, match="tag_project"):
        focus_table(bad)
    assert re.fullmatch(r"\{.*\}", focus_table(lines)[0].column("Tags")[0].as_py())


def test_fixed_decimal_text_matches_python_decimal() -> None:
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [rng.integers(-5_000_000, 5_000_000, 300), np.full(2000, 13_176_000), [0, -1, 10**15]]
    )
    valid = rng.random(len(values)) > 0.1
    text = decimal_text(values, valid, 6).to_pylist()
    expected = [
        f"{Decimal(int(v)).scaleb(-6):.6f}" if ok else None for v, ok in zip(values, valid, strict=True)
    ]
    assert text == expected  # e.g. -1 -> '-0.000001', 13176000 -> '13.176000'


def test_the_fleet_is_simulated_once_per_config_and_each_caller_gets_its_own_copy() -> None:
    cfg = demo.DemoConfig(days=5, seed=11)
    demo_jobs._simulated.cache_clear()
    first = demo_jobs.simulate(cfg)
    # One caller changing its fleet (in place) changes no other caller's.
    first.jobs.iloc[0, 0] = None
    first.segments["start_s"] = -1
    next(iter(first.restarts.values())).append(-1)
    second = demo_jobs.simulate(cfg)
    info = demo_jobs._simulated.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    # The copy is the simulation itself: the same as simulating again.
    fresh = demo_jobs._simulated.__wrapped__(cfg)
    assert len(fresh.jobs) > 0 and len(fresh.segments) > 0
    pd.testing.assert_frame_equal(second.jobs, fresh.jobs)
    pd.testing.assert_frame_equal(second.segments, fresh.segments)
    assert second.restarts == fresh.restarts
