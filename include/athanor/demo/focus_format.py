"""Canonical line items rendered as FOCUS 1.2 columns (CSV text or typed Parquet).

See `athanor.demo.bills` for how each canonical line type appears in FOCUS.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from athanor.demo.arrow import (
    column_getter,
    const,
    decimal_array,
    decimal_text,
    int_values,
    is_in,
    iso_text,
    json_object,
    where,
)
from athanor.demo.lines import INVOICE_ISSUER, TAG_KEYS, FileTotals, Rendered, as_lines, check_tag_values
from athanor.reference import focus_columns

_OD_TERM_CODE = "JRTCKXETXF"  # AWS's offer-term code for on-demand prices

# Provider extensions. FOCUS has no column for a commitment's term, so its start and end
# ride along as x_ columns on commitment rows (needed to net out expiring commitments).
FOCUS_EXTENSION_COLUMNS = (
    "x_UsageType",
    "x_InstanceType",
    "x_Operation",
    "x_ServiceCode",
    "x_CommitmentDiscountStart",
    "x_CommitmentDiscountEnd",
)
FOCUS_COLUMNS: tuple[str, ...] = focus_columns() + FOCUS_EXTENSION_COLUMNS


def focus_table(lines: pa.Table, *, typed: bool = False) -> tuple[pa.Table, FileTotals]:
    """Render canonical lines as FOCUS 1.2 columns.

    typed=False gives strings for CSV (fixed decimals, ISO timestamps); typed=True gives
    decimal128 money/quantities and UTC timestamps for Parquet.
    """
    rendered = render_focus(lines, typed=typed)
    return rendered.table, rendered.totals()


def render_focus(lines: pa.Table, *, typed: bool) -> Rendered:
    lines = as_lines(lines)
    check_tag_values(lines)
    n = lines.num_rows
    col = column_getter(lines)
    line_type = col("line_type")
    is_usage = is_in(line_type, "Usage", "DiscountedUsage", "SavingsPlanCoveredUsage")
    is_covered = is_in(line_type, "DiscountedUsage", "SavingsPlanCoveredUsage")
    is_fee = is_in(line_type, "RIFee", "SavingsPlanRecurringFee")
    is_unused = is_in(line_type, "UnusedCommitment")
    is_tax_credit = is_in(line_type, "Tax", "Credit")

    billed, _ = int_values(col("billed_micro"))
    effective, _ = int_values(col("effective_micro"))
    listed, _ = int_values(col("list_micro"))
    list_rate, list_rate_ok = int_values(col("list_rate_micro"))
    rate, rate_ok = int_values(col("rate_micro"))
    qty, qty_ok = int_values(col("quantity_e10"))
    cqty, cqty_ok = int_values(col("commitment_quantity_e10"))

    # ContractedCost: no negotiated discounts here, so it is the price before commitment
    # discounts: on-demand (or spot) cost for usage, the fee for purchases, 0 for unused.
    contracted = np.where(is_covered, listed, np.where(is_unused, 0, billed))
    contracted_rate = np.where(is_covered, list_rate, rate)
    contracted_rate_ok = np.where(is_covered, list_rate_ok, rate_ok) & ~is_unused & ~is_tax_credit
    list_rate_out_ok = np.where(is_fee, rate_ok, list_rate_ok) & ~is_unused & ~is_tax_credit
    list_rate_out = np.where(is_fee, rate, list_rate)

    null = pa.nulls(n, pa.string())
    unit = col("unit")
    focus_unit = pc.if_else(
        pc.equal(unit, "Hrs"), "Hours", pc.if_else(pc.equal(unit, "GB-Mo"), "GB-Months", unit)
    )
    # Unused commitment is priced in the commitment's own unit; tax and credit have none.
    pricing_unit = where(is_unused, col("commitment_unit"), where(is_usage | is_fee, focus_unit, null))
    tags = json_object([(key, col(f"tag_{key}")) for key in TAG_KEYS], n)
    sku_price = pc.binary_join_element_wise(col("sku_id"), _OD_TERM_CODE, ".")
    sku_price = where(is_in(col("pricing_category"), "Standard"), sku_price, col("sku_id"))
    meter = pc.if_else(
        pc.equal(col("service_category"), "Compute"),
        "Compute Usage",
        pc.if_else(pc.equal(col("service_category"), "Storage"), "Storage", "Data Transfer"),
    )
    meter = where(is_usage, meter, pa.nulls(n, pa.string()))
    consumed_qty_ok = is_usage & qty_ok
    pricing_qty_ok = (is_usage | is_fee | is_unused) & qty_ok

    def money(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        return decimal_array(values, valid, 6) if typed else decimal_text(values, valid, 6)

    def quantity(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        return decimal_array(values, valid, 10) if typed else decimal_text(values, valid, 10)

    def ts(name: str) -> pa.Array:
        return col(name).cast(pa.timestamp("ms", tz="UTC")) if typed else iso_text(col(name))

    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "AvailabilityZone": col("availability_zone"),
        "BilledCost": money(billed),
        "BillingAccountId": col("payer_account_id"),
        "BillingAccountName": col("payer_account_name"),
        "BillingAccountType": pa.nulls(n, pa.string()),
        "BillingCurrency": const("USD", n),
        "BillingPeriodEnd": ts("billing_period_end"),
        "BillingPeriodStart": ts("billing_period_start"),
        "CapacityReservationId": pa.nulls(n, pa.string()),
        "CapacityReservationStatus": pa.nulls(n, pa.string()),
        "ChargeCategory": col("charge_category"),
        "ChargeClass": pa.nulls(n, pa.string()),
        "ChargeDescription": col("description"),
        "ChargeFrequency": col("charge_frequency"),
        "ChargePeriodEnd": ts("charge_end"),
        "ChargePeriodStart": ts("charge_start"),
        "CommitmentDiscountCategory": col("commitment_category"),
        "CommitmentDiscountId": col("commitment_id"),
        "CommitmentDiscountName": col("commitment_name"),
        "CommitmentDiscountQuantity": quantity(cqty, cqty_ok),
        "CommitmentDiscountStatus": col("commitment_status"),
        "CommitmentDiscountType": col("commitment_type"),
        "CommitmentDiscountUnit": where(cqty_ok, col("commitment_unit"), pa.nulls(n, pa.string())),
        "ConsumedQuantity": quantity(qty, consumed_qty_ok),
        "ConsumedUnit": where(is_usage, focus_unit, pa.nulls(n, pa.string())),
        "ContractedCost": money(contracted),
        "ContractedUnitPrice": money(contracted_rate, contracted_rate_ok),
        "EffectiveCost": money(effective),
        "InvoiceId": col("invoice_id"),
        "InvoiceIssuerName": const(INVOICE_ISSUER, n),
        "ListCost": money(listed),
        "ListUnitPrice": money(list_rate_out, list_rate_out_ok),
        "PricingCategory": col("pricing_category"),
        "PricingCurrency": pa.nulls(n, pa.string()),
        "PricingCurrencyContractedUnitPrice": pa.nulls(n, pa.string()),
        "PricingCurrencyEffectiveCost": pa.nulls(n, pa.string()),
        "PricingCurrencyListUnitPrice": pa.nulls(n, pa.string()),
        "PricingQuantity": quantity(
            np.where(is_unused, cqty, qty), np.where(is_unused, cqty_ok, pricing_qty_ok)
        ),
        "PricingUnit": pricing_unit,
        "ProviderName": const("AWS", n),
        "PublisherName": const(INVOICE_ISSUER, n),
        "RegionId": col("region_id"),
        "RegionName": col("region_name"),
        "ResourceId": col("resource_id"),
        "ResourceName": pa.nulls(n, pa.string()),
        "ResourceType": col("resource_type"),
        "ServiceCategory": col("service_category"),
        "ServiceName": col("service_name"),
        "ServiceSubcategory": col("service_subcategory"),
        "SkuId": col("sku_id"),
        "SkuMeter": meter,
        "SkuPriceDetails": pa.nulls(n, pa.string()),
        "SkuPriceId": sku_price,
        "SubAccountId": col("usage_account_id"),
        "SubAccountName": col("usage_account_name"),
        "SubAccountType": pa.nulls(n, pa.string()),
        "Tags": tags,
        "x_UsageType": col("usage_type"),
        "x_InstanceType": col("instance_type"),
        "x_Operation": col("operation"),
        "x_ServiceCode": col("product_code"),
        "x_CommitmentDiscountStart": ts("commitment_start"),
        "x_CommitmentDiscountEnd": ts("commitment_end"),
    }
    if typed:
        for name in (
            "PricingCurrencyContractedUnitPrice",
            "PricingCurrencyEffectiveCost",
            "PricingCurrencyListUnitPrice",
        ):
            out[name] = pa.nulls(n, pa.decimal128(38, 6))
    return Rendered(pa.table({name: out[name] for name in FOCUS_COLUMNS}), billed, effective, listed)
