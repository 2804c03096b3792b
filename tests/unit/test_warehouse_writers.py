"""Every table has one writer, and every insert names its columns."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

import athanor
from athanor.warehouse import LoadRecord, connect, insert_rows, mark_replaced, record_load
from athanor.warehouse import rows as insert_rows_module

PACKAGE = Path(athanor.__file__).resolve().parent
SQL = PACKAGE / "sql"

# An insert whose target is not followed by a column list or BY NAME fills columns by position.
POSITIONAL_INSERT = re.compile(
    r"\binsert\s+(?:or\s+(?:replace|ignore)\s+)?into\s+([\w.\"]+)\s+(?!by\s+name\b)(?!\()", re.IGNORECASE
)
# What writes rows of a table: inserts, updates, and tables created from a query.
WRITES = re.compile(
    r"\b(?:insert\s+(?:or\s+(?:replace|ignore)\s+)?into|update|create\s+(?:or\s+replace\s+)?(?:temp\s+|temporary\s+)?table)"
    r"\s+(\w+)\b(?=[^;]*?(?:\(|\bby\s+name\b|\bset\b|\bas\b|\bselect\b|\bvalues\b))",
    re.IGNORECASE,
)


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py")) + sorted(SQL.rglob("*.sql"))


def test_no_insert_in_the_package_fills_columns_by_position() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0).strip()}"
        for path in _sources()
        for text in [path.read_text()]
        for m in POSITIONAL_INSERT.finditer(text)
    ]
    assert found == [], "name the columns (insert into t (a, b) ... or insert into t by name select ...)"


@pytest.mark.parametrize(
    "statement",
    [
        "insert into loads values (?, ?)",
        "INSERT OR REPLACE INTO pipeline_runs VALUES (?)",
        "insert into backtests select * from bt",
    ],
)
def test_the_scan_catches_positional_inserts(statement: str) -> None:
    assert POSITIONAL_INSERT.search(statement)


@pytest.mark.parametrize(
    "statement",
    ["insert into loads (load_id, kind) values (?, ?)", "insert into billing_facts by name select 1 as a"],
)
def test_the_scan_lets_named_inserts_pass(statement: str) -> None:
    assert not POSITIONAL_INSERT.search(statement)


def _writers() -> dict[str, set[str]]:
    """Table -> the functions whose SQL (or insert_rows call) writes its rows."""
    writers: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text())
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            name = f"{module}.{function.name}"
            for node in ast.walk(function):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    if node.value is ast.get_docstring(function, clean=False):
                        continue
                    for m in WRITES.finditer(node.value):
                        writers[m.group(1).lower()].add(name)
                elif (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", getattr(node.func, "attr", None)) == "insert_rows"
                    and len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant)
                ):
                    writers[node.args[1].value].add(name)
    return writers


@pytest.mark.slow
def test_every_table_has_one_writer() -> None:
    writers = _writers()
    shared = {table: sorted(names) for table, names in writers.items() if len(names) > 1}
    # The ledgers' two writers live side by side: a load's row, and the status a restatement sets;
    # an alert's row, and the channel a logged alert moves to once a webhook takes it.
    assert shared == {
        "loads": ["athanor.warehouse.ledger.mark_replaced", "athanor.warehouse.ledger.record_load"],
        "spend_alerts": ["athanor.watch.alerts._deliver_logged", "athanor.watch.alerts.send_new"],
    }
    assert writers["recommendations"] == {"athanor.recommend.nightly.store_recommendations"}
    assert writers["dq_results"] == {"athanor.quality.runner.store_results"}
    assert writers["schema_migrations"] == {"athanor.warehouse.migrations._record"}


# ---------------------------------------------------------------------------- insert_rows


def test_insert_rows_names_its_columns_and_leaves_the_others_null() -> None:
    con = duckdb.connect()
    con.execute("create table t (a varchar primary key, b varchar[], c integer)")
    # Columns given in another order than the table's: they land by name.
    assert insert_rows(con, "t", [{"c": 1, "a": "x"}, {"c": 2, "a": "y"}]) == 2
    assert insert_rows(con, "t", [{"a": "z", "b": ("p", "q")}]) == 1
    assert con.execute("from t order by a").fetchall() == [
        ("x", None, 1),
        ("y", None, 2),
        ("z", ["p", "q"], None),
    ]
    insert_rows(con, "t", [{"a": "x", "c": 9}], replace=True)
    assert con.execute("select c from t where a = 'x'").fetchall() == [(9,)]
    assert insert_rows(con, "t", []) == 0
    with pytest.raises(ValueError, match="different columns"):
        insert_rows(con, "t", [{"a": "u"}, {"c": 3}])


def _rows(count: int) -> list[dict]:
    """Rows of every kind of value the stages insert, some left null."""
    return [
        {
            "k": f"r{i:03d}",
            "money": Decimal("1.125") * i if i % 3 else None,
            "share": i / 7,
            "day": date(2026, 11, 1 + i % 28),
            "seen_at": datetime(2026, 11, 30, i % 24),
            "labels": ("a", f"b{i}") if i % 2 else None,
            "flag": i % 2 == 0,
            "n": i,
        }
        for i in range(count)
    ]


TYPED = (
    "create table t (k varchar primary key, money decimal(38, 12), share double, day date, "
    "seen_at timestamp, labels varchar[], flag boolean, n bigint, extra varchar)"
)


def test_insert_rows_in_one_arrow_batch_writes_what_row_by_row_writes(monkeypatch) -> None:
    batched, by_row = duckdb.connect(), duckdb.connect()
    for con in (batched, by_row):
        con.execute(TYPED)
    rows = _rows(insert_rows_module.ARROW_FROM_ROWS + 5)
    assert insert_rows(batched, "t", rows) == len(rows)
    monkeypatch.setattr(insert_rows_module, "ARROW_FROM_ROWS", len(rows) + 1)  # row by row
    assert insert_rows(by_row, "t", rows) == len(rows)
    written = [con.execute("from t order by k").fetchall() for con in (batched, by_row)]
    assert written[0] == written[1]
    assert written[0][5] == ("r005", Decimal("5.625"), 5 / 7, date(2026, 11, 6), datetime(2026, 11, 30, 5),
                             ["a", "b5"], False, 5, None)  # fmt: skip
    # Replacing by primary key, in a batch too.
    monkeypatch.undo()
    changed = [{**row, "n": -row["n"]} for row in rows]
    insert_rows(batched, "t", changed, replace=True)
    assert batched.execute("select count(*), sum(n) from t").fetchone() == (len(rows), -sum(range(len(rows))))


def test_insert_rows_binds_row_by_row_what_arrow_cannot_type() -> None:
    con = duckdb.connect()
    con.execute(TYPED)
    # A column holding a number and a text (cast to varchar by the insert), and one mapping.
    mixed = [
        {"k": f"m{i}", "extra": i if i % 2 else f"t{i}"} for i in range(insert_rows_module.ARROW_FROM_ROWS)
    ]
    assert insert_rows_module._arrow_table(mixed) is None
    assert insert_rows(con, "t", mixed) == len(mixed)
    assert con.execute("select extra from t where k in ('m1', 'm2') order by k").fetchall() == [
        ("1",),
        ("t2",),
    ]
    assert insert_rows_module._arrow_table([{"k": "s", "extra": {"a": 1}}]) is None
    # Decimals of more than 38 digits in all (Arrow's decimal256): row by row, to the column's type.
    wide = [{"k": f"w{i}", "money": Decimal("1E+20") if i else Decimal("1E-20")} for i in range(20)]
    assert insert_rows_module._arrow_table(wide) is None
    assert insert_rows(con, "t", wide) == len(wide)
    assert con.execute("select count(*), max(money) from t where k like 'w%'").fetchone() == (
        20,
        Decimal("1E+20"),
    )


# ---------------------------------------------------------------------------- the loads ledger


def _record(load_id: str, **fields) -> LoadRecord:
    at = datetime(2026, 11, 30, 2, 30)
    base = dict(
        load_id=load_id,
        kind="billing",
        source_uri="landing/billing",
        files=("a.csv.gz",),
        checksum_sha256="ab" * 32,
        size_bytes=120,
        status="loaded",
        started_at=at,
        finished_at=at,
    )
    return LoadRecord(**{**base, **fields})


def test_record_load_writes_every_column_by_name_and_overwrites_the_same_delivery(tmp_path: Path) -> None:
    con = connect(tmp_path / "w.duckdb")
    record_load(con, _record("L1", source_format="focus", row_count=3, billing_periods=("2026-11",),
                             billing_accounts=("acct-1",)))  # fmt: skip
    record_load(con, _record("L2", kind="jobs", status="failed", message="a.csv: row 3, column state: ..."))
    rows = con.execute(
        "select load_id, kind, source_format, files, row_count, billing_periods, billing_accounts, status, message"
        " from loads order by load_id"
    ).fetchall()
    assert rows == [
        ("L1", "billing", "focus", ["a.csv.gz"], 3, ["2026-11"], ["acct-1"], "loaded", None),
        ("L2", "jobs", None, ["a.csv.gz"], None, None, None, "failed", "a.csv: row 3, column state: ..."),
    ]
    record_load(con, _record("L2", kind="jobs", row_count=7))  # the delivery loads on a later run
    assert con.execute("select status, row_count, message from loads where load_id = 'L2'").fetchall() == [
        ("loaded", 7, None)
    ]
    con.close()


def test_mark_replaced_flags_billing_loads_with_no_rows_left(tmp_path: Path) -> None:
    con = connect(tmp_path / "w.duckdb")
    record_load(con, _record("OLD"))
    record_load(con, _record("NEW"))
    record_load(con, _record("JOBS", kind="jobs"))
    con.execute(
        "insert into billing_facts by name select 'NEW' as load_id, 'b.csv' as source_file, 1 as source_row,"
        " 'focus' as source_format, 'acct-1' as billing_account_id, 'USD' as billing_currency,"
        " timestamp '2026-11-01' as billing_period_start, timestamp '2026-12-01' as billing_period_end,"
        " timestamp '2026-11-01' as charge_period_start, timestamp '2026-11-01 01:00' as charge_period_end,"
        " 'Usage' as charge_category, 1 as billed_cost, 1 as effective_cost"
    )
    mark_replaced(con)
    statuses = dict(con.execute("select load_id, status from loads").fetchall())
    assert statuses == {"OLD": "replaced", "NEW": "loaded", "JOBS": "loaded"}
    con.close()
