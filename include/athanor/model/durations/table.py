"""Fit records as a text table, laid out by tabulate (the CLI's --format table)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from athanor.model.durations.support import published_quantiles


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


# (heading, right-aligned): durations, counts and shares line up on the right.
COLUMNS: tuple[tuple[str, bool], ...] = (
    ("group", False),
    ("n", True),
    ("cens", True),
    ("family", False),
    ("p50", True),
    ("p90", True),
    ("p99", True),
    ("KS", True),
    ("p", True),
    ("<48h jobs", True),
    ("<48h GPU-h", True),
    ("note", False),
)


def format_table(records: Sequence[dict[str, Any]]) -> str:
    """Fixed-width table of fit records (one line per group); a quantile beyond the data reads
    "> N days (beyond the data)", as in the report and duration_fits.csv."""
    rows = []
    for r in records:
        family = r["family"]
        if r.get("mixture"):
            family = f"lognormal x{len(r['params']['weights'])}"
        pval = r.get("ks_pvalue")
        shown = published_quantiles(r)
        notes = [f"from {r['borrowed_from']}"] if r.get("borrowed_from") else []
        notes += [r["censored_note"]] if r.get("censored_note") else []
        rows.append(
            (
                str(r["group"]),
                str(r["n"]),
                _fmt_share(r.get("censored_share")),
                family,
                *(shown[f"{q}_text"] or _fmt_s(shown[f"{q}_s"]) for q in ("p50", "p90", "p99")),
                f"{r['ks']:.3f}" if r.get("ks") is not None else "-",
                "-" if pval is None else f"{pval:.2f}",
                _fmt_share(r.get("share_jobs_under_48h")),
                _fmt_share(r.get("share_gpu_hours_under_48h")),
                "; ".join(notes),
            )
        )
    table = tabulate(
        rows,
        headers=[name for name, _ in COLUMNS],
        tablefmt="simple",
        colalign=["right" if right else "left" for _, right in COLUMNS],
        disable_numparse=True,
    )
    return "\n".join(line.rstrip() for line in table.splitlines())
