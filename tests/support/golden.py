"""A fingerprint of one demo run: what a refactoring must leave unchanged.

It covers the published files (recommendations JSON, the report's CSV tables) and the
warehouse content, table by table. Values that differ between two identical runs are left
out: run ids, load times, the run's own folder, and float noise below nine significant
digits (the recommenders' sums are not associative).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import duckdb

# Columns that name the run or the wall clock, not the data.
VOLATILE_COLUMNS = {
    "run_id",
    "first_run_id",
    "started_at",
    "finished_at",
    "checked_at",
    "sent_at",
    "fitted_at",
}
VOLATILE_JSON_KEYS = {"run_id", "generated_at"}
# The run log: its summaries carry timings. The schema ledger: hashes of the SQL files, not data.
VOLATILE_TABLES = {"pipeline_runs", "schema_migrations"}


def _num(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return str(value)
    # Rounded to 12 digits first: a sum whose order varies lands on either side of a 9-digit
    # tie (0.53085793749999 vs 0.53085793750001), and the first rounding makes both the same.
    return f"{float(f'{value:.12g}'):.9g}"


def _canonical(value: Any, home: str) -> Any:
    if isinstance(value, float):
        return _num(value)
    if isinstance(value, dict):
        return {k: _canonical(v, home) for k, v in sorted(value.items()) if k not in VOLATILE_JSON_KEYS}
    if isinstance(value, list | tuple):
        return [_canonical(v, home) for v in value]
    if isinstance(value, str):
        text = value.replace(home, "<home>")
        if text[:1] in "[{":  # JSON held in a text column: its floats carry the same noise
            try:
                return _canonical(json.loads(text), home)
            except ValueError:
                pass
        try:  # numbers written as text (CSV cells, DECIMAL as str)
            return _num(float(text)) if text.strip() and not text.isalpha() else text
        except ValueError:
            return text
    return value if value is None or isinstance(value, bool | int) else _canonical(str(value), home)


def _digest(rows: list[Any]) -> str:
    lines = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def fingerprint(home: Path, report_dir: Path, warehouse: Path) -> dict[str, Any]:
    """Canonical digests of a run's report folder and warehouse file."""
    root = str(home)
    csv.field_size_limit(1 << 30)  # a detail cell can be large
    out: dict[str, Any] = {"files": {}, "tables": {}}
    for path in sorted(report_dir.glob("*.csv")):
        with path.open(newline="") as f:
            rows = [
                [_canonical(v, root) for k, v in row.items() if k not in VOLATILE_COLUMNS]
                for row in csv.DictReader(f)
            ]
        out["files"][path.name] = {"rows": len(rows), "digest": _digest(rows)}
    for path in sorted(report_dir.glob("*.json")):
        document = _canonical(json.loads(path.read_text()), root)
        out["files"][path.name] = {"digest": _digest([document])}
    con = duckdb.connect(str(warehouse), read_only=True)
    con.execute("set enable_progress_bar = false")  # it would print to the test's output
    try:
        tables = [
            t
            for (t,) in con.execute(
                "select table_name from information_schema.tables"
                " where table_type = 'BASE TABLE' order by table_name"
            ).fetchall()
            if t not in VOLATILE_TABLES
        ]
        for table in tables:
            columns = [
                c
                for (c,) in con.execute(
                    "select column_name from information_schema.columns"
                    " where table_name = ? order by ordinal_position",
                    [table],
                ).fetchall()
                if c not in VOLATILE_COLUMNS
            ]
            select = ", ".join(f'"{c}"' for c in columns)
            rows = [
                {c: _canonical(v, root) for c, v in zip(columns, row, strict=True)}
                for row in con.execute(f'select {select} from "{table}"').fetchall()
            ]
            out["tables"][table] = {"rows": len(rows), "digest": _digest(rows)}
    finally:
        con.close()
    return out
