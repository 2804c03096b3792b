"""The billing load's quality gate with each row-query rule's SQL run once, against GX running it
twice (its rows, then their count): same process, same loaded delivery, alternated.

    .venv/bin/python bench/bench_quality_passes.py DELIVERY.parquet [--repeat 3]

Loads the delivery once (`ingest_billing`, gate off) into a warehouse in a temporary folder,
then times `validate_batch` of its rows (the file figures from its reconciliations) `--repeat` times each way, alternating, and prints
each time and the medians. "twice" is the runner without `_run_once` (GX evaluates each
rule's query itself, as before issue 33).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("delivery", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    from athanor.ingest.billing import ingest_billing
    from athanor.quality import BatchContext, QualityConfig, runner, validate_batch
    from athanor.warehouse import connect

    with tempfile.TemporaryDirectory() as work:
        con = connect(Path(work) / "w.duckdb")
        result = ingest_billing(con, [args.delivery], validate=False)
        context = BatchContext("bench", result.load_id, result.files, None, result.source_format)
        once = runner._run_once
        times: dict[str, list[float]] = {"once": [], "twice": []}
        for _ in range(args.repeat):
            for way in ("twice", "once"):
                runner._run_once = once if way == "once" else (lambda con, table, rules: (rules, []))
                started = time.perf_counter()
                outcome = validate_batch(
                    con, "billing_facts", "billing_facts", context=context, config=QualityConfig()
                )
                times[way].append(time.perf_counter() - started)
                print(
                    f"{way}: {times[way][-1]:.2f} s ({len(outcome.results)} rules, {len(outcome.failures)} failed)"
                )
        runner._run_once = once
        con.close()
    for way, seconds in times.items():
        print(
            f"{way}: median {statistics.median(seconds):.2f} s, range {min(seconds):.2f}-{max(seconds):.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
