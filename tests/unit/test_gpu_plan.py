"""The GPU plan end to end: `athanor gpu-plan` and `gpu-catalog`, and the nightly stage's tables.

One class, hand-computed from the catalog (reference/data): 3 runs of 2 h on 1 x p4d.24xlarge
(8 x A100, 312 TFLOPS, 21.96 $/h in us-east-1) at 3,200 samples/s, 2 runs on 2 x p4d.24xlarge
at 3,200 x 2^0.5 = 4,525.483 samples/s: alpha = 0.5. 1e8 parameters need 1e8 x 16 x 1.2 / 2^30 =
1.79 GiB, under the 10 GiB peak: data parallel, 10 GiB per GPU. Runs at 8 and 16 GPUs: only
4 to 32 GPUs are considered (n^alpha is not extrapolated beyond 2x), so no single H100 or L40S.
Cheapest within 1.5 x 2 h = 3 h: 1 x g6e.12xlarge (4 x L40S, 362.05 TFLOPS, 10.49264 $/h), no
fleet run and no benchmark on L40S: the datasheet speed-up 362.05 / 312 = 1.160417, hours
2 x (8 / 4)^0.5 / 1.160417 = 2.437428 h, 25.575 $ a run. (1 x p5.48xlarge, 8 x H100, reads
MLPerf's BERT speed-up 2.64691: 2 / 2.64691 = 0.755602 h x 55.04 = 41.588 $, dearer.)
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from athanor.cli import main
from athanor.recommend import gpu_plan
from athanor.warehouse import connect

HEADER = (
    "job_id,submit_time,start_time,end_time,state,instance_type,instance_count,gpus_per_instance,"
    "pricing_model,team,project,model,model_params,peak_gpu_memory_gib,samples_per_second,phase"
)
# The five runs span 2026-01-01 00:00 to 2026-01-31 10:00 = 730 h: 5 runs a month.
ROWS = [
    "a1,2026-01-01T00:00:00Z,2026-01-01T00:00:00Z,2026-01-01T02:00:00Z,completed,p4d.24xlarge,1,8,on_demand,"
    "nlp,p,bert,100000000,10,3200,tune",
    "a2,2026-01-05T00:00:00Z,2026-01-05T00:00:00Z,2026-01-05T02:00:00Z,completed,p4d.24xlarge,1,8,on_demand,"
    "nlp,p,bert,100000000,10,3200,tune",
    "a3,2026-01-09T00:00:00Z,2026-01-09T00:00:00Z,2026-01-09T02:00:00Z,completed,p4d.24xlarge,1,8,on_demand,"
    "nlp,p,bert,100000000,10,3200,tune",
    "b1,2026-01-20T00:00:00Z,2026-01-20T00:00:00Z,2026-01-20T01:24:51Z,completed,p4d.24xlarge,2,8,on_demand,"
    "nlp,p,bert,100000000,10,4525.483,tune",
    "b2,2026-01-31T08:35:09Z,2026-01-31T08:35:09Z,2026-01-31T10:00:00Z,completed,p4d.24xlarge,2,8,on_demand,"
    "nlp,p,bert,100000000,10,4525.483,tune",
]
HOURS_NEW = 2 * 2**0.5 * 312 / 362.05  # 2.437428
# Carbon: GPU-hours x board power x PUE 1.135 (AWS) x 379.069 g/kWh (us-east-1).
KG_NOW = 16 * 0.4 * 1.135 * 0.379069  # 2.753557
KG_NEW = HOURS_NEW * 4 * 0.35 * 1.135 * 0.379069  # 1.468163


@pytest.fixture
def jobs_csv(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text("\n".join([HEADER, *ROWS]) + "\n")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATHANOR_HOME", str(tmp_path))
    monkeypatch.setenv("ATHANOR_DUCKDB_MEMORY_LIMIT", "1GB")
    return tmp_path


EXPECTED = {
    "job_class": "nlp/p/bert/tune",
    "runs": 5,
    "current": {"instance_type": "p4d.24xlarge", "instance_count": 1, "gpus": 8},
    "recommended": {"instance_type": "g6e.12xlarge", "instance_count": 1, "gpus": 4},
    "memory_required_gib": 10.0,
    "hours_per_run": {"current": 2.0, "recommended": round(HOURS_NEW, 3)},  # 2.437
    "cost_per_run_usd": {"current": 43.92, "recommended": 25.58},  # 2 x 21.96; 2.437428 x 10.49264
    "monthly_savings_usd": 91.72,  # (43.92 - 25.5752) x 5
    "kgco2e_per_run": {"current": round(KG_NOW, 3), "recommended": round(KG_NEW, 3)},
}
# The evidence, after the reason. Datasheet range: 1.160417 down to 1.160417^0.405452 = 1.062179;
# at 1.062179 a run costs 25.5752 x 1.160417 / 1.062179 = 27.9405 $: (43.92 - 27.9405) x 5 = 79.90.
# Break-even: 1.160417 x 25.5752 / 43.92 = 0.675721. Saving at both ends: counted.
EVIDENCE = {
    "speedup": {"value": 1.16, "low": 1.062, "high": 1.16, "source": "datasheet"},
    "break_even_speedup": 0.676,
    "monthly_savings_range_usd": {"low": 79.9, "value": 91.72, "high": 91.72},
    "benchmark_first": False,
    "counted": True,
    "gpu_window": [4.0, 32.0],
    "data_transfer": None,  # p4d and g6e.12xlarge are both priced in us-east-1: no copy
}


def test_gpu_plan_on_job_files_prints_the_issue_shape(home: Path, jobs_csv: Path, capsys) -> None:
    assert main(["gpu-plan", str(jobs_csv), "--format", "json"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)
    assert list(plan) == [*EXPECTED, "reason", *EVIDENCE]  # issue 16's keys in its order, then issue 28's
    assert {k: plan[k] for k in EXPECTED} == EXPECTED
    assert {k: plan[k] for k in EVIDENCE} == EVIDENCE
    assert plan["reason"].startswith("move to 1 x g6e.12xlarge (4 x L40S, us-east-1): -42 % cost per run")
    # Naming only g6e.xlarge (one GPU, outside 4-32) leaves the class where it is.
    assert main(["gpu-plan", str(jobs_csv), "--format", "json", "--candidates", "g6e.xlarge"]) == 0
    (stay,) = json.loads(capsys.readouterr().out)
    assert stay["recommended"] == EXPECTED["current"] and stay["monthly_savings_usd"] == 0.0


def test_nightly_plan_is_stored_and_read_back_by_the_command(home: Path, jobs_csv: Path, capsys) -> None:
    warehouse = home / "wh.duckdb"
    assert main(["ingest", str(jobs_csv), "--warehouse", str(warehouse)]) == 0
    assert capsys.readouterr().out == "jobs.csv: generic job log, 5 jobs, 0% censored\n"
    with connect(warehouse) as con:
        summary = gpu_plan.recommend_gpus(con, "run-1", date(2026, 1, 31))
        row = con.execute(
            "select job_class, current_instance_type, recommended_instance_type, recommended_gpus,"
            " memory_basis, scaling_basis, scaling_alpha, cost_per_run_current_usd,"
            " cost_per_run_recommended_usd, monthly_savings_usd, purchase, frontier, speedup_source,"
            " round(speedup, 6), round(speedup_low, 6), round(speedup_high, 6), round(break_even_speedup, 6),"
            " cast(monthly_savings_low_usd as double), cast(monthly_savings_high_usd as double), benchmark_first,"
            " counted from gpu_plan"
        ).fetchone()
        rec = con.execute(
            "select kind, scope, current_monthly_cost, estimated_monthly_cost, estimated_monthly_savings_amount,"
            " detail->>'$.recommended.instance_type' from recommendations"
        ).fetchall()
    assert summary["classes"] == 1 and summary["moves"] == 1
    assert row[:6] == ("nlp/p/bert/tune", "p4d.24xlarge", "g6e.12xlarge", 4, "observed", "fitted")
    assert row[6] == pytest.approx(0.5, abs=1e-6)
    assert [float(v) for v in row[7:10]] == [43.92, 25.58, 91.72]
    assert row[10] == "commitment (reserved instances or a savings plan)"  # tune
    assert row[12:] == ("datasheet", 1.160417, 1.062179, 1.160417, 0.675721, 79.9, 91.72, False, True)
    # The frontier ends at the recommendation: nothing in 4-32 GPUs is cheaper, however slow.
    frontier = {f["instance_type"]: (f["hours_per_run"], f["cost_per_run_usd"]) for f in json.loads(row[11])}
    assert list(frontier)[-1] == "g6e.12xlarge" and frontier["g6e.12xlarge"] == (round(HOURS_NEW, 4), 25.58)
    # 5 runs a month: 43.92 x 5 = 219.60 now, 25.5752 x 5 = 127.88 after.
    assert [(k, s, float(c), float(e), float(v), t) for k, s, c, e, v, t in rec] == [
        ("gpu_choice", "nlp/p/bert/tune", 219.6, 127.88, 91.72, "g6e.12xlarge")
    ]

    assert main(["gpu-plan", "--warehouse", str(warehouse), "--format", "json"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)
    assert {k: plan[k] for k in EXPECTED} == EXPECTED
    assert {k: plan[k] for k in EVIDENCE} == EVIDENCE


def test_gpu_catalog_lists_unit_costs_cheapest_first(home: Path, capsys) -> None:
    assert main(["gpu-catalog", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    p4d = next(r for r in rows if r["instance_type"] == "p4d.24xlarge")
    # 21.96 x 24 / (8 x 312) = 0.2112 $/TFLOPS-day.
    assert (p4d["region"], p4d["gpus"], p4d["usd_per_tflops_day"]) == ("us-east-1", 8, 0.2112)
    costs = [r["usd_per_tflops_day"] for r in rows if r["usd_per_tflops_day"] is not None]
    assert costs == sorted(costs) and rows[-1]["usd_per_tflops_day"] is None
