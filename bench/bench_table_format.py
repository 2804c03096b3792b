"""Apache Iceberg (pyiceberg, SQL catalog) against DuckLake, measured for the lake warehouse mode.

Both formats keep their catalog in a real PostgreSQL 15 (started here on 127.0.0.1, as `nobody`
when run as root) and their data files in a real Ceph RadosGW bucket (scripts/ceph-rgw.sh). The
figures and the choice are in docs/table-format.md.

Neither format runs in the project's venv: DuckLake needs the `ducklake`, `httpfs` and
`postgres_scanner` extensions, published on PyPI as wheels only for DuckDB 1.5.5, while the project
pins DuckDB 2.0.1. So this script builds two scratch venvs under --scratch (python3.11):

    dl/   duckdb==1.5.5 duckdb-extension-{ducklake,httpfs,postgres_scanner}==1.5.5 psycopg2-binary
    ice/  pyiceberg[sql-postgres,pyarrow]==0.12.* duckdb psycopg2-binary   (pyarrow's S3, no s3fs)

and runs itself inside them (`worker` sub-command) for every step. The orchestrating part needs
only the standard library:

    python3.11 bench/bench_table_format.py [--scratch /tmp/athanor-table-format] [--rows-per-month 1000000]
        [--months 12] [--big-rows 8000000] [--formats ducklake,iceberg] [--rgw-port 7581]

Steps, per format: load M months of N rows (one commit per month, partitioned by provider,
billing account and billing period); replace the last month with N and then --big-rows rows in
one commit; SIGKILL a writer in the middle of a --big-rows replacement and check that the current
snapshot and the totals did not move; two processes replacing two different months at the same
time (commit attempts counted); time travel to the snapshot before the replacements; monthly
totals over all months and one month's total read through DuckDB; the same totals from a second,
fresh process (pyiceberg + pyarrow compute for Iceberg, a second DuckDB process for DuckLake).
The totals are checked against the generator's own sums at every step.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RGW_SCRIPT = REPO / "scripts" / "ceph-rgw.sh"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
BUCKET = "athanor-lake"
PERIOD0 = (2026, 1)

VENVS = {
    "ducklake": [
        "duckdb==1.5.5",
        "duckdb-extension-ducklake==1.5.5",
        "duckdb-extension-httpfs==1.5.5",
        "duckdb-extension-postgres_scanner==1.5.5",
        "psycopg2-binary",
    ],
    "iceberg": ["pyiceberg[sql-postgres,pyarrow]==0.12.*", "duckdb", "psycopg2-binary"],
}
VENV_DIR = {"ducklake": "dl", "iceberg": "ice"}
# pyarrow 26's AWS SDK sends a streamed checksum on every upload by default, which Debian's Ceph
# RadosGW answers with HTTP 411 MissingContentLength; checksums only where S3 requires them.
S3_ENV = {
    "AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED",
    "AWS_RESPONSE_CHECKSUM_VALIDATION": "WHEN_REQUIRED",
}


def period(i: int) -> str:
    y, m = PERIOD0
    m += i
    return f"{y + (m - 1) // 12}-{(m - 1) % 12 + 1:02d}"


def generator_sql(n: int, billing_period: str, seed: int) -> str:
    # Deterministic rows, so every reader's total can be checked against the generator's own sum;
    # 2 providers x 3 accounts = 6 partitions per month.
    return f"""
        SELECT CASE WHEN i % 2 = 0 THEN 'aws' ELSE 'gcp' END AS provider,
               'acct-' || (i % 3)::VARCHAR AS billing_account,
               '{billing_period}' AS billing_period,
               i::BIGINT AS line_item_id,
               'r-' || (i % 5000)::VARCHAR AS resource_id,
               CAST(((i * 7919 + {seed}) % 100000) / 100 AS DECIMAL(18, 2)) AS cost
        FROM range({n}) t(i)"""


def expected_total(n: int, seed: int) -> str:
    """Sum of one generated month in cents, computed without any table format (exact integers)."""
    full, rest = divmod(n, 100000)
    # (i*7919 + seed) % 100000 runs through every residue once per 100000 consecutive i
    # (7919 is prime to 100000), so a full block sums to 0+1+...+99999.
    cents = full * (99999 * 100000 // 2)
    base = full * 100000
    cents += sum((i * 7919 + seed) % 100000 for i in range(base, base + rest))
    return f"{cents // 100}.{cents % 100:02d}"


# ---------------------------------------------------------------------------------------- workers
# These run inside the scratch venvs; they import only what that venv has.


_WRITING_AT: list[float] = []


def _emit(**kv: object) -> None:
    if kv.get("phase") == "writing":
        _WRITING_AT.append(time.perf_counter())
    print(json.dumps(kv, default=str), flush=True)


class DuckLake:
    def __init__(self, cfg: dict) -> None:
        import importlib.util

        import duckdb

        # No network here: the extensions are loaded from the wheels' files by path, and
        # auto-install/auto-load stay off so nothing reaches for extensions.duckdb.org.
        self.con = duckdb.connect(
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False, "threads": 2}
        )
        for name in ("httpfs", "postgres_scanner", "ducklake"):
            spec = importlib.util.find_spec(f"duckdb_extension_{name}")
            path = next(Path(spec.submodule_search_locations[0]).rglob("*.duckdb_extension"))
            self.con.execute(f"LOAD '{path}'")
        s3 = cfg["s3"]
        self.con.execute(
            f"""CREATE SECRET rgw (TYPE s3, KEY_ID '{s3["key"]}', SECRET '{s3["secret"]}',
                ENDPOINT '{s3["endpoint"].split("://")[1]}', URL_STYLE 'path', USE_SSL false,
                REGION 'us-east-1')"""
        )
        pg = cfg["pg"]
        self.con.execute(
            f"""ATTACH 'ducklake:postgres:host=127.0.0.1 port={pg["port"]} dbname=ducklake
                user={pg["user"]} password={pg["password"]}' AS lake
                (DATA_PATH 's3://{BUCKET}/ducklake/')"""
        )

    def create(self) -> None:
        self.con.execute("""CREATE TABLE IF NOT EXISTS lake.billing (provider VARCHAR, billing_account VARCHAR,
            billing_period VARCHAR, line_item_id BIGINT, resource_id VARCHAR, cost DECIMAL(18, 2))""")
        self.con.execute(
            "ALTER TABLE lake.billing SET PARTITIONED BY (provider, billing_account, billing_period)"
        )

    def replace(self, n: int, billing_period: str, seed: int) -> dict:
        # One transaction = one DuckLake snapshot: the old month's files disappear and the new
        # ones appear together.
        import duckdb

        attempts = 0
        while True:
            attempts += 1
            self.con.execute("BEGIN")
            self.con.execute("DELETE FROM lake.billing WHERE billing_period = ?", [billing_period])
            _emit(phase="writing")
            self.con.execute(f"INSERT INTO lake.billing {generator_sql(n, billing_period, seed)}")
            try:
                self.con.execute("COMMIT")
                return {"attempts": attempts}
            except duckdb.TransactionException as exc:
                # DuckLake refuses an insert into a table another transaction deleted from since
                # this one began, even in another partition: the whole load is redone.
                _emit(conflict=str(exc)[:200])
                try:
                    self.con.execute("ROLLBACK")
                except duckdb.Error:
                    pass  # a failed COMMIT has already rolled back
                if attempts >= 10:
                    raise

    def snapshot(self) -> int:
        return self.con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0]

    def snapshot_count(self) -> int:
        return self.con.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()[0]

    def totals(self, snapshot_id: int | None = None, only: str | None = None) -> dict[str, str]:
        at = f" AT (VERSION => {int(snapshot_id)})" if snapshot_id is not None else ""
        where = f" WHERE billing_period = '{only}'" if only else ""
        rows = self.con.execute(
            f"SELECT billing_period, sum(cost)::VARCHAR, count(*) FROM lake.billing{at}{where} GROUP BY 1 ORDER BY 1"
        ).fetchall()
        return {p: f"{t}|{c}" for p, t, c in rows}

    def files(self, only: str | None = None) -> int:
        return self.con.execute("SELECT count(*) FROM ducklake_list_files('lake', 'billing')").fetchone()[0]

    def objects(self) -> tuple[int, int]:
        """Data objects in the bucket, referenced or not (a killed load's files stay behind)."""
        n, size = self.con.execute(
            f"SELECT count(*), sum(size) FROM read_blob('s3://{BUCKET}/ducklake/**/*.parquet')"
        ).fetchone()
        return n, size or 0


class _RetryCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "retrying" in record.getMessage():
            self.count += 1
            _emit(conflict=record.getMessage())


class Iceberg:
    def __init__(self, cfg: dict) -> None:
        from pyiceberg.catalog.sql import SqlCatalog

        s3, pg = cfg["s3"], cfg["pg"]
        self.catalog = SqlCatalog(
            "athanor",
            uri=f"postgresql+psycopg2://{pg['user']}:{pg['password']}@127.0.0.1:{pg['port']}/iceberg",
            warehouse=f"s3://{BUCKET}/iceberg",
            **{
                "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",  # pyarrow's own S3 client, no s3fs
                "s3.endpoint": s3["endpoint"],
                "s3.access-key-id": s3["key"],
                "s3.secret-access-key": s3["secret"],
                "s3.region": "us-east-1",
                "s3.force-virtual-addressing": "false",
            },
        )

    def table(self):  # noqa: ANN201
        return self.catalog.load_table("billing.billing")

    def create(self) -> None:
        import duckdb

        self.catalog.create_namespace_if_not_exists("billing")
        if self.catalog.table_exists("billing.billing"):
            return
        schema = duckdb.sql(generator_sql(0, "x", 0)).to_arrow_table().schema
        tbl = self.catalog.create_table("billing.billing", schema=schema)
        with tbl.update_spec() as spec:
            for col in ("provider", "billing_account", "billing_period"):
                spec.add_identity(col)

    def replace(self, n: int, billing_period: str, seed: int) -> dict:
        import duckdb
        from pyiceberg.exceptions import CommitFailedException

        data = duckdb.sql(generator_sql(n, billing_period, seed)).to_arrow_table()
        data = data.cast(self.table().schema().as_arrow())
        _emit(phase="writing")
        attempts = 0
        retries = _RetryCounter()
        logging.getLogger("pyiceberg").addHandler(retries)
        while True:
            attempts += 1
            tbl = self.table()  # a fresh load: a retry must start from the catalog's current snapshot
            try:
                # Replaces exactly the partitions present in `data` (this month's six), in one commit.
                # pyiceberg retries a commit that lost the race itself (commit.retry.num-retries,
                # default 4): it re-validates against the winner's snapshot and rewrites only the
                # manifests, not the data files; the handler counts those retries.
                tbl.dynamic_partition_overwrite(data)
                return {"attempts": attempts + retries.count}
            except CommitFailedException as exc:
                _emit(conflict=str(exc)[:200])
                if attempts >= 10:
                    raise

    def snapshot(self) -> int:
        return self.table().current_snapshot().snapshot_id

    def snapshot_count(self) -> int:
        return len(self.table().snapshots())

    def totals(self, snapshot_id: int | None = None, only: str | None = None, engine: str = "duckdb") -> dict:
        from pyiceberg.expressions import AlwaysTrue, EqualTo

        scan = self.table().scan(
            row_filter=EqualTo("billing_period", only) if only else AlwaysTrue(),
            selected_fields=("billing_period", "cost"),
            snapshot_id=snapshot_id,
        )
        if engine == "pyarrow":
            data = scan.to_arrow()
            agg = data.group_by("billing_period").aggregate([("cost", "sum"), ("cost", "count")])
            return {
                p: f"{t}|{c}"
                for p, t, c in sorted(
                    zip(
                        agg["billing_period"].to_pylist(),
                        agg["cost_sum"].to_pylist(),
                        agg["cost_count"].to_pylist(),
                        strict=True,
                    )
                )
            }
        import duckdb

        con = duckdb.connect(config={"threads": 2})
        con.register("scan", scan.to_arrow_batch_reader())  # streamed into DuckDB, not materialised
        rows = con.execute(
            "SELECT billing_period, sum(cost)::VARCHAR, count(*) FROM scan GROUP BY 1 ORDER BY 1"
        ).fetchall()
        return {p: f"{t}|{c}" for p, t, c in rows}

    def files(self, only: str | None = None) -> int:
        from pyiceberg.expressions import AlwaysTrue, EqualTo

        scan = self.table().scan(row_filter=EqualTo("billing_period", only) if only else AlwaysTrue())
        return len(list(scan.plan_files()))

    def objects(self) -> tuple[int, int]:
        """Data objects in the bucket, referenced or not (a killed load's files stay behind)."""
        import pyarrow.fs as pafs

        fs, path = self.table().io.fs_by_scheme("s3", BUCKET), f"{BUCKET}/iceberg"
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
        data = [i for i in infos if i.path.endswith(".parquet")]
        return len(data), sum(i.size for i in data)


def worker(fmt: str, step: str, cfg: dict) -> None:
    t0 = time.perf_counter()
    lake = DuckLake(cfg) if fmt == "ducklake" else Iceberg(cfg)
    connect_s = time.perf_counter() - t0
    t = time.perf_counter()
    if step == "create":
        lake.create()
        _emit(step=step, s=time.perf_counter() - t)
    elif step == "replace":
        if cfg.get("start_at"):
            time.sleep(max(0.0, cfg["start_at"] - time.time()))
            t = time.perf_counter()
        info = lake.replace(cfg["n"], cfg["period"], cfg["seed"])
        end = time.perf_counter()
        _emit(
            step=step,
            s=end - t,
            write_s=end - _WRITING_AT[-1],
            connect_s=connect_s,
            snapshot=lake.snapshot(),
            **info,
        )
    elif step == "state":
        snap = lake.snapshot()
        objects, size = lake.objects()
        _emit(
            step=step,
            snapshot=snap,
            totals=lake.totals(),
            files=lake.files(),
            objects=objects,
            bytes=size,
            snapshots=lake.snapshot_count(),
        )
    elif step == "read":
        t = time.perf_counter()
        all_months = lake.totals()
        all_s = time.perf_counter() - t
        t = time.perf_counter()
        one = lake.totals(only=cfg["period"])
        one_s = time.perf_counter() - t
        _emit(
            step=step, all_s=all_s, one_s=one_s, totals=all_months, one=one, connect_s=connect_s,
            duckdb=__import__("duckdb").__version__,
            files_all=lake.files(), files_one=lake.files(cfg["period"]) if fmt == "iceberg" else None,
        )  # fmt: skip
    elif step == "timetravel":
        _emit(step=step, s=None, totals=lake.totals(snapshot_id=cfg["snapshot"]))
    elif step == "second":
        # The second engine: pyarrow's own compute over a pyiceberg scan (no DuckDB) for Iceberg;
        # a second DuckDB process for DuckLake.
        totals = lake.totals(engine="pyarrow") if fmt == "iceberg" else lake.totals()
        _emit(step=step, s=time.perf_counter() - t, totals=totals, connect_s=connect_s)
    else:
        raise SystemExit(f"unknown step {step}")


# ----------------------------------------------------------------------------------- orchestrator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_venv(scratch: Path, fmt: str) -> Path:
    venv = scratch / VENV_DIR[fmt]
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run(["python3.11", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *VENVS[fmt]], check=True)
    return py


class Postgres:
    """initdb + postgres as `nobody` (PostgreSQL refuses root), stopped by PID with SIGINT."""

    def __init__(self, scratch: Path) -> None:
        self.dir = scratch / "pg"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.password = secrets.token_urlsafe(16)
        self.port = free_port()
        drop: dict = {}
        if os.geteuid() == 0:
            user = pwd.getpwnam("nobody")
            drop = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        (self.dir / "pw").write_text(self.password)
        if drop:
            os.chown(self.dir / "pw", drop["user"], drop["group"])
        subprocess.run(
            [str(PG_BIN / "initdb"), "-D", str(self.dir / "data"), "-U", "bench", f"--pwfile={self.dir / 'pw'}",
             "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C"],
            check=True, capture_output=True, **drop,
        )  # fmt: skip
        self.proc = subprocess.Popen(
            [str(PG_BIN / "postgres"), "-D", str(self.dir / "data"), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.dir}"],
            stdout=open(self.dir / "log", "w"), stderr=subprocess.STDOUT, cwd=self.dir, **drop,
        )  # fmt: skip
        for _ in range(100):
            if self.psql("select 1", check=False).returncode == 0:
                break
            time.sleep(0.3)
        for db in ("ducklake", "iceberg"):
            self.psql(f"create database {db}")

    def psql(self, sql: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(PG_BIN.parent / "bin" / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "bench",
             "-d", "postgres", "-Atc", sql],
            env={**os.environ, "PGPASSWORD": self.password}, capture_output=True, text=True, check=check,
        )  # fmt: skip

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Bench:
    def __init__(self, fmt: str, py: Path, cfg: dict) -> None:
        self.fmt, self.py, self.cfg = fmt, py, cfg

    def popen(self, step: str, **extra: object) -> subprocess.Popen:
        env = {**os.environ, **S3_ENV, "BENCH_CFG": json.dumps({**self.cfg, **extra})}
        return subprocess.Popen(
            [str(self.py), __file__, "worker", self.fmt, step],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    @staticmethod
    def result(proc: subprocess.Popen) -> dict:
        out, err = proc.communicate()
        lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
        final = next((x for x in reversed(lines) if "step" in x), None)
        if proc.returncode != 0 or final is None:
            raise RuntimeError(f"worker failed ({proc.returncode}):\n{out[-2000:]}\n{err[-3000:]}")
        final["conflicts"] = [x["conflict"] for x in lines if "conflict" in x]
        final["wall_s"] = None
        return final

    def run(self, step: str, **extra: object) -> dict:
        t = time.perf_counter()
        res = self.result(self.popen(step, **extra))
        res["wall_s"] = time.perf_counter() - t
        return res


def bench_format(fmt: str, py: Path, cfg: dict, months: int, n: int, big: int) -> dict:
    b = Bench(fmt, py, cfg)
    out: dict = {"format": fmt}
    expected = {period(i): f"{expected_total(n, i)}|{n}" for i in range(months)}
    b.run("create")
    t = time.perf_counter()
    for i in range(months):
        b.run("replace", n=n, period=period(i), seed=i)
    out["initial_load_s"] = time.perf_counter() - t
    state = b.run("state")
    assert state["totals"] == expected, (state["totals"], expected)
    out["files_after_load"] = state["files"]
    before_replace = state
    snap_before = state["snapshot"]
    last = period(months - 1)

    r1 = b.run("replace", n=n, period=last, seed=1001)
    expected[last] = f"{expected_total(n, 1001)}|{n}"
    out["replace_1x_s"] = r1["s"]
    r8 = b.run("replace", n=big, period=last, seed=1008)
    expected[last] = f"{expected_total(big, 1008)}|{big}"
    out["replace_big_s"] = r8["s"]
    state = b.run("state")
    assert state["totals"] == expected, "replacement totals"
    out["replace_snapshots"] = [snap_before, r1["snapshot"], r8["snapshot"]]
    # Snapshots a replacement adds: a reader may time-travel to any of them, so they should not
    # expose a state where the month is missing.
    out["snapshots_per_replace"] = (state["snapshots"] - before_replace["snapshots"]) / 2

    # SIGKILL half-way through the writing phase of another big replacement.
    before = state
    proc = b.popen("replace", n=big, period=last, seed=2008)
    assert proc.stdout is not None
    while "writing" not in (proc.stdout.readline() or "writing"):
        pass
    # Half-way through writing the data files, judged by the last run of the same replacement.
    time.sleep(r8["write_s"] * 0.5)
    killed_alive = proc.poll() is None
    if killed_alive:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    after = b.run("state")
    out["kill"] = {
        "killed_while_running": killed_alive,
        "snapshot_unchanged": after["snapshot"] == before["snapshot"],
        "totals_unchanged": after["totals"] == before["totals"],
        "orphan_objects": after["objects"] - before["objects"],
        "orphan_bytes": after["bytes"] - before["bytes"],
    }
    out["live_files"], out["bucket_objects"], out["bucket_mb"] = (
        after["files"],
        after["objects"],
        after["bytes"] / 1e6,
    )

    # Two writers, two different months, started at the same instant.
    conc = []
    for rnd in range(2):
        start_at = time.time() + 8  # both processes connected and ready before the start
        pa = b.popen("replace", n=n, period=period(0), seed=3000 + rnd, start_at=start_at)
        pb = b.popen("replace", n=n, period=period(1), seed=4000 + rnd, start_at=start_at)
        ra, rb = b.result(pa), b.result(pb)
        expected[period(0)] = f"{expected_total(n, 3000 + rnd)}|{n}"
        expected[period(1)] = f"{expected_total(n, 4000 + rnd)}|{n}"
        conc.append({"a_s": ra["s"], "b_s": rb["s"], "attempts": [ra["attempts"], rb["attempts"]],
                     "conflicts": ra["conflicts"] + rb["conflicts"]})  # fmt: skip
    state = b.run("state")
    out["concurrent"] = {"rounds": conc, "both_landed": state["totals"] == expected}

    tt = b.run("timetravel", snapshot=snap_before)
    expected_before = {period(i): f"{expected_total(n, i)}|{n}" for i in range(months)}
    out["time_travel_ok"] = tt["totals"] == expected_before

    read = b.run("read", period=period(months // 2))
    out["read_all_s"], out["read_one_s"] = read["all_s"], read["one_s"]
    out["read_ok"] = read["totals"] == expected and read["one"] == {
        period(months // 2): expected[period(months // 2)]
    }
    out["files_all"], out["files_one"] = read["files_all"], read["files_one"]
    second = b.run("second")
    out["second_engine_ok"] = second["totals"] == expected
    out["second_engine_s"] = second["s"]
    out["connect_s"], out["duckdb"] = read["connect_s"], read["duckdb"]
    return out


def rgw(port: int, base: Path, action: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RGW_PORT": str(port), "CEPH_MON_PORT": str(port - 690)}
    return subprocess.run(
        ["bash", str(RGW_SCRIPT), action, str(base)], env=env, capture_output=True, text=True
    )


def make_bucket(py: Path, s3: dict) -> None:
    code = (
        "import pyarrow.fs as f, sys; fs = f.S3FileSystem(access_key=sys.argv[1], secret_key=sys.argv[2], "
        "endpoint_override=sys.argv[3], region='us-east-1', allow_bucket_creation=True); "
        f"fs.create_dir('{BUCKET}')"
    )
    subprocess.run(
        [str(py), "-c", code, s3["key"], s3["secret"], s3["endpoint"]],
        check=True,
        env={**os.environ, **S3_ENV},
    )


def project_duckdb_loads_ducklake(ducklake_py: Path) -> str:
    """What the project's own DuckDB says when asked to load the 1.5.5 ducklake extension."""
    project_py = REPO / ".venv" / "bin" / "python"
    if not project_py.exists():
        return "project venv not found"
    path = subprocess.run(
        [str(ducklake_py), "-c", "import duckdb_extension_ducklake as m, pathlib; "
         "print(next(pathlib.Path(m.__path__[0]).rglob('*.duckdb_extension')))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    code = (
        "import duckdb, sys; print('duckdb', duckdb.__version__); "
        "c = duckdb.connect(config={'autoinstall_known_extensions': False}); c.execute(f\"LOAD '{sys.argv[1]}'\"); print('loaded')"
    )
    res = subprocess.run([str(project_py), "-c", code, path], capture_output=True, text=True)
    return (res.stdout + res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.stdout).strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/athanor-table-format"))
    ap.add_argument("--months", type=int, default=12)
    ap.add_argument("--rows-per-month", type=int, default=1_000_000)
    ap.add_argument("--big-rows", type=int, default=8_000_000)
    ap.add_argument("--formats", default="ducklake,iceberg")
    ap.add_argument("--rgw-port", type=int, default=7581)
    args = ap.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    pys = {fmt: ensure_venv(args.scratch, fmt) for fmt in ("ducklake", "iceberg")}
    print(
        "project DuckDB + ducklake 1.5.5 extension:",
        project_duckdb_loads_ducklake(pys["ducklake"]),
        flush=True,
    )
    rgw_base = args.scratch / "rgw"
    reused = rgw(args.rgw_port, rgw_base, "status").returncode == 0
    up = rgw(args.rgw_port, rgw_base, "up")
    if up.returncode != 0:
        raise SystemExit(f"ceph-rgw.sh up failed:\n{up.stdout}\n{up.stderr[-3000:]}")
    info = dict(x.split("=", 1) for x in up.stdout.splitlines() if x.startswith("RGW_"))
    s3 = {"endpoint": info["RGW_ENDPOINT"], "key": info["RGW_ACCESS_KEY"], "secret": info["RGW_SECRET_KEY"]}
    pg = None
    results = []
    try:
        pg = Postgres(args.scratch)
        cfg = {"s3": s3, "pg": {"port": pg.port, "user": "bench", "password": pg.password}}
        make_bucket(pys["iceberg"], s3)
        for fmt in args.formats.split(","):
            res = bench_format(fmt, pys[fmt], cfg, args.months, args.rows_per_month, args.big_rows)
            print(json.dumps(res), flush=True)
            results.append(res)
    finally:
        if pg:
            pg.stop()
        if not reused:
            rgw(args.rgw_port, rgw_base, "down")
    print(f"\n{args.months} months x {args.rows_per_month:,} rows; big replacement {args.big_rows:,} rows")
    cols = ("format", "initial_load_s", "replace_1x_s", "replace_big_s", "read_all_s", "read_one_s",
            "second_engine_s")  # fmt: skip
    print(" | ".join(f"{c:>15}" for c in cols))
    for r in results:
        print(" | ".join(f"{r[c]:>15.2f}" if isinstance(r[c], float) else f"{r[c]:>15}" for c in cols))
    for r in results:
        print(r["format"], "kill:", r["kill"], "concurrent:", r["concurrent"]["both_landed"],
              [x["attempts"] for x in r["concurrent"]["rounds"]], "time travel:", r["time_travel_ok"],
              "snapshots per replacement:", r["snapshots_per_replace"], "orphans after kill:",
              r["kill"]["orphan_objects"], "read:", r["read_ok"], "second engine:", r["second_engine_ok"], "reader duckdb:", r["duckdb"])  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2], sys.argv[3], json.loads(os.environ["BENCH_CFG"]))
    else:
        main()
