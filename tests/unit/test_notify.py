"""The failure callback posts the reason to a webhook (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import SimpleNamespace

from athanor.notify import failure_message, notify_failure


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


def test_webhook_receives_the_reason() -> None:
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
        url = f"http://127.0.0.1:{server.server_port}/hook"
        notify_failure({"run_id": "r1", "exception": "boom"}, webhook=url)
        thread.join(timeout=10)
    finally:
        server.server_close()
    assert received == [{"text": "Athanor: ?.? failed in run r1: boom"}]


def test_unreachable_webhook_does_not_raise() -> None:
    # Port 9 (discard) on loopback is closed here: the alert fails, the callback must not.
    message = notify_failure(
        {"run_id": "r2", "exception": "boom"}, webhook="http://127.0.0.1:9/", timeout_s=2
    )
    assert message.endswith("boom")
