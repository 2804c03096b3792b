"""GPU utilisation telemetry: the delivery kind `gpu_telemetry`, loaded into `gpu_samples`.

One reader per format: `nvidia_smi` (CSV, parsed by DuckDB), `prometheus` (DCGM exporter
query_range JSON), `cloudwatch` (GetMetricData JSON of SageMaker training jobs). A format is
recognised from the first bytes of the content (`detect`), like every other delivery kind.

How files make deliveries: the telemetry files of one format in one landed delivery (a
folder) load together, in one transaction and one quality check: one nvidia-smi file per
host, one Prometheus or CloudWatch file per metric, still make one sample per GPU and
instant. A folder per day (`nvidia-smi/2026-11-03/<host>.nvidia-smi.csv`) keeps each
night's load to that night's files.

A load is one transaction: the samples are inserted, the delivery passes the `gpu_samples`
suite (an error rolls everything back and the delivery goes to quarantine), then it restates,
for each GPU, the span from its first to its last sample: what earlier loads held there is
replaced (a file delivered again, corrected; an export overlapping the previous one). A
delivery with fewer than half (ATHANOR_RESTATEMENT_MIN_SHARE) of the samples it would replace
for a GPU is held like a shrinking bill (rule telemetry_restatement_collapsed) until
`athanor quarantine release`.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as pa

from athanor.ingest import sniff
from athanor.ingest.billing import checksum
from athanor.ingest.errors import IngestError
from athanor.ingest.telemetry import cloudwatch, nvidia_smi, prometheus
from athanor.land.names import shown_all
from athanor.warehouse import lake, sql, transaction

KIND = "gpu_telemetry"
FORMATS = (nvidia_smi.FORMAT, prometheus.FORMAT, cloudwatch.FORMAT)
TABLE = "gpu_samples"

logger = logging.getLogger(__name__)


def detect(data: bytes, header: list[str] | None) -> str | None:
    """The telemetry format of a file from its first bytes and header, or None."""
    if prometheus.looks_like(data):
        return prometheus.FORMAT
    if cloudwatch.looks_like(data):
        return cloudwatch.FORMAT
    text = data[:65536].decode("utf-8", errors="replace").lstrip("\ufeff")
    first = text.split("\n", 1)[0].rstrip("\r")
    if nvidia_smi.looks_like(first, header):
        return nvidia_smi.FORMAT
    return None


def is_header(header: list[str] | None) -> bool:
    """Whether a CSV's first line names columns (nvidia-smi's header), not values."""
    return bool(header) and "timestamp" in {nvidia_smi.field_name(c) for c in header or []}


def format_of(file: Path) -> str | None:
    data = sniff.head(file, 65536)
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    header = sniff.header_columns(data, len(data) < 65536) if not text.lstrip().startswith("{") else None
    return detect(data, header)


def groups(files: list[Path]) -> list[list[Path]]:
    """The loads a delivery's telemetry files make: the files of each format together."""
    by_format: dict[str, list[Path]] = defaultdict(list)
    for file in files:
        by_format[format_of(file) or "unknown"].append(file)
    return [sorted(fs) for _, fs in sorted(by_format.items())]


def gpus_from_warehouse(con: duckdb.DuckDBPyConnection) -> Callable[[str], cloudwatch.HostGpus | None]:
    """A SageMaker job's GPUs per instance, from its loaded job log and the GPU catalogue."""
    from athanor.reference import gpus as catalog

    def lookup(job_name: str) -> cloudwatch.HostGpus | None:
        row = con.execute(
            # The SageMaker log first; a scheduler's log naming the job the same way otherwise.
            "select instance_type, gpus_per_instance from job_run_facts "
            "where job_id = ? order by source <> 'sagemaker', source",
            [job_name],
        ).fetchall()
        if not row:
            return None
        instance_type, gpus = row[0]
        spec = catalog.gpu_instance(str(instance_type)) if instance_type else None
        count = int(gpus) if gpus else (spec.gpu_count if spec else 0)
        if count < 1:
            return None
        return cloudwatch.HostGpus(
            count, spec.gpu_model if spec else None, spec.gpu_memory_gib if spec else None
        )

    return lookup


def ingest_telemetry(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    *,
    run_id: str | None = None,
    as_of: date | None = None,
    gpus_of: Callable[[str], cloudwatch.HostGpus | None] | None = None,
) -> str:
    """Load one telemetry delivery (files of one format); its summary line."""
    from athanor.ingest.deliveries import _already_loaded, _ledger
    from athanor.quality import QualityError, store_results

    digest, size = checksum(files)
    load_id = digest[:16]
    names = _named(files)
    if _already_loaded(con, load_id):
        return f"{names}: unchanged since load {load_id}, skipped"
    formats = {format_of(f) for f in files}
    if len(formats) != 1 or None in formats:
        raise IngestError(names, f"not one telemetry format ({', '.join(sorted(map(str, formats)))})")
    fmt = formats.pop()
    skipped: dict[str, int] = {}
    try:
        with transaction(con):
            if fmt == nvidia_smi.FORMAT:
                rows = 0
                for file in files:
                    try:
                        rows += write_samples(con, *nvidia_smi.samples_query(con, file, load_id=load_id))
                    finally:
                        nvidia_smi.done(con)
            else:
                if fmt == prometheus.FORMAT:
                    samples, skipped = prometheus.read(files, load_id)
                    prometheus.drop_mig_parents(samples, skipped)
                    prometheus.finish(samples)
                else:
                    pairs = cloudwatch.pair(files)
                    samples, skipped = cloudwatch.read(pairs, load_id, gpus_of or gpus_from_warehouse(con))
                    cloudwatch.finish(samples)
                rows = _write_arrow(con, samples.table())
            if rows == 0:
                raise IngestError(names, f"no GPU sample in the {fmt} delivery")
            outcome = _quality_gate(con, load_id, files, run_id, as_of)
            replaced = _replace_earlier(con, load_id)
            _ledger(con, load_id, KIND, fmt, files, digest, size, rows)
            if lake.attached(con):  # last: a failure above leaves the lake as it was
                lake.commit_load(con, TABLE, load_id)
    except QualityError as exc:
        store_results(con, exc.outcome)
        raise
    figures = con.execute(sql("ingest/telemetry_load_summary"), {"load_id": load_id}).fetchall()[0]
    gpus, hosts, first, last, unreported, mig_instances, with_power = figures
    line = (
        f"{names}: {fmt} telemetry, {rows:,} samples of {gpus:,} GPU{'s' if gpus != 1 else ''} "
        + (f"({mig_instances:,} MIG instances) " if mig_instances else "")
        + f"on {hosts:,} host{'s' if hosts != 1 else ''}, "
        f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC"
    )
    if unreported:
        line += f", {unreported:,} without utilisation ([N/A])"
    # Energy is integrated from measured power where a sample has it, modelled elsewhere: say which.
    line += f", power read on {with_power:,} of {rows:,}" if with_power else ", no power reading"
    if replaced:
        line += f", replacing {replaced:,} samples loaded before"
    parents = skipped.pop(prometheus.PARENT_OF_MIG, 0)
    if skipped:
        line += f"; skipped series of other metrics: {', '.join(f'{k} ({v})' for k, v in sorted(skipped.items()))}"
    if parents:
        line += f"; skipped {parents:,} samples of parent GPUs beside their MIG instances (counted once, by instance)"
    warnings = [r.line(outcome.context.file_names) for r in outcome.warnings]
    return "\n".join([line, *(f"  warning: {w}" for w in warnings)])


def _named(files: list[Path]) -> str:
    """The files of a delivery in one short line: a night's folder may hold hundreds."""
    if len(files) <= 3:
        return shown_all(f.name for f in files)
    return (
        f"{shown_all([files[0].name])} and {len(files) - 1} more files of {shown_all([files[0].parent.name])}"
    )


def write_samples(con: duckdb.DuckDBPyConnection, query: str, params: dict[str, object] | None = None) -> int:
    """The one writer of gpu_samples: the rows of a query naming its columns; how many."""
    staged = lake.staging(con, TABLE)  # past the lake mode's view: see athanor.warehouse.lake
    return int(con.execute(f"insert into {staged} by name {query}", params or {}).fetchall()[0][0])


def _write_arrow(con: duckdb.DuckDBPyConnection, table: pa.Table) -> int:
    con.register("incoming_gpu_samples", table)
    try:
        return write_samples(con, "select * from incoming_gpu_samples")
    finally:
        con.unregister("incoming_gpu_samples")


def _quality_gate(
    con: duckdb.DuckDBPyConnection, load_id: str, files: list[Path], run_id: str | None, as_of: date | None
):
    from athanor.quality import BatchContext, QualityError, store_results, validate_batch

    context = BatchContext(run_id or f"load-{load_id}", load_id, tuple(f.name for f in files), as_of)
    outcome = validate_batch(con, TABLE, TABLE, context=context, config=_released_config(con, load_id))
    if not outcome.ok:
        raise QualityError(outcome)
    store_results(con, outcome)
    return outcome


def _released_config(con: duckdb.DuckDBPyConnection, load_id: str):
    """For a delivery the operator released from quarantine: its thinning is accepted, warned."""
    released = con.execute(
        "select 1 from loads where load_id = ? and status = 'released'", [load_id]
    ).fetchone()
    if not released:
        return None
    from athanor.quality import QualityConfig

    return QualityConfig.from_env().with_severity(telemetry_restatement_collapsed="warn")


def _replace_earlier(con: duckdb.DuckDBPyConnection, load_id: str) -> int:
    """Delete what this load supersedes; how many samples that was.

    In the lake mode count them and leave them out of the load's view: its commit replaces them.
    """
    if lake.attached(con):
        replaced = lake.replaced_rows(con, TABLE, load_id)
        lake.hide_replaced(con, TABLE, load_id)
        return replaced
    before = con.execute("select count(*) from gpu_samples where load_id <> ?", [load_id]).fetchall()[0][0]
    if before == 0:
        return 0
    con.execute(sql("ingest/telemetry_replace"), {"load_id": load_id})
    after = con.execute("select count(*) from gpu_samples where load_id <> ?", [load_id]).fetchall()[0][0]
    return int(before - after)


__all__ = ["FORMATS", "KIND", "detect", "groups", "ingest_telemetry", "is_header", "write_samples"]
