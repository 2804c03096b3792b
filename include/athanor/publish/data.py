"""Everything the report shows, read from the warehouse into typed records (one query per file in sql/report/).

Money read from the bills stays in its billing currency: every record of it carries its
`currency`, and no figure adds two currencies together. The recommendations, backtests and
lifecycle prices are in USD (the catalogue's prices; the demand they are fitted on is the
USD billing, `sql/marts/gpu_demand_hourly.sql`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import duckdb

from athanor.ingest.daily import daily_source
from athanor.model.durations.support import published_quantiles
from athanor.publish.allocation_section import Allocation, load_allocation
from athanor.publish.gpu_section import GpuPlanRow, load_gpu_plan
from athanor.publish.gpu_usage_section import GpuUsage, load_gpu_usage
from athanor.publish.intake_section import Intake, load_intake
from athanor.publish.queries import report_rows
from athanor.publish.spend_watch_section import SpendWatch, load_spend_watch
from athanor.publish.unit_economics_section import UnitEconomics, load_unit_economics
from athanor.recommend.nightly import ALTERNATIVES, TOTALS
from athanor.recommend.plan import document as plan_document

PERIOD_DAYS = 30  # "this period": the 30 days ending on as_of, compared with the 30 before
WEEKS = 13  # a quarter of weekly history in the spend charts
MAX_DURATION_GROUPS = 12  # histograms drawn; the fits table lists every group
TOP_PREFIXES = 15
# The storage rows; every other kind belongs to the purchase mix (or stands alone).
STORAGE_ROWS = ("lifecycle", "ebs", "storage")
# Shown in the GPU sections (plan, utilisation), not in the purchase-mix table.
GPU_ROWS = ("gpu_choice", "idle_gpu", "underused_gpu")
KIND_LABELS = {
    "mix": "Fleet mix (total)",
    "reserved_instances": "Reserved instances",
    "savings_plan": "Savings plan",
    "spot": "Spot",
    "checkpointing": "Checkpointing",
    "gpu_choice": "GPU choice",
    "idle_gpu": "Idle GPUs",
    "underused_gpu": "Underused GPUs",
    "lifecycle": "S3 lifecycle",
    "ebs": "EBS clean-up",
    "storage": "Checkpoint storage (total)",
}
AGE_BANDS = ("< 30 d", "30–90 d", "90–180 d", "180–365 d", "> 1 y", "unknown")
SPEND_DIMENSIONS = ("pricing_category", "team", "instance_family", "service")


@dataclass(frozen=True)
class Windows:
    """The date windows of one report, all half-open [start, end) in UTC."""

    as_of: date
    period_start: date
    period_end: date
    previous_start: date
    weeks_start: date

    @classmethod
    def for_day(cls, as_of: date) -> Windows:
        period_end = as_of + timedelta(days=1)
        period_start = period_end - timedelta(days=PERIOD_DAYS)
        monday = as_of - timedelta(days=as_of.weekday())
        return cls(
            as_of=as_of,
            period_start=period_start,
            period_end=period_end,
            previous_start=period_start - timedelta(days=PERIOD_DAYS),
            weeks_start=monday - timedelta(weeks=WEEKS - 1),
        )

    @property
    def months(self) -> list[str]:
        """'YYYY-MM' of every month the report's windows read, oldest first."""
        day = min(self.weeks_start, self.previous_start).replace(day=1)
        out = []
        while day <= self.as_of:
            out.append(f"{day:%Y-%m}")
            day = (day + timedelta(days=32)).replace(day=1)
        return out


@dataclass(frozen=True)
class Recommendation:
    kind: str
    scope: str
    action: str
    run_id: str
    as_of: date
    recommended_quantity: float | None
    hourly_commitment: float | None
    term_months: int | None
    upfront_cost: float | None
    recurring_monthly_cost: float | None
    estimated_monthly_cost: float | None
    current_monthly_cost: float | None
    estimated_monthly_savings_amount: float | None
    estimated_savings_percentage: float | None
    average_utilization: float | None
    coverage: float | None
    break_even_months: float | None
    risk: str | None
    assumptions: dict[str, Any] | None
    detail: dict[str, Any] | None

    @property
    def lifecycle_configuration(self) -> dict[str, Any] | None:
        """The S3 lifecycle configuration (boto3's shape) of a lifecycle recommendation."""
        if self.kind != "lifecycle" or not isinstance(self.detail, dict):
            return None
        config = self.detail.get("lifecycle_configuration")
        return config if isinstance(config, dict) else None

    def _detail(self, key: str) -> Any:
        return self.detail.get(key) if isinstance(self.detail, dict) else None

    @property
    def ebs_actions(self) -> list[dict[str, Any]]:
        """The EBS row's actions, one per volume or snapshot: what is done to it (kind, size,
        reason, from `plan_ebs`) and its saving held against the bill, the largest first."""
        if self.kind != "ebs":
            return []
        planned = self._detail("actions") or []
        billed = self._detail("actions_against_bill") or []
        rows = [{**p, **b} for p, b in zip(planned, billed, strict=False)]
        return sorted(
            rows,
            key=lambda a: (-float(a.get("estimated_monthly_savings_amount") or 0), a.get("resource_id", "")),
        )

    @property
    def is_total(self) -> bool:
        """A row that adds up other rows of the run (the fleet mix, checkpoint storage)."""
        return self.kind in TOTALS

    @property
    def is_alternative(self) -> bool:
        """Prices another way to run the same GPU-hours as the mix: never added to it."""
        return self.kind in ALTERNATIVES

    @property
    def part_of(self) -> str | None:
        """The kind of the total this row is a part of (None: it stands alone)."""
        return next((total for total, parts in TOTALS.items() if self.kind in parts), None)

    @property
    def touches(self) -> list[str]:
        """What the action changes, as the bill names it: pools, buckets, volumes, snapshots."""
        found = self._detail("touches")
        return [str(t) for t in found] if isinstance(found, list) else []

    @property
    def billed_monthly_cost(self) -> float | None:
        """What the bill charged what the action touches, a month (None: the bill names none of it)."""
        return _float(self._detail("billed_monthly_cost"))

    @property
    def saving_basis(self) -> str | None:
        """How the saving relates to the bill: within it, capped at it, or an estimate."""
        basis = self._detail("saving_basis")
        return str(basis) if basis else None

    @property
    def is_estimate(self) -> bool:
        """Priced from inventory list prices because the bill does not name what it touches."""
        return bool(self.saving_basis and "estimate" in self.saving_basis)

    @property
    def label(self) -> str:
        """The kind in words: 'Reserved instances', 'EBS clean-up'; another cloud's commitment in
        its own ('Azure reservation', 'GCP committed use discount (resource-based)')."""
        commitment = self._detail("commitment")
        if isinstance(commitment, dict) and commitment.get("provider") not in (None, "aws"):
            name = commitment.get("offer_name")
            if name:
                return str(name)[0].upper() + str(name)[1:]
        return KIND_LABELS.get(self.kind, self.kind.replace("_", " ").capitalize())


@dataclass(frozen=True)
class WeeklySpend:
    week: date
    currency: str  # the billing currency of `cost`
    dimension: str  # one of SPEND_DIMENSIONS
    label: str
    cost: float


@dataclass(frozen=True)
class CommitmentWeek:
    week: date
    currency: str
    used_cost: float
    unused_cost: float
    committed_hours: float
    eligible_hours: float

    @property
    def utilisation(self) -> float | None:
        held = self.used_cost + self.unused_cost
        return self.used_cost / held if held > 0 else None

    @property
    def coverage(self) -> float | None:
        return self.committed_hours / self.eligible_hours if self.eligible_hours > 0 else None


@dataclass(frozen=True)
class Commitment:
    commitment_discount_id: str
    name: str | None
    category: str | None  # Spend (savings plan) | Usage (reservation)
    type: str | None
    currency: str
    used_cost: float
    unused_cost: float

    @property
    def utilisation(self) -> float | None:
        held = self.used_cost + self.unused_cost
        return self.used_cost / held if held > 0 else None


@dataclass(frozen=True)
class BacktestRow:
    scenario: str
    policy: str
    months: int
    first_month: str
    last_month: str
    cost_usd: float
    on_demand_cost_usd: float
    savings_pct: float | None
    mean_regret_pct: float | None


@dataclass(frozen=True)
class DurationGroup:
    """One fitted workload group and the observed durations of its jobs."""

    group_by: str
    group_key: str
    n: int
    censored: int
    family: str
    params: dict[str, Any]
    aic: float | None
    ks: float | None
    ks_pvalue: float | None
    p50_s: float | None
    p90_s: float | None
    p99_s: float | None
    share_jobs_under_48h: float | None
    share_gpu_hours_under_48h: float | None
    drift_flag: str | None
    durations_s: tuple[float, ...] = ()
    censored_flags: tuple[bool, ...] = ()
    # A quantile beyond the longest duration the group's jobs were watched (data_limit_s) is
    # published as p*_text ("> N days (beyond the data)") with p*_s None: the CLI, this CSV
    # and the page all take it from athanor.model.durations.published_quantiles.
    data_limit_s: float | None = None
    p50_beyond_data: bool = False
    p90_beyond_data: bool = False
    p99_beyond_data: bool = False
    p50_text: str | None = None
    p90_text: str | None = None
    p99_text: str | None = None
    censored_note: str | None = None


@dataclass(frozen=True)
class StorageCell:
    storage_class: str
    age_band: str
    objects: int
    size_bytes: int


@dataclass(frozen=True)
class PrefixUsage:
    bucket: str
    prefix: str
    objects: int
    size_bytes: int
    noncurrent_bytes: int
    oldest_days: int | None


@dataclass(frozen=True)
class DQResult:
    rule: str
    severity: str | None
    success: bool
    unexpected_count: int | None
    examples: str | None
    where: str | None  # table / column / file the rule ran on, when dq_results says
    checked_at: datetime | None
    suite: str | None = None  # the page counts passes per suite; data_quality.csv lists each


@dataclass(frozen=True)
class CurrencySpend:
    """The spend billed in one currency, this period and the one before."""

    currency: str
    cost: float
    previous_cost: float
    line_items: int

    @property
    def change_pct(self) -> float | None:
        if self.previous_cost == 0:
            return None
        return 100.0 * (self.cost - self.previous_cost) / abs(self.previous_cost)


@dataclass(frozen=True)
class Spend:
    """The period's spend, one entry per billing currency (alphabetical); never one total."""

    by_currency: tuple[CurrencySpend, ...]
    billing_through: datetime | None

    @property
    def currencies(self) -> tuple[str, ...]:
        return tuple(c.currency for c in self.by_currency)

    @property
    def line_items(self) -> int:
        return sum(c.line_items for c in self.by_currency)

    @property
    def usd(self) -> CurrencySpend:
        """The USD part (zero when nothing was billed in USD)."""
        return next((c for c in self.by_currency if c.currency == "USD"), CurrencySpend("USD", 0.0, 0.0, 0))

    @property
    def cost_usd(self) -> float:
        return self.usd.cost

    @property
    def previous_cost_usd(self) -> float:
        return self.usd.previous_cost

    @property
    def change_pct(self) -> float | None:
        """Of the USD part."""
        return self.usd.change_pct


@dataclass(frozen=True)
class ReportData:
    windows: Windows
    run_id: str
    spend: Spend
    weekly_spend: list[WeeklySpend] = field(default_factory=list)
    commitment_weeks: list[CommitmentWeek] = field(default_factory=list)
    commitments: list[Commitment] = field(default_factory=list)
    recommendations: list[Recommendation] = field(default_factory=list)
    backtest: list[BacktestRow] = field(default_factory=list)
    durations: list[DurationGroup] = field(default_factory=list)
    storage: list[StorageCell] = field(default_factory=list)
    prefixes: list[PrefixUsage] = field(default_factory=list)
    dq: list[DQResult] | None = None  # None: no dq_results table in this warehouse
    gpu_plan: list[GpuPlanRow] = field(default_factory=list)  # one row per workload class
    spend_watch: SpendWatch | None = None  # None: no spend watch tables in this warehouse
    gpu_usage: GpuUsage | None = None  # None: no gpu_usage_hourly table in this warehouse
    allocation: Allocation | None = None  # None: no gpu_allocation_hourly table in this warehouse
    unit_economics: UnitEconomics | None = None  # None: no unit_economics_weekly view in this warehouse
    intake: Intake | None = None  # what the night loaded and held back (None: not read)
    # The run's plan (athanor.recommend.plan.document): what `athanor plan` prints; None: none composed.
    plan: dict[str, Any] | None = None

    @property
    def as_of(self) -> date:
        return self.windows.as_of

    @property
    def actions(self) -> list[Recommendation]:
        """Every action with a monthly saving, each counted once: the rows that total others (the
        fleet mix, checkpoint storage) are left out, their parts are in; so are the alternatives
        (another GPU type, checkpointing), which would change the GPU-hours the mix already plans."""
        return [
            r
            for r in self.recommendations
            if not r.is_total and not r.is_alternative and r.estimated_monthly_savings_amount is not None
        ]

    @property
    def alternatives(self) -> list[Recommendation]:
        """Other ways to run the GPU-hours the mix plans: shown, never added to the headline."""
        return [r for r in self.recommendations if r.is_alternative]

    @property
    def plan_steps(self) -> list[dict[str, Any]]:
        return list(self.plan["steps"]) if self.plan else []

    @property
    def plan_counted(self) -> list[dict[str, Any]]:
        return [s for s in self.plan_steps if s["counted"]]

    @property
    def top_plan_steps(self) -> list[dict[str, Any]]:
        """The three counted steps that save the most a month, in the plan's order."""
        best = sorted(self.plan_counted, key=lambda s: -(s["monthly_savings"] or 0.0))[:3]
        return sorted((s for s in best if (s["monthly_savings"] or 0) > 0), key=lambda s: s["order"])

    @property
    def plan_apart(self) -> list[dict[str, Any]]:
        return [s for s in self.plan_steps if not s["counted"]]

    @property
    def headline_saving(self) -> float | None:
        """The monthly saving: the plan's total (its counted steps) where the run composed one,
        else the sum of non-overlapping actions."""
        if self.plan is not None:
            return self.plan["total_monthly_savings"]
        actions = self.actions
        if not actions:
            return None
        return round(sum(r.estimated_monthly_savings_amount or 0.0 for r in actions), 2)

    @property
    def top_actions(self) -> list[Recommendation]:
        """The three actions that save the most per month (positive savings, totals left out)."""
        saving = [r for r in self.actions if (r.estimated_monthly_savings_amount or 0) > 0]
        return sorted(saving, key=lambda r: -(r.estimated_monthly_savings_amount or 0))[:3]

    @property
    def lifecycle(self) -> list[Recommendation]:
        return [r for r in self.recommendations if r.kind == "lifecycle"]

    @property
    def storage_actions(self) -> list[Recommendation]:
        """The checkpoint-storage rows: lifecycle per prefix, the EBS clean-up, their total."""
        return [r for r in self.recommendations if r.kind in STORAGE_ROWS]

    @property
    def mix(self) -> list[Recommendation]:
        """The purchase-mix rows: its actions first, their total last."""
        rows = [r for r in self.recommendations if r.kind not in STORAGE_ROWS and r.kind not in GPU_ROWS]
        # The mix's actions, then their total, then what is not added to it.
        return sorted(rows, key=lambda r: 0 if r.part_of else 1 if r.is_total else 2)

    @property
    def mix_attribution(self) -> dict[str, Any] | None:
        """The fleet mix's baseline, its parts and where the money goes (`recommend.attribution`)."""
        total = next((r for r in self.recommendations if r.kind == "mix"), None)
        found = total._detail("attribution") if total else None
        return found if isinstance(found, dict) else None

    @property
    def dq_failed(self) -> list[DQResult]:
        return [r for r in self.dq or [] if not r.success]


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _has_view(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute("select count(*) from duckdb_views() where view_name = ?", [name]).fetchone()
    return bool(found and found[0])


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute(
        "select count(*) from duckdb_tables() where table_name = ? and schema_name = current_schema()", [name]
    ).fetchone()
    return bool(found and found[0])


def _group_filter(group_key: str) -> dict[str, str] | None:
    """'team=llm,model=gpt' -> {'team': 'llm', 'model': 'gpt'}; 'all' -> {}; unparseable -> None."""
    if group_key == "all":
        return {}
    out = {}
    for part in group_key.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            return None
        out[key.strip()] = value.strip()
    return out


def _durations_for(jobs: list[dict[str, Any]], group_key: str) -> tuple[tuple[float, ...], tuple[bool, ...]]:
    wanted = _group_filter(group_key)
    if wanted is None or (jobs and any(k not in jobs[0] for k in wanted)):
        return (), ()  # a grouping column the report does not read: curve only
    picked = [j for j in jobs if all(str(j[k]) == v for k, v in wanted.items())]
    return tuple(float(j["duration_s"]) for j in picked), tuple(bool(j["censored"]) for j in picked)


def _dq_result(row: dict[str, Any]) -> DQResult:
    """One dq_results row (030_dq_results.sql) as the report shows it."""
    examples = row.get("examples")
    if isinstance(examples, list | tuple):
        examples = "; ".join(str(e) for e in examples)
    if row.get("exception"):
        examples = f"could not evaluate: {row['exception']}" + (f"; {examples}" if examples else "")
    where = [str(v) for v in (row.get("suite"), row.get("table_name"), row.get("column_name")) if v]
    files = row.get("files")
    if files:
        where.append(", ".join(str(f) for f in files))
    unexpected = row.get("unexpected_count")
    return DQResult(
        rule=str(row.get("rule") or "?"),
        severity=row.get("severity"),
        success=bool(row.get("success")),
        unexpected_count=None if unexpected is None else int(unexpected),
        examples=examples or None,
        where=" · ".join(where) or None,
        checked_at=row.get("checked_at"),
        suite=row.get("suite"),
    )


def load_report_data(con: duckdb.DuckDBPyConnection, as_of: date, run_id: str) -> ReportData:
    """Read every section of the report for `as_of` (windows ending that day) and run `run_id`."""
    w = Windows.for_day(as_of)
    week_window = {"start": w.weeks_start, "end": w.period_end}
    run = {"as_of": as_of, "run_id": run_id}

    # The loads' daily sums, or the lines where they do not cover them: decided once per report.
    daily = daily_source(con)
    spend_rows = report_rows(
        con,
        "spend_period",
        {"period_start": w.period_start, "period_end": w.period_end, "previous_start": w.previous_start},
        daily=daily,
    )
    spend = Spend(
        by_currency=tuple(
            CurrencySpend(
                currency=r["currency"],
                cost=float(r["cost"]),
                previous_cost=float(r["previous_cost"]),
                line_items=int(r["line_items"]),
            )
            for r in spend_rows
        ),
        billing_through=max((r["billing_through"] for r in spend_rows), default=None),
    )
    weekly = [WeeklySpend(**r) for r in report_rows(con, "spend_weekly", week_window, daily=daily)]
    commitment_weeks = [
        CommitmentWeek(**r) for r in report_rows(con, "commitment_weekly", week_window, daily=daily)
    ]
    commitments = [
        Commitment(
            commitment_discount_id=r["commitment_discount_id"],
            name=r["commitment_discount_name"],
            category=r["commitment_discount_category"],
            type=r["commitment_discount_type"],
            currency=r["currency"],
            used_cost=r["used_cost"],
            unused_cost=r["unused_cost"],
        )
        for r in report_rows(con, "commitments", {"start": w.period_start, "end": w.period_end})
    ]
    recommendations = [
        Recommendation(
            **{k: v for k, v in r.items() if k not in ("assumptions", "detail", "recommended_quantity")},
            recommended_quantity=_float(r["recommended_quantity"]),
            assumptions=_json(r["assumptions"]),
            detail=_json(r["detail"]),
        )
        for r in report_rows(con, "recommendations", run)
    ]
    backtest = [BacktestRow(**r) for r in report_rows(con, "backtest", run)]

    fits = report_rows(con, "duration_fits", run)
    jobs = report_rows(con, "job_durations", {"end": w.period_end}) if fits else []
    durations = []
    for i, r in enumerate(fits):
        observed = _durations_for(jobs, r["group_key"]) if i < MAX_DURATION_GROUPS else ((), ())
        params = _json(r.pop("params")) or {}
        # What is shown comes from the one rule the CLI uses too (the stored flags say the same).
        r |= published_quantiles(r)
        durations.append(
            DurationGroup(**r, params=params, durations_s=observed[0], censored_flags=observed[1])
        )

    storage = [
        StorageCell(r["storage_class"], AGE_BANDS[r["age_band"]], int(r["objects"]), int(r["size_bytes"]))
        for r in report_rows(con, "storage_by_class_age", {"as_of": as_of})
    ]
    prefixes = [
        PrefixUsage(
            **{**r, "size_bytes": int(r["size_bytes"]), "noncurrent_bytes": int(r["noncurrent_bytes"])}
        )
        for r in report_rows(con, "storage_top_prefixes", {"as_of": as_of, "limit": TOP_PREFIXES})
    ]
    dq = (
        [_dq_result(r) for r in report_rows(con, "dq_results", {"months": w.months})]
        if _has_table(con, "dq_results")
        else None
    )
    return ReportData(
        windows=w,
        run_id=run_id,
        spend=spend,
        weekly_spend=weekly,
        commitment_weeks=commitment_weeks,
        commitments=commitments,
        recommendations=recommendations,
        backtest=backtest,
        durations=durations,
        storage=storage,
        prefixes=prefixes,
        dq=dq,
        gpu_plan=load_gpu_plan(con, as_of, run_id),
        spend_watch=load_spend_watch(con, as_of, run_id, daily),
        gpu_usage=load_gpu_usage(con, w.period_start, w.period_end)
        if _has_table(con, "gpu_usage_hourly")
        else None,
        allocation=load_allocation(con, w.period_start, w.period_end)
        if _has_table(con, "gpu_allocation_hourly")
        else None,
        # The trend needs weeks before the period: the 90 days of the GPU plan's window.
        unit_economics=load_unit_economics(con, as_of - timedelta(days=90), as_of + timedelta(days=1))
        if _has_view(con, "unit_economics_weekly")
        else None,
        intake=load_intake(con),
        plan=plan_document(con, run_id) if _has_table(con, "plan_steps") else None,
    )
