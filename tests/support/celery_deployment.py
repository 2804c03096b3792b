"""docker-compose.yaml's deployment on real servers on 127.0.0.1, for tests and benches.

No Docker engine runs here, so the harness starts what the compose file's services run, from
Debian's packages and the project's venv: PostgreSQL 15 (the metadata database; `initdb` and
`postgres` as an unprivileged user, since PostgreSQL refuses root), Redis (the Celery broker),
then the Airflow services, each with the command its compose service runs (`api-server`,
`scheduler`, `dag-processor`, `triggerer`, `celery worker`) and the init job's `airflow`
commands (migrate, admin user, writer pool), read from the compose file. Airflow's settings
come from `airflow.env`, the file the compose services read; the harness adds only what
compose sets from its service names and `.env`: addresses, secrets, the executor
(`ADDRESS_KEYS`, checked against the compose file by tests/unit/test_celery_env.py).

Every process is started in a session of its own and stopped by PID (and its children by
PID), PostgreSQL last; `kill_worker` SIGKILLs one Celery worker's whole process tree.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from base64 import urlsafe_b64encode
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import yaml

from athanor.settings import PROJECT_ROOT
from tests.support.airflow_server import AirflowServer, _alive, _signal, free_port
from tests.support.postgres import start_postgres

COMPOSE = PROJECT_ROOT / "docker-compose.yaml"
AIRFLOW_ENV = PROJECT_ROOT / "airflow.env"
# What docker-compose.yaml's airflow services set besides airflow.env: addresses (service
# names there, 127.0.0.1 ports here), secrets (.env there, generated here) and the executor.
ADDRESS_KEYS = frozenset(
    {
        "AIRFLOW__CORE__EXECUTOR",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
        "AIRFLOW__CELERY__RESULT_BACKEND",
        "AIRFLOW__CELERY__BROKER_URL",
        "AIRFLOW__CORE__FERNET_KEY",
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
        "ATHANOR_HOME",
        "ATHANOR_LANDING",
        "ATHANOR_LANDING_CONN_ID",
        "ATHANOR_REPORT_BUCKET",
    }
)
SERVICES = ("airflow-apiserver", "airflow-dag-processor", "airflow-scheduler", "airflow-triggerer")
WORKER_SERVICE = "airflow-worker"
ADMIN = "admin"


def read_env_file(path: Path = AIRFLOW_ENV) -> dict[str, str]:
    """KEY=value lines as compose reads an env_file: no quoting, no interpolation, # comments."""
    out: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key):
            raise ValueError(f"{path.name}:{number}: not a KEY=value line: {line!r}")
        out[key] = value
    return out


def compose_services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def init_commands() -> list[str]:
    """The `airflow ...` lines of compose's airflow-init job, `$$` unescaped as compose does."""
    script = compose_services()["airflow-init"]["command"][-1]
    return [
        line.strip().replace("$$", "$") for line in script.splitlines() if line.strip().startswith("airflow ")
    ]


def service_command(service: str) -> list[str]:
    """The command a compose service runs (the image's entrypoint prefixes `airflow`)."""
    return ["airflow", *str(compose_services()[service]["command"]).split()]


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def tree(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.popen.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []


@dataclass
class CeleryDeployment:
    """The servers and Airflow services of one deployment; `api` drives it over REST."""

    root: Path  # AIRFLOW_HOME and the server folders
    athanor_home: Path
    executor: str = "CeleryExecutor"
    env: dict[str, str] = field(default_factory=dict)
    procs: dict[str, Proc] = field(default_factory=dict)
    api: AirflowServer | None = None
    pg_dir: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)

    # ---------------------------------------------------------------- servers

    def start_postgres(self) -> str:
        """PostgreSQL on a free 127.0.0.1 port (tests/support/postgres.py), database airflow; returns it."""
        server = start_postgres(user="airflow", log=self.root / "logs-services" / "postgres.log")
        self.pg_dir = server.folder  # stop() removes it
        self.procs["postgres"] = Proc("postgres", server.popen, server.log)
        server.create_database("airflow")
        return server.dsn("airflow")

    def start_redis(self) -> str:
        assert shutil.which("redis-server"), "redis-server is not installed: run scripts/system-deps.sh"
        port = free_port()
        folder = self.root / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        self._spawn(
            "redis",
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--dir", str(folder)],
            env={"PATH": os.environ["PATH"]},
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while (
            subprocess.run(
                ["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True
            ).stdout.strip()
            != "PONG"
        ):
            self._alive("redis")
            if time.monotonic() > deadline:
                raise AssertionError(f"redis did not answer on {port}")
            time.sleep(0.2)
        return f"redis://127.0.0.1:{port}/0"

    # ---------------------------------------------------------------- airflow

    def configure(self, database: str, broker: str, api_port: int) -> dict[str, str]:
        """airflow.env plus this machine's addresses: the environment of every Airflow process."""
        url = f"http://127.0.0.1:{api_port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ATHANOR_"))}
        env.update(read_env_file())
        addresses = {
            "AIRFLOW__CORE__EXECUTOR": self.executor,
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg2://{database}",
            # The driver named, as for the metadata DB: SQLAlchemy 2.1's default is psycopg 3.
            "AIRFLOW__CELERY__RESULT_BACKEND": f"db+postgresql+psycopg2://{database}",
            "AIRFLOW__CELERY__BROKER_URL": broker,
            "AIRFLOW__CORE__FERNET_KEY": urlsafe_b64encode(secrets.token_bytes(32)).decode(),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(48),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
            "ATHANOR_HOME": str(self.athanor_home),
            "ATHANOR_LANDING": str(self.athanor_home / "landing"),
            "ATHANOR_LANDING_CONN_ID": "aws_default",
            "ATHANOR_REPORT_BUCKET": "",
        }
        assert set(addresses) == ADDRESS_KEYS
        env.update(addresses)
        # Where the image puts things (/opt/airflow/...), and the ports compose maps or keeps
        # inside each container, which share one host here.
        env.update(
            {
                "PATH": f"{PROJECT_ROOT / '.venv' / 'bin'}:{env.get('PATH', '')}",
                "AIRFLOW_HOME": str(self.root),
                "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_ROOT / "dags"),
                "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT_ROOT / "plugins"),
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(api_port),
                "AIRFLOW__API__BASE_URL": url,
                "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(free_port()),
                "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                "_AIRFLOW_WWW_USER_USERNAME": ADMIN,
                # Leading "-" on purpose: compose's init must pass it as a value, not an option
                # (token_urlsafe alone starts with one in about 1.5 % of runs).
                "_AIRFLOW_WWW_USER_PASSWORD": "-" + secrets.token_urlsafe(16),
            }
        )
        self.env = env
        return env

    def start(self, workers: int = 2) -> CeleryDeployment:
        """Servers, the init job's commands, the services, `workers` Celery workers; then log in."""
        t0 = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            database = self.start_postgres()
            broker = self.start_redis() if self.executor == "CeleryExecutor" else "redis://127.0.0.1:1/0"
            self.timings["servers_s"] = time.monotonic() - t0
            api_port = free_port()
            env = self.configure(database, broker, api_port)
            t1 = time.monotonic()
            for command in init_commands():
                done = subprocess.run(
                    ["bash", "-c", command],
                    env=env,
                    cwd=self.root,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                if done.returncode != 0:
                    raise AssertionError(
                        f"{command}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
                    )
            self.timings["init_s"] = time.monotonic() - t1
            t2 = time.monotonic()
            for service in SERVICES:
                self._spawn(service, service_command(service), env=env, cwd=self.root)
            if self.executor == "CeleryExecutor":
                for number in range(1, workers + 1):
                    self.add_worker(f"worker{number}")
            self.api = AirflowServer(
                url=f"http://127.0.0.1:{api_port}",
                home=self.root,
                process=self.procs["airflow-apiserver"].popen,
                log_path=self.procs["airflow-apiserver"].log,
                env=env,
                client=httpx.Client(timeout=30),
            )
            self._wait_healthy(deadline=time.monotonic() + 240)
            for name in self.workers():
                self.wait_worker_ready(name, deadline=time.monotonic() + 120)
            self.api.token = self._token(deadline=time.monotonic() + 60)
            self.timings["services_healthy_s"] = time.monotonic() - t2
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, name: str) -> Proc:
        """`celery worker` (compose's airflow-worker) named `name`, its log server on a port of its own."""
        env = {**self.env, "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port())}
        command = [*service_command(WORKER_SERVICE), "--celery-hostname", f"{name}@%h"]
        return self._spawn(name, command, env=env, cwd=self.root)

    def wait_worker_ready(self, name: str, deadline: float) -> None:
        """Until Celery says the worker consumes its queue ("<name>@<host> ready.")."""
        while not re.search(rf"{name}@\S+ ready\.", self.log_tail(name, 200_000)):
            self._alive(name)
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} not ready in time:\n{self.log_tail(name)}")
            time.sleep(0.5)

    def workers(self) -> dict[str, Proc]:
        return {name: p for name, p in self.procs.items() if name.startswith("worker")}

    def worker_of(self, pid: int) -> str | None:
        """The worker whose process tree holds `pid` (a task's process), if any."""
        for name, proc in self.workers().items():
            if pid in {p.pid for p in proc.tree()}:
                return name
        return None

    def kill_worker(self, name: str) -> list[int]:
        """SIGKILL worker `name` and every process under it, as a lost machine; returns the PIDs."""
        members = self.procs[name].tree()
        for p in members:
            _signal(p, signal.SIGKILL)
        psutil.wait_procs(members, timeout=10)
        self.procs[name].popen.wait(timeout=10)
        return [p.pid for p in members]

    # ---------------------------------------------------------------- lifecycle

    def _spawn(
        self, name: str, argv: list[str], *, env: dict[str, str], cwd: Path | None = None, **kwargs: Any
    ) -> Proc:
        log = self.root / "logs-services" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            popen = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd or self.root,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **kwargs,
            )
        self.procs[name] = proc = Proc(name, popen, log)
        return proc

    def _alive(self, name: str) -> None:
        proc = self.procs[name]
        if proc.popen.poll() is not None:
            raise AssertionError(f"{name} exited {proc.popen.returncode}:\n{self.log_tail(name)}")

    def log_tail(self, name: str, chars: int = 3000) -> str:
        log = self.procs[name].log
        return log.read_text(errors="replace")[-chars:] if log.exists() else ""

    def _wait_healthy(self, deadline: float) -> None:
        assert self.api is not None
        while time.monotonic() < deadline:
            for name in self.procs:
                if name not in self.workers():
                    self._alive(name)
            try:
                response = self.api.client.get(f"{self.api.url}/api/v2/monitor/health", timeout=5)
                body = response.json() if response.status_code == 200 else {}
                if body.get("metadatabase", {}).get("status") == "healthy" and (
                    body.get("scheduler", {}).get("status") == "healthy"
                ):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"the api-server was not healthy in time:\n{self.log_tail('airflow-apiserver')}")

    def _token(self, deadline: float) -> str:
        assert self.api is not None
        body = {"username": ADMIN, "password": self.env["_AIRFLOW_WWW_USER_PASSWORD"]}
        while True:
            response = self.api.client.post(f"{self.api.url}/auth/token", json=body)
            if response.status_code in (200, 201):
                return str(response.json()["access_token"])
            if time.monotonic() > deadline:
                raise AssertionError(f"POST /auth/token: HTTP {response.status_code}: {response.text[:500]}")
            time.sleep(1)

    def processes(self) -> list[psutil.Process]:
        """Every live process of this deployment (and any task process left with its AIRFLOW_HOME)."""
        found = {p.pid: p for proc in self.procs.values() for p in proc.tree()}
        for p in psutil.process_iter():
            try:
                if p.pid not in found and p.environ().get("AIRFLOW_HOME") == str(self.root):
                    found[p.pid] = p
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return [p for p in found.values() if _alive(p)]

    def stop(self, grace_s: float = 20) -> list[psutil.Process]:
        """Stop the Airflow processes, then Redis, then PostgreSQL, by PID; returns survivors."""
        if self.api is not None:
            self.api.client.close()
        servers = [self.procs[n] for n in ("redis", "postgres") if n in self.procs]
        airflow = [p for p in self.processes() if p.pid not in {q.pid for s in servers for q in s.tree()}]
        for p in airflow:
            _signal(p, signal.SIGTERM)
        _, alive = psutil.wait_procs(airflow, timeout=grace_s)
        for p in alive:
            _signal(p, signal.SIGKILL)
        psutil.wait_procs(alive, timeout=10)
        for server in servers:  # postgres: SIGINT is its fast shutdown
            _signal_pid(server.popen.pid, signal.SIGINT if server.name == "postgres" else signal.SIGTERM)
            try:
                server.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                for p in server.tree():
                    _signal(p, signal.SIGKILL)
                server.popen.wait(timeout=10)
        for proc in self.procs.values():
            if proc.popen.poll() is None:
                proc.popen.wait(timeout=10)
        if self.pg_dir is not None:
            shutil.rmtree(self.pg_dir, ignore_errors=True)
        return self.processes()


def _signal_pid(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
