"""The instance catalogue as the rest of Athanor reads it: one row per instance type, priced
in its reference region.

A view of the GPU catalog (`athanor.reference.gpus`: `data/instances.csv` joined with the
first, reference-region row of `data/prices.csv`), so there is one list of instance types.
The warehouse's `ref_instance_types` table is the same join (`sql/reference/instance_types.sql`).
Sources and dates: `data/README.md`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from types import MappingProxyType

from athanor.reference import gpus as catalog


@dataclass(frozen=True)
class InstanceType:
    """One catalogue row; prices are $ per instance-hour in ``region``, None where none was taken."""

    instance_type: str
    instance_family: str
    gpu_count: int  # accelerators per instance (Trainium: chips)
    gpu_model: str
    # AWS's size-flexibility units (xlarge = 8, 48xlarge = 384). Azure and GCP publish none:
    # their GPU count stands in, so a family's sizes still compare by GPUs.
    normalization_factor: float
    on_demand_usd_per_h: Decimal | None
    spot_usd_per_h: Decimal | None  # typical, not a quote
    provider: str = "aws"
    region: str | None = None  # the reference region; None for a type without any price


def _catalogue() -> Mapping[str, InstanceType]:
    # Keyed on the price file read: a refresh in the same process is seen at once.
    return _catalogue_at(catalog.catalogue_version())


@cache
def _catalogue_at(_version: object) -> Mapping[str, InstanceType]:
    rows: dict[str, InstanceType] = {}
    for inst in catalog.gpu_instances():
        price = catalog.price(inst.instance_type)
        rows[inst.instance_type] = InstanceType(
            instance_type=inst.instance_type,
            instance_family=inst.instance_family,
            gpu_count=inst.gpu_count,
            gpu_model=inst.gpu_model,
            normalization_factor=(
                float(inst.gpu_count) if inst.normalization_factor is None else inst.normalization_factor
            ),
            on_demand_usd_per_h=None if price is None else price.on_demand_usd_per_h,
            spot_usd_per_h=None if price is None else price.spot_usd_per_h,
            provider=inst.provider,
            region=None if price is None else price.region,
        )
    return MappingProxyType(rows)


def instance_types() -> tuple[InstanceType, ...]:
    """Every catalogue row, in the file's order (AWS, then Azure, then GCP)."""
    return tuple(_catalogue().values())


def instance(instance_type: str) -> InstanceType:
    """The catalogue row of one instance type (exact name); KeyError if the catalogue lacks it."""
    try:
        return _catalogue()[instance_type]
    except KeyError:
        raise KeyError(f"{instance_type!r} is not in {catalog.INSTANCES_CSV.name}") from None


def gpus_per_instance(instance_type: str) -> int | None:
    """Accelerators per instance; SageMaker's `ml.` prefix, case and spaces ignored. None if unknown."""
    row = catalog.gpu_instance(instance_type)
    return None if row is None else row.gpu_count
