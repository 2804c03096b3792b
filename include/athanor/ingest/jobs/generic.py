"""The generic job-run schema, CSV or Parquet: the canonical columns as a scheduler exports them."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd

from athanor.ingest.jobs.canonical import MAX_INTEGER, TOO_LARGE, clean_text
from athanor.ingest.jobs.problems import JobRunError, Problem, Problems
from athanor.ingest.jobs.slurm import expand_hostlist
from athanor.reference import JOB_PRICING_MODELS, JOB_STATES

# Required in a generic file; the other schema columns are optional (empty when absent).
GENERIC_REQUIRED = (
    "job_id",
    "submit_time",
    "start_time",
    "end_time",
    "state",
    "instance_type",
    "instance_count",
    "gpus_per_instance",
    "pricing_model",
)
GENERIC_OPTIONAL = (
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
    "platform",
    "node_list",
)
# The documented generic schema in file order (README, "Job-run schema"); `platform` (an
# optional extra of SageMaker-derived files) and `node_list` (the hosts of a scheduler without a
# reader of its own, for the allocation by GPU-seconds) are optional extras, not part of it.
GENERIC_COLUMNS = GENERIC_REQUIRED + tuple(c for c in GENERIC_OPTIONAL if c not in ("platform", "node_list"))


def _timestamps(s: pd.Series, column: str, rows: pd.Series, problems: Problems) -> pd.Series:
    if isinstance(s.dtype, pd.DatetimeTZDtype):
        return s.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[us]")
    if pd.api.types.is_datetime64_dtype(s):
        return s.astype("datetime64[us]")  # naive Parquet timestamps are taken as UTC
    text = clean_text(s)
    # Offsets and Z are converted to UTC; naive 'YYYY-MM-DD HH:MM:SS' is taken as UTC.
    parsed = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    bad = text.notna() & parsed.isna()
    problems.add_mask(bad, rows, column, "not a timestamp", lambda i: repr(text.iloc[i]))
    return parsed.dt.tz_localize(None).astype("datetime64[us]")


def _numbers(
    s: pd.Series,
    column: str,
    rows: pd.Series,
    problems: Problems,
    *,
    integer: bool,
    required: bool,
) -> pd.Series:
    text = clean_text(s)
    num = pd.to_numeric(text, errors="coerce").astype("float64")
    kind = "an integer" if integer else "a number"
    bad = text.notna() & (num.isna() | ~np.isfinite(num))
    if integer:
        bad |= num.notna() & np.isfinite(num) & (num != np.floor(num))
    problems.add_mask(bad, rows, column, f"not {kind}", lambda i: repr(text.iloc[i]))
    if integer:
        huge = ~bad & num.notna() & (num.abs() > MAX_INTEGER)
        problems.add_mask(huge, rows, column, TOO_LARGE, lambda i: repr(text.iloc[i]))
        bad |= huge
    if required:
        problems.add_mask(text.isna(), rows, column, "value missing", lambda i: "")
    num = num.mask(bad)
    return num.astype("Int64") if integer else num


def parse_generic(data: bytes, name: str) -> tuple[pd.DataFrame, Problems, list[str], dict[str, str]]:
    try:
        with warnings.catch_warnings():
            # Without index_col=False pandas turns surplus leading fields into an index, shifting
            # every column; with it, surplus fields only warn: make that an error.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            if data[:4] == b"PAR1":
                raw = pd.read_parquet(io.BytesIO(data))
            else:
                raw = pd.read_csv(
                    io.BytesIO(data), dtype=str, keep_default_na=False, encoding="utf-8-sig", index_col=False
                )
    except pd.errors.ParserWarning as error:
        problem = Problem(name, None, None, "unreadable file", "a row has more fields than the header")
        raise JobRunError(name, [problem]) from error
    except (ValueError, OSError) as error:  # pandas ParserError, pyarrow's ArrowInvalid, bad UTF-8
        raise JobRunError(name, [Problem(name, None, None, "unreadable file", str(error).strip())]) from error
    raw.columns = [str(c).strip().lower() for c in raw.columns]
    problems = Problems(name)
    for column in GENERIC_REQUIRED:
        if column not in raw.columns:
            problems.add(None, column, "required column missing")
    problems.raise_if_any(GENERIC_REQUIRED)

    n = len(raw)
    rows = pd.Series(np.arange(1, n + 1), dtype="int64")
    raw = raw.reset_index(drop=True)

    def column_or_empty(column: str) -> pd.Series:
        return raw[column] if column in raw.columns else pd.Series([None] * n, dtype="str")

    frame = pd.DataFrame({"job_id": clean_text(raw["job_id"])})
    for column in ("submit_time", "start_time", "end_time"):
        frame[column] = _timestamps(raw[column], column, rows, problems)

    state_text = clean_text(raw["state"])
    frame["state_detail"] = state_text
    frame["state"] = state_text.str.lower()
    problems.add_mask(
        ~frame["state"].isin(JOB_STATES),
        rows,
        "state",
        f"not one of {', '.join(JOB_STATES)}",
        lambda i: repr(state_text.iloc[i]) if pd.notna(state_text.iloc[i]) else "empty",
    )
    pricing_text = clean_text(raw["pricing_model"])
    frame["pricing_model"] = pricing_text.str.lower().str.replace("-", "_", regex=False)
    problems.add_mask(
        ~frame["pricing_model"].isin(JOB_PRICING_MODELS),
        rows,
        "pricing_model",
        f"not one of {', '.join(JOB_PRICING_MODELS)}",
        lambda i: repr(pricing_text.iloc[i]) if pd.notna(pricing_text.iloc[i]) else "empty",
    )

    instance_type = clean_text(raw["instance_type"])
    problems.add_mask(instance_type.isna(), rows, "instance_type", "value missing", lambda i: "")
    # An ml.* type is a SageMaker instance: same hardware, a different price list.
    is_ml = instance_type.str.lower().str.startswith("ml.").fillna(False).astype(bool)
    frame["instance_type"] = instance_type.str.replace(r"^(?i:ml\.)", "", regex=True)
    platform = clean_text(column_or_empty("platform")).str.lower()
    frame["platform"] = platform.fillna(pd.Series(np.where(is_ml, "sagemaker", "ec2"))).astype("str")

    frame["instance_count"] = _numbers(
        raw["instance_count"], "instance_count", rows, problems, integer=True, required=True
    )
    frame["gpus_per_instance"] = _numbers(
        raw["gpus_per_instance"], "gpus_per_instance", rows, problems, integer=True, required=True
    )
    restarts = _numbers(
        column_or_empty("restart_count"), "restart_count", rows, problems, integer=True, required=False
    )
    frame["restart_count"] = restarts.fillna(0)
    for column in ("checkpoint_interval_s", "checkpoint_time_s"):
        frame[column] = _numbers(
            column_or_empty(column), column, rows, problems, integer=False, required=False
        )
    frame["model_params"] = _numbers(
        column_or_empty("model_params"), "model_params", rows, problems, integer=True, required=False
    )
    for column in ("peak_gpu_memory_gib", "samples_per_second"):
        frame[column] = _numbers(
            column_or_empty(column), column, rows, problems, integer=False, required=False
        )
    frame["phase"] = clean_text(column_or_empty("phase")).str.lower()
    for column in ("team", "project", "model"):
        frame[column] = clean_text(column_or_empty(column))
    frame["checkpointing"] = pd.array(
        np.where(frame["checkpoint_interval_s"].notna(), True, None), dtype="boolean"
    )
    frame["node_list"] = _node_lists(clean_text(column_or_empty("node_list")), rows, problems)
    frame["billable_s"] = np.nan
    frame["source"] = "generic"
    frame["source_row"] = rows
    frame["_gpu_total"] = pd.NA
    frame["_elapsed_s"] = np.nan
    return frame, problems, [], {}


def _node_lists(text: pd.Series, rows: pd.Series, problems: Problems) -> pd.Series:
    """The optional node_list column: host names, comma-separated or in Slurm's compacted form."""
    out: list[str | None] = []
    for i, value in enumerate(text):
        if not isinstance(value, str):
            out.append(None)
            continue
        try:
            out.append(",".join(expand_hostlist(value)) or None)
        except ValueError as error:
            problems.add(int(rows.iloc[i]), "node_list", f"not a host list: {error}", repr(value[:80]))
            out.append(None)
    return pd.Series(out, index=text.index, dtype="str")
