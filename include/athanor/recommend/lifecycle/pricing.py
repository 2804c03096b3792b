"""Intelligent-Tiering expectations for the cost model; the storage prices it uses are reference data."""

from __future__ import annotations

from athanor.reference.storage import (
    DEEP_ARCHIVE,
    DEFAULT_PRICES,
    GIB,
    GLACIER,
    GLACIER_IR,
    INTELLIGENT_TIERING,
    KIB,
    RETRIEVAL_DELAY_CLASSES,
    STANDARD,
    STANDARD_IA,
    StoragePrices,
)

# The prices and storage-class names live in athanor.reference.storage; these names stay
# importable from here for the lifecycle modules.
__all__ = [
    "DAYS_PER_MONTH",
    "DEEP_ARCHIVE",
    "DEFAULT_PRICES",
    "GIB",
    "GLACIER",
    "GLACIER_IR",
    "INTELLIGENT_TIERING",
    "KIB",
    "RETRIEVAL_DELAY_CLASSES",
    "STANDARD",
    "STANDARD_IA",
    "StoragePrices",
    "it_gb_month",
    "it_tier_shares",
]

DAYS_PER_MONTH = 30  # the cost model steps in 30-day months; minimum durations convert at this rate


def it_tier_shares(months_in_it: int, read_fraction: float) -> tuple[float, float, float]:
    """Expected shares (frequent, infrequent, archive-instant) of an Intelligent-Tiering object.

    An object moves to the infrequent tier after 30 days without access and to archive instant
    after 90; an access brings it back to frequent. Each month an object is read with probability
    `read_fraction` (the observed fraction of bytes read per month), so after k quiet months the
    share still quiet is (1 - r)^k, capped by the months it has been in Intelligent-Tiering.
    """
    quiet = 1.0 - read_fraction
    at_least_1 = quiet**1 if months_in_it >= 1 else 0.0
    at_least_3 = quiet**3 if months_in_it >= 3 else 0.0
    return (1.0 - at_least_1, at_least_1 - at_least_3, at_least_3)


def it_gb_month(months_in_it: int, read_fraction: float, prices: StoragePrices = DEFAULT_PRICES) -> float:
    """Expected Intelligent-Tiering storage price per GB for the given month in the class."""
    f, i, a = it_tier_shares(months_in_it, read_fraction)
    return (
        f * prices.it_frequent_gb_month
        + i * prices.it_infrequent_gb_month
        + a * prices.it_archive_instant_gb_month
    )
