"""The canonical vocabularies every stage shares, and the calendar constants of AWS pricing.

Readers map each source's own spellings onto these (e.g. Slurm's TIMEOUT -> failed); the
quality suites check the loaded tables against them.
"""

from __future__ import annotations

# AWS prices a month as 730 hours (8,760 / 12) when it turns hourly rates into monthly ones.
HOURS_PER_MONTH = 730.0
HOURS_PER_YEAR = 8760.0

# ---------------------------------------------------------------- GPUs

# Compute slices of a whole GPU for MIG: 7 on A100 / H100 / H200 / B200; A30's MIG splits 4 ways.
MIG_SLICES = 7
MIG_SLICES_BY_MODEL = (("A30", 4),)

# ---------------------------------------------------------------- training jobs

JOB_STATES = ("completed", "failed", "cancelled", "preempted", "running")
# The run was cut short (or is still going): its duration is a lower bound.
CENSORED_STATES = frozenset({"preempted", "cancelled", "running"})
# How a job's instances were paid for.
JOB_PRICING_MODELS = ("on_demand", "spot", "reserved", "savings_plan")
# The job-log formats the reader recognises.
JOB_SOURCES = ("generic", "slurm", "sagemaker", "kubernetes")
# What a run is for, which sets how its capacity is bought: exploring (spot or on-demand),
# tuning (commitments), production (dedicated capacity).
JOB_PHASES = ("explore", "tune", "production")

# ---------------------------------------------------------------- billing

# billing_facts.x_pricing_model: the job pricing models, plus commitments the bill does not
# name (committed) and charges that are no instance usage at all (other).
BILLING_PRICING_MODELS = (*JOB_PRICING_MODELS, "committed", "other")

# ---------------------------------------------------------------- storage

# S3 storage classes as S3 Inventory and ListObjectVersions spell them.
S3_STORAGE_CLASSES = (
    "STANDARD",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER",
    "GLACIER_IR",
    "DEEP_ARCHIVE",
    "REDUCED_REDUNDANCY",
    "EXPRESS_ONEZONE",
    "OUTPOSTS",
    "SNOW",
)
# S3 Intelligent-Tiering access tiers.
IT_ACCESS_TIERS = ("FREQUENT", "INFREQUENT", "ARCHIVE_INSTANT_ACCESS", "ARCHIVE", "DEEP_ARCHIVE")
# EBS volume types (DescribeVolumes VolumeType) and snapshot storage tiers (StorageTier).
EBS_VOLUME_TYPES = ("gp2", "gp3", "io1", "io2", "st1", "sc1", "standard")
EBS_SNAPSHOT_TIERS = ("standard", "archive")
# storage_objects.storage_class holds any of them.
STORAGE_CLASSES = tuple(dict.fromkeys((*S3_STORAGE_CLASSES, *EBS_VOLUME_TYPES, *EBS_SNAPSHOT_TIERS)))
