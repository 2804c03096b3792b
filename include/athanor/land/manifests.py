"""The two kinds of manifest a delivery can carry: one reader for each, and where it lives.

- Legacy AWS CUR, `<report>-Manifest.json`: `reportKeys` lists the parts of one multi-part
  report (plus its `assemblyId` and `billingPeriod`). Read here and only here: landing groups
  the listed parts into one delivery, and the billing load waits until every part is present.
- S3 Inventory, `manifest.json`: `fileFormat`, `fileSchema` and the data `files` with their
  MD5. A different format for a different delivery, read by `athanor.ingest.inventory.read_manifest`
  beside the data-file reader that needs its schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# AWS names a legacy CUR manifest '<report>-Manifest.json'; its content (reportKeys) is what counts.
CUR_MANIFEST_SUFFIX = "-Manifest.json"


@dataclass(frozen=True)
class CurManifest:
    """What a legacy CUR manifest says about its delivery."""

    report_keys: tuple[str, ...]  # the parts, as keys of the report bucket
    assembly_id: Any  # the same assembly is written twice: beside the period and in its folder
    billing_period: str  # canonical JSON of `billingPeriod`: manifests of one period compete

    @property
    def part_names(self) -> tuple[str, ...]:
        return tuple(key.rsplit("/", 1)[-1] for key in self.report_keys)


def parse_cur_manifest(body: bytes) -> CurManifest | None:
    """The manifest in `body`, or None when it is not a legacy CUR manifest."""
    try:
        doc = json.loads(body)
    except ValueError:  # invalid JSON or text that is not UTF-8
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("reportKeys"), list):
        return None
    return CurManifest(
        report_keys=tuple(str(key) for key in doc["reportKeys"]),
        assembly_id=doc.get("assemblyId"),
        billing_period=json.dumps(doc.get("billingPeriod"), sort_keys=True),
    )


# AWS's manifests are kilobytes (one key per part); a larger file starting with '{' is data
# (JSON Lines billing) and is not read whole to find that out.
MAX_MANIFEST_BYTES = 16 << 20


def read_cur_manifest(path: Path) -> CurManifest | None:
    """The legacy CUR manifest at `path`, or None if the file is not one.

    Any file of a delivery may be asked: a data file is told apart by its first byte and its
    size without being read whole.
    """
    try:
        with path.open("rb") as f:
            if f.read(1) != b"{" or path.stat().st_size > MAX_MANIFEST_BYTES:
                return None
        return parse_cur_manifest(path.read_bytes())
    except OSError:
        return None
