"""What a job-log reader reports: one `Problem` per broken rule, raised together as a `JobRunError`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from athanor.land.names import shown

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Problem:
    """One broken rule at one place in one file."""

    file: str
    row: int | None
    column: str | None
    rule: str
    detail: str = ""
    unit: str = "row"  # 'document' for JSON sources

    def __str__(self) -> str:
        where = shown(self.file)
        if self.row is not None:
            where += f" {self.unit} {self.row}"
        if self.column:
            where += f", {'field' if self.unit == 'document' else 'column'} {self.column}"
        return f"{where}: {self.rule}" + (f" ({self.detail})" if self.detail else "")


class JobRunError(ValueError):
    """A job-log file broke the schema's rules; the message lists the first few problems."""

    def __init__(self, file: str, problems: list[Problem], total: int | None = None):
        self.file = file
        self.problems = problems
        self.total = len(problems) if total is None else total
        if self.total == 1 and len(problems) == 1:
            message = str(problems[0])
        else:
            first = problems[:MAX_EXAMPLES]
            message = f"{shown(file)}: {self.total} problems, first {len(first)}:\n" + "\n".join(
                f"  {p}" for p in first
            )
        super().__init__(message)


class Problems:
    """Collects problems: a full count, but only the first examples of each rule."""

    def __init__(self, file: str, unit: str = "row"):
        self.file = file
        self.unit = unit
        self.examples: list[Problem] = []
        self.total = 0
        # Every row a problem was found in (None: the file as a whole), and how often each rule
        # broke: what a reader that rejects bad records alone drops and reports.
        self.bad_rows: set[int | None] = set()
        self.rule_counts: dict[str, int] = {}

    def _count(self, column: str | None, rule: str, n: int) -> None:
        key = f"{column}: {rule}" if column else rule
        self.rule_counts[key] = self.rule_counts.get(key, 0) + n

    def add(self, row: int | None, column: str | None, rule: str, detail: str = "") -> None:
        self.total += 1
        self.bad_rows.add(row)
        self._count(column, rule, 1)
        self.examples.append(Problem(self.file, row, column, rule, detail, self.unit))

    def add_mask(
        self,
        mask: pd.Series,
        rows: pd.Series,
        column: str,
        rule: str,
        detail: Callable[[Any], str],
    ) -> None:
        """Record every row where ``mask`` holds; keep examples of the first few only."""
        hits = np.flatnonzero(mask.fillna(False).to_numpy(dtype=bool))
        self.total += len(hits)
        if len(hits):
            self._count(column, rule, len(hits))
            self.bad_rows.update(int(r) for r in rows.iloc[hits])
        for i in hits[:MAX_EXAMPLES]:
            self.examples.append(Problem(self.file, int(rows.iloc[i]), column, rule, detail(i), self.unit))

    def raise_if_any(self, column_order: Iterable[str] = ()) -> None:
        if not self.total:
            return
        order = {c: i for i, c in enumerate(column_order)}
        # File-level problems (no row) first, then by row and column position.
        ranked = sorted(
            self.examples,
            key=lambda p: (p.row is not None, p.row or 0, order.get(p.column or "", len(order))),
        )
        raise JobRunError(self.file, ranked, self.total)
