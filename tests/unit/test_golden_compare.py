"""The golden's comparison (tests/support/golden.py): exact values to the bit, fitted floats within
its stated tolerance, and a difference named by table or file, row, column and both values."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.support.golden import REL_TOL, compare, dumps, fingerprint

# One fitted figure, in every place the golden reads one: a DOUBLE column, a float inside a JSON
# text column, a float cell of a report CSV and a float of a report JSON.
FIT = 0.3915159474396262


def night(home: Path, *, fit: float = FIT, money: str = "1534.17", forecast: float = 85.65) -> dict:
    """A tiny night's warehouse and report folder, fingerprinted."""
    reports = home / "reports"
    reports.mkdir(parents=True)
    (reports / "duration_fits.csv").write_text(
        "group_key,n,shape,params\n"
        f'team=llm,895,{fit!r},"{{""shape"": {fit!r}}}"\n'
        f'team=vision,12,0.5,"{{""shape"": 0.5}}"\n'
    )
    (reports / "recommendations.json").write_text(
        json.dumps(
            {"recommendations": [{"label": "spot", "estimated_monthly_cost": float(money), "share": fit}]}
        )
    )
    con = duckdb.connect(str(home / "athanor.duckdb"))
    con.execute(
        "create table fits (group_key varchar, n bigint, cost decimal(18, 2), shape double, params varchar)"
    )
    con.execute(
        "insert into fits values (?, ?, ?::decimal(18, 2), ?, ?), ('team=vision', 12, 2.00, 0.5, '{\"shape\": 0.5}')",
        ["team=llm", 895, money, fit, json.dumps({"shape": fit, "family": "gamma"})],
    )
    con.execute("create table spend_forecasts (scope_value varchar, cost decimal(18, 2))")
    con.execute("insert into spend_forecasts values ('llm', ?::decimal(18, 2))", [forecast])
    con.close()
    return fingerprint(home, reports, home / "athanor.duckdb")


@pytest.fixture
def golden(tmp_path: Path) -> dict:
    """The golden as the test reads it back from its file."""
    return json.loads(dumps(night(tmp_path / "golden")))


def test_the_same_night_matches(golden: dict, tmp_path: Path) -> None:
    assert compare(golden, night(tmp_path / "again")) == []


def test_a_fitted_figure_moved_at_1e_9_matches(golden: dict, tmp_path: Path) -> None:
    # What another CPU's BLAS kernels do to a fitted parameter: the 9th significant digit.
    assert compare(golden, night(tmp_path / "other_cpu", fit=FIT * (1 + 1e-9))) == []


def test_a_fitted_figure_moved_at_1e_4_is_named_in_every_place(golden: dict, tmp_path: Path) -> None:
    moved = FIT * (1 + 1e-4)
    differing = compare(golden, night(tmp_path / "changed", fit=moved))
    rounded = 0.3915159474  # the golden keeps 10 significant digits
    tail = f"golden {rounded!r}, now {moved!r} (differs by 3.92e-05, relative 0.0001; tolerance relative 1e-06, absolute 1e-09)"
    assert differing == [
        f'file duration_fits.csv: row 0 (group_key="team=llm", n="895", shape="~"), column shape: {tail}',
        f'file duration_fits.csv: row 0 (group_key="team=llm", n="895", shape="~"), column params.shape: {tail}',
        'file recommendations.json: row 0 (key="recommendations", item=0), column value.share: ' + tail,
        'table fits: row 0 (group_key="team=llm", n=895, cost="1534.17", shape="~"), column shape: ' + tail,
        'table fits: row 0 (group_key="team=llm", n=895, cost="1534.17", shape="~"), column params.shape: '
        + tail,
    ]
    assert REL_TOL == 1e-6


def test_a_cent_of_money_is_a_difference(golden: dict, tmp_path: Path) -> None:
    # 1534.18 against 1534.17 is 6.5e-6 relative, and a DECIMAL is compared exactly whatever its size.
    differing = compare(golden, night(tmp_path / "cent", money="1534.18"))
    assert "file recommendations.json: exact values differ in column(s) value" in differing
    assert "table fits: exact values differ in column(s) cost" in differing
    assert (
        'table fits: row 0 (group_key="team=llm", n=895, cost="1534.18", shape="~")'
        " has no row with the same exact values in the golden" in differing
    )
    assert "table fits: 1 golden row(s) have no row with the same exact values now" in differing
    assert all(line.startswith(("file recommendations.json", "table fits")) for line in differing), differing


def test_a_forecast_may_land_on_the_next_cent_but_no_further(golden: dict, tmp_path: Path) -> None:
    # spend_forecasts.cost is DECIMAL(18, 2) but fitted: rounding a figure that moved at the 9th
    # digit can give the next cent.
    assert compare(golden, night(tmp_path / "next_cent", forecast=85.66)) == []
    assert compare(golden, night(tmp_path / "two_cents", forecast=85.67)) == [
        'table spend_forecasts: row 0 (scope_value="llm", cost="~"), column cost: golden 85.65, now 85.67'
        " (differs by 0.02, relative 0.000234; tolerance relative 1e-06, absolute 0.01)"
    ]
