"""Duration fits at fleet scale, and the Philly trace figures.

Generates 1,000,000 job runs in 200 groups (20 teams x 10 models; lognormal, Weibull, gamma,
log-logistic, exponential and two-component lognormal-mixture groups; ~30 % censored by
independent exponential censoring times), fits every group with the default bootstrap
(49 goodness-of-fit and 99 CI replicates), then fits the real Philly runtimes.

Run: .venv/bin/python bench/bench_durations.py [--jobs N] [--groups G] [--workers W]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd

from athanor.model import durations as D

PHILLY = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces" / "philly-runtime-seconds.csv"
)

# (generating family, sampler(rng, n, g) -> true durations in s); g varies the scale per group.
GENERATORS = [
    ("lognormal", lambda rng, n, g: np.exp(7.0 + 0.1 * g + 1.3 * rng.standard_normal(n))),
    ("weibull", lambda rng, n, g: (2000.0 + 50 * g) * rng.weibull(0.8 + 0.02 * g, n)),
    ("gamma", lambda rng, n, g: rng.gamma(1.5 + 0.1 * g, 1500.0, n)),
    ("loglogistic", lambda rng, n, g: 1800.0 * np.exp(rng.logistic(0, 1 / (1.5 + 0.05 * g), n))),
    ("exponential", lambda rng, n, g: rng.exponential(3000.0 + 100 * g, n)),
    (
        "lognormal_mixture",
        lambda rng, n, g: np.exp(
            np.where(rng.random(n) < 0.3, 4.5 + 0.4 * rng.standard_normal(n), 8.5 + rng.standard_normal(n))
        ),
    ),
]


def fleet(n_jobs: int, n_groups: int, seed: int = 0) -> tuple[pd.DataFrame, dict[str, str]]:
    """n_jobs job runs in n_groups team x model groups, about 30 % right-censored."""
    rng = np.random.default_rng(seed)
    per_group = n_jobs // n_groups
    parts, truth = [], {}
    for g in range(n_groups):
        team, model = f"t{g // 10:02d}", f"m{g % 10}"
        family, draw = GENERATORS[g % len(GENERATORS)]
        t = draw(rng, per_group, g % 10)
        # Censoring scale chosen so that P(C < T) is about 0.3: exponential C with scale
        # s gives P = E[1 - exp(-T/s)]; solve on a pilot sample by bisection in ln s.
        pilot = t[:2000]
        lo, hi = np.log(np.median(pilot)) - 5, np.log(np.median(pilot)) + 10
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            share = np.mean(1 - np.exp(-pilot / np.exp(mid)))
            lo, hi = (mid, hi) if share > 0.3 else (lo, mid)
        c = rng.exponential(np.exp(lo), per_group)
        parts.append(
            pd.DataFrame(
                {
                    "team": team,
                    "model": model,
                    "duration_s": np.round(np.minimum(t, c)),  # logs have 1 s resolution
                    "censored": t > c,
                    "gpu_count": rng.choice([1, 2, 4, 8, 16], per_group),
                }
            )
        )
        truth[D.group_label(["team", "model"], [team, model])] = family
    return pd.concat(parts, ignore_index=True), truth


def _cpu_s() -> float:
    """CPU time of this process and its reaped workers: the machine may be shared, so wall
    time alone overstates the cost."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    df, truth = fleet(args.jobs, args.groups)
    t0, cpu0 = time.perf_counter(), _cpu_s()
    fits = D.fit_groups(df, ["team", "model"], workers=args.workers)
    elapsed, cpu = time.perf_counter() - t0, _cpu_s() - cpu0

    right = sum(f.family == truth[f.group] for f in fits)
    mixtures = sum(f.mixture for f in fits)
    print("## Fleet fit (default bootstrap: 49 GOF + 99 CI replicates per group)")
    print(
        pd.DataFrame(
            [
                {
                    "groups": len(fits),
                    "jobs": len(df),
                    "censored %": round(100 * df["censored"].mean(), 1),
                    "workers": args.workers,
                    "seconds": round(elapsed, 1),
                    "cpu seconds": round(cpu, 1),
                    "jobs/s": round(len(df) / elapsed),
                    "family right": f"{right}/{len(fits)}",
                    "mixtures chosen": mixtures,
                }
            ]
        ).to_string(index=False)
    )
    by_family = pd.DataFrame({"truth": [truth[f.group] for f in fits], "chosen": [f.family for f in fits]})
    print()
    print(pd.crosstab(by_family["truth"], by_family["chosen"]).to_string())
    print()
    print(D.format_table([f.to_record() for f in fits[:6]]))

    runtimes = D.load_durations(PHILLY)["duration_s"].to_numpy()
    t0 = time.perf_counter()
    ph = D.fit_durations(runtimes)
    ph_s = time.perf_counter() - t0
    ln = D.fit_durations(runtimes, families=["lognormal"], gof_replicates=0, ci_replicates=0, mixture="never")
    emp_p99 = float(np.quantile(runtimes, 0.99))
    print()
    print("## Philly trace (83,154 real runtimes, default bootstrap)")
    rows = []
    for name, f in (("chosen", ph), ("plain lognormal", ln)):
        rows.append(
            {
                "model": name,
                "family": f.family + (f" x{len(f.params['weights'])}" if f.mixture else ""),
                "KS": round(f.ks, 4),
                "KS p": f.ks_pvalue,
                "p50 h": round(f.p50_s / 3600, 2),
                "p99 h": round(f.p99_s / 3600, 1),
                "p99 CI h": None if f.p99_ci_s is None else tuple(round(v / 3600, 1) for v in f.p99_ci_s),
                "p99 vs empirical": f"{100 * (f.p99_s / emp_p99 - 1):+.1f}%",
                "<48h jobs predicted": f"{100 * f.share_jobs_under_48h:.2f}%",
                "<48h jobs empirical": f"{100 * f.share_jobs_under_48h_empirical:.2f}%",
            }
        )
    print(pd.DataFrame(rows).to_string(index=False))
    print(f"load average during the run: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(
        f"empirical p50 {np.median(runtimes) / 3600:.2f} h, p99 {emp_p99 / 3600:.1f} h; "
        f"GPU-hours in jobs over 48 h: {100 * ph.gpu_hours_share_over_threshold:.1f}%; "
        f"fit time {ph_s:.1f} s"
    )


if __name__ == "__main__":
    main()
