"""What the night loaded and what it held back, for the report's banner and its data-quality tile.

A night whose deliveries were all skipped as unchanged, or some held back in quarantine, must
not look like one that brought new data: the page says how many deliveries the last load took,
skipped and rejected, and names each delivery still in quarantine with its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from athanor.publish.queries import report_rows


@dataclass(frozen=True)
class HeldBack:
    load_id: str
    kind: str
    files: str
    source_uri: str
    reason: str | None
    held_since: datetime | None


@dataclass(frozen=True)
class Intake:
    # Deliveries of the last load per outcome: loaded | unchanged | empty | waiting | rejected.
    counts: dict[str, int] = field(default_factory=dict)
    last_load_at: datetime | None = None  # None: no load has run yet
    last_load_status: str | None = None  # success | failed
    held_back: list[HeldBack] = field(default_factory=list)

    @property
    def nothing_new(self) -> bool:
        """The last load ran and took no delivery: every figure is from earlier nights."""
        return self.last_load_at is not None and not self.counts.get("loaded")


def load_intake(con: duckdb.DuckDBPyConnection) -> Intake:
    held = [HeldBack(**row) for row in report_rows(con, "held_back", {})]
    last = report_rows(con, "last_load", {})
    if not last:
        return Intake(held_back=held)
    summary = json.loads(last[0]["summary"] or "{}")
    counts = summary.get("counts") or {}
    return Intake(
        counts={k: int(v) for k, v in counts.items()},
        last_load_at=last[0]["finished_at"],
        last_load_status=last[0]["status"],
        held_back=held,
    )
