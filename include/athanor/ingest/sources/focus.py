"""FOCUS 1.0, 1.1 and 1.2 exports from any provider (CSV, CSV.gz, Parquet)."""

from __future__ import annotations

from athanor.ingest.sources import BillingFormat
from athanor.reference import focus_columns

_REQUIRED = (
    "BilledCost",
    "EffectiveCost",
    "BillingAccountId",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargeCategory",
    "ChargePeriodStart",
    "ChargePeriodEnd",
)

FORMAT = BillingFormat(
    name="focus",
    description="FOCUS 1.0-1.2",
    signature=frozenset({"BilledCost", "ChargePeriodStart", "BillingAccountId"}),
    required=_REQUIRED,
    # Provider extensions the staging query reads (instance type, usage, commitment end).
    known=focus_columns() + ("x_UsageType", "x_InstanceType", "x_Operation", "x_CommitmentDiscountEnd"),
    money=(
        "BilledCost",
        "EffectiveCost",
        "ListCost",
        "ContractedCost",
        "ListUnitPrice",
        "ContractedUnitPrice",
        "PricingQuantity",
        "ConsumedQuantity",
        "CommitmentDiscountQuantity",
        "PricingCurrencyContractedUnitPrice",
        "PricingCurrencyEffectiveCost",
        "PricingCurrencyListUnitPrice",
    ),
    timestamps=("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"),
    not_null=("BillingAccountId", "BillingCurrency", "ChargeCategory", "BilledCost", "EffectiveCost")
    + ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"),
    currency_column="BillingCurrency",
    file_total="cast(BilledCost as decimal(38, 12))",
    maps=("Tags",),
    typed_source=True,
    periods=(("ChargePeriodStart", "ChargePeriodEnd"), ("BillingPeriodStart", "BillingPeriodEnd")),
)
