"""The failure notifier posts the reason to a webhook (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import SimpleNamespace

import pytest
from airflow.sdk import BaseNotifier

from athanor.notify import failure_message, notify_failure
from athanor_common import DEFAULT_ARGS, FailureNotifier


def test_message_names_task_run_and_reason() -> None:
    context = {
        "ti": SimpleNamespace(dag_id="athanor_ingest", task_id="load"),
        "run_id": "scheduled__2026-11-30",
        "exception": ValueError("bad.csv row 3, column BilledCost: not a decimal number"),
    }
    assert failure_message(context) == (
        "Athanor: athanor_ingest.load failed in run scheduled__2026-11-30: "
        "bad.csv row 3, column BilledCost: not a decimal number"
    )


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict]]]:
    """A one-request HTTP server on loopback: its URL, and the JSON bodies it received."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.handle_request)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hook", received
        thread.join(timeout=10)
    finally:
        server.server_close()


def test_webhook_receives_the_reason(webhook) -> None:
    url, received = webhook
    notify_failure({"run_id": "r1", "exception": "boom"}, webhook=url)
    assert received == [{"text": "Athanor: ?.? failed in run r1: boom"}]


def test_unreachable_webhook_does_not_raise_nor_log_its_url(caplog: pytest.LogCaptureFixture) -> None:
    # Port 9 (discard) on loopback is closed here: the alert fails, the callback must not.
    url = "http://127.0.0.1:9/services/T000/secret-token"
    with caplog.at_level(logging.WARNING, logger="athanor.notify"):
        message = notify_failure({"run_id": "r2", "exception": "boom"}, webhook=url, timeout_s=2)
    assert message.endswith("boom")
    assert "could not send the failure alert" in caplog.text
    assert "secret-token" not in caplog.text


def test_without_a_webhook_the_reason_is_only_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="athanor.notify"):
        message = notify_failure({"run_id": "r3", "exception": "boom"}, webhook=None)
    assert message == "Athanor: ?.? failed in run r3: boom"
    assert [r.getMessage() for r in caplog.records] == [message]


def test_the_dags_fail_through_the_airflow_notifier() -> None:
    assert isinstance(DEFAULT_ARGS["on_failure_callback"], FailureNotifier)
    assert isinstance(DEFAULT_ARGS["on_failure_callback"], BaseNotifier)


def test_notifier_reads_the_webhook_from_the_settings(webhook, monkeypatch: pytest.MonkeyPatch) -> None:
    url, received = webhook
    monkeypatch.setenv("ATHANOR_ALERT_WEBHOOK", url)
    context = {
        "ti": SimpleNamespace(dag_id="athanor_optimize", task_id="publish"),
        "run_id": "asset_triggered__2026-11-30",
        "exception": OSError("No space left on device"),
    }
    # Called the way Airflow calls an on_failure_callback: with the task's context.
    FailureNotifier()(context)
    assert received == [
        {
            "text": "Athanor: athanor_optimize.publish failed in run asset_triggered__2026-11-30: "
            "No space left on device"
        }
    ]
