"""One fit per workload group; small groups borrow their nearest big-enough ancestor's fit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from athanor.model.durations.sample import MIN_DURATION_S
from athanor.model.durations.selection import HOURS_48_S, DurationFit, _borrow, fit_durations


def group_label(columns: Sequence[str], values: Sequence[Any]) -> str:
    """'team=vision,model=resnet', or 'all' for no columns."""
    if not columns:
        return "all"
    return ",".join(f"{c}={'' if pd.isna(v) else v}" for c, v in zip(columns, values, strict=True))


def _fit_frame_job(args: tuple[str, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]) -> DurationFit:
    label, x, cens, gpus, options = args
    return fit_durations(x, cens, gpus, group=label, **options)


def _own_fit_ok(frame: pd.DataFrame, min_group_size: int) -> bool:
    done = frame.loc[~frame["censored"].astype(bool), "duration_s"]
    return len(frame) >= min_group_size and np.maximum(done, MIN_DURATION_S).nunique() >= 2


@dataclass(frozen=True)
class GroupPlan:
    """Which groups get a fit of their own, and whose fit each target group uses.

    Planning is cheap and deterministic, so a process that fits one group (an Airflow task
    on another worker) can plan again from the same frame and find its group's jobs.
    """

    group_by: tuple[str, ...]
    to_fit: dict[str, pd.DataFrame]  # label -> the jobs its own fit uses
    targets: dict[tuple[Any, ...], pd.DataFrame]  # every group at the finest level
    source: dict[tuple[Any, ...], str]  # target key -> label of the fit it uses


def plan_groups(
    df: pd.DataFrame, group_by: Sequence[str] | None = None, min_group_size: int = 100
) -> GroupPlan:
    """The fits `fit_groups` makes, without making them (columns as for `fit_groups`)."""
    group_by = list(group_by or [])
    missing = {"duration_s", "censored", "gpu_count", *group_by} - set(df.columns)
    if missing:
        raise ValueError(f"missing columns: {sorted(missing)}")

    def frames(level: int) -> dict[tuple[Any, ...], pd.DataFrame]:
        if level == 0:
            return {(): df}
        cols = group_by[:level]
        return {
            (k if isinstance(k, tuple) else (k,)): g for k, g in df.groupby(cols, dropna=False, sort=True)
        }

    levels = {lv: frames(lv) for lv in range(len(group_by) + 1)}
    targets = levels[len(group_by)]
    to_fit: dict[str, pd.DataFrame] = {}
    source: dict[tuple[Any, ...], str] = {}
    for key in targets:
        for lv in range(len(group_by), -1, -1):
            anc = levels[lv][key[:lv]]
            if lv == 0 or _own_fit_ok(anc, min_group_size):
                label = group_label(group_by[:lv], key[:lv])
                to_fit[label] = anc
                source[key] = label
                break
    return GroupPlan(tuple(group_by), to_fit, targets, source)


def fit_one(frame: pd.DataFrame, label: str, **fit_options: Any) -> DurationFit:
    """The fit of one planned group (`GroupPlan.to_fit[label]`)."""
    return _fit_frame_job(
        (
            label,
            frame["duration_s"].to_numpy(dtype=float),
            frame["censored"].to_numpy(dtype=bool),
            frame["gpu_count"].to_numpy(dtype=float),
            fit_options,
        )
    )


def assemble_groups(
    plan: GroupPlan, fitted: Mapping[str, DurationFit], threshold_s: float = HOURS_48_S
) -> list[DurationFit]:
    """One fit per target group, in the plan's order: its own, or its ancestor's borrowed."""
    out = []
    for key, frame in plan.targets.items():
        label = group_label(plan.group_by, key)
        fit = fitted[plan.source[key]]
        out.append(fit if plan.source[key] == label else _borrow(fit, label, frame, threshold_s))
    return out


def fit_groups(
    df: pd.DataFrame,
    group_by: Sequence[str] | None = None,
    min_group_size: int = 100,
    *,
    workers: int = 1,
    **fit_options: Any,
) -> list[DurationFit]:
    """Fit one model per group (columns duration_s, censored, gpu_count + group columns).

    Small groups borrow the fit of their nearest big-enough ancestor (see the package docstring).
    workers > 1 fits groups in parallel processes. fit_options go to ``fit_durations``.
    """
    plan = plan_groups(df, group_by, min_group_size)
    threshold_s = float(fit_options.get("threshold_s", HOURS_48_S))
    jobs = [
        (
            label,
            f["duration_s"].to_numpy(dtype=float),
            f["censored"].to_numpy(dtype=bool),
            f["gpu_count"].to_numpy(dtype=float),
            fit_options,
        )
        for label, f in plan.to_fit.items()
    ]
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            fitted = list(pool.map(_fit_frame_job, jobs, chunksize=max(1, len(jobs) // (8 * workers))))
    else:
        fitted = [_fit_frame_job(j) for j in jobs]
    return assemble_groups(plan, {f.group: f for f in fitted}, threshold_s)
