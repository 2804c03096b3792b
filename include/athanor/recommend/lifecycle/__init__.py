"""Checkpoint-storage lifecycle: inventory -> checkpoint runs -> priced policies -> lifecycle JSON.

The summary API for the CLI, the DAG and the report is `recommend_lifecycle`; the pieces live in
`athanor.recommend.lifecycle` (inventory, checkpoints, pricing, policy, rules, apply).

Keep-last-K (documented choice): S3 lifecycle cannot say "all but the newest K" for current
versions, so each stale checkpoint (older than the K latest of its run, not kept) gets its own
Prefix rule (`<run>/checkpoint-<step>/`) that expires it. The rule's Days is the age of the newest
object under that prefix, so a checkpoint written again at the same path is safe until the next
nightly run regenerates the rules. S3 allows 1,000 rules per bucket: past that, the largest stale
checkpoints get rules first and the rest are reported as deferred (picked up on later nights as
the first ones disappear). Tagging objects and one tag-filtered rule would scale further but costs
a PUT per object and $0.01 per 10,000 tags a month.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd

from athanor.ingest.checkpoints import (
    DEFAULT_CHECKPOINT_PATTERNS,
    DEFAULT_KEEP_PATTERNS,
    index_checkpoints,
)
from athanor.ingest.inventory import (
    EbsInventory,
    list_object_versions,
    read_ebs,
    read_inventories,
    read_inventory,
)
from athanor.recommend.lifecycle.apply import ApplyResult, apply_lifecycle, restore_lifecycle
from athanor.recommend.lifecycle.policy import (
    DO_NOTHING,
    HORIZON_MONTHS,
    CostTable,
    EbsPlan,
    PolicySpec,
    candidate_specs,
    class_codes,
    plan_ebs,
    simulate,
)
from athanor.recommend.lifecycle.pricing import (
    DEFAULT_PRICES,
    GIB,
    GLACIER_IR,
    INTELLIGENT_TIERING,
    STANDARD_IA,
    StoragePrices,
)
from athanor.recommend.lifecycle.rules import (
    MAX_RULES,
    LifecycleDiff,
    checkpoint_expiry_rule,
    merge_lifecycle,
    transition_rule,
    validate_lifecycle,
    versions_rule,
)

__all__ = [
    "ApplyResult",
    "LifecycleRecommendation",
    "PrefixPlan",
    "apply_lifecycle",
    "list_object_versions",
    "read_ebs",
    "read_inventories",
    "read_inventory",
    "recommend_lifecycle",
    "restore_lifecycle",
]


@dataclass
class CandidateResult:
    name: str
    spec: PolicySpec
    cost: CostTable
    allowed: bool
    reason: str = ""


@dataclass
class PrefixPlan:
    """The chosen policy for one bucket prefix and what every candidate would cost."""

    bucket: str
    prefix: str
    n_objects: int
    n_versions_noncurrent: int
    n_delete_markers: int
    bytes_current: int
    bytes_noncurrent: int
    n_runs: int
    n_checkpoints: int
    n_protected_objects: int
    chosen: str
    candidates: list[CandidateResult]
    rules: list[dict[str, Any]] = field(default_factory=list)
    deferred_checkpoints: int = 0
    deferred_bytes: int = 0
    skipped_rules: list[str] = field(default_factory=list)

    def candidate(self, name: str) -> CandidateResult:
        return next(c for c in self.candidates if c.name == name)

    @property
    def before(self) -> CostTable:
        return self.candidate(DO_NOTHING.name()).cost

    @property
    def after(self) -> CostTable:
        return self.candidate(self.chosen).cost

    def to_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "prefix": self.prefix,
            "policy": self.chosen,
            "objects": self.n_objects,
            "noncurrent_versions": self.n_versions_noncurrent,
            "delete_markers": self.n_delete_markers,
            "current_gib": round(self.bytes_current / GIB, 1),
            "noncurrent_gib": round(self.bytes_noncurrent / GIB, 1),
            "runs": self.n_runs,
            "checkpoints": self.n_checkpoints,
            "protected_objects": self.n_protected_objects,
            "cost_12m_before_usd": round(self.before.total, 2),
            "cost_12m_after_usd": round(self.after.total, 2),
            "savings_year_usd": round(self.before.total - self.after.total, 2),
            "deferred_checkpoints": self.deferred_checkpoints,
            "deferred_gib": round(self.deferred_bytes / GIB, 1),
            "skipped_rules": self.skipped_rules,
            "candidates": {
                c.name: {**c.cost.to_dict(), "allowed": c.allowed, "reason": c.reason}
                for c in self.candidates
            },
        }


def _months(x: np.ndarray) -> list[float]:
    return [round(float(v), 2) for v in x]


@dataclass
class LifecycleRecommendation:
    """Policies per bucket/prefix, EBS actions, costs before/after, lifecycle JSON and diffs."""

    as_of: str
    prefixes: list[PrefixPlan]
    ebs: EbsPlan | None
    configs: dict[str, dict[str, Any]]
    diffs: dict[str, LifecycleDiff]
    assumptions: dict[str, Any]
    prices: StoragePrices
    horizon_months: int = HORIZON_MONTHS

    @property
    def before(self) -> CostTable:
        total = CostTable.zeros(self.horizon_months)
        for p in self.prefixes:
            total = total + p.before
        return total + self.ebs.before if self.ebs else total

    @property
    def after(self) -> CostTable:
        total = CostTable.zeros(self.horizon_months)
        for p in self.prefixes:
            total = total + p.after
        return total + self.ebs.after if self.ebs else total

    @property
    def savings_year_usd(self) -> float:
        return self.before.total - self.after.total

    @property
    def savings_month_usd(self) -> float:
        """Average monthly saving over the horizon (one-off fees included)."""
        return self.savings_year_usd / self.horizon_months

    @property
    def break_even_month(self) -> int | None:
        """First month (1-based) by which cumulative savings are positive; None if never."""
        cum = np.cumsum(self.before.monthly - self.after.monthly)
        hits = np.nonzero(cum > 0)[0]
        return int(hits[0]) + 1 if len(hits) else None

    def to_dict(self) -> dict[str, Any]:
        before, after = self.before, self.after
        return {
            "as_of": self.as_of,
            "summary": {
                "cost_month_before_usd": round(float(before.monthly[0]), 2),
                "cost_month_after_usd": round(float(after.monthly[-1]), 2),
                "cost_12m_before_usd": round(before.total, 2),
                "cost_12m_after_usd": round(after.total, 2),
                "savings_month_usd": round(self.savings_month_usd, 2),
                "savings_year_usd": round(self.savings_year_usd, 2),
                "break_even_month": self.break_even_month,
            },
            "monthly_before_usd": _months(before.monthly),
            "monthly_after_usd": _months(after.monthly),
            "prefixes": [p.to_dict() for p in self.prefixes],
            "ebs": self.ebs.to_dict() if self.ebs else None,
            "lifecycle_configurations": self.configs,
            "diffs": {b: {**d.to_dict(), "text": d.text(b)} for b, d in self.diffs.items()},
            "assumptions": self.assumptions,
            "prices": self.prices.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def format_table(self) -> str:
        """Plain-text report: policies per prefix, month-by-month before/after, EBS, diffs."""
        lines = [f"Checkpoint storage lifecycle, as of {self.as_of}", ""]
        hdr = (
            f"{'bucket/prefix':<40} {'policy':<48} {'12m before $':>13} {'12m after $':>12} {'saving $':>11}"
        )
        lines += [hdr, "-" * len(hdr)]
        for p in self.prefixes:
            name = f"{p.bucket}/{p.prefix}"
            lines.append(
                f"{name[:40]:<40} {p.chosen[:48]:<48} {p.before.total:>13,.0f} {p.after.total:>12,.0f} "
                f"{p.before.total - p.after.total:>11,.0f}"
            )
        if self.ebs:
            lines.append(
                f"{'EBS volumes + snapshots':<40} {f'{len(self.ebs.actions)} actions':<48} {self.ebs.before.total:>13,.0f} "
                f"{self.ebs.after.total:>12,.0f} {self.ebs.before.total - self.ebs.after.total:>11,.0f}"
            )
        b, a = self.before, self.after
        lines.append(f"{'total':<89} {b.total:>13,.0f} {a.total:>12,.0f} {b.total - a.total:>11,.0f}")
        lines += ["", "month  " + " ".join(f"{m + 1:>9}" for m in range(self.horizon_months))]
        lines.append("before " + " ".join(f"{v:>9,.0f}" for v in b.monthly))
        lines.append("after  " + " ".join(f"{v:>9,.0f}" for v in a.monthly))
        be = self.break_even_month
        lines += [
            "",
            f"saving: ${self.savings_month_usd:,.0f}/month on average, ${self.savings_year_usd:,.0f} over "
            f"{self.horizon_months} months; break-even month {be if be else 'never'}",
        ]
        if self.ebs and self.ebs.actions:
            lines += ["", "EBS actions:"]
            for act in self.ebs.actions:
                lines.append(
                    f"  {act.kind:<21} {act.resource_id:<24} {act.size_gib:>8,.0f} GiB  "
                    f"${act.monthly_before_usd:>9,.2f} -> ${act.monthly_after_usd:>9,.2f}/month  ({act.reason})"
                )
        for bucket, diff in self.diffs.items():
            text = diff.text(bucket).splitlines()
            lines += ["", *text[:40]]
            if len(text) > 40:
                lines.append(f"  ... {len(text) - 40} more lines (see the lifecycle JSON)")
        return "\n".join(lines)


def _top_prefix(keys: pd.Series, depth: int) -> pd.Series:
    parts = keys.str.split("/", n=depth)
    return parts.map(lambda p: "/".join(p[:depth]) + "/" if len(p) > depth else "")


def _first_protected_under(prefix: str, sorted_keys: list[str]) -> str | None:
    i = bisect.bisect_left(sorted_keys, prefix)
    return sorted_keys[i] if i < len(sorted_keys) and sorted_keys[i].startswith(prefix) else None


def _first_stranger_under(prefix: str, sorted_keys: list[str], owner_of: Mapping[str, str]) -> str | None:
    """A key under prefix that belongs to another checkpoint, or to none (e.g. step_5.pt.bak)."""
    i = bisect.bisect_left(sorted_keys, prefix)
    while i < len(sorted_keys) and sorted_keys[i].startswith(prefix):
        if owner_of[sorted_keys[i]] != prefix:
            return sorted_keys[i]
        i += 1
    return None


def _rules_for(
    spec: PolicySpec,
    prefix: str,
    objects: pd.DataFrame,
    checkpoints: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    finished_after_days: float,
) -> tuple[list[dict[str, Any]], list[tuple[float, dict[str, Any]]]]:
    """(prefix-level rules, [(bytes, per-checkpoint rule)]) for a chosen policy."""
    rules: list[dict[str, Any]] = []
    if spec == DO_NOTHING:
        return rules, []
    v = versions_rule(
        prefix,
        noncurrent_days=spec.noncurrent_expiry_days,
        newer_noncurrent_versions=spec.newer_noncurrent_versions,
        expired_delete_markers=spec.hygiene,
        abort_multipart_days=7 if spec.hygiene else None,
    )
    if v:
        rules.append(v)
    if spec.transition:
        rules.append(transition_rule(prefix, spec.transition, spec.transition_days))
    if spec.glacier_ir_finished_runs:
        for rp in runs.loc[runs["newest_age_days"] >= finished_after_days, "run_prefix"]:
            rules.append(transition_rule(rp, GLACIER_IR, 90, label="finished"))
    ckpt_rules: list[tuple[float, dict[str, Any]]] = []
    if spec.keep_last_k:
        stale = checkpoints[~checkpoints["protected"]]
        cur = objects[objects["is_checkpoint"] & objects["is_latest"] & objects["is_object"]]
        cur_age = cur.groupby("checkpoint_prefix")["age_days"].min()
        ages = cur_age.to_dict()
        for prefix, min_age, nbytes in zip(
            stale["checkpoint_prefix"],
            stale["min_age_days"],
            stale["bytes_current"] + stale["bytes_noncurrent"],
            strict=True,
        ):
            ckpt_rules.append((float(nbytes), checkpoint_expiry_rule(prefix, ages.get(prefix, min_age))))
    return rules, ckpt_rules


def recommend_lifecycle(
    inventory_df: pd.DataFrame,
    ebs: EbsInventory | None = None,
    *,
    as_of: date | datetime,
    prices: StoragePrices = DEFAULT_PRICES,
    keep_last: int | None = 3,
    read_fraction: float = 0.05,
    noncurrent_days_options: Sequence[int] = (7, 30, 90),
    min_noncurrent_days: int = 30,
    newer_noncurrent_versions: int = 0,
    transitions: Sequence[str | None] = (None, INTELLIGENT_TIERING, STANDARD_IA),
    glacier_ir_finished_runs: bool = True,
    finished_after_days: float = 90.0,
    prefix_depth: int = 1,
    checkpoint_patterns: Sequence[str] = DEFAULT_CHECKPOINT_PATTERNS,
    keep_patterns: Sequence[str] = DEFAULT_KEEP_PATTERNS,
    keep_keys: Iterable[str] = (),
    existing_configs: Mapping[str, Mapping[str, Any] | None] | None = None,
    max_rules: int = MAX_RULES,
    horizon_months: int = HORIZON_MONTHS,
    ebs_options: Mapping[str, Any] | None = None,
) -> LifecycleRecommendation:
    """Cost every candidate policy per bucket and top-level prefix; pick the cheapest allowed one.

    Retention constraints: noncurrent versions live at least `min_noncurrent_days` (and the
    newest `newer_noncurrent_versions` of each key are kept); the latest `keep_last` checkpoints of
    every run (None: keep-last-K is not offered) and keys matching `keep_patterns` / in `keep_keys`
    are never expired nor sent to a class that needs a restore. Keys at the bucket root (no
    prefix) are priced but get no rules, so no rule of ours covers the whole bucket.
    `existing_configs` (bucket -> current lifecycle configuration) feeds the diff.
    """
    index = index_checkpoints(
        inventory_df,
        as_of,
        keep_last=keep_last or 0,
        patterns=checkpoint_patterns,
        keep_patterns=keep_patterns,
        keep_keys=keep_keys,
    )
    objects = index.objects
    objects["prefix"] = _top_prefix(objects["key"], prefix_depth)
    objects["class_code"] = class_codes(objects["storage_class"])
    specs = [
        PolicySpec(
            noncurrent_expiry_days=s.noncurrent_expiry_days,
            newer_noncurrent_versions=newer_noncurrent_versions
            if s.noncurrent_expiry_days is not None
            else 0,
            keep_last_k=s.keep_last_k,
            transition=s.transition,
            glacier_ir_finished_runs=s.glacier_ir_finished_runs,
            hygiene=s.hygiene,
        )
        for s in candidate_specs(
            noncurrent_days_options,
            keep_last=keep_last,
            transitions=transitions,
            glacier_ir=glacier_ir_finished_runs,
        )
    ]
    # The hygiene-only candidate costs the same as doing nothing; list it first so ties pick it.
    specs = [s for s in specs if s.name() == "hygiene-only"] + [
        s for s in specs if s.name() != "hygiene-only"
    ]
    sim_kwargs = {"prices": prices, "read_fraction": read_fraction, "horizon_months": horizon_months}

    plans: list[PrefixPlan] = []
    configs: dict[str, dict[str, Any]] = {}
    diffs: dict[str, LifecycleDiff] = {}
    ck_prefix = index.checkpoints["checkpoint_prefix"].fillna("")
    for bucket, bucket_objects in objects.groupby("bucket", sort=True):
        bucket_rules: list[dict[str, Any]] = []
        bucket_ckpt_rules: list[tuple[float, dict[str, Any], PrefixPlan]] = []
        protected_sorted = sorted(bucket_objects.loc[bucket_objects["protected"], "key"].unique())
        owner_of = dict(
            zip(bucket_objects["key"], bucket_objects["checkpoint_prefix"].fillna(""), strict=False)
        )
        keys_sorted = sorted(owner_of)
        for prefix, grp in bucket_objects.groupby("prefix", sort=True):
            in_bucket = index.checkpoints["bucket"] == bucket
            cks = (
                index.checkpoints[in_bucket & ck_prefix.str.startswith(prefix)]
                if prefix
                else index.checkpoints.iloc[0:0]
            )
            runs = index.runs[
                (index.runs["bucket"] == bucket) & index.runs["run_prefix"].str.startswith(prefix)
            ]
            candidates = []
            for s in specs if prefix else [DO_NOTHING]:
                reason = ""
                if s.noncurrent_expiry_days is not None and s.noncurrent_expiry_days < min_noncurrent_days:
                    reason = f"noncurrent versions must be kept {min_noncurrent_days} days"
                cost = simulate(grp, s, finished_after_days=finished_after_days, **sim_kwargs)
                candidates.append(
                    CandidateResult(s.name(keep_last or 0), s, cost, allowed=not reason, reason=reason)
                )
            best = min(
                (c for c in candidates if c.allowed),
                # Equal costs (to a millionth of a cent) go to the simpler policy.
                key=lambda c: (round(c.cost.total, 8), c.spec.complexity),
            )
            objs = grp[grp["is_object"]]
            plan = PrefixPlan(
                bucket=str(bucket),
                prefix=str(prefix),
                n_objects=int(len(objs)),
                n_versions_noncurrent=int((~objs["is_latest"]).sum()),
                n_delete_markers=int(grp["is_delete_marker"].sum()),
                bytes_current=int(objs.loc[objs["is_latest"], "size_bytes"].sum()),
                bytes_noncurrent=int(objs.loc[~objs["is_latest"], "size_bytes"].sum()),
                n_runs=int(len(runs)),
                n_checkpoints=int(len(cks)),
                n_protected_objects=int(grp["protected"].sum()),
                chosen=best.name,
                candidates=candidates,
            )
            if prefix:
                rules, ckpt_rules = _rules_for(
                    best.spec, str(prefix), grp, cks, runs, finished_after_days=finished_after_days
                )
                plan.rules = rules
                bucket_rules += rules
                bucket_ckpt_rules += [(b, r, plan) for b, r in ckpt_rules]
            plans.append(plan)
        # Never let an expiring rule of ours select a protected key (checked by prefix, exactly).
        safe: list[tuple[float, dict[str, Any], PrefixPlan]] = []
        for b, r, plan in bucket_ckpt_rules:
            prefix = r["Filter"]["Prefix"]
            hit = _first_protected_under(prefix, protected_sorted)
            stranger = _first_stranger_under(prefix, keys_sorted, owner_of)
            if hit:
                plan.skipped_rules.append(f"{prefix}: would select protected key {hit}")
            elif stranger:
                plan.skipped_rules.append(
                    f"{prefix}: would also select {stranger}, not part of that checkpoint"
                )
            else:
                safe.append((b, r, plan))
        existing_n = len(((existing_configs or {}).get(bucket) or {}).get("Rules", []))
        room = max(0, max_rules - len(bucket_rules) - existing_n)
        safe.sort(key=lambda t: -t[0])
        for b, _, plan in safe[room:]:
            plan.deferred_checkpoints += 1
            plan.deferred_bytes += int(b)
        bucket_rules += [r for _, r, _ in safe[:room]]
        config = {"Rules": bucket_rules}
        problems = validate_lifecycle(config)
        if problems:
            raise ValueError(f"generated lifecycle configuration for {bucket} is invalid: {problems[:5]}")
        existing = (existing_configs or {}).get(bucket)
        merged, diff = merge_lifecycle(existing, config)
        configs[str(bucket)] = merged
        diffs[str(bucket)] = diff

    ebs_plan = None
    if ebs is not None:
        ebs_plan = plan_ebs(
            ebs,
            as_of,
            prices=prices,
            read_fraction=read_fraction,
            months=horizon_months,
            **dict(ebs_options or {}),
        )
    assumptions = {
        "keep_last": keep_last,
        "read_fraction_per_month": read_fraction,
        "noncurrent_days_options": list(noncurrent_days_options),
        "min_noncurrent_days": min_noncurrent_days,
        "newer_noncurrent_versions": newer_noncurrent_versions,
        "finished_after_days": finished_after_days,
        "prefix_depth": prefix_depth,
        "keep_patterns": list(keep_patterns),
        "checkpoint_patterns": list(checkpoint_patterns),
        "horizon_months": horizon_months,
        "model": "static inventory (no new writes), 30-day months, lifecycle actions 1 day after due",
    }
    return LifecycleRecommendation(
        as_of=str(pd.Timestamp(as_of).date()),
        prefixes=plans,
        ebs=ebs_plan,
        configs=configs,
        diffs=diffs,
        assumptions=assumptions,
        prices=prices,
        horizon_months=horizon_months,
    )


# ---------------------------------------------------------------- savings against the bill


def resource_key(resource_id: str | None) -> str | None:
    """The name a bill and an inventory share for a resource: 'arn:aws:s3:::b' -> 'b',
    'arn:aws:ec2:us-east-1:1:snapshot/snap-1' -> 'snap-1', 'vol-1' -> 'vol-1'.

    The same rule as `sql/marts/billed_resources.sql`.
    """
    if not resource_id:
        return None
    return resource_id.replace(":", "/").rstrip("/").rsplit("/", 1)[-1] or None


ESTIMATE = "estimate from inventory prices: the bill does not name {what}"
CAPPED = "capped at the share it saves of what the bill charged {what}"
WITHIN_BILL = "within what the bill charged {what}"


def _bill_cap(current: float, saving: float, billed: float) -> float:
    """The most an action can save of a bill: the share of its current cost it removes, applied
    to what the bill charged (never more than the bill). The inventory prices the resource as it
    is today; the bill charged it as it was over the month, and the two differ as data grows."""
    if billed <= 0:
        return 0.0
    share = min(max(saving / current, 0.0), 1.0) if current > 0 else 1.0
    return billed * share


@dataclass(frozen=True)
class BilledSaving:
    """One storage action's monthly saving, held against what the bill charged what it touches.

    `priced_saving_usd` is the recommender's figure (inventory sizes at list prices); `saving_usd`
    is what is published: never more than `billed_usd` where the bill names the resources.
    """

    scope: str
    touches: tuple[str, ...]  # bucket names, volume and snapshot ids
    current_usd: float  # a month, priced from the inventory
    priced_saving_usd: float
    billed_usd: float | None  # a month, of everything in `touches` (None: the bill names none of it)
    saving_usd: float
    basis: str

    @property
    def capped(self) -> bool:
        return self.saving_usd < self.priced_saving_usd

    def to_dict(self) -> dict[str, Any]:
        return {
            "touches": list(self.touches),
            "current_monthly_cost_from_inventory": round(self.current_usd, 2),
            "priced_monthly_saving": round(self.priced_saving_usd, 2),
            "billed_monthly_cost": None if self.billed_usd is None else round(self.billed_usd, 2),
            "estimated_monthly_savings_amount": round(self.saving_usd, 2),
            "saving_basis": self.basis,
        }


def prefix_savings(
    rec: LifecycleRecommendation, billed: Mapping[str, float], prefixes: Sequence[PrefixPlan] | None = None
) -> dict[tuple[str, str], BilledSaving]:
    """Each prefix's average monthly saving over the horizon, capped per bucket.

    The bill names buckets, not prefixes: when the savings of a bucket's prefixes add up to more
    than their share of the bucket's bill (the part of the bucket's priced cost they remove,
    applied to what it was billed), each is scaled down by the same factor, so together they are
    that share, never more than the bill.
    """
    plans = list(rec.prefixes if prefixes is None else prefixes)
    by_bucket: dict[str, list[PrefixPlan]] = {}
    for p in plans:
        by_bucket.setdefault(p.bucket, []).append(p)
    out: dict[tuple[str, str], BilledSaving] = {}
    for bucket, group in by_bucket.items():
        priced = {p.prefix: (p.before.total - p.after.total) / rec.horizon_months for p in group}
        total = sum(max(v, 0.0) for v in priced.values())
        current = sum(p.before.total for p in group) / rec.horizon_months
        bill = billed.get(bucket)
        scale = 1.0
        if bill is None:
            basis = ESTIMATE.format(what=f"bucket {bucket}")
        elif total > (cap := _bill_cap(current, total, bill)):
            scale, basis = (
                (cap / total if total > 0 else 0.0),
                CAPPED.format(what=f"bucket {bucket}"),
            )
        else:
            basis = WITHIN_BILL.format(what=f"bucket {bucket}")
        for p in group:
            saving = priced[p.prefix]
            out[(p.bucket, p.prefix)] = BilledSaving(
                scope=f"s3://{p.bucket}/{p.prefix}",
                touches=(bucket,),
                current_usd=p.before.total / rec.horizon_months,
                priced_saving_usd=saving,
                billed_usd=bill,
                saving_usd=saving * scale if saving > 0 else saving,
                basis=basis,
            )
    return out


def ebs_savings(rec: LifecycleRecommendation, billed: Mapping[str, float]) -> list[BilledSaving]:
    """Each EBS action's monthly saving once done: at most the share of its resource's bill it removes."""
    if rec.ebs is None:
        return []
    out = []
    for act in rec.ebs.actions:
        key = resource_key(act.resource_id) or act.resource_id
        saving = act.monthly_before_usd - act.monthly_after_usd
        bill = billed.get(key)
        if bill is None:
            published, basis = saving, ESTIMATE.format(what=act.resource_id)
        elif saving > (cap := _bill_cap(act.monthly_before_usd, saving, bill)):
            published, basis = cap, CAPPED.format(what=act.resource_id)
        else:
            published, basis = saving, WITHIN_BILL.format(what=act.resource_id)
        out.append(
            BilledSaving(
                scope=act.resource_id,
                touches=(key,),
                current_usd=act.monthly_before_usd,
                priced_saving_usd=saving,
                billed_usd=bill,
                saving_usd=published,
                basis=basis,
            )
        )
    return out
