"""Training-job runs from three log formats into one canonical table.

Formats, recognised from the file's content (never from its name); gzip is
unwrapped transparently:

- ``generic``: the canonical job-run schema, CSV or Parquet (columns: ``GENERIC_REQUIRED``,
  ``GENERIC_OPTIONAL``; extra columns are ignored).
- ``slurm``: ``sacct --parsable2`` output with its header line, e.g.
  ``sacct -a -P --format=JobID,JobName,User,Account,Partition,Submit,Start,End,Elapsed,State,AllocTRES,NNodes,Comment``.
- ``sagemaker``: ``DescribeTrainingJob`` responses as JSON: one document per
  file, a JSON array of documents, or JSON Lines.

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
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from athanor.reference import CENSORED_STATES, JOB_PRICING_MODELS, JOB_STATES, gpus_per_instance

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
    "duration_s": "float64",
    # SageMaker BillableTimeInSeconds (after the managed-spot discount of time); NaN elsewhere.
    "billable_s": "float64",
    "censored": "bool",
    "gpu_count": "int64",
    "gpu_hours": "float64",
    "source_row": "int64",
}

MAX_EXAMPLES = 5
_NULL_TOKENS = frozenset({"", "NULL", "null", "None", "NaN", "nan"})


# --------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class Problem:
    """One broken rule at one place in one file."""

    file: str
    row: int | None
    column: str | None
    rule: str
    detail: str = ""
    unit: str = "row"  # 'document' for JSON sources

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f" {self.unit} {self.row}"
        if self.column:
            where += f", {'field' if self.unit == 'document' else 'column'} {self.column}"
        return f"{where}: {self.rule}" + (f" ({self.detail})" if self.detail else "")


class JobRunError(ValueError):
    """A job-log file broke the schema's rules; the message lists the first few problems."""

    def __init__(self, file: str, problems: list[Problem], total: int | None = None):
        self.file = file
        self.problems = problems
        self.total = len(problems) if total is None else total
        if self.total == 1 and len(problems) == 1:
            message = str(problems[0])
        else:
            shown = problems[:MAX_EXAMPLES]
            message = f"{file}: {self.total} problems, first {len(shown)}:\n" + "\n".join(
                f"  {p}" for p in shown
            )
        super().__init__(message)


class _Problems:
    """Collects problems: a full count, but only the first examples of each rule."""

    def __init__(self, file: str, unit: str = "row"):
        self.file = file
        self.unit = unit
        self.examples: list[Problem] = []
        self.total = 0

    def add(self, row: int | None, column: str | None, rule: str, detail: str = "") -> None:
        self.total += 1
        self.examples.append(Problem(self.file, row, column, rule, detail, self.unit))

    def add_mask(
        self,
        mask: pd.Series,
        rows: pd.Series,
        column: str,
        rule: str,
        detail: Callable[[Any], str],
    ) -> None:
        """Record every row where ``mask`` holds; keep examples of the first few only."""
        hits = np.flatnonzero(mask.fillna(False).to_numpy(dtype=bool))
        self.total += len(hits)
        for i in hits[:MAX_EXAMPLES]:
            self.examples.append(Problem(self.file, int(rows.iloc[i]), column, rule, detail(i), self.unit))

    def raise_if_any(self, column_order: Iterable[str] = ()) -> None:
        if not self.total:
            return
        order = {c: i for i, c in enumerate(column_order)}
        # File-level problems (no row) first, then by row and column position.
        ranked = sorted(
            self.examples,
            key=lambda p: (p.row is not None, p.row or 0, order.get(p.column or "", len(order))),
        )
        raise JobRunError(self.file, ranked, self.total)


# --------------------------------------------------------------------------- detection


def _read_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as error:
        raise JobRunError(
            name, [Problem(name, None, None, "not UTF-8 text", f"byte offset {error.start}")]
        ) from error


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0].rstrip("\r")


def _detect(data: bytes, name: str) -> str:
    if data[:4] == b"PAR1":
        return "generic"
    text = data[:65536].decode("utf-8", errors="replace").lstrip("\ufeff")
    head = text.lstrip()
    if head[:1] in ("{", "["):
        if "TrainingJobName" in head:
            return "sagemaker"
        raise JobRunError(
            name,
            [
                Problem(
                    name,
                    None,
                    None,
                    "JSON without TrainingJobName: not a SageMaker DescribeTrainingJob document",
                )
            ],
        )
    first = _first_line(head)
    if "|" in first and "JobID" in first.split("|"):
        return "slurm"
    if first.split()[:1] == ["JobID"] and _first_line(head[len(first) + 1 :]).startswith("---"):
        raise JobRunError(
            name,
            [
                Problem(
                    name, None, None, "sacct output in fixed-width columns: run sacct with --parsable2 (-P)"
                )
            ],
        )
    header = next(csv.reader([first]), [])
    if "job_id" in {h.strip().lower() for h in header}:
        return "generic"
    raise JobRunError(
        name,
        [Problem(name, None, None, "not a known job-log format", f"first line: {first[:80]!r}")],
    )


def detect_job_format(path: str | Path) -> str:
    """'generic', 'slurm' or 'sagemaker', from the file's first bytes / header line."""
    path = Path(path)
    return _detect(_read_bytes(path), path.name)


# --------------------------------------------------------------------------- entry point


def read_job_runs(
    path: str | Path,
    *,
    as_of: datetime | str | pd.Timestamp | None = None,
    partition_map: Mapping[str, str] | None = None,
    partition_pricing: Mapping[str, str] | None = None,
    slurm_tz: str = "UTC",
) -> pd.DataFrame:
    """Read one job-log file of any supported format into the canonical table.

    Args:
        as_of: the moment the export describes; running jobs' durations run up to it.
        partition_map: Slurm partition -> instance type (unmapped: the partition name).
        partition_pricing: Slurm partition -> pricing model (unmapped: 'spot' when the
            name contains 'spot', else 'on_demand').
        slurm_tz: time zone sacct printed its timestamps in (sacct uses local time).
    """
    path = Path(path)
    data = _read_bytes(path)
    kind = _detect(data, path.name)
    as_of_ts = _as_utc_naive(as_of)
    for pricing in (partition_pricing or {}).values():
        if pricing not in JOB_PRICING_MODELS:
            raise ValueError(f"partition_pricing: {pricing!r} is not one of {', '.join(JOB_PRICING_MODELS)}")
    if kind == "generic":
        frame, problems, warnings, names = _parse_generic(data, path.name)
    elif kind == "slurm":
        frame, problems, warnings, names = _parse_slurm(
            data, path.name, partition_map or {}, partition_pricing or {}, ZoneInfo(slurm_tz)
        )
    else:
        frame, problems, warnings, names = _parse_sagemaker(data, path.name)
    _check_common(frame, problems, names)
    problems.raise_if_any(names.get(c, c) for c in COLUMNS)
    out = _derive(frame, as_of_ts)
    out.attrs["warnings"] = warnings
    return out


def _as_utc_naive(value: datetime | str | pd.Timestamp | None) -> pd.Timestamp | None:
    if value is None:
        return None
    ts = pd.Timestamp(value)
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC").tz_localize(None)
    return ts.as_unit("us")


# --------------------------------------------------------------------------- generic


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
    "platform",
)
# The documented generic schema in file order (README, "Job-run schema"); `platform` is an
# optional extra of SageMaker-derived files, not part of it.
GENERIC_COLUMNS = GENERIC_REQUIRED + tuple(c for c in GENERIC_OPTIONAL if c != "platform")


def _text(s: pd.Series) -> pd.Series:
    """Stripped strings with the usual null spellings as missing."""
    t = s.astype("str").str.strip()
    return t.mask(t.isin(_NULL_TOKENS))


def _iso(ts: pd.Timestamp) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S") + (f".{ts.microsecond:06d}" if ts.microsecond else "") + "Z"


def _timestamps(s: pd.Series, column: str, rows: pd.Series, problems: _Problems) -> pd.Series:
    if isinstance(s.dtype, pd.DatetimeTZDtype):
        return s.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[us]")
    if pd.api.types.is_datetime64_dtype(s):
        return s.astype("datetime64[us]")  # naive Parquet timestamps are taken as UTC
    text = _text(s)
    # Offsets and Z are converted to UTC; naive 'YYYY-MM-DD HH:MM:SS' is taken as UTC.
    parsed = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    bad = text.notna() & parsed.isna()
    problems.add_mask(bad, rows, column, "not a timestamp", lambda i: repr(text.iloc[i]))
    return parsed.dt.tz_localize(None).astype("datetime64[us]")


def _numbers(
    s: pd.Series,
    column: str,
    rows: pd.Series,
    problems: _Problems,
    *,
    integer: bool,
    required: bool,
) -> pd.Series:
    text = _text(s)
    num = pd.to_numeric(text, errors="coerce").astype("float64")
    kind = "an integer" if integer else "a number"
    bad = text.notna() & (num.isna() | ~np.isfinite(num))
    if integer:
        bad |= num.notna() & np.isfinite(num) & (num != np.floor(num))
    problems.add_mask(bad, rows, column, f"not {kind}", lambda i: repr(text.iloc[i]))
    if required:
        problems.add_mask(text.isna(), rows, column, "value missing", lambda i: "")
    num = num.mask(bad)
    return num.astype("Int64") if integer else num


def _parse_generic(data: bytes, name: str) -> tuple[pd.DataFrame, _Problems, list[str], dict[str, str]]:
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
    problems = _Problems(name)
    for column in GENERIC_REQUIRED:
        if column not in raw.columns:
            problems.add(None, column, "required column missing")
    problems.raise_if_any(GENERIC_REQUIRED)

    n = len(raw)
    rows = pd.Series(np.arange(1, n + 1), dtype="int64")
    raw = raw.reset_index(drop=True)

    def column_or_empty(column: str) -> pd.Series:
        return raw[column] if column in raw.columns else pd.Series([None] * n, dtype="str")

    frame = pd.DataFrame({"job_id": _text(raw["job_id"])})
    for column in ("submit_time", "start_time", "end_time"):
        frame[column] = _timestamps(raw[column], column, rows, problems)

    state_text = _text(raw["state"])
    frame["state_detail"] = state_text
    frame["state"] = state_text.str.lower()
    problems.add_mask(
        ~frame["state"].isin(JOB_STATES),
        rows,
        "state",
        f"not one of {', '.join(JOB_STATES)}",
        lambda i: repr(state_text.iloc[i]) if pd.notna(state_text.iloc[i]) else "empty",
    )
    pricing_text = _text(raw["pricing_model"])
    frame["pricing_model"] = pricing_text.str.lower().str.replace("-", "_", regex=False)
    problems.add_mask(
        ~frame["pricing_model"].isin(JOB_PRICING_MODELS),
        rows,
        "pricing_model",
        f"not one of {', '.join(JOB_PRICING_MODELS)}",
        lambda i: repr(pricing_text.iloc[i]) if pd.notna(pricing_text.iloc[i]) else "empty",
    )

    instance_type = _text(raw["instance_type"])
    problems.add_mask(instance_type.isna(), rows, "instance_type", "value missing", lambda i: "")
    # An ml.* type is a SageMaker instance: same hardware, a different price list.
    is_ml = instance_type.str.lower().str.startswith("ml.").fillna(False).astype(bool)
    frame["instance_type"] = instance_type.str.replace(r"^(?i:ml\.)", "", regex=True)
    platform = _text(column_or_empty("platform")).str.lower()
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
    for column in ("team", "project", "model"):
        frame[column] = _text(column_or_empty(column))
    frame["checkpointing"] = pd.array(
        np.where(frame["checkpoint_interval_s"].notna(), True, None), dtype="boolean"
    )
    frame["billable_s"] = np.nan
    frame["source"] = "generic"
    frame["source_row"] = rows
    frame["_gpu_total"] = pd.NA
    frame["_elapsed_s"] = np.nan
    return frame, problems, [], {}


# --------------------------------------------------------------------------- slurm

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
# Comment convention for tags Slurm has no field for: 'project=x model=y checkpoint_interval_s=1800'.
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


def default_partition_pricing(partition: str) -> str:
    return "spot" if "spot" in partition.lower() else "on_demand"


def _slurm_times(frame: pd.DataFrame, problems: _Problems, tz: ZoneInfo) -> None:
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


def _parse_slurm(
    data: bytes,
    name: str,
    partition_map: Mapping[str, str],
    partition_pricing: Mapping[str, str],
    tz: ZoneInfo,
) -> tuple[pd.DataFrame, _Problems, list[str], dict[str, str]]:
    lines = _decode(data, name).splitlines()
    header = lines[0].split("|")
    # --parsable (not --parsable2) ends every line with a '|'.
    trailing = header[-1] == ""
    if trailing:
        header = header[:-1]
    problems = _Problems(name)
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
        if re.fullmatch(r"\d+", nodes):
            record["instance_count"] = int(nodes)
        else:
            problems.add(row, "NNodes", "not an integer", repr(nodes))

        tres = get("AllocTRES") or get("ReqTRES")  # never-started jobs have no allocation
        try:
            gpus = parse_tres_gpus(tres)
        except ValueError:
            problems.add(row, "AllocTRES", "GPU count not an integer", repr(tres))
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
        for key in ("checkpoint_interval_s", "checkpoint_time_s"):
            record[key] = np.nan
            if key in tags:
                try:
                    record[key] = float(tags[key])
                except ValueError:
                    problems.add(row, "Comment", f"{key} not a number", repr(tags[key]))
        record["restart_count"] = 0
        records.append(record)

    frame = pd.DataFrame.from_records(records, columns=_RECORD_COLUMNS)
    _slurm_times(frame, problems, tz)
    frame["source"] = "slurm"
    frame["platform"] = "ec2"
    frame["billable_s"] = np.nan
    frame["checkpointing"] = pd.array(
        np.where(frame["checkpoint_interval_s"].notna(), True, None), dtype="boolean"
    )
    return _typed(frame), problems, warnings, _SLURM_NAMES


_RECORD_COLUMNS = [
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
    "source_row",
    "_gpu_total",
    "_elapsed_s",
]


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Give a frame built from Python records the dtypes the generic path produces."""
    for column in ("submit_time", "start_time", "end_time"):
        frame[column] = pd.to_datetime(frame[column]).astype("datetime64[us]")
    for column in ("instance_count", "gpus_per_instance", "restart_count"):
        frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    for column in ("checkpoint_interval_s", "checkpoint_time_s", "billable_s", "_elapsed_s"):
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
    ):
        frame[column] = frame[column].astype("str")
    return frame


# --------------------------------------------------------------------------- sagemaker

_SAGEMAKER_NAMES = {
    "job_id": "TrainingJobName",
    "submit_time": "CreationTime",
    "start_time": "TrainingStartTime",
    "end_time": "TrainingEndTime",
    "state": "TrainingJobStatus",
    "instance_type": "ResourceConfig.InstanceType",
    "instance_count": "ResourceConfig.InstanceCount",
    "restart_count": "SecondaryStatusTransitions",
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
    text = _decode(data, name)
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


def _parse_sagemaker(data: bytes, name: str) -> tuple[pd.DataFrame, _Problems, list[str], dict[str, str]]:
    problems = _Problems(name, unit="document")
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
        if isinstance(instance_count, int) and not isinstance(instance_count, bool):
            record["instance_count"] = instance_count
        elif instance_count is None:
            problems.add(number, "ResourceConfig.InstanceCount", "required field missing")
        else:
            problems.add(number, "ResourceConfig.InstanceCount", "not an integer", repr(instance_count))

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
        billable = doc.get("BillableTimeInSeconds")
        record["billable_s"] = float(billable) if isinstance(billable, (int, float)) else np.nan
        record["_gpu_total"] = pd.NA
        record["_elapsed_s"] = np.nan
        records.append(record)

    frame = pd.DataFrame.from_records(records, columns=[*_RECORD_COLUMNS, "checkpointing", "billable_s"])
    frame["checkpointing"] = frame["checkpointing"].astype("boolean")
    frame["source"] = "sagemaker"
    frame["platform"] = "sagemaker"
    warnings = [
        f"{name}: instance type {t!r} not in the GPU table (document {', '.join(map(str, docs))});"
        " gpus_per_instance set to 0"
        for t, docs in unknown_types.items()
    ]
    return _typed(frame), problems, warnings, _SAGEMAKER_NAMES


# --------------------------------------------------------------------------- shared rules


def _check_common(frame: pd.DataFrame, problems: _Problems, names: Mapping[str, str]) -> None:
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
    start, end = frame["start_time"], frame["end_time"]
    problems.add_mask(
        start.notna() & end.notna() & (end < start),
        rows,
        col("end_time"),
        "end before start",
        lambda i: f"{_iso(end.iloc[i])} < {_iso(start.iloc[i])}",
    )
    # A finished run needs its end; only running jobs (and never-started ones) lack it.
    problems.add_mask(
        start.notna() & end.isna() & frame["state"].isin(JOB_STATES) & (frame["state"] != "running"),
        rows,
        col("end_time"),
        "end missing for a job that is not running",
        lambda i: f"state {frame['state'].iloc[i]}",
    )


def _derive(frame: pd.DataFrame, as_of: pd.Timestamp | None) -> pd.DataFrame:
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

    frame = frame.assign(
        duration_s=duration.astype("float64"),
        censored=frame["state"].isin(CENSORED_STATES),
        gpu_count=gpu_count,
        gpu_hours=gpu_hours.astype("float64"),
    )
    out = frame[list(COLUMNS)].reset_index(drop=True)
    return out.astype(COLUMNS)


# --------------------------------------------------------------------------- summary


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
