"""Nested values a CSV writes as Python literals instead of JSON, read as JSON text.

A GCP billing export saved to CSV by a Python tool (pandas' `to_csv` of the BigQuery
client's rows) writes its repeated and nested fields with `repr`:
`[{'name': 'Sustained Usage Discount', 'amount': -2.0}]`, not JSON. Such a cell is read
as the JSON it unambiguously stands for when `ast.literal_eval` (which evaluates literals
only, never code) gives a list or dict of text, numbers, booleans and None; anything else
(a set, bytes, NaN, a cell longer than `MAX_CHARS`, nesting deeper than Python parses) is
left as it is, for the check `NOT_JSON` to refuse with its row.
"""

from __future__ import annotations

import ast
import functools
import json
import math

import duckdb

FUNCTION = "athanor_python_literal_as_json"
# A billing cell of credits or labels is a few hundred characters; the bound keeps one odd cell
# from costing the parser seconds or memory.
MAX_CHARS = 65_536
NOT_JSON = "neither JSON nor a Python literal list or dict"


def _plain(value: object) -> bool:
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


@functools.lru_cache(maxsize=4096)  # credit and label sets repeat across a month's rows
def as_json(text: str | None) -> str | None:
    """JSON text of a Python literal list or dict; None when `text` is not one."""
    if text is None or len(text) > MAX_CHARS or not text.lstrip().startswith(("[", "{")):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list | dict) or not _plain(value):
        return None
    return json.dumps(value, ensure_ascii=False)


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Make `FUNCTION` callable on `con` and its cursors (once per database)."""
    known = con.execute("select 1 from duckdb_functions() where function_name = ?", [FUNCTION]).fetchall()
    if not known:
        con.create_function(
            FUNCTION, as_json, ["VARCHAR"], "VARCHAR", null_handling="special", side_effects=False
        )


def read(column: str) -> str:
    """SQL: text `column` as JSON text, converted when it is a Python literal, else as it is."""
    return f"case when {column} is null or json_valid({column}) then {column} else coalesce({FUNCTION}({column}), {column}) end"


def is_bad(column: str) -> str:
    """SQL predicate over `read`'s result: a value still not JSON."""
    return f"{column} is not null and not json_valid({column})"
