"""The duration fits see a window of recent jobs and reuse a stored fit whose inputs are unchanged.

The job log is test_fit_fanout's: team `big` 150 jobs, `mid` 120, `tiny` 30 (which borrows the
fit of all 300), all started in November 2026.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

import duckdb
import pytest

from athanor import flow
from athanor.model import nightly as fits
from athanor.settings import Settings
from tests.unit.test_fit_fanout import DAY, HEADER, _fits, _job_log, _settings


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("reuse")
    _job_log(home / "landing" / "jobs" / "jobs.csv")
    settings = Settings.from_env({"ATHANOR_HOME": str(home), "ATHANOR_DUCKDB_MEMORY_LIMIT": "1GB"})
    run = {"run_id": "ingest", "params": DAY}
    flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    return settings.warehouse


def _fitted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels fitted from here on (the real fit still runs)."""
    labels: list[str] = []
    real = fits.fit

    def counting(frame, group_by, label):
        labels.append(label)
        return real(frame, group_by, label)

    monkeypatch.setattr(fits, "fit", counting)
    return labels


@pytest.mark.slow
def test_a_night_without_new_jobs_fits_nothing_and_stores_the_same_fits(
    loaded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path, loaded)
    fitted = _fitted(monkeypatch)
    flow.run_stage("fit_durations", {"run_id": "first", "params": DAY}, settings=settings)
    assert fitted == ["all", "team=big", "team=mid"]
    flow.run_stage("fit_durations", {"run_id": "second", "params": DAY}, settings=settings)
    assert fitted == ["all", "team=big", "team=mid"]  # nothing more
    assert _fits(settings.warehouse, "second") == _fits(settings.warehouse, "first")
    with duckdb.connect(str(settings.warehouse), read_only=True) as con:
        cached = con.execute("select group_label, run_id from duration_fit_cache order by 1").fetchall()
    assert cached == [("all", "first"), ("team=big", "first"), ("team=mid", "first")]


@pytest.mark.slow
def test_a_changed_group_and_its_ancestor_are_fitted_again(
    loaded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path, loaded)
    flow.run_stage("fit_durations", {"run_id": "first", "params": DAY}, settings=settings)
    # One more mid job: mid's inputs and all's change, big's do not.
    extra = Path(settings.landing) / "jobs2" / "jobs.csv"
    extra.parent.mkdir(parents=True)
    extra.write_text(
        HEADER + "\nmid-new,2026-11-20T00:00:00Z,2026-11-20T00:00:00Z,2026-11-20T02:00:00Z,completed,"
        "p4d.24xlarge,1,8,on_demand,mid,p,m,600,20,0,\n"
    )
    run = {"run_id": "ingest2", "params": DAY}
    flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    fitted = _fitted(monkeypatch)
    flow.run_stage("fit_durations", {"run_id": "second", "params": DAY}, settings=settings)
    assert fitted == ["all", "team=mid"]
    rows = {row[2]: row for row in _fits(settings.warehouse, "second")}
    assert (rows["all"][3], rows["team=mid"][3], rows["team=big"][3]) == (301, 121, 150)


@pytest.mark.slow
def test_the_fan_out_reuses_too(loaded: Path, tmp_path: Path) -> None:
    settings = _settings(tmp_path, loaded)
    flow.run_stage("fit_durations", {"run_id": "first", "params": DAY}, settings=settings)
    run = {"run_id": "fanned", "params": DAY}
    planned = json.loads(json.dumps(flow.run_stage("fit_durations", run, settings=settings, part="plan")))
    assert planned["items"] == []
    assert sorted(planned["reused"]) == ["all", "team=big", "team=mid"]
    flow.run_stage("fit_durations", run, planned, [], settings=settings, part="gather")
    assert _fits(settings.warehouse, "fanned") == _fits(settings.warehouse, "first")


def test_the_fingerprint_changes_with_a_job_or_the_grouping(loaded: Path) -> None:
    with duckdb.connect(str(loaded), read_only=True) as con:
        frame = fits.read_jobs(con, date(2026, 11, 30))
    mid = frame[frame["team"] == "mid"]
    base = fits.input_fingerprint(mid, ["team"], "team=mid")
    assert fits.input_fingerprint(mid.iloc[::-1], ["team"], "team=mid") == base  # row order: no
    changed = mid.copy()
    changed.loc[changed.index[0], "duration_s"] += 1
    assert fits.input_fingerprint(changed, ["team"], "team=mid") != base
    assert fits.input_fingerprint(mid, ["team", "model"], "team=mid") != base


def test_the_fit_window_keeps_the_jobs_started_in_its_last_days(loaded: Path, tmp_path: Path) -> None:
    # Every job started from 2026-11-01 on: a 30-day window to 2026-11-30 starts on 2026-11-01
    # (all 300 jobs); a 29-day one on 2026-11-02, leaving out the jobs started on the 1st: each
    # team's job i starts i*4 hours after midnight, so i = 0..5 that day, 6 per team, 18 in all.
    with duckdb.connect(str(loaded), read_only=True) as con:
        thirty = fits.read_jobs(con, date(2026, 11, 30), window_days=30)
        twenty_nine = fits.read_jobs(con, date(2026, 11, 30), window_days=29)
        unbounded = fits.read_jobs(con, date(2026, 11, 30), window_days=None)
        started = con.execute(
            "select count(*) from job_run_facts where start_time < ?", [datetime(2026, 11, 2)]
        ).fetchone()[0]
    assert len(thirty) == len(unbounded) == 300
    assert started == 18
    assert len(twenty_nine) == 300 - 18
