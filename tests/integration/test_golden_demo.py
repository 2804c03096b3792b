"""The demo run gives the same published files and warehouse content as the golden.

A change that moves code must leave it equal: exact values (money, counts, text) to the bit,
fitted floats within the tolerance tests/support/golden.py states (they depend on the CPU's BLAS
kernels). Regenerate it only when a change means to alter a published figure, and say which and
why in the commit:

    ATHANOR_REGENERATE_GOLDEN=1 .venv/bin/pytest tests/integration/test_golden_demo.py

The golden was last regenerated from commit e8f33a4's tree, on OpenBLAS's SkylakeX kernels; the
billing_job_daily table was added to it later (regenerated, nothing else in it changed).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from athanor.warehouse import SQL_DIR
from tests.support.demo_night import DEMO_DAY, published_demo_night
from tests.support.golden import compare, dumps, fingerprint, report

GOLDEN = Path(__file__).parents[1] / "golden" / "demo-2026-11-30.json"
AS_OF = DEMO_DAY.isoformat()

pytestmark = pytest.mark.integration


def test_demo_run_matches_golden(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    home = published_demo_night(tmp_path_factory)  # `athanor demo` + `athanor run` for AS_OF
    warehouse = home / "warehouse" / "athanor.duckdb"
    actual = fingerprint(home, home / "reports" / AS_OF, warehouse)
    if os.environ.get("ATHANOR_REGENERATE_GOLDEN"):
        GOLDEN.write_text(dumps(actual))
    differing = compare(json.loads(GOLDEN.read_text()), actual)
    assert not differing, "differs from the golden: " + report(differing)

    # The partition summaries the loads kept equal what the schema's backfill sums from every line:
    # the backfill (sql/schema/045_billing_daily.sql) and the loads' sums (sql/ingest/
    # billing_*_lines.sql) spell the same expressions twice; the demo's tags, services, currencies
    # and GPU lines exercise all of them.
    # Summed again in a copy: the night is shared with other modules, read-only.
    shutil.copyfile(warehouse, tmp_path / "athanor.duckdb")
    con = duckdb.connect(str(tmp_path / "athanor.duckdb"))
    try:
        kept = {
            t: con.execute(f"from {t} order by all").fetchall()
            for t in ("billing_daily", "billing_gpu_hourly")
        }
        con.execute("delete from billing_daily; delete from billing_gpu_hourly")
        con.execute((SQL_DIR / "schema" / "045_billing_daily.sql").read_text())
        backfilled = {t: con.execute(f"from {t} order by all").fetchall() for t in kept}
    finally:
        con.close()
    assert len(kept["billing_daily"]) > 1000 and len(kept["billing_gpu_hourly"]) > 10000
    assert backfilled == kept
