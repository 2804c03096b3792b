"""Published commitment rates per instance type, region, offer, term and payment option
(`data/commitment_rates.csv`, each row's source in `data/sources.csv`).

A rate is kept with the on-demand rate its source gave on the same date: the optimiser applies
their ratio to the pool's billed on-demand rate, so a price cut that moved both leaves the ratio
right. A type without a row is priced with the settings' flat discounts, labelled as assumed.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path

from athanor.reference.paths import COMMITMENT_RATES_CSV

# Offers that buy units of one instance type (or family) in one region: what the optimiser's
# per-pool commitment is. Compute and SageMaker savings plans are $/h commitments across pools.
OFFERS = (
    "standard_ri",
    "convertible_ri",
    "ec2_instance_sp",
    "compute_sp",
    "sagemaker_sp",
    "azure_reservation",
    "azure_savings_plan",
    "gcp_cud",
)
UNIT_OFFERS = ("standard_ri", "convertible_ri", "ec2_instance_sp", "azure_reservation", "gcp_cud")
PAYMENT_OPTIONS = ("no_upfront", "partial_upfront", "all_upfront")
PROVIDERS = ("aws", "azure", "gcp")
COLUMNS = (
    "provider",
    "instance_type",
    "region",
    "offer",
    "term_months",
    "payment_option",
    "effective_usd_per_h",
    "on_demand_usd_per_h",
    "source_id",
    "as_of",
)


@dataclass(frozen=True)
class CommitmentRate:
    provider: str
    instance_type: str
    region: str
    offer: str
    term_months: int
    payment_option: str
    effective_usd_per_h: float  # upfront amortised over the term's hours
    on_demand_usd_per_h: float  # the same source's on-demand rate, same date
    source_id: str
    as_of: date

    @property
    def rate_ratio(self) -> float:
        return self.effective_usd_per_h / self.on_demand_usd_per_h

    def label(self) -> str:
        """What a recommendation says it priced with."""
        return (
            f"published rate, {self.source_id}, {self.as_of.isoformat()}: {self.offer} "
            f"{self.term_months}-month {self.payment_option} ${self.effective_usd_per_h:g}/h vs "
            f"on-demand ${self.on_demand_usd_per_h:g}/h ({self.rate_ratio:.4f}x)"
        )


def _sources(path: Path) -> set[str]:
    """The source ids of `sources.csv` beside the rates file (reference/data's for the shipped one)."""
    with (path.parent / "sources.csv").open(newline="") as f:
        return {row["source_id"] for row in csv.DictReader(f)}


def _parse(path: Path, line: int, row: dict[str, str], sources: set[str]) -> CommitmentRate:
    def bad(column: str, rule: str) -> ValueError:
        return ValueError(f"{path.name} row {line}, column {column}: {rule} (got {row.get(column)!r})")

    for column, allowed in (("provider", PROVIDERS), ("offer", OFFERS), ("payment_option", PAYMENT_OPTIONS)):
        if row.get(column) not in allowed:
            raise bad(column, f"must be one of {', '.join(allowed)}")
    if row.get("term_months") not in ("12", "36"):
        raise bad("term_months", "must be 12 or 36")
    rates = {}
    for column in ("effective_usd_per_h", "on_demand_usd_per_h"):
        try:
            rates[column] = float(row[column])
        except (TypeError, ValueError):
            raise bad(column, "must be a number of USD per hour") from None
        if not rates[column] > 0:
            raise bad(column, "must be above 0")
    if rates["effective_usd_per_h"] > rates["on_demand_usd_per_h"]:
        raise bad("effective_usd_per_h", "must not exceed on_demand_usd_per_h")
    if row.get("source_id") not in sources:
        raise bad("source_id", "must name a source in sources.csv")
    try:
        as_of = date.fromisoformat(row["as_of"])
    except (TypeError, ValueError):
        raise bad("as_of", "must be a date YYYY-MM-DD") from None
    if not row.get("instance_type") or not row.get("region"):
        raise bad("instance_type" if not row.get("instance_type") else "region", "must not be empty")
    return CommitmentRate(
        row["provider"], row["instance_type"], row["region"], row["offer"], int(row["term_months"]),
        row["payment_option"], rates["effective_usd_per_h"], rates["on_demand_usd_per_h"],
        row["source_id"], as_of,
    )  # fmt: skip


@cache
def load_commitment_rates(path: Path = COMMITMENT_RATES_CSV) -> tuple[CommitmentRate, ...]:
    """Every row of the file, checked: a bad row raises naming the file, row, column and rule."""
    sources = _sources(path)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path.name} row 1: missing column(s) {', '.join(missing)}")
        return tuple(_parse(path, i, row, sources) for i, row in enumerate(reader, start=2))


def unit_rates(
    instance_type: str,
    region: str,
    payment_option: str = "no_upfront",
    path: Path = COMMITMENT_RATES_CSV,
    offers: tuple[str, ...] = UNIT_OFFERS,
) -> dict[int, CommitmentRate]:
    """term months -> the lowest published unit commitment (RI, instance savings plan, Azure
    reservation, GCP CUD; or the `offers` named, e.g. ``("sagemaker_sp",)`` for SageMaker's ml.*
    types) of the type in the region with that payment option; the newest row of an offer wins
    over older ones."""
    newest: dict[tuple[str, int], CommitmentRate] = {}
    for r in load_commitment_rates(path):
        if (r.instance_type, r.region, r.payment_option) != (instance_type, region, payment_option):
            continue
        if r.offer not in offers:
            continue
        key = (r.offer, r.term_months)
        if key not in newest or r.as_of > newest[key].as_of:
            newest[key] = r
    out: dict[int, CommitmentRate] = {}
    for r in newest.values():
        if r.term_months not in out or r.rate_ratio < out[r.term_months].rate_ratio:
            out[r.term_months] = r
    return out
