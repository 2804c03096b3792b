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


def test_a_price_item_without_its_price_is_named_and_the_rest_load(tmp_path: Path) -> None:
    from datetime import date

    from athanor.reference import price_files

    def vm(kind: str, price: object, **extra: object) -> dict:
        item = {"serviceName": "Virtual Machines", "armSkuName": "Standard_ND96isr_H100_v5",
                "armRegionName": "eastus", "currencyCode": "USD", "type": kind, "skuName": "ND96isr H100 v5",
                "productName": "NDisrH100v5 Series", "unitOfMeasure": "1 Hour", **extra}  # fmt: skip
        if price is not None:
            item["retailPrice"] = price
        return item

    page = {"Items": [
        vm("Consumption", 98.32),
        vm("Reservation", None, reservationTerm="1 Year"),  # no retailPrice
        vm("Reservation", 551221, reservationTerm="1 Year"),
        {**vm("Consumption", "n/a"), "armRegionName": "westus"},
    ]}  # fmt: skip
    good, broken = tmp_path / "page.json", tmp_path / "broken.json"
    good.write_text(json.dumps(page))
    unreadable = '{"Items": ['
    broken.write_text(unreadable)
    got = price_files.rates_from_files([broken, good], "t", date(2026, 9, 27))
    assert [str(p) for p in got.problems] == [
        f"broken.json item -: not JSON: {_json_error(unreadable)}",
        "page.json item 2 (Standard_ND96isr_H100_v5, eastus, Reservation, 1 Year): retailPrice missing",
        "page.json item 4 (Standard_ND96isr_H100_v5, westus, Consumption, ): retailPrice not a number ('n/a')",
    ]
    # The good reservation: 551,221 over 8,760 hours = 62.924772 $/h against 98.32 on demand.
    assert [(r.offer, r.effective_usd_per_h, r.on_demand_usd_per_h) for r in got.rates] == [
        ("azure_reservation", round(551221 / 8760, 6), 98.32)
    ]


def _json_error(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return str(e)
    raise AssertionError("valid JSON")


def test_a_price_file_that_is_missing_is_named_and_the_command_exits_1(tmp_path: Path, capsys) -> None:
    from athanor.reference import price_files

    out = tmp_path / "rates.csv"
    code = price_files.main(
        [str(tmp_path / "gone.json"), "--source-id", "t", "--as-of", "2026-09-27", "--out", str(out)]
    )
    assert code == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "0 rates from 1 files into rates.csv (0 rows)",
        "rejected: gone.json item -: cannot be read: No such file or directory",
    ]


def test_allocation_refuses_a_bad_day_and_a_period_that_ends_before_it_starts(tmp_path: Path, capsys) -> None:
    from athanor.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["allocation", "--warehouse", str(tmp_path / "w.duckdb"), "--since", "2026-13-01"])
    assert exit_info.value.code == 2
    assert "argument --since: invalid fromisoformat value: '2026-13-01'" in capsys.readouterr().err
    (tmp_path / "w.duckdb").touch()
    args = [
        "allocation",
        "--warehouse",
        str(tmp_path / "w.duckdb"),
        "--since",
        "2026-12-01",
        "--until",
        "2026-11-01",
    ]
    assert main(args) == 2
    assert (
        capsys.readouterr().err
        == "error: --since 2026-12-01 is not before --until 2026-11-01 (the end is excluded)\n"
    )
