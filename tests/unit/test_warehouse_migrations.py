"""Schema migrations: applied once per version, what is missing reaches an old warehouse."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import duckdb
import pytest

from athanor.warehouse import connect, migrations

SCHEMA_FILES = sorted(p.stem for p in migrations.SCHEMA_DIR.glob("*.sql"))
REFERENCES = [f"reference/{name}" for name in migrations.REFERENCE_DATA]

# These tests are about migrating new files: not the copied template (tests/support/warehouse_template.py).
pytestmark = pytest.mark.usefixtures("real_warehouse_migrations")


def _ledger(path: Path) -> dict[str, tuple[str, object]]:
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute("select name, sha256, applied_at from schema_migrations").fetchall()
    return {name: (sha, at) for name, sha, at in rows}


@pytest.fixture
def applies(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The definitions each migration applied, one list per migration that ran."""
    calls: list[list[str]] = []
    real = migrations._apply

    def spy(con, current, stale):
        calls.append([d.name for d in stale])
        return real(con, current, stale)

    monkeypatch.setattr(migrations, "_apply", spy)
    return calls


def test_a_new_warehouse_records_every_definition_and_the_next_connect_applies_nothing(
    tmp_path: Path, applies: list[list[str]]
) -> None:
    path = tmp_path / "w.duckdb"
    connect(path).close()
    assert applies == [[*REFERENCES, *(f"schema/{s}" for s in SCHEMA_FILES)]]
    first = _ledger(path)
    assert set(first) == {*REFERENCES, *(f"schema/{s}" for s in SCHEMA_FILES)}

    con = connect(path)
    assert migrations.migrate(con) == []
    con.close()
    assert applies == applies[:1]  # neither the second connect nor the explicit migrate ran anything
    assert _ledger(path) == first


@pytest.mark.slow
def test_an_old_warehouse_gains_the_missing_column_and_table_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with connect(path) as con:
        con.execute("insert into reconciliations by name select 'L1' as load_id, 'a.csv' as source_file, "
                    "3 as file_rows, 3 as loaded_rows, true as reconciled, timestamp '2026-11-01' as checked_at")  # fmt: skip
        # As a warehouse written before these existed, and before the schema was versioned.
        con.execute("alter table billing_facts drop column x_commitment_end")
        con.execute("drop table ebs_listings")
        con.execute("drop table schema_migrations")

    with connect(path) as con:
        columns = {c for (c,) in con.execute("select column_name from duckdb_columns() where table_name = 'billing_facts'").fetchall()}  # fmt: skip
        assert "x_commitment_end" in columns
        assert con.execute("select count(*) from ebs_listings").fetchone() == (0,)
        assert con.execute("select load_id, file_rows from reconciliations").fetchall() == [("L1", 3)]
        assert migrations.migrate(con) == []


@pytest.mark.slow
def test_a_new_schema_file_reaches_a_recorded_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, applies: list[list[str]]
) -> None:
    path = tmp_path / "w.duckdb"
    connect(path).close()
    schema = tmp_path / "schema"
    shutil.copytree(migrations.SCHEMA_DIR, schema)
    (schema / "026_extra.sql").write_text("create table if not exists extra (id integer)")
    monkeypatch.setattr(migrations, "SCHEMA_DIR", schema)

    with connect(path) as con:
        assert con.execute("select count(*) from extra").fetchone() == (0,)
        # Every schema file ran again (idempotent), so the comments are all still there.
        comment = "select comment from duckdb_views() where view_name = 'focus_charges'"
        assert con.execute(comment).fetchone()[0].startswith("Analysts' view")
    assert applies[-1] == ["schema/026_extra"]
    assert "schema/026_extra" in _ledger(path)


@pytest.mark.slow
def test_the_reference_table_reloads_only_when_its_data_files_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.duckdb"
    connect(path).close()
    with duckdb.connect(str(path)) as con:
        count = con.execute("select count(*) from ref_instance_types").fetchone()[0]
        con.execute("delete from ref_instance_types where instance_type = 'p4d.24xlarge'")
    with connect(path) as con:  # same CSV: not reloaded, the hand edit stays
        assert con.execute("select count(*) from ref_instance_types").fetchone()[0] == count - 1

    files = dict(migrations.REFERENCE_DATA["instance_types"])
    lines = files["instances"].read_text().splitlines()
    files["instances"] = tmp_path / "instances.csv"
    files["instances"].write_text("\n".join(lines[:3]) + "\n")  # header and two instance types
    monkeypatch.setitem(migrations.REFERENCE_DATA, "instance_types", files)
    with connect(path) as con:
        ec2 = "select count(*) from ref_instance_types where instance_type not like 'ml.%'"
        assert con.execute(ec2).fetchone()[0] == 2  # and their SageMaker ml.* twins
        comment = "select comment from duckdb_tables() where table_name = 'ref_instance_types'"
        assert con.execute(comment).fetchone()[0].startswith("Reference")


def test_a_read_only_open_of_an_old_warehouse_migrates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with connect(path) as con:
        con.execute("drop table schema_migrations")
    with connect(path, read_only=True) as con:
        assert con.execute("select count(*) from loads").fetchone() == (0,)
        assert migrations.applied(con) == {}


@pytest.mark.slow
def test_connections_opening_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    opened, errors = [], []

    def open_it() -> None:
        try:
            opened.append(connect(path))
        except duckdb.Error as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert migrations.migrate(opened[0]) == []
    for con in opened:
        con.close()


@pytest.mark.slow
def test_the_daily_line_rebuild_runs_once_not_at_every_schema_change(tmp_path: Path) -> None:
    from datetime import datetime
    from decimal import Decimal

    from athanor.warehouse import insert_rows
    from tests.support.rows import hourly_usage_lines

    path = tmp_path / "w.duckdb"
    day = datetime(2026, 11, 3)
    # An Azure-style daily line: 2 VMs all day, 48 VM-hours, $48 (a warehouse loaded before 066).
    (line,) = hourly_usage_lines(
        "vm-1", day, 1, cost=Decimal("48"), gpus=8, instance_type="Standard_ND96asr_v4",
        billing_period=(datetime(2026, 11, 1), datetime(2026, 12, 1)), usage_hours=48.0,
        charge_period_end=datetime(2026, 11, 4),
    )  # fmt: skip
    with connect(path) as con:
        insert_rows(con, "billing_facts", [line])
        con.execute("delete from schema_migrations where name = 'schema/066_gpu_hourly_spread'")
    with connect(path) as con:  # 066 applies once: the line spread over its 24 hours, 2 VMs and $2 each
        hours = con.execute(
            "select count(*), sum(usage_hours), sum(effective_cost_usd) from billing_gpu_hourly"
        )
        assert hours.fetchone() == (24, 48.0, Decimal("48"))
        con.execute("update billing_gpu_hourly set effective_cost_usd = 0 where hour = ?", [day])
        con.execute("update schema_migrations set sha256 = 'changed' where name = 'schema/001_loads'")
    with connect(path) as con:  # every schema file runs again; 066 reads no history a second time
        assert con.execute("select sum(effective_cost_usd) from billing_gpu_hourly").fetchone()[0] == Decimal(
            "46"
        )
