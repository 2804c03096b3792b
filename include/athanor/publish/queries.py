"""The report's queries (`sql/report/`), read as rows of {column: value}."""

from __future__ import annotations

from typing import Any

import duckdb

from athanor.ingest.daily import daily_source
from athanor.warehouse import sql

# The queries that read the loads' daily sums (`{daily}`) rather than billing lines.
_DAILY = frozenset({"spend_period", "spend_watch_months"})


def report_rows(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run `sql/report/<name>.sql` with `params`."""
    fragments = {"daily": daily_source(con)} if name in _DAILY else {}
    cur = con.execute(sql(f"report/{name}", **fragments), params)
    columns = [d[0] for d in cur.description or []]
    return [dict(zip(columns, row, strict=True)) for row in cur.fetchall()]
