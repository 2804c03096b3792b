"""One frozen settings object, built once from the environment.

Every path the product writes to is decided here; functions receive a `Settings`
(or the single path they need) instead of reading the environment themselves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# In a checkout, include/athanor/settings.py: the project root is two folders above the
# package (the default home of a demo run).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Settings:
    home: Path
    warehouse: Path
    landing: str  # a local folder or an s3://bucket/prefix URL
    landing_conn_id: str  # Airflow connection used when `landing` is a bucket
    reports: Path
    quarantine: Path
    artifacts: Path
    snapshot: Path
    duckdb_memory_limit: str
    duckdb_threads: int
    report_bucket: str | None  # s3://bucket/prefix to publish the report to, if set

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        home = Path(env.get("ATHANOR_HOME", str(PROJECT_ROOT))).resolve()
        warehouse = Path(env.get("ATHANOR_WAREHOUSE", str(home / "warehouse" / "athanor.duckdb")))
        return cls(
            home=home,
            warehouse=warehouse,
            landing=env.get("ATHANOR_LANDING", str(home / "landing")),
            landing_conn_id=env.get("ATHANOR_LANDING_CONN_ID", "aws_default"),
            reports=Path(env.get("ATHANOR_REPORTS", str(home / "reports"))),
            quarantine=Path(env.get("ATHANOR_QUARANTINE", str(home / "quarantine"))),
            artifacts=Path(env.get("ATHANOR_ARTIFACTS", str(home / "artifacts"))),
            snapshot=Path(
                env.get("ATHANOR_SNAPSHOT", str(warehouse.with_name(warehouse.stem + "-snapshot.duckdb")))
            ),
            # DuckDB otherwise takes 80 % of RAM and every core; the nightly run
            # shares the machine with the Airflow scheduler.
            duckdb_memory_limit=env.get("ATHANOR_DUCKDB_MEMORY_LIMIT", "2GB"),
            duckdb_threads=int(env.get("ATHANOR_DUCKDB_THREADS", "2")),
            report_bucket=env.get("ATHANOR_REPORT_BUCKET") or None,
        )
