"""A real `airflow standalone` for tests: started on 127.0.0.1, driven over its REST API, stopped by PID.

`start_airflow(home, env)` runs the api-server, scheduler, dag-processor and triggerer (SQLite,
LocalExecutor) with AIRFLOW_HOME = `home` on a free port, waits for `/api/v2/monitor/health`,
reads the admin password standalone generates and gets a JWT. `AirflowServer.stop()` ends the
whole process tree: the standalone's process group, the task processes (the task supervisor
puts each task in a group of its own) and anything else still carrying this AIRFLOW_HOME.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

FINISHED = {"success", "failed"}


class AirflowRunFailed(AssertionError):
    """A DAG run ended 'failed' (or timed out); the message carries its task states and log tails."""


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class AirflowServer:
    url: str
    home: Path
    process: subprocess.Popen
    log_path: Path
    env: dict[str, str]  # what the server runs with: use it for CLI calls against the same deployment
    token: str = ""
    healthy_after_s: float = 0.0  # from Popen to the first 200 of the health endpoint
    stopped: bool = False
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    # ------------------------------------------------------------------ REST

    def request(self, method: str, path: str, *, expect: tuple[int, ...] = (200,), **kwargs: Any) -> Any:
        """Call the REST API as admin; raise with the response body unless the status is expected."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        response = self.client.request(method, self.url + path, headers=headers, **kwargs)
        if response.status_code not in expect:
            raise AssertionError(f"{method} {path}: HTTP {response.status_code}: {response.text[:2000]}")
        return (
            response.json()
            if response.content and "json" in response.headers.get("content-type", "")
            else response
        )

    def wait_for_dag(self, dag_id: str, timeout_s: float = 120) -> dict:
        """Wait until the dag-processor has parsed `dag_id` and the scheduler knows its next slot."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            response = self.client.get(
                f"{self.url}/api/v2/dags/{dag_id}", headers={"Authorization": f"Bearer {self.token}"}
            )
            if response.status_code == 200:
                return response.json()
            self.assert_alive()
            time.sleep(1)
        raise AssertionError(f"{dag_id} not parsed within {timeout_s:.0f} s; log tail:\n{self.log_tail()}")

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self.request("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": paused})

    def trigger(self, dag_id: str, conf: dict, logical_date: str | None) -> str:
        """Trigger a run the way the UI's form does (a logical date and the params as conf); returns its id."""
        body = self.request(
            "POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": logical_date, "conf": conf}
        )
        return str(body["dag_run_id"])

    def runs(self, dag_id: str) -> list[dict]:
        return list(self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100})["dag_runs"])

    def wait_for_run(self, dag_id: str, run_id: str, timeout_s: float) -> dict:
        """Poll the run until it succeeds; fail at once (with task states and logs) if it fails."""
        deadline = time.monotonic() + timeout_s
        while True:
            run = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
            if run["state"] == "success":
                return run
            if run["state"] == "failed" or time.monotonic() > deadline:
                raise AirflowRunFailed(
                    f"{dag_id} {run_id} ended {run['state']!r}\n{self.describe_run(dag_id, run_id)}"
                )
            self.assert_alive()
            time.sleep(1)

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        body = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
        return {ti["task_id"]: ti["state"] for ti in body["task_instances"]}

    def describe_run(self, dag_id: str, run_id: str) -> str:
        """Task states plus the tail of every task log of the run, for a failure message."""
        lines = [f"task states: {self.task_states(dag_id, run_id)}"]
        run_dir = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
        for log in sorted(run_dir.rglob("*.log")) if run_dir.is_dir() else []:
            lines.append(f"--- {log.relative_to(run_dir)}\n{log.read_text(errors='replace')[-3000:]}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ process

    def assert_alive(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(f"airflow standalone exited {self.process.returncode}:\n{self.log_tail()}")

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def processes(self) -> list[psutil.Process]:
        """Every live process of this deployment: the standalone's tree plus anything with our AIRFLOW_HOME."""
        found: dict[int, psutil.Process] = {}
        try:
            root = psutil.Process(self.process.pid)
            found[root.pid] = root
            found.update((p.pid, p) for p in root.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
        # A task process re-parented to init after its supervisor died is no longer in the tree.
        for p in psutil.process_iter():
            try:
                if p.pid not in found and p.environ().get("AIRFLOW_HOME") == str(self.home):
                    found[p.pid] = p
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return [p for p in found.values() if _alive(p)]

    def stop(self, grace_s: float = 20) -> list[psutil.Process]:
        """Stop every process of this deployment by PID; returns the survivors (none, normally)."""
        if self.stopped:  # the group's PID may belong to someone else by now
            return self.processes()
        self.stopped = True
        self.client.close()
        members = self.processes()
        pgid = self.process.pid  # start_new_session: the standalone leads its own group
        _signal_group(pgid, signal.SIGTERM)
        for p in members:
            _signal(p, signal.SIGTERM)
        _, alive = psutil.wait_procs(members, timeout=grace_s)
        _signal_group(pgid, signal.SIGKILL)
        for p in alive:
            _signal(p, signal.SIGKILL)
        psutil.wait_procs(alive, timeout=10)
        if self.process.poll() is None:
            self.process.wait(timeout=10)
        return self.processes()


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _signal(p: psutil.Process, sig: signal.Signals) -> None:
    try:
        p.send_signal(sig)
    except psutil.NoSuchProcess:
        pass


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def standalone_env(base: dict[str, str], port: int) -> dict[str, str]:
    """`base` (see tests.conftest.airflow_env) plus what a standalone on 127.0.0.1:`port` needs."""
    url = f"http://127.0.0.1:{port}"
    return {
        **base,
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": url,
        # Task workers call back into the api-server; the default assumes localhost:8080.
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        # What `make airflow` runs with (scripts/airflow-env.sh): task logs at INFO.
        "AIRFLOW__LOGGING__LOGGING_LEVEL": base.get("AIRFLOW__LOGGING__LOGGING_LEVEL", "INFO"),
        # The scheduler parses the dags folder every 30 s by default; new files show up sooner.
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
    }


def start_airflow(home: Path, env: dict[str, str], *, timeout_s: float = 150) -> AirflowServer:
    """Start `airflow standalone` with AIRFLOW_HOME=`home` and `env`; return once it answers as admin."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = standalone_env({**env, "AIRFLOW_HOME": str(home)}, port)
    log_path = home / "standalone.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            ["airflow", "standalone"],
            env=env,
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # one process group to stop, whatever the test does
        )
    server = AirflowServer(
        url=f"http://127.0.0.1:{port}", home=home, process=process, log_path=log_path, env=env
    )
    try:
        _wait_healthy(server, started + timeout_s)
        server.healthy_after_s = time.monotonic() - started
        server.token = _token(server, started + timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_healthy(server: AirflowServer, deadline: float) -> None:
    while time.monotonic() < deadline:
        server.assert_alive()
        try:
            response = server.client.get(f"{server.url}/api/v2/monitor/health", timeout=5)
            if response.status_code == 200 and response.json()["metadatabase"]["status"] == "healthy":
                return
        except httpx.HTTPError:
            pass  # not listening yet
        time.sleep(0.5)
    raise AssertionError(f"airflow standalone not healthy in time; log tail:\n{server.log_tail()}")


def _token(server: AirflowServer, deadline: float) -> str:
    """Log in as admin with the password standalone wrote to its AIRFLOW_HOME."""
    passwords = server.home / "simple_auth_manager_passwords.json.generated"
    while not passwords.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    password = json.loads(passwords.read_text())["admin"]
    response = server.client.post(
        f"{server.url}/auth/token", json={"username": "admin", "password": password}
    )
    if response.status_code not in (200, 201):
        raise AssertionError(f"POST /auth/token: HTTP {response.status_code}: {response.text[:500]}")
    return str(response.json()["access_token"])
