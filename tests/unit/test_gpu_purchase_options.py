"""A shape not sold on demand is never where the GPU plan moves on-demand work (issue 31, item 3).

The plan prices every configuration at on-demand list prices; a type sold only as capacity blocks
(p5e.48xlarge), spot or flex-start (GCP a3-highgpu-1g/2g) has no on-demand offer to move to.
Every expected number is computed by hand in the comments.
"""

from __future__ import annotations

import pandas as pd
import pytest

from athanor.recommend import gpu_choice
from athanor.recommend.gpu_choice import Candidate
from athanor.reference import gpus


def _gpu(name: str, gpus_per_instance: int, hourly: float, options: tuple[str, ...]) -> Candidate:
    # One GPU model (312 TFLOPS, 80 GiB, 400 W) everywhere: only price and purchase options differ.
    return Candidate(
        name, "aws", "r1", gpus_per_instance, "A100-80GB", 80.0, hourly, 312.0, 2039.0, 400.0, 400.0, 1.1,
        purchase_options=options,
    )  # fmt: skip


def _runs(instance_type: str, gpus_per_instance: int = 8) -> pd.DataFrame:
    # 4 runs of 2 h on 1 instance (8 GPUs unless told), 20 GiB peak per GPU, no throughput data.
    t0 = pd.Timestamp("2026-01-01")
    df = pd.DataFrame(
        [
            {"job_id": f"r{i}", "team": "nlp", "project": "p", "model": "m", "phase": "production",
             "state": "completed", "instance_type": instance_type, "instance_count": 1, "gpus_per_instance": gpus_per_instance,
             "duration_s": 7200.0, "model_params": None, "peak_gpu_memory_gib": 20.0,
             "samples_per_second": None, "start_time": t0 + pd.Timedelta(days=7 * i)}
            for i in range(4)
        ]
    )  # fmt: skip
    df["start_time"] = pd.to_datetime(df["start_time"])
    df["end_time"] = df["start_time"] + pd.to_timedelta(df["duration_s"], unit="s")
    return df


def test_a_capacity_block_only_shape_is_never_recommended_as_on_demand() -> None:
    # Now: 1 x od.8x at 32 $/h, 2 h = 64 $ a run. A capacity-block-only 8-GPU shape at 10 $/h
    # (20 $ a run) and a spot-only one at 12 $/h (24 $) are cheaper, but not sold on demand; the
    # on-demand od2.8x at 24 $/h (48 $ a run) is the cheapest destination: a 16 $ saving a run.
    candidates = [
        _gpu("od.8x", 8, 32.0, ("on_demand", "spot")),
        _gpu("block.8x", 8, 10.0, ("capacity_block",)),
        _gpu("spotonly.8x", 8, 12.0, ("spot", "flex_start")),
        _gpu("od2.8x", 8, 24.0, ("on_demand",)),
    ]
    plan = gpu_choice.plan(_runs("od.8x"), candidates=candidates)[0]
    assert plan.recommended.candidate.instance_type == "od2.8x"
    assert plan.recommended.cost_per_run_usd == pytest.approx(48.0)
    assert plan.current.cost_per_run_usd == pytest.approx(64.0)
    assert not any(o.candidate.instance_type in {"block.8x", "spotonly.8x"} for o in plan.frontier)
    assert plan.greener is None or plan.greener.candidate.sold_on_demand
    # The reason says which cheaper shapes were left out, and why.
    assert plan.not_on_demand == ("block.8x", "spotonly.8x")
    assert "cheaper but not offered, as not sold on demand" in plan.reason
    assert "block.8x, spotonly.8x" in plan.reason


def test_a_class_already_on_a_spot_only_shape_is_priced_where_it_is() -> None:
    # A class on spotonly.8x (12 $/h, 24 $ a run) stays: the only other shape, od2.8x, costs 48 $.
    candidates = [_gpu("spotonly.8x", 8, 12.0, ("spot",)), _gpu("od2.8x", 8, 24.0, ("on_demand",))]
    plan = gpu_choice.plan(_runs("spotonly.8x"), candidates=candidates)[0]
    assert plan.current.cost_per_run_usd == pytest.approx(24.0)
    assert plan.recommended.candidate.instance_type == "spotonly.8x" and not plan.moves
    assert plan.not_on_demand == ()


def test_the_catalogue_marks_capacity_block_and_spot_only_shapes() -> None:
    # p5e.48xlarge: capacity blocks only, no on-demand price, so never a candidate at all.
    assert not any(c.instance_type == "p5e.48xlarge" for c in gpu_choice.candidates_from_catalog())
    assert gpus.price("p5e.48xlarge").purchase_options == ("capacity_block",)
    # GCP a3-highgpu-1g: its SKUs' list price is known but it is sold as spot or flex-start only.
    a3 = [c for c in gpu_choice.candidates_from_catalog() if c.instance_type == "a3-highgpu-1g"]
    assert a3 and all(not c.sold_on_demand for c in a3)
    # p6-b200.48xlarge: on demand and as capacity blocks (8 x 14.208 = 113.664 $/h).
    b200 = gpus.price("p6-b200.48xlarge")
    assert b200.sold_on_demand and "capacity_block" in b200.purchase_options
    assert str(b200.capacity_block_usd_per_h) == "113.664"


def test_real_catalogue_never_moves_gcp_work_onto_a3_highgpu_1g() -> None:
    # A class on a2-highgpu-1g (1 x A100 40GB, 3.67339 $/h in us-central1): 2 h = 7.34678 $ a run,
    # 30 GiB peak (too much for one 24 GiB L4). On a3-highgpu-1g (1 x H100) the datasheet ratio
    # 989 / 312 makes it 2 x 312 / 989 = 0.63094 h x 10.97906 $/h = 6.9271 $ a run: cheaper than
    # now, but a3-highgpu-1g is sold as spot or flex-start only, so it is never the destination.
    runs = _runs("a2-highgpu-1g", gpus_per_instance=1)
    runs["peak_gpu_memory_gib"] = 30.0
    plan = gpu_choice.plan(runs, deadline_slack=50.0)[0]
    assert plan.current.cost_per_run_usd == pytest.approx(2 * 3.67339)
    on_a3 = 2 * 312 / 989 * 10.97906
    assert on_a3 == pytest.approx(6.9271, abs=1e-4) and on_a3 < plan.current.cost_per_run_usd
    assert not any(o.candidate.instance_type.startswith("a3-highgpu-1g") for o in plan.options)
    assert plan.recommended is not None and plan.recommended.candidate.sold_on_demand
    # The recommendation (a2-ultragpu-1g, 2 h x 3.31770 = 6.6354 $) is cheaper still, so the
    # barred a3 shapes are not named as a lost saving.
    assert plan.recommended.candidate.instance_type == "a2-ultragpu-1g"
    assert plan.recommended.cost_per_run_usd == pytest.approx(2 * 3.31770)
    assert plan.not_on_demand == ()
