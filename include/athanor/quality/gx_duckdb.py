"""Great Expectations on the warehouse's own DuckDB connection (two small shims).

1. GX issue #11579: on the SQL datasource every DuckDB expectation errors with
   "list index out of range". GX reads a query's rows after handing the
   connection back to its pool; the pool's reset rolls back, and DuckDB drops
   the pending result. GX already keeps one open connection for SQLite and SQL
   Server (`_PERSISTED_CONNECTION_DIALECTS`); `install()` does the same for the
   duckdb dialect. Remove this the day GX persists DuckDB connections itself:
   `tests/unit/test_quality_gx_duckdb.py` fails on that day.
2. duckdb-engine 0.17 reflects columns with a Postgres catalog query that
   DuckDB 2.0 cannot bind (`pg_catalog.pg_collation`); inside the load's
   transaction that error would abort the whole load. `BorrowedDuckDBDialect`
   reads columns from `duckdb_columns()` instead.

DuckDB allows one writing process, and the batch under test lives in the load's
transaction (temp table `delivery`), so GX must run on that very connection:
the engine from `engine_for(con)` hands GX the caller's connection, with
begin/commit/rollback/close made no-ops so GX can neither end nor close the
caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import sqlalchemy as sa
from duckdb_engine import ConnectionWrapper
from duckdb_engine import Dialect as DuckDBDialect
from sqlalchemy.dialects import registry
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.pool import StaticPool

GX_ISSUE = "https://github.com/great-expectations/great_expectations/issues/11579"
DRIVER_URL = (
    "duckdb+athanor:///:memory:"  # the database is never opened: `engine_for` supplies the connection
)


class _BorrowedConnection(ConnectionWrapper):
    """The caller's DuckDB connection, which SQLAlchemy may use but never end."""

    def begin(self) -> None:  # the caller owns the transaction (if any)
        pass

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass


class BorrowedDuckDBDialect(DuckDBDialect):
    """duckdb-engine's dialect, connecting to a borrowed connection and reflecting via duckdb_columns()."""

    supports_statement_cache = False

    def connect(self, *cargs: Any, **cparams: Any) -> Any:
        raise RuntimeError(
            "use athanor.quality.gx_duckdb.engine_for(con): this dialect only borrows connections"
        )

    def do_begin(self, connection: Any) -> None:
        pass

    def get_columns(
        self, connection: Any, table_name: str, schema: str | None = None, **kw: Any
    ) -> list[dict]:
        rows = connection.exec_driver_sql(
            "select column_name, data_type, is_nullable from duckdb_columns() "
            "where table_name = $1 and ($2::varchar is null or schema_name = $2) order by column_index",
            (table_name, schema),
        ).fetchall()
        return [
            {"name": name, "type": self._type_of(dtype), "nullable": bool(nullable), "default": None}
            for name, dtype, nullable in rows
        ]

    # Table reflection would otherwise run Postgres catalog queries (pg_constraint, REGCLASS
    # casts) that DuckDB cannot bind. GX needs columns only; the rest reflects as empty.
    get_multi_columns = DefaultDialect.get_multi_columns
    get_multi_pk_constraint = DefaultDialect.get_multi_pk_constraint
    get_multi_foreign_keys = DefaultDialect.get_multi_foreign_keys
    get_multi_indexes = DefaultDialect.get_multi_indexes
    get_multi_unique_constraints = DefaultDialect.get_multi_unique_constraints
    get_multi_check_constraints = DefaultDialect.get_multi_check_constraints
    get_multi_table_comment = DefaultDialect.get_multi_table_comment

    def get_pk_constraint(
        self, connection: Any, table_name: str, schema: str | None = None, **kw: Any
    ) -> dict:
        return {"constrained_columns": [], "name": None}

    def get_foreign_keys(self, *args: Any, **kw: Any) -> list:
        return []

    def get_indexes(self, *args: Any, **kw: Any) -> list:
        return []

    def get_unique_constraints(self, *args: Any, **kw: Any) -> list:
        return []

    def get_check_constraints(self, *args: Any, **kw: Any) -> list:
        return []

    def get_table_comment(self, *args: Any, **kw: Any) -> dict:
        return {"text": None}

    def _type_of(self, dtype: str) -> sa.types.TypeEngine:
        base = dtype.split("(")[0].strip().lower()
        if base.startswith(("map", "struct", "union")) or dtype.endswith("]"):
            return sa.types.NullType()
        known = _DUCKDB_TYPES.get(base) or self.ischema_names.get(base)
        return known() if known is not None else sa.types.NullType()


_DUCKDB_TYPES: dict[str, type[sa.types.TypeEngine]] = {
    "decimal": sa.types.NUMERIC,
    "varchar": sa.types.VARCHAR,
    "bigint": sa.types.BIGINT,
    "integer": sa.types.INTEGER,
    "smallint": sa.types.SMALLINT,
    "double": sa.types.FLOAT,
    "float": sa.types.FLOAT,
    "boolean": sa.types.BOOLEAN,
    "date": sa.types.DATE,
    "timestamp": sa.types.TIMESTAMP,
    "timestamp with time zone": sa.types.TIMESTAMP,
}


registry.register("duckdb.athanor", __name__, "BorrowedDuckDBDialect")


def engine_for(con: duckdb.DuckDBPyConnection) -> sa.Engine:
    """A SQLAlchemy engine whose only connection is `con` (nothing GX does can commit or close it)."""
    return sa.create_engine(DRIVER_URL, creator=lambda: _BorrowedConnection(con), poolclass=StaticPool)


_PATCH_FLAG = "_athanor_persists_duckdb"


def install() -> None:
    """Make GX keep one open connection for the duckdb dialect (GX #11579); idempotent."""
    from great_expectations.execution_engine import sqlalchemy_execution_engine as gx_sql

    engine_cls = gx_sql.SqlAlchemyExecutionEngine
    if getattr(engine_cls.get_connection, _PATCH_FLAG, False):
        return
    upstream = engine_cls.get_connection

    @contextmanager
    def get_connection(self: Any) -> Iterator[Any]:
        if self.engine.dialect.name != "duckdb":
            with upstream(self) as connection:
                yield connection
            return
        # The persisted branch of upstream's get_connection, for duckdb too.
        if not self._connection:
            self._connection = self.engine.connect()
        yield self._connection

    setattr(get_connection, _PATCH_FLAG, True)
    get_connection._athanor_upstream = upstream  # type: ignore[attr-defined]
    engine_cls.get_connection = get_connection


def upstream_get_connection() -> Any:
    """GX's own get_connection (for the test that watches the upstream bug)."""
    from great_expectations.execution_engine.sqlalchemy_execution_engine import SqlAlchemyExecutionEngine

    method = SqlAlchemyExecutionEngine.get_connection
    return getattr(method, "_athanor_upstream", method)
