"""The canonical job-run table every reader produces, and the rules and derived columns they share.

Grain: one row per job. Readers build a frame of the record columns (`RECORD_COLUMNS` plus
their own), `check_common` applies the rules every source obeys, `derive` adds duration,
censoring and GPU-hours and gives the table its `COLUMNS` and dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from athanor.ingest.jobs.problems import Problems
from athanor.reference import CENSORED_STATES, JOB_PHASES, JOB_STATES

# The canonical table, in column order, with its pandas dtype.
COLUMNS: dict[str, str] = {
    "job_id": "str",
    "submit_time": "datetime64[us]",
    "start_time": "datetime64[us]",
    "end_time": "datetime64[us]",
    "state": "str",
    "instance_type": "str",
    "instance_count": "int64",
    "gpus_per_instance": "int64",
    "pricing_model": "str",
    "team": "str",
    "project": "str",
    "model": "str",
    "checkpoint_interval_s": "float64",
    "checkpoint_time_s": "float64",
    "restart_count": "int64",
    "source": "str",
    "state_detail": "str",
    # Which price list instance_type belongs to: 'ec2' or 'sagemaker' (ml.* prices differ).
    "platform": "str",
    # Whether the job writes checkpoints: SageMaker CheckpointConfig, or a known interval.
    "checkpointing": "boolean",
    # What the GPU plan sizes and scales a workload by, where the log records it (else missing):
    # parameter count, peak GPU memory per GPU, throughput of the whole job, explore|tune|production.
    "model_params": "Int64",
    "peak_gpu_memory_gib": "float64",
    "samples_per_second": "float64",
    "phase": "str",
    "duration_s": "float64",
    # SageMaker BillableTimeInSeconds (after the managed-spot discount of time); NaN elsewhere.
    "billable_s": "float64",
    "censored": "bool",
    "gpu_count": "int64",
    "gpu_hours": "float64",
    "source_row": "int64",
    # The scheduler's nodes the job held, expanded and comma-separated (Slurm NodeList); else missing.
    "node_list": "str",
}

NULL_TOKENS = frozenset({"", "NULL", "null", "None", "NaN", "nan"})

# The largest whole number a log's cell is read as exactly: counts are parsed as float64 (which
# holds every integer up to 2^53) and stored as int64 (up to 2^63 - 1). A cell beyond it (1e30, a
# 19-digit count) is not a count any job has: the row is refused, not cast into an overflow.
MAX_INTEGER = 2**53


TOO_LARGE = f"beyond {MAX_INTEGER:,}, the largest count read exactly"


def count_problem(value: float) -> str | None:
    """Why a parsed figure is not a count the int64 columns hold exactly, or None when it is."""
    try:
        if not math.isfinite(value) or value != math.floor(value):
            return "not an integer"
        return TOO_LARGE if abs(value) > MAX_INTEGER else None
    except OverflowError:  # a JSON integer of 400 digits does not even convert to a float
        return TOO_LARGE


RECORD_COLUMNS = [
    "job_id",
    "submit_time",
    "start_time",
    "end_time",
    "state",
    "state_detail",
    "instance_type",
    "instance_count",
    "gpus_per_instance",
    "pricing_model",
    "team",
    "project",
    "model",
    "checkpoint_interval_s",
    "checkpoint_time_s",
    "restart_count",
    "model_params",
    "peak_gpu_memory_gib",
    "samples_per_second",
    "phase",
    "source_row",
    "_gpu_total",
    "_elapsed_s",
]


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Give a frame built from Python records the dtypes the generic path produces."""
    for column in ("submit_time", "start_time", "end_time"):
        frame[column] = pd.to_datetime(frame[column]).astype("datetime64[us]")
    for column in ("instance_count", "gpus_per_instance", "restart_count", "model_params"):
        frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    for column in (
        "checkpoint_interval_s",
        "checkpoint_time_s",
        "billable_s",
        "_elapsed_s",
        "peak_gpu_memory_gib",
        "samples_per_second",
    ):
        frame[column] = frame[column].astype("float64")
    for column in (
        "job_id",
        "state",
        "state_detail",
        "instance_type",
        "pricing_model",
        "team",
        "project",
        "model",
        "phase",
    ):
        frame[column] = frame[column].astype("str")
    if "node_list" in frame:
        frame["node_list"] = frame["node_list"].astype("str")
    return frame


def clean_text(s: pd.Series) -> pd.Series:
    """Stripped strings with the usual null spellings as missing."""
    t = s.astype("str").str.strip()
    return t.mask(t.isin(NULL_TOKENS))


def iso(ts: pd.Timestamp) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S") + (f".{ts.microsecond:06d}" if ts.microsecond else "") + "Z"


def check_common(frame: pd.DataFrame, problems: Problems, names: Mapping[str, str]) -> None:
    """Rules every source obeys, checked on the canonical frame (parse failures are already NA)."""
    rows = frame["source_row"]

    def col(column: str) -> str:
        return names.get(column, column)

    job_id = frame["job_id"]
    problems.add_mask(job_id.isna(), rows, col("job_id"), "job_id is empty", lambda i: "")
    duplicate = job_id.notna() & job_id.duplicated(keep="first")
    if duplicate.any():
        first_row = frame.groupby("job_id")["source_row"].transform("min")
        problems.add_mask(
            duplicate,
            rows,
            col("job_id"),
            "duplicate job_id",
            lambda i: f"{job_id.iloc[i]!r} first at {problems.unit} {first_row.iloc[i]}",
        )
    for column, minimum in (("instance_count", 1), ("gpus_per_instance", 0), ("restart_count", 0)):
        values = frame[column]
        problems.add_mask(
            values.notna() & (values < minimum),
            rows,
            col(column),
            f"must be >= {minimum}",
            lambda i, v=values: str(v.iloc[i]),
        )
    for column in ("model_params", "peak_gpu_memory_gib", "samples_per_second"):
        values = frame[column]
        problems.add_mask(
            values.notna() & (values <= 0),
            rows,
            col(column),
            "must be > 0",
            lambda i, v=values: str(v.iloc[i]),
        )
    phase = frame["phase"]
    problems.add_mask(
        phase.notna() & ~phase.isin(JOB_PHASES),
        rows,
        col("phase"),
        f"not one of {', '.join(JOB_PHASES)}",
        lambda i: repr(phase.iloc[i]),
    )
    start, end = frame["start_time"], frame["end_time"]
    problems.add_mask(
        start.notna() & end.notna() & (end < start),
        rows,
        col("end_time"),
        "end before start",
        lambda i: f"{iso(end.iloc[i])} < {iso(start.iloc[i])}",
    )
    # A finished run needs its end; only running jobs (and never-started ones) lack it.
    problems.add_mask(
        start.notna() & end.isna() & frame["state"].isin(JOB_STATES) & (frame["state"] != "running"),
        rows,
        col("end_time"),
        "end missing for a job that is not running",
        lambda i: f"state {frame['state'].iloc[i]}",
    )


def derive(frame: pd.DataFrame, as_of: pd.Timestamp | None) -> pd.DataFrame:
    start, end = frame["start_time"], frame["end_time"]
    running = frame["state"] == "running"
    duration = (end - start).dt.total_seconds()
    if as_of is not None:
        to_as_of = (as_of - start).dt.total_seconds()
        # A job that started after as_of did not exist yet then: no duration.
        duration = duration.mask(running, to_as_of.where(to_as_of >= 0))
    else:
        duration = duration.mask(running, frame["_elapsed_s"])
    duration = duration.mask(start.isna())
    gpu_count = frame["instance_count"] * frame["gpus_per_instance"]
    gpu_count = frame["_gpu_total"].astype("Int64").fillna(gpu_count)
    gpu_hours = (duration / 3600 * gpu_count.astype("float64")).mask(start.isna(), 0.0)

    if "node_list" not in frame:
        frame = frame.assign(node_list=pd.Series(pd.NA, index=frame.index, dtype="str"))
    frame = frame.assign(
        duration_s=duration.astype("float64"),
        censored=frame["state"].isin(CENSORED_STATES),
        gpu_count=gpu_count,
        gpu_hours=gpu_hours.astype("float64"),
    )
    out = frame[list(COLUMNS)].reset_index(drop=True)
    return out.astype(COLUMNS)
