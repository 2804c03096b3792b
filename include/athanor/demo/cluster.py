"""The demo's shared Slurm cluster: long-lived GPU nodes whose bill names no job (issue 32).

Beside the tagged fleet, four teams share a small cluster in its own payer account
(`333333333333`, FOCUS 1.2): two p4d.24xlarge nodes (8 GPUs) in partition `p4d` and two
g5.12xlarge nodes (4 GPUs) in partition `g5`, up for the last `days` days of the window, billed
on demand every hour without tags. What ties the bill to the jobs is what a real cluster has:

- `slurm/sacct-<day>.txt`: `sacct --parsable2` of the cluster's jobs (UTC), node lists in
  Slurm's compacted form (`ip-10-20-1-[11-12]`), job arrays' finished tasks one line each
  (`7012_3`) and their pending tasks compacted (`7012_[5-8]`), running and pending jobs at the
  end, a few job steps;
- `ec2/<day>/describe-instances.json`: `aws ec2 describe-instances` at the cluster's start and
  at the end. Node ip-10-20-1-12's first instance failed on day `replace_day` and was replaced
  two hours later by a new instance with the same name and address, which only the first
  listing shows: the node map tells which instance the node was at each hour.

The g5 nodes carry the tag team=speech (their idle time is speech's); the p4d nodes are
nobody's (their idle time is the cluster's). A deterministic function of the demo's seed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from athanor.demo.bills import write_focus
from athanor.demo.config import REGION_NAMES, REGION_PREFIX, DemoConfig
from athanor.demo.jobs import cutoff_of
from athanor.demo.lines import EC2_INSTANCE_PRODUCT, LINE_SCHEMA, MICRO, QTY, FileTotals, Rows
from athanor.demo.stable import dollars, instance_id, period_bounds, sku, to_micro
from athanor.reference.instances import instance

PAYER = "333333333333"
PAYER_NAME = "Demo Shared Cluster (Slurm)"
USAGE_ACCOUNT = "300000000001"
REGION = "us-east-1"
AZ = "us-east-1a"


@dataclass(frozen=True)
class Node:
    host: str  # the Slurm node name: the instance's PrivateDnsName's first label
    ip: str
    name_tag: str
    instance_type: str
    partition: str
    team: str | None  # the tag team: whose the node's idle time is


@dataclass(frozen=True)
class ClusterConfig:
    days: int = 30
    nodes: tuple[Node, ...] = (
        Node("ip-10-20-1-11", "10.20.1.11", "gpu-a-1", "p4d.24xlarge", "p4d", None),
        Node("ip-10-20-1-12", "10.20.1.12", "gpu-a-2", "p4d.24xlarge", "p4d", None),
        Node("ip-10-20-2-21", "10.20.2.21", "gpu-b-1", "g5.12xlarge", "g5", "speech"),
        Node("ip-10-20-2-22", "10.20.2.22", "gpu-b-2", "g5.12xlarge", "g5", "speech"),
    )
    replaced_host: str = "ip-10-20-1-12"
    replace_day: int = 12  # days after the cluster's start
    replace_gap_h: int = 2
    jobs_per_day: float = 14.0
    teams: tuple[tuple[str, float], ...] = (("llm", 0.3), ("vision", 0.3), ("speech", 0.25), ("recsys", 0.15))
    first_job_id: int = 7001


@dataclass(frozen=True)
class Instance:
    instance_id: str
    node: Node
    launch_s: int
    end_s: int | None  # terminated at (None: still running)


@dataclass(frozen=True)
class Task:
    job_id: str  # as sacct prints it once it runs: 7001, an array task 7012_3
    array: int | None  # the array's job id for a task
    task: int | None
    team: str
    partition: str
    hosts: tuple[str, ...]
    gpus_per_node: int
    submit_s: int
    start_s: int
    end_s: int
    state: str  # the end state if it ends (COMPLETED, FAILED, CANCELLED)
    model: str


def _epoch(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: int) -> str:
    days, rest = divmod(int(seconds), 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def compact(hosts: tuple[str, ...]) -> str:
    """Slurm's compacted host list: ip-10-20-1-11,ip-10-20-1-12 -> ip-10-20-1-[11-12]."""
    if len(hosts) == 1:
        return hosts[0]
    prefix = hosts[0].rsplit("-", 1)[0] + "-"
    if all(h.startswith(prefix) and h[len(prefix) :].isdigit() for h in hosts):
        numbers = sorted(int(h[len(prefix) :]) for h in hosts)
        if numbers == list(range(numbers[0], numbers[-1] + 1)):
            return f"{prefix}[{numbers[0]}-{numbers[-1]}]"
        return f"{prefix}[{','.join(map(str, numbers))}]"
    return ",".join(hosts)


def cluster_start(cfg: DemoConfig, cluster: ClusterConfig) -> int:
    return _epoch(cfg.end_date - timedelta(days=cluster.days - 1))


def instances(cfg: DemoConfig, cluster: ClusterConfig) -> list[Instance]:
    """Every instance the cluster ran, the replaced node's two included."""
    start = cluster_start(cfg, cluster)
    failed = start + cluster.replace_day * 86400
    out = []
    for node in cluster.nodes:
        first = Instance(instance_id("cluster", cfg.seed, node.host, 0), node, start, None)
        if node.host == cluster.replaced_host:
            out.append(Instance(first.instance_id, node, start, failed))
            later = failed + cluster.replace_gap_h * 3600
            out.append(Instance(instance_id("cluster", cfg.seed, node.host, 1), node, later, None))
        else:
            out.append(first)
    return out


def simulate_cluster(cfg: DemoConfig, cluster: ClusterConfig) -> list[Task]:
    """Jobs submitted day by day, placed first come first served on the GPUs free earliest."""
    rng = np.random.default_rng([cfg.seed, 32])
    start = cluster_start(cfg, cluster)
    outage = (
        start + cluster.replace_day * 86400,
        start + cluster.replace_day * 86400 + cluster.replace_gap_h * 3600,
    )
    free = {
        node.host: np.full(instance(node.instance_type).gpu_count, start, dtype=np.int64)
        for node in cluster.nodes
    }
    by_partition: dict[str, list[Node]] = {}
    for node in cluster.nodes:
        by_partition.setdefault(node.partition, []).append(node)
    teams = [t for t, _ in cluster.teams]
    weights = np.array([w for _, w in cluster.teams])
    models = {"llm": "llama-8b", "vision": "vit-l", "speech": "whisper-l", "recsys": "dlrm-v2"}

    def place(
        partition: str, nodes: int, gpus: int, submit: int, duration: int
    ) -> tuple[tuple[str, ...], int]:
        best: tuple[int, tuple[str, ...]] | None = None
        pool = by_partition[partition]
        groups = [tuple(pool[i : i + nodes]) for i in range(len(pool) - nodes + 1)]
        for group in groups:
            at = max(submit, *(int(np.sort(free[n.host])[gpus - 1]) for n in group))
            if (
                any(n.host == cluster.replaced_host for n in group)
                and at < outage[1]
                and at + duration > outage[0]
            ):
                at = max(at, outage[1])
            if best is None or at < best[0]:
                best = (at, tuple(n.host for n in group))
        assert best is not None
        at, hosts = best
        for host in hosts:
            order = np.argsort(free[host], kind="stable")[:gpus]
            free[host][order] = at + duration
        return hosts, at

    tasks: list[Task] = []
    job_id = cluster.first_job_id
    for day in range(cluster.days):
        n = int(rng.poisson(cluster.jobs_per_day))
        submits = np.sort(start + day * 86400 + rng.integers(0, 86400, n))
        for submit in submits:
            team = str(rng.choice(teams, p=weights / weights.sum()))
            kind = rng.choice(["multi", "p4d", "g5", "array"], p=[0.08, 0.32, 0.35, 0.25])
            count = int(rng.integers(3, 9)) if kind == "array" else 1
            partition = (
                "p4d" if kind in ("multi", "p4d") or (kind == "array" and rng.random() < 0.4) else "g5"
            )
            nodes = 2 if kind == "multi" else 1
            max_gpus = 8 if partition == "p4d" else 4
            gpus = (
                max_gpus if kind == "multi" else int(rng.choice([g for g in (1, 2, 4, 8) if g <= max_gpus]))
            )
            if kind == "array":
                gpus = 1 if partition == "g5" else 2
            median_h = {"multi": 6.0, "p4d": 2.5, "g5": 1.5, "array": 1.0}[str(kind)]
            for t in range(1, count + 1):
                duration = int(min(max(median_h * 3600 * rng.lognormal(0.0, 0.8), 300), 48 * 3600))
                roll = rng.random()
                state = "FAILED" if roll < 0.08 else "CANCELLED" if roll < 0.12 else "COMPLETED"
                if state != "COMPLETED":
                    duration = max(60, int(duration * rng.uniform(0.1, 0.9)))
                hosts, at = place(partition, nodes, gpus, int(submit), duration)
                tasks.append(
                    Task(
                        job_id=f"{job_id}_{t}" if kind == "array" else str(job_id),
                        array=job_id if kind == "array" else None,
                        task=t if kind == "array" else None,
                        team=team,
                        partition=partition,
                        hosts=hosts,
                        gpus_per_node=gpus,
                        submit_s=int(submit),
                        start_s=at,
                        end_s=at + duration,
                        state=state,
                        model=models[team],
                    )
                )
            job_id += 1
    # A sweep submitted an hour before the end: 12 tasks of a whole g5 each, two run at a time,
    # so the log ends with the rest pending in sacct's compacted form.
    sweep_submit = start + cluster.days * 86400 - 3600
    for t in range(1, 13):
        hosts, at = place("g5", 1, 4, sweep_submit, 2 * 3600)
        tasks.append(
            Task(
                f"{job_id}_{t}",
                job_id,
                t,
                "speech",
                "g5",
                hosts,
                4,
                sweep_submit,
                at,
                at + 2 * 3600,
                "COMPLETED",
                models["speech"],
            )
        )
    return tasks


SACCT_FIELDS = "JobID|JobIDRaw|Partition|Account|User|Submit|Start|End|Elapsed|State|NNodes|AllocTRES|NodeList|JobName|Comment"


def sacct_lines(tasks: list[Task], cutoff: int) -> list[str]:
    """The cluster's jobs as `sacct --parsable2` prints them at `cutoff` (steps after some)."""
    lines = [SACCT_FIELDS]
    pending_arrays: dict[int, list[Task]] = {}
    raw = 9_000_000
    for task in tasks:
        if task.submit_s >= cutoff:
            continue
        raw += 1
        tres = f"cpu={12 * task.gpus_per_node * len(task.hosts)},gres/gpu={task.gpus_per_node * len(task.hosts)},node={len(task.hosts)}"
        common = f"{task.partition}|{task.team}|{task.team}-user|{_iso(task.submit_s)}"
        comment = f"project=shared-cluster model={task.model}"
        name = f"{task.model}-{task.job_id}"
        if task.start_s >= cutoff:
            if task.array is not None:
                pending_arrays.setdefault(task.array, []).append(task)
                continue
            lines.append(
                f"{task.job_id}|{raw}|{common}|Unknown|Unknown|00:00:00|PENDING|{len(task.hosts)}||None assigned|{name}|{comment}"
            )
            continue
        nodes = compact(task.hosts)
        if task.end_s > cutoff:
            state, end, elapsed = "RUNNING", "Unknown", _elapsed(cutoff - task.start_s)
        else:
            state, end, elapsed = task.state, _iso(task.end_s), _elapsed(task.end_s - task.start_s)
        raw_id = raw if task.array is None else raw
        lines.append(
            f"{task.job_id}|{raw_id}|{common}|{_iso(task.start_s)}|{end}|{elapsed}|{state}|{len(task.hosts)}|{tres}|{nodes}|{name}|{comment}"
        )
        if raw % 5 == 0 and state != "RUNNING":  # a batch step: the reader skips it
            lines.append(
                f"{task.job_id}.batch|{raw}.batch|{task.partition}|{task.team}||{_iso(task.start_s)}|{_iso(task.start_s)}|{end}|{elapsed}|{state}|1|gres/gpu={task.gpus_per_node}|{task.hosts[0]}|batch|"
            )
    # An array's tasks not started yet: one compacted line, as sacct prints them.
    for array, waiting in sorted(pending_arrays.items()):
        first = waiting[0]
        numbers = [t.task for t in waiting]
        spec = (
            f"{numbers[0]}-{numbers[-1]}"
            if numbers == list(range(numbers[0], numbers[-1] + 1))
            else ",".join(map(str, numbers))
        )
        raw += 1
        lines.append(
            f"{array}_[{spec}]|{array}|{first.partition}|{first.team}|{first.team}-user|{_iso(first.submit_s)}|Unknown|Unknown|00:00:00|PENDING|1||None assigned|{first.model}-{array}|project=shared-cluster model={first.model}"
        )
    return lines


def describe_instances(listed: list[Instance], at: int) -> dict:
    """`aws ec2 describe-instances` at `at`: the instances running then."""
    reservations = []
    for inst in listed:
        if inst.launch_s > at or (inst.end_s is not None and inst.end_s <= at):
            continue
        tags = [{"Key": "Name", "Value": inst.node.name_tag}, {"Key": "cluster", "Value": "shared-slurm"}]
        if inst.node.team:
            tags.append({"Key": "team", "Value": inst.node.team})
        reservations.append(
            {
                "ReservationId": "r-0" + inst.instance_id[3:],
                "OwnerId": USAGE_ACCOUNT,
                "Instances": [
                    {
                        "InstanceId": inst.instance_id,
                        "InstanceType": inst.node.instance_type,
                        "LaunchTime": _iso(inst.launch_s) + "+00:00",
                        "Placement": {"AvailabilityZone": AZ},
                        "PrivateDnsName": f"{inst.node.host}.ec2.internal",
                        "PrivateIpAddress": inst.node.ip,
                        "State": {"Code": 16, "Name": "running"},
                        "Tags": tags,
                    }
                ],
            }
        )
    return {"Reservations": reservations}


def bill_lines(cfg: DemoConfig, cluster: ClusterConfig, cutoff: int) -> pa.Table:
    """Every instance's hours up to `cutoff`, on demand, untagged: what the cluster's bill holds."""
    rows = Rows()
    for inst in instances(cfg, cluster):
        end = min(inst.end_s or cutoff, cutoff)
        hours = np.arange(inst.launch_s, end, 3600, dtype=np.int64)
        n = len(hours)
        if n == 0:
            continue
        spec = instance(inst.node.instance_type)
        rate = to_micro(spec.on_demand_usd_per_h)
        p_start, p_end = period_bounds(hours)
        rows.add(
            n,
            payer_account_id=PAYER,
            payer_account_name=PAYER_NAME,
            usage_account_id=USAGE_ACCOUNT,
            usage_account_name="shared-cluster",
            billing_period_start=p_start,
            billing_period_end=p_end,
            charge_start=hours,
            charge_end=hours + 3600,
            line_type="Usage",
            charge_category="Usage",
            charge_frequency="Usage-Based",
            pricing_category="Standard",
            **EC2_INSTANCE_PRODUCT,
            region_id=REGION,
            region_name=REGION_NAMES[REGION],
            availability_zone=AZ,
            resource_id=f"arn:aws:ec2:{REGION}:{USAGE_ACCOUNT}:instance/{inst.instance_id}",
            resource_type="Instance",
            instance_type=spec.instance_type,
            normalization_factor=spec.normalization_factor,
            usage_type=f"{REGION_PREFIX[REGION]}-BoxUsage:{spec.instance_type}",
            operation="RunInstances",
            description=f"${dollars(rate)} per On Demand Linux {spec.instance_type} Instance Hour",
            sku_id=sku(REGION, spec.instance_type, "od"),
            unit="Hrs",
            quantity_e10=QTY,
            list_rate_micro=rate,
            rate_micro=rate,
            billed_micro=rate,
            effective_micro=rate,
            list_micro=rate,
        )
    if not rows.groups:  # the cluster starts after the delivery's day
        return LINE_SCHEMA.empty_table()
    return rows.table().sort_by([("charge_start", "ascending"), ("resource_id", "ascending")])


def write_cluster(
    out: Path, cfg: DemoConfig, as_of: date | None = None, cluster: ClusterConfig | None = None
) -> dict:
    """Write the cluster's bill (FOCUS, one file per month), sacct log and instance listings."""
    cluster = cluster or ClusterConfig()
    cutoff = cutoff_of(cfg, as_of)
    table = bill_lines(cfg, cluster, cutoff)
    files: list[dict[str, object]] = []
    period = table.column("billing_period_start").cast(pa.int64()).to_numpy()
    for month_start in sorted(set(period.tolist())):
        label = f"{datetime.fromtimestamp(month_start, UTC):%Y-%m}"
        rel = Path("billing/focus", PAYER, f"billing_period={label}", f"focus-{label}.csv.gz")
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        totals: FileTotals = write_focus(table.filter(pa.array(period == month_start)), out / rel, "csv.gz")
        files.append({**totals.as_dict(), "path": rel.as_posix(), "kind": "focus-1.2"})
    tasks = simulate_cluster(cfg, cluster)
    day = datetime.fromtimestamp(cutoff - 86400, UTC).date()
    sacct = out / "jobs" / "slurm" / f"sacct-{day.isoformat()}.txt"
    sacct.parent.mkdir(parents=True, exist_ok=True)
    sacct.write_text("\n".join(sacct_lines(tasks, cutoff)) + "\n")
    listed = instances(cfg, cluster)
    start = cluster_start(cfg, cluster)
    for at in sorted({start, cutoff - 1}):
        stamp = datetime.fromtimestamp(at, UTC).date().isoformat()
        path = out / "ec2" / stamp / "describe-instances.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(describe_instances(listed, at), indent=1) + "\n")
        files.append({"path": path.relative_to(out).as_posix(), "kind": "ec2_instances"})
    files.append({"path": sacct.relative_to(out).as_posix(), "kind": "slurm"})
    return {
        "files": files,
        "jobs": sum(1 for t in tasks if t.submit_s < cutoff),
        "line_items": table.num_rows,
        "usd": sum(int(v) for v in table.column("effective_micro").to_pylist()) / MICRO,
    }
