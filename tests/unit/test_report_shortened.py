"""The report a reader can get through (issue 30, the report): failed checks listed and passes
counted, one row per cost incident, the EBS actions listed with what they do, and one sign for
the savings of "Where the money goes"."""

from __future__ import annotations

import html
import re
from datetime import date, datetime
from typing import Any

from athanor.publish.data import CurrencySpend, DQResult, Recommendation, ReportData, Spend, Windows
from athanor.publish.render import render_html
from athanor.publish.spend_watch_section import AnomalyRow, SpendWatch

AS_OF = date(2026, 11, 30)
DAY = date(2026, 11, 25)


def _rec(kind: str, scope: str, saving: float | None, detail: dict[str, Any], **extra: Any) -> Recommendation:
    values: dict[str, Any] = dict(
        kind=kind, scope=scope, action=f"{kind} {scope}", run_id="run-1", as_of=AS_OF,
        recommended_quantity=None, hourly_commitment=None, term_months=None, upfront_cost=None,
        recurring_monthly_cost=None, estimated_monthly_cost=None, current_monthly_cost=None,
        estimated_monthly_savings_amount=saving, estimated_savings_percentage=None,
        average_utilization=None, coverage=None, break_even_months=None, risk=None,
        assumptions={}, detail=detail,
    )  # fmt: skip
    values.update(extra)
    return Recommendation(**values)


def _page(**fields: Any) -> str:
    data = ReportData(
        windows=Windows.for_day(AS_OF),
        run_id="run-1",
        spend=Spend(by_currency=(CurrencySpend("USD", 1000.0, 900.0, 3),), billing_through=None),
        **fields,
    )
    return render_html(data)


def _cells(fragment: str) -> list[list[str]]:
    """The rows of an HTML fragment as their cells' texts, spaces normalised."""
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", fragment, re.S)
    return [
        [
            " ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split())
            for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        ]
        for r in rows
    ]


def _table(page: str, table_id: str) -> list[list[str]]:
    """The body rows of one table of the page."""
    start = page.index(f'id="{table_id}"')
    return _cells(page[page.index("<tbody>", start) : page.index("</table>", start)])


# ---------------------------------------------------------------- data quality


def _check(suite: str, rule: str, success: bool, severity: str = "error") -> DQResult:
    return DQResult(
        rule=rule,
        severity=severity,
        success=success,
        unexpected_count=0 if success else 3,
        examples=None if success else "row 7",
        where=f"{suite} · delivery",
        checked_at=datetime(2026, 12, 1, 2, 35),
        suite=suite,
    )


def test_quality_lists_failures_and_warnings_and_counts_passes_per_suite() -> None:
    # 5 billing checks (one fails, one warns) and 3 job checks, all passing: 2 rows listed, the
    # 6 passes counted per suite (billing 3 of 5, jobs 3 of 3), no passing rule named on the page.
    checks = [
        _check("billing_facts", "billed_cost not null", True),
        _check("billing_facts", "currency known", True),
        _check("billing_facts", "charge period in the billing period", True),
        _check("billing_facts", "billing period not in the future", False),
        _check("billing_facts", "daily_cost_anomaly", False, severity="warn"),
        _check("job_run_facts", "job_id unique", True),
        _check("job_run_facts", "end after start", True),
        _check("job_run_facts", "gpus positive", True),
    ]
    page = _page(dq=checks)
    assert [r[1] for r in _table(page, "table-dq")] == [
        "billing period not in the future",
        "daily_cost_anomaly",
    ]
    assert _table(page, "table-dq-passed") == [["billing_facts", "3", "5"], ["job_run_facts", "3", "3"]]
    assert "job_id unique" not in page and "currency known" not in page
    assert "data_quality.csv" in page
    assert "2 of 8 checks failed" in page


# ---------------------------------------------------------------- incidents


def _anomaly(kind: str, value: str, day: date, excess: float, line: str, line_excess: float) -> AnomalyRow:
    service = "AWS Data Transfer" if "DataTransfer" in line else "Amazon Elastic Compute Cloud"
    return AnomalyRow(
        scope_kind=kind,
        scope_value=value,
        currency="USD",
        day=day,
        kind="usage",
        expected_cost=100.0,
        actual_cost=100.0 + excess,
        excess_cost=excess,
        threshold_cost=50.0,
        history=4,
        top_lines=(
            {"service": service, "line": line, "resource_id": None, "resources": 2, "excess": line_excess},
        ),
    )


ANOMALIES = [
    # The latest day first, as the watch stores them.
    _anomaly("account", "111", date(2026, 11, 29), 900.0, "USE1-BoxUsage:p4d.24xlarge", 880.0),
    _anomaly("team", "llm", date(2026, 11, 29), 890.0, "USE1-BoxUsage:p4d.24xlarge", 880.0),
    # The data transfer spike seen by its service and its team: one incident, listed first.
    _anomaly("service", "AWS Data Transfer", DAY, 1474.79, "USE1-DataTransfer-Out-Bytes", 1474.97),
    _anomaly("team", "llm", DAY, 1470.0, "USE1-DataTransfer-Out-Bytes", 1474.97),
    # Same day and line as vision's spike but a sixth of it (below half): another cost, apart.
    _anomaly("team", "vision", DAY, 1200.0, "USE1-BoxUsage:p4d.24xlarge", 1190.0),
    _anomaly("team", "recsys", DAY, 210.0, "USE1-BoxUsage:p4d.24xlarge", 200.0),
]


def test_anomalies_of_one_cost_are_one_incident_the_largest_first() -> None:
    from athanor.publish.incidents import group_incidents

    incidents = group_incidents(ANOMALIES)
    assert [(i.day, i.scopes, i.excess_cost) for i in incidents] == [
        (DAY, ["service: AWS Data Transfer", "team: llm"], 1474.79),
        (DAY, ["team: vision"], 1200.0),
        (date(2026, 11, 29), ["account: 111", "team: llm"], 900.0),
        (DAY, ["team: recsys"], 210.0),
    ]


def test_the_page_shows_each_incident_once_with_its_scopes() -> None:
    from athanor.publish.incidents import group_incidents

    watch = SpendWatch(
        as_of=AS_OF,
        anomalies=ANOMALIES,
        anomalies_total=6,
        incidents=group_incidents(ANOMALIES),
        incidents_total=4,
    )
    rows = _table(_page(spend_watch=watch), "table-anomalies")
    assert len(rows) == 4  # 6 anomalies, 4 incidents
    first = rows[0]
    assert first[0] == "2026-11-25"
    assert first[1] == "service: AWS Data Transfer team: llm"
    assert first[5] == "$1,474.79"  # the largest scope's excess, never 1,474.79 + 1,470


# ---------------------------------------------------------------- EBS


def test_ebs_action_says_what_the_actions_do() -> None:
    from athanor.recommend.nightly import ebs_action_text

    kinds = ["move-to-s3"] * 30 + ["delete-snapshot"] * 2 + ["snapshot-then-delete"]
    assert ebs_action_text(kinds) == (
        "EBS: move the data of 30 in-use checkpoint volumes to S3 Intelligent-Tiering; "
        "delete 2 old snapshots; snapshot and delete 1 unattached volume"
    )


def test_the_ebs_row_lists_its_volumes_and_snapshots() -> None:
    detail = {
        "actions": [
            {
                "kind": "delete-snapshot",
                "resource_id": "snap-1",
                "size_gib": 1000.0,
                "reason": "400 days old",
            },
            {
                "kind": "move-to-s3",
                "resource_id": "vol-1",
                "size_gib": 16000.0,
                "reason": "checkpoint volume",
            },
        ],
        "actions_against_bill": [
            {"kind": "delete-snapshot", "estimated_monthly_savings_amount": 50.0},
            {"kind": "move-to-s3", "estimated_monthly_savings_amount": 1188.0},
        ],
    }
    ebs = _rec("ebs", "EBS volumes and snapshots", 1238.0, detail, action="EBS: move the data of 1 ...")
    page = _page(recommendations=[ebs])
    start = page.index('<details class="ebs-actions">')
    listing = page[start : page.index("</details>", start)]
    # The largest saving first; 16,000 GiB is 15.6 TiB.
    assert _cells(listing)[1:] == [
        ["vol-1", "move its data to S3 Intelligent-Tiering", "15.6 TiB", "checkpoint volume", "$1,188"],
        ["snap-1", "delete the snapshot", "1,000 GiB", "400 days old", "$50"],
    ]


# ---------------------------------------------------------------- where the money goes


def test_where_the_money_goes_states_one_sign_for_savings() -> None:
    # Reservations rise from $1,000 to $5,000 (the plan spends $4,000 more there) and on-demand
    # falls from $9,000 to $3,000 (it saves $6,000): saving = now - plan, +$2,000 in all.
    attribution = {
        "baseline": {"current_monthly_bill": 10_000.0},
        "planned_monthly_cost": 8_000.0,
        "by_option": {
            "reserved": {"current": 1_000.0, "planned": 5_000.0, "change": -4_000.0},
            "on_demand": {"current": 9_000.0, "planned": 3_000.0, "change": 6_000.0},
        },
    }
    mix = _rec("mix", "fleet", 2_000.0, {"attribution": attribution})
    page = _page(recommendations=[mix])
    start = page.index('id="table-mix-options"')
    header = html.unescape(re.sub(r"<[^>]+>", " ", page[start : page.index("</thead>", start)]))
    assert "Saving / month (now − plan: negative where the plan spends more)" in " ".join(header.split())
    assert _table(page, "table-mix-options") == [
        ["Reserved instances (held and new)", "$1,000", "$5,000", "-$4,000"],
        ["On-demand", "$9,000", "$3,000", "$6,000"],
        ["All options", "$10,000", "$8,000", "$2,000"],
    ]
