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

# sacct's compacted array: 4103947_[1-3], 4103947_[1,5], 4103947_[9-11,20%4] (%4: at most 4 at once).
_ARRAY = re.compile(r"^(\d+)_\[([\d,\-]+)(?:%\d+)?\](.*)$")
# Beyond this many tasks or nodes in one record a compacted form is not a real allocation.
MAX_EXPANDED = 100_000


def _ranges(spec: str) -> list[str]:
    """The members of a Slurm range list '01-03,07' in order, keeping a range's zero padding."""
    out: list[str] = []
    for part in spec.split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"not a range: {part!r}")
        if not dash:
            out.append(low)
            continue
        if int(high) < int(low):
            raise ValueError(f"range runs backwards: {part!r}")
        if len(out) + int(high) - int(low) >= MAX_EXPANDED:
            raise ValueError(f"more than {MAX_EXPANDED:,} members")
        width = len(low) if low.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return out


def expand_hostlist(text: str) -> list[str]:
    """Host names in a Slurm host list, in order: 'ip-10-0-1-[11-12]', 'd09n04s[01-02]',
    'a1,b[1-2]', 'd13n[03,05,07-08]', several bracket groups ('r[1-2]n[01-02]', each combined
    with each), commas inside brackets not splitting the list. '' and 'None assigned': none."""
    text = text.strip()
    if not text or text.startswith("None"):
        return []
    items: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' at {i}")
        elif char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError("unbalanced '['")
    items.append(text[start:])
    hosts: list[str] = []
    for item in items:
        if not item:
            raise ValueError("empty host name")
        names = [""]
        for piece in re.split(r"(\[[^\]]*\])", item):
            members = _ranges(piece[1:-1]) if piece.startswith("[") else [piece]
            names = [name + member for name in names for member in members]
            if len(hosts) + len(names) > MAX_EXPANDED:
                raise ValueError(f"more than {MAX_EXPANDED:,} hosts")
        hosts.extend(names)
    return hosts


def expand_array_id(job_id: str) -> list[str]:
    """One id per task of a compacted job array ('4103947_[1-3]' -> 4103947_1 .. _3), as sacct
    names a task once it runs; any other id as it is."""
    match = _ARRAY.match(job_id)
    if not match:
        return [job_id]
    base, spec, rest = match.groups()
    return [f"{base}_{task}{rest}" for task in _ranges(spec)]


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
    problems.records = 0  # type: ignore[attr-defined]  # allocation lines read (steps not counted)
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
            problems.records += 1  # type: ignore[attr-defined]
            problems.add(row, None, f"expected {len(header)} fields, found {len(values)}")
            continue

        def get(field: str, values: list[str] = values) -> str:
            return values[at[field]].strip() if field in at else ""

        job_id = get("JobID")
        if "." in job_id:
            continue  # a job step (123.batch, 123.extern, 123.0): the allocation line covers it
        problems.records += 1  # type: ignore[attr-defined]
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

        record["node_list"] = None
        try:
            hosts = expand_hostlist(get("NodeList"))
        except ValueError as error:
            problems.add(row, "NodeList", f"not a Slurm host list: {error}", repr(get("NodeList")[:80]))
            hosts = []
        if hosts:
            record["node_list"] = ",".join(hosts)

        nodes = get("NNodes")
        record["instance_count"] = None
        if not re.fullmatch(r"\d+", nodes):
            problems.add(row, "NNodes", "not an integer", repr(nodes))
        elif len(nodes) > 16 or int(nodes) > MAX_INTEGER:
            problems.add(row, "NNodes", TOO_LARGE, repr(nodes))
        elif int(nodes) == 0 and hosts:
            # sacct prints 0 nodes for some records that name their nodes (XDMoD's sample has one,
            # run for 0 s): the node list is the allocation.
            record["instance_count"] = len(hosts)
            warnings.append(
                f"{name} row {row}: NNodes 0 but NodeList names {len(hosts)}: counted {len(hosts)}"
            )
        elif int(nodes) == 0:
            problems.add(row, "NNodes", "0 nodes and no NodeList: the record held nothing", repr(nodes))
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
        try:
            tasks = expand_array_id(job_id)
        except ValueError as error:
            problems.add(row, "JobID", f"not a Slurm job array: {error}", repr(job_id))
            tasks = [job_id]
        for task in tasks:
            records.append({**record, "job_id": task or None})

    # A job listed again (sacct --duplicates prints each requeue; overlapping compacted arrays
    # name a task twice): the later line is the later report of it, as a later load replaces an
    # earlier one in the warehouse.
    latest: dict[Any, dict[str, Any]] = {}
    repeated = 0
    for record in records:
        key = record["job_id"] if record["job_id"] is not None else ("row", record["source_row"])
        repeated += key in latest
        latest[key] = record
    if repeated:
        warnings.append(f"{name}: {repeated} job ids listed again; the later line of each kept")
    records = list(latest.values())

    frame = pd.DataFrame.from_records(records, columns=[*RECORD_COLUMNS, "node_list"])
    _slurm_times(frame, problems, tz)
    frame["source"] = "slurm"
    frame["platform"] = "ec2"
    frame["billable_s"] = np.nan
    frame["checkpointing"] = pd.array(
        np.where(frame["checkpoint_interval_s"].notna(), True, None), dtype="boolean"
    )
    return typed(frame), problems, warnings, _SLURM_NAMES
