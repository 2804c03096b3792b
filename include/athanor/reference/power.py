"""GPU power when telemetry has none: a per-model utilisation-to-power curve, with its sources.

``data/gpu_power.csv`` gives, per GPU model of the catalogue (``gpus.csv`` names), the board's
idle power and its maximum, each with a source (``sources.csv``). Power at utilisation u (0-1)
is the straight line between them, ``idle_w + (max_w - idle_w) x u``: the linear model Cloud
Carbon Footprint uses between a processor's minimum and maximum watts. A GPU at 0 % still draws
its idle power (an H100 SXM about 71 W): an idle GPU is never counted at zero watts.

A catalogue model without a row here takes its datasheet board power (``gpus.csv``) as the
maximum and ``FALLBACK_IDLE_SHARE`` of it as idle (the H100 capture's ratio, 71.4 / 700): a
labelled fallback, said so in ``Curve.source``. A GPU the catalogue does not know has no curve
(None): its energy stays unknown, never zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from athanor.reference import gpus as catalog
from athanor.reference.paths import DATA_DIR

GPU_POWER_CSV = DATA_DIR / "gpu_power.csv"
HEADER = ("gpu_model", "idle_w", "max_w", "idle_source", "max_source", "note")
# Idle power as a share of board power where no idle figure was found: the measured H100's.
FALLBACK_IDLE_SHARE = 0.10

# A telemetry name (nvidia-smi name, DCGM modelName) -> the catalogue's model, first match wins.
_NAMES = (
    (re.compile(r"H100.*NVL"), "H100-NVL-94GB"),
    (re.compile(r"H200"), "H200-141GB"),
    (re.compile(r"H100"), "H100-80GB"),
    (re.compile(r"A100.*80\s?GB.*PCIE"), "A100-80GB-PCIe"),
    (re.compile(r"A100.*80\s?GB"), "A100-80GB"),
    (re.compile(r"A100"), "A100-40GB"),
    (re.compile(r"A10G"), "A10G"),
    (re.compile(r"L40S"), "L40S"),
    (re.compile(r"\bL4\b"), "L4"),
    (re.compile(r"\bT4\b"), "T4"),
    (re.compile(r"V100.*32\s?GB"), "V100-32GB"),
    (re.compile(r"V100"), "V100-16GB"),
)


@dataclass(frozen=True)
class Curve:
    gpu_model: str
    idle_w: float
    max_w: float
    source: str  # where the two figures come from, in words (source ids, or the fallback)

    def watts(self, utilisation: float) -> float:
        """Board power at utilisation 0-1 (clipped to it)."""
        u = min(max(utilisation, 0.0), 1.0)
        return self.idle_w + (self.max_w - self.idle_w) * u


@cache
def _curves() -> dict[str, Curve]:
    rows = catalog._rows(GPU_POWER_CSV, HEADER)
    catalog._unique(GPU_POWER_CSV, (r["gpu_model"] for r in rows))
    out = {}
    for r in rows:
        idle, top = float(r["idle_w"]), float(r["max_w"])
        if not 0 < idle < top:
            raise ValueError(f"{GPU_POWER_CSV.name}: {r['gpu_model']} needs 0 < idle_w < max_w")
        cited = [catalog._cited(GPU_POWER_CSV, r["gpu_model"], r[k]) for k in ("idle_source", "max_source")]
        out[r["gpu_model"]] = Curve(
            r["gpu_model"], idle, top, f"idle {idle:g} W ({cited[0]}), max {top:g} W ({cited[1]})"
        )
    return out


def model_of(name: str | None, instance_type: str | None = None) -> str | None:
    """The catalogue's GPU model of an instance type, else of the telemetry's GPU name; None: unknown."""
    if instance_type:
        spec = catalog.gpu_instance(instance_type)
        if spec is not None and spec.gpu_model:
            return spec.gpu_model
    text = (name or "").upper()
    return next((model for pattern, model in _NAMES if pattern.search(text)), None)


def curve(gpu_model: str | None) -> Curve | None:
    """The power curve of a catalogue GPU model; None when neither file has a figure for it."""
    if gpu_model is None:
        return None
    found = _curves().get(gpu_model)
    if found is not None:
        return found
    spec = catalog.gpu(gpu_model)
    if spec is None or not spec.board_power_w:
        return None
    return board_power_curve(gpu_model, float(spec.board_power_w))


def board_power_curve(gpu_model: str | None, board_power_w: float) -> Curve:
    """The labelled fallback curve of a GPU known only by its board power: that as the maximum,
    FALLBACK_IDLE_SHARE of it as idle (never zero watts at 0 %)."""
    return Curve(
        gpu_model or "(unknown)",
        FALLBACK_IDLE_SHARE * board_power_w,
        board_power_w,
        f"max {board_power_w:g} W (gpus.csv board power), idle {FALLBACK_IDLE_SHARE:.0%} of it (fallback: the "
        "measured H100's ratio, no idle figure found for this model)",
    )
