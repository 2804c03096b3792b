"""Fit records as a fixed-width text table (the CLI's --format table)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def _fmt_s(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    if v < 120:
        return f"{v:.0f}s"
    if v < 7200:
        return f"{v / 60:.1f}m"
    if v < 48 * 3600 * 4:
        return f"{v / 3600:.1f}h"
    return f"{v / 86400:.1f}d"


def _fmt_share(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def format_table(records: Sequence[dict[str, Any]]) -> str:
    """Fixed-width table of fit records (one line per group)."""
    header = (
        "group",
        "n",
        "cens",
        "family",
        "p50",
        "p90",
        "p99",
        "KS",
        "p",
        "<48h jobs",
        "<48h GPU-h",
        "note",
    )
    rows = []
    for r in records:
        family = r["family"]
        if r.get("mixture"):
            family = f"lognormal x{len(r['params']['weights'])}"
        pval = r.get("ks_pvalue")
        rows.append(
            (
                str(r["group"]),
                str(r["n"]),
                _fmt_share(r.get("censored_share")),
                family,
                _fmt_s(r.get("p50_s")),
                _fmt_s(r.get("p90_s")),
                _fmt_s(r.get("p99_s")),
                f"{r['ks']:.3f}" if r.get("ks") is not None else "-",
                "-" if pval is None else f"{pval:.2f}",
                _fmt_share(r.get("share_jobs_under_48h")),
                _fmt_share(r.get("share_gpu_hours_under_48h")),
                f"from {r['borrowed_from']}" if r.get("borrowed_from") else "",
            )
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    numeric = {1, 2, 4, 5, 6, 7, 8, 9, 10}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])
