"""S3 lifecycle rules: build them in boto3's shape, evaluate them, merge with a bucket's own, diff.

Rules are plain dicts exactly as `put_bucket_lifecycle_configuration(Bucket=...,
LifecycleConfiguration={"Rules": [...]})` takes them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from athanor.recommend.lifecycle.pricing import (
    GLACIER_IR,
    INTELLIGENT_TIERING,
    KIB,
    RETRIEVAL_DELAY_CLASSES,
    STANDARD_IA,
)

ID_PREFIX = "athanor-"
MAX_RULES = 1000  # S3's limit per lifecycle configuration
DEFAULT_MIN_TRANSITION_BYTES = 128 * KIB  # S3 default since 2024: no transitions below 128 KB
STORAGE_ACTIONS = ("Expiration", "Transitions", "NoncurrentVersionExpiration", "NoncurrentVersionTransitions")


class LifecycleConflictError(ValueError):
    """Our rules overlap a bucket owner's rules on the same prefix."""


# --- building ------------------------------------------------------------------------------


def rule_id(*parts: str) -> str:
    """A readable, stable rule ID: athanor-<slug>-<8 hex of the parts> (S3 allows 255 chars)."""
    raw = "/".join(parts)
    slug = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")[:180] or "root"
    return f"{ID_PREFIX}{slug}-{hashlib.sha1(raw.encode()).hexdigest()[:8]}"


def versions_rule(
    prefix: str,
    *,
    noncurrent_days: int | None,
    newer_noncurrent_versions: int = 0,
    expired_delete_markers: bool = True,
    abort_multipart_days: int | None = 7,
) -> dict[str, Any] | None:
    """Prefix-wide hygiene: noncurrent-version expiry, expired delete markers, stale uploads."""
    rule: dict[str, Any] = {
        "ID": rule_id(prefix, "versions"),
        "Filter": {"Prefix": prefix},
        "Status": "Enabled",
    }
    if noncurrent_days is not None:
        nve: dict[str, Any] = {"NoncurrentDays": int(noncurrent_days)}
        if newer_noncurrent_versions > 0:
            nve["NewerNoncurrentVersions"] = int(newer_noncurrent_versions)
        rule["NoncurrentVersionExpiration"] = nve
    if expired_delete_markers:
        rule["Expiration"] = {"ExpiredObjectDeleteMarker": True}
    if abort_multipart_days is not None:
        rule["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(abort_multipart_days)}
    return rule if len(rule) > 3 else None


def transition_rule(prefix: str, storage_class: str, days: int, *, label: str = "tier") -> dict[str, Any]:
    """Move current and noncurrent versions under prefix to a class after `days`.

    No size filter: S3 by default skips objects under 128 KB, which is what the cost model assumes.
    """
    return {
        "ID": rule_id(prefix, label, storage_class.lower()),
        "Filter": {"Prefix": prefix},
        "Status": "Enabled",
        "Transitions": [{"Days": int(days), "StorageClass": storage_class}],
        "NoncurrentVersionTransitions": [{"NoncurrentDays": int(days), "StorageClass": storage_class}],
    }


def checkpoint_expiry_rule(checkpoint_prefix: str, min_age_days: float) -> dict[str, Any]:
    """Expire one stale checkpoint (keep-last-K), current and noncurrent versions.

    `Days` is the age of the newest object under the prefix (floored, at least 1): everything there
    now is already due, while a checkpoint written again at the same path would have to grow that
    old before this rule could touch it (and the nightly run replaces athanor rules long before).
    """
    return {
        "ID": rule_id(checkpoint_prefix, "expire"),
        "Filter": {"Prefix": checkpoint_prefix},
        "Status": "Enabled",
        "Expiration": {"Days": max(1, math.floor(min_age_days))},
        "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
    }


# --- evaluating ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectState:
    """One object version as a lifecycle rule sees it at some moment."""

    key: str
    size_bytes: int = 0
    age_days: float = 0.0  # since the version was written
    is_latest: bool = True
    is_delete_marker: bool = False
    noncurrent_days: float | None = None  # since it became noncurrent
    newer_noncurrent_versions: int = 0  # how many noncurrent versions of the key are newer
    tags: Mapping[str, str] = field(default_factory=dict)
    only_marker_left: bool = False  # a current delete marker with no noncurrent versions behind it


def _filter_parts(rule: Mapping[str, Any]) -> tuple[str, dict[str, str], int | None, int | None]:
    """(prefix, tags, size_greater_than, size_less_than) of a rule, legacy top-level Prefix included."""
    if "Filter" not in rule:
        return rule.get("Prefix", ""), {}, None, None
    f = rule["Filter"] or {}
    node = f.get("And", f)
    tags = {t["Key"]: t["Value"] for t in node.get("Tags", [])}
    if "Tag" in f:
        tags[f["Tag"]["Key"]] = f["Tag"]["Value"]
    return node.get("Prefix", ""), tags, node.get("ObjectSizeGreaterThan"), node.get("ObjectSizeLessThan")


def rule_prefix(rule: Mapping[str, Any]) -> str:
    return _filter_parts(rule)[0]


def rule_matches(rule: Mapping[str, Any], obj: ObjectState) -> bool:
    """Does the rule's filter select this object (Status Enabled, prefix, tags, size bounds)?"""
    if rule.get("Status") != "Enabled":
        return False
    prefix, tags, gt, lt = _filter_parts(rule)
    if not obj.key.startswith(prefix):
        return False
    if any(obj.tags.get(k) != v for k, v in tags.items()):
        return False
    if gt is not None and not obj.size_bytes > gt:
        return False
    return not (lt is not None and not obj.size_bytes < lt)


def rule_actions(rule: Mapping[str, Any], obj: ObjectState) -> set[str]:
    """What the rule does to the object at its current age: expire, transition:<CLASS>,
    expire_noncurrent, noncurrent_transition:<CLASS>, remove_delete_marker."""
    if not rule_matches(rule, obj):
        return set()
    out: set[str] = set()
    _, _, gt, lt = _filter_parts(rule)
    # S3 will not transition objects under 128 KB unless the rule itself sets a size filter.
    may_transition = obj.size_bytes >= DEFAULT_MIN_TRANSITION_BYTES or gt is not None or lt is not None
    exp = rule.get("Expiration", {})
    if obj.is_delete_marker:
        if obj.is_latest and obj.only_marker_left and exp.get("ExpiredObjectDeleteMarker"):
            out.add("remove_delete_marker")
        return out
    if obj.is_latest:
        if "Days" in exp and obj.age_days >= exp["Days"]:
            out.add("expire")
        if "Date" in exp:
            out.add("expire")  # a date rule eventually matches every selected object
        for t in rule.get("Transitions", []):
            if may_transition and ("Date" in t or obj.age_days >= t.get("Days", 0)):
                out.add(f"transition:{t['StorageClass']}")
        return out
    nc_days = obj.noncurrent_days if obj.noncurrent_days is not None else 0.0
    nve = rule.get("NoncurrentVersionExpiration")
    if nve and nc_days >= nve.get("NoncurrentDays", 0):
        if obj.newer_noncurrent_versions >= nve.get("NewerNoncurrentVersions", 0):
            out.add("expire_noncurrent")
    for t in rule.get("NoncurrentVersionTransitions", []):
        if may_transition and nc_days >= t.get("NoncurrentDays", 0):
            if obj.newer_noncurrent_versions >= t.get("NewerNoncurrentVersions", 0):
                out.add(f"noncurrent_transition:{t['StorageClass']}")
    return out


def evaluate(rules: Iterable[Mapping[str, Any]], obj: ObjectState) -> set[str]:
    """Union of every enabled rule's actions on the object."""
    out: set[str] = set()
    for r in rules:
        out |= rule_actions(r, obj)
    return out


def harms_protected(rules: Sequence[Mapping[str, Any]], key: str, size_bytes: int) -> list[str]:
    """Rule IDs that could ever expire a protected (current) object, or send it to a class that
    needs a restore before it can be read. Checked at an age past every rule's Days."""
    worst_age = 10**6
    obj = ObjectState(key=key, size_bytes=size_bytes, age_days=worst_age)
    bad = []
    for r in rules:
        acts = rule_actions(r, obj)
        if "expire" in acts or any(a.split(":", 1)[-1] in RETRIEVAL_DELAY_CLASSES for a in acts if ":" in a):
            bad.append(str(r.get("ID")))
    return bad


# --- validating ----------------------------------------------------------------------------


def validate_lifecycle(config: Mapping[str, Any]) -> list[str]:
    """S3's own checks on a configuration that we can make offline; empty list when fine."""
    problems = []
    rules = config.get("Rules", [])
    if len(rules) > MAX_RULES:
        problems.append(f"{len(rules)} rules: S3 allows at most {MAX_RULES}")
    ids = [r.get("ID", "") for r in rules]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"duplicate rule ID {dup}")
    for r in rules:
        rid = r.get("ID", "")
        if len(rid) > 255:
            problems.append(f"{rid[:40]}...: ID longer than 255 characters")
        if r.get("Status") not in ("Enabled", "Disabled"):
            problems.append(f"{rid}: Status must be Enabled or Disabled")
        if not any(a in r for a in (*STORAGE_ACTIONS, "AbortIncompleteMultipartUpload")):
            problems.append(f"{rid}: no action")
        _, tags, _, _ = _filter_parts(r)
        exp = r.get("Expiration", {})
        if exp.get("ExpiredObjectDeleteMarker") and ("Days" in exp or "Date" in exp):
            problems.append(f"{rid}: ExpiredObjectDeleteMarker cannot be combined with Days or Date")
        if tags and (exp.get("ExpiredObjectDeleteMarker") or "AbortIncompleteMultipartUpload" in r):
            problems.append(
                f"{rid}: tag filters do not allow ExpiredObjectDeleteMarker or AbortIncompleteMultipartUpload"
            )
        for kind, days_key in (("Transitions", "Days"), ("NoncurrentVersionTransitions", "NoncurrentDays")):
            for t in r.get(kind, []):
                if t["StorageClass"] in (STANDARD_IA, "ONEZONE_IA") and t.get(days_key, 30) < 30:
                    problems.append(f"{rid}: {kind} to {t['StorageClass']} needs at least 30 days")
    return problems


# --- merging and diffing -------------------------------------------------------------------


def _canon(rule: Mapping[str, Any]) -> str:
    return json.dumps(rule, sort_keys=True, default=str)


def describe_rule(rule: Mapping[str, Any]) -> str:
    """One line a person can read: what the rule selects and does."""
    prefix, tags, gt, lt = _filter_parts(rule)
    sel = f"prefix '{prefix}'" if prefix else "whole bucket"
    if tags:
        sel += " tags " + ",".join(f"{k}={v}" for k, v in tags.items())
    if gt is not None:
        sel += f" size>{gt}"
    if lt is not None:
        sel += f" size<{lt}"
    acts = []
    exp = rule.get("Expiration", {})
    if "Days" in exp:
        acts.append(f"expire current after {exp['Days']} d")
    if "Date" in exp:
        acts.append(f"expire current on {exp['Date']}")
    if exp.get("ExpiredObjectDeleteMarker"):
        acts.append("remove expired delete markers")
    for t in rule.get("Transitions", []):
        acts.append(f"to {t['StorageClass']} after {t.get('Days', t.get('Date'))} d")
    nve = rule.get("NoncurrentVersionExpiration")
    if nve:
        keep = (
            f" (keep newest {nve['NewerNoncurrentVersions']})" if nve.get("NewerNoncurrentVersions") else ""
        )
        acts.append(f"expire noncurrent after {nve['NoncurrentDays']} d{keep}")
    for t in rule.get("NoncurrentVersionTransitions", []):
        acts.append(f"noncurrent to {t['StorageClass']} after {t['NoncurrentDays']} d")
    if "AbortIncompleteMultipartUpload" in rule:
        acts.append(f"abort uploads after {rule['AbortIncompleteMultipartUpload']['DaysAfterInitiation']} d")
    status = "" if rule.get("Status") == "Enabled" else f" [{rule.get('Status')}]"
    return f"{sel}: {'; '.join(acts) or 'no action'}{status}"


@dataclass
class LifecycleDiff:
    """What a PUT of the merged configuration changes."""

    added: list[dict[str, Any]] = field(default_factory=list)
    changed: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (old, new)
    unchanged: list[dict[str, Any]] = field(default_factory=list)  # ours, same as before
    kept: list[dict[str, Any]] = field(default_factory=list)  # the bucket owner's, untouched
    removed: list[dict[str, Any]] = field(default_factory=list)  # ours, no longer recommended
    conflicts: list[str] = field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def text(self, bucket: str = "") -> str:
        head = f"lifecycle diff{' for ' + bucket if bucket else ''}: {len(self.added)} added, {len(self.changed)} changed, "
        head += (
            f"{len(self.removed)} removed, {len(self.unchanged)} unchanged, {len(self.kept)} kept (not ours)"
        )
        lines = [head]
        lines += [f"  + {r['ID']}: {describe_rule(r)}" for r in self.added]
        for old, new in self.changed:
            lines.append(f"  ~ {new['ID']}: {describe_rule(old)}  ->  {describe_rule(new)}")
        lines += [f"  - {r['ID']}: {describe_rule(r)}" for r in self.removed]
        lines += [f"  = {r.get('ID', '(no ID)')}: {describe_rule(r)}" for r in self.kept]
        lines += [f"  ! conflict: {c}" for c in self.conflicts]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": [r["ID"] for r in self.added],
            "changed": [n["ID"] for _, n in self.changed],
            "unchanged": [r["ID"] for r in self.unchanged],
            "kept": [r.get("ID", "") for r in self.kept],
            "removed": [r["ID"] for r in self.removed],
            "conflicts": list(self.conflicts),
        }


def _overlap(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def merge_lifecycle(
    existing: Mapping[str, Any] | None,
    ours: Mapping[str, Any],
    *,
    id_prefix: str = ID_PREFIX,
    on_conflict: str = "flag",
) -> tuple[dict[str, Any], LifecycleDiff]:
    """Merge our rules into a bucket's configuration.

    A PUT replaces the whole configuration, so: the owner's rules (IDs not starting with id_prefix)
    are kept as they are; our previous rules are replaced by the new set. An owner's enabled rule
    that acts on object storage (expire/transition) on a prefix overlapping one of ours is a
    conflict: listed in the diff (on_conflict="flag") or raised (on_conflict="raise").
    """
    old_rules = list((existing or {}).get("Rules", []))
    new_rules = [copy.deepcopy(r) for r in ours.get("Rules", [])]
    diff = LifecycleDiff()
    user = [r for r in old_rules if not str(r.get("ID", "")).startswith(id_prefix)]
    old_ours = {r["ID"]: r for r in old_rules if str(r.get("ID", "")).startswith(id_prefix)}
    diff.kept = [copy.deepcopy(r) for r in user]
    for r in new_rules:
        if not str(r.get("ID", "")).startswith(id_prefix):
            raise ValueError(f"rule {r.get('ID')!r} does not carry the prefix {id_prefix!r}")
        prev = old_ours.pop(r["ID"], None)
        if prev is None:
            diff.added.append(r)
        elif _canon(prev) != _canon(r):
            diff.changed.append((prev, r))
        else:
            diff.unchanged.append(r)
    diff.removed = list(old_ours.values())
    for u in user:
        if u.get("Status") != "Enabled" or not any(a in u for a in STORAGE_ACTIONS):
            continue
        for r in new_rules:
            if any(a in r for a in STORAGE_ACTIONS) and _overlap(rule_prefix(u), rule_prefix(r)):
                diff.conflicts.append(
                    f"owner rule {u.get('ID', '(no ID)')} ({describe_rule(u)}) overlaps {r['ID']} ({describe_rule(r)})"
                )
    if diff.conflicts and on_conflict == "raise":
        raise LifecycleConflictError("; ".join(diff.conflicts))
    merged = {"Rules": [copy.deepcopy(r) for r in user] + new_rules}
    return merged, diff


# Re-exported names used by callers that build rules for transitions.
__all__ = [
    "GLACIER_IR",
    "ID_PREFIX",
    "INTELLIGENT_TIERING",
    "LifecycleConflictError",
    "LifecycleDiff",
    "ObjectState",
    "checkpoint_expiry_rule",
    "describe_rule",
    "evaluate",
    "harms_protected",
    "merge_lifecycle",
    "rule_actions",
    "rule_id",
    "rule_matches",
    "transition_rule",
    "validate_lifecycle",
    "versions_rule",
]
