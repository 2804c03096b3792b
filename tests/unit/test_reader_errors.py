"""Bad input to the new readers names the file, the place and the rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from athanor.ingest.inventory import InventoryError, read_ec2_instances


def _listing(launch: str) -> dict:
    instance = {"InstanceId": "i-0abc", "InstanceType": "p4d.24xlarge", "LaunchTime": launch}
    return {"Reservations": [{"Instances": [{"InstanceId": "i-0first"}]}, {"Instances": [instance]}]}


def test_describe_instances_refuses_a_bad_launch_time_naming_file_instance_and_column(tmp_path: Path) -> None:
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(_listing("yesterday noon")))
    with pytest.raises(InventoryError) as caught:
        read_ec2_instances(path)
    error = caught.value
    assert (error.column, error.value) == ("LaunchTime", "yesterday noon")
    assert "instances.json" in str(error)
    assert "reservation 2, instance 1 (i-0abc): LaunchTime must be an ISO 8601 time" in str(error)


def test_describe_instances_that_is_not_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "instances.json"
    path.write_text('{"Reservations": [')
    with pytest.raises(InventoryError, match=r"instances\.json: not readable JSON"):
        read_ec2_instances(path)


def test_describe_instances_reads_a_good_launch_time_in_utc(tmp_path: Path) -> None:
    frame = read_ec2_instances(_listing("2026-11-01T02:00:00+02:00"))
    assert str(frame.iloc[1]["launch_time"]) == "2026-11-01 00:00:00"


def test_a_pod_list_counts_the_items_it_skips() -> None:
    from athanor.ingest.jobs.kubernetes import parse_kubernetes

    gpu_pod = {
        "kind": "Pod",
        "metadata": {"name": "train-0", "namespace": "llm", "creationTimestamp": "2026-11-01T00:00:00Z"},
        "spec": {"nodeName": "ip-10-0-1-11.ec2.internal", "containers": [
            {"resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"state": {"running": {"startedAt": "2026-11-01T00:01:00Z"}}}]},
    }  # fmt: skip
    cpu_pod = {**gpu_pod, "spec": {"containers": [{"resources": {"limits": {"cpu": "2"}}}]}}
    service = {"kind": "Service", "metadata": {"name": "api"}}
    document = {"kind": "List", "items": [gpu_pod, cpu_pod, service]}
    frame, problems, warnings, _ = parse_kubernetes(json.dumps(document).encode(), "pods.json")
    assert list(frame["job_id"]) == ["train-0"] and not problems.total
    assert warnings == [
        "pods.json: 1 pods without GPUs skipped",
        "pods.json: 1 items that are not Pods skipped",
    ]
