"""The servers of the lake mode for benches and tests: PostgreSQL (the Iceberg catalog) and RadosGW.

    with lake_servers(work) as env:   # env: the settings, also set in os.environ meanwhile
        ...                           # athanor run / athanor ingest in ATHANOR_WAREHOUSE_MODE=lake

PostgreSQL 15 starts on a free 127.0.0.1 port (tests/support/postgres.py); Ceph RadosGW is
the one the tests use (tests/support/rgw.py: reused if running, else started and stopped
here). Each call gets a bucket and a catalog database of its own, so runs never share tables.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.postgres import start_postgres  # noqa: E402
from tests.support.rgw import RgwEndpoint, start_rgw, stop_rgw  # noqa: E402


def lake_env(catalog_dsn: str, rgw: RgwEndpoint, bucket: str) -> dict[str, str]:
    """The settings that put the fact tables in `bucket` with the catalog at `catalog_dsn`."""
    return {
        "ATHANOR_WAREHOUSE_MODE": "lake",
        "ATHANOR_LAKE_CATALOG_URI": f"postgresql+psycopg2://{catalog_dsn}",
        "ATHANOR_LAKE_WAREHOUSE": f"s3://{bucket}/warehouse",
        "ATHANOR_S3_ENDPOINT_URL": rgw.url,
        "AWS_ACCESS_KEY_ID": rgw.access_key,
        "AWS_SECRET_ACCESS_KEY": rgw.secret_key,
        "AWS_REGION": "us-east-1",
        # pyarrow 26's AWS SDK streams a checksum with every upload by default, which Debian's
        # RadosGW (Ceph 16) answers with HTTP 411 MissingContentLength: checksums only where
        # S3 requires them. Read by the SDK at its start, so set before the first S3 call.
        "AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED",
        "AWS_RESPONSE_CHECKSUM_VALIDATION": "WHEN_REQUIRED",
    }


@contextlib.contextmanager
def lake_servers(work: Path | None = None) -> Iterator[dict[str, str]]:
    """Start the catalog database and the bucket; yield (and set in os.environ) the lake settings."""
    rgw = start_rgw()
    server = start_postgres(log=Path(work) / "postgres.log" if work else None)
    saved = dict(os.environ)
    try:
        name = "lake_" + secrets.token_hex(4)
        server.create_database(name)
        bucket = "athanor-" + name.replace("_", "-")
        rgw.client().create_bucket(Bucket=bucket)
        env = lake_env(server.dsn(name), rgw, bucket)
        os.environ.update(env)
        yield env
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()
        if rgw.started_here:
            stop_rgw(rgw)
