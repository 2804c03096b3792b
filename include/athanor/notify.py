"""Tell people a run failed, with the reason, through a configurable webhook.

`ATHANOR_ALERT_WEBHOOK` is a URL that accepts a JSON POST (Slack and Teams incoming
webhooks, or any HTTP endpoint): `{"text": "..."}`. Without it the reason is only logged.
Email goes through Airflow's own `email_on_failure` and SMTP connection.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.request
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)


def failure_message(context: Mapping[str, Any]) -> str:
    """One paragraph: which task of which run failed, for which day, and why."""
    ti = context.get("ti") or context.get("task_instance")
    dag_id = getattr(ti, "dag_id", None) or context.get("dag_id", "?")
    task_id = getattr(ti, "task_id", None) or context.get("task_id", "?")
    run_id = context.get("run_id", "?")
    reason = context.get("exception") or context.get("reason") or "unknown error"
    return f"Athanor: {dag_id}.{task_id} failed in run {run_id}: {reason}"


def notify_failure(context: Mapping[str, Any], *, webhook: str | None = None, timeout_s: float = 10.0) -> str:
    """Send the failure message to the webhook (if configured); returns the message."""
    message = failure_message(context)
    log.error(message)
    url = webhook or os.environ.get("ATHANOR_ALERT_WEBHOOK")
    if not url:
        return message
    request = urllib.request.Request(
        url,
        data=json.dumps({"text": message}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - operator-set URL
            response.read()
    except OSError as exc:
        # A broken alert channel must not hide the original failure.
        log.warning("could not send the failure alert to the webhook: %s", exc)
    return message
