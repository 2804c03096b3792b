"""The lake mode against real servers: Iceberg tables on Ceph RadosGW, the catalog in PostgreSQL.

Each test gets a catalog database and a bucket of its own (one PostgreSQL for the module, the
session's RadosGW). The billing loads go through `ingest_billing` as in the file mode; the
file mode's own restatement and rollback tests run here again in the lake mode.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from athanor.ingest.billing import ingest_billing
from athanor.settings import PROJECT_ROOT, Settings
from athanor.warehouse import connect, lake
from tests.unit import test_ingest
from tests.unit.test_ingest import focus_rows, write

pytestmark = pytest.mark.integration
D = Decimal


@pytest.fixture
def con(lake_settings: dict[str, str], tmp_path: Path):
    c = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    assert lake.attached(c)
    yield c
    c.close()


def iceberg_table():
    cfg = lake.config()
    assert cfg is not None
    return lake.table(cfg, "billing_facts")


def by_account(con) -> list[tuple]:
    return con.execute(
        "select billing_account_id, count(*), sum(billed_cost) from billing_facts group by all order by 1"
    ).fetchall()


# The file mode's load tests, run again with the fact rows in the lake.
@pytest.mark.parametrize(
    "case",
    [
        test_ingest.test_unchanged_file_is_skipped,
        test_ingest.test_restated_month_replaces_the_earlier_delivery,
        test_ingest.test_failed_restatement_leaves_the_previous_version,
        test_ingest.test_every_fact_traces_to_its_file_row_and_load,
        test_ingest.test_mixed_currencies_are_kept_apart,
    ],
    ids=lambda case: case.__name__,
)
def test_file_mode_load_tests_hold_in_the_lake(case, con, tmp_path: Path) -> None:
    case(con, tmp_path)
    # Between loads the DuckDB table holds nothing: every row is in the lake.
    assert con.execute(f"select count(*) from {lake.staging(con, 'billing_facts')}").fetchall() == [(0,)]


def test_a_failure_after_the_insert_leaves_the_lake_as_it_was(con, tmp_path: Path, monkeypatch) -> None:
    test_ingest.test_failure_rolls_back_after_the_insert(con, tmp_path, monkeypatch)
    loaded = con.execute("select load_id from loads").fetchall()
    tbl = iceberg_table()
    assert [(s.summary["athanor.load_id"],) for s in tbl.snapshots()] == loaded  # the first load's only


def test_restated_month_is_one_copy_on_write_commit_and_time_travel_reads_the_old_one(
    con, tmp_path: Path
) -> None:
    ingest_billing(con, [write(tmp_path / "v1/a.csv", focus_rows("acct-a", "2026-10", ["1.00", "2.00"]))])
    ingest_billing(con, [write(tmp_path / "v1/b.csv", focus_rows("acct-b", "2026-10", ["5.00"]))])
    tbl = iceberg_table()
    before, commits = tbl.current_snapshot().snapshot_id, len(tbl.metadata.metadata_log)
    restated = ingest_billing(
        con, [write(tmp_path / "v2/a.csv", focus_rows("acct-a", "2026-10", ["1.50", "2.50", "3.00"]))]
    )
    assert restated.replaced_rows == 2
    tbl = tbl.refresh()
    # One catalog commit: the metadata file advanced once (its delete and append snapshots together).
    assert len(tbl.metadata.metadata_log) == commits + 1
    summary = tbl.current_snapshot().summary
    assert summary["athanor.load_id"] == restated.load_id
    assert summary["total-delete-files"] == "0" and summary["total-position-deletes"] == "0"
    # acct-a's October is one data file again; acct-b's file was not rewritten.
    assert by_account(con) == [("acct-a", 3, D("7.00")), ("acct-b", 1, D("5.00"))]
    assert len(lake.data_files(tbl)) == 2
    spec = tbl.spec()
    assert [f.name for f in spec.fields] == ["provider_name", "billing_account_id", "billing_period_start"]

    old = lake.open_as_of(Settings.from_env(), {"billing_facts": before})
    assert by_account(old) == [("acct-a", 2, D("3.00")), ("acct-b", 1, D("5.00"))]
    old.close()

    # The run records what it read; the same ids open the same figures later.
    recorded = lake.record_snapshots(con, "run-1", lake.config())
    assert recorded == {"billing_facts": tbl.current_snapshot().snapshot_id}
    assert lake.run_snapshots(con, "run-1") == {"billing_facts": tbl.current_snapshot().snapshot_id}


SECOND_ENGINE = """
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
import os
cat = SqlCatalog("athanor", uri=os.environ["ATHANOR_LAKE_CATALOG_URI"], **{"s3.endpoint": os.environ["ATHANOR_S3_ENDPOINT_URL"]})
rows = cat.load_table(("athanor", "billing_facts")).scan(selected_fields=("billing_account_id", "billed_cost")).to_arrow()
out = {}
for account, cost in zip(rows["billing_account_id"].to_pylist(), rows["billed_cost"].to_pylist()):
    n, total = out.get(account, (0, "0"))
    from decimal import Decimal
    out[account] = (n + 1, str(Decimal(total) + cost))
print(json.dumps(out))
"""


def test_a_second_engine_in_a_fresh_process_gets_the_same_totals(con, tmp_path: Path) -> None:
    ingest_billing(con, [write(tmp_path / "a.csv", focus_rows("acct-a", "2026-10", ["1.10", "2.20"]))])
    ingest_billing(con, [write(tmp_path / "b.csv", focus_rows("acct-b", "2026-11", ["0.001", "4"]))])
    out = subprocess.run([sys.executable, "-c", SECOND_ENGINE], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    import json

    scanned = {k: (n, D(total)) for k, (n, total) in json.loads(out.stdout).items()}
    assert scanned == {"acct-a": (2, D("3.30")), "acct-b": (2, D("4.001"))}
    assert {a: (n, total) for a, n, total in by_account(con)} == scanned


# The other fact tables: each table's count and a sum of one figure, by a pyiceberg scan.
OTHER_TABLES = {
    "job_run_facts": "gpu_hours",
    "storage_objects": "size_bytes",
    "gpu_samples": "utilisation_pct",
}
SECOND_ENGINE_OTHERS = """
import json, os
from pyiceberg.catalog.sql import SqlCatalog
cat = SqlCatalog("athanor", uri=os.environ["ATHANOR_LAKE_CATALOG_URI"], **{"s3.endpoint": os.environ["ATHANOR_S3_ENDPOINT_URL"]})
out = {}
for name, figure in json.loads(os.environ["TABLES"]).items():
    values = cat.load_table(("athanor", name)).scan(selected_fields=(figure,)).to_arrow()[figure].to_pylist()
    out[name] = [len(values), round(sum(v for v in values if v is not None), 6)]
print(json.dumps(out))
"""


def test_job_logs_inventories_and_telemetry_replace_their_rows_in_one_commit_each(
    con, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file mode's restatements of the other fact tables on the real servers: each load one
    catalog commit, the old rows still readable as of the previous snapshot, and a second
    engine in a fresh process gets the same totals as DuckDB."""
    import json

    from tests.unit.test_lake import _inventories, _jobs, _last_snapshot_of, _table, _telemetry

    cfg = lake.config()
    commits: list[tuple[str, int]] = []
    original = lake.commit_load

    def counted(c, name: str, load_id: str) -> int:
        before = len(lake.table(cfg, name).metadata.metadata_log)
        snapshot = original(c, name, load_id)
        commits.append((name, len(lake.table(cfg, name).metadata.metadata_log) - before))
        return snapshot

    monkeypatch.setattr(lake, "commit_load", counted)
    jobs = _jobs(con, tmp_path)
    inventories = _inventories(con, tmp_path)
    lines, *samples = _telemetry(con, tmp_path)
    assert commits == [
        ("job_run_facts", 1),
        ("job_run_facts", 1),
        ("storage_objects", 1),
        ("storage_objects", 1),
        ("storage_objects", 1),
        ("gpu_samples", 1),
        ("gpu_samples", 1),
        ("gpu_samples", 1),
    ]
    assert len(jobs[1]) == 7 and len(inventories[1]) == 4 and len(samples[2]) == 12
    assert "replacing 8 samples loaded before" in lines[1]
    # Time travel: each table as of the snapshot its first restated load replaced.
    first = {
        "job_run_facts": (jobs[0], jobs[0][0][-1], "source, job_id"),
        "storage_objects": (inventories[0], inventories[0][-1][-1], "bucket, key, version_id"),
        "gpu_samples": (samples[0], samples[0][0][-1], "gpu_id, sampled_at"),
    }
    pinned = {
        name: _last_snapshot_of(lake.table(cfg, name), load).snapshot_id
        for name, (_, load, _) in first.items()
    }
    old = lake.open_as_of(Settings.from_env(), pinned)
    for name, (rows, _, order) in first.items():
        assert _table(old, name, order) == rows, name
    old.close()

    env = {**os.environ, "TABLES": json.dumps(OTHER_TABLES)}
    out = subprocess.run(
        [sys.executable, "-c", SECOND_ENGINE_OTHERS], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr[-3000:]
    scanned = json.loads(out.stdout)
    for name, figure in OTHER_TABLES.items():
        query = f"select count(*), coalesce(sum({figure}), 0)::double from {name}"
        n, total = con.execute(query).fetchall()[0]
        assert scanned[name] == [n, round(total, 6)], name
    # Bucket b's second inventory: a delete marker (no size) and an empty object; bucket c's two versions.
    assert scanned["storage_objects"] == [4, 1024 + 512]


# A loader in a process of its own: its own DuckDB file (the ledger), the shared lake. The
# commit is held at a gate: pyiceberg's commit waits for the file `gate` (and says so).
LOADER = """
import sys, time, logging
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
from pyiceberg.table import CreateTableTransaction, Transaction
from athanor.ingest.billing import ingest_billing
from athanor.warehouse import connect
gate = Path(sys.argv[3])
original = Transaction.commit_transaction
def held(self):
    if not isinstance(self, CreateTableTransaction):
        print("at-commit", flush=True)
        while not gate.exists():
            time.sleep(0.05)
    return original(self)
Transaction.commit_transaction = held
con = connect(sys.argv[1], memory_limit="512MB")
result = ingest_billing(con, [Path(sys.argv[2])])
print("loaded", result.load_id, flush=True)
"""


def _loader(db: Path, file: Path, gate: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", LOADER, str(db), str(file), str(gate)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ),
        cwd=PROJECT_ROOT,
    )


def _wait_for(proc: subprocess.Popen, word: str, timeout_s: float = 120) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"loader exited before {word!r}:\n{''.join(seen)[-3000:]}")
        seen.append(line)
        if line.startswith(word):
            return seen
    raise AssertionError(f"no {word!r} in {timeout_s} s:\n{''.join(seen)[-3000:]}")


def test_a_load_killed_before_its_commit_leaves_the_previous_snapshot(con, tmp_path: Path) -> None:
    ingest_billing(con, [write(tmp_path / "v1/a.csv", focus_rows("acct-a", "2026-10", ["1.00", "2.00"]))])
    before = iceberg_table().current_snapshot().snapshot_id
    con.close()  # the loader takes the DuckDB file

    restated = write(tmp_path / "v2/a.csv", focus_rows("acct-a", "2026-10", ["7.00"]))
    proc = _loader(tmp_path / "w.duckdb", restated, tmp_path / "never")
    _wait_for(proc, "at-commit")  # its data files are written, the commit is next
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)

    assert iceberg_table().current_snapshot().snapshot_id == before
    again = connect(tmp_path / "w.duckdb", memory_limit="512MB")
    assert by_account(again) == [("acct-a", 2, D("3.00"))]
    assert again.execute("select count(*) from loads").fetchall() == [(1,)]
    again.close()


# Who retries the commit that lost the race: pyiceberg (the table's commit.retry.num-retries,
# default 4), or, with that 0, commit_load's own loop.
RETRIED_BY = {
    "pyiceberg": "Commit failed due to a concurrent update, retrying",
    "commit_load": "reading it again, retry 1",
}


@pytest.mark.parametrize("retrier", list(RETRIED_BY))
def test_loads_of_different_accounts_commit_concurrently(lake_settings, tmp_path: Path, retrier: str) -> None:
    gate = tmp_path / "gate"
    files = {
        account: write(tmp_path / account / "oct.csv", focus_rows(account, "2026-10", costs))
        for account, costs in (("acct-a", ["1.00", "2.00"]), ("acct-b", ["10.00"]))
    }
    # Created first, so that both loaders race on their data commits, not on the table's creation.
    connect(tmp_path / "setup.duckdb").close()
    if retrier == "commit_load":
        with iceberg_table().transaction() as setting:
            setting.set_properties({"commit.retry.num-retries": "0"})
    procs = {account: _loader(tmp_path / f"{account}.duckdb", file, gate) for account, file in files.items()}
    for proc in procs.values():
        _wait_for(proc, "at-commit")  # both read the same snapshot and wrote their files
    gate.touch()
    outputs = {}
    for account, proc in procs.items():
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        outputs[account] = out
    # The second to commit found the table changed and committed again on the new snapshot.
    retried = [account for account, out in outputs.items() if RETRIED_BY[retrier] in out]
    assert len(retried) == 1, outputs

    check = connect(tmp_path / "check.duckdb", memory_limit="512MB")
    assert by_account(check) == [("acct-a", 2, D("3.00")), ("acct-b", 1, D("10.00"))]
    check.close()


GOLDEN = Path(__file__).parents[1] / "golden" / "demo-2026-11-30.json"
AS_OF = "2026-11-30"


def test_the_demo_night_in_the_lake_mode_gives_the_file_modes_golden(lake_settings, tmp_path: Path) -> None:
    """`athanor demo` + `athanor run` with the four fact tables in the lake: every published file
    and every table equal the file mode's golden (the fact tables read back from the lake)."""
    import json

    from tests.support.golden import compare, fingerprint, report

    athanor = str(PROJECT_ROOT / ".venv" / "bin" / "athanor")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATHANOR_") or k in lake_settings}
    env["ATHANOR_HOME"] = str(tmp_path)
    subprocess.run([athanor, "demo", "--out", "landing", "--as-of", AS_OF], cwd=tmp_path, env=env, check=True)
    run = subprocess.run(
        [athanor, "run", "--as-of", AS_OF, "--source", "landing"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-4000:]

    warehouse = tmp_path / "warehouse" / "athanor.duckdb"
    con = connect(warehouse)
    for name in lake.LAKE_TABLES:  # every row is in the lake
        assert con.execute(f"select count(*) from {lake.staging(con, name)}").fetchall() == [(0,)], name
    (summary,) = con.execute("select summary from pipeline_runs where stage = 'validate'").fetchone()
    recorded = json.loads(summary)["lake_snapshots"]
    assert recorded == lake.current_snapshots(lake.config())
    assert set(recorded) == set(lake.LAKE_TABLES)  # the demo delivers all four kinds
    figures = (
        "select count(*) as n, sum(billed_cost)::varchar as t, (select count(*) from job_run_facts) as j,"
        " (select count(*) from storage_objects) as s, (select count(*) from gpu_samples) as g from billing_facts"
    )
    n, total, jobs, objects, samples = con.execute(figures).fetchall()[0]
    assert min(n, jobs, objects, samples) > 0
    # The analysts' query reads the lake as of the snapshot the published run read.
    query = subprocess.run(
        [
            athanor,
            "query",
            figures,
            "--format",
            "csv",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert query.returncode == 0, query.stderr[-3000:]
    assert query.stdout.split() == ["n,t,j,s,g", f"{n},{total},{jobs},{objects},{samples}"]
    # The file mode's golden reads the fact tables from the file: put the lake's rows there.
    for name in lake.LAKE_TABLES:
        con.execute(f"insert into {lake.staging(con, name)} select * from {name}")
    con.close()

    actual = fingerprint(tmp_path, tmp_path / "reports" / AS_OF, warehouse)
    differing = [
        line
        for line in compare(json.loads(GOLDEN.read_text()), actual)
        # The one table that differs by design: the lake mode records the snapshots it read; and,
        # as before, only what the golden holds.
        if not line.startswith("table lake_snapshots:") and not line.endswith(": not in the golden")
    ]
    assert not differing, "the lake mode differs from the file mode's golden: " + report(differing)
