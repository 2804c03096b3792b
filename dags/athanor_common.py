"""What the Athanor DAGs share: assets, the DuckDB writer pool, retry policy, task entry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import Asset

# DuckDB allows one writing process: every task that writes the warehouse takes the
# single slot of this pool (created by `make demo` / `make airflow`).
WRITER_POOL = "athanor_duckdb_writer"

WAREHOUSE_ASSET = Asset(name="athanor_warehouse", uri="x-athanor://warehouse/billing")
REPORT_ASSET = Asset(name="athanor_report", uri="x-athanor://reports/latest")


def run_stage(name: str, context: Any, *inputs: Any) -> dict:
    """Run one stage of the nightly flow; bad data fails at once (a retry cannot fix it)."""
    from airflow.sdk.exceptions import AirflowFailException

    from athanor.errors import DataRejected
    from athanor.orchestration import run_stage as run

    def s3_client():
        # Resolved only when a stage reads a bucket, never at parse time.
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from athanor.settings import Settings

        return S3Hook(aws_conn_id=Settings.from_env().landing_conn_id).get_conn()

    try:
        return run(name, context, *inputs, s3_client=s3_client)
    except DataRejected as exc:
        raise AirflowFailException(str(exc)) from None


def _notify_failure(context: Any) -> None:
    from athanor.notify import notify_failure

    notify_failure(context)


DEFAULT_ARGS = {
    "owner": "athanor",
    # Retries are for transient failures (a bucket timing out); see run_stage for bad data.
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "on_failure_callback": _notify_failure,
}
