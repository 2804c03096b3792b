"""Checkpoint recognition, grouping by run, latest-K and keep protection, version ages."""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest

from athanor.ingest.checkpoints import annotate_versions, index_checkpoints

AS_OF = date(2026, 12, 1)


def inv(rows: list[tuple]) -> pd.DataFrame:
    """rows: (key, days_old, size, is_latest=True, is_delete_marker=False)."""
    out = []
    for r in rows:
        key, days, size, *rest = r
        latest = rest[0] if rest else True
        marker = rest[1] if len(rest) > 1 else False
        out.append(
            {
                "bucket": "b",
                "key": key,
                "version_id": f"v{len(out)}",
                "is_latest": latest,
                "is_delete_marker": marker,
                "size_bytes": 0 if marker else size,
                "last_modified": pd.Timestamp("2026-12-01T00:00:00Z") - pd.Timedelta(days=days),
                "storage_class": "" if marker else "STANDARD",
                "it_access_tier": "",
                "etag": "",
            }
        )
    return pd.DataFrame(out)


def test_layouts_runs_steps_and_latest_k() -> None:
    rows = [
        (f"t/hf-run/checkpoint-{s}/model.safetensors", 100 - s / 100, 10) for s in (500, 1000, 1500, 2000)
    ]
    rows += [(f"t/hf-run/checkpoint-{s}/config.json", 100 - s / 100, 1) for s in (500, 1000, 1500, 2000)]
    rows += [(f"t/file-run/step_{s}.pt", 50 - s, 7) for s in (1, 2, 3)]
    rows += [("t/pl-run/epoch=0-step=300.ckpt", 9, 5), ("t/pl-run/epoch=1-step=900.ckpt", 8, 5)]
    rows += [(f"t/ds-run/global_step{s}/mp_rank_00_model_states.pt", 30, 3) for s in (10, 20, 30, 40)]
    rows += [("t/hf-run/best/model.safetensors", 1, 10), ("t/hf-run/logs/train.txt", 1, 1)]
    idx = index_checkpoints(inv(rows), AS_OF, keep_last=2)
    runs = idx.runs.set_index("run")
    assert sorted(runs.index) == ["ds-run", "file-run", "hf-run", "pl-run"]
    assert runs.loc["hf-run", "n_steps"] == 4 and runs.loc["hf-run", "protected_steps"] == [1500, 2000]
    assert runs.loc["file-run", "protected_steps"] == [2, 3]
    assert runs.loc["pl-run", "protected_steps"] == [300, 900]
    assert runs.loc["ds-run", "protected_steps"] == [30, 40]
    assert runs.loc["hf-run", "bytes_current"] == 4 * 11
    ck = idx.checkpoints.set_index(["run", "step"])
    assert ck.loc[("hf-run", 500), "checkpoint_prefix"] == "t/hf-run/checkpoint-500/"
    assert ck.loc[("file-run", 1), "checkpoint_prefix"] == "t/file-run/step_1.pt"
    assert ck.loc[("hf-run", 500), "n_objects"] == 2
    protected = {k for _, k in idx.protected_keys}
    assert "t/hf-run/best/model.safetensors" in protected  # keep pattern
    assert "t/hf-run/checkpoint-2000/config.json" in protected
    assert "t/hf-run/checkpoint-500/model.safetensors" not in protected
    assert "t/hf-run/logs/train.txt" not in protected  # not a checkpoint, not kept


def test_deleted_steps_do_not_count_towards_latest_k_and_noncurrent_is_never_protected() -> None:
    rows = [
        ("r/run/step_1.pt", 30, 5),
        ("r/run/step_2.pt", 20, 5),
        ("r/run/step_3.pt", 10, 5, False),  # hand-deleted: a noncurrent version under a marker
        ("r/run/step_3.pt", 2, 0, True, True),
        ("r/run/step_2.pt", 25, 5, False),  # step 2 was written twice
    ]
    idx = index_checkpoints(inv(rows), AS_OF, keep_last=2)
    assert idx.runs.iloc[0]["protected_steps"] == [1, 2]
    prot = idx.objects[idx.objects["protected"]]
    assert sorted(prot["key"]) == ["r/run/step_1.pt", "r/run/step_2.pt"]
    assert prot["is_latest"].all()
    assert not idx.checkpoints.set_index("step").loc[3, "protected"]


def test_keep_keys_and_custom_pattern() -> None:
    rows = [(f"x/exp-7/ckpt-{s:03d}.bin", 10, 1) for s in range(1, 6)]
    idx = index_checkpoints(
        inv(rows),
        AS_OF,
        keep_last=1,
        patterns=[r"(?P<run>[^/]+)/ckpt-(?P<step>\d+)\.bin$"],
        keep_keys={"x/exp-7/ckpt-002.bin"},
    )
    assert sorted(k for _, k in idx.protected_keys) == ["x/exp-7/ckpt-002.bin", "x/exp-7/ckpt-005.bin"]
    with pytest.raises(ValueError, match="named groups"):
        index_checkpoints(inv(rows), AS_OF, patterns=[r"ckpt-(\d+)"])


def test_version_ages_and_noncurrent_rank() -> None:
    rows = [("k", 40, 1, False), ("k", 30, 1, False), ("k", 10, 1, True), ("m", 5, 1)]
    df = annotate_versions(inv(rows), AS_OF).set_index(["key", "version_id"])
    # v0 (40 days old) became noncurrent when v1 was written 30 days ago; v1 when v2 came 10 days ago.
    assert df.loc[("k", "v0"), "noncurrent_days"] == pytest.approx(30)
    assert df.loc[("k", "v1"), "noncurrent_days"] == pytest.approx(10)
    assert pd.isna(df.loc[("k", "v2"), "noncurrent_days"])
    assert df.loc[("k", "v1"), "noncurrent_rank"] == 0 and df.loc[("k", "v0"), "noncurrent_rank"] == 1
    assert df.loc[("m", "v3"), "age_days"] == pytest.approx(5)
