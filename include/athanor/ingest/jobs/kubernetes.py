"""Kubernetes pods: `kubectl get pods -o json` (a List of Pods, any namespaces), one row per pod
that asks for GPUs.

A pod is the unit that holds GPUs on a node: `spec.nodeName` is the node (EKS names nodes by the
instance's PrivateDnsName, `ip-10-0-1-11.ec2.internal`), the GPUs are the sum of its containers'
`nvidia.com/gpu` limits (a request must equal its limit for extended resources), from the first
container's start to the last one's end (`status.containerStatuses[].state`); a pod still
running has no end. Team from the label `team` (else the namespace), project the namespace,
model the label `model`. Pods asking for no GPU are skipped.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from athanor.ingest.jobs.canonical import RECORD_COLUMNS, typed
from athanor.ingest.jobs.detect import decode
from athanor.ingest.jobs.problems import JobRunError, Problem, Problems

_KUBERNETES_NAMES = {
    "job_id": "metadata.name",
    "submit_time": "metadata.creationTimestamp",
    "start_time": "status.containerStatuses.state.startedAt",
    "end_time": "status.containerStatuses.state.terminated.finishedAt",
    "state": "status.phase",
    "instance_count": "spec.nodeName",
    "gpus_per_instance": "spec.containers.resources.limits",
    "team": "metadata.labels.team",
}
# Pod phases (Kubernetes API, PodStatus.phase) -> canonical state.
POD_PHASES = {
    "Succeeded": "completed",
    "Failed": "failed",
    "Running": "running",
    "Pending": "running",
    "Unknown": "running",
}
GPU_RESOURCE = "nvidia.com/gpu"


def _gpus(spec: dict[str, Any]) -> int:
    total = 0
    for container in spec.get("containers") or []:
        limits = ((container.get("resources") or {}).get("limits")) or {}
        if GPU_RESOURCE in limits:
            total += int(str(limits[GPU_RESOURCE]))
    return total


def _times(status: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """(first container start, last container end, whether every container has ended)."""
    starts, ends, ended = [], [], True
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "running" in state:
            starts.append(state["running"].get("startedAt"))
            ended = False
        elif "terminated" in state:
            starts.append(state["terminated"].get("startedAt"))
            ends.append(state["terminated"].get("finishedAt"))
        else:
            ended = False
    starts = [s for s in starts if s]
    ends = [e for e in ends if e]
    return (min(starts) if starts else None), (max(ends) if ends and ended else None), ended


def parse_kubernetes(data: bytes, name: str) -> tuple[pd.DataFrame, Problems, list[str], dict[str, str]]:
    text = decode(data, name)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise JobRunError(name, [Problem(name, None, None, "not JSON", str(error))]) from None
    items = document.get("items") if isinstance(document, dict) else None
    if not isinstance(items, list):
        raise JobRunError(name, [Problem(name, None, "items", "a pod list has no items array")])
    problems = Problems(name, unit="document")
    records: list[dict[str, Any]] = []
    skipped = not_pods = 0
    for number, pod in enumerate(items, start=1):
        if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
            not_pods += 1
            continue
        metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        try:
            gpus = _gpus(spec)
        except ValueError:
            problems.add(number, "spec.containers.resources.limits", f"{GPU_RESOURCE} not an integer")
            gpus = 0
        if gpus == 0:
            skipped += 1
            continue
        labels = metadata.get("labels") or {}
        start, end, _ = _times(status)
        phase = status.get("phase")
        state = POD_PHASES.get(str(phase))
        if state is None:
            problems.add(number, "status.phase", "unknown pod phase", repr(phase))
        node = spec.get("nodeName")
        records.append(
            {
                "job_id": metadata.get("name"),
                "submit_time": metadata.get("creationTimestamp"),
                "start_time": start,
                "end_time": end if state in ("completed", "failed") else None,
                "state": state,
                "state_detail": phase,
                "instance_type": labels.get("node.kubernetes.io/instance-type"),
                "instance_count": 1,
                "gpus_per_instance": gpus,
                "pricing_model": "on_demand",
                "team": labels.get("team") or metadata.get("namespace"),
                "project": metadata.get("namespace"),
                "model": labels.get("model"),
                "checkpoint_interval_s": np.nan,
                "checkpoint_time_s": np.nan,
                "restart_count": sum(
                    int(cs.get("restartCount") or 0) for cs in status.get("containerStatuses") or []
                ),
                "model_params": None,
                "peak_gpu_memory_gib": np.nan,
                "samples_per_second": np.nan,
                "phase": None,
                "source_row": number,
                "_gpu_total": gpus,
                "_elapsed_s": np.nan,
                "node_list": node or None,
            }
        )
    frame = pd.DataFrame.from_records(records, columns=[*RECORD_COLUMNS, "node_list"])
    for column in ("submit_time", "start_time", "end_time"):
        parsed = pd.to_datetime(frame[column], format="ISO8601", utc=True, errors="coerce")
        problems.add_mask(
            frame[column].notna() & parsed.isna(),
            frame["source_row"],
            _KUBERNETES_NAMES[column],
            "not a timestamp",
            lambda i, c=column: repr(frame[c].iloc[i]),
        )
        frame[column] = parsed.dt.tz_localize(None).astype("datetime64[us]")
    frame["source"] = "kubernetes"
    frame["platform"] = "ec2"
    frame["billable_s"] = np.nan
    frame["checkpointing"] = pd.array([None] * len(frame), dtype="boolean")
    warnings = [f"{name}: {skipped} pods without GPUs skipped"] if skipped else []
    if not_pods:
        warnings.append(f"{name}: {not_pods} items that are not Pods skipped")
    return typed(frame), problems, warnings, _KUBERNETES_NAMES
