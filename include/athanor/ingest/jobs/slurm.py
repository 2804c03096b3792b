"""Slurm `sacct --parsable2` output: one allocation line per job (job steps skipped)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from athanor.ingest.jobs.canonical import MAX_INTEGER, RECORD_COLUMNS, TOO_LARGE, count_problem, typed
from athanor.ingest.jobs.detect import decode
from athanor.ingest.jobs.problems import Problems

_SLURM_REQUIRED = ("JobID", "Submit", "Start", "End", "State", "Partition", "NNodes", "AllocTRES")
_SLURM_NAMES = {
    "job_id": "JobID",
    "submit_time": "Submit",
    "start_time": "Start",
    "end_time": "End",
    "state": "State",
    "instance_type": "Partition",
    "instance_count": "NNodes",
    "gpus_per_instance": "AllocTRES",
    "team": "Account",
    "project": "Comment",
    "model": "Comment",
    "checkpoint_interval_s": "Comment",
    "checkpoint_time_s": "Comment",
    "model_params": "Comment",
    "peak_gpu_memory_gib": "Comment",
    "samples_per_second": "Comment",
    "phase": "Comment",
}

# Slurm job states (sacct man page, JOB STATE CODES) -> canonical state.
SLURM_STATES: dict[str, str] = {
    "COMPLETED": "completed",
    "FAILED": "failed",
    "TIMEOUT": "failed",
    "NODE_FAIL": "failed",
    "OUT_OF_MEMORY": "failed",
    "BOOT_FAIL": "failed",
    "DEADLINE": "failed",
    "CANCELLED": "cancelled",
    "REVOKED": "cancelled",
    "PREEMPTED": "preempted",
    # Not finished yet: the current state of a live job.
    "RUNNING": "running",
    "PENDING": "running",
    "REQUEUED": "running",
    "RESIZING": "running",
    "SUSPENDED": "running",
    "COMPLETING": "running",
    "CONFIGURING": "running",
}

_ELAPSED = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")
# Comment convention for tags Slurm has no field for: 'project=x model=y checkpoint_interval_s=1800'
# (also model_params, peak_gpu_memory_gib, samples_per_second and phase, which sacct does not carry).
_KEY_VALUE = re.compile(r"(\w+)=([^\s,;]+)")


def parse_slurm_elapsed(text: str) -> float:
    """Seconds in a Slurm duration: ``[D-]HH:MM:SS``, ``MM:SS`` or ``MM:SS.fff``."""
    match = _ELAPSED.match(text.strip())
    if not match:
        raise ValueError(f"not a Slurm duration: {text!r}")
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def parse_tres_gpus(tres: str) -> int:
    """GPUs in a TRES string: ``gres/gpu=8``, else the sum of typed ``gres/gpu:a100=8`` entries."""
    total: int | None = None
    typed = 0
    for item in tres.split(","):
        key, _, value = item.strip().partition("=")
        if key == "gres/gpu":
            total = int(value)
        elif key.startswith("gres/gpu:"):
            typed += int(value)
    return typed if total is None else total


def _count(text: str | None, row: int, problems: Problems) -> int | None:
    """A parameter count from a Comment tag: 8000000000 or 8e9; None when absent or not a whole number."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    why = count_problem(value)
    if why is not None:
        problems.add(row, "Comment", f"model_params {why}", repr(text))
        return None
    return int(value)


def default_partition_pricing(partition: str) -> str:
    return "spot" if "spot" in partition.lower() else "on_demand"


def _slurm_times(frame: pd.DataFrame, problems: Problems, tz: ZoneInfo) -> None:
    """Parse sacct's local-time stamps in place, vectorised, into tz-naive UTC."""
    for column, field in (("submit_time", "Submit"), ("start_time", "Start"), ("end_time", "End")):
        text = frame[column].astype("str")
        parsed = pd.to_datetime(text, format="ISO8601", errors="coerce")
        if parsed.dt.tz is None and str(tz) != "UTC":
            # In the repeated autumn hour take the first pass (summer time), as datetime's fold=0 does.
            parsed = parsed.dt.tz_localize(
                tz, ambiguous=np.ones(len(parsed), dtype=bool), nonexistent="shift_forward"
            )
        if parsed.dt.tz is not None:
            parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
        problems.add_mask(
            text.notna() & parsed.isna(),
            frame["source_row"],
            field,
            "not a timestamp",
            lambda i, t=text: repr(t.iloc[i]),
        )
        frame[column] = parsed.astype("datetime64[us]")


def parse_slurm(
    data: bytes,
    name: str,
    partition_map: Mapping[str, str],
    partition_pricing: Mapping[str, str],
    tz: ZoneInfo,
) -> tuple[pd.DataFrame, Problems, list[str], dict[str, str]]:
    lines = decode(data, name).splitlines()
    header = lines[0].split("|")
    # --parsable (not --parsable2) ends every line with a '|'.
    trailing = header[-1] == ""
    if trailing:
        header = header[:-1]
    problems = Problems(name)
    for field in _SLURM_REQUIRED:
        if field not in header:
            problems.add(None, field, "required column missing")
    problems.raise_if_any(_SLURM_REQUIRED)
    at = {field: i for i, field in enumerate(header)}

    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    for row, line in enumerate(lines[1:], start=1):
        if not line.strip():
            continue
        values = line.split("|")
        if trailing and values[-1] == "":
            values = values[:-1]
        if len(values) > len(header) and header[-1] == "Comment":
            # sacct does not escape '|' inside a comment: rejoin the overflow.
            values = values[: len(header) - 1] + ["|".join(values[len(header) - 1 :])]
        if len(values) != len(header):
            problems.add(row, None, f"expected {len(header)} fields, found {len(values)}")
            continue

        def get(field: str, values: list[str] = values) -> str:
            return values[at[field]].strip() if field in at else ""

        job_id = get("JobID")
        if "." in job_id:
            continue  # a job step (123.batch, 123.extern, 123.0): the allocation line covers it
        record: dict[str, Any] = {"job_id": job_id or None, "source_row": row}

        for column, field in (("submit_time", "Submit"), ("start_time", "Start"), ("end_time", "End")):
            # 'Unknown' / 'None': not started or not ended yet
            record[column] = None if get(field) in ("", "Unknown", "None") else get(field)

        state_text = get("State")
        # 'CANCELLED by 12345'; a trailing '+' marks a truncated name.
        code = state_text.split(" ", 1)[0].rstrip("+")
        record["state_detail"] = state_text
        record["state"] = SLURM_STATES.get(code)
        if record["state"] is None:
            problems.add(row, "State", "unknown Slurm job state", repr(state_text))

        partition = get("Partition")
        record["instance_type"] = partition_map.get(partition, partition) or None
        record["pricing_model"] = partition_pricing.get(partition, default_partition_pricing(partition))
        record["team"] = get("Account") or None

        nodes = get("NNodes")
        record["instance_count"] = None
        if not re.fullmatch(r"\d+", nodes):
            problems.add(row, "NNodes", "not an integer", repr(nodes))
        elif len(nodes) > 16 or int(nodes) > MAX_INTEGER:
            problems.add(row, "NNodes", TOO_LARGE, repr(nodes))
        else:
            record["instance_count"] = int(nodes)

        tres = get("AllocTRES") or get("ReqTRES")  # never-started jobs have no allocation
        try:
            gpus = parse_tres_gpus(tres)
        except ValueError:
            problems.add(row, "AllocTRES", "GPU count not an integer", repr(tres))
            gpus = 0
        if gpus > MAX_INTEGER:
            problems.add(row, "AllocTRES", f"GPU count {TOO_LARGE}", repr(tres))
            gpus = 0
        record["_gpu_total"] = gpus
        count = record["instance_count"]
        record["gpus_per_instance"] = gpus // count if count else 0
        if count and gpus % count:
            warnings.append(
                f"{name} row {row}: {gpus} GPUs do not divide evenly over {count} nodes;"
                f" gpus_per_instance rounded down to {gpus // count} (gpu_count keeps {gpus})"
            )

        record["_elapsed_s"] = np.nan
        if get("Elapsed"):
            try:
                record["_elapsed_s"] = parse_slurm_elapsed(get("Elapsed"))
            except ValueError:
                problems.add(row, "Elapsed", "not a Slurm duration", repr(get("Elapsed")))

        tags = dict(_KEY_VALUE.findall(get("Comment")))
        for key in ("project", "model"):
            record[key] = tags.get(key)
        for key in (
            "checkpoint_interval_s",
            "checkpoint_time_s",
            "peak_gpu_memory_gib",
            "samples_per_second",
        ):
            record[key] = np.nan
            if key in tags:
                try:
                    record[key] = float(tags[key])
                except ValueError:
                    problems.add(row, "Comment", f"{key} not a number", repr(tags[key]))
        record["model_params"] = _count(tags.get("model_params"), row, problems)
        record["phase"] = tags["phase"].lower() if "phase" in tags else None
        record["restart_count"] = 0
        records.append(record)

    frame = pd.DataFrame.from_records(records, columns=RECORD_COLUMNS)
    _slurm_times(frame, problems, tz)
    frame["source"] = "slurm"
    frame["platform"] = "ec2"
    frame["billable_s"] = np.nan
    frame["checkpointing"] = pd.array(
        np.where(frame["checkpoint_interval_s"].notna(), True, None), dtype="boolean"
    )
    return typed(frame), problems, warnings, _SLURM_NAMES
