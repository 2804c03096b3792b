"""Quarantine: move a rejected delivery aside with its reasons, and release it back.

Layout: `<quarantine_dir>/<run_id>/<delivery>/` holds the delivery's files,
`validation.json` (the reason: the validation result or an error line) and
`manifest.json` (where the files came from, so `release` can put them back).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from athanor.quality.runner import ValidationOutcome, outcome_document

MANIFEST, VALIDATION = "manifest.json", "validation.json"


@dataclass(frozen=True)
class QuarantinedDelivery:
    path: Path
    run_id: str
    delivery: str
    files: tuple[str, ...]
    reason: str
    quarantined_at: str


def _safe_name(text: str) -> str:
    """A single, harmless path component (names come from data: no '..', no separators)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "delivery"
    return name[:100]


def _unique(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def quarantine(files: list[Path], reason: ValidationOutcome | str, quarantine_dir: Path, run_id: str) -> Path:
    """Move a delivery's files into `quarantine/<run_id>/<delivery>/` with the reason beside them."""
    if not files:
        raise ValueError("nothing to quarantine: no files")
    files = [Path(f) for f in files]
    # A delivery is one file, or the files of one folder (multi-part exports).
    delivery = files[0].name if len(files) == 1 else files[0].parent.name
    target = _unique(Path(quarantine_dir) / _safe_name(run_id) / _safe_name(delivery))
    target.mkdir(parents=True)
    moved = []
    for file in files:
        name = _safe_name(file.name)
        shutil.move(str(file), str(target / name))
        moved.append({"name": name, "original_name": file.name, "origin": str(file.parent.resolve())})
    if isinstance(reason, ValidationOutcome):
        document = outcome_document(reason)
        message = reason.message()
    else:
        document = {"message": reason, "ok": False}
        message = reason
    (target / VALIDATION).write_text(json.dumps(document, indent=1, default=str))
    manifest = {
        "run_id": run_id,
        "delivery": delivery,
        "reason": message,
        "quarantined_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": moved,
    }
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return target


class ReleaseRefused(ValueError):
    """A release that would touch anything but one quarantined delivery; `str()` is the reason."""


def entry_path(path: Path | str, quarantine_dir: Path) -> Path:
    """The resolved `<quarantine_dir>/<run>/<delivery>` folder that `path` names, or refuse.

    Symlinks are resolved first, so a link inside the quarantine that points elsewhere, or
    `..` parts, cannot make release move or delete anything outside it.
    """
    root = Path(quarantine_dir).resolve()
    resolved = Path(path).resolve()
    if not resolved.is_relative_to(root):
        raise ReleaseRefused(f"{str(path)!r} is outside the quarantine {root}: nothing released")
    if len(resolved.relative_to(root).parts) != 2 or not resolved.is_dir():
        raise ReleaseRefused(
            f"{str(path)!r} is not a quarantined delivery (<quarantine>/<run>/<delivery>, "
            "see `athanor quarantine list`): nothing released"
        )
    if not (resolved / MANIFEST).is_file():
        raise ReleaseRefused(f"{resolved} has no {MANIFEST}: nothing released")
    return resolved


def _file_name(name: object, entry: Path) -> str:
    """A name from the manifest, used only as one plain path component."""
    # A backslash is an ordinary character here (on POSIX); Path() splits on what the OS splits on.
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or "/" in name
        or "\0" in name
        or Path(name).name != name
    ):
        raise ReleaseRefused(f"{entry}: the manifest names a file {name!r} that is not a plain file name")
    return name


def release(
    quarantine_path: Path | str,
    quarantine_dir: Path,
    *,
    bucket_mirror: Path | None = None,
    s3_client: Callable[[], Any] | None = None,
) -> list[str]:
    """Put a quarantined delivery's files back where they came from, then drop the entry.

    Files from a local landing folder go back into that folder; files mirrored from a bucket
    (under `bucket_mirror`, `<mirror>/<bucket>/<key>`) go back to their object through
    `s3_client()`. Nothing is overwritten: an existing file refuses the release, and an
    existing object is accepted only when it holds the same bytes (its ETag is their MD5).
    Everything is checked before anything moves. Returns the files' new locations.
    """
    entry = entry_path(quarantine_path, quarantine_dir)
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        files = list(manifest["files"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ReleaseRefused(f"{entry / MANIFEST} is not a quarantine manifest ({exc})") from None
    mirror = Path(bucket_mirror).resolve() if bucket_mirror else None
    local: list[tuple[Path, Path]] = []
    remote: list[tuple[Path, str, str]] = []
    for item in files:
        if not isinstance(item, dict):
            raise ReleaseRefused(
                f"{entry / MANIFEST} lists a file entry that is not an object: nothing released"
            )
        source = entry / _file_name(item.get("name"), entry)
        if source.is_symlink() or not source.is_file():
            raise ReleaseRefused(f"{source} is missing or not a plain file: nothing released")
        if not item.get("origin"):
            raise ReleaseRefused(
                f"{entry}: the manifest does not say where its files came from (quarantined by an "
                f"earlier version); copy them by hand into the landing folder they came from, "
                f"then delete {entry}"
            )
        name = _file_name(item.get("original_name"), entry)
        origin = Path(item["origin"])
        if mirror is not None and origin.is_relative_to(mirror) and origin != mirror:
            bucket, *folders = origin.relative_to(mirror).parts
            remote.append((source, bucket, "/".join([*folders, name])))
        else:
            target = origin / name
            if os.path.lexists(target):
                raise ReleaseRefused(f"{target} exists: release would overwrite it, nothing released")
            local.append((source, target))
    if remote:
        if s3_client is None:
            raise ReleaseRefused(
                f"{entry} came from a bucket and no S3 client is configured: nothing released"
            )
        client = s3_client()
        remote = [r for r in remote if not _already_there(client, *r)]
    for source, target in local:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(source), str(target))
    for source, bucket, key in remote:
        client.upload_file(str(source), bucket, key)
    shutil.rmtree(entry)
    run_dir = entry.parent
    if not any(run_dir.iterdir()):
        run_dir.rmdir()
    return [str(target) for _, target in local] + [f"s3://{bucket}/{key}" for _, bucket, key in remote]


def _already_there(client: Any, source: Path, bucket: str, key: str) -> bool:
    """True when the object holds these bytes; refuses when it holds others."""
    from botocore.exceptions import ClientError

    try:
        head = client.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    with source.open("rb") as f:
        digest = hashlib.file_digest(f, lambda: hashlib.md5(usedforsecurity=False)).hexdigest()
    if head.get("ETag", "").strip('"') == digest:
        return True
    raise ReleaseRefused(
        f"s3://{bucket}/{key} exists and differs: release would overwrite it, nothing released"
    )


def list_quarantine(quarantine_dir: Path) -> list[QuarantinedDelivery]:
    """Every quarantined delivery, oldest first (for `athanor quarantine list`)."""
    found = []
    for manifest_path in sorted(Path(quarantine_dir).glob(f"*/*/{MANIFEST}")):
        manifest = json.loads(manifest_path.read_text())
        found.append(
            QuarantinedDelivery(
                manifest_path.parent,
                manifest["run_id"],
                manifest["delivery"],
                tuple(e["original_name"] for e in manifest["files"]),
                manifest["reason"],
                manifest["quarantined_at"],
            )
        )
    return sorted(found, key=lambda d: d.quarantined_at)
