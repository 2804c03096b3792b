"""Google Cloud billing export to BigQuery, as exported files (JSONL, Parquet or CSV).

JSONL and Parquet keep the nested records (`service`, `sku`, `location`, `labels`,
`credits`, ...); a CSV written from a query flattens them into dotted columns
(`service.description`), which are folded back into one JSON object per record; one saved
by a Python tool writes the nested values as Python literals (`[{'amount': -1.0}]`), which
are read as the JSON they stand for (`ingest.literals`).
Staging reads every record as JSON text, whatever the container.
"""

from __future__ import annotations

from athanor.ingest.sources import BillingFormat

RECORDS = (
    "service",
    "sku",
    "project",
    "location",
    "resource",
    "usage",
    "invoice",
    "price",
    "adjustment_info",
)

KNOWN = (
    "billing_account_id",
    "usage_start_time",
    "usage_end_time",
    "export_time",
    "cost",
    "currency",
    "currency_conversion_rate",
    "cost_type",
    "cost_at_list",
    "transaction_type",
    "seller_name",
    "labels",
    "system_labels",
    "credits",
    *RECORDS,
)

REQUIRED = ("billing_account_id", "usage_start_time", "usage_end_time", "cost", "currency", "invoice")

# What a row bills: its cost plus its credits (negative amounts).
CREDITS_TOTAL = (
    "coalesce(list_sum(list_transform(cast(json_extract(credits, '$[*].amount') as varchar[]),"
    " lambda a: cast(a as decimal(38, 12)))), 0)"
)

FORMAT = BillingFormat(
    name="gcp",
    description="Google Cloud billing export",
    signature=frozenset({"billing_account_id", "usage_start_time", "cost", "currency"}),
    required=REQUIRED,
    known=KNOWN,
    money=("cost", "cost_at_list"),
    timestamps=("usage_start_time", "usage_end_time"),
    not_null=REQUIRED,
    currency_column="currency",
    # cost may arrive as a DOUBLE (JSON, Parquet): its shortest text form is the number BigQuery wrote.
    file_total=f"cast(cost::varchar as decimal(38, 12)) + {CREDITS_TOTAL}",
    loaded_rows="count(distinct source_row)",
    periods=(("usage_start_time", "usage_end_time"),),
    nested=tuple((record, record + ".") for record in RECORDS),
    # A CSV saved by a Python tool writes these with repr: `[{'name': 'x', 'amount': -1.0}]`.
    json_text=("credits", "labels", "system_labels", *RECORDS),
)
