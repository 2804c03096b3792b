"""The report's queries (`sql/report/`), read as rows of {column: value}."""

from __future__ import annotations

from typing import Any

import duckdb

from athanor.warehouse import sql


def report_rows(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any], **fragments: str
) -> list[dict[str, Any]]:
    """Run `sql/report/<name>.sql` with `params`, its placeholders filled by `fragments`."""
    cur = con.execute(sql(f"report/{name}", **fragments), params)
    columns = [d[0] for d in cur.description or []]
    return [dict(zip(columns, row, strict=True)) for row in cur.fetchall()]
