"""Anomalies as incidents: one cost event is judged per service, per account and per team, so it
is found two or three times; the report shows it once, with every scope that saw it.

Two anomalies are one incident when they are of the same day, currency and kind, their leading
top line (service and usage type or description, the group with the largest excess) is the
same and its excess is about the same in both: the same lines made both excesses. Incidents are listed by excess, largest first,
so the day that cost most is at the top whatever its date.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol


class _Anomaly(Protocol):
    scope_kind: str
    scope_value: str
    currency: str
    day: date
    kind: str
    expected_cost: float
    actual_cost: float
    excess_cost: float
    top_lines: tuple[dict[str, Any], ...]

    @property
    def scope(self) -> str: ...

    @property
    def compared_with(self) -> str: ...


SCOPE_ORDER = {"service": 0, "account": 1, "team": 2}
SAME_MONEY = 0.5  # the smaller leading-line excess over the larger, at least, for one incident


@dataclass(frozen=True)
class Incident:
    """One cost event and the anomalies (scopes) that saw it. The figures are those of the scope
    with the largest excess: the scopes see the same money, so their excesses are never added."""

    anomalies: tuple[Any, ...]  # the largest excess first

    @property
    def lead(self) -> Any:
        return self.anomalies[0]

    @property
    def day(self) -> date:
        return self.lead.day

    @property
    def currency(self) -> str:
        return self.lead.currency

    @property
    def excess_cost(self) -> float:
        return self.lead.excess_cost

    @property
    def expected_cost(self) -> float:
        return self.lead.expected_cost

    @property
    def actual_cost(self) -> float:
        return self.lead.actual_cost

    @property
    def compared_with(self) -> str:
        return self.lead.compared_with

    @property
    def top_lines(self) -> tuple[dict[str, Any], ...]:
        return self.lead.top_lines

    @property
    def scopes(self) -> list[str]:
        ordered = sorted(self.anomalies, key=lambda a: (SCOPE_ORDER.get(a.scope_kind, 9), a.scope_value))
        return [a.scope for a in ordered]


def _lead(a: _Anomaly) -> tuple[tuple[Any, ...], float] | None:
    """The anomaly's largest line and its excess; None without lines (an incident of its own)."""
    if not a.top_lines:
        return None
    line = a.top_lines[0]
    return (a.day, a.currency, a.kind, line.get("service"), line.get("line")), float(line.get("excess") or 0)


def _same_money(excess: float, other: float) -> bool:
    """Two leading lines' excesses are the same money when the smaller is at least half of the
    larger: a team that made most of a service's spike; two teams' spikes on one instance type of
    different sizes stay apart."""
    low, high = sorted((abs(excess), abs(other)))
    return high == 0 or low >= SAME_MONEY * high


def group_incidents(anomalies: Sequence[_Anomaly]) -> list[Incident]:
    """The anomalies grouped into incidents, the largest excess first (then the latest day).

    The largest anomaly starts an incident; each next one joins the first incident of its day
    whose leading line is its own with about the same excess (`_same_money`), else starts one."""
    groups: list[tuple[tuple[tuple[Any, ...], float] | None, list[_Anomaly]]] = []
    for a in sorted(
        anomalies, key=lambda a: (-a.excess_cost, SCOPE_ORDER.get(a.scope_kind, 9), a.scope_value)
    ):
        lead = _lead(a)
        home = None
        if lead is not None:
            home = next(
                (
                    members
                    for first, members in groups
                    if first is not None and first[0] == lead[0] and _same_money(first[1], lead[1])
                ),
                None,
            )
        if home is None:
            groups.append((lead, [a]))
        else:
            home.append(a)
    incidents = [Incident(tuple(members)) for _, members in groups]
    return sorted(incidents, key=lambda inc: (-inc.excess_cost, -inc.day.toordinal(), inc.scopes))
