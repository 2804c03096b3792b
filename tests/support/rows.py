"""Fact rows the unit tests insert by hand: a machine's hourly usage lines, one job run.

One builder each, so a column the warehouse gains is added in one place; each test module keeps
its own short wrapper with the defaults its hand-computed figures assume.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any


def hourly_usage_lines(
    resource_id: str,
    start: datetime,
    hours: int,
    *,
    cost: float | Decimal,
    gpus: int,
    instance_type: str,
    billing_period: tuple[datetime, datetime],
    usage_hours: float = 1.0,
    tags: dict[str, str] | None = None,
    **columns: Any,
) -> list[dict]:
    """One FOCUS USD usage line per hour of one machine, billed and effective cost `cost` each."""
    return [
        {
            "load_id": "B1",
            "source_file": "bill.csv",
            "source_row": h + 1,
            "source_format": "focus",
            "billing_account_id": "111",
            "billing_currency": "USD",
            "billing_period_start": billing_period[0],
            "billing_period_end": billing_period[1],
            "charge_period_start": start + timedelta(hours=h),
            "charge_period_end": start + timedelta(hours=h + 1),
            "charge_category": "Usage",
            "billed_cost": cost,
            "effective_cost": cost,
            "resource_id": resource_id,
            "x_gpu_count": gpus,
            "x_usage_hours": usage_hours,
            "x_instance_type": instance_type,
            "tags": tags or {},
            **columns,
        }
        for h in range(hours)
    ]


def job_run(
    job_id: str,
    start: datetime,
    hours: float,
    gpus: int,
    *,
    source: str = "generic",
    state: str = "completed",
    team: str = "nlp",
    project: str = "p",
    model: str = "bert",
    phase: str = "tune",
    **columns: Any,
) -> dict:
    """A job_run_facts row: one p4d.24xlarge on demand for `hours` (censored while running)."""
    return {
        "load_id": "J1",
        "source_file": "jobs.csv",
        "source_row": 1,
        "source": source,
        "job_id": job_id,
        "submit_time": start,
        "start_time": start,
        "end_time": start + timedelta(hours=hours),
        "state": state,
        "instance_type": "p4d.24xlarge",
        "instance_count": 1,
        "gpus_per_instance": gpus,
        "pricing_model": "on_demand",
        "team": team,
        "project": project,
        "model": model,
        "phase": phase,
        "duration_s": hours * 3600,
        "censored": state == "running",
        "gpu_count": gpus,
        "gpu_hours": hours * gpus,
        **columns,
    }
