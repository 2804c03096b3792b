"""Machine-readable copies of the report: recommendations JSON, CSV tables, S3 lifecycle JSON, bucket upload."""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from athanor.publish.data import ReportData

SCHEMA_VERSION = "2.0"  # of recommendations.json and lifecycle.json; see docs/recommendations-schema.md

# Every float published in the JSON and CSV files is rounded here (`published`), by what it
# measures, so that the same input gives the same bytes: the recommenders' sums are not
# associative, and two runs differed in the 16th digit.
MONEY_DECIMALS = 2  # to the cent
RATE_DECIMALS = 6  # money per hour ($/h commitments, hourly rates): the warehouse keeps 6
PERCENT_DECIMALS = 2  # figures already in percent (12.34 %)
SHARE_DECIMALS = 4  # fractions 0-1 (utilisation, coverage, shares): to 0.01 %
SIGNIFICANT_DIGITS = 10  # anything else (prices per GB, fitted parameters, hours, bytes)

# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

RECOMMENDATION_FIELDS = (
    "kind",
    "scope",
    "action",
    "recommended_quantity",
    "hourly_commitment",
    "term_months",
    "upfront_cost",
    "recurring_monthly_cost",
    "estimated_monthly_cost",
    "current_monthly_cost",
    "estimated_monthly_savings_amount",
    "estimated_savings_percentage",
    "average_utilization",
    "coverage",
    "break_even_months",
    "risk",
    "assumptions",
    "detail",
    "run_id",
    "as_of",
)

# recommendations.csv is for reading and spreadsheets: flat columns, no cell longer than
# MAX_CSV_CELL characters (Excel stops at 32,767); the full detail and assumptions are in
# recommendations.json only.
MAX_CSV_CELL = 400
RECOMMENDATION_CSV_FIELDS = (
    "kind",
    "label",
    "part_of",
    "scope",
    "action",
    "recommended_quantity",
    "hourly_commitment",
    "term_months",
    "upfront_cost",
    "recurring_monthly_cost",
    "current_monthly_cost",
    "estimated_monthly_cost",
    "estimated_monthly_savings_amount",
    "estimated_savings_percentage",
    "billed_monthly_cost",
    "saving_basis",
    "touches",
    "average_utilization",
    "coverage",
    "break_even_months",
    "risk",
    "run_id",
    "as_of",
)
HOW_COUNTED = (
    "The plan's total: the sum of its counted steps (plan.steps with counted true), each sized after "
    "the steps it names in assumes. Its GPU steps are one chain of costs from today's GPU bill to "
    "the plan's, so they add up to their difference exactly; steps listed apart (moves to "
    "benchmark first, fewer GPUs, checkpointing) are not added."
)

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".csv": "text/csv; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}


def decimals_for(name: str | None) -> int | None:
    """Decimals a figure named `name` is published with; None: `SIGNIFICANT_DIGITS` digits."""
    key = (name or "").lower()
    if "hourly" in key or key.endswith("_rate"):
        return RATE_DECIMALS
    if key.endswith(("_pct", "percentage")):
        return PERCENT_DECIMALS
    if key.endswith(("_usd", "_cost", "_amount", "_bill")) or key in ("cost", "amount"):
        return MONEY_DECIMALS
    if key in ("utilisation", "utilization", "coverage") or key.startswith("share_"):
        return SHARE_DECIMALS
    if key.endswith(("_utilisation", "_utilization", "_share", "_fraction", "_ratio")):
        return SHARE_DECIMALS
    return None


def published(value: float, name: str | None = None) -> float | None:
    """A float as it is published: rounded by what `name` measures; NaN and inf as None."""
    if not math.isfinite(value):
        return None
    decimals = decimals_for(name)
    rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}") if decimals is None else round(value, decimals)
    return rounded + 0.0  # -0.0 (a tiny negative rounded away) prints as 0.0


def as_published(value: Any, name: str | None = None) -> Any:
    """JSON-safe: dates as ISO text, Decimals and floats rounded by `published`, NaN/inf as null.

    `name` is the key the value is found under; list items inherit their list's.
    """
    if isinstance(value, float):
        return published(value, name)
    if isinstance(value, Decimal):
        return published(float(value), name)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): as_published(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_published(v, name) for v in value]
    return value


def recommendations_document(data: ReportData) -> dict[str, Any]:
    """The content of recommendations.json (no wall-clock time: a re-run gives the same bytes)."""
    recs = [{name: getattr(r, name) for name in RECOMMENDATION_FIELDS} for r in data.recommendations]
    return as_published(
        {
            "schema_version": SCHEMA_VERSION,
            "as_of": data.as_of,
            "run_id": data.run_id,
            "currency": "USD",  # of the recommendations; spend is per billing currency below
            "period": {"start": data.windows.period_start, "end": data.windows.period_end},
            "summary": {
                # The USD part only: a bill in another currency is in spend_by_currency, never added.
                "spend_usd": data.spend.usd.cost,
                "previous_spend_usd": data.spend.usd.previous_cost,
                "change_pct": data.spend.usd.change_pct,
                "spend_by_currency": [
                    {
                        "currency": c.currency,
                        "cost": c.cost,
                        "previous_cost": c.previous_cost,
                        "change_pct": c.change_pct,
                        "line_items": c.line_items,
                    }
                    for c in data.spend.by_currency
                ],
                "monthly_savings_amount": data.headline_saving,
                "monthly_savings_how_counted": HOW_COUNTED,
                "top_actions": [
                    {
                        "order": st["order"],
                        "kind": st["kind"],
                        "scope": st["scope"],
                        "estimated_monthly_savings_amount": st["monthly_savings"],
                    }
                    for st in data.top_plan_steps
                ]
                if data.plan is not None
                else [
                    {
                        "kind": r.kind,
                        "scope": r.scope,
                        "part_of": r.part_of,
                        "estimated_monthly_savings_amount": r.estimated_monthly_savings_amount,
                        "saving_basis": r.saving_basis,
                    }
                    for r in data.top_actions
                ],
            },
            "plan": data.plan,
            "recommendations": recs,
        }
    )


def write_json(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def neutralise(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula gets a leading apostrophe.

    Only text is touched: a number such as -12.5 stays a number.
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _cell(value: Any, column: str | None = None) -> Any:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return neutralise(json.dumps(as_published(value), sort_keys=True))
    if isinstance(value, float | Decimal):
        rounded = published(float(value), column)
        return "" if rounded is None else rounded
    if isinstance(value, datetime | date):
        return value.isoformat()
    return neutralise(value)


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow([neutralise(c) for c in columns])
        writer.writerows([_cell(v, c) for v, c in zip(row, columns, strict=True)] for row in rows)
    return path


def _records(path: Path, items: Sequence[Any], columns: Sequence[str]) -> Path:
    return write_csv(path, columns, ([getattr(i, c) for c in columns] for i in items))


def _csv_values(r: Any) -> list[Any]:
    touches = r.touches
    listed = (
        ", ".join(touches)
        if len(touches) <= 8
        else f"{len(touches)} resources (listed in recommendations.json)"
    )
    flat = {"label": r.label, "part_of": r.part_of, "billed_monthly_cost": r.billed_monthly_cost,
            "saving_basis": r.saving_basis, "touches": listed}  # fmt: skip
    return [flat[name] if name in flat else getattr(r, name) for name in RECOMMENDATION_CSV_FIELDS]


def _short(value: Any) -> Any:
    """A text cell cut to MAX_CSV_CELL characters, saying where the rest is."""
    if isinstance(value, str) and len(value) > MAX_CSV_CELL:
        return value[: MAX_CSV_CELL - 40].rstrip() + " … (in full in recommendations.json)"
    return value


def write_csvs(data: ReportData, out_dir: Path) -> list[Path]:
    """One CSV per table of the report."""
    return [
        write_csv(
            out_dir / "recommendations.csv",
            RECOMMENDATION_CSV_FIELDS,
            ([_short(v) for v in _csv_values(r)] for r in data.recommendations),
        ),
        _records(
            out_dir / "spend_weekly.csv",
            data.weekly_spend,
            ("week", "currency", "dimension", "label", "cost"),
        ),
        _records(
            out_dir / "commitments.csv",
            data.commitments,
            (
                "commitment_discount_id",
                "name",
                "category",
                "type",
                "currency",
                "used_cost",
                "unused_cost",
                "utilisation",
            ),
        ),
        _records(
            out_dir / "backtest.csv",
            data.backtest,
            (
                "scenario",
                "policy",
                "months",
                "first_month",
                "last_month",
                "cost_usd",
                "on_demand_cost_usd",
                "savings_pct",
                "mean_regret_pct",
            ),
        ),
        _records(
            out_dir / "duration_fits.csv",
            data.durations,
            (
                "group_by",
                "group_key",
                "n",
                "censored",
                "family",
                "params",
                "aic",
                "ks",
                "ks_pvalue",
                "p50_s",
                "p90_s",
                "p99_s",
                "share_jobs_under_48h",
                "share_gpu_hours_under_48h",
                "drift_flag",
                # A p*_s beyond the data is left empty, flagged here, and is "> N days" past this.
                "data_limit_s",
                "p50_beyond_data",
                "p90_beyond_data",
                "p99_beyond_data",
                "censored_note",
            ),
        ),
        _records(
            out_dir / "storage_by_class_age.csv",
            data.storage,
            ("storage_class", "age_band", "objects", "size_bytes"),
        ),
        _records(
            out_dir / "storage_prefixes.csv",
            data.prefixes,
            ("bucket", "prefix", "objects", "size_bytes", "noncurrent_bytes", "oldest_days"),
        ),
        _records(
            out_dir / "data_quality.csv",
            data.dq or [],
            ("rule", "severity", "success", "unexpected_count", "examples", "where", "checked_at"),
        ),
    ]


def lifecycle_by_bucket(data: ReportData) -> dict[str, dict[str, Any]]:
    """Lifecycle rules merged per bucket: a bucket holds one configuration, PutBucketLifecycleConfiguration
    replaces it whole, so the rules of every prefix of a bucket must travel together.

    The checkpoint-storage total carries each bucket's configuration as the recommender merged it
    (with the rules the bucket already had, as `--apply` would put it); without it, the prefixes'
    own rules are merged here. A bucket with no rule gets no file (S3 refuses an empty one).
    """
    total = next((r for r in data.recommendations if r.kind == "storage"), None)
    merged = (total.detail or {}).get("lifecycle_configurations") if total else None
    if isinstance(merged, dict) and merged:
        return {
            str(bucket): {"Rules": list(config.get("Rules", []))}
            for bucket, config in sorted(merged.items())
            if isinstance(config, dict) and config.get("Rules")
        }
    buckets: dict[str, dict[str, Any]] = {}
    for r in data.lifecycle:
        config = r.lifecycle_configuration
        if not config:
            continue
        bucket = str((r.detail or {}).get("bucket") or r.scope.split("/", 1)[0])
        buckets.setdefault(bucket, {"Rules": []})["Rules"].extend(config.get("Rules", []))
    return dict(sorted(buckets.items()))


def _file_name(bucket: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", bucket) or "_"


def write_lifecycle(data: ReportData, out_dir: Path) -> list[Path]:
    """lifecycle.json (every bucket) and lifecycle/<bucket>.json (boto3's LifecycleConfiguration as is)."""
    buckets = lifecycle_by_bucket(data)
    paths = [
        write_json(
            out_dir / "lifecycle.json",
            as_published(
                {
                    "schema_version": SCHEMA_VERSION,
                    "as_of": data.as_of,
                    "run_id": data.run_id,
                    "buckets": buckets,
                }
            ),
        )
    ]
    for bucket, config in buckets.items():
        paths.append(write_json(out_dir / "lifecycle" / f"{_file_name(bucket)}.json", as_published(config)))
    return paths


def parse_s3_url(url: str) -> tuple[str, str]:
    """'s3://bucket/some/prefix/' -> ('bucket', 'some/prefix')."""
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"not an s3://bucket/prefix URL: {url!r}")
    return parsed.netloc, parsed.path.strip("/")


def publish_to_bucket(s3_client: Any, report_dir: Path, url: str, *, delete_stale: bool = False) -> list[str]:
    """Upload every file of `report_dir` under s3://bucket/prefix/, keeping relative paths.

    report.html goes last so that whoever opens it finds its companions already there.
    With `delete_stale`, keys under the prefix that the report no longer has are removed
    afterwards (for a `latest/` prefix).
    """
    bucket, prefix = parse_s3_url(url)
    files = sorted(
        (p for p in report_dir.rglob("*") if p.is_file()), key=lambda p: (p.name == "report.html", str(p))
    )
    keys = []
    for path in files:
        relative = path.relative_to(report_dir).as_posix()
        key = f"{prefix}/{relative}" if prefix else relative
        content_type = CONTENT_TYPES.get(path.suffix.lower(), "application/octet-stream")
        s3_client.upload_file(str(path), bucket, key, ExtraArgs={"ContentType": content_type})
        keys.append(key)
    if delete_stale:
        wanted = set(keys)
        paginator = s3_client.get_paginator("list_objects_v2")
        stale = [
            obj["Key"]
            for page in paginator.paginate(Bucket=bucket, Prefix=f"{prefix}/" if prefix else "")
            for obj in page.get("Contents", [])
            if obj["Key"] not in wanted
        ]
        for start in range(0, len(stale), 1000):  # DeleteObjects takes at most 1,000 keys
            s3_client.delete_objects(
                Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in stale[start : start + 1000]], "Quiet": True},
            )
    return keys
