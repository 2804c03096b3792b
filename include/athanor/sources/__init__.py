"""Billing export formats: how each is recognised and mapped into `billing_facts`.

A format is recognised from its columns (never from the file name). Each one has
a staging query `sql/staging/<name>.sql` that reads the temp view `src` (the raw
file, with every column the format knows present, missing optional ones as NULL)
and returns rows shaped like `billing_facts`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BillingFormat:
    name: str
    description: str
    # Columns whose presence identifies the format; all of them must be in the file.
    signature: frozenset[str]
    # Columns a valid file must have (a superset of the signature).
    required: tuple[str, ...]
    # Every source column the staging SQL reads; absent optional ones become NULL.
    known: tuple[str, ...]
    money: tuple[str, ...]
    timestamps: tuple[str, ...]
    # Columns that must not be null on any row.
    not_null: tuple[str, ...]
    currency_column: str
    billed_cost_column: str
    # (start, end) pairs where end must not precede start.
    periods: tuple[tuple[str, str], ...] = ()

    def matches(self, columns: set[str]) -> bool:
        return self.signature <= columns


def formats() -> tuple[BillingFormat, ...]:
    from athanor.sources import cur2, focus

    return (focus.FORMAT, cur2.FORMAT)


def detect(columns: list[str]) -> BillingFormat | None:
    """The billing format whose signature columns are all present, if any."""
    present = set(columns)
    for fmt in formats():
        if fmt.matches(present):
            return fmt
    return None
