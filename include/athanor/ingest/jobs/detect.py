"""Which job-log format a file holds, from its first bytes and header line (never its name)."""

from __future__ import annotations

import csv
import re
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


class ShapeError(JobRunError):
    """A job log by its shape that the readers cannot take as it is (sacct output without its
    header, or in fixed-width columns): the message says how to write it instead."""


# A Slurm job id as sacct prints it: 4103947, an array task 4103947_2 or a compacted array
# 4103947_[1-3%2], a heterogeneous component 4103947+1, a step 4103947.batch.
_SLURM_JOB_ID = re.compile(r"^\d+(?:_(?:\d+|\[[\d,\-%]+\]))?(?:\+\d+)?(?:\.[\w-]+)?$")
_SLURM_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")


def headerless_sacct(line: str) -> bool:
    """Whether `line` is a record of `sacct --parsable2 --noheader`: '|'-separated fields, the
    first a job id, and among the rest a timestamp in sacct's own layout (Submit, Start, End)."""
    fields = line.split("|")
    return (
        len(fields) >= 4
        and _SLURM_JOB_ID.match(fields[0]) is not None
        and any(_SLURM_TIME.match(f) for f in fields[1:])
    )


def first_line(text: str) -> str:
    return text.split("\n", 1)[0].rstrip("\r")


def is_pod_list(head: str) -> bool:
    """Whether a JSON text's start is `kubectl get pods -o json` (a List of kind Pod items)."""
    return '"kind"' in head and '"Pod"' in head and '"items"' in head


def detect(data: bytes, name: str) -> str:
    if data[:4] == b"PAR1":
        return "generic"
    text = data[:65536].decode("utf-8", errors="replace").lstrip("\ufeff")
    head = text.lstrip()
    if head[:1] in ("{", "["):
        if "TrainingJobName" in head:
            return "sagemaker"
        if is_pod_list(head):
            return "kubernetes"
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
    if headerless_sacct(first):
        # The field order is whatever --format asked for: only a header says which is which.
        fields = len(first.split("|"))
        raise ShapeError(
            name,
            [
                Problem(
                    name,
                    None,
                    None,
                    "sacct output without its header (--noheader)",
                    f"line 1 has {fields} '|'-separated fields, the first a job id, but no line names them: "
                    "run sacct --parsable2 without --noheader, or add a first line naming the fields "
                    "in the --format order, e.g. JobID|Partition|Account|Submit|Start|End|State|NNodes|AllocTRES",
                )
            ],
        )
    if first.split()[:1] == ["JobID"] and first_line(head[len(first) + 1 :]).startswith("---"):
        raise ShapeError(
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
