"""Every DAG imports cleanly, follows the team's rules (tags, retries, schedule, docs) and runs the
stages `athanor.flow.STAGES` declares: its tasks, their order, pools, assets and failure alerts."""

from __future__ import annotations

import pytest

from athanor.settings import PROJECT_ROOT


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(PROJECT_ROOT / "dags"))  # examples: AIRFLOW__CORE__LOAD_EXAMPLES=False


def test_every_dag_file_imports(dagbag) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == {"athanor_ingest", "athanor_optimize"}


def test_dags_follow_the_rules(dagbag) -> None:
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags and "athanor" in dag.tags, dag_id
        assert dag.doc_md and len(dag.doc_md) > 100, dag_id
        # An explicit schedule: a cron data interval (the run covers the day that ended) or an
        # asset condition, never "run only when triggered".
        assert type(dag.timetable).__name__ in {"CronDataIntervalTimetable", "AssetTriggeredTimetable"}, (
            dag_id
        )
        assert dag.catchup is False, dag_id
        for task in dag.tasks:
            assert task.retries >= 1, f"{dag_id}.{task.task_id} has no retries"
            assert task.doc_md or task.doc, f"{dag_id}.{task.task_id} has no docstring"


# A fanned-out stage is the task group <stage>: plan -> each (mapped) -> gather.
FAN_OUT_PARTS = ("plan", "each", "gather")


def _task_ids(stage) -> set[str]:
    return {f"{stage.name}.{part}" for part in FAN_OUT_PARTS} if stage.fan_out else {stage.name}


def _first(stage) -> str:
    return f"{stage.name}.plan" if stage.fan_out else stage.name


def _last(stage) -> str:
    return f"{stage.name}.gather" if stage.fan_out else stage.name


def _stage_of(task_id: str) -> str:
    return task_id.split(".", 1)[0]


def test_tasks_and_their_order_are_the_declared_stages(dagbag) -> None:
    from athanor.flow import STAGE, STAGES, stages_of

    assert set(dagbag.dag_ids) == {stage.dag_id for stage in STAGES}
    for dag_id, dag in dagbag.dags.items():
        stages = stages_of(dag_id)
        assert {t.task_id for t in dag.tasks} == set().union(*map(_task_ids, stages)), dag_id
        for position, stage in enumerate(stages):
            # A stage's inputs are among the stages it runs after; those are exactly its upstream
            # tasks, and come before it in STAGES (the order `athanor run` follows).
            assert set(stage.inputs) <= set(stage.after), stage.name
            upstream = {_last(STAGE[name]) for name in stage.after}
            assert dag.get_task(_first(stage)).upstream_task_ids == upstream, stage.name
            assert set(stage.after) <= {s.name for s in stages[:position]}, stage.name


def test_fanned_out_stages_map_their_middle_step(dagbag) -> None:
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    from athanor.flow import STAGES
    from athanor_common import FAN_OUT_RETRY_DELAY, WRITER_POOL

    fanned = [stage for stage in STAGES if stage.fan_out]
    assert [stage.name for stage in fanned] == ["fit_durations"]
    for stage in fanned:
        dag = dagbag.dags[stage.dag_id]
        plan, each, gather = (dag.get_task(f"{stage.name}.{part}") for part in FAN_OUT_PARTS)
        assert isinstance(each, MappedOperator), "each step is mapped over plan's items"
        assert each.upstream_task_ids == {plan.task_id}
        assert gather.upstream_task_ids == {plan.task_id, each.task_id}
        # No item: the mapped step is skipped, and gather still stores (an empty night).
        assert gather.trigger_rule == "none_failed"
        assert (plan.pool, each.pool, gather.pool) == (WRITER_POOL, "default_pool", WRITER_POOL)
        assert each.partial_kwargs["retry_delay"] == FAN_OUT_RETRY_DELAY


def test_warehouse_writers_share_one_pool(dagbag) -> None:
    from athanor.flow import STAGE
    from athanor_common import WRITER_POOL

    writers = {
        "load",
        "validate",
        "fit_durations",
        "recommend_mix",
        "recommend_lifecycle",
        "measure_gpus",
        "allocate_gpus",
        "recommend_gpus",
        "watch_spend",
        "compose_plan",
        "publish",
    }
    assert {name for name, stage in STAGE.items() if stage.writes_warehouse} == writers
    for dag in dagbag.dags.values():
        for task in dag.tasks:
            # A fanned-out stage's mapped step reads no warehouse: any worker, no slot.
            writes = STAGE[_stage_of(task.task_id)].writes_warehouse and not task.task_id.endswith(".each")
            expected = WRITER_POOL if writes else "default_pool"
            assert task.pool == expected, task.task_id


def test_each_stage_emits_its_declared_asset(dagbag) -> None:
    from athanor.flow import STAGE
    from athanor_common import ASSETS

    for dag in dagbag.dags.values():
        for task in dag.tasks:
            stage = STAGE[_stage_of(task.task_id)]
            emits = stage.emits if task.task_id == _last(stage) else None
            assert [(o.name, o.uri) for o in task.outlets] == (
                [(emits, ASSETS[emits].uri)] if emits else []
            ), task.task_id
    assert {stage.emits for stage in STAGE.values() if stage.emits} == {"athanor_warehouse", "athanor_report"}


def test_every_task_alerts_through_the_notifier(dagbag) -> None:
    from athanor_common import FailureNotifier

    for dag in dagbag.dags.values():
        for task in dag.tasks:
            callbacks = task.on_failure_callback
            # A mapped task keeps the callback as given (default_args: one notifier).
            callbacks = callbacks if isinstance(callbacks, list) else [callbacks]
            assert [type(c) for c in callbacks] == [FailureNotifier], task.task_id


def test_optimize_runs_on_the_ingest_asset(dagbag) -> None:
    from athanor_common import WAREHOUSE_ASSET

    ingest = dagbag.dags["athanor_ingest"]
    produced = {o.uri for t in ingest.tasks for o in t.outlets}
    assert WAREHOUSE_ASSET.uri in produced
    optimize = dagbag.dags["athanor_optimize"]
    assert "athanor_warehouse" in repr(optimize.timetable.asset_condition)


def test_manual_runs_offer_a_form(dagbag) -> None:
    ingest = dagbag.dags["athanor_ingest"]
    assert {"as_of", "source", "dry_run"} <= set(ingest.params.keys())
    assert ingest.params.get_param("dry_run").value is False
