"""AWS Spot Instance Advisor figures for GPU instance types (`data/spot_advisor_gpu.csv`).

The advisor gives an interruption *bucket* per region and type: a range of the share of
instances interrupted per month. `BUCKET_MONTHLY_FRACTION` is how Athanor reads a bucket
as one number, and `PRIOR_INSTANCE_HOURS` how much that number weighs against the fleet's own
spot runs. Snapshot date and origin: `data/README.md`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache

from athanor.reference.paths import SPOT_ADVISOR_CSV

# Buckets 0-4 are <5, 5-10, 10-15, 15-20 and >20 % of instances interrupted per month. The
# middle of each range; for the open-ended top bucket 25 % (an assumption, not an AWS figure).
BUCKET_MONTHLY_FRACTION: dict[int, float] = {0: 0.025, 1: 0.075, 2: 0.125, 3: 0.175, 4: 0.25}

# How much a bucket weighs against the fleet's own spot runs when the two are combined
# (athanor.recommend.spot.fleet_interruption_rate): as much as this many instance-hours of them,
# about a day of an 8-instance job. The buckets are averages over every size of a type and every
# customer; a fleet that ran a few thousand spot instance-hours of its own knows its pools
# better, and one that ran a few dozen does not. An assumption, stated in every recommendation.
PRIOR_INSTANCE_HOURS = 200.0


@dataclass(frozen=True)
class SpotAdvice:
    region: str
    instance_type: str
    savings_pct: int  # advertised saving of spot over on-demand, %
    interruption_bucket: int  # 0-4, see BUCKET_MONTHLY_FRACTION

    @property
    def monthly_interruption_fraction(self) -> float:
        return BUCKET_MONTHLY_FRACTION[self.interruption_bucket]


@cache
def _snapshot() -> tuple[SpotAdvice, ...]:
    with SPOT_ADVISOR_CSV.open(newline="") as f:
        return tuple(
            SpotAdvice(
                row["region"], row["instance_type"], int(row["savings_pct"]), int(row["interruption_bucket"])
            )
            for row in csv.DictReader(f)
        )


def spot_advice(region: str) -> dict[str, SpotAdvice]:
    """instance type -> advice for one region, in the file's order (empty for an unknown region)."""
    return {a.instance_type: a for a in _snapshot() if a.region == region}
