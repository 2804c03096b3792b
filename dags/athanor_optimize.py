"""Model and recommend: durations, purchase mix, checkpoint lifecycle, report."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag

from athanor_common import DEFAULT_ARGS, WAREHOUSE_ASSET, add_stage_tasks

DOC = """
### Athanor optimize
Runs whenever the ingest has updated the warehouse. Fits task-duration distributions
per workload group, builds hourly GPU demand per pool, recommends commitments, spot
share and checkpoint-lifecycle rules (each with its monthly saving), backtests them,
and publishes the report to `reports/<date>/` plus a read-only warehouse snapshot for
analysts. `apply_lifecycle` stays a dry run unless the form says otherwise.
"""


@dag(
    dag_id="athanor_optimize",
    schedule=[WAREHOUSE_ASSET],
    start_date=pendulum.datetime(2026, 9, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["athanor", "recommend", "report"],
    doc_md=DOC,
    params={
        "as_of": Param(
            None,
            type=["null", "string"],
            format="date",
            title="As of (day)",
            description="Day the report is for (default: the latest day in the warehouse).",
        ),
        "apply_lifecycle": Param(
            False,
            type="boolean",
            title="Apply lifecycle rules",
            description="Put the recommended rules on the bucket (default: dry run).",
        ),
    },
)
def athanor_optimize():
    add_stage_tasks("athanor_optimize")


athanor_optimize()
