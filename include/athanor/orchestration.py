"""Adapter between an orchestrator's task context and the pipeline stages.

The context is read as a plain mapping (Airflow passes its task context; the CLI
builds one), so this module imports nothing from Airflow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any

from athanor import pipeline
from athanor.settings import Settings


def _params(context: Mapping[str, Any]) -> dict[str, Any]:
    return dict(context.get("params") or {})


def as_of_from(context: Mapping[str, Any]) -> date | None:
    """The one place that decides which day a run works on.

    An explicit `as_of` param wins (manual runs, backfills from the form); then the
    run's logical date (scheduled runs); asset-triggered runs have no logical date and
    return None, which the stages read as "the latest day in the warehouse".
    """
    explicit = _params(context).get("as_of")
    if explicit:
        return date.fromisoformat(str(explicit)[:10])
    logical = context.get("logical_date")
    if logical is not None:
        return logical.date() if isinstance(logical, datetime) else date.fromisoformat(str(logical)[:10])
    return None


def run_id_from(context: Mapping[str, Any]) -> str:
    return str(context.get("run_id") or f"manual__{datetime.now(UTC):%Y%m%dT%H%M%S}")


def run_stage(
    name: str,
    context: Mapping[str, Any],
    *inputs: Any,
    settings: Settings | None = None,
    s3_client: Callable[[], Any] | None = None,
) -> dict:
    """Run stage `name` for the run described by `context`; returns a small JSON-able summary."""
    settings = settings or Settings.from_env()
    stages: dict[str, Callable[..., dict]] = {
        "land": pipeline.land,
        "load": pipeline.load,
        "validate": pipeline.validate,
        "fit_durations": pipeline.fit_durations,
        "recommend_mix": pipeline.recommend_mix,
        "recommend_lifecycle": pipeline.recommend_lifecycle,
        "publish": pipeline.publish,
    }
    run = pipeline.RunContext(
        run_id=run_id_from(context),
        as_of=as_of_from(context),
        params=_params(context),
        settings=settings,
        s3_client=s3_client,
    )
    return stages[name](run, *inputs)
