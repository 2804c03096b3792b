"""`athanor` commands called in this process (`main([...])`), on fixture files, with the output
compared line for line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from athanor import flow
from athanor.cli import format_rows, main, s3_client
from athanor.errors import DataRejected
from athanor.settings import Settings
from athanor.warehouse import snapshots

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GCP = FIXTURES / "billing" / "gcp" / "billing-export-202311.jsonl"
JOBS = FIXTURES / "jobs" / "jobs.csv"
# The GCP fixture: cost 23.47 + 1.25 + 10 + 6.50 + 2 (tax), credits -2 and -7; usage in 2023-11.
GCP_LINE = "billing-export-202311.jsonl: gcp, 5 rows, billed USD 34.22, periods 2023-11"
# jobs.csv: six runs; preempted, still running and cancelled ones end without a finish (censored).
JOBS_LINE = "jobs.csv: generic job log, 6 jobs, 50% censored"


@pytest.fixture(autouse=True)
def aws_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials for boto3 clients that are built but never used: without them boto3 asks the
    EC2 metadata service for some."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """ATHANOR_HOME in the test's folder, and no other Athanor setting from the caller's shell."""
    for name in list(os.environ):
        if name.startswith(("ATHANOR_", "AWS_ENDPOINT_URL", "AWS_REGION")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ATHANOR_HOME", str(tmp_path))
    monkeypatch.setenv("ATHANOR_DUCKDB_MEMORY_LIMIT", "1GB")
    # main() lets SIGPIPE end the process, as a Unix filter should; pytest's process keeps its own.
    previous = signal.getsignal(signal.SIGPIPE)
    yield tmp_path
    signal.signal(signal.SIGPIPE, previous)


def untimed(text: str) -> list[str]:
    """Output lines without the load's duration (` [3.7s]`)."""
    return [re.sub(r" \[\d+\.\ds\]$", "", line) for line in text.splitlines()]


# ------------------------------------------------------------------------ ingest, query


@pytest.mark.slow
def test_ingest_prints_one_line_per_delivery_and_skips_them_the_second_time(home: Path, capsys) -> None:
    assert main(["ingest", str(GCP), str(JOBS)]) == 0
    assert untimed(capsys.readouterr().out) == [GCP_LINE, JOBS_LINE]
    assert (home / "warehouse" / "athanor.duckdb").is_file()

    assert main(["ingest", str(GCP), str(JOBS)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [re.sub(r"load \w{16}", "load <id>", line) for line in out] == [
        "billing-export-202311.jsonl: unchanged since load <id>, skipped",
        "jobs.csv: unchanged since load <id>, skipped",
    ]


# The command as a process runs: its last atexit hook (registered first) counts what the
# interpreter's last collection would traverse.
_LEFT_AT_EXIT = """
import atexit, gc, sys
atexit.register(lambda: print("left", len(gc.get_objects()), gc.get_freeze_count(), file=sys.stderr))
from athanor.cli import entry
sys.argv = ["athanor", *sys.argv[1:]]
entry()
"""


@pytest.mark.slow
def test_the_command_leaves_no_last_collection_and_nothing_open(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LEFT_AT_EXIT, "ingest", str(GCP)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert untimed(done.stdout) == [GCP_LINE]
    left, frozen = (int(n) for n in done.stderr.split("left ")[-1].split())
    assert frozen > 10_000  # the modules the load imported, and what they built
    assert left < 1_000  # what exiting itself made
    # Every connection was closed before: the warehouse was checkpointed, no log to replay.
    assert [p.name for p in (home / "warehouse").iterdir() if p.name.startswith("athanor.duckdb")] == [
        "athanor.duckdb"
    ]


def test_verbose_logs_what_the_load_did_on_stderr_and_quiet_prints_no_log(home: Path, capsys) -> None:
    assert main(["-v", "ingest", str(JOBS)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [JOBS_LINE]
    assert re.search(r"^\S+ \S+ INFO athanor\.\S+: .*jobs\.csv", err, re.MULTILINE), err
    # The handler goes with the command: the next one, without -v, logs nothing.
    assert main(["ingest", str(JOBS)]) == 0
    assert capsys.readouterr().err == ""


# The whole demo landing: 90 days of bills, jobs, inventories and telemetry.
@pytest.mark.slow
def test_demo_writes_where_run_looks_for_deliveries(home: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("ATHANOR_LANDING", str(tmp_path / "deliveries"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["demo"]) == 0
    assert "exports" in capsys.readouterr().out
    assert any((tmp_path / "deliveries" / "billing").iterdir())
    assert list(elsewhere.iterdir()) == []


def test_ingest_names_what_it_cannot_load_and_loads_the_rest(home: Path, tmp_path: Path, capsys) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not an export\n")
    missing = tmp_path / "nope.csv"
    assert main(["ingest", str(missing), str(notes), str(JOBS)]) == 1
    captured = capsys.readouterr()
    assert untimed(captured.out) == [JOBS_LINE]
    assert captured.err.splitlines() == [
        f"error: {missing}: no such file or folder",
        "error: notes.txt: not a known billing, job-log or inventory format (first line: 'not an export')",
    ]


def test_ingest_into_another_warehouse(home: Path, tmp_path: Path, capsys) -> None:
    other = tmp_path / "elsewhere" / "w.duckdb"
    assert main(["ingest", str(JOBS), "--warehouse", str(other)]) == 0
    assert other.is_file() and not (home / "warehouse" / "athanor.duckdb").exists()


@pytest.fixture
def loaded(home: Path, capsys) -> Path:
    assert main(["ingest", str(GCP), str(JOBS)]) == 0
    capsys.readouterr()
    return home


def test_query_as_table_csv_and_json(loaded: Path, capsys) -> None:
    censored = "select job_id, state from job_run_facts where censored order by job_id"
    assert main(["query", censored]) == 0
    assert capsys.readouterr().out == (
        "job_id    state\n"
        "--------  ---------\n"
        "j-0002    preempted\n"
        "j-0004    running\n"
        "j-0005    cancelled\n"
        "(3 rows)\n"
    )
    assert main(["query", censored, "--format", "csv"]) == 0
    assert capsys.readouterr().out == "job_id,state\nj-0002,preempted\nj-0004,running\nj-0005,cancelled\n"
    # Money is DECIMAL(38,12): JSON carries it as a string, exactly, without the padding zeros
    # past the cents (issue 30: it printed 34.220000000000), and so do the table and CSV.
    assert main(["query", "select sum(billed_cost) as usd from billing_facts", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"usd": "34.22"}]
    money = "select sum(billed_cost) as usd, min(billed_cost) as least, 0.000123::decimal(38,12) as tiny from billing_facts"
    assert main(["query", money, "--format", "csv"]) == 0
    assert capsys.readouterr().out == "usd,least,tiny\n34.22,-7.00,0.000123\n"
    assert main(["query", money]) == 0
    assert capsys.readouterr().out.splitlines()[2].split() == ["34.22", "-7.00", "0.000123"]


def test_query_errors_are_one_line(home: Path, loaded: Path, capsys) -> None:
    assert main(["query", "select * from nope"]) == 1
    assert capsys.readouterr().err == "error: Catalog Error: Table with name nope does not exist!\n"


def test_query_without_a_warehouse(home: Path, capsys) -> None:
    assert main(["query", "select 1"]) == 1
    warehouse = home / "warehouse" / "athanor.duckdb"
    assert capsys.readouterr().err == (
        f"error: no warehouse at {warehouse} (run `athanor ingest` or `make demo` first)\n"
    )


def test_format_rows_aligns_and_blanks_nulls() -> None:
    rows = [(1, None), ("xyz", 2.5)]
    assert format_rows(["a", "bb"], rows, "table") == "a    bb\n---  ----\n1\nxyz  2.5\n(2 rows)"
    assert format_rows(["a", "bb"], rows, "csv") == "a,bb\n1,\nxyz,2.5"
    assert format_rows(["n"], [(1,)], "table").endswith("(1 row)")


# --------------------------------------------------------------------- commit-plan, misc


def test_commit_plan_by_hand(home: Path, tmp_path: Path, capsys) -> None:
    demand = tmp_path / "demand.csv"
    demand.write_text(
        "hour,units\n2026-11-01T00:00:00Z,2\n2026-11-01T01:00:00Z,4\n"
        "2026-11-01T02:00:00Z,2\n2026-11-01T03:00:00Z,4\n"
    )
    assert (
        main(["commit-plan", str(demand), "--on-demand-rate", "10", "--commit-rate", "6", "--format", "json"])
        == 0
    )
    plan = json.loads(capsys.readouterr().out)
    # Committing pays off where demand exceeds the commitment in at least 1 - 6/10 = 40 % of the
    # hours: 2 units (4 units is reached in only 2 of 4 hours = 50 %, 2 in all of them).
    # Per 4 hours: on demand 10 * 12 = 120; committed 2 * 6 * 4 = 48 + on demand 10 * (2 + 2) = 88.
    # A month is 730 h, 182.5 times the 4 hours.
    assert plan["commit_units"] == 2.0
    assert plan["on_demand_cost"] == pytest.approx(120 * 182.5)
    assert plan["expected_cost"] == pytest.approx(88 * 182.5)
    assert plan["savings"] == pytest.approx(32 * 182.5)
    assert plan["savings_pct"] == pytest.approx(100 * 32 / 120)
    assert plan["utilization"] == 1.0  # both committed units are used every hour
    assert plan["coverage"] == pytest.approx(8 / 12)
    assert plan["recurring_hourly_cost"] == 12.0
    assert (plan["upfront_cost"], plan["break_even_months"], plan["payment_option"]) == (
        0.0,
        None,  # nothing paid upfront: no break-even
        "no_upfront",
    )


def test_commit_plan_names_a_bad_file(home: Path, tmp_path: Path, capsys) -> None:
    demand = tmp_path / "demand.csv"
    demand.write_text("hour,gpus\n2026-11-01T00:00:00Z,2\n")
    assert main(["commit-plan", str(demand), "--on-demand-rate", "10", "--commit-rate", "6"]) == 1
    assert capsys.readouterr().err.startswith("error: demand.csv: ")


def test_durations_names_a_missing_group_column(home: Path, capsys) -> None:
    assert main(["durations", str(JOBS), "--group-by", "team,nope"]) == 1
    assert capsys.readouterr().err == "error: jobs.csv: no column nope to group by\n"


def test_apply_needs_a_bucket(home: Path, capsys) -> None:
    assert main(["lifecycle", str(home), "--apply"]) == 2
    assert capsys.readouterr().err == "error: --apply needs --bucket\n"


def test_quarantine_list_and_release(home: Path, capsys) -> None:
    from athanor.quality import quarantine

    assert main(["quarantine", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "(0 rows)"

    bad = home / "landing" / "bad.csv"
    bad.parent.mkdir(parents=True)
    bad.write_text("x\n")
    held = quarantine([bad], "bad.csv row 1: no billing columns", home / "quarantine", "run-1")
    assert main(["quarantine", "list"]) == 0
    [row] = capsys.readouterr().out.splitlines()[2:-1]
    assert re.split(r"\s{2,}", row.strip())[1:] == [
        "run-1",
        "bad.csv",
        "bad.csv",
        "bad.csv row 1: no billing columns",
        str(held),
    ]

    assert main(["quarantine", "release"]) == 1
    assert "give the quarantine folder to release" in capsys.readouterr().err
    assert main(["quarantine", "release", str(held)]) == 0
    assert capsys.readouterr().out == f"released 1 file(s) to {home / 'landing'}; the next run loads them\n"
    assert bad.read_text() == "x\n" and not held.exists()


def test_the_s3_client_comes_from_the_settings(home: Path) -> None:
    env = {"ATHANOR_S3_ENDPOINT_URL": "http://127.0.0.1:7480", "AWS_REGION": "eu-west-1"}
    client = s3_client(Settings.from_env(env))
    assert (client.meta.endpoint_url, client.meta.region_name) == ("http://127.0.0.1:7480", "eu-west-1")


# -------------------------------------------------------------------------------- run


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """Every stage replaced by a recorder: (name, run, inputs) per call, in call order."""
    calls: list[tuple] = []
    summaries = {
        "load": {"loaded": ["a.csv: 1 row", "b.csv: 2 rows"]},
        "recommend_mix": {"explanation": "Buy 2 p5 reserved instances."},
        "publish": {"report": "/reports/2026-11-30/report.html"},
    }

    def recorder(name: str):
        def function(run: flow.RunContext, *inputs: dict) -> dict:
            calls.append((name, run, inputs))
            return summaries.get(name, {"stage": name})

        return function

    for stage in flow.STAGES:
        monkeypatch.setitem(flow.STAGE, stage.name, replace(stage, function=recorder(stage.name)))
    return calls


def test_run_runs_the_declared_stages_in_order(
    home: Path, recorded: list[tuple], monkeypatch, capsys
) -> None:
    monkeypatch.setenv("ATHANOR_S3_ENDPOINT_URL", "http://127.0.0.1:7480")
    queued: list[tuple[str, ...]] = []  # the tables each write ahead of the publish was given
    also = snapshots.WriteAhead.also

    def queueing(ahead: snapshots.WriteAhead, specs: tuple[snapshots.Partitioning, ...]) -> None:
        queued.append(tuple(spec.table for spec in specs))
        also(ahead, specs)

    monkeypatch.setattr(snapshots.WriteAhead, "also", queueing)
    argv = ["run", "--as-of", "2026-11-30", "--source", "s3://exports/billing", "--run-id", "cli-test"]
    assert main(argv) == 0
    loaded = {"loaded": ["a.csv: 1 row", "b.csv: 2 rows"]}
    assert [(name, inputs) for name, _, inputs in recorded] == [
        ("land", ()),
        ("load", ({"stage": "land"},)),
        ("validate", (loaded,)),
        ("fit_durations", ()),
        ("recommend_lifecycle", ()),
        ("measure_gpus", ()),
        ("allocate_gpus", ()),
        ("recommend_gpus", ()),
        ("watch_spend", ()),
        ("recommend_mix", ()),
        ("compose_plan", ()),
        ("publish", ()),
    ]
    # That is the declared order, and every stage ran after the ones it waits for.
    order = [name for name, _, _ in recorded]
    assert order == [stage.name for stage in flow.STAGES]
    for stage in flow.STAGES:
        assert all(order.index(before) < order.index(stage.name) for before in stage.after), stage.name
    for _, run, _ in recorded:
        assert (run.run_id, run.as_of) == ("cli-test", date(2026, 11, 30))
        assert run.params == {"as_of": "2026-11-30", "source": "s3://exports/billing"}
        assert run.settings.home == home.resolve()
    # Once the loads are validated, the snapshot's new files are written while the rest runs.
    ahead = [name for name, run, _ in recorded if run.snapshot_ahead is not None]
    assert ahead == order[order.index("validate") + 1 :]
    # The tables only loads change first, then the allocation once allocate_gpus is done.
    assert [tables for tables in queued if tables] == [
        ("billing_facts", "job_run_facts", "storage_objects", "gpu_samples"),
        ("gpu_allocation_hourly",),
    ]
    assert queued.index(("gpu_allocation_hourly",)) == ahead.index("allocate_gpus") + 1
    # The stages get the CLI's S3 client, built from the settings only when one asks for it.
    land = recorded[0][1]
    assert land.s3_client().meta.endpoint_url == "http://127.0.0.1:7480"
    assert capsys.readouterr().out == (
        "a.csv: 1 row\nb.csv: 2 rows\nBuy 2 p5 reserved instances.\nreport: /reports/2026-11-30/report.html\n"
    )


def test_run_stops_at_rejected_data(home: Path, recorded: list[tuple], monkeypatch, capsys) -> None:
    def rejecting(run: flow.RunContext, landed: dict) -> dict:
        recorded.append(("load", run, (landed,)))
        raise DataRejected("1 delivery rejected (moved to quarantine): bad.csv row 3: not a number")

    monkeypatch.setitem(flow.STAGE, "load", replace(flow.STAGE["load"], function=rejecting))
    assert main(["run", "--run-id", "cli-test"]) == 1
    assert [name for name, _, _ in recorded] == ["land", "load"]
    assert capsys.readouterr().err == (
        "error: 1 delivery rejected (moved to quarantine): bad.csv row 3: not a number\n"
    )
