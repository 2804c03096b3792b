"""The alert channel never costs the night: a webhook URL typed without its scheme, an endpoint
that answers something other than HTTP, one that trickles its answer, one that answers 3 GB.

Each alert that could not go out is counted in the spend watch's summary and sent again the
next night; the URL (and the token in it) is written nowhere.
"""

from __future__ import annotations

import json
import logging
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import duckdb
import pytest

from athanor import cli, notify
from tests.adversarial.conftest import GCP, JOBS

TOKEN = "xoxb-7c1f0e9a5d2b4c3e8f6a"
SCHEMELESS = f"hooks.example.invalid/services/T000/B000/{TOKEN}"


@contextmanager
def raw_endpoint(behave: Callable[[socket.socket], None]) -> Iterator[tuple[str, dict]]:
    """A TCP server on 127.0.0.1 for one connection: it reads the request's head, then `behave`
    answers as it likes. Yields the URL (its path holds TOKEN) and what happened."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: dict = {}

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(30)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            seen["request"] = request
            try:
                behave(conn)
            except OSError as exc:  # the client hung up: what it did not want to read
                seen["hung_up"] = type(exc).__name__

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/services/{TOKEN}", seen
        thread.join(timeout=60)
    finally:
        listener.close()


def test_the_webhook_setting_is_checked_without_quoting_it() -> None:
    refused = {
        SCHEMELESS: "is not a URL starting with https:// and a host",
        f"hooks.example.invalid:443/services/{TOKEN}": "is not a URL starting with https:// and a host",
        f"ftp://hooks.example.invalid/{TOKEN}": "is not a URL starting with https:// and a host",
        f"http://hooks.example.invalid/{TOKEN}": "uses http:// to another machine",
        f"https://hooks.example.invalid:port/{TOKEN}": "is not a valid URL",
        f" https://hooks.example.invalid/{TOKEN}": "holds spaces or control characters",
        f"https://hooks.example.invalid/{TOKEN}\n": "holds spaces or control characters",
    }
    for url, reason in refused.items():
        problem = notify.webhook_problem(url)
        assert problem is not None and problem.startswith(f"ATHANOR_ALERT_WEBHOOK {reason}"), url
        assert TOKEN not in problem and "example" not in problem
    for url in (
        f"https://hooks.example.invalid/services/{TOKEN}",
        f"https://hooks.example.invalid:8443/services/{TOKEN}?x=1",
        f"http://127.0.0.1:8080/{TOKEN}",
        f"http://localhost/{TOKEN}",
        f"http://[::1]:9000/{TOKEN}",
    ):
        assert notify.webhook_problem(url) is None, url


def test_an_endpoint_that_answers_no_http_is_a_failed_alert(caplog: pytest.LogCaptureFixture) -> None:
    def garbage(conn: socket.socket) -> None:
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\x00\xff\xfe garbage, not HTTP\r\n\r\n")

    with raw_endpoint(garbage) as (url, _), caplog.at_level(logging.WARNING, logger="athanor.notify"):
        assert notify.post_text(url, "budget alert") is False
    assert caplog.messages == [
        "could not send an alert to the webhook: BadStatusLine: SSH-2.0-OpenSSH_9.6\r\n"
    ]
    assert TOKEN not in caplog.text


@pytest.mark.slow
def test_a_trickling_endpoint_is_abandoned_within_the_total_deadline(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert notify.TOTAL_DEADLINE_S == 30.0  # what the module's documentation states
    # One byte every 0.5 s: each read is far inside the 10 s socket timeout, the whole is not.
    monkeypatch.setattr(notify, "TOTAL_DEADLINE_S", 2.0, raising=False)
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    def trickle(conn: socket.socket) -> None:
        for byte in answer:
            conn.sendall(bytes([byte]))
            time.sleep(0.5)

    with raw_endpoint(trickle) as (url, seen), caplog.at_level(logging.WARNING, logger="athanor.notify"):
        started = time.monotonic()
        delivered = notify.post_text(url, "budget alert")
        elapsed = time.monotonic() - started
    assert delivered is False
    assert 2.0 <= elapsed < 3.0, f"{elapsed:.1f} s"
    assert caplog.messages == [
        "could not send an alert to the webhook: no complete answer within 2 s (abandoned)"
    ]
    assert seen["hung_up"] in ("BrokenPipeError", "ConnectionResetError")


def test_a_huge_reply_is_not_read_whole() -> None:
    size = 256 << 20  # stated and sent: 256 MiB
    sent = {"bytes": 0}

    def flood(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        block = b"\0" * (1 << 20)
        for _ in range(size >> 20):
            conn.sendall(block)
            sent["bytes"] += len(block)

    with raw_endpoint(flood) as (url, seen):
        started = time.monotonic()
        assert notify.post_text(url, "budget alert") is True  # a 200: delivered
        elapsed = time.monotonic() - started
    # The client read its 64 KiB and hung up; the rest stopped in the kernel's socket buffers.
    assert seen["hung_up"] in ("BrokenPipeError", "ConnectionResetError")
    assert sent["bytes"] < 32 << 20, sent
    assert elapsed < 5


def _landing(home: Path) -> Path:
    landing = home / "landing"
    (landing / "gcp").mkdir(parents=True)
    (landing / "jobs").mkdir()
    shutil.copy(GCP, landing / "gcp")
    shutil.copy(JOBS, landing / "jobs")
    # A fleet budget of 1 (any currency's bill breaches it): one budget alert each night.
    (home / "budgets.yaml").write_text(
        "budgets:\n  - {name: fleet, scope: total, amount: 1, alert_actual_pct: [80]}\n"
    )
    return landing


def _text_holding(path: Path, needle: str) -> list[str]:
    """Every `table.column` of the DuckDB file whose text (any column cast to text) holds `needle`."""
    found = []
    with duckdb.connect(str(path), read_only=True) as con:
        tables = con.execute(
            "select database_name, schema_name, table_name from duckdb_tables() "
            "union all select database_name, schema_name, view_name from duckdb_views() where not internal"
        ).fetchall()
        for database, schema, table in tables:
            name = f'"{database}"."{schema}"."{table}"'
            columns = [r[0] for r in con.execute(f"describe {name}").fetchall()]
            for column in columns:
                hit = con.execute(
                    f'select count(*) from {name} where "{column}"::varchar ilike ?', [f"%{needle}%"]
                ).fetchone()[0]
                if hit:
                    found.append(f"{table}.{column}")
    return found


# Two whole nights: the slow tier (`make test`); the webhook check alone stays in the unit tier
# (test_the_webhook_setting_is_checked_without_quoting_it).
@pytest.mark.slow
def test_a_scheme_less_webhook_neither_fails_the_night_nor_is_stored(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    landing = _landing(home)
    monkeypatch.setenv("ATHANOR_ALERT_WEBHOOK", SCHEMELESS)
    assert cli.main(["run", "--source", str(landing)]) == 0
    warehouse = home / "warehouse" / "athanor.duckdb"
    snapshot = home / "warehouse" / "athanor-snapshot.duckdb"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        summary = json.loads(
            con.execute("select summary from pipeline_runs where stage = 'watch_spend'").fetchone()[0]
        )
        assert con.execute("select count(*) from spend_alerts").fetchone() == (0,)
        assert (
            con.execute("select stage, status from pipeline_runs where status <> 'success'").fetchall() == []
        )
    assert (summary["alerts_sent"], summary["alerts_failed"]) == (0, 1)
    assert summary["alerts_error"] == (
        "ATHANOR_ALERT_WEBHOOK is not a URL starting with https:// and a host (a scheme missing or mistyped?)"
    )
    # Not in any text of the warehouse, of the snapshot (its Parquet parts included), of any file.
    assert _text_holding(warehouse, TOKEN) == []
    assert _text_holding(snapshot, TOKEN) == []
    assert [p for p in home.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()] == []
    assert TOKEN not in "".join(capsys.readouterr())

    # The next night, with the URL put right, sends the alert that failed.
    posts: list[dict] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            posts.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("ATHANOR_ALERT_WEBHOOK", f"http://127.0.0.1:{server.server_port}/{TOKEN}")
        assert cli.main(["run", "--source", str(landing), "--run-id", "night-2"]) == 0
    finally:
        server.shutdown()
        server.server_close()
    # The fixture's bill: USD 34.22 in November 2023, 3422 % of the budget of 1.
    assert posts == [
        {
            "text": "Athanor budget alert: fleet (total:all) 2023-11: USD 34.22 spent so far, 3422% of "
            "the 1.00 budget (threshold 80% of actual)"
        }
    ]
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select kind, channel from spend_alerts").fetchall() == [("budget", "webhook")]
