"""Property: generated rules never expire (nor send to a restore-only class) a protected object,
expire nothing but stale checkpoints, and do expire every stale checkpoint they cover.

Checked by evaluating every generated rule against every object of random inventories in random
key layouts (the small evaluator in athanor.recommend.lifecycle.rules).
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from athanor.ingest.checkpoints import index_checkpoints
from athanor.recommend.lifecycle import recommend_lifecycle
from athanor.recommend.lifecycle.pricing import INTELLIGENT_TIERING
from athanor.recommend.lifecycle.rules import ObjectState, evaluate, harms_protected

AS_OF = date(2026, 12, 1)
NOW = pd.Timestamp("2026-12-01T00:00:00Z")
LAYOUTS = {
    "hf": lambda run, s: [
        f"{run}/checkpoint-{s}/model.safetensors",
        f"{run}/checkpoint-{s}/trainer_state.json",
    ],
    "file": lambda run, s: [f"{run}/step_{s}.pt"],
    "ds": lambda run, s: [f"{run}/global_step{s}/mp_rank_00_model_states.pt"],
    "pl": lambda run, s: [f"{run}/epoch=0-step={s}.ckpt"],
}

checkpoint = st.tuples(
    st.sampled_from([1, 5, 10, 50, 100, 500, 1000, 1500, 5000]),  # steps that prefix each other
    st.integers(0, 400),  # age of the write, days
    st.integers(0, 2),  # older versions under it
    st.booleans(),  # deleted by hand (delete marker on top)
)
run = st.tuples(
    st.sampled_from(["t1", "t2", "t3"]),
    st.sampled_from(sorted(LAYOUTS)),
    st.lists(checkpoint, min_size=1, max_size=6, unique_by=lambda c: c[0]),
    st.booleans(),  # has a best/ copy
    st.booleans(),  # has a stray "<file>.bak" next to a checkpoint file
)


def build(runs: list[tuple]) -> pd.DataFrame:
    rows: list[dict] = []

    def add(key: str, age: float, size: int, latest: bool = True, marker: bool = False) -> None:
        rows.append(
            {
                "bucket": "b",
                "key": key,
                "version_id": f"v{len(rows)}",
                "is_latest": latest,
                "is_delete_marker": marker,
                "size_bytes": 0 if marker else size,
                "last_modified": NOW - pd.Timedelta(days=age),
                "storage_class": "" if marker else "STANDARD",
                "it_access_tier": "",
                "etag": "",
            }
        )

    for i, (team, layout, ckpts, best, stray) in enumerate(runs):
        name = f"{team}/{team}-m-{i:04d}"
        for step, age, n_old, deleted in ckpts:
            for key in LAYOUTS[layout](name, step):
                for j in range(n_old):
                    add(key, age + 10 * (j + 1), 300_000, latest=False)
                add(key, age, 2_000_000, latest=not deleted)
                if deleted:
                    add(key, max(age - 1, 0), 0, latest=True, marker=True)
                if stray and layout in ("file", "pl"):
                    add(key + ".bak", age, 1_000)
        if best:
            add(f"{name}/best/model.safetensors", 1, 2_000_000)
    return pd.DataFrame(rows)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=st.lists(run, min_size=1, max_size=5), keep_last=st.integers(1, 3))
def test_rules_never_touch_protected_and_only_expire_stale(runs: list[tuple], keep_last: int) -> None:
    inventory = build(runs)
    rec = recommend_lifecycle(
        inventory,
        as_of=AS_OF,
        keep_last=keep_last,
        noncurrent_days_options=(30,),
        transitions=(None, INTELLIGENT_TIERING),
        glacier_ir_finished_runs=False,  # Glacier IR is instant: irrelevant to the invariant, halves the work
        read_fraction=0.0,
    )
    rules = rec.configs["b"]["Rules"]
    idx = index_checkpoints(inventory, AS_OF, keep_last=keep_last).objects
    stale_ckpts = set(idx.loc[idx["is_checkpoint"] & ~idx["ckpt_protected"], "checkpoint_prefix"])
    covered = {r["Filter"]["Prefix"] for r in rules if "Days" in r.get("Expiration", {})}
    skipped = {s.split(":")[0] for p in rec.prefixes for s in p.skipped_rules}
    for o in idx.itertuples():
        if o.is_delete_marker:
            continue
        if o.protected:
            assert harms_protected(rules, o.key, o.size_bytes) == [], o.key
        if not o.is_latest:
            continue
        forever = evaluate(rules, ObjectState(o.key, o.size_bytes, age_days=10**6))
        if "expire" in forever:
            assert o.checkpoint_prefix in stale_ckpts and not o.keep, o.key
            assert not o.protected
        # S3 expiration counts whole days from 1: an object written today is due tomorrow.
        now = evaluate(rules, ObjectState(o.key, o.size_bytes, age_days=max(o.age_days, 1.0)))
        if o.is_checkpoint and o.checkpoint_prefix in stale_ckpts and not o.keep:
            # Every stale checkpoint either has its rule, due by tomorrow, or was skipped for a reason.
            assert "expire" in now or o.checkpoint_prefix in skipped, o.key
            assert o.checkpoint_prefix in covered | skipped
