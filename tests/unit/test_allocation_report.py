"""The report's "Cost by team and job (shared GPUs)" section (issue 32): the same cents as
`athanor allocation --format json`, as a direct sum over gpu_allocation_hourly, and as the bill.

The warehouse: test_allocation's cluster (two p4d nodes and a g5 billed 00:00-03:00 on
2026-11-03 without tags, five sacct jobs and an array, node gpu-z-9 unmapped; a tagged machine,
j-9 of nlp, $10.00), plus
* an untagged machine no listing, job or tag names, one hour at $3.33: nobody's;
* a machine tagged j-8 (nlp) billed $5.00 on 2026-10-31 23:00, before the report's period.

By hand, the period [2026-11-01, 2026-12-01): billed 190.08 + 10.00 + 3.33 = 203.41; allocated
87.12 (scheduler jobs: 21.60 + 57.60 + 2.88 + 2.88 + 2.16) + 10.00 (j-9) = 97.12; idle 102.96
(36.00 + 57.60 no team's, 9.36 vision's, the g5 being vision's); nobody's 3.33.
97.12 + 102.96 + 3.33 = 203.41. Teams: llm 57.60, nlp 10.00, speech 2.16, vision 27.36 + idle
9.36, no team idle 93.60. The $5.00 of October is outside the period.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.cli import main
from athanor.publish import build_report
from athanor.publish.allocation_section import load_allocation
from athanor.recommend.allocation import _largest_remainder, allocate_gpus
from athanor.warehouse import insert_rows
from tests.unit.test_allocation import (  # noqa: F401  (cluster: a fixture)
    P4D_1,
    T0,
    bill_lines,
    cluster,
    dcgm_pod_hour,
    describe_instances,
)

AS_OF = date(2026, 11, 30)
PERIOD = (date(2026, 11, 1), date(2026, 12, 1))
GPU_USAGE_LINES = """select sum(effective_cost) from billing_facts
    where billing_currency = 'USD' and charge_category = 'Usage' and x_gpu_count > 0
      and charge_period_start >= ? and charge_period_start < ?"""


def _extra_lines() -> list[dict]:
    nobody = [
        line | {"source_file": "b2.csv"}
        for line in bill_lines("i-0eeeeeeeeeeeeee01", "p4d.24xlarge", 8, "3.33", 1)
    ]
    before = [
        line
        | {
            "source_file": "b3.csv",
            "charge_period_start": datetime(2026, 10, 31, 23),
            "charge_period_end": datetime(2026, 11, 1),
            "billing_period_start": datetime(2026, 10, 1),
            "billing_period_end": datetime(2026, 11, 1),
        }
        for line in bill_lines(
            "i-0ccccccccccccccc2", "p4d.24xlarge", 8, "5.00", 1, {"team": "nlp", "job_id": "j-8"}
        )
    ]
    return nobody + before


def _section(html: str) -> str:
    start = html.index('<section id="gpu-allocation"')
    return html[start : html.index("</section>", start)]


@pytest.mark.slow
def test_the_section_is_athanor_allocation_the_hourly_table_and_the_bill(
    settings,
    cluster,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
    capsys,
) -> None:
    insert_rows(cluster, "billing_facts", _extra_lines())
    allocate_gpus(cluster, "r1")
    since, until = (datetime.combine(d, datetime.min.time()) for d in PERIOD)
    section = load_allocation(cluster, *PERIOD)
    s = section.summary
    assert (s["billed_usd"], s["allocated_usd"], s["idle_usd"], s["unattributed_usd"]) == (
        203.41,
        97.12,
        102.96,
        3.33,
    )
    assert [(t["label"], t["allocated_usd"], t["idle_usd"], t["total_usd"]) for t in section.teams] == [
        ("llm", 57.60, 0.0, 57.60),
        ("vision", 27.36, 9.36, 36.72),
        ("nlp", 10.00, 0.0, 10.00),
        ("speech", 2.16, 0.0, 2.16),
        ("no team", 0.0, 93.60, 93.60),
    ]
    assert s["kinds"] == {
        "tagged": 10.00,
        "team_tagged": 0.0,
        "scheduler_jobs": 87.12,
        "pods": 0.0,
        "idle": 102.96,
        "unattributed": 3.33,
    }
    assert [(j["job_id"], j["team"], j["gpu_hours"], j["cost_usd"]) for j in section.top_jobs] == [
        ("102", "llm", 16.0, 57.60),
        ("101", "vision", 6.0, 21.60),
        ("j-9", "nlp", 8.0, 10.00),
        ("103_1", "vision", 2.0, 2.88),
        ("103_2", "vision", 2.0, 2.88),
        ("104", "speech", 1.5, 2.16),
    ]
    assert section.more_jobs == 0 and section.unmapped_nodes == ["gpu-z-9"]
    assert section.machine_hours == 11  # 3 nodes x 3 hours + j-9's hour + nobody's hour

    # The bill's GPU usage lines of the period, to the cent.
    bill = cluster.execute(GPU_USAGE_LINES, [since, until]).fetchone()[0]
    assert bill == Decimal("203.41")
    assert (
        Decimal(str(s["allocated_usd"])) + Decimal(str(s["idle_usd"])) + Decimal(str(s["unattributed_usd"]))
        == bill
    )
    # A direct sum over gpu_allocation_hourly (the exact shares are whole cents here).
    direct = cluster.execute(
        """select coalesce(team, 'no team'),
                  round(coalesce(sum(cost_usd) filter (where kind in ('job', 'tagged', 'team_tagged')), 0), 2),
                  round(coalesce(sum(cost_usd) filter (where kind = 'idle'), 0), 2)
           from gpu_allocation_hourly
           where hour >= ? and hour < ? and kind <> 'unattributed'
           group by 1""",
        [since, until],
    ).fetchall()
    assert {t: (float(a), float(i)) for t, a, i in direct} == {
        t["label"]: (t["allocated_usd"], t["idle_usd"]) for t in section.teams
    }

    # The page shows those figures.
    html = _section(build_report(cluster, AS_OF, tmp_path / "reports", "r1").html.read_text())
    assert (
        "Billed GPU machine-hours <strong>$203.41</strong> = allocated <strong>$97.12</strong> + idle "
        "<strong>$102.96</strong> + nobody's <strong>$3.33</strong>"
    ) in html
    teams = re.findall(
        r"<tr><td>([^<]+)</td>\s*<td[^>]*>(\$[\d,.]+)</td>\s*<td[^>]*>(\$[\d,.]+)</td>\s*<td[^>]*>(\$[\d,.]+)</td></tr>",
        html,
    )
    assert teams == [
        ("llm", "$57.60", "$0.00", "$57.60"),
        ("vision", "$27.36", "$9.36", "$36.72"),
        ("nlp", "$10.00", "$0.00", "$10.00"),
        ("speech", "$2.16", "$0.00", "$2.16"),
        ("no team", "$0.00", "$93.60", "$93.60"),
    ]
    assert (
        '<tr><td>Scheduler jobs (Slurm, generic, SageMaker), by GPU-seconds</td><td class="num">$87.12</td></tr>'
        in html
    )
    assert "Kubernetes pods" not in html  # a kind without cost is not listed
    assert "<code>102</code></td><td>llm</td>" in html and "gpu-z-9" in html
    assert "athanor allocation --since 2026-11-01 --until 2026-12-01 --format json" in html

    # athanor allocation over the same days prints the same figures; its default (every hour)
    # counts October's $5.00 too.
    cluster.close()
    path = str(settings.warehouse)
    assert (
        main(
            [
                "allocation",
                "--warehouse",
                path,
                "--since",
                "2026-11-01",
                "--until",
                "2026-12-01",
                "--format",
                "json",
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed == s
    assert main(["allocation", "--warehouse", path, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["billed_usd"] == 208.41


def test_pods_are_their_own_kind_and_the_kinds_add_up_to_the_teams_cents(warehouse, tmp_path: Path) -> None:
    # test_allocation's DCGM case: pods infer-1 ($7.20) and small-2 (3/7 of a GPU: $1.542857) of
    # namespace serving on a $28.80 p4d hour, the rest idle ($20.057143). Team cells: serving
    # 8.742857 -> floor 8.74, idle 20.057143 -> floor 20.05; 28.80 - 28.79 leaves a cent, to the
    # larger remainder (idle's 0.71 cent): 8.74 + 20.06. The pods' kind shares serving's 8.74.
    dcgm_pod_hour(warehouse, tmp_path)
    allocate_gpus(warehouse, "r1")
    section = load_allocation(warehouse, *PERIOD)
    s = section.summary
    assert (s["billed_usd"], s["allocated_usd"], s["idle_usd"]) == (28.80, 8.74, 20.06)
    assert [(t["label"], t["allocated_usd"], t["idle_usd"]) for t in section.teams] == [
        ("serving", 8.74, 0.0),
        ("no team", 0.0, 20.06),
    ]
    assert section.kinds == [
        ("Kubernetes pods (pod list, DCGM labels), by GPU-seconds", 8.74),
        ("Idle: paid GPU-seconds no job held", 20.06),
    ]
    assert [(j["job_id"], j["cost_usd"]) for j in section.top_jobs] == [("infer-1", 7.20), ("small-2", 1.54)]


def test_largest_remainder_meets_a_total_fixed_elsewhere() -> None:
    c = Decimal
    # Free: 0.013 + 0.017 = 0.03 -> floors 0.01 + 0.01, the cent left to b (0.7 of a cent).
    assert _largest_remainder({"a": c("0.013"), "b": c("0.017")}) == {"a": c("0.01"), "b": c("0.02")}
    # Held to 0.01 (the team cells' total): a cent comes off the smaller remainder, a's.
    assert _largest_remainder({"a": c("0.013"), "b": c("0.017")}, total=c("0.01")) == {
        "a": c("0.00"),
        "b": c("0.01"),
    }
    # Held to 0.02: floors 0.00 + 0.00 + 0.00 of 0.006 x 3, two cents to the first two (a tie: key order).
    assert _largest_remainder({"a": c("0.006"), "b": c("0.006"), "c": c("0.006")}, total=c("0.02")) == {
        "a": c("0.01"),
        "b": c("0.01"),
        "c": c("0.00"),
    }


def test_an_empty_warehouse_says_no_data_yet(warehouse, tmp_path: Path) -> None:
    section = load_allocation(warehouse, *PERIOD)
    assert not section.has_data and section.summary["billed_usd"] == 0.0
    html = _section(build_report(warehouse, AS_OF, tmp_path / "reports", "r1").html.read_text())
    assert "no data yet: no billed GPU machine-hours allocated in the report's period" in html
    assert "table-gpu-allocation" not in html
