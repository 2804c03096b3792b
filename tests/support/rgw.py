"""A real S3 server for tests: single-node Ceph RadosGW started by scripts/ceph-rgw.sh.

`rgw_endpoint` is a session-scoped pytest fixture: import it into tests/conftest.py. It starts
the cluster under `<repo>/.cache/rgw` (gitignored; the first run downloads ~80 MB of Debian
packages), yields an `RgwEndpoint`, and stops the daemons by their recorded PIDs at the end
(only if this session started them). Port: env RGW_PORT (default 7480); the monitor's port:
env CEPH_MON_PORT (default 6789).

Under pytest-xdist each worker runs a cluster of its own, in `.cache/rgw/workers/<worker>` on
ports the kernel picks, from the packages unpacked once in `.cache/rgw`: the modules on RadosGW
then spread over the workers like any other module (a cluster starts in 10-25 s).
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.airflow_server import free_port

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "ceph-rgw.sh"
DEFAULT_BASE = REPO / ".cache" / "rgw"


@dataclass(frozen=True)
class RgwEndpoint:
    url: str
    access_key: str
    secret_key: str
    base_dir: Path
    started_here: bool
    packages_dir: Path  # where the unpacked root/ is (base_dir unless shared)

    def client(self) -> Any:
        """A boto3 S3 client for this endpoint (path-style addressing, as RGW on an IP needs)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
        )

    def admin(self, *args: str, timeout_s: float = 60) -> str:
        """Run radosgw-admin from the unpacked packages against this cluster; returns stdout."""
        root = self.packages_dir / "root"
        env = {
            **os.environ,
            "LD_LIBRARY_PATH": ":".join(
                str(root / p)
                for p in ("usr/lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu/ceph", "lib/x86_64-linux-gnu")
            ),
            "PYTHONPATH": str(root / "usr/lib/python3/dist-packages"),
            "CEPH_CONF": str(self.base_dir / "cluster" / "ceph.conf"),
        }
        out = subprocess.run(
            [str(root / "usr/bin/radosgw-admin"), *args],
            env=env,
            cwd=self.base_dir / "cluster",
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=True,
        )
        return out.stdout


def _parse(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if line.startswith("RGW_") and "=" in line)


def start_rgw(
    base_dir: Path = DEFAULT_BASE, timeout_s: float = 600, env: dict[str, str] | None = None
) -> RgwEndpoint:
    """Start (or reuse) the cluster; raise with the script's output if it does not come up.

    `env`: the script's settings (ports, the shared packages' folder) on top of this process's."""
    base_dir.mkdir(parents=True, exist_ok=True)
    script_env = {**os.environ, **(env or {})}

    def script(command: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(SCRIPT), command, str(base_dir)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=script_env,
        )

    already = script("status", 60).returncode == 0
    proc = script("up", timeout_s)
    if proc.returncode != 0:
        script("down", 120)
        raise RuntimeError(
            f"ceph-rgw.sh up failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    info = _parse(proc.stdout)
    return RgwEndpoint(
        url=info["RGW_ENDPOINT"],
        access_key=info["RGW_ACCESS_KEY"],
        secret_key=info["RGW_SECRET_KEY"],
        base_dir=base_dir,
        started_here=not already,
        packages_dir=Path(script_env.get("RGW_PACKAGES", base_dir)),
    )


def stop_rgw(endpoint: RgwEndpoint) -> None:
    # By the PIDs recorded in its folder: the ports do not matter to `down`.
    subprocess.run(
        ["bash", str(SCRIPT), "down", str(endpoint.base_dir)], capture_output=True, text=True, timeout=120
    )


@functools.cache
def _this_workers_cluster() -> tuple[Path, dict[str, str]]:
    """Where this test process's cluster lives, and the script's settings for it: the same for
    every caller in the process, so that a second start finds the cluster running on its ports
    instead of taking new ones and stopping it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return DEFAULT_BASE, {}
    ports = {"RGW_PORT": str(free_port()), "CEPH_MON_PORT": str(free_port())}
    return DEFAULT_BASE / "workers" / worker, {**ports, "RGW_PACKAGES": str(DEFAULT_BASE)}


@pytest.fixture(scope="session")
def rgw_endpoint() -> Iterator[RgwEndpoint]:
    """A running RadosGW for the whole test session (stopped at the end if started here)."""
    base_dir, env = _this_workers_cluster()
    try:
        endpoint = start_rgw(base_dir, env=env)
    except RuntimeError as first:
        if not env:
            raise
        # The worker's ports were free when picked, then released for the daemons to bind: another
        # worker's cluster can take one in between. Once more, on ports picked again.
        print(f"RadosGW did not start on {env}; trying new ports. {first}")
        _this_workers_cluster.cache_clear()
        base_dir, env = _this_workers_cluster()
        endpoint = start_rgw(base_dir, env=env)
    try:
        yield endpoint
    finally:
        if endpoint.started_here:
            stop_rgw(endpoint)
