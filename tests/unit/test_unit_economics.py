"""Unit economics per model and class, per week (issue 32, item 4): cost per run, per GPU-hour used
and per million samples, from allocated (shared cluster) and tagged (job_id) job costs.

Hand-computed, week of Monday 2026-03-02, model bert, class nlp/p/bert/tune:
- j1 (generic log): two $16 instance-hours tagged job_id=j1 -> $32; 8 GPUs x 2 h = 16 GPU-hours;
  1,000 samples/s x 7,200 s = 7.2 M samples;
- j2 (Slurm): allocated $12.50 on a shared node; 4 GPUs x 1 h = 4 GPU-hours; no throughput;
- j3: no bill line and no allocation: a run without a cost;
- j4: still running: left out.
Row: 3 runs, 2 costed, $44.50, $22.25 a run, 44.50 / 20 = $2.225 a GPU-hour, 32 / 7.2 = $4.4444
per million samples. Week of 2026-03-09: j5 tagged $10 over 8 GPU-hours, 500/s x 3,600 s = 1.8 M
samples -> $1.25 a GPU-hour, $5.5556 per million samples.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest

from athanor.ingest.daily import cover_every_job_line
from athanor.warehouse import insert_rows
from tests.support.rows import hourly_usage_lines, job_run

MON = datetime(2026, 3, 2, 8)


def run(
    job_id: str, start: datetime, hours: float, gpus: int, *, source="generic", state="completed", sps=None
):
    return job_run(job_id, start, hours, gpus, source=source, state=state, samples_per_second=sps)


def line(job_id: str, start: datetime, usd: str) -> dict:
    (one,) = hourly_usage_lines(
        "i-1", start, 1, cost=Decimal(usd), gpus=8, instance_type="p4d.24xlarge",
        billing_period=(datetime(2026, 3, 1), datetime(2026, 4, 1)), tags={"team": "nlp", "job_id": job_id},
    )  # fmt: skip
    return one


def allocation(job_id: str, start: datetime, usd: str) -> dict:
    return {
        "hour": start,
        "day": start.date(),
        "period_end": start + timedelta(hours=1),
        "resource_id": "i-9",
        "node": "node-1",
        "instance_type": "p4d.24xlarge",
        "pool": "p4d.24xlarge",
        "kind": "job",
        "job_id": job_id,
        "job_source": "slurm",
        "team": "nlp",
        "gpus": 8,
        "billed_gpu_seconds": 28800.0,
        "gpu_seconds": 14400.0,
        "hour_cost_usd": Decimal("25"),
        "cost_usd": Decimal(usd),
        "cost_cents_usd": Decimal(usd),
        "run_id": "r1",
    }


@pytest.fixture
def economics(warehouse):
    insert_rows(
        warehouse,
        "job_run_facts",
        [
            run("j1", MON, 2, 8, sps=1000.0),
            run("j2", MON, 1, 4, source="slurm"),
            run("j3", MON, 1, 8),
            run("j4", MON, 5, 8, state="running"),
            run("j5", MON + timedelta(days=7), 1, 8, sps=500.0),
        ],
    )
    insert_rows(
        warehouse,
        "billing_facts",
        [
            line("j1", MON, "16"),
            line("j1", MON + timedelta(hours=1), "16"),
            line("j5", MON + timedelta(days=7), "10"),
        ],
    )
    cover_every_job_line(warehouse)  # lines written outside a load: summed as the night's validate does
    insert_rows(warehouse, "gpu_allocation_hourly", [allocation("j2", MON, "12.50")])
    return warehouse


def test_unit_economics_per_week_model_and_class_by_hand(economics) -> None:
    got = economics.execute(
        "select week, model, job_class, runs, costed_runs, allocated_runs, tagged_runs, cost_usd, gpu_hours, "
        "samples, usd_per_run, usd_per_gpu_hour, usd_per_million_samples from unit_economics_weekly order by week"
    ).fetchall()
    assert got == [
        (
            date(2026, 3, 2),
            "bert",
            "nlp/p/bert/tune",
            3,
            2,
            1,
            1,
            Decimal("44.5"),
            20.0,
            7.2e6,
            Decimal("22.2500"),
            Decimal("2.2250"),
            Decimal("4.4444"),
        ),
        (
            date(2026, 3, 9),
            "bert",
            "nlp/p/bert/tune",
            1,
            1,
            0,
            1,
            Decimal("10"),
            8.0,
            1.8e6,
            Decimal("10.0000"),
            Decimal("1.2500"),
            Decimal("5.5556"),
        ),
    ]


def test_the_report_reads_the_trend_per_model(economics) -> None:
    from athanor.publish.unit_economics_section import load_unit_economics

    section = load_unit_economics(economics, date(2026, 3, 1), date(2026, 3, 31))
    assert section.weeks == [date(2026, 3, 2), date(2026, 3, 9)]
    # A week under way is left out: up to Tuesday 2026-03-10, the week of 2026-03-09 is not whole.
    assert load_unit_economics(economics, date(2026, 3, 1), date(2026, 3, 10)).weeks == [date(2026, 3, 2)]
    assert section.trend("usd_per_gpu_hour") == {"bert": [pytest.approx(2.225), pytest.approx(1.25)]}
    assert section.trend("usd_per_million_samples") == {
        "bert": [pytest.approx(32 / 7.2), pytest.approx(10 / 1.8)]
    }
    (model,) = section.models
    assert (model["model"], model["runs"], model["costed_runs"]) == ("bert", 4, 3)
    assert model["usd_per_run"] == pytest.approx(54.5 / 3)
    assert model["usd_per_million_samples"] == pytest.approx(42 / 9.0)
    # The chart: each model's first week = 100; bert's million samples cost 25 % more in week 2.
    assert section.indexed("usd_per_million_samples") == {"bert": [100.0, pytest.approx(125.0)]}
    assert section.chart() is not None


def test_the_report_page_has_the_section_and_its_chart(economics) -> None:
    from athanor.publish import load_report_data
    from athanor.publish.render import render_html

    html = render_html(load_report_data(economics, date(2026, 3, 31), "run-1"))
    assert 'id="unit-economics"' in html and 'id="chart-unit-economics"' in html
    # bert over the two weeks: $54.50 over 3 priced runs, $42 over 9 M samples.
    assert '<td class="num" data-sort=' in html and "$18.17" in html and "$4.67" in html
