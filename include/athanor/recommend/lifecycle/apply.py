"""Put a lifecycle configuration on a bucket safely: dry run first, a restorable backup always."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from athanor.recommend.lifecycle.rules import (
    ID_PREFIX,
    LifecycleConflictError,
    LifecycleDiff,
    merge_lifecycle,
)

NONE_MARKER = "none"  # what the backup file holds when the bucket had no configuration


@dataclass
class ApplyResult:
    bucket: str
    dry_run: bool
    applied: bool
    merged_config: dict[str, Any]
    diff: LifecycleDiff
    previous_path: Path | None = None

    @property
    def diff_text(self) -> str:
        return self.diff.text(self.bucket)

    def to_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "dry_run": self.dry_run,
            "applied": self.applied,
            "previous_path": str(self.previous_path) if self.previous_path else None,
            "diff": self.diff.to_dict(),
            "diff_text": self.diff_text,
            "configuration": self.merged_config,
        }


def get_lifecycle(s3_client: Any, bucket: str) -> dict[str, Any] | None:
    """The bucket's lifecycle configuration as boto3 would put it back, or None if it has none."""
    try:
        resp = s3_client.get_bucket_lifecycle_configuration(Bucket=bucket)
    except s3_client.exceptions.ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "NoSuchLifecycleConfiguration":
            return None
        raise
    out: dict[str, Any] = {"Rules": resp.get("Rules", [])}
    if resp.get("TransitionDefaultMinimumObjectSize"):
        out["TransitionDefaultMinimumObjectSize"] = resp["TransitionDefaultMinimumObjectSize"]
    return out


def _put(s3_client: Any, bucket: str, config: dict[str, Any]) -> None:
    if not config.get("Rules"):
        # S3 refuses an empty rule list: no rules means no configuration.
        s3_client.delete_bucket_lifecycle(Bucket=bucket)
        return
    kwargs: dict[str, Any] = {"Bucket": bucket, "LifecycleConfiguration": {"Rules": config["Rules"]}}
    if config.get("TransitionDefaultMinimumObjectSize"):
        kwargs["TransitionDefaultMinimumObjectSize"] = config["TransitionDefaultMinimumObjectSize"]
    s3_client.put_bucket_lifecycle_configuration(**kwargs)


def apply_lifecycle(
    s3_client: Any,
    bucket: str,
    new_config: dict[str, Any],
    artifacts_dir: str | Path,
    dry_run: bool = True,
    *,
    id_prefix: str = ID_PREFIX,
    allow_conflicts: bool = False,
) -> ApplyResult:
    """Merge our rules into the bucket's configuration and (unless dry_run) put it.

    `new_config` holds our rules ({"Rules": [...]}; rules of the owner in it are ignored, the
    bucket's live ones are kept). Before a put, the live configuration (or "none") is written to
    `artifacts_dir/lifecycle-previous-<bucket>.json` for `restore_lifecycle`. Conflicts with the
    owner's rules are reported in a dry run and refused when applying unless allow_conflicts.
    """
    ours = {"Rules": [r for r in new_config.get("Rules", []) if str(r.get("ID", "")).startswith(id_prefix)]}
    previous = get_lifecycle(s3_client, bucket)
    merged, diff = merge_lifecycle(previous, ours, id_prefix=id_prefix)
    if previous and previous.get("TransitionDefaultMinimumObjectSize"):
        merged["TransitionDefaultMinimumObjectSize"] = previous["TransitionDefaultMinimumObjectSize"]
    result = ApplyResult(bucket=bucket, dry_run=dry_run, applied=False, merged_config=merged, diff=diff)
    if dry_run:
        return result
    if diff.conflicts and not allow_conflicts:
        raise LifecycleConflictError(f"{bucket}: " + "; ".join(diff.conflicts))
    artifacts = Path(artifacts_dir)
    artifacts.mkdir(parents=True, exist_ok=True)
    backup = artifacts / f"lifecycle-previous-{bucket}.json"
    tmp = backup.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(previous if previous is not None else NONE_MARKER, indent=2, default=str))
    tmp.replace(backup)  # the backup exists whole before the bucket changes
    _put(s3_client, bucket, merged)
    result.applied = True
    result.previous_path = backup
    return result


def restore_lifecycle(s3_client: Any, bucket: str, previous_json_path: str | Path) -> dict[str, Any] | None:
    """Put back the configuration saved by apply_lifecycle (delete it if there was none)."""
    previous = json.loads(Path(previous_json_path).read_text())
    if previous == NONE_MARKER or previous is None:
        try:
            s3_client.delete_bucket_lifecycle(Bucket=bucket)
        except s3_client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "NoSuchLifecycleConfiguration":
                raise
        return None
    _put(s3_client, bucket, previous)
    return previous
