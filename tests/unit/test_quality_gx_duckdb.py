"""The GX-on-DuckDB shim (GX #11579): fails the day upstream fixes or changes what it patches."""

from __future__ import annotations

import duckdb
import pytest

from athanor.quality import gx_duckdb


def _validate_not_null(connection_string: str, creator=None):
    """One not-null expectation on a 3-row table through GX's SQL datasource; returns the GX result."""
    import great_expectations as gx
    from sqlalchemy.pool import StaticPool

    context = gx.get_context(mode="ephemeral")
    kwargs = {"creator": creator, "poolclass": StaticPool} if creator else {}
    datasource = context.data_sources.add_sql(name="t", connection_string=connection_string, kwargs=kwargs)
    batch = (
        datasource.add_table_asset(name="t", table_name="t").add_batch_definition_whole_table("b").get_batch()
    )
    suite = gx.ExpectationSuite(
        name="s", expectations=[gx.expectations.ExpectColumnValuesToNotBeNull(column="x")]
    )
    (result,) = batch.validate(suite).results
    return result


def test_upstream_still_drops_duckdb_results_without_the_shim(monkeypatch, tmp_path):
    # GX #11579: with GX's own get_connection the result is read after the pooled
    # connection was reset, and DuckDB has discarded it. When this assertion fails,
    # GX has fixed or changed it: remove gx_duckdb.install().
    from great_expectations.execution_engine import sqlalchemy_execution_engine as gx_sql

    monkeypatch.setattr(
        gx_sql.SqlAlchemyExecutionEngine, "get_connection", gx_duckdb.upstream_get_connection()
    )
    with duckdb.connect(str(tmp_path / "plain.duckdb")) as con:
        con.execute("create table t as select * from range(3) r(x)")
    result = _validate_not_null(f"duckdb:///{tmp_path / 'plain.duckdb'}")
    from athanor.quality.runner import _raised

    assert "list index out of range" in (_raised(result.exception_info) or "")


def test_gx_still_lacks_duckdb_among_persisted_connection_dialects():
    from great_expectations.execution_engine import sqlalchemy_execution_engine as gx_sql

    persisted = {d.value for d in gx_sql._PERSISTED_CONNECTION_DIALECTS}
    assert "sqlite" in persisted and "duckdb" not in persisted


def test_install_patches_get_connection_once():
    from great_expectations.execution_engine.sqlalchemy_execution_engine import SqlAlchemyExecutionEngine

    gx_duckdb.install()
    patched = SqlAlchemyExecutionEngine.get_connection
    gx_duckdb.install()
    assert SqlAlchemyExecutionEngine.get_connection is patched
    assert patched._athanor_persists_duckdb is True


def test_borrowed_connection_validates_inside_the_callers_transaction():
    gx_duckdb.install()
    con = duckdb.connect()
    con.execute("create table t (x integer)")
    con.execute("begin transaction")
    con.execute("insert into t values (1), (null), (3)")  # uncommitted: only this connection sees it
    result = _validate_not_null(gx_duckdb.DRIVER_URL, creator=lambda: gx_duckdb._BorrowedConnection(con))
    assert result.success is False and result.result["unexpected_count"] == 1
    # GX could neither commit nor roll back the caller's transaction.
    con.execute("rollback")
    assert con.execute("select count(*) from t").fetchone() == (0,)


def test_borrowing_dialect_reflects_columns_without_pg_catalog():
    con = duckdb.connect()
    con.execute("create temp table d (cost decimal(38, 12), name varchar, tags map(varchar, varchar))")
    import sqlalchemy as sa

    columns = sa.inspect(gx_duckdb.engine_for(con)).get_columns("d")
    assert [(c["name"], type(c["type"]).__name__) for c in columns] == [
        ("cost", "NUMERIC"),
        ("name", "VARCHAR"),
        ("tags", "NullType"),
    ]


def test_the_borrowing_dialect_never_opens_a_database():
    import sqlalchemy as sa

    with pytest.raises(RuntimeError, match="only borrows connections"):
        sa.create_engine(gx_duckdb.DRIVER_URL).connect()
