"""docs/warehouse.md: generated from the catalog comments, up to date, and its example queries run."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from athanor.warehouse import connect
from athanor.warehouse.docs import DOC_PATH, EXAMPLES, main, render_markdown, schema_catalog
from tests.unit.test_report import fill_small_warehouse

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "sql" / "schema"


def test_every_schema_table_view_and_column_has_a_comment() -> None:
    relations = schema_catalog()
    assert {
        "billing_facts",
        "focus_charges",
        "job_runs",
        "recommendations",
        "dq_results",
        "ref_instance_types",
    } <= {r.name for r in relations}
    missing = [r.name for r in relations if not r.comment] + [
        f"{r.name}.{c.name}" for r in relations for c in r.columns if not c.comment
    ]
    assert missing == [], f"add COMMENT ON for these in sql/schema/090_comments.sql: {missing}"
    # Every table and view says its grain.
    assert [r.name for r in relations if "Grain:" not in (r.comment or "")] == []


def test_docs_warehouse_md_is_up_to_date() -> None:
    expected = render_markdown(schema_catalog())
    assert DOC_PATH.read_text(encoding="utf-8") == expected, (
        "run `python -m athanor.warehouse.docs` and commit docs/warehouse.md"
    )


@pytest.mark.slow
def test_check_mode_flags_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "warehouse.md"
    stale.write_text("# old\n")
    assert main(["--check", "--out", str(stale)]) == 1
    assert main(["--out", str(stale)]) == 0
    assert main(["--check", "--out", str(stale)]) == 0


def test_markdown_escapes_pipes_in_comments() -> None:
    text = render_markdown(schema_catalog(), examples=())
    # 'loaded | replaced | ...' must not split the table row.
    assert "loaded \\| replaced" in text


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    con = connect(tmp_path_factory.mktemp("docs") / "wh.duckdb")
    fill_small_warehouse(con)
    # A failure "today", so the last example has something to find whenever the test runs.
    con.execute(
        """insert into dq_results (run_id, suite, table_name, rule, severity, success, unexpected_count, checked_at)
           values ('dq-now', 'billing_facts', 'delivery', 'fresh failure', 'error', false, 2, current_timestamp)"""
    )
    yield con
    con.close()


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.title for e in EXAMPLES])
def test_example_query_runs_and_returns_rows(small, example) -> None:
    cur = small.execute(example.sql)
    assert cur.description, example.title
    assert cur.fetchall(), f"{example.title}: no rows on the small warehouse"


def _rows(con, title: str) -> list[tuple]:
    return con.execute(next(e.sql for e in EXAMPLES if e.title == title)).fetchall()


def test_example_answers_match_hand_computed_values(small) -> None:
    by_team = {(week, team): float(cost) for week, team, cost in _rows(small, "Cost by team and week")}
    assert by_team[(date(2026, 11, 9), "llm")] == 1800.0  # 1000 on-demand + 600 used + 200 unused
    spot = {week: float(h) for week, h, _ in _rows(small, "Spot share of instance-hours and cost, per week")}
    assert spot[date(2026, 11, 9)] == 0.0  # 45.5 on-demand + 50 committed hours, no spot
    assert spot[date(2026, 11, 16)] == 1.0  # 100 spot hours only (the S3 line has no hours)
    (ri,) = _rows(small, "Commitment utilisation per commitment and month")
    assert ri[0] == "ri-1" and float(ri[5]) == pytest.approx(0.75)  # 600 / (600 + 200)
    top = _rows(small, "Top checkpoint prefixes by size")
    assert [(p, gb, nc) for _, p, _, gb, nc, _ in top[:2]] == [("runs/a", 80.0, 40.0), ("runs/b", 60.0, 0.0)]


def test_the_docs_send_no_one_to_a_duckdb_cli_the_project_does_not_install() -> None:
    # PyPI's duckdb-cli stops at 1.5.6 and the warehouse is written by DuckDB 2.0.1: no CLI is
    # installed, so `athanor query` is the command line the README and warehouse.md name.
    root = SCHEMA_DIR.parents[1]
    lock = (root / "requirements.lock").read_text().lower()
    assert "duckdb-cli" not in lock and "duckdb_cli" not in lock
    for doc in (root / "README.md", DOC_PATH):
        text = doc.read_text(encoding="utf-8")
        assert "duckdb -readonly" not in text, doc.name
    assert "`athanor query` is the project's SQL command line" in (root / "README.md").read_text()
