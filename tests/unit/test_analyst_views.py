"""What analysts read: every job in job_run_costs (with why it has no cost), every FOCUS 1.2 column
a source carries in focus_charges, cost anomalies on usage lines only, the latest recommendations
by run time."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.ingest.billing import ingest_billing
from athanor.ingest.daily import cover_every_job_line
from athanor.reference import focus_columns
from athanor.warehouse.docs import EXAMPLES


def _billing_row(day: int, job_id: str | None) -> str:
    tags = "map(['job_id'], ['" + job_id + "'])" if job_id else "map()"
    return f"""('L', 'f.csv', {day}, 'focus', 'a', 'USD', '2026-11-01', '2026-12-01',
               timestamp '2026-11-01' + to_days({day - 1}), timestamp '2026-11-01' + to_days({day}), 'Usage',
               21.96, 21.96, {tags}, 'p4d.24xlarge', 1)"""


def test_job_run_costs_keeps_every_job_and_says_why_it_has_no_cost(warehouse) -> None:
    # Billing covers 2026-11-01 .. 11-04 (exclusive); two days are tagged to job A.
    warehouse.execute(
        """insert into billing_facts (load_id, source_file, source_row, source_format, billing_account_id,
               billing_currency, billing_period_start, billing_period_end, charge_period_start,
               charge_period_end, charge_category, billed_cost, effective_cost, tags, x_instance_type,
               x_usage_hours) values """
        + ", ".join([_billing_row(1, "A"), _billing_row(2, "A"), _billing_row(3, None)])
    )
    # Lines written outside a load: summed by job as the night's validate stage sums them.
    assert cover_every_job_line(warehouse) == 3  # day x job tag: A on the 1st and 2nd, none on the 3rd
    jobs = [  # job, start, end
        ("A", "'2026-11-01 00:00'", "'2026-11-03 00:00'"),  # billed: two tagged rows
        ("B", "'2026-11-02 00:00'", "'2026-11-02 05:00'"),  # ran while billed, no row names it
        ("C", "null", "null"),  # cancelled before it started
        ("D", "'2026-12-05 00:00'", "'2026-12-05 01:00'"),  # after the last billed hour
        ("E", "'2026-10-01 00:00'", "'2026-10-02 00:00'"),  # before the first billed hour
    ]
    for i, (job, start, end) in enumerate(jobs):
        warehouse.execute(
            f"""insert into job_run_facts (load_id, source_file, source_row, source, job_id, start_time,
                    end_time, state, instance_type, instance_count, gpus_per_instance, censored, gpu_count)
                values ('J', 'jobs.csv', {i}, 'generic', '{job}', {start}, {end}, 'completed', 'p4d.24xlarge',
                        1, 8, false, 8)"""
        )
    rows = warehouse.execute(
        "select job_id, cost_status, effective_cost, billing_rows from job_run_costs order by job_id"
    ).fetchall()
    assert rows == [
        ("A", "billed", Decimal("43.92"), 2),  # 2 x 21.96
        ("B", "no billing match", None, None),
        ("C", "never started", None, None),
        ("D", "outside the billed period", None, None),
        ("E", "outside the billed period", None, None),
    ]
    # No job is lost: one row per job here (one billing currency).
    assert warehouse.execute("select count(*) from job_run_costs").fetchone()[0] == 5


FOCUS_12_EXTRAS = {
    "InvoiceId": "INV-2026-11",
    "BillingAccountType": "Billing Account",
    "SubAccountType": "Linked Account",
    "ServiceSubcategory": "Virtual Machines",
    "SkuMeter": "Compute Usage",
    "SkuPriceDetails": '{"CoreCount": 96}',
    "PricingCurrency": "eur",
    "PricingCurrencyContractedUnitPrice": "9.20",
    "PricingCurrencyEffectiveCost": "9.20",
    "PricingCurrencyListUnitPrice": "9.50",
    "CapacityReservationId": "cr-0123",
    "CapacityReservationStatus": "used",
    "x_ServiceCode": "AmazonEC2",
}


def _focus_rows(
    month: str, days: int, cost: str = "10.00", extra: dict[str, str] | None = None
) -> list[dict]:
    year, mm = (int(p) for p in month.split("-"))
    end = f"{year + mm // 12}-{mm % 12 + 1:02d}-01T00:00:00Z"
    rows = []
    for day in range(1, days + 1):
        rows.append(
            {
                "BillingAccountId": "acct-1",
                "BillingCurrency": "USD",
                "BillingPeriodStart": f"{month}-01T00:00:00Z",
                "BillingPeriodEnd": end,
                "ChargePeriodStart": f"{month}-{day:02d}T00:00:00Z",
                "ChargePeriodEnd": f"{month}-{day + 1:02d}T00:00:00Z" if day < days else end,
                "ChargeCategory": "Usage",
                "ChargeFrequency": "Usage-Based",
                "PricingCategory": "Standard",
                "BilledCost": cost,
                "EffectiveCost": cost,
                "ResourceId": f"i-{day}",
                "ServiceName": "Amazon Elastic Compute Cloud",
                "ProviderName": "AWS",
                **(extra or {}),
            }
        )
    return rows


def _write(path: Path, rows: list[dict]) -> Path:
    columns = list(dict.fromkeys(c for row in rows for c in row))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_focus_charges_keeps_every_focus_column_a_source_provides(warehouse, tmp_path) -> None:
    columns = [
        name
        for name, _ in warehouse.execute("select column_name, 1 from (describe focus_charges)").fetchall()
    ]
    assert set(focus_columns()) <= set(columns), sorted(set(focus_columns()) - set(columns))
    ingest_billing(
        warehouse, [_write(tmp_path / "focus.csv", _focus_rows("2026-11", 2, extra=FOCUS_12_EXTRAS))]
    )
    row = warehouse.execute(
        """select InvoiceId, BillingAccountType, SubAccountType, ServiceSubcategory, SkuMeter, SkuPriceDetails,
                  PricingCurrency, PricingCurrencyContractedUnitPrice, PricingCurrencyEffectiveCost,
                  PricingCurrencyListUnitPrice, CapacityReservationId, CapacityReservationStatus,
                  x_ProviderColumns['x_ServiceCode']
           from focus_charges order by ChargePeriodStart limit 1"""
    ).fetchone()
    assert row == (
        "INV-2026-11",
        "Billing Account",
        "Linked Account",
        "Virtual Machines",
        "Compute Usage",
        '{"CoreCount": 96}',
        "EUR",
        Decimal("9.2"),
        Decimal("9.2"),
        Decimal("9.5"),
        "cr-0123",
        "Used",
        "AmazonEC2",
    )


@pytest.mark.parametrize(
    ("finished", "expected"),
    [
        # The same day run twice: the manual re-run at 09:10 is the latest, although its id sorts first.
        (
            {"scheduled__2026-11-30T02:30:00+00:00": "02:45", "manual__2026-11-30T09:00:00+00:00": "09:10"},
            "manual",
        ),
        (
            {"scheduled__2026-11-30T02:30:00+00:00": "09:45", "manual__2026-11-30T09:00:00+00:00": "09:10"},
            "scheduled",
        ),
    ],
)
def test_latest_recommendations_example_sorts_runs_by_time(warehouse, finished, expected) -> None:
    example = next(e for e in EXAMPLES if e.title == "The latest recommendations, biggest saving first")
    for run_id, at in finished.items():
        warehouse.execute(
            """insert into recommendations (run_id, as_of, kind, scope, action, estimated_monthly_savings_amount)
               values (?, date '2026-11-30', 'mix', 'fleet', ?, 1)""",
            [run_id, f"from {run_id.split('__')[0]}"],
        )
        warehouse.execute(
            """insert into pipeline_runs (run_id, stage, as_of, started_at, finished_at, status)
               values (?, 'recommend_mix', date '2026-11-30', timestamp '2026-11-30 00:00', ?, 'success')""",
            [run_id, f"2026-11-30 {at}"],
        )
    # A backfill of an earlier day that ran last of all is not "the latest recommendations".
    warehouse.execute(
        """insert into recommendations (run_id, as_of, kind, scope, action)
           values ('backfill__2026-11-29', date '2026-11-29', 'mix', 'fleet', 'from backfill')"""
    )
    warehouse.execute(
        """insert into pipeline_runs (run_id, stage, as_of, started_at, finished_at, status)
           values ('backfill__2026-11-29', 'recommend_mix', date '2026-11-29', timestamp '2026-11-30 10:00',
                   timestamp '2026-11-30 10:05', 'success')"""
    )
    assert [row[2] for row in warehouse.execute(example.sql).fetchall()] == [f"from {expected}"]


# Tables with a run_id that are not a run's outputs: ledgers, a cache, a training run's id, and
# gpu_usage_hourly, whose hours belong to the last run that measured them (already the latest).
# Ledgers, caches, and tables each run rewrites whole (already the latest).
NOT_PER_RUN = {
    "pipeline_runs",
    "duration_fit_cache",
    "lake_snapshots",
    "storage_objects",
    "gpu_usage_hourly",
    "gpu_allocation_hourly",
}


def test_every_per_run_table_has_a_latest_view_and_as_of_is_the_runs_day() -> None:
    from athanor.warehouse.docs import schema_catalog

    relations = {r.name: r for r in schema_catalog()}
    per_run = {
        name
        for name, r in relations.items()
        if r.kind == "table" and "run_id" in {c.name for c in r.columns} and name not in NOT_PER_RUN
    }
    assert {"recommendations", "spend_forecasts", "budget_status", "gpu_plan", "dq_results"} <= per_run
    assert sorted(t for t in per_run if f"latest_{t}" not in relations) == []
    for table in per_run:
        view = relations[f"latest_{table}"]
        assert view.kind == "view" and view.same_as == table
        assert [c.name for c in view.columns] == [c.name for c in relations[table].columns]
    # as_of is the day the run was for in every table (spend_forecasts' once read otherwise).
    meanings = {name: c.comment for name in per_run for c in relations[name].columns if c.name == "as_of"}
    assert meanings and all(m.startswith("The day the run was for") for m in meanings.values()), meanings


def _run(warehouse, run_id: str, day: str, finished: str) -> None:
    warehouse.execute(
        """insert into pipeline_runs (run_id, stage, as_of, started_at, finished_at, status)
           values (?, 'watch_spend', ?, ?, ?, 'success')""",
        [run_id, day, finished, finished],
    )


def test_latest_views_show_the_newest_days_last_run_only(warehouse) -> None:
    # Three runs forecast: the night of the 30th (02:45), its manual re-run (09:10), and a
    # backfill of the 29th that ran last of all (10:05). The latest is the re-run of the 30th.
    for run_id, day, finished, cost in (
        ("scheduled__2026-11-30", "2026-11-30", "2026-12-01 02:45", 100),
        ("manual__2026-11-30", "2026-11-30", "2026-12-01 09:10", 110),
        ("backfill__2026-11-29", "2026-11-29", "2026-12-01 10:05", 90),
    ):
        _run(warehouse, run_id, day, finished)
        warehouse.execute(
            """insert into spend_forecasts (run_id, as_of, scope_kind, scope_value, currency, period, day,
                   cost, lower_cost, upper_cost, actual_cost)
               values (?, ?, 'total', 'all', 'USD', 'day', date '2026-12-01', ?, 0, 0, 0)""",
            [run_id, day, cost],
        )
    assert warehouse.execute("select run_id, cost from latest_spend_forecasts").fetchall() == [
        ("manual__2026-11-30", Decimal("110.00"))
    ]
    # A table the re-run wrote nothing to stays on the run before that did.
    warehouse.execute(
        """insert into budget_status (run_id, as_of, budget, scope_kind, scope_value, currency, month, amount,
               actual_cost, threshold_basis, threshold_pct, breached, alert_key)
           values ('scheduled__2026-11-30', date '2026-11-30', 'fleet', 'total', 'all', 'USD',
                   date '2026-11-01', 500000, 382000, 'actual', 80, false, 'k')"""
    )
    assert warehouse.execute("select run_id from latest_budget_status").fetchall() == [
        ("scheduled__2026-11-30",)
    ]
    # Checks: the run that checked a batch last, whatever day it was for.
    for run_id, at in (("night", "2026-12-01 02:40"), ("backfill", "2026-12-01 10:00")):
        warehouse.execute(
            """insert into dq_results (run_id, suite, table_name, rule, severity, success, checked_at)
               values (?, 'billing_facts', 'delivery', 'not_null', 'error', true, ?)""",
            [run_id, at],
        )
    assert warehouse.execute("select run_id from latest_dq_results").fetchall() == [("backfill",)]
