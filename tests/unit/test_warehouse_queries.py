"""SQL text: one templating rule (values bound, code-chosen fragments as {name}, {batch} for GX)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import athanor
from athanor.warehouse import SQL_DIR, queries, quote_ident, sql

PACKAGE = Path(athanor.__file__).resolve().parent


@pytest.fixture
def sql_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(queries, "SQL_DIR", tmp_path)
    queries._template.cache_clear()

    def write(text: str) -> str:
        (tmp_path / "q.sql").write_text(text)
        queries._template.cache_clear()
        return "q"

    yield write
    queries._template.cache_clear()


def test_fragments_fill_their_placeholders_and_batch_is_left_for_great_expectations(sql_file) -> None:
    name = sql_file("select {column}, {'k': 1} as s, $value as v from {batch} where {column} > 0")
    filled = sql(name, column=quote_ident('bill "x"'))
    assert filled == 'select "bill ""x""", {\'k\': 1} as s, $value as v from {batch} where "bill ""x""" > 0'


def test_a_missing_or_unknown_fragment_fails_before_reaching_duckdb(sql_file) -> None:
    name = sql_file("select {loaded_rows} from billing_facts")
    with pytest.raises(KeyError, match=r"missing \['loaded_rows'\]"):
        sql(name)
    with pytest.raises(KeyError, match=r"not in the file \['loaded_total'\]"):
        sql(name, loaded_rows="count(*)", loaded_total="billed_cost")


def test_a_placeholder_in_a_comment_is_refused(sql_file) -> None:
    # GX fills {batch} with a compiled subquery over several lines: the rest of the comment's
    # line would run as SQL (an apostrophe there opened a string literal that never closed).
    name = sql_file("-- the rows of {batch} that fail\nselect 1 from {batch}")
    with pytest.raises(ValueError, match="placeholder in a comment"):
        sql(name)


def test_a_file_without_placeholders_reads_as_written() -> None:
    assert sql("marts/job_durations") == (SQL_DIR / "marts" / "job_durations.sql").read_text()


def test_no_other_templating_style_is_left() -> None:
    """No `__NAME__` markers replaced by hand, no `.format()` of SQL files."""
    markers = [p.name for p in SQL_DIR.rglob("*.sql") if re.search(r"__[A-Z][A-Z_]*__", p.read_text())]
    assert markers == []
    by_hand = [
        p.name
        for p in PACKAGE.rglob("*.py")
        if re.search(r"sql\([^)]*\)\s*\.(replace|format)\(", p.read_text())
    ]
    assert by_hand == []
