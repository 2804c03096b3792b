"""How a job's phase is bought by default: the one mapping the GPU plan states and the mix applies.

A job log may say what a run is for (``phase``: explore, tune or production; see
``athanor.reference.vocabulary.JOB_PHASES``). Each phase has a default purchase option:

- explore: short-lived, uncertain work: spot where the spot recommender allows it, else
  on-demand; never the reason to buy a commitment (it may vanish next month);
- tune: repeated runs of a chosen model: commitments (reserved instances or a savings plan);
- production: runs with a deadline someone depends on: dedicated capacity (a reservation or a
  capacity block), never spot.

The mix prices tune and production alike, as reserved units and the savings plan sized on
their demand (a capacity block is bought for dates, which the mix does not plan); the
difference is in what it tells the buyer. Work with no phase keeps the mix's own choice.

Keeping tune and production off spot is a policy with a price, not a fact: the setting
``spot_phase_policy`` (``ATHANOR_SPOT_PHASE_POLICY``) chooses it, and the mix states what it
costs a month (its planned cost with the policy minus without it):

- ``evidence`` (the default): tune and production stay off spot, unless the class's own spot
  runs demonstrably complete (``spot_record_holds``): then the spot model decides, as for
  work without a phase. Spot work that finishes is never moved off spot by the phase alone;
- ``strict``: tune and production stay off spot whatever their spot runs show;
- ``off``: the phase keeps nothing off spot (explore still buys no commitment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from athanor.reference.vocabulary import JOB_PHASES


@dataclass(frozen=True)
class PhaseDefault:
    """The default purchase option of one phase, and what it lets the mix do with the work."""

    phase: str
    option: str  # spot_or_on_demand | commitment | dedicated_capacity
    words: str  # how the GPU plan and the report say it
    may_use_spot: bool  # the spot recommender may move the work to spot
    may_drive_commitments: bool  # the work counts when commitments are sized


PHASE_DEFAULTS: Mapping[str, PhaseDefault] = {
    "explore": PhaseDefault("explore", "spot_or_on_demand", "spot or on-demand", True, False),
    "tune": PhaseDefault(
        "tune", "commitment", "commitment (reserved instances or a savings plan)", False, True
    ),
    "production": PhaseDefault(
        "production",
        "dedicated_capacity",
        "dedicated capacity (a capacity reservation) with an SLA",
        False,
        True,
    ),
}
assert set(PHASE_DEFAULTS) == set(JOB_PHASES), "every recorded phase needs a default"

NO_PHASE_WORDS = "not stated (no phase recorded)"

SPOT_PHASE_POLICIES = ("evidence", "strict", "off")
# A class's spot record is evidence once this many of its spot runs have ended completed or
# preempted (failed and cancelled runs say nothing about spot, running ones have not ended).
EVIDENCE_MIN_RUNS = 5


def spot_phase_policy(value: str) -> str:
    """A spot phase policy by name; the error names the setting."""
    policy = str(value).strip().lower()
    if policy not in SPOT_PHASE_POLICIES:
        raise ValueError(
            f"ATHANOR_SPOT_PHASE_POLICY must be one of {', '.join(SPOT_PHASE_POLICIES)}, got {value!r}"
        )
    return policy


def observed_completion(completed: Any, ended: Any) -> float | None:
    """Share of a class's ended spot runs (completed or preempted) that completed; None without any."""
    try:
        done, total = int(completed), int(ended)
    except (TypeError, ValueError):
        return None
    return done / total if total > 0 else None


def spot_record_holds(
    completed: Any, ended: Any, min_completion: float, min_runs: int = EVIDENCE_MIN_RUNS
) -> bool:
    """The class's own spot runs demonstrably complete: enough of them ended, and at least
    ``min_completion`` of those completed (the share the spot model asks of its own forecast)."""
    share = observed_completion(completed, ended)
    return share is not None and int(ended) >= min_runs and share >= min_completion


def keeps_off_spot(
    value: Any, policy: str, completed: Any = 0, ended: Any = 0, min_completion: float = 0.95
) -> bool:
    """Whether the phase keeps a class off spot under ``policy`` (its spot record: completed of ended)."""
    default = default_for(value)
    if default is None or default.may_use_spot or policy == "off":
        return False
    if policy == "strict":
        return True
    return not spot_record_holds(completed, ended, min_completion)


def phase_of(value: Any) -> str | None:
    """A recorded phase, or None for a missing one (None, NaN, pandas NA, empty)."""
    if not isinstance(value, str) or not value.strip():
        return None
    phase = value.strip().lower()
    if phase not in PHASE_DEFAULTS:
        raise ValueError(f"unknown job phase {value!r}: expected one of {', '.join(JOB_PHASES)}")
    return phase


def default_for(value: Any) -> PhaseDefault | None:
    """The phase's default purchase option; None when no phase is recorded (the mix decides)."""
    phase = phase_of(value)
    return None if phase is None else PHASE_DEFAULTS[phase]


def purchase_words(value: Any) -> str:
    """'spot or on-demand', ... or 'not stated (no phase recorded)'."""
    found = default_for(value)
    return NO_PHASE_WORDS if found is None else found.words
