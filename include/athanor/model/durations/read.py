"""Durations from a file: a job-run file, or one column of seconds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

CENSORED_STATES = frozenset({"preempted", "cancelled", "running"})


def _read_table(path: Path) -> pd.DataFrame:
    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    return pd.read_csv(path)


def _timestamps(col: pd.Series) -> pd.Series:
    col = col.replace("", None)
    try:
        return pd.to_datetime(col, utc=True, format="ISO8601")
    except (ValueError, TypeError):
        return pd.to_datetime(col, utc=True, format="mixed")


def load_durations(path: str | Path, as_of: Any = None) -> pd.DataFrame:
    """Durations from a job-run file (canonical schema) or a one-column CSV of seconds.

    Job-run files give duration_s = end - start (running jobs: as_of - start; as_of
    defaults to the latest timestamp in the file), censored = state in preempted /
    cancelled / running or no end_time, gpu_count = instance_count * gpus_per_instance
    (an empty count means 1 instance, empty GPUs mean 0; an absent column means 1), and
    keep the tag columns. Jobs that never started are dropped; an end before its
    start is an error. A plain file's single numeric column is taken as uncensored
    seconds on one GPU.
    """
    path = Path(path)
    raw = _read_table(path)
    if {"start_time", "end_time", "state"} <= set(raw.columns):
        return _job_run_durations(raw, as_of)
    numeric = [c for c in raw.columns if pd.api.types.is_numeric_dtype(raw[c])]
    if len(numeric) != 1:
        raise ValueError(
            f"{path.name}: expected a job-run file or one numeric column, got {list(raw.columns)}"
        )
    x = raw[numeric[0]].dropna().to_numpy(dtype=float)
    if np.any(x < 0):
        raise ValueError(f"{path.name}: negative durations in column {numeric[0]}")
    return pd.DataFrame({"duration_s": x, "censored": False, "gpu_count": 1.0})


def _column(frame: pd.DataFrame, name: str, missing: float) -> np.ndarray:
    if name not in frame:
        return np.ones(len(frame))
    return pd.to_numeric(frame[name], errors="coerce").fillna(missing).to_numpy(dtype=float)


def _job_run_durations(raw: pd.DataFrame, as_of: Any) -> pd.DataFrame:
    stamps = {c: _timestamps(raw[c]) for c in ("submit_time", "start_time", "end_time") if c in raw}
    if as_of is None:
        as_of = max(s.max() for s in stamps.values() if s.notna().any())
    as_of = pd.Timestamp(as_of)
    as_of = as_of.tz_localize("UTC") if as_of.tzinfo is None else as_of.tz_convert("UTC")
    started = stamps["start_time"].notna()
    start, end = stamps["start_time"][started], stamps["end_time"][started]
    frame = raw.loc[started].copy()
    running = end.isna()
    duration_s = (end.fillna(as_of) - start).dt.total_seconds()
    bad = duration_s < 0
    if bad.any():
        example = frame.loc[bad].iloc[0].get("job_id", frame.index[bad][0])
        raise ValueError(f"{int(bad.sum())} jobs end before they start (e.g. job {example})")
    state = frame["state"].astype(str).str.strip().str.lower()
    out = pd.DataFrame(
        {
            "duration_s": duration_s.to_numpy(dtype=float),
            "censored": (state.isin(CENSORED_STATES) | running).to_numpy(dtype=bool),
            "gpu_count": _column(frame, "instance_count", 1.0) * _column(frame, "gpus_per_instance", 0.0),
        }
    )
    for col in ("job_id", "state", "team", "project", "model", "instance_type", "pricing_model"):
        if col in frame:
            out[col] = frame[col].to_numpy()
    return out
