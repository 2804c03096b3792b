"""Fixtures of the lake-mode integration tests: a PostgreSQL catalog server per module, and per
test a catalog database and a bucket of its own on the session's RadosGW (tests/support/rgw.py)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from bench.lake_servers import lake_env
from tests.support.postgres import Postgres, start_postgres
from tests.support.rgw import RgwEndpoint


@pytest.fixture(scope="module")
def catalog_server() -> Iterator[Postgres]:
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def lake_settings(
    catalog_server: Postgres, rgw_endpoint: RgwEndpoint, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The lake mode's settings in os.environ, with a catalog database and a bucket of their own."""
    name = "lake_" + secrets.token_hex(4)
    catalog_server.create_database(name)
    bucket = "athanor-" + name.replace("_", "-")
    rgw_endpoint.client().create_bucket(Bucket=bucket)
    env = lake_env(catalog_server.dsn(name), rgw_endpoint, bucket)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env
