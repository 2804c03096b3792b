"""A re-delivered billing month that shrinks sharply does not replace the month by itself.

Providers restate whole months; a restatement with fewer than half of the rows, or half of the
billed cost, of what it replaces has most likely lost files on the way. It fails the error
rule restated_period_collapsed (threshold: ATHANOR_RESTATEMENT_MIN_SHARE, default 0.5), so the
nightly run holds it in quarantine and the month keeps its rows; `athanor quarantine release`
notes in the ledger that the operator let it through, and the next run loads it, warned.
Base month everywhere: acct-1, November 2026, 20 daily rows of USD 10.00 = USD 200.00.
"""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from athanor import flow
from athanor.cli import main
from athanor.ingest.billing import ingest_billing
from athanor.quality import QualityError
from athanor.settings import Settings
from athanor.warehouse import connect
from tests.unit.test_bad_inputs import good_rows, write_csv

SHRANK = "1 more rule(s) failed: restated_period_shrank"


@pytest.fixture
def wh(tmp_path: Path):
    con = connect(tmp_path / "wh.duckdb", memory_limit="1GB")
    ingest_billing(con, [write_csv(tmp_path / "first" / "focus-2026-11.csv", good_rows())])
    yield con
    con.close()


def month(con) -> tuple:
    return con.execute("select count(*), sum(billed_cost) from billing_facts").fetchone()


def restate(con, tmp_path: Path, rows: list[dict]) -> str:
    """Load a restatement that must be held: its one-line reason; the month must not change."""
    before = month(con)
    with pytest.raises(QualityError) as held:
        ingest_billing(con, [write_csv(tmp_path / "again" / "focus-2026-11.csv", rows)])
    assert month(con) == before == (20, Decimal("200"))
    return str(held.value)


@pytest.mark.slow
def test_a_restatement_with_a_quarter_of_the_rows_is_held(wh, tmp_path: Path) -> None:
    assert restate(wh, tmp_path, good_rows(5)) == (
        "focus-2026-11.csv: rule restated_period_collapsed failed, 1 bad billing period (e.g. acct-1 2026-11: "
        f"5 rows, USD 50.00 billed, against 20 rows, USD 200.00 before); {SHRANK}"
    )


@pytest.mark.slow
def test_a_restatement_with_every_row_but_two_fifths_of_the_cost_is_held(wh, tmp_path: Path) -> None:
    assert restate(wh, tmp_path, good_rows(cost="4.00")) == (
        "focus-2026-11.csv: rule restated_period_collapsed failed, 1 bad billing period (e.g. acct-1 2026-11: "
        "20 rows, USD 80.00 billed, against 20 rows, USD 200.00 before)"
    )


@pytest.mark.slow
def test_half_of_the_rows_is_not_fewer_than_half(wh, tmp_path: Path) -> None:
    # 9 of 20 is held; 10 of 20 (USD 100.00 of 200.00) loads, with the shrink as a warning.
    assert "9 rows, USD 90.00 billed" in restate(wh, tmp_path, good_rows(9))
    result = ingest_billing(wh, [write_csv(tmp_path / "ten" / "focus-2026-11.csv", good_rows(10))])
    assert (result.rows, result.replaced_rows, month(wh)) == (10, 20, (10, Decimal("100")))


@pytest.mark.slow
@pytest.mark.parametrize(("share", "rows", "held"), [("0", 5, False), ("0.9", 17, True), ("0.9", 18, False)])
def test_the_share_is_a_setting(wh, tmp_path: Path, monkeypatch, share: str, rows: int, held: bool) -> None:
    monkeypatch.setenv("ATHANOR_RESTATEMENT_MIN_SHARE", share)
    assert Settings.from_env().restatement_min_share == float(share)
    file = write_csv(tmp_path / "again" / "focus-2026-11.csv", good_rows(rows))
    if held:
        with pytest.raises(QualityError, match="rule restated_period_collapsed failed"):
            ingest_billing(wh, [file])
    else:
        assert ingest_billing(wh, [file]).rows == rows


def ledger(settings: Settings) -> list[tuple]:
    con = connect(settings.warehouse, read_only=True)
    try:
        return con.execute("select files, status from loads order by started_at").fetchall()
    finally:
        con.close()


def facts(settings: Settings) -> tuple:
    con = connect(settings.warehouse, read_only=True)
    try:
        return month(con)
    finally:
        con.close()


def night(settings: Settings, run_id: str) -> dict:
    run = {"run_id": run_id, "params": {}}
    return flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)


# Four nights' land and load: seconds of CPU, so the slow tier (`make test`); the holding rule
# itself stays in the unit tier (the tests above), and releasing a held file in test_quarantine.py.
@pytest.mark.slow
def test_the_nightly_run_holds_it_and_a_release_lets_it_load(home: Path, capsys) -> None:
    folder = home / "landing" / "billing" / "focus" / "acct-1" / "billing_period=2026-11"
    delivered = write_csv(folder / "focus-2026-11.csv", good_rows())
    settings = Settings.from_env()
    assert len(night(settings, "night-1")["loaded"]) == 1
    # The exporter restates the month with 5 of its 20 days (a partial export).
    write_csv(delivered, good_rows(5))
    assert night(settings, "night-2")["errors"] == [
        "focus-2026-11.csv: rule restated_period_collapsed "
        "failed, 1 bad billing period (e.g. acct-1 2026-11: 5 rows, USD 50.00 billed, against 20 rows, "
        f"USD 200.00 before); {SHRANK}"
    ]
    entry = settings.quarantine / "night-2" / "focus-2026-11.csv"
    assert (entry / "focus-2026-11.csv").is_file() and not delivered.exists()
    assert facts(settings) == (20, Decimal("200"))
    assert [status for _, status in ledger(settings)] == ["loaded", "quarantined"]
    # Until released, it stays out: a copy landed again is held again.
    shutil.copy(entry / "focus-2026-11.csv", delivered)
    (held,) = night(settings, "night-3")["errors"]
    assert "rule restated_period_collapsed failed" in held
    shutil.rmtree(settings.quarantine / "night-3")
    capsys.readouterr()
    # The operator looked and releases it: the ledger notes it, and the next night loads it.
    assert main(["quarantine", "release", str(entry)]) == 0
    assert capsys.readouterr().out == f"released 1 file(s) to {folder}; the next run loads them\n"
    assert [status for _, status in ledger(settings)] == ["loaded", "released"]
    (lines,) = night(settings, "night-4")["loaded"]
    summary, *warnings = lines.splitlines()
    assert summary.startswith(
        "focus-2026-11.csv: focus, 5 rows, billed USD 50.00, periods 2026-11, restated (20 earlier rows replaced)"
    )
    assert (
        "  warning: focus-2026-11.csv: rule restated_period_collapsed warned, 1 bad row (e.g. acct-1 2026-11: "
        "5 rows, USD 50.00 billed, against 20 rows, USD 200.00 before)" in warnings
    )
    assert facts(settings) == (5, Decimal("50"))
    assert [status for _, status in ledger(settings)] == ["replaced", "loaded"]
