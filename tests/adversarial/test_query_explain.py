"""`EXPLAIN ANALYZE` runs the statement it explains: `athanor query` checks that statement, the
session can create no file beside the snapshot's, a part file changed behind the publish's back
is written again, and a query has a time limit.

The attack this closes: `explain analyze copy (select * from billing_facts limit 0) to '<a part
file>'` truncated a published partition (the outer statement was an allowed EXPLAIN, and the
session's allowed folder was writable), and later nights reused the forged file.
"""

from __future__ import annotations

import hashlib
import shutil
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from athanor.cli import main
from athanor.settings import Settings
from athanor.warehouse import connect, publish_snapshot
from athanor.warehouse.readonly import QueryRefused, _explained, open_readonly
from athanor.warehouse.snapshots import parts_dir
from tests.adversarial.conftest import athanor_home

ONLY = "(it runs SELECT, EXPLAIN, PRAGMA and CALL only)"


def publish_copy(template: Path, home: Path) -> Settings:
    """The template's warehouse copied into `home` (ATHANOR_HOME) and its snapshot published."""
    # The views name their part files by absolute path: the copy is published again in place.
    shutil.copytree(template, home / "warehouse")
    settings = Settings.from_env()
    for path in (home / "warehouse").glob("*-snapshot*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    con = connect(settings.warehouse, memory_limit="1GB")
    publish_snapshot(con, settings.warehouse, settings.snapshot)
    con.close()
    return settings


@pytest.fixture
def published(home: Path, gcp_published: Path, capsys) -> Settings:
    """A published copy of the test's own, for a test that changes a part file on purpose."""
    settings = publish_copy(gcp_published, home)
    capsys.readouterr()
    return settings


@pytest.fixture(scope="module")
def shared_home(gcp_published: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One published copy for the tests that must change nothing.

    Each of them takes the part files' SHA-256 (or the snapshot's totals) before its statement
    and compares after it, and the totals with the fixture's own, so a statement that changed
    the copy fails its own test (and those after it) and never passes. A copy published per
    test took 37 s of the 181 s the unit tier's tests ran (summed over its two workers)."""
    folder = tmp_path_factory.mktemp("shared-home")
    with pytest.MonkeyPatch.context() as patch:
        athanor_home(folder, patch)
        publish_copy(gcp_published, folder)
    return folder


def part_files(settings: Settings) -> dict[str, str]:
    """Every file under the snapshot's parts folder with its SHA-256."""
    folder = parts_dir(settings.snapshot)
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def a_part_file(settings: Settings) -> Path:
    return next(parts_dir(settings.snapshot).rglob("*.parquet"))


def snapshot_totals(settings: Settings) -> tuple:
    con = duckdb.connect(str(settings.snapshot), read_only=True)
    try:
        return con.execute("select count(*), sum(billed_cost) from billing_facts").fetchone()
    finally:
        con.close()


# One statement of every kind `athanor query` refuses, as EXPLAIN ANALYZE would run it; {part}
# is a published part file, {folder} the parts folder.
EXPLAINED = [
    ("COPY", "copy (select * from billing_facts limit 0) to '{part}' (format parquet)"),
    ("COPY", "copy (select * from billing_facts limit 0) to '{part}' (format parquet, use_tmp_file false)"),
    ("COPY", "copy (select 1) to '{folder}/../x.parquet' (format parquet)"),
    ("CREATE", "create temp table t as select * from billing_facts"),
    ("CREATE", "create table t as select 1"),
    ("INSERT", "insert into billing_facts select * from billing_facts"),
    ("DELETE", "delete from billing_facts"),
    ("UPDATE", "update billing_facts set billed_cost = 0"),
    ("DROP", "drop view billing_facts"),
    ("ALTER", "alter view billing_facts rename to b"),
    ("SET", "set threads = 1"),
    ("RESET", "reset threads"),
    ("INSTALL", "install httpfs"),
    ("LOAD", "load httpfs"),
    ("TRUNCATE", "truncate billing_facts"),
    ("VACUUM", "vacuum"),
    ("MERGE", "merge into billing_facts using billing_facts s on true when matched then delete"),
    ("BEGIN", "begin"),
    ("PREPARE", "prepare p as delete from billing_facts"),
    ("EXECUTE", "execute p"),
    ("CREATE", "create secret (type s3, key_id 'k', secret 's')"),
    ("UPDATE EXTENSIONS", "update extensions"),
]
# DuckDB's parser has no EXPLAIN of these: refused before anything runs, in its own words.
UNEXPLAINABLE = ["attach '{folder}/../forged.duckdb' as f", "export database '{folder}'", "detach athanor"]
FORMS = [
    "explain analyze {s}",
    "explain {s}",
    "EXPLAIN /* x */ ANALYZE {s}",
    "explain (analyze, format json) {s}",
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    ("kind", "statement"), EXPLAINED, ids=[f"{k}-{i}" for i, (k, _) in enumerate(EXPLAINED)]
)
def test_explain_of_a_refused_statement_is_refused_and_no_part_file_changes(
    unchanged: Settings, capsys, form: str, kind: str, statement: str
) -> None:
    part, folder = a_part_file(unchanged), parts_dir(unchanged.snapshot)
    before = part_files(unchanged)
    sql = form.format(s=statement.format(part=part, folder=folder))

    assert main(["query", sql]) == 1

    assert (
        capsys.readouterr().err
        == f"error: athanor query is read-only: EXPLAIN of {kind} is not allowed {ONLY}\n"
    )
    assert part_files(unchanged) == before
    assert snapshot_totals(unchanged) == (7, Decimal("34.22"))


@pytest.mark.parametrize("statement", UNEXPLAINABLE)
def test_explain_of_what_duckdb_cannot_explain_runs_nothing(
    unchanged: Settings, capsys, statement: str
) -> None:
    before = part_files(unchanged)
    sql = "explain analyze " + statement.format(folder=parts_dir(unchanged.snapshot))
    assert main(["query", sql]) == 1
    assert capsys.readouterr().err.startswith("error: Parser Error: syntax error")
    assert part_files(unchanged) == before
    assert not list(unchanged.home.rglob("forged.duckdb"))


@pytest.mark.parametrize(
    "sql",
    [
        "explain analyze select count(*) from billing_facts",
        "explain select 1",
        "explain (analyze) select 1",
        "explain (select 1)",
        "EXPLAIN -- why\n ANALYZE with t as (select 1) from t",
    ],
)
def test_explain_of_a_read_still_runs(unchanged: Settings, capsys, sql: str) -> None:
    before = part_files(unchanged)
    assert main(["query", sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("explain_key,explain_value\n")
    assert part_files(unchanged) == before


def test_explain_of_what_cannot_be_read_is_refused(unchanged: Settings) -> None:
    """DuckDB parses the whole text first, so this is a guard, met only if the parsers disagree."""
    con = open_readonly(unchanged.snapshot, snapshot=True, memory_limit="1GB")
    try:
        with pytest.raises(QueryRefused, match="EXPLAIN of a statement it cannot read"):
            _explained(con, "explain analyze")
        with pytest.raises(QueryRefused, match="EXPLAIN of a statement it cannot read"):
            _explained(con, "explain (analyze) copy (")
    finally:
        con.close()


def test_the_session_allows_reading_the_part_files_but_no_file_beside_them(unchanged: Settings) -> None:
    """The second lock: with the statement check bypassed, no new file can be made in the parts
    folder or next to it (DuckDB could still overwrite a listed file in place: the publish's
    digests catch that, next test)."""
    part, folder = a_part_file(unchanged), parts_dir(unchanged.snapshot)
    before = part_files(unchanged)
    con = open_readonly(unchanged.snapshot, snapshot=True, memory_limit="1GB")
    try:
        assert con.execute(f"select count(*) from read_parquet('{part}')").fetchone()[0] > 0
        for target in (folder / "billing_facts" / "new.parquet", folder / ".." / "x.parquet", part):
            with pytest.raises(duckdb.PermissionException):
                con.execute(f"copy (select 1 as a) to '{target}' (format parquet)")
        allowed = con.execute(
            "select value from duckdb_settings() where name = 'allowed_directories'"
        ).fetchone()[0]
    finally:
        con.close()
    # Only DuckDB's own spill folder, which it always allows; not the parts folder.
    assert allowed == f"[{unchanged.snapshot}.tmp/]"
    assert part_files(unchanged) == before


def test_a_part_file_changed_since_it_was_written_is_written_again(published: Settings) -> None:
    """The forged file does not survive the next publish: its size or SHA-256 no longer match."""
    part = a_part_file(published)
    forger = duckdb.connect()
    forger.execute(f"copy (select * from read_parquet('{part}') limit 0) to '{part}' (format parquet)")
    forger.close()
    assert snapshot_totals(published)[0] < 7

    con = connect(published.warehouse, memory_limit="1GB")
    publish_snapshot(con, published.warehouse, published.snapshot)
    con.close()

    assert snapshot_totals(published) == (7, Decimal("34.22"))


def test_a_query_stops_at_its_time_limit(unchanged: Settings, capsys, monkeypatch) -> None:
    monkeypatch.setenv("ATHANOR_QUERY_TIMEOUT_S", "0.5")
    cross = "select count(*) from range(100000000) a, range(100000000) b"
    assert main(["query", cross]) == 1
    assert capsys.readouterr().err == (
        "error: athanor query stopped after 0.5 s, its time limit (ATHANOR_QUERY_TIMEOUT_S)\n"
    )


def test_the_spill_space_is_capped(unchanged: Settings) -> None:
    con = open_readonly(unchanged.snapshot, snapshot=True, memory_limit="1GB", max_temp="64MB")
    try:
        assert con.execute(
            "select value from duckdb_settings() where name = 'max_temp_directory_size'"
        ).fetchone()[0] in ("64.0 MiB", "61.0 MiB", "64.0 MB")
    finally:
        con.close()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_setting_that_is_not_a_positive_number_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="ATHANOR_QUERY_TIMEOUT_S must be a"):
        Settings.from_env({"ATHANOR_QUERY_TIMEOUT_S": value})
