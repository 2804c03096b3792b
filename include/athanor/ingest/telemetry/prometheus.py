"""Prometheus HTTP API answers (`/api/v1/query_range`, or an instant `/api/v1/query`) of the
NVIDIA DCGM exporter's metrics.

`{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {labels},
"values": [[<unix seconds>, "<value>"], ...]}, ...]}}`. Metrics read (others are skipped and
counted): DCGM_FI_DEV_GPU_UTIL (%), DCGM_FI_PROF_GR_ENGINE_ACTIVE (a 0-1 ratio; the
utilisation where present, since GPU_UTIL counts a GPU running any kernel as fully busy),
DCGM_FI_DEV_FB_USED / FB_FREE / FB_RESERVED (MiB) and DCGM_FI_DEV_POWER_USAGE (W). The metrics
of one GPU at one instant make one sample, whether they come in one file or one file each
(the files of one delivery are read together).

Labels: `UUID` (the GPU), `gpu` (its index), `modelName`, `Hostname` (else `instance` without
its port), and the workload's pod: the exporter sets `pod`/`namespace`, but a Prometheus that
scrapes it in Kubernetes renames them `exported_pod`/`exported_namespace` and writes the
exporter's own pod into `pod`; the exported ones win, and a `pod` that is the exporter itself
is no workload. An EC2 resource-based host name (`i-0123456789abcdef0.ec2.internal`)
names the instance (else an `instance_id` label does). A series without `__name__` (a query that applied a function drops it), or
without any host label, refuses the file.

MIG: on a GPU partitioned with MIG the exporter writes one series per GPU instance, labelled
`GPU_I_ID` (the instance) and `GPU_I_PROFILE` (`1g.10gb`, `3g.40gb`, `7g.80gb`...), every one
with the parent's `UUID`. Each instance is its own GPU series (gpu_id the parent's UUID,
mig_instance its GPU_I_ID) standing for a share of the parent: the profile's compute slices
out of the GPU's (`MIG_SLICES`: 7 on A100 and H100, 4 on A30), so 3g + 2g + 1g + 1g make one
GPU. DCGM_FI_DEV_GPU_UTIL is not supported on MIG instances (0 or absent): their utilisation is
DCGM_FI_PROF_GR_ENGINE_ACTIVE, as everywhere it is exported. DCGM_FI_DEV_POWER_USAGE on an
instance is its parent's whole board (a device-level field): stored as read, and the energy
marts attribute it by gpu_share. A series of the parent itself (no GPU_I_ID) beside its
instances' would count the GPU twice: it is dropped and counted in the load's skipped line.
An instance whose profile names no slices (`GPU_I_PROFILE` missing or not `<n>g...`) refuses
the file (rule telemetry_mig_profile).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from athanor.ingest.errors import IngestError
from athanor.ingest.telemetry.samples import Samples, expect, read_json
from athanor.reference.vocabulary import MIG_SLICES, MIG_SLICES_BY_MODEL

FORMAT = "prometheus_dcgm"
METRICS = {
    "DCGM_FI_DEV_GPU_UTIL": "gpu_util",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "engine_active",
    "DCGM_FI_DEV_FB_USED": "fb_used",
    "DCGM_FI_DEV_FB_FREE": "fb_free",
    "DCGM_FI_DEV_FB_RESERVED": "fb_reserved",
    "DCGM_FI_DEV_POWER_USAGE": "power",
}
_EXPORTER_PODS = ("dcgm-exporter", "nvidia-dcgm-exporter")
_MIG_PROFILE = re.compile(r"^(?P<slices>[1-8])g\.", re.IGNORECASE)
PARENT_OF_MIG = "parent-GPU series beside its MIG instances"
_RESOURCE_NAME = re.compile(r"^(i-[0-9a-f]{8,17})(?:\.|$)")


def looks_like(data: bytes) -> bool:
    text = data[:65536].decode("utf-8", errors="replace")
    return text.lstrip().startswith("{") and '"resultType"' in text and '"result"' in text


def _label(metric: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = metric.get(name)
        if value not in (None, ""):
            return str(value)
    return None


def instance_of(host: str) -> str | None:
    """The EC2 instance id an EC2 resource-based host name carries (i-0abc....ec2.internal)."""
    m = _RESOURCE_NAME.match(host)
    return m.group(1) if m else None


def _pod(metric: dict[str, Any]) -> tuple[str | None, str | None]:
    if _label(metric, "exported_pod"):
        return _label(metric, "exported_pod"), _label(metric, "exported_namespace")
    pod = _label(metric, "pod")
    if pod is None or pod.startswith(_EXPORTER_PODS):
        return None, None
    return pod, _label(metric, "namespace")


def read(files: Iterable[Path], load_id: str) -> tuple[Samples, dict[str, int]]:
    """The samples of the files (merged by GPU and instant) and how many series each skipped metric had."""
    samples = Samples(load_id, FORMAT)
    skipped: dict[str, int] = {}
    # (file, gpu_id, instant) -> the row's index in `samples`, so the metrics of one GPU meet.
    for file in files:
        _read_file(file, samples, skipped)
    return samples, skipped


def _read_file(file: Path, samples: Samples, skipped: dict[str, int]) -> None:
    doc = read_json(file)
    if not isinstance(doc, dict) or doc.get("status") != "success":
        status = doc.get("status") if isinstance(doc, dict) else None
        error = doc.get("error") if isinstance(doc, dict) else None
        raise IngestError(
            file.name,
            f"Prometheus answer with status {status!r}, not 'success'" + (f": {error}" if error else ""),
        )
    data = expect(doc.get("data") or {}, dict, file, "data", "an object")
    kind = data.get("resultType")
    if kind not in ("matrix", "vector"):
        raise IngestError(
            file.name, f"Prometheus resultType {kind!r}: Athanor reads 'matrix' (query_range) or 'vector'"
        )
    position = 0
    result = expect(data.get("result") or [], list, file, "data.result", "a list of series")
    for n, series in enumerate(result, start=1):
        where = f"data.result[{n - 1}]"
        expect(series, dict, file, where, "a series {metric, values}")
        metric = expect(series.get("metric") or {}, dict, file, f"{where}.metric", "an object of labels")
        for label, text in metric.items():
            # Prometheus labels are strings; any other value is not an exporter's answer.
            expect(text, str, file, f"{where}.metric.{label}", "a string")
        name = metric.get("__name__")
        if kind == "matrix":
            values = expect(series.get("values") or [], list, file, f"{where}.values", "a list of samples")
        else:
            values = [series.get("value")]
        if name is None:
            raise IngestError(
                file.name,
                "series without __name__ (a query applying a function drops it): query the DCGM metric "
                "itself, or keep its name with label_replace",
                column="__name__",
                row=position + 1,
                examples=[f"series {n}: {json.dumps(metric)[:120]}"],
            )
        field = METRICS.get(str(name))
        if field is None:
            skipped[str(name)] = skipped.get(str(name), 0) + 1
            position += len(values or [])
            continue
        host = _label(metric, "Hostname", "hostname")
        if host is None and _label(metric, "instance"):
            host = str(metric["instance"]).rsplit(":", 1)[0]
        if host is None:
            raise IngestError(
                file.name,
                "series names no host (rule telemetry_host_known): a Hostname or instance label is needed",
                column="Hostname",
                row=position + 1,
                examples=[f"series {n}: {json.dumps(metric)[:120]}"],
            )
        index_text = _label(metric, "gpu")
        try:
            index = int(index_text) if index_text is not None else None
        except ValueError:
            raise IngestError(
                file.name, f"gpu label {index_text!r} is not a GPU index", column="gpu"
            ) from None
        uuid = _label(metric, "UUID", "uuid")
        if uuid is None and index is None:
            raise IngestError(
                file.name,
                "series names no GPU: a UUID or gpu label is needed",
                column="UUID",
                row=position + 1,
            )
        gpu_id = uuid or f"{host}:{index}"
        mig = _mig(metric, file, position + 1, n)
        pod, namespace = _pod(metric)
        identity = {
            "host": host,
            "gpu_id": gpu_id,
            "gpu_index": index,
            "gpu_model": _label(metric, "modelName"),
            "instance_id": _label(metric, "instance_id") or instance_of(host),
            "pod": pod,
            "namespace": namespace,
            **mig,
        }
        for point in values or []:
            position += 1
            try:
                stamp, text = point
                at = datetime.fromtimestamp(float(stamp), UTC).replace(tzinfo=None)
                value = float(text)
            except (TypeError, ValueError, OverflowError, OSError):
                raise IngestError(
                    file.name,
                    'not a [<unix seconds>, "<number>"] sample',
                    column=str(name),
                    row=position,
                    examples=[f"row {position}: {json.dumps(point)[:80]}"],
                ) from None
            samples.set(file.name, position, identity, at, field, None if math.isnan(value) else value)


def mig_share(profile: str, model: str | None) -> float | None:
    """The share of its GPU a MIG profile is: compute slices / the GPU's ('3g.40gb' -> 3/7)."""
    m = _MIG_PROFILE.match(profile.strip())
    if m is None:
        return None
    whole = next((n for name, n in MIG_SLICES_BY_MODEL if name in (model or "")), MIG_SLICES)
    slices = int(m.group("slices"))
    return slices / whole if slices <= whole else None


def _mig(metric: dict[str, Any], file: Path, row: int, n: int) -> dict[str, Any]:
    """A MIG instance's columns (none for a whole GPU); refuses an instance without a usable profile."""
    instance = _label(metric, "GPU_I_ID")
    if instance is None:
        return {}
    profile = _label(metric, "GPU_I_PROFILE")
    share = mig_share(profile, _label(metric, "modelName")) if profile else None
    if share is None:
        raise IngestError(
            file.name,
            f"MIG instance {instance} with GPU_I_PROFILE {profile!r}: its share of the GPU is unknown "
            "(rule telemetry_mig_profile; a profile is <slices>g.<memory>gb, e.g. 3g.40gb)",
            column="GPU_I_PROFILE",
            row=row,
            examples=[f"series {n}: {json.dumps(metric)[:160]}"],
        )
    return {"mig_instance": instance, "mig_profile": profile, "gpu_share": share}


def drop_mig_parents(samples: Samples, skipped: dict[str, int]) -> None:
    """Drop the whole-GPU rows of a GPU that also has MIG instance rows: they would count it twice."""
    partitioned = {gpu for (gpu, mig, _, _) in samples.rows if mig is not None}
    parents = [key for key in samples.rows if key[1] is None and key[0] in partitioned]
    for key in parents:
        del samples.rows[key]
    if parents:
        skipped[PARENT_OF_MIG] = len(parents)


def finish(samples: Samples) -> None:
    """Each row's figures from the metrics it gathered: utilisation, memory in GiB, power."""
    for row in samples.rows.values():
        got = row.pop("metrics")
        engine = got.get("engine_active")
        row["utilisation_pct"] = engine * 100.0 if engine is not None else got.get("gpu_util")
        used = got.get("fb_used")
        row["memory_used_gib"] = None if used is None else used / 1024.0
        free = got.get("fb_free")
        row["memory_total_gib"] = (
            None if used is None or free is None else (used + free + (got.get("fb_reserved") or 0.0)) / 1024.0
        )
        row["power_w"] = got.get("power")
