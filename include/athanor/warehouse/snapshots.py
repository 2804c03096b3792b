"""The analysts' read-only snapshot of the warehouse: published atomically, opened safely, and
costing what changed since the last one, not the size of the history.

What a snapshot `S` (default `warehouse/athanor-snapshot.duckdb`) is:

- `S` itself, a small DuckDB file: a copy of every small table, the warehouse's views and
  macros, and for each large fact table (`PARTITIONED`) a view of the same name, columns and
  types over Parquet files. Its schema `athanor_snapshot` is the manifest: which file holds
  which partition, with its row count.
- `S.parts/<table>/<generation>-<n>.parquet` (`S` without its suffix, plus `.parts`): one
  immutable file per partition of a fact table, e.g. the rows one load wrote for one billing
  account and month. Loads only insert rows under their own `load_id` and delete rows of
  earlier loads; they never update one. So a partition either keeps its rows or loses some,
  and its row count says which. A column that is empty in every row of a partition is left
  out of its file (a billing export leaves a dozen of FOCUS's columns empty, and DuckDB's
  Parquet writer spends as long on an empty text column as on a full one); the view reads the
  files by column name and gives such a column back as NULL of its type.

A publish counts the rows of the partitions that the loads since the last snapshot could have
touched (a billing load restates only its own accounts and months), writes only partitions it
has not written before (or whose file is no longer the one written: the manifest keeps each
file's size and SHA-256, and a file that differs is written again), copies the small tables into a new small file and renames that over
`S`. Readers therefore always open a whole snapshot through one path, never the writer's lock.
Files no longer referenced are removed once the new snapshot is in place, except those of the
generation before it, which a reader that opened it a moment ago may still be reading. Runs
that were killed leave a temporary file and unreferenced Parquet files; the next publish
removes both. The view's file list holds absolute paths: the snapshot is read where it was
written (or under the same path).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb

logger = logging.getLogger(__name__)

MANIFEST_SCHEMA = "athanor_snapshot"
_STAGED = "athanor_snapshot_staged"  # the new snapshot, attached to the writer's connection
_PREVIOUS = "athanor_snapshot_previous"  # the current one, attached read-only to read its manifest
_NEW_LOADS = "_athanor_snapshot_new_loads"
_TOUCHED = "_athanor_snapshot_touched"
# A snapshot replaced less than this long ago may still have readers that opened it just
# before: its predecessor's files are kept too. Nightly, the previous generation alone is kept.
RETAIN_S = 600.0


@dataclass(frozen=True)
class Partitioning:
    """How a large table is cut into immutable files.

    `keys` are (name, SQL expression) pairs, `load_id` first. `touched` selects the values of
    the other keys whose partitions the new loads (in `{new_loads}`) may have changed, from the
    warehouse's table `{table}`; None: any partition may have changed, all are counted again.
    """

    table: str
    keys: tuple[tuple[str, str], ...]
    touched: str | None
    # The stage that rewrites the table, not only loads (None: loads alone change it): its
    # partitions are counted every time, and are final once that stage is done.
    rewritten_by: str | None = None

    @property
    def by_loads(self) -> bool:
        return self.rewritten_by is None


# The tables that grow with history. Small tables (the ledger, marts, recommendations) are copied.
PARTITIONED: tuple[Partitioning, ...] = (
    # A billing load deletes what earlier loads hold for the (account, period) pairs it
    # delivers (sql/ingest/delete_restated.sql): those partitions go whole.
    Partitioning(
        "billing_facts",
        (
            ("load_id", "load_id"),
            ("billing_account_id", "billing_account_id"),
            ("billing_period_start", "billing_period_start"),
        ),
        "select distinct billing_account_id, billing_period_start from {table} "
        "where load_id in (select load_id from {new_loads})",
    ),
    # A job reported again leaves whichever earlier load reported it: every load is counted.
    Partitioning("job_run_facts", (("load_id", "load_id"),), None),
    # An inventory replaces its bucket's previous inventory.
    Partitioning(
        "storage_objects",
        (("load_id", "load_id"), ("bucket", "bucket")),
        "select distinct bucket from {table} where load_id in (select load_id from {new_loads})",
    ),
    # A telemetry load replaces, per GPU, the samples between its first and last one
    # (sql/ingest/telemetry_replace.sql): only days inside the new loads' span move.
    Partitioning(
        "gpu_samples",
        (("load_id", "load_id"), ("sample_day", "cast(sampled_at as date)")),
        "select distinct cast(unnest(generate_series(cast(cast(min(sampled_at) as date) as timestamp), "
        "cast(cast(max(sampled_at) as date) as timestamp), interval 1 day)) as date) "
        "from {table} where load_id in (select load_id from {new_loads})",
    ),
    # The allocate_gpus stage replaces a month whose inputs changed under its own run id
    # (athanor.recommend.allocation): a (run, month) partition never changes once written.
    Partitioning(
        "gpu_allocation_hourly",
        (("load_id", "run_id"), ("month", "date_trunc('month', hour)")),
        None,
        rewritten_by="allocate_gpus",
    ),
)


# What a WriteAhead writes first: the tables only loads change, final once the loads have
# committed. A table a stage rewrites (the allocation) changes after the write-ahead starts:
# counting its partitions then was wasted, the publish counted them again (2-3 CPU-s over 76M
# rows at 12 x 8M lines). It is queued once its stage is done (`rewritten_by`).
LOADED_ONLY: tuple[Partitioning, ...] = tuple(spec for spec in PARTITIONED if spec.by_loads)


def rewritten_by(stage: str) -> tuple[Partitioning, ...]:
    """The partitioned tables `stage` rewrites: final, for a WriteAhead, once it is done."""
    return tuple(spec for spec in PARTITIONED if spec.rewritten_by == stage)


@dataclass(frozen=True)
class Part:
    """One Parquet file of a snapshot: the partition it holds and its row count."""

    table: str
    key: str  # the partition's key values, JSON
    rows: int
    columns: str  # digest of the table's column names and types when written
    file: str  # absolute path
    absent: tuple[str, ...] = ()  # the table's columns left out of the file: NULL in all its rows
    # The file as written: a publish reuses it only while it still has this size and digest.
    size: int | None = None
    sha256: str | None = None
    # The file's stamp (`_stamp`) when its SHA-256 was last computed: while the stamp is the
    # same, the file was not written since, and is not read again to say so.
    stamp: str | None = None

    def verified(self) -> Part | None:
        """This part, if its file is still the one written (with the stamp it has now); else None.

        A file whose stamp is the one recorded has not been written since its digest was
        computed: any write through the file system moves its change time, which no user-space
        call sets back (rewriting the time of modification moves it too), and a stamp is kept
        only for a file already settled when it was taken (`SETTLED_NS`). Otherwise the file is
        read again: same size and SHA-256 (unknown: not the one written). Reading every kept
        file at every publish grew with the history: 0.54-0.58 s for the 731 MB kept at
        3 x 4M lines."""
        now = _stamp(self.file)
        if now is not None and now == self.stamp:
            return self
        if now is None or self.sha256 is None:
            return None
        try:
            if os.stat(self.file).st_size != self.size:
                return None
            digest, stamp = _digest(Path(self.file))
        except OSError:  # gone since
            return None
        return replace(self, stamp=stamp) if digest == self.sha256 else None


def _stamp(path: str | Path) -> str | None:
    """What every write of a file's content changes: inode, size, and times of modification and
    of change, in nanoseconds (None: no such file)."""
    try:
        return _stamp_of(os.stat(path))
    except OSError:
        return None


def _stamp_of(st: os.stat_result) -> str:
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


# File times come from the kernel's coarse clock (a tick of 1-10 ms): a write in the same tick
# as a file's last change leaves its change time as it was. So a stamp is kept only for a file
# last changed this long before the stamp was taken (git's "racily clean" rule); one written
# just now is read once more at a later publish, and stamped then.
SETTLED_NS = 2_000_000_000


def _digest(path: Path) -> tuple[str, str | None]:
    """The file's SHA-256, and its stamp if the file did not change while it was read and had
    settled (`SETTLED_NS`) before."""
    before = _stamp(path)
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    after = os.stat(path)
    settled = time.time_ns() - after.st_ctime_ns >= SETTLED_NS
    return digest, before if settled and _stamp_of(after) == before else None


@dataclass(frozen=True)
class Manifest:
    """What the current snapshot references (empty: none yet, or a full copy made before)."""

    parts: dict[tuple[str, str], Part] = field(default_factory=dict)
    retained: frozenset[str] = frozenset()  # the files of the generation(s) before it
    age_s: float = float("inf")  # since the snapshot was put in place
    loads_seen: frozenset[str] = frozenset()  # the ledger as it stood (load, status, end)

    @property
    def files(self) -> frozenset[str]:
        return frozenset(p.file for p in self.parts.values())


@dataclass
class StagedSnapshot:
    """A new snapshot written beside the current one, for the caller to rename into place."""

    path: Path  # the small DuckDB file, under a temporary name
    target: Path
    keep: frozenset[str]  # Parquet files the new snapshot and the current one reference
    written: list[Path] = field(default_factory=list)  # Parquet files this publish wrote
    kept: int = 0  # partitions reused from earlier snapshots
    rows_written: int = 0
    taken: int = 0  # of the files written, those a WriteAhead wrote
    tables_copied: int = 0
    rows_copied: int = 0

    inode: int | None = None  # of the small file, once written

    def discard(self) -> None:
        """Remove what this staging wrote, unless its file is in place as the snapshot."""
        try:
            published = self.inode is not None and os.stat(self.target).st_ino == self.inode
        except FileNotFoundError:
            published = False
        if published:
            return
        _remove_file(self.path)
        for path in self.written:
            path.unlink(missing_ok=True)

    def remove_unreferenced(self) -> list[Path]:
        """Once `path` is in place: remove the Parquet files neither it nor its predecessor uses."""
        return remove_unreferenced(self.target, self.keep)


def parts_dir(snapshot: Path) -> Path:
    """Where a snapshot's Parquet files live: beside it, named after it."""
    return snapshot.with_name(f"{snapshot.stem}.parts")


def stage(con: duckdb.DuckDBPyConnection, snapshot: Path, ahead: WriteAhead | None = None) -> StagedSnapshot:
    """Write a new snapshot of the warehouse `con` has open beside `snapshot`, under a temporary
    name: the Parquet files of partitions not written before, then the small file.

    `ahead`: the files a `WriteAhead` started earlier in the run wrote; each is used where its
    partition still has the rows it had then (else that partition is written again here).
    On any failure (a full disk above all) what this call wrote is removed before the error
    goes up. Copies and files left by runs that were killed are removed first.
    """
    started = time.perf_counter()
    early = ahead.take() if ahead is not None else {}
    # Written now, the warehouse file is not left newer than its snapshot when `con` closes
    # (`athanor query` warns when it is).
    con.execute("checkpoint")
    snapshot = Path(snapshot).absolute()
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_copies(snapshot)
    previous = read_manifest(con, snapshot)
    if previous is None:  # unreadable: nothing of it is reused, and nothing is removed on its word
        previous = Manifest()
    else:
        remove_unreferenced(snapshot, previous.files | previous.retained | {p.file for p in early.values()})
    staged = StagedSnapshot(
        path=snapshot.with_name(f".{snapshot.name}.{os.getpid()}.tmp"),
        target=snapshot,
        keep=previous.files | (previous.retained if previous.age_s < RETAIN_S else frozenset()),
    )
    try:
        parts, loads = _write_parts(con, snapshot, previous, staged, early)
        for path in staged.written:
            _fsync(path)
        for folder in {path.parent for path in staged.written}:
            _fsync(folder)
        retained = staged.keep - {p.file for p in parts}
        staged.keep = frozenset(staged.keep | {p.file for p in parts})
        database = con.execute("select current_database()").fetchone()[0]
        _write_small_file(con, database, staged, parts, retained, loads)
    except BaseException:
        staged.discard()
        raise
    logger.info(
        "snapshot: wrote %d Parquet files (%s rows; %d of them written ahead), kept %d partitions, "
        "copied %d tables (%s rows) to %s in %.1f s",
        len(staged.written),
        f"{staged.rows_written:,}",
        staged.taken,
        staged.kept,
        staged.tables_copied,
        f"{staged.rows_copied:,}",
        staged.path.name,
        time.perf_counter() - started,
    )
    return staged


def _write_parts(
    con: duckdb.DuckDBPyConnection,
    snapshot: Path,
    previous: Manifest,
    staged: StagedSnapshot,
    early: dict[tuple[str, str], Part],
    specs: tuple[Partitioning, ...] = PARTITIONED,
) -> tuple[list[Part], frozenset[str]]:
    """Every partition of the tables of `specs` with its file, written where no earlier one
    will do; and the ledger they were counted against."""
    database = con.execute("select current_database()").fetchone()[0]
    loads = _ledger(con, database)
    new_loads = sorted({entry.split("|", 1)[0] for entry in loads - previous.loads_seen})
    generation = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    parts: list[Part] = []
    for spec in specs:
        if _base_table(con, database, spec.table):
            parts += _table_parts(
                con, database, spec, previous, new_loads, snapshot, generation, staged, early
            )
    return parts, loads


class WriteAhead:
    """The Parquet files the next snapshot needs, written on a thread of their own while the
    run's other stages go on; the publish's `stage` takes them instead of writing them itself.

    For a run in one process (`athanor run`), started once the loads have committed: the
    tables only loads change (`LOADED_ONLY`) do not change after that, so the partitions
    counted here are the publish's, and where one did change, its file no longer matches its
    row count and the publish writes it again. A table a stage rewrites is queued behind
    (`also`) once that stage is done. The writes read through their own cursor of the held
    warehouse (DuckDB lets the other stages write their small tables meanwhile), one after
    the other. Use it as a context manager: leaving it stops a write still running and
    removes the files no publish took.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, snapshot: Path) -> None:
        self._con = con.cursor()
        self._snapshot = Path(snapshot).absolute()
        self._written: list[Path] = []
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-ahead")
        # Each write queued, with the tables it writes (for the warning if it fails).
        self._writes: dict[Future[dict[tuple[str, str], Part]], str] = {}
        self.also(LOADED_ONLY)

    def also(self, specs: tuple[Partitioning, ...]) -> None:
        """Write the partitions of `specs` too, after what is already queued; their tables
        must not change from now on (a table a stage rewrites: once that stage is done)."""
        if specs:
            self._writes[self._pool.submit(self._write, specs)] = ", ".join(spec.table for spec in specs)

    def _write(self, specs: tuple[Partitioning, ...]) -> dict[tuple[str, str], Part]:
        started = time.perf_counter()
        previous = read_manifest(self._con, self._snapshot) or Manifest()
        staged = StagedSnapshot(path=self._snapshot, target=self._snapshot, keep=frozenset())
        try:
            parts, _ = _write_parts(self._con, self._snapshot, previous, staged, {}, specs)
        except BaseException:
            # Only this write's files: those of an earlier one stay the publish's to take.
            for path in staged.written:
                path.unlink(missing_ok=True)
            raise
        self._written += staged.written
        written = {str(path) for path in staged.written}
        logger.info(
            "snapshot: wrote %d Parquet files of %s (%s rows) ahead of the publish in %.1f s",
            len(written),
            ", ".join(spec.table for spec in specs),
            f"{staged.rows_written:,}",
            time.perf_counter() - started,
        )
        return {(p.table, p.key): p for p in parts if p.file in written}

    def result(self) -> dict[tuple[str, str], Part]:
        """Wait for the writes; their parts by (table, partition key). A write that failed
        gives none: the publish then writes every partition of its tables it needs."""
        parts: dict[tuple[str, str], Part] = {}
        for future, tables in self._writes.items():
            try:
                parts |= future.result()
            except Exception as exc:  # noqa: BLE001  # a full disk here fails the publish's own write
                logger.warning(
                    "snapshot: the write ahead of the publish of %s failed (%s); the publish writes them",
                    tables,
                    exc,
                )
        return parts

    def take(self) -> dict[tuple[str, str], Part]:
        """`result`, whose files are now the caller's to reference or remove."""
        parts = self.result()
        self._written = []
        self.close()
        return parts

    def close(self) -> None:
        for future in self._writes:
            future.cancel()  # a write not started yet
        if not all(future.done() for future in self._writes):
            self._con.interrupt()
        for future in self._writes:
            with contextlib.suppress(Exception):
                future.result()
        self._pool.shutdown()
        self._remove_written()
        self._con.close()

    def _remove_written(self) -> None:
        for path in self._written:
            path.unlink(missing_ok=True)
        self._written.clear()

    def __enter__(self) -> WriteAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stage_snapshot(con: duckdb.DuckDBPyConnection, warehouse: Path, snapshot: Path) -> Path:
    """`stage`, for callers that rename the file themselves; unreferenced files then go at the
    next publish. `warehouse` is the file `con` has open (kept for callers; `con` is what is read)."""
    del warehouse
    return stage(con, snapshot).path


def publish_snapshot(con: duckdb.DuckDBPyConnection, warehouse: Path, snapshot: Path) -> Path:
    """Publish a read-only snapshot for analysts: stage it beside, then rename over the old one.

    A rename is atomic on one filesystem, so the path always names a whole snapshot,
    never a half-written file, and never the writer's lock. Readers should open it with
    `open_snapshot`, which also survives a rename landing in the middle of DuckDB's open.
    The report publishes the snapshot together with itself (`athanor.publish.build_report`).
    """
    del warehouse
    staged = stage(con, snapshot)
    try:
        os.replace(staged.path, staged.target)
    except BaseException:
        staged.discard()
        raise
    staged.remove_unreferenced()
    return Path(snapshot)


def read_manifest(con: duckdb.DuckDBPyConnection, snapshot: Path) -> Manifest | None:
    """The current snapshot's manifest, read by attaching it read-only to `con` (None: unreadable)."""
    if not snapshot.exists():
        return Manifest()
    try:
        con.execute(f"attach {_literal(str(snapshot))} as {_PREVIOUS} (read_only)")
    except duckdb.Error as exc:  # not a DuckDB file: nothing of it can be reused
        logger.warning("snapshot: %s is unreadable (%s); writing every partition", snapshot, exc)
        return None
    try:
        tables = {
            r[0]
            for r in con.execute(
                "select table_name from duckdb_tables() where database_name = ? and schema_name = ?",
                [_PREVIOUS, MANIFEST_SCHEMA],
            ).fetchall()
        }
        if "partitions" not in tables:
            return Manifest()
        prefix = f"{_PREVIOUS}.{MANIFEST_SCHEMA}"
        # A snapshot published before files left out empty columns has no `absent`: none were;
        # one published before sizes and digests were kept has none: its files are written again.
        present = {
            r[0]
            for r in con.execute(
                "select column_name from duckdb_columns() where database_name = ? and schema_name = ? "
                "and table_name = 'partitions'",
                [_PREVIOUS, MANIFEST_SCHEMA],
            ).fetchall()
        }
        absent = "absent" if "absent" in present else "'[]'"
        size, digest = ("bytes", "sha256") if "sha256" in present else ("null", "null")
        stamp = "stamp" if "stamp" in present else "null"  # none kept: its files are read again
        parts = {
            (table, key): Part(table, key, rows, columns, file, tuple(json.loads(gone)), nbytes, sha, mark)
            for table, key, rows, columns, file, gone, nbytes, sha, mark in con.execute(
                f"select table_name, partition_key, row_count, columns, file, {absent}, {size}, {digest}, "
                f"{stamp} from {prefix}.partitions"
            ).fetchall()
        }
        retained = frozenset(r[0] for r in con.execute(f"select file from {prefix}.retained").fetchall())
        seen = frozenset(r[0] for r in con.execute(f"select entry from {prefix}.loads_seen").fetchall())
        age = time.time() - os.stat(snapshot).st_mtime
        return Manifest(parts=parts, retained=retained, loads_seen=seen, age_s=age)
    finally:
        con.execute(f"detach {_PREVIOUS}")


def remove_unreferenced(snapshot: Path, keep: Iterable[str]) -> list[Path]:
    """Remove every Parquet file under the snapshot's parts folder that is not in `keep`.

    Files are matched by name, which names their generation uniquely, so the same folder
    reached through another path (a symlink, a relative path) keeps what it should.
    """
    folder = parts_dir(Path(snapshot).absolute())
    if not folder.is_dir():
        return []
    names = {Path(f).name for f in keep}
    removed = [path for path in folder.rglob("*.parquet") if path.name not in names]
    for path in removed:
        path.unlink(missing_ok=True)
    if removed:
        logger.info("snapshot: removed %d Parquet files no snapshot references", len(removed))
    return removed


def _table_parts(
    con: duckdb.DuckDBPyConnection,
    database: str,
    spec: Partitioning,
    previous: Manifest,
    new_loads: list[str],
    snapshot: Path,
    generation: str,
    staged: StagedSnapshot,
    early: dict[tuple[str, str], Part],
) -> list[Part]:
    """The table's partitions now, each with its file: reused where written before (by an
    earlier snapshot, or `early` by a `WriteAhead`), else written."""
    table = f"{_ident(database)}.main.{_ident(spec.table)}"
    described = con.execute(
        "select column_name, data_type from duckdb_columns() "
        "where database_name = ? and schema_name = 'main' and table_name = ? order by column_index",
        [database, spec.table],
    ).fetchall()
    # A column added or retyped (a migration) makes every file of the table stale.
    columns = hashlib.sha256(json.dumps(described).encode()).hexdigest()[:16]
    total = con.execute(f"select count(*) from {table}").fetchone()[0]
    before = {key: p for (name, key), p in previous.parts.items() if name == spec.table}
    reusable = bool(before) and all(p.columns == columns for p in before.values())
    counts = _counts(con, table, spec, before if reusable else {}, new_loads, total)
    folder = parts_dir(snapshot) / spec.table
    parts = []
    for key, (values, rows) in sorted(counts.items()):
        old = before.get(key)
        if old is not None and old.rows == rows and old.columns == columns:
            if (checked := old.verified()) is not None:
                parts.append(checked)
                staged.kept += 1
                continue
            logger.warning(
                "snapshot: %s partition %s: %s is missing or not the file written (size or SHA-256 "
                "differs); writing it again",
                spec.table,
                key,
                Path(old.file).name,
            )
        ahead = early.get((spec.table, key))
        if ahead is not None and ahead.rows == rows and ahead.columns == columns:
            staged.written.append(Path(ahead.file))
            staged.rows_written += rows
            staged.taken += 1
            parts.append(ahead)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{generation}-{len(staged.written):05d}.parquet"
        staged.written.append(path)
        written, absent = _write_parquet(con, table, spec, values, [c for c, _ in described], path)
        if written != rows:
            raise RuntimeError(
                f"snapshot: partition {key} of {spec.table} wrote {written} rows, counted {rows}"
            )
        staged.rows_written += written
        logger.info(
            "snapshot: %s partition %s: %s rows to %s, %d columns empty in all of them left out",
            spec.table,
            key,
            f"{written:,}",
            path.name,
            len(absent),
        )
        digest, stamp = _digest(path)
        parts.append(
            Part(spec.table, key, rows, columns, str(path), absent, path.stat().st_size, digest, stamp)
        )
    return parts


def _counts(
    con: duckdb.DuckDBPyConnection,
    table: str,
    spec: Partitioning,
    before: dict[str, Part],
    new_loads: list[str],
    total: int,
) -> dict[str, tuple[tuple, int]]:
    """Each partition's key (JSON) -> (key values, rows), counting only what may have changed."""
    keys = ", ".join(f"{expr} as {_ident(name)}" for name, expr in spec.keys)
    count_sql = f"select {keys}, count(*) from {table} {{where}} group by all"
    # A key's values come back from JSON as text; DuckDB casts them to the columns' types.
    unchanged = {key: (tuple(json.loads(key)), p.rows) for key, p in before.items()}
    if before and spec.by_loads and not new_loads and sum(p.rows for p in before.values()) == total:
        return unchanged
    if before and spec.touched is not None:
        con.execute(f"create or replace temp table {_NEW_LOADS} (load_id varchar)")
        if new_loads:
            con.executemany(f"insert into {_NEW_LOADS} (load_id) values (?)", [[load] for load in new_loads])
        con.execute(
            f"create or replace temp table {_TOUCHED} as "
            + spec.touched.format(table=table, new_loads=_NEW_LOADS)
        )
        touched = {_key(row) for row in con.execute(f"select * from {_TOUCHED}").fetchall()}
        others = ", ".join(expr for _, expr in spec.keys[1:])
        where = f"where ({others}) in (select * from {_TOUCHED})"
        fresh = {_key(r[:-1]): (r[:-1], r[-1]) for r in con.execute(count_sql.format(where=where)).fetchall()}
        con.execute(f"drop table {_TOUCHED}")
        con.execute(f"drop table {_NEW_LOADS}")
        counts = {k: v for k, v in unchanged.items() if _key(json.loads(k)[1:]) not in touched} | fresh
        if sum(rows for _, rows in counts.values()) == total:
            return counts
        # Rows went or came outside what the loads could touch: count every partition.
        logger.warning("snapshot: %s changed outside the new loads' partitions; counting all", spec.table)
    return {_key(r[:-1]): (r[:-1], r[-1]) for r in con.execute(count_sql.format(where="")).fetchall()}


def _write_parquet(
    con: duckdb.DuckDBPyConnection,
    table: str,
    spec: Partitioning,
    values: tuple,
    columns: list[str],
    path: Path,
) -> tuple[int, tuple[str, ...]]:
    """Write one partition's rows to `path`, without the columns empty in all of them; returns
    how many rows were written and which columns were left out."""
    conditions, params = [], []
    for (_, expr), value in zip(spec.keys, values, strict=True):
        if value is None:
            conditions.append(f"({expr}) is null")
        else:
            conditions.append(f"({expr}) = ?")
            params.append(value)
    where = " and ".join(conditions)
    # Counting a column's values reads only its validity: 0.4 s for 72 columns of 8 M rows,
    # against 0.3-0.6 CPU-s that each empty column costs the writer.
    counted = con.execute(
        f"select {', '.join(f'count({_ident(c)})' for c in columns)} from {table} where {where}", params
    ).fetchone()
    empty = {c for c, n in zip(columns, counted, strict=True) if n == 0}
    kept = [c for c in columns if c not in empty] or columns[:1]  # a Parquet file needs a column
    absent = tuple(c for c in columns if c not in kept)
    query = f"select {', '.join(_ident(c) for c in kept)} from {table} where {where}"
    # Rows in any order, so both threads write (a month of 8 M billing lines: 16 s, not 29 s); as
    # an option of this COPY, not the global setting: stages run beside a WriteAhead.
    copy = f"copy ({query}) to {_literal(str(path))} (format parquet, preserve_order false)"
    return con.execute(copy, params).fetchone()[0], absent


def _write_small_file(
    con: duckdb.DuckDBPyConnection,
    database: str,
    staged: StagedSnapshot,
    parts: list[Part],
    previous_files: frozenset[str],
    loads: frozenset[str],
) -> None:
    """The new small file: the warehouse's schema and small tables, views over the parts, the manifest."""
    _remove_file(staged.path)
    con.execute(f"attach {_literal(str(staged.path))} as {_STAGED}")
    try:
        # One transaction: each statement committed alone would sync the new file's log.
        con.execute("begin transaction")
        con.execute(f"copy from database {_ident(database)} to {_STAGED} (schema)")
        by_table: dict[str, list[Part]] = {}
        for part in parts:
            by_table.setdefault(part.table, []).append(part)
        for schema, name in con.execute(
            "select schema_name, table_name from duckdb_tables() where database_name = ? and not internal "
            "order by all",
            [database],
        ).fetchall():
            if schema == "main" and name in by_table:
                _fact_view(con, database, name, sorted(by_table[name], key=lambda p: p.file))
                continue
            target = f"{_STAGED}.{_ident(schema)}.{_ident(name)}"
            source = f"{_ident(database)}.{_ident(schema)}.{_ident(name)}"
            staged.rows_copied += con.execute(
                f"insert into {target} by name select * from {source}"
            ).fetchone()[0]
            staged.tables_copied += 1
        _write_manifest(con, parts, previous_files, loads)
        con.execute("commit")
        con.execute(f"checkpoint {_STAGED}")
    except BaseException:
        # A full disk can end the transaction itself: "cannot rollback - no transaction is
        # active" must not take the place of "No space left on device".
        with contextlib.suppress(duckdb.Error):
            con.execute("rollback")
        with contextlib.suppress(duckdb.Error):
            con.execute(f"detach {_STAGED}")
        raise
    con.execute(f"detach {_STAGED}")
    # The file is renamed alone: everything must be in it, not in a log beside it.
    if staged.path.with_name(staged.path.name + ".wal").exists():
        raise RuntimeError(f"snapshot: {staged.path} kept a write-ahead log after its checkpoint")
    _fsync(staged.path)
    staged.inode = os.stat(staged.path).st_ino


def _fact_view(con: duckdb.DuckDBPyConnection, database: str, name: str, parts: list[Part]) -> None:
    """Replace the staged copy's empty table `name` by a view over its parts' files with its
    columns and types."""
    columns = con.execute(
        "select column_name, data_type, comment from duckdb_columns() "
        "where database_name = ? and schema_name = 'main' and table_name = ? order by column_index",
        [database, name],
    ).fetchall()
    comment = con.execute(
        "select comment from duckdb_tables() where database_name = ? and schema_name = 'main' and table_name = ?",
        [database, name],
    ).fetchone()[0]
    target = f"{_STAGED}.main.{_ident(name)}"
    # Parquet has no MAP of every key type nor DuckDB's exact decimals and timestamps for every
    # writer: the casts give the live table's types back (a cast to the same type costs nothing).
    # Files are read by column name: one that left a column out gives NULLs for it, and a
    # column no file has is NULL of its type.
    present = {c for c, _, _ in columns} - set.intersection(*(set(p.absent) for p in parts))
    select = ", ".join(
        f"cast({_ident(c) if c in present else 'null'} as {t}) as {_ident(c)}" for c, t, _ in columns
    )
    listing = ", ".join(_literal(p.file) for p in parts)
    con.execute(f"drop table {target}")
    con.execute(
        f"create view {target} as select {select} from read_parquet([{listing}], union_by_name = true)"
    )
    if comment:
        con.execute(f"comment on view {target} is {_literal(comment)}")
    for column, _, text in columns:
        if text:
            con.execute(f"comment on column {target}.{_ident(column)} is {_literal(text)}")


def _write_manifest(
    con: duckdb.DuckDBPyConnection, parts: list[Part], previous_files: frozenset[str], loads: frozenset[str]
) -> None:
    prefix = f"{_STAGED}.{MANIFEST_SCHEMA}"
    con.execute(f"create schema {prefix}")
    con.execute(
        f"""create table {prefix}.partitions (table_name varchar, partition_key varchar,
            row_count bigint, columns varchar, file varchar, absent varchar, bytes bigint, sha256 varchar,
            stamp varchar)"""
    )
    con.execute(f"create table {prefix}.retained (file varchar)")
    con.execute(f"create table {prefix}.loads_seen (entry varchar)")
    con.execute(
        f"comment on table {prefix}.partitions is "
        + _literal(
            "The Parquet files the fact tables' views read: one per partition, with its row count, "
            "size in bytes and SHA-256 when written, and the file's inode, size and times of "
            "modification and change when its SHA-256 was last computed."
        )
    )
    if parts:
        con.executemany(
            f"insert into {prefix}.partitions (table_name, partition_key, row_count, columns, file, absent, "
            "bytes, sha256, stamp) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [p.table, p.key, p.rows, p.columns, p.file, json.dumps(p.absent), p.size, p.sha256, p.stamp]
                for p in parts
            ],
        )
    if previous_files:
        con.executemany(
            f"insert into {prefix}.retained (file) values (?)", [[f] for f in sorted(previous_files)]
        )
    if loads:
        con.executemany(f"insert into {prefix}.loads_seen (entry) values (?)", [[e] for e in sorted(loads)])


def _ledger(con: duckdb.DuckDBPyConnection, database: str) -> frozenset[str]:
    """Every delivery in the ledger with its status and end: a new or re-run load changes its entry."""
    if not _base_table(con, database, "loads"):
        return frozenset()
    rows = con.execute(
        f"select load_id, status, cast(finished_at as varchar) from {_ident(database)}.main.loads"
    ).fetchall()
    return frozenset(f"{load}|{status}|{finished or ''}" for load, status, finished in rows)


def _base_table(con: duckdb.DuckDBPyConnection, database: str, name: str) -> bool:
    return bool(
        con.execute(
            "select count(*) from duckdb_tables() where database_name = ? and schema_name = 'main' "
            "and table_name = ?",
            [database, name],
        ).fetchone()[0]
    )


def _key(values: Iterable[object]) -> str:
    return json.dumps([_text(v) for v in values])


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _fsync(path: Path) -> None:
    """Make a written file (or a folder's new entries) durable before the rename publishes it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_file(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".wal").unlink(missing_ok=True)


def remove_stale_copies(snapshot: Path) -> list[Path]:
    """Remove temporary files of `snapshot` whose process is gone; returns what was removed."""
    pattern = re.compile(rf"\.{re.escape(snapshot.name)}\.(\d+)\.tmp(\.wal)?")
    removed = []
    for path in snapshot.parent.glob(f".{snapshot.name}.*.tmp*"):
        found = pattern.fullmatch(path.name)
        if found and not _alive(int(found[1])):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process is not staging yet: a file with its number is a leftover
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def manifest_files(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The Parquet files an open snapshot's views read (none for a full copy)."""
    found = con.execute(
        "select count(*) from duckdb_tables() where schema_name = ? and table_name = 'partitions' "
        "and database_name = current_database()",
        [MANIFEST_SCHEMA],
    ).fetchone()[0]
    if not found:
        return []
    files = con.execute(f"select distinct file from {MANIFEST_SCHEMA}.partitions").fetchall()
    return sorted(f for (f,) in files)


def open_snapshot(path: Path | str, *, attempts: int = 20) -> duckdb.DuckDBPyConnection:
    """Open a published snapshot read-only, retrying if a publish swapped it mid-open.

    DuckDB 2.0 opens the file by its path several times while connecting (seen with
    strace); a rename between those opens pairs the old file's header with the new
    file's blocks and fails with an IO error. The inode tells whether that happened.
    """
    path = str(path)
    for _ in range(attempts):
        before = os.stat(path).st_ino
        try:
            con = duckdb.connect(path, read_only=True)
        except duckdb.IOException:
            if os.stat(path).st_ino != before:
                continue
            raise
        if os.stat(path).st_ino == before:
            con.execute("set TimeZone = 'UTC'")
            return con
        con.close()
    raise duckdb.IOException(f"{path} kept changing while it was being opened ({attempts} attempts)")
