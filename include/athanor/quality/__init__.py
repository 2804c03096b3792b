"""Data quality: Great Expectations suites per table and format, run inside DuckDB.

Importing this package is cheap; Great Expectations (4.5 s to import) loads on
the first validation.
"""

from athanor.quality.quarantine import list_quarantine, quarantine, release
from athanor.quality.runner import (
    BatchContext,
    QualityError,
    RuleResult,
    ValidationOutcome,
    check_delivery,
    store_results,
    validate_batch,
    warnings_for_load,
)
from athanor.quality.suites import QualityConfig, Rule, suite_rules

__all__ = [
    "BatchContext",
    "QualityConfig",
    "QualityError",
    "Rule",
    "RuleResult",
    "ValidationOutcome",
    "check_delivery",
    "list_quarantine",
    "quarantine",
    "release",
    "store_results",
    "suite_rules",
    "validate_batch",
    "warnings_for_load",
]
