"""The demo fleet's GPU telemetry, the same fleet its job log and bill describe.

For the last `TELEMETRY_DAYS` days before the delivery's cutoff, every instance the bill
shows running is sampled every `STEP_S` seconds, each team through the collector a team of
its kind would run:

- vision: nvidia-smi `--format=csv` (units in values), one file per instance and day, named
  `<host>.nvidia-smi.<day>.csv`; speech: the same with `csv,nounits`;
- llm (Kubernetes): the DCGM exporter's metrics as a Prometheus query_range answer, one file
  per day (GR_ENGINE_ACTIVE on the H100s only: profiling metrics need a recent exporter);
- recsys (SageMaker training): CloudWatch GetMetricData answers, one per job and day,
  GPUUtilization and GPUMemoryUtilization per Host `<job>/algo-<n>` summed over the host's
  GPUs, as CloudWatch reports them.

Each collector writes a folder per day (`telemetry/<collector>/<day>/`): a night's delivery.

Hosts are named after their EC2 instance (`<instance-id>.ec2.internal`, EC2's resource-based
host names), so samples meet the bill's resource ids. What the samples show:

- busy GPUs while a job runs (60-100 %, memory near the job's peak, power near the board's);
- a job of model yolo-x (a small detector on an 8-GPU node) keeps one GPU busy and the
  others at 0 %;
- idle nodes: `IDLE_SHARE` of the on-demand and committed instances of vision, speech and
  llm jobs ending in the window stay up `IDLE_HOURS` after their job ends, at 0-2 %. Those
  hours are billed too (`idle_tail_s` lengthens the instance in `athanor.demo.usage`), so
  the idle cost is in the bill; SageMaker stops its instances with the job, so recsys has none;
- gaps in collection: one vision host's collector is down two hours, and Prometheus misses
  40 minutes of every llm host, on the window's middle day.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from athanor.demo.config import DemoConfig
from athanor.demo.jobs import Fleet
from athanor.demo.stable import digest, epoch, unit_hash, uuid_of
from athanor.reference import gpus as catalog

TELEMETRY_DAYS = 3
STEP_S = 300
IDLE_SHARE = 0.2
IDLE_HOURS = (3.0, 9.0)
IDLE_TEAMS = ("vision", "speech", "llm")
ONE_GPU_MODELS = ("yolo-x",)
COLLECTOR = {
    "vision": "nvidia_smi",
    "speech": "nvidia_smi_nounits",
    "llm": "prometheus",
    "recsys": "cloudwatch",
}
# Seconds after the window's middle day starts, and how long: a collector down, a scrape gap.
SMI_GAP = (3 * 3600, 2 * 3600)
PROMETHEUS_GAP = (12 * 3600, 40 * 60)
NVSMI_HEADER = "timestamp, name, pci.bus_id, uuid, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W]"
# nvidia-smi's names of the catalogue's GPUs.
SMI_NAMES = {
    "A100-40GB": "NVIDIA A100-SXM4-40GB",
    "A100-80GB": "NVIDIA A100-SXM4-80GB",
    "H100": "NVIDIA H100 80GB HBM3",
    "A10G": "NVIDIA A10G",
    "L4": "NVIDIA L4",
}


def window(cfg: DemoConfig) -> tuple[int, int]:
    """(start, end) in seconds of the days telemetry covers: the config's last days."""
    end = epoch(cfg.end_date + timedelta(days=1))
    return end - TELEMETRY_DAYS * 86400, end


def idle_tail_s(cfg: DemoConfig, jobs: pd.DataFrame, runs: pd.DataFrame) -> np.ndarray:
    """Seconds each instance run (`runs`: job, seg, k, end_s; one row per instance per run
    segment) stays up after its segment ends: a node left running after its job."""
    start, end = window(cfg)
    job = runs["job"].to_numpy()
    last_seg = runs["seg"].to_numpy() == runs.groupby("job")["seg"].transform("max").to_numpy()
    eligible = (
        last_seg
        & np.isin(jobs["final_state"].to_numpy()[job], ("completed", "failed"))
        & np.isin(jobs["team"].to_numpy()[job], IDLE_TEAMS)
        & (jobs["pricing_model"].to_numpy()[job] != "spot")
        & (runs["end_s"].to_numpy() >= start)
        & (runs["end_s"].to_numpy() < end)
    )
    ids = jobs["job_id"].to_numpy()[job]
    tail = np.zeros(len(runs), dtype=np.int64)
    for i in np.flatnonzero(eligible):
        key = (cfg.seed, "idle", ids[i], int(runs["seg"].iat[i]), int(runs["k"].iat[i]))
        if unit_hash(*key) < IDLE_SHARE:
            low, high = IDLE_HOURS
            tail[i] = int((low + (high - low) * unit_hash(*key, "hours")) * 3600) // STEP_S * STEP_S
    return tail


@dataclass(frozen=True)
class Instance:
    resource_id: str
    job_id: str
    job_index: int
    k: int  # the instance's place in its job (algo-<k+1>)
    team: str
    model: str
    instance_type: str
    gpus: int
    gpu_model: str
    memory_gib: float
    board_w: float
    peak_gib: float | None
    start_s: int
    job_end_s: int  # when the job's work stops on it (the rest is idle)
    end_s: int  # when the bill stops


def instances(cfg: DemoConfig, fleet: Fleet, cutoff: int) -> list[Instance]:
    """Every instance the bill shows running in the telemetry window, as the bill has it."""
    from athanor.demo.usage import usage_lines

    start, end = window(cfg)
    lines = usage_lines(cfg, fleet, cutoff)
    runs = lines.groupby("resource_id", sort=True).agg(
        job=("job", "first"),
        k=("k", "first"),
        start_s=("start_s", "min"),
        end_s=("end_s", "max"),
        job_id=("job_id", "first"),
        team=("team", "first"),
        model=("model", "first"),
        instance_type=("instance_type", "first"),
    )
    runs = runs[(runs["end_s"] > start) & (runs["start_s"] < min(end, cutoff))]
    segs = fleet.segments.groupby("job")["end_s"].max()
    peak = fleet.jobs["peak_gpu_memory_gib"]
    out = []
    for rid, r in runs.iterrows():
        spec = catalog.gpu_instance(str(r["instance_type"]))
        gpu = catalog.gpu(spec.gpu_model) if spec else None
        if spec is None or gpu is None or spec.gpu_count < 1:
            continue
        p = peak.iat[int(r["job"])]
        out.append(
            Instance(
                resource_id=str(rid),
                job_id=str(r["job_id"]),
                job_index=int(r["job"]),
                k=int(r["k"]),
                team=str(r["team"]),
                model=str(r["model"]),
                instance_type=str(r["instance_type"]),
                gpus=spec.gpu_count,
                gpu_model=spec.gpu_model,
                memory_gib=float(spec.gpu_memory_gib or gpu.memory_gb or 16.0),
                board_w=float(gpu.board_power_w or 300.0),
                peak_gib=None if p is None or (isinstance(p, float) and math.isnan(p)) else float(p),
                start_s=int(r["start_s"]),
                job_end_s=int(min(segs.loc[int(r["job"])], r["end_s"])),
                end_s=int(r["end_s"]),
            )
        )
    return out


@dataclass(frozen=True)
class Series:
    """One instance's samples: instants, then per GPU utilisation %, memory GiB and power W."""

    instance: Instance
    at: np.ndarray  # seconds
    util: np.ndarray  # (instants, GPUs)
    memory: np.ndarray
    power: np.ndarray


def sample(cfg: DemoConfig, inst: Instance, cutoff: int) -> Series | None:
    start, end = window(cfg)
    first = max(inst.start_s, start)
    first += (-first) % STEP_S + 17  # collectors tick on their own clock, not on the hour
    at = np.arange(first, min(inst.end_s, end, cutoff), STEP_S, dtype=np.int64)
    if inst.team == "vision" and unit_hash(cfg.seed, "gap-host", inst.resource_id) < 0.15:
        gap_start = start + 86400 + SMI_GAP[0]
        at = at[(at < gap_start) | (at >= gap_start + SMI_GAP[1])]
    if inst.team == "llm":
        gap_start = start + 86400 + PROMETHEUS_GAP[0]
        at = at[(at < gap_start) | (at >= gap_start + PROMETHEUS_GAP[1])]
    if len(at) == 0:
        return None
    rng = np.random.default_rng(int.from_bytes(digest(cfg.seed, "telemetry", inst.resource_id), "big"))
    busy = at < inst.job_end_s
    n, g = len(at), inst.gpus
    util = np.clip(rng.normal(86.0, 7.0, (n, g)), 55.0, 100.0)
    idle = rng.uniform(0.0, 2.0, (n, g))
    one_gpu = inst.model in ONE_GPU_MODELS
    if one_gpu:
        util[:, 1:] = 0.0
    util = np.where(busy[:, None], util, idle)
    peak = min(inst.peak_gib if inst.peak_gib is not None else 0.6 * inst.memory_gib, 0.95 * inst.memory_gib)
    used = np.clip(rng.normal(peak, 0.02 * inst.memory_gib, (n, g)), 0.5, inst.memory_gib * 0.97)
    if one_gpu:
        used[:, 1:] = 0.0
    memory = np.where(busy[:, None], used, 0.0)
    power = inst.board_w * (0.15 + 0.6 * util / 100.0) + rng.normal(0.0, 3.0, (n, g))
    return Series(inst, at, np.round(util, 0), np.round(memory * 1024.0) / 1024.0, np.round(power, 2))


def _host(inst: Instance) -> str:
    return f"{inst.resource_id}.ec2.internal"


def _uuid(cfg: DemoConfig, inst: Instance, index: int) -> str:
    return "GPU-" + uuid_of(cfg.seed, "gpu", inst.resource_id, index)


def _stamp(seconds: int) -> str:
    return (
        datetime.fromtimestamp(seconds, UTC).strftime("%Y/%m/%d %H:%M:%S.") + f"{(seconds * 7919) % 1000:03d}"
    )


def _write_nvidia_smi(cfg: DemoConfig, s: Series, path: Path, units: bool) -> int:
    inst = s.instance
    name = SMI_NAMES.get(inst.gpu_model, f"NVIDIA {inst.gpu_model}")
    total_mib = int(round(inst.memory_gib * 1024))
    pct, mib, watts = (" %", " MiB", " W") if units else ("", "", "")
    lines = [NVSMI_HEADER]
    for i, t in enumerate(s.at):
        stamp = _stamp(int(t))
        for gpu in range(inst.gpus):
            lines.append(
                f"{stamp}, {name}, 00000000:{16 * (gpu + 1):02X}:1C.0, {_uuid(cfg, inst, gpu)}, "
                f"{int(s.util[i, gpu])}{pct}, {int(round(s.memory[i, gpu] * 1024))}{mib}, "
                f"{total_mib}{mib}, {s.power[i, gpu]:.2f}{watts}"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return len(s.at) * inst.gpus


def _write_prometheus(cfg: DemoConfig, series: list[Series], day: int, path: Path) -> int:
    result, count = [], 0
    for s in series:
        inst = s.instance
        keep = (s.at >= day) & (s.at < day + 86400)
        if not keep.any():
            continue
        at = s.at[keep]
        # Scrapes land on Prometheus' step grid: the answer's instants are the query's.
        at = at - at % STEP_S
        busy = at < inst.job_end_s
        for gpu in range(inst.gpus):
            labels = {
                "Hostname": _host(inst),
                "UUID": _uuid(cfg, inst, gpu),
                "gpu": str(gpu),
                "device": f"nvidia{gpu}",
                "modelName": SMI_NAMES.get(inst.gpu_model, inst.gpu_model),
                "instance": f"{_host(inst)}:9400",
                "job": "nvidia-dcgm-exporter",
                "namespace": "gpu-operator",
                "pod": f"nvidia-dcgm-exporter-{inst.resource_id[-5:]}",
            }

            util, used = s.util[keep, gpu], s.memory[keep, gpu] * 1024.0
            metrics = {
                "DCGM_FI_DEV_GPU_UTIL": util,
                "DCGM_FI_DEV_FB_USED": np.round(used),
                "DCGM_FI_DEV_FB_FREE": np.round(inst.memory_gib * 1024.0 - used),
                "DCGM_FI_DEV_POWER_USAGE": s.power[keep, gpu],
            }
            if inst.gpu_model == "H100":
                metrics["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] = np.round(util / 100.0 * 0.97, 4)
            # The pod only while the job holds the GPU: once it ends, the GPU is allocated to no pod.
            for name, column in metrics.items():
                for part, with_pod in ((busy, True), (~busy, False)):
                    if not part.any():
                        continue
                    metric = {"__name__": name, **labels}
                    if with_pod:
                        metric |= {
                            "exported_pod": f"{inst.job_id}-worker-{inst.k}",
                            "exported_namespace": inst.team,
                            "exported_container": "trainer",
                        }
                    result.append(
                        {
                            "metric": metric,
                            "values": [
                                [int(t), f"{v:g}"] for t, v in zip(at[part], column[part], strict=True)
                            ],
                        }
                    )
            count += len(at)
    if not result:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    return count


def _write_cloudwatch(series: list[Series], path: Path) -> int:
    results, count = [], 0
    for n, s in enumerate(series):
        inst = s.instance
        host = f"{inst.job_id}/algo-{inst.k + 1}"
        # Newest first, as CloudWatch answers by default (ScanBy TimestampDescending).
        order = np.argsort(-s.at)
        stamps = [datetime.fromtimestamp(int(t) - int(t) % STEP_S, UTC).isoformat() for t in s.at[order]]
        util = s.util.sum(axis=1)[order]
        memory = (s.memory / inst.memory_gib * 100.0).sum(axis=1)[order]
        for metric, column, prefix in (("GPUUtilization", util, "u"), ("GPUMemoryUtilization", memory, "m")):
            results.append(
                {
                    "Id": f"{prefix}{n}",
                    "Label": f"{host} {metric}",
                    "Timestamps": stamps,
                    "Values": [round(float(v), 4) for v in column],
                    "StatusCode": "Complete",
                }
            )
        count += len(s.at) * inst.gpus
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"MetricDataResults": results, "Messages": []}, indent=1))
    return count


def _day_part(s: Series, day: int) -> Series | None:
    keep = (s.at >= day) & (s.at < day + 86400)
    if not keep.any():
        return None
    return Series(s.instance, s.at[keep], s.util[keep], s.memory[keep], s.power[keep])


def generate_telemetry(out: Path, cfg: DemoConfig, fleet: Fleet, cutoff: int) -> list[dict[str, object]]:
    """Write the window's telemetry under `out/telemetry/`, a folder per collector and day (a
    night's delivery); per file its path, format and samples."""
    start, _ = window(cfg)
    series = [s for inst in instances(cfg, fleet, cutoff) if (s := sample(cfg, inst, cutoff)) is not None]
    files: list[dict[str, object]] = []

    def add(rel: Path, fmt: str, samples: int) -> None:
        if samples:
            files.append({"path": rel.as_posix(), "kind": "gpu_telemetry", "format": fmt, "samples": samples})

    for day in range(start, cutoff, 86400):
        label = datetime.fromtimestamp(day, UTC).strftime("%Y-%m-%d")
        parts = [p for s in series if (p := _day_part(s, day)) is not None]
        for p in parts:
            collector = COLLECTOR[p.instance.team]
            if collector.startswith("nvidia_smi"):
                rel = Path("telemetry", "nvidia-smi", label, f"{_host(p.instance)}.nvidia-smi.{label}.csv")
                add(rel, collector, _write_nvidia_smi(cfg, p, out / rel, units=collector == "nvidia_smi"))
        llm = [p for p in parts if COLLECTOR[p.instance.team] == "prometheus"]
        rel = Path("telemetry", "prometheus", label, f"dcgm-{label}.json")
        add(rel, "prometheus", _write_prometheus(cfg, llm, day, out / rel))
        by_job: dict[str, list[Series]] = {}
        for p in parts:
            if COLLECTOR[p.instance.team] == "cloudwatch":
                by_job.setdefault(p.instance.job_id, []).append(p)
        for job_id, job_parts in sorted(by_job.items()):
            rel = Path("telemetry", "cloudwatch", label, f"{job_id}-{label}.json")
            add(
                rel, "cloudwatch", _write_cloudwatch(sorted(job_parts, key=lambda s: s.instance.k), out / rel)
            )
    return files


def write_telemetry(out: Path | str, cfg: DemoConfig, as_of: date | None = None) -> list[dict[str, object]]:
    """The demo's telemetry deliveries as of the end of `as_of` (default: cfg.end_date)."""
    from athanor.demo.jobs import cutoff_of, simulate

    return generate_telemetry(Path(out), cfg, simulate(cfg), cutoff_of(cfg, as_of))
