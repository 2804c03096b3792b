"""The demo's shared Slurm cluster (athanor.demo.cluster): its files load, and its untagged bill is
allocated to the jobs and idle lines to the cent (issue 32)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.demo.cluster import ClusterConfig, compact, instances, write_cluster
from athanor.demo.config import DemoConfig
from athanor.ingest.deliveries import ingest_paths
from athanor.recommend.allocation import allocate_gpus, allocation_summary
from athanor.reference.instances import instance
from athanor.warehouse import connect


def test_compacted_host_lists() -> None:
    assert compact(("ip-10-20-1-11", "ip-10-20-1-12")) == "ip-10-20-1-[11-12]"
    assert compact(("ip-10-20-1-11",)) == "ip-10-20-1-11"


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("cluster")
    return out, write_cluster(out, DemoConfig(), date(2026, 11, 30))


def test_the_cluster_writes_a_bill_a_log_and_two_listings(landed) -> None:
    out, summary = landed
    cfg, cluster = DemoConfig(), ClusterConfig()
    # Hours billed: 3 nodes x 30 days x 24 h, and the replaced node's two instances: 12 days
    # before its failure, then from 2 hours later to the end (30 - 12 days less 2 hours).
    assert summary["line_items"] == 3 * 30 * 24 + 12 * 24 + (18 * 24 - 2)
    p4d, g5 = (instance(t).on_demand_usd_per_h for t in ("p4d.24xlarge", "g5.12xlarge"))
    hours_p4d = 30 * 24 + 12 * 24 + 18 * 24 - 2
    assert Decimal(summary["files"][0]["effective_cost"]) == hours_p4d * p4d + 2 * 30 * 24 * g5
    first = json.loads((out / "ec2/2026-11-01/describe-instances.json").read_text())
    last = json.loads((out / "ec2/2026-11-30/describe-instances.json").read_text())
    ids = [i.instance_id for i in instances(cfg, cluster)]
    assert [r["Instances"][0]["InstanceId"] for r in first["Reservations"]] == ids[:2] + ids[3:]
    assert [r["Instances"][0]["InstanceId"] for r in last["Reservations"]] == [ids[0], ids[2], ids[3], ids[4]]
    log = (out / "jobs/slurm/sacct-2026-11-30.txt").read_text().splitlines()
    assert log[-1].startswith("7404_[3-12]|7404|g5|speech|") and "|PENDING|" in log[-1]


@pytest.mark.slow
def test_the_clusters_bill_lands_on_jobs_and_idle_lines_to_the_cent(landed, settings) -> None:
    out, summary = landed
    outcome = ingest_paths([out], settings.warehouse, settings=settings)
    assert outcome.errors == []
    con = connect(settings.warehouse)
    try:
        result = allocate_gpus(con, "r1")
        figures = allocation_summary(con)
        # Every machine-hour is a cluster node's: its bill is its jobs' and its idle line's.
        assert result.unmapped_nodes == ()
        billed = Decimal(summary["files"][0]["effective_cost"])
        assert Decimal(str(figures["billed_usd"])) == billed
        assert figures["unattributed_usd"] == 0.0
        assert Decimal(str(figures["allocated_usd"])) + Decimal(str(figures["idle_usd"])) == billed
        # The replaced node's hours went to whichever instance it was then.
        node_hours = dict(
            con.execute(
                "select resource_id, count(distinct hour) from gpu_allocation_hourly "
                "where node = 'ip-10-20-1-12' group by 1"
            ).fetchall()
        )
        assert sorted(node_hours.values()) == [12 * 24, 18 * 24 - 2]
        # A job's cost is its GPU-seconds at its nodes' price, to the cent in each machine-hour it
        # held: the log's first job on both p4d nodes, 2 x 8 GPUs for its Elapsed.
        log = (out / "jobs/slurm/sacct-2026-11-30.txt").read_text().splitlines()
        fields = next(line.split("|") for line in log if "|COMPLETED|2|" in line)
        h, m, s = (int(x) for x in fields[8].split(":"))
        seconds = h * 3600 + m * 60 + s
        job = next(j for j in figures["jobs"] if j["job_id"] == fields[0])
        assert job["gpu_hours"] == pytest.approx(16 * seconds / 3600)
        exact = 16 * seconds * instance("p4d.24xlarge").on_demand_usd_per_h / (8 * 3600)
        pieces = con.execute(
            "select count(*) from gpu_allocation_hourly where job_id = ?", [fields[0]]
        ).fetchone()[0]
        assert abs(Decimal(str(job["cost_usd"])) - exact) <= Decimal("0.01") * pieces
        # The g5s are speech's: their idle time is speech's, the p4d nodes' nobody's.
        teams = {t["team"]: t for t in figures["teams"]}
        assert teams["speech"]["idle_usd"] > 0 and teams[None]["idle_usd"] > 0
        assert teams[None]["allocated_usd"] == 0.0
    finally:
        con.close()
