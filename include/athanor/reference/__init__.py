"""Reference data that every stage reads: one source for each fact, with its origin.

- `instances`: the GPU instance catalogue (GPUs, GPU model, normalisation factor, list prices).
- `gpus`: the GPU catalog behind it (datasheets, prices and purchase options by region, their age);
  `refresh` reads its prices again from the providers' price APIs (`athanor gpu-catalog --refresh`)
  into the override folder `paths` names; `egress`: inter-region data transfer rates.
- `spot_advisor`: Spot Advisor savings and interruption buckets per region and type.
- `focus`: the FOCUS 1.2 column list.
- `vocabulary`: job states, pricing models, storage classes, hours per month.
- `storage`: S3 and EBS list prices and the per-class billing rules.

The files under `data/` say where each figure comes from (see `data/README.md`); other
modules import from here rather than keep a copy.
"""

from __future__ import annotations

from athanor.reference.focus import focus_columns
from athanor.reference.instances import InstanceType, gpus_per_instance, instance, instance_types
from athanor.reference.paths import DATA_DIR
from athanor.reference.spot_advisor import BUCKET_MONTHLY_FRACTION, SpotAdvice, spot_advice
from athanor.reference.vocabulary import (
    BILLING_PRICING_MODELS,
    CENSORED_STATES,
    EBS_SNAPSHOT_TIERS,
    EBS_VOLUME_TYPES,
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    IT_ACCESS_TIERS,
    JOB_PHASES,
    JOB_PRICING_MODELS,
    JOB_SOURCES,
    JOB_STATES,
    S3_STORAGE_CLASSES,
    STORAGE_CLASSES,
)

__all__ = [
    "BILLING_PRICING_MODELS",
    "BUCKET_MONTHLY_FRACTION",
    "CENSORED_STATES",
    "DATA_DIR",
    "EBS_SNAPSHOT_TIERS",
    "EBS_VOLUME_TYPES",
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "IT_ACCESS_TIERS",
    "InstanceType",
    "JOB_PHASES",
    "JOB_PRICING_MODELS",
    "JOB_SOURCES",
    "JOB_STATES",
    "S3_STORAGE_CLASSES",
    "STORAGE_CLASSES",
    "SpotAdvice",
    "focus_columns",
    "gpus_per_instance",
    "instance",
    "instance_types",
    "spot_advice",
]
