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


def test_tasks_and_their_order_are_the_declared_stages(dagbag) -> None:
    from athanor.flow import STAGES, stages_of

    assert set(dagbag.dag_ids) == {stage.dag_id for stage in STAGES}
    for dag_id, dag in dagbag.dags.items():
        stages = stages_of(dag_id)
        assert {t.task_id for t in dag.tasks} == {s.name for s in stages}, dag_id
        for position, stage in enumerate(stages):
            # A stage's inputs are among the stages it runs after; those are exactly its upstream
            # tasks, and come before it in STAGES (the order `athanor run` follows).
            assert set(stage.inputs) <= set(stage.after), stage.name
            assert dag.get_task(stage.name).upstream_task_ids == set(stage.after), stage.name
            assert set(stage.after) <= {s.name for s in stages[:position]}, stage.name


def test_warehouse_writers_share_one_pool(dagbag) -> None:
    from athanor.flow import STAGE
    from athanor_common import WRITER_POOL

    writers = {
        "load",
        "validate",
        "fit_durations",
        "recommend_mix",
        "recommend_lifecycle",
        "recommend_gpus",
        "publish",
    }
    assert {name for name, stage in STAGE.items() if stage.writes_warehouse} == writers
    for dag in dagbag.dags.values():
        for task in dag.tasks:
            expected = WRITER_POOL if STAGE[task.task_id].writes_warehouse else "default_pool"
            assert task.pool == expected, task.task_id


def test_each_stage_emits_its_declared_asset(dagbag) -> None:
    from athanor.flow import STAGE
    from athanor_common import ASSETS

    for dag in dagbag.dags.values():
        for task in dag.tasks:
            emits = STAGE[task.task_id].emits
            assert [(o.name, o.uri) for o in task.outlets] == (
                [(emits, ASSETS[emits].uri)] if emits else []
            ), task.task_id
    assert {stage.emits for stage in STAGE.values() if stage.emits} == {"athanor_warehouse", "athanor_report"}


def test_every_task_alerts_through_the_notifier(dagbag) -> None:
    from athanor_common import FailureNotifier

    for dag in dagbag.dags.values():
        for task in dag.tasks:
            callbacks = task.on_failure_callback
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
