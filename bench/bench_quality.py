"""Validation time next to load time for the same N billing rows (default 10M).

Generates a FOCUS CSV.gz with SQL in DuckDB, loads it with `ingest_billing` (staging,
checks, insert, reconciliation), then runs the billing_facts suite with GX on the
loaded batch. Usage: python bench/bench_quality.py [rows] [workdir]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import duckdb

from athanor.ingest.billing import ingest_billing
from athanor.quality import BatchContext, QualityConfig, validate_batch
from athanor.warehouse import connect


def generate(path: Path, rows: int) -> None:
    """FOCUS rows: 50 accounts x hourly charges in November 2026, costs 0.01-100 USD."""
    con = duckdb.connect()
    con.execute(
        f"""copy (
            select
                'acct-' || (i % 50)                                   as BillingAccountId,
                'USD'                                                 as BillingCurrency,
                '2026-11-01T00:00:00Z'                                as BillingPeriodStart,
                '2026-12-01T00:00:00Z'                                as BillingPeriodEnd,
                strftime(timestamp '2026-11-01' + to_hours((i // 50) % 720), '%Y-%m-%dT%H:%M:%SZ') as ChargePeriodStart,
                strftime(timestamp '2026-11-01' + to_hours((i // 50) % 720 + 1), '%Y-%m-%dT%H:%M:%SZ') as ChargePeriodEnd,
                'Usage'                                               as ChargeCategory,
                'Usage-Based'                                         as ChargeFrequency,
                case when i % 3 = 0 then 'Dynamic' else 'Standard' end as PricingCategory,
                ((i * 7919) % 10000 / 100.0 + 0.01)::decimal(18, 2)   as BilledCost,
                ((i * 7919) % 10000 / 100.0 + 0.01)::decimal(18, 2)   as EffectiveCost,
                1                                                     as ConsumedQuantity,
                'Hours'                                               as ConsumedUnit,
                'i-' || (i // 36000)                                  as ResourceId,
                'Amazon Elastic Compute Cloud'                        as ServiceName,
                'SKU' || (i % 7)                                      as SkuId,
                'p4d.24xlarge'                                        as x_InstanceType
            from range({rows}) t(i)
        ) to '{path}' (header, compression gzip)"""  # noqa: S608 - generated numbers only
    )
    con.close()


def main(rows: int = 10_000_000, workdir: str | None = None) -> None:
    root = Path(workdir or tempfile.mkdtemp(prefix="athanor-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    data = root / f"focus-{rows}.csv.gz"
    if not data.exists():
        started = time.monotonic()
        generate(data, rows)
        print(f"generated {rows:,} rows in {time.monotonic() - started:.1f}s -> {data}")
    warehouse = root / "bench.duckdb"
    warehouse.unlink(missing_ok=True)
    con = connect(warehouse, memory_limit="6GB", threads=2)

    started = time.monotonic()
    result = ingest_billing(con, [data])
    load_s = time.monotonic() - started

    import great_expectations  # noqa: F401 - the 4-5 s import is paid once per process, not per batch

    context = BatchContext("bench", result.load_id, (data.name,), None, "focus")
    figures = [(data.name, rows, dict(result.billed_cost))]
    started = time.monotonic()
    outcome = validate_batch(
        con, "billing_facts", "billing_facts", context=context, config=QualityConfig(), file_figures=figures
    )
    validate_s = time.monotonic() - started
    con.close()

    print(f"{'rows':>12} {'load_s':>8} {'validate_s':>11} {'ratio':>6} {'rules':>6} failed")
    print(
        f"{rows:>12,} {load_s:>8.1f} {validate_s:>11.1f} {validate_s / load_s:>6.2f} "
        f"{len(outcome.results):>6} {', '.join(r.rule for r in outcome.failures) or '-'}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000, sys.argv[2] if len(sys.argv) > 2 else None)
