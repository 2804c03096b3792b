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
