"""The unit tier's guard (tests/conftest.py): loopback only, no name lookups, no apt."""

from __future__ import annotations

import socket
import subprocess

import pytest

Refused = pytest.fail.Exception


def test_loopback_connections_are_allowed() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("localhost", port), timeout=5):
            pass
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass


def test_a_connection_beyond_loopback_fails_the_test() -> None:
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): nothing would answer anyway.
    with pytest.raises(Refused, match=r"must not connect to \('192\.0\.2\.1', 443\)"):
        socket.create_connection(("192.0.2.1", 443), timeout=0.1)


def test_even_code_that_tolerates_network_errors_cannot_hide_it() -> None:
    with pytest.raises(Refused):
        try:
            socket.create_connection(("192.0.2.1", 443), timeout=0.1)
        except Exception:  # what a retrying client would do
            pass


def test_a_name_lookup_fails_the_test() -> None:
    with pytest.raises(Refused, match="look up the name 'example.com'"):
        socket.getaddrinfo("example.com", 443)


@pytest.mark.parametrize(
    ("argv", "shell"),
    [
        (["apt-get", "install", "-y", "x"], False),
        (["sudo", "apt", "update"], False),
        ("apt-get update", True),
    ],
)
def test_apt_fails_the_test(argv: list[str] | str, shell: bool) -> None:
    with pytest.raises(Refused, match="system-deps.sh"):
        subprocess.run(argv, shell=shell, capture_output=True)


def test_other_commands_run() -> None:
    assert subprocess.run(["true"]).returncode == 0


@pytest.fixture(scope="module")
def lookup_in_a_module_fixture() -> str:
    with pytest.raises(Refused) as refused:
        socket.getaddrinfo("example.com", 443)
    return str(refused.value)


def test_module_scoped_fixtures_are_guarded_too(lookup_in_a_module_fixture: str) -> None:
    assert "look up the name 'example.com'" in lookup_in_a_module_fixture
