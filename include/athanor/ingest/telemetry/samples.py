"""Samples read from JSON sources, gathered per GPU and instant, and handed to DuckDB as Arrow."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pyarrow as pa

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
    ]
)


class Samples:
    """Rows keyed by (gpu_id, instant): the metrics of one GPU at one instant meet in one row,
    whichever series or file they come from; the row keeps the file and position it was first
    seen at."""

    def __init__(self, load_id: str, source_format: str) -> None:
        self.load_id, self.source_format = load_id, source_format
        self.rows: dict[tuple[str, datetime, int], dict[str, Any]] = {}

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
        # The same metric twice for one GPU and instant (two scrapes of one exporter) stays two
        # rows, for the rule telemetry_sample_unique to name.
        while (row := self.rows.get((identity["gpu_id"], at, copy))) is not None and field in row["metrics"]:
            copy += 1
        key = (identity["gpu_id"], at, copy)
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
