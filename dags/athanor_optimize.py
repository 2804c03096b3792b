"""Model and recommend: durations, purchase mix, checkpoint lifecycle, report."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

from athanor_common import DEFAULT_ARGS, REPORT_ASSET, WAREHOUSE_ASSET, WRITER_POOL, run_stage

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
    @task(pool=WRITER_POOL)
    def fit_durations(**context) -> dict:
        """Fit duration distributions per workload group and store them with history."""
        return run_stage("fit_durations", context)

    @task(pool=WRITER_POOL)
    def recommend_mix(fits: dict, **context) -> dict:
        """Commitments, spot share and backtest from hourly demand and the fits."""
        return run_stage("recommend_mix", context)

    @task(pool=WRITER_POOL)
    def recommend_lifecycle(**context) -> dict:
        """Checkpoint-storage policies priced over 12 months, as S3 lifecycle rules."""
        return run_stage("recommend_lifecycle", context)

    @task(pool=WRITER_POOL, outlets=[REPORT_ASSET])
    def publish(mix: dict, lifecycle: dict, **context) -> dict:
        """Render the report, write JSON/CSV, publish the analysts' snapshot."""
        return run_stage("publish", context)

    publish(recommend_mix(fit_durations()), recommend_lifecycle())


athanor_optimize()
