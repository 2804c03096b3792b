"""connect() on a current warehouse next to connect() that migrates (what every open did before
the schema was versioned). Usage: python bench/bench_warehouse.py [repeats]"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from athanor.warehouse import connect


def _median_ms(
    open_once: Callable[[], duckdb.DuckDBPyConnection],
    repeats: int,
    before: Callable[[], None] = lambda: None,
) -> float:
    times = []
    for _ in range(repeats):
        before()
        started = time.perf_counter()
        open_once().close()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main(repeats: int) -> None:
    path = Path(tempfile.mkdtemp(prefix="athanor-bench-")) / "w.duckdb"
    connect(path).close()

    def forget() -> None:
        # The ledger emptied: connect() applies every definition again, as it did on every open.
        with duckdb.connect(str(path)) as con:
            con.execute("delete from schema_migrations")

    migrating = _median_ms(lambda: connect(path), repeats, before=forget)
    current = _median_ms(lambda: connect(path), repeats)
    read_only = _median_ms(lambda: connect(path, read_only=True), repeats)
    print(f"{'connect()':<36}{'median ms':>10}{'ratio':>8}")
    print(f"{'migrating every open (baseline)':<36}{migrating:>10.1f}{1:>8.2f}")
    print(f"{'schema current (applies nothing)':<36}{current:>10.1f}{current / migrating:>8.2f}")
    print(f"{'read-only':<36}{read_only:>10.1f}{read_only / migrating:>8.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
