"""athanor.model.performance and athanor.recommend.gpu_choice: the cases issue 16 names.

Every expected number is computed by hand in the comments.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from athanor.model.performance import (
    Observation,
    fit_scaling,
    memory_from_params,
    memory_requirement,
)
from athanor.recommend import gpu_choice
from athanor.recommend.gpu_choice import Candidate

REQUIRED_70B_GIB = 70e9 * 16 * 1.2 / 2**30  # 1,251.698 GiB


def _runs(rows: list[dict]) -> pd.DataFrame:
    base = {
        "state": "completed",
        "team": "nlp",
        "project": "p",
        "model": "m",
        "model_params": None,
        "peak_gpu_memory_gib": None,
        "samples_per_second": None,
        "phase": None,
    }
    df = pd.DataFrame([{**base, **r} for r in rows])
    df["start_time"] = pd.to_datetime(df["start_time"])
    df["end_time"] = df["start_time"] + pd.to_timedelta(df["duration_s"], unit="s")
    return df


def test_memory_rule_sixteen_bytes_per_parameter_with_headroom_sharded() -> None:
    # 70e9 parameters x 16 B x 1.2 = 1.344e12 B = 1,251.698 GiB, needed in total across the GPUs.
    assert memory_from_params(70e9) == pytest.approx(1251.698, abs=1e-3)
    req = memory_requirement([(None, 8)], [70e9, None])
    assert (req.basis, req.total_gib) == ("model_params", pytest.approx(1251.698, abs=1e-3))
    # Two 8 x 80 GiB nodes hold it (1,280 GiB), one does not (640 GiB).
    assert req.fits(16, 80.0) is True
    assert req.fits(8, 80.0) is False
    # An observed peak wins over the rule: the smallest peak x GPUs, min(12 x 8, 20 x 4) = 80 GiB.
    observed = memory_requirement([(12.0, 8), (20.0, 4), (None, 2)], [70e9])
    assert (observed.basis, observed.total_gib) == ("observed", 80.0)
    unknown = memory_requirement([(None, 8)], [None])
    assert (unknown.basis, unknown.total_gib, unknown.fits(8, 80.0)) == ("unknown", None, None)


def test_scaling_fit_recovers_a_known_efficiency() -> None:
    # samples/s = 0.5 x 312 x n^0.8 at n = 1, 2, 4, 8: log-log least squares gives back 0.8 and 0.5.
    obs = [Observation(n, 0.5 * 312 * n**0.8, 312.0, 1555.0) for n in (1, 2, 4, 8)]
    fit = fit_scaling(obs)
    assert (fit.basis, fit.bound, fit.gpu_counts) == ("fitted", "compute", (1, 2, 4, 8))
    assert fit.alpha == pytest.approx(0.8, abs=1e-9)
    assert fit.coefficient == pytest.approx(0.5, rel=1e-9)
    # The brief's BERT case: 3,200 samples/s on 8 A100, 2,304 on 4: alpha = log2(3200/2304) = 0.473931.
    bert = fit_scaling([Observation(8, 3200, 312.0, 1555.0), Observation(4, 2304, 312.0, 1555.0)])
    assert bert.alpha == pytest.approx(math.log2(3200 / 2304), abs=1e-9)
    assert bert.alpha == pytest.approx(0.473931, abs=1e-6)
    # No throughput at all: the datasheet ratio, marked as such.
    assert fit_scaling([Observation(8, math.nan, 312.0, 1555.0)]).basis == "datasheet"


def _gpu(name: str, gpus: int, hourly: float) -> Candidate:
    # Same GPU (312 TFLOPS, 80 GiB, 400 W), same 2 $ per GPU-hour; 1.1 PUE, 400 gCO2e/kWh.
    return Candidate(name, "aws", "r1", gpus, "A100-80GB", 80.0, hourly, 312.0, 2039.0, 400.0, 400.0, 1.1)


def test_an_idle_gpu_counts_its_idle_watts_in_the_plans_carbon() -> None:
    # A100-80GB curve: 62.1 W idle, 400 W at full use. 10 GPU-hours x 1.1 PUE x 400 g/kWh.
    a100 = _gpu("gpu.8x", 8, 16.0)
    assert gpu_choice.kgco2e(10, a100, 0.0) == pytest.approx(10 * 0.0621 * 1.1 * 0.4)
    assert gpu_choice.kgco2e(10, a100, None) == pytest.approx(10 * 0.400 * 1.1 * 0.4)  # unknown: full
    # No catalogue model, so no curve: the board power's fallback curve, 10 % of 400 W idle
    # (40 W + 360 W x 0.5 = 220 W), and idle still draws its 40 W, never 0.
    unknown = dataclasses.replace(a100, gpu_model=None)
    assert gpu_choice.kgco2e(10, unknown, 0.5) == pytest.approx(10 * 0.220 * 1.1 * 0.4)
    assert gpu_choice.kgco2e(10, unknown, 0.0) == pytest.approx(10 * 0.040 * 1.1 * 0.4)
    assert gpu_choice.kgco2e(10, dataclasses.replace(unknown, board_power_w=None), 0.5) is None


def test_eight_gpu_class_moves_to_four_with_slack_1_5_and_stays_with_slack_1_2() -> None:
    # 3 runs on 8 GPUs at 3,200 samples/s (2 h each), 2 runs on 4 GPUs at 2,304 samples/s (the same
    # 23.04 M samples: 10,000 s). Runs span 730 h = one month: 5 runs a month.
    t0 = pd.Timestamp("2026-01-01")
    rows = [
        {"job_id": f"a{i}", "instance_type": "gpu.8x", "instance_count": 1, "gpus_per_instance": 8,
         "duration_s": 7200.0, "samples_per_second": 3200.0, "start_time": t0 + pd.Timedelta(days=i)}
        for i in range(3)
    ] + [
        {"job_id": f"b{i}", "instance_type": "gpu.4x", "instance_count": 1, "gpus_per_instance": 4,
         "duration_s": 10000.0, "samples_per_second": 2304.0, "start_time": t0 + pd.Timedelta(days=5 + i)}
        for i in range(2)
    ]  # fmt: skip
    rows[-1]["start_time"] = t0 + pd.Timedelta(hours=730) - pd.Timedelta(seconds=10000)
    for r in rows:
        r["peak_gpu_memory_gib"] = 20.0
        r["phase"] = "tune"
    runs = _runs(rows)
    candidates = [_gpu("gpu.8x", 8, 16.0), _gpu("gpu.4x", 4, 8.0)]

    move = gpu_choice.plan(runs, deadline_slack=1.5, candidates=candidates)[0]
    # Current: 1 x gpu.8x, 2 h x 16 $/h = 32 $ a run. 4 GPUs: 2 h x 2^0.473931 = 2 x 3200/2304 =
    # 2.7778 h (1.389 x, within 1.5) x 8 $/h = 22.22 $. Saving (32 - 22.22) x 5 runs = 48.89 $/month.
    # Carbon: 16 GPU-h x 0.4 kW x 1.1 x 0.4 kg/kWh = 2.816 kg; 11.111 x 0.4 x 1.1 x 0.4 = 1.956 kg.
    assert move.to_json() == {
        "job_class": "nlp/p/m/tune",
        "runs": 5,
        "current": {"instance_type": "gpu.8x", "instance_count": 1, "gpus": 8},
        "recommended": {"instance_type": "gpu.4x", "instance_count": 1, "gpus": 4},
        "memory_required_gib": 80.0,  # min(20 x 8, 20 x 4)
        "hours_per_run": {"current": 2.0, "recommended": 2.778},
        "cost_per_run_usd": {"current": 32.0, "recommended": 22.22},
        "monthly_savings_usd": 48.89,
        "kgco2e_per_run": {"current": 2.816, "recommended": 1.956},
        "reason": move.reason,
        # The same GPU model: no speed-up to doubt, the saving is the same at both ends. Runs at 4
        # and 8 GPUs: configurations of 2 to 16 GPUs are considered.
        "speedup": None,
        "break_even_speedup": None,
        "monthly_savings_range_usd": {"low": 48.89, "value": 48.89, "high": 48.89},
        "benchmark_first": False,
        "counted": True,
        "gpu_window": [2.0, 16.0],
        "data_transfer": None,  # both types in region r1: nothing to copy
    }
    assert move.reason.startswith("move to 1 x gpu.4x")
    assert move.purchase == gpu_choice.PHASE_PURCHASE["tune"]
    # The frontier ends at the recommendation; faster points cost more.
    assert move.frontier[-1] == move.recommended
    assert [o.cost_per_run_usd for o in move.frontier] == sorted(
        (o.cost_per_run_usd for o in move.frontier), reverse=True
    )

    # Slack 1.2 allows 2.4 h: 2.7778 h is too slow, nothing else is cheaper than 32 $: stay.
    stay = gpu_choice.plan(runs, deadline_slack=1.2, candidates=candidates)[0]
    assert stay.to_json()["recommended"] == {"instance_type": "gpu.8x", "instance_count": 1, "gpus": 8}
    assert stay.monthly_savings_usd == 0.0
    assert stay.reason.startswith("stay on 1 x gpu.8x")


def test_a_70b_class_is_never_placed_on_less_memory_than_it_needs() -> None:
    # No throughput data: hours scale by the datasheet TFLOPS ratio. Real catalog, us-east-1 prices.
    t0 = pd.Timestamp("2026-01-01")
    on_p5 = _runs(
        [
            {"job_id": f"x{i}", "instance_type": "p5.48xlarge", "instance_count": 2, "gpus_per_instance": 8,
             "duration_s": 36000.0, "model_params": 70e9, "start_time": t0 + pd.Timedelta(days=7 * i)}
            for i in range(4)
        ]
    )  # fmt: skip
    # The catalogue as it was before B200 (p6-b200.48xlarge, 1,432 GiB on 8 GPUs, would hold the
    # class on one node at 113.93 $/h): this test is about memory, not about the newest GPU.
    before_b200 = [c for c in gpu_choice.candidates_from_catalog() if c.gpu_model != "B200-192GB"]
    # Slack 50 lets slow configurations finish in time, so memory alone rules them out.
    p = gpu_choice.plan(on_p5, deadline_slack=50.0, candidates=before_b200)[0]
    assert p.memory.total_gib == pytest.approx(REQUIRED_70B_GIB)
    # Every configuration below 1,251.70 GiB is out, whatever it costs: 1 x p5.48xlarge (640 GiB)
    # would cost the same, 20 h x 55.04 = 1,100.8 $, and finish in time.
    for o in p.options:
        assert o.fits_memory == (o.total_memory_gib >= REQUIRED_70B_GIB)
    one = next(
        o
        for o in p.options
        if o.candidate.instance_type == "p5.48xlarge" and o.instance_count == 1 and o.candidate.reference
    )
    assert (one.fits_memory, one.hours_per_run, one.cost_per_run_usd) == (
        False,
        pytest.approx(20.0),
        pytest.approx(1100.8),
    )
    # Runs at 16 GPUs only: 8 to 32 GPUs are considered, so no single card (a g6e.xlarge) is priced.
    assert p.gpu_window == (8.0, 32.0)
    assert {o.gpus for o in p.options} <= {8, 16, 32}
    assert p.recommended.total_memory_gib >= REQUIRED_70B_GIB
    # Equal cost on more p5 (linear scaling) is no reason to move: it stays on 2 x p5.48xlarge.
    assert p.to_json()["recommended"] == {"instance_type": "p5.48xlarge", "instance_count": 2, "gpus": 16}

    # A class that runs on one 8 x 80 GB node (640 GiB, below the requirement) is moved off it: the
    # cheapest configuration that holds it is 2 x p5.48xlarge, 10 h x (8 x 312)/(16 x 989) = 1.5774 h
    # x 110.08 $/h = 173.64 $ a run.
    on_p4de = _runs(
        [
            {"job_id": f"y{i}", "instance_type": "p4de.24xlarge", "instance_count": 1, "gpus_per_instance": 8,
             "duration_s": 36000.0, "model_params": 70e9, "start_time": t0 + pd.Timedelta(days=7 * i)}
            for i in range(4)
        ]
    )  # fmt: skip
    q = gpu_choice.plan(on_p4de, deadline_slack=10.0, candidates=before_b200)[0]
    assert q.current.fits_memory is False
    assert q.to_json()["recommended"] == {"instance_type": "p5.48xlarge", "instance_count": 2, "gpus": 16}
    assert q.recommended.cost_per_run_usd == pytest.approx(10 * 2496 / 15824 * 110.08, rel=1e-9)
    assert all(o.total_memory_gib >= REQUIRED_70B_GIB for o in q.frontier)
    # No throughput and no benchmark for model "m": the datasheet 989 / 312 = 3.1699, its low end
    # 3.1699^0.40545 = 1.5964 (the benchmark table's worst realised share, DLRM). Break-even: the
    # price ratio 110.08 / 27.45 = 4.0102 x the scaling term (8 / 16)^1 = 2.0051, inside the
    # range: benchmark first.
    assert q.to_json()["speedup"] == {"value": 3.17, "low": 1.596, "high": 3.17, "source": "datasheet"}
    assert q.break_even_speedup == pytest.approx(110.08 / 27.45 * 8 / 16, rel=1e-12)
    assert q.benchmark_first and not q.counted
