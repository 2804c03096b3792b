"""GPU usage: samples -> busy, idle and unobserved GPU-hours, linked to jobs and priced by the bill.

Every expectation is counted by hand from samples one minute apart: a GPU sampled every 60 s has
a median interval of 60 s, so a sample counts 60 s (its last one too) and the cap is 120 s.
Bills are hourly lines: p4d.24xlarge-like machines of 8 GPUs at $16 an hour, $2 a GPU-hour.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from athanor.cli import main
from athanor.publish import load_report_data
from athanor.publish.gpu_usage_section import load_gpu_usage
from athanor.publish.render import render_html
from athanor.recommend import gpu_plan, gpu_usage
from athanor.recommend.gpu_usage import IdleRule
from athanor.warehouse import insert_rows
from tests.support.rows import hourly_usage_lines, job_run

T0 = datetime(2026, 3, 1)
DAY = date(2026, 3, 1)
WINDOW = (T0, T0 + timedelta(days=1))
_rows: list[dict] = []


def samples(
    gpu: str, start: datetime, values: list[float], *, step_s: float = 60, memory=8.0, **where
) -> list[dict]:
    """One sample per value, step_s apart; `where`: host, instance_id, job_name, pod."""
    place = {"host": "h1", "instance_id": "i-1", "job_name": None, "pod": None, **where}
    return [
        {
            "load_id": "L1",
            "source_format": "nvidia_smi",
            "source_file": "telemetry.csv",
            "source_row": k + 1,
            "host": place["host"],
            "gpu_id": gpu,
            "gpu_index": 0,
            "gpu_model": "NVIDIA A100-SXM4-40GB",
            "instance_id": place["instance_id"],
            "job_name": place["job_name"],
            "pod": place["pod"],
            "namespace": None,
            "sampled_at": start + timedelta(seconds=step_s * k),
            "utilisation_pct": v,
            "memory_used_gib": memory,
            "memory_total_gib": 40.0,
            "power_w": 100.0,
        }
        for k, v in enumerate(values)
    ]


def bill(
    resource_id: str,
    hours: int,
    *,
    start: datetime = T0,
    usd: float = 16.0,
    gpus: int = 8,
    usage_hours: float = 1.0,
    team: str = "nlp",
    job_id: str | None = None,
) -> list[dict]:
    """Hourly USD usage lines of one machine."""
    tags = {"team": team} | ({"job_id": job_id} if job_id else {})
    return hourly_usage_lines(
        resource_id, start, hours, cost=usd, gpus=gpus, instance_type="p4d.24xlarge",
        billing_period=(datetime(2026, 3, 1), datetime(2026, 4, 1)), usage_hours=usage_hours, tags=tags,
    )  # fmt: skip


def job(
    job_id: str, start: datetime, hours: float, *, gpus: int = 8, source: str = "generic", **cols
) -> dict:
    return job_run(job_id, start, hours, gpus, source=source, **cols)


def per_gpu(frame, column: str) -> dict[str, float]:
    observed = frame[frame["gpu_id"].notna()]
    return {g: round(v, 6) for g, v in observed.groupby("gpu_id")[column].sum().items()}


def test_idle_exactly_at_the_thresholds(warehouse) -> None:
    # g1: 30 min at 4.9 % (below 5), then 30 min at 50 %: the 30 minutes are idle.
    # g2: 30 min at exactly 5 %: not below the threshold, busy.
    # g3: 29 min at 4.9 %: one minute short of 30, a busy dip.
    insert_rows(
        warehouse,
        "gpu_samples",
        samples("g1", T0, [4.9] * 30 + [50.0] * 30)
        + samples("g2", T0, [5.0] * 30 + [50.0] * 30)
        + samples("g3", T0, [4.9] * 29 + [50.0] * 31),
    )
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    assert per_gpu(rows, "observed_gpu_hours") == {"g1": 1.0, "g2": 1.0, "g3": 1.0}
    assert per_gpu(rows, "idle_gpu_hours") == {"g1": 0.5, "g2": 0.0, "g3": 0.0}
    # 29 minutes are idle once the rule asks for 29; 5 % is idle once the threshold is above it.
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule(below_pct=5.01, minutes=29))
    assert per_gpu(rows, "idle_gpu_hours") == {"g1": 0.5, "g2": 0.5, "g3": round(29 / 60, 6)}


def test_a_gap_is_capped_unobserved_and_ends_an_idle_stretch(warehouse) -> None:
    # 10 samples a minute apart, 20 minutes of silence, 10 more: all at 1 %. Median interval 60 s,
    # cap 120 s: the 10th sample counts 120 s, the other 18 minutes are unobserved. Stretches of
    # 9 x 60 + 120 = 660 s and 10 x 60 = 600 s: idle at 10 minutes, not at 15 (their 21 together).
    first = samples("g1", T0, [1.0] * 10)
    second = samples("g1", T0 + timedelta(minutes=29), [1.0] * 10)
    insert_rows(warehouse, "gpu_samples", first + second)
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule(minutes=15))
    assert per_gpu(rows, "observed_gpu_hours") == {"g1": round(1260 / 3600, 6)}
    assert per_gpu(rows, "unobserved_gpu_hours") == {"g1": round(1080 / 3600, 6)}
    assert per_gpu(rows, "idle_gpu_hours") == {"g1": 0.0}
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule(minutes=10))
    assert per_gpu(rows, "idle_gpu_hours") == {"g1": round(1260 / 3600, 6)}
    # A cap of 30 minutes set by hand: the gap counts whole, one stretch of 39 minutes.
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule(minutes=39, cap_minutes=30))
    assert per_gpu(rows, "observed_gpu_hours") == {"g1": round(39 / 60, 6)}
    assert per_gpu(rows, "unobserved_gpu_hours") == {"g1": 0.0}
    assert per_gpu(rows, "idle_gpu_hours") == {"g1": round(39 / 60, 6)}


def test_samples_link_to_jobs_and_machines_to_billing_lines(warehouse) -> None:
    insert_rows(
        warehouse,
        "job_run_facts",
        [
            job(
                "sm-train-1",
                T0,
                1,
                source="sagemaker",
                team="cv",
                project="q",
                model="vit",
                phase="production",
            ),
            job("pt", T0, 1),
            job("pt-train", T0, 1, model="gpt"),
            job("gen-7", T0, 1, model="t5"),
        ],
    )
    insert_rows(
        warehouse,
        "gpu_samples",
        # SageMaker: the Host dimension and the job name; the bill names the training job's ARN.
        samples("sm:0", T0, [80.0] * 60, host="sm-train-1/algo-1", instance_id=None, job_name="sm-train-1")
        # Kubernetes: the pod of job pt-train (the longer of the job ids it starts with).
        + samples("k:0", T0, [80.0] * 60, host="node-a", instance_id=None, pod="pt-train-worker-0")
        # Neither: the billing line of the machine-hour names the job (tag job_id).
        + samples("g:0", T0, [80.0] * 60, host="ip-10-0-0-7", instance_id="i-7")
        # A machine no bill names.
        + samples("u:0", T0, [80.0] * 60, host="lonely", instance_id=None),
    )
    insert_rows(
        warehouse,
        "billing_facts",
        bill("arn:aws:sagemaker:us-east-1:111:training-job/sm-train-1", 1, team="cv", gpus=1, usd=4.0)
        + bill("node-a", 1, gpus=1, usd=3.0)
        + bill("i-7", 1, gpus=1, usd=2.5, job_id="gen-7"),
    )
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    rows = rows.astype(object).where(rows.notna(), None)
    got = {
        r.gpu_id: (r.machine, r.resource_id, r.job_id, r.team, r.job_class, r.usd_per_gpu_hour)
        for r in rows.itertuples()
    }
    assert got == {
        "sm:0": ("sm-train-1", "sm-train-1", "sm-train-1", "cv", "cv/q/vit/production", 4.0),
        "k:0": ("node-a", "node-a", "pt-train", "nlp", "nlp/p/gpt/tune", 3.0),
        "g:0": ("i-7", "i-7", "gen-7", "nlp", "nlp/p/t5/tune", 2.5),
        "u:0": ("lonely", None, None, "(untagged)", "(no job)", None),
    }
    # The GPU plan's own classes: the same names.
    formed, _ = gpu_plan.gpu_choice.class_inputs(gpu_plan.read_job_runs(warehouse))
    assert {c.job_class for c in formed} >= {"cv/q/vit/production", "nlp/p/gpt/tune", "nlp/p/t5/tune"}


def test_idle_cost_is_the_bills_price_and_never_more_than_the_bill(warehouse) -> None:
    # i-1: 8 GPUs billed $16 an hour for 2 hours; one GPU sampled, idle (1 %) all of the first hour,
    # busy the second. Idle 1 GPU-hour at $2 = $2; the 14 paid GPU-hours of the 7 others unobserved.
    # i-2: billed half an hour (usage 0.5 h x 1 GPU, $1: $2 a GPU-hour) but sampled idle for a
    # whole hour: a billed hour counts no more than its paid time, so 0.5 idle GPU-hours, priced
    # $1 = its whole bill (never more busy or idle than paid where the bill names the machine).
    # u: idle an hour on a machine no bill names: idle, unpriced.
    insert_rows(
        warehouse,
        "gpu_samples",
        samples("a", T0, [1.0] * 60 + [90.0] * 60)
        + samples("b", T0, [1.0] * 60, instance_id="i-2", host="h2")
        + samples("c", T0, [1.0] * 60, instance_id=None, host="lonely"),
    )
    insert_rows(
        warehouse,
        "billing_facts",
        bill("i-1", 2) + bill("i-2", 1, gpus=1, usd=1.0, usage_hours=0.5, team="cv"),
    )
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    figures = gpu_usage.summary(warehouse, rows)
    assert figures == {
        # i-1: 16 paid; i-2: its 0.5 paid (1 sampled); lonely: 1 observed.
        "gpu_hours": 17.5,
        "idle_gpu_hours": 2.5,
        "unobserved_gpu_hours": 14.0,
        "idle_cost_usd": 3.0,
        "groups": [
            {
                "team": "(untagged)",
                "instance_type": "(unknown)",
                "gpu_hours": 1.0,
                "idle_gpu_hours": 1.0,
                "idle_cost_usd": None,
                "mean_utilisation": None,
            },
            {
                "team": "cv",
                "instance_type": "p4d.24xlarge",
                "gpu_hours": 0.5,
                "idle_gpu_hours": 0.5,
                "idle_cost_usd": 1.0,
                "mean_utilisation": None,
            },
            {
                "team": "nlp",
                "instance_type": "p4d.24xlarge",
                "gpu_hours": 16.0,
                "idle_gpu_hours": 1.0,
                "idle_cost_usd": 2.0,
                "mean_utilisation": 0.9,
            },
        ],
    }
    assert float(rows["paid_gpu_hours"].sum()) == pytest.approx(16.5)
    assert float(rows["paid_cost_usd"].sum()) == pytest.approx(33.0)  # the bill, to the cent
    assert any(
        "1.00 idle GPU-hours are in hours no USD billing line covers" in n
        for n in gpu_usage.notes(warehouse, rows, IdleRule())
    )


def test_gpu_usage_command_prints_the_issue_shape(settings, warehouse, capsys) -> None:
    insert_rows(warehouse, "gpu_samples", samples("a", T0, [1.0] * 60 + [90.0] * 60))
    insert_rows(warehouse, "billing_facts", bill("i-1", 2))
    warehouse.close()
    path = str(settings.warehouse)
    assert main(["gpu-usage", "--warehouse", path, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "gpu_hours": 16.0,
        "idle_gpu_hours": 1.0,
        "unobserved_gpu_hours": 14.0,
        "idle_cost_usd": 2.0,
        "groups": [
            {
                "team": "nlp",
                "instance_type": "p4d.24xlarge",
                "gpu_hours": 16.0,
                "idle_gpu_hours": 1.0,
                "idle_cost_usd": 2.0,
                "mean_utilisation": 0.9,
            }
        ],
    }
    assert "note: window: 2026-03-01 to 2026-03-02" in err
    # The first hour at 1 % is busy once idle needs 61 minutes.
    assert main(["gpu-usage", "--warehouse", path, "--format", "json", "--idle-minutes", "61"]) == 0
    assert json.loads(capsys.readouterr().out)["idle_gpu_hours"] == 0.0
    assert main(["gpu-usage", "--warehouse", path, "--idle-below", "0.5"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == [
        "team",
        "instance_type",
        "gpu_hours",
        "idle_gpu_hours",
        "idle_cost_usd",
        "mean_utilisation",
    ]
    assert "unobserved GPU-hours: 14.0" in table


@pytest.mark.slow
def test_measure_gpus_stores_hours_and_priced_recommendations_the_report_reconciles(warehouse) -> None:
    # Day 2026-03-01: i-1 (team nlp, 8 GPUs, $2 a GPU-hour) runs job j1 for an hour on one GPU of
    # eight at 90 % (the other seven at 0 %), then sits idle (1 %) for two hours, all 8 GPUs sampled.
    insert_rows(warehouse, "job_run_facts", [job("j1", T0, 1)])
    busy = samples("g0", T0, [90.0] * 60 + [1.0] * 120, pod="j1-worker-0", instance_id="i-1")
    quiet = [s for k in range(1, 8) for s in samples(f"g{k}", T0, [0.0] * 180, pod="j1-worker-0")]
    for s in quiet + busy:
        if s["sampled_at"] >= T0 + timedelta(hours=1):
            s["pod"] = None  # the job has ended: no pod on the GPUs any more
    insert_rows(warehouse, "gpu_samples", busy + quiet)
    # Billed the day before too, when nothing was sampled yet: not measured, not 'unobserved'.
    insert_rows(warehouse, "billing_facts", bill("i-1", 3) + bill("i-1", 24, start=T0 - timedelta(days=1)))
    summary = gpu_usage.measure_gpus(warehouse, "run-1", DAY, IdleRule())
    # 24 paid GPU-hours, all observed; idle: g0's 2 h + 7 x 3 h = 23 h, $46.
    assert summary | {"rows": None} == {
        "samples": 1440,
        "rows": None,
        "recommendations": 2,
        "gpu_hours": 24.0,
        "idle_gpu_hours": 23.0,
        "unobserved_gpu_hours": 0.0,
        "idle_cost_usd": 46.0,
    }
    recs = {
        r[0]: (r[1], float(r[2]), float(r[3]), r[4])
        for r in warehouse.execute(
            """select kind, scope, current_monthly_cost, estimated_monthly_savings_amount, action
               from recommendations where run_id = 'run-1'"""
        ).fetchall()
    }
    # Measured over 3 hours, a month is 730 / 3 of them: the bill $48 -> $11,680, idle $46 -> $11,193.33.
    assert recs["idle_gpu"][:3] == ("nlp/p4d.24xlarge", pytest.approx(11680.0), pytest.approx(11193.33))
    # j1 used 1 GPU of 8 (1/8 of its GPU-hours on a used GPU): 1 GPU; its hour cost $16 -> $3,893.33
    # a month, 7/8 of it saved.
    assert recs["underused_gpu"][0] == "nlp/p/bert/tune"
    assert float(recs["underused_gpu"][2]) == pytest.approx(round(16 * 730 / 3 * 7 / 8, 2))
    assert recs["underused_gpu"][3].startswith("Run nlp/p/bert/tune on 1 GPU instead of 8")
    # Stored hours reconcile with the recomputed figures, and with the report's section.
    stored = warehouse.execute(
        "select sum(idle_cost_usd), sum(paid_gpu_hours), sum(idle_gpu_hours) from gpu_usage_hourly"
    ).fetchone()
    assert stored == pytest.approx((46.0, 24.0, 23.0))
    section = load_gpu_usage(warehouse, DAY - timedelta(days=29), DAY + timedelta(days=1))
    assert section.start == T0  # the first day with telemetry, not the period's first
    assert section.totals["idle_cost_usd"] == pytest.approx(stored[0])
    assert section.totals["paid_gpu_hours"] == pytest.approx(stored[1])
    assert section.idle_cost_by_team == {"nlp": {"p4d.24xlarge": pytest.approx(46.0)}}
    # Busy share: hour 0 is 1 of 8 GPUs busy, hours 1-2 nothing.
    assert section.busy_share == {DAY: {0: pytest.approx(1 / 8), 1: 0.0, 2: 0.0}}
    # A second run replaces the window's hours instead of adding to them.
    gpu_usage.measure_gpus(warehouse, "run-2", DAY, IdleRule())
    assert warehouse.execute("select sum(idle_cost_usd) from gpu_usage_hourly").fetchone()[
        0
    ] == pytest.approx(46.0)
    # The report: the section, its figure, and the recommendations beside (not in) the headline.
    data = load_report_data(warehouse, DAY, "run-2")
    html = render_html(data)
    assert 'id="gpu-usage"' in html and '<td class="num" id="gpu-idle-cost">$46.00</td>' in html
    assert {r.kind for r in data.alternatives} >= {"idle_gpu", "underused_gpu"}
    assert data.headline_saving is None  # nothing else to add: idle and underused are not counted


def test_measured_utilisation_replaces_the_assumed_one_in_the_gpu_plan(warehouse) -> None:
    # Class nlp/p/bert/tune: j1, an hour on a p4d.24xlarge, its one GPU sampled at 25 %.
    insert_rows(warehouse, "job_run_facts", [job("j1", T0, 1)])
    insert_rows(
        warehouse, "gpu_samples", samples("g0", T0, [25.0] * 60, instance_id=None, host="h", job_name="j1")
    )
    gpu_usage.measure_gpus(warehouse, "run-1", DAY, IdleRule())
    assert gpu_usage.class_utilisation(warehouse) == {"nlp/p/bert/tune": pytest.approx(0.25)}
    gpu_plan.recommend_gpus(warehouse, "run-1", DAY)
    reason, kg = warehouse.execute("select reason, kgco2e_per_run_current from gpu_plan").fetchone()
    assert "carbon at the measured mean GPU utilisation, 25 % (telemetry)" in reason
    assert "utilisation unknown" not in reason
    # The A100's power curve at 25 %: 62.1 W idle + (400 - 62.1) x 0.25 = 146.575 W, not a quarter
    # of 400 W (an idle A100 still draws 62 W). 8 GPU-hours x 0.146575 kW x PUE 1.135 x 379.069 g/kWh.
    assert kg == pytest.approx(8 * 0.146575 * 1.135 * 0.379069, rel=1e-4)


def test_idle_rule_refuses_settings_out_of_range() -> None:
    with pytest.raises(ValueError, match="ATHANOR_IDLE_BELOW_PCT"):
        IdleRule(below_pct=0)
    with pytest.raises(ValueError, match="ATHANOR_IDLE_MINUTES"):
        IdleRule(minutes=-1)
    with pytest.raises(ValueError, match="ATHANOR_GPU_SAMPLE_CAP_MINUTES"):
        IdleRule(cap_minutes=0)


def test_settings_read_the_idle_rule(tmp_path: Path) -> None:
    from athanor.settings import Settings

    s = Settings.from_env(
        {
            "ATHANOR_HOME": str(tmp_path),
            "ATHANOR_IDLE_BELOW_PCT": "3",
            "ATHANOR_IDLE_MINUTES": "45",
            "ATHANOR_GPU_SAMPLE_CAP_MINUTES": "10",
        }
    )
    assert IdleRule.from_settings(s) == IdleRule(3.0, 45.0, 10.0)
    assert IdleRule.from_settings(Settings.from_env({"ATHANOR_HOME": str(tmp_path)})) == IdleRule(
        5.0, 30.0, None
    )


def test_an_hour_outside_the_machines_bill_keeps_its_team_and_has_no_price(warehouse) -> None:
    # i-8 is billed for hour 0 only (team cv, 1 GPU, $2) but sampled idle for 90 minutes: hour 0 is
    # 1 idle GPU-hour at $2; the half hour after is idle, cv's and p4d's, unpaid and unpriced.
    insert_rows(warehouse, "gpu_samples", samples("a", T0, [1.0] * 90, instance_id="i-8"))
    insert_rows(warehouse, "billing_facts", bill("i-8", 1, gpus=1, usd=2.0, team="cv"))
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    got = [
        (r.hour.hour, r.team, r.instance_type, r.idle_gpu_hours, r.idle_cost_usd) for r in rows.itertuples()
    ]
    assert got[0] == (0, "cv", "p4d.24xlarge", 1.0, 2.0)
    assert got[1][:4] == (1, "cv", "p4d.24xlarge", 0.5) and got[1][4] != got[1][4]  # NaN: no price
    figures = gpu_usage.summary(warehouse, rows)
    assert (figures["idle_gpu_hours"], figures["idle_cost_usd"]) == (1.5, 2.0)
    assert any(
        n.startswith("0.50 idle GPU-hours are in hours no USD billing line covers")
        for n in gpu_usage.notes(warehouse, rows, IdleRule())
    )


def test_a_sagemaker_job_billed_by_instance_is_one_machine_with_its_instances_bills(warehouse) -> None:
    # Job sm-2 ran an hour on two 1-GPU instances, billed by instance id ($3 an hour each) and
    # tagged job_id sm-2; CloudWatch names the job and algo-1, algo-2. The job is the machine:
    # 2 paid GPU-hours, both observed (none unobserved, none counted twice), $3 a GPU-hour.
    insert_rows(warehouse, "job_run_facts", [job("sm-2", T0, 1, gpus=1, source="sagemaker")])
    insert_rows(
        warehouse,
        "gpu_samples",
        [
            s
            for n in (1, 2)
            for s in samples(
                f"sm-2/algo-{n}:0", T0, [1.0] * 60, host=f"sm-2/algo-{n}", instance_id=None, job_name="sm-2"
            )
        ],
    )
    insert_rows(
        warehouse,
        "billing_facts",
        bill("i-a", 1, gpus=1, usd=3.0, job_id="sm-2") + bill("i-b", 1, gpus=1, usd=3.0, job_id="sm-2"),
    )
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    assert set(rows["machine"]) == {"sm-2"} and set(rows["resource_id"]) == {"sm-2"}
    assert (rows["paid_gpu_hours"].sum(), rows["unobserved_gpu_hours"].sum()) == (2.0, 0.0)
    assert gpu_usage.summary(warehouse, rows)["idle_cost_usd"] == 6.0


def test_a_job_using_a_fifth_of_its_gpu_is_sent_to_a_mig_slice(warehouse) -> None:
    # j2: an hour on one GPU ($2 an hour), busy at 20 % with 8 of 40 GiB: max(0.2, 0.2) x 7 = 1.4,
    # so 2 of 7 MIG slices; the estimate saves 5/7 of its $2 x 730 = $1,460 a month: $1,042.86.
    insert_rows(warehouse, "job_run_facts", [job("j2", T0, 1, gpus=1, model="tiny")])
    insert_rows(warehouse, "gpu_samples", samples("g0", T0, [20.0] * 60, instance_id="i-3", pod="j2-0"))
    insert_rows(warehouse, "billing_facts", bill("i-3", 1, gpus=1, usd=2.0))
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    (rec,) = gpu_usage.underused_recommendations(warehouse, rows, IdleRule())
    assert rec.scope == "nlp/p/tiny/tune"
    assert rec.action.startswith(
        "Run nlp/p/tiny/tune on smaller GPUs or 2/7 MIG slices: busy at 20 % utilisation"
    )
    assert (float(rec.current_monthly_cost), float(rec.estimated_monthly_savings_amount)) == (1460.0, 1042.86)


def test_a_sagemaker_instance_that_lost_its_job_tag_is_paid_with_its_job(warehouse) -> None:
    # Job sm-3 ran an hour on 2 one-GPU instances; the launch of i-d dropped the job_id tag (the
    # demo does so to a tenth of its instances), so only i-c's line names the job. CloudWatch
    # names the job and algo-1, algo-2: 2 GPU-hours observed, all busy. i-d's billed life is the
    # job's run to the minute, of its type and team, so it is the job's second instance: 2 paid
    # GPU-hours, busy <= paid (it was 1 paid for 2 busy, and i-d 1 unobserved beside it).
    run = job("sm-3", T0, 1, gpus=1, source="sagemaker") | {"instance_count": 2, "gpu_count": 2}
    insert_rows(warehouse, "job_run_facts", [run])
    insert_rows(
        warehouse,
        "gpu_samples",
        [
            s
            for n in (1, 2)
            for s in samples(
                f"sm-3/algo-{n}:0", T0, [90.0] * 60, host=f"sm-3/algo-{n}", instance_id=None, job_name="sm-3"
            )
        ],
    )
    insert_rows(
        warehouse,
        "billing_facts",
        bill("i-c", 1, gpus=1, usd=3.0, job_id="sm-3") + bill("i-d", 1, gpus=1, usd=3.0),
    )
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    assert set(rows["machine"]) == {"sm-3"}
    assert rows["paid_gpu_hours"].sum() == pytest.approx(2.0)
    assert rows["busy_gpu_hours"].sum() == pytest.approx(2.0)
    assert rows["unobserved_gpu_hours"].sum() == 0.0
    assert (rows["busy_gpu_hours"] <= rows["paid_gpu_hours"] + 1e-9).all()
    # Priced at the bill's $3 a GPU-hour: $6 for the two instance-hours.
    assert (rows["paid_gpu_hours"] * rows["usd_per_gpu_hour"]).sum() == pytest.approx(6.0)


@pytest.mark.slow
def test_fewer_gpus_and_the_gpu_plan_name_one_current_size_of_a_multi_node_class(warehouse) -> None:
    # Class nlp/p/llama/tune: j1 and j2 ran an hour on 4 x p4d.24xlarge (32 GPUs), j3 an hour on
    # 1 x p4d.24xlarge (8 GPUs): its current configuration is 4 x p4d.24xlarge (2 of 3 runs).
    # Telemetry covers every GPU of every node (ids as nvidia-smi's UUIDs: unique across nodes).
    # j1 and j2 use GPUs 0-3 of their first node (4 of 32),
    # j3 GPUs 0-1 (2 of 8): used share (4 + 4 + 2) / (32 + 32 + 8) = 10/72 = 14 %, usual size 32,
    # keep 2^ceil(log2(10/72 x 32 = 4.44)) = 8 GPUs.
    # Money: $16 a node-hour, an hour: paid $64 + $64 + $16 = $144, x 730 = $105,120 a month; kept
    # j1 and j2 at 8 of 32 GPUs ($16 each), j3 at its 8 ($16): $48 x 730 = $35,040; saving $70,080.
    llama = {"model": "llama"}
    runs, telemetry, bills = [], [], []
    for job_id, nodes, used in (("j1", 4, 4), ("j2", 4, 4), ("j3", 1, 2)):
        run = job(job_id, T0, 1, **llama)
        run.update(instance_count=nodes, gpu_count=8 * nodes, gpu_hours=8.0 * nodes)
        runs.append(run)
        for k in range(nodes):
            where = {
                "host": f"{job_id}-node-{k}",
                "instance_id": f"i-{job_id}-{k}",
                "pod": f"{job_id}-worker-{k}",
            }
            for gpu in range(8):
                busy = k == 0 and gpu < used
                telemetry += samples(f"GPU-{job_id}-{k}-{gpu}", T0, [80.0 if busy else 0.0] * 60, **where)
            bills += bill(f"i-{job_id}-{k}", 1)
    insert_rows(warehouse, "job_run_facts", runs)
    insert_rows(warehouse, "gpu_samples", telemetry)
    insert_rows(warehouse, "billing_facts", bills)

    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    (rec,) = gpu_usage.underused_recommendations(warehouse, rows, IdleRule())
    assert rec.action == (
        "Run nlp/p/llama/tune on 8 GPUs instead of 32 (4 x p4d.24xlarge, its current configuration): "
        "14 % of its GPU-hours are on GPUs its jobs use"
    )
    detail = json.loads(rec.detail)
    assert (detail["telemetry_job_gpus"], detail["current_gpus"]) == ([8, 32, 32], 32)
    assert (float(rec.current_monthly_cost), float(rec.estimated_monthly_savings_amount)) == (
        105120.0,
        70080.0,
    )

    # The GPU plan's step reads the same configuration: "... instead of 4 x p4d.24xlarge".
    (cls,) = gpu_plan.gpu_choice.class_inputs(gpu_plan.read_job_runs(warehouse))[0]
    from athanor.recommend.plan import _move_steps

    row = {
        "job_class": cls.job_class,
        "current_instance_type": cls.current_instance_type,
        "current_instance_count": cls.current_instance_count,
        "recommended_instance_type": "p5.48xlarge",
        "recommended_instance_count": 2,
        "monthly_savings_usd": 1.0,
        "counted": False,
        "scaling_basis": "fitted",
    }
    _, (step,) = _move_steps([row], {}, {})
    assert step.action.startswith("Run nlp/p/llama/tune on 2 x p5.48xlarge instead of 4 x p4d.24xlarge")
    assert "4 x p4d.24xlarge" in rec.action


@pytest.mark.slow
def test_fewer_gpus_sized_on_other_jobs_than_the_current_configuration_says_so(warehouse) -> None:
    # Class nlp/p/llama/tune: three 1-hour runs on 1 x p4d.24xlarge (8 GPUs: its current
    # configuration, 3 of 4 runs) without telemetry, one on 4 x p4d.24xlarge (32 GPUs) with it,
    # using GPUs 0-3 of its first node: 4/32 = 12 % used, keep 2^ceil(log2(4)) = 4 GPUs; saving
    # $64 x (1 - 4/32) x 730 = $40,880 a month.
    runs = [job(f"s{i}", T0 + timedelta(hours=2 + i), 1, model="llama") for i in range(3)]
    big = job("j1", T0, 1, model="llama")
    big.update(instance_count=4, gpu_count=32, gpu_hours=32.0)
    telemetry, bills = [], []
    for k in range(4):
        where = {"host": f"node-{k}", "instance_id": f"i-{k}", "pod": f"j1-worker-{k}"}
        for gpu in range(8):
            telemetry += samples(f"GPU-{k}-{gpu}", T0, [80.0 if k == 0 and gpu < 4 else 0.0] * 60, **where)
        bills += bill(f"i-{k}", 1)
    insert_rows(warehouse, "job_run_facts", [*runs, big])
    insert_rows(warehouse, "gpu_samples", telemetry)
    insert_rows(warehouse, "billing_facts", bills)
    rows = gpu_usage.hourly(warehouse, *WINDOW, IdleRule())
    (rec,) = gpu_usage.underused_recommendations(warehouse, rows, IdleRule())
    assert rec.action == (
        "Run nlp/p/llama/tune's jobs on at most 4 GPUs, not the 32 GPUs of the 1 job GPU telemetry saw: "
        "12 % of their GPU-hours are on GPUs they use. A measure of those jobs, not of its current "
        "configuration, 1 x p4d.24xlarge (8 GPUs, 3 of its 4 runs)"
    )
    assert (float(rec.current_monthly_cost), float(rec.estimated_monthly_savings_amount)) == (
        46720.0,
        40880.0,
    )
