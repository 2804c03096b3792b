"""Storage list prices and the per-class billing rules of S3 and EBS (us-east-1, 2026).

The cost model of `athanor.recommend.lifecycle` and the demo's storage charges read them
here. Sources: `data/README.md` ("Storage prices").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

GIB = 1024**3  # AWS bills storage per GB-month with GB = 2**30 bytes
KIB = 1024

# Lifecycle transition targets, by S3 storage-class name.
STANDARD = "STANDARD"
STANDARD_IA = "STANDARD_IA"
INTELLIGENT_TIERING = "INTELLIGENT_TIERING"
GLACIER_IR = "GLACIER_IR"
GLACIER = "GLACIER"
DEEP_ARCHIVE = "DEEP_ARCHIVE"
# Classes whose objects cannot be read without a restore (hours): never for protected checkpoints.
RETRIEVAL_DELAY_CLASSES = frozenset({GLACIER, DEEP_ARCHIVE})


@dataclass(frozen=True)
class StoragePrices:
    """Storage list prices in USD (us-east-1, 2026); override with `with_overrides` / `replace`.

    Unmarked storage figures are the project brief's (AWS list prices); those marked "AWS list
    price" and the request fees (lifecycle transitions and PUTs, per 1,000 requests) come from
    AWS's S3 and EBS pricing pages where the brief gives none.
    """

    s3_standard_gb_month: float = 0.023
    s3_ia_gb_month: float = 0.0125
    s3_ia_min_days: int = 30
    s3_ia_retrieval_gb: float = 0.01
    min_billable_object_bytes: int = 128 * KIB  # Standard-IA and Glacier IR bill small objects as 128 KiB
    it_frequent_gb_month: float = 0.023
    it_infrequent_gb_month: float = 0.0125
    it_archive_instant_gb_month: float = 0.004
    it_monitoring_per_1000_objects_month: float = 0.0025
    it_min_monitored_bytes: int = 128 * KIB  # smaller objects: not monitored, always frequent tier
    glacier_ir_gb_month: float = 0.004
    glacier_ir_min_days: int = 90
    glacier_ir_retrieval_gb: float = 0.03
    glacier_flexible_gb_month: float = 0.0036  # AWS list price (not in the brief); 90-day minimum
    glacier_flexible_min_days: int = 90
    deep_archive_gb_month: float = 0.00099
    deep_archive_min_days: int = 180
    deep_archive_retrieval_gb: float = 0.02  # AWS list price, standard retrieval (not in the brief)
    transition_to_ia_per_1000: float = 0.01
    transition_to_it_per_1000: float = 0.01
    transition_to_glacier_ir_per_1000: float = 0.02
    transition_to_glacier_per_1000: float = 0.03  # AWS list price (not in the brief)
    transition_to_deep_archive_per_1000: float = 0.05
    put_per_1000: float = 0.005  # S3 PUT requests, for uploads when moving data from EBS
    ebs_gb_month: dict[str, float] = field(
        # gp3 from the brief; the others are AWS list prices, used only when a volume has that type
        default_factory=lambda: {
            "gp3": 0.08,
            "gp2": 0.10,
            "io1": 0.125,
            "io2": 0.125,
            "st1": 0.045,
            "sc1": 0.015,
            "standard": 0.05,
        }
    )
    ebs_snapshot_gb_month: float = 0.05  # AWS list price, standard tier (not in the brief)

    def storage_gb_month(self, storage_class: str) -> float:
        """Flat per-GB-month price of a class (Intelligent-Tiering: its frequent tier)."""
        return {
            STANDARD: self.s3_standard_gb_month,
            "REDUCED_REDUNDANCY": self.s3_standard_gb_month,
            STANDARD_IA: self.s3_ia_gb_month,
            "ONEZONE_IA": self.s3_ia_gb_month,
            INTELLIGENT_TIERING: self.it_frequent_gb_month,
            GLACIER_IR: self.glacier_ir_gb_month,
            GLACIER: self.glacier_flexible_gb_month,
            DEEP_ARCHIVE: self.deep_archive_gb_month,
        }.get(storage_class, self.s3_standard_gb_month)

    def min_days(self, storage_class: str) -> int:
        """Minimum storage duration charged on early delete or transition out."""
        return {
            STANDARD_IA: self.s3_ia_min_days,
            "ONEZONE_IA": self.s3_ia_min_days,
            GLACIER_IR: self.glacier_ir_min_days,
            GLACIER: self.glacier_flexible_min_days,
            DEEP_ARCHIVE: self.deep_archive_min_days,
        }.get(storage_class, 0)

    def retrieval_gb(self, storage_class: str) -> float:
        return {
            STANDARD_IA: self.s3_ia_retrieval_gb,
            "ONEZONE_IA": self.s3_ia_retrieval_gb,
            GLACIER_IR: self.glacier_ir_retrieval_gb,
            DEEP_ARCHIVE: self.deep_archive_retrieval_gb,
        }.get(storage_class, 0.0)

    def has_min_object_size(self, storage_class: str) -> bool:
        return storage_class in (STANDARD_IA, "ONEZONE_IA", GLACIER_IR)

    def transition_per_1000(self, storage_class: str) -> float:
        return {
            STANDARD_IA: self.transition_to_ia_per_1000,
            INTELLIGENT_TIERING: self.transition_to_it_per_1000,
            GLACIER_IR: self.transition_to_glacier_ir_per_1000,
            GLACIER: self.transition_to_glacier_per_1000,
            DEEP_ARCHIVE: self.transition_to_deep_archive_per_1000,
        }.get(storage_class, 0.0)

    def ebs_volume_gb_month(self, volume_type: str) -> float:
        return self.ebs_gb_month.get(volume_type, self.ebs_gb_month["gp3"])

    def with_overrides(self, **overrides: Any) -> StoragePrices:
        return replace(self, **overrides)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULT_PRICES = StoragePrices()
