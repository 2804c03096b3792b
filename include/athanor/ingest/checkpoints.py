"""Recognise checkpoint objects in an inventory, group them by training run, mark what to keep."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np
import pandas as pd

# Each pattern is searched in the key; named groups `run` and `step` are required. The checkpoint's
# prefix is the key up to the end of the match, so directory layouts should end the pattern with
# "/" (a rule on "run/checkpoint-50/" can never touch "run/checkpoint-500/").
DEFAULT_CHECKPOINT_PATTERNS: tuple[str, ...] = (
    r"(?:^|/)(?P<run>[^/]+)/checkpoint-(?P<step>\d+)/",  # Hugging Face Trainer
    r"(?:^|/)(?P<run>[^/]+)/global_step(?P<step>\d+)/",  # DeepSpeed
    r"(?:^|/)(?P<run>[^/]+)/step_(?P<step>\d+)\.(?:pt|pth|ckpt|bin|safetensors)$",  # one file per step
    r"(?:^|/)(?P<run>[^/]+)/(?:epoch=\d+-)?step=(?P<step>\d+)\.ckpt$",  # PyTorch Lightning
)
# Keys that are kept whatever their age: hand-picked best checkpoints and released models.
DEFAULT_KEEP_PATTERNS: tuple[str, ...] = (r"(?:^|/)best/", r"(?:^|/)released/")


def as_timestamp(as_of: date | datetime | pd.Timestamp) -> pd.Timestamp:
    """A date means the end of that day's inventory run: midnight UTC of the day."""
    ts = pd.Timestamp(as_of)
    return ts.tz_convert("UTC") if ts.tzinfo else ts.tz_localize("UTC")


def annotate_versions(inventory: pd.DataFrame, as_of: date | datetime) -> pd.DataFrame:
    """Add ages and version order.

    Columns added: age_days (since last write), noncurrent_days (since a newer version or delete
    marker replaced it; NaN for current versions), noncurrent_rank (0 = newest noncurrent version
    of its key), is_object (a stored version, not a delete marker).
    """
    now = as_of_ts = as_timestamp(as_of)
    df = inventory.sort_values(["bucket", "key", "last_modified"], kind="stable").reset_index(drop=True)
    df["age_days"] = (now - df["last_modified"]).dt.total_seconds().to_numpy() / 86400.0
    same_key_next = (df["bucket"].shift(-1) == df["bucket"]) & (df["key"].shift(-1) == df["key"])
    same_key_next = same_key_next.fillna(False).astype(bool)
    next_written = df["last_modified"].shift(-1)
    became_noncurrent = next_written.where(same_key_next & ~df["is_latest"])
    df["noncurrent_days"] = (as_of_ts - became_noncurrent).dt.total_seconds().to_numpy() / 86400.0
    # Rank noncurrent versions newest first within each key (for NewerNoncurrentVersions).
    nc = ~df["is_latest"] & ~df["is_delete_marker"]
    rank = df[nc].groupby(["bucket", "key"], sort=False).cumcount(ascending=False)
    df["noncurrent_rank"] = -1
    df.loc[rank.index, "noncurrent_rank"] = rank.to_numpy()
    df["is_object"] = ~df["is_delete_marker"]
    return df


def _match_keys(keys: Sequence[str], patterns: Sequence[str]) -> pd.DataFrame:
    compiled = [re.compile(p) for p in patterns]
    for p in compiled:
        if not {"run", "step"} <= set(p.groupindex):
            raise ValueError(f"checkpoint pattern {p.pattern!r} needs named groups 'run' and 'step'")
    run, step, run_prefix, ckpt_prefix = [], [], [], []
    for k in keys:
        for p in compiled:
            m = p.search(k)
            if m:
                run.append(m["run"])
                step.append(int(m["step"]))
                run_prefix.append(k[: m.end("run")] + "/")
                ckpt_prefix.append(k[: m.end()])
                break
        else:
            run.append(None)
            step.append(-1)
            run_prefix.append(None)
            ckpt_prefix.append(None)
    return pd.DataFrame(
        {
            "key": list(keys),
            "run": run,
            "step": step,
            "run_prefix": run_prefix,
            "checkpoint_prefix": ckpt_prefix,
        }
    )


@dataclass(frozen=True)
class CheckpointIndex:
    """Checkpoint objects grouped by run, with the protected set."""

    objects: (
        pd.DataFrame
    )  # the annotated inventory + run, step, run_prefix, checkpoint_prefix, keep, protected
    checkpoints: pd.DataFrame  # one row per (bucket, run_prefix, step)
    runs: pd.DataFrame  # one row per (bucket, run_prefix)
    keep_last: int

    @property
    def protected_keys(self) -> set[tuple[str, str]]:
        p = self.objects[self.objects["protected"]]
        return set(zip(p["bucket"], p["key"], strict=True))


def index_checkpoints(
    inventory: pd.DataFrame,
    as_of: date | datetime,
    *,
    keep_last: int = 3,
    patterns: Sequence[str] = DEFAULT_CHECKPOINT_PATTERNS,
    keep_patterns: Sequence[str] = DEFAULT_KEEP_PATTERNS,
    keep_keys: Iterable[str] = (),
) -> CheckpointIndex:
    """Group checkpoint objects by run and step; protect the latest `keep_last` steps of every run.

    A step counts towards the latest K only while it still has a current (not deleted) object.
    Protected: current versions of those steps, and current versions of keys matching
    `keep_patterns` or listed in `keep_keys` (e.g. keys whose object tags say keep).
    Noncurrent versions are never protected: their expiry is exactly what version rules are for.
    """
    df = annotate_versions(inventory, as_of) if "age_days" not in inventory else inventory.copy()
    unique_keys = df["key"].drop_duplicates()
    matched = _match_keys(unique_keys.tolist(), patterns)
    df = df.merge(matched, on="key", how="left", validate="many_to_one")
    df["is_checkpoint"] = df["run"].notna()

    keep_re = re.compile("|".join(f"(?:{p})" for p in keep_patterns)) if keep_patterns else None
    keep_set = set(keep_keys)
    keep_unique = {k: bool((keep_re and keep_re.search(k)) or k in keep_set) for k in unique_keys}
    df["keep"] = df["key"].map(keep_unique).astype(bool)

    current = df["is_latest"] & df["is_object"]
    ck = df[df["is_checkpoint"]]
    group = ["bucket", "run_prefix", "run", "step", "checkpoint_prefix"]
    checkpoints = (
        ck.assign(
            bytes_current=np.where(ck["is_latest"] & ck["is_object"], ck["size_bytes"], 0),
            bytes_noncurrent=np.where(~ck["is_latest"] & ck["is_object"], ck["size_bytes"], 0),
            n_current=(ck["is_latest"] & ck["is_object"]).astype(int),
        )
        .groupby(group, dropna=False, sort=True)
        .agg(
            n_objects=("key", "size"),
            n_current=("n_current", "sum"),
            bytes_current=("bytes_current", "sum"),
            bytes_noncurrent=("bytes_noncurrent", "sum"),
            last_modified=("last_modified", "max"),
            min_age_days=("age_days", "min"),
        )
        .reset_index()
    )
    live = checkpoints["n_current"] > 0
    checkpoints["rank_from_latest"] = -1
    ranks = (
        checkpoints[live].groupby(["bucket", "run_prefix"])["step"].rank(method="first", ascending=False) - 1
    )
    checkpoints.loc[ranks.index, "rank_from_latest"] = ranks.astype(int).to_numpy()
    checkpoints["protected"] = live & (checkpoints["rank_from_latest"] < keep_last)

    prot_ckpt = checkpoints.loc[checkpoints["protected"], ["bucket", "checkpoint_prefix"]].assign(_p=True)
    df = df.merge(prot_ckpt, on=["bucket", "checkpoint_prefix"], how="left")
    df["ckpt_protected"] = df["_p"].fillna(False).astype(bool)
    df["protected"] = current & (df["ckpt_protected"] | df["keep"])
    df = df.drop(columns="_p")

    runs = (
        checkpoints.groupby(["bucket", "run_prefix", "run"], sort=True)
        .agg(
            n_steps=("step", "size"),
            n_live_steps=("n_current", lambda s: int((s > 0).sum())),
            first_step=("step", "min"),
            last_step=("step", "max"),
            bytes_current=("bytes_current", "sum"),
            bytes_noncurrent=("bytes_noncurrent", "sum"),
            last_write=("last_modified", "max"),
            newest_age_days=("min_age_days", "min"),
        )
        .reset_index()
    )
    prot_steps = (
        checkpoints[checkpoints["protected"]]
        .groupby(["bucket", "run_prefix"])["step"]
        .apply(lambda s: sorted(int(x) for x in s))
        .rename("protected_steps")
    )
    runs = runs.merge(prot_steps, on=["bucket", "run_prefix"], how="left")
    runs["protected_steps"] = runs["protected_steps"].apply(lambda v: v if isinstance(v, list) else [])
    newest = runs[["bucket", "run_prefix", "newest_age_days"]].rename(
        columns={"newest_age_days": "run_newest_age_days"}
    )
    df = df.merge(newest, on=["bucket", "run_prefix"], how="left")
    return CheckpointIndex(objects=df, checkpoints=checkpoints, runs=runs, keep_last=keep_last)
