"""recommend_lifecycle on the demo bucket: the summary the lead wires into the CLI and report."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from athanor.demo.storage import generate_ebs, generate_inventory
from athanor.recommend.lifecycle import read_ebs, read_inventories, recommend_lifecycle
from athanor.recommend.lifecycle.rules import harms_protected, validate_lifecycle, versions_rule

AS_OF = date(2026, 12, 1)
BUCKET = "athanor-demo-checkpoints"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    root: Path = tmp_path_factory.mktemp("demo")
    generate_inventory(root / "inventory", AS_OF, seed=7)
    vols, snaps = generate_ebs(root / "ebs", AS_OF, seed=7)
    inventory = read_inventories([root / "inventory"])
    owner_rule = {
        "ID": "owner-logs",
        "Status": "Enabled",
        "Filter": {"Prefix": "logs/"},
        "Expiration": {"Days": 14},
    }
    old_ours = versions_rule("nlp/", noncurrent_days=90)
    rec = recommend_lifecycle(
        inventory,
        read_ebs(vols, snaps),
        as_of=AS_OF,
        keep_last=3,
        existing_configs={BUCKET: {"Rules": [owner_rule, old_ours]}},
    )
    return inventory, rec


@pytest.mark.slow
def test_summary_numbers_are_consistent(demo) -> None:
    _, rec = demo
    d = rec.to_dict()
    json.dumps(d)  # the report and the CLI write it as JSON
    s = d["summary"]
    assert s["cost_12m_before_usd"] == pytest.approx(sum(d["monthly_before_usd"]), abs=0.1)
    assert s["cost_12m_after_usd"] == pytest.approx(sum(d["monthly_after_usd"]), abs=0.1)
    assert s["savings_year_usd"] == pytest.approx(
        s["cost_12m_before_usd"] - s["cost_12m_after_usd"], abs=0.02
    )
    assert s["savings_month_usd"] == pytest.approx(s["savings_year_usd"] / 12, abs=0.01)
    assert 0 < s["cost_12m_after_usd"] < s["cost_12m_before_usd"]
    prefixes = {p["prefix"]: p for p in d["prefixes"]}
    assert set(prefixes) == {"nlp/", "recsys/", "speech/", "vision/"}
    for p in prefixes.values():
        chosen = p["candidates"][p["policy"]]
        assert chosen["allowed"]
        # The chosen policy is the cheapest allowed candidate.
        assert chosen["total_usd"] == min(c["total_usd"] for c in p["candidates"].values() if c["allowed"])
        assert p["candidates"]["do-nothing"]["total_usd"] == p["cost_12m_before_usd"]
        assert len(chosen["monthly_usd"]) == 12
        assert not p["candidates"]["noncurrent-7d"]["allowed"]  # default retention is 30 days


@pytest.mark.slow
def test_configuration_is_valid_merged_and_never_touches_protected(demo) -> None:
    inventory, rec = demo
    config = rec.configs[BUCKET]
    assert validate_lifecycle(config) == []
    ids = [r["ID"] for r in config["Rules"]]
    assert ids[0] == "owner-logs"  # the owner's rule survives the merge
    assert all(i.startswith("athanor-") for i in ids[1:])
    diff = rec.diffs[BUCKET]
    assert [r["ID"] for r in diff.kept] == ["owner-logs"]
    assert len(diff.changed) == 1 and diff.changed[0][1]["NoncurrentVersionExpiration"] == {
        "NoncurrentDays": 30
    }
    # Evaluate every rule against every protected object (latest 3 per run, best/, released/).
    from athanor.ingest.checkpoints import index_checkpoints

    idx = index_checkpoints(inventory, AS_OF, keep_last=3).objects
    protected = idx[idx["protected"]]
    assert protected["key"].str.contains("/best/").any()
    ours = config["Rules"][1:]
    for key, size in zip(protected["key"], protected["size_bytes"], strict=True):
        assert harms_protected(ours, key, size) == [], key


def test_table_mentions_policies_months_and_ebs(demo) -> None:
    _, rec = demo
    table = rec.format_table()
    assert "athanor-demo-checkpoints/nlp/" in table and "keep-last-3" in table
    assert "month " in table and "before " in table and "after " in table
    assert "EBS actions:" in table and "snapshot-then-delete" in table
    assert "lifecycle diff for athanor-demo-checkpoints" in table
