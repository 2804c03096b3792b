"""Month-by-month cost of candidate lifecycle policies over a static inventory.

The model prices what is stored now over the next `horizon_months` 30-day months; new writes are
not modelled (they cost the same under every policy until the policy's rules reach them).
Lifecycle actions happen `LAG_DAYS` after they become due (S3 queues them at midnight UTC).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd

from athanor.ingest.checkpoints import as_timestamp
from athanor.ingest.inventory import EbsInventory
from athanor.recommend.lifecycle.pricing import (
    DAYS_PER_MONTH,
    DEFAULT_PRICES,
    GIB,
    GLACIER_IR,
    INTELLIGENT_TIERING,
    STANDARD,
    STANDARD_IA,
    StoragePrices,
    it_gb_month,
)

LAG_DAYS = 1.0
HORIZON_MONTHS = 12
NONE_DAY = np.inf


@dataclass(frozen=True)
class PolicySpec:
    """One candidate policy for a bucket prefix."""

    noncurrent_expiry_days: int | None = None
    newer_noncurrent_versions: int = 0
    keep_last_k: bool = False
    transition: str | None = None  # INTELLIGENT_TIERING or STANDARD_IA
    glacier_ir_finished_runs: bool = False
    hygiene: bool = (
        True  # expired delete markers + abort incomplete multipart uploads (no storage cost change)
    )

    @property
    def transition_days(self) -> int:
        return 30 if self.transition == STANDARD_IA else 0  # S3 needs 30 days in Standard before IA

    def name(self, keep_last: int = 3) -> str:
        parts = []
        if self.keep_last_k:
            parts.append(f"keep-last-{keep_last}")
        if self.noncurrent_expiry_days is not None:
            parts.append(f"noncurrent-{self.noncurrent_expiry_days}d")
        if self.transition == INTELLIGENT_TIERING:
            parts.append("intelligent-tiering")
        elif self.transition == STANDARD_IA:
            parts.append("standard-ia-30d")
        if self.glacier_ir_finished_runs:
            parts.append("glacier-ir-90d-finished-runs")
        if not parts:
            return "hygiene-only" if self.hygiene else "do-nothing"
        return "+".join(parts)

    @property
    def complexity(self) -> int:
        return (
            int(self.keep_last_k)
            + int(self.noncurrent_expiry_days is not None)
            + int(self.transition is not None)
            + int(self.glacier_ir_finished_runs)
        )


DO_NOTHING = PolicySpec(hygiene=False)


def candidate_specs(
    noncurrent_days_options: Sequence[int] = (7, 30, 90),
    *,
    keep_last: int | None = 3,
    transitions: Sequence[str | None] = (None, INTELLIGENT_TIERING, STANDARD_IA),
    glacier_ir: bool = True,
) -> list[PolicySpec]:
    """Every single measure and every combination of them (plus the do-nothing baseline)."""
    specs = [DO_NOTHING]
    for keep, nc, tr, gir in itertools.product(
        (False, True) if keep_last else (False,),
        (None, *noncurrent_days_options),
        transitions,
        (False, True) if glacier_ir else (False,),
    ):
        specs.append(
            PolicySpec(
                noncurrent_expiry_days=nc, keep_last_k=keep, transition=tr, glacier_ir_finished_runs=gir
            )
        )
    return specs


@dataclass
class CostTable:
    """Monthly cost of one policy on one set of objects, by component (USD)."""

    storage: np.ndarray
    monitoring: np.ndarray
    retrieval: np.ndarray
    requests: np.ndarray
    early_delete: np.ndarray  # minimum-duration charges on early delete or transition

    @property
    def monthly(self) -> np.ndarray:
        return self.storage + self.monitoring + self.retrieval + self.requests + self.early_delete

    @property
    def total(self) -> float:
        return float(self.monthly.sum())

    def to_dict(self) -> dict[str, Any]:
        return {
            "monthly_usd": [round(float(x), 2) for x in self.monthly],
            "total_usd": round(self.total, 2),
            "components_usd": {
                k: round(float(getattr(self, k).sum()), 2)
                for k in ("storage", "monitoring", "retrieval", "requests", "early_delete")
            },
        }

    @staticmethod
    def zeros(months: int) -> CostTable:
        return CostTable(*(np.zeros(months) for _ in range(5)))

    def __add__(self, other: CostTable) -> CostTable:
        return CostTable(
            self.storage + other.storage,
            self.monitoring + other.monitoring,
            self.retrieval + other.retrieval,
            self.requests + other.requests,
            self.early_delete + other.early_delete,
        )


_CLASSES = [
    STANDARD,
    STANDARD_IA,
    INTELLIGENT_TIERING,
    GLACIER_IR,
    "GLACIER",
    "DEEP_ARCHIVE",
    "ONEZONE_IA",
    "OTHER",
]
_CODE = {c: i for i, c in enumerate(_CLASSES)}


_CODE_MAP = {**_CODE, "REDUCED_REDUNDANCY": _CODE[STANDARD]}


def class_codes(storage_class: pd.Series) -> np.ndarray:
    """Storage classes as the small integers `simulate` indexes its price tables with."""
    return storage_class.astype(object).map(_CODE_MAP).fillna(_CODE["OTHER"]).to_numpy(int)


def _month_of(day: np.ndarray, months: int) -> np.ndarray:
    """Month index of a day (relative to as_of); -1 outside the horizon."""
    m = np.floor(np.where(np.isfinite(day), day, -1) / DAYS_PER_MONTH).astype(int)
    return np.where((day >= 0) & (m < months) & np.isfinite(day), m, -1)


def _add_at_month(target: np.ndarray, day: np.ndarray, amount: np.ndarray) -> None:
    m = _month_of(day, len(target))
    ok = m >= 0
    np.add.at(target, m[ok], amount[ok])


def simulate(
    objects: pd.DataFrame,
    spec: PolicySpec,
    *,
    prices: StoragePrices = DEFAULT_PRICES,
    read_fraction: float = 0.05,
    horizon_months: int = HORIZON_MONTHS,
    finished_after_days: float = 90.0,
) -> CostTable:
    """Price a policy on objects from `index_checkpoints(...).objects` (delete markers are free)."""
    obj = objects[objects["is_object"]]
    months = horizon_months
    out = CostTable.zeros(months)
    if obj.empty:
        return out
    size = obj["size_bytes"].to_numpy(float)
    gib = size / GIB
    age = obj["age_days"].to_numpy(float)
    nc_days = obj["noncurrent_days"].to_numpy(float)  # NaN for current versions
    current = obj["is_latest"].to_numpy(bool)
    cls0 = obj["class_code"].to_numpy(int) if "class_code" in obj else class_codes(obj["storage_class"])
    n = len(obj)
    small = size < prices.min_billable_object_bytes
    # Transitions count from creation for current versions, from becoming noncurrent otherwise.
    clock = np.where(current, age, np.nan_to_num(nc_days, nan=0.0))

    # --- when each version is deleted
    delete_day = np.full(n, NONE_DAY)
    if spec.noncurrent_expiry_days is not None:
        eligible = ~current & (obj["noncurrent_rank"].to_numpy(int) >= spec.newer_noncurrent_versions)
        due = np.maximum(spec.noncurrent_expiry_days - np.nan_to_num(nc_days, nan=0.0), 0.0) + LAG_DAYS
        delete_day = np.where(eligible, np.minimum(delete_day, due), delete_day)
    if spec.keep_last_k:
        stale = (
            (obj["is_checkpoint"].to_numpy(bool))
            & ~obj["ckpt_protected"].to_numpy(bool)
            & ~obj["keep"].to_numpy(bool)
        )
        # Current version: a delete marker at the first run, its data goes one noncurrent day later.
        due = np.where(current, 2 * LAG_DAYS, LAG_DAYS)
        delete_day = np.where(stale, np.minimum(delete_day, due), delete_day)

    # --- up to two transitions: c0 -> c1 at t1 -> c2 at t2
    t1 = np.full(n, NONE_DAY)
    c1 = cls0.copy()
    if spec.transition is not None:
        movable = ~small & np.isin(cls0, [_CODE[STANDARD]])
        due = np.maximum(spec.transition_days - clock, 0.0) + LAG_DAYS
        t1 = np.where(movable, due, t1)
        c1 = np.where(movable, _CODE[spec.transition], c1)
    t2 = np.full(n, NONE_DAY)
    c2 = c1.copy()
    if spec.glacier_ir_finished_runs:
        finished = obj["run_newest_age_days"].to_numpy(float) >= finished_after_days  # NaN (no run) -> False
        can = (
            ~small & finished & np.isin(c1, [_CODE[STANDARD], _CODE[STANDARD_IA], _CODE[INTELLIGENT_TIERING]])
        )
        due = np.maximum(90.0 - clock, 0.0) + LAG_DAYS
        # When both are due together S3 picks the cheaper class: skip the first hop.
        direct = can & (due <= t1)
        t1 = np.where(direct, due, t1)
        c1 = np.where(direct, _CODE[GLACIER_IR], c1)
        later = can & ~direct
        t2 = np.where(later, due, t2)
        c2 = np.where(later, _CODE[GLACIER_IR], c1)
        c2 = np.where(direct, c1, c2)

    # --- segments [start, end) in days relative to as_of
    end = delete_day
    segments = [
        (np.full(n, 0.0), np.minimum(t1, end), cls0, -age),
        (np.minimum(t1, end), np.minimum(t2, end), c1, np.minimum(t1, end)),
        (np.minimum(t2, end), end, c2, np.minimum(t2, end)),
    ]
    # Already in Intelligent-Tiering / IA: assume it entered the class when written.
    it_rates = np.array([it_gb_month(k, read_fraction, prices) for k in range(months + 13)])
    for start, stop, cls, entry in segments:
        live = stop > start
        if not live.any():
            continue
        billable = np.where(
            np.isin(cls, [_CODE[STANDARD_IA], _CODE["ONEZONE_IA"], _CODE[GLACIER_IR]]),
            np.maximum(size, prices.min_billable_object_bytes) / GIB,
            gib,
        )
        flat = np.array(
            [prices.storage_gb_month(c) if c != "OTHER" else prices.s3_standard_gb_month for c in _CLASSES]
        )
        retr = np.array([prices.retrieval_gb(c) for c in _CLASSES])
        is_it = cls == _CODE[INTELLIGENT_TIERING]
        monitored = is_it & ~small
        for m in range(months):
            lo, hi = m * DAYS_PER_MONTH, (m + 1) * DAYS_PER_MONTH
            frac = np.clip(np.minimum(stop, hi) - np.maximum(start, lo), 0.0, None) / DAYS_PER_MONTH
            frac = np.where(live, frac, 0.0)
            if not frac.any():
                continue
            rate = flat[cls]
            if is_it.any():
                months_in = np.floor(
                    np.maximum(lo + DAYS_PER_MONTH / 2 - entry, 0.0) / DAYS_PER_MONTH
                ).astype(int)
                it_rate = it_rates[np.minimum(months_in, len(it_rates) - 1)]
                # Objects under 128 KB are never monitored and stay in the frequent tier.
                rate = np.where(monitored, it_rate, np.where(is_it, prices.it_frequent_gb_month, rate))
            out.storage[m] += float(np.sum(frac * billable * rate))
            out.monitoring[m] += (
                float(np.sum(frac[monitored])) * prices.it_monitoring_per_1000_objects_month / 1000
            )
            out.retrieval[m] += float(np.sum(frac * gib * retr[cls])) * read_fraction
        # Minimum storage duration: leaving the class (transition or delete) early is charged the rest.
        min_days = np.array([prices.min_days(c) for c in _CLASSES])[cls]
        left = np.isfinite(stop) & live
        with np.errstate(invalid="ignore"):  # inf - inf on segments that never end
            short = np.where(left, np.maximum(min_days - (stop - entry), 0.0), 0.0)
        charge = short / DAYS_PER_MONTH * billable * flat[cls]
        _add_at_month(out.early_delete, np.where(short > 0, stop, -1.0), charge)

    # --- transition requests, counted per object at the month it moves
    fee = np.array([prices.transition_per_1000(c) / 1000 for c in _CLASSES])
    for t, cls in ((t1, c1), (t2, c2)):
        moves = np.isfinite(t) & (t < end)
        _add_at_month(out.requests, np.where(moves, t, -1.0), np.where(moves, fee[cls], 0.0))
    return out


# --- EBS -----------------------------------------------------------------------------------

CHECKPOINT_TAG_VALUES = ("checkpoint", "checkpoints", "ckpt")


def _is_keep(tags: dict[str, str]) -> bool:
    return any(
        k.lower() in ("athanor-keep", "keep", "retain") and str(v).lower() in ("true", "yes", "1")
        for k, v in tags.items()
    )


def _is_checkpoint_volume(row: pd.Series) -> bool:
    tags = {k.lower(): str(v).lower() for k, v in row["tags"].items()}
    if tags.get("purpose") in CHECKPOINT_TAG_VALUES or tags.get("role") in CHECKPOINT_TAG_VALUES:
        return True
    return any(w in row["name"].lower() for w in CHECKPOINT_TAG_VALUES)


@dataclass
class EbsAction:
    kind: str  # delete-volume | snapshot-then-delete | delete-snapshot | move-to-s3
    resource_id: str
    size_gib: float
    monthly_before_usd: float
    monthly_after_usd: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "resource_id": self.resource_id,
            "size_gib": self.size_gib,
            "monthly_before_usd": round(self.monthly_before_usd, 2),
            "monthly_after_usd": round(self.monthly_after_usd, 2),
            "reason": self.reason,
        }


@dataclass
class EbsPlan:
    actions: list[EbsAction]
    before: CostTable
    after: CostTable
    assumptions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "actions": [a.to_dict() for a in self.actions],
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "assumptions": self.assumptions,
        }


def s3_it_cost(
    stored_gib: float,
    n_objects: int,
    *,
    read_fraction: float,
    prices: StoragePrices,
    months: int = HORIZON_MONTHS,
) -> CostTable:
    """Data uploaded to S3 Intelligent-Tiering at day 0 (objects assumed >= 128 KB)."""
    t = CostTable.zeros(months)
    for m in range(months):
        t.storage[m] = stored_gib * it_gb_month(m, read_fraction, prices)
        t.monitoring[m] = n_objects * prices.it_monitoring_per_1000_objects_month / 1000
    t.requests[0] = n_objects * prices.put_per_1000 / 1000
    return t


def plan_ebs(
    ebs: EbsInventory,
    as_of: date | datetime,
    *,
    prices: StoragePrices = DEFAULT_PRICES,
    unattached_after_days: float = 30.0,
    snapshot_after_days: float = 90.0,
    snapshot_before_delete: bool = True,
    move_checkpoint_volumes: bool = True,
    compression_ratio: float = 1.0,
    used_fraction: float = 1.0,
    s3_object_gib: float = 10.0,
    read_fraction: float = 0.05,
    months: int = HORIZON_MONTHS,
) -> EbsPlan:
    """Cost EBS as it is and after the clean-ups that pay.

    - unattached (`available`) volumes older than `unattached_after_days` (age from CreateTime: the
      API does not say when a volume was detached): delete, or snapshot then delete;
    - snapshots older than `snapshot_after_days`, except the newest one of each volume: delete;
    - in-use checkpoint volumes (tag Purpose/Role=checkpoints or 'ckpt'/'checkpoint' in the Name):
      move the data (provisioned size x used_fraction x compression_ratio) to S3
      Intelligent-Tiering when that is cheaper over the horizon.
    Snapshots are priced at their volume size: an upper bound, as snapshots are incremental.
    Anything tagged athanor-keep/keep/retain=true is left alone.
    """
    now = as_timestamp(as_of)
    before = CostTable.zeros(months)
    after = CostTable.zeros(months)
    actions: list[EbsAction] = []
    for _, v in ebs.volumes.iterrows():
        monthly = v["size_gib"] * prices.ebs_volume_gb_month(v["volume_type"])
        before.storage += monthly
        age_days = (now - v["create_time"]).total_seconds() / 86400
        keep = _is_keep(v["tags"])
        if not keep and v["state"] == "available" and age_days >= unattached_after_days:
            snap = v["size_gib"] * prices.ebs_snapshot_gb_month if snapshot_before_delete else 0.0
            kind = "snapshot-then-delete" if snapshot_before_delete else "delete-volume"
            actions.append(
                EbsAction(
                    kind, v["volume_id"], v["size_gib"], monthly, snap, f"unattached, {age_days:.0f} days old"
                )
            )
            after.storage += snap
            continue
        if not keep and move_checkpoint_volumes and v["state"] == "in-use" and _is_checkpoint_volume(v):
            stored = v["size_gib"] * used_fraction * compression_ratio
            n_obj = max(1, int(np.ceil(stored / s3_object_gib)))
            s3 = s3_it_cost(stored, n_obj, read_fraction=read_fraction, prices=prices, months=months)
            if s3.total < monthly * months:
                actions.append(
                    EbsAction(
                        "move-to-s3",
                        v["volume_id"],
                        v["size_gib"],
                        monthly,
                        float(s3.monthly[-1]),
                        f"checkpoint volume: {stored:.0f} GiB to S3 Intelligent-Tiering",
                    )
                )
                after = after + s3
                continue
        after.storage += monthly
    snaps = ebs.snapshots
    newest = (
        snaps.sort_values("start_time").groupby("volume_id")["snapshot_id"].last()
        if not snaps.empty
        else pd.Series(dtype=str)
    )
    live_volumes = set(ebs.volumes["volume_id"])
    for _, s in snaps.iterrows():
        monthly = s["volume_size_gib"] * prices.ebs_snapshot_gb_month
        before.storage += monthly
        age_days = (now - s["start_time"]).total_seconds() / 86400
        last_of_live = s["volume_id"] in live_volumes and newest.get(s["volume_id"]) == s["snapshot_id"]
        if not _is_keep(s["tags"]) and age_days >= snapshot_after_days and not last_of_live:
            actions.append(
                EbsAction(
                    "delete-snapshot",
                    s["snapshot_id"],
                    s["volume_size_gib"],
                    monthly,
                    0.0,
                    f"{age_days:.0f} days old",
                )
            )
            continue
        after.storage += monthly
    assumptions = {
        "unattached_after_days": unattached_after_days,
        "snapshot_after_days": snapshot_after_days,
        "snapshot_before_delete": snapshot_before_delete,
        "compression_ratio": compression_ratio,
        "used_fraction": used_fraction,
        "s3_object_gib": s3_object_gib,
    }
    return EbsPlan(actions=actions, before=before, after=after, assumptions=assumptions)
