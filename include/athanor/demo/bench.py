"""Big synthetic billing files for the benchmarks: any number of rows, in bounded memory.

The lines are EC2 usage only (no fees, no commitment accounting), priced from the reference
catalogue; the same writers as the demo render them as FOCUS 1.2 or CUR 2.0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from athanor.demo.arrow import const, hex16, mix64, pick, where
from athanor.demo.bills import write_parts
from athanor.demo.cur2_format import render_cur2
from athanor.demo.focus_format import render_focus
from athanor.demo.lines import LINE_SCHEMA, MICRO, QTY, TS, FileTotals, Rendered
from athanor.reference import instance

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
    inst_u = (mix64(np.arange(pool, dtype=np.uint64) + np.uint64(seed)) % np.uint64(1000)) / 1000.0
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

    type_names = pick([f[0] for f in _BENCH_FLEET], t)
    usage_type = pc.binary_join_element_wise(
        pick(["USE1-BoxUsage:", "USE1-SpotUsage:"], is_spot.astype(np.int32)), type_names, ""
    )
    job_id = pc.binary_join_element_wise(
        pick(_BENCH_TEAMS, team),
        pick(_BENCH_MODELS, team),
        pc.cast(pa.array(inst % 5000), pa.string()),
        "-",
    )
    job_id = where(rng.random(n) < 0.1, pa.nulls(n, pa.string()), job_id)  # untagged instances

    def ts(values: np.ndarray | int) -> pa.Array:
        return pa.array(np.broadcast_to(np.asarray(values, dtype=np.int64), (n,))).cast(TS)

    def opt(mask: np.ndarray, values: np.ndarray) -> pa.Array:
        return pa.array(values.astype(np.int64), mask=~mask)

    no_int = pa.nulls(n, pa.int64())
    data = {
        "payer_account_id": const("222222222222", n),
        "payer_account_name": const("bench-payer", n),
        "usage_account_id": pick(("200000000001", "200000000002", "200000000003", "200000000004"), team),
        "usage_account_name": pick(_BENCH_TEAMS, team),
        "billing_period_start": ts(month_start),
        "billing_period_end": ts(month_end),
        "charge_start": ts(start),
        "charge_end": ts(start + 3600),
        "line_type": pick(["DiscountedUsage", "SavingsPlanCoveredUsage", "Usage"], commit_code),
        "charge_category": const("Usage", n),
        "charge_frequency": const("Usage-Based", n),
        "pricing_category": pick(
            ["Standard", "Dynamic", "Committed"], np.select([is_spot, committed], [1, 2], 0)
        ),
        "product_code": const("AmazonEC2", n),
        "service_name": const("Amazon Elastic Compute Cloud", n),
        "service_category": const("Compute", n),
        "service_subcategory": const("Virtual Machines", n),
        "product_family": const("Compute Instance", n),
        "region_id": const("us-east-1", n),
        "region_name": const("US East (N. Virginia)", n),
        "availability_zone": pick(("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"), (inst // 4) % 4),
        "resource_id": pc.binary_join_element_wise(
            "i-0",
            pc.utf8_slice_codeunits(hex16(mix64(inst.astype(np.uint64) ^ np.uint64(seed))), 0, 16),
            "",
        ),
        "resource_type": const("Instance", n),
        "instance_type": type_names,
        "normalization_factor": pa.array(nf),
        "usage_type": usage_type,
        "operation": pick(["RunInstances", "RunInstances:SV001"], is_spot.astype(np.int32)),
        "description": pc.binary_join_element_wise("Linux/UNIX usage, ", type_names, ""),
        "sku_id": pick([f"BENCHSKU{i:08d}" for i in range(len(_BENCH_FLEET))], t),
        "unit": const("Hrs", n),
        "quantity_e10": pa.array(seconds * QTY // 3600),
        "list_rate_micro": pa.array(od),
        "rate_micro": pa.array(np.select([is_ri, is_sp], [ri_rate, sp_rate], rate)),
        "billed_micro": pa.array(np.where(committed, 0, cost)),
        "effective_micro": pa.array(effective),
        "list_micro": pa.array(od_cost),
        "commitment_id": pick(
            [
                "arn:aws:ec2:us-east-1:222222222222:reserved-instances/bench-ri",
                "arn:aws:savingsplans::222222222222:savingsplan/bench-sp",
                None,
            ],
            commit_code,
        ),
        "commitment_name": pick(["bench RI", "bench Savings Plan", None], commit_code),
        "commitment_type": pick(["Reserved Instance", "Savings Plan", None], commit_code),
        "commitment_category": pick(["Usage", "Spend", None], commit_code),
        "commitment_status": pick(["Used", "Used", None], commit_code),
        "commitment_unit": pick(["Hours", "USD", None], commit_code),
        "commitment_quantity_e10": opt(
            committed, np.where(is_ri, seconds * QTY // 3600, sp_cost * (QTY // MICRO))
        ),
        "commitment_rate_micro": opt(committed, np.where(is_ri, ri_rate, sp_rate)),
        "commitment_total_micro": no_int,
        "commitment_used_micro": no_int,
        "commitment_count": no_int,
        "unused_quantity_e10": no_int,
        "unused_micro": no_int,
        "commitment_start": where(committed, ts(month_start - 200 * 86400), pa.nulls(n, TS)),
        "commitment_end": where(committed, ts(month_start + 165 * 86400), pa.nulls(n, TS)),
        "invoice_id": pa.nulls(n, pa.string()),
        "tag_team": pick(_BENCH_TEAMS, team),
        "tag_project": pick(_BENCH_PROJECTS, team),
        "tag_model": pick(_BENCH_MODELS, team),
        "tag_job_id": job_id,
    }
    return pa.table(data, schema=LINE_SCHEMA)


def _synthetic_chunks(
    n_rows: int, seed: int, chunk_rows: int, period: str, render: Callable[[pa.Table], Rendered]
) -> Iterator[Rendered]:
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
        n_rows, seed, chunk_rows, period, lambda t: render_cur2(t, csv_text=fmt != "parquet")
    )
    return write_parts(chunks, Path(path), fmt)


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
        n_rows, seed, chunk_rows, period, lambda t: render_focus(t, typed=fmt == "parquet")
    )
    return write_parts(chunks, Path(path), fmt)
