"""The report's savings and labels: each action counted once, CSVs flat, lifecycle files per
bucket, the real backtest apart from the synthetic one, and words instead of codes."""

from __future__ import annotations

import csv
import json
from datetime import date, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

from athanor.publish.artifacts import MAX_CSV_CELL, recommendations_document, write_csvs, write_lifecycle
from athanor.publish.data import BacktestRow, CurrencySpend, Recommendation, ReportData, Spend, Windows
from athanor.publish.render import (
    backtest_chart,
    commitment_label,
    partial_week_days,
    render_html,
    spend_charts,
    week_label,
)
from athanor.warehouse import connect

AS_OF = date(2026, 11, 30)  # a Monday: the last week of the charts has one day
RULE = {"ID": "athanor-a-versions", "Status": "Enabled", "Filter": {"Prefix": "a/"}, "NoncurrentVersionExpiration": {"NoncurrentDays": 30}}  # fmt: skip


def _rec(
    kind: str, scope: str, saving: float | None, detail: dict[str, Any] | None = None, **extra
) -> Recommendation:
    values: dict[str, Any] = dict(
        kind=kind, scope=scope, action=f"{kind} {scope}", run_id="run-1", as_of=AS_OF,
        recommended_quantity=None, hourly_commitment=None, term_months=None, upfront_cost=None,
        recurring_monthly_cost=None, estimated_monthly_cost=None, current_monthly_cost=None,
        estimated_monthly_savings_amount=saving, estimated_savings_percentage=None,
        average_utilization=None, coverage=None, break_even_months=None, risk=None,
        assumptions={"long": "x" * 5_000}, detail=detail or {},
    )  # fmt: skip
    values.update(extra)
    return Recommendation(**values)


def _data(recommendations: list[Recommendation], backtest: list[BacktestRow] | None = None) -> ReportData:
    return ReportData(
        windows=Windows.for_day(AS_OF),
        run_id="run-1",
        spend=Spend(by_currency=(CurrencySpend("USD", 1000.0, 900.0, 3),), billing_through=None),
        recommendations=recommendations,
        backtest=backtest or [],
    )


# Parts and totals as the nightly run stores them: the mix (1,000) is spot 400 + one reservation
# 600; checkpoint storage (300) is a lifecycle prefix 100 + the EBS clean-up 200. Another GPU type
# and checkpointing price GPU-hours the mix already plans.
ROWS = [
    _rec("mix", "fleet", 1000.0, {"attribution": {"baseline": {"current_monthly_bill": 5000.0}}}),
    _rec("spot", "job classes", 400.0, {"part_of": "mix", "touches": ["p4d/us-east-1"], "billed_monthly_cost": 3000.0}),
    _rec("reserved_instances", "p5/us-east-1", 600.0, {"part_of": "mix"}),
    _rec("storage", "all buckets", 300.0, {"lifecycle_configurations": {"ckpt": {"Rules": [RULE]}, "idle": {"Rules": []}}, "blob": "y" * 600_000}),
    _rec("lifecycle", "s3://ckpt/a/", 100.0, {"bucket": "ckpt", "saving_basis": "capped at what the bill charged bucket ckpt"}),
    _rec("ebs", "EBS volumes and snapshots", 200.0, {"touches": [f"snap-{i}" for i in range(33)], "saving_basis": "estimate from inventory prices: the bill does not name snap-1"}),
    _rec("gpu_choice", "vision/foundation", 5000.0),
    _rec("checkpointing", "llm/p5", None),
]  # fmt: skip


def test_headline_is_the_sum_of_non_overlapping_actions() -> None:
    data = _data(ROWS)
    # 400 + 600 + 100 + 200: the totals (mix 1,000, storage 300) and the alternatives are not added.
    assert data.headline_saving == 1300.0
    assert [(r.kind, r.estimated_monthly_savings_amount) for r in data.top_actions] == [
        ("reserved_instances", 600.0),
        ("spot", 400.0),
        ("ebs", 200.0),
    ]
    # Each total is the sum of its parts, so the headline is also mix + storage.
    assert data.headline_saving == 1000.0 + 300.0
    summary = recommendations_document(data)["summary"]
    assert summary["monthly_savings_amount"] == 1300.0
    assert [a["part_of"] for a in summary["top_actions"]] == ["mix", "mix", "storage"]
    html = render_html(data)
    assert 'id="headline-saving">$1,300/mo' in html
    assert "from 4 actions, each counted once" in html
    assert "estimate</span>" in html  # the EBS figure is priced from inventory, and says so


def test_recommendations_csv_is_flat_and_readable(tmp_path: Path) -> None:
    write_csvs(_data(ROWS), tmp_path)
    with (tmp_path / "recommendations.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert "detail" not in rows[0] and "assumptions" not in rows[0]
    assert max(len(cell) for row in rows for cell in row.values()) <= MAX_CSV_CELL
    by_kind = {r["kind"]: r for r in rows}
    assert by_kind["ebs"]["touches"] == "33 resources (listed in recommendations.json)"
    assert (
        by_kind["spot"]["touches"] == "p4d/us-east-1" and by_kind["spot"]["billed_monthly_cost"] == "3000.0"
    )
    assert by_kind["lifecycle"]["part_of"] == "storage" and by_kind["mix"]["part_of"] == ""
    assert by_kind["reserved_instances"]["label"] == "Reserved instances"


def test_lifecycle_files_carry_each_buckets_rules(tmp_path: Path) -> None:
    paths = write_lifecycle(_data(ROWS), tmp_path)
    document = json.loads((tmp_path / "lifecycle.json").read_text())
    assert document["buckets"] == {"ckpt": {"Rules": [RULE]}}  # a bucket without a rule gets none
    assert json.loads((tmp_path / "lifecycle" / "ckpt.json").read_text()) == {"Rules": [RULE]}
    assert [p.name for p in paths] == ["lifecycle.json", "ckpt.json"]


def test_lifecycle_files_fall_back_to_the_prefixes_own_rules(tmp_path: Path) -> None:
    rows = [
        _rec(
            "lifecycle",
            "s3://ckpt/a/",
            100.0,
            {"bucket": "ckpt", "lifecycle_configuration": {"Rules": [RULE]}},
        )
    ]
    write_lifecycle(_data(rows), tmp_path)
    assert json.loads((tmp_path / "lifecycle" / "ckpt.json").read_text()) == {"Rules": [RULE]}


def _bt(scenario: str, policy: str, cost: float, months: int = 1) -> BacktestRow:
    return BacktestRow(scenario, policy, months, "2026-10", "2026-11", cost, 100.0, 0.0, 0.0)


def test_the_real_backtest_comes_first_and_synthetic_scenarios_say_so() -> None:
    rows = [
        _bt("synthetic:spiky", "athanor", 9_000.0, 10),
        _bt("synthetic:spiky", "on_demand", 12_000.0, 10),
        _bt("pool:p4d/us-east-1", "athanor", 80.0),
        _bt("pool:p4d/us-east-1", "on_demand", 100.0),
    ]
    data = _data([], rows)
    real, synthetic = backtest_chart(data), backtest_chart(data, synthetic=True)
    assert real is not None and synthetic is not None
    # The pools' chart counts the pools only: 80 and 100, never the synthetic thousands.
    assert "$80" in real.svg and "$9,000" not in real.svg and "1 pools, 1 scored month" in real.svg
    assert "Synthetic scenarios (generated demand, not your bill)" in synthetic.svg
    html = render_html(data)
    assert html.index('id="chart-backtest"') < html.index('id="chart-backtest-synthetic"')
    table = html[html.index('id="table-backtest"') :]
    assert table.index("pool:p4d/us-east-1") < table.index('<span class="synthetic">synthetic</span> spiky')


def test_every_chart_names_its_axes() -> None:
    data = _data([], [_bt("pool:p4d/us-east-1", "athanor", 80.0)])
    weekly = [SimpleNamespace(week=date(2026, 11, 23), currency="USD", dimension=d, label="x", cost=1.0) for d in ("pricing_category", "team", "instance_family", "service")]  # fmt: skip
    data = ReportData(**{**data.__dict__, "weekly_spend": weekly})
    for chart in [*spend_charts(data), backtest_chart(data)]:
        assert chart.svg.count('class="axis-title"') == 2, chart.id
    assert "Effective cost (USD)" in spend_charts(data)[0].svg


def test_labels_say_what_a_thing_is() -> None:
    assert week_label(date(2026, 11, 30), AS_OF) == "Nov 30 (1 day)"
    assert week_label(date(2026, 11, 23), AS_OF) == "Nov 23"
    assert week_label(date(2026, 11, 23), date(2026, 11, 25)) == "Nov 23 (3 days)"
    assert partial_week_days(_data([])) == 1
    sp = SimpleNamespace(
        commitment_discount_id="arn:aws:savingsplans::222222222222:savingsplan/4ce435c8-7d3e-8d30-a045-ee1c3428d29e",
        name="arn:aws:savingsplans::222222222222:savingsplan/4ce435c8-7d3e-8d30-a045-ee1c3428d29e",
        type="Savings Plan",
    )
    assert commitment_label(sp) == "Savings Plan 4ce435c8… (account 222222222222)"
    ri = SimpleNamespace(
        commitment_discount_id="arn:aws:ec2:...", name="2 x p4d.24xlarge RI", type="Reserved Instance"
    )
    assert commitment_label(ri) == "2 x p4d.24xlarge RI"
    assert [r.label for r in ROWS[:2]] == ["Fleet mix (total)", "Spot"]
    html = render_html(_data(ROWS))
    assert ">reserved_instances<" not in html and ">Reserved instances<" in html


def _line(con: duckdb.DuckDBPyConnection, row: int, cost: float, **cols: Any) -> None:
    values = {
        "load_id": "l1", "source_file": "f.csv", "source_row": row, "source_format": "focus",
        "billing_account_id": "acct", "billing_currency": "USD",
        "billing_period_start": datetime(2026, 11, 1), "billing_period_end": datetime(2026, 12, 1),
        "charge_period_start": datetime(2026, 11, 10), "charge_period_end": datetime(2026, 11, 11),
        "billed_cost": cost, "effective_cost": cost, **cols,
    }  # fmt: skip
    con.execute(
        f"insert into billing_facts ({', '.join(values)}) values ({', '.join('?' * len(values))})",
        list(values.values()),
    )


def test_weekly_spend_names_lines_that_are_no_instance_usage(tmp_path: Path) -> None:
    from athanor.publish import load_report_data

    con = connect(tmp_path / "w.duckdb")
    _line(con, 1, 100.0, charge_category="Usage", pricing_category="Standard", x_instance_family="p4d")
    _line(con, 2, 40.0, charge_category="Purchase")
    _line(con, 3, 6.25, charge_category="Tax")
    _line(con, 4, -10.0, charge_category="Credit")
    _line(con, 5, 23.0, charge_category="Usage", pricing_category="Standard", service_category="Storage")
    _line(con, 6, 9.0, charge_category="Usage", pricing_category="Standard", service_category="Networking")
    data = load_report_data(con, AS_OF, "run-1")
    con.close()
    labels = {(r.dimension, r.label): r.cost for r in data.weekly_spend}
    assert labels[("pricing_category", "Commitment purchases")] == 40.0
    assert labels[("pricing_category", "Tax")] == 6.25
    assert labels[("pricing_category", "Credits")] == -10.0
    assert labels[("instance_family", "Tax and credits")] == pytest.approx(-3.75)
    assert labels[("instance_family", "Commitment fees")] == 40.0
    assert labels[("instance_family", "Storage")] == 23.0
    assert labels[("instance_family", "Data transfer")] == 9.0
    assert not any(label in ("Unknown", "(not an instance)") for _, label in labels)
