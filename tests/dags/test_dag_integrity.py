"""Every DAG imports cleanly and follows the team's rules (tags, retries, schedule, docs)."""

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
        # An explicit schedule: a cron or an asset condition, never "run only when triggered".
        assert type(dag.timetable).__name__ in {"CronTriggerTimetable", "AssetTriggeredTimetable"}, dag_id
        assert dag.catchup is False, dag_id
        for task in dag.tasks:
            assert task.retries >= 1, f"{dag_id}.{task.task_id} has no retries"
            assert task.doc_md or task.doc, f"{dag_id}.{task.task_id} has no docstring"


def test_warehouse_writers_share_one_pool(dagbag) -> None:
    from athanor_common import WRITER_POOL

    writers = {"load", "validate", "fit_durations", "recommend_mix", "recommend_lifecycle", "publish"}
    for dag in dagbag.dags.values():
        for task in dag.tasks:
            if task.task_id in writers:
                assert task.pool == WRITER_POOL, task.task_id


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
