"""AWS Cost and Usage Report 2.0 (Data Exports): snake_case columns, Parquet or CSV."""

from __future__ import annotations

from athanor.ingest.sources import BillingFormat

KNOWN = (
    "identity_line_item_id",
    "identity_time_interval",
    "bill_bill_type",
    "bill_billing_entity",
    "bill_invoicing_entity",
    "bill_billing_period_start_date",
    "bill_billing_period_end_date",
    "bill_invoice_id",
    "bill_payer_account_id",
    "bill_payer_account_name",
    "line_item_usage_account_id",
    "line_item_usage_account_name",
    "line_item_legal_entity",
    "line_item_line_item_type",
    "line_item_usage_start_date",
    "line_item_usage_end_date",
    "line_item_product_code",
    "line_item_usage_type",
    "line_item_operation",
    "line_item_availability_zone",
    "line_item_resource_id",
    "line_item_usage_amount",
    "line_item_normalization_factor",
    "line_item_currency_code",
    "line_item_unblended_rate",
    "line_item_unblended_cost",
    "line_item_net_unblended_cost",
    "line_item_line_item_description",
    "pricing_public_on_demand_cost",
    "pricing_public_on_demand_rate",
    "pricing_rate_code",
    "pricing_rate_id",
    "pricing_term",
    "pricing_unit",
    "product",
    "product_instance_type",
    "product_product_family",
    "product_region_code",
    "product_region",
    "product_location",
    "product_servicecode",
    "product_sku",
    "resource_tags",
    "reservation_reservation_a_r_n",
    "reservation_effective_cost",
    "reservation_total_reserved_units",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee",
    "reservation_unused_quantity",
    "reservation_end_time",
    "savings_plan_savings_plan_a_r_n",
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_savings_plan_rate",
    "savings_plan_used_commitment",
    "savings_plan_total_commitment_to_date",
    "savings_plan_end_time",
    "savings_plan_offering_type",
    "savings_plan_purchase_term",
    "savings_plan_payment_option",
)

REQUIRED = (
    "bill_payer_account_id",
    "bill_billing_period_start_date",
    "bill_billing_period_end_date",
    "line_item_line_item_type",
    "line_item_usage_start_date",
    "line_item_usage_end_date",
    "line_item_unblended_cost",
    "line_item_currency_code",
)

MONEY = (
    "line_item_unblended_cost",
    "line_item_net_unblended_cost",
    "line_item_usage_amount",
    "pricing_public_on_demand_cost",
    "pricing_public_on_demand_rate",
    "reservation_effective_cost",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee",
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_used_commitment",
    "savings_plan_total_commitment_to_date",
)

TIMESTAMPS = (
    "bill_billing_period_start_date",
    "bill_billing_period_end_date",
    "line_item_usage_start_date",
    "line_item_usage_end_date",
)

MAPS = ("product", "resource_tags")

# User-defined tags: user_<key> in CUR 2.0, user:<key> in legacy CUR.
TAG_KEY_PREFIXES = ("resource_tags", ("user_", "user:"))

# BilledCost per the FOCUS conversion rules: the net unblended cost (after discounts
# such as EDP) where AWS writes one, else the unblended cost.
FILE_TOTAL = "coalesce(cast(line_item_net_unblended_cost as decimal(38, 12)), cast(line_item_unblended_cost as decimal(38, 12)))"

FORMAT = BillingFormat(
    name="cur2",
    description="AWS CUR 2.0",
    signature=frozenset({"bill_payer_account_id", "line_item_usage_start_date", "line_item_unblended_cost"}),
    required=REQUIRED,
    known=KNOWN,
    money=MONEY,
    timestamps=TIMESTAMPS,
    not_null=REQUIRED,
    currency_column="line_item_currency_code",
    file_total=FILE_TOTAL,
    maps=MAPS,
    key_prefixes=TAG_KEY_PREFIXES,
    keep_extras=False,
    typed_source=True,
    periods=(
        ("line_item_usage_start_date", "line_item_usage_end_date"),
        ("bill_billing_period_start_date", "bill_billing_period_end_date"),
    ),
)
