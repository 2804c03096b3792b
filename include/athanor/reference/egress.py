"""Published per-GB rates for copying data between two regions of one cloud (``data/egress.csv``).

What a cross-region move of a workload class costs to take its data along: the GPU plan prices
it where the class's data size is known (its latest checkpoint) and labels the move "data
transfer not priced" otherwise. One rate per provider, its inter-region rate within North America
(AWS bills every inter-region copy out of a US region at it; Azure and GCP charge more between
continents, which a move between them would understate: said in the note). A move to another
cloud pays internet egress instead, which is not priced here.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from athanor.reference import gpus
from athanor.reference.paths import DATA_DIR
from athanor.reference.storage import GIB

EGRESS_CSV = DATA_DIR / "egress.csv"
# GB as the clouds bill data transfer: 2^30 bytes, as they bill storage.
BYTES_PER_GB = GIB


@dataclass(frozen=True)
class EgressRate:
    provider: str
    usd_per_gb: Decimal
    source: gpus.Source

    def label(self) -> str:
        return f"{self.usd_per_gb} $/GB ({self.source.title.split(':')[0]}, {self.source.date})"


@cache
def _rates() -> dict[str, EgressRate]:
    with EGRESS_CSV.open(newline="") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for line, r in enumerate(rows, start=2):
        if r["provider"] in out:
            raise ValueError(f"{EGRESS_CSV.name}: row {line}: provider {r['provider']} is listed twice")
        out[r["provider"]] = EgressRate(r["provider"], Decimal(r["usd_per_gb"]), gpus.source(r["source"]))
    return out


def inter_region_rate(provider: str) -> EgressRate | None:
    """The per-GB rate of copying data from one region of ``provider`` to another; None if not listed."""
    return _rates().get(provider)
