"""Lifecycle rules: the evaluator, merge with the owner's rules, diff, validation, apply/restore."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from athanor.recommend.lifecycle.apply import apply_lifecycle, get_lifecycle, restore_lifecycle
from athanor.recommend.lifecycle.rules import (
    LifecycleConflictError,
    ObjectState,
    checkpoint_expiry_rule,
    evaluate,
    harms_protected,
    merge_lifecycle,
    rule_matches,
    transition_rule,
    validate_lifecycle,
    versions_rule,
)

MB = 1024 * 1024


def test_filters_prefix_tag_and_size() -> None:
    rule = {
        "ID": "r",
        "Status": "Enabled",
        "Filter": {
            "And": {"Prefix": "a/", "Tags": [{"Key": "tier", "Value": "cold"}], "ObjectSizeGreaterThan": 100}
        },
        "Expiration": {"Days": 5},
    }
    hit = ObjectState("a/x", size_bytes=101, tags={"tier": "cold"})
    assert rule_matches(rule, hit)
    assert not rule_matches(rule, ObjectState("b/x", size_bytes=101, tags={"tier": "cold"}))
    assert not rule_matches(rule, ObjectState("a/x", size_bytes=100, tags={"tier": "cold"}))
    assert not rule_matches(rule, ObjectState("a/x", size_bytes=101))
    assert not rule_matches({**rule, "Status": "Disabled"}, hit)
    assert rule_matches({"ID": "legacy", "Status": "Enabled", "Prefix": "a/"}, hit)
    assert rule_matches(
        {"ID": "tag", "Status": "Enabled", "Filter": {"Tag": {"Key": "tier", "Value": "cold"}}}, hit
    )


def test_actions_by_age_version_and_size() -> None:
    rules = [
        versions_rule("p/", noncurrent_days=30, newer_noncurrent_versions=1),
        transition_rule("p/", "STANDARD_IA", 30),
        checkpoint_expiry_rule("p/run/checkpoint-5/", min_age_days=12.7),
    ]
    assert rules[2]["Expiration"] == {"Days": 12}
    big = 10 * MB
    assert evaluate(rules, ObjectState("p/x", big, age_days=29)) == set()
    assert evaluate(rules, ObjectState("p/x", big, age_days=30)) == {"transition:STANDARD_IA"}
    # S3 does not transition objects under 128 KB unless the rule has a size filter.
    assert evaluate(rules, ObjectState("p/x", 1000, age_days=300)) == set()
    assert evaluate(rules, ObjectState("p/run/checkpoint-5/m.bin", big, age_days=12)) == {"expire"}
    assert evaluate(rules, ObjectState("p/run/checkpoint-50/m.bin", big, age_days=12)) == set()
    old = ObjectState(
        "p/x", big, age_days=90, is_latest=False, noncurrent_days=31, newer_noncurrent_versions=1
    )
    assert evaluate(rules, old) == {"expire_noncurrent", "noncurrent_transition:STANDARD_IA"}
    newest_nc = ObjectState(
        "p/x", big, age_days=90, is_latest=False, noncurrent_days=31, newer_noncurrent_versions=0
    )
    assert evaluate(rules, newest_nc) == {"noncurrent_transition:STANDARD_IA"}
    marker = ObjectState("p/x", is_delete_marker=True, only_marker_left=True)
    assert evaluate(rules, marker) == {"remove_delete_marker"}


def test_harms_protected_flags_expiry_and_restore_classes_only() -> None:
    rules = [
        transition_rule("p/", "GLACIER_IR", 90),
        {
            "ID": "owner-da",
            "Status": "Enabled",
            "Filter": {"Prefix": "p/archive/"},
            "Transitions": [{"Days": 365, "StorageClass": "DEEP_ARCHIVE"}],
        },
        checkpoint_expiry_rule("p/run/step_1.pt", 3),
    ]
    assert harms_protected(rules, "p/run/step_2.pt", MB) == []  # Glacier IR reads instantly
    assert harms_protected(rules, "p/archive/best.bin", MB) == ["owner-da"]
    # A file-layout prefix also selects longer keys that start with it.
    assert harms_protected(rules, "p/run/step_1.pt.json", MB) == [rules[2]["ID"]]


def test_merge_keeps_owner_rules_replaces_ours_and_flags_overlaps() -> None:
    owner_mpu = {
        "ID": "abort-uploads",
        "Status": "Enabled",
        "Filter": {"Prefix": ""},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 3},
    }
    owner_logs = {
        "ID": "logs-expire",
        "Status": "Enabled",
        "Filter": {"Prefix": "logs/"},
        "Expiration": {"Days": 30},
    }
    ours_old = versions_rule("nlp/", noncurrent_days=90)
    ours_gone = transition_rule("vision/", "STANDARD_IA", 30)
    existing = {"Rules": [owner_mpu, owner_logs, ours_old, ours_gone]}
    ours_new = versions_rule("nlp/", noncurrent_days=30)
    added = transition_rule("nlp/", "INTELLIGENT_TIERING", 0)
    merged, diff = merge_lifecycle(existing, {"Rules": [ours_new, added]})
    assert [r["ID"] for r in merged["Rules"]] == ["abort-uploads", "logs-expire", ours_new["ID"], added["ID"]]
    assert [r["ID"] for r in diff.added] == [added["ID"]]
    assert [
        (o["NoncurrentVersionExpiration"], n["NoncurrentVersionExpiration"]) for o, n in diff.changed
    ] == [({"NoncurrentDays": 90}, {"NoncurrentDays": 30})]
    assert [r["ID"] for r in diff.removed] == [ours_gone["ID"]]
    assert [r["ID"] for r in diff.kept] == ["abort-uploads", "logs-expire"]
    assert diff.conflicts == []  # the owner's rules act elsewhere or only on uploads
    text = diff.text("b")
    assert "+ " + added["ID"] in text and "- " + ours_gone["ID"] in text and "= logs-expire" in text
    changed_line = next(line for line in text.splitlines() if line.startswith("  ~ "))
    assert (
        changed_line.index("expire noncurrent after 90 d")
        < changed_line.index("->")
        < changed_line.index("expire noncurrent after 30 d")
    )

    owner_overlap = {
        "ID": "owner-nlp",
        "Status": "Enabled",
        "Filter": {"Prefix": "nlp/old/"},
        "Transitions": [{"Days": 10, "StorageClass": "GLACIER"}],
    }
    _, diff = merge_lifecycle({"Rules": [owner_overlap]}, {"Rules": [ours_new]})
    assert len(diff.conflicts) == 1 and "owner-nlp" in diff.conflicts[0]
    with pytest.raises(LifecycleConflictError, match="owner-nlp"):
        merge_lifecycle({"Rules": [owner_overlap]}, {"Rules": [ours_new]}, on_conflict="raise")
    with pytest.raises(ValueError, match="prefix"):
        merge_lifecycle(None, {"Rules": [owner_logs]})


def test_validate_catches_what_s3_would_refuse() -> None:
    good = {"Rules": [versions_rule("a/", noncurrent_days=30), transition_rule("a/", "STANDARD_IA", 30)]}
    assert validate_lifecycle(good) == []
    bad = {
        "Rules": [
            transition_rule("a/", "STANDARD_IA", 10),
            {
                "ID": "x",
                "Status": "Enabled",
                "Filter": {"Prefix": ""},
                "Expiration": {"Days": 3, "ExpiredObjectDeleteMarker": True},
            },
            {"ID": "x", "Status": "On", "Filter": {"Prefix": ""}},
        ]
    }
    problems = " | ".join(validate_lifecycle(bad))
    for expected in (
        "needs at least 30 days",
        "ExpiredObjectDeleteMarker cannot",
        "duplicate rule ID x",
        "Status must",
        "no action",
    ):
        assert expected in problems


@mock_aws
def test_apply_is_dry_run_by_default_then_backs_up_and_restores(tmp_path: Path) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="ckpt")
    owner = {
        "ID": "owner-logs",
        "Status": "Enabled",
        "Filter": {"Prefix": "logs/"},
        "Expiration": {"Days": 30},
    }
    s3.put_bucket_lifecycle_configuration(Bucket="ckpt", LifecycleConfiguration={"Rules": [owner]})
    ours = {
        "Rules": [
            versions_rule("nlp/", noncurrent_days=30),
            transition_rule("nlp/", "INTELLIGENT_TIERING", 0),
        ]
    }

    dry = apply_lifecycle(s3, "ckpt", ours, tmp_path)
    assert dry.dry_run and not dry.applied and len(dry.diff.added) == 2
    assert [r["ID"] for r in get_lifecycle(s3, "ckpt")["Rules"]] == ["owner-logs"]
    assert not list(tmp_path.iterdir())

    done = apply_lifecycle(s3, "ckpt", ours, tmp_path, dry_run=False)
    assert done.applied and done.previous_path == tmp_path / "lifecycle-previous-ckpt.json"
    saved = json.loads(done.previous_path.read_text())
    assert [r["ID"] for r in saved["Rules"]] == ["owner-logs"]
    live = get_lifecycle(s3, "ckpt")["Rules"]
    assert [r["ID"] for r in live] == ["owner-logs", *[r["ID"] for r in ours["Rules"]]]
    # Intelligent-Tiering round trip (RGW cannot run it; moto stores it faithfully).
    tier = next(r for r in live if "Transitions" in r)
    assert tier["Transitions"] == [{"Days": 0, "StorageClass": "INTELLIGENT_TIERING"}]
    assert tier["NoncurrentVersionTransitions"] == [
        {"NoncurrentDays": 0, "StorageClass": "INTELLIGENT_TIERING"}
    ]

    again = apply_lifecycle(s3, "ckpt", ours, tmp_path)
    assert not again.diff.has_changes and len(again.diff.unchanged) == 2

    restore_lifecycle(s3, "ckpt", done.previous_path)
    assert get_lifecycle(s3, "ckpt")["Rules"] == [owner]


@mock_aws
def test_restore_to_no_configuration_and_conflict_refused(tmp_path: Path) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="fresh")
    ours = {"Rules": [versions_rule("a/", noncurrent_days=30)]}
    done = apply_lifecycle(s3, "fresh", ours, tmp_path, dry_run=False)
    assert done.previous_path.read_text().strip() == '"none"'
    assert get_lifecycle(s3, "fresh") is not None
    restore_lifecycle(s3, "fresh", done.previous_path)
    assert get_lifecycle(s3, "fresh") is None

    owner = {"ID": "owner-a", "Status": "Enabled", "Filter": {"Prefix": "a/b/"}, "Expiration": {"Days": 1}}
    s3.put_bucket_lifecycle_configuration(Bucket="fresh", LifecycleConfiguration={"Rules": [owner]})
    assert apply_lifecycle(s3, "fresh", ours, tmp_path / "x").diff.conflicts
    with pytest.raises(LifecycleConflictError):
        apply_lifecycle(s3, "fresh", ours, tmp_path / "x", dry_run=False)
    assert get_lifecycle(s3, "fresh")["Rules"] == [owner]
