"""The analysts' snapshot costs what changed: one restated month writes one Parquet file, the
snapshot answers as the warehouse does, a killed publish leaves the previous one whole, and
files no snapshot references go (athanor.warehouse.snapshots)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from athanor.warehouse import connect, open_snapshot, sql
from athanor.warehouse import snapshots as snap
from athanor.warehouse.docs import catalog
from athanor.warehouse.readonly import QueryRefused, open_readonly, run_readonly

TOTALS = "select count(*), sum(billed_cost) from billing_facts"


def bill(con: duckdb.DuckDBPyConnection, load: str, account: str, period: str, rows: int, cost: str) -> None:
    """`rows` USD usage lines of `cost` each, for one account and month, as load `load` writes them."""
    con.execute(
        """insert into billing_facts (load_id, source_file, source_row, source_format, billing_account_id,
               billing_currency, billing_period_start, billing_period_end, charge_period_start,
               charge_period_end, charge_category, billed_cost, effective_cost, tags)
           select $load, 'bill.csv', range + 1, 'focus', $account, 'USD', $period::timestamp,
                  $period::timestamp + interval 1 month, $period::timestamp, $period::timestamp + interval 1 hour,
                  'Usage', $cost, $cost, map {'team': 'llm'}
           from range($rows)""",
        {"load": load, "account": account, "period": period, "rows": rows, "cost": cost},
    )
    con.execute(
        """insert or replace into loads (load_id, kind, source_uri, files, checksum_sha256, size_bytes,
               row_count, status, started_at, finished_at)
           values (?, 'billing', 'landing', ['bill.csv'], ?, 1, ?, 'loaded', ?, ?)""",
        [load, load, rows, datetime(2026, 12, 1), datetime(2026, 12, 1, 0, 1)],
    )


def restate(
    con: duckdb.DuckDBPyConnection, load: str, account: str, period: str, rows: int, cost: str
) -> None:
    """A new delivery of one account's month, loaded as the billing loader does (restated rows go)."""
    bill(con, load, account, period, rows, cost)
    con.execute(sql("ingest/delete_restated"), {"load_id": load})


def publish(
    con: duckdb.DuckDBPyConnection, snapshot: Path, ahead: snap.WriteAhead | None = None
) -> snap.StagedSnapshot:
    """Stage a snapshot (taking the files `ahead` wrote), put it in place, remove what it left."""
    staged = snap.stage(con, snapshot, ahead)
    os.replace(staged.path, staged.target)
    staged.remove_unreferenced()
    return staged


def parquet_files(snapshot: Path) -> list[str]:
    return sorted(p.name for p in snap.parts_dir(snapshot).rglob("*.parquet"))


@pytest.fixture
def warehouse(tmp_path: Path):
    """Account a: September 3 lines of 1.50 and October 2 of 2.25 (load l1); account b:
    October 4 lines of 10.00 (load l2). Three partitions, 9 lines, 49.00."""
    con = connect(tmp_path / "wh.duckdb", memory_limit="512MB", threads=1)
    bill(con, "l1", "a", "2026-09-01", 3, "1.50")
    bill(con, "l1", "a", "2026-10-01", 2, "2.25")
    bill(con, "l2", "b", "2026-10-01", 4, "10.00")
    yield con, tmp_path / "wh-snapshot.duckdb"
    con.close()


def test_one_restated_month_writes_one_file_and_the_snapshot_answers_as_the_warehouse(
    warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    con, snapshot = warehouse
    monkeypatch.setattr(snap, "RETAIN_S", 0.0)  # as if a night passed between publishes
    first = publish(con, snapshot)
    assert (len(first.written), first.kept, first.rows_written) == (3, 0, 9)

    # Account a's October again: 5 lines of 3.00 replace its 2 lines of 2.25.
    restate(con, "l3", "a", "2026-10-01", 5, "3.00")
    second = publish(con, snapshot)
    assert (len(second.written), second.kept, second.rows_written) == (1, 2, 5)
    # The replaced partition's file stays while readers of the previous snapshot may need it.
    assert len(parquet_files(snapshot)) == 4

    # 3 x 1.50 + 5 x 3.00 + 4 x 10.00 = 59.50 over 12 lines, in the warehouse and the snapshot.
    expected = (12, Decimal("59.500000000000"))
    assert con.execute(TOTALS).fetchone() == expected
    with open_snapshot(snapshot) as reader:
        assert reader.execute(TOTALS).fetchone() == expected
        # Through the FOCUS view, which the snapshot carries over its billing_facts view.
        by_month = """select BillingAccountId, BillingPeriodStart::date::varchar, count(*), sum(EffectiveCost)
                      from focus_charges group by all order by all"""
        rows = reader.execute(by_month).fetchall()
        assert (
            rows
            == con.execute(by_month).fetchall()
            == [
                ("a", "2026-09-01", 3, Decimal("4.500000000000")),
                ("a", "2026-10-01", 5, Decimal("15.000000000000")),
                ("b", "2026-10-01", 4, Decimal("40.000000000000")),
            ]
        )
        assert reader.execute("select tags['team'] from billing_facts limit 1").fetchone() == ("llm",)

    # Nothing changed: nothing is written, and the file the previous snapshot alone used goes.
    third = publish(con, snapshot)
    assert (len(third.written), third.kept) == (0, 3)
    assert len(parquet_files(snapshot)) == 3


def test_the_snapshot_has_the_warehouses_relations_columns_types_and_comments(warehouse) -> None:
    con, snapshot = warehouse
    publish(con, snapshot)
    with open_snapshot(snapshot) as reader:
        published = {r.name: r for r in catalog(reader)}
    live = {r.name: r for r in catalog(con)}
    assert set(published) == set(live)
    for name, relation in live.items():
        assert published[name].columns == relation.columns, name
        assert published[name].comment == relation.comment, name
    assert published["billing_facts"].kind == "view"  # over its Parquet files
    assert published["job_run_facts"].kind == "table"  # empty here: nothing to partition


def test_a_column_empty_in_a_partition_is_left_out_of_its_file_and_read_back_as_null(warehouse) -> None:
    con, snapshot = warehouse
    # Account c's October names its region; no other partition does.
    bill(con, "l3", "c", "2026-10-01", 2, "5.00")
    con.execute("update billing_facts set region_id = 'us-east-1' where load_id = 'l3'")
    publish(con, snapshot)
    query = "select billing_account_id, region_id, charge_class, count(*) from billing_facts group by all order by all"
    expected = [("a", None, None, 5), ("b", None, None, 4), ("c", "us-east-1", None, 2)]
    assert con.execute(query).fetchall() == expected
    with open_snapshot(snapshot) as reader:
        assert reader.execute(query).fetchall() == expected
        # A column no file holds keeps its type in the view.
        types = "select typeof(charge_class), typeof(x_gpu_count) from billing_facts limit 1"
        assert reader.execute(types).fetchone() == ("VARCHAR", "INTEGER")
        parts = reader.execute(
            f"select json_extract_string(partition_key, '$[1]'), file, absent from {snap.MANIFEST_SCHEMA}.partitions"
        ).fetchall()
    assert sorted(account for account, _, _ in parts) == ["a", "a", "b", "c"]
    # What each file holds: region_id only in c's, charge_class in none, the costs in all.
    for account, file, absent in parts:
        held = {r[0] for r in duckdb.sql(f"describe select * from read_parquet('{file}')").fetchall()}
        left_out = set(json.loads(absent))
        assert held.isdisjoint(left_out) and len(held | left_out) == len(con.table("billing_facts").columns)
        assert "charge_class" in left_out and "billed_cost" in held
        assert ("region_id" in held) == (account == "c")


def test_analysts_read_the_views_but_no_other_file(warehouse, tmp_path: Path) -> None:
    con, snapshot = warehouse
    publish(con, snapshot)
    outside = tmp_path / "other.csv"
    outside.write_text("a\n1\n")
    reader = open_readonly(snapshot, snapshot=True, memory_limit="256MB", threads=1)
    try:
        assert run_readonly(reader, TOTALS)[1] == [(9, Decimal("49.000000000000"))]
        with pytest.raises(QueryRefused, match="no files"):
            run_readonly(reader, f"select * from read_csv('{outside}')")
        with pytest.raises(QueryRefused, match="read-only"):
            run_readonly(reader, "explain analyze delete from billing_facts")
    finally:
        reader.close()


def test_a_change_outside_the_ledger_is_still_seen(warehouse) -> None:
    """A row deleted without a load (by hand) changes its partition's count: it is written again."""
    con, snapshot = warehouse
    publish(con, snapshot)
    con.execute("delete from billing_facts where billing_account_id = 'b' and source_row = 1")
    staged = publish(con, snapshot)
    assert (len(staged.written), staged.rows_written) == (1, 3)
    with open_snapshot(snapshot) as reader:
        assert reader.execute(TOTALS).fetchone() == (8, Decimal("39.000000000000"))


def test_a_new_column_writes_every_partition_again(warehouse) -> None:
    con, snapshot = warehouse
    publish(con, snapshot)
    con.execute("alter table billing_facts add column x_note varchar default 'n'")
    staged = publish(con, snapshot)
    assert len(staged.written) == 3
    with open_snapshot(snapshot) as reader:
        assert reader.execute("select distinct x_note from billing_facts").fetchall() == [("n",)]


# A publish that stops for good once its Parquet files are written and its small file is
# half built, until the test kills it.
KILLED = r"""
import sys, time
from pathlib import Path
from athanor.warehouse import connect, publish_snapshot
from athanor.warehouse import snapshots

def stall(*args, **kwargs):
    print("stalled", flush=True)
    time.sleep(120)

snapshots._write_manifest = stall
warehouse, snapshot = Path(sys.argv[1]), Path(sys.argv[2])
con = connect(warehouse, memory_limit="512MB", threads=1)
publish_snapshot(con, warehouse, snapshot)
"""


@pytest.mark.slow
def test_a_killed_publish_leaves_the_previous_snapshot_whole_and_its_leftovers_go(
    warehouse, tmp_path
) -> None:
    con, snapshot = warehouse
    publish(con, snapshot)
    restate(con, "l3", "a", "2026-10-01", 5, "3.00")
    before_kill = parquet_files(snapshot)
    con.close()

    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(tmp_path / "wh.duckdb"), str(snapshot)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "stalled"
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
    leftovers = [p for p in parquet_files(snapshot) if p not in before_kill]
    assert len(leftovers) == 1  # the restated month's file, which no snapshot references
    assert list(snapshot.parent.glob(f".{snapshot.name}.{writer.pid}.tmp*"))

    # The previous snapshot is current and whole: yesterday's 9 lines and 49.00.
    with open_snapshot(snapshot) as reader:
        assert reader.execute(TOTALS).fetchone() == (9, Decimal("49.000000000000"))

    con = connect(tmp_path / "wh.duckdb", memory_limit="512MB", threads=1)
    try:
        staged = publish(con, snapshot)
    finally:
        con.close()
    assert len(staged.written) == 1
    assert not set(leftovers) & set(parquet_files(snapshot))
    assert not list(snapshot.parent.glob(f".{snapshot.name}.*.tmp*"))
    with open_snapshot(snapshot) as reader:
        assert reader.execute(TOTALS).fetchone() == (12, Decimal("59.500000000000"))


def test_gpu_samples_of_a_reloaded_day_are_written_again_and_no_other_day(tmp_path: Path) -> None:
    con = connect(tmp_path / "wh.duckdb", memory_limit="512MB", threads=1)
    snapshot = tmp_path / "wh-snapshot.duckdb"
    try:

        def samples(load: str, day: str, utilisation: float) -> None:
            # One GPU sampled hourly over the day, as one telemetry load.
            con.execute(
                """insert into gpu_samples (load_id, source_format, source_file, source_row, host, gpu_id,
                       sampled_at, utilisation_pct)
                   select ?, 'nvidia_smi', 'smi.csv', range + 1, 'h1', 'GPU-1',
                          ?::timestamp + range * interval 1 hour, ?
                   from range(24)""",
                [load, day, utilisation],
            )
            con.execute(
                """insert into loads (load_id, kind, source_uri, files, checksum_sha256, size_bytes,
                       status, started_at) values (?, 'gpu_telemetry', 'landing', ['smi.csv'], ?, 1, 'loaded', ?)""",
                [load, load, datetime(2026, 12, 1)],
            )
            con.execute(sql("ingest/telemetry_replace"), {"load_id": load})

        samples("t1", "2026-11-28", 50.0)
        samples("t2", "2026-11-29", 60.0)
        assert len(publish(con, snapshot).written) == 2
        samples("t3", "2026-11-29", 70.0)  # the 29th delivered again: it replaces t2's samples
        staged = publish(con, snapshot)
        assert (len(staged.written), staged.kept, staged.rows_written) == (1, 1, 24)
        with open_snapshot(snapshot) as reader:
            assert reader.execute(
                "select sampled_at::date::varchar, count(*), avg(utilisation_pct) from gpu_samples group by 1 order by 1"
            ).fetchall() == [("2026-11-28", 24, 50.0), ("2026-11-29", 24, 70.0)]
    finally:
        con.close()


def test_publishes_in_quick_succession_keep_the_files_a_reader_may_have_just_opened(warehouse) -> None:
    """A reader opens a snapshot; two more are published within RETAIN_S: it can still read."""
    con, snapshot = warehouse
    publish(con, snapshot)
    reader = duckdb.connect(str(snapshot), read_only=True)
    try:
        restate(con, "l3", "a", "2026-10-01", 5, "3.00")
        publish(con, snapshot)
        restate(con, "l4", "a", "2026-10-01", 1, "7.00")
        publish(con, snapshot)
        assert len(parquet_files(snapshot)) == 5  # three of the first, one each of the others
        assert reader.execute(TOTALS).fetchone() == (9, Decimal("49.000000000000"))
    finally:
        reader.close()


@pytest.mark.slow
def test_files_written_ahead_are_taken_by_the_publish_and_one_changed_since_is_written_again(
    warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    con, snapshot = warehouse
    monkeypatch.setattr(snap, "RETAIN_S", 0.0)
    publish(con, snapshot)
    restate(con, "l3", "a", "2026-10-01", 5, "3.00")
    restate(con, "l4", "b", "2026-10-01", 6, "1.00")

    # Written while other stages run (athanor run), then taken by the publish: nothing twice.
    with snap.WriteAhead(con, snapshot) as ahead:
        staged = publish(con, snapshot, ahead)
    assert (len(staged.written), staged.taken, staged.kept, staged.rows_written) == (2, 2, 1, 11)

    # A partition that changes after its file was written ahead is written again.
    restate(con, "l5", "a", "2026-09-01", 2, "4.00")
    with snap.WriteAhead(con, snapshot) as ahead:
        assert len(ahead.result()) == 1
        con.execute("delete from billing_facts where load_id = 'l5' and source_row = 1")
        staged = publish(con, snapshot, ahead)
    assert (len(staged.written), staged.taken, staged.rows_written) == (1, 0, 1)

    # a: September 1 x 4.00 and October 5 x 3.00; b: October 6 x 1.00.
    expected = (12, Decimal("25.000000000000"))
    assert con.execute(TOTALS).fetchone() == expected
    with open_snapshot(snapshot) as reader:
        assert reader.execute(TOTALS).fetchone() == expected
    assert len(parquet_files(snapshot)) == 3 + 1  # and the replaced one the last snapshot used


def test_leaving_a_write_ahead_no_publish_took_removes_its_files(warehouse) -> None:
    con, snapshot = warehouse
    publish(con, snapshot)
    before = parquet_files(snapshot)
    restate(con, "l3", "a", "2026-10-01", 5, "3.00")
    with snap.WriteAhead(con, snapshot) as ahead:
        ahead.result()  # written, then the run fails before its publish
        assert len(parquet_files(snapshot)) == len(before) + 1
    assert parquet_files(snapshot) == before


def allocation(con: duckdb.DuckDBPyConnection, run_id: str, month: str, hours: int, cost: str) -> None:
    """`hours` idle machine-hours of `cost` in `month`, as allocate_gpus writes a month under its run."""
    con.execute(
        """insert into gpu_allocation_hourly (hour, day, period_end, resource_id, instance_type, pool,
               kind, team, gpus, billed_gpu_seconds, gpu_seconds, hour_cost_usd, cost_usd,
               cost_cents_usd, run_id)
           select $month::timestamp + to_hours(range), $month::date, $month::timestamp + to_hours(range + 1),
                  'i-1', 'p4d.24xlarge', 'p4d.24xlarge', 'idle', 'llm', 8, 28800, 28800, $cost, $cost,
                  $cost, $run
           from range($hours)""",
        {"month": month, "hours": hours, "cost": cost, "run": run_id},
    )


def allocation_totals(con: duckdb.DuckDBPyConnection, snapshot: Path) -> tuple:
    """The allocation's rows and cost in the published snapshot, checked equal to the warehouse's."""
    query = "select count(*), sum(cost_usd) from gpu_allocation_hourly"
    with open_snapshot(snapshot) as reader:
        published = reader.execute(query).fetchone()
    assert published == con.execute(query).fetchone()
    return published


def test_a_reallocated_month_writes_its_file_alone_though_no_load_came(warehouse) -> None:
    con, snapshot = warehouse
    allocation(con, "r1", "2026-10-01", 3, "28.80")
    allocation(con, "r1", "2026-11-01", 2, "28.80")
    first = publish(con, snapshot)
    assert (len(first.written), first.rows_written) == (5, 9 + 5)  # 3 billing + 2 allocation months

    # The stage reallocates November under its own run (no new load: a new node map, say).
    con.execute("delete from gpu_allocation_hourly where hour >= '2026-11-01'")
    allocation(con, "r2", "2026-11-01", 2, "27.00")
    second = publish(con, snapshot)
    assert (len(second.written), second.kept, second.rows_written) == (1, 4, 2)
    # 3 x 28.80 + 2 x 27.00 = 140.40 over 5 hours, as in the warehouse.
    assert allocation_totals(con, snapshot) == (5, Decimal("140.400000000000"))


def test_a_write_ahead_leaves_the_allocation_to_the_publish(warehouse) -> None:
    """The allocation is rewritten by a stage after the write-ahead starts: it counts only the
    tables loads change, and the publish writes the reallocated month."""
    con, snapshot = warehouse
    allocation(con, "r1", "2026-10-01", 3, "28.80")
    publish(con, snapshot)
    restate(con, "l3", "a", "2026-10-01", 5, "3.00")
    allocation(con, "r2", "2026-11-01", 2, "27.00")
    with snap.WriteAhead(con, snapshot) as ahead:
        assert {table for table, _ in ahead.result()} == {"billing_facts"}
        staged = publish(con, snapshot, ahead)
    # The restated partition taken from the write-ahead, November's allocation written by the publish.
    assert (staged.taken, len(staged.written), staged.rows_written) == (1, 2, 5 + 2)
    assert allocation_totals(con, snapshot) == (5, Decimal("140.400000000000"))


@pytest.mark.slow
def test_the_allocation_is_written_ahead_once_its_stage_is_done(warehouse) -> None:
    con, snapshot = warehouse
    assert [spec.table for spec in snap.rewritten_by("allocate_gpus")] == ["gpu_allocation_hourly"]
    assert snap.rewritten_by("load") == () == snap.rewritten_by("watch_spend")
    allocation(con, "r1", "2026-10-01", 3, "28.80")
    publish(con, snapshot)
    restate(con, "l3", "a", "2026-10-01", 5, "3.00")
    with snap.WriteAhead(con, snapshot) as ahead:
        # athanor run: allocate_gpus reallocates November under its run, then queues the table.
        allocation(con, "r2", "2026-11-01", 2, "27.00")
        ahead.also(snap.rewritten_by("allocate_gpus"))
        assert {table for table, _ in ahead.result()} == {"billing_facts", "gpu_allocation_hourly"}
        staged = publish(con, snapshot, ahead)
    # Both files taken from the write-ahead, none written by the publish itself.
    assert (staged.taken, len(staged.written), staged.rows_written) == (2, 2, 5 + 2)
    assert allocation_totals(con, snapshot) == (5, Decimal("140.400000000000"))


@pytest.mark.slow
def test_a_failed_write_ahead_leaves_the_earlier_ones_files_to_the_publish(
    warehouse, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    con, snapshot = warehouse
    allocation(con, "r1", "2026-10-01", 3, "28.80")
    publish(con, snapshot)
    restate(con, "l3", "a", "2026-10-01", 5, "3.00")
    allocation(con, "r2", "2026-11-01", 2, "27.00")
    write = snap._write_parquet

    def disk_full_for_the_allocation(con, table, spec, *args):
        if spec.table == "gpu_allocation_hourly":
            raise OSError(28, "No space left on device")
        return write(con, table, spec, *args)

    monkeypatch.setattr(snap, "_write_parquet", disk_full_for_the_allocation)
    with snap.WriteAhead(con, snapshot) as ahead:
        ahead.also(snap.rewritten_by("allocate_gpus"))
        parts = ahead.result()
        assert "publish of gpu_allocation_hourly failed ([Errno 28] No space left on device)" in caplog.text
        # The billing file the first write made is still there for the publish to take.
        assert [table for table, _ in parts] == ["billing_facts"]
        assert all(Path(part.file).is_file() for part in parts.values())
        monkeypatch.setattr(snap, "_write_parquet", write)
        staged = publish(con, snapshot, ahead)
    assert (staged.taken, len(staged.written), staged.rows_written) == (1, 2, 5 + 2)
    assert allocation_totals(con, snapshot) == (5, Decimal("140.400000000000"))


def digests_taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files whose SHA-256 is computed from here on."""
    taken: list[str] = []
    digest = snap._digest

    def counting(path: Path) -> tuple[str, str | None]:
        taken.append(path.name)
        return digest(path)

    monkeypatch.setattr(snap, "_digest", counting)
    return taken


@pytest.fixture
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files this test writes count as settled at once: stamped when digested (`SETTLED_NS`)."""
    monkeypatch.setattr(snap, "SETTLED_NS", 0)


def test_a_file_changed_just_before_its_digest_gets_no_stamp_and_is_read_again(
    warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within a clock tick of its last change a later write could leave the stamp as it was:
    a file changed less than SETTLED_NS before its digest is read again at the next publish."""
    con, snapshot = warehouse
    # A settling time longer than any run (11 days): unsettled however slowly the publishes run.
    monkeypatch.setattr(snap, "SETTLED_NS", 10**15)
    publish(con, snapshot)  # its three files written, and digested, just now
    taken = digests_taken(monkeypatch)
    assert publish(con, snapshot).kept == 3
    assert len(taken) == 3
    monkeypatch.setattr(snap, "SETTLED_NS", 0)  # as if they had settled since: stamped, then not read
    assert publish(con, snapshot).kept == 3
    assert publish(con, snapshot).kept == 3
    assert len(taken) == 6


def test_a_kept_file_is_not_read_again_while_it_has_its_stamp(
    warehouse, monkeypatch: pytest.MonkeyPatch, settled_at_once: None
) -> None:
    con, snapshot = warehouse
    publish(con, snapshot)
    restate(con, "l3", "a", "2026-10-01", 5, "3.00")
    taken = digests_taken(monkeypatch)
    staged = publish(con, snapshot)
    # The new partition's file is digested as it is written; the two kept are not read.
    assert (len(staged.written), staged.kept, len(taken)) == (1, 2, 1)
    assert taken == [path.name for path in staged.written]


def test_a_file_rewritten_in_place_with_its_times_set_back_is_written_again(
    warehouse, monkeypatch: pytest.MonkeyPatch, settled_at_once: None
) -> None:
    """Same size, other bytes, modification time restored: the change time still moved."""
    con, snapshot = warehouse
    publish(con, snapshot)
    with open_snapshot(snapshot) as reader:
        before = reader.execute(TOTALS).fetchone()
    part = sorted(snap.parts_dir(snapshot).rglob("*.parquet"))[0]
    stat = part.stat()
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the middle of the file
    time.sleep(0.01)  # a later change time, on file systems that keep milliseconds
    part.write_bytes(bytes(data))
    os.utime(part, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert part.stat().st_size == stat.st_size and part.stat().st_mtime_ns == stat.st_mtime_ns
    taken = digests_taken(monkeypatch)
    staged = publish(con, snapshot)
    # Read again, found changed, written again; the other two kept unread.
    assert (staged.kept, len(staged.written)) == (2, 1)
    assert taken == [part.name, Path(staged.written[0]).name]
    with open_snapshot(snapshot) as reader:
        assert reader.execute(TOTALS).fetchone() == before == con.execute(TOTALS).fetchone()


def test_a_snapshot_published_without_stamps_reads_its_files_once(
    warehouse, monkeypatch: pytest.MonkeyPatch, settled_at_once: None
) -> None:
    con, snapshot = warehouse
    publish(con, snapshot)
    # As a snapshot published before stamps were kept: the manifest has no such column.
    with duckdb.connect(str(snapshot)) as older:
        older.execute(f"alter table {snap.MANIFEST_SCHEMA}.partitions drop column stamp")
    taken = digests_taken(monkeypatch)
    assert publish(con, snapshot).kept == 3
    assert len(taken) == 3  # each file read once, and stamped
    assert publish(con, snapshot).kept == 3
    assert len(taken) == 3


def test_a_kept_file_gone_is_written_again(warehouse) -> None:
    con, snapshot = warehouse
    publish(con, snapshot)
    gone = sorted(snap.parts_dir(snapshot).rglob("*.parquet"))[0]
    gone.unlink()
    staged = publish(con, snapshot)
    assert (staged.kept, len(staged.written)) == (2, 1)
    with open_snapshot(snapshot) as reader:
        assert (
            reader.execute(TOTALS).fetchone()
            == con.execute(TOTALS).fetchone()
            == (9, Decimal("49.000000000000"))
        )
