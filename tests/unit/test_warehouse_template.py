"""The tests' migrated-warehouse template (tests/support/warehouse_template.py) is what a migration makes."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from athanor.warehouse import connect, migrations
from tests.support.warehouse_template import Templates

# The catalog of a file, object by object, with what DuckDB stores of each (SQL, comments, types).
CATALOG = {
    "tables": "select table_name, comment, sql from duckdb_tables() where database_name = current_database()",
    "columns": "select table_name, column_index, column_name, data_type, column_default, is_nullable, comment"
    " from duckdb_columns() where database_name = current_database()",
    "views": "select view_name, comment, sql from duckdb_views() where not internal and database_name = current_database()",
    "constraints": "select table_name, constraint_index, constraint_type, constraint_text"
    " from duckdb_constraints() where database_name = current_database()",
    "indexes": "select table_name, index_name, sql from duckdb_indexes() where database_name = current_database()",
    "sequences": "select sequence_name, start_value, increment_by from duckdb_sequences() where database_name = current_database()",
    "macros": "select function_name, function_type, macro_definition from duckdb_functions()"
    " where not internal and database_name = current_database()",
    "types": "select type_name, logical_type from duckdb_types() where not internal and database_name = current_database()",
}


def _contents(path: Path) -> dict[str, object]:
    """Catalog, every table's rows (sorted) and the migration records without their time."""
    with duckdb.connect(str(path), read_only=True) as con:
        out: dict[str, object] = {
            name: sorted(map(repr, con.execute(sql).fetchall())) for name, sql in CATALOG.items()
        }
        tables = [t for (t,) in con.execute("select table_name from duckdb_tables() order by 1").fetchall()]
        for table in tables:
            if table == "schema_migrations":
                continue
            out[f"rows of {table}"] = sorted(map(repr, con.execute(f'select * from "{table}"').fetchall()))
        out["migrations"] = sorted(con.execute("select name, sha256 from schema_migrations").fetchall())
        out["migration times"] = con.execute(
            "select count(distinct applied_at) from schema_migrations"
        ).fetchall()
    return out


def test_a_copied_template_is_what_a_real_migration_makes(
    tmp_path: Path, warehouse_template: Templates, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert warehouse_template.template() is not None  # built before the spy: its build migrates
    applied: list[str] = []
    real_apply = migrations._apply

    def spy(con, current, stale):
        applied.append("migrated")
        return real_apply(con, current, stale)

    monkeypatch.setattr(migrations, "_apply", spy)

    warehouse_template.enabled = False
    try:
        connect(tmp_path / "migrated.duckdb").close()
    finally:
        warehouse_template.enabled = True
    assert applied == ["migrated"]

    connect(tmp_path / "copied.duckdb").close()
    assert applied == ["migrated"]  # the copy was current: connect() applied nothing to it

    migrated, copied = _contents(tmp_path / "migrated.duckdb"), _contents(tmp_path / "copied.duckdb")
    assert len(migrated["tables"]) > 10 and migrated["rows of ref_instance_types"]  # a real schema, loaded
    assert copied == migrated
    expected = {*(f"reference/{n}" for n in migrations.REFERENCE_DATA), *(f"schema/{p.stem}" for p in migrations.SCHEMA_DIR.glob("*.sql"))}  # fmt: skip
    assert {name for name, _ in copied["migrations"]} == expected


def test_a_changed_definition_gets_a_template_of_its_own(
    tmp_path: Path, warehouse_template: Templates, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = warehouse_template.template()
    schema = tmp_path / "schema"
    schema.mkdir()
    for file in migrations.SCHEMA_DIR.glob("*.sql"):
        (schema / file.name).write_text(file.read_text())
    (schema / "999_extra.sql").write_text("create table if not exists template_extra (id integer)")
    monkeypatch.setattr(migrations, "SCHEMA_DIR", schema)

    with connect(tmp_path / "w.duckdb") as con:
        assert con.execute("select count(*) from template_extra").fetchone() == (0,)
        assert ("schema/999_extra",) in con.execute("select name from schema_migrations").fetchall()
    assert warehouse_template.template() not in (before, None)


def test_an_existing_file_or_a_read_only_open_is_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with connect(path) as con:
        con.execute("create table mine (x integer)")
        con.execute("insert into mine values (7)")
    with connect(path) as con:
        assert con.execute("select x from mine").fetchall() == [(7,)]
    with pytest.raises(duckdb.IOException):
        connect(tmp_path / "absent.duckdb", read_only=True)
    assert not (tmp_path / "absent.duckdb").exists()
