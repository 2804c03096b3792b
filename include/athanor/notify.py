"""What a failure alert says, and how it reaches a webhook.

The DAGs send it through an Airflow notifier (`athanor_common.FailureNotifier`, their
`on_failure_callback`); this module stays free of Airflow so the message can be built and
tested on its own. The webhook (`ATHANOR_ALERT_WEBHOOK`, read by `Settings`) is a URL that
accepts a JSON POST (Slack and Teams incoming webhooks, or any HTTP endpoint):
`{"text": "..."}`. Without one the reason is only logged. Email goes through Airflow's own
`email_on_failure` and SMTP connection.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)


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


def post_text(webhook: str, text: str, *, timeout_s: float = 10.0, what: str = "an alert") -> bool:
    """POST `{"text": text}` to the webhook; False (and a warning) if it could not be delivered.

    Also the channel of the spend watch's alerts (athanor.watch.alerts).
    """
    request = urllib.request.Request(
        webhook,
        data=json.dumps({"text": text}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - operator-set URL
            response.read()
    except OSError as exc:
        # The URL is not logged: a webhook URL often carries its token.
        log.warning("could not send %s to the webhook: %s", what, exc)
        return False
    return True
