"""A cross-region move adds the copy of the class's data (issue 31, item 3): its latest checkpoint
at the provider's published inter-region rate, or "data transfer not priced" without a size."""

from __future__ import annotations

import json
from datetime import date, datetime

import duckdb
import pytest

from athanor.model.performance import MemoryRequirement, ScalingFit
from athanor.recommend import gpu_choice, gpu_plan
from athanor.recommend.gpu_choice import Candidate, ClassInput
from athanor.reference import egress
from athanor.warehouse import insert_rows

GIB = 2**30


def _gpu(name: str, region: str, hourly: float, provider: str = "aws") -> Candidate:
    return Candidate(name, provider, region, 8, "A100-80GB", 80.0, hourly, 312.0, 2039.0, 400.0, 400.0, 1.1)


def _class(data_gib: float | None) -> ClassInput:
    return ClassInput(
        job_class="nlp/p/m/tune", runs=4, current_instance_type="here.8x", current_instance_count=1,
        current_hours_per_run=2.0, runs_per_month=4.0, memory=MemoryRequirement(160.0, "observed", "peak"),
        scaling=ScalingFit("compute", 1.0, None, "datasheet", 0, (8,), None, "linear"), gpu_counts=(8,),
        data_gib=data_gib, data_basis=None if data_gib is None else "the latest checkpoint of run r1, step 200",
    )  # fmt: skip


def test_the_published_rates() -> None:
    # AWS, Azure and GCP: 0.02 $ per GB between two regions (within North America), with source.
    assert str(egress.inter_region_rate("aws").usd_per_gb) == "0.02"
    assert egress.inter_region_rate("aws").source.source_id == "aws_egress_2026"
    assert egress.inter_region_rate("gcp").source.url.startswith("https://cloud.google.com/")


def test_a_cross_region_move_adds_the_copy_of_its_checkpoint() -> None:
    # Now 1 x here.8x in us-east-1 at 32 $/h, 2 h = 64 $ a run; there.8x in us-west-2 at 24 $/h
    # = 48 $ a run: it moves, (64 - 48) x 4 = 64 $ a month. Its 500 GiB checkpoint goes along once:
    # 500 x 0.02 = 10.00 $.
    candidates = [_gpu("here.8x", "us-east-1", 32.0), _gpu("there.8x", "us-west-2", 24.0)]
    plan = gpu_choice.plan_classes([_class(500.0)], candidates=candidates)[0]
    assert plan.recommended.candidate.region == "us-west-2"
    assert plan.monthly_savings_usd == pytest.approx(64.0)
    t = plan.data_transfer
    assert (t.source_region, t.target_region, t.gib, t.usd) == (
        "us-east-1",
        "us-west-2",
        500.0,
        pytest.approx(10.0),
    )
    assert t.note.startswith(
        "cross-region move (aws us-east-1 to aws us-west-2): copying its data, 500.0 GiB "
        "(the latest checkpoint of run r1, step 200), costs $10.00 once at 0.02 $/GB"
    )
    assert t.note in plan.reason
    assert plan.to_json()["data_transfer"] == {
        "from": "us-east-1", "to": "us-west-2", "gib": 500.0, "usd": 10.0, "note": t.note,
    }  # fmt: skip


def test_without_a_size_the_move_says_data_transfer_not_priced() -> None:
    candidates = [_gpu("here.8x", "us-east-1", 32.0), _gpu("there.8x", "us-west-2", 24.0)]
    plan = gpu_choice.plan_classes([_class(None)], candidates=candidates)[0]
    assert (plan.data_transfer.gib, plan.data_transfer.usd) == (None, None)
    assert "data transfer not priced" in plan.data_transfer.note and "data transfer not priced" in plan.reason


def test_a_move_within_its_region_copies_nothing_and_another_cloud_is_not_priced() -> None:
    same = gpu_choice.plan_classes(
        [_class(500.0)], candidates=[_gpu("here.8x", "us-east-1", 32.0), _gpu("there.8x", "us-east-1", 24.0)]
    )[0]
    assert same.moves and same.data_transfer is None
    # Named candidates may come from another cloud: internet egress, not in the catalogue.
    other = gpu_choice.plan_classes(
        [_class(500.0)],
        candidates=[_gpu("here.8x", "us-east-1", 32.0), _gpu("gcp.8x", "us-east4", 24.0, provider="gcp")],
        candidate_types=["gcp.8x"],
    )[0]
    assert other.recommended.candidate.provider == "gcp"
    assert (other.data_transfer.gib, other.data_transfer.usd) == (500.0, None)
    assert other.data_transfer.note.startswith(
        "cross-cloud move (aws us-east-1 to gcp us-east4): data transfer not priced"
    )


def test_a_class_takes_its_size_from_the_latest_checkpoint_of_its_runs(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    # Run r1: step 100 (1 + 0.5 GiB), step 200 (2 + 1 GiB: the latest with current objects), step
    # 300 only a delete marker. Run r2: step 50, 4 GiB, but r2 is another class's run.
    def obj(run: str, step: int, key: str, gib: float, marker: bool = False) -> dict:
        return {
            "load_id": "l1", "inventory_date": date(2026, 11, 30), "bucket": "ckpt", "key": f"{run}/{key}",
            "version_id": "v1", "is_latest": True, "is_delete_marker": marker, "size_bytes": int(gib * GIB),
            "last_modified": datetime(2026, 11, 29), "storage_class": "STANDARD", "it_access_tier": None,
            "etag": "e", "run_id": run, "step": step,
        }  # fmt: skip

    insert_rows(
        warehouse,
        "storage_objects",
        [
            obj("r1", 100, "checkpoint-100/model.safetensors", 1.0),
            obj("r1", 100, "checkpoint-100/optimizer.pt", 0.5),
            obj("r1", 200, "checkpoint-200/model.safetensors", 2.0),
            obj("r1", 200, "checkpoint-200/optimizer.pt", 1.0),
            obj("r1", 300, "checkpoint-300/model.safetensors", 0.0, marker=True),
            obj("r2", 50, "checkpoint-50/model.safetensors", 4.0),
        ],
    )
    cls = gpu_choice.ClassInput(**{**_class(None).__dict__, "job_ids": ("r1", "r9")})
    (sized,) = gpu_plan.class_data(warehouse, [cls])
    assert sized.data_gib == pytest.approx(3.0)
    assert (
        sized.data_basis == "the latest checkpoint of run r1, step 200, the largest of 1 run with checkpoints"
    )
    unknown = gpu_choice.ClassInput(**{**_class(None).__dict__, "job_ids": ("r9",)})
    assert gpu_plan.class_data(warehouse, [unknown])[0].data_gib is None


def test_the_recommendation_states_the_transfer_and_the_age_of_its_prices() -> None:
    candidates = [_gpu("here.8x", "us-east-1", 32.0), _gpu("there.8x", "us-west-2", 24.0)]
    cls = _class(500.0)
    plans = gpu_choice.plan_classes([cls], candidates=candidates)
    (rec,) = gpu_plan.recommendations(plans, {cls.job_class: cls}, 1.5, date(2026, 12, 6))
    assumptions = json.loads(rec.assumptions)
    # The packaged catalogue's oldest rows are of 2025-11-30: 371 days before 2026-12-06.
    assert assumptions["prices_as_of"] == "prices as of 2025-11-30, 371 days old"
    assert assumptions["data_transfer"]["usd"] == 10.0
