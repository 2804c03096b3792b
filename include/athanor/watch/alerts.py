"""Spend alerts go out once each: `spend_alerts` keeps the key of every alert sent."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from athanor.notify import post_text, webhook_problem
from athanor.warehouse import insert_rows

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Alert:
    key: str
    kind: str  # anomaly | budget
    message: str


def send_new(
    con: duckdb.DuckDBPyConnection, alerts: list[Alert], run_id: str, webhook: str | None
) -> dict[str, Any]:
    """Send the alerts whose key was never sent; record each sent one. Returns counts, and
    `error`: why the webhook setting itself is refused (a reason that never quotes the URL).

    Without a webhook an alert is logged and recorded as sent on the channel 'log' (a webhook set
    later does not replay the past). One the webhook refused, or could not be sent to, is not
    recorded: the next run retries. A broken channel never fails the run.
    """
    problem = webhook_problem(webhook) if webhook else None
    keys = [a.key for a in alerts]
    sent_before = {
        k
        for (k,) in con.execute(
            "select alert_key from spend_alerts where list_contains(?, alert_key)", [keys]
        ).fetchall()
    }
    counts = {"new": 0, "already_sent": 0, "failed": 0}
    for alert in dict((a.key, a) for a in alerts).values():
        if alert.key in sent_before:
            counts["already_sent"] += 1
            continue
        if webhook:
            if problem:
                counts["failed"] += 1
                continue
            if not post_text(webhook, alert.message, what=f"the {alert.kind} alert"):
                counts["failed"] += 1
                continue
            channel = "webhook"
        else:
            log.warning("%s (no ATHANOR_ALERT_WEBHOOK: logged only)", alert.message)
            channel = "log"
        insert_rows(
            con,
            "spend_alerts",
            [
                {
                    "alert_key": alert.key,
                    "kind": alert.kind,
                    "first_run_id": run_id,
                    "sent_at": datetime.now(UTC).replace(tzinfo=None),
                    "channel": channel,
                    "message": alert.message,
                }
            ],
        )
        counts["new"] += 1
    if problem and counts["failed"]:
        log.warning("%d alert(s) not sent (retried next run): %s", counts["failed"], problem)
    log.info(
        "alerts: %d new sent (%s), %d sent before, %d failed (retried next run)",
        counts["new"],
        "webhook" if webhook else "log only",
        counts["already_sent"],
        counts["failed"],
    )
    return {**counts, "error": problem if counts["failed"] else None}
