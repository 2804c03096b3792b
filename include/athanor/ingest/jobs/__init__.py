"""Training-job runs from three log formats into one canonical table.

Formats, recognised from the file's content (never from its name); gzip is
unwrapped transparently:

- ``generic``: the canonical job-run schema, CSV or Parquet (columns: ``GENERIC_REQUIRED``,
  ``GENERIC_OPTIONAL``; extra columns are ignored).
- ``slurm``: ``sacct --parsable2`` output with its header line, e.g.
  ``sacct -a -P --format=JobID,JobName,User,Account,Partition,Submit,Start,End,Elapsed,State,AllocTRES,NNodes,Comment``.
- ``sagemaker``: ``DescribeTrainingJob`` responses as JSON: one document per
  file, a JSON array of documents, or JSON Lines.
- ``kubernetes``: ``kubectl get pods -o json``: one row per pod asking for GPUs, its node
  (``spec.nodeName``) as its node list.

Every reader returns the same DataFrame (see ``COLUMNS``): one row per job,
timestamps tz-naive UTC, and ``source_row`` (1-based data row of a CSV/Parquet
file or sacct output, header not counted; line number in JSON Lines; element
number in a JSON array; 1 for a single document) for lineage.

Derived columns:

- ``duration_s`` = end - start; for running jobs ``as_of`` - start (without
  ``as_of``: sacct's Elapsed for Slurm, NaN otherwise); NaN for jobs that never
  started.
- ``censored`` = state in (preempted, cancelled, running): the run was cut
  short, its duration is a lower bound.
- ``gpu_count`` = instance_count x gpus_per_instance (Slurm: the allocated
  ``gres/gpu`` total); ``gpu_hours`` = duration_s / 3600 x gpu_count, 0 for jobs
  that never started.

Bad input raises one ``JobRunError`` naming file, row, column, rule and the
offending value for the first few problems, with the total count. Non-fatal
notes (an instance type missing from the GPU table) go to
``df.attrs["warnings"]``.

One module per concern: `detect` (which format), `generic`, `slurm` and `sagemaker` (the
readers), `canonical` (the table, the shared rules, the derived columns), `problems` (the
errors). The names below are the public interface.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd

from athanor.ingest.jobs.canonical import COLUMNS, check_common, derive
from athanor.ingest.jobs.detect import detect, detect_job_format, read_bytes
from athanor.ingest.jobs.generic import GENERIC_COLUMNS, GENERIC_OPTIONAL, GENERIC_REQUIRED, parse_generic
from athanor.ingest.jobs.kubernetes import parse_kubernetes
from athanor.ingest.jobs.problems import MAX_EXAMPLES, JobRunError, Problem, Problems
from athanor.ingest.jobs.sagemaker import SAGEMAKER_STATES, parse_sagemaker
from athanor.ingest.jobs.slurm import (
    SLURM_STATES,
    default_partition_pricing,
    expand_array_id,
    expand_hostlist,
    parse_slurm,
    parse_slurm_elapsed,
    parse_tres_gpus,
)
from athanor.ingest.sniff import DEFAULT_LIMITS, InputLimits
from athanor.reference import CENSORED_STATES, JOB_PRICING_MODELS, JOB_STATES

logger = logging.getLogger(__name__)

# A Slurm log with at most this share of its records broken loads without them (each rejected
# record named in the log and counted); beyond it the whole log is refused as it stands.
DEFAULT_MAX_BAD_SHARE = 0.1

__all__ = [
    "CENSORED_STATES",
    "COLUMNS",
    "GENERIC_COLUMNS",
    "GENERIC_OPTIONAL",
    "GENERIC_REQUIRED",
    "MAX_EXAMPLES",
    "SAGEMAKER_STATES",
    "SLURM_STATES",
    "JobRunError",
    "Problem",
    "default_partition_pricing",
    "detect_job_format",
    "expand_array_id",
    "expand_hostlist",
    "parse_slurm_elapsed",
    "parse_tres_gpus",
    "read_job_runs",
    "summarise",
]


def read_job_runs(
    path: str | Path,
    *,
    as_of: datetime | str | pd.Timestamp | None = None,
    partition_map: Mapping[str, str] | None = None,
    partition_pricing: Mapping[str, str] | None = None,
    slurm_tz: str = "UTC",
    limits: InputLimits = DEFAULT_LIMITS,
    max_bad_share: float = DEFAULT_MAX_BAD_SHARE,
) -> pd.DataFrame:
    """Read one job-log file of any supported format into the canonical table.

    Args:
        as_of: the moment the export describes; running jobs' durations run up to it.
        partition_map: Slurm partition -> instance type (unmapped: the partition name).
        partition_pricing: Slurm partition -> pricing model (unmapped: 'spot' when the
            name contains 'spot', else 'on_demand').
        slurm_tz: time zone sacct printed its timestamps in (sacct uses local time).
        limits: how far a gzip may expand (`athanor.ingest.sniff`).
        max_bad_share: a Slurm log's records with a problem are rejected alone (the rest load;
            ``df.attrs["rejected"]`` counts them per rule) while they are at most this share of
            its records; beyond it, or for a problem of the whole file, the file is refused.
    """
    path = Path(path)
    data = read_bytes(path, limits)
    kind = detect(data, path.name)
    as_of_ts = _as_utc_naive(as_of)
    for pricing in (partition_pricing or {}).values():
        if pricing not in JOB_PRICING_MODELS:
            raise ValueError(f"partition_pricing: {pricing!r} is not one of {', '.join(JOB_PRICING_MODELS)}")
    if kind == "generic":
        frame, problems, warnings, names = parse_generic(data, path.name)
    elif kind == "slurm":
        frame, problems, warnings, names = parse_slurm(
            data, path.name, partition_map or {}, partition_pricing or {}, ZoneInfo(slurm_tz)
        )
    elif kind == "kubernetes":
        frame, problems, warnings, names = parse_kubernetes(data, path.name)
    else:
        frame, problems, warnings, names = parse_sagemaker(data, path.name)
    check_common(frame, problems, names)
    rejected: dict[str, int] = {}
    if kind == "slurm":
        frame, rejected = _reject_alone(frame, problems, max_bad_share, warnings)
    problems.raise_if_any(names.get(c, c) for c in COLUMNS)
    out = derive(frame, as_of_ts)
    out.attrs["warnings"] = warnings
    out.attrs["rejected"] = rejected
    return out


def _reject_alone(
    frame: pd.DataFrame, problems: Problems, max_share: float, warnings: list[str]
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Drop the records a problem was found in, when few enough, and clear the problems; else
    leave them for `raise_if_any` to refuse the file with."""
    records = getattr(problems, "records", len(frame))
    if not problems.total or None in problems.bad_rows or not records:
        return frame, {}
    bad = {row for row in problems.bad_rows if row is not None}
    if len(bad) / records > max_share:
        return frame, {}
    for problem in problems.examples:
        logger.warning("rejected: %s", problem)
    counts = dict(sorted(problems.rule_counts.items()))
    summary = "; ".join(f"{n} {rule}" for rule, n in counts.items())
    note = f"{problems.file}: {len(bad)} of {records} records rejected, the rest loaded ({summary})"
    logger.warning(note)
    warnings.append(note)
    problems.total = 0
    problems.examples.clear()
    return frame[~frame["source_row"].isin(bad)].reset_index(drop=True), counts


def _as_utc_naive(value: datetime | str | pd.Timestamp | None) -> pd.Timestamp | None:
    if value is None:
        return None
    ts = pd.Timestamp(value)
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC").tz_localize(None)
    return ts.as_unit("us")


def summarise(df: pd.DataFrame) -> dict[str, Any]:
    """Counts for a CLI summary line: jobs, censored share, GPU-hours in total and by state."""
    jobs = len(df)
    censored = int(df["censored"].sum())
    by_state = df.groupby("state")["gpu_hours"].sum(min_count=0)
    return {
        "jobs": jobs,
        "censored": censored,
        "censored_share": censored / jobs if jobs else math.nan,
        "gpu_hours": float(df["gpu_hours"].sum()),
        "gpu_hours_by_state": {state: float(by_state.get(state, 0.0)) for state in JOB_STATES},
        # Running jobs without an as_of have no duration yet: their GPU-hours are not counted.
        "jobs_without_duration": int((df["duration_s"].isna() & df["start_time"].notna()).sum()),
        "by_source": {s: int(n) for s, n in df["source"].value_counts().sort_index().items()},
    }
