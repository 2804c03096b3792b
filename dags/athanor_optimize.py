"""Model and recommend: durations, purchase mix, checkpoint lifecycle, report."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag

from athanor.settings import PRICING_ASSUMPTIONS, Settings
from athanor_common import DEFAULT_ARGS, WAREHOUSE_ASSET, add_stage_tasks

# One form field per pricing assumption: empty keeps the deployment's setting for this run.
PRICING_PARAMS = {
    name: Param(
        None,
        type=["null", "number"],
        minimum=low,
        maximum=high,
        title=name.replace("_", " ").capitalize(),
        description=f"{meaning} Empty: the setting {variable} "
        f"(built-in default {Settings.__dataclass_fields__[name].default:g}).",
    )
    for name, (variable, low, high, meaning) in PRICING_ASSUMPTIONS.items()
}

DOC = """
### Athanor optimize
Runs whenever the ingest has updated the warehouse, for the day the ingest's asset event
names (`extra.as_of`), from the data known on that day. Fits task-duration distributions
per workload group, builds hourly GPU demand per pool, recommends commitments, spot
share and checkpoint-lifecycle rules (each with its monthly saving), backtests them,
and publishes the report to `reports/<date>/` plus a read-only warehouse snapshot for
analysts. `reports/latest/` only moves forward: a run for an earlier day (a backfill)
leaves it on the later one. `apply_lifecycle` stays a dry run unless the form says otherwise.
The pricing assumptions (reservation and savings-plan discounts, deadline slack, reservation
utilisation floor) default to the settings; the form overrides them for one run, and every
recommendation stores the values it used.
"""


@dag(
    dag_id="athanor_optimize",
    schedule=[WAREHOUSE_ASSET],
    start_date=pendulum.datetime(2026, 9, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["athanor", "recommend", "report"],
    doc_md=DOC,
    params={
        "as_of": Param(
            None,
            type=["null", "string"],
            format="date",
            title="As of (day)",
            description="Day the report is for (default: the day the triggering asset event names, "
            "else the latest day in the warehouse).",
        ),
        "apply_lifecycle": Param(
            False,
            type="boolean",
            title="Apply lifecycle rules",
            description="Put the recommended rules on the bucket (default: dry run).",
        ),
        **PRICING_PARAMS,
    },
)
def athanor_optimize():
    add_stage_tasks("athanor_optimize")


athanor_optimize()
