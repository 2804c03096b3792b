"""The report: data from a small hand-built warehouse, HTML, exports, atomic folders, bucket upload."""

from __future__ import annotations

import csv
import json
import math
from datetime import date, datetime
from pathlib import Path

import boto3
import duckdb
import numpy as np
import pytest
from moto import mock_aws

from athanor.ingest.daily import summaries_cover
from athanor.publish import build_report, load_report_data, publish_report
from athanor.publish.artifacts import neutralise, publish_to_bucket
from athanor.publish.render import money, render_html
from athanor.warehouse import SQL_DIR, connect

AS_OF = date(2026, 11, 30)  # period [2026-11-01, 2026-12-01), previous [2026-10-02, 2026-11-01)
XSS_TEAM = "<script>alert('x')</script>"
FORMULA_ACTION = '=HYPERLINK("http://example.invalid")'

LIFECYCLE_CONFIG = {
    "Rules": [
        {
            "ID": "athanor-ckpt-ia",
            "Status": "Enabled",
            "Filter": {"Prefix": "runs/"},
            "Transitions": [{"Days": 30, "StorageClass": "STANDARD_IA"}],
            "NoncurrentVersionExpiration": {"NoncurrentDays": 30},
        }
    ]
}


def _billing(con: duckdb.DuckDBPyConnection, row: int, day: str, cost: float, **cols: object) -> None:
    values = {
        "load_id": "l1",
        "source_file": "f.csv",
        "source_row": row,
        "source_format": "focus",
        "billing_account_id": "acct",
        "billing_currency": "USD",
        "billing_period_start": datetime.fromisoformat(day[:8] + "01"),
        "billing_period_end": datetime.fromisoformat(day[:8] + "28"),
        "charge_period_start": datetime.fromisoformat(day),
        "charge_period_end": datetime.fromisoformat(day + "T01:00"),
        "charge_category": "Usage",
        "billed_cost": cost,
        "effective_cost": cost,
        "service_name": "Amazon Elastic Compute Cloud",
        **cols,
    }
    names = ", ".join(values)
    con.execute(
        f"insert into billing_facts ({names}) values ({', '.join('?' * len(values))})", list(values.values())
    )


def fill_small_warehouse(con: duckdb.DuckDBPyConnection, run_id: str = "run-1") -> None:
    """A few hand-written rows in every table the report reads."""
    llm = {"tags": {"team": "llm"}, "x_instance_type": "p4d.24xlarge", "x_instance_family": "p4d"}
    _billing(con, 1, "2026-11-10", 1000.0, pricing_category="Standard", x_usage_hours=45.5, **llm)
    _billing(
        con,
        2,
        "2026-11-10",
        600.0,
        pricing_category="Committed",
        x_usage_hours=50.0,
        commitment_discount_id="ri-1",
        commitment_discount_name="p4d RI",
        commitment_discount_category="Usage",
        commitment_discount_status="Used",
        **llm,
    )
    _billing(
        con,
        3,
        "2026-11-10",
        200.0,
        pricing_category="Committed",
        commitment_discount_id="ri-1",
        commitment_discount_name="p4d RI",
        commitment_discount_category="Usage",
        commitment_discount_status="Unused",
        **llm,
    )
    _billing(
        con,
        4,
        "2026-11-20",
        300.0,
        pricing_category="Dynamic",
        x_usage_hours=100.0,
        tags={"team": XSS_TEAM},
        x_instance_type="g5.12xlarge",
        x_instance_family="g5",
    )
    _billing(
        con, 5, "2026-11-20", 50.0, pricing_category="Standard", service_name="Amazon Simple Storage Service"
    )
    _billing(con, 6, "2026-10-15", 1500.0, pricing_category="Standard", x_usage_hours=68.3, **llm)

    # 40 jobs: durations spread log-uniformly from 6 min to ~100 h; every 5th one preempted.
    durations = np.exp(np.linspace(np.log(360.0), np.log(360_000.0), 40))
    for i, d in enumerate(durations):
        team = "llm" if i % 2 == 0 else "vision"
        start = datetime(2026, 11, 1 + i % 25)
        censored = i % 5 == 0
        con.execute(
            """insert into job_run_facts (load_id, source_file, source_row, source, job_id, start_time, state,
                   instance_type, instance_count, gpus_per_instance, team, duration_s, censored, gpu_count, gpu_hours)
               values ('l2', 'jobs.csv', ?, 'generic', ?, ?, ?, 'p4d.24xlarge', 1, 8, ?, ?, ?, 8, ?)""",
            [
                i + 1,
                f"job-{i}",
                start,
                "preempted" if censored else "completed",
                team,
                float(d),
                censored,
                8 * d / 3600,
            ],
        )
    fits = [
        ("all", "lognormal", {"mu": 9.0, "sigma": 1.8}),
        ("team=llm", "weibull", {"shape": 0.6, "scale_s": 20000.0}),
        (
            "team=vision",
            "lognormal_mixture",
            {"weights": [0.5, 0.5], "mus": [8.0, 11.0], "sigmas": [0.7, 0.9]},
        ),
    ]
    for key, family, params in fits:
        con.execute(
            """insert into duration_fits (run_id, as_of, group_by, group_key, n, censored, family, params, aic,
                   p50_s, p90_s, p99_s, share_jobs_under_48h, share_gpu_hours_under_48h, record)
               values (?, ?, 'team', ?, 20, 4, ?, ?, 100.0, 8000, 90000, 300000, 0.8, 0.3, '{}')""",
            [run_id, AS_OF, key, family, json.dumps(params)],
        )
    recs = [
        (
            "reserved_instances",
            "p4d/us-east-1",
            "Buy 2 p4d.24xlarge reserved instances, 1 year, no upfront",
            5000.0,
        ),
        ("spot", "team=vision", "Run vision training on spot with 30 min checkpoints", 1200.0),
        ("savings_plan", "compute", FORMULA_ACTION, -10.0),
        ("lifecycle", "ckpt-bucket/runs/", "Move checkpoints older than 30 days to Standard-IA", 800.0),
    ]
    for kind, scope, action, saving in recs:
        detail = (
            {"bucket": "ckpt-bucket", "lifecycle_configuration": LIFECYCLE_CONFIG}
            if kind == "lifecycle"
            else {}
        )
        con.execute(
            """insert into recommendations (run_id, as_of, kind, scope, action, term_months, current_monthly_cost,
                   estimated_monthly_cost, estimated_monthly_savings_amount, estimated_savings_percentage, risk,
                   assumptions, detail)
               values (?, ?, ?, ?, ?, 12, 10000, ?, ?, ?, 'low', '{"od_rate": 21.96}', ?)""",
            [run_id, AS_OF, kind, scope, action, 10000 - saving, saving, saving / 100, json.dumps(detail)],
        )
    for policy, costs in {
        "on_demand": (1000.0, 1100.0),
        "athanor": (700.0, 760.0),
        "console_30d": (800.0, 850.0),
        "hindsight_optimum": (650.0, 700.0),
    }.items():
        for month, cost in zip(("2026-09", "2026-10"), costs, strict=True):
            od = 1000.0 if month == "2026-09" else 1100.0
            con.execute(
                "insert into backtests values (?, ?, 'demo:p4d', ?, ?, ?, ?, ?, null)",
                [run_id, AS_OF, policy, month, cost, od, 100 * (1 - cost / od)],
            )
    objects = [
        ("runs/a/step-1/model.pt", "v1", True, 40e9, "2026-11-25", "STANDARD"),
        ("runs/a/step-1/model.pt", "v0", False, 40e9, "2026-08-01", "STANDARD"),
        ("runs/b/step-9/model.pt", "v1", True, 60e9, "2025-10-01", "STANDARD_IA"),
        ("logs/x.txt", "v1", True, 1e6, "2026-11-29", "STANDARD"),
    ]
    for key, version, latest, size, modified, klass in objects:
        con.execute(
            """insert into storage_objects (load_id, inventory_date, bucket, key, version_id, is_latest,
                   is_delete_marker, size_bytes, last_modified, storage_class)
               values ('l3', ?, 'ckpt-bucket', ?, ?, ?, false, ?, ?, ?)""",
            [AS_OF, key, version, latest, int(size), datetime.fromisoformat(modified), klass],
        )
    # The ledger: l1 holds the billing rows above (l0 is the delivery it restated), l2 the jobs,
    # l3 the inventory.
    con.execute(
        """insert into loads (load_id, kind, source_uri, files, checksum_sha256, size_bytes, billing_periods,
               status, started_at)
           values
           ('l0', 'billing', 'landing/billing', ['f.csv'], 'c0', 1, ['2026-10', '2026-11'], 'replaced',
            '2026-11-30 02:30:00'),
           ('l1', 'billing', 'landing/billing', ['f.csv'], 'c1', 1, ['2026-10', '2026-11'], 'loaded',
            '2026-12-01 02:30:00'),
           ('l2', 'jobs', 'landing/jobs', ['jobs.csv'], 'c2', 1, null, 'loaded', '2026-12-01 02:31:00'),
           ('l3', 'inventory', 'landing/inventory', ['manifest.json'], 'c3', 1, null, 'loaded',
            '2026-12-01 02:32:00')"""
    )
    # Checked the night after the period, as a nightly run does; dq-0 checked the restated delivery.
    con.execute(
        """insert into dq_results (run_id, load_id, suite, table_name, rule, column_name, severity, success,
               unexpected_count, examples, files, checked_at)
           values
           ('dq-1', 'l1', 'billing_facts', 'delivery', 'billed_cost not null', 'billed_cost', 'error', true, 0,
            null, null, '2026-12-01 03:00:00'),
           ('dq-1', 'l1', 'billing_facts', 'delivery', 'x_gpu_count between 1 and 16', 'x_gpu_count', 'warn',
            false, 3, ['row 3: 0', 'row 9: 32', 'row 12: 64'], ['cur.csv'], '2026-12-01 03:00:00'),
           ('dq-0', 'l0', 'billing_facts', 'delivery', 'an older run', null, 'error', false, 1,
            null, null, '2026-11-29 03:00:00')"""
    )


@pytest.fixture
def warehouse(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "wh.duckdb")
    fill_small_warehouse(con)
    yield con
    con.close()


@pytest.fixture(params=["lines", "daily sums"])
def either_source(
    request: pytest.FixtureRequest, warehouse: duckdb.DuckDBPyConnection
) -> duckdb.DuckDBPyConnection:
    """The small warehouse read from its billing lines (its rows were written outside a load),
    or from billing_daily summed as a load sums it (the schema's backfill)."""
    if request.param == "daily sums":
        warehouse.execute((SQL_DIR / "schema" / "045_billing_daily.sql").read_text())
        assert summaries_cover(warehouse)
    else:
        assert not summaries_cover(warehouse)
    return warehouse


@pytest.fixture
def empty_warehouse(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "empty.duckdb")
    yield con
    con.close()


# ------------------------------------------------------------------ data


def test_report_data_matches_hand_computed_numbers(either_source: duckdb.DuckDBPyConnection) -> None:
    data = load_report_data(either_source, AS_OF, "run-1")
    # November: 1000 + 600 + 200 + 300 + 50 = 2150; October 15: 1500 -> +43.33 %.
    assert data.spend.cost_usd == pytest.approx(2150.0)
    assert data.spend.previous_cost_usd == pytest.approx(1500.0)
    assert data.spend.change_pct == pytest.approx(100 * 650 / 1500)
    week = next(w for w in data.commitment_weeks if w.week == date(2026, 11, 9))
    assert week.utilisation == pytest.approx(600 / 800)  # used / (used + unused)
    assert week.coverage == pytest.approx(
        50 / 95.5
    )  # committed hours / (on-demand 45.5 + committed 50); spot excluded
    assert [r.estimated_monthly_savings_amount for r in data.top_actions] == [5000.0, 1200.0, 800.0]
    assert {g.group_key: len(g.durations_s) for g in data.durations} == {
        "all": 40,
        "team=llm": 20,
        "team=vision": 20,
    }
    assert (
        sum(g.censored_flags.count(True) for g in data.durations if g.group_key == "all") == 8
    )  # every 5th of 40
    cells = {(c.storage_class, c.age_band): c.size_bytes for c in data.storage}
    # 2026-11-25 (5 d) and 2026-11-29 (1 d) are < 30 d; 2026-08-01 is 121 d; 2025-10-01 is 425 d.
    assert cells == {
        ("STANDARD", "< 30 d"): 40_001_000_000,
        ("STANDARD", "90–180 d"): 40_000_000_000,
        ("STANDARD_IA", "> 1 y"): 60_000_000_000,
    }
    assert [(p.prefix, p.noncurrent_bytes) for p in data.prefixes] == [
        ("runs/a", 40_000_000_000),
        ("runs/b", 0),
        ("logs", 0),
    ]
    # dq-0 checked the delivery l1 restated; l1's checks ran after the period and still count.
    assert [r.rule for r in data.dq_failed] == ["x_gpu_count between 1 and 16"]
    assert len(data.dq or []) == 2
    assert data.dq_failed[0].examples == "row 3: 0; row 9: 32; row 12: 64"
    assert data.dq_failed[0].where == "billing_facts · delivery · x_gpu_count · cur.csv"


def test_weekly_spend_splits_by_team_tag(either_source: duckdb.DuckDBPyConnection) -> None:
    data = load_report_data(either_source, AS_OF, "run-1")
    team = {(r.week, r.label): r.cost for r in data.weekly_spend if r.dimension == "team"}
    assert team == {
        (date(2026, 10, 12), "llm"): 1500.0,
        (date(2026, 11, 9), "llm"): 1800.0,  # 1000 on-demand + 600 used + 200 unused commitment
        (date(2026, 11, 16), XSS_TEAM): 300.0,
        (date(2026, 11, 16), "(untagged)"): 50.0,
    }
    # Every dimension adds up to the same weekly total.
    for dimension in ("pricing_category", "instance_family", "service"):
        assert sum(r.cost for r in data.weekly_spend if r.dimension == dimension) == pytest.approx(3650.0)


def test_report_prefers_the_given_run_then_the_latest(warehouse: duckdb.DuckDBPyConnection) -> None:
    warehouse.execute(
        """insert into recommendations (run_id, as_of, kind, scope, action, estimated_monthly_savings_amount)
           values ('run-0', '2026-11-29', 'spot', 'x', 'older run', 99999)"""
    )
    assert {r.run_id for r in load_report_data(warehouse, AS_OF, "run-0").recommendations} == {"run-0"}
    assert {r.run_id for r in load_report_data(warehouse, AS_OF, "no-such-run").recommendations} == {"run-1"}


# ------------------------------------------------------------------ html


def test_html_escapes_data_and_loads_nothing_external(warehouse: duckdb.DuckDBPyConnection) -> None:
    html = render_html(load_report_data(warehouse, AS_OF, "run-1"))
    assert XSS_TEAM not in html
    assert "&lt;script&gt;alert(" in html
    assert html.count("<script") == 1  # the sortable-table script only
    assert "default-src 'none'" in html
    for attribute in ("src=", 'href="http', "href='http", "url(", "@import"):
        assert attribute not in html, attribute
    for chart in (
        "chart-spend-team",
        "chart-commitments",
        "chart-backtest",
        "chart-durations-2",
        "chart-storage",
    ):
        assert f'id="{chart}"' in html


def test_every_section_says_no_data_yet_on_an_empty_warehouse(
    empty_warehouse: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    paths = build_report(empty_warehouse, AS_OF, tmp_path / "reports", "run-1")
    html = paths.html.read_text()
    sections = {part.split('"', 1)[0]: part for part in html.split('<section id="')[1:]}
    assert set(sections) == {
        "plan",
        "summary",
        "spend",
        "commitments",
        "mix",
        "gpu",
        "gpu-usage",
        "gpu-allocation",
        "unit-economics",
        "spend-watch",
        "durations",
        "storage",
        "quality",
    }
    for name, body in sections.items():
        assert "no data yet" in body, name
    assert json.loads(paths.recommendations_json.read_text())["recommendations"] == []


@pytest.mark.parametrize(
    ("value", "text"),
    [(12345.4, "$12,345"), (-1234.6, "-$1,235"), (0.4, "$0"), (-0.4, "$0"), (None, "—"), (math.nan, "—")],
)
def test_money_format(value: float | None, text: str) -> None:
    assert money(value) == text


def test_fitted_log_density_integrates_to_one() -> None:
    from athanor.publish.data import DurationGroup
    from athanor.publish.render import fitted_log_density

    grid = np.linspace(-8, 8, 4001)  # log10(hours), far past both tails
    for family, params in [
        ("lognormal", {"mu": 9.0, "sigma": 1.8}),
        ("weibull", {"shape": 0.6, "scale_s": 20000.0}),
        ("lognormal_mixture", {"weights": [0.3, 0.7], "mus": [8.0, 11.0], "sigmas": [0.7, 0.9]}),
    ]:
        group = DurationGroup("team", "all", 1, 0, family, params, *[None] * 9)
        density = fitted_log_density(group, grid)
        assert density is not None
        assert np.trapezoid(density, grid) == pytest.approx(1.0, abs=1e-4), family
    unknown = DurationGroup("team", "all", 1, 0, "no-such-family", {}, *[None] * 9)
    assert fitted_log_density(unknown, grid) is None


# ------------------------------------------------------------------ exports


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("=SUM(A1)", "'=SUM(A1)"),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@cmd", "'@cmd"),
        ("\t=1", "'\t=1"),
        ("plain", "plain"),
        ("a=b", "a=b"),
        (-12.5, -12.5),  # numbers stay numbers
        (None, None),
    ],
)
def test_neutralise(cell: object, expected: object) -> None:
    assert neutralise(cell) == expected


def test_exports_json_csv_and_lifecycle(warehouse: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    paths = build_report(warehouse, AS_OF, tmp_path / "reports", "run-1")
    doc = json.loads(paths.recommendations_json.read_text())
    assert doc["schema_version"] == "2.0"
    assert doc["as_of"] == "2026-11-30"
    assert [r["kind"] for r in doc["recommendations"]] == [
        "reserved_instances",
        "spot",
        "lifecycle",
        "savings_plan",
    ]
    assert doc["recommendations"][0]["assumptions"] == {"od_rate": 21.96}
    assert doc["summary"]["spend_usd"] == 2150.0

    with (paths.dated_dir / "recommendations.csv").open() as f:
        rows = list(csv.DictReader(f))
    formula = next(r for r in rows if r["kind"] == "savings_plan")
    assert formula["action"] == "'" + FORMULA_ACTION
    assert formula["estimated_monthly_savings_amount"] == "-10.0"
    with (paths.dated_dir / "spend_weekly.csv").open() as f:
        assert XSS_TEAM in {r["label"] for r in csv.DictReader(f)}

    assert json.loads((paths.dated_dir / "lifecycle" / "ckpt-bucket.json").read_text()) == LIFECYCLE_CONFIG
    assert json.loads((paths.dated_dir / "lifecycle.json").read_text())["buckets"] == {
        "ckpt-bucket": LIFECYCLE_CONFIG
    }
    assert {p.name for p in paths.csv} >= {"recommendations.csv", "backtest.csv", "data_quality.csv"}


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
def test_latest_is_a_full_copy_and_a_rerun_gives_the_same_bytes(
    warehouse: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    first = build_report(warehouse, AS_OF, out, "run-1")
    before = _tree(first.dated_dir)
    second = build_report(warehouse, AS_OF, out, "run-1")
    assert _tree(second.dated_dir) == before
    assert _tree(second.latest_dir) == before
    assert sorted(p.name for p in out.iterdir()) == ["2026-11-30", "latest"]  # no temp folders left


@pytest.mark.slow
def test_a_failed_build_leaves_the_previous_report(
    warehouse: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "reports"
    good = build_report(warehouse, AS_OF, out, "run-1")
    before = _tree(good.latest_dir)

    def broken(*_args: object) -> list[Path]:
        raise OSError("disk full")

    monkeypatch.setattr("athanor.publish.write_csvs", broken)
    with pytest.raises(OSError, match="disk full"):
        build_report(warehouse, AS_OF, out, "run-1")
    assert _tree(out / "latest") == before
    assert _tree(out / "2026-11-30") == before
    assert sorted(p.name for p in out.iterdir()) == ["2026-11-30", "latest"]


@mock_aws
@pytest.mark.slow
def test_publish_to_bucket_uploads_and_prunes_latest(
    warehouse: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="reports")
    s3.put_object(Bucket="reports", Key="athanor/latest/stale.csv", Body=b"old")
    s3.put_object(Bucket="reports", Key="athanor/2026-11-29/report.html", Body=b"yesterday")
    paths = build_report(warehouse, AS_OF, tmp_path / "reports", "run-1")

    keys = publish_report(s3, paths, "s3://reports/athanor/")

    listed = {o["Key"] for o in s3.list_objects_v2(Bucket="reports")["Contents"]}
    files = set(_tree(paths.dated_dir))
    assert listed == (
        {f"athanor/2026-11-30/{f}" for f in files}
        | {f"athanor/latest/{f}" for f in files}
        | {"athanor/2026-11-29/report.html"}  # other days are left alone; only latest/ is pruned
    )
    assert keys[len(files) - 1] == "athanor/2026-11-30/report.html"  # the page goes up last
    head = s3.head_object(Bucket="reports", Key="athanor/latest/report.html")
    assert head["ContentType"] == "text/html; charset=utf-8"
    body = s3.get_object(Bucket="reports", Key="athanor/latest/lifecycle/ckpt-bucket.json")["Body"].read()
    assert json.loads(body) == LIFECYCLE_CONFIG


def test_publish_to_bucket_rejects_a_non_s3_url(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="s3://"):
        publish_to_bucket(object(), tmp_path, "https://example.invalid/x")
