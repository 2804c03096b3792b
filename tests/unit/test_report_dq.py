"""The data-quality panel shows the checks of the deliveries whose rows the report reads,
whenever those checks ran (a nightly run checks yesterday's data today)."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import duckdb
import pytest

from athanor.publish import build_report, load_report_data
from athanor.publish.data import Windows
from athanor.warehouse import connect, insert_rows

AS_OF = date(2026, 11, 30)
NEXT_NIGHT = datetime(2026, 12, 1, 2, 35)  # the wall clock of the run that loaded the day


def _load(load_id: str, kind: str, uri: str, status: str, started: datetime, periods=None) -> dict:
    return {
        "load_id": load_id,
        "kind": kind,
        "source_uri": uri,
        "files": [f"{load_id}.csv"],
        "checksum_sha256": load_id,
        "size_bytes": 1,
        "billing_periods": periods,
        "status": status,
        "started_at": started,
    }


def _check(load_id: str, rule: str, success: bool, at: datetime = NEXT_NIGHT) -> dict:
    return {
        "run_id": "scheduled__2026-12-01T02:30:00+00:00",
        "load_id": load_id,
        "suite": "billing_facts",
        "table_name": "delivery",
        "rule": rule,
        "severity": "warn",
        "success": success,
        "unexpected_count": 0 if success else 2,
        "files": [f"{load_id}.csv"],
        "checked_at": at,
    }


@pytest.fixture
def ledger(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "wh.duckdb")
    early = datetime(2026, 11, 30, 2, 30)
    insert_rows(
        con,
        "loads",
        [
            _load("nov", "billing", "bills/2026-11", "loaded", NEXT_NIGHT, ["2026-11"]),
            _load("nov-old", "billing", "bills/2026-11", "replaced", early, ["2026-11"]),
            _load("jan-2025", "billing", "bills/2025-01", "loaded", early, ["2025-01"]),
            _load("jobs", "jobs", "jobs", "loaded", NEXT_NIGHT),
            # Refused after the last good load of its source: its failure shows.
            _load("dec-bad", "billing", "bills/2026-12", "quarantined", NEXT_NIGHT, ["2026-12"]),
            # Refused, then fixed by a later delivery of the same source: gone from the panel.
            _load("oct-bad", "billing", "bills/2026-10", "quarantined", early, ["2026-10"]),
            _load("oct", "billing", "bills/2026-10", "loaded", NEXT_NIGHT, ["2026-10"]),
        ],
    )
    insert_rows(
        con,
        "dq_results",
        [
            _check("nov", "billed_cost not null", True),
            _check("nov", "daily_cost_anomaly", False),
            _check("nov-old", "restated away", False, datetime(2026, 11, 30, 3)),
            _check("jan-2025", "outside the windows", False),
            _check("jobs", "job_id unique", True),
            _check("dec-bad", "billing period not in the future", False),
            _check("oct-bad", "fixed since", False, datetime(2026, 11, 30, 3)),
            _check("oct", "billed_cost not null", True),
        ],
    )
    yield con
    con.close()


def test_the_windows_name_the_months_they_read() -> None:
    # Weeks from Monday 2026-09-07 and the previous period from 2026-10-02: September to November.
    assert Windows.for_day(AS_OF).months == ["2026-09", "2026-10", "2026-11"]
    assert Windows.for_day(date(2027, 1, 3)).months == ["2026-10", "2026-11", "2026-12", "2027-01"]


def test_panel_shows_checks_of_the_loads_in_force_though_they_ran_after_the_period(
    ledger: duckdb.DuckDBPyConnection,
) -> None:
    data = load_report_data(ledger, AS_OF, "optimize-run")
    shown = sorted((r.where.rsplit(" · ", 1)[-1], r.rule) for r in data.dq or [])
    # Every check ran on 2026-12-01, after the period [2026-11-01, 2026-12-01): the wall clock
    # is not what chooses them. The restated delivery, the 2025 month outside the report's
    # windows and the refused delivery fixed since are left out.
    assert shown == [
        ("dec-bad.csv", "billing period not in the future"),
        ("jobs.csv", "job_id unique"),
        ("nov.csv", "billed_cost not null"),
        ("nov.csv", "daily_cost_anomaly"),
        ("oct.csv", "billed_cost not null"),
    ]
    assert sorted(r.rule for r in data.dq_failed) == [
        "billing period not in the future",
        "daily_cost_anomaly",
    ]


def test_data_quality_csv_and_page_carry_the_checks(
    ledger: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    paths = build_report(ledger, AS_OF, tmp_path / "reports", "optimize-run")
    rows = (paths.dated_dir / "data_quality.csv").read_text().splitlines()
    assert len(rows) == 1 + 5  # header + the five checks above
    html = paths.html.read_text()
    assert "no data yet: no validation results" not in html
    assert "2 of 5 checks failed" in html
