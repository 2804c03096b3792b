"""A fingerprint of one demo run, and its comparison with the golden: what a change must leave unchanged.

It covers the published files (recommendations JSON, lifecycle JSON, the report's CSV tables)
and the warehouse content, table by table. Values that differ between two identical runs are
left out: run ids, load times, the run's own folder.

Exact and fitted values are compared differently, because fitted figures depend on the CPU:
OpenBLAS picks its kernels by CPU (Haswell, SkylakeX, ...), and the duration fits' optimisers
land a few ulps apart, which shows from the 9th significant digit on. So:

* exact, by digest: integers, DECIMAL (money), text, dates, booleans, NaN/inf, the structure of
  JSON (keys, list lengths), and in the published files the figures the publisher rounds to
  two decimals (money to the cent, percentages; `athanor.publish.artifacts.decimals_for`);
* with a tolerance, value by value: every other float, i.e. DOUBLE columns, floats inside JSON
  text columns and float cells of the report's CSV and JSON files. Two values match when
  `math.isclose(golden, actual, rel_tol=REL_TOL, abs_tol=ABS_TOL)`: a relative tolerance of 1e-6
  (REL_TOL) and an absolute one of 1e-9 (ABS_TOL) for figures near zero. Two kinds of fitted
  figure are discrete and get the step they move by instead of ABS_TOL (STEP_TOL): the forecast
  money stored as DECIMAL(18, 2) (a cent: the rounding of a figure that moved at the 9th digit
  may land on the next cent) and the bootstrap goodness-of-fit p-value (one of its 49 replicates).

A table or file whose floats are compared keeps them in the golden, row by row, sorted by the
row's exact part and keyed by a short hash of it (the floats are written to 10 significant
digits, 1e-4 of the tolerance). Tables of more than STORED_ROWS rows (the loaded facts, GPU
samples, hourly marts: loaded or summed figures, not fitted) keep no rows: their floats are
hashed with the exact part after rounding to 9 significant digits, as sums whose order varies
differ only in the last bits. Every table and CSV file also keeps a digest per column, so that
an exact difference names its column.

Measured on 2026-12-06 (OPENBLAS_CORETYPE=Haswell, Sandybridge, Prescott against the golden's
SkylakeX): the duration fits, recommendations and GPU plan stay within the tolerance. The spend
forecasts' ETS fits stopped at optima 0.1 % to 300 % apart between kernels until the forecast
chose its smoothing parameters on a fixed grid (athanor.watch.forecast.fit_on_grid): the same
forecast on every kernel since, to the last bits (tests/unit/test_forecast_kernels.py).

`compare(golden, actual)` returns one line per difference, naming the table or file, the row
(its exact part), the column (a JSON path inside a JSON column) and the two values.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from athanor.publish.artifacts import MONEY_DECIMALS, PERCENT_DECIMALS, decimals_for

REL_TOL = 1e-6
ABS_TOL = 1e-9
# Fitted figures that move by steps, and their step (used as the absolute tolerance).
FORECAST_MONEY = {  # DECIMAL(18, 2) columns holding forecasts, not billed money
    "spend_forecasts": {"cost", "lower_cost", "upper_cost"},
    "budget_status": {"forecast_cost"},
}
CENT = 0.01
STEP_TOL = {"ks_pvalue": 1 / 49}  # (1 + exceeding) / (1 + replicates): one replicate of 49
STORED_ROWS = 1000
# The report publishes money to the cent and percentages to 0.01: those figures are exact.
assert MONEY_DECIMALS == PERCENT_DECIMALS
TWO_DECIMALS = MONEY_DECIMALS
FLOAT = "~"  # stands for a float compared with the tolerance in a row's exact part

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
# The run log: its summaries carry timings. The schema ledger and the allocation's months: hashes
# of the SQL files (and of inputs the other tables hold), not data.
VOLATILE_TABLES = {"pipeline_runs", "schema_migrations", "gpu_allocation_months"}
NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _num(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return str(value)
    # Rounded to 12 digits first: a sum whose order varies lands on either side of a 9-digit
    # tie (0.53085793749999 vs 0.53085793750001), and the first rounding makes both the same.
    return f"{float(f'{value:.12g}'):.9g}"


class _Split:
    """One row split into its exact part and the floats compared with the tolerance."""

    def __init__(self, home: str, *, keep_floats: bool, published: bool) -> None:
        self.home = home
        self.keep_floats = keep_floats  # False: floats rounded into the exact part instead
        self.published = published  # a report file: money figures are exact (rounded to the cent)
        self.floats: list[tuple[str, float]] = []

    def float(self, value: float, path: str, name: str) -> Any:
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if self.published and decimals_for(name) == TWO_DECIMALS:
            return repr(value)
        if not self.keep_floats:
            return _num(value)
        self.floats.append((path, value))
        return FLOAT

    def value(self, value: Any, path: str, name: str) -> Any:
        if isinstance(value, bool) or value is None or isinstance(value, int):
            return value
        if isinstance(value, float):
            return self.float(value, path, name)
        if isinstance(value, dict):
            return {
                str(k): self.value(v, f"{path}.{k}", str(k))
                for k, v in sorted(value.items())
                if k not in VOLATILE_JSON_KEYS
            }
        if isinstance(value, list | tuple):
            return [self.value(v, f"{path}[{i}]", name) for i, v in enumerate(value)]
        if isinstance(value, str):
            return self.text(value, path, name)
        return str(value)  # DECIMAL, dates, times: exact, as DuckDB gives them

    def text(self, value: str, path: str, name: str) -> Any:
        text = value.replace(self.home, "<home>")
        if text[:1] in "[{":  # JSON held in a text column or cell
            try:
                return self.value(json.loads(text), path, name)
            except ValueError:
                return text
        if self.published and NUMBER.fullmatch(text.strip()):  # a CSV cell holding a number
            number = float(text)
            return text if number.is_integer() and "." not in text else self.float(number, path, name)
        return text


def _hash(value: Any, n: int = 16) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:n]


def _digest(rows: list[Any]) -> str:
    lines = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _tolerance(table: str, path: str) -> float:
    column = path.split(".")[0].split("[")[0]
    if column in FORECAST_MONEY.get(table, ()):
        return CENT
    last = re.split(r"[.\[]", path)[-1]
    return STEP_TOL.get(last, ABS_TOL)


def _entry(rows: list[dict[str, Any]], home: str, published: bool, stored_rows: int) -> dict[str, Any]:
    """A table's or file's part of the fingerprint; `rows` are dicts column -> raw value."""
    keep = len(rows) <= stored_rows
    split_rows = []
    for row in rows:
        split = _Split(home, keep_floats=keep, published=published)
        exact = {c: split.value(v, c, c) for c, v in row.items()}
        split_rows.append((exact, split.floats))
    columns = sorted({c for row in rows for c in row})
    out: dict[str, Any] = {
        "rows": len(rows),
        "digest": _digest([exact for exact, _ in split_rows]),
        "columns": {c: _digest([exact.get(c) for exact, _ in split_rows]) for c in columns},
    }
    if any(floats for _, floats in split_rows):

        def order(item: tuple[dict, list]) -> tuple[str, list[str]]:
            exact, floats = item
            return json.dumps(exact, sort_keys=True, default=str), [f"{v:.6g}" for _, v in floats]

        split_rows.sort(key=order)
        out["floats"] = [
            [_hash(exact, 10), *(float(f"{v:.10g}") for _, v in floats)] for exact, floats in split_rows
        ]
        out["_split"] = split_rows  # the rows themselves, for the messages of `compare`
    return out


def _json_rows(document: Any) -> list[dict[str, Any]]:
    """A JSON file as rows: one per item of a top-level list, one per other top-level key."""
    if not isinstance(document, dict):
        return [{"document": document}]
    rows: list[dict[str, Any]] = []
    for key, value in sorted(document.items()):
        if key in VOLATILE_JSON_KEYS:
            continue
        if isinstance(value, list):
            rows += [{"key": key, "item": i, "value": v} for i, v in enumerate(value)]
        elif isinstance(value, dict) and all(isinstance(v, dict | list) for v in value.values()):
            rows += [{"key": key, "item": k, "value": v} for k, v in sorted(value.items())]
        else:
            rows.append({"key": key, "value": value})
    return rows


def fingerprint(
    home: Path, report_dir: Path, warehouse: Path, stored_rows: int = STORED_ROWS
) -> dict[str, Any]:
    """Canonical digests, and the floats compared with the tolerance, of a run's report folder and
    warehouse. `stored_rows`: keep the floats of tables up to this many rows (two runs compared in
    memory may keep them all)."""
    root = str(home)
    csv.field_size_limit(1 << 30)  # a detail cell can be large
    out: dict[str, Any] = {"files": {}, "tables": {}}
    for path in sorted(report_dir.glob("*.csv")):
        with path.open(newline="") as f:
            rows = [{k: v for k, v in row.items() if k not in VOLATILE_COLUMNS} for row in csv.DictReader(f)]
        out["files"][path.name] = _entry(rows, root, published=True, stored_rows=stored_rows)
    for path in sorted(report_dir.glob("*.json")):
        out["files"][path.name] = _entry(
            _json_rows(json.loads(path.read_text())), root, published=True, stored_rows=stored_rows
        )
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
                {c: _forecast_money(table, c, v) for c, v in zip(columns, row, strict=True)}
                for row in con.execute(f'select {select} from "{table}"').fetchall()
            ]
            out["tables"][table] = _entry(rows, root, published=False, stored_rows=stored_rows)
    finally:
        con.close()
    return out


def _forecast_money(table: str, column: str, value: Any) -> Any:
    """Forecast money is DECIMAL but fitted: compared as a float (within a cent, see STEP_TOL)."""
    return float(value) if isinstance(value, Decimal) and column in FORECAST_MONEY.get(table, ()) else value


def dumps(fingerprint: dict[str, Any]) -> str:
    """The golden file's text: one line per stored row of floats, the rest indented."""
    rows: dict[str, str] = {}
    plain: dict[str, Any] = {}
    for part, entries in fingerprint.items():
        plain[part] = {}
        for name, entry in entries.items():
            entry = {k: v for k, v in entry.items() if not k.startswith("_")}
            if "floats" in entry:
                marker = f"@rows:{part}:{name}@"
                rows[marker] = ",\n   ".join(json.dumps(r) for r in entry["floats"])
                entry["floats"] = marker
            plain[part][name] = entry
    text = json.dumps(plain, indent=1, sort_keys=True)
    for marker, lines in rows.items():
        text = text.replace(f'"{marker}"', f"[\n   {lines}\n  ]")
    return text + "\n"


def _row_label(exact: dict[str, Any], limit: int = 160) -> str:
    shown = ", ".join(
        f"{c}={json.dumps(v, default=str)}" for c, v in exact.items() if not isinstance(v, dict | list)
    )
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def compare(golden: dict[str, Any], actual: dict[str, Any], rel_tol: float = REL_TOL) -> list[str]:
    """Every difference of `actual` (a fingerprint) from `golden`: one line each, naming table or
    file, row, column and both values; empty when they match."""
    out: list[str] = []
    for part in ("files", "tables"):
        kind = "file" if part == "files" else "table"
        for name in sorted(golden.get(part, {}).keys() | actual.get(part, {}).keys()):
            want, got = golden[part].get(name), actual[part].get(name)
            if want is None or got is None:
                out.append(f"{kind} {name}: {'not in the golden' if want is None else 'missing'}")
                continue
            out += [f"{kind} {name}: {line}" for line in _compare_entry(name, want, got, rel_tol)]
    return out


def report(differing: list[str], shown: int = 50) -> str:
    """`compare`'s lines for an assertion message: how many per table or file, then the first ones."""
    counts: dict[str, int] = {}
    for line in differing:
        name = line.split(":", 1)[0]
        counts[name] = counts.get(name, 0) + 1
    head = ", ".join(f"{name} ({n})" for name, n in counts.items())
    more = f"\n... and {len(differing) - shown} more" if len(differing) > shown else ""
    return f"{len(differing)} differences: {head}\n" + "\n".join(differing[:shown]) + more


def _compare_entry(name: str, want: dict[str, Any], got: dict[str, Any], rel_tol: float) -> list[str]:
    out = []
    if want["rows"] != got["rows"]:
        out.append(f"{want['rows']} rows in the golden, {got['rows']} now")
    if want["digest"] != got["digest"]:
        columns = sorted(want.get("columns", {}).keys() | got.get("columns", {}).keys())
        differing = [c for c in columns if want.get("columns", {}).get(c) != got.get("columns", {}).get(c)]
        out.append(f"exact values differ in column(s) {', '.join(differing) or '(row order)'}")
    if "floats" not in want and "floats" not in got:
        return out
    stored: dict[str, list[list[float]]] = {}
    for key, *values in want.get("floats", []):
        stored.setdefault(key, []).append(values)
    split = got.get("_split") or [
        ({}, [(f"#{i}", v) for i, v in enumerate(r[1:])]) for r in got.get("floats", [])
    ]
    keys = [r[0] for r in got.get("floats", [])]
    for row, (key, (exact, floats)) in enumerate(zip(keys, split, strict=True)):
        if not stored.get(key):
            out.append(f"row {row} ({_row_label(exact)}) has no row with the same exact values in the golden")
            continue
        expected = stored[key].pop(0)
        if len(expected) != len(floats):
            out.append(
                f"row {row} ({_row_label(exact)}): {len(expected)} floats in the golden, {len(floats)} now"
            )
            continue
        for (path, value), old in zip(floats, expected, strict=True):
            tol = _tolerance(name, path)
            if not math.isclose(old, value, rel_tol=rel_tol, abs_tol=tol):
                out.append(
                    f"row {row} ({_row_label(exact)}), column {path}: golden {old!r}, now {value!r}"
                    f" (differs by {abs(value - old):.3g}, relative {abs(value - old) / max(abs(old), 1e-300):.3g};"
                    f" tolerance relative {rel_tol:g}, absolute {tol:g})"
                )
    missing = sum(len(v) for v in stored.values())
    if missing:
        out.append(f"{missing} golden row(s) have no row with the same exact values now")
    return out
