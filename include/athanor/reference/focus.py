"""The FOCUS 1.2 column list (`data/focus-1.2-columns.csv`, parsed from the specification)."""

from __future__ import annotations

import csv
from functools import cache

from athanor.reference.paths import FOCUS_COLUMNS_CSV


@cache
def focus_columns() -> tuple[str, ...]:
    """Every FOCUS 1.2 column id, in the file's (alphabetical) order."""
    with FOCUS_COLUMNS_CSV.open(newline="") as f:
        return tuple(row["ColumnId"] for row in csv.DictReader(f))
