"""Published numbers say what they are: each billing currency apart, never added to another,
and every figure rounded in one place, so the same input gives byte-identical files."""

from __future__ import annotations

import csv
import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest

from athanor.publish import build_report, load_report_data
from athanor.publish.artifacts import (
    MONEY_DECIMALS,
    PERCENT_DECIMALS,
    SHARE_DECIMALS,
    decimals_for,
    published,
    recommendations_document,
    write_csvs,
)
from athanor.publish.data import CurrencySpend, Recommendation, ReportData, Spend, Windows
from athanor.warehouse import connect

AS_OF = date(2026, 11, 30)  # period [2026-11-01, 2026-12-01), previous [2026-10-02, 2026-11-01)


def _bill(
    con: duckdb.DuckDBPyConnection, row: int, account: str, currency: str, day: str, cost: str, **extra
) -> None:
    values = {
        "load_id": "l1",
        "source_file": f"{account}.csv",
        "source_row": row,
        "source_format": "focus",
        "billing_account_id": account,
        "billing_currency": currency,
        "billing_period_start": day[:8] + "01",
        "billing_period_end": day[:8] + "28",
        "charge_period_start": day,
        "charge_period_end": day + " 01:00",
        "charge_category": "Usage",
        "billed_cost": cost,
        "effective_cost": cost,
        "service_name": "Amazon Elastic Compute Cloud",
        "tags": {"team": "llm"},
        **extra,
    }
    con.execute(
        f"insert into billing_facts ({', '.join(values)}) values ({', '.join('?' * len(values))})",
        list(values.values()),
    )


def _commitment(identifier: str, status: str) -> dict[str, str]:
    return {
        "pricing_category": "Committed",
        "commitment_discount_id": identifier,
        "commitment_discount_name": identifier,
        "commitment_discount_category": "Usage",
        "commitment_discount_status": status,
    }


@pytest.fixture
def two_currencies(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """A USD account billed 390,104.00 this period (195,052.00 the one before) and a EUR
    account billed 10,000.00, both in the week of 2026-11-09, both tagged team=llm."""
    con = connect(tmp_path / "wh.duckdb")
    _bill(con, 1, "acct-us", "USD", "2026-11-10", "300000.00", pricing_category="Standard")
    _bill(con, 2, "acct-us", "USD", "2026-11-10", "80000.00", **_commitment("ri-us", "Used"))
    _bill(con, 3, "acct-us", "USD", "2026-11-10", "10104.00", **_commitment("ri-us", "Unused"))
    _bill(con, 4, "acct-us", "USD", "2026-10-15", "195052.00", pricing_category="Standard")
    _bill(con, 5, "acct-eu", "EUR", "2026-11-12", "8000.00", **_commitment("ri-eu", "Used"))
    _bill(con, 6, "acct-eu", "EUR", "2026-11-12", "2000.00", **_commitment("ri-eu", "Unused"))
    yield con
    con.close()


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_each_currency_is_shown_apart_and_none_is_added_to_another(
    two_currencies: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    data = load_report_data(two_currencies, AS_OF, "run-1")
    assert data.spend.by_currency == (
        CurrencySpend("EUR", 10_000.0, 0.0, 2),
        CurrencySpend("USD", 390_104.0, 195_052.0, 3),  # 300,000 + 80,000 + 10,104
    )
    # Utilisation is a ratio of money: per currency, 80,000 / 90,104 and 8,000 / 10,000.
    week = {w.currency: w.utilisation for w in data.commitment_weeks if w.week == date(2026, 11, 9)}
    assert week == {"USD": pytest.approx(80_000 / 90_104), "EUR": pytest.approx(0.8)}

    paths = build_report(two_currencies, AS_OF, tmp_path / "reports", "run-1")
    html = paths.html.read_text()
    tile = html.split('id="summary-spend">', 1)[1].split('id="summary-actions"', 1)[0]
    assert '<div class="big" data-currency="USD">$390,104</div>' in tile
    assert '<div class="big" data-currency="EUR">EUR 10,000</div>' in tile
    assert "+100.0 % vs previous 30 days ($195,052)" in tile
    assert "no EUR spend in the previous period" in tile
    assert "Billed in EUR, USD: each currency is shown apart, never added to another" in tile
    assert "400,104" not in html  # 390,104 USD + 10,000 EUR, the sum the report used to show
    for chart in ("chart-spend-team-usd", "chart-spend-team-eur"):
        assert f'id="{chart}"' in html

    document = json.loads(paths.recommendations_json.read_text())
    summary = document["summary"]
    assert (summary["spend_usd"], summary["previous_spend_usd"], summary["change_pct"]) == (
        390_104.0,
        195_052.0,
        100.0,
    )
    assert summary["spend_by_currency"] == [
        {"currency": "EUR", "cost": 10_000.0, "previous_cost": 0.0, "change_pct": None, "line_items": 2},
        {
            "currency": "USD",
            "cost": 390_104.0,
            "previous_cost": 195_052.0,
            "change_pct": 100.0,
            "line_items": 3,
        },
    ]
    assert "400104" not in paths.recommendations_json.read_text()

    weekly = _csv(paths.dated_dir / "spend_weekly.csv")
    team_week = {
        (r["currency"], r["label"]): r["cost"]
        for r in weekly
        if r["dimension"] == "team" and r["week"] == "2026-11-09"
    }
    assert team_week == {("USD", "llm"): "390104.0", ("EUR", "llm"): "10000.0"}
    for dimension in ("pricing_category", "team", "instance_family", "service"):
        totals: dict[str, float] = {}
        for r in weekly:
            if r["dimension"] == dimension:
                totals[r["currency"]] = totals.get(r["currency"], 0.0) + float(r["cost"])
        # This quarter's weeks: the October line too, in USD only.
        assert totals == {"USD": 585_156.0, "EUR": 10_000.0}, dimension

    commitments = {
        (r["commitment_discount_id"], r["currency"], r["used_cost"], r["unused_cost"], r["utilisation"])
        for r in _csv(paths.dated_dir / "commitments.csv")
    }
    assert commitments == {
        ("ri-us", "USD", "80000.0", "10104.0", "0.8879"),  # 80,000 / 90,104 = 0.88786...
        ("ri-eu", "EUR", "8000.0", "2000.0", "0.8"),
    }


# ------------------------------------------------------------------ rounding


def _fill_with_noise(con: duckdb.DuckDBPyConnection, x: float) -> None:
    """One recommendation, one duration fit and one backtest row whose figures all derive from
    `x`; called with 0.1 + 0.2 + 0.3 and with 0.3 + 0.2 + 0.1, the same sum in two orders
    (0.6000000000000001 and 0.6), as two runs of a recommender summing in parallel give."""
    detail = {"months": [{"monthly_usd": 1000 * x, "rate_per_h": x / 3600}], "spot_share": x}
    con.execute(
        """insert into recommendations (run_id, as_of, kind, scope, action, recommended_quantity, term_months,
               current_monthly_cost, estimated_monthly_cost, estimated_monthly_savings_amount,
               estimated_savings_percentage, average_utilization, coverage, break_even_months, risk,
               assumptions, detail)
           values ('run-1', ?, 'savings_plan', 'compute', 'Commit', ?, 12, 1000, 400, 600, ?, ?, ?, ?, 'low', ?, ?)""",
        [AS_OF, 10 * x, 100 * x, x, x, 20 * x, json.dumps({"on_demand_rate": 32 * x}), json.dumps(detail)],
    )
    con.execute(
        """insert into duration_fits (run_id, as_of, group_by, group_key, n, censored, family, params, aic, ks,
               ks_pvalue, p50_s, p90_s, p99_s, share_jobs_under_48h, share_gpu_hours_under_48h, record)
           values ('run-1', ?, 'all', 'all', 20, 4, 'lognormal', ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}')""",
        [
            AS_OF,
            json.dumps({"mu": 9 * x, "sigma": x}),
            1e4 * x,
            x / 10,
            x,
            3600 * x,
            36000 * x,
            360000 * x,
            x,
            x,
        ],
    )
    con.execute(
        """insert into backtests (run_id, as_of, scenario, policy, month, cost, on_demand_cost, savings_pct, regret_pct)
           values ('run-1', ?, 'demo:p4d', 'athanor', '2026-10', ?, 1000.0, ?, ?)""",
        [AS_OF, 1000 * x, 100 * (1 - x), x],
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_the_same_figures_summed_in_another_order_give_byte_identical_files(tmp_path: Path) -> None:
    one, other = 0.1 + 0.2 + 0.3, 0.3 + 0.2 + 0.1
    assert one != other  # the premise: float addition is not associative
    built = []
    for name, x in (("a", one), ("b", other)):
        con = connect(tmp_path / f"{name}.duckdb")
        try:
            _fill_with_noise(con, x)
            built.append(build_report(con, AS_OF, tmp_path / name, "run-1"))
        finally:
            con.close()
    first, second = (_files(p.dated_dir) for p in built)
    assert set(first) >= {"recommendations.json", "recommendations.csv", "duration_fits.csv", "backtest.csv"}
    assert {k for k in first if first[k] != second.get(k)} == set()
    rec = json.loads(first["recommendations.json"])["recommendations"][0]
    assert (rec["average_utilization"], rec["estimated_savings_percentage"], rec["break_even_months"]) == (
        0.6,
        60.0,
        12.0,
    )
    assert rec["detail"] == {
        "months": [{"monthly_usd": 600.0, "rate_per_h": 0.0001666666667}],
        "spot_share": 0.6,
    }


NOISY = 1 / 3  # 0.3333333333333333: 16 significant digits, more than any published figure keeps


def _noisy_data() -> ReportData:
    """A report whose every float has 16 significant digits, at every depth of the document."""
    money = 1234.5678 + NOISY / 1e4
    nested = {
        "on_demand_rate": 32 + NOISY,
        "monthly_usd": [money, 2 * money],
        "months": [{"storage": 10078.32 + NOISY / 1e6, "share_of_hours": NOISY}],
        "mus": [3 + NOISY, 7 + NOISY],
        "hours_per_month": 730.0 + NOISY / 1e3,
    }
    rec = Recommendation(
        kind="savings_plan",
        scope="compute",
        action="Commit",
        run_id="run-1",
        as_of=AS_OF,
        recommended_quantity=2 + NOISY,
        hourly_commitment=17.732 + NOISY / 1e8,
        term_months=12,
        upfront_cost=money,
        recurring_monthly_cost=money,
        estimated_monthly_cost=money,
        current_monthly_cost=money,
        estimated_monthly_savings_amount=money,
        estimated_savings_percentage=12 + NOISY,
        average_utilization=NOISY,
        coverage=NOISY,
        break_even_months=NOISY,
        risk=None,
        assumptions=nested,
        detail={"nested": nested, "pools": {"p4d/us-east-1": [NOISY, 2 * NOISY]}},
    )
    return ReportData(
        windows=Windows.for_day(AS_OF),
        run_id="run-1",
        spend=Spend(by_currency=(CurrencySpend("USD", money, money / 2, 3),), billing_through=None),
        recommendations=[rec],
    )


def _leaves(value: Any, name: str | None = None) -> list[tuple[str | None, float]]:
    if isinstance(value, float):
        return [(name, value)]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, k)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v, name)]
    return []


def test_every_float_of_the_document_is_rounded_by_what_it_measures() -> None:
    document = recommendations_document(_noisy_data())
    leaves = _leaves(document)
    assert len(leaves) >= 30
    for name, value in leaves:
        assert value == published(value, name), (name, value)  # already rounded: idempotent
        assert value == float(f"{value:.10g}"), (name, value)  # nothing keeps 16 digits
        decimals = decimals_for(name)
        if decimals is not None:
            assert value == round(value, decimals), (name, value)

    rec = document["recommendations"][0]
    # 1234.5678333...: money to the cent; 12.333...: percent to 2 decimals; 0.333...: shares to 4.
    assert rec["estimated_monthly_savings_amount"] == 1234.57
    assert rec["estimated_savings_percentage"] == 12.33
    assert (rec["average_utilization"], rec["coverage"]) == (0.3333, 0.3333)
    assert rec["hourly_commitment"] == 17.732  # $/h: 6 decimals
    assert rec["break_even_months"] == 0.3333333333  # no rule: 10 significant digits
    assert rec["assumptions"]["on_demand_rate"] == 32.333333  # ends in _rate: 6 decimals
    assert rec["assumptions"]["monthly_usd"] == [1234.57, 2469.14]  # a list takes its name's rule
    assert rec["assumptions"]["months"] == [{"storage": 10078.32, "share_of_hours": 0.3333}]  # share_: 4
    assert rec["detail"]["pools"] == {"p4d/us-east-1": [0.3333333333, 0.6666666667]}
    spend = document["summary"]["spend_by_currency"][0]
    assert (spend["cost"], spend["previous_cost"], spend["change_pct"]) == (1234.57, 617.28, 100.0)
    assert (MONEY_DECIMALS, PERCENT_DECIMALS, SHARE_DECIMALS) == (2, 2, 4)


def test_every_float_of_the_csv_files_is_rounded(tmp_path: Path) -> None:
    write_csvs(_noisy_data(), tmp_path)
    numbers = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")
    text = (tmp_path / "recommendations.csv").read_text()
    found = numbers.findall(text)
    assert len(found) >= 10  # the row's own figures (its detail and assumptions are in the JSON only)
    for number in found:
        assert float(number) == float(f"{float(number):.10g}"), number
    row = _csv(tmp_path / "recommendations.csv")[0]
    assert (
        row["estimated_monthly_savings_amount"],
        row["average_utilization"],
        row["hourly_commitment"],
    ) == (
        "1234.57",
        "0.3333",
        "17.732",
    )
