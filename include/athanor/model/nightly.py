"""The night's duration fits in three steps, so that groups can be fitted on different machines.

1. **plan** reads the job runs known on the run's day from the warehouse and names the groups
   that get a fit of their own ("all", and each workload group big enough to stand alone);
2. **fit** fits one of them; it needs the jobs, not the warehouse;
3. **store** assembles the records (a small group borrows its ancestor's fit), compares them
   with the previous day's and writes `duration_fits`.

`athanor run` does the three in one process (`athanor.flow.fit_durations`). Airflow runs them
as three tasks, the fits mapped one task per group (`dags/athanor_common.py`): plan and store
take the warehouse's writer slot, the fits take none and run on whichever worker is free.
Between the tasks the jobs travel as one Parquet file in the run's folder under
`<ATHANOR_HOME>/.cache/fits/` (every worker sees ATHANOR_HOME, as every worker sees the
warehouse) and each fit as its JSON record (an XCom). Each step plans again from that same
file, which is cheap and deterministic; and every fit is seeded by its group's name, so where
and how often a group is fitted (a retry on another worker) does not change a figure.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

import athanor
from athanor.model.durations.groups import GroupPlan, assemble_groups, fit_one, plan_groups
from athanor.model.durations.selection import DurationFit
from athanor.model.durations.support import QUANTILE_NAMES
from athanor.warehouse import insert_rows, sql, transaction

logger = logging.getLogger(__name__)

# A group with fewer jobs borrows its parent's fit (see athanor.model.durations).
MIN_GROUP_SIZE = 100
JOBS_FILE = "jobs.parquet"
# The fits see the jobs that started in the last FIT_WINDOW_DAYS days up to the run's day: the
# current workload, and a night's cost that does not grow with the years of job logs held.
# Wider than the demo's 90 days, so its figures are those of every job.
FIT_WINDOW_DAYS = 120
# The share of GPU spend explained by job runs is that of the report's period (publish.data).
EXPLAINED_DAYS = 90

# A fit record's figures stored as duration_fits columns of the same name.
FIT_FIGURES = (
    "aic",
    "bic",
    "ks",
    "ks_pvalue",
    "p50_s",
    "p90_s",
    "p99_s",
    "share_jobs_under_48h",
    "share_gpu_hours_under_48h",
    "data_limit_s",
    "censored_note",
)


def group_by_of(params: Mapping[str, Any]) -> list[str]:
    """The grouping columns a run asks for (`group_by`, comma-separated; default: team)."""
    return [c.strip() for c in str(params.get("group_by") or "team").split(",") if c.strip()]


def read_jobs(
    con: duckdb.DuckDBPyConnection, day: date | None, window_days: int | None = FIT_WINDOW_DAYS
) -> pd.DataFrame:
    """The job runs known by the end of `day` that started in its last `window_days` days
    (None: every job loaded, or no window), durations censored then."""
    as_of_end = datetime.combine(day, datetime.max.time()) if day else None
    window_start = (
        datetime.combine(day - timedelta(days=window_days - 1), datetime.min.time())
        if (day and window_days)
        else None
    )
    frame = con.execute(
        sql("marts/job_durations"), {"as_of_end": as_of_end, "window_start": window_start}
    ).df()
    logger.info(
        "fit_durations: read %d job runs known by %s%s (%d censored)",
        len(frame),
        day or "now",
        f" that started from {window_start:%Y-%m-%d}" if window_start else "",
        int(frame["censored"].sum()) if len(frame) else 0,
    )
    return frame


def _plans(frame: pd.DataFrame, group_by: Sequence[str]) -> tuple[GroupPlan, GroupPlan]:
    """The fleet as a whole, then the workload groups (the two levels `duration_fits` holds)."""
    return plan_groups(frame, [], MIN_GROUP_SIZE), plan_groups(frame, group_by, MIN_GROUP_SIZE)


def plan(frame: pd.DataFrame, group_by: Sequence[str]) -> list[str]:
    """The labels of the groups that get a fit of their own, each once ("all" first)."""
    labels: dict[str, None] = {}
    for level in _plans(frame, group_by):
        labels.update(dict.fromkeys(level.to_fit))
    return list(labels)


def fit(frame: pd.DataFrame, group_by: Sequence[str], label: str) -> dict[str, Any]:
    """Fit the planned group `label`; its record, as JSON carries it."""
    jobs = next(level.to_fit[label] for level in _plans(frame, group_by) if label in level.to_fit)
    logger.info("fit_durations: fitting %s (%d jobs)", label, len(jobs))
    clock = time.perf_counter()
    fitted = fit_one(jobs, label)
    logger.info("fit_durations: fitted %s: %s in %.1f s", label, fitted.family, time.perf_counter() - clock)
    # Through JSON here too, so a record that crossed processes and one that did not are alike.
    return json.loads(json.dumps(fitted.to_record(), default=str))


def _group_jobs(frame: pd.DataFrame, group_by: Sequence[str]) -> dict[str, pd.DataFrame]:
    """label -> the jobs its own fit uses, for every planned group."""
    out: dict[str, pd.DataFrame] = {}
    for level in _plans(frame, group_by):
        for label, jobs in level.to_fit.items():
            out.setdefault(label, jobs)
    return out


def input_fingerprint(jobs: pd.DataFrame, group_by: Sequence[str], label: str) -> str:
    """sha256 of what a group's fit depends on: its jobs (every column, in job order), the
    grouping, the minimum group size, the package version and the record's fields (a new
    fitting code refits)."""
    digest = hashlib.sha256()
    header = {
        "label": label,
        "group_by": list(group_by),
        "min_group_size": MIN_GROUP_SIZE,
        "version": athanor.__version__,
        # A record that gains a field (data_limit_s) is refitted, not reused without it.
        "record_fields": sorted(DurationFit.__dataclass_fields__),
        "columns": [str(c) for c in jobs.columns],
    }
    digest.update(json.dumps(header, sort_keys=True).encode())
    ordered = jobs.sort_values("job_id", kind="stable") if "job_id" in jobs else jobs
    digest.update(pd.util.hash_pandas_object(ordered, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def reusable(
    con: duckdb.DuckDBPyConnection, frame: pd.DataFrame, group_by: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The stored fits of the planned groups whose inputs have not changed since: label -> record.

    Every fit is seeded by its group's name, so fitting the same jobs again would give the
    same record: a night that changed no job (a restated bill) fits nothing.
    """
    groups = _group_jobs(frame, group_by)
    if not groups:
        return {}
    stored = dict(
        con.execute(
            "select group_label, fingerprint from duration_fit_cache where list_contains(?, group_label)",
            [list(groups)],
        ).fetchall()
    )
    same = [
        label
        for label, jobs in groups.items()
        if stored.get(label) == input_fingerprint(jobs, group_by, label)
    ]
    records = {
        label: json.loads(record)
        for label, record in con.execute(
            "select group_label, record from duration_fit_cache where list_contains(?, group_label)", [same]
        ).fetchall()
    }
    logger.info(
        "fit_durations: %d of %d groups unchanged since their stored fit, reused: %s",
        len(records),
        len(groups),
        ", ".join(sorted(records)) or "none",
    )
    return records


def remember(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    frame: pd.DataFrame,
    group_by: Sequence[str],
    records: Mapping[str, dict[str, Any]],
    reused: Sequence[str] = (),
) -> int:
    """Store the fits made this run (not those reused) with their inputs' fingerprints."""
    groups = _group_jobs(frame, group_by)
    rows = [
        {
            "group_label": label,
            "fingerprint": input_fingerprint(groups[label], group_by, label),
            "record": json.dumps(record, default=str),
            "run_id": run_id,
            "fitted_at": datetime.now(UTC).replace(tzinfo=None),
        }
        for label, record in records.items()
        if label in groups and label not in reused
    ]
    if rows:
        insert_rows(con, "duration_fit_cache", rows, replace=True)
    return len(rows)


def fit_all(
    con: duckdb.DuckDBPyConnection, run_id: str, frame: pd.DataFrame, group_by: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Every planned group's fit in this process: reused when its inputs are unchanged, else fitted."""
    records = reusable(con, frame, group_by)
    reused = list(records)
    records |= {label: fit(frame, group_by, label) for label in plan(frame, group_by) if label not in records}
    remember(con, run_id, frame, group_by, records, reused)
    return records


def _from_record(record: Mapping[str, Any]) -> DurationFit:
    return DurationFit(**{name: record.get(name) for name in DurationFit.__dataclass_fields__})


def assemble(
    frame: pd.DataFrame, group_by: Sequence[str], records: Mapping[str, dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    """(level, record) for "all" and every workload group, in the order they are stored."""
    missing = set(plan(frame, group_by)) - set(records)
    if missing:
        raise ValueError(f"no fit for the planned group(s) {', '.join(sorted(missing))}")
    fitted = {label: _from_record(r) for label, r in records.items()}
    whole, groups = _plans(frame, group_by)
    out = [("all", fit.to_record()) for fit in assemble_groups(whole, fitted)]
    out += [(",".join(group_by), fit.to_record()) for fit in assemble_groups(groups, fitted)]
    return out


def _drift_reason(row: dict[str, Any]) -> str | None:
    if not row["flagged"]:
        return None
    if row["family_changed"]:
        return f"family changed: {row['previous_family']} -> {row['current_family']}"
    return f"p90 moved {row['p90_rel_shift']:+.0%}"


def store(
    con: duckdb.DuckDBPyConnection, run_id: str, as_of: date, records: list[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    """Replace this run's rows of `duration_fits`, flagging drift against the closest earlier day."""
    from athanor.model import durations

    previous_run = con.execute(
        """select run_id from duration_fits where run_id <> ? and as_of <= ?
           order by as_of desc, run_id desc limit 1""",
        [run_id, as_of],
    ).fetchone()
    previous = []
    if previous_run:
        previous = [
            json.loads(r)
            for (r,) in con.execute(
                "select record from duration_fits where run_id = ?", [previous_run[0]]
            ).fetchall()
        ]
    drift = {
        row["group"]: _drift_reason(row) for row in durations.compare_fits(previous, [r for _, r in records])
    }
    with transaction(con):
        con.execute("delete from duration_fits where run_id = ?", [run_id])
        rows = [
            {
                "run_id": run_id,
                "as_of": as_of,
                "group_by": level,
                "group_key": r["group"],
                "n": r["n"],
                "censored": r["censored"],
                "family": r["family"],
                "params": json.dumps(r["params"]),
                **{k: r.get(k) for k in FIT_FIGURES},
                **{f"{q}_beyond_data": q in (r.get("beyond_data") or []) for q in QUANTILE_NAMES},
                "drift_flag": drift.get(r["group"]),
                "record": json.dumps(r, default=str),
            }
            for level, r in records
        ]
        insert_rows(con, "duration_fits", rows)
    start, end = as_of + timedelta(days=1 - EXPLAINED_DAYS), as_of + timedelta(days=1)
    shares = con.execute(sql("marts/spend_explained"), {"start": start, "end": end}).fetchall()
    explained = {currency: round(float(share or 0.0), 4) for currency, _, _, share in shares}
    drifted = {g: reason for g, reason in drift.items() if reason}
    logger.info(
        "fit_durations: wrote %d fits to duration_fits for %s (previous run %s); %d drifted%s",
        len(records),
        as_of,
        previous_run[0] if previous_run else "none",
        len(drifted),
        "".join(f"; {g}: {reason}" for g, reason in drifted.items()),
    )
    return {"groups": len(records), "drift": drifted, "gpu_spend_explained_by_job_runs": explained}


# ------------------------------------------------------- the jobs between processes


def run_folder(home: Path, run_id: str) -> Path:
    """Where one run's fits keep their jobs file (a run id may hold ':' and '+')."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    return home / ".cache" / "fits" / safe


def save_jobs(frame: pd.DataFrame, folder: Path) -> Path:
    """Write the jobs for the fit tasks; written aside and renamed, so none reads half a file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / JOBS_FILE
    partial = folder / f".{JOBS_FILE}.partial"
    frame.to_parquet(partial, index=False)
    partial.replace(path)
    logger.info("fit_durations: wrote %d job runs for the fit tasks to %s", len(frame), path)
    return path


def load_jobs(folder: Path) -> pd.DataFrame:
    path = folder / JOBS_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: the jobs file of this run's fits is missing (was plan run?)")
    return pd.read_parquet(path)


def drop_jobs(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
