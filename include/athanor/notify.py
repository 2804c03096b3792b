"""What a failure alert says, and how it reaches a webhook.

The DAGs send it through an Airflow notifier (`athanor_common.FailureNotifier`, their
`on_failure_callback`); this module stays free of Airflow so the message can be built and
tested on its own. The webhook (`ATHANOR_ALERT_WEBHOOK`, read by `Settings`) is a URL that
accepts a JSON POST (Slack and Teams incoming webhooks, or any HTTP endpoint):
`{"text": "..."}`. Without one the reason is only logged. Email goes through Airflow's own
`email_on_failure` and SMTP connection.

What the channel accepts and how long it may take, since an alert must never cost the night
(nor hold its writer lock):

- the URL is `https://...`, or `http://` to this machine only (127.0.0.0/8, ::1, localhost: a
  relay or a test's server); a webhook URL usually carries its token, which plain HTTP would
  send across the network in clear. Anything else (a URL typed without its scheme, another
  scheme, spaces) is refused before any connection, with a reason that never repeats the URL;
- one request, from connecting to the last byte read, lasts at most `TOTAL_DEADLINE_S` (30 s):
  a server that trickles its answer is abandoned then (the socket's own timeout counts each
  read apart, so a byte every few seconds would hold it forever);
- of the answer, only the status and at most `MAX_REPLY_BYTES` are read; a 2xx status is
  delivered, anything else (a redirect too) is not;
- whatever goes wrong (refused, not HTTP, too slow, a bad URL) is one warning and `False`: the
  spend watch then keeps the alert unsent, and the next night tries it again.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

# One request's whole life (connect, send, status, reading the answer), in seconds.
TOTAL_DEADLINE_S = 30.0
# A webhook answers "ok" or a short JSON; what is past this is not read.
MAX_REPLY_BYTES = 64 * 1024
SETTING = "ATHANOR_ALERT_WEBHOOK"


def failure_message(context: Mapping[str, Any]) -> str:
    """One paragraph: which task of which run failed, and why (no configuration, no secrets)."""
    ti = context.get("ti") or context.get("task_instance")
    dag_id = getattr(ti, "dag_id", None) or context.get("dag_id", "?")
    task_id = getattr(ti, "task_id", None) or context.get("task_id", "?")
    run_id = context.get("run_id", "?")
    reason = context.get("exception") or context.get("reason") or "unknown error"
    return f"Athanor: {dag_id}.{task_id} failed in run {run_id}: {reason}"


def notify_failure(context: Mapping[str, Any], *, webhook: str | None, timeout_s: float = 10.0) -> str:
    """Log the failure message and POST it to `webhook` if there is one; returns the message."""
    message = failure_message(context)
    log.error(message)
    if webhook:
        # A broken alert channel must not hide the original failure: post_text only logs it.
        post_text(webhook, message, timeout_s=timeout_s, what="the failure alert")
    return message


def webhook_problem(webhook: str) -> str | None:
    """Why `webhook` is not a URL alerts may be posted to, or None; the reason never quotes it."""
    if any(c.isspace() or not c.isprintable() for c in webhook):
        return f"{SETTING} holds spaces or control characters: set it to the https:// URL alone"
    try:
        parts = urlsplit(webhook)
        host, _ = parts.hostname, parts.port  # a port that is not a number raises here
    except ValueError:
        return f"{SETTING} is not a valid URL (its host or port cannot be read)"
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not parts.netloc or not host:
        # Not even the scheme is quoted: a URL typed without one reads as "host:port/token".
        return f"{SETTING} is not a URL starting with https:// and a host (a scheme missing or mistyped?)"
    if scheme == "http" and not _loopback(host):
        return (
            f"{SETTING} uses http:// to another machine: its token would cross the network "
            "unencrypted; use https:// (plain http:// is accepted for this machine only)"
        )
    return None


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def post_text(
    webhook: str,
    text: str,
    *,
    timeout_s: float = 10.0,
    deadline_s: float | None = None,
    what: str = "an alert",
) -> bool:
    """POST `{"text": text}` to the webhook; False (and a warning) if it could not be delivered.

    `timeout_s` bounds each network operation, `deadline_s` the whole request (default
    `TOTAL_DEADLINE_S`). Also the
    channel of the spend watch's alerts (athanor.watch.alerts). Never raises for the channel's
    faults, and never logs the URL (a webhook URL often carries its token).
    """
    problem = webhook_problem(webhook)
    if problem:
        log.warning("could not send %s: %s", what, problem)
        return False
    deadline_s = TOTAL_DEADLINE_S if deadline_s is None else deadline_s
    parts = urlsplit(webhook)
    connection_type = (
        http.client.HTTPSConnection if parts.scheme.lower() == "https" else http.client.HTTPConnection
    )
    started = time.monotonic()
    connection = connection_type(parts.hostname, parts.port, timeout=min(timeout_s, deadline_s))
    expired = threading.Event()

    def give_up() -> None:
        # Shutting the socket down wakes a read blocked on a trickling server at once.
        expired.set()
        sock = connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(deadline_s, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.connect()
        if expired.is_set():
            raise TimeoutError("connecting took the whole deadline")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request(
            "POST",
            path,
            body=json.dumps({"text": text}).encode(),
            headers={"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        response.read(MAX_REPLY_BYTES)
        status = response.status
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if expired.is_set():
            reason = f"no complete answer within {deadline_s:g} s (abandoned)"
        else:
            reason = f"{type(exc).__name__}: {_without(str(exc), webhook)}"
        log.warning("could not send %s to the webhook: %s", what, reason)
        return False
    finally:
        watchdog.cancel()
        connection.close()
    if not 200 <= status < 300:
        log.warning("could not send %s to the webhook: it answered HTTP %d", what, status)
        return False
    log.debug("sent %s to the webhook in %.1f s", what, time.monotonic() - started)
    return True


def _without(message: str, webhook: str) -> str:
    """An error message with the URL, and its path (where a token sits), taken out."""
    parts = urlsplit(webhook)
    for secret in (webhook, parts.path, parts.query):
        if secret and secret != "/":
            message = message.replace(secret, "<webhook>")
    return message
