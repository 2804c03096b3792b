"""Drift between two runs' fits: a family change, or a p90 that moved."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def compare_fits(
    previous: Iterable[dict[str, Any]], current: Iterable[dict[str, Any]], p90_shift: float = 0.25
) -> list[dict[str, Any]]:
    """Per group: did the family change, or did p90 move by more than p90_shift (relative)?"""
    prev = {r["group"]: r for r in previous}
    cur = {r["group"]: r for r in current}
    out = []
    for g in sorted(prev.keys() | cur.keys()):
        a, b = prev.get(g), cur.get(g)
        row: dict[str, Any] = {
            "group": g,
            "status": "both" if a and b else ("new" if b else "gone"),
            "previous_family": a["family"] if a else None,
            "current_family": b["family"] if b else None,
            "previous_p90_s": a["p90_s"] if a else None,
            "current_p90_s": b["p90_s"] if b else None,
            "family_changed": False,
            "p90_rel_shift": None,
            "p90_shifted": False,
        }
        if a and b:
            row["family_changed"] = a["family"] != b["family"]
            if a["p90_s"] and a["p90_s"] > 0:
                shift = (b["p90_s"] - a["p90_s"]) / a["p90_s"]
                row["p90_rel_shift"] = shift
                row["p90_shifted"] = abs(shift) > p90_shift
        row["flagged"] = row["family_changed"] or row["p90_shifted"]
        out.append(row)
    return out
