"""Demo fleet: 90 days of GPU training jobs and the cloud bills they produce.

Everything is a deterministic function of a frozen `DemoConfig` (seed 7 by default):
the same config and `as_of` give byte-identical files.

The story (all figures are `DemoConfig` fields):

- Four teams train on p4d.24xlarge, p4de.24xlarge, p5.48xlarge, g5.12xlarge and
  g6.48xlarge in us-east-1 (speech and recsys run a few jobs in us-west-2), at the
  on-demand and typical spot prices of the reference catalogue
  (`athanor.reference.instances`); spot moves +-5 % a day.
- Jobs: per team a mixture of short debugging runs (median 15 min), sweeps (median
  3 h) and a few multi-day pre-training runs (median 60 h, up to 20 days), lognormal
  bodies; submissions follow a weekly cycle (weekends at 45 %) with a 25 % rise over
  the window. Outcomes: completed, failed, cancelled (a few in the queue), preempted
  (spot, from AWS Spot Advisor interruption buckets: lambda = -ln(1 - f)/730 per
  instance-hour, times `spot_interruption_scale` = 6, so a job on N instances sees
  N*lambda), and running at the end.
- Billing: hourly line items per instance (a new `i-...` id per instance launch,
  fractional hours at the edges), two payer accounts:
  `111111111111` (vision + speech) delivered as FOCUS 1.2 CSV.gz, holding 2 p4d.24xlarge
  reserved instances (1 year, No Upfront, 0.60 x on-demand, expiring 61 days after
  end_date); `222222222222` (llm + recsys) delivered as AWS CUR 2.0 Parquet, holding a
  $40/h Compute Savings Plan (1 year, No Upfront, rates 0.64 x on-demand, expiring 152
  days after end_date). Commitments are applied hour by hour the way AWS does: to
  eligible non-spot usage, jobs labelled reserved/savings_plan first.
- Also each team's storage, the same the storage deliveries list (`athanor.demo.storage`):
  its checkpoint bucket `demo-<team>-checkpoints` billed day by day for the bytes its S3
  Inventory shows by then, per storage class; its EBS volumes and snapshots billed from the
  day each was created (a snapshot bills its changed blocks, less than its volume's size);
  in-use volumes are attached to instances the bill shows running. Then data transfer out
  (0.09 $/GB) and to us-west-2 (0.02), and per payer and month one Tax line (6.25 % of the
  month's billed cost, to the cent) and one Credit (-1,000 $). Instances carry tags team,
  project, model and job_id; job_id is missing on about 10 % of instances.

With the defaults: about 3,100 jobs, 1.5 % of them over 48 h holding about 60 % of the
GPU-hours (close to the Philly trace), 7 still running at the end, a few preempted;
about 44,000 line items, RI utilisation about 60 % and Savings Plan utilisation about 75 %.

Time: jobs are submitted during the `days` days ending with `end_date`; the bills
cover the whole calendar months those days touch. A delivery "as of" day D contains
usage up to the end of day D (cutoff D+1 00:00 UTC): the month containing D is open
(no invoice id; the RI fee is billed for the whole month on day 1, as AWS does), earlier
months are final. The commitments exist before the first job: hours of the first month
before the window are unused commitment. Money is integer micro-dollars throughout (see
`athanor.demo.lines`).

Where each part lives: `config` (DemoConfig and its defaults), `jobs` (the simulation and
the job log), `usage` (instance-hours and the commitments applied to them), `billing` and
`charges` (the canonical line items), `storage` (the buckets, volumes and snapshots, and
their deliveries), `bills` (the FOCUS and CUR writers). This module writes the billing and
job deliveries.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from athanor.demo.billing import billing_lines, build_billing_lines
from athanor.demo.bills import write_cur2, write_focus
from athanor.demo.config import DemoConfig
from athanor.demo.jobs import JOB_COLUMNS, cutoff_of, generate_jobs, jobs_as_of, simulate, write_jobs_csv
from athanor.demo.lines import FileTotals
from athanor.demo.stable import iso_utc
from athanor.demo.usage import billing_months

# What the tests and the command line use; each lives in the module named above.
__all__ = [
    "JOB_COLUMNS",
    "DemoConfig",
    "billing_lines",
    "generate_jobs",
    "generate_landing",
    "write_jobs_csv",
]

_R = TypeVar("_R")


def _replace_atomically(path: Path, write: Callable[[Path], _R]) -> _R:
    """Write through a hidden temporary file in the same folder, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{path.name}")
    result = write(tmp)
    os.replace(tmp, path)
    return result


def generate_landing(out_dir: Path | str, cfg: DemoConfig | None = None, as_of: date | None = None) -> dict:
    """Write the demo's deliveries as of the end of `as_of` (default: cfg.end_date) under out_dir.

    Layout (paths relative to out_dir):
      billing/focus/<payer>/billing_period=YYYY-MM/focus-YYYY-MM.csv.gz         (FOCUS 1.2)
      billing/cur2/<payer>/BILLING_PERIOD=YYYY-MM/cur2-YYYY-MM-00001.snappy.parquet (CUR 2.0)
      jobs/jobs-YYYY-MM.csv                                                     (job-run schema, by submit month)

    Returns a summary: per file its rows and exact totals (billed / effective / list cost
    as decimal strings; for CUR: unblended / amortized / public on-demand cost).
    """
    cfg = cfg or DemoConfig()
    out = Path(out_dir)
    cutoff = cutoff_of(cfg, as_of)
    fleet = simulate(cfg)
    lines = build_billing_lines(cfg, fleet, cutoff)
    jobs = jobs_as_of(cfg, fleet, cutoff)
    months = billing_months(cfg, cutoff)
    files: list[dict[str, object]] = []
    payer_col = lines.column("payer_account_id")
    period_col = lines.column("billing_period_start").cast(pa.int64())
    for payer in sorted(set(payer_col.to_pylist())):
        for month, m_start, m_end in months:
            part = lines.filter(pc.and_(pc.equal(payer_col, payer), pc.equal(period_col, m_start)))
            label = f"{month:%Y-%m}"
            if payer in cfg.focus_payers:
                rel = Path("billing/focus", payer, f"billing_period={label}", f"focus-{label}.csv.gz")
                totals: FileTotals = _replace_atomically(
                    out / rel, lambda p, t=part: write_focus(t, p, "csv.gz")
                )
                kind = "focus-1.2"
            else:
                rel = Path(
                    "billing/cur2", payer, f"BILLING_PERIOD={label}", f"cur2-{label}-00001.snappy.parquet"
                )
                totals = _replace_atomically(out / rel, lambda p, t=part: write_cur2(t, p, "parquet"))
                kind = "cur-2.0"
            files.append(
                {
                    **totals.as_dict(),
                    "path": rel.as_posix(),
                    "kind": kind,
                    "billing_account_id": payer,
                    "billing_period": label,
                    "final": m_end <= cutoff,
                }
            )
    submit_month = jobs["submit_time"].dt.strftime("%Y-%m")
    for month, _, m_end in months:
        label = f"{month:%Y-%m}"
        rel = Path("jobs", f"jobs-{label}.csv")
        part = jobs[submit_month == label]
        n = _replace_atomically(out / rel, lambda p, j=part: write_jobs_csv(j, p))
        files.append(
            {"path": rel.as_posix(), "kind": "jobs", "rows": n, "period": label, "final": m_end <= cutoff}
        )
    return {
        "seed": cfg.seed,
        "end_date": cfg.end_date.isoformat(),
        "as_of": (as_of or cfg.end_date).isoformat(),
        "cutoff": iso_utc(cutoff),
        "jobs": len(jobs),
        "line_items": lines.num_rows,
        "files": files,
    }
