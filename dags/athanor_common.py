"""What the Athanor DAGs share: assets, the DuckDB writer pool, retry policy, and the
tasks themselves, built from the stages `athanor.flow.STAGES` declares."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import Asset, BaseNotifier, task

from athanor.flow import stages_of

# DuckDB allows one writing process: every task that writes the warehouse takes the
# single slot of this pool (created by `make demo` / `make airflow`).
WRITER_POOL = "athanor_duckdb_writer"

WAREHOUSE_ASSET = Asset(name="athanor_warehouse", uri="x-athanor://warehouse/billing")
REPORT_ASSET = Asset(name="athanor_report", uri="x-athanor://reports/latest")
ASSETS = {asset.name: asset for asset in (WAREHOUSE_ASSET, REPORT_ASSET)}


def run_stage(name: str, context: Any, *inputs: Any) -> dict:
    """Run one stage of the nightly flow; bad data fails at once (a retry cannot fix it).

    A stage that updates an asset says so with the day it worked on, as the event's extra
    (`{"as_of": "2026-11-30"}`: the day the asset-triggered run then works on). When the stage
    reports nothing new for that day (or a dry run), the task ends skipped: Airflow emits no
    event, so no downstream run starts.
    """
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    from athanor.errors import DataRejected
    from athanor.flow import STAGE
    from athanor.flow import run_stage as run

    def s3_client():
        # Resolved only when a stage reads a bucket, never at parse time.
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from athanor.settings import Settings

        return S3Hook(aws_conn_id=Settings.from_env().landing_conn_id).get_conn()

    try:
        summary = run(name, context, *inputs, s3_client=s3_client)
    except DataRejected as exc:
        raise AirflowFailException(str(exc)) from None
    emits = STAGE[name].emits
    if emits:
        event = summary.get("asset_event", {"as_of": summary.get("as_of")})
        if event is None:
            raise AirflowSkipException(f"{emits} not updated: {summary.get('not_emitted')}")
        context["outlet_events"][ASSETS[emits]].extra = {k: v for k, v in event.items() if v is not None}
    return summary


def add_stage_tasks(dag_id: str) -> dict[str, Any]:
    """One task per stage of `dag_id`, wired as the flow declares (call inside a DAG body)."""
    tasks: dict[str, Any] = {}
    for stage in stages_of(dag_id):

        def call(*inputs: dict, _name: str = stage.name, **context: Any) -> dict:
            return run_stage(_name, context, *inputs)

        make = task(
            task_id=stage.name,
            pool=WRITER_POOL if stage.writes_warehouse else None,
            outlets=[ASSETS[stage.emits]] if stage.emits else [],
            doc_md=(stage.function.__doc__ or "").strip(),
        )(call)
        tasks[stage.name] = make(*(tasks[name] for name in stage.inputs))
        for name in stage.after:
            if name not in stage.inputs:
                tasks[name] >> tasks[stage.name]
    return tasks


class FailureNotifier(BaseNotifier):
    """Log why a task failed and post it to the alert webhook (`ATHANOR_ALERT_WEBHOOK`).

    `webhook=None` reads the setting when a task fails, not when the DAG file is parsed.
    """

    def __init__(self, webhook: str | None = None, timeout_s: float = 10.0) -> None:
        super().__init__()
        self.webhook = webhook
        self.timeout_s = timeout_s

    def notify(self, context: Any) -> None:
        from athanor.notify import notify_failure
        from athanor.settings import Settings

        webhook = self.webhook or Settings.from_env().alert_webhook
        notify_failure(context, webhook=webhook, timeout_s=self.timeout_s)


DEFAULT_ARGS = {
    "owner": "athanor",
    # Retries are for transient failures (a bucket timing out); see run_stage for bad data.
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "on_failure_callback": FailureNotifier(),
}
