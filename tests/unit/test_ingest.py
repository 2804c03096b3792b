"""Idempotency and atomicity of billing loads: skip, restate, re-run, lineage, currencies, reconciliation."""

from __future__ import annotations

import csv
import hashlib
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from athanor.ingest.billing import IngestError, ingest_billing, record_failure
from athanor.warehouse import connect

D = Decimal


def focus_rows(account: str, month: str, costs: list[str], currency: str = "USD") -> list[dict[str, str]]:
    start, end = f"{month}-01 00:00:00", f"{month}-28 00:00:00"
    return [
        {"BillingAccountId": account, "BillingCurrency": currency, "BillingPeriodStart": start,
         "BillingPeriodEnd": end, "ChargePeriodStart": f"{month}-0{1 + i % 9}T00:00:00Z",
         "ChargePeriodEnd": f"{month}-0{1 + i % 9}T01:00:00Z", "ChargeCategory": "Usage",
         "BilledCost": cost, "EffectiveCost": cost, "ResourceId": f"r-{i}"}
        for i, cost in enumerate(costs)
    ]  # fmt: skip


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def content_hash(con: duckdb.DuckDBPyConnection) -> str:
    """sha256 of billing_facts in a total order, every column as text."""
    digest = hashlib.sha256()
    for row in con.execute("select * from billing_facts order by all").fetchall():
        digest.update(repr(row).encode())
    return digest.hexdigest()


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    c = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    yield c
    c.close()


def test_unchanged_file_is_skipped(con, tmp_path: Path) -> None:
    file = write(tmp_path / "a.csv", focus_rows("acct", "2026-10", ["1.00", "2.00"]))
    first = ingest_billing(con, [file])
    again = ingest_billing(con, [file])
    assert (first.status, again.status, again.load_id) == ("loaded", "unchanged", first.load_id)
    assert con.execute("select count(*), sum(billed_cost) from billing_facts").fetchone() == (2, D("3.00"))
    assert con.execute("select count(*) from loads").fetchone()[0] == 1


@pytest.mark.slow
def test_restated_month_replaces_the_earlier_delivery(con, tmp_path: Path) -> None:
    october = ingest_billing(
        con, [write(tmp_path / "v1/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00"]))]
    )
    other = ingest_billing(con, [write(tmp_path / "v1/other.csv", focus_rows("acct-b", "2026-10", ["5.00"]))])
    restated = ingest_billing(
        con, [write(tmp_path / "v2/oct.csv", focus_rows("acct", "2026-10", ["1.50", "2.50", "3.00"]))]
    )
    assert restated.replaced_rows == 2
    assert con.execute(
        "select billing_account_id, load_id, count(*), sum(billed_cost) from billing_facts group by all order by 1"
    ).fetchall() == [("acct", restated.load_id, 3, D("7.00")), ("acct-b", other.load_id, 1, D("5.00"))]
    status = dict(con.execute("select load_id, status from loads").fetchall())
    assert status == {october.load_id: "replaced", other.load_id: "loaded", restated.load_id: "loaded"}
    # The old version, delivered again unchanged, does not flip the month back.
    assert ingest_billing(con, [tmp_path / "v1/oct.csv"]).status == "unchanged"
    assert con.execute(
        "select sum(billed_cost) from billing_facts where billing_account_id = 'acct'"
    ).fetchone()[0] == D("7.00")


@pytest.mark.slow
def test_failed_restatement_leaves_the_previous_version(con, tmp_path: Path) -> None:
    ingest_billing(con, [write(tmp_path / "v1/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00"]))])
    before = content_hash(con)
    bad = focus_rows("acct", "2026-10", ["1.50", "2.50", "3.00"])
    bad[2]["ChargePeriodEnd"] = "2026-09-30T00:00:00Z"  # ends before it starts
    with pytest.raises(
        IngestError, match="row 3, column ChargePeriodEnd: ChargePeriodEnd before ChargePeriodStart"
    ):
        ingest_billing(con, [write(tmp_path / "v2/oct.csv", bad)])
    assert content_hash(con) == before
    assert con.execute("select status from loads").fetchall() == [("loaded",)]


@pytest.mark.slow
def test_failure_rolls_back_after_the_insert(con, tmp_path: Path, monkeypatch) -> None:
    """A failure after rows reached billing_facts (here: in reconciliation) undoes the insert and the restatement."""
    ingest_billing(con, [write(tmp_path / "v1/oct.csv", focus_rows("acct", "2026-10", ["1.00"]))])
    before = content_hash(con)
    import athanor.ingest.billing as ingest

    def broken(*args, **kwargs):
        raise IngestError("oct.csv", "does not reconcile (simulated)")

    monkeypatch.setattr(ingest, "_reconcile", broken)
    with pytest.raises(IngestError, match="simulated"):
        ingest_billing(con, [write(tmp_path / "v2/oct.csv", focus_rows("acct", "2026-10", ["9.00", "9.00"]))])
    assert content_hash(con) == before
    assert con.execute("select count(*) from reconciliations").fetchone()[0] == 1


@pytest.mark.slow
def test_insertion_order_setting_is_put_back_after_a_load_good_or_bad(
    con, tmp_path: Path, monkeypatch
) -> None:
    """Staging runs without insertion order; the quality gate and everything after it with the
    setting as it was, even when the insert breaks and aborts the load's transaction."""
    import athanor.ingest.billing as ingest

    setting = "select current_setting('preserve_insertion_order')"
    seen = []
    stage_file = ingest._stage_file

    def staging(con, *args):
        seen.append(("staging", con.execute(setting).fetchone()[0]))
        return stage_file(con, *args)

    def landed(con, *args):
        seen.append(("after staging", con.execute(setting).fetchone()[0]))
        return []  # nothing landed: the load then fails to reconcile

    monkeypatch.setattr(ingest, "_stage_file", staging)
    monkeypatch.setattr(ingest, "_landed", landed)
    good = write(tmp_path / "good.csv", focus_rows("acct", "2026-10", ["1.00"]))
    with pytest.raises(IngestError, match="does not reconcile"):
        ingest_billing(con, [good])
    assert seen == [("staging", False), ("after staging", True)]
    assert con.execute(setting).fetchone()[0] is True

    bad = focus_rows("acct", "2026-10", ["1.00", "oops"])
    with pytest.raises(IngestError, match="row 2, column BilledCost: not a decimal number"):
        ingest_billing(con, [write(tmp_path / "bad.csv", bad)])
    assert con.execute(setting).fetchone()[0] is True


@pytest.mark.slow
def test_rerunning_a_day_gives_identical_content(tmp_path: Path) -> None:
    files = [
        write(tmp_path / "in/a/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00"])),
        write(tmp_path / "in/b/oct.csv", focus_rows("acct", "2026-10", ["1.25", "2.75", "4.00"])),
        write(tmp_path / "in/c/nov.csv", focus_rows("acct", "2026-11", ["0.10"], currency="EUR")),
    ]
    hashes = []
    for run in ("first", "second"):
        con = connect(tmp_path / f"{run}.duckdb", memory_limit="512MB")
        for _ in range(2):  # and each run twice over the same warehouse
            for file in files:
                ingest_billing(con, [file])
        hashes.append(content_hash(con))
        con.close()
    assert hashes[0] == hashes[1]


@pytest.mark.slow
def test_every_fact_traces_to_its_file_row_and_load(con, tmp_path: Path) -> None:
    ingest_billing(
        con, [write(tmp_path / "a/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00", "3.00"]))]
    )
    ingest_billing(con, [write(tmp_path / "b/nov.csv", focus_rows("acct", "2026-11", ["4.00"]))])
    orphans = con.execute(
        """select count(*) from billing_facts f
           left join loads l on l.load_id = f.load_id and list_contains(l.files, f.source_file) and l.status = 'loaded'
           where l.load_id is null or f.source_row not between 1 and l.row_count"""
    ).fetchone()[0]
    assert orphans == 0
    # Row 2 of oct.csv is the 2.00 line (header is not a data row).
    assert con.execute(
        "select billed_cost from billing_facts where source_file = 'oct.csv' and source_row = 2"
    ).fetchone() == (D("2.00"),)


@pytest.mark.slow
@pytest.mark.parametrize("options", ["format csv, header true, compression gzip", "format csv, header true",
                                     "format parquet, row_group_size 10000"])  # fmt: skip
def test_source_row_is_the_file_row_in_large_files(con, tmp_path: Path, options: str) -> None:
    """Large enough for DuckDB to read and map in parallel: each row's lineage must still be its own."""
    rows = 300_000
    path = tmp_path / (
        "big.parquet" if "parquet" in options else "big.csv" + (".gz" if "gzip" in options else "")
    )
    # Row i (1-based) carries i in its resource id and its cost, so lineage can be checked row by row.
    duckdb.execute(
        f"""copy (select 'acct' as BillingAccountId, 'USD' as BillingCurrency,
                         '2026-10-01 00:00:00' as BillingPeriodStart, '2026-11-01 00:00:00' as BillingPeriodEnd,
                         '2026-10-02T00:00:00Z' as ChargePeriodStart, '2026-10-02T01:00:00Z' as ChargePeriodEnd,
                         'Usage' as ChargeCategory, (i / 100)::varchar as BilledCost, '0' as EffectiveCost,
                         'r-' || i as ResourceId
                  from range(1, {rows} + 1) as t(i)) to '{path}' ({options})"""
    )
    result = ingest_billing(con, [path], validate=False)
    assert result.rows == rows and result.billed_cost == {"USD": D(rows * (rows + 1) // 2) / 100}
    misplaced = con.execute(
        "select count(*) from billing_facts where resource_id <> 'r-' || source_row or billed_cost * 100 <> source_row"
    ).fetchone()[0]
    assert misplaced == 0
    assert con.execute("select min(source_row), max(source_row) from billing_facts").fetchone() == (1, rows)


@pytest.mark.slow
def test_mixed_currencies_are_kept_apart(con, tmp_path: Path) -> None:
    # One delivery, two accounts billing in two currencies (one currency per account is a
    # data-quality rule of its own).
    rows = focus_rows("acct", "2026-10", ["1.10", "2.20"]) + focus_rows(
        "acct-jp", "2026-10", ["100", "0.005"], "JPY"
    )
    result = ingest_billing(con, [write(tmp_path / "mixed.csv", rows)])
    assert result.billed_cost == {"USD": D("3.30"), "JPY": D("100.005")}
    assert "billed JPY 100.00, USD 3.30" in result.summary()  # shown per currency, never added up
    assert con.execute(
        "select billing_currency, file_billed_cost, loaded_billed_cost, reconciled from reconciliations order by 1"
    ).fetchall() == [("JPY", D("100.005"), D("100.005"), True), ("USD", D("3.30"), D("3.30"), True)]


@pytest.mark.slow
def test_money_is_decimal_and_reconciles_to_the_cent(con, tmp_path: Path) -> None:
    # 1000 x 0.1 is exactly 100 in decimal; a float sum would be 99.9999999999986.
    result = ingest_billing(
        con, [write(tmp_path / "cents.csv", focus_rows("acct", "2026-10", ["0.1"] * 1000))]
    )
    assert result.billed_cost == {"USD": D("100")}
    types = dict(
        con.execute(
            "select column_name, data_type from information_schema.columns where table_name = 'billing_facts'"
        ).fetchall()
    )
    assert {types[c] for c in ("billed_cost", "effective_cost", "list_cost", "x_usage_hours")} == {
        "DECIMAL(38,12)"
    }
    assert con.execute("select difference, reconciled from reconciliations").fetchall() == [(D(0), True)]


def test_record_failure_keeps_the_reason(con, tmp_path: Path) -> None:
    file = write(
        tmp_path / "bad.csv", [{"BilledCost": "x", "ChargePeriodStart": "y", "BillingAccountId": "z"}]
    )
    with pytest.raises(IngestError) as err:
        ingest_billing(con, [file])
    record_failure(con, [file], "billing", err.value)
    assert con.execute("select status, message from loads").fetchone() == ("failed", str(err.value))
    assert "missing mandatory" in str(err.value)


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-11-01T00:00:00Z", "2026-11-01 00:00:00"),
        ("2026-11-01 00:00:00", "2026-11-01 00:00:00"),
        ("2026-11-01", "2026-11-01 00:00:00"),
        ("2026-11-01T00:00:00.123Z", "2026-11-01 00:00:00.123"),
        ("2026-11-01 00:00:00.5", "2026-11-01 00:00:00.5"),
        ("2026-11-01T00:00:00+02:00", "2026-10-31 22:00:00"),
        ("2026-11-01T05:00:00-0500", "2026-11-01 10:00:00"),
        ("2026-11-01T23:00:00-05", "2026-11-02 04:00:00"),
    ],
)
def test_text_timestamps_become_utc_whichever_parse_takes_them(con, text: str, utc: str) -> None:
    """The cheap TIMESTAMP parse ignores offsets: only strings that cannot carry one may take it."""
    from athanor.ingest.billing import _as_utc_timestamp

    parsed = con.execute(f"select {_as_utc_timestamp('t', 'VARCHAR')} from (select ?::varchar as t)", [text])
    assert parsed.fetchone()[0] == con.execute("select ?::timestamp", [utc]).fetchone()[0]


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        ('{"team": "llm", "env": "prod"}', {"team": "llm", "env": "prod"}),
        (' {"team": "llm"} ', {"team": "llm"}),  # whitespace around the object is JSON too
        ("{}", {}),
        ("", None),  # caught before the parse (see _as_map)
        ("   ", None),
        ("team=llm", None),  # not JSON: no tags rather than a failed load
        (None, None),
    ],
)
def test_tags_from_json_text(con, text: str | None, tags: dict[str, str] | None) -> None:
    from athanor.ingest.billing import _as_map

    parsed = con.execute(f"select {_as_map('t', 'VARCHAR')} from (select ?::varchar as t)", [text])
    assert parsed.fetchone()[0] == tags
