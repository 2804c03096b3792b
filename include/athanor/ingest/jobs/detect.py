"""Which job-log format a file holds, from its first bytes and header line (never its name)."""

from __future__ import annotations

import csv
from pathlib import Path

from athanor.ingest import sniff
from athanor.ingest.jobs.problems import JobRunError, Problem


def read_bytes(path: Path, limits: sniff.InputLimits = sniff.DEFAULT_LIMITS) -> bytes:
    """The whole content (the readers parse it in memory); a gzip is decompressed as a stream
    and refused once past the limits, or when cut short (one-line IngestError)."""
    return sniff.expand(path, limits)


def decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as error:
        raise JobRunError(
            name, [Problem(name, None, None, "not UTF-8 text", f"byte offset {error.start}")]
        ) from error


def first_line(text: str) -> str:
    return text.split("\n", 1)[0].rstrip("\r")


def detect(data: bytes, name: str) -> str:
    if data[:4] == b"PAR1":
        return "generic"
    text = data[:65536].decode("utf-8", errors="replace").lstrip("\ufeff")
    head = text.lstrip()
    if head[:1] in ("{", "["):
        if "TrainingJobName" in head:
            return "sagemaker"
        raise JobRunError(
            name,
            [
                Problem(
                    name,
                    None,
                    None,
                    "JSON without TrainingJobName: not a SageMaker DescribeTrainingJob document",
                )
            ],
        )
    first = first_line(head)
    if "|" in first and "JobID" in first.split("|"):
        return "slurm"
    if first.split()[:1] == ["JobID"] and first_line(head[len(first) + 1 :]).startswith("---"):
        raise JobRunError(
            name,
            [
                Problem(
                    name, None, None, "sacct output in fixed-width columns: run sacct with --parsable2 (-P)"
                )
            ],
        )
    header = next(csv.reader([first]), [])
    if "job_id" in {h.strip().lower() for h in header}:
        return "generic"
    raise JobRunError(
        name,
        [Problem(name, None, None, "not a known job-log format", f"first line: {first[:80]!r}")],
    )


def detect_job_format(path: str | Path) -> str:
    """'generic', 'slurm' or 'sagemaker', from the file's first bytes / header line.

    Reads at most `sniff.HEAD_BYTES` of the content, whatever the file's size.
    """
    path = Path(path)
    return detect(sniff.head(path), path.name)
