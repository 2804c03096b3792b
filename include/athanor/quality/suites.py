"""The data-quality rules, written in code: one suite per canonical table and per raw source format.

A rule names one GX expectation class and its arguments. Suites are plain data so
they can be read, listed and tested without importing Great Expectations (4.5 s);
`runner.py` turns them into GX expectations. Rules that GX has no built-in for
(cross-column, cross-file, history) are `UnexpectedRowsExpectation`s whose SQL
lives in `sql/quality/<name>.sql`; those queries read their parameters from the
temp table `dq_params` (bound values, never formatted into SQL).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from athanor.reference import BILLING_PRICING_MODELS as PRICING_MODELS
from athanor.reference import IT_ACCESS_TIERS, JOB_PRICING_MODELS, JOB_SOURCES, JOB_STATES, STORAGE_CLASSES
from athanor.settings import Settings
from athanor.warehouse import quote_ident, sql

ERROR, WARN = "error", "warn"
SEVERITIES = (ERROR, WARN)

# FOCUS 1.2 enumerations (the staging queries normalise their case).
CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")
CHARGE_CLASSES = ("Correction",)
CHARGE_FREQUENCIES = ("One-Time", "Recurring", "Usage-Based")
PRICING_CATEGORIES = ("Standard", "Dynamic", "Committed", "Other")
COMMITMENT_DISCOUNT_STATUSES = ("Used", "Unused")
COMMITMENT_DISCOUNT_CATEGORIES = ("Spend", "Usage")
CUR_LINE_ITEM_TYPES = (
    "Usage",
    "DiscountedUsage",
    "SavingsPlanCoveredUsage",
    "SavingsPlanNegation",
    "SavingsPlanRecurringFee",
    "SavingsPlanUpfrontFee",
    "RIFee",
    "Fee",
    "Tax",
    "Credit",
    "Refund",
    "EdpDiscount",
    "BundledDiscount",
    "PrivateRateDiscount",
    "Discount",
    "DistributorDiscount",
)

# Canonical billing column -> the name a FOCUS / CUR 2.0 reader knows it by (messages use the source's name).
SOURCE_COLUMN = {
    "focus": {
        "billing_account_id": "BillingAccountId",
        "billing_currency": "BillingCurrency",
        "billing_period_start": "BillingPeriodStart",
        "billing_period_end": "BillingPeriodEnd",
        "charge_period_start": "ChargePeriodStart",
        "charge_period_end": "ChargePeriodEnd",
        "charge_category": "ChargeCategory",
        "charge_class": "ChargeClass",
        "charge_frequency": "ChargeFrequency",
        "pricing_category": "PricingCategory",
        "commitment_discount_status": "CommitmentDiscountStatus",
        "commitment_discount_category": "CommitmentDiscountCategory",
        "consumed_quantity": "ConsumedQuantity",
        "pricing_quantity": "PricingQuantity",
        "billed_cost": "BilledCost",
        "effective_cost": "EffectiveCost",
    },
    "cur2": {
        "billing_account_id": "bill_payer_account_id",
        "billing_currency": "line_item_currency_code",
        "billing_period_start": "bill_billing_period_start_date",
        "billing_period_end": "bill_billing_period_end_date",
        "charge_period_start": "line_item_usage_start_date",
        "charge_period_end": "line_item_usage_end_date",
        "charge_category": "line_item_line_item_type",
        "consumed_quantity": "line_item_usage_amount",
        "billed_cost": "line_item_unblended_cost",
    },
}


@dataclass(frozen=True)
class Rule:
    name: str
    expectation: str  # a class in great_expectations.expectations
    kwargs: Mapping[str, Any]
    column: str | None = None
    severity: str = ERROR
    description: str = ""
    unit: str = "row"  # what one unexpected item is: row, day, file, billing period


@dataclass(frozen=True)
class QualityConfig:
    """Severity per rule (`error` blocks the batch, `warn` loads and reports) and the restatement bound.

    Cost anomalies are not a quality rule: the spend watch (athanor.watch) judges them against
    their seasonal expectation after the load.
    """

    severity: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # restated_period_collapsed: a restatement keeping less of the rows or cost it replaces
    restatement_min_share: float = Settings.restatement_min_share

    def __post_init__(self) -> None:
        for rule, level in self.severity.items():
            if level not in SEVERITIES:
                raise ValueError(f"severity of rule {rule} must be one of {SEVERITIES}, not {level!r}")
        object.__setattr__(self, "severity", MappingProxyType(dict(self.severity)))

    def severity_of(self, rule: Rule) -> str:
        return self.severity.get(rule.name, rule.severity)

    def with_severity(self, **levels: str) -> QualityConfig:
        return replace(self, severity={**self.severity, **levels})

    @classmethod
    def from_settings(cls, settings: Settings) -> QualityConfig:
        """The operator's overrides (`ATHANOR_DQ_SEVERITY`, read by Settings)."""
        return cls(
            severity=dict(settings.dq_severity),
            restatement_min_share=settings.restatement_min_share,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> QualityConfig:
        return cls.from_settings(Settings.from_env(env))


def _not_null(column: str, severity: str = ERROR) -> Rule:
    return Rule(f"{column}_not_null", "ExpectColumnValuesToNotBeNull", {"column": column}, column, severity)


def _in_set(column: str, values: tuple[str, ...], rule: str | None = None, severity: str = ERROR) -> Rule:
    # GX skips nulls in a value-set check: nullable enumerations stay nullable.
    kwargs = {"column": column, "value_set": list(values)}
    return Rule(rule or f"{column}_in_set", "ExpectColumnValuesToBeInSet", kwargs, column, severity)


def _at_least(column: str, minimum: float, rule: str, severity: str = ERROR) -> Rule:
    return Rule(
        rule, "ExpectColumnValuesToBeBetween", {"column": column, "min_value": minimum}, column, severity
    )


def _sql_rule(name: str, column: str | None, severity: str, description: str, unit: str = "row") -> Rule:
    query = sql(f"quality/{name}")
    kwargs = {"unexpected_rows_query": query}
    return Rule(name, "UnexpectedRowsExpectation", kwargs, column, severity, description, unit)


def _reconcile_rule(source_format: str | None) -> Rule:
    # A format may count loaded rows or total its cost its own way (GCP explodes credits into
    # rows; Azure totals BilledCost or EffectiveCost): those expressions come from the format.
    from athanor.ingest import sources

    fmt = next((f for f in sources.formats() if f.name == source_format), None)
    rows_expr = getattr(fmt, "loaded_rows", "count(*)")
    total_expr = getattr(fmt, "loaded_total", "billed_cost")
    query = sql("quality/reconciles_with_file", loaded_rows=rows_expr, loaded_total=total_expr)
    description = "row count and cost total per file and currency, as read from the file"
    return Rule(
        "reconciles_with_file",
        "UnexpectedRowsExpectation",
        {"unexpected_rows_query": query},
        "billed_cost",
        ERROR,
        description,
        "mismatch",
    )


def billing_rules(source_format: str | None = None) -> tuple[Rule, ...]:
    """billing_facts, per delivery batch (one load_id, checked before it replaces anything)."""
    not_null = [
        _not_null(c)
        for c in (
            "billing_account_id",
            "billing_currency",
            "billing_period_start",
            "billing_period_end",
            "charge_period_start",
            "charge_period_end",
            "charge_category",
            "billed_cost",
            "effective_cost",
            "source_file",
            "source_row",
        )
    ]
    enums = [
        _in_set("charge_category", CHARGE_CATEGORIES),
        _in_set("charge_class", CHARGE_CLASSES),
        _in_set("charge_frequency", CHARGE_FREQUENCIES),
        _in_set("pricing_category", PRICING_CATEGORIES),
        _in_set("commitment_discount_status", COMMITMENT_DISCOUNT_STATUSES),
        _in_set("commitment_discount_category", COMMITMENT_DISCOUNT_CATEGORIES),
        _in_set("x_pricing_model", PRICING_MODELS, rule="pricing_model_in_set"),
    ]
    periods = [
        Rule(
            "charge_period_end_after_start",
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {"column_A": "charge_period_end", "column_B": "charge_period_start", "or_equal": False},
            "charge_period_end",
        ),
        Rule(
            "billing_period_end_after_start",
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {"column_A": "billing_period_end", "column_B": "billing_period_start", "or_equal": False},
            "billing_period_end",
        ),
    ]
    custom = [
        _sql_rule("billing_currency_is_iso_code", "billing_currency", ERROR, "three upper-case letters"),
        _sql_rule(
            "usage_quantity_non_negative",
            "consumed_quantity",
            WARN,
            "negative usage outside credits/adjustments/corrections (Azure writes reversals so: reported, loaded)",
        ),
        _sql_rule(
            "cost_negative_only_for_credits",
            "billed_cost",
            ERROR,
            "negative cost only on Credit/Adjustment, ChargeClass Correction, usage reversals or commitment negations",
        ),
        _sql_rule(
            "charge_period_within_billing_period",
            "charge_period_start",
            ERROR,
            "no charge period after its billing period",
        ),
        _sql_rule(
            "charge_period_in_range",
            "charge_period_start",
            ERROR,
            "charge period between 2000-01-01 and a year after the run's day (a misread date otherwise)",
        ),
        _sql_rule(
            "billing_period_in_range",
            "billing_period_start",
            ERROR,
            "billing period between 2000-01-01 and a year after the run's day (a misread date otherwise)",
        ),
        _sql_rule(
            "charge_period_billed_late",
            "charge_period_start",
            WARN,
            "charge period starting before its billing period (late-billed usage)",
        ),
        _sql_rule("line_item_unique", None, ERROR, "one row per line item key across the delivery's files"),
        _sql_rule(
            "line_item_not_already_loaded",
            None,
            ERROR,
            "a line item already loaded for an account/period this delivery does not restate",
        ),
        _sql_rule(
            "currency_consistent_per_account", "billing_currency", ERROR, "one currency per billing account"
        ),
        _sql_rule(
            "currency_matches_history",
            "billing_currency",
            WARN,
            "same currency as loaded before for the account",
        ),
        _reconcile_rule(source_format),
        _sql_rule(
            "restated_period_shrank",
            None,
            WARN,
            "a restated month with fewer rows than before",
            "billing period",
        ),
        _sql_rule(
            "restated_period_collapsed",
            None,
            ERROR,
            "a restated month keeping less than restatement_min_share of the rows or cost it replaces "
            "(held in quarantine until released)",
            "billing period",
        ),
        _sql_rule(
            "delivery_repeats_loaded_file",
            None,
            WARN,
            "the same content as a loaded file under another name",
            "file",
        ),
    ]
    return tuple(not_null + enums + periods + custom)


def job_run_rules() -> tuple[Rule, ...]:
    return (
        _not_null("job_id"),
        _not_null("source"),
        _not_null("state"),
        _in_set("state", JOB_STATES, rule="job_state_in_set"),
        _in_set("source", JOB_SOURCES, rule="job_source_in_set"),
        _in_set("pricing_model", JOB_PRICING_MODELS, rule="job_pricing_model_in_set"),
        _at_least("instance_count", 1, "instance_count_positive"),
        _at_least("gpus_per_instance", 0, "gpus_per_instance_non_negative"),
        _at_least("duration_s", 0, "duration_non_negative"),
        Rule(
            "job_end_after_start",
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {
                "column_A": "end_time",
                "column_B": "start_time",
                "or_equal": True,
                "ignore_row_if": "either_value_is_missing",
            },
            "end_time",
        ),
        Rule(
            "job_unique", "ExpectCompoundColumnsToBeUnique", {"column_list": ["source", "job_id"]}, "job_id"
        ),
        _sql_rule(
            "job_gpu_count_consistent", "gpu_count", ERROR, "gpu_count = instance_count * gpus_per_instance"
        ),
        _sql_rule(
            "job_censoring_matches_state", "censored", ERROR, "preempted/cancelled/running are censored"
        ),
    )


def storage_rules() -> tuple[Rule, ...]:
    return (
        _not_null("bucket"),
        _not_null("key"),
        _not_null("inventory_date"),
        _at_least("size_bytes", 0, "size_non_negative"),
        _in_set("storage_class", STORAGE_CLASSES, rule="storage_class_in_set"),
        _in_set("it_access_tier", IT_ACCESS_TIERS, rule="it_access_tier_in_set"),
        Rule(
            "object_version_unique",
            "ExpectCompoundColumnsToBeUnique",
            {"column_list": ["bucket", "key", "version_id"]},
            "key",
        ),
    )


def telemetry_rules() -> tuple[Rule, ...]:
    """gpu_samples, per delivery (one load_id, checked before it replaces earlier samples)."""
    return (
        _not_null("host"),
        _not_null("gpu_id"),
        _not_null("sampled_at"),
        Rule(
            "telemetry_utilisation_in_range",
            "ExpectColumnValuesToBeBetween",
            {"column": "utilisation_pct", "min_value": 0, "max_value": 100},
            "utilisation_pct",
            ERROR,
            "utilisation of one GPU, 0-100 %",
        ),
        _at_least("memory_used_gib", 0, "telemetry_memory_non_negative"),
        _at_least("power_w", 0, "telemetry_power_non_negative"),
        _sql_rule(
            "telemetry_memory_within_total", "memory_used_gib", ERROR, "memory used <= the GPU's memory"
        ),
        _sql_rule(
            "telemetry_sampled_at_in_range",
            "sampled_at",
            ERROR,
            "sampled between 2000-01-01 and the day after the run's day (a misread clock otherwise)",
        ),
        _sql_rule("telemetry_sample_unique", "sampled_at", ERROR, "one sample per GPU per instant"),
        _sql_rule(
            "telemetry_sample_replaces_loaded",
            "sampled_at",
            WARN,
            "samples of GPUs and instants another file loaded before (this delivery's replace them)",
        ),
        _sql_rule(
            "telemetry_restatement_collapsed",
            None,
            ERROR,
            "a delivery keeping less than restatement_min_share of the samples it replaces for a "
            "GPU (held in quarantine until released)",
            "GPU",
        ),
    )


def _castable(name: str, column: str, target: str, description: str) -> Rule:
    # Raw CSV columns are text (all_varchar): "type" means "every value casts".
    query = sql("quality/raw/castable", column=quote_ident(column), type=target)
    return Rule(
        name, "UnexpectedRowsExpectation", {"unexpected_rows_query": query}, column, ERROR, description
    )


def _raw_enum(column: str, values: tuple[str, ...], rule: str) -> Rule:
    # The allowed values are the code's own constants, written as SQL literals: a GX row query
    # takes no bound parameters.
    allowed = ", ".join("'" + v.lower().replace("'", "''") + "'" for v in values)
    query = sql("quality/raw/in_set", column=quote_ident(column), allowed=allowed)
    return Rule(rule, "UnexpectedRowsExpectation", {"unexpected_rows_query": query}, column, ERROR)


def raw_rules(format_name: str) -> tuple[Rule, ...]:
    """A source file before mapping (a table or view of its raw rows): required columns, types, enumerations."""
    from athanor.ingest import sources

    fmt = next(f for f in sources.formats() if f.name == format_name)
    rules: list[Rule] = [
        Rule(
            f"has_column_{c}",
            "ExpectColumnToExist",
            {"column": c},
            c,
            ERROR,
            f"mandatory {fmt.description} column",
        )
        for c in fmt.required
    ]
    rules += [
        Rule(f"{c}_not_null", "ExpectColumnValuesToNotBeNull", {"column": c}, c)
        for c in fmt.not_null
        if c in fmt.required
    ]
    rules += [
        _castable(f"{c}_is_decimal", c, "decimal(38, 12)", "a decimal number")
        for c in fmt.money
        if c in fmt.required
    ]
    rules += [_castable(f"{c}_is_timestamp", c, "timestamptz", "a timestamp") for c in fmt.timestamps]
    if format_name == "focus":
        rules += [
            _raw_enum("ChargeCategory", CHARGE_CATEGORIES, "ChargeCategory_in_set"),
        ]
    elif format_name == "cur2":
        rules += [_raw_enum("line_item_line_item_type", CUR_LINE_ITEM_TYPES, "line_item_type_in_set")]
    return tuple(rules)


def raw_optional_enums(format_name: str) -> dict[str, tuple[str, ...]]:
    """Enumerated FOCUS columns checked only when the file has them (FOCUS 1.0 files lack some)."""
    if format_name != "focus":
        return {}
    return {
        "ChargeFrequency": CHARGE_FREQUENCIES,
        "PricingCategory": PRICING_CATEGORIES,
        "CommitmentDiscountStatus": COMMITMENT_DISCOUNT_STATUSES,
        "ChargeClass": CHARGE_CLASSES,
    }


SUITES = {
    "billing_facts": billing_rules,
    "job_run_facts": job_run_rules,
    "storage_objects": storage_rules,
    "gpu_samples": telemetry_rules,
    "focus_raw": lambda: raw_rules("focus"),
    "cur2_raw": lambda: raw_rules("cur2"),
}


def suite_rules(
    suite: str, present_columns: set[str] | None = None, source_format: str | None = None
) -> tuple[Rule, ...]:
    """The rules of a suite; raw suites add the optional enumerations the file actually has."""
    if suite not in SUITES:
        raise KeyError(f"unknown data-quality suite {suite!r} (known: {', '.join(SUITES)})")
    rules = billing_rules(source_format) if suite == "billing_facts" else SUITES[suite]()
    if suite.endswith("_raw") and present_columns is not None:
        extra = raw_optional_enums(suite.removesuffix("_raw"))
        rules += tuple(_raw_enum(c, v, f"{c}_in_set") for c, v in extra.items() if c in present_columns)
    return rules
