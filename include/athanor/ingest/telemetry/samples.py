"""Samples read from JSON sources, gathered per GPU and instant, and handed to DuckDB as Arrow."""

from __future__ import annotations

import json
import reprlib
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from athanor.ingest.errors import IngestError

SHAPE_RULE = "rule telemetry_json_shape"

# gpu_samples' columns and types, as the JSON readers fill them.
SCHEMA = pa.schema(
    [
        ("load_id", pa.string()),
        ("source_format", pa.string()),
        ("source_file", pa.string()),
        ("source_row", pa.int64()),
        ("host", pa.string()),
        ("gpu_id", pa.string()),
        ("gpu_index", pa.int32()),
        ("gpu_model", pa.string()),
        ("instance_id", pa.string()),
        ("job_name", pa.string()),
        ("pod", pa.string()),
        ("namespace", pa.string()),
        ("sampled_at", pa.timestamp("us")),
        ("utilisation_pct", pa.float64()),
        ("memory_used_gib", pa.float64()),
        ("memory_total_gib", pa.float64()),
        ("power_w", pa.float64()),
        ("mig_instance", pa.string()),
        ("mig_profile", pa.string()),
        ("gpu_share", pa.float64()),
    ]
)


def read_json(file: Path) -> Any:
    """The JSON document of a telemetry file; IngestError for one that is not JSON."""
    try:
        return json.loads(file.read_bytes())
    except ValueError as exc:
        raise IngestError(file.name, f"not a JSON document ({exc})") from None
    except RecursionError:
        # json's C decoder recurses once per level: brackets nested past Python's recursion limit
        # (no exporter nests deeper than five) end here, before using much memory.
        raise IngestError(file.name, f"not a telemetry answer: JSON nested too deep ({SHAPE_RULE})") from None


def expect(value: Any, kind: type | tuple[type, ...], file: Path, where: str, what: str) -> Any:
    """`value` when it is of `kind`; otherwise an IngestError naming where in the document it is."""
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    # reprlib: a bounded rendering, however big the value (a list of a million items).
    raise IngestError(file.name, f"{where} is {reprlib.repr(value)}, not {what} ({SHAPE_RULE})")


class Samples:
    """Rows keyed by (gpu_id, MIG instance, instant): the metrics of one GPU (or one MIG instance
    of it) at one instant meet in one row,
    whichever series or file they come from; the row keeps the file and position it was first
    seen at."""

    def __init__(self, load_id: str, source_format: str) -> None:
        self.load_id, self.source_format = load_id, source_format
        self.rows: dict[tuple[str, str | None, datetime, int], dict[str, Any]] = {}

    def set(
        self,
        file: str,
        position: int,
        identity: dict[str, Any],
        at: datetime,
        field: str,
        value: float | None,
    ) -> None:
        copy = 0
        gpu = (identity["gpu_id"], identity.get("mig_instance"))
        # The same metric twice for one GPU and instant (two scrapes of one exporter) stays two
        # rows, for the rule telemetry_sample_unique to name.
        while (row := self.rows.get((*gpu, at, copy))) is not None and field in row["metrics"]:
            copy += 1
        key = (*gpu, at, copy)
        if row is None:
            row = self.rows[key] = {
                "source_file": file,
                "source_row": position,
                **identity,
                "sampled_at": at,
                "metrics": {},
            }
        else:
            # A label only one metric's series carries (pod on GPU_UTIL only) still reaches the row.
            for name, v in identity.items():
                if row.get(name) is None and v is not None:
                    row[name] = v
        row["metrics"][field] = value

    def table(self) -> pa.Table:
        columns: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
        for row in sorted(self.rows.values(), key=lambda r: (r["source_file"], r["source_row"])):
            for name in SCHEMA.names:
                columns[name].append(row.get(name))
        columns["load_id"] = [self.load_id] * len(self.rows)
        columns["source_format"] = [self.source_format] * len(self.rows)
        return pa.table(columns, schema=SCHEMA)
