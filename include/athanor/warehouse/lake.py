"""The lake mode: the fact tables as Apache Iceberg tables in a bucket, the catalog in PostgreSQL.

With `ATHANOR_WAREHOUSE_MODE=lake` the DuckDB file keeps everything but the fact tables'
rows (the ledger, marts, recommendations, runs); `billing_facts`, `job_run_facts`,
`storage_objects` and `gpu_samples` live in Iceberg tables (pyiceberg's SQL catalog at
`ATHANOR_LAKE_CATALOG_URI`, data files under `ATHANOR_LAKE_WAREHOUSE`, an `s3://bucket/prefix`,
written and read through pyarrow's S3 filesystem). Each is partitioned after what one load
replaces (`LAKE_TABLES`): a restated billing month, a re-delivered bucket inventory are whole
data files that one commit replaces.

Reads: `attach` makes each lake table, on one DuckDB connection, a temporary view of the same
name over the current snapshot's data files (DuckDB's own Parquet reader, which prunes columns
and row groups; a bucket's files are read from copies kept on this machine, `_local_paths`,
fetched once each, since a data file never changes) UNION ALL the DuckDB table of that name,
which in this mode only ever holds the rows of a load in progress. Temporary views shadow the file's
tables, also inside the file's own views (`focus_charges`), so every SQL file reads the lake
unchanged; the loader's own rows are visible to its quality gate as in the file mode.
Inside a load the view reads fewer files: those pyiceberg plans from the manifests for the
load's partitions (and charge hours) as literal values (`narrow_to_load`), less the files it
replaces whole (`hide_replaced`), so a night reads the partitions it restates, not the history.
A stage that windows a table by literal values does the same for its window (`narrowed`).

Writes: the loader stages a delivery into the DuckDB table as in the file mode (`staging`
names it), gates it, then `commit_load` replaces its partitions in Iceberg in one commit
(overwrite with a filter naming what the file mode's delete deletes: copy-on-write, no delete
files; the rows written a few batches at a time) and drops the staged rows, all inside the load's
DuckDB transaction. Iceberg commits first: if the process dies before the
DuckDB commit, the ledger does not know the load and the next run loads the delivery again,
which replaces the same partitions with the same rows.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.io import FileIO
    from pyiceberg.manifest import DataFile
    from pyiceberg.partitioning import PartitionKey
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata

    from athanor.settings import Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class LakeTable:
    """How one fact table lives in the lake: its partitions and what one load of it replaces."""

    # (column, Iceberg transform): identity, month, day.
    partition: tuple[tuple[str, str], ...]
    # A load replaces the lake's rows whose key it delivers, as the file mode's delete does...
    replaced_by: tuple[str, ...]
    # ...and, if set, only those between its first and last value of this column per key.
    span: str | None = None
    # Inside a load, its reads of the lake (its quality rules, what it replaces) need the rows
    # of the partitions it replaces and, if set, the rows whose value of this column falls
    # between the load's first and last (a line billed twice across two partitions): the
    # load's view holds only the data files that can have such rows (`narrow_to_load`).
    nearby: str | None = None

    @property
    def whole_files(self) -> bool:
        """Whether what one load replaces is whole data files: every key column an identity
        partition and no span, so a file is either all replaced or untouched."""
        identity = {column for column, transform in self.partition if transform == "identity"}
        return self.span is None and set(self.replaced_by) <= identity


# Each partition spec follows what one load replaces, so that a load rewrites few data files,
# and how the marts filter, so that they read few.
LAKE_TABLES: dict[str, LakeTable] = {
    # A restated (account, month) is whole data files (sql/ingest/delete_restated.sql).
    "billing_facts": LakeTable(
        (
            ("provider_name", "identity"),
            ("billing_account_id", "identity"),
            ("billing_period_start", "identity"),
        ),
        ("billing_account_id", "billing_period_start"),
        # sql/quality/line_item_not_already_loaded.sql compares with other partitions' lines
        # of the same charge hours.
        nearby="charge_period_start",
    ),
    # A job log replaces its jobs by (source, job_id), reported again when they finish: the
    # source prunes to one scheduler's files; the marts window jobs by start_time.
    "job_run_facts": LakeTable((("source", "identity"), ("start_time", "month")), ("source", "job_id")),
    # An inventory replaces its bucket's whole previous inventory: whole data files.
    "storage_objects": LakeTable((("bucket", "identity"),), ("bucket",)),
    # A telemetry delivery restates each GPU's span (sql/ingest/telemetry_replace.sql), about a
    # night: by day, a load rewrites the files of the days it covers; the marts window by day too.
    "gpu_samples": LakeTable((("sampled_at", "day"),), ("gpu_id",), span="sampled_at"),
}
COMMIT_ATTEMPTS = 8  # a concurrent commit to another partition costs one retry
_FILES_PREFIX = "_lake_"  # `_lake_<table>`: the temp view over the data files a connection reads
# A cached copy read less than this long ago is never evicted: another process may have
# registered it in a view it has not read yet.
_CACHE_GRACE_S = 3600


class LakeError(RuntimeError):
    """The lake is misconfigured or unreachable; `str()` names the setting or the server."""


@dataclass(frozen=True)
class LakeConfig:
    catalog_uri: str  # SQLAlchemy URL of the PostgreSQL catalog database
    warehouse: str  # s3://bucket/prefix under which the tables' files go
    namespace: str
    s3_endpoint_url: str | None
    region: str
    # Where a bucket's data files are copied for DuckDB's own Parquet reader (`_local_paths`),
    # and how many bytes the copies may take before the least recently read go.
    cache_dir: Path | None = None
    cache_bytes: int = 20_000_000_000

    @classmethod
    def from_settings(cls, settings: Settings) -> LakeConfig | None:
        """The lake's settings, or None in the file mode."""
        if settings.warehouse_mode != "lake":
            return None
        missing = [
            name
            for name, value in (
                ("ATHANOR_LAKE_CATALOG_URI", settings.lake_catalog_uri),
                ("ATHANOR_LAKE_WAREHOUSE", settings.lake_warehouse),
            )
            if not value
        ]
        if missing:
            raise LakeError(f"ATHANOR_WAREHOUSE_MODE=lake needs {' and '.join(missing)}")
        assert settings.lake_catalog_uri and settings.lake_warehouse
        # file:// is for trying the mode on one machine (and for tests without servers).
        if not settings.lake_warehouse.startswith(("s3://", "file:///")):
            raise LakeError(
                f"ATHANOR_LAKE_WAREHOUSE must be an s3:// (or file:///) URL, got {settings.lake_warehouse!r}"
            )
        return cls(
            catalog_uri=settings.lake_catalog_uri,
            warehouse=settings.lake_warehouse.rstrip("/"),
            namespace=settings.lake_namespace,
            s3_endpoint_url=settings.s3_endpoint_url,
            region=settings.aws_region,
            cache_dir=settings.lake_cache,
            cache_bytes=settings.lake_cache_bytes,
        )

    def identifier(self, table: str) -> tuple[str, str]:
        return (self.namespace, table)


def config() -> LakeConfig | None:
    """The lake of this process's settings, None in the file mode."""
    from athanor.settings import Settings

    return LakeConfig.from_settings(Settings.from_env())


# ---------------------------------------------------------------------- catalog and files


@cache
def catalog(cfg: LakeConfig) -> SqlCatalog:
    """pyiceberg's SQL catalog in PostgreSQL (its tables created on first use)."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    properties = {
        "uri": cfg.catalog_uri,
        "warehouse": cfg.warehouse,
        # pyarrow's S3 filesystem, the one the read cache copies data files through too.
        "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
        "s3.region": cfg.region,
    }
    if cfg.s3_endpoint_url:
        properties["s3.endpoint"] = cfg.s3_endpoint_url
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    try:
        found = SqlCatalog("athanor", **properties)
        found.create_namespace(cfg.namespace)
    except NamespaceAlreadyExistsError:
        pass
    except SQLAlchemyError as exc:
        shown = make_url(cfg.catalog_uri).render_as_string(hide_password=True)
        reason = str(exc.orig if getattr(exc, "orig", None) else exc).strip().splitlines()[0]
        raise LakeError(
            f"the lake catalog (ATHANOR_LAKE_CATALOG_URI {shown}) cannot be used: {reason}"
        ) from None
    return found


@cache
def filesystem(cfg: LakeConfig) -> Any:
    """pyarrow's S3 filesystem for the data files (credentials: the AWS SDK's usual chain)."""
    from pyarrow.fs import LocalFileSystem, S3FileSystem

    if cfg.warehouse.startswith("file://"):
        return LocalFileSystem()
    return S3FileSystem(endpoint_override=cfg.s3_endpoint_url, region=cfg.region)


def _parquet_select(cfg: LakeConfig, files: list[str], *, one_schema: bool) -> str:
    """SQL reading data files `files` with DuckDB's own Parquet reader. The columns are the
    files' own: the `column=value` folders of the partitions' paths are not read as columns
    (they would shadow the typed ones as text).

    `one_schema`: the table has had one schema all its life (`_one_schema`), so every file has
    the same columns, and DuckDB takes them from the first file. Else the files are read by
    column name, a column added since a file was written reading as null in its rows; DuckDB
    then opens every file's footer to bind each query on the view: over the 791 files of 12
    months of 8M lines, 0.2-0.7 s a bind against 0.01-0.02 s, for every query on the view.
    """
    listed = ", ".join(_sql_literal(str(path)) for path in _local_paths(cfg, files))
    by_name = "" if one_schema else "union_by_name = true, "
    return f"select * from read_parquet([{listed}], {by_name}hive_partitioning = false)"


def _one_schema(tbl: Table) -> bool:
    """Whether table `tbl` has had one schema all its life: pyiceberg writes each data file
    with the schema current then, so its files all have the same columns. (An Iceberg manifest
    does not say which schema wrote a file, so a table whose schema changed once is read by
    column name for good.)"""
    return len(tbl.metadata.schemas) == 1


def _local_paths(cfg: LakeConfig, files: list[str]) -> list[Path]:
    """Local paths of data files `files` (bucket/key paths, or local ones in a file:/// lake):
    the files themselves in a local lake; from a bucket, copies in the read cache, each fetched
    once per machine.

    Why copies: DuckDB reading a pyarrow dataset takes every batch through Arrow, and a map
    column (billing_facts.tags) costs 12 times its native read (a 4M-line month's GPU spend by
    job tag: 3.7 s against 0.3 s); DuckDB's own S3 reader is an extension this deployment cannot
    download, and its bridge to Python filesystems misreads Parquet ("Out of buffer"). A data
    file is never rewritten (a commit writes new files), so a copy is good for as long as the
    file is: what goes is only what was read least recently, once the cache is full.
    """
    if cfg.warehouse.startswith("file://"):
        return [Path(path) for path in files]
    assert cfg.cache_dir is not None, "a bucket lake without a read cache folder"
    # One folder per endpoint: two S3 servers can hold the same bucket and key.
    root = cfg.cache_dir / hashlib.sha256((cfg.s3_endpoint_url or "aws").encode()).hexdigest()[:12]
    local = {path: root / path for path in files}
    missing = []
    now = time.time()
    for path, copy in local.items():
        try:
            os.utime(copy, (now, now))  # read now: the eviction goes by last read
        except FileNotFoundError:
            missing.append(path)
    if missing:
        started = time.perf_counter()
        fs = filesystem(cfg)

        def fetch(path: str) -> int:
            copy = local[path]
            copy.parent.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: a reader never opens half a file, and a process that
            # dies mid-copy leaves no copy behind.
            part = copy.with_name(f".{copy.name}.{os.getpid()}.part")
            with fs.open_input_stream(path) as source, part.open("wb") as target:
                shutil.copyfileobj(source, target, 8 << 20)
            os.replace(part, copy)
            return copy.stat().st_size

        with ThreadPoolExecutor(max_workers=8) as pool:
            fetched = sum(pool.map(fetch, missing))
        evicted = _evict(root, keep=set(local.values()), limit=cfg.cache_bytes)
        logger.info(
            "lake read cache %s: fetched %d of %d data file(s), %.1f MB in %.1f s; %d evicted",
            root,
            len(missing),
            len(files),
            fetched / 1e6,
            time.perf_counter() - started,
            evicted,
        )
    return [local[path] for path in files]


def _evict(root: Path, keep: set[Path], limit: int) -> int:
    """Remove the least recently read copies under `root` until they take at most `limit`
    bytes, sparing `keep` and any read in the last hour; how many went. A partial copy an
    hour old (its process died mid-copy) goes too."""
    newest_evictable = time.time() - _CACHE_GRACE_S
    copies = []
    for copy in root.rglob("*"):
        if not copy.is_file():
            continue
        stat = copy.stat()
        if not copy.name.startswith("."):
            copies.append((stat.st_mtime, stat.st_size, copy))
        elif copy.name.endswith(".part") and stat.st_mtime < newest_evictable:
            copy.unlink(missing_ok=True)
    total = sum(size for _, size, _ in copies)
    evicted = 0
    for read_at, size, copy in sorted(copies, key=lambda c: c[0]):
        if total <= limit:
            break
        if copy in keep or read_at > newest_evictable:
            continue
        copy.unlink(missing_ok=True)
        total -= size
        evicted += 1
    return evicted


# Each table as this process last loaded it from the catalog. A snapshot is never changed, so
# a view pinned to one that the loaded metadata already holds needs no new catalog and
# metadata round trip: every stage of a run reads the snapshots its run recorded.
_LOADED: dict[tuple[LakeConfig, str], Table] = {}


def table(cfg: LakeConfig, name: str, con: duckdb.DuckDBPyConnection | None = None) -> Table:
    """The Iceberg table `name`; created from the DuckDB table's columns when new (needs `con`)."""
    from pyiceberg.exceptions import NoSuchTableError, TableAlreadyExistsError

    ident = cfg.identifier(name)
    try:
        return _load(cfg, name)
    except NoSuchTableError:
        if con is None:
            raise
    schema = con.sql(f"select * from {staging(con, name)} limit 0").to_arrow_table().schema
    # Created with its partition spec in one commit: no reader ever sees it unpartitioned.
    create = catalog(cfg).create_table_transaction(ident, schema=schema)
    with create.update_spec() as spec:
        for column, transform in LAKE_TABLES[name].partition:
            spec.add_field(column, transform)
    try:
        create.commit_transaction()
    except TableAlreadyExistsError:  # another loader created it meanwhile
        return _load(cfg, name)
    logger.info(
        "created lake table %s.%s partitioned by %s",
        cfg.namespace,
        name,
        ", ".join(f"{transform}({column})" for column, transform in LAKE_TABLES[name].partition),
    )
    return _load(cfg, name)


def _load(cfg: LakeConfig, name: str) -> Table:
    """Table `name` as the catalog has it now, kept as this process's latest copy (`_table_at`)."""
    loaded = _LOADED[(cfg, name)] = catalog(cfg).load_table(cfg.identifier(name))
    return loaded


def data_files(tbl: Table, snapshot_id: int | None = None, row_filter: Any = None) -> list[str]:
    """The data files of a snapshot (the current one by default), as bucket/key paths.

    `row_filter` (a pyiceberg expression of literal values): only the files that can hold a
    row it matches, as pyiceberg plans them from the manifests (partition values, then each
    file's column bounds), without reading a data file.
    The tables are written copy-on-write only, so a snapshot is its data files: a delete file
    would mean another writer wrote this table merge-on-read, which these readers cannot apply.
    """
    return list(_planned(tbl, snapshot_id, row_filter))


# A snapshot's data files never change, and every stage's connection attaches the lake: its
# whole plan is read from the manifests in the bucket once per process. (table uuid, snapshot)
_PLANS: dict[tuple[str, int], dict[str, int]] = {}
_PLANS_KEPT = 64


def _planned(tbl: Table, snapshot_id: int | None, row_filter: Any = None) -> dict[str, int]:
    """`data_files` with each file's row count (from the manifest): path -> rows."""
    key = (
        (str(tbl.metadata.table_uuid), snapshot_id)
        if snapshot_id is not None and row_filter is None
        else None
    )
    if key in _PLANS:
        return dict(_PLANS[key])
    scan = (
        tbl.scan(snapshot_id=snapshot_id)
        if row_filter is None
        else tbl.scan(snapshot_id=snapshot_id, row_filter=row_filter)
    )
    files = {}
    for task in scan.plan_files():
        if task.delete_files:
            raise LakeError(
                f"{'.'.join(tbl.name())} has delete files (merge-on-read); Athanor reads copy-on-write tables"
            )
        path = task.file.file_path.removeprefix("s3://").removeprefix("s3a://").removeprefix("file://")
        files[path] = int(task.file.record_count)
    if key is not None:
        if len(_PLANS) >= _PLANS_KEPT:
            _PLANS.clear()
        _PLANS[key] = dict(files)
    return files


def staging(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """The DuckDB table itself, past any lake view of the same name (loads insert here)."""
    database = con.execute("select current_database()").fetchall()[0][0]
    return f'"{database}".main."{name}"'


def _columns(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    """The DuckDB table's (column, type) pairs, in order."""
    database = con.execute("select current_database()").fetchall()[0][0]
    rows = con.execute(
        "select column_name, data_type from duckdb_columns() where database_name = ? "
        "and schema_name = 'main' and table_name = ? order by column_index",
        [database, name],
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


# ---------------------------------------------------------------------- reading


def attached(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether this connection reads its fact tables from the lake (so loads must commit there)."""
    found = con.execute(
        "select count(*) from duckdb_views() where temporary and view_name = 'billing_facts'"
    ).fetchall()
    return bool(found[0][0])


def attach(
    con: duckdb.DuckDBPyConnection,
    cfg: LakeConfig | None,
    snapshots: dict[str, int] | None = None,
    *,
    only_pinned: bool = False,
) -> dict[str, int | None]:
    """Make each lake table a view of the same name on `con`; nothing in the file mode (cfg None).

    `snapshots`: table -> snapshot id to read (time travel); default the current snapshots.
    `only_pinned`: a table `snapshots` does not name reads as empty (it had no snapshot when
    they were recorded), not as its current snapshot.
    Returns the snapshot each view reads (None: the table has no snapshot yet).
    """
    if cfg is None:
        return {}
    read: dict[str, int | None] = {}
    for name in LAKE_TABLES:
        snapshot_id = (snapshots or {}).get(name)
        if snapshot_id is not None:
            tbl = _table_at(cfg, name, snapshot_id)
        elif only_pinned:
            tbl = None
        else:
            tbl = table(cfg, name, con)
            current = tbl.current_snapshot()
            snapshot_id = current.snapshot_id if current else None
        read[name] = snapshot_id
        _view(con, cfg, name, tbl, snapshot_id)
    return read


def _table_at(cfg: LakeConfig, name: str, snapshot_id: int | None) -> Table:
    """Table `name` with snapshot `snapshot_id` in its metadata: as loaded before if it has it
    (None: loaded now, for its current snapshot)."""
    tbl = _LOADED.get((cfg, name))
    if tbl is None or snapshot_id is None or tbl.snapshot_by_id(snapshot_id) is None:
        tbl = table(cfg, name)
    return tbl


def _view(
    con: duckdb.DuckDBPyConnection,
    cfg: LakeConfig,
    name: str,
    tbl: Table | None,
    snapshot_id: int | None,
) -> None:
    files = data_files(tbl, snapshot_id) if tbl is not None and snapshot_id is not None else []
    _register(con, cfg, name, files, snapshot_id)
    _create_view(con, name, lake_rows=bool(files))
    logger.info(
        "lake table %s: snapshot %s, %d data file(s), read as view %s",
        ".".join(cfg.identifier(name)),
        snapshot_id,
        len(files),
        name,
    )


# What each connection's view of a table reads, in a temp table of the connection: DuckDB
# undoes it with the load's transaction, as it undoes the registration of the data files.
_READING = "_lake_reading"


def _register(
    con: duckdb.DuckDBPyConnection,
    cfg: LakeConfig,
    name: str,
    files: list[str],
    snapshot_id: int | None = None,
) -> None:
    """`_lake_<name>` on `con`: a view of DuckDB's Parquet reader over `files` (none: no such
    view), the files of snapshot `snapshot_id` (default: the snapshot read so far)."""
    if snapshot_id is None:
        snapshot_id = _reading(con, name)[0]
    if files:
        one_schema = _one_schema(_table_at(cfg, name, snapshot_id))
        con.execute(
            f"create or replace temp view {_FILES_PREFIX}{name} as "
            + _parquet_select(cfg, files, one_schema=one_schema)
        )
    elif _registered(con, name):
        con.execute(f"drop view {_FILES_PREFIX}{name}")  # an earlier snapshot's files
    con.execute(
        f"create temp table if not exists {_READING} (table_name varchar, snapshot_id bigint, path varchar)"
    )
    con.execute(f"delete from {_READING} where table_name = ?", [name])
    con.execute(
        f"insert into {_READING} select ?, ?, unnest(?::varchar[])", [name, snapshot_id, files or [None]]
    )


def _reading(con: duckdb.DuckDBPyConnection, name: str) -> tuple[int | None, list[str]]:
    """The snapshot and the data files `con`'s view of `name` reads (None, []: not attached)."""
    try:
        rows = con.execute(
            f"select snapshot_id, path from {_READING} where table_name = ?", [name]
        ).fetchall()
    except duckdb.CatalogException:
        return None, []
    if not rows:
        return None, []
    return rows[0][0], [path for _, path in rows if path is not None]


def narrow_to_load(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> int:
    """Inside a load, once its rows are staged: the view of `name` reads only the data files
    that can hold a row the load's own reads need (see `LakeTable.nearby`); how many.

    Which files, pyiceberg plans from the manifests with the load's keys (and its range of
    the nearby column) as literal values: a restated month reads that month's files, not the
    table's history, where a semi-join against the staged rows (which DuckDB cannot push into
    a scan's file list) read every file. The commit (`commit_load`) reads the new snapshot whole
    again; a load that fails gets the whole view back with its rollback (DuckDB undoes the
    registration and `_lake_reading` with the transaction).
    """
    if not _registered(con, name):
        return 0
    files, _ = _read_only_planned(con, name, _load_scope(con, name, load_id))
    logger.info("lake table %s: load %s reads %d data file(s) of its partitions", name, load_id, len(files))
    return len(files)


def _read_only_planned(
    con: duckdb.DuckDBPyConnection, name: str, row_filter: Any
) -> tuple[list[str], list[str]]:
    """Point `con`'s view of `name` at the files it reads now that pyiceberg plans for
    `row_filter`; (the files it reads now, those it read before)."""
    cfg = config()
    assert cfg is not None, "a lake view in the file mode"
    snapshot_id, reading = _reading(con, name)
    tbl = _table_at(cfg, name, snapshot_id)
    files = sorted(set(reading) & set(data_files(tbl, snapshot_id, row_filter)))
    _register(con, cfg, name, files, snapshot_id)
    _create_view(con, name, lake_rows=bool(files))
    return files, reading


@contextmanager
def narrowed(
    con: duckdb.DuckDBPyConnection, name: str, column: str, start: datetime | date, end: datetime | date
) -> Iterator[int | None]:
    """Inside: the view of `name` reads only the data files that can hold a row with `column`
    in [start, end), as pyiceberg plans them from the manifests (partition values, then each
    file's column bounds); yields how many (None: not a lake view, nothing changes).

    For a stage whose query windows a fact table by literal values: DuckDB applies the filter
    by opening every data file of the view (each file's footer; from a bucket, a copy of each
    file first), so without this the files a night opens grow with the history. The query
    keeps its own window, so the figures are those of the whole view. Afterwards the view
    reads what it read before.
    """
    if not _registered(con, name):
        yield None
        return
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

    snapshot_id = _reading(con, name)[0]
    first, last = (datetime(d.year, d.month, d.day) if type(d) is date else d for d in (start, end))
    window = And(GreaterThanOrEqual(column, _literal(first)), LessThan(column, _literal(last)))
    files, reading = _read_only_planned(con, name, window)
    logger.info(
        "lake table %s: %s in [%s, %s) reads %d of %d data file(s)",
        name,
        column,
        start,
        end,
        len(files),
        len(reading),
    )

    def whole() -> None:
        cfg = config()
        assert cfg is not None
        _register(con, cfg, name, reading, snapshot_id)
        _create_view(con, name, lake_rows=bool(reading))

    try:
        yield len(files)
    except BaseException:
        # Inside a transaction the error aborted it, and its rollback gives the view back
        # (DuckDB undoes the registration with it); outside one, it is given back here.
        with suppress(duckdb.Error):
            whole()
        raise
    whole()


def _load_scope(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> Any:
    """pyiceberg's expression of what a load's reads need: its keys, or its nearby range."""
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThanOrEqual, Or

    scope = _replaced_filter(name, _replaced_keys(con, name, load_id))
    nearby = LAKE_TABLES[name].nearby
    if nearby is not None:
        first, last = con.execute(
            f"select min({_quoted(nearby)}), max({_quoted(nearby)}) from {staging(con, name)} where load_id = ?",
            [load_id],
        ).fetchall()[0]
        if first is not None:
            scope = Or(
                scope,
                And(GreaterThanOrEqual(nearby, _literal(first)), LessThanOrEqual(nearby, _literal(last))),
            )
    return scope


def _create_view(
    con: duckdb.DuckDBPyConnection, name: str, *, lake_rows: bool, replaced_by: str | None = None
) -> None:
    """The view: the lake's rows (less those load `replaced_by` replaces) and the staged rows."""
    columns = _columns(con, name)
    staged = staging(con, name)
    parts = [f"select {', '.join(f'{_quoted(c)}' for c, _ in columns)} from {staged}"]
    if lake_rows:
        source = _FILES_PREFIX + name
        present = {row[0] for row in con.execute(f"describe select * from {source}").fetchall()}
        # A column a migration added since the lake table last changed: null until a load adds it.
        select = ", ".join(
            _quoted(c) if c in present else f"cast(null as {t}) as {_quoted(c)}" for c, t in columns
        )
        lake = f"select {select} from {source} as lake_rows"
        if replaced_by is not None:
            lake += f" where not ({_replaced_condition(con, name, replaced_by)})"
        parts.insert(0, lake)
    con.execute(f'create or replace temp view "{name}" as ' + " union all ".join(parts))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# Beyond this many keys (a job log of many jobs) the view's definition would be megabytes of
# literals: the condition is a semi-join against the staged rows instead.
MAX_LITERAL_KEYS = 5_000


def _replaced_semi_join(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> str:
    """`_replaced_condition` as a semi-join against the load's staged rows."""
    spec = LAKE_TABLES[name]
    staged = staging(con, name)
    load = _sql_literal(load_id)
    keys = ", ".join(_quoted(c) for c in spec.replaced_by)
    if spec.span is None:
        return f"({keys}) in (select distinct {keys} from {staged} where load_id = {load})"
    span = _quoted(spec.span)
    same_key = " and ".join(f"span.{_quoted(c)} = lake_rows.{_quoted(c)}" for c in spec.replaced_by)
    return (
        f"exists (select 1 from (select {keys}, min({span}) as first_at, max({span}) as last_at"
        f" from {staged} where load_id = {load} group by all) as span"
        f" where {same_key} and lake_rows.{span} between span.first_at and span.last_at)"
    )


def _sql_literal(value: Any) -> str:
    """A value of a load's key as SQL text (the view's definition takes no parameters)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return f"timestamp{'tz' if value.tzinfo else ''} '{value.isoformat()}'"
    if isinstance(value, date):
        return f"date '{value.isoformat()}'"
    if isinstance(value, int | float | Decimal):
        return repr(value) if isinstance(value, float) else str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _replaced_condition(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> str:
    """SQL true for a lake row (alias `lake_rows`) that load `load_id` replaces; the file mode's delete.

    The load's keys (and spans) written in as literal values, not a semi-join against the
    staged rows: DuckDB pushes constants into the scan of the data files, and a join it cannot.
    """
    spec = LAKE_TABLES[name]
    keys = _replaced_keys(con, name, load_id)
    if not keys:
        return "false"
    if len(keys) > MAX_LITERAL_KEYS:
        return _replaced_semi_join(con, name, load_id)
    columns = [f"lake_rows.{_quoted(c)}" for c in spec.replaced_by]
    if spec.span is None:
        rows = ", ".join("(" + ", ".join(_sql_literal(v) for v in key) + ")" for key in keys)
        return (
            f"({', '.join(columns)}) in ({rows})"
            if len(columns) > 1
            else f"{columns[0]} in ({', '.join(_sql_literal(k[0]) for k in keys)})"
        )
    (column,) = columns
    span = f"lake_rows.{_quoted(spec.span)}"
    grouped: dict[tuple[Any, Any], list[Any]] = {}
    for key, first, last_at in keys:
        grouped.setdefault((first, last_at), []).append(key)
    terms = [
        f"({column} in ({', '.join(_sql_literal(k) for k in members)})"
        f" and {span} between {_sql_literal(first)} and {_sql_literal(last_at)})"
        for (first, last_at), members in grouped.items()
    ]
    return "(" + " or ".join(terms) + ")"


def replaced_rows(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> int:
    """How many of the lake's rows load `load_id` replaces (what the file mode's delete counts)."""
    if not _registered(con, name):
        return 0
    if LAKE_TABLES[name].whole_files:
        # Whole data files: their row counts, from the manifests; no data file is read.
        return sum(_replaced_files(con, name, load_id).values())
    where, params = _replaced_condition(con, name, load_id), []
    span = LAKE_TABLES[name].span
    if span is not None:
        # The load's whole span as constants too: DuckDB pushes them into the scan of the data
        # files, so the count reads the days the load covers, not the table's history.
        params = list(
            con.execute(
                f"select min({_quoted(span)}), max({_quoted(span)}) from {staging(con, name)} where load_id = ?",
                [load_id],
            ).fetchall()[0]
        )
        where = f"lake_rows.{_quoted(span)} between ? and ? and {where}"
    found = con.execute(
        f"select count(*) from {_FILES_PREFIX}{name} as lake_rows where {where}", params
    ).fetchall()
    return int(found[0][0])


def hide_replaced(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> None:
    """Inside a load: the view leaves out the lake's rows of the partitions the load replaces.

    What deleting them does in the file mode, so that the rest of the load (and mark_replaced)
    sees what the commit will leave. Undone with the load's transaction if it fails; the
    commit (`commit_load`) points the view at the new snapshot.
    """
    if _registered(con, name) and LAKE_TABLES[name].whole_files:
        # The replaced partitions are whole files: the view leaves the files out (the
        # condition stays, on the rows of the others, where it is cheap and keeps it exact).
        cfg = config()
        assert cfg is not None
        kept = sorted(set(_reading(con, name)[1]) - set(_replaced_files(con, name, load_id)))
        _register(con, cfg, name, kept)
    _create_view(con, name, lake_rows=_registered(con, name), replaced_by=load_id)


def emptied_loads(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> list[str]:
    """The earlier loads none of whose rows load `load_id` leaves in the lake (whole-file tables).

    What the file mode's `mark_replaced` finds by reading every load's rows, from the files
    that matter only: the loads in the replaced files, then, of those, the files pyiceberg
    plans for their load ids (column bounds in the manifests) outside the replaced partitions.
    """
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from pyiceberg.expressions import In

    replaced = _replaced_files(con, name, load_id)
    if not replaced:
        return []
    cfg = config()
    assert cfg is not None
    tbl = _table_at(cfg, name, _reading(con, name)[0])
    schema = tbl.schema().as_arrow()

    def loads_in(files: Iterable[str]) -> set[str]:
        dataset = ds.dataset(sorted(files), filesystem=filesystem(cfg), format="parquet", schema=schema)
        return set(pc.unique(dataset.to_table(columns=["load_id"]).column("load_id")).to_pylist()) - {None}

    candidates = loads_in(replaced)
    others = set(_planned(tbl, _reading(con, name)[0], In("load_id", sorted(candidates)))) - set(replaced)
    return sorted(candidates - (loads_in(others) if others else set()))


def _replaced_files(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> dict[str, int]:
    """The data files (path -> rows) in the partitions load `load_id` replaces (whole-file tables)."""
    cfg = config()
    assert cfg is not None
    snapshot_id = _reading(con, name)[0]
    return _planned(
        _table_at(cfg, name, snapshot_id),
        snapshot_id,
        _replaced_filter(name, _replaced_keys(con, name, load_id)),
    )


def _registered(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether `con` has a snapshot's data files of table `name` registered."""
    found = con.execute(
        "select count(*) from duckdb_views() where temporary and view_name = ?", [_FILES_PREFIX + name]
    ).fetchall()
    return bool(found[0][0])


def open_as_of(
    settings: Settings, snapshots: dict[str, int], *, memory_limit: str = "2GB", threads: int = 2
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the lake tables as they were at `snapshots` (table -> snapshot id).

    The analysts' view of the lake mode: a run records its snapshot ids (`record_snapshots`),
    and this opens exactly what that run read, however many loads committed since.
    """
    from athanor.warehouse.connection import configure

    cfg = LakeConfig.from_settings(settings)
    if cfg is None:
        raise LakeError("ATHANOR_WAREHOUSE_MODE is not lake: there are no table snapshots to open")
    con = duckdb.connect()
    configure(con, memory_limit=memory_limit, threads=threads)
    for name, snapshot_id in snapshots.items():
        tbl = table(cfg, name)
        if tbl.snapshot_by_id(snapshot_id) is None:
            raise LakeError(
                f"{'.'.join(tbl.name())} has no snapshot {snapshot_id} (expired, or another table's id?)"
            )
        select = _parquet_select(cfg, data_files(tbl, snapshot_id), one_schema=_one_schema(tbl))
        con.execute(f'create view "{name}" as {select}')
    return con


def current_snapshots(cfg: LakeConfig) -> dict[str, int]:
    """Each lake table's current snapshot id (tables without one left out)."""
    found = {}
    for name in LAKE_TABLES:
        snapshot = table(cfg, name).current_snapshot()
        if snapshot is not None:
            found[name] = snapshot.snapshot_id
    return found


def record_snapshots(con: duckdb.DuckDBPyConnection, run_id: str, cfg: LakeConfig | None) -> dict[str, int]:
    """Write the lake tables' current snapshot ids against `run_id` (table lake_snapshots).

    Nothing in the file mode (cfg None). The ids are what the run's later stages read
    (`attach_for_run`) and what `open_as_of` opens: the run's read-only view.
    """
    if cfg is None:
        return {}
    from athanor.warehouse.rows import insert_rows

    found = current_snapshots(cfg)
    recorded_at = datetime.now(UTC).replace(tzinfo=None)
    con.execute("delete from lake_snapshots where run_id = ?", [run_id])
    rows = [
        {"run_id": run_id, "table_name": name, "snapshot_id": sid, "recorded_at": recorded_at}
        for name, sid in found.items()
    ]
    if rows:
        insert_rows(con, "lake_snapshots", rows)
    logger.info("run %s reads lake snapshots %s", run_id, found)
    return found


def run_snapshots(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, int]:
    """The snapshot ids a run recorded (table -> snapshot id)."""
    rows = con.execute(
        "select table_name, snapshot_id from lake_snapshots where run_id = ?", [run_id]
    ).fetchall()
    return {name: int(sid) for name, sid in rows}


def attach_for_run(con: duckdb.DuckDBPyConnection, cfg: LakeConfig | None, run_id: str) -> None:
    """A stage's connection: the snapshots its run recorded, else the current ones.

    So every stage after the load reads the same snapshot, whatever other loaders commit
    meanwhile. A cursor of a held connection sees none of its parent's temporary views, so it
    is attached too. Nothing in the file mode.
    """
    if cfg is None:
        return
    pinned = run_snapshots(con, run_id)
    if pinned:
        # A table the run recorded no snapshot of was empty then, and stays so for the run.
        attach(con, cfg, pinned, only_pinned=True)
    elif not attached(con):
        attach(con, cfg)


def attach_for_query(
    con: duckdb.DuckDBPyConnection, settings: Settings, snapshot_id: int | None, *, published: bool
) -> list[str]:
    """Analysts' SQL (`athanor query`) in the lake mode: the lake table that has snapshot
    `snapshot_id` as of it (the others current); else, reading the `published` snapshot file,
    every table as of the latest run it records (what that run's report read); else the
    current snapshots. Nothing in the file mode. Returns the local files the views read.
    """
    cfg = LakeConfig.from_settings(settings)
    if cfg is None:
        if snapshot_id is not None:
            raise LakeError("--lake-snapshot needs ATHANOR_WAREHOUSE_MODE=lake")
        return []
    if snapshot_id is not None:
        # Snapshot ids are random 63-bit numbers: at most one table has this one.
        pinned = {name: snapshot_id for name in LAKE_TABLES if table(cfg, name).snapshot_by_id(snapshot_id)}
        if not pinned:
            raise LakeError(f"no lake table ({', '.join(LAKE_TABLES)}) has snapshot {snapshot_id}")
    elif not published:
        pinned = {}
    else:
        try:
            rows = con.execute(
                "select table_name, snapshot_id from lake_snapshots "
                "qualify row_number() over (partition by table_name order by recorded_at desc) = 1"
            ).fetchall()
        except duckdb.CatalogException:  # a file from before the lake mode
            rows = []
        pinned = {name: int(sid) for name, sid in rows}
    attach(con, cfg, pinned or None)
    # Already local (attach fetched what was missing): the paths the session is allowed to read.
    return [str(path) for name in LAKE_TABLES for path in _local_paths(cfg, _reading(con, name)[1])]


# ---------------------------------------------------------------------- writing

# Rows of the load in one DuckDB record batch, written to its own data files. A commit holds
# at most WRITERS + 1 batches in memory (being written, or waiting for a writer, while DuckDB
# produces the next), whatever the size of the load.
BATCH_ROWS = 262_144
# Batches written to data files at once. pyarrow encodes a Parquet file on one thread (and
# releases the GIL while it does): one writer left a 2 M-line month's commit on one of the
# machine's two cores, with DuckDB idle until the batch it produced was written.
WRITERS = 2


def _literal(value: Any) -> Any:
    # A timestamp's ISO text binds to the column's type; a datetime would be read as micros.
    return value.isoformat() if isinstance(value, datetime) else value


def _replaced_keys(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> list[tuple[Any, ...]]:
    """What load `load_id` replaces: its distinct keys; for a span table each key's first and last value."""
    spec = LAKE_TABLES[name]
    staged = staging(con, name)
    keys = ", ".join(_quoted(c) for c in spec.replaced_by)
    if spec.span is None:
        query = f"select distinct {keys} from {staged} where load_id = ? order by all"
    else:
        span = _quoted(spec.span)
        query = f"select {keys}, min({span}), max({span}) from {staged} where load_id = ? group by all order by all"
    return con.execute(query, [load_id]).fetchall()


def _replaced_filter(name: str, keys: Iterable[tuple[Any, ...]]) -> Any:
    """Iceberg's expression for the rows one load replaces (`_replaced_keys`): any of its keys.

    The keys that differ only in their last column share one In (a job log's thousands of
    job ids of one source); a span table's keys with the same span share one In too.
    """
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, In, LessThanOrEqual

    spec = LAKE_TABLES[name]
    grouped: dict[tuple[Any, ...], list[Any]] = {}
    terms = []
    if spec.span is None:
        *prefix, last = spec.replaced_by
        for key in keys:
            grouped.setdefault(tuple(key[:-1]), []).append(_literal(key[-1]))
        for values, members in grouped.items():
            equal = [EqualTo(column, _literal(v)) for column, v in zip(prefix, values, strict=True)]
            equal.append(In(last, members))  # In of one value is EqualTo
            terms.append(equal[0] if len(equal) == 1 else And(*equal))
    else:
        (column,) = spec.replaced_by
        for key, first, last_at in keys:
            grouped.setdefault((first, last_at), []).append(key)
        for (first, last_at), members in grouped.items():
            terms.append(
                And(
                    In(column, members),
                    GreaterThanOrEqual(spec.span, _literal(first)),
                    LessThanOrEqual(spec.span, _literal(last_at)),
                )
            )
    if not terms:
        raise ValueError("a load with no rows replaces nothing")
    return _any_of(terms)


def _any_of(terms: list[Any]) -> Any:
    """Or of the terms as a balanced tree: pyiceberg's visitors recurse, and a chain of a few
    thousand terms (a night of GPUs with spans of their own) would pass Python's recursion limit."""
    from pyiceberg.expressions import Or

    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return Or(_any_of(terms[:middle]), _any_of(terms[middle:]))


def _overwrite(
    con: duckdb.DuckDBPyConnection, tbl: Table, name: str, load_id: str, overwrite_filter: Any
) -> int:
    """One Iceberg commit: delete what load `load_id` replaces, append its staged rows; how many.

    What `Table.overwrite` does, but it takes the load as one Arrow table (pyiceberg 0.12 streams
    only into unpartitioned tables, iceberg-python#2152): here each DuckDB record batch is
    written to data files (`WRITERS` batches at once, as DuckDB produces the next) and let go,
    all the files going into one append of the same transaction in the batches' order, so
    memory holds a few batches, not the load.
    """
    import itertools

    from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible
    from pyiceberg.table.snapshots import Operation

    properties = {"athanor.load_id": load_id}
    written = 0
    with tbl.transaction() as tx:
        with warnings.catch_warnings():
            # A first load of its partitions replaces nothing, which pyiceberg warns about.
            warnings.filterwarnings("ignore", "Delete operation did not match any records")
            # As overwrite's delete: a concurrent commit is checked as an overwrite's would be.
            tx.delete(
                overwrite_filter, snapshot_properties=properties, _isolation_operation=Operation.OVERWRITE
            )
        staged = con.sql(f"select * from {staging(con, name)} where load_id = ?", params=[load_id])
        reader = staged.to_arrow_reader(BATCH_ROWS)  # streamed: DuckDB produces a batch as it is read
        try:
            _check_pyarrow_schema_compatible(
                tx.table_metadata.schema(),
                provided_schema=reader.schema,
                format_version=tx.table_metadata.format_version,
            )
            files = itertools.count(0)  # one counter: the batches' data files get names of their own
            with tx.update_snapshot(snapshot_properties=properties).fast_append() as append:

                def write(batch: pa.RecordBatch) -> tuple[list[DataFile], int]:
                    data_files = _batch_data_files(
                        tx.table_metadata, batch, tbl.io, append.commit_uuid, files
                    )
                    return data_files, batch.num_rows

                # The files join the append in the batches' order, here on this thread only.
                with closing(_in_order(write, reader, WRITERS)) as batches_written:
                    for data_files, rows in batches_written:
                        for data_file in data_files:
                            append.append_data_file(data_file)
                        written += rows
        finally:
            reader.close()  # else the connection refuses the load's rollback: it has an open result
    return written


def _batch_data_files(
    metadata: TableMetadata, batch: pa.RecordBatch, io: FileIO, write_uuid: uuid.UUID, counter: Iterator[int]
) -> list[DataFile]:
    """The data files of one record batch of a load, as pyiceberg's `_dataframe_to_data_files` writes them.

    pyiceberg splits a batch by partition by filtering it on each partition value it holds and
    copying the result twice, even when the batch holds one partition, as a load's batches
    nearly always do (one account's month, one day of samples): 4.7 CPU-s for the 2 M lines of
    a month. A batch of one partition is written here as it is, in the same write tasks
    pyiceberg would make of it (0.12: the schema, the target file size, the bins); a batch of
    several still goes through pyiceberg's split.
    """
    import pyarrow as pa
    from pyiceberg.io.pyarrow import (
        _dataframe_to_data_files,
        bin_pack_arrow_table,
        pyarrow_to_schema,
        write_file,
    )
    from pyiceberg.table import DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE, TableProperties, WriteTask
    from pyiceberg.utils.config import Config
    from pyiceberg.utils.properties import property_as_int

    table = pa.Table.from_batches([batch])
    key = _only_partition(metadata, table)
    if key is None:
        return list(
            _dataframe_to_data_files(
                table_metadata=metadata, df=table, io=io, write_uuid=write_uuid, counter=counter
            )
        )
    target_file_size = property_as_int(
        metadata.properties,
        TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
        TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
    )
    task_schema = pyarrow_to_schema(
        table.schema,
        name_mapping=metadata.schema().name_mapping,
        downcast_ns_timestamp_to_us=Config().get_bool(DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE) or False,
        format_version=metadata.format_version,
    )
    tasks = (
        WriteTask(
            write_uuid=write_uuid,
            task_id=next(counter),
            record_batches=batches,
            partition_key=key,
            schema=task_schema,
        )
        for batches in bin_pack_arrow_table(table, target_file_size)
    )
    return list(write_file(io=io, table_metadata=metadata, tasks=tasks))


def _only_partition(metadata: TableMetadata, table: pa.Table) -> PartitionKey | None:
    """The partition key of `table` if all its rows are of one partition (else None)."""
    import pyarrow.compute as pc
    from pyiceberg.partitioning import PartitionFieldValue, PartitionKey

    spec, schema = metadata.spec(), metadata.schema()
    if spec.is_unpartitioned():
        return None
    values = []
    for field in spec.fields:
        source = schema.find_field(field.source_id)
        column = table.column(schema.find_column_name(field.source_id))
        transformed = field.transform.pyarrow_transform(source.field_type)(column)
        if pc.count_distinct(transformed, mode="all").as_py() != 1:
            return None
        values.append(PartitionFieldValue(field=field, value=transformed[0].as_py()))
    return PartitionKey(field_values=values, partition_spec=spec, schema=schema)


def _in_order(function: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """`function` of each of `items` on `workers` threads, the results in the items' order.

    An item is taken only while at most `workers` wait to be consumed, so at most
    `workers` + 1 are held at once, however many the items (a load's record batches). Closing
    the iterator early (a failure) drops the items not started; those running finish first.
    """
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lake-write") as pool:
        pending: deque[Future[R]] = deque()
        try:
            for item in items:
                pending.append(pool.submit(function, item))
                del item  # its thread holds it until done
                while len(pending) > workers:
                    yield pending.popleft().result()  # a failed call raises here
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def commit_load(con: duckdb.DuckDBPyConnection, name: str, load_id: str) -> int:
    """Replace in the lake what load `load_id` staged in `name` replaces; one Iceberg commit.

    Runs inside the load's DuckDB transaction: it reads the staged rows, commits them, deletes
    them from the staging table and points this connection's view at the new snapshot. A
    concurrent commit (another loader, another partition) fails ours with CommitFailedException;
    pyiceberg retries it on the new snapshot itself (table property commit.retry.num-retries,
    checking that the other commit touched none of our partitions). Should its retries run out,
    the table is read again here and the same overwrite retried: it replaces the same partitions
    with the same rows. Returns the new snapshot id.
    """
    from pyiceberg.exceptions import CommitFailedException

    cfg = config()
    assert cfg is not None, "commit_load in the file mode"
    staged = staging(con, name)
    keys = _replaced_keys(con, name, load_id)
    overwrite_filter = _replaced_filter(name, keys)
    columns = con.sql(f"select * from {staged} limit 0").to_arrow_table().schema
    started = time.monotonic()
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        tbl = table(cfg, name, con)
        added = [column for column in columns.names if column not in tbl.schema().column_names]
        if added:
            # A migration added columns to the DuckDB table: the Iceberg table gains them too.
            with tbl.update_schema() as update:
                update.union_by_name(columns)
            logger.info("lake table %s: columns added: %s", ".".join(tbl.name()), ", ".join(added))
            tbl = tbl.refresh()
        try:
            rows = _overwrite(con, tbl, name, load_id, overwrite_filter)
            break
        except CommitFailedException as exc:
            if attempt == COMMIT_ATTEMPTS:
                raise
            logger.info(
                "lake table %s changed under load %s (%s); reading it again, retry %d",
                ".".join(tbl.name()),
                load_id,
                str(exc).splitlines()[0],
                attempt,
            )
            time.sleep(0.05 * attempt)
    tbl = tbl.refresh()
    snapshot = tbl.current_snapshot()
    assert snapshot is not None
    con.execute(f"delete from {staged} where load_id = ?", [load_id])
    _view(con, cfg, name, tbl, snapshot.snapshot_id)
    logger.info(
        "lake table %s: load %s committed %d rows replacing %d key(s) as snapshot %d in %.2f s",
        ".".join(tbl.name()),
        load_id,
        rows,
        len(keys),
        snapshot.snapshot_id,
        time.monotonic() - started,
    )
    return snapshot.snapshot_id
