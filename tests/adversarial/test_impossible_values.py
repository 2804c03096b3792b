"""Impossible job values do not change the GPU plan, and its options and the forecast's horizon
refuse what would make their answer meaningless.

A peak of 1,000,000 GiB, 200 GiB on an 80 GiB H100, 0 GPUs on an 8-GPU instance or a type no
catalog knows used to load and size the class's memory and GPU count; now each such run is left
out of the plan with a note saying which and why. `--deadline-slack` 0, -1, nan or inf and
`--candidates` naming a type the catalog does not know are refused by name, in one line; a
forecast reaches at most 730 days (36,500 took 81 s and 2.7 GB).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from athanor.cli import main
from athanor.recommend import gpu_choice

COLUMNS = (
    "job_id,team,project,model,phase,state,start_time,end_time,duration_s,instance_type,"
    "instance_count,gpus_per_instance,model_params,peak_gpu_memory_gib,samples_per_second"
).split(",")


def run(job_id: str, instance_type: str = "p5.48xlarge", gpus: int = 8, peak: float | None = 60.0) -> dict:
    """A completed two-hour run of the one class, on one instance."""
    return dict(
        zip(
            COLUMNS,
            [job_id, "llm", "pretrain", "llama-70b", "production", "completed",
             pd.Timestamp("2026-11-02 00:00"), pd.Timestamp("2026-11-02 02:00"), 7200.0,
             instance_type, 1, gpus, None, peak, None],
            strict=True,
        )
    )  # fmt: skip


GOOD = [run("j-1"), run("j-2", peak=70.0)]
IMPOSSIBLE = [
    run("j-3", peak=1_000_000.0),
    run("j-4", peak=200.0),
    run("j-5", gpus=0),
    run("j-6", instance_type="p9.96xlarge"),
]


def test_impossible_runs_are_left_out_of_the_plan_with_their_reasons() -> None:
    classes, notes = gpu_choice.class_inputs(pd.DataFrame(GOOD + IMPOSSIBLE))
    assert notes == [
        "1 run on instance types not in the GPU catalog (`athanor gpu-catalog` lists it), left out of "
        "the plan: j-6 on p9.96xlarge",
        "1 run with gpus_per_instance outside 1 to its type's GPUs, left out of the plan: j-5: 0 on "
        "p5.48xlarge (8)",
        "2 runs with a peak GPU memory above its GPU's, left out of the plan: j-3: 1e+06 GiB on "
        "p5.48xlarge (80 GiB per GPU); j-4: 200 GiB on p5.48xlarge (80 GiB per GPU)",
    ]
    # The class is what its two possible runs make it: the 70 GiB peak on 8 GPUs sizes its memory.
    [alone], _ = gpu_choice.class_inputs(pd.DataFrame(GOOD))
    [cls] = classes
    assert (cls.runs, cls.memory, cls.gpu_counts) == (2, alone.memory, (8,))
    assert cls.memory.total_gib == alone.memory.total_gib


@pytest.fixture
def job_log(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "job_id,submit_time,start_time,end_time,state,instance_type,instance_count,gpus_per_instance,"
        "pricing_model,team,project,model,peak_gpu_memory_gib\n"
        "j-1,2026-11-02T00:00:00Z,2026-11-02T00:00:00Z,2026-11-02T02:00:00Z,completed,p5.48xlarge,1,8,"
        "on_demand,llm,pretrain,llama-70b,60\n"
        "j-2,2026-11-02T00:00:00Z,2026-11-02T00:00:00Z,2026-11-02T02:00:00Z,completed,p5.48xlarge,1,8,"
        "on_demand,llm,pretrain,llama-70b,200\n"
    )
    return path


def refused(capsys, argv: list[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    return int(stopped.value.code), capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("slack", ["0", "-1", "nan", "inf"])
def test_a_deadline_slack_that_means_nothing_is_refused(
    home: Path, capsys, job_log: Path, slack: str
) -> None:
    assert refused(capsys, ["gpu-plan", str(job_log), f"--deadline-slack={slack}"]) == (
        2,
        f"athanor gpu-plan: error: argument --deadline-slack: {slack!r}: a finite number above 0 "
        "(1.5: half as long again)",
    )


def test_unknown_candidates_are_refused_by_name(home: Path, capsys, job_log: Path) -> None:
    assert refused(
        capsys, ["gpu-plan", str(job_log), "--candidates", "p5.48xlarge, p9.huge,g5.12xlarge,x"]
    ) == (
        2,
        "athanor gpu-plan: error: argument --candidates: not in the GPU catalog: p9.huge, x "
        "(`athanor gpu-catalog` lists the instance types)",
    )


def test_the_plan_of_a_log_notes_the_run_it_leaves_out(home: Path, capsys, job_log: Path) -> None:
    assert main(["gpu-plan", str(job_log), "--format", "json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "note: 1 run with a peak GPU memory above its GPU's, left out of the plan: j-2: 200 GiB on "
        "p5.48xlarge (80 GiB per GPU)"
    ]


@pytest.mark.parametrize("days", ["0", "731", "36500"])
def test_the_forecast_horizon_is_bounded(home: Path, capsys, days: str) -> None:
    assert refused(capsys, ["forecast", "--horizon-days", days]) == (
        2,
        f"athanor forecast: error: argument --horizon-days: {days}: a forecast reaches 1 to 730 days ahead",
    )


def test_the_bound_is_in_the_help(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["forecast", "--help"])
    assert "days ahead, 1 to 730" in " ".join(capsys.readouterr().out.split())


def test_the_setting_is_bounded_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from athanor.settings import Settings

    with pytest.raises(ValueError, match="ATHANOR_FORECAST_HORIZON_DAYS must be at most 730, got '36500'"):
        Settings.from_env({"ATHANOR_HOME": str(tmp_path), "ATHANOR_FORECAST_HORIZON_DAYS": "36500"})
