"""Nightly ingest: land new exports, load them into the DuckDB warehouse, validate."""

from __future__ import annotations

import pendulum
from airflow.sdk import CronDataIntervalTimetable, Param, dag

from athanor_common import DEFAULT_ARGS, add_stage_tasks

DOC = """
### Athanor ingest
Lands the day's billing exports (FOCUS, AWS CUR), training-job logs and checkpoint
inventories from the landing folder or bucket, loads each delivery into the DuckDB
warehouse in one transaction (a restated month replaces the earlier version), and
validates what landed. A bad delivery fails the run with the file, row, column and rule,
and is moved to quarantine; everything loaded before stays as it was.

**Which day**: the run that fires at 02:30 UTC covers the previous UTC day (its data
interval ends then): the run of 2026-12-01 02:30 works on 2026-11-30, and so does a
backfill's run of logical date 2026-11-30. When it loaded something new for that day (or the
day has no report yet), it updates the `athanor_warehouse` asset with the day, and
`athanor_optimize` builds that day's report; otherwise the last task ends *skipped* and
nothing downstream runs.

**Manual runs** take a form: `as_of` (the day to run for), `source` (a folder or
`s3://bucket/prefix` instead of the configured landing) and `dry_run` (list what would load;
writes nothing, announces nothing).
"""


@dag(
    dag_id="athanor_ingest",
    # A data interval, not a trigger: the run at 02:30 covers the day that just ended.
    schedule=CronDataIntervalTimetable("30 2 * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 9, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["athanor", "ingest"],
    doc_md=DOC,
    params={
        "as_of": Param(
            None,
            type=["null", "string"],
            format="date",
            title="As of (day)",
            description="Run for this day instead of the one the run's data interval covers.",
        ),
        "source": Param(
            None,
            type=["null", "string"],
            title="Source",
            description="Folder or s3://bucket/prefix to read instead of the configured landing.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="List the deliveries; load, write and announce nothing.",
        ),
    },
)
def athanor_ingest():
    add_stage_tasks("athanor_ingest")


athanor_ingest()
