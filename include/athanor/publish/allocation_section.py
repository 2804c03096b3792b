"""The report's "Cost by team and job (shared GPUs)" section: the period's billed GPU machine-hours
split over the jobs and pods that held their GPUs, by GPU-seconds, the rest idle (issue 32).

Every amount is `allocation.allocation_summary` over the report's period, the function
`athanor allocation --since ... --until ... --format json` prints, so the page and the command
show the same cents; the unmapped node names are `allocation.unmapped_nodes`, the list the
nightly allocate_gpus stage logs. Nothing here sums gpu_allocation_hourly again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import duckdb
from markupsafe import Markup

from athanor.publish import charts
from athanor.recommend import allocation

TOP_JOBS = 15  # jobs listed by cost; the rest are counted
UNMAPPED_SHOWN = 20  # node names listed; the rest are counted
NO_TEAM = "no team"
KIND_LABELS = {
    "tagged": "Jobs the bill tags (job_id tag)",
    "team_tagged": "Hours the bill tags with a team only",
    "scheduler_jobs": "Scheduler jobs (Slurm, generic, SageMaker), by GPU-seconds",
    "pods": "Kubernetes pods (pod list, DCGM labels), by GPU-seconds",
    "idle": "Idle: paid GPU-seconds no job held",
    "unattributed": "Nobody's: no job, no team tag, no cluster node",
}


@dataclass(frozen=True)
class Allocation:
    start: date
    end: date  # excluded
    machine_hours: int  # billed GPU machine-hours of the period in gpu_allocation_hourly
    summary: dict[str, Any]  # allocation.allocation_summary: what `athanor allocation` prints
    unmapped_nodes: list[str] = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        return self.machine_hours > 0

    @property
    def command(self) -> str:
        """The command printing the same figures."""
        return f"athanor allocation --since {self.start.isoformat()} --until {self.end.isoformat()} --format json"

    @property
    def teams(self) -> list[dict[str, Any]]:
        """The teams, the costliest first, "no team" last; each with its total."""
        rows = [
            {**t, "label": t["team"] or NO_TEAM, "total_usd": round(t["allocated_usd"] + t["idle_usd"], 2)}
            for t in self.summary["teams"]
        ]
        return sorted(rows, key=lambda t: (t["team"] is None, -t["total_usd"], t["label"]))

    @property
    def top_jobs(self) -> list[dict[str, Any]]:
        return self.summary["jobs"][:TOP_JOBS]

    @property
    def more_jobs(self) -> int:
        return max(0, len(self.summary["jobs"]) - TOP_JOBS)

    @property
    def kinds(self) -> list[tuple[str, float]]:
        """(label, USD) of every kind with a cost, in KIND_LABELS order."""
        return [(KIND_LABELS.get(k, k), usd) for k, usd in self.summary["kinds"].items() if usd]

    @property
    def unmapped_shown(self) -> list[str]:
        return self.unmapped_nodes[:UNMAPPED_SHOWN]

    def chart(self) -> Markup | None:
        teams = self.teams
        if not teams:
            return None
        return charts.stacked_bars(
            "chart-gpu-allocation",
            [t["label"] for t in teams],
            {
                "allocated (jobs, pods, tags)": [t["allocated_usd"] for t in teams],
                "idle": [t["idle_usd"] for t in teams],
            },
            title="GPU machine-hours' cost by team: allocated and idle",
            y_format=lambda v: f"${v:,.0f}",
            x_title="Team (a job's, or the node owner's for idle)",
            y_title="Cost (USD)",
        )


def load_allocation(con: duckdb.DuckDBPyConnection, start: date, end: date) -> Allocation:
    """The section's figures for [start, end) (UTC days): `athanor allocation` over those days."""
    since, until = (datetime.combine(d, datetime.min.time()) for d in (start, end))
    hours = con.execute(
        """select count(distinct (resource_id, hour)) from gpu_allocation_hourly
           where hour >= ? and hour < ?""",
        [since, until],
    ).fetchone()[0]
    return Allocation(
        start=start,
        end=end,
        machine_hours=int(hours),
        summary=allocation.allocation_summary(con, since, until),
        unmapped_nodes=allocation.unmapped_nodes(con) if hours else [],
    )
