"""The lake mode's settings and the pieces of athanor.warehouse.lake that need no server."""

from __future__ import annotations

import dataclasses
import os
import time
from datetime import date, datetime
from decimal import Decimal as D
from pathlib import Path

import pytest

from athanor.ingest.billing import ingest_billing
from athanor.ingest.daily import cover_every_job_line
from athanor.settings import Settings
from athanor.warehouse import connect, lake
from tests.unit import test_ingest
from tests.unit.test_ingest import focus_rows, write

LAKE = {
    "ATHANOR_WAREHOUSE_MODE": "lake",
    "ATHANOR_LAKE_CATALOG_URI": "postgresql+psycopg2://u:secret@127.0.0.1:5432/cat",
    "ATHANOR_LAKE_WAREHOUSE": "s3://bucket/lake/",
    "ATHANOR_S3_ENDPOINT_URL": "http://127.0.0.1:7480",
}


def test_the_file_mode_is_the_default_and_has_no_lake() -> None:
    settings = Settings.from_env({})
    assert settings.warehouse_mode == "file"
    assert lake.LakeConfig.from_settings(settings) is None


def test_lake_settings() -> None:
    settings = Settings.from_env({**LAKE, "ATHANOR_WAREHOUSE_MODE": " Lake "})
    cfg = lake.LakeConfig.from_settings(settings)
    assert cfg == lake.LakeConfig(
        catalog_uri=LAKE["ATHANOR_LAKE_CATALOG_URI"],
        warehouse="s3://bucket/lake",
        namespace="athanor",
        s3_endpoint_url="http://127.0.0.1:7480",
        region="us-east-1",
        cache_dir=settings.warehouse.parent / "lake-cache",  # beside the DuckDB file
        cache_bytes=20_000_000_000,
    )
    assert "secret" not in repr(settings)  # the catalog URI may carry a password
    moved = Settings.from_env({**LAKE, "ATHANOR_LAKE_CACHE": "/data/cache", "ATHANOR_LAKE_CACHE_GB": "1.5"})
    assert (moved.lake_cache, moved.lake_cache_bytes) == (Path("/data/cache"), 1_500_000_000)


def test_an_unknown_mode_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="ATHANOR_WAREHOUSE_MODE must be file or lake, got 'iceberg'"):
        Settings.from_env({"ATHANOR_WAREHOUSE_MODE": "iceberg"})


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        ("ATHANOR_LAKE_CATALOG_URI", "needs ATHANOR_LAKE_CATALOG_URI"),
        ("ATHANOR_LAKE_WAREHOUSE", "needs ATHANOR_LAKE_WAREHOUSE"),
    ],
)
def test_the_lake_mode_names_a_missing_setting(drop: str, message: str) -> None:
    env = {k: v for k, v in LAKE.items() if k != drop}
    with pytest.raises(lake.LakeError, match=message):
        lake.LakeConfig.from_settings(Settings.from_env(env))


def test_the_lake_warehouse_must_be_a_bucket() -> None:
    with pytest.raises(lake.LakeError, match=r"must be an s3:// \(or file:///\) URL, got '/data/lake'"):
        lake.LakeConfig.from_settings(Settings.from_env({**LAKE, "ATHANOR_LAKE_WAREHOUSE": "/data/lake"}))


def test_the_file_mode_keeps_its_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATHANOR_WAREHOUSE_MODE", raising=False)
    con = connect(tmp_path / "w.duckdb")
    assert not lake.attached(con)
    tables = "select table_type from information_schema.tables where table_name = 'billing_facts'"
    assert con.execute(tables).fetchall() == [("BASE TABLE",)]
    # Loads write the table itself, past any view: in the file mode that is the same table.
    staged = lake.staging(con, "billing_facts")
    assert staged == '"w".main."billing_facts"'
    assert lake.record_snapshots(con, "run", None) == {}
    lake.attach_for_run(con, None, "run")
    assert not lake.attached(con)
    con.close()


def test_a_load_replaces_exactly_its_account_months() -> None:
    """The overwrite filter: any of the load's (account, period) pairs, periods as ISO text."""
    from pyiceberg.expressions import And, EqualTo, Or
    from pyiceberg.expressions.visitors import expression_evaluator
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import NestedField, StringType, TimestampType

    keys = [("a", datetime(2026, 10, 1)), ("b", datetime(2026, 11, 1))]
    found = lake._replaced_filter("billing_facts", keys)
    assert found == Or(
        And(EqualTo("billing_account_id", "a"), EqualTo("billing_period_start", "2026-10-01T00:00:00")),
        And(EqualTo("billing_account_id", "b"), EqualTo("billing_period_start", "2026-11-01T00:00:00")),
    )
    schema = Schema(
        NestedField(1, "billing_account_id", StringType(), required=True),
        NestedField(2, "billing_period_start", TimestampType(), required=True),
    )
    matches = expression_evaluator(schema, found, case_sensitive=True)
    october, november = 1790812800000000, 1793491200000000  # 2026-10-01 and 2026-11-01 in µs
    assert [matches(Record(a, t)) for a, t in [("a", october), ("a", november), ("b", november)]] == [
        True,
        False,
        True,
    ]
    with pytest.raises(ValueError, match="replaces nothing"):
        lake._replaced_filter("billing_facts", [])


def test_an_unreachable_catalog_is_named_without_its_password() -> None:
    cfg = lake.LakeConfig(
        catalog_uri="postgresql+psycopg2://u:secret@127.0.0.1:9/cat",  # port 9: nobody listens
        warehouse="s3://bucket/lake",
        namespace="athanor",
        s3_endpoint_url=None,
        region="us-east-1",
    )
    with pytest.raises(lake.LakeError) as caught:
        lake.catalog(cfg)
    assert "ATHANOR_LAKE_CATALOG_URI postgresql+psycopg2://u:***@127.0.0.1:9/cat" in str(caught.value)
    assert "secret" not in str(caught.value)


# A lake on this machine (SQLite catalog, file:// warehouse): the same code paths as on a
# bucket with PostgreSQL (tests/integration/test_lake_warehouse.py), without the servers.
@pytest.fixture
def local_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ATHANOR_WAREHOUSE_MODE", "lake")
    monkeypatch.setenv("ATHANOR_LAKE_CATALOG_URI", f"sqlite:///{tmp_path / 'catalog.db'}")
    monkeypatch.setenv("ATHANOR_LAKE_WAREHOUSE", f"file://{tmp_path / 'lake'}")
    (tmp_path / "lake").mkdir()
    con = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    assert lake.attached(con)
    yield con
    con.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        test_ingest.test_restated_month_replaces_the_earlier_delivery,
        test_ingest.test_failed_restatement_leaves_the_previous_version,
        test_ingest.test_failure_rolls_back_after_the_insert,
    ],
    ids=lambda case: case.__name__,
)
def test_file_mode_load_tests_hold_in_a_local_lake(case, local_lake, tmp_path: Path, monkeypatch) -> None:
    args = (
        (local_lake, tmp_path, monkeypatch)
        if "monkeypatch" in case.__code__.co_varnames
        else (local_lake, tmp_path)
    )
    case(*args)
    staged = lake.staging(local_lake, "billing_facts")
    assert local_lake.execute(f"select count(*) from {staged}").fetchall() == [(0,)]


@pytest.mark.slow
def test_a_column_added_by_a_migration_reaches_the_lake(local_lake, tmp_path: Path) -> None:
    con = local_lake

    def files_read_by_name() -> bool:
        (view,) = con.execute(
            "select sql from duckdb_views() where view_name = '_lake_billing_facts'"
        ).fetchone()
        return "union_by_name" in view

    ingest_billing(con, [write(tmp_path / "a/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00"]))])
    # One schema so far: DuckDB takes the columns from the first file, not every file's footer.
    assert lake._one_schema(lake.table(lake.config(), "billing_facts"))
    assert not files_read_by_name()
    con.execute(f"alter table {lake.staging(con, 'billing_facts')} add column x_new_figure integer")
    lake.attach(con, lake.config())  # what the next connect does after the migration
    ingest_billing(con, [write(tmp_path / "b/nov.csv", focus_rows("acct", "2026-11", ["4.00"]))])
    tbl = lake.table(lake.config(), "billing_facts")
    assert "x_new_figure" in tbl.schema().column_names
    # October's file has no such column: the files are read by column name from now on.
    assert not lake._one_schema(tbl)
    lake.attach(con, lake.config())
    assert files_read_by_name()
    assert con.execute(
        "select strftime(billing_period_start, '%m'), count(*), count(x_new_figure), sum(billed_cost)"
        " from billing_facts group by all order by 1"
    ).fetchall() == [("10", 2, 0, D("3.00")), ("11", 1, 0, D("4.00"))]


def test_writers_return_in_order_and_take_at_most_one_item_ahead() -> None:
    """Two writers: a result waits for the ones before it, and no more than three items (a
    load's batches) are held at once; a failure stops taking items."""
    import threading
    from contextlib import closing

    taken: list[int] = []

    def items():
        for n in range(7):
            taken.append(n)
            yield n

    third_done = threading.Event()

    def first_finishes_last(n: int) -> int:
        if n == 0:
            assert third_done.wait(10)
        if n == 2:
            third_done.set()
        return n * 10

    results = lake._in_order(first_finishes_last, items(), 2)
    assert next(results) == 0
    assert taken == [0, 1, 2]  # two written, one waiting for a writer
    assert list(results) == [10, 20, 30, 40, 50, 60]

    def fails_on_three(n: int) -> int:
        if n == 3:
            raise OSError("simulated")
        return n

    taken.clear()
    with closing(lake._in_order(fails_on_three, items(), 2)) as out:
        assert [next(out) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(OSError, match="simulated"):
            next(out)
    assert taken == [0, 1, 2, 3, 4, 5]  # item 6 is never taken


@pytest.mark.slow
def test_a_commit_writes_its_batches_at_once_and_keeps_every_row(
    local_lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nine lines in batches of two: five batches written by two writers, one commit of all of
    them; a batch that fails to write fails the commit, and the lake keeps what it had."""
    import pyiceberg.io.pyarrow as iceberg_arrow

    con = local_lake
    monkeypatch.setattr(lake, "BATCH_ROWS", 2)
    costs = [f"{n}.25" for n in range(1, 10)]
    ingest_billing(con, [write(tmp_path / "a/oct.csv", focus_rows("acct", "2026-10", costs))])
    tbl = lake.table(lake.config(), "billing_facts")
    assert len(lake.data_files(tbl)) == 5
    assert con.execute("select list(billed_cost order by billed_cost) from billing_facts").fetchone() == (
        [D(c) for c in costs],
    )
    assert tbl.current_snapshot().summary["added-records"] == "9"

    written = iceberg_arrow.write_file
    calls = []

    def fails_on_the_third(**kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full (simulated)")
        return written(**kwargs)

    monkeypatch.setattr(iceberg_arrow, "write_file", fails_on_the_third)
    before = tbl.current_snapshot().snapshot_id
    with pytest.raises(OSError, match="simulated"):
        ingest_billing(con, [write(tmp_path / "b/oct.csv", focus_rows("acct", "2026-10", ["7.00"] * 8))])
    assert lake.table(lake.config(), "billing_facts").current_snapshot().snapshot_id == before
    lake.attach(con, lake.config())
    assert con.execute("select count(*), sum(billed_cost) from billing_facts").fetchone() == (9, D("47.25"))
    # The ledger rolled back with it: the next night loads the delivery again.
    assert con.execute("select count(*) from loads where kind = 'billing'").fetchone() == (1,)


def _files_and_facts(folder: Path, deliveries: list[list[dict[str, str]]]) -> tuple[list, list]:
    """The deliveries loaded into a local lake in `folder`: its data files (partition, rows) and facts."""
    con = connect(folder / "w.duckdb", memory_limit="512MB")
    try:
        for i, rows in enumerate(deliveries):
            ingest_billing(con, [write(folder / f"d{i}" / "bill.csv", rows)])
        tbl = lake.table(lake.config(), "billing_facts")
        files = sorted((str(task.file.partition), task.file.record_count) for task in tbl.scan().plan_files())
        facts = con.execute(
            "select * exclude (load_id, source_file) from billing_facts order by all"
        ).fetchall()
        return files, facts
    finally:
        con.close()


@pytest.mark.slow
def test_a_batch_of_one_partition_is_written_as_pyiceberg_splits_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load's batch of one partition goes to its data files without pyiceberg's split by
    partition (a filter and two copies of the batch); a batch of several is split by pyiceberg.
    Either way the lake holds the files, partition values and rows pyiceberg's split gives."""
    import pyarrow.compute as pc
    import pyiceberg.io.pyarrow as iceberg_arrow

    monkeypatch.setattr(lake, "BATCH_ROWS", 3)
    one_account = focus_rows("acct-a", "2026-10", ["1.25", "2.50", "3.75", "4.00", "5.50", "6.25", "7.00"])
    a, b = focus_rows("acct-a", "2026-11", ["1.00"] * 3), focus_rows("acct-b", "2026-11", ["2.00"] * 3)
    two_accounts = [row for pair in zip(a, b, strict=True) for row in pair]  # a, b, a, b: batches of both
    deliveries = [one_account, two_accounts]

    split = iceberg_arrow._determine_partitions
    split_rows: list[int] = []

    def counted(*args, **kwargs):
        split_rows.append(kwargs["arrow_table"].num_rows)
        return split(*args, **kwargs)

    monkeypatch.setattr(iceberg_arrow, "_determine_partitions", counted)
    _use_local_lake(monkeypatch, tmp_path / "ours")
    _files_and_facts(tmp_path / "ours", deliveries[:1])
    assert split_rows == []  # three batches of one partition, none split by pyiceberg
    ours = _files_and_facts(tmp_path / "ours", deliveries[1:])
    assert sum(split_rows) <= len(two_accounts)  # only the batches holding both accounts
    in_lake = lake.table(lake.config(), "billing_facts")
    lines = in_lake.scan().to_arrow()
    assert lake._only_partition(in_lake.metadata, lines) is None  # three partitions
    only_b = lake._only_partition(
        in_lake.metadata, lines.filter(pc.equal(lines["billing_account_id"], "acct-b"))
    )
    assert [value.value for value in only_b.field_values] == [None, "acct-b", datetime(2026, 11, 1)]

    monkeypatch.setattr(lake, "_only_partition", lambda metadata, table: None)  # pyiceberg splits all
    _use_local_lake(monkeypatch, tmp_path / "pyiceberg")
    _files_and_facts(tmp_path / "pyiceberg", deliveries[:1])
    theirs = _files_and_facts(tmp_path / "pyiceberg", deliveries[1:])
    assert ours == theirs
    files, facts = ours
    assert sum(rows for _, rows in files) == len(facts) == 13
    assert {partition for partition, _ in files} == {
        f"Record[None, {account}, {start}]"  # the month's start, in microseconds since the epoch
        for account, start in (
            ("acct-a", 1790812800000000),
            ("acct-a", 1793491200000000),
            ("acct-b", 1793491200000000),
        )
    }


@pytest.mark.slow
def test_a_lake_warehouse_from_before_the_sums_by_job_gets_them_from_the_lake(
    local_lake, tmp_path: Path
) -> None:
    """Its schema's backfill read the file's empty billing_facts: the night's check sums the lake."""
    con = local_lake
    ingest_billing(
        con, [write(tmp_path / "a/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00", "4.00"]))]
    )
    ingest_billing(con, [write(tmp_path / "b/nov.csv", focus_rows("acct", "2026-11", ["8.00"]))])
    assert cover_every_job_line(con) is None  # the loads kept them
    con.execute("delete from billing_job_daily")  # a warehouse loaded before the table existed
    assert cover_every_job_line(con) == 4  # October's three days, November's one
    assert con.execute("select sum(line_items), sum(effective_cost) from billing_job_daily").fetchone() == (
        4,
        D("15.00"),
    )
    assert cover_every_job_line(con) is None


# ---------------------------------------------------------------- job runs, storage, GPU samples


def test_a_job_log_replaces_its_jobs_by_source_and_id() -> None:
    """Keys differing in their last column share one In; any of them matches, nothing else."""
    from pyiceberg.expressions import And, EqualTo, In, Or
    from pyiceberg.expressions.visitors import expression_evaluator
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import NestedField, StringType

    keys = [("generic", "j-1"), ("slurm", "7"), ("slurm", "8")]
    found = lake._replaced_filter("job_run_facts", keys)
    assert found == Or(
        And(EqualTo("source", "generic"), EqualTo("job_id", "j-1")),
        And(EqualTo("source", "slurm"), In("job_id", {"7", "8"})),
    )
    schema = Schema(
        NestedField(1, "source", StringType(), required=True),
        NestedField(2, "job_id", StringType(), required=True),
    )
    matches = expression_evaluator(schema, found, case_sensitive=True)
    rows = [("generic", "j-1"), ("generic", "7"), ("slurm", "7"), ("slurm", "8"), ("slurm", "j-1")]
    assert [matches(Record(*row)) for row in rows] == [True, False, True, True, False]


def test_a_telemetry_load_replaces_each_gpus_span_only() -> None:
    """As sql/ingest/telemetry_replace.sql: per GPU, its samples from first to last instant."""
    from pyiceberg.expressions import And, GreaterThanOrEqual, In, LessThanOrEqual, Or
    from pyiceberg.expressions.visitors import expression_evaluator
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import NestedField, StringType, TimestampType

    t0, t1, t2 = datetime(2026, 11, 3, 14), datetime(2026, 11, 3, 14, 10), datetime(2026, 11, 3, 15)
    keys = [("g1", t0, t1), ("g2", t0, t1), ("g3", t0, t2)]
    found = lake._replaced_filter("gpu_samples", keys)
    # g1 and g2 share their span, so one In; g3 has a span of its own.
    assert found == Or(
        And(
            In("gpu_id", {"g1", "g2"}),
            GreaterThanOrEqual("sampled_at", t0.isoformat()),
            LessThanOrEqual("sampled_at", t1.isoformat()),
        ),
        And(
            In("gpu_id", {"g3"}),
            GreaterThanOrEqual("sampled_at", t0.isoformat()),
            LessThanOrEqual("sampled_at", t2.isoformat()),
        ),
    )
    schema = Schema(
        NestedField(1, "gpu_id", StringType(), required=True),
        NestedField(2, "sampled_at", TimestampType(), required=True),
    )
    matches = expression_evaluator(schema, found, case_sensitive=True)
    at_14_05, at_14_30 = 1793714700000000, 1793716200000000  # 2026-11-03 14:05 and 14:30 UTC in µs
    rows = [("g1", at_14_05), ("g1", at_14_30), ("g3", at_14_30), ("g4", at_14_05)]
    assert [matches(Record(*row)) for row in rows] == [True, False, True, False]


@pytest.mark.slow
def test_a_night_of_thousands_of_gpus_makes_a_shallow_filter() -> None:
    """Each GPU with a span of its own: the Or is a balanced tree, which pyiceberg can visit."""
    from pyiceberg.expressions import Or
    from pyiceberg.expressions.visitors import expression_evaluator
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import NestedField, StringType, TimestampType

    start = datetime(2026, 11, 3)
    keys = [(f"g{i}", start, start.replace(microsecond=i + 1)) for i in range(5000)]
    found = lake._replaced_filter("gpu_samples", keys)

    def depth(expression) -> int:
        return 1 + max(depth(expression.left), depth(expression.right)) if isinstance(expression, Or) else 1

    assert depth(found) == 14  # ceil(log2(5000)) + 1, not 5000
    schema = Schema(
        NestedField(1, "gpu_id", StringType(), required=True),
        NestedField(2, "sampled_at", TimestampType(), required=True),
    )
    midnight = 1793664000000000  # 2026-11-03 00:00 UTC in µs
    assert expression_evaluator(schema, found, case_sensitive=True)(Record("g4999", midnight))


AS_OF = datetime(2026, 11, 30, 23, 59, 59)
JOBS = Path(__file__).resolve().parents[1] / "fixtures" / "jobs" / "jobs.csv"


def _use_local_lake(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("ATHANOR_WAREHOUSE_MODE", "lake")
    monkeypatch.setenv("ATHANOR_LAKE_CATALOG_URI", f"sqlite:///{folder / 'catalog.db'}")
    monkeypatch.setenv("ATHANOR_LAKE_WAREHOUSE", f"file://{folder / 'lake'}")
    (folder / "lake").mkdir(parents=True)


def _in_both_modes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario) -> tuple:
    """The scenario on a file-mode warehouse, then on a local lake: (file's result, lake's, lake con)."""
    monkeypatch.delenv("ATHANOR_WAREHOUSE_MODE", raising=False)
    (tmp_path / "file").mkdir()
    con = connect(tmp_path / "file" / "w.duckdb", memory_limit="512MB")
    assert not lake.attached(con)
    in_file = scenario(con, tmp_path / "file")
    con.close()
    _use_local_lake(monkeypatch, tmp_path / "lake")
    con = connect(tmp_path / "lake" / "w.duckdb", memory_limit="512MB")
    assert lake.attached(con)
    return in_file, scenario(con, tmp_path / "lake"), con


def _table(con, name: str, order: str) -> list[tuple]:
    return con.execute(f"select * exclude (load_id), load_id from {name} order by {order}").fetchall()


def _jobs(con, folder: Path) -> list[list[tuple]]:
    from athanor.ingest.deliveries import ingest_job_file

    (folder / "v1").mkdir()
    (folder / "v2").mkdir()
    first = folder / "v1" / "jobs.csv"
    first.write_text(JOBS.read_text())
    ingest_job_file(con, first, as_of=AS_OF)
    seen = [_table(con, "job_run_facts", "source, job_id")]
    # The next log: j-0004 has finished since (its row is replaced), j-0007 is new; the
    # jobs it does not mention keep the first log's rows.
    header, *lines = JOBS.read_text().splitlines()
    running = next(line for line in lines if line.startswith("j-0004,"))
    done = running.replace(
        "2026-11-03T06:00:00Z,,running", "2026-11-03T06:00:00Z,2026-11-03T09:00:00Z,completed"
    )
    new = "j-0007,2026-11-04T00:00:00Z,2026-11-04T00:00:00Z,2026-11-04T02:00:00Z,completed,p5.48xlarge,1,8,spot,llm,,,,,0,"
    second = folder / "v2" / "jobs.csv"
    second.write_text("\n".join([header, done, new]) + "\n")
    ingest_job_file(con, second, as_of=AS_OF)
    seen.append(_table(con, "job_run_facts", "source, job_id"))
    return seen


@pytest.mark.slow
def test_a_restated_job_log_replaces_its_jobs_in_the_lake_as_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_file, in_lake, con = _in_both_modes(tmp_path, monkeypatch, _jobs)
    assert in_lake == in_file
    first, second = in_file
    # Columns: source_file, source_row, source, job_id, submit_time, start_time, end_time, state, ...
    assert [(r[3], r[7]) for r in first] == [
        ("j-0001", "completed"),
        ("j-0002", "preempted"),
        ("j-0003", "failed"),
        ("j-0004", "running"),
        ("j-0005", "cancelled"),
        ("j-0006", "completed"),
    ]
    # 7 jobs: j-0004 now completed from the second log, j-0007 added, the other five untouched.
    first_load = first[0][-1]
    assert [(r[3], r[7], r[-1] == first_load) for r in second] == [
        ("j-0001", "completed", True),
        ("j-0002", "preempted", True),
        ("j-0003", "failed", True),
        ("j-0004", "completed", False),
        ("j-0005", "cancelled", True),
        ("j-0006", "completed", True),
        ("j-0007", "completed", False),
    ]
    assert con.execute(f"select count(*) from {lake.staging(con, 'job_run_facts')}").fetchall() == [(0,)]
    tbl = lake.table(lake.config(), "job_run_facts")
    assert [f.name for f in tbl.spec().fields] == ["source", "start_time_month"]
    assert tbl.current_snapshot().summary["total-delete-files"] == "0"  # copy-on-write
    # The second load's delete (rewriting the file that held j-0004) and append: one commit.
    after_first = _last_snapshot_of(tbl, first_load)
    assert len([e for e in tbl.metadata.metadata_log if e.timestamp_ms > after_first.timestamp_ms]) <= 1
    assert lake.data_files(tbl, after_first.snapshot_id) != lake.data_files(tbl)
    old = lake.open_as_of(Settings.from_env(), {"job_run_facts": after_first.snapshot_id})
    assert _table(old, "job_run_facts", "source, job_id") == first
    old.close()
    con.close()


def _last_snapshot_of(tbl, load_id: str):
    """The snapshot a load left current (its delete and append snapshots: the latter)."""
    mine = [s for s in tbl.snapshots() if s.summary.get("athanor.load_id") == load_id]
    return max(mine, key=lambda s: s.sequence_number)


def _inventories(con, folder: Path) -> list[list[tuple]]:
    from athanor.ingest.deliveries import ingest_inventory
    from tests.unit.test_lifecycle_inventory import GOOD, _delivery

    ingest_inventory(con, _delivery(folder / "b-v1", GOOD))
    ingest_inventory(con, _delivery(folder / "c-v1", [["c", *row[1:]] for row in GOOD[:2]]))
    seen = [_table(con, "storage_objects", "bucket, key, version_id")]
    # Bucket b's next inventory: two of its four versions left; bucket c's stays as it was.
    ingest_inventory(con, _delivery(folder / "b-v2", GOOD[2:]))
    seen.append(_table(con, "storage_objects", "bucket, key, version_id"))
    return seen


@pytest.mark.slow
def test_a_redelivered_inventory_replaces_its_bucket_in_the_lake_as_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_file, in_lake, con = _in_both_modes(tmp_path, monkeypatch, _inventories)
    assert in_lake == in_file
    first, second = in_file
    # Columns: inventory_date, bucket, key, version_id, ...
    assert [(r[1], r[2], r[3]) for r in first] == [
        ("b", "gone.txt", "v9"),
        ("b", "it.bin", "null"),
        ("b", "run one/checkpoint-5/model+v2.bin", "v0"),
        ("b", "run one/checkpoint-5/model+v2.bin", "v1"),
        ("c", "run one/checkpoint-5/model+v2.bin", "v0"),
        ("c", "run one/checkpoint-5/model+v2.bin", "v1"),
    ]
    assert [(r[1], r[2], r[3]) for r in second] == [
        ("b", "gone.txt", "v9"),
        ("b", "it.bin", "null"),
        ("c", "run one/checkpoint-5/model+v2.bin", "v0"),
        ("c", "run one/checkpoint-5/model+v2.bin", "v1"),
    ]
    tbl = lake.table(lake.config(), "storage_objects")
    assert [f.name for f in tbl.spec().fields] == ["bucket"]
    # Bucket b's file was dropped whole (no rewrite); c's is the one it was.
    after_c = _last_snapshot_of(tbl, first[-1][-1])
    before, now = set(lake.data_files(tbl, after_c.snapshot_id)), set(lake.data_files(tbl))
    assert len(before) == 2 and len(now) == 2 and len(before & now) == 1
    assert tbl.current_snapshot().summary["total-delete-files"] == "0"
    old = lake.open_as_of(Settings.from_env(), {"storage_objects": after_c.snapshot_id})
    assert _table(old, "storage_objects", "bucket, key, version_id") == first
    old.close()
    con.close()


TELEMETRY = Path(__file__).resolve().parents[1] / "fixtures" / "telemetry"


def _telemetry(con, folder: Path) -> list:
    import shutil

    from athanor.ingest.telemetry import ingest_telemetry

    file = folder / "landing" / "gpu-node-01.nvidia-smi.csv"
    file.parent.mkdir()
    shutil.copy(TELEMETRY / "gpu-node-01.nvidia-smi.csv", file)
    lines = [ingest_telemetry(con, [file], as_of=AS_OF.date())]
    seen = [_table(con, "gpu_samples", "gpu_id, sampled_at")]
    # Corrected: the 14:01 lines dropped, one value changed; 14:00 to 14:10 is restated whole.
    text = file.read_text().splitlines()
    text[1] = text[1].replace("87 %", "88 %")
    file.write_text("\n".join(text[:3] + text[5:]) + "\n")
    lines.append(ingest_telemetry(con, [file], as_of=AS_OF.date()))
    seen.append(_table(con, "gpu_samples", "gpu_id, sampled_at"))
    # A log rotated under the same name: the next day is added, nothing replaced.
    file.write_text(file.read_text().replace("2026/11/03", "2026/11/04"))
    lines.append(ingest_telemetry(con, [file], as_of=AS_OF.date()))
    seen.append(_table(con, "gpu_samples", "gpu_id, sampled_at"))
    return [lines, *seen]


@pytest.mark.slow
def test_restated_telemetry_replaces_its_spans_in_the_lake_as_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_file, in_lake, con = _in_both_modes(tmp_path, monkeypatch, _telemetry)
    assert in_lake == in_file
    lines, first, corrected, rotated = in_file
    assert "8 samples of 2 GPUs" in lines[0] and "replacing" not in lines[0]
    assert "6 samples of 2 GPUs" in lines[1] and "replacing 8 samples loaded before" in lines[1]
    assert "replacing" not in lines[2]
    assert (len(first), len(corrected), len(rotated)) == (8, 6, 12)
    tbl = lake.table(lake.config(), "gpu_samples")
    assert [f.name for f in tbl.spec().fields] == ["sampled_at_day"]
    # Two days, two partitions: the rotated log's day added a file, the 3rd's was not rewritten.
    corrected_load = corrected[0][-1]
    after_correction = set(lake.data_files(tbl, _last_snapshot_of(tbl, corrected_load).snapshot_id))
    assert len(after_correction) == 1 and len(set(lake.data_files(tbl)) - after_correction) == 1
    assert con.execute(
        "select cast(sampled_at as date)::varchar, count(*) from gpu_samples group by 1 order by 1"
    ).fetchall() == [("2026-11-03", 6), ("2026-11-04", 6)]
    con.close()


@pytest.mark.slow
def test_a_load_reads_only_the_files_of_its_partitions_and_charge_hours(
    local_lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One delivery of October and November (load A: two data files, one per partition), and
    # account B's November. Restating A's November reads the two November files (A's, which it
    # replaces, and B's, whose charge hours it shares), not October's; A keeps its October, so
    # it stays 'loaded' until October is restated too.
    con = local_lake
    read: list[int] = []
    narrow = lake.narrow_to_load
    monkeypatch.setattr(lake, "narrow_to_load", lambda *a: read.append(narrow(*a)) or read[-1])
    both = focus_rows("acct", "2026-10", ["1.00", "2.00"]) + focus_rows("acct", "2026-11", ["4.00"])
    first = ingest_billing(con, [write(tmp_path / "v1/both.csv", both)])
    other = ingest_billing(con, [write(tmp_path / "v1/b.csv", focus_rows("acct-b", "2026-11", ["5.00"]))])
    november = ingest_billing(con, [write(tmp_path / "v2/nov.csv", focus_rows("acct", "2026-11", ["4.50"]))])
    # Nothing in the lake; B's load: A's November (same charge hours); A's November restated:
    # A's November file and B's.
    assert read == [0, 1, 2]
    assert november.replaced_rows == 1
    status = dict(con.execute("select load_id, status from loads").fetchall())
    assert status == {first.load_id: "loaded", other.load_id: "loaded", november.load_id: "loaded"}
    october = ingest_billing(con, [write(tmp_path / "v2/oct.csv", focus_rows("acct", "2026-10", ["1.50"]))])
    assert read[-1] == 1 and october.replaced_rows == 2
    status = dict(con.execute("select load_id, status from loads").fetchall())
    assert status[first.load_id] == "replaced" and status[other.load_id] == "loaded"
    # After each commit the view reads the whole table again.
    assert con.execute(
        "select billing_account_id, strftime(billing_period_start, '%Y-%m'), sum(billed_cost) "
        "from billing_facts group by all order by all"
    ).fetchall() == [
        ("acct", "2026-10", D("1.50")),
        ("acct", "2026-11", D("4.50")),
        ("acct-b", "2026-11", D("5.00")),
    ]


def test_the_replaced_condition_names_the_loads_keys_as_literals(tmp_path: Path) -> None:
    # What the view leaves out, and the count of what a load replaces: constants DuckDB pushes
    # into the scan of the data files, not a semi-join against the staged rows.
    con = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    staged = lake.staging(con, "billing_facts")
    con.execute(
        f"""insert into {staged} (load_id, source_file, source_row, source_format, billing_account_id,
               billing_currency, billing_period_start, billing_period_end, charge_period_start,
               charge_period_end, charge_category, billed_cost, effective_cost)
            select 'L', 'f', i, 'focus', account, 'USD', period, period + interval 1 month, period,
                   period + interval 1 hour, 'Usage', 1, 1
            from (values (1, 'a''1', timestamp '2026-11-01'), (2, 'a''1', timestamp '2026-11-01'),
                         (3, 'b', timestamp '2026-10-01')) t(i, account, period)"""
    )
    assert lake._replaced_condition(con, "billing_facts", "L") == (
        '(lake_rows."billing_account_id", lake_rows."billing_period_start") in '
        "(('a''1', timestamp '2026-11-01T00:00:00'), ('b', timestamp '2026-10-01T00:00:00'))"
    )
    con.close()


@pytest.mark.slow
def test_a_windowed_read_opens_only_the_files_its_window_can_hold(local_lake, tmp_path: Path) -> None:
    # October (two lines) and November (one): a stage windowing November reads November's file
    # alone, its figures those of the whole view; afterwards, and after an error inside, the
    # view reads both files again.
    con = local_lake
    both = focus_rows("acct", "2026-10", ["1.00", "2.00"]) + focus_rows("acct", "2026-11", ["4.00"])
    ingest_billing(con, [write(tmp_path / "v1/both.csv", both)])
    window = "select count(*), sum(billed_cost) from billing_facts where charge_period_start >= ? and charge_period_start < ?"
    november = [datetime(2026, 11, 1), datetime(2026, 12, 1)]
    whole = con.execute(window, november).fetchall()
    assert whole == [(1, D("4.00"))]
    with lake.narrowed(
        con, "billing_facts", "charge_period_start", date(2026, 11, 1), date(2026, 12, 1)
    ) as files:
        assert files == 1
        assert con.execute(window, november).fetchall() == whole
        assert con.execute("select count(*) from billing_facts").fetchall() == [(1,)]
    assert con.execute("select count(*) from billing_facts").fetchall() == [(3,)]
    with (
        pytest.raises(ZeroDivisionError),
        lake.narrowed(con, "billing_facts", "charge_period_start", *november),
    ):
        assert con.execute("select count(*) from billing_facts").fetchall() == [(1,)]
        _ = 1 / 0
    assert con.execute("select count(*) from billing_facts").fetchall() == [(3,)]


@pytest.mark.slow
def test_a_stage_reads_its_runs_snapshots_without_asking_the_catalog_again(
    local_lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run recorded October's billing and no job log. Then November's billing and a job log
    # were committed: a stage of that run still reads October alone and no job, and the billing
    # table it had loaded already holds the snapshot, so the catalog is not asked for it again.
    from athanor.ingest.deliveries import ingest_job_file

    con, cfg = local_lake, lake.config()
    ingest_billing(con, [write(tmp_path / "a/oct.csv", focus_rows("acct", "2026-10", ["1.00", "2.00"]))])
    recorded = lake.record_snapshots(con, "run-1", cfg)
    assert set(recorded) == {"billing_facts"}
    ingest_billing(con, [write(tmp_path / "b/nov.csv", focus_rows("acct", "2026-11", ["4.00"]))])
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(JOBS.read_text())
    ingest_job_file(con, jobs, as_of=AS_OF)
    assert con.execute("select count(*) from job_run_facts").fetchall() != [(0,)]

    def no_catalog(cfg: lake.LakeConfig) -> None:
        raise AssertionError("the catalog was asked again")

    stage = con.cursor()
    with monkeypatch.context() as patched:
        patched.setattr(lake, "catalog", no_catalog)
        lake.attach_for_run(stage, cfg, "run-1")
    assert stage.execute("select count(*), sum(billed_cost) from billing_facts").fetchall() == [
        (2, D("3.00"))
    ]
    assert stage.execute("select count(*) from job_run_facts").fetchall() == [(0,)]
    # A run that recorded nothing (before its validate) reads the current snapshots.
    current = con.cursor()
    lake.attach_for_run(current, cfg, "run-2")
    assert current.execute("select count(*) from billing_facts").fetchall() == [(3,)]


def test_a_windowed_read_changes_nothing_in_the_file_mode(tmp_path: Path) -> None:
    con = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    try:
        with lake.narrowed(
            con, "billing_facts", "charge_period_start", date(2026, 11, 1), date(2026, 12, 1)
        ) as files:
            assert files is None
            assert con.execute("select count(*) from billing_facts").fetchall() == [(0,)]
    finally:
        con.close()


# The read cache: a bucket stood in for by a folder (pyarrow's SubTreeFileSystem resolves the
# same bucket/key paths the lake's S3 filesystem does).
@pytest.fixture
def bucket_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> lake.LakeConfig:
    from pyarrow.fs import LocalFileSystem, SubTreeFileSystem

    bucket = tmp_path / "s3"
    for key, text in [("bucket/lake/a.parquet", "a" * 10), ("bucket/lake/b.parquet", "b" * 20)]:
        (bucket / key).parent.mkdir(parents=True, exist_ok=True)
        (bucket / key).write_text(text)
    monkeypatch.setattr(lake, "filesystem", lambda cfg: SubTreeFileSystem(str(bucket), LocalFileSystem()))
    return lake.LakeConfig(
        catalog_uri="sqlite://",
        warehouse="s3://bucket/lake",
        namespace="athanor",
        s3_endpoint_url="http://127.0.0.1:7480",
        region="us-east-1",
        cache_dir=tmp_path / "cache",
        cache_bytes=1_000,
    )


def test_a_buckets_data_files_are_copied_once_and_read_from_the_copies(
    bucket_lake: lake.LakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = ["bucket/lake/a.parquet", "bucket/lake/b.parquet"]
    copies = lake._local_paths(bucket_lake, files)
    assert [p.read_text() for p in copies] == ["a" * 10, "b" * 20]
    assert all(
        p.is_relative_to(bucket_lake.cache_dir) and str(p).endswith(f)
        for p, f in zip(copies, files, strict=True)
    )
    assert not [p for p in bucket_lake.cache_dir.rglob(".*")]  # no partial copy left behind

    def no_bucket(cfg: lake.LakeConfig) -> None:
        raise AssertionError("a cached data file was fetched again")

    monkeypatch.setattr(lake, "filesystem", no_bucket)
    assert lake._local_paths(bucket_lake, files) == copies
    other = dataclasses.replace(bucket_lake, s3_endpoint_url="http://127.0.0.1:9000")
    with pytest.raises(AssertionError, match="fetched again"):
        lake._local_paths(other, files[:1])  # another server's bucket of the same name: not these copies


def test_the_read_cache_evicts_the_least_recently_read_copies_beyond_its_size(
    bucket_lake, tmp_path: Path
) -> None:
    root = tmp_path / "cache" / "endpoint"
    two_hours_ago, three_hours_ago = time.time() - 7_200, time.time() - 10_800
    sizes = {"old.parquet": 400, "older.parquet": 400, "kept.parquet": 400, "recent.parquet": 400}
    for name, size in sizes.items():
        (root / "bucket").mkdir(parents=True, exist_ok=True)
        (root / "bucket" / name).write_bytes(b"x" * size)
    (root / "bucket" / ".dead.parquet.123.part").write_bytes(b"x" * 50)  # its process died
    (root / "bucket" / ".live.parquet.124.part").write_bytes(b"x" * 50)  # being written
    for name, at in [
        (".dead.parquet.123.part", two_hours_ago),
        ("old.parquet", two_hours_ago),
        ("older.parquet", three_hours_ago),
        ("kept.parquet", three_hours_ago),
    ]:
        os.utime(root / "bucket" / name, (at, at))
    # 1,600 bytes against a 1,200-byte limit: the copy read longest ago goes (older, 400 bytes),
    # and that is enough; kept (as old as older) is in use and is spared.
    evicted = lake._evict(root, keep={root / "bucket" / "kept.parquet"}, limit=1_200)
    assert evicted == 1
    assert sorted(p.name for p in (root / "bucket").iterdir()) == [
        ".live.parquet.124.part",  # partial copies count for nothing; the dead one is gone
        "kept.parquet",
        "old.parquet",
        "recent.parquet",
    ]
    # Down to 500 bytes: kept and old go (read hours ago); recent was read within the hour and
    # stays, even while the cache is over its limit.
    assert lake._evict(root, keep=set(), limit=500) == 2
    assert sorted(p.name for p in (root / "bucket").iterdir()) == [".live.parquet.124.part", "recent.parquet"]
