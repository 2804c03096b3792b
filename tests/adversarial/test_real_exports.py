"""Real exports that stopped the night or were misnamed (issue 30, "Real exports").

An empty day is a normal delivery; line endings that mix CRLF and LF are read; a CSV DuckDB
cannot parse, although its header names a known format, is refused naming the line; a GCP
`credits` column in Python's repr names file, row, column and rule; header-less `sacct`
output is recognised for what it is; an nvidia-smi capture takes its host from its folder
or its name; `gpu-plan --format table` says why a type has no plan.
"""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.ingest.billing import ingest_billing
from athanor.ingest.deliveries import ingest_deliveries
from athanor.settings import Settings
from athanor.warehouse import connect
from tests.unit.test_bad_inputs import good_rows, write_csv

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
# Its license (MIT, microsoft/finops-toolkit) and origin: ../shared/data/SOURCES.md.
AZURE_EA_NO_ROWS = DATA / "billing" / "azure-ea-no-rows.csv"
AZURE_EA_SAMPLE = DATA / "billing" / "azure-ea-actual-cost-sample.csv"


def load(tmp_path: Path, *files: Path) -> tuple[list[str], list[str]]:
    """One delivery of `files` through the night's loader: (summary lines, errors)."""
    settings = Settings.from_env()
    outcome = ingest_deliveries([("landing/one", list(files), False)], settings.warehouse, settings=settings)
    return outcome.lines, outcome.errors


@pytest.mark.realdata
def test_a_header_only_azure_ea_export_is_nothing_to_load(home: Path) -> None:
    lines, errors = load(home, AZURE_EA_NO_ROWS)
    assert errors == []
    assert lines == ["azure-ea-no-rows.csv: azure, no rows (header only): nothing to load"]
    con = connect(Settings.from_env().warehouse)
    try:
        # Nothing written, not even a ledger row: the next delivery of the day is judged afresh.
        assert con.execute("select count(*) from loads").fetchone() == (0,)
        assert con.execute("select count(*) from billing_facts").fetchone() == (0,)
    finally:
        con.close()


@pytest.mark.realdata
def test_a_header_only_file_beside_a_full_one_does_not_hold_it_back(home: Path) -> None:
    folder = home / "landing" / "ea"
    folder.mkdir(parents=True)
    files = [Path(shutil.copy(f, folder)) for f in (AZURE_EA_SAMPLE, AZURE_EA_NO_ROWS)]
    lines, errors = load(home, *files)
    assert errors == []
    assert [line.split(" [")[0] for line in lines] == [
        "azure-ea-actual-cost-sample.csv, azure-ea-no-rows.csv: azure, 11 rows, billed USD 8.55, periods 2023-09"
    ]


@pytest.mark.slow
def test_mixed_crlf_and_lf_line_endings_are_read(home: Path, tmp_path: Path) -> None:
    file = write_csv(tmp_path / "focus.csv", good_rows(4, "2.50"))
    lines = file.read_bytes().split(b"\n")
    # The header and the first row from a Windows tool, the rest as exported.
    file.write_bytes(b"\r\n".join(lines[:2]) + b"\r\n" + b"\n".join(lines[2:]))
    con = connect(tmp_path / "w.duckdb", memory_limit="1GB")
    try:
        result = ingest_billing(con, [file])
        assert (result.status, result.rows, result.billed_cost) == ("loaded", 4, {"USD": 10})
        rows = con.execute("select source_row, billed_cost from billing_facts order by 1").fetchall()
    finally:
        con.close()
    assert rows == [(1, 2.5), (2, 2.5), (3, 2.5), (4, 2.5)]


@pytest.mark.realdata
def test_a_row_short_of_its_header_is_named_with_its_line(home: Path, tmp_path: Path) -> None:
    # The real legacy CUR sample with one field more in its header than in its rows: DuckDB's
    # sniffer finds no dialect and reads each line as one column.
    text = (DATA / "billing" / "aws-cur-legacy-sample.csv").read_bytes().split(b"\n")
    text[0] = text[0].rstrip(b"\r") + b",resourceTags/user:extra"
    file = tmp_path / "cur.csv"
    file.write_bytes(b"\n".join(text))
    _lines, errors = load(home, file)
    assert errors == [
        "cur.csv: a cur_legacy export by its header, but DuckDB could not parse it as CSV: "
        "line 2 has 94 fields, the header 95 (delimiter ',')"
    ]


GCP_JSONL = (
    Path(__file__).resolve().parents[1] / "fixtures" / "billing" / "gcp" / "billing-export-202311.jsonl"
)


def gcp_csv_with_python_repr(path: Path, credits_of_row_3: str | None = None) -> Path:
    """The GCP fixture as a Python tool saves the BigQuery client's rows to CSV: records
    flattened to dotted columns, the repeated fields written with repr()."""
    import csv
    import json

    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["billing_account_id", "service.description", "sku.description", "usage_start_time",
                      "usage_end_time", "project.id", "cost", "currency", "invoice.month", "cost_type",
                      "credits", "labels", "system_labels"])  # fmt: skip
        for n, line in enumerate(GCP_JSONL.read_text().splitlines(), start=1):
            r = json.loads(line)
            credits = repr(r["credits"]) if credits_of_row_3 is None or n != 3 else credits_of_row_3
            out.writerow([r["billing_account_id"], r["service"]["description"], r["sku"]["description"],
                          r["usage_start_time"], r["usage_end_time"], r["project"]["id"], r["cost"],
                          r["currency"], r["invoice"]["month"], r["cost_type"], credits, repr(r["labels"]),
                          repr(r["system_labels"])])  # fmt: skip
    return path


@pytest.mark.slow
def test_gcp_csv_with_python_repr_credits_is_read(tmp_path: Path) -> None:
    file = gcp_csv_with_python_repr(tmp_path / "gcp.csv")
    assert "[{'name': 'Sustained Usage Discount', 'amount': -2.0," in file.read_text()
    con = connect(tmp_path / "w.duckdb", memory_limit="1GB")
    try:
        result = ingest_billing(con, [file])
        rows = con.execute(
            "select source_row, charge_category, billed_cost, effective_cost, tags['team'] from billing_facts order by 1, 2"
        ).fetchall()
    finally:
        con.close()
    # cost 23.47 + 1.25 + 10 + 6.50 + 2 = 43.22, credits -2 (row 1) and -7 (row 3): billed 34.22.
    assert (result.status, result.rows, result.billed_cost) == ("loaded", 5, {"USD": Decimal("34.22")})
    assert [(r[0], r[1], float(r[2]), float(r[3]), r[4]) for r in rows] == [
        (1, "Credit", -2.0, 0.0, "llm"),
        (1, "Usage", 23.47, 21.47, "llm"),
        (2, "Usage", 1.25, 1.25, None),
        (3, "Credit", -7.0, 0.0, None),
        (3, "Usage", 10.0, 3.0, None),
        (4, "Purchase", 6.5, 6.5, None),
        (5, "Tax", 2.0, 2.0, None),
    ]


def test_gcp_credits_neither_json_nor_a_literal_are_refused_with_row_and_column(
    home: Path, tmp_path: Path
) -> None:
    # A cell cut short: no reading of it is unambiguous.
    file = gcp_csv_with_python_repr(tmp_path / "gcp.csv", credits_of_row_3="[{'name': 'CUD', 'amount': -7.0")
    _lines, errors = load(home, file)
    assert errors == [
        "gcp.csv row 3, column credits: neither JSON nor a Python literal list or dict "
        "(1 bad row; e.g. row 3: \"[{'name': 'CUD', 'amount': -7.0\")"
    ]


# Real `sacct --parsable2 --noheader` lines as Open XDMoD collects them (ubccr/xdmod, LGPL-3.0
# test data; see ../shared/data/SOURCES.md), and the field order XDMoD asks sacct for.
XDMOD_SACCT = DATA / "jobs" / "xdmod-sacct-accounting.log"
XDMOD_FIELDS = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|Elapsed"
    "|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)


@pytest.mark.realdata
def test_headerless_sacct_output_is_named_with_how_to_add_its_header(home: Path, tmp_path: Path) -> None:
    _lines, errors = load(home, XDMOD_SACCT)
    assert errors == [
        "xdmod-sacct-accounting.log: sacct output without its header (--noheader): line 1 has 26 "
        "'|'-separated fields, the first a job id, but no line names them: run sacct --parsable2 "
        "without --noheader, or add a first line naming the fields in the --format order, "
        "e.g. JobID|Partition|Account|Submit|Start|End|State|NNodes|AllocTRES"
    ]
    # Doing what it says makes it a Slurm log the job reader takes up, all of it: XDMoD's sample
    # holds a record with 0 nodes (line 4, run for 0 s) whose NodeList names 2, counted as 2.
    named = tmp_path / "sacct.log"
    named.write_text(XDMOD_FIELDS + "\n" + XDMOD_SACCT.read_text())
    lines, errors = load(home, named)
    assert errors == []
    assert lines == ["sacct.log: slurm job log, 4 jobs, 25% censored"]


# A real 8 x H100 capture without a hostname column (microsoft/VirtualClient, MIT; see
# ../shared/data/SOURCES.md): one sample of each of 8 GPUs, 2024-03-15 13:57.
H100_CAPTURE = DATA / "telemetry" / "nvidia-smi-query-gpu-8xH100.csv"


@pytest.mark.realdata
def test_an_nvidia_smi_capture_takes_its_host_from_its_folder_or_its_name(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    by_folder = home / "landing" / "h100-node-3" / "nvidia-smi.csv"
    by_name = home / "landing" / "2024-03-15" / "h100-node-4-2024-03-15.csv"
    for file in (by_folder, by_name):
        file.parent.mkdir(parents=True)
        shutil.copy(H100_CAPTURE, file)
    with caplog.at_level("INFO", logger="athanor.ingest.telemetry.nvidia_smi"):
        lines, errors = load(home, by_folder, by_name)
    assert errors == []
    assert lines == [
        "h100-node-4-2024-03-15.csv, nvidia-smi.csv: nvidia_smi telemetry, 16 samples of 16 GPUs on 2 hosts, "
        "2024-03-15 13:57 to 2024-03-15 13:57 UTC, power read on 16 of 16"
    ]
    assert [r.getMessage() for r in caplog.records if r.name.endswith("nvidia_smi")] == [
        "h100-node-4-2024-03-15.csv: host h100-node-4, named by its file name <host>-<date>.csv",
        "nvidia-smi.csv: host h100-node-3, named by its folder <host>/nvidia-smi*.csv",
    ]
    con = connect(Settings.from_env().warehouse)
    try:
        hosts = con.execute("select host, count(distinct gpu_index) from gpu_samples group by 1 order by 1")
        assert hosts.fetchall() == [("h100-node-3", 8), ("h100-node-4", 8)]
    finally:
        con.close()


@pytest.mark.realdata
def test_an_nvidia_smi_capture_in_a_folder_named_for_its_day_names_no_host(home: Path) -> None:
    file = home / "landing" / "2024-03-15" / "nvidia-smi.csv"
    file.parent.mkdir(parents=True)
    shutil.copy(H100_CAPTURE, file)
    _lines, errors = load(home, file)
    assert errors == [
        "nvidia-smi.csv: nvidia-smi output does not name its host (rule telemetry_host_known): add a "
        "hostname column, or name the file <host>.nvidia-smi.csv, <host>/nvidia-smi.csv or <host>-<date>.csv"
    ]


def test_gpu_plan_table_says_why_a_class_has_no_plan(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from athanor.cli import main
    from tests.unit.test_gpu_plan import HEADER, ROWS

    # test_gpu_plan's class on p4d.24xlarge, and one on Trainium, which the catalogue does not hold.
    trainium = [
        f"t{n},2026-01-0{n}T00:00:00Z,2026-01-0{n}T00:00:00Z,2026-01-0{n}T02:00:00Z,completed,trn1.32xlarge,"
        "1,16,on_demand,nlp,p,gpt,100000000,10,3200,tune"
        for n in (1, 2)
    ]
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("\n".join([HEADER, *ROWS, *trainium]) + "\n")
    assert main(["gpu-plan", str(jobs), "--format", "table"]) == 0
    header, _rule, *rows, _count = capsys.readouterr().out.splitlines()
    assert header.split()[-1] == "note"
    by_class = {row.split()[0]: row for row in rows}
    assert by_class["nlp/p/gpt/tune"].split(None, 3)[1:3] == ["2", "-"]
    assert by_class["nlp/p/gpt/tune"].endswith(
        "  trn1.32xlarge has no GPU figures or price in the catalog: not compared"
    )
    # A planned class's reasoning stays in the JSON: its note is empty.
    assert by_class["nlp/p/bert/tune"].rstrip().endswith("1.47")  # kg_co2e_new, test_gpu_plan's KG_NEW
