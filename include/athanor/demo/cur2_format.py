"""Canonical line items rendered as AWS CUR 2.0 rows (Parquet with doubles and maps, or CSV text).

See `athanor.demo.bills` for how each canonical line type appears in CUR 2.0.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from athanor.demo.arrow import (
    column_getter,
    const,
    decimal_text,
    double_array,
    hex16,
    int_values,
    is_in,
    iso_text,
    json_object,
    map_array,
    mix64,
    per_value,
    pick,
    seed64,
    where,
)
from athanor.demo.lines import INVOICE_ISSUER, TAG_KEYS, Rendered, as_lines, check_tag_values

# CUR 2.0 (Data Exports, table COST_AND_USAGE_REPORT) columns this writer emits, in order.
CUR2_COLUMNS: tuple[str, ...] = (
    "identity_line_item_id",
    "identity_time_interval",
    "bill_invoice_id",
    "bill_invoicing_entity",
    "bill_billing_entity",
    "bill_bill_type",
    "bill_payer_account_id",
    "bill_payer_account_name",
    "bill_billing_period_start_date",
    "bill_billing_period_end_date",
    "line_item_usage_account_id",
    "line_item_usage_account_name",
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
    "line_item_normalized_usage_amount",
    "line_item_currency_code",
    "line_item_unblended_rate",
    "line_item_unblended_cost",
    "line_item_blended_rate",
    "line_item_blended_cost",
    "line_item_line_item_description",
    "line_item_tax_type",
    "line_item_legal_entity",
    "pricing_public_on_demand_cost",
    "pricing_public_on_demand_rate",
    "pricing_term",
    "pricing_unit",
    "pricing_purchase_option",
    "pricing_lease_contract_length",
    "pricing_offering_class",
    "product",
    "product_instance_type",
    "product_instance_family",
    "product_product_family",
    "product_region_code",
    "product_location",
    "product_servicecode",
    "product_sku",
    "product_usagetype",
    "product_operation",
    "resource_tags",
    "reservation_reservation_a_r_n",
    "reservation_start_time",
    "reservation_end_time",
    "reservation_effective_cost",
    "reservation_recurring_fee_for_usage",
    "reservation_amortized_upfront_cost_for_usage",
    "reservation_amortized_upfront_fee_for_billing_period",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_quantity",
    "reservation_unused_recurring_fee",
    "reservation_number_of_reservations",
    "reservation_total_reserved_units",
    "reservation_units_per_reservation",
    "reservation_upfront_value",
    "savings_plan_savings_plan_a_r_n",
    "savings_plan_start_time",
    "savings_plan_end_time",
    "savings_plan_offering_type",
    "savings_plan_payment_option",
    "savings_plan_purchase_term",
    "savings_plan_region",
    "savings_plan_savings_plan_rate",
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_used_commitment",
    "savings_plan_total_commitment_to_date",
    "savings_plan_recurring_commitment_for_billing_period",
    "savings_plan_amortized_upfront_commitment_for_billing_period",
)


_AMORTIZED_TYPES = (
    "SavingsPlanCoveredUsage",
    "SavingsPlanRecurringFee",
    "SavingsPlanNegation",
    "DiscountedUsage",
    "RIFee",
)


def _amortized(masks: dict[str, np.ndarray], cols: dict[str, np.ndarray]) -> np.ndarray:
    """AWS's amortized cost per CUR row (the formula of the CUR query library), in the units of cols."""
    return np.select(
        [masks[name] for name in _AMORTIZED_TYPES],
        [
            cols["savings_plan_savings_plan_effective_cost"],
            cols["savings_plan_total_commitment_to_date"] - cols["savings_plan_used_commitment"],
            0,
            cols["reservation_effective_cost"],
            cols["reservation_unused_amortized_upfront_fee_for_billing_period"]
            + cols["reservation_unused_recurring_fee"],
        ],
        default=cols["line_item_unblended_cost"],
    )


_CUR_LINE_TYPES = (
    "Usage",
    "DiscountedUsage",
    "SavingsPlanCoveredUsage",
    "SavingsPlanNegation",
    "RIFee",
    "SavingsPlanRecurringFee",
    "Tax",
    "Credit",
)


def render_cur2(lines: pa.Table, *, csv_text: bool) -> Rendered:
    lines = as_lines(lines)
    check_tag_values(lines)
    lines = lines.filter(pa.array(~is_in(lines.column("line_type").combine_chunks(), "UnusedCommitment")))
    code = np.full(lines.num_rows, -1, dtype=np.int8)
    types = lines.column("line_type").combine_chunks()
    for i, name in enumerate(_CUR_LINE_TYPES):
        code[is_in(types, name)] = i
    if (code < 0).any():
        raise ValueError(f"unknown line_type values: {pc.unique(types).to_pylist()}")
    # Every Savings-Plan-covered row gets a SavingsPlanNegation row; they follow the
    # usage rows of the same part (CUR row order carries no meaning; this avoids a
    # full-table shuffle on 10M-row files).
    covered = code == _CUR_LINE_TYPES.index("SavingsPlanCoveredUsage")
    negations = lines.filter(pa.array(covered))
    parts = [
        _render_cur2_rows(lines, code, 0, csv_text=csv_text),
        _render_cur2_rows(
            negations,
            np.full(negations.num_rows, _CUR_LINE_TYPES.index("SavingsPlanNegation"), np.int8),
            lines.num_rows,
            csv_text=csv_text,
        ),
    ]
    return Rendered(
        pa.concat_tables([part.table for part in parts]),
        np.concatenate([part.billed for part in parts]),
        np.concatenate([part.effective for part in parts]),
        np.concatenate([part.listed for part in parts]),
    )


def _render_cur2_rows(rows: pa.Table, code: np.ndarray, first_row: int, *, csv_text: bool) -> Rendered:
    n = rows.num_rows
    col = column_getter(rows)

    billed, _ = int_values(col("billed_micro"))
    effective, _ = int_values(col("effective_micro"))
    listed, _ = int_values(col("list_micro"))
    list_rate, list_rate_ok = int_values(col("list_rate_micro"))
    rate, rate_ok = int_values(col("rate_micro"))
    qty, _ = int_values(col("quantity_e10"))
    c_rate, _ = int_values(col("commitment_rate_micro"))
    c_total, _ = int_values(col("commitment_total_micro"))
    c_used, _ = int_values(col("commitment_used_micro"))
    c_count, c_count_ok = int_values(col("commitment_count"))
    unused_q, _ = int_values(col("unused_quantity_e10"))
    unused_m, _ = int_values(col("unused_micro"))
    nf = pc.fill_null(col("normalization_factor"), np.nan).to_numpy(zero_copy_only=False)
    nf_ok = ~np.isnan(nf)

    is_type = {name: code == i for i, name in enumerate(_CUR_LINE_TYPES)}
    is_sp_cov = is_type["SavingsPlanCoveredUsage"]
    is_neg = is_type["SavingsPlanNegation"]
    is_du = is_type["DiscountedUsage"]
    is_rifee = is_type["RIFee"]
    is_spfee = is_type["SavingsPlanRecurringFee"]
    is_plain_usage = is_type["Usage"]
    is_tax_credit = is_type["Tax"] | is_type["Credit"]
    is_ri = is_du | is_rifee
    is_sp = is_sp_cov | is_neg | is_spfee
    is_spot = is_in(col("pricing_category"), "Dynamic")

    # Unblended: the on-demand charge of SP-covered usage is cancelled by its negation;
    # RI-discounted usage costs 0 because the RIFee carries the charge.
    unblended = np.select([is_sp_cov, is_neg, is_du], [listed, -listed, 0], default=billed)
    unblended_rate = np.select([is_sp_cov, is_neg, is_du], [list_rate, -list_rate, 0], default=rate)
    unblended_rate_ok = np.where(is_sp_cov | is_neg, list_rate_ok, rate_ok) & ~is_tax_credit
    od_cost = np.where(is_plain_usage | is_du | is_sp_cov, listed, 0)
    od_rate_ok = (is_plain_usage | is_du | is_sp_cov) & list_rate_ok
    period_s = pc.subtract(
        col("billing_period_end").cast(pa.int64()), col("billing_period_start").cast(pa.int64())
    )
    hours_in_period = period_s.to_numpy(zero_copy_only=False) // 3600
    zeros = np.zeros(n, np.int64)
    ints: dict[str, np.ndarray] = {
        "line_item_unblended_cost": unblended,
        "reservation_effective_cost": np.where(is_du, effective, 0),
        "reservation_recurring_fee_for_usage": np.where(is_du, effective, 0),
        "reservation_amortized_upfront_cost_for_usage": zeros,
        "reservation_amortized_upfront_fee_for_billing_period": zeros,
        "reservation_unused_amortized_upfront_fee_for_billing_period": zeros,
        "reservation_unused_recurring_fee": np.where(is_rifee, unused_m, 0),
        "reservation_upfront_value": zeros,
        "savings_plan_savings_plan_rate": np.where(is_sp_cov, c_rate, 0),
        "savings_plan_savings_plan_effective_cost": np.where(is_sp_cov, effective, 0),
        "savings_plan_used_commitment": np.where(is_spfee, c_used, 0),
        "savings_plan_total_commitment_to_date": np.where(is_spfee, c_total, 0),
        "savings_plan_recurring_commitment_for_billing_period": np.where(
            is_spfee, c_total * hours_in_period, 0
        ),
        "savings_plan_amortized_upfront_commitment_for_billing_period": zeros,
    }
    amortized = _amortized(is_type, ints)

    normalized = np.where(nf_ok, np.rint(qty * np.where(nf_ok, nf, 0)), 0).astype(np.int64)
    ri_units = np.where(is_rifee, qty, 0)
    ri_units_per = np.where(is_rifee & c_count_ok, qty // np.maximum(c_count, 1), 0)

    def money(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        return decimal_text(values, valid, 6) if csv_text else double_array(values, valid, 6)

    def quantity(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        return decimal_text(values, valid, 10) if csv_text else double_array(values, valid, 10)

    def ts(name: str) -> pa.Array:
        return iso_text(col(name)) if csv_text else col(name).cast(pa.timestamp("ms", tz="UTC"))

    null = pa.nulls(n, pa.string())
    # CUR leaves product_instance_type empty on spot lines: the type is only in the usage type.
    instance_type = where(is_spot, null, col("instance_type"))
    family = per_value(instance_type, lambda types: pc.list_element(pc.split_pattern(types, "."), 0))
    is_compute_row = is_in(col("resource_type"), "Instance") | is_rifee
    product_entries = [
        ("product_name", col("service_name")),
        ("product_family", col("product_family")),
        ("region", col("region_id")),
        ("instance_type", instance_type),
        ("operating_system", where(is_compute_row, const("Linux", n), null)),
        ("servicecode", col("product_code")),
    ]
    tag_entries = [(f"user_{key}", col(f"tag_{key}")) for key in TAG_KEYS]
    if csv_text:
        product = json_object(product_entries, n)
        tags = json_object(tag_entries, n)
    else:
        product = map_array(product_entries, n)
        tags = map_array(tag_entries, n)

    # A stable id per row: hash of payer, charge start and position in the file part.
    key = seed64(*rows.column("payer_account_id").unique().to_pylist()) if n else 0
    start_s = col("charge_start").cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.uint64)
    position = np.arange(first_row, first_row + n, dtype=np.uint64)
    row_ids = hex16(mix64(mix64(start_s ^ np.uint64(key)) + position))
    interval = pc.binary_join_element_wise(iso_text(col("charge_start")), iso_text(col("charge_end")), "/")
    usage_type = col("usage_type")
    commit_start = iso_text(col("commitment_start"))
    commit_end = iso_text(col("commitment_end"))
    term_code = np.select([is_spot, is_ri, is_spfee | is_tax_credit], [1, 2, 3], default=0)
    pricing_term = pick(["OnDemand", "Spot", "Reserved", None], term_code)
    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "identity_line_item_id": row_ids,
        "identity_time_interval": interval,
        "bill_invoice_id": col("invoice_id"),
        "bill_invoicing_entity": const(INVOICE_ISSUER, n),
        "bill_billing_entity": const("AWS", n),
        "bill_bill_type": const("Anniversary", n),
        "bill_payer_account_id": col("payer_account_id"),
        "bill_payer_account_name": col("payer_account_name"),
        "bill_billing_period_start_date": ts("billing_period_start"),
        "bill_billing_period_end_date": ts("billing_period_end"),
        "line_item_usage_account_id": col("usage_account_id"),
        "line_item_usage_account_name": col("usage_account_name"),
        "line_item_line_item_type": pick(_CUR_LINE_TYPES, code),
        "line_item_usage_start_date": ts("charge_start"),
        "line_item_usage_end_date": ts("charge_end"),
        "line_item_product_code": col("product_code"),
        "line_item_usage_type": usage_type,
        "line_item_operation": col("operation"),
        "line_item_availability_zone": col("availability_zone"),
        "line_item_resource_id": col("resource_id"),
        "line_item_usage_amount": quantity(qty),
        "line_item_normalization_factor": (
            pc.cast(pa.array(nf, mask=~nf_ok), pa.string()) if csv_text else pa.array(nf, mask=~nf_ok)
        ),
        "line_item_normalized_usage_amount": quantity(normalized, nf_ok),
        "line_item_currency_code": const("USD", n),
        "line_item_unblended_rate": money(unblended_rate, unblended_rate_ok),
        "line_item_unblended_cost": money(unblended),
        "line_item_blended_rate": money(unblended_rate, unblended_rate_ok),
        "line_item_blended_cost": money(unblended),
        "line_item_line_item_description": col("description"),
        "line_item_tax_type": where(is_type["Tax"], const("USSalesTax", n), null),
        "line_item_legal_entity": const(INVOICE_ISSUER, n),
        "pricing_public_on_demand_cost": money(od_cost),
        "pricing_public_on_demand_rate": money(list_rate, od_rate_ok),
        "pricing_term": pricing_term,
        "pricing_unit": where(is_tax_credit, null, col("unit")),
        "pricing_purchase_option": where(is_ri, const("No Upfront", n), null),
        "pricing_lease_contract_length": where(is_ri, const("1yr", n), null),
        "pricing_offering_class": where(is_ri, const("standard", n), null),
        "product": product,
        "product_instance_type": instance_type,
        "product_instance_family": family,
        "product_product_family": col("product_family"),
        "product_region_code": col("region_id"),
        "product_location": col("region_name"),
        "product_servicecode": col("product_code"),
        "product_sku": col("sku_id"),
        "product_usagetype": usage_type,
        "product_operation": col("operation"),
        "resource_tags": tags,
        "reservation_reservation_a_r_n": where(is_ri, col("commitment_id"), null),
        "reservation_start_time": where(is_ri, commit_start, null),
        "reservation_end_time": where(is_ri, commit_end, null),
        "reservation_unused_quantity": quantity(np.where(is_rifee, unused_q, 0)),
        "reservation_number_of_reservations": (
            pc.cast(pa.array(np.where(is_rifee, c_count, 0)), pa.string())
            if csv_text
            else pa.array(np.where(is_rifee, c_count, 0).astype(np.float64))
        ),
        "reservation_total_reserved_units": quantity(ri_units),
        "reservation_units_per_reservation": quantity(ri_units_per),
        "savings_plan_savings_plan_a_r_n": where(is_sp, col("commitment_id"), null),
        "savings_plan_start_time": where(is_sp, commit_start, null),
        "savings_plan_end_time": where(is_sp, commit_end, null),
        "savings_plan_offering_type": where(is_sp, const("ComputeSavingsPlans", n), null),
        "savings_plan_payment_option": where(is_sp, const("No Upfront", n), null),
        "savings_plan_purchase_term": where(is_sp, const("1yr", n), null),
        "savings_plan_region": null,  # Compute Savings Plans apply in every region
    }
    for name, values in ints.items():
        out[name] = money(values)
    return Rendered(pa.table({name: out[name] for name in CUR2_COLUMNS}), unblended, amortized, od_cost)
