"""Spend alerts go out once each: `spend_alerts` keeps the key of every alert sent."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from athanor.notify import SETTING, post_text, webhook_problem
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

    Without a webhook an alert is logged and recorded on the channel 'log'; the first run with a
    webhook sends those too (`delivered_late`), so a budget breached before anyone set one is not
    lost. One the webhook refused, or could not be sent to, is not recorded (a logged one stays
    'log'): the next run retries. A broken channel never fails the run.
    """
    problem = webhook_problem(webhook) if webhook else None
    late = _deliver_logged(con, webhook) if webhook and not problem else {"delivered": 0, "failed": 0}
    keys = [a.key for a in alerts]
    sent_before = {
        k
        for (k,) in con.execute(
            "select alert_key from spend_alerts where list_contains(?, alert_key)", [keys]
        ).fetchall()
    }
    counts = {"new": 0, "already_sent": 0, "failed": late["failed"], "delivered_late": late["delivered"]}
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
        "alerts: %d new sent (%s), %d logged before a webhook was set sent now, %d sent before, "
        "%d failed (retried next run)",
        counts["new"],
        "webhook" if webhook else "log only",
        counts["delivered_late"],
        counts["already_sent"],
        counts["failed"],
    )
    return {**counts, "error": problem if counts["failed"] else None}


def _deliver_logged(con: duckdb.DuckDBPyConnection, webhook: str) -> dict[str, int]:
    """Send the alerts only logged so far (no webhook was set when they were found), oldest
    first, each saying when it was found; one the webhook takes moves to the channel 'webhook'."""
    logged = con.execute(
        "select alert_key, kind, message, sent_at from spend_alerts where channel = 'log' order by sent_at, alert_key"
    ).fetchall()
    done = {"delivered": 0, "failed": 0}
    for key, kind, message, logged_at in logged:
        text = f"{message} (found {logged_at:%Y-%m-%d %H:%M} UTC, before {SETTING} was set)"
        if not post_text(webhook, text, what=f"the {kind} alert logged before the webhook was set"):
            done["failed"] += 1
            continue
        con.execute(
            "update spend_alerts set channel = 'webhook', sent_at = ? where alert_key = ?",
            [datetime.now(UTC).replace(tzinfo=None), key],
        )
        done["delivered"] += 1
    return done
