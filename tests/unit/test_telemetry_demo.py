"""The demo's telemetry describes the fleet its bill and job log describe: samples only while
the bill has the instance running, idle tails billed, one-GPU jobs, gaps in collection."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from athanor.demo.config import DemoConfig
from athanor.demo.jobs import cutoff_of, simulate
from athanor.demo.telemetry import (
    PROMETHEUS_GAP,
    SMI_GAP,
    STEP_S,
    generate_telemetry,
    idle_tail_s,
    instances,
    window,
)
from athanor.demo.usage import usage_lines


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    cfg = DemoConfig()
    fleet = simulate(cfg)
    cutoff = cutoff_of(cfg, None)
    out = tmp_path_factory.mktemp("demo")
    files = generate_telemetry(out, cfg, fleet, cutoff)
    return cfg, fleet, cutoff, out, files, usage_lines(cfg, fleet, cutoff)


def _smi_samples(out: Path) -> pd.DataFrame:
    records = []
    for path in sorted((out / "telemetry" / "nvidia-smi").rglob("*.csv")):
        instance = path.name.split(".", 1)[0]
        with path.open() as f:
            reader = csv.reader(f, skipinitialspace=True)
            next(reader)
            for row in reader:
                at = datetime.strptime(row[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
                util = float(row[4].removesuffix(" %"))
                records.append((instance, int(at), row[2], util))
    return pd.DataFrame(records, columns=["instance", "at", "bus", "util"])


@pytest.mark.slow
def test_samples_only_while_the_bill_has_the_instance_running(demo) -> None:
    _, _, _, out, _, usage = demo
    smi = _smi_samples(out)
    billed = usage.groupby("resource_id").agg(start=("start_s", "min"), end=("end_s", "max"))
    joined = smi.join(billed, on="instance")
    assert joined["start"].notna().all(), "every host is an instance of the bill"
    assert ((joined["at"] >= joined["start"]) & (joined["at"] < joined["end"])).all()
    # Billed seconds of each sampled instance are its whole span: no sample outside a billed hour.
    seconds = usage.groupby("resource_id")["seconds"].sum()
    assert (seconds[billed.index] == billed["end"] - billed["start"]).all()


@pytest.mark.slow
def test_idle_tails_are_billed_and_idle(demo) -> None:
    cfg, fleet, cutoff, out, _, usage = demo
    idle = [i for i in instances(cfg, fleet, cutoff) if i.end_s > i.job_end_s]
    assert len(idle) >= 10
    assert {i.team for i in idle} <= {"vision", "speech", "llm"}  # SageMaker stops its instances
    seconds = usage.groupby("resource_id")["seconds"].sum()
    for inst in idle:
        # The bill runs to the end of the tail, the job's work stops before it.
        assert seconds[inst.resource_id] == inst.end_s - inst.start_s
        assert inst.end_s - inst.job_end_s >= 3 * 3600 or inst.end_s == cutoff
    smi = _smi_samples(out)
    for inst in (i for i in idle if i.team == "vision"):
        after = smi[(smi["instance"] == inst.resource_id) & (smi["at"] >= inst.job_end_s)]
        assert len(after) and after["util"].max() <= 2.0


def test_idle_tail_only_on_the_last_run_of_a_finished_job_in_the_window() -> None:
    cfg = DemoConfig()
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b", "c", "d"],
            "final_state": ["completed", "cancelled", "completed", "completed"],
            "team": ["vision", "vision", "recsys", "llm"],
            "pricing_model": ["on_demand", "on_demand", "on_demand", "spot"],
        }
    )
    start, _ = window(cfg)
    runs = pd.DataFrame(
        {"job": [0, 1, 2, 3], "seg": [0, 0, 0, 0], "k": [0, 0, 0, 0], "end_s": [start + 3600] * 4}
    )
    # Whichever instances the hash picks, only the completed on-demand vision run can idle.
    assert (idle_tail_s(cfg, jobs, runs)[1:] == 0).all()
    early = runs.assign(end_s=start - 3600)
    assert (idle_tail_s(cfg, jobs, early) == 0).all()


@pytest.mark.slow
def test_a_one_gpu_job_keeps_seven_of_eight_gpus_at_zero(demo) -> None:
    cfg, fleet, cutoff, out, _, _ = demo
    smi = _smi_samples(out)
    yolo = [i for i in instances(cfg, fleet, cutoff) if i.model == "yolo-x" and i.gpus == 8]
    assert yolo
    inst = yolo[0]
    busy = smi[(smi["instance"] == inst.resource_id) & (smi["at"] < inst.job_end_s)]
    by_gpu = busy.groupby("bus")["util"].agg(["min", "max"]).sort_index()
    assert len(by_gpu) == 8
    assert by_gpu.iloc[0]["min"] >= 55.0
    assert (by_gpu.iloc[1:]["max"] == 0.0).all()


@pytest.mark.slow
def test_gaps_in_collection_while_the_bill_runs(demo) -> None:
    cfg, fleet, cutoff, out, _, usage = demo
    start, _ = window(cfg)
    gap = (start + 86400 + SMI_GAP[0], start + 86400 + SMI_GAP[0] + SMI_GAP[1])
    smi = _smi_samples(out)
    billed = usage.groupby("resource_id").agg(start=("start_s", "min"), end=("end_s", "max"))
    vision = {i.resource_id for i in instances(cfg, fleet, cutoff) if i.team == "vision"}
    silent = [
        rid
        for rid in vision
        if billed.loc[rid, "start"] < gap[0]
        and billed.loc[rid, "end"] > gap[1]
        and not ((smi["instance"] == rid) & (smi["at"] >= gap[0]) & (smi["at"] < gap[1])).any()
    ]
    assert silent, "a vision host running through the gap sent nothing during it"
    day = datetime.fromtimestamp(start + 86400, UTC).strftime("%Y-%m-%d")
    doc = json.loads((out / "telemetry" / "prometheus" / day / f"dcgm-{day}.json").read_text())
    instants = {t for series in doc["data"]["result"] for t, _ in series["values"]}
    p_gap = (start + 86400 + PROMETHEUS_GAP[0], start + 86400 + PROMETHEUS_GAP[0] + PROMETHEUS_GAP[1])
    assert not any(p_gap[0] <= t < p_gap[1] for t in instants)
    assert any(t == p_gap[1] for t in instants)  # scraping resumes on the next step
    assert all(t % STEP_S == 0 for t in instants)


def test_cloudwatch_sums_over_the_hosts_gpus(demo) -> None:
    _, _, _, out, files, _ = demo
    answers = sorted((out / "telemetry" / "cloudwatch").rglob("*.json"))
    assert answers
    values = [
        v
        for path in answers
        for result in json.loads(path.read_text())["MetricDataResults"]
        if result["Label"].endswith(" GPUUtilization")
        for v in result["Values"]
    ]
    # Summed over 4 or 8 GPUs busy at 55-100 %: above 100, never above 800.
    assert max(values) > 100.0 and max(values) <= 800.0
    assert {f["format"] for f in files} == {"nvidia_smi", "nvidia_smi_nounits", "prometheus", "cloudwatch"}
    assert np.sum([f["samples"] for f in files]) > 100_000
