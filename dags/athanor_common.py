"""What the Athanor DAGs share: assets, the DuckDB writer pool, retry policy, and the
tasks themselves, built from the stages `athanor.flow.STAGES` declares."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import Asset, BaseNotifier, task
from airflow.sdk.definitions.retry_policy import ExceptionRetryPolicy, RetryAction, RetryRule

from athanor.flow import stages_of

# DuckDB allows one writing process: every task that writes the warehouse takes the
# single slot of this pool (created by `make demo` / `make airflow`).
WRITER_POOL = "athanor_duckdb_writer"

WAREHOUSE_ASSET = Asset(name="athanor_warehouse", uri="x-athanor://warehouse/billing")
REPORT_ASSET = Asset(name="athanor_report", uri="x-athanor://reports/latest")
ASSETS = {asset.name: asset for asset in (WAREHOUSE_ASSET, REPORT_ASSET)}


def run_stage(name: str, context: Any, *inputs: Any, part: str | None = None) -> dict:
    """Run one stage of the nightly flow; bad data fails at once (a retry cannot fix it).

    A stage that updates an asset says so with the day it worked on, as the event's extra
    (`{"as_of": "2026-11-30"}`: the day the asset-triggered run then works on). When the stage
    reports nothing new for that day (or a dry run), the task ends skipped: Airflow emits no
    event, so no downstream run starts.
    """
    from airflow.sdk.exceptions import AirflowSkipException

    from athanor.errors import DataErrorExit, DataRejected
    from athanor.flow import STAGE
    from athanor.flow import run_stage as run

    def s3_client():
        # Resolved only when a stage reads a bucket, never at parse time.
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from athanor.settings import Settings

        return S3Hook(aws_conn_id=Settings.from_env().landing_conn_id).get_conn()

    try:
        summary = run(name, context, *inputs, s3_client=s3_client, part=part)
    except DataRejected as exc:
        # flow.run_stage has logged the reason at ERROR; the task ends on it, without a
        # traceback and without a retry (see DataErrorExit).
        raise DataErrorExit(str(exc)) from None
    emits = STAGE[name].emits
    if emits and part in (None, "gather"):
        event = summary.get("asset_event", {"as_of": summary.get("as_of")})
        if event is None:
            raise AirflowSkipException(f"{emits} not updated: {summary.get('not_emitted')}")
        context["outlet_events"][ASSETS[emits]].extra = {k: v for k, v in event.items() if v is not None}
    return summary


def add_stage_tasks(dag_id: str) -> dict[str, Any]:
    """One task per stage of `dag_id`, wired as the flow declares (call inside a DAG body).

    A stage with a `fan_out` becomes a task group of the same name (see `add_fan_out`).
    Returns each stage's task or group.
    """
    nodes: dict[str, Any] = {}  # what later stages are wired after
    outputs: dict[str, Any] = {}  # what later stages take as input (the summary's XCom)
    for stage in stages_of(dag_id):
        inputs = [outputs[name] for name in stage.inputs]
        if stage.fan_out is not None:
            nodes[stage.name], outputs[stage.name] = add_fan_out(stage, inputs)
        else:

            def call(*inputs: dict, _name: str = stage.name, **context: Any) -> dict:
                return run_stage(_name, context, *inputs)

            make = task(
                task_id=stage.name,
                pool=WRITER_POOL if stage.writes_warehouse else None,
                outlets=[ASSETS[stage.emits]] if stage.emits else [],
                doc_md=(stage.function.__doc__ or "").strip(),
            )(call)
            nodes[stage.name] = outputs[stage.name] = make(*inputs)
        for name in stage.after:
            if name not in stage.inputs:
                nodes[name] >> nodes[stage.name]
    return nodes


# A mapped step reads no warehouse and checks no data (plan did): it fails only when its
# worker is lost, and another worker can take it at once.
FAN_OUT_RETRY_DELAY = timedelta(seconds=5)


def add_fan_out(stage: Any, inputs: list[Any]) -> tuple[Any, Any]:
    """The task group `<stage>`: plan -> `each`, mapped once per planned item -> gather.

    plan and gather write the warehouse and take the writer slot; the mapped tasks take no
    slot, so Celery spreads them over its workers. gather runs when the mapping is empty too
    (no item: the mapped task is skipped, not failed). Returns (the group, gather's output).
    """
    from airflow.sdk import TaskGroup

    fan = stage.fan_out
    pool = WRITER_POOL if stage.writes_warehouse else None

    def plan(*inputs: dict, _name: str = stage.name, **context: Any) -> list:
        # Only a task's return value can be mapped over: the items are returned, the plan
        # (what every step needs besides its item) goes under the XCom key "plan".
        planned = run_stage(_name, context, *inputs, part="plan")
        context["ti"].xcom_push(key="plan", value=planned)
        return list(planned["items"])

    def each(planned: dict, item: Any, _name: str = stage.name, **context: Any) -> dict:
        return run_stage(_name, context, planned, item, part="each")

    def gather(planned: dict, results: list, _name: str = stage.name, **context: Any) -> dict:
        return run_stage(_name, context, planned, list(results), part="gather")

    with TaskGroup(group_id=stage.name, tooltip=(stage.function.__doc__ or "").strip()) as group:
        items = task(task_id="plan", pool=pool, doc_md=(fan.plan.__doc__ or "").strip())(plan)(*inputs)
        planned = items["plan"]
        results = (
            task(
                task_id="each",
                retry_delay=FAN_OUT_RETRY_DELAY,
                retry_exponential_backoff=False,
                doc_md=(fan.each.__doc__ or "").strip(),
            )(each)
            .partial(planned=planned)
            .expand(item=items)
        )
        gathered = task(
            task_id="gather",
            pool=pool,
            trigger_rule="none_failed",
            outlets=[ASSETS[stage.emits]] if stage.emits else [],
            doc_md=(fan.gather.__doc__ or "").strip(),
        )(gather)(planned, results)
    return group, gathered


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


# Bad data ends a task at once: no retry can fix it (see run_stage).
DATA_ERRORS_FAIL = ExceptionRetryPolicy(
    rules=[
        RetryRule(
            exception="athanor.errors.DataErrorExit",
            action=RetryAction.FAIL,
            reason="bad data: a retry cannot fix it",
        )
    ]
)

DEFAULT_ARGS = {
    "owner": "athanor",
    # Retries are for transient failures (a bucket timing out); see run_stage for bad data.
    "retries": 2,
    "retry_policy": DATA_ERRORS_FAIL,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "on_failure_callback": FailureNotifier(),
}
