"""A local Dask distributed cluster on 127.0.0.1 for tests and benches, started and stopped by PID.

    cluster = start_dask_cluster(workers=2, log_dir=tmp_path)
    try:
        client = cluster.client()
        ...
    finally:
        cluster.stop()

One `dask scheduler` on a free port and N `dask worker` processes without a nanny (one
process each, so the PID we hold is the process that runs the tasks), each in a session of its
own. Workers inherit this process's environment: the lake's settings and the AWS credentials
reach them the way an instance role or a pod's environment would on real machines. Safety nets
should the test process itself be killed: the workers exit when their scheduler is gone
(`--death-timeout`), the scheduler when no client has used it for a while (`--idle-timeout`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.airflow_server import free_port


@dataclass
class DaskCluster:
    address: str  # tcp://127.0.0.1:port of the scheduler
    scheduler: subprocess.Popen
    workers: list[subprocess.Popen]
    folder: Path  # the workers' local directories and the logs; removed by stop()
    started_s: float = 0.0  # from the scheduler's start to the last worker registered
    _clients: list[Any] = field(default_factory=list)

    def client(self) -> Any:
        """A distributed.Client of this cluster (closed by stop())."""
        from distributed import Client

        client = Client(self.address, timeout=30)
        self._clients.append(client)
        return client

    def logs(self) -> str:
        """The tail of every process's log, for an assertion message."""
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}"
            for path in sorted(self.folder.glob("*.log"))
        )

    def stop(self, timeout_s: float = 20) -> None:
        """Stop the workers, then the scheduler, each by its PID (SIGTERM, then SIGKILL)."""
        for client in self._clients:
            try:
                client.close(timeout=5)
            except Exception:  # noqa: BLE001 - the cluster goes anyway
                pass
        for proc in [*self.workers, self.scheduler]:
            _stop(proc, timeout_s)
        shutil.rmtree(self.folder, ignore_errors=True)


def _stop(proc: subprocess.Popen, timeout_s: float) -> None:
    if proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout_s)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "dask", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def start_dask_cluster(
    workers: int = 2,
    *,
    threads: int = 1,
    memory_limit: str = "1GiB",
    idle_timeout_s: int = 900,
    timeout_s: float = 90,
    env: dict[str, str] | None = None,
) -> DaskCluster:
    """A scheduler and `workers` workers of `threads` threads on 127.0.0.1; returns once all registered."""
    folder = Path(tempfile.mkdtemp(prefix="athanor-dask-"))
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    environment = {**os.environ, **(env or {})}
    # The workers' tasks import athanor: the repository root on the path, as in the tests.
    root = str(Path(__file__).resolve().parents[2])
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (root, environment.get("PYTHONPATH")) if p)
    started = time.monotonic()
    scheduler = _spawn(
        ["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard",
         "--idle-timeout", f"{idle_timeout_s}s"],
        folder / "scheduler.log", environment,
    )  # fmt: skip
    cluster = DaskCluster(address, scheduler, [], folder)
    try:
        for n in range(workers):
            cluster.workers.append(
                _spawn(
                    [
                        "worker",
                        address,
                        "--no-nanny",
                        "--host",
                        "127.0.0.1",
                        "--nthreads",
                        str(threads),
                        "--memory-limit",
                        memory_limit,
                        "--name",
                        f"worker-{n}",
                        "--no-dashboard",
                        "--local-directory",
                        str(folder / f"worker-{n}"),
                        "--death-timeout",
                        "60s",
                    ],
                    folder / f"worker-{n}.log",
                    environment,
                )  # fmt: skip
            )
        _wait_for_workers(cluster, workers, started + timeout_s)
    except BaseException:
        logs = cluster.logs()
        cluster.stop()
        raise RuntimeError(f"the Dask cluster did not come up:\n{logs}") from None
    cluster.started_s = time.monotonic() - started
    return cluster


def _wait_for_workers(cluster: DaskCluster, n: int, deadline: float) -> None:
    from distributed import Client

    while True:
        for proc in [cluster.scheduler, *cluster.workers]:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[3]} exited {proc.returncode}")
        try:
            with Client(cluster.address, timeout=5) as client:
                client.wait_for_workers(n, timeout=max(1.0, deadline - time.monotonic()))
                return
        except (OSError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
