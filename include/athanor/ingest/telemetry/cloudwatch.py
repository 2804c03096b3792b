"""CloudWatch `GetMetricData` answers for SageMaker training jobs' GPU metrics.

`{"MetricDataResults": [{"Id": "m1", "Label": "...", "Timestamps": [...], "Values": [...],
"StatusCode": "Complete"}], "Messages": []}`, as `aws cloudwatch get-metric-data` prints it
(timestamps ISO 8601, newest first) or as the JSON API returns it (epoch seconds). Namespace
`/aws/sagemaker/TrainingJobs`, metrics GPUUtilization and GPUMemoryUtilization, dimension
`Host` = `<training-job-name>/algo-<n>` (one per instance of the job); other metrics are
skipped and counted.

An answer carries no dimensions, so each result's Host and metric come from:

1. the request, saved beside the answer as `<name>.request.json` (the `--cli-input-json`
   document: `{"MetricDataQueries": [{"Id": "m1", "MetricStat": {"Metric": {"Namespace": ...,
   "MetricName": ..., "Dimensions": [{"Name": "Host", "Value": ...}]}, ...}}], ...}`), matched
   by Id; else
2. the result's Label holding both, e.g. the dynamic label
   `${PROP('Dim.Host')} ${PROP('MetricName')}` -> `my-job/algo-1 GPUUtilization`.

A result naming neither refuses the file. GPUUtilization and GPUMemoryUtilization are summed
over the instance's GPUs (AWS: "0-100 multiplied by the number of GPUs"; 0-800 on an
ml.p4d.24xlarge): each is divided by the GPU count of the job's instance type, known from the
job's DescribeTrainingJob log already loaded (`job_run_facts`), and each of the host's GPUs
gets a row carrying that mean (CloudWatch cannot tell one busy GPU of eight from eight at
12.5 %). A job whose instance type is not known refuses the file: load the job log first.
Memory in GiB is the mean share times the GPU's memory in the catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from athanor.ingest.errors import IngestError
from athanor.ingest.telemetry.samples import Samples, expect, read_json

FORMAT = "cloudwatch_sagemaker"
NAMESPACE = "/aws/sagemaker/TrainingJobs"
METRICS = {"GPUUtilization": "gpu_util", "GPUMemoryUtilization": "gpu_memory"}
REQUEST_SUFFIX = ".request.json"
_HOST = re.compile(r"^(?P<job>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)/algo-\d+$")
_GOOD_STATUS = ("Complete", "PartialData")


@dataclass(frozen=True)
class HostGpus:
    """What the job's instance type says about each instance: its GPUs, their model and memory."""

    count: int
    model: str | None
    memory_gib: float | None


def looks_like(data: bytes) -> str | None:
    """'answer' for a GetMetricData answer, 'request' for the request saved beside it."""
    text = data[:65536].decode("utf-8", errors="replace")
    if not text.lstrip().startswith("{"):
        return None
    if '"MetricDataResults"' in text:
        return "answer"
    if '"MetricDataQueries"' in text:
        return "request"
    return None


def is_request(file: Path) -> bool:
    return file.name.endswith(REQUEST_SUFFIX)


def _queries(request: Path | None) -> dict[str, tuple[str | None, str | None, str | None]]:
    """Id -> (namespace, metric name, Host) from a saved request."""
    if request is None:
        return {}
    doc = expect(read_json(request), dict, request, "the request", "an object {MetricDataQueries}")
    queries = expect(doc.get("MetricDataQueries") or [], list, request, "MetricDataQueries", "a list")
    out = {}
    for n, query in enumerate(queries):
        where = f"MetricDataQueries[{n}]"
        expect(query, dict, request, where, "an object {Id, MetricStat}")
        stat = expect(query.get("MetricStat") or {}, dict, request, f"{where}.MetricStat", "an object")
        metric = expect(stat.get("Metric") or {}, dict, request, f"{where}.MetricStat.Metric", "an object")
        dimensions = expect(metric.get("Dimensions") or [], list, request, f"{where}...Dimensions", "a list")
        host = None
        for d, dimension in enumerate(dimensions):
            expect(dimension, dict, request, f"{where}...Dimensions[{d}]", "an object {Name, Value}")
            if dimension.get("Name") == "Host" and host is None:
                host = dimension.get("Value")
        named = {"Namespace": metric.get("Namespace"), "MetricName": metric.get("MetricName"), "Host": host}
        for key, value in named.items():
            if value is not None:
                expect(value, str, request, f"{where}: {key}", "a string")
        out[str(query.get("Id"))] = (named["Namespace"], named["MetricName"], named["Host"])
    return out


def _from_label(label: str) -> tuple[str | None, str | None]:
    """(Host, metric name) when the label holds both, as words."""
    words = label.split()
    host = next((w for w in words if _HOST.match(w)), None)
    metric = next((w for w in words if w in METRICS or w.endswith("Utilization")), None)
    return host, metric


def _instant(value: Any) -> datetime:
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC).replace(tzinfo=None)
    at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if at.tzinfo is None:
        raise ValueError("no UTC offset")
    return at.astimezone(UTC).replace(tzinfo=None)


def pair(files: Iterable[Path]) -> list[tuple[Path, Path | None]]:
    """Each answer with the request saved beside it (<name>.request.json for <name>.json), if any.

    A request without its answer refuses the delivery: it holds no sample.
    """
    files = list(files)
    requests = {f.name.removesuffix(REQUEST_SUFFIX): f for f in files if is_request(f)}
    answers = [f for f in files if not is_request(f)]
    stems = {f.name.removesuffix(".gz").removesuffix(".json") for f in answers}
    lonely = sorted(name for name in requests if name not in stems)
    if lonely:
        raise IngestError(
            requests[lonely[0]].name,
            f"a GetMetricData request without its answer ({lonely[0]}.json): nothing to load",
        )
    return [(f, requests.get(f.name.removesuffix(".gz").removesuffix(".json"))) for f in answers]


def read(
    pairs: list[tuple[Path, Path | None]],
    load_id: str,
    gpus_of: Callable[[str], HostGpus | None],
) -> tuple[Samples, dict[str, int]]:
    """The samples of the answers: one row per GPU of each Host per timestamp."""
    samples = Samples(load_id, FORMAT)
    skipped: dict[str, int] = {}
    for answer, request in pairs:
        _read_answer(answer, request, samples, skipped, gpus_of)
    return samples, skipped


def _read_answer(
    file: Path,
    request: Path | None,
    samples: Samples,
    skipped: dict[str, int],
    gpus_of: Callable[[str], HostGpus | None],
) -> None:
    doc = read_json(file)
    results = doc.get("MetricDataResults") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise IngestError(file.name, "not a GetMetricData answer (no MetricDataResults list)")
    queries = _queries(request)
    position = 0
    for n, result in enumerate(results):
        where = f"MetricDataResults[{n}]"
        expect(result, dict, file, where, "a result {Id, Label, Timestamps, Values}")
        rid, label = str(result.get("Id")), str(result.get("Label") or "")
        stamps = expect(result.get("Timestamps") or [], list, file, f"{where}.Timestamps", "a list")
        values = expect(result.get("Values") or [], list, file, f"{where}.Values", "a list")
        status = result.get("StatusCode", "Complete")
        if status not in _GOOD_STATUS:
            raise IngestError(
                file.name, f"result {rid} has StatusCode {status!r}: CloudWatch returned no data for it"
            )
        if len(stamps) != len(values):
            raise IngestError(file.name, f"result {rid}: {len(stamps)} Timestamps but {len(values)} Values")
        namespace, metric, host = queries.get(rid, (None, None, None))
        if metric is None or host is None:
            host, metric = _from_label(label)
        if namespace not in (None, NAMESPACE):
            skipped[f"{namespace} {metric}"] = skipped.get(f"{namespace} {metric}", 0) + 1
            position += len(values)
            continue
        if metric is None or host is None:
            raise IngestError(
                file.name,
                f"result {rid} (label {label!r}) names no Host <job>/algo-<n> and metric (rule "
                "telemetry_dimensions_known): label it \"${PROP('Dim.Host')} ${PROP('MetricName')}\" "
                f"or save the request beside the answer as {file.name.removesuffix('.json')}{REQUEST_SUFFIX}",
                column="Label",
            )
        field = METRICS.get(metric)
        if field is None:
            skipped[metric] = skipped.get(metric, 0) + 1
            position += len(values)
            continue
        m = _HOST.match(host)
        if m is None:
            raise IngestError(
                file.name,
                f"result {rid}: Host {host!r} is not a SageMaker training host (<job>/algo-<n>)",
                column="Host",
            )
        job = m.group("job")
        gpus = gpus_of(job)
        if gpus is None or gpus.count < 1:
            raise IngestError(
                file.name,
                f"training job {job!r} of Host {host!r}: its instance type is not known, so its "
                f"{metric} (summed over the instance's GPUs) cannot be divided among them; load the "
                "job's DescribeTrainingJob log first (rule telemetry_gpu_count_known)",
                column="Host",
            )
        for stamp, value in zip(stamps, values, strict=True):
            position += 1
            try:
                at = _instant(stamp)
                mean = float(value) / gpus.count
            except (TypeError, ValueError, OverflowError, OSError):
                raise IngestError(
                    file.name,
                    "not a timestamp with its number",
                    column=metric,
                    row=position,
                    examples=[f"row {position}: {stamp!r} {value!r}"],
                ) from None
            figure = (
                mean
                if field == "gpu_util"
                else (None if gpus.memory_gib is None else mean / 100.0 * gpus.memory_gib)
            )
            for index in range(gpus.count):
                identity = {
                    "host": host,
                    "gpu_id": f"{host}:{index}",
                    "gpu_index": index,
                    "gpu_model": gpus.model,
                    "job_name": job,
                    "memory_total_gib": gpus.memory_gib,
                }
                samples.set(file.name, position, identity, at, field, figure)


def finish(samples: Samples) -> None:
    for row in samples.rows.values():
        got = row.pop("metrics")
        row["utilisation_pct"] = got.get("gpu_util")
        row["memory_used_gib"] = got.get("gpu_memory")
        row["power_w"] = None
