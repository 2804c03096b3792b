"""The report in a real browser: headless Chromium over the DevTools protocol.

Builds a small warehouse by hand, renders the report, loads it from file:// with the
network off, fails on any console error or uncaught exception, checks the summary, every
chart and the sortable tables in the DOM, and saves test-artifacts/report-top.png.
Needs Debian's `chromium` (`apt-get install -y chromium`); the test installs it if missing.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect as ws_connect

from athanor.publish import build_report
from athanor.warehouse import connect
from tests.unit.test_report import AS_OF, XSS_TEAM, fill_small_warehouse

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
STARTUP_TIMEOUT_S = 20.0
LOAD_TIMEOUT_S = 20.0

CHART_IDS = (
    "chart-spend-pricing_category",
    "chart-spend-team",
    "chart-spend-instance_family",
    "chart-spend-service",
    "chart-commitments",
    "chart-backtest",
    "chart-durations-0",
    "chart-durations-1",
    "chart-durations-2",
    "chart-storage",
)
SECTION_IDS = (
    "summary",
    "summary-spend",
    "summary-actions",
    "summary-dq",
    "spend",
    "commitments",
    "mix",
    "durations",
    "storage",
    "quality",
)


def chromium_binary() -> str:
    """Debian's chromium, installed with apt-get when missing (CI machines start without it)."""
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found:
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, check=True)
        subprocess.run(install, env=env, capture_output=True, check=True)
    found = shutil.which("chromium")
    assert found, "chromium is not installed and apt-get could not install it"
    return found


class DevTools:
    """A minimal Chrome DevTools Protocol client: numbered calls, events kept for later."""

    def __init__(self, ws_url: str) -> None:
        # Held across calls and closed by close(), not a `with` block: websockets 17 asks for
        # legacy=True to say so (without it, a DeprecationWarning at the first send).
        self.ws = ws_connect(ws_url, max_size=64 * 1024 * 1024, open_timeout=10, legacy=True)
        self.events: list[dict[str, Any]] = []
        self._next_id = 0

    def call(self, method: str, timeout_s: float = LOAD_TIMEOUT_S, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        call_id = self._next_id
        self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout_s
        while True:
            message = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, timeout_s: float = LOAD_TIMEOUT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            message = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            self.events.append(message)
            if message.get("method") == method:
                return message

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(
                    "console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                )
            elif method == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append("log: " + params["entry"].get("text", ""))
        return out

    def close(self) -> None:
        self.ws.close()


@pytest.fixture
def browser() -> Iterator[DevTools]:
    binary = chromium_binary()
    profile = Path(tempfile.mkdtemp(prefix="athanor-chromium-"))
    proc = subprocess.Popen(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",  # Chromium picks a free port and writes it to DevToolsActivePort
            "--window-size=1280,1000",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its helper processes share our child's process group
    )
    client = None
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, f"chromium exited with {proc.returncode}"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            targets = json.load(response)
        page = next(t for t in targets if t["type"] == "page")
        client = DevTools(page["webSocketDebuggerUrl"])
        yield client
    finally:
        if client is not None:
            client.close()
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)


def test_report_renders_in_chromium_without_errors(tmp_path: Path, browser: DevTools) -> None:
    con = connect(tmp_path / "wh.duckdb")
    fill_small_warehouse(con)
    paths = build_report(con, AS_OF, tmp_path / "reports", "run-1")
    con.close()

    browser.call("Runtime.enable")
    browser.call("Log.enable")
    browser.call("Page.enable")
    browser.call("Page.navigate", url=(paths.latest_dir / "report.html").as_uri())
    browser.wait_for("Page.loadEventFired")

    missing = browser.evaluate(
        f"{json.dumps(SECTION_IDS + CHART_IDS)}.filter(function (id) {{ return !document.getElementById(id); }})"
    )
    assert missing == [], f"elements missing from the page: {missing}"
    # Charts are SVG with drawn content, not empty boxes.
    drawn = browser.evaluate(
        f"{json.dumps(CHART_IDS)}.map(function (id) {{ var el = document.getElementById(id); "
        "return [id, el.tagName.toLowerCase(), el.querySelectorAll('rect, polyline, circle').length, "
        "el.getBoundingClientRect().width]; })"
    )
    for chart_id, tag, marks, width in drawn:
        assert tag == "svg" and marks > 0 and width > 100, (chart_id, tag, marks, width)
    # Every duration chart carries a fitted curve and the 48 h marker.
    assert browser.evaluate("document.querySelectorAll('[id^=chart-durations-] polyline.fit').length") == 3
    assert browser.evaluate("document.querySelectorAll('[id^=chart-durations-] line.marker').length") == 3

    summary = browser.evaluate("document.getElementById('summary').innerText")
    assert "$2,150" in summary  # 1000 + 600 + 200 + 300 + 50 in November
    assert "+43.3 %" in summary  # (2150 - 1500) / 1500
    assert "$5,000/mo" in summary and "$1,200/mo" in summary and "$800/mo" in summary
    assert "1 of 2 checks failed" in summary

    # Data is text, never markup: the team tag shows literally and no script ran from it.
    assert XSS_TEAM in browser.evaluate("document.getElementById('chart-spend-team').textContent")
    assert browser.evaluate("document.querySelectorAll('script').length") == 1

    # Sorting the mix table by monthly saving, ascending, puts the -$10 row first.
    # The column is found by its title, so a column added before it does not move the test.
    column = browser.evaluate(
        "[...document.querySelectorAll('#table-mix th')].findIndex(th => th.textContent === 'Monthly saving')"
    )
    browser.evaluate(f"document.querySelectorAll('#table-mix th')[{column}].click()")
    first = browser.evaluate(f"document.querySelector('#table-mix tbody tr').cells[{column}].innerText")
    assert first == "-$10"

    assert browser.errors() == []

    shot = browser.call("Page.captureScreenshot", format="png")
    ARTIFACTS.mkdir(exist_ok=True)
    png = base64.b64decode(shot["data"])
    assert png.startswith(b"\x89PNG")
    (ARTIFACTS / "report-top.png").write_bytes(png)
