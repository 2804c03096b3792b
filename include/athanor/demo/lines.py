"""The canonical line-item frame the demo's bill writers read, and the totals they return.

Grain: one row per charge per charge period (`LINE_SCHEMA`). Money is carried as integer
micro-dollars and quantities as integers of 1e-10 units, so every file total is exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MICRO = 1_000_000  # money unit: micro-dollars
QTY = 10_000_000_000  # quantity unit: 1e-10 of the pricing unit

TS = pa.timestamp("s", tz="UTC")

# The canonical line-item frame both writers read. Grain: one row per charge per
# charge period. *_micro columns are integer micro-dollars, *_e10 integer 1e-10 units.
LINE_SCHEMA = pa.schema(
    [
        ("payer_account_id", pa.string()),
        ("payer_account_name", pa.string()),
        ("usage_account_id", pa.string()),
        ("usage_account_name", pa.string()),
        ("billing_period_start", TS),
        ("billing_period_end", TS),
        ("charge_start", TS),
        ("charge_end", TS),
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
        ("commitment_start", TS),
        ("commitment_end", TS),
        ("invoice_id", pa.string()),  # null while the month is open
        ("tag_team", pa.string()),
        ("tag_project", pa.string()),
        ("tag_model", pa.string()),
        ("tag_job_id", pa.string()),
    ]
)

TAG_KEYS = ("team", "project", "model", "job_id")

# Who issues AWS invoices and publishes its prices (FOCUS InvoiceIssuerName, CUR legal entity).
INVOICE_ISSUER = "Amazon Web Services, Inc."
# The product columns of an EC2 instance-hour line, the same on every writer's usage rows.
EC2_INSTANCE_PRODUCT = {
    "product_code": "AmazonEC2",
    "service_name": "Amazon Elastic Compute Cloud",
    "service_category": "Compute",
    "service_subcategory": "Virtual Machines",
    "product_family": "Compute Instance",
}


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
class Rendered:
    """A rendered table with its per-row billed, effective and list amounts (micro-dollars)."""

    table: pa.Table
    billed: np.ndarray
    effective: np.ndarray
    listed: np.ndarray

    def head(self, k: int) -> Rendered:
        return Rendered(self.table.slice(0, k), self.billed[:k], self.effective[:k], self.listed[:k])

    def totals(self) -> FileTotals:
        return FileTotals(
            "",
            "",
            self.table.num_rows,
            int(self.billed.sum()),
            int(self.effective.sum()),
            int(self.listed.sum()),
        )


def as_lines(lines: pa.Table | object) -> pa.Table:
    """The canonical frame as a pyarrow table in LINE_SCHEMA order (accepts a pandas frame)."""
    if not isinstance(lines, pa.Table):
        lines = pa.Table.from_pandas(lines, preserve_index=False)  # type: ignore[arg-type]
    return lines.select(LINE_SCHEMA.names).cast(LINE_SCHEMA)


def check_tag_values(lines: pa.Table) -> None:
    """Tags are written into JSON without escaping: refuse values that would need it."""
    for key in TAG_KEYS:
        values = pc.unique(lines.column(f"tag_{key}")).drop_null()
        if pc.any(pc.match_substring_regex(values, r'["\\\x00-\x1f]')).as_py():
            raise ValueError(f"tag_{key} has characters that would need JSON escaping")


# invoice(period starts, payer or payers) -> invoice id per row, None while the month is open
Invoice = Callable[[np.ndarray, "np.ndarray | str"], list["str | None"]]


class Rows:
    """Collects canonical line-item columns group by group (missing columns become nulls)."""

    def __init__(self) -> None:
        self.groups: list[pa.Table] = []

    def add(self, n: int, **columns: object) -> None:
        if n == 0:
            return
        arrays = []
        for name, typ in zip(LINE_SCHEMA.names, LINE_SCHEMA.types, strict=True):
            value = columns.pop(name, None)
            if value is None:
                arrays.append(pa.nulls(n, typ))
            elif isinstance(value, (str, int, float)):
                arrays.append(
                    pa.array([value] * n, typ)
                    if not pa.types.is_timestamp(typ)
                    else pa.array([value] * n, pa.int64()).cast(typ)
                )
            elif pa.types.is_timestamp(typ):
                arrays.append(pa.array(np.asarray(value, dtype=np.int64)).cast(typ))
            else:
                arrays.append(pa.array(value, typ, from_pandas=True))
        if columns:
            raise KeyError(f"not canonical line-item columns: {sorted(columns)}")
        self.groups.append(pa.Table.from_arrays(arrays, schema=LINE_SCHEMA))

    def table(self) -> pa.Table:
        return pa.concat_tables(self.groups)
