"""No input stops the night, and none is misread.

Each odd file an unlucky operator (or a broken exporter) lands is rejected with one line naming
it and saying why (the encoding, by name, when that is the problem), is quarantined by the
nightly run and counted in its summary, and the night's other deliveries still load. Dates
other than ISO 8601 are refused rather than read as the year 4; a period far outside any
plausible range is an error rule's failure. A repeated column is refused by name, an empty
landing says there was nothing to load, and a file name with a newline cannot break a line.
"""

from __future__ import annotations

import gzip
import re
import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest

from athanor import flow
from athanor.cli import main
from athanor.ingest.billing import IngestError, ingest_billing
from athanor.ingest.deliveries import ingest_deliveries
from athanor.quality import QualityError
from athanor.settings import Settings
from athanor.warehouse import connect
from tests.adversarial.conftest import GCP, JOBS
from tests.unit.test_bad_inputs import COLUMNS, good_rows, write_csv

GCP_LINE = "billing-export-202311.jsonl: gcp, 5 rows, billed USD 34.22, periods 2023-11"
JOBS_LINE = "jobs.csv: generic job log, 6 jobs, 50% censored"
TRUNCATED = "truncated gzip: the compressed stream ends before its end marker (the file was cut short; deliver it again)"
NOT_A_FORMAT = "not a known billing, job-log or inventory format"
UTF8_PLEASE = "Athanor reads UTF-8: export the file as UTF-8"
NOT_ISO = "not an ISO 8601 timestamp (YYYY-MM-DD[Thh:mm:ss][Z|+hh:mm]; day/month order is ambiguous)"
# The header of an Oracle Cloud (OCI) cost report, which Athanor does not read.
OCI_HEADER = (
    "lineItem/referenceNo,lineItem/tenantId,lineItem/intervalUsageStart,lineItem/intervalUsageEnd,"
    "product/service,product/resource,product/compartmentId,product/region,usage/billedQuantity,"
    "cost/unitPrice,cost/myCost,cost/currencyCode"
)


def untimed(lines: list[str]) -> list[str]:
    return [re.sub(r" \[\d+\.\ds\]$", "", line) for line in lines]


def cut_short(path: Path) -> Path:
    """The file with its second half gone, as an interrupted transfer leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def gzipped_job_log(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(JOBS.read_bytes(), mtime=0))
    return path


def ingest(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(["ingest", *argv])
    out, err = capsys.readouterr()
    return code, untimed(out.splitlines()), err.splitlines()


def facts(warehouse: Path) -> list[tuple]:
    con = connect(warehouse, read_only=True)
    try:
        return con.execute("select * from billing_facts order by all").fetchall()
    finally:
        con.close()


# ------------------------------------------------------------------- a gzip cut short


def landing_with_two_cut_files(root: Path) -> Path:
    """A night's landing: a FOCUS bill and a job log both cut in half, beside a good bill and log."""
    landing = root / "landing"
    cut_short(write_csv(landing / "billing" / "focus-2026-11.csv.gz", good_rows()))
    cut_short(gzipped_job_log(landing / "jobs-cut" / "jobs-2026-11.csv.gz"))
    (landing / "gcp").mkdir()
    shutil.copy(GCP, landing / "gcp")
    (landing / "jobs").mkdir()
    shutil.copy(JOBS, landing / "jobs")
    return landing


@pytest.mark.slow
def test_a_truncated_gzip_is_one_line_and_the_other_deliveries_load(home: Path, capsys) -> None:
    landing = landing_with_two_cut_files(home)
    code, out, err = ingest(capsys, str(landing))
    assert code == 1
    # The deliveries before and after the broken ones loaded, and are reported.
    assert out == [GCP_LINE, JOBS_LINE]
    assert err == [f"error: focus-2026-11.csv.gz: {TRUNCATED}", f"error: jobs-2026-11.csv.gz: {TRUNCATED}"]
    # Named directly, each is refused the same way, not with a traceback.
    for name in ("billing/focus-2026-11.csv.gz", "jobs-cut/jobs-2026-11.csv.gz"):
        code, out, err = ingest(capsys, str(landing / name))
        assert (code, out, err) == (1, [], [f"error: {Path(name).name}: {TRUNCATED}"])


@pytest.mark.slow
def test_the_nightly_run_quarantines_a_truncated_gzip_and_the_next_night_runs_clean(home: Path) -> None:
    landing = landing_with_two_cut_files(home)
    settings = Settings.from_env()
    run = {"run_id": "night-1", "params": {}}
    # Held back, not stopping the night (issue 30): the load's summary names them.
    summary = flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    assert summary["errors"] == [f"focus-2026-11.csv.gz: {TRUNCATED}", f"jobs-2026-11.csv.gz: {TRUNCATED}"]
    assert summary["counts"]["rejected"] == 2
    held = sorted(p.name for p in (settings.quarantine / "night-1").iterdir())
    assert held == ["focus-2026-11.csv.gz", "jobs-2026-11.csv.gz"]
    assert not (landing / "billing" / "focus-2026-11.csv.gz").exists()
    # The next night finds the good deliveries unchanged and nothing broken.
    run = {"run_id": "night-2", "params": {}}
    summary = flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    assert (summary["errors"], summary["quarantined"], len(summary["loaded"])) == ([], [], 2)
    assert all(line.endswith(", skipped") for line in summary["loaded"])


# ------------------------------------------------------- files the run does not recognise


def utf16(path: Path, codec: str) -> Path:
    write_csv(path, good_rows())
    path.write_bytes(path.read_text().encode(codec))
    return path


def latin1(path: Path) -> Path:
    rows = good_rows()
    rows[2]["ChargeDescription"] = "Réservation"
    write_csv(path, rows)
    path.write_bytes(path.read_text().encode("latin-1"))
    return path


def oci(path: Path) -> Path:
    path.write_text(OCI_HEADER + "\nref-1,ocid1.tenancy,2026-11-01T00:00Z,2026-11-01T01:00Z,COMPUTE\n")
    return path


def text(path: Path) -> Path:
    path.write_text("hello from the exporter\nthis is not a bill\n")
    return path


def workbook(path: Path) -> Path:
    path.write_bytes(b"PK\x03\x04\x14\x00\x06\x00" + b"\x00" * 64)
    return path


def latin1_offset() -> int:
    """Where 'é' of row 3 sits: after the header and two rows, inside "R" of "Réservation"."""
    rows = good_rows()
    rows[2]["ChargeDescription"] = "R"
    head = write_csv(Path("probe.csv"), rows[:3]).read_text()
    Path("probe.csv").unlink()
    return head.index("R,") + 1


UNRECOGNISED = [
    ("focus-utf16.csv", lambda p: utf16(p, "utf-16"), f"UTF-16 LE text (with a byte-order mark); {UTF8_PLEASE}"),
    ("focus-utf16be.csv", lambda p: utf16(p, "utf-16-be"), f"UTF-16 BE text (without a byte-order mark); {UTF8_PLEASE}"),
    ("focus-utf16le.csv", lambda p: utf16(p, "utf-16-le"), f"UTF-16 LE text (without a byte-order mark); {UTF8_PLEASE}"),
    ("focus-latin1.csv", latin1, "not UTF-8: byte 0xE9 at offset {offset} (line 4) is invalid in UTF-8; the file looks Latin-1 / Windows-1252 encoded: export it as UTF-8"),
    ("oci-cost-report.csv", oci, f"{NOT_A_FORMAT} (first line: {OCI_HEADER[:80]!r})"),
    ("notes.txt", text, f"{NOT_A_FORMAT} (first line: 'hello from the exporter')"),
    ("bills.xlsx", workbook, "a ZIP archive (an Excel workbook is one), not a CSV, JSON or Parquet file"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("name", "make", "reason"), UNRECOGNISED, ids=[u[0] for u in UNRECOGNISED])
def test_a_file_of_no_known_format_is_named_with_its_reason(home: Path, capsys, name, make, reason) -> None:
    folder = home / "landing" / "billing"
    folder.mkdir(parents=True)
    make(folder / name)
    shutil.copy(GCP, folder)
    code, out, err = ingest(capsys, str(folder))
    assert (code, out) == (1, [GCP_LINE])
    assert err == [f"error: {name}: {reason.format(offset=f'{latin1_offset():,}')}"]


@pytest.mark.slow
def test_the_nightly_run_lists_quarantines_and_counts_each_unrecognised_file(home: Path) -> None:
    landing = home / "landing"
    (landing / "billing").mkdir(parents=True)
    for name, make, _ in UNRECOGNISED:
        make(landing / "billing" / name)
    (landing / "gcp").mkdir()
    shutil.copy(GCP, landing / "gcp")
    settings = Settings.from_env()
    run = {"run_id": "night-1", "params": {}}
    summary = flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    assert untimed(summary["loaded"]) == [GCP_LINE]
    assert summary["unrecognised"] == len(UNRECOGNISED) == 7
    offset = f"{latin1_offset():,}"
    expected = sorted(f"{name}: {reason.format(offset=offset)}" for name, _, reason in UNRECOGNISED)
    assert sorted(summary["errors"]) == expected
    assert summary["counts"]["rejected"] == 7
    # Each file is in quarantine with its reason beside it, and gone from the landing.
    entries = {p.name: (p / "manifest.json").read_text() for p in (settings.quarantine / "night-1").iterdir()}
    assert sorted(entries) == sorted(name for name, _, _ in UNRECOGNISED)
    assert list((landing / "billing").iterdir()) == []
    con = connect(settings.warehouse, read_only=True)
    try:
        ledger = con.execute("select kind, status, count(*) from loads group by all order by all").fetchall()
    finally:
        con.close()
    assert ledger == [("billing", "loaded", 1), ("unknown", "quarantined", 7)]


# ------------------------------------------------------------------------------ dates


def us_dated(path: Path, days: int = 5) -> Path:
    """November 2026 with US-style short dates ('11/1/26'), as a spreadsheet saves them."""
    rows = good_rows(days)
    for day, row in enumerate(rows, start=1):
        row["ChargePeriodStart"], row["ChargePeriodEnd"] = f"11/{day}/26", f"11/{day + 1}/26"
    return write_csv(path, rows)


@pytest.fixture
def wh(tmp_path: Path):
    con = connect(tmp_path / "wh.duckdb", memory_limit="1GB")
    yield con
    con.close()


def test_a_us_style_date_is_refused_not_read_as_the_year_eleven(wh, tmp_path: Path) -> None:
    # DuckDB alone casts '11/1/26' to 0011-01-26.
    cast = duckdb.connect().execute("select try_cast('11/1/26' as timestamp)::varchar").fetchone()
    assert cast == ("0011-01-26 00:00:00",)
    with pytest.raises(IngestError) as refused:
        ingest_billing(wh, [us_dated(tmp_path / "focus-us.csv")])
    assert str(refused.value) == (
        f"focus-us.csv row 1, column ChargePeriodStart: {NOT_ISO} "
        "(5 bad rows; e.g. row 1: '11/1/26', row 2: '11/2/26', row 3: '11/3/26')"
    )
    assert wh.execute("select count(*) from billing_facts").fetchone() == (0,)


def test_us_style_dates_are_not_misdiagnosed_as_a_period_ending_before_it_starts(wh, tmp_path: Path) -> None:
    # '11/12/26' reads as 0011-12-26 and '11/1/27' as 0011-01-27: a day-long charge that seemed
    # to end eleven months before it starts.
    rows = good_rows(1)
    rows[0]["ChargePeriodStart"], rows[0]["ChargePeriodEnd"] = "2026-11-12T00:00:00Z", "11/1/27"
    with pytest.raises(IngestError) as refused:
        ingest_billing(wh, [write_csv(tmp_path / "focus-us.csv", rows)])
    assert str(refused.value) == (
        f"focus-us.csv row 1, column ChargePeriodEnd: {NOT_ISO} (1 bad row; e.g. row 1: '11/1/27')"
    )


@pytest.mark.parametrize(
    ("columns", "values", "message"),
    [
        (
            ("ChargePeriodStart", "ChargePeriodEnd"),
            ("1999-12-31T00:00:00Z", "2000-01-01T00:00:00Z"),
            "rule charge_period_in_range failed on column ChargePeriodStart, 1 bad row "
            "(e.g. row 1: 1999-12-31 00:00:00 to 2000-01-01 00:00:00)",
        ),
        (
            ("BillingPeriodStart", "BillingPeriodEnd"),
            ("2128-11-01T00:00:00Z", "2128-12-01T00:00:00Z"),
            "rule billing_period_in_range failed on column BillingPeriodStart, 1 bad row "
            "(e.g. row 1: 2128-11-01 00:00:00 to 2128-12-01 00:00:00)",
        ),
    ],
    ids=["charge period in 1999", "billing period in 2128"],
)
def test_a_period_outside_a_plausible_range_fails_an_error_rule(
    wh, tmp_path, columns, values, message
) -> None:
    rows = good_rows(1)  # the other period stays in November 2026
    rows[0][columns[0]], rows[0][columns[1]] = values
    with pytest.raises(QualityError) as refused:
        ingest_billing(wh, [write_csv(tmp_path / "focus.csv", rows)], as_of=date(2026, 11, 30))
    assert str(refused.value).split("; ")[0] == f"focus.csv: {message}"
    assert wh.execute("select count(*) from billing_facts").fetchone() == (0,)


@pytest.mark.slow
def test_the_upper_bound_is_the_end_of_the_day_a_year_after_the_runs_day(wh, tmp_path: Path) -> None:
    rows = good_rows(1)
    rows[0]["BillingPeriodStart"], rows[0]["BillingPeriodEnd"] = (
        "2027-11-01T00:00:00Z",
        "2027-12-01T00:00:00Z",
    )
    rows[0]["ChargePeriodStart"], rows[0]["ChargePeriodEnd"] = "2027-11-30T00:00:00Z", "2027-12-01T00:00:00Z"
    file = write_csv(tmp_path / "focus.csv", rows)
    # Run for 2026-11-29: a year later ends at 2027-11-30 00:00, before the charge starts.
    with pytest.raises(QualityError) as refused:
        ingest_billing(wh, [file], as_of=date(2026, 11, 29))
    assert str(refused.value) == (
        "focus.csv: rule charge_period_in_range failed on column ChargePeriodStart, 1 bad row "
        "(e.g. row 1: 2027-11-30 00:00:00 to 2027-12-01 00:00:00); "
        "1 more rule(s) failed: billing_period_in_range"
    )
    # Run for 2026-11-30: the bound is 2027-12-01 00:00, where both periods end.
    assert ingest_billing(wh, [file], as_of=date(2026, 11, 30)).rows == 1


# ------------------------------------------------------ repeated columns, empty landing


@pytest.mark.parametrize(
    ("second", "detail"),
    [("BilledCost", ""), ("billedcost", " and 'BilledCost' (names ignore case)")],
    ids=["same name", "same name in another case"],
)
def test_a_column_named_twice_is_refused_naming_it(home: Path, capsys, second: str, detail: str) -> None:
    rows = [{**row, "x_Second": "99.00"} for row in good_rows()]
    file = write_csv(home / "focus.csv", rows, COLUMNS + ["x_Second"])
    file.write_text(file.read_text().replace("x_Second", second, 1))
    code, out, err = ingest(capsys, str(file))
    position = len(COLUMNS) + 1  # 27: after the 26 columns of the good file
    assert (code, out, err) == (
        1,
        [],
        [
            f"error: focus.csv: duplicate column name: header columns 13 and {position} are both named "
            f"{second!r}{detail}; which one holds the data is ambiguous"
        ],
    )
    assert (
        not (home / "warehouse" / "athanor.duckdb").exists()
        or facts(home / "warehouse" / "athanor.duckdb") == []
    )


def test_an_empty_landing_says_there_was_nothing_to_load(home: Path, capsys) -> None:
    (home / "landing").mkdir()
    assert ingest(capsys, str(home / "landing")) == (
        0,
        [f"{home / 'landing'}: nothing to load (no files in the folder)"],
        [],
    )
    settings = Settings.from_env()
    assert ingest_deliveries([], settings.warehouse, settings=settings).lines == [
        "nothing to load: no delivery has landed"
    ]
    run = {"run_id": "empty", "params": {}}
    summary = flow.run_stage("load", run, flow.run_stage("land", run, settings=settings), settings=settings)
    assert summary["loaded"] == ["nothing to load: no delivery has landed"]


# --------------------------------------------------------------------------- file names


def test_a_file_name_with_a_newline_stays_on_one_line(home: Path, capsys) -> None:
    folder = home / "landing"
    folder.mkdir()
    shutil.copy(JOBS, folder / "jobs\nfake.csv")
    (folder / "x.csv: unchanged since load 0, skipped").write_text("not a bill\n")
    code, out, err = ingest(capsys, str(folder))
    assert code == 1
    assert out == ["'jobs\\nfake.csv': generic job log, 6 jobs, 50% censored"]
    assert err == [
        f"error: 'x.csv: unchanged since load 0, skipped': {NOT_A_FORMAT} (first line: 'not a bill')"
    ]
