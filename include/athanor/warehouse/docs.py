"""docs/warehouse.md, generated from the DuckDB catalog comments (sql/schema/090_comments.sql).

python -m athanor.warehouse.docs            # rewrite docs/warehouse.md
python -m athanor.warehouse.docs --check    # exit 1 when it is out of date with the schema
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from athanor.settings import PROJECT_ROOT
from athanor.warehouse.migrations import migrate

DOC_PATH = PROJECT_ROOT / "docs" / "warehouse.md"


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str
    comment: str | None


@dataclass(frozen=True)
class Relation:
    name: str
    kind: str  # table | view
    comment: str | None
    columns: tuple[Column, ...]
    same_as: str | None = None  # a latest_<table> view: the columns of <table>, meanings and all


@dataclass(frozen=True)
class Example:
    title: str
    sql: str


# Answers to the questions analysts ask most; tests/unit/test_docs.py runs each one.
EXAMPLES: tuple[Example, ...] = (
    Example(
        "Cost by team and week",
        """select
    cast(date_trunc('week', ChargePeriodStart) as date) as week,
    coalesce(Tags['team'], '(untagged)') as team,
    sum(EffectiveCost) as cost_usd
from focus_charges
group by all
order by week, cost_usd desc""",
    ),
    Example(
        "Spot share of instance-hours and cost, per week",
        """select
    cast(date_trunc('week', ChargePeriodStart) as date) as week,
    coalesce(sum(x_UsageHours) filter (where PricingCategory = 'Dynamic'), 0) / sum(x_UsageHours) as spot_share_of_hours,
    coalesce(sum(EffectiveCost) filter (where PricingCategory = 'Dynamic'), 0) / sum(EffectiveCost) as spot_share_of_cost
from focus_charges
where ChargeCategory = 'Usage' and x_UsageHours > 0
group by all
order by week""",
    ),
    Example(
        "Commitment utilisation per commitment and month",
        """select
    CommitmentDiscountId,
    any_value(CommitmentDiscountName) as name,
    cast(date_trunc('month', ChargePeriodStart) as date) as month,
    sum(EffectiveCost) filter (where CommitmentDiscountStatus = 'Used') as used_usd,
    sum(EffectiveCost) filter (where CommitmentDiscountStatus = 'Unused') as unused_usd,
    used_usd / nullif(used_usd + coalesce(unused_usd, 0), 0) as utilisation
from focus_charges
where CommitmentDiscountId is not null
group by CommitmentDiscountId, month
order by month, CommitmentDiscountId""",
    ),
    Example(
        "Top checkpoint prefixes by size",
        """select
    bucket,
    regexp_extract(key, '^([^/]+/[^/]+)/', 1) as prefix,
    count(*) as objects,
    round(sum(size_bytes) / 1e9, 1) as size_gb,
    round(coalesce(sum(size_bytes) filter (where not is_latest), 0) / 1e9, 1) as noncurrent_gb,
    max(date_diff('day', cast(last_modified as date), inventory_date)) as oldest_days
from storage_objects
where not coalesce(is_delete_marker, false)
group by all
order by size_gb desc, bucket, prefix
limit 20""",
    ),
    Example(
        "GPU-hours per team, and the share held by jobs over 48 h",
        """select
    team,
    count(*) as jobs,
    round(sum(gpu_hours), 1) as gpu_hours,
    coalesce(sum(gpu_hours) filter (where duration_s > 48 * 3600), 0) / sum(gpu_hours) as share_over_48h
from job_runs
group by team
order by gpu_hours desc""",
    ),
    Example(
        "The latest recommendations, biggest saving first",
        """select kind, scope, action, estimated_monthly_savings_amount, risk
from latest_recommendations
order by estimated_monthly_savings_amount desc nulls last""",
    ),
    Example(
        "Cost per run, per GPU-hour used and per million samples, per model and week",
        """select
    week,
    model,
    sum(costed_runs) as runs,
    sum(cost_usd) / nullif(sum(costed_runs), 0) as usd_per_run,
    sum(cost_usd) / nullif(sum(gpu_hours), 0) as usd_per_gpu_hour,
    sum(cost_of_sampled_runs_usd) / nullif(sum(samples) / 1e6, 0) as usd_per_million_samples
from unit_economics_weekly
group by week, model
order by model, week""",
    ),
    Example(
        "Data-quality failures of the last 7 days",
        """select checked_at, suite, rule, column_name, severity, unexpected_count, examples
from dq_results
where not success and checked_at >= current_date - interval 7 days
order by checked_at desc""",
    ),
)


def catalog(con: duckdb.DuckDBPyConnection) -> list[Relation]:
    """Every user table and view of the main schema with its columns and comments: views first."""
    relations = con.execute(
        """select table_name as name, 'table' as kind, comment from duckdb_tables()
           where not internal and schema_name = 'main' and database_name = current_database()
           union all
           select view_name, 'view', comment from duckdb_views()
           where not internal and schema_name = 'main' and database_name = current_database()
           order by kind desc, name"""
    ).fetchall()
    columns: dict[str, list[Column]] = {}
    for table, name, data_type, comment in con.execute(
        """select table_name, column_name, data_type, comment from duckdb_columns()
           where not internal and schema_name = 'main' and database_name = current_database()
           order by table_name, column_index"""
    ).fetchall():
        columns.setdefault(table, []).append(Column(name, data_type, comment))
    # latest_<table> has <table>'s columns: their meanings are written once, on the table.
    comments = {(t, c.name): c.comment for t, cols in columns.items() for c in cols}
    out = []
    for name, kind, comment in relations:
        base = name.removeprefix(LATEST)
        same_as = base if kind == "view" and name.startswith(LATEST) and base in columns else None
        cols = tuple(
            Column(c.name, c.data_type, c.comment or comments.get((same_as, c.name))) if same_as else c
            for c in columns.get(name, [])
        )
        out.append(Relation(name, kind, comment, cols, same_as))
    return out


LATEST = "latest_"


def schema_catalog() -> list[Relation]:
    """The catalog of a fresh warehouse built by migrate() (what the code defines, not a file's data)."""
    con = duckdb.connect()
    try:
        migrate(con)
        return catalog(con)
    finally:
        con.close()


def _cell(text: str | None) -> str:
    # Markdown tables split on pipes; comments use them for enumerations.
    return (text or "").replace("|", "\\|").replace("\n", " ")


def render_markdown(relations: Sequence[Relation], examples: Sequence[Example] = EXAMPLES) -> str:
    lines = [
        "# The Athanor warehouse",
        "",
        "<!-- Generated by `python -m athanor.warehouse.docs` from the catalog comments in "
        "sql/schema/090_comments.sql. Do not edit by hand. -->",
        "",
        "One DuckDB file (`warehouse/athanor.duckdb`). Analysts open the read-only snapshot that",
        "every nightly run publishes beside it (`warehouse/athanor-snapshot.duckdb`), so a query never",
        'waits for, or blocks, the nightly writer: `athanor query "select ..."` (the SQL command line; no',
        "DuckDB CLI is installed) reads the snapshot and runs only SELECT, EXPLAIN, PRAGMA",
        'and CALL statements, with no access to other files, the network or extensions (README, "The',
        'command line"). Timestamps are UTC. Money is in the billing currency (USD for the demo);',
        "`EffectiveCost` / `effective_cost` is the amortised cost. The views `focus_charges` and",
        "`job_runs` are the stable interface: columns are added, never renamed.",
        "",
        "**Per-run tables and their `latest_` views.** The outputs of the optimize run",
        "(`recommendations`, `gpu_plan`, `duration_fits`, `backtests`, `spend_forecasts`,",
        "`spend_forecast_accuracy`, `spend_anomalies`, `budget_status`) and the checks of every load",
        "(`dq_results`) keep every run's rows under its `run_id`, so a drift shows; a query on the",
        "table alone adds up every night. Each has a view `latest_<table>` with the rows of the latest",
        "run only: the run for the newest `as_of` (the day the run was for, in every table), and of that",
        "day's runs the one that finished last, as `reports/latest` chooses (`latest_dq_results`: the",
        "run that checked a batch last). A run that wrote no row to a table leaves its view on the run",
        "before. `gpu_usage_hourly` is of the other kind: one row per machine, GPU and hour, owned by",
        "the last run that measured that hour (a run replaces the hours of its window), so it is",
        "already the latest and has no such view, as `gpu_allocation_hourly` (each run rewrites it",
        "whole); `spend_alerts`, `pipeline_runs`,",
        "`duration_fit_cache` and `lake_snapshots` are ledgers.",
        "",
        "## Contents",
        "",
    ]
    for r in relations:
        summary = (r.comment or "").split(". ")[0].rstrip(".")
        lines.append(f"- [`{r.name}`](#{r.name}) ({r.kind}){' — ' + summary if summary else ''}")
    lines += ["- [Example queries](#example-queries)", ""]
    for r in relations:
        lines += [f"## {r.name}", "", f"*{r.kind}.* {r.comment or '(no comment in the catalog)'}", ""]
        if r.same_as:
            lines += [
                f"Columns: those of [`{r.same_as}`](#{r.same_as}), the same names, types and meanings.",
                "",
            ]
            continue
        lines += ["| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{c.name}` | {_cell(c.data_type)} | {_cell(c.comment)} |" for c in r.columns]
        lines.append("")
    lines += ["## Example queries", "", "Each of these runs in the test suite against a small warehouse.", ""]
    for e in examples:
        lines += [f"### {e.title}", "", "```sql", e.sql + ";", "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m athanor.warehouse.docs", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=DOC_PATH)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = render_markdown(schema_catalog())
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is out of date: run `python -m athanor.warehouse.docs`", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
