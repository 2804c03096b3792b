"""Azure Cost Management cost details exports (EA and MCA; actual and amortized cost).

EA and MCA name the same fields differently ('Cost' vs 'costInBillingCurrency',
'BillingCurrency' vs 'billingCurrencyCode') and the case changed between schema
versions, so each canonical column lists its aliases, matched ignoring case,
first alias present wins.
"""

from __future__ import annotations

from athanor.ingest.sources import BillingFormat

# canonical name -> aliases in order of preference (the canonical name itself comes first).
ALIASES: dict[str, tuple[str, ...]] = {
    "BillingAccountId": (),
    "BillingAccountName": (),
    "BillingPeriodStartDate": (),
    "BillingPeriodEndDate": (),
    "BillingProfileId": (),
    "BillingProfileName": (),
    "SubscriptionId": ("SubscriptionGuid",),
    "SubscriptionName": (),
    "Date": ("UsageDate",),
    "ProductName": ("Product",),
    "MeterId": (),
    "MeterCategory": (),
    "MeterSubCategory": (),
    "MeterName": (),
    "MeterRegion": (),
    "ServiceFamily": (),
    "Quantity": ("UsageQuantity",),
    "EffectivePrice": (),
    "CostInBillingCurrency": ("Cost", "PreTaxCost"),
    "PaygCostInBillingCurrency": (),
    "UnitPrice": (),
    "PayGPrice": (),
    "BillingCurrencyCode": ("BillingCurrency", "Currency"),
    "ResourceLocation": (),
    "AvailabilityZone": (),
    "ConsumedService": (),
    "ResourceId": ("InstanceId",),
    "ResourceName": (),
    "ResourceGroup": ("ResourceGroupName",),
    "AdditionalInfo": (),
    "Tags": (),
    "UnitOfMeasure": (),
    "ReservationId": (),
    "ReservationName": (),
    "BenefitId": (),
    "BenefitName": (),
    "PublisherName": (),
    "PublisherType": (),
    "ChargeType": (),
    "Frequency": (),
    "PricingModel": (),
    "Term": (),
    "PartNumber": (),
}

KNOWN = tuple(ALIASES)


def resolve(columns: list[str], known: tuple[str, ...]) -> dict[str, str]:
    by_lower = {}
    for raw in columns:
        by_lower.setdefault(raw.lstrip("\ufeff").lower(), raw)
    found: dict[str, str] = {}
    for name in known:
        for alias in (name, *ALIASES.get(name, ())):
            if alias.lower() in by_lower:
                found[name] = by_lower[alias.lower()]
                break
    return found


# Dates are 'MM/DD/YYYY' in EA and older MCA exports, ISO 8601 in newer ones.
PARSE_DATE = (
    "coalesce(try_strptime({0}::varchar, '%m/%d/%Y')::timestamptz, try_cast({0}::varchar as timestamptz))"
)

REQUIRED = (
    "BillingAccountId",
    "BillingPeriodStartDate",
    "BillingPeriodEndDate",
    "Date",
    "CostInBillingCurrency",
    "BillingCurrencyCode",
    "ChargeType",
)

FORMAT = BillingFormat(
    name="azure",
    description="Azure cost details (EA/MCA)",
    signature=frozenset({"ChargeType", "MeterCategory", "BillingPeriodStartDate"}),
    required=REQUIRED,
    known=KNOWN,
    money=(
        "CostInBillingCurrency",
        "PaygCostInBillingCurrency",
        "Quantity",
        "UnitPrice",
        "PayGPrice",
        "EffectivePrice",
    ),
    timestamps=("BillingPeriodStartDate", "BillingPeriodEndDate", "Date"),
    not_null=REQUIRED,
    currency_column="BillingCurrencyCode",
    file_total="cast(CostInBillingCurrency as decimal(38, 12))",
    # Every Azure cost lands in BilledCost, except amortised commitment rows (covered
    # usage and unused reservations of the amortized dataset), which the bill does not
    # carry: their cost is EffectiveCost and their BilledCost is 0.
    loaded_total="case when billed_cost <> 0 then billed_cost else effective_cost end",
    periods=(("BillingPeriodStartDate", "BillingPeriodEndDate"),),
    parse_timestamp=PARSE_DATE,
    resolve=resolve,
    case_insensitive=True,
)
