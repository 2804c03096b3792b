"""New warehouse files in tests start as a copy of one migrated empty warehouse, built once.

`athanor.warehouse.connect()` on a new file runs every migration in sql/schema and loads the
reference tables: 0.5-0.9 s, done by hundreds of tests and fixtures. Here, for the whole test
session, opening a file that does not exist yet (for writing) first copies a template: an empty
file that `configure()` and `migrate()` built, as `connect()` does, in this process. connect()
then runs migrate() on the copy as always, which finds every definition current and applies
nothing; the lake views (temporary, never in the file) are attached as always.

The template is keyed by the DuckDB version and every definition's SHA-256 (schema files,
reference SQL and the bytes of the reference data files, a refreshed price catalogue
included), so a test that changes any of them gets a template of its own, or a real
migration when building one fails (the real migration then raises the real error). What a
copy holds differs from a real migration's file only in `schema_migrations.applied_at` (the
template's build time): tests/unit/test_warehouse_template.py checks the rest is identical.

A test about migrating new files opts out with the `real_warehouse_migrations` fixture
(`pytestmark = pytest.mark.usefixtures("real_warehouse_migrations")`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from athanor.warehouse import connection, migrations


class Templates:
    """Built templates by key, in one folder; `enabled` is False while a test opts out."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.built: dict[str, Path | None] = {}  # None: building it failed, migrate for real
        self.enabled = True
        self.lock = threading.Lock()  # threads of one test may open new files at once

    def key(self) -> str:
        digest = hashlib.sha256(duckdb.__version__.encode())
        for d in migrations.references() + migrations.schema():
            digest.update(f"\0{d.name}\0{d.sha256}".encode())
        return digest.hexdigest()

    def template(self) -> Path | None:
        key = self.key()
        with self.lock:
            if key not in self.built:
                self.built[key] = self._build(self.folder / f"{key[:16]}.duckdb")
            return self.built[key]

    @staticmethod
    def _build(path: Path) -> Path | None:
        path.unlink(missing_ok=True)
        try:
            con = duckdb.connect(str(path))
            try:
                connection.configure(con)  # connect()'s session settings, then its migration
                migrations.migrate(con)
            finally:
                con.close()
        except Exception:
            path.unlink(missing_ok=True)
            return None
        return path

    def materialise(self, path: Path) -> None:
        """Put a copy of the template at `path`, unless something is, or may be, there already."""
        if str(path) == ":memory:" or path.exists() or Path(f"{path}.wal").exists():
            return
        try:
            template = self.template()
        except Exception:  # unreadable definitions: connect()'s own migration raises the real error
            return
        if template is None:
            return
        staged = path.with_name(f".{path.name}.template-{os.getpid()}-{threading.get_ident()}")
        try:
            shutil.copyfile(template, staged)
            os.link(staged, path)  # no-clobber: a file another thread made first is kept
        except FileExistsError:
            pass
        finally:
            staged.unlink(missing_ok=True)


@pytest.fixture(scope="session", autouse=True)
def warehouse_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Templates]:
    """For the session: a new warehouse file opened for writing starts as the template's copy."""
    templates = Templates(tmp_path_factory.mktemp("warehouse-template"))
    real_open = connection._open

    def _open(path: Path, *, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
        if not read_only and templates.enabled:
            templates.materialise(Path(path))
        return real_open(path, read_only=read_only, wait_s=wait_s)

    patch = pytest.MonkeyPatch()
    patch.setattr(connection, "_open", _open)
    try:
        yield templates
    finally:
        patch.undo()


@pytest.fixture
def real_warehouse_migrations(warehouse_template: Templates) -> Iterator[None]:
    """This test's new warehouse files are migrated for real, not copied from the template."""
    warehouse_template.enabled = False
    try:
        yield
    finally:
        warehouse_template.enabled = True
