"""The GPU allocation is kept a month at a time: a night reallocates only the months whose inputs
changed (athanor.recommend.allocation.changed_months), and what it keeps equals a rebuild.

The machine: one p4d.24xlarge (8 GPUs, $28.80 an hour: $0.001 a GPU-second) named node-a by a
bill tag, billed two hours in October (31st, 22:00-24:00) and two in November (3rd, 00:00-02:00).
Job 1 (llm) holds 4 GPUs on it 22:00-23:00 on Oct 31: 4 x 3,600 = 14,400 GPU-s = $14.40.
"""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal

import pytest

from athanor.recommend.allocation import allocate_gpus
from athanor.warehouse import insert_rows
from tests.support.rows import hourly_usage_lines, job_run

OCT, NOV = datetime(2026, 10, 1), datetime(2026, 11, 1)
NODE_TAG = "slurm-node"


def lines(start: datetime, period: datetime, cost: str, load_id: str = "B1") -> list[dict]:
    end = datetime(period.year + period.month // 12, period.month % 12 + 1, 1)
    rows = hourly_usage_lines(
        "arn:aws:ec2:us-east-1:111:instance/i-0aaaaaaaaaaaaaa01", start, 2, cost=Decimal(cost), gpus=8,
        instance_type="p4d.24xlarge", billing_period=(period, end), tags={NODE_TAG: "node-a"},
        commitment_discount_status=None,
    )  # fmt: skip
    return [{**row, "load_id": load_id} for row in rows]


def job(job_id: str, start: datetime, hours: float, team: str) -> dict:
    return job_run(job_id, start, hours, 4, source="slurm", team=team, node_list="node-a")


@pytest.fixture
def fleet(warehouse):
    insert_rows(
        warehouse,
        "billing_facts",
        lines(datetime(2026, 10, 31, 22), OCT, "28.80") + lines(datetime(2026, 11, 3), NOV, "28.80"),
    )
    insert_rows(warehouse, "job_run_facts", [job("1", datetime(2026, 10, 31, 22), 1, "llm")])
    return warehouse


def allocate(con, run_id: str) -> None:
    allocate_gpus(con, run_id, node_tag_key=NODE_TAG)


def run_ids(con) -> dict[datetime, set[str]]:
    rows = con.execute(
        "select date_trunc('month', hour), list(distinct run_id order by run_id) from gpu_allocation_hourly group by 1"
    ).fetchall()
    return {month: set(ids) for month, ids in rows}


def table(con) -> list[tuple]:
    return con.execute(
        "select * exclude (run_id) from gpu_allocation_hourly order by hour, resource_id, kind, job_id"
    ).fetchall()


def rebuilt(con) -> list[tuple]:
    con.execute("delete from gpu_allocation_months")  # forgets what was allocated: every month again
    allocate(con, "rebuild")
    assert run_ids(con) == {OCT: {"rebuild"}, NOV: {"rebuild"}}
    return table(con)


def test_each_month_is_allocated_once_and_a_night_that_changed_nothing_rewrites_nothing(
    fleet, caplog
) -> None:
    result = allocate_gpus(fleet, "r1", node_tag_key=NODE_TAG)
    # The stage's summary is the table's: 4 hours x 28.80 = 115.20 billed, 14.40 of it job 1's.
    summary = (result.months_reallocated, result.billed_usd, result.allocated_usd, result.idle_usd)
    assert summary == (2, Decimal("115.20"), Decimal("14.40"), Decimal("100.80"))
    job_cost = fleet.execute("select sum(cost_usd) from gpu_allocation_hourly where kind = 'job'").fetchone()[
        0
    ]
    assert job_cost == Decimal("14.40")
    assert run_ids(fleet) == {OCT: {"r1"}, NOV: {"r1"}}
    with caplog.at_level(logging.INFO, logger="athanor.recommend.allocation"):
        allocate(fleet, "r2")
    assert run_ids(fleet) == {OCT: {"r1"}, NOV: {"r1"}}
    assert "0 of 2 months reallocated" in caplog.text


def test_a_late_job_log_reallocates_the_month_it_reaches_into_as_a_rebuild_would(fleet) -> None:
    allocate(fleet, "r1")
    # November 3rd, 00:00-01:00, 8 GPUs: the first November hour is the job's, $28.80.
    insert_rows(fleet, "job_run_facts", [{**job("2", datetime(2026, 11, 3), 1, "vision"), "gpu_count": 8}])
    allocate(fleet, "r2")
    assert run_ids(fleet) == {OCT: {"r1"}, NOV: {"r2"}}
    vision = fleet.execute(
        "select sum(cost_usd) from gpu_allocation_hourly where team = 'vision'"
    ).fetchone()[0]
    assert vision == Decimal("28.80")
    kept = table(fleet)
    assert kept == rebuilt(fleet)


def test_a_restated_month_is_reallocated_and_a_month_gone_from_the_bill_is_removed(fleet) -> None:
    allocate(fleet, "r1")
    fleet.execute("delete from billing_facts where charge_period_start >= ?", [NOV])
    insert_rows(fleet, "billing_facts", lines(datetime(2026, 11, 3), NOV, "27.00", load_id="B2"))
    allocate(fleet, "r2")
    assert run_ids(fleet) == {OCT: {"r1"}, NOV: {"r2"}}
    november = fleet.execute(
        "select sum(cost_usd) from gpu_allocation_hourly where hour >= ?", [NOV]
    ).fetchone()[0]
    assert november == Decimal("54.00")  # 2 x 27.00, idle: no job that month
    assert table(fleet) == rebuilt(fleet)

    fleet.execute("delete from billing_facts where charge_period_start < ?", [NOV])
    allocate(fleet, "r3")
    # (November is reallocated too: the bill tag's node map now starts in November.)
    assert set(run_ids(fleet)) == {NOV}
    assert fleet.execute("select count(*) from gpu_allocation_months").fetchone()[0] == 1


def test_a_node_held_only_in_another_month_is_a_cluster_node_in_every_month(fleet) -> None:
    # No job in November: its hours are still the cluster node's idle hours, not unattributed.
    allocate(fleet, "r1")
    kinds = fleet.execute(
        "select distinct kind from gpu_allocation_hourly where hour >= ? order by kind", [NOV]
    ).fetchall()
    assert kinds == [("idle",)]
