"""The lake mode's settings and the pieces of athanor.warehouse.lake that need no server."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal as D
from pathlib import Path

import pytest

from athanor.ingest.billing import ingest_billing
from athanor.settings import Settings
from athanor.warehouse import connect, lake
from tests.unit import test_ingest
from tests.unit.test_ingest import focus_rows, write

LAKE = {
    "ATHANOR_WAREHOUSE_MODE": "lake",
    "ATHANOR_LAKE_CATALOG_URI": "postgresql+psycopg2://u:secret@127.0.0.1:5432/cat",
    "ATHANOR_LAKE_WAREHOUSE": "s3://bucket/lake/",
    "ATHANOR_S3_ENDPOINT_URL": "http://127.0.0.1:7480",
}


def test_the_file_mode_is_the_default_and_has_no_lake() -> None:
    settings = Settings.from_env({})
    assert settings.warehouse_mode == "file"
    assert lake.LakeConfig.from_settings(settings) is None


def test_lake_settings() -> None:
    settings = Settings.from_env({**LAKE, "ATHANOR_WAREHOUSE_MODE": " Lake "})
    cfg = lake.LakeConfig.from_settings(settings)
    assert cfg == lake.LakeConfig(
        catalog_uri=LAKE["ATHANOR_LAKE_CATALOG_URI"],
        warehouse="s3://bucket/lake",
        namespace="athanor",
        s3_endpoint_url="http://127.0.0.1:7480",
        region="us-east-1",
    )
    assert "secret" not in repr(settings)  # the catalog URI may carry a password


def test_an_unknown_mode_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="ATHANOR_WAREHOUSE_MODE must be file or lake, got 'iceberg'"):
        Settings.from_env({"ATHANOR_WAREHOUSE_MODE": "iceberg"})


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        ("ATHANOR_LAKE_CATALOG_URI", "needs ATHANOR_LAKE_CATALOG_URI"),
        ("ATHANOR_LAKE_WAREHOUSE", "needs ATHANOR_LAKE_WAREHOUSE"),
    ],
)
def test_the_lake_mode_names_a_missing_setting(drop: str, message: str) -> None:
    env = {k: v for k, v in LAKE.items() if k != drop}
    with pytest.raises(lake.LakeError, match=message):
        lake.LakeConfig.from_settings(Settings.from_env(env))


def test_the_lake_warehouse_must_be_a_bucket() -> None:
    with pytest.raises(lake.LakeError, match=r"must be an s3:// \(or file:///\) URL, got '/data/lake'"):
        lake.LakeConfig.from_settings(Settings.from_env({**LAKE, "ATHANOR_LAKE_WAREHOUSE": "/data/lake"}))


def test_the_file_mode_keeps_its_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATHANOR_WAREHOUSE_MODE", raising=False)
    con = connect(tmp_path / "w.duckdb")
    assert not lake.attached(con)
    tables = "select table_type from information_schema.tables where table_name = 'billing_facts'"
    assert con.execute(tables).fetchall() == [("BASE TABLE",)]
    # Loads write the table itself, past any view: in the file mode that is the same table.
    staged = lake.staging(con, "billing_facts")
    assert staged == '"w".main."billing_facts"'
    assert lake.record_snapshots(con, "run", None) == {}
    lake.attach_for_run(con, None, "run")
    assert not lake.attached(con)
    con.close()


def test_a_load_replaces_exactly_its_account_months() -> None:
    """The overwrite filter: any of the load's (account, period) pairs, periods as ISO text."""
    from pyiceberg.expressions import And, EqualTo, Or
    from pyiceberg.expressions.visitors import expression_evaluator
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import NestedField, StringType, TimestampType

    keys = [("a", datetime(2026, 10, 1)), ("b", datetime(2026, 11, 1))]
    found = lake._replaced_filter("billing_facts", keys)
    assert found == Or(
        And(EqualTo("billing_account_id", "a"), EqualTo("billing_period_start", "2026-10-01T00:00:00")),
        And(EqualTo("billing_account_id", "b"), EqualTo("billing_period_start", "2026-11-01T00:00:00")),
    )
    schema = Schema(
        NestedField(1, "billing_account_id", StringType(), required=True),
        NestedField(2, "billing_period_start", TimestampType(), required=True),
    )
    matches = expression_evaluator(schema, found, case_sensitive=True)
    october, november = 1790812800000000, 1793491200000000  # 2026-10-01 and 2026-11-01 in µs
    assert [matches(Record(a, t)) for a, t in [("a", october), ("a", november), ("b", november)]] == [
        True,
        False,
        True,
    ]
    with pytest.raises(ValueError, match="replaces nothing"):
        lake._replaced_filter("billing_facts", [])


def test_an_unreachable_catalog_is_named_without_its_password() -> None:
    cfg = lake.LakeConfig(
        catalog_uri="postgresql+psycopg2://u:secret@127.0.0.1:9/cat",  # port 9: nobody listens
        warehouse="s3://bucket/lake",
        namespace="athanor",
        s3_endpoint_url=None,
        region="us-east-1",
    )
    with pytest.raises(lake.LakeError) as caught:
        lake.catalog(cfg)
    assert "ATHANOR_LAKE_CATALOG_URI postgresql+psycopg2://u:***@127.0.0.1:9/cat" in str(caught.value)
    assert "secret" not in str(caught.value)


# A lake on this machine (SQLite catalog, file:// warehouse): the same code paths as on a
# bucket with PostgreSQL (tests/integration/test_lake_warehouse.py), without the servers.
@pytest.fixture
def local_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ATHANOR_WAREHOUSE_MODE", "lake")
    monkeypatch.setenv("ATHANOR_LAKE_CATALOG_URI", f"sqlite:///{tmp_path / 'catalog.db'}")
    monkeypatch.setenv("ATHANOR_LAKE_WAREHOUSE", f"file://{tmp_path / 'lake'}")
    (tmp_path / "lake").mkdir()
    con = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    assert lake.attached(con)
    yield con
    con.close()


@pytest.mark.parametrize(
    "case",
    [
        test_ingest.test_restated_month_replaces_the_earlier_delivery,
        test_ingest.test_failed_restatement_leaves_the_previous_version,
        test_ingest.test_failure_rolls_back_after_the_insert,
    ],
    ids=lambda case: case.__name__,
)
def test_file_mode_load_tests_hold_in_a_local_lake(case, local_lake, tmp_path: Path, monkeypatch) -> None:
    args = (
        (local_lake, tmp_path, monkeypatch)
        if "monkeypatch" in case.__code__.co_varnames
        else (local_lake, tmp_path)
    )
    case(*args)
    staged = lake.staging(local_lake, "billing_facts")
    assert local_lake.execute(f"select count(*) from {staged}").fetchall() == [(0,)]


def test_a_column_added_by_a_migration_reaches_the_lake(local_lake, tmp_path: Path) -> None:
    con = local_lake
    ingest_billing(con, [write(tmp_path / "a/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00"]))])
    con.execute(f"alter table {lake.staging(con, 'billing_facts')} add column x_new_figure integer")
    lake.attach(con, lake.config())  # what the next connect does after the migration
    ingest_billing(con, [write(tmp_path / "b/nov.csv", focus_rows("acct", "2026-11", ["4.00"]))])
    tbl = lake.table(lake.config(), "billing_facts")
    assert "x_new_figure" in tbl.schema().column_names
    assert con.execute(
        "select strftime(billing_period_start, '%m'), count(*), count(x_new_figure), sum(billed_cost)"
        " from billing_facts group by all order by 1"
    ).fetchall() == [("10", 2, 0, D("3.00")), ("11", 1, 0, D("4.00"))]
