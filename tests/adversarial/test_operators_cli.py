"""What an operator meets at the command line (issue 30, Operators): every option says what it is
for, `quarantine list` speaks JSON, `-v run` says each delivery once, and `run --dry-run` does what
the ingest form's dry_run does."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from athanor import cli
from athanor.settings import Settings
from tests.adversarial.conftest import GCP, JOBS


def _landing(home: Path) -> Path:
    landing = home / "landing"
    for folder, fixture in (("gcp", GCP), ("jobs", JOBS)):
        (landing / folder).mkdir(parents=True)
        shutil.copy(fixture, landing / folder)
    return landing


def test_every_option_and_argument_of_every_command_says_what_it_is_for() -> None:
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    silent = [
        f"{name} {action.dest}"
        for name, command in commands.items()
        for action in command._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert silent == []
    # A default the code picks is in the help (argparse shows none by itself).
    assert "(default: 7)" in commands["demo"].format_help()
    assert "(default: 12" in commands["commit-plan"].format_help()
    assert "output format (default: table)" in commands["commit-plan"].format_help()


def test_quarantine_list_as_json_keeps_the_whole_reason(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from athanor.quality import quarantine

    bad = home / "bills" / "bill.csv"
    bad.parent.mkdir()
    bad.write_text("a,b\n1,2\n")
    reason = "bill.csv row 2, column b: " + "x" * 200
    held = quarantine([bad], reason, Settings.from_env().quarantine, "manual__1")
    assert cli.main(["quarantine", "list", "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [{k: r[k] for k in ("run_id", "delivery", "files", "reason", "path")} for r in records] == [
        {
            "run_id": "manual__1",
            "delivery": "bill.csv",
            "files": ["bill.csv"],
            "reason": reason,
            "path": str(held),
        }
    ]


# A whole night: the slow tier (`make test`).
@pytest.mark.slow
def test_verbose_run_says_each_skipped_delivery_once(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    landing = _landing(home)
    assert cli.main(["run", "--source", str(landing)]) == 0
    capsys.readouterr()
    assert cli.main(["-v", "run", "--source", str(landing)]) == 0
    out, err = capsys.readouterr()
    said = (out + err).splitlines()
    for name in ("billing-export-202311.jsonl", "jobs.csv"):
        assert len([line for line in said if f"{name}: unchanged since load" in line]) == 1, name


def test_run_dry_run_lists_what_would_load_and_writes_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    landing = _landing(home)
    assert cli.main(["run", "--dry-run", "--source", str(landing)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"would load {landing / 'gcp'}: gcp/{GCP.name}",
        f"would load {landing / 'jobs'}: jobs/{JOBS.name}",
        "dry run: nothing fetched, loaded or published",
    ]
    # No warehouse, report or quarantine: only the landing folder is there.
    assert sorted(p.name for p in home.iterdir()) == ["landing"]
