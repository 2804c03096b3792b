"""`make bench`: run every benchmark in its own process and print their tables.

Each bench prints its own table with the ratio against a baseline measured in the
same run (DuckDB alone on the same file, the plain lognormal on the same trace,
...). Pass names to run a subset: `python bench/run_all.py ingest mix`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCHES = [
    "ingest",
    "load_steps",
    "quality",
    "durations",
    "mix",
    "lifecycle",
    "warehouse",
    "gpu_samples",
    "snapshot",
    "nightly",
    "distributed",
]
# Benches that take arguments, at a size `make bench` finishes in minutes (the full size is in
# docs/scaling.md).
ARGS = {
    "nightly": ["--months", "3", "--rows-per-month", "200000"],
    "load_steps": ["--rows", "1000000"],
    "distributed": ["--months", "1", "--rows-per-month", "200000", "--repeat", "1"],
}


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    chosen = argv or BENCHES
    failed = []
    for name in chosen:
        script = here / f"bench_{name}.py"
        if not script.exists():
            print(f"== {name}: no bench script", flush=True)
            continue
        print(f"\n== bench_{name}.py", flush=True)
        started = time.monotonic()
        result = subprocess.run([sys.executable, str(script), *ARGS.get(name, [])], cwd=here.parent)
        print(f"-- bench_{name}.py finished in {time.monotonic() - started:.0f} s (exit {result.returncode})")
        if result.returncode:
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
