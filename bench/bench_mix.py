"""Backtest and spot tables for the purchase-mix recommender, plus one worked recommendation.

Run: .venv/bin/python bench/bench_mix.py [--seeds N] [--spot-advisor PATH]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from athanor.recommend import backtest, commitments, mix, savings_plan, spot
from athanor.recommend.backtest_synthetic import SYNTHETIC_SCENARIOS, make_synthetic_demand
from athanor.reference import instance

# p4d.24xlarge, us-east-1, $/h: on-demand and typical spot from the reference catalogue.
OD_RATE = float(instance("p4d.24xlarge").on_demand_usd_per_h)
COMMIT_RATE = 0.60 * OD_RATE  # 1-year commitment assumption
SPOT_RATE = float(instance("p4d.24xlarge").spot_usd_per_h)
DEFAULT_ADVISOR = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "spot"
    / "spot-advisor-data-2025-06-28.json"
)


def backtest_table(seeds: int) -> pd.DataFrame:
    rows = []
    for name in SYNTHETIC_SCENARIOS:
        per_seed = []
        for seed in range(seeds):
            summary = backtest.summarize_backtest(
                backtest.backtest(make_synthetic_demand(name, seed=seed), OD_RATE, COMMIT_RATE)
            )
            per_seed.append(summary.assign(seed=seed))
        both = pd.concat(per_seed)
        first = both[both["seed"] == 0].set_index("policy")
        mean = both.groupby("policy")[["savings_vs_on_demand_pct", "regret_pct"]].mean()
        worst = both.groupby("policy")["regret_pct"].max()
        for policy in backtest.BACKTEST_POLICIES:
            rows.append(
                {
                    "scenario": name,
                    "policy": policy,
                    "cost_k$ (seed 0)": first.loc[policy, "cost_usd"] / 1e3,
                    "savings_vs_od_% (seed 0)": first.loc[policy, "savings_vs_on_demand_pct"],
                    "regret_% (seed 0)": first.loc[policy, "regret_pct"],
                    f"regret_% mean/{seeds} seeds": mean.loc[policy, "regret_pct"],
                    "regret_% worst": worst.loc[policy],
                }
            )
    return pd.DataFrame(rows)


def spot_table(rates: dict[str, float]) -> pd.DataFrame:
    lam = rates["p4d.24xlarge"]
    rows = []
    # (label, work_h, instances, C, R, slack, rate multiplier): the last rows stress-test
    # with rates far above the Spot Advisor's to show the deadline-safe policy at work.
    cases = [
        ("8 x p4d, 48 h, slack 1.2", 48.0, 8, 0.25, 0.5, 1.2, 1.0),
        ("32 x p4d, 120 h, slack 1.1", 120.0, 32, 0.25, 0.5, 1.1, 1.0),
        ("1 x p4d, 24 h, slack 1.15, 100x rate", 24.0, 1, 0.1, 0.2, 1.15, 100.0),
        ("8 x p4d, 48 h, slack 1.3, 50x rate", 48.0, 8, 0.25, 0.5, 1.3, 50.0),
    ]
    for label, work, n, c, r, slack, mult in cases:
        job_rate = spot.job_rate_per_h(lam * mult, n)
        tau = spot.daly_interval_h(c, job_rate)
        deadline = slack * work
        estimate = spot.completion_probability(work, job_rate, c, r, tau, deadline_h=deadline)
        sim = spot.simulate_spot_jobs(10_000, work, job_rate, c, r, tau, deadline_h=deadline, seed=1)
        safe = spot.simulate_uniform_progress(
            10_000, work, job_rate, c, r, tau, deadline, SPOT_RATE, OD_RATE, seed=2
        )
        od_cost = OD_RATE * work
        rows.append(
            {
                "job": label,
                "job_rate_per_h": job_rate,
                "tau_h (Daly)": tau,
                "E[T]/D": spot.exact_expected_wall_time_h(work, job_rate, c, r, tau) / work,
                "completion est %": 100 * estimate,
                "completion MC %": 100 * sim.completion_rate,
                "spot cost % of OD": 100 * SPOT_RATE * sim.mean_wall_time_h / od_cost,
                "safe cost % of OD": 100 * safe.mean_cost_usd / od_cost,
                "safe missed": safe.missed_deadlines,
            }
        )
    return pd.DataFrame(rows)


def worked_example(rates: dict[str, float]) -> mix.MixRecommendation:
    hours = pd.date_range("2026-11-01", periods=720, freq="h", tz="UTC")
    p4d = make_synthetic_demand("stationary", seed=1, months=2, start="2026-10-01").to_numpy()[-720:] * 0.5
    g5 = make_synthetic_demand("spiky", seed=2, months=2, start="2026-10-01").to_numpy()[-720:] * 0.75
    demand = pd.concat(
        [
            pd.DataFrame({"hour": hours, "pool": "p4d/us-east-1", "units": p4d, "on_demand_rate": OD_RATE}),
            pd.DataFrame({"hour": hours, "pool": "g5/us-east-1", "units": g5, "on_demand_rate": 5.67}),
        ]
    )
    common = {"instance_count": 1, "restart_time_h": 0.25}
    jobs = pd.DataFrame(
        [
            {**common, "job_class": "research/p4d", "pool": "p4d/us-east-1", "gpu_hours": 12_000, "jobs": 900,
             "median_duration_h": 3, "p90_duration_h": 20, "checkpoint_time_h": 0.1, "deadline_slack": 2.0,
             "spot_rate": SPOT_RATE, "on_demand_rate": OD_RATE, "interruption_rate_per_h": rates["p4d.24xlarge"]},
            {**common, "job_class": "pretrain/p4d", "pool": "p4d/us-east-1", "gpu_hours": 20_000, "jobs": 12,
             "median_duration_h": 120, "p90_duration_h": 400, "instance_count": 4, "checkpoint_time_h": 0.25,
             "deadline_slack": 1.1, "spot_rate": SPOT_RATE, "on_demand_rate": OD_RATE,
             "interruption_rate_per_h": rates["p4d.24xlarge"], "interruptible": False},
            {**common, "job_class": "finetune/g5", "pool": "g5/us-east-1", "gpu_hours": 4_000, "jobs": 2000,
             "median_duration_h": 2, "p90_duration_h": 8, "checkpoint_time_h": 0.05, "deadline_slack": 1.3,
             "spot_rate": 2.4, "on_demand_rate": 5.67, "interruption_rate_per_h": rates["g5.12xlarge"]},
        ]
    )  # fmt: skip
    return mix.recommend_mix(
        demand,
        jobs,
        mix.MixPrices(sp_discount_by_pool={"p4d/us-east-1": 0.28, "g5/us-east-1": 0.32}),
        current_monthly_bill_usd=None,
        existing_by_pool={"p4d/us-east-1": [(2, 24 * 90)]},
        gpus_per_unit_by_pool={"p4d/us-east-1": 8, "g5/us-east-1": 4},
    )


def timings() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    u = rng.gamma(4.0, 5.0, 26_280)  # three years of hours
    t = time.perf_counter()
    for _ in range(20):
        commitments.optimal_commitment(u, 0.4, 1.0)
    rows.append({"what": "optimal_commitment, 26,280 h", "ms": 1e3 * (time.perf_counter() - t) / 20})
    u720 = u[:720]
    t = time.perf_counter()
    commitments.brute_force_commitment(u720, 0.6, 1.0)
    rows.append({"what": "brute_force_commitment, 720 h", "ms": 1e3 * (time.perf_counter() - t)})
    hours = pd.date_range("2026-11-01", periods=720, freq="h", tz="UTC")
    pools = [f"pool{i}" for i in range(5)]
    demand = pd.DataFrame([{"hour": h, "pool": p, "units": rng.gamma(3, 2)} for h in hours for p in pools])
    t = time.perf_counter()
    savings_plan.savings_plan_plan(
        demand, dict.fromkeys(pools, 10.0), {p: 0.2 + 0.05 * i for i, p in enumerate(pools)}
    )
    rows.append({"what": "savings_plan_plan, 5 pools x 720 h", "ms": 1e3 * (time.perf_counter() - t)})
    t = time.perf_counter()
    spot.completion_probability(120.0, 0.02, 0.25, 0.5, spot.daly_interval_h(0.25, 0.02), deadline_h=150.0)
    rows.append({"what": "completion_probability (analytic)", "ms": 1e3 * (time.perf_counter() - t)})
    t = time.perf_counter()
    spot.simulate_spot_jobs(10_000, 120.0, 0.02, 0.25, 0.5, 3.0, deadline_h=150.0)
    rows.append({"what": "simulate_spot_jobs, 10,000 jobs", "ms": 1e3 * (time.perf_counter() - t)})
    t = time.perf_counter()
    backtest.backtest(make_synthetic_demand("trend"), OD_RATE, COMMIT_RATE)
    rows.append({"what": "backtest, 6 months x 5 policies", "ms": 1e3 * (time.perf_counter() - t)})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--spot-advisor", type=Path, default=DEFAULT_ADVISOR)
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    pd.set_option("display.float_format", lambda v: f"{v:,.2f}")

    print(f"Walk-forward backtest: p4d at ${OD_RATE}/h on-demand, commitment at 0.60x; decide at the end of")
    print("month m on data so far, pay month m+1 (5 scored months per scenario).\n")
    print(backtest_table(args.seeds).to_string(index=False))

    rates = spot.load_interruption_rates(args.spot_advisor)
    print(
        f"\nSpot (p4d.24xlarge Spot Advisor rate {rates['p4d.24xlarge']:.3e}/instance-hour; 10,000 jobs each):\n"
    )
    print(spot_table(rates).to_string(index=False))

    rec = worked_example(rates)
    print("\nWorked recommendation (2 pools, 30 days):\n")
    for pool in rec.pools:
        print(f"  {pool.to_dict()}")
    print(f"  hourly savings plan ${rec.hourly_commitment:.3f}/h; GPU-hour shares "
          f"{ {k: round(v, 3) for k, v in rec.hours_share.items()} }")  # fmt: skip
    print(f"  dollar shares { {k: round(v, 3) for k, v in rec.cost_share.items()} }")
    print(f"  sensitivity {rec.sensitivity}")
    print("\n  " + mix.explain(rec))

    print("\nTimings:\n")
    print(timings().to_string(index=False))


if __name__ == "__main__":
    main()
