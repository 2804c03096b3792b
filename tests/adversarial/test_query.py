"""`athanor query` cannot harm the warehouse nor reach past it.

Each statement an attacker (or a careless paste) would try is refused with exit code 1 and
one line on stderr, and afterwards every file in the Athanor home, the live warehouse and
its snapshot included, is byte for byte what it was, and `billing_facts` holds the same rows.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from athanor.cli import main
from athanor.settings import Settings
from athanor.warehouse.readonly import open_readonly
from tests.adversarial.conftest import JOBS

ONLY = "(it runs SELECT, EXPLAIN, PRAGMA and CALL only)"
NO_FILES = "athanor query reads only the warehouse: no files, network or extensions (Permission Error: "
LOCKED = "athanor query cannot change settings (Invalid Input Error: Cannot change configuration option "


@pytest.fixture
def published(home: Path, gcp_published: Path, capsys) -> Settings:
    """A copy of the published warehouse of the test's own."""
    shutil.copytree(gcp_published, home / "warehouse")
    capsys.readouterr()
    return Settings.from_env()


@pytest.fixture(scope="module")
def shared_home(gcp_published: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy for the attacks, which must change nothing: each fingerprints every file of the
    home before and after its own statement, so an attack that changed one fails its own test
    (and those after it) and never passes."""
    folder = tmp_path_factory.mktemp("shared-home")
    shutil.copytree(gcp_published, folder / "warehouse")
    return folder


def fingerprint(home: Path) -> dict[str, str]:
    """Every file under the home with its SHA-256; a new, changed or missing file shows."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


def billing_checksum(warehouse: Path) -> tuple:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(
            "select count(*), sum(billed_cost), bit_xor(hash(b)) from billing_facts b"
        ).fetchone()
    finally:
        con.close()


# (case, SQL with {warehouse} for the live file, the one line on stderr). Hand-written from
# what each statement would do: the kind check refuses every statement that is not a read
# before anything runs; the locked session refuses file, network, extension and setting
# access inside the reads it lets through.
ATTACKS = [
    (
        "attach the live warehouse read-write, then delete",
        "attach '{warehouse}' as w (read_write); delete from w.billing_facts",
        f"athanor query is read-only: ATTACH is not allowed {ONLY}",
    ),
    (
        "copy to a file",
        "copy (select * from focus_charges) to 'out.csv'",
        f"athanor query is read-only: COPY is not allowed {ONLY}",
    ),
    (
        "export the database",
        "export database 'dump'",
        f"athanor query is read-only: EXPORT is not allowed {ONLY}",
    ),
    (
        "import a database",
        "import database '/etc'",
        NO_FILES
        + 'Cannot access file "/etc/schema.sql" - file system operations are disabled by configuration)',
    ),
    (
        "read_csv of a local file",
        "select * from read_csv('/etc/passwd')",
        NO_FILES + 'Cannot access file "/etc/passwd" - file system operations are disabled by configuration)',
    ),
    (
        "read_text of a local file",
        "select * from read_text('/etc/passwd')",
        NO_FILES + 'Cannot access file "/etc/passwd" - file system operations are disabled by configuration)',
    ),
    (
        "glob a folder",
        "select * from glob('/etc/*')",
        NO_FILES + 'Cannot access file "/etc/*" - file system operations are disabled by configuration)',
    ),
    (
        "a URL",
        "select * from 'https://example.com/x.csv'",
        NO_FILES
        + 'Cannot access file "https://example.com/x.csv" - file system operations are disabled by configuration)',
    ),
    ("install an extension", "install httpfs", f"athanor query is read-only: INSTALL is not allowed {ONLY}"),
    (
        "force install",
        "force install httpfs",
        f"athanor query is read-only: FORCE INSTALL is not allowed {ONLY}",
    ),
    ("load an extension", "load httpfs", f"athanor query is read-only: LOAD is not allowed {ONLY}"),
    (
        "update extensions",
        "update extensions",
        f"athanor query is read-only: UPDATE EXTENSIONS is not allowed {ONLY}",
    ),
    (
        "turn external access back on",
        "set enable_external_access = true",
        f"athanor query is read-only: SET is not allowed {ONLY}",
    ),
    (
        "unlock the configuration",
        "reset lock_configuration",
        f"athanor query is read-only: RESET is not allowed {ONLY}",
    ),
    (
        "pragma that sets",
        "pragma threads = 64",
        f"athanor query is read-only: a PRAGMA that sets an option is not allowed {ONLY}",
    ),
    (
        "pragma that switches profiling on",
        "pragma enable_profiling",
        LOCKED + '"enable_profiling" - the configuration has been locked)',
    ),
    (
        "call that switches logging on",
        "call enable_logging()",
        LOCKED + '"enable_logging" - the configuration has been locked)',
    ),
    (
        "create a table",
        "create table t as select 1",
        f"athanor query is read-only: CREATE is not allowed {ONLY}",
    ),
    ("delete", "delete from billing_facts", f"athanor query is read-only: DELETE is not allowed {ONLY}"),
    (
        "delete behind a WITH",
        "with x as (select 1) delete from billing_facts",
        f"athanor query is read-only: DELETE is not allowed {ONLY}",
    ),
    (
        "update",
        "update billing_facts set billed_cost = 0",
        f"athanor query is read-only: UPDATE is not allowed {ONLY}",
    ),
    ("drop", "drop table billing_facts", f"athanor query is read-only: DROP is not allowed {ONLY}"),
    (
        "a read, then a delete",
        "select 1; delete from billing_facts",
        f"athanor query is read-only: DELETE is not allowed {ONLY}",
    ),
    *[
        (statement, statement, f"athanor query is read-only: {word} is not allowed {ONLY}")
        for word, statement in [
            ("DETACH", "detach athanor"),
            ("USE", "use memory"),
            ("TRUNCATE", "truncate billing_facts"),
            ("INSERT", "insert into billing_facts select * from billing_facts"),
            ("MERGE", "merge into billing_facts using billing_facts s on true when matched then delete"),
            ("ALTER", "alter table billing_facts add column z int"),
            ("COMMENT", "comment on table billing_facts is 'x'"),
            ("VACUUM", "vacuum"),
            ("ANALYZE", "analyze"),
            ("PREPARE", "prepare p as delete from billing_facts"),
            ("BEGIN", "begin"),
            ("CREATE", "create temp table t as select 1"),
            ("CREATE", "create secret (type s3, key_id 'k', secret 's')"),
            ("SET", "set variable x = 1"),
        ]
    ],
    (
        "explain analyze runs the delete",
        "explain analyze delete from billing_facts",
        f"athanor query is read-only: EXPLAIN of DELETE is not allowed {ONLY}",
    ),
    (
        "explain analyze runs the delete of a copied table",
        "explain analyze delete from loads",
        f"athanor query is read-only: EXPLAIN of DELETE is not allowed {ONLY}",
    ),
]


@pytest.mark.parametrize(("case", "statement", "message"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_each_attack_is_one_line_and_exit_1_and_leaves_every_file_as_it_was(
    unchanged: Settings, capsys, case: str, statement: str, message: str
) -> None:
    before, rows_before = fingerprint(unchanged.home), billing_checksum(unchanged.warehouse)

    assert main(["query", statement.format(warehouse=unchanged.warehouse)]) == 1

    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"error: {message}\n")
    assert fingerprint(unchanged.home) == before
    assert billing_checksum(unchanged.warehouse) == rows_before == (7, Decimal("34.22"), rows_before[2])


def test_the_live_file_is_as_safe_as_the_snapshot(published: Settings, home: Path, capsys) -> None:
    before = fingerprint(home)
    attack = f"attach '{published.snapshot}' as s (read_write); delete from s.billing_facts"
    assert main(["query", "--live", attack]) == 1
    assert capsys.readouterr().err == f"error: athanor query is read-only: ATTACH is not allowed {ONLY}\n"
    assert main(["query", "--live", "select * from read_text('/etc/passwd')"]) == 1
    assert capsys.readouterr().err.startswith(f"error: {NO_FILES}")
    assert fingerprint(home) == before


# The second lock alone: the session `athanor query` opens, with the statement check bypassed.
SESSION_REFUSES = [
    ("attach '{warehouse}' as w (read_write)", duckdb.PermissionException),
    ("copy (select 1) to 'out.csv'", duckdb.PermissionException),
    ("export database 'dump'", duckdb.PermissionException),
    ("select * from read_csv('/etc/passwd')", duckdb.PermissionException),
    ("select * from read_text('/etc/passwd')", duckdb.PermissionException),
    ("install httpfs", duckdb.PermissionException),
    ("load httpfs", duckdb.PermissionException),
    ("set enable_external_access = true", duckdb.InvalidInputException),
    ("set lock_configuration = false", duckdb.InvalidInputException),
    ("set allowed_directories = ['/etc']", duckdb.InvalidInputException),
    ("create table t as select 1", duckdb.InvalidInputException),
    ("delete from billing_facts", duckdb.BinderException),  # a view over Parquet files in the snapshot
    ("delete from loads", duckdb.InvalidInputException),
]


@pytest.mark.parametrize(("statement", "error"), SESSION_REFUSES, ids=[s for s, _ in SESSION_REFUSES])
def test_the_session_itself_refuses_what_the_statement_check_would(
    unchanged: Settings, statement: str, error: type[Exception]
) -> None:
    before = fingerprint(unchanged.home)
    con = open_readonly(unchanged.snapshot, snapshot=True, memory_limit="1GB")
    try:
        with pytest.raises(error):
            con.execute(statement.format(warehouse=unchanged.warehouse))
        settings = dict(
            con.execute(
                "select name, value from duckdb_settings() where name in "
                "('enable_external_access', 'lock_configuration', 'autoinstall_known_extensions', "
                "'autoload_known_extensions', 'allow_community_extensions', 'access_mode')"
            ).fetchall()
        )
    finally:
        con.close()
    assert settings == {
        "access_mode": "read_only",
        "enable_external_access": "false",
        "lock_configuration": "true",
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "allow_community_extensions": "false",
    }
    assert fingerprint(unchanged.home) == before


@pytest.mark.parametrize("where", [[], ["--live"]], ids=["snapshot", "live"])
def test_reads_run_on_the_snapshot_and_on_the_live_file(
    published: Settings, capsys, where: list[str]
) -> None:
    # The GCP fixture: charges 23.47 + 1.25 + 10 + 6.50 + 2 (tax) and credits -2, -7: seven rows, 34.22.
    total = "select count(*) as n, sum(BilledCost) as billed from focus_charges"
    assert main(["query", total, "--format", "csv", *where]) == 0
    assert capsys.readouterr().out == "n,billed\n7,34.22\n"
    assert (
        main(
            ["query", "with t as (from focus_charges) select count(*) as n from t", "--format", "csv", *where]
        )
        == 0
    )
    assert capsys.readouterr().out == "n\n7\n"
    for statement in (
        "pragma show_tables",
        "describe focus_charges",
        "explain " + total,
        "call pragma_version()",
    ):
        assert main(["query", statement, *where]) == 0, statement
    assert "focus_charges" in _tables(published)


def _tables(settings: Settings) -> str:
    con = open_readonly(settings.snapshot, snapshot=True, memory_limit="1GB")
    try:
        return " ".join(name for (name,) in con.execute("pragma show_tables").fetchall())
    finally:
        con.close()


# ----------------------------------------------------------------- snapshot by default


def test_query_reads_the_snapshot_unless_asked_for_the_live_file(published: Settings, capsys) -> None:
    # After the snapshot, a job log (six runs) is loaded into the live warehouse only.
    assert main(["ingest", str(JOBS)]) == 0
    capsys.readouterr()
    runs = "select count(*) as runs from job_run_facts"

    assert main(["query", runs, "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "runs\n0\n"
    assert re.fullmatch(
        r"note: reading the snapshot published \d{4}-\d\d-\d\d \d\d:\d\d UTC; "
        r"the warehouse has changed since \(`--live` reads it\)\n",
        captured.err,
    )

    assert main(["query", runs, "--format", "csv", "--live"]) == 0
    assert capsys.readouterr() == ("runs\n6\n", "")


def test_a_writer_holding_the_warehouse_blocks_no_reader_of_the_snapshot(
    published: Settings, capsys, writer
) -> None:
    with writer(published.warehouse) as proc:
        assert main(["query", "select count(*) as n from focus_charges", "--format", "csv"]) == 0
        assert capsys.readouterr().out == "n\n7\n"

        assert main(["query", "select 1", "--live"]) == 1
        assert capsys.readouterr().err == (
            f"error: {published.warehouse} is being written by another process (a load or the nightly run); "
            "leave out --live to read the snapshot\n"
        )
    assert proc.returncode == 0


def test_a_reader_of_the_snapshot_leaves_the_writer_free(published: Settings) -> None:
    """The nightly run opens the live file for writing while an analyst's query is open."""
    con = open_readonly(published.snapshot, snapshot=True, memory_limit="1GB")
    try:
        opened = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, duckdb; duckdb.connect(sys.argv[1]).close()",
                str(published.warehouse),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert con.execute("select count(*) from billing_facts").fetchone() == (7,)
    finally:
        con.close()
    assert (opened.returncode, opened.stderr) == (0, "")


# --------------------------------------------------------------------------- CSV cells

FORMULAS = (
    'select 1 as "=cols", \'=HYPERLINK("http://evil.example","open")\' as link, \'+cmd|x\' as plus, '
    "'@SUM(1)' as at, '-2+3' as minus, chr(9) || '=1' as tab, chr(13) || '=1' as cr, "
    "-12.5 as negative, 'plain' as text"
)


def test_csv_cells_a_spreadsheet_would_run_get_a_leading_apostrophe(published: Settings, capsys) -> None:
    assert main(["query", FORMULAS, "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.split("\n", 1)
    # The header cell and every text cell starting with = + - @ tab or CR; the number -12.5 stays.
    assert header == "'=cols,link,plus,at,minus,tab,cr,negative,text"
    assert (
        row
        == '1,"\'=HYPERLINK(""http://evil.example"",""open"")",\'+cmd|x,\'@SUM(1),\'-2+3,\'\t=1,\'\r=1,-12.5,plain\n'
    )


def test_raw_csv_leaves_cells_as_they_are_for_programs(published: Settings, capsys) -> None:
    assert main(["query", FORMULAS, "--format", "csv", "--raw-csv"]) == 0
    header, row = capsys.readouterr().out.split("\n", 1)
    assert header == "=cols,link,plus,at,minus,tab,cr,negative,text"
    assert (
        row == '1,"=HYPERLINK(""http://evil.example"",""open"")",+cmd|x,@SUM(1),-2+3,\t=1,\r=1,-12.5,plain\n'
    )
