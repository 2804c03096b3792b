"""nvidia-smi `--query-gpu=... --format=csv` output, as the tool writes it, read by DuckDB.

The query Athanor documents is
`--query-gpu=timestamp,name,pci.bus_id,uuid,utilization.gpu,memory.used,memory.total,power.draw`;
any other field order, extra fields (index, temperature.gpu, ...) and the `noheader` /
`nounits` forms are read too:

- `csv`: a header naming each field with its unit (`utilization.gpu [%]`), values with units
  (`87 %`, `30000 MiB`, `250.12 W`), fields separated by `, `;
- `csv,nounits`: the same header, bare values;
- `csv,noheader[,nounits]`: no header: the fields must be the documented query's, in its order.

Power: `power.draw`, `power.draw.average` and `power.draw.instant` are read (drivers from 530 on
print the last two; a file may carry all three). One sample's power is, in this order:
`power.draw.average` (the board's mean over the last second, on Ampere and newer), `power.draw`
(that same one-second mean on Ampere and newer, an instantaneous reading on older GPUs), then
`power.draw.instant`. Why the average first: a sample stands for the whole interval until the
next one, and an instant reading catches one moment of a load that swings within a second (on
A100 and H100 the sensor sees about a quarter of the time, arXiv 2312.02741), so the one-second
mean is the better estimate of the interval's power. A bracketed value (`[N/A]`, T4s print it
for the average) falls through to the next field.

A value nvidia-smi cannot give is `[N/A]`, `[Not Supported]`, `[Unknown Error]`,
`[Insufficient Permissions]`, `[GPU is lost]`...: any bracketed text is a missing value. A
value that is neither a number (with the field's own unit, if any) nor bracketed refuses the
file, naming row, column and rule. Timestamps are `YYYY/MM/DD HH:MM:SS.mmm` in the host's local
time, without a zone: hosts are taken to run in UTC (cloud images do by default).

The host is not in nvidia-smi's output. In this order, it is named by:
- a `hostname` column (a wrapper that prepends `$(hostname), ` to each line, with `hostname`
  in the header);
- the file name `<host>.nvidia-smi.csv` (anything may follow `.nvidia-smi` before `.csv`:
  `gpu-node-07.nvidia-smi.2026-11-03.csv.gz`);
- the folder of a file named `nvidia-smi*.csv`: `<host>/nvidia-smi.csv`,
  `gpu-node-07/nvidia-smi-2026-11-03.csv.gz` (collectors that keep a folder per host), unless
  the folder's name is a date or a `key=value` partition;
- the file name `<host>-<date>.csv`: `gpu-node-07-2026-11-03.csv`, `gpu-node-07_20261103.csv`.
Otherwise the file is refused. The log says which one named each file's host.

The whole file is parsed by DuckDB in one pass, straight into the warehouse table: a file set
of 100 million samples never passes through Python.
"""

from __future__ import annotations

import csv
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from athanor.ingest import sniff
from athanor.ingest.errors import IngestError
from athanor.warehouse import sql

FORMAT = "nvidia_smi"
# The documented query, in its order: the columns of a header-less file.
QUERY_FIELDS = (
    "timestamp",
    "name",
    "pci.bus_id",
    "uuid",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "power.draw",
)
# Field -> the unit nvidia-smi writes after its values (and in the header's brackets).
UNITS = {
    "utilization.gpu": "%",
    "memory.used": "MiB",
    "memory.total": "MiB",
    "power.draw": "W",
    "power.draw.average": "W",
    "power.draw.instant": "W",
}
REQUIRED = ("timestamp", "utilization.gpu")
FILE_NAME = re.compile(r"^(?P<host>.+?)\.nvidia-smi(?:\..*)?\.csv(?:\.gz)?$", re.IGNORECASE)
# nvidia-smi*.csv in a folder named for its host.
IN_HOST_FOLDER = re.compile(r"^nvidia-smi(?:[._-].*)?\.csv(?:\.gz)?$", re.IGNORECASE)
# <host>-<date>.csv: a day (2026-11-03 or 20261103), maybe a time, after the host's name.
HOST_DATE_NAME = re.compile(
    r"^(?P<host>[A-Za-z0-9][A-Za-z0-9._-]*?)[-_](?:\d{4}-\d{2}-\d{2}|\d{8})(?:[T_-]\d{2}(?:[:-]?\d{2}){0,2})?"
    r"\.csv(?:\.gz)?$"
)
# A folder that is a day or a partition names no host.
_NOT_A_HOST = re.compile(r"^(?:\d{4}-?\d{2}-?\d{2}|\d+|.*=.*)$")
_TIMESTAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$")
_HEADER_FIELD = re.compile(r"^\s*(?P<name>[A-Za-z_.]+)\s*(?:\[(?P<unit>[^\]]*)\])?\s*$")
EXAMPLES = 5

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Layout:
    """How one file is laid out: its fields in order, whether line 1 is a header, its host."""

    fields: tuple[str, ...]
    header: bool
    host: str | None  # from the file's name or folder; None when a hostname column names it
    host_from: str = "its hostname column"  # what named the host, for the log


def field_name(text: str) -> str:
    """'utilization.gpu [%]' -> 'utilization.gpu'; '' for anything else."""
    m = _HEADER_FIELD.match(text.lstrip("\ufeff"))
    return m.group("name").lower() if m else ""


def looks_like(first_line: str, header: list[str] | None) -> bool:
    """Whether a CSV's first line is nvidia-smi's header, or a header-less line of the documented query."""
    names = {field_name(c) for c in header or []}
    if {"timestamp", "utilization.gpu"} <= names:
        return True
    cells = [c.strip() for c in first_line.split(",")]
    return (
        len(cells) == len(QUERY_FIELDS)
        and bool(_TIMESTAMP.match(cells[0]))
        and (cells[3].startswith("GPU-") or cells[3].startswith("[") or cells[3] == "")
    )


def layout(file: Path) -> Layout:
    """The file's fields and host, from its first line and its name; refuses what cannot be read."""
    first = sniff.head(file, 64 * 1024).decode("utf-8", errors="replace").lstrip("\ufeff")
    first = first.split("\n", 1)[0].rstrip("\r")
    cells = next(csv.reader([first]), [])
    names = [field_name(c) for c in cells]
    header = "timestamp" in names
    if header:
        fields = tuple(names)
        unnamed = [i + 1 for i, n in enumerate(fields) if not n]
        if unnamed:
            raise IngestError(
                file.name,
                f"nvidia-smi header field {unnamed[0]} ({cells[unnamed[0] - 1].strip()!r}) is not a query field",
                row=0,
            )
        missing = [f for f in REQUIRED if f not in fields]
        if missing:
            raise IngestError(
                file.name, f"nvidia-smi output without {', '.join(missing)}: query it with --query-gpu"
            )
        if "uuid" not in fields and "pci.bus_id" not in fields and "index" not in fields:
            raise IngestError(
                file.name, "nvidia-smi output names no GPU: add uuid (or pci.bus_id, index) to --query-gpu"
            )
    else:
        if len(cells) != len(QUERY_FIELDS):
            raise IngestError(
                file.name,
                f"nvidia-smi output without a header has {len(cells)} fields; Athanor reads the "
                f"documented query's {len(QUERY_FIELDS)} ({','.join(QUERY_FIELDS)}) or a file with its header",
                row=1,
            )
        fields = QUERY_FIELDS
    if "hostname" in fields:
        return Layout(fields, header, None)
    host, host_from = host_of(file)
    return Layout(fields, header, host, host_from)


def host_of(file: Path) -> tuple[str, str]:
    """The host a capture without a hostname column comes from, and what named it (see the
    module's docstring for the order); refuses a file whose name and folder name none."""
    if m := FILE_NAME.match(file.name):
        return m.group("host"), "its file name <host>.nvidia-smi.csv"
    folder = file.parent.name
    if IN_HOST_FOLDER.match(file.name) and folder and not _NOT_A_HOST.match(folder):
        return folder, "its folder <host>/nvidia-smi*.csv"
    if m := HOST_DATE_NAME.match(file.name):
        return m.group("host"), "its file name <host>-<date>.csv"
    raise IngestError(
        file.name,
        "nvidia-smi output does not name its host (rule telemetry_host_known): add a hostname "
        "column, or name the file <host>.nvidia-smi.csv, <host>/nvidia-smi.csv or <host>-<date>.csv",
    )


def _number(column: str, unit: str) -> str:
    """A value as a number: its unit taken off ('87 %', '87%', '87'); null when bracketed or not a number."""
    return (
        f"try_cast(case when suffix({column}, ' {unit}') then left({column}, -{len(unit) + 1}) "
        f"when suffix({column}, '{unit}') then left({column}, -{len(unit)}) else {column} end as double)"
    )


def _text(column: str) -> str:
    """A text value; a bracketed one ([N/A]) is none."""
    return f"case when starts_with({column}, '[') then null else {column} end"


def _timestamp(column: str) -> str:
    # '2026/11/03 14:05:01.123' is ISO 8601 once its slashes are dashes: DuckDB's own cast reads it.
    return f"try_cast(replace({column}, '/', '-') as timestamp)"


RAW = "telemetry_nvsmi_raw"


def samples_query(
    con: duckdb.DuckDBPyConnection, file: Path, *, load_id: str, format_name: str = FORMAT
) -> tuple[str, dict[str, object]]:
    """Read the file into a temp table (`RAW`, dropped by `done`) and check every value; the
    query of its samples (gpu_samples' columns) and its parameters.

    Refuses the file (IngestError naming row, column and rule) when a value is neither a
    number with its field's unit nor bracketed, or a timestamp is not nvidia-smi's.
    """
    lay = layout(file)
    logger.info("%s: host %s, named by %s", file.name, lay.host or "per row", lay.host_from)
    columns = {f"c{i}": "VARCHAR" for i in range(len(lay.fields))}
    by_field = {f: f"c{i}" for i, f in enumerate(lay.fields)}
    trimmed = ", ".join(f"nullif(trim(c{i}), '') as c{i}" for i in range(len(lay.fields)))
    parsed = ",\n    ".join(f"{expression} as {name}" for name, expression in _parsed(by_field).items())
    con.execute(
        sql("ingest/telemetry_nvidia_smi_raw", view=RAW, trimmed=trimmed, parsed=parsed),
        {"path": str(file), "skip": 1 if lay.header else 0, "columns": columns},
    )
    _check(con, RAW, file)
    query = sql("ingest/telemetry_nvidia_smi", raw=RAW)
    keys, ranks = _bus_ranks(con, lay.host)
    params = {"load_id": load_id, "format": format_name, "file_name": file.name, "host": lay.host}
    return query, {**params, "bus_keys": keys, "bus_ranks": ranks}


def _bus_ranks(con: duckdb.DuckDBPyConnection, host: str | None) -> tuple[list[str], list[int]]:
    """Each host's PCI bus ids ('<host>\\x1f<bus id>') and their rank on it: the GPU's index."""
    pairs = con.execute(
        f"select distinct coalesce(hostname, $host), coalesce(pci_bus_id, '') from {RAW} order by 1, 2",
        {"host": host},
    ).fetchall()
    keys, ranks, seen = [], [], {}
    for h, bus in pairs:
        ranks.append(seen.get(h, 0))
        seen[h] = ranks[-1] + 1
        keys.append(f"{h}\x1f{bus}")
    return keys, ranks


def done(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"drop table if exists {RAW}")


# Checked field -> the rule a value breaks when it does not parse.
RULES = {
    "timestamp": "not an nvidia-smi timestamp (YYYY/MM/DD HH:MM:SS.mmm)",
    **{
        field: f"not a number in {unit} (nor a bracketed value such as [N/A])"
        for field, unit in UNITS.items()
    },
    "hostname": "empty hostname",
}


def _bad(field: str) -> str:
    return "bad_" + re.sub(r"[^a-z]", "_", field)


def _parsed(by_field: dict[str, str]) -> dict[str, str]:
    """The raw table's columns: each field's typed value (null where the file lacks the field),
    and for each checked field the text of a value that does not parse (null when it does)."""

    def parsed(field: str, how, kind: str) -> str:
        c = by_field.get(field)
        return how(c) if c else f"null::{kind}"

    ts = by_field["timestamp"]
    out = {
        "hostname": parsed("hostname", _text, "varchar"),
        "sampled_at": _timestamp(ts),
        "gpu_model": parsed("name", _text, "varchar"),
        "pci_bus_id": parsed("pci.bus_id", _text, "varchar"),
        "uuid": parsed("uuid", _text, "varchar"),
        "gpu_index": parsed("index", lambda c: f"try_cast({c} as integer)", "integer"),
        "instance_id": parsed("instance_id", _text, "varchar"),
    }
    named = {"utilization.gpu": "utilisation_pct", "memory.used": "memory_used_mib"}
    named |= {"memory.total": "memory_total_mib", "power.draw": "power_draw_w"}
    named |= {"power.draw.average": "power_average_w", "power.draw.instant": "power_instant_w"}
    for field, name in named.items():
        out[name] = parsed(field, lambda c, unit=UNITS[field]: _number(c, unit), "double")
    out[_bad("timestamp")] = f"case when {_timestamp(ts)} is null then coalesce({ts}, '(empty)') end"
    for field, name in named.items():
        c = by_field.get(field)
        check = f"{c} is not null and not starts_with({c}, '[') and {out[name]} is null" if c else "false"
        out[_bad(field)] = f"case when {check} then {c or 'null'} end"
    c = by_field.get("hostname")
    out[_bad("hostname")] = f"case when {c} is null then '(empty)' end" if c else "null::varchar"
    return out


def _check(con: duckdb.DuckDBPyConnection, raw: str, file: Path) -> None:
    """Refuse the file on its first rule broken: every bad row counted (one pass), a few shown."""
    checks = [(field, rule, f"{_bad(field)} is not null") for field, rule in RULES.items()]
    counts = con.execute(
        "select " + ", ".join(f"count(*) filter (where {cond})" for _, _, cond in checks) + f" from {raw}"
    ).fetchall()[0]
    for (field, rule, condition), bad in zip(checks, counts, strict=True):
        if not bad:
            continue
        rows = con.execute(
            f"select source_row, {_bad(field)} from {raw} where {condition} "
            f"order by source_row limit {EXAMPLES}"
        ).fetchall()
        raise IngestError(
            file.name,
            rule,
            column=field,
            row=int(rows[0][0]),
            bad_rows=int(bad),
            examples=[f"row {r}: {v!r}" for r, v in rows],
        )
