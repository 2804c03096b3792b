"""SageMaker `DescribeTrainingJob` responses: one JSON document, a JSON array, or JSON Lines."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from athanor.ingest.jobs.canonical import RECORD_COLUMNS, count_problem, typed
from athanor.ingest.jobs.detect import decode
from athanor.ingest.jobs.problems import JobRunError, Problem, Problems
from athanor.reference import gpus_per_instance

_SAGEMAKER_NAMES = {
    "job_id": "TrainingJobName",
    "submit_time": "CreationTime",
    "start_time": "TrainingStartTime",
    "end_time": "TrainingEndTime",
    "state": "TrainingJobStatus",
    "instance_type": "ResourceConfig.InstanceType",
    "instance_count": "ResourceConfig.InstanceCount",
    "restart_count": "SecondaryStatusTransitions",
    "model_params": "Tags",
    "peak_gpu_memory_gib": "FinalMetricDataList",
    "samples_per_second": "FinalMetricDataList",
    "phase": "Tags",
}
# Final metrics a training script may emit (Hugging Face's Trainer logs train_samples_per_second);
# where there is none, a tag of the column's own name.
_METRICS = {
    "samples_per_second": ("samples_per_second", "train_samples_per_second"),
    "peak_gpu_memory_gib": ("peak_gpu_memory_gib",),
}
SAGEMAKER_STATES = {
    "Completed": "completed",
    "Failed": "failed",
    "Stopped": "cancelled",
    "InProgress": "running",
    "Stopping": "running",
}


def _documents(data: bytes, name: str) -> list[tuple[int, Any]]:
    """(document number, parsed JSON) for a single document, a JSON array or JSON Lines."""
    text = decode(data, name)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as whole_error:
        docs = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                docs.append((number, json.loads(line)))
            except json.JSONDecodeError as error:
                raise JobRunError(
                    name,
                    [Problem(name, number, None, "not valid JSON", error.msg, "document")],
                ) from whole_error
        return docs
    if isinstance(whole, list):
        return list(enumerate(whole, start=1))
    return [(1, whole)]


def _json_time(value: Any) -> pd.Timestamp | None:
    """A SageMaker timestamp: epoch seconds (the raw API) or an ISO string (AWS CLI v2)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, (int, float)):
        ts = pd.Timestamp(value, unit="s")
    else:
        ts = pd.Timestamp(str(value))
        if ts.tzinfo is not None:
            ts = ts.tz_convert("UTC").tz_localize(None)
    return ts.as_unit("us")


def _tags(value: Any) -> dict[str, str]:
    """Tags as [{Key, Value}] (the AWS shape) or a plain mapping; keys matched case-insensitively."""
    if isinstance(value, Mapping):
        pairs = value.items()
    else:
        pairs = ((t.get("Key"), t.get("Value")) for t in value or [] if isinstance(t, Mapping))
    return {str(k).strip().lower(): str(v) for k, v in pairs if k is not None and v is not None}


def _metrics(value: Any) -> dict[str, Any]:
    """FinalMetricDataList as {metric name, lower case: value}."""
    return {
        str(m["MetricName"]).strip().lower(): m.get("Value")
        for m in value or []
        if isinstance(m, Mapping) and m.get("MetricName") is not None
    }


def parse_sagemaker(data: bytes, name: str) -> tuple[pd.DataFrame, Problems, list[str], dict[str, str]]:
    problems = Problems(name, unit="document")
    unknown_types: dict[str, list[int]] = {}
    records: list[dict[str, Any]] = []
    for number, doc in _documents(data, name):
        if not isinstance(doc, Mapping):
            problems.add(number, None, "not a JSON object", type(doc).__name__)
            continue
        record: dict[str, Any] = {"source_row": number}
        job_id = doc.get("TrainingJobName")
        record["job_id"] = str(job_id) if job_id not in (None, "") else None

        for column, field in (
            ("submit_time", "CreationTime"),
            ("start_time", "TrainingStartTime"),
            ("end_time", "TrainingEndTime"),
        ):
            try:
                record[column] = _json_time(doc.get(field))
            except (ValueError, TypeError, OverflowError):
                problems.add(number, field, "not a timestamp", repr(doc.get(field)))
                record[column] = None
        if record["submit_time"] is None and "CreationTime" not in doc:
            problems.add(number, "CreationTime", "required field missing")

        status = doc.get("TrainingJobStatus")
        secondary = doc.get("SecondaryStatus")
        transitions = [
            t.get("Status") for t in doc.get("SecondaryStatusTransitions") or [] if isinstance(t, Mapping)
        ]
        interruptions = transitions.count("Interrupted")
        last = transitions[-1] if transitions else secondary
        # Managed spot: 'Interrupted' ends the job unless it restarts; a job that then waited
        # past MaxWaitTimeInSeconds for capacity ends 'MaxWaitTimeExceeded'.
        ended_by_interruption = last == "Interrupted" or (last == "MaxWaitTimeExceeded" and interruptions > 0)
        state = SAGEMAKER_STATES.get(status) if isinstance(status, str) else None
        if state is None:
            problems.add(
                number,
                "TrainingJobStatus",
                "not one of " + ", ".join(SAGEMAKER_STATES),
                repr(status) if status is not None else "missing",
            )
        elif status in ("Stopped", "Failed") and ended_by_interruption:
            state = "preempted"
        elif status == "Stopped" and last == "MaxRuntimeExceeded":
            state = "failed"  # like Slurm's TIMEOUT: the job ran out of its time limit
        record["state"] = state
        record["state_detail"] = (
            f"{status}/{secondary}" if secondary and secondary != status else (status or None)
        )
        # restart_count counts restarts; the interruption that ended a job had none after it.
        record["restart_count"] = interruptions - (1 if ended_by_interruption and state == "preempted" else 0)

        config = doc.get("ResourceConfig") or {}
        instance_type = config.get("InstanceType")
        instance_count = config.get("InstanceCount")
        groups = [g for g in config.get("InstanceGroups") or [] if isinstance(g, Mapping)]
        if instance_type is None and groups:
            # Heterogeneous cluster: the largest accelerator group stands for the job.
            main = max(
                groups,
                key=lambda g: (
                    (gpus_per_instance(str(g.get("InstanceType", ""))) or 0)
                    * int(g.get("InstanceCount") or 0)
                ),
            )
            instance_type, instance_count = main.get("InstanceType"), main.get("InstanceCount")
        if not instance_type:
            problems.add(number, "ResourceConfig.InstanceType", "required field missing")
            record["instance_type"] = None
            record["gpus_per_instance"] = 0
        else:
            record["instance_type"] = str(instance_type).removeprefix("ml.")
            gpus = gpus_per_instance(str(instance_type))
            if gpus is None:
                unknown_types.setdefault(record["instance_type"], []).append(number)
            record["gpus_per_instance"] = gpus or 0
        record["instance_count"] = None
        is_int = isinstance(instance_count, int) and not isinstance(instance_count, bool)
        if is_int and count_problem(instance_count) is None:
            record["instance_count"] = instance_count
        elif instance_count is None:
            problems.add(number, "ResourceConfig.InstanceCount", "required field missing")
        else:
            why = count_problem(instance_count) if is_int else "not an integer"
            problems.add(number, "ResourceConfig.InstanceCount", str(why), repr(instance_count))

        record["pricing_model"] = "spot" if doc.get("EnableManagedSpotTraining") is True else "on_demand"
        tags = _tags(doc.get("Tags"))
        for key in ("team", "project", "model"):
            record[key] = tags.get(key)
        for key in ("checkpoint_interval_s", "checkpoint_time_s"):
            record[key] = np.nan
            if key in tags:
                try:
                    record[key] = float(tags[key])
                except ValueError:
                    problems.add(number, "Tags", f"{key} not a number", repr(tags[key]))
        record["checkpointing"] = bool(doc.get("CheckpointConfig")) or not math.isnan(
            record["checkpoint_interval_s"]
        )
        metrics = _metrics(doc.get("FinalMetricDataList"))
        for key, names in _METRICS.items():
            record[key] = np.nan
            found = next(((n, metrics[n]) for n in names if n in metrics), None)
            where, value = ("FinalMetricDataList", found[1]) if found else ("Tags", tags.get(key))
            if value is not None:
                try:
                    record[key] = float(value)
                except (TypeError, ValueError):
                    problems.add(number, where, f"{key} not a number", repr(value))
        record["model_params"] = None
        if "model_params" in tags:
            try:
                params = float(tags["model_params"])
            except ValueError:
                params = math.nan
            why = count_problem(params)
            if why is None:
                record["model_params"] = int(params)
            else:
                problems.add(number, "Tags", f"model_params {why}", repr(tags["model_params"]))
        record["phase"] = tags["phase"].strip().lower() if "phase" in tags else None
        billable = doc.get("BillableTimeInSeconds")
        record["billable_s"] = float(billable) if isinstance(billable, (int, float)) else np.nan
        record["_gpu_total"] = pd.NA
        record["_elapsed_s"] = np.nan
        records.append(record)

    frame = pd.DataFrame.from_records(records, columns=[*RECORD_COLUMNS, "checkpointing", "billable_s"])
    frame["checkpointing"] = frame["checkpointing"].astype("boolean")
    frame["source"] = "sagemaker"
    frame["platform"] = "sagemaker"
    warnings = [
        f"{name}: instance type {t!r} not in the GPU table (document {', '.join(map(str, docs))});"
        " gpus_per_instance set to 0"
        for t, docs in unknown_types.items()
    ]
    return typed(frame), problems, warnings, _SAGEMAKER_NAMES
