"""Quarantine: move a rejected delivery aside with its reasons, and release it back.

Layout: `<quarantine_dir>/<run_id>/<delivery>/` holds the delivery's files,
`validation.json` (the reason: the validation result or an error line) and
`manifest.json` (where the files came from, so `release` can put them back).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

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


def release(quarantine_path: Path, landing_dir: Path) -> list[Path]:
    """Move a quarantined delivery's files back into `landing_dir/<delivery>/` (never overwriting)."""
    quarantine_path = Path(quarantine_path)
    manifest = json.loads((quarantine_path / MANIFEST).read_text())
    entries = manifest["files"]
    destination = Path(landing_dir)
    if len(entries) > 1:
        destination = destination / _safe_name(manifest["delivery"])
    targets = []
    for entry in entries:
        name = entry["name"]
        if name != _safe_name(name):
            raise ValueError(f"{quarantine_path}: refusing manifest entry {name!r}")
        target = destination / _safe_name(entry["original_name"])
        if target.exists():
            raise FileExistsError(f"{target} exists: release would overwrite it")
        targets.append((quarantine_path / name, target))
    destination.mkdir(parents=True, exist_ok=True)
    for source, target in targets:
        shutil.move(str(source), str(target))
    shutil.rmtree(quarantine_path)
    run_dir = quarantine_path.parent
    if run_dir.exists() and not any(run_dir.iterdir()):
        run_dir.rmdir()
    return [target for _, target in targets]


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
