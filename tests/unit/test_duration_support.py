"""Quantiles the data support (issue 31): a fitted quantile above the longest time any job was
watched is published as "> N days (beyond the data)", and the CLI, duration_fits.csv and the
report show the same figures for a class."""

from __future__ import annotations

import csv
import json
import math
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from markupsafe import escape

from athanor import flow
from athanor.cli import main
from athanor.model import durations as D
from athanor.publish import load_report_data
from athanor.publish.artifacts import write_csvs
from athanor.publish.render import render_html
from athanor.settings import Settings
from athanor.warehouse import connect

DAY_S = 86400.0


def test_a_censored_sample_whose_p99_is_ten_times_its_longest_run_publishes_beyond_the_data() -> None:
    # Two runs end after 1 and 2 days; eight are still going after 10 days (censored there).
    # Exponential censored MLE: rate = events / time watched = 2 / (1 + 2 + 8 * 10) days = 2/83,
    # so p50 = ln 2 * 41.5 = 28.77 d, p90 = ln 10 * 41.5 = 95.56 d, p99 = ln 100 * 41.5 = 191.11 d:
    # 19 times the longest time any run was watched (10 days).
    x = np.array([1, 2] + [10] * 8) * DAY_S
    censored = np.array([False, False] + [True] * 8)
    fit = D.fit_durations(x, censored, families=("exponential",), gof_replicates=0, ci_replicates=0)
    assert fit.params["rate_per_s"] == pytest.approx(2 / (83 * DAY_S), rel=1e-5)
    assert fit.p99_s / DAY_S == pytest.approx(math.log(100) * 41.5, rel=1e-5)
    assert fit.p99_s > 10 * fit.data_limit_s and fit.data_limit_s == 10 * DAY_S

    record = fit.to_record()
    assert record["beyond_data"] == ["p50", "p90", "p99"]
    shown = D.published_quantiles(record)
    assert shown["p99_s"] is None and shown["p99_beyond_data"] is True
    assert shown["p99_text"] == "> 10 days (beyond the data)"
    # Eight of ten censored: more than half, so the class carries a note.
    assert record["censored_note"].startswith("8 of 10 runs censored (80 %)")
    table = D.format_table([record])
    assert table.count("> 10 days (beyond the data)") == 3 and "191" not in table
    assert "8 of 10 runs censored" in table


def test_a_quantile_at_or_below_the_longest_run_is_published_as_fitted() -> None:
    # Nothing censored, ten runs of 1..10 days: exponential rate = 10 / 55 per day, so
    # p50 = ln 2 * 5.5 = 3.81 d (within the 10 days watched), p90 = ln 10 * 5.5 = 12.66 d (beyond).
    x = np.arange(1, 11) * DAY_S
    fit = D.fit_durations(x, families=("exponential",), gof_replicates=0, ci_replicates=0)
    shown = D.published_quantiles(fit.to_record())
    assert shown["p50_s"] / DAY_S == pytest.approx(math.log(2) * 5.5, rel=1e-5)
    assert not shown["p50_beyond_data"] and shown["p50_text"] is None
    assert shown["p90_s"] is None and shown["p90_text"] == "> 10 days (beyond the data)"
    assert fit.to_record()["censored_note"] is None


HEADER = (
    "job_id,submit_time,start_time,end_time,state,instance_type,instance_count,gpus_per_instance,"
    "pricing_model,team,project,model,checkpoint_interval_s,checkpoint_time_s,restart_count,notes"
)
AS_OF = date(2026, 11, 30)


def _job_log(path: Path) -> None:
    """Team lab: 160 jobs from September, most preempted or still running (censored), one that
    ends the file at noon on AS_OF; and 40 long jobs that started in May, before the nightly's
    120-day window."""
    rng = np.random.default_rng(31)
    lines = [HEADER]

    def line(job: str, begin: datetime, end: datetime | None, state: str) -> str:
        stop = "" if end is None else f"{end:%Y-%m-%dT%H:%M:%SZ}"
        return (
            f"{job},{begin:%Y-%m-%dT%H:%M:%SZ},{begin:%Y-%m-%dT%H:%M:%SZ},{stop},{state},"
            "p4d.24xlarge,1,8,spot,lab,p,m,600,20,0,"
        )

    for i, hours in enumerate(rng.lognormal(np.log(20.0), 1.6, 160)):
        begin = datetime(2026, 9, 1) + timedelta(hours=13 * i)
        end = begin + timedelta(seconds=round(float(hours) * 3600))
        if i % 10 < 6:  # preempted after a share of its work
            end = begin + timedelta(seconds=round(float(hours) * 3600 * rng.uniform(0.02, 0.2)))
            lines.append(line(f"lab-{i:03d}", begin, end, "preempted"))
        elif end > datetime(2026, 11, 30, 12):
            lines.append(line(f"lab-{i:03d}", begin, None, "running"))
        else:
            lines.append(line(f"lab-{i:03d}", begin, end, "completed"))
    for i in range(40):
        begin = datetime(2026, 5, 1) + timedelta(hours=17 * i)
        lines.append(line(f"old-{i:03d}", begin, begin + timedelta(days=3 + i % 5), "completed"))
    lines.append(line("last", datetime(2026, 11, 30, 11), datetime(2026, 11, 30, 12), "completed"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_cli_csv_and_report_show_the_same_figures_for_a_class(tmp_path: Path, capsys) -> None:
    home = tmp_path / "home"
    log = home / "landing" / "jobs" / "jobs.csv"
    _job_log(log)
    settings = Settings.from_env({"ATHANOR_HOME": str(home), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"})
    run = {"run_id": "night", "params": {"as_of": AS_OF.isoformat()}}
    landed = flow.run_stage("land", run, settings=settings)
    flow.run_stage("load", run, landed, settings=settings)
    flow.run_stage("fit_durations", run, settings=settings)
    con = connect(settings.warehouse)
    try:
        data = load_report_data(con, AS_OF, "night")
    finally:
        con.close()
    write_csvs(data, tmp_path / "report")
    with (tmp_path / "report" / "duration_fits.csv").open() as f:
        row = next(r for r in csv.DictReader(f) if r["group_key"] == "team=lab")
    html = render_html(data)

    assert main(["durations", str(log), "--group-by", "team", "--format", "json"]) == 0
    (cli,) = json.loads(capsys.readouterr().out)
    assert cli["group"] == "team=lab"
    # The night's jobs: the 161 of the window, not the 40 of May the whole file holds.
    assert cli["n"] == int(row["n"]) == 161
    assert cli["censored"] == int(row["censored"])
    shown = D.published_quantiles(cli)
    # Most of the class is censored; its fitted p99 (about 55 days) lies past the 22 days its
    # longest-watched job ran (a job still running at the day's end): shown as text everywhere.
    assert cli["beyond_data"] == ["p99"] and shown["p99_text"] == "> 22 days (beyond the data)"
    assert row["censored_note"] == cli["censored_note"] and escape(cli["censored_note"]) in html
    for q in D.QUANTILE_NAMES:
        assert row[f"{q}_beyond_data"] == str(shown[f"{q}_beyond_data"])
        if shown[f"{q}_s"] is None:
            assert row[f"{q}_s"] == ""
            assert escape(shown[f"{q}_text"]) in html
        else:
            assert float(row[f"{q}_s"]) == pytest.approx(shown[f"{q}_s"], rel=1e-9)
    assert float(row["data_limit_s"]) == pytest.approx(cli["data_limit_s"], rel=1e-12)

    assert main(["durations", str(log), "--group-by", "team"]) == 0
    table = capsys.readouterr().out
    for q in D.QUANTILE_NAMES:
        if shown[f"{q}_text"]:
            assert shown[f"{q}_text"] in table


def test_a_spot_decision_on_a_class_fitted_beyond_its_data_says_so() -> None:
    from athanor.model.demand import class_durations

    # The duration_fits row of the first test's sample, as the recommender reads it.
    row = {
        "group_key": "team=lab", "family": "exponential", "params": {"rate_per_s": 2 / (83 * DAY_S)},
        "n": 10, "censored": 8, "borrowed_from": None, "data_limit_s": 10 * DAY_S,
        "p50_beyond_data": False, "p90_beyond_data": True, "p99_beyond_data": True,
    }  # fmt: skip
    fitted = class_durations([row], team="lab")
    assert fitted.beyond_data == ("p90", "p99")
    assert fitted.describe() == (
        "exponential fitted on team=lab (10 jobs, 8 censored); p90/p99 > 10 days (beyond the data)"
    )
    # The draws themselves are unchanged: the model's quantiles, in hours.
    assert float(fitted.ppf_h(0.99)) == pytest.approx(math.log(100) * 41.5 * 24, rel=1e-12)
