"""No telemetry answer, job-log cell or budgets file of an odd shape stops the night.

Each was an unhandled exception (AttributeError, TypeError, RecursionError, a cast to int64)
that left the file in the landing, so every later night failed the same way. Now each is one
line naming the file (and where in it, and the rule), the delivery is quarantined, what was
loaded before stays, and the next night runs clean. A budgets file is configuration, not a
delivery: a bad one is one line, and the watch goes on without budgets.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from athanor import flow
from athanor.settings import Settings, WatchSettings
from athanor.warehouse import connect
from athanor.watch.budgets import BudgetsError, read_budgets
from tests.adversarial.conftest import GCP, JOBS

SHAPE = "rule telemetry_json_shape"


def prometheus(result: object) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


# A CloudWatch answer that is right in itself: the request beside it is what is wrong.
GOOD_ANSWER = json.dumps(
    {
        "MetricDataResults": [
            {
                "Id": "m1",
                "Label": "train-1/algo-1 GPUUtilization",
                "Timestamps": [1764460800],
                "Values": [400.0],
                "StatusCode": "Complete",
            }
        ]
    }
)

# (folder, {file name: content}, the night's one line about it)
TELEMETRY = [
    (
        "result-of-numbers",
        {"llm.json": prometheus([1, 2, 3])},
        f"llm.json: data.result[0] is 1, not a series {{metric, values}} ({SHAPE})",
    ),
    (
        "metric-a-list",
        {"llm.json": prometheus([{"metric": ["DCGM_FI_DEV_GPU_UTIL"], "values": []}])},
        f"llm.json: data.result[0].metric is ['DCGM_FI_DEV_GPU_UTIL'], not an object of labels ({SHAPE})",
    ),
    (
        "nested-200000-deep",
        # The envelope first, so that it is recognised as a Prometheus answer, as an attacker would.
        {"llm.json": prometheus([]).replace("[]", "[" * 200_000 + "]" * 200_000)},
        f"llm.json: not a telemetry answer: JSON nested too deep ({SHAPE})",
    ),
    (
        "cloudwatch-results-of-numbers",
        {"recsys.json": json.dumps({"MetricDataResults": [1, 2]})},
        f"recsys.json: MetricDataResults[0] is 1, not a result {{Id, Label, Timestamps, Values}} ({SHAPE})",
    ),
    (
        "cloudwatch-request-a-number",
        {"recsys.json": GOOD_ANSWER, "recsys.request.json": json.dumps({"MetricDataQueries": 7})},
        f"recsys.request.json: MetricDataQueries is 7, not a list ({SHAPE})",
    ),
]


def job_log(model_params: str) -> str:
    """The fixture job log with a model_params column, one cell of it set."""
    lines = JOBS.read_text().splitlines()
    rows = [lines[0] + ",model_params", *(line + "," for line in lines[1:])]
    rows[2] = lines[2] + "," + model_params
    return "\n".join(rows) + "\n"


TOO_LARGE = "beyond 9,007,199,254,740,992, the largest count read exactly"
JOB_LOGS = [
    (
        "params-1e30",
        {"jobs.csv": job_log("1e30")},
        f"jobs.csv row 2, column model_params: {TOO_LARGE} ('1e30')",
    ),
    (
        "params-19-digits",
        {"jobs.csv": job_log("9300000000000000000")},
        f"jobs.csv row 2, column model_params: {TOO_LARGE} ('9300000000000000000')",
    ),
]

CASES = TELEMETRY + JOB_LOGS


def night(settings: Settings, run_id: str) -> dict:
    run = {"run_id": run_id, "params": {}}
    return flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)


def billing_facts(settings: Settings) -> list[tuple]:
    con = connect(settings.warehouse, read_only=True)
    try:
        return con.execute("select * from billing_facts order by all").fetchall()
    finally:
        con.close()


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "files", "line"), CASES, ids=[c[0] for c in CASES])
def test_an_odd_shape_is_one_line_quarantined_and_the_next_night_runs_clean(
    home: Path, folder: str, files: dict[str, str], line: str
) -> None:
    settings = Settings.from_env()
    landing = Path(settings.landing)
    (landing / "gcp").mkdir(parents=True)
    shutil.copy(GCP, landing / "gcp")
    night(settings, "night-0")  # what was loaded before the odd file came
    before = billing_facts(settings)
    odd = landing / folder / "2026-11-30"
    odd.mkdir(parents=True)
    for name, text in files.items():
        (odd / name).write_text(text)

    assert night(settings, "night-1")["errors"] == [line]  # held back; the night goes on
    [held] = (settings.quarantine / "night-1").iterdir()
    assert sorted(f.name for f in held.iterdir()) == sorted([*files, "manifest.json", "validation.json"])
    assert not any(odd.iterdir())
    assert billing_facts(settings) == before

    summary = night(settings, "night-2")
    assert (summary["errors"], summary["quarantined"]) == ([], [])


# ------------------------------------------------------------------------------ budgets


def nested_yaml(depth: int) -> str:
    return "budgets: " + "[" * depth + "]" * depth + "\n"


def laughs(levels: int = 6) -> str:
    """The "billion laughs" YAML: each level ten aliases of the one before, 10^levels 'lol's from
    a file of a few hundred bytes. Nine levels is the billion; six keep the code before the alias
    refusal at about 7 MB when it expands them (into a budget's name), rather than 4.7 GB."""
    lines = ['a0: &a0 "lol"']
    for n in range(1, levels + 1):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]")
    lines.append(f"budgets:\n  - {{name: *a{levels}, scope: total, amount: 1}}")
    return "\n".join(lines) + "\n"


BUDGETS = [
    ("nested-50000-deep", lambda p: p.write_text(nested_yaml(50_000)), "budgets.yaml: line 1 not valid YAML: nested deeper than 32 levels"),
    ("a-directory", lambda p: p.mkdir(), "budgets.yaml: cannot be read (Is a directory)"),
    (
        "million-laughs",
        lambda p: p.write_text(laughs()),
        "budgets.yaml: line 1 not valid YAML: an anchor (&a0): a budgets file repeats nothing by reference",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make", "line"), BUDGETS, ids=[b[0] for b in BUDGETS])
def test_a_budgets_file_of_an_odd_shape_is_one_line(tmp_path: Path, case: str, make, line: str) -> None:
    path = tmp_path / "budgets.yaml"
    make(path)
    with pytest.raises(BudgetsError) as refused:
        read_budgets(path)
    assert str(refused.value) == line


@pytest.mark.slow
@pytest.mark.parametrize(("case", "make", "line"), BUDGETS, ids=[b[0] for b in BUDGETS])
def test_the_watch_goes_on_without_budgets_and_says_why(home: Path, case: str, make, line: str) -> None:
    from athanor.watch.nightly import watch_spend

    settings = Settings.from_env()
    (Path(settings.landing) / "gcp").mkdir(parents=True)
    shutil.copy(GCP, Path(settings.landing) / "gcp")
    night(settings, "night-0")
    budgets = home / "budgets.yaml"
    make(budgets)
    con = connect(settings.warehouse)
    try:
        from datetime import date

        summary = watch_spend(con, "night-1", date(2023, 11, 30), WatchSettings(budgets=budgets), None)
    finally:
        con.close()
    assert summary["budgets_error"] == line
    assert summary["budgets_breached"] == 0
