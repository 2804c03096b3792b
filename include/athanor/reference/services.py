"""Service names and units as FOCUS spells them, whatever a source wrote.

The same service arrives as 'AmazonEC2' (a CUR product code) and 'Amazon Elastic Compute
Cloud' (FOCUS), the same unit as 'GB-Mo' and 'GB-Months': a group-by would split them. The
staging SQL of every billing format maps both through the warehouse tables `ref_service_names`
and `ref_units`, loaded from `data/services.csv` and `data/units.csv` (`sql/reference/`); a
name or unit not listed is kept as the source wrote it.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from athanor.reference.paths import SERVICES_CSV, UNITS_CSV


@dataclass(frozen=True)
class Service:
    service_name: str  # FOCUS ServiceName
    service_category: str  # FOCUS ServiceCategory


@cache
def service_names() -> Mapping[str, Service]:
    """Source spelling (a CUR product code, a provider's own FOCUS spelling) -> the FOCUS service."""
    with SERVICES_CSV.open(newline="") as f:
        return MappingProxyType(
            {r["source_name"]: Service(r["service_name"], r["service_category"]) for r in csv.DictReader(f)}
        )


@cache
def units() -> Mapping[str, str]:
    """A source's unit, lower-cased ('gb-mo', 'hrs') -> the FOCUS unit ('GB-Months', 'Hours')."""
    with UNITS_CSV.open(newline="") as f:
        return MappingProxyType({r["source_unit"]: r["unit"] for r in csv.DictReader(f)})


def focus_service_name(name: str | None) -> str | None:
    return service_names()[name].service_name if name in service_names() else name


def focus_unit(unit: str | None) -> str | None:
    return units().get(unit.strip().lower(), unit) if unit is not None else None
