"""A real PostgreSQL 15 on 127.0.0.1, from Debian's packages, for tests and benches.

`initdb` a data folder in a temp dir and start `postgres` on a free port, as `nobody` when
this process is root (PostgreSQL refuses root); stopped by PID (SIGINT: its fast shutdown),
its folder removed. Used by the Celery deployment (the Airflow metadata database) and the
lake mode (pyiceberg's SQL catalog).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.airflow_server import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def unprivileged() -> dict[str, Any]:
    """Popen arguments that drop root (PostgreSQL refuses it); nothing when not root."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("nobody")
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@dataclass
class Postgres:
    popen: subprocess.Popen
    folder: Path  # the data folder, socket and log; removed by stop()
    port: int
    user: str
    password: str
    log: Path

    def dsn(self, database: str) -> str:
        """user:password@127.0.0.1:port/database (prefix it with a driver's scheme)."""
        return f"{self.user}:{self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> None:
        import psycopg2

        con = psycopg2.connect(
            host="127.0.0.1", port=self.port, user=self.user, password=self.password, dbname="postgres"
        )
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute(f'create database "{name}"')
        con.close()

    def stop(self, timeout_s: float = 30) -> None:
        if self.popen.poll() is None:
            try:
                os.kill(self.popen.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres(user: str = "athanor", log: Path | None = None, timeout_s: float = 60) -> Postgres:
    """initdb + postgres on a free 127.0.0.1 port, `user` with a generated password."""
    assert (PG_BIN / "initdb").exists(), "PostgreSQL 15 is not installed: run scripts/system-deps.sh"
    drop = unprivileged()
    # PostgreSQL's user must reach its folder: not under pytest's root-only temp folder.
    folder = Path(tempfile.mkdtemp(prefix="athanor-pg-"))
    data, password = folder / "data", secrets.token_urlsafe(24)
    (folder / "pw").write_text(password)
    if drop:
        os.chown(folder, drop["user"], drop["group"])
        os.chown(folder / "pw", drop["user"], drop["group"])
    subprocess.run(
        [str(PG_BIN / "initdb"), "-D", str(data), "-U", user, f"--pwfile={folder / 'pw'}",
         "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C"],
        check=True, capture_output=True, timeout=120, **drop,
    )  # fmt: skip
    port = free_port()
    log = log or folder / "postgres.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        popen = subprocess.Popen(
            [str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port), "-c", "listen_addresses=127.0.0.1",
             "-c", f"unix_socket_directories={folder}", "-c", "fsync=off"],
            env={"PATH": os.environ["PATH"], "LANG": "C"},
            cwd=folder, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, **drop,
        )  # fmt: skip
    server = Postgres(popen, folder, port, user, password, log)
    import psycopg2

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            psycopg2.connect(
                host="127.0.0.1", port=port, user=user, password=password, dbname="postgres"
            ).close()
            return server
        except psycopg2.OperationalError:
            if popen.poll() is not None:
                server.stop()
                raise AssertionError(
                    f"postgres exited {popen.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
                ) from None
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.3)
