"""The GPU instance catalogue: one row per instance type in `data/instance_types.csv`.

Everything that needs an instance's GPUs, GPU model, normalisation factor or list price
reads it here; the warehouse's `ref_instance_types` table is loaded from the same file
(`sql/reference/instance_types.sql`). Sources and dates: `data/README.md`.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from types import MappingProxyType

from athanor.reference.paths import INSTANCE_TYPES_CSV

_HEADER = (
    "instance_type",
    "instance_family",
    "gpu_count",
    "gpu_model",
    "normalization_factor",
    "on_demand_usd_per_h",
    "spot_usd_per_h",
)


@dataclass(frozen=True)
class InstanceType:
    """One catalogue row. Prices are us-east-1 $ per instance-hour; None where the file has none."""

    instance_type: str
    instance_family: str
    gpu_count: int  # accelerators per instance (Trainium: chips)
    gpu_model: str
    normalization_factor: float  # AWS's size-flexibility units (xlarge = 8, 48xlarge = 384)
    on_demand_usd_per_h: Decimal | None
    spot_usd_per_h: Decimal | None  # typical, not a quote


def _price(text: str) -> Decimal | None:
    return Decimal(text) if text.strip() else None


@cache
def _catalogue() -> Mapping[str, InstanceType]:
    with INSTANCE_TYPES_CSV.open(newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != _HEADER:
            raise ValueError(f"{INSTANCE_TYPES_CSV.name}: header {reader.fieldnames} is not {list(_HEADER)}")
        rows: dict[str, InstanceType] = {}
        for row in reader:
            name = row["instance_type"]
            if name in rows:
                raise ValueError(f"{INSTANCE_TYPES_CSV.name}: {name} is listed twice")
            rows[name] = InstanceType(
                instance_type=name,
                instance_family=row["instance_family"],
                gpu_count=int(row["gpu_count"]),
                gpu_model=row["gpu_model"],
                normalization_factor=float(row["normalization_factor"]),
                on_demand_usd_per_h=_price(row["on_demand_usd_per_h"]),
                spot_usd_per_h=_price(row["spot_usd_per_h"]),
            )
    return MappingProxyType(rows)


def instance_types() -> tuple[InstanceType, ...]:
    """Every catalogue row, in the file's order."""
    return tuple(_catalogue().values())


def instance(instance_type: str) -> InstanceType:
    """The catalogue row of one EC2 instance type (exact name); KeyError if the catalogue lacks it."""
    try:
        return _catalogue()[instance_type]
    except KeyError:
        raise KeyError(f"{instance_type!r} is not in {INSTANCE_TYPES_CSV.name}") from None


def gpus_per_instance(instance_type: str) -> int | None:
    """Accelerators per instance; SageMaker's `ml.` prefix, case and spaces ignored. None if unknown."""
    row = _catalogue().get(instance_type.strip().lower().removeprefix("ml."))
    return None if row is None else row.gpu_count
