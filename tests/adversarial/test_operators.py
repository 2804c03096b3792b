"""What an operator meets (issue 30): a rejected delivery holds back only itself, the night's
summaries say what was really loaded, a dry run says what a real run would do, a misspelt conf
key is refused, and the task log carries the rejection (at WARNING), not Great Expectations.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from athanor import errors, flow
from athanor.publish.data import load_report_data
from athanor.publish.render import render_html
from athanor.warehouse import connect
from tests.adversarial.conftest import GCP
from tests.unit.test_flow import landing_of_fixtures, query, settings_for, untimed

JOBS_LINE = "jobs.csv: generic job log, 6 jobs, 50% censored"


def spoil_the_bill(landing: Path) -> None:
    rows = [json.loads(line) for line in GCP.read_text().splitlines()]
    rows[2]["cost"] = "ten"
    (landing / "gcp" / GCP.name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")


@pytest.mark.slow
def test_a_rejected_delivery_is_held_back_alerted_and_the_night_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    landing = landing_of_fixtures(tmp_path)
    spoil_the_bill(landing)
    settings = settings_for(tmp_path)
    run = {"run_id": "night-1", "params": {}}
    landed = flow.run_stage("land", run, settings=settings)
    with caplog.at_level(logging.INFO, logger="athanor"):
        loaded = flow.run_stage("load", run, landed, settings=settings)  # no exception: the night goes on
        checked = flow.run_stage("validate", run, loaded, settings=settings)
    held = settings.quarantine / "night-1" / GCP.name
    assert untimed(loaded["loaded"]) == [JOBS_LINE]
    assert loaded["quarantined"] == [str(held)]
    assert loaded["counts"] == {"loaded": 1, "unchanged": 0, "empty": 0, "waiting": 0, "rejected": 1}
    assert (checked["loaded"], checked["unchanged"], checked["rejected"]) == (1, 0, 1)
    # The rejection is a WARNING of the task log, with its reason.
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(m.startswith(f"{GCP.name} rejected (billing, quarantined)") for m in warned), warned
    # Its alert says where the delivery is and how to release it.
    ((kind, message),) = query(settings.warehouse, "select kind, message from spend_alerts")
    assert kind == "quarantine"
    assert message.startswith(f"Athanor held back a delivery: {GCP.name} row 3, column cost")
    assert message.endswith(
        f"It is in quarantine at {held}; once fixed (or to load it as it is), "
        f"run: athanor quarantine release {held}"
    )
    # The stage is recorded as a success; the ledger holds the delivery as quarantined.
    assert query(settings.warehouse, "select status from pipeline_runs where stage = 'load'") == [
        ("success",)
    ]


@pytest.mark.slow
def test_the_report_names_what_was_held_back_and_what_the_night_loaded(tmp_path: Path) -> None:
    landing = landing_of_fixtures(tmp_path)
    spoil_the_bill(landing)
    settings = settings_for(tmp_path)
    for night in ("night-1", "night-2"):
        run = {"run_id": night, "params": {}}
        flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    con = connect(settings.warehouse, memory_limit="1GB")
    try:
        data = load_report_data(con, __import__("datetime").date(2026, 11, 30), "report-run")
    finally:
        con.close()
    page = render_html(data)
    banner = page[page.index('id="held-back"') : page.index("</div>", page.index('id="held-back"'))]
    assert "1 delivery held back" in banner
    assert f"<code>{GCP.name}</code> (billing" in banner
    assert "row 3, column cost: not a decimal number" in banner
    # The second night loaded nothing new: the data-quality tile says so.
    tile = page[page.index('id="summary-intake"') :].split("</div>", 1)[0]
    assert "0 loaded, 1 unchanged, 0 rejected: nothing new, the figures are those of earlier loads" in tile


@pytest.mark.slow
def test_validate_counts_what_was_loaded_not_the_summary_lines(tmp_path: Path) -> None:
    landing_of_fixtures(tmp_path)
    settings = settings_for(tmp_path)
    summaries = []
    for night in ("night-1", "night-2"):
        run = {"run_id": night, "params": {}}
        loaded = flow.run_stage(
            "load", run, flow.run_stage("land", run, settings=settings), settings=settings
        )
        summaries.append(flow.run_stage("validate", run, loaded, settings=settings))
    assert [(s["loaded"], s["unchanged"], s["rejected"]) for s in summaries] == [(2, 0, 0), (0, 2, 0)]


@pytest.mark.slow
def test_a_dry_run_says_what_a_real_run_would_do(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    landing = landing_of_fixtures(tmp_path)
    settings = settings_for(tmp_path)
    run = {"run_id": "real", "params": {}}
    flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    (landing / "jobs" / "jobs.csv").write_text((landing / "jobs" / "jobs.csv").read_text() + "\n")
    dry = {"run_id": "dry", "params": {"dry_run": True}}
    with caplog.at_level(logging.INFO, logger="athanor"):
        summary = flow.run_stage(
            "load", dry, flow.run_stage("land", dry, settings=settings), settings=settings
        )
    assert summary["counts"] == {"would_load": 1, "unchanged": 1}
    said = [r.getMessage() for r in caplog.records if "(dry run)" in r.getMessage()]
    assert f"load (dry run): would skip {landing / 'gcp'}: unchanged since its last load" in said
    assert any(m.startswith(f"load (dry run): would load {landing / 'jobs'}") for m in said)


def test_a_misspelt_conf_key_is_refused_with_the_valid_ones(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    # As Airflow builds it: the DAG's declared params, the run's conf merged in key by key.
    dag = SimpleNamespace(params={"as_of": None, "source": None, "dry_run": False})
    context = {"run_id": "typo", "dag": dag, "params": {**dag.params, "dryrun": True, "asof": "2026-11-30"}}
    with pytest.raises(errors.UnknownParams) as refused:
        flow.run_stage("land", context, settings=settings)
    assert str(refused.value) == "unknown conf keys 'asof', 'dryrun': this DAG takes as_of, dry_run, source"
    assert not settings.warehouse.exists()


@pytest.mark.slow
def test_great_expectations_says_nothing_at_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    landing_of_fixtures(tmp_path)
    settings = settings_for(tmp_path)
    run = {"run_id": "quiet", "params": {}}
    with caplog.at_level(logging.INFO):
        flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    chatter = [r.name for r in caplog.records if r.name.startswith("great_expectations")]
    assert chatter == []
    assert any(r.name.startswith("athanor") for r in caplog.records)
