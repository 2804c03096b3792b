"""SageMaker training jobs by name in the allocation (issue 32, item 2).

The bill: a CUR 2.0 export whose SageMaker lines name their training job in the resource id.

| line | resource id | hours | cost an hour | the logs know the job? |
|---|---|---|---|---|
| ml.p4d.24xlarge | training-job/llm-ft-7 | 00:00-02:00 | $37.688 | yes: team llm |
| ml.p4d.24xlarge | training-job/adhoc-3 (tag team=recsys) | 00:00-01:00 | $10.00 | no |
| ml.g5.xlarge | endpoint/chat (no tags) | 00:00-01:00 | $1.41 | not a training job |

llm-ft-7's cost: 2 x $37.688 = $75.376, $75.38 to the cent; 2 hours x 8 GPUs = 16 GPU-hours;
team llm from its DescribeTrainingJob tags, none idle (SageMaker bills its instances for the job
alone). adhoc-3 keeps its bill's team tag ($10.00, recsys's); the endpoint nobody's ($1.41).
Billed 75.376 + 10.00 + 1.41 = 86.786 -> $86.79; allocated 75.38 + 10.00 = 85.38; idle 0;
nobody's 1.41.
"""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.cli import main
from athanor.ingest.billing import ingest_billing
from athanor.ingest.deliveries import ingest_job_file
from athanor.recommend.allocation import allocate_gpus, allocation_summary

ARN = "arn:aws:sagemaker:us-east-1:123456789012:"
ROW = {
    "bill_payer_account_id": "123456789012",
    "bill_billing_period_start_date": "2026-11-01T00:00:00Z",
    "bill_billing_period_end_date": "2026-12-01T00:00:00Z",
    "line_item_usage_start_date": "2026-11-03T00:00:00Z",
    "line_item_usage_end_date": "2026-11-03T01:00:00Z",
    "line_item_currency_code": "USD",
    "line_item_line_item_type": "Usage",
    "line_item_product_code": "AmazonSageMaker",
    "line_item_usage_type": "USE1-Train:ml.p4d.24xlarge",
    "line_item_usage_amount": "1",
    "line_item_unblended_cost": "37.688",
    "line_item_resource_id": ARN + "training-job/llm-ft-7",
    "pricing_public_on_demand_rate": "37.688",
    "pricing_unit": "Hrs",
    "product_instance_type": "ml.p4d.24xlarge",
    "product": '{"region": "us-east-1", "product_family": "ML Instance"}',
    "resource_tags": "{}",
    "reservation_reservation_a_r_n": "",
    "savings_plan_savings_plan_a_r_n": "",
}
SECOND_HOUR = {
    "line_item_usage_start_date": "2026-11-03T01:00:00Z",
    "line_item_usage_end_date": "2026-11-03T02:00:00Z",
}

JOB = {
    "TrainingJobName": "llm-ft-7",
    "TrainingJobStatus": "Completed",
    "SecondaryStatus": "Completed",
    "CreationTime": "2026-11-03T00:00:00Z",
    "TrainingStartTime": "2026-11-03T00:04:00Z",
    "TrainingEndTime": "2026-11-03T01:58:00Z",
    "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 1},
    "Tags": [{"Key": "team", "Value": "llm"}],
}


def _cur(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _load(warehouse, tmp_path: Path, job: dict) -> None:
    rows = [
        ROW,
        {**ROW, **SECOND_HOUR},
        {**ROW, "line_item_resource_id": ARN + "training-job/adhoc-3", "line_item_unblended_cost": "10.00",
         "resource_tags": '{"user_team": "recsys"}'},
        {**ROW, "line_item_resource_id": ARN + "endpoint/chat", "line_item_usage_type": "USE1-Host:ml.g5.xlarge",
         "product_instance_type": "ml.g5.xlarge", "line_item_unblended_cost": "1.41",
         "pricing_public_on_demand_rate": "1.41"},
    ]  # fmt: skip
    ingest_billing(warehouse, [_cur(tmp_path / "cur.csv", rows)])
    log = tmp_path / "sagemaker-jobs.jsonl"
    log.write_text(json.dumps(job) + "\n")
    assert ingest_job_file(warehouse, log).startswith("sagemaker-jobs.jsonl: sagemaker job log, 1 job")
    allocate_gpus(warehouse, "r1")


@pytest.fixture
def sagemaker(warehouse, tmp_path: Path):
    _load(warehouse, tmp_path, JOB)
    return warehouse


@pytest.mark.slow
def test_a_training_jobs_instance_hours_are_its_cost_and_its_teams(sagemaker) -> None:
    rows = sagemaker.execute(
        """select hour, kind, job_id, job_source, team, gpu_seconds, cost_cents_usd
           from gpu_allocation_hourly where resource_id = 'llm-ft-7' order by hour"""
    ).fetchall()
    assert [r[1:] for r in rows] == [
        ("job", "llm-ft-7", "sagemaker", "llm", 8 * 3600.0, Decimal("37.69")),
        ("job", "llm-ft-7", "sagemaker", "llm", 8 * 3600.0, Decimal("37.69")),
    ]
    summary = allocation_summary(sagemaker)
    assert summary["jobs"] == [{"job_id": "llm-ft-7", "team": "llm", "gpu_hours": 16.0, "cost_usd": 75.38}]
    assert (summary["billed_usd"], summary["allocated_usd"], summary["idle_usd"]) == (86.79, 85.38, 0.0)
    assert summary["unattributed_usd"] == 1.41
    assert summary["teams"] == [
        {"team": "llm", "allocated_usd": 75.38, "idle_usd": 0.0},
        {"team": "recsys", "allocated_usd": 10.0, "idle_usd": 0.0},
    ]
    assert summary["kinds"]["scheduler_jobs"] == 75.38
    job = sagemaker.execute(
        "select team, gpu_hours, cost_usd from job_allocated_costs where job_source = 'sagemaker'"
    ).fetchall()
    assert [(t, h, float(c)) for t, h, c in job] == [("llm", 16.0, 75.376)]


@pytest.mark.slow
def test_a_training_job_no_log_names_and_an_endpoint_keep_the_bills_tags(sagemaker) -> None:
    rows = sagemaker.execute(
        """select resource_id, kind, job_id, team, cost_cents_usd from gpu_allocation_hourly
           where resource_id <> 'llm-ft-7' order by resource_id"""
    ).fetchall()
    assert [(r, k, j, t, float(c)) for r, k, j, t, c in rows] == [
        ("adhoc-3", "team_tagged", None, "recsys", 10.00),
        ("chat", "unattributed", None, None, 1.41),
    ]


@pytest.mark.slow
def test_the_allocation_command_lists_the_training_job(settings, sagemaker, capsys) -> None:
    sagemaker.close()
    path = str(settings.warehouse)
    assert main(["allocation", "--warehouse", path, "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["jobs"] == [{"job_id": "llm-ft-7", "team": "llm", "gpu_hours": 16.0, "cost_usd": 75.38}]
    assert printed["allocated_usd"] + printed["idle_usd"] + printed["unattributed_usd"] == pytest.approx(
        printed["billed_usd"]
    )


@pytest.mark.slow
def test_the_arns_lower_case_name_finds_the_job_as_its_log_spells_it(warehouse, tmp_path: Path) -> None:
    # TrainingJobArn spells the name in lower case; the job is the log's, under the log's spelling.
    _load(warehouse, tmp_path, {**JOB, "TrainingJobName": "LLM-ft-7"})
    jobs = allocation_summary(warehouse)["jobs"]
    assert jobs == [{"job_id": "LLM-ft-7", "team": "llm", "gpu_hours": 16.0, "cost_usd": 75.38}]
