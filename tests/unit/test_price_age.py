"""The report says how old the GPU prices are (issue 31, item 3): the oldest `as_of` of the price
rows the plan reads, counted in days to the report's day."""

from __future__ import annotations

import csv
from datetime import date
from pathlib import Path

import duckdb
import pytest

from athanor.publish import build_report
from athanor.reference import gpus
from athanor.warehouse import connect


def test_the_packaged_catalogue_is_as_old_as_its_oldest_row() -> None:
    age = gpus.price_age(date(2026, 12, 6))
    # The oldest rows: g4dn, read from a copy of 2025-11-30; 2025-11-30 to 2026-11-30 is 365 days,
    # to 2026-12-06 six more: 371.
    assert (age.oldest, age.days_old, age.refreshed) == (date(2025, 11, 30), 371, False)
    assert age.headline() == "prices as of 2025-11-30, 371 days old"


def test_a_refreshed_catalogue_dated_june_is_188_days_old_in_december(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A refreshed copy whose every row was read on 2026-06-01: June has 30 days, so 2026-06-01 to
    # 2026-12-01 is 30 + 31 + 31 + 30 + 31 + 30 = 183 days, to 2026-12-06 188.
    folder = tmp_path / "catalogue"
    folder.mkdir()
    with gpus.PRICES_CSV.open(newline="") as f:
        rows = list(csv.DictReader(f))
    with (folder / "prices.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(gpus.PRICES_HEADER), lineterminator="\n")
        writer.writeheader()
        writer.writerows({**r, "as_of": "2026-06-01"} for r in rows)
    monkeypatch.setenv("ATHANOR_CATALOGUE", str(folder))
    age = gpus.price_age(date(2026, 12, 6))
    assert (age.oldest, age.newest, age.days_old, age.refreshed, age.rows) == (
        date(2026, 6, 1),
        date(2026, 6, 1),
        188,
        True,
        len(rows),
    )
    assert age.headline() == "prices as of 2026-06-01, 188 days old"
    assert age.sentence().startswith("prices as of 2026-06-01, 188 days old on 2026-12-06 (refreshed")


def test_the_report_prints_the_age_of_the_gpu_prices(tmp_path: Path) -> None:
    con: duckdb.DuckDBPyConnection = connect(tmp_path / "w.duckdb", memory_limit="1GB")
    try:
        html = build_report(con, date(2026, 12, 6), tmp_path / "reports", "run-1").html.read_text()
    finally:
        con.close()
    assert 'GPU list <a href="#gpu-prices">prices as of 2025-11-30, 371 days old</a>' in html
    assert 'id="gpu-prices">GPU list prices as of 2025-11-30 to ' in html
