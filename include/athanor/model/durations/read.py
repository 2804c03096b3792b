"""Durations from a file: a job log (through the ingest reader), or one column of seconds.

A job log is read by ``athanor.ingest.jobs.read_job_runs``, so the CLI accepts what
ingestion accepts (generic CSV/Parquet, Slurm sacct, SageMaker JSON) and refuses what
it refuses. Where the frame differs from what this command read before it used that
reader:

* the file must pass ingestion's checks: every required column of the generic schema,
  known states and pricing models, counts present, an end time for every finished job
  (the old reader needed start_time, end_time and state only, took an empty instance
  count as 1 and empty GPUs as 0, and censored a finished job without an end);
* without ``as_of``, a running job runs to the latest timestamp in the file as before,
  except on Slurm, where sacct's Elapsed is taken (what ingestion stores); with
  ``as_of``, a job that started after it is left out (before: an error);
* the tag columns hold canonical values: state lower-case, ``pricing_model`` as
  ``on_demand`` (not ``on-demand``), ``instance_type`` without SageMaker's ``ml.`` prefix,
  ``job_id`` text; a tag column with no value at all is left out, as an absent column was;
* an end before its start is refused with ingestion's message (file, row, column).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from athanor.ingest import jobs
from athanor.ingest.jobs import CENSORED_STATES

__all__ = ["CENSORED_STATES", "load_durations", "load_fit_jobs"]

# What a fit groups by or reports, as the job log names them.
TAG_COLUMNS = ("job_id", "state", "team", "project", "model", "instance_type", "pricing_model")


def load_durations(path: str | Path, as_of: Any = None) -> pd.DataFrame:
    """Durations from a job log or from a file of one numeric column (seconds).

    A job log gives duration_s, censored (preempted, cancelled, running) and
    gpu_count = instance_count x gpus_per_instance, with the tag columns; jobs that
    never started are dropped. A file the job-log reader refuses is taken as
    uncensored seconds on one GPU if it has exactly one numeric column; otherwise
    the reader's complaint stands.
    """
    path = Path(path)
    try:
        runs = jobs.read_job_runs(path, as_of=as_of)
    except jobs.JobRunError as refused:
        plain = _plain_durations(path)
        if plain is None:
            raise refused from None
        return plain
    return _job_run_durations(runs, as_of)


def _job_run_durations(runs: pd.DataFrame, as_of: Any) -> pd.DataFrame:
    duration_s = runs["duration_s"]
    if as_of is None:
        # The file is the state of the fleet at its latest timestamp: a job still running
        # has run until then (ingestion leaves its duration empty without an as_of).
        latest = runs[["submit_time", "start_time", "end_time"]].max().max()
        ran = (latest - runs["start_time"]).dt.total_seconds()
        duration_s = duration_s.fillna(ran.where(runs["state"] == "running"))
    keep = runs["start_time"].notna() & duration_s.notna()
    frame = runs.loc[keep].reset_index(drop=True)
    out = pd.DataFrame(
        {
            "duration_s": duration_s[keep].to_numpy(dtype=float),
            "censored": frame["censored"].to_numpy(dtype=bool),
            "gpu_count": frame["gpu_count"].to_numpy(dtype=float),
        }
    )
    for column in TAG_COLUMNS:
        if frame[column].notna().any():
            out[column] = frame[column].to_numpy()
    return out


def _plain_durations(path: Path) -> pd.DataFrame | None:
    try:
        raw = pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else pd.read_csv(path)
    except (ValueError, OSError):
        return None
    numeric = [c for c in raw.columns if pd.api.types.is_numeric_dtype(raw[c])]
    if len(numeric) != 1:
        return None
    x = raw[numeric[0]].dropna().to_numpy(dtype=float)
    if np.any(x < 0):
        raise ValueError(f"{path.name}: negative durations in column {numeric[0]}")
    return pd.DataFrame({"duration_s": x, "censored": False, "gpu_count": 1.0})


def load_fit_jobs(path: str | Path, day: date | None = None, window_days: int | None = None) -> pd.DataFrame:
    """The jobs of a job log that the night's fit for `day` would see, were the file the warehouse.

    The rows go through the same selection as the nightly fit (``athanor.model.nightly.read_jobs``
    over ``sql/marts/job_durations.sql``): jobs that started in the `window_days` days up to
    `day` (default: the nightly's window; 0: every job), each still running at the end of `day`
    censored then. `day` defaults to the day of the file's latest timestamp. The CLI fitting
    any other sample than the report is what made them disagree (a job log spanning more than
    the window, running jobs censored at another moment). A file of one column of seconds has
    no times: its durations are taken as they are (`load_durations`).
    """
    import duckdb

    from athanor.model import nightly

    path = Path(path)
    try:
        runs = jobs.read_job_runs(path)
    except jobs.JobRunError as refused:
        plain = _plain_durations(path)
        if plain is None:
            raise refused from None
        return plain
    if day is None:
        latest = runs[["submit_time", "start_time", "end_time"]].max().max()
        if pd.isna(latest):
            raise ValueError(f"{path.name}: no timestamp to take the fit's day from")
        day = latest.date()
    window = nightly.FIT_WINDOW_DAYS if window_days is None else (window_days or None)
    con = duckdb.connect()
    try:
        con.register("job_run_facts", runs)
        frame = nightly.read_jobs(con, day, window)
    finally:
        con.close()
    # Tags the mart does not carry (it reads instance_family), for --group-by.
    tags = runs[["job_id", "state", "instance_type"]].drop_duplicates("job_id", keep="last")
    frame = frame.merge(tags, on="job_id", how="left")
    return frame[[c for c in frame.columns if frame[c].notna().any() or c in ("duration_s", "censored")]]
