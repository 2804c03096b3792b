"""Write billing line items as FOCUS 1.2 and AWS CUR 2.0 files, exactly and reproducibly.

Both writers take the same *canonical line-item frame* (`LINE_SCHEMA`, a pyarrow
table; grain: one row per charge per charge period) and render it the way each
format represents the charge. Money is carried as integer micro-dollars and
quantities as integers of 1e-10 units, so every file total is exact and the
same bytes come out for the same input:

- FOCUS CSV: money with 6 decimals, quantities with 10, timestamps ISO 8601 with
  `Z`, `Tags` a JSON object string, provider extensions as `x_` columns.
- CUR 2.0 Parquet: money and quantities as DOUBLE (what AWS writes; each value is
  the double nearest the exact micro-dollar amount, so sums agree to the cent),
  `product` and `resource_tags` as MAP<string,string>. CUR CSV: fixed decimals
  and the maps as JSON strings.

How commitments appear (the canonical `line_type` is the CUR line item type):

| canonical line_type     | FOCUS 1.2                                            | CUR 2.0                                  |
|-------------------------|------------------------------------------------------|------------------------------------------|
| Usage                   | Usage, Standard (on-demand) or Dynamic (spot)        | Usage                                    |
| DiscountedUsage         | Usage, Committed, Status Used, Billed 0, Effective RI | DiscountedUsage (unblended 0)            |
| SavingsPlanCoveredUsage | Usage, Committed, Status Used, Billed 0, Effective SP | SavingsPlanCoveredUsage (unblended = on-demand) + a SavingsPlanNegation row |
| UnusedCommitment        | Usage, Status Unused, Billed 0, Effective = unused    | (no row: folded into RIFee / SavingsPlanRecurringFee) |
| RIFee                   | Purchase, Recurring, Effective 0                      | RIFee with reservation_unused_*          |
| SavingsPlanRecurringFee | Purchase, Recurring, Effective 0                      | SavingsPlanRecurringFee with used/total commitment |
| Tax / Credit            | Tax / Credit                                          | Tax / Credit                             |

With these rules, FOCUS sum(BilledCost) equals CUR sum(line_item_unblended_cost),
and FOCUS sum(EffectiveCost) equals the usual CUR amortized-cost formula (see
`amortized_cost_micro`) wherever the RI month is complete.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import io
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from athanor.reference import focus_columns, instance

MICRO = 1_000_000  # money unit: micro-dollars
QTY = 10_000_000_000  # quantity unit: 1e-10 of the pricing unit

_TS = pa.timestamp("s", tz="UTC")

# The canonical line-item frame both writers read. Grain: one row per charge per
# charge period. *_micro columns are integer micro-dollars, *_e10 integer 1e-10 units.
LINE_SCHEMA = pa.schema(
    [
        ("payer_account_id", pa.string()),
        ("payer_account_name", pa.string()),
        ("usage_account_id", pa.string()),
        ("usage_account_name", pa.string()),
        ("billing_period_start", _TS),
        ("billing_period_end", _TS),
        ("charge_start", _TS),
        ("charge_end", _TS),
        ("line_type", pa.string()),  # CUR line item type, or UnusedCommitment (FOCUS only)
        ("charge_category", pa.string()),  # Usage | Purchase | Tax | Credit
        ("charge_frequency", pa.string()),  # Usage-Based | Recurring | One-Time
        ("pricing_category", pa.string()),  # Standard | Dynamic | Committed | null
        ("product_code", pa.string()),  # AmazonEC2, AmazonS3, AWSDataTransfer, ComputeSavingsPlans
        ("service_name", pa.string()),
        ("service_category", pa.string()),
        ("service_subcategory", pa.string()),
        ("product_family", pa.string()),
        ("region_id", pa.string()),
        ("region_name", pa.string()),
        ("availability_zone", pa.string()),
        ("resource_id", pa.string()),
        ("resource_type", pa.string()),
        ("instance_type", pa.string()),  # the real type, also for spot lines
        ("normalization_factor", pa.float64()),
        ("usage_type", pa.string()),
        ("operation", pa.string()),
        ("description", pa.string()),
        ("sku_id", pa.string()),
        ("unit", pa.string()),  # AWS pricing unit: Hrs | GB-Mo | GB
        ("quantity_e10", pa.int64()),
        ("list_rate_micro", pa.int64()),  # public on-demand price per unit
        ("rate_micro", pa.int64()),  # price actually charged per unit (spot, RI, fee ...)
        ("billed_micro", pa.int64()),
        ("effective_micro", pa.int64()),
        ("list_micro", pa.int64()),  # on-demand equivalent (purchases, tax, credit: = billed)
        ("commitment_id", pa.string()),  # RI or Savings Plan ARN
        ("commitment_name", pa.string()),
        ("commitment_type", pa.string()),  # Reserved Instance | Savings Plan
        ("commitment_category", pa.string()),  # Usage | Spend
        ("commitment_status", pa.string()),  # Used | Unused | null
        ("commitment_unit", pa.string()),  # Hours | USD
        ("commitment_quantity_e10", pa.int64()),
        ("commitment_rate_micro", pa.int64()),  # RI or SP rate per instance-hour
        ("commitment_total_micro", pa.int64()),  # SP fee row: commitment for the hour
        ("commitment_used_micro", pa.int64()),  # SP fee row: part of it used
        ("commitment_count", pa.int64()),  # RI fee row: number of reservations
        ("unused_quantity_e10", pa.int64()),  # RI fee row: purchased minus used hours
        ("unused_micro", pa.int64()),  # RI fee row: recurring fee of the unused hours
        ("commitment_start", _TS),
        ("commitment_end", _TS),
        ("invoice_id", pa.string()),  # null while the month is open
        ("tag_team", pa.string()),
        ("tag_project", pa.string()),
        ("tag_model", pa.string()),
        ("tag_job_id", pa.string()),
    ]
)

TAG_KEYS = ("team", "project", "model", "job_id")

_INVOICE_ISSUER = "Amazon Web Services, Inc."
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


@dataclass(frozen=True)
class FileTotals:
    """Row count and exact money totals of one written file, in micro-dollars.

    billed: FOCUS BilledCost / CUR line_item_unblended_cost. effective: FOCUS
    EffectiveCost / CUR amortized cost. listed: FOCUS ListCost / CUR
    pricing_public_on_demand_cost.
    """

    path: str
    fmt: str
    rows: int
    billed_micro: int
    effective_micro: int
    list_micro: int

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "format": self.fmt,
            "rows": self.rows,
            "billed_cost": micro_to_str(self.billed_micro),
            "effective_cost": micro_to_str(self.effective_micro),
            "list_cost": micro_to_str(self.list_micro),
        }


def micro_to_str(micro: int) -> str:
    """Exact decimal string of a micro-dollar amount, e.g. 13176000 -> '13.176000'."""
    return str(Decimal(int(micro)).scaleb(-6).quantize(Decimal("0.000001")))


@dataclass(frozen=True)
class _Rendered:
    """A rendered table with its per-row billed, effective and list amounts (micro-dollars)."""

    table: pa.Table
    billed: np.ndarray
    effective: np.ndarray
    listed: np.ndarray

    def head(self, k: int) -> _Rendered:
        return _Rendered(self.table.slice(0, k), self.billed[:k], self.effective[:k], self.listed[:k])

    def totals(self) -> FileTotals:
        return FileTotals(
            "",
            "",
            self.table.num_rows,
            int(self.billed.sum()),
            int(self.effective.sum()),
            int(self.listed.sum()),
        )


# ----------------------------------------------------------------------------- array helpers


def _columns(table: pa.Table) -> Callable[[str], pa.Array]:
    """Column getter returning plain arrays (compute kernels then mix them freely)."""

    def get(name: str) -> pa.Array:
        column = table.column(name)
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()

    return get


def _np_int(arr: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0, validity mask) of an int64 column."""
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    values = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return values, valid


def _decimal(values: np.ndarray, valid: np.ndarray | None, scale: int) -> pa.Array:
    """decimal128(38, scale) array whose unscaled integers are `values` (no float on the way)."""
    n = len(values)
    words = np.empty((n, 2), dtype=np.int64)
    words[:, 0] = values
    words[:, 1] = values >> 63  # sign extension into the high 64 bits
    validity = None
    null_count = 0
    if valid is not None and not valid.all():
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        null_count = int(n - valid.sum())
    return pa.Array.from_buffers(
        pa.decimal128(38, scale), n, [validity, pa.py_buffer(words)], null_count=null_count
    )


def _decimal_text(values: np.ndarray, valid: np.ndarray | None, scale: int) -> pa.Array:
    """Fixed-decimal strings ('13.176000'); each distinct amount is formatted once."""
    unique, inverse = np.unique(values, return_inverse=True)
    if len(unique) > len(values) // 4:
        return pc.cast(_decimal(values, valid, scale), pa.string())
    text = pc.cast(_decimal(unique, None, scale), pa.string()).take(pa.array(inverse.astype(np.int64)))
    return text if valid is None or valid.all() else _where(valid, text, pa.nulls(len(values), pa.string()))


def _double(values: np.ndarray, valid: np.ndarray | None, scale: int) -> pa.Array:
    """The double nearest each exact value values/10**scale (one correctly rounded division)."""
    out = values.astype(np.float64) / float(10**scale)
    return pa.array(out, type=pa.float64(), mask=None if valid is None else ~valid)


def _iso(ts: pa.ChunkedArray | pa.Array) -> pa.Array:
    """ISO 8601 strings with Z. Billing timestamps repeat (hours), so format each value once."""
    seconds = pc.fill_null(ts.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    unique, inverse = np.unique(seconds, return_inverse=True)
    text = pc.cast(pa.array(unique).cast(pa.timestamp("s")), pa.string())  # "YYYY-MM-DD HH:MM:SS"
    iso = pc.binary_join_element_wise(
        pc.utf8_slice_codeunits(text, 0, 10), "T", pc.utf8_slice_codeunits(text, 11, 19), "Z", ""
    )
    out = iso.take(pa.array(inverse.astype(np.int32)))
    return _where(ts.is_valid().to_numpy(zero_copy_only=False), out, pa.nulls(len(seconds), pa.string()))


def _const(value: str | None, n: int) -> pa.Array:
    return pa.nulls(n, pa.string()) if value is None else pa.repeat(pa.scalar(value, pa.string()), n)


def _where(mask: np.ndarray, a: pa.Array, b: pa.Array) -> pa.Array:
    return pc.if_else(pa.array(mask), a, b)


def _is(values: pa.Array, *options: str) -> np.ndarray:
    """Boolean numpy mask: values in options (nulls are False)."""
    found = pc.is_in(values, value_set=pa.array(options, pa.string()))
    return pc.fill_null(found, False).to_numpy(zero_copy_only=False)


def _pick(options: Sequence[str | None], codes: np.ndarray) -> pa.Array:
    """options[codes] as a string array (None options become nulls), without Python objects."""
    codes = np.asarray(codes, dtype=np.int32)
    null_codes = [i for i, option in enumerate(options) if option is None]
    mask = np.isin(codes, null_codes) if null_codes else None
    dictionary = pa.array(["" if option is None else option for option in options], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(codes, mask=mask), dictionary).cast(pa.string())


def _hex16(values: np.ndarray) -> pa.Array:
    """Lower-case 16-digit hex strings of uint64 values, vectorised."""
    raw = binascii.hexlify(values.astype(">u8").tobytes())
    fixed = pa.Array.from_buffers(pa.binary(16), len(values), [None, pa.py_buffer(raw)])
    return fixed.cast(pa.binary()).cast(pa.string())


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a fast, stable 64-bit hash of integers."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _seed64(*parts: object) -> int:
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _once_per_combination(
    entries: Sequence[tuple[str, pa.Array]], build: Callable[[Sequence[tuple[str, pa.Array]], int], pa.Array]
) -> pa.Array:
    """build(entries, n) computed once per distinct row of values, then expanded to every row.

    Tags and product attributes repeat across thousands of hourly rows; building maps or
    JSON for the distinct combinations only is several times faster on big files.
    """
    n = len(entries[0][1])
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for _, values in entries:
        encoded = pc.dictionary_encode(values)
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
        radix_next = radix * (len(encoded.dictionary) + 1)
        if radix_next > 2**62:  # too many combinations to key in one integer
            return build(entries, n)
        key += codes * radix
        radix = radix_next
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if len(first) > n // 2:
        return build(entries, n)
    subset = [(name, values.take(pa.array(first))) for name, values in entries]
    return build(subset, len(first)).take(pa.array(inverse.astype(np.int64)))


def _map_array(entries: Sequence[tuple[str, pa.Array]], n: int) -> pa.Array:
    """MAP<string,string> per row from (key, values) pairs; null values leave the key out."""
    return _once_per_combination(entries, _build_map)


def _build_map(entries: Sequence[tuple[str, pa.Array]], n: int) -> pa.MapArray:
    valid = np.stack([v.is_valid().to_numpy(zero_copy_only=False) for _, v in entries], axis=1)
    counts = valid.sum(axis=1)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    k = len(entries)
    flat = (np.arange(k)[None, :] * n + np.arange(n)[:, None])[valid]  # row-major order
    all_values = pa.concat_arrays([pc.cast(v, pa.string()) for _, v in entries])
    keys = _pick([key for key, _ in entries], flat // n)
    items = all_values.take(pa.array(flat))
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items)


def _json_object(entries: Sequence[tuple[str, pa.Array]], n: int) -> pa.Array:
    """A JSON object string per row (null when empty). Values must need no escaping."""
    return _once_per_combination(entries, _build_json)


def _build_json(entries: Sequence[tuple[str, pa.Array]], n: int) -> pa.Array:
    # Each present entry renders as ',"key":"value"', an absent one as ''; the leading comma
    # is dropped at the end. (binary_join_element_wise's null_handling="skip" returned a
    # wrong-length array on pyarrow 26 for some inputs, so it is not used.)
    parts = [
        pc.fill_null(pc.binary_join_element_wise(f',"{key}":"', values, '"', ""), "")
        for key, values in entries
    ]
    body = pc.binary_join_element_wise(*parts, "")
    obj = pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(body, 1), "}", "")
    return pc.if_else(pc.equal(body, ""), pa.nulls(n, pa.string()), obj)


def _check_tag_values(lines: pa.Table) -> None:
    """Tags are written into JSON without escaping: refuse values that would need it."""
    for key in TAG_KEYS:
        values = pc.unique(lines.column(f"tag_{key}")).drop_null()
        if pc.any(pc.match_substring_regex(values, r'["\\\x00-\x1f]')).as_py():
            raise ValueError(f"tag_{key} has characters that would need JSON escaping")


def _per_value(values: pa.Array, transform: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """Apply a string transform once per distinct value (billing columns repeat a lot)."""
    encoded = pc.dictionary_encode(values)
    return pa.DictionaryArray.from_arrays(encoded.indices, transform(encoded.dictionary)).cast(pa.string())


def as_lines(lines: pa.Table | object) -> pa.Table:
    """The canonical frame as a pyarrow table in LINE_SCHEMA order (accepts a pandas frame)."""
    if not isinstance(lines, pa.Table):
        lines = pa.Table.from_pandas(lines, preserve_index=False)  # type: ignore[arg-type]
    return lines.select(LINE_SCHEMA.names).cast(LINE_SCHEMA)


# ----------------------------------------------------------------------------- FOCUS 1.2


def focus_table(lines: pa.Table, *, typed: bool = False) -> tuple[pa.Table, FileTotals]:
    """Render canonical lines as FOCUS 1.2 columns.

    typed=False gives strings for CSV (fixed decimals, ISO timestamps); typed=True gives
    decimal128 money/quantities and UTC timestamps for Parquet.
    """
    rendered = _render_focus(lines, typed=typed)
    return rendered.table, rendered.totals()


def _render_focus(lines: pa.Table, *, typed: bool) -> _Rendered:
    lines = as_lines(lines)
    _check_tag_values(lines)
    n = lines.num_rows
    col = _columns(lines)
    line_type = col("line_type")
    is_usage = _is(line_type, "Usage", "DiscountedUsage", "SavingsPlanCoveredUsage")
    is_covered = _is(line_type, "DiscountedUsage", "SavingsPlanCoveredUsage")
    is_fee = _is(line_type, "RIFee", "SavingsPlanRecurringFee")
    is_unused = _is(line_type, "UnusedCommitment")
    is_tax_credit = _is(line_type, "Tax", "Credit")

    billed, _ = _np_int(col("billed_micro"))
    effective, _ = _np_int(col("effective_micro"))
    listed, _ = _np_int(col("list_micro"))
    list_rate, list_rate_ok = _np_int(col("list_rate_micro"))
    rate, rate_ok = _np_int(col("rate_micro"))
    qty, qty_ok = _np_int(col("quantity_e10"))
    cqty, cqty_ok = _np_int(col("commitment_quantity_e10"))

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
    pricing_unit = _where(is_unused, col("commitment_unit"), _where(is_usage | is_fee, focus_unit, null))
    tags = _json_object([(key, col(f"tag_{key}")) for key in TAG_KEYS], n)
    sku_price = pc.binary_join_element_wise(col("sku_id"), _OD_TERM_CODE, ".")
    sku_price = _where(_is(col("pricing_category"), "Standard"), sku_price, col("sku_id"))
    meter = pc.if_else(
        pc.equal(col("service_category"), "Compute"),
        "Compute Usage",
        pc.if_else(pc.equal(col("service_category"), "Storage"), "Storage", "Data Transfer"),
    )
    meter = _where(is_usage, meter, pa.nulls(n, pa.string()))
    consumed_qty_ok = is_usage & qty_ok
    pricing_qty_ok = (is_usage | is_fee | is_unused) & qty_ok

    def money(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        return _decimal(values, valid, 6) if typed else _decimal_text(values, valid, 6)

    def quantity(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        return _decimal(values, valid, 10) if typed else _decimal_text(values, valid, 10)

    def ts(name: str) -> pa.Array:
        return col(name).cast(pa.timestamp("ms", tz="UTC")) if typed else _iso(col(name))

    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "AvailabilityZone": col("availability_zone"),
        "BilledCost": money(billed),
        "BillingAccountId": col("payer_account_id"),
        "BillingAccountName": col("payer_account_name"),
        "BillingAccountType": pa.nulls(n, pa.string()),
        "BillingCurrency": _const("USD", n),
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
        "CommitmentDiscountUnit": _where(cqty_ok, col("commitment_unit"), pa.nulls(n, pa.string())),
        "ConsumedQuantity": quantity(qty, consumed_qty_ok),
        "ConsumedUnit": _where(is_usage, focus_unit, pa.nulls(n, pa.string())),
        "ContractedCost": money(contracted),
        "ContractedUnitPrice": money(contracted_rate, contracted_rate_ok),
        "EffectiveCost": money(effective),
        "InvoiceId": col("invoice_id"),
        "InvoiceIssuerName": _const(_INVOICE_ISSUER, n),
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
        "ProviderName": _const("AWS", n),
        "PublisherName": _const(_INVOICE_ISSUER, n),
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
    return _Rendered(pa.table({name: out[name] for name in FOCUS_COLUMNS}), billed, effective, listed)


# ----------------------------------------------------------------------------- CUR 2.0


def amortized_cost_micro(line_type: Sequence[str] | np.ndarray, cols: dict[str, np.ndarray]) -> np.ndarray:
    """AWS's amortized cost per CUR row (the formula of the CUR query library), in the units of cols."""
    lt = np.asarray(line_type, dtype=object)
    masks = {name: lt == name for name in _AMORTIZED_TYPES}
    return _amortized(masks, cols)


_AMORTIZED_TYPES = (
    "SavingsPlanCoveredUsage",
    "SavingsPlanRecurringFee",
    "SavingsPlanNegation",
    "DiscountedUsage",
    "RIFee",
)


def _amortized(masks: dict[str, np.ndarray], cols: dict[str, np.ndarray]) -> np.ndarray:
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


def cur2_table(lines: pa.Table, *, csv_text: bool = False) -> tuple[pa.Table, FileTotals]:
    """Render canonical lines as CUR 2.0 rows (adds SavingsPlanNegation rows, drops UnusedCommitment).

    csv_text=True gives fixed-decimal strings and JSON maps for CSV; otherwise doubles and
    MAP columns as AWS writes Parquet.
    """
    rendered = _render_cur2(lines, csv_text=csv_text)
    return rendered.table, rendered.totals()


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


def _render_cur2(lines: pa.Table, *, csv_text: bool) -> _Rendered:
    lines = as_lines(lines)
    _check_tag_values(lines)
    lines = lines.filter(pa.array(~_is(lines.column("line_type").combine_chunks(), "UnusedCommitment")))
    code = np.full(lines.num_rows, -1, dtype=np.int8)
    types = lines.column("line_type").combine_chunks()
    for i, name in enumerate(_CUR_LINE_TYPES):
        code[_is(types, name)] = i
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
    return _Rendered(
        pa.concat_tables([part.table for part in parts]),
        np.concatenate([part.billed for part in parts]),
        np.concatenate([part.effective for part in parts]),
        np.concatenate([part.listed for part in parts]),
    )


def _render_cur2_rows(rows: pa.Table, code: np.ndarray, first_row: int, *, csv_text: bool) -> _Rendered:
    n = rows.num_rows
    col = _columns(rows)

    billed, _ = _np_int(col("billed_micro"))
    effective, _ = _np_int(col("effective_micro"))
    listed, _ = _np_int(col("list_micro"))
    list_rate, list_rate_ok = _np_int(col("list_rate_micro"))
    rate, rate_ok = _np_int(col("rate_micro"))
    qty, _ = _np_int(col("quantity_e10"))
    c_rate, _ = _np_int(col("commitment_rate_micro"))
    c_total, _ = _np_int(col("commitment_total_micro"))
    c_used, _ = _np_int(col("commitment_used_micro"))
    c_count, c_count_ok = _np_int(col("commitment_count"))
    unused_q, _ = _np_int(col("unused_quantity_e10"))
    unused_m, _ = _np_int(col("unused_micro"))
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
    is_spot = _is(col("pricing_category"), "Dynamic")

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
        return _decimal_text(values, valid, 6) if csv_text else _double(values, valid, 6)

    def quantity(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        return _decimal_text(values, valid, 10) if csv_text else _double(values, valid, 10)

    def ts(name: str) -> pa.Array:
        return _iso(col(name)) if csv_text else col(name).cast(pa.timestamp("ms", tz="UTC"))

    null = pa.nulls(n, pa.string())
    # CUR leaves product_instance_type empty on spot lines: the type is only in the usage type.
    instance_type = _where(is_spot, null, col("instance_type"))
    family = _per_value(instance_type, lambda types: pc.list_element(pc.split_pattern(types, "."), 0))
    is_compute_row = _is(col("resource_type"), "Instance") | is_rifee
    product_entries = [
        ("product_name", col("service_name")),
        ("product_family", col("product_family")),
        ("region", col("region_id")),
        ("instance_type", instance_type),
        ("operating_system", _where(is_compute_row, _const("Linux", n), null)),
        ("servicecode", col("product_code")),
    ]
    tag_entries = [(f"user_{key}", col(f"tag_{key}")) for key in TAG_KEYS]
    if csv_text:
        product = _json_object(product_entries, n)
        tags = _json_object(tag_entries, n)
    else:
        product = _map_array(product_entries, n)
        tags = _map_array(tag_entries, n)

    # A stable id per row: hash of payer, charge start and position in the file part.
    key = _seed64(*rows.column("payer_account_id").unique().to_pylist()) if n else 0
    start_s = col("charge_start").cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.uint64)
    position = np.arange(first_row, first_row + n, dtype=np.uint64)
    row_ids = _hex16(_mix64(_mix64(start_s ^ np.uint64(key)) + position))
    interval = pc.binary_join_element_wise(_iso(col("charge_start")), _iso(col("charge_end")), "/")
    usage_type = col("usage_type")
    commit_start = _iso(col("commitment_start"))
    commit_end = _iso(col("commitment_end"))
    term_code = np.select([is_spot, is_ri, is_spfee | is_tax_credit], [1, 2, 3], default=0)
    pricing_term = _pick(["OnDemand", "Spot", "Reserved", None], term_code)
    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "identity_line_item_id": row_ids,
        "identity_time_interval": interval,
        "bill_invoice_id": col("invoice_id"),
        "bill_invoicing_entity": _const(_INVOICE_ISSUER, n),
        "bill_billing_entity": _const("AWS", n),
        "bill_bill_type": _const("Anniversary", n),
        "bill_payer_account_id": col("payer_account_id"),
        "bill_payer_account_name": col("payer_account_name"),
        "bill_billing_period_start_date": ts("billing_period_start"),
        "bill_billing_period_end_date": ts("billing_period_end"),
        "line_item_usage_account_id": col("usage_account_id"),
        "line_item_usage_account_name": col("usage_account_name"),
        "line_item_line_item_type": _pick(_CUR_LINE_TYPES, code),
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
        "line_item_currency_code": _const("USD", n),
        "line_item_unblended_rate": money(unblended_rate, unblended_rate_ok),
        "line_item_unblended_cost": money(unblended),
        "line_item_blended_rate": money(unblended_rate, unblended_rate_ok),
        "line_item_blended_cost": money(unblended),
        "line_item_line_item_description": col("description"),
        "line_item_tax_type": _where(is_type["Tax"], _const("USSalesTax", n), null),
        "line_item_legal_entity": _const(_INVOICE_ISSUER, n),
        "pricing_public_on_demand_cost": money(od_cost),
        "pricing_public_on_demand_rate": money(list_rate, od_rate_ok),
        "pricing_term": pricing_term,
        "pricing_unit": _where(is_tax_credit, null, col("unit")),
        "pricing_purchase_option": _where(is_ri, _const("No Upfront", n), null),
        "pricing_lease_contract_length": _where(is_ri, _const("1yr", n), null),
        "pricing_offering_class": _where(is_ri, _const("standard", n), null),
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
        "reservation_reservation_a_r_n": _where(is_ri, col("commitment_id"), null),
        "reservation_start_time": _where(is_ri, commit_start, null),
        "reservation_end_time": _where(is_ri, commit_end, null),
        "reservation_unused_quantity": quantity(np.where(is_rifee, unused_q, 0)),
        "reservation_number_of_reservations": (
            pc.cast(pa.array(np.where(is_rifee, c_count, 0)), pa.string())
            if csv_text
            else pa.array(np.where(is_rifee, c_count, 0).astype(np.float64))
        ),
        "reservation_total_reserved_units": quantity(ri_units),
        "reservation_units_per_reservation": quantity(ri_units_per),
        "savings_plan_savings_plan_a_r_n": _where(is_sp, col("commitment_id"), null),
        "savings_plan_start_time": _where(is_sp, commit_start, null),
        "savings_plan_end_time": _where(is_sp, commit_end, null),
        "savings_plan_offering_type": _where(is_sp, _const("ComputeSavingsPlans", n), null),
        "savings_plan_payment_option": _where(is_sp, _const("No Upfront", n), null),
        "savings_plan_purchase_term": _where(is_sp, _const("1yr", n), null),
        "savings_plan_region": null,  # Compute Savings Plans apply in every region
    }
    for name, values in ints.items():
        out[name] = money(values)
    return _Rendered(pa.table({name: out[name] for name in CUR2_COLUMNS}), unblended, amortized, od_cost)


# ----------------------------------------------------------------------------- file sinks


class _Sink:
    """Writes tables chunk by chunk to csv, csv.gz or parquet with fixed, reproducible settings.

    For csv.gz, compression of one chunk runs in a worker thread while the caller renders
    the next (zlib releases the GIL); at most one chunk waits, so memory stays bounded.
    """

    def __init__(self, path: Path, fmt: str) -> None:
        if fmt not in ("csv", "csv.gz", "parquet"):
            raise ValueError(f"unknown format {fmt!r}: use csv, csv.gz or parquet")
        self.path, self.fmt = path, fmt
        path.parent.mkdir(parents=True, exist_ok=True)
        self._pq: pq.ParquetWriter | None = None
        self._raw: BinaryIO | None = None
        self._gz: gzip.GzipFile | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[int] | None = None
        self._header = True

    def write(self, table: pa.Table) -> None:
        if self.fmt == "parquet":
            if self._pq is None:
                self._pq = pq.ParquetWriter(
                    self.path,
                    table.schema,
                    compression="snappy",
                    version="2.6",
                    use_dictionary=True,
                    write_statistics=True,
                )
            self._pq.write_table(table, row_group_size=1 << 20)
            return
        buffer = io.BytesIO()
        options = pacsv.WriteOptions(include_header=self._header, quoting_style="needed")
        pacsv.write_csv(table, buffer, options)
        self._header = False
        if self._raw is None:
            self._raw = self.path.open("wb")
            if self.fmt == "csv.gz":
                # mtime=0 and no file name in the gzip header: same input, same bytes.
                self._gz = gzip.GzipFile(filename="", fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)
                self._pool = ThreadPoolExecutor(max_workers=1)
        if self._gz is None:
            self._raw.write(buffer.getbuffer())
            return
        if self._pending is not None:
            self._pending.result()
        self._pending = self._pool.submit(self._gz.write, buffer.getvalue())  # type: ignore[union-attr]

    def close(self) -> None:
        try:
            if self._pending is not None:
                self._pending.result()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
            if self._pq is not None:
                self._pq.close()
            if self._gz is not None:
                self._gz.close()
            if self._raw is not None:
                self._raw.close()


def _write(parts: Iterator[_Rendered], path: Path, fmt: str) -> FileTotals:
    sink = _Sink(path, fmt)
    rows = billed = effective = listed = 0
    try:
        for part in parts:
            sink.write(part.table)
            totals = part.totals()
            rows += totals.rows
            billed += totals.billed_micro
            effective += totals.effective_micro
            listed += totals.list_micro
    finally:
        sink.close()
    return FileTotals(str(path), fmt, rows, billed, effective, listed)


def write_focus(lines: pa.Table | object, path: Path | str, fmt: str = "csv.gz") -> FileTotals:
    """Write canonical lines as one FOCUS 1.2 file (csv.gz, csv or parquet)."""
    table = as_lines(lines)
    return _write(iter([_render_focus(table, typed=fmt == "parquet")]), Path(path), fmt)


def write_cur2(lines: pa.Table | object, path: Path | str, fmt: str = "parquet") -> FileTotals:
    """Write canonical lines as one AWS CUR 2.0 file (parquet or csv)."""
    if fmt not in ("parquet", "csv", "csv.gz"):
        raise ValueError(f"unknown format {fmt!r}")
    table = as_lines(lines)
    return _write(iter([_render_cur2(table, csv_text=fmt != "parquet")]), Path(path), fmt)


# ----------------------------------------------------------------------------- big synthetic files

# (instance type, share of the instance pool); figures from the reference catalogue.
_BENCH_MIX = (
    ("p4d.24xlarge", 3),
    ("p4de.24xlarge", 1),
    ("p5.48xlarge", 2),
    ("g5.12xlarge", 3),
    ("g6.48xlarge", 2),
)
# (instance type, normalization factor, on-demand micro-$/h, typical spot micro-$/h, weight)
_BENCH_FLEET = tuple(
    (
        t,
        instance(t).normalization_factor,
        int(instance(t).on_demand_usd_per_h * MICRO),
        int(instance(t).spot_usd_per_h * MICRO),
        weight,
    )
    for t, weight in _BENCH_MIX
)
_BENCH_TEAMS = ("vision", "llm", "speech", "recsys")
_BENCH_PROJECTS = ("foundation", "pretrain", "asr", "ranking")
_BENCH_MODELS = ("vit-h", "llama70b", "whisper-l", "dlrm")


def synthetic_lines(seed: int, first_row: int, n: int, n_total: int, period_start: np.datetime64) -> pa.Table:
    """n canonical EC2 usage lines (rows first_row.. of n_total) of one synthetic month.

    Rows are time-ordered across chunks; a mix of on-demand, spot, RI-discounted and
    Savings-Plan-covered hours on a pool of 20,000 instances. For benchmarks only: no
    fees and no commitment accounting.
    """
    rng = np.random.default_rng([seed, first_row])
    month_start = int(period_start.astype("datetime64[s]").astype(np.int64))
    month_end = int((period_start.astype("datetime64[M]") + 1).astype("datetime64[s]").astype(np.int64))
    hours_in_month = (month_end - month_start) // 3600
    row = np.arange(first_row, first_row + n, dtype=np.int64)
    start = month_start + (row * hours_in_month // max(n_total, 1)) * 3600
    pool = 20_000
    inst = rng.integers(0, pool, n)
    weights = np.array([f[4] for f in _BENCH_FLEET], dtype=float)
    inst_u = (_mix64(np.arange(pool, dtype=np.uint64) + np.uint64(seed)) % np.uint64(1000)) / 1000.0
    t = np.searchsorted(np.cumsum(weights) / weights.sum(), inst_u, side="right")[inst]
    od = np.array([f[2] for f in _BENCH_FLEET], dtype=np.int64)[t]
    spot = np.array([f[3] for f in _BENCH_FLEET], dtype=np.int64)[t]
    nf = np.array([f[1] for f in _BENCH_FLEET])[t]
    kind = rng.choice(4, size=n, p=[0.45, 0.25, 0.10, 0.20])  # on-demand, spot, RI, SP
    seconds = np.where(rng.random(n) < 0.9, 3600, rng.integers(60, 3600, n))
    is_spot, is_ri, is_sp = kind == 1, kind == 2, kind == 3
    committed = is_ri | is_sp
    rate = np.where(is_spot, spot, od)
    od_cost = (seconds * od + 1800) // 3600
    cost = (seconds * rate + 1800) // 3600
    ri_rate = od * 6 // 10
    sp_rate = od * 64 // 100
    ri_cost = (seconds * ri_rate + 1800) // 3600
    sp_cost = (seconds * sp_rate + 1800) // 3600
    effective = np.select([is_ri, is_sp], [ri_cost, sp_cost], cost)
    team = inst % 4
    commit_code = np.select([is_ri, is_sp], [0, 1], 2)  # RI, SP, none

    type_names = _pick([f[0] for f in _BENCH_FLEET], t)
    usage_type = pc.binary_join_element_wise(
        _pick(["USE1-BoxUsage:", "USE1-SpotUsage:"], is_spot.astype(np.int32)), type_names, ""
    )
    job_id = pc.binary_join_element_wise(
        _pick(_BENCH_TEAMS, team),
        _pick(_BENCH_MODELS, team),
        pc.cast(pa.array(inst % 5000), pa.string()),
        "-",
    )
    job_id = _where(rng.random(n) < 0.1, pa.nulls(n, pa.string()), job_id)  # untagged instances

    def ts(values: np.ndarray | int) -> pa.Array:
        return pa.array(np.broadcast_to(np.asarray(values, dtype=np.int64), (n,))).cast(_TS)

    def opt(mask: np.ndarray, values: np.ndarray) -> pa.Array:
        return pa.array(values.astype(np.int64), mask=~mask)

    no_int = pa.nulls(n, pa.int64())
    data = {
        "payer_account_id": _const("222222222222", n),
        "payer_account_name": _const("bench-payer", n),
        "usage_account_id": _pick(("200000000001", "200000000002", "200000000003", "200000000004"), team),
        "usage_account_name": _pick(_BENCH_TEAMS, team),
        "billing_period_start": ts(month_start),
        "billing_period_end": ts(month_end),
        "charge_start": ts(start),
        "charge_end": ts(start + 3600),
        "line_type": _pick(["DiscountedUsage", "SavingsPlanCoveredUsage", "Usage"], commit_code),
        "charge_category": _const("Usage", n),
        "charge_frequency": _const("Usage-Based", n),
        "pricing_category": _pick(
            ["Standard", "Dynamic", "Committed"], np.select([is_spot, committed], [1, 2], 0)
        ),
        "product_code": _const("AmazonEC2", n),
        "service_name": _const("Amazon Elastic Compute Cloud", n),
        "service_category": _const("Compute", n),
        "service_subcategory": _const("Virtual Machines", n),
        "product_family": _const("Compute Instance", n),
        "region_id": _const("us-east-1", n),
        "region_name": _const("US East (N. Virginia)", n),
        "availability_zone": _pick(("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"), (inst // 4) % 4),
        "resource_id": pc.binary_join_element_wise(
            "i-0",
            pc.utf8_slice_codeunits(_hex16(_mix64(inst.astype(np.uint64) ^ np.uint64(seed))), 0, 16),
            "",
        ),
        "resource_type": _const("Instance", n),
        "instance_type": type_names,
        "normalization_factor": pa.array(nf),
        "usage_type": usage_type,
        "operation": _pick(["RunInstances", "RunInstances:SV001"], is_spot.astype(np.int32)),
        "description": pc.binary_join_element_wise("Linux/UNIX usage, ", type_names, ""),
        "sku_id": _pick([f"BENCHSKU{i:08d}" for i in range(len(_BENCH_FLEET))], t),
        "unit": _const("Hrs", n),
        "quantity_e10": pa.array(seconds * QTY // 3600),
        "list_rate_micro": pa.array(od),
        "rate_micro": pa.array(np.select([is_ri, is_sp], [ri_rate, sp_rate], rate)),
        "billed_micro": pa.array(np.where(committed, 0, cost)),
        "effective_micro": pa.array(effective),
        "list_micro": pa.array(od_cost),
        "commitment_id": _pick(
            [
                "arn:aws:ec2:us-east-1:222222222222:reserved-instances/bench-ri",
                "arn:aws:savingsplans::222222222222:savingsplan/bench-sp",
                None,
            ],
            commit_code,
        ),
        "commitment_name": _pick(["bench RI", "bench Savings Plan", None], commit_code),
        "commitment_type": _pick(["Reserved Instance", "Savings Plan", None], commit_code),
        "commitment_category": _pick(["Usage", "Spend", None], commit_code),
        "commitment_status": _pick(["Used", "Used", None], commit_code),
        "commitment_unit": _pick(["Hours", "USD", None], commit_code),
        "commitment_quantity_e10": opt(
            committed, np.where(is_ri, seconds * QTY // 3600, sp_cost * (QTY // MICRO))
        ),
        "commitment_rate_micro": opt(committed, np.where(is_ri, ri_rate, sp_rate)),
        "commitment_total_micro": no_int,
        "commitment_used_micro": no_int,
        "commitment_count": no_int,
        "unused_quantity_e10": no_int,
        "unused_micro": no_int,
        "commitment_start": _where(committed, ts(month_start - 200 * 86400), pa.nulls(n, _TS)),
        "commitment_end": _where(committed, ts(month_start + 165 * 86400), pa.nulls(n, _TS)),
        "invoice_id": pa.nulls(n, pa.string()),
        "tag_team": _pick(_BENCH_TEAMS, team),
        "tag_project": _pick(_BENCH_PROJECTS, team),
        "tag_model": _pick(_BENCH_MODELS, team),
        "tag_job_id": job_id,
    }
    return pa.table(data, schema=LINE_SCHEMA)


def _synthetic_chunks(
    n_rows: int, seed: int, chunk_rows: int, period: str, render: Callable[[pa.Table], _Rendered]
) -> Iterator[_Rendered]:
    period_start = np.datetime64(period + "-01")
    written = first = 0
    while written < n_rows:
        n = min(chunk_rows, n_rows - written)
        part = render(synthetic_lines(seed, first, n, n_rows, period_start))
        # CUR adds a negation row per Savings-Plan-covered line: trim the overshoot.
        part = part.head(min(part.table.num_rows, n_rows - written))
        written += part.table.num_rows
        first += n
        yield part


def generate_cur2_rows(
    n_rows: int,
    path: Path | str,
    seed: int = 7,
    *,
    fmt: str = "parquet",
    chunk_rows: int = 200_000,
    period: str = "2026-10",
) -> FileTotals:
    """Stream a synthetic CUR 2.0 file of exactly n_rows rows in bounded memory (benchmarks).

    Same (n_rows, seed, chunk_rows) -> same bytes; memory grows with chunk_rows, not n_rows.
    """
    chunks = _synthetic_chunks(
        n_rows, seed, chunk_rows, period, lambda t: _render_cur2(t, csv_text=fmt != "parquet")
    )
    return _write(chunks, Path(path), fmt)


def generate_focus_rows(
    n_rows: int,
    path: Path | str,
    seed: int = 7,
    *,
    fmt: str = "csv.gz",
    chunk_rows: int = 200_000,
    period: str = "2026-10",
) -> FileTotals:
    """Stream a synthetic FOCUS 1.2 file of exactly n_rows rows in bounded memory (benchmarks).

    Same (n_rows, seed, chunk_rows) -> same bytes; memory grows with chunk_rows, not n_rows.
    """
    chunks = _synthetic_chunks(
        n_rows, seed, chunk_rows, period, lambda t: _render_focus(t, typed=fmt == "parquet")
    )
    return _write(chunks, Path(path), fmt)
