"""Cost by GPU-seconds on a shared Slurm cluster whose bill names no job (issue 32).

The cluster: two p4d.24xlarge nodes (8 GPUs, $28.80 an hour: $0.001 a GPU-second) and one
g5.12xlarge (4 GPUs, $5.76 an hour: $0.0004 a GPU-second), billed hourly 00:00-03:00 without
tags; an `aws ec2 describe-instances` listing names them (ip-10-0-1-11, ip-10-0-1-12,
ip-10-0-2-21, the g5 tagged team=vision). Jobs, from sacct:

| job | team | nodes | GPUs | from-to | GPU-seconds | cost = GPU-s x price / (GPUs x 3600) |
|---|---|---|---|---|---|---|
| 101 | vision | ip-10-0-1-11 | 4 | 00:00-01:30 | 4 x 5,400 = 21,600 | 21,600 x 28.80 / 28,800 = 21.60 |
| 102 | llm | ip-10-0-1-[11-12] | 8 (4 a node) | 00:30-02:30 | 2 x 4 x 7,200 = 57,600 | 57.60 |
| 103_1, 103_2 | vision | ip-10-0-2-21 | 2 each | 00:00-01:00 | 2 x 3,600 = 7,200 each | 7,200 x 5.76 / 14,400 = 2.88 each |
| 104 | speech | ip-10-0-2-21 | 2 | 01:00-01:45 | 2 x 2,700 = 5,400 | 2.16 |
| 105 | llm | gpu-z-9 (no instance) | 8 | 00:00-01:00 | unmapped: holds nothing | - |

Bill: 2 x 3 x 28.80 + 3 x 5.76 = 172.80 + 17.28 = 190.08. Allocated 21.60 + 57.60 + 5.76 + 2.16
= 87.12; idle 190.08 - 87.12 = 102.96: ip-10-0-1-11 7.20 + 7.20 + 21.60 = 36.00, ip-10-0-1-12
21.60 + 14.40 + 21.60 = 57.60 (no team), the g5 0 + 3.60 + 5.76 = 9.36 (vision's).
A tagged fleet machine beside it (job_id j-9, team nlp, $10.00) keeps its tag link.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from athanor.cli import main
from athanor.ingest.deliveries import ingest_ec2_instances, ingest_job_file
from athanor.recommend.allocation import allocate_gpus, allocation_summary
from athanor.warehouse import insert_rows
from tests.support.rows import hourly_usage_lines

T0 = datetime(2026, 11, 3)
P4D_1, P4D_2, G5 = "i-0aaaaaaaaaaaaaa01", "i-0aaaaaaaaaaaaaa02", "i-0bbbbbbbbbbbbbb01"

SACCT = """JobID|JobIDRaw|Partition|Account|Submit|Start|End|Elapsed|State|NNodes|AllocTRES|NodeList
101|101|gpu|vision|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T01:30:00|01:30:00|COMPLETED|1|cpu=48,gres/gpu=4|ip-10-0-1-11
102|102|gpu|llm|2026-11-03T00:30:00|2026-11-03T00:30:00|2026-11-03T02:30:00|02:00:00|COMPLETED|2|cpu=96,gres/gpu=8,node=2|ip-10-0-1-[11-12]
102.batch|102|||2026-11-03T00:30:00|2026-11-03T00:30:00|2026-11-03T02:30:00|02:00:00|COMPLETED|1|gres/gpu=4|ip-10-0-1-11
103_[1-2]|103|small|vision|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T01:00:00|01:00:00|COMPLETED|1|gres/gpu=2|ip-10-0-2-21
104|104|small|speech|2026-11-03T01:00:00|2026-11-03T01:00:00|2026-11-03T01:45:00|00:45:00|COMPLETED|1|gres/gpu=2|ip-10-0-2-21
105|105|gpu|llm|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T01:00:00|01:00:00|COMPLETED|1|gres/gpu=8|gpu-z-9
"""


def describe_instances() -> dict:
    def instance(instance_id: str, kind: str, ip: str, name: str, tags: dict[str, str]) -> dict:
        return {
            "InstanceId": instance_id,
            "InstanceType": kind,
            "LaunchTime": "2026-11-01T00:00:00+00:00",
            "PrivateDnsName": f"ip-{ip.replace('.', '-')}.ec2.internal",
            "PrivateIpAddress": ip,
            "State": {"Name": "running"},
            "Tags": [{"Key": "Name", "Value": name}] + [{"Key": k, "Value": v} for k, v in tags.items()],
        }

    return {
        "Reservations": [
            {
                "Instances": [
                    instance(P4D_1, "p4d.24xlarge", "10.0.1.11", "gpu-a-1", {}),
                    instance(P4D_2, "p4d.24xlarge", "10.0.1.12", "gpu-a-2", {}),
                ]
            },
            {"Instances": [instance(G5, "g5.12xlarge", "10.0.2.21", "gpu-b-1", {"team": "vision"})]},
        ]
    }


def bill_lines(
    resource: str, kind: str, gpus: int, usd: str, hours: int, tags: dict[str, str] | None = None
) -> list[dict]:
    return hourly_usage_lines(
        f"arn:aws:ec2:us-east-1:111:instance/{resource}", T0, hours, cost=Decimal(usd), gpus=gpus,
        instance_type=kind, billing_period=(datetime(2026, 11, 1), datetime(2026, 12, 1)), tags=tags,
        commitment_discount_status=None,
    )  # fmt: skip


@pytest.fixture
def cluster(warehouse, tmp_path: Path):
    insert_rows(
        warehouse,
        "billing_facts",
        bill_lines(P4D_1, "p4d.24xlarge", 8, "28.80", 3)
        + bill_lines(P4D_2, "p4d.24xlarge", 8, "28.80", 3)
        + bill_lines(G5, "g5.12xlarge", 4, "5.76", 3)
        + bill_lines("i-0ccccccccccccccc1", "p4d.24xlarge", 8, "10.00", 1, {"team": "nlp", "job_id": "j-9"}),
    )
    listing = tmp_path / "instances.json"
    listing.write_text(json.dumps(describe_instances()))
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(SACCT)
    assert ingest_ec2_instances(warehouse, listing) == "instances.json: EC2 instances, 3 instances"
    assert ingest_job_file(warehouse, sacct).startswith("sacct.txt: slurm job log, 6 jobs")
    return warehouse


def test_every_jobs_cost_is_its_gpu_seconds_at_its_nodes_price(cluster, caplog) -> None:
    with caplog.at_level("INFO", logger="athanor.recommend.allocation"):
        result = allocate_gpus(cluster, "r1")
    summary = allocation_summary(cluster)
    jobs = {j["job_id"]: (j["team"], j["gpu_hours"], j["cost_usd"]) for j in summary["jobs"]}
    assert jobs == {
        "101": ("vision", 6.0, 21.60),
        "102": ("llm", 16.0, 57.60),
        "103_1": ("vision", 2.0, 2.88),
        "103_2": ("vision", 2.0, 2.88),
        "104": ("speech", 1.5, 2.16),
        "j-9": ("nlp", 8.0, 10.00),
    }
    assert (summary["billed_usd"], summary["allocated_usd"], summary["idle_usd"]) == (200.08, 97.12, 102.96)
    assert summary["teams"] == [
        {"team": "llm", "allocated_usd": 57.60, "idle_usd": 0.0},
        {"team": "nlp", "allocated_usd": 10.00, "idle_usd": 0.0},
        {"team": "speech", "allocated_usd": 2.16, "idle_usd": 0.0},
        {"team": "vision", "allocated_usd": 27.36, "idle_usd": 9.36},
        {"team": None, "allocated_usd": 0.0, "idle_usd": 93.60},
    ]
    # The listing names the nodes' instance types: the partition is no longer taken for one.
    kinds = dict(cluster.execute("select job_id, instance_type from job_runs").fetchall())
    assert (kinds["101"], kinds["103_2"], kinds["105"]) == ("p4d.24xlarge", "g5.12xlarge", "gpu")
    # The node nobody's instance was is listed, and its job holds nothing.
    assert result.unmapped_nodes == ("gpu-z-9",)
    assert any("1 node names jobs held map to no billed instance" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_allocated_and_idle_add_up_to_each_machine_hours_bill(cluster) -> None:
    allocate_gpus(cluster, "r1")
    rows = cluster.execute(
        """select resource_id, hour, any_value(hour_cost_usd), sum(cost_cents_usd),
                  sum(cost_cents_usd) filter (where kind = 'idle')
           from gpu_allocation_hourly group by all order by all"""
    ).fetchall()
    assert len(rows) == 10  # 3 machines x 3 hours + the tagged one
    for _resource, _hour, bill, allocated, _idle in rows:
        assert allocated == bill.quantize(Decimal("0.01"))
    idle = {(r[0], r[1].hour): r[4] for r in rows}
    assert [idle[(P4D_1, h)] for h in range(3)] == [Decimal("7.20"), Decimal("7.20"), Decimal("21.60")]
    assert [idle[(P4D_2, h)] for h in range(3)] == [Decimal("21.60"), Decimal("14.40"), Decimal("21.60")]
    assert [idle[(G5, h)] for h in range(3)] == [None, Decimal("3.60"), Decimal("5.76")]


def test_cents_are_shared_by_largest_remainder(warehouse, tmp_path: Path) -> None:
    # $10.00 for an hour of an 8-GPU node held by three jobs: 3, 3 and 2 GPUs. Exact shares 3.75,
    # 3.75, 2.50. Then $10.01: 3.75375, 3.75375, 2.5025 -> floors 375 + 375 + 250 = 1000 cents, the
    # one left goes to the largest remainder (0.375 cents, a tie of the two 3-GPU jobs: the first
    # job id), so 3.76 + 3.75 + 2.50 = 10.01.
    insert_rows(
        warehouse,
        "billing_facts",
        bill_lines(P4D_1, "p4d.24xlarge", 8, "10.00", 1)
        + [
            line
            | {"charge_period_start": T0 + timedelta(hours=1), "charge_period_end": T0 + timedelta(hours=2)}
            for line in bill_lines(P4D_1, "p4d.24xlarge", 8, "10.01", 1)
        ],
    )
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(
        "JobID|Partition|Account|Submit|Start|End|State|NNodes|AllocTRES|NodeList\n"
        f"1|gpu|a|{T0:%Y-%m-%dT%H:%M:%S}|{T0:%Y-%m-%dT%H:%M:%S}|2026-11-03T02:00:00|COMPLETED|1|gres/gpu=3|{P4D_1}\n"
        f"2|gpu|b|{T0:%Y-%m-%dT%H:%M:%S}|{T0:%Y-%m-%dT%H:%M:%S}|2026-11-03T02:00:00|COMPLETED|1|gres/gpu=3|{P4D_1}\n"
        f"3|gpu|c|{T0:%Y-%m-%dT%H:%M:%S}|{T0:%Y-%m-%dT%H:%M:%S}|2026-11-03T02:00:00|COMPLETED|1|gres/gpu=2|{P4D_1}\n"
    )
    ingest_job_file(warehouse, sacct)
    # No listing: the node list names the instance itself (an EC2 resource-based host name).
    result = allocate_gpus(warehouse, "r1")
    assert result.unmapped_nodes == ()
    got = warehouse.execute(
        "select hour(hour), job_id, cost_cents_usd from gpu_allocation_hourly order by all"
    ).fetchall()
    assert got == [
        (0, "1", Decimal("3.75")),
        (0, "2", Decimal("3.75")),
        (0, "3", Decimal("2.50")),
        (1, "1", Decimal("3.76")),
        (1, "2", Decimal("3.75")),
        (1, "3", Decimal("2.50")),
    ]
    # The period's summary shares its cents the same way, over the exact sums: teams a and b
    # 7.50375, c 5.0025 -> 7.50 + 7.50 + 5.00, and the cent left of 20.01 to a (a tie, key order).
    summary = allocation_summary(warehouse)
    assert summary["billed_usd"] == 20.01
    assert [(t["team"], t["allocated_usd"]) for t in summary["teams"]] == [
        ("a", 7.51),
        ("b", 7.5),
        ("c", 5.0),
    ]
    assert [(j["job_id"], j["cost_usd"]) for j in summary["jobs"]] == [("1", 7.5), ("2", 7.5), ("3", 5.0)]


def test_allocation_command_prints_the_issue_shape(settings, cluster, capsys) -> None:
    allocate_gpus(cluster, "r1")
    cluster.close()
    path = str(settings.warehouse)
    assert main(["allocation", "--warehouse", path, "--format", "json", "--until", "2026-11-04"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {k: printed[k] for k in ("billed_usd", "allocated_usd", "idle_usd")} == {
        "billed_usd": 200.08,
        "allocated_usd": 97.12,
        "idle_usd": 102.96,
    }
    assert printed["jobs"][:2] == [
        {"job_id": "102", "team": "llm", "gpu_hours": 16.0, "cost_usd": 57.6},
        {"job_id": "101", "team": "vision", "gpu_hours": 6.0, "cost_usd": 21.6},
    ]
    assert [j["job_id"] for j in printed["jobs"]][2:] == ["j-9", "103_1", "103_2", "104"]
    assert main(["allocation", "--warehouse", path, "--since", "2026-11-04"]) == 0
    table = capsys.readouterr().out
    assert "billed $0.00 = allocated $0.00 + idle $0.00 + nobody's $0.00" in table


def test_tagged_machines_keep_their_tags_and_unused_reservations_are_idle(warehouse) -> None:
    # A fleet machine the telemetry names (host and instance) with a job_id tag, another with only
    # a team tag, and a reservation's unused hour: no scheduler job, so the tags decide, and the
    # unused hour is the pool's idle time. The telemetry alone makes no machine a cluster node.
    unused = bill_lines("ri-unused-1", "p4d.24xlarge", 8, "19.66", 1)
    unused[0]["commitment_discount_status"] = "Unused"
    insert_rows(
        warehouse,
        "billing_facts",
        bill_lines("i-0ddddddddddddddd1", "p4d.24xlarge", 8, "32.77", 1, {"team": "nlp", "job_id": "j-1"})
        + bill_lines("i-0ddddddddddddddd2", "p4d.24xlarge", 8, "32.77", 1, {"team": "cv"})
        + unused,
    )
    insert_rows(
        warehouse,
        "gpu_samples",
        [
            {
                "load_id": "T1",
                "source_file": "t.csv",
                "source_row": 1,
                "source_format": "nvidia_smi",
                "host": "node-7",
                "gpu_id": "GPU-1",
                "gpu_index": 0,
                "instance_id": "i-0ddddddddddddddd1",
                "sampled_at": T0,
                "utilisation_pct": 50.0,
            }
        ],
    )
    allocate_gpus(warehouse, "r1")
    rows = warehouse.execute(
        "select resource_id, kind, job_id, team, pool, cost_cents_usd from gpu_allocation_hourly order by 1"
    ).fetchall()
    assert rows == [
        ("i-0ddddddddddddddd1", "tagged", "j-1", "nlp", "p4d.24xlarge", Decimal("32.77")),
        ("i-0ddddddddddddddd2", "team_tagged", None, "cv", "p4d.24xlarge", Decimal("32.77")),
        ("ri-unused-1", "idle", None, None, "p4d.24xlarge", Decimal("19.66")),
    ]
    assert warehouse.execute("select node, source from node_map").fetchall() == [("node-7", "telemetry")]


def pod(name: str, team: str, node: str, gpus: int, start: str, end: str | None, phase: str) -> dict:
    """One pod as `kubectl get pods -o json` lists it (EKS names nodes by PrivateDnsName)."""
    state = (
        {"terminated": {"startedAt": start, "finishedAt": end, "exitCode": 0}}
        if end
        else {"running": {"startedAt": start}}
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "training",
            "labels": {"team": team},
            "creationTimestamp": start,
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "main", "resources": {"limits": {"cpu": "8", "nvidia.com/gpu": str(gpus)}}},
                {"name": "sidecar", "resources": {"limits": {"cpu": "1"}}},
            ],
        },
        "status": {
            "phase": phase,
            "startTime": start,
            "containerStatuses": [{"name": "main", "state": state}],
        },
    }


@pytest.mark.slow
def test_a_kubernetes_pod_list_on_the_same_cluster_costs_the_same(warehouse, tmp_path: Path) -> None:
    # The module's cluster run as pods: job 102 is two workers of 4 GPUs (28.80 each), the array's
    # tasks two pods; a pod without GPUs is skipped. Same bill, same idle: 102.96.
    insert_rows(
        warehouse,
        "billing_facts",
        bill_lines(P4D_1, "p4d.24xlarge", 8, "28.80", 3)
        + bill_lines(P4D_2, "p4d.24xlarge", 8, "28.80", 3)
        + bill_lines(G5, "g5.12xlarge", 4, "5.76", 3),
    )
    listing = tmp_path / "instances.json"
    listing.write_text(json.dumps(describe_instances()))
    ingest_ec2_instances(warehouse, listing)
    n11, n12, n21 = (f"ip-10-0-{ip}.ec2.internal" for ip in ("1-11", "1-12", "2-21"))
    pods = [
        pod("train-101", "vision", n11, 4, "2026-11-03T00:00:00Z", "2026-11-03T01:30:00Z", "Succeeded"),
        pod("train-102-worker-0", "llm", n11, 4, "2026-11-03T00:30:00Z", "2026-11-03T02:30:00Z", "Succeeded"),
        pod("train-102-worker-1", "llm", n12, 4, "2026-11-03T00:30:00Z", "2026-11-03T02:30:00Z", "Succeeded"),
        pod("sweep-103-1", "vision", n21, 2, "2026-11-03T00:00:00Z", "2026-11-03T01:00:00Z", "Succeeded"),
        pod("sweep-103-2", "vision", n21, 2, "2026-11-03T00:00:00Z", "2026-11-03T01:00:00Z", "Succeeded"),
        pod("eval-104", "speech", n21, 2, "2026-11-03T01:00:00Z", "2026-11-03T01:45:00Z", "Failed"),
        pod("dashboard", "ops", n21, 0, "2026-11-03T00:00:00Z", None, "Running"),
    ]
    pods[-1]["spec"]["containers"][0]["resources"]["limits"].pop("nvidia.com/gpu")
    listed = tmp_path / "pods.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    assert ingest_job_file(warehouse, listed) == "pods.json: kubernetes job log, 6 jobs, 0% censored"
    allocate_gpus(warehouse, "r1")
    summary = allocation_summary(warehouse)
    assert {j["job_id"]: (j["team"], j["gpu_hours"], j["cost_usd"]) for j in summary["jobs"]} == {
        "train-101": ("vision", 6.0, 21.60),
        "train-102-worker-0": ("llm", 8.0, 28.80),
        "train-102-worker-1": ("llm", 8.0, 28.80),
        "sweep-103-1": ("vision", 2.0, 2.88),
        "sweep-103-2": ("vision", 2.0, 2.88),
        "eval-104": ("speech", 1.5, 2.16),
    }
    assert (summary["billed_usd"], summary["allocated_usd"], summary["idle_usd"]) == (190.08, 87.12, 102.96)
    kinds = dict(warehouse.execute("select job_id, instance_type from job_runs").fetchall())
    assert kinds["train-101"] == "p4d.24xlarge" and kinds["eval-104"] == "g5.12xlarge"


def test_a_bill_tag_naming_the_node_maps_it(warehouse, tmp_path: Path) -> None:
    # No listing: the bill's lines carry the node's name under the tag the setting names.
    insert_rows(
        warehouse,
        "billing_facts",
        bill_lines(P4D_1, "p4d.24xlarge", 8, "28.80", 1, {"slurm-node": "gpu-x-1"}),
    )
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(
        "JobID|Partition|Account|Submit|Start|End|State|NNodes|AllocTRES|NodeList\n"
        "1|gpu|a|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T00:30:00|COMPLETED|1|gres/gpu=8|gpu-x-1\n"
    )
    ingest_job_file(warehouse, sacct)
    # Without the setting the node is unmapped and the machine-hour nobody's.
    assert allocate_gpus(warehouse, "r1").unmapped_nodes == ("gpu-x-1",)
    assert warehouse.execute("select kind from gpu_allocation_hourly").fetchall() == [("unattributed",)]
    assert allocate_gpus(warehouse, "r2", node_tag_key="slurm-node").unmapped_nodes == ()
    got = warehouse.execute(
        "select kind, job_id, cost_cents_usd from gpu_allocation_hourly order by kind"
    ).fetchall()
    # 8 GPUs x 1,800 s at $0.001 a GPU-second: 14.40; the other half hour idle.
    assert got == [("idle", None, Decimal("14.40")), ("job", "1", Decimal("14.40"))]
    assert warehouse.execute("select node, source from node_map").fetchall() == [("gpu-x-1", "bill_tag")]


def test_settings_read_the_allocation_settings(tmp_path: Path) -> None:
    from athanor.settings import Settings

    env = {"ATHANOR_HOME": str(tmp_path)}
    assert (Settings.from_env(env).job_reject_max_share, Settings.from_env(env).node_tag_key) == (0.1, None)
    env |= {"ATHANOR_JOB_REJECT_MAX_SHARE": "0.25", "ATHANOR_NODE_TAG_KEY": "slurm-node"}
    assert (Settings.from_env(env).job_reject_max_share, Settings.from_env(env).node_tag_key) == (
        0.25,
        "slurm-node",
    )


def test_describe_instances_reads_each_instances_names_and_refuses_one_without_id(tmp_path: Path) -> None:
    from athanor.ingest.inventory import InventoryError, read_ec2_instances

    frame = read_ec2_instances(describe_instances())
    first = frame.iloc[0]
    assert (first["instance_id"], first["private_dns_name"], first["name_tag"]) == (
        P4D_1,
        "ip-10-0-1-11.ec2.internal",
        "gpu-a-1",
    )
    assert pd.isna(first["team"])
    assert str(first["launch_time"]) == "2026-11-01 00:00:00" and frame.iloc[2]["team"] == "vision"
    broken = describe_instances()
    del broken["Reservations"][1]["Instances"][0]["InstanceId"]
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(InventoryError, match="reservation 2, instance 1: InstanceId missing"):
        read_ec2_instances(path)


def dcgm_samples(host: str, gpu: str, pod: str, start: datetime, n: int, **extra) -> list[dict]:
    """A GPU's DCGM samples every 5 minutes, labelled with the pod that held it."""
    return [
        {
            "load_id": "T1",
            "source_file": "dcgm.json",
            "source_row": k + 1,
            "source_format": "prometheus_dcgm",
            "host": host,
            "gpu_id": gpu,
            "gpu_index": 0,
            "instance_id": None,
            "pod": pod,
            "namespace": "serving",
            "sampled_at": start + timedelta(minutes=5 * k),
            "utilisation_pct": 60.0,
            "mig_instance": extra.get("mig_instance"),
            "mig_profile": extra.get("mig_profile"),
            "gpu_share": extra.get("gpu_share"),
        }
        for k in range(n)
    ]


def dcgm_pod_hour(warehouse, tmp_path: Path) -> None:
    """A $28.80 hour of ip-10-0-1-11 (p4d) with no pod list: the DCGM exporter labels GPU-1 and
    GPU-2 with pod infer-1, and a 3g.40gb MIG instance of GPU-3 with pod small-2, 00:00-01:00."""
    insert_rows(warehouse, "billing_facts", bill_lines(P4D_1, "p4d.24xlarge", 8, "28.80", 1))
    listing = tmp_path / "instances.json"
    listing.write_text(json.dumps(describe_instances()))
    ingest_ec2_instances(warehouse, listing)
    host = "ip-10-0-1-11.ec2.internal"
    insert_rows(
        warehouse,
        "gpu_samples",
        dcgm_samples(host, "GPU-1", "infer-1", T0, 12)
        + dcgm_samples(host, "GPU-2", "infer-1", T0, 12)
        + dcgm_samples(
            host, "GPU-3", "small-2", T0, 12, mig_instance="1", mig_profile="3g.40gb", gpu_share=3 / 7
        ),
    )


def test_pods_the_dcgm_exporter_names_hold_their_gpus(warehouse, tmp_path: Path) -> None:
    # No pod list: on ip-10-0-1-11 (p4d, $0.001 a GPU-second) the exporter labels GPU-1 and GPU-2
    # with pod infer-1 from 00:00 to 01:00 (12 samples each, 5 minutes apart: the last counts for
    # the median 5 minutes): 2 x 3,600 GPU-s = $7.20. A 3g.40gb MIG instance of GPU-3 (3/7 of it)
    # with pod small-2 for the same hour: 3,600 x 3/7 = 1,542.857 GPU-s = $1.542857 -> $1.54.
    # The hour's idle: 28.80 - 7.20 - 1.542857 = 20.057143 -> $20.06; the cents add up to $28.80.
    dcgm_pod_hour(warehouse, tmp_path)
    allocate_gpus(warehouse, "r1")
    rows = warehouse.execute(
        "select kind, job_id, job_source, team, gpu_seconds, cost_cents_usd from gpu_allocation_hourly order by kind, job_id"
    ).fetchall()
    assert [(r[0], r[1], r[2], r[3], r[5]) for r in rows] == [
        ("idle", None, None, None, Decimal("20.06")),
        ("job", "infer-1", "dcgm", "serving", Decimal("7.20")),
        ("job", "small-2", "dcgm", "serving", Decimal("1.54")),
    ]
    assert rows[1][4] == pytest.approx(7200.0) and rows[2][4] == pytest.approx(3600 * 3 / 7)


def test_a_listing_delivered_with_the_log_names_its_jobs_instance_types(settings, tmp_path: Path) -> None:
    from athanor.ingest.deliveries import ingest_paths
    from athanor.warehouse import connect

    folder = tmp_path / "night"
    folder.mkdir()
    (folder / "sacct.txt").write_text(SACCT)
    (folder / "instances.json").write_text(json.dumps(describe_instances()))
    outcome = ingest_paths([folder], settings.warehouse, settings=settings)
    assert outcome.errors == []
    con = connect(settings.warehouse)
    try:
        kinds = dict(con.execute("select job_id, instance_type from job_runs").fetchall())
    finally:
        con.close()
    assert (kinds["102"], kinds["104"], kinds["105"]) == ("p4d.24xlarge", "g5.12xlarge", "gpu")
