"""One frozen settings object, built once from the environment.

Every path the product writes to, and every other knob an operator turns through the
environment, is decided here; functions receive a `Settings` (or the single value they
need) instead of reading the environment themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

# In a checkout, include/athanor/settings.py: the project root is two folders above the
# package (the default home of a demo run).
PROJECT_ROOT = Path(__file__).resolve().parents[2]

# The pricing assumptions of the purchase recommendations: setting -> (environment variable,
# lowest, highest allowed, what it means). Defaults are the Settings fields below; a run can
# override each from the optimize DAG's form, and every recommendation stores the values it used.
PRICING_ASSUMPTIONS: dict[str, tuple[str, float, float, str]] = {
    "commit_discount_1y": (
        "ATHANOR_COMMIT_DISCOUNT_1Y",
        0.0,
        0.99,
        "Discount of a 1-year reservation (no upfront) off the on-demand rate, 0-1.",
    ),
    "commit_discount_3y": (
        "ATHANOR_COMMIT_DISCOUNT_3Y",
        0.0,
        0.99,
        "Discount of a 3-year reservation (no upfront) off the on-demand rate, 0-1.",
    ),
    "savings_plan_discount": (
        "ATHANOR_SAVINGS_PLAN_DISCOUNT",
        0.0,
        0.99,
        "Discount of a 1-year compute savings plan off the on-demand rate, 0-1.",
    ),
    "deadline_slack": (
        "ATHANOR_DEADLINE_SLACK",
        1.0,
        100.0,
        "A job is late once it takes this many times its run time (1.5: half as long again).",
    ),
    "commit_min_utilization": (
        "ATHANOR_COMMIT_MIN_UTILIZATION",
        0.0,
        1.0,
        "Buy only reservations expected to be used at least this share of their hours, 0-1 "
        "(0: the cost-optimal quantity).",
    ),
}


def pricing_value(name: str, value: object) -> float:
    """A pricing assumption checked against its range; the error names the setting."""
    variable, low, high, _ = PRICING_ASSUMPTIONS[name]
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} ({variable}) must be a number, got {value!r}") from None
    if not low <= number <= high:
        raise ValueError(f"{name} ({variable}) must be between {low:g} and {high:g}, got {number:g}")
    return number


# The farthest a spend forecast reaches: two years holds every budget and commitment term a plan
# weighs; time and memory grow with it (36,500 days took 81 s and 2.7 GB).
MAX_FORECAST_HORIZON_DAYS = 730


@dataclass(frozen=True)
class WatchSettings:
    """The spend watch's bounds (athanor.watch; README "Spend watch")."""

    # A usage day is compared with the same weekday of the `anomaly_weeks` weeks before it (at
    # least `anomaly_min_weeks` of them); month-start charges with the `anomaly_months` months
    # before (at least `anomaly_min_months`). It is an anomaly when its excess over the median
    # is above all of: k * 1.4826 * MAD (a robust z-score of k), min_jump x the median (a flat
    # history has MAD 0) and min_increase in the billing currency (cents are not news).
    anomaly_k: float = 5.0
    anomaly_weeks: int = 8
    anomaly_min_weeks: int = 4
    anomaly_months: int = 3
    anomaly_min_months: int = 2
    anomaly_min_jump: float = 0.5
    anomaly_min_increase: float = 10.0
    anomaly_lookback_days: int = 14  # the nightly run judges (and alerts on) this many last days
    forecast_horizon_days: int = 90
    forecast_interval: float = 0.8  # the prediction interval's coverage
    # The nightly watch reads (and the forecast trains on) this many days up to as_of: half a
    # year holds 26 weekly cycles and the anomaly rules' 3 months, and keeps the nightly's cost
    # from growing with the years of history the warehouse holds.
    history_days: int = 182
    # A provider's billing account whose last charge day is more days before as_of than this has
    # stopped arriving (exports land a day or so late): its budgets read unknown, the report says so.
    freshness_max_lag_days: int = 2
    budgets: Path | None = None  # the budgets file (YAML or CSV): ATHANOR_BUDGETS, else <home>/budgets.yaml


_WATCH_ENV = {
    "anomaly_k": ("ATHANOR_ANOMALY_K", float),
    "anomaly_weeks": ("ATHANOR_ANOMALY_WEEKS", int),
    "anomaly_min_weeks": ("ATHANOR_ANOMALY_MIN_WEEKS", int),
    "anomaly_months": ("ATHANOR_ANOMALY_MONTHS", int),
    "anomaly_min_months": ("ATHANOR_ANOMALY_MIN_MONTHS", int),
    "anomaly_min_jump": ("ATHANOR_ANOMALY_MIN_JUMP", float),
    "anomaly_min_increase": ("ATHANOR_ANOMALY_MIN_INCREASE", float),
    "anomaly_lookback_days": ("ATHANOR_ANOMALY_LOOKBACK_DAYS", int),
    "forecast_horizon_days": ("ATHANOR_FORECAST_HORIZON_DAYS", int),
    "forecast_interval": ("ATHANOR_FORECAST_INTERVAL", float),
    "history_days": ("ATHANOR_WATCH_HISTORY_DAYS", int),
    "freshness_max_lag_days": ("ATHANOR_FRESHNESS_MAX_LAG_DAYS", int),
    "budgets": ("ATHANOR_BUDGETS", Path),
}


def _watch_settings(env: Mapping[str, str], home: Path) -> WatchSettings:
    values: dict[str, object] = {}
    # Without ATHANOR_BUDGETS, a budgets.yaml in the home folder (where `athanor demo` puts the demo's).
    if (home / "budgets.yaml").is_file():
        values["budgets"] = home / "budgets.yaml"
    for name, (variable, kind) in _WATCH_ENV.items():
        if env.get(variable):
            try:
                value = kind(env[variable])
            except ValueError:
                what = {int: "a whole number", float: "a number"}.get(kind, "a path")
                raise ValueError(f"{variable} must be {what}, got {env[variable]!r}") from None
            # The whole numbers count days, weeks or months to read or compare: none is no watch.
            if isinstance(value, int) and value < 1:
                raise ValueError(f"{variable} must be at least 1, got {env[variable]!r}")
            if name == "forecast_horizon_days" and value > MAX_FORECAST_HORIZON_DAYS:
                raise ValueError(
                    f"{variable} must be at most {MAX_FORECAST_HORIZON_DAYS}, got {env[variable]!r}"
                )
            values[name] = value
    return WatchSettings(**values)


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
    # URL that gets {"text": reason} when a task fails; it may embed a token: kept out of repr().
    alert_webhook: str | None = field(default=None, repr=False)
    # (data-quality rule, "error" | "warn") pairs overriding the rules' own levels; pairs, not a
    # dict, so that Settings stays hashable.
    dq_severity: tuple[tuple[str, str], ...] = ()
    watch: WatchSettings = WatchSettings()
    # The CLI's S3 client (in Airflow the bucket is a connection, `landing_conn_id`):
    # an endpoint for S3-compatible servers, and the region.
    s3_endpoint_url: str | None = None
    aws_region: str = "us-east-1"
    # How long a writer waits while another process holds the warehouse file, then fails.
    writer_wait_s: float = 60.0
    # An analyst's `athanor query`: its time limit, and the disk its spill files may take.
    query_timeout_s: float = 300.0
    query_max_temp: str = "1GB"
    # Pricing assumptions (PRICING_ASSUMPTIONS). GPU commitment prices are not public: set the
    # discounts from your own quotes.
    commit_discount_1y: float = 0.40
    commit_discount_3y: float = 0.60
    savings_plan_discount: float = 0.28
    deadline_slack: float = 1.5
    commit_min_utilization: float = 0.0  # 0: no floor, the cost-optimal quantity
    # Whether tune and production work stays off spot (athanor.recommend.phases): "evidence"
    # unless the class's own spot runs demonstrably complete, "strict" always, "off" never. The
    # purchase mix prices the policy: its cost with it minus without it.
    spot_phase_policy: str = "evidence"

    # Input limits (athanor.ingest.sniff): a header with more columns than any export has, and
    # a gzip that expands beyond a size or ratio (real exports compress 5-30x; a compression
    # bomb 1000x), are refused before anything reads them whole.
    max_columns: int = 2000
    max_expanded_bytes: int = 20_000_000_000
    max_expansion_ratio: float = 200.0
    # A restated billing month with fewer than this share of the rows or cost it replaces is
    # held in quarantine as suspicious (rule restated_period_collapsed) until released; 0: never.
    restatement_min_share: float = 0.5
    # GPU usage (athanor.recommend.gpu_usage): idle is utilisation below idle_below_pct % for at
    # least idle_minutes in a row; a sample counts until the next one of its GPU, at most
    # gpu_sample_cap_minutes (None: twice the GPU's median sampling interval).
    idle_below_pct: float = 5.0
    idle_minutes: float = 30.0
    gpu_sample_cap_minutes: float | None = None
    # Where the fact tables live (athanor.warehouse.lake): "file", in the DuckDB file, or "lake",
    # Apache Iceberg tables under lake_warehouse (s3://bucket/prefix) with pyiceberg's SQL
    # catalog at lake_catalog_uri (a PostgreSQL SQLAlchemy URL; it may embed a password).
    warehouse_mode: str = "file"
    lake_catalog_uri: str | None = field(default=None, repr=False)
    lake_warehouse: str | None = None
    lake_namespace: str = "athanor"
    # The lake's read cache (athanor.warehouse.lake._local_paths): the folder a bucket's data
    # files are copied to for DuckDB's Parquet reader, and the bytes it may take.
    lake_cache: Path | None = None
    lake_cache_bytes: int = 20_000_000_000
    # Shared clusters (athanor.recommend.allocation): a Slurm log loads without its bad records
    # while they are at most this share of it; the bill lines' tag whose value is the scheduler's
    # node name (None: no such tag), one of the node map's sources.
    job_reject_max_share: float = 0.1
    node_tag_key: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
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
            alert_webhook=env.get("ATHANOR_ALERT_WEBHOOK") or None,
            dq_severity=_severity_levels(env.get("ATHANOR_DQ_SEVERITY", "")),
            watch=_watch_settings(env, home),
            s3_endpoint_url=env.get("ATHANOR_S3_ENDPOINT_URL") or env.get("AWS_ENDPOINT_URL") or None,
            aws_region=env.get("AWS_REGION", "us-east-1"),
            writer_wait_s=float(env.get("ATHANOR_WRITER_WAIT_S", "60")),
            query_timeout_s=_positive(env, "ATHANOR_QUERY_TIMEOUT_S", "300"),
            query_max_temp=env.get("ATHANOR_QUERY_MAX_TEMP", "1GB"),
            max_columns=int(env.get("ATHANOR_MAX_COLUMNS", "2000")),
            max_expanded_bytes=int(float(env.get("ATHANOR_MAX_EXPANDED_GB", "20")) * 1e9),
            max_expansion_ratio=float(env.get("ATHANOR_MAX_EXPANSION_RATIO", "200")),
            restatement_min_share=float(env.get("ATHANOR_RESTATEMENT_MIN_SHARE", "0.5")),
            idle_below_pct=float(env.get("ATHANOR_IDLE_BELOW_PCT", "5")),
            warehouse_mode=_warehouse_mode(env.get("ATHANOR_WAREHOUSE_MODE", "file")),
            lake_catalog_uri=env.get("ATHANOR_LAKE_CATALOG_URI") or None,
            lake_warehouse=env.get("ATHANOR_LAKE_WAREHOUSE") or None,
            lake_namespace=env.get("ATHANOR_LAKE_NAMESPACE", "athanor"),
            lake_cache=Path(env.get("ATHANOR_LAKE_CACHE", str(warehouse.parent / "lake-cache"))),
            lake_cache_bytes=int(float(env.get("ATHANOR_LAKE_CACHE_GB", "20")) * 1e9),
            idle_minutes=float(env.get("ATHANOR_IDLE_MINUTES", "30")),
            job_reject_max_share=float(env.get("ATHANOR_JOB_REJECT_MAX_SHARE", "0.1")),
            node_tag_key=env.get("ATHANOR_NODE_TAG_KEY") or None,
            spot_phase_policy=_spot_phase_policy(env.get("ATHANOR_SPOT_PHASE_POLICY", "evidence")),
            gpu_sample_cap_minutes=(
                float(env["ATHANOR_GPU_SAMPLE_CAP_MINUTES"])
                if env.get("ATHANOR_GPU_SAMPLE_CAP_MINUTES")
                else None
            ),
            **{
                name: pricing_value(name, env[variable])
                for name, (variable, *_) in PRICING_ASSUMPTIONS.items()
                if env.get(variable)
            },
        )


def _positive(env: Mapping[str, str], variable: str, default: str) -> float:
    text = env.get(variable, default)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{variable} must be a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise ValueError(f"{variable} must be a positive number of seconds, got {text!r}")
    return value


def _spot_phase_policy(text: str) -> str:
    from athanor.recommend.phases import spot_phase_policy  # the policies are named beside their rule

    return spot_phase_policy(text)


def _warehouse_mode(text: str) -> str:
    mode = text.strip().lower() or "file"
    if mode not in ("file", "lake"):
        raise ValueError(f"ATHANOR_WAREHOUSE_MODE must be file or lake, got {text!r}")
    return mode


def _severity_levels(text: str) -> tuple[tuple[str, str], ...]:
    """`"rule=warn, other_rule=error"` as (rule, level) pairs; the quality config checks the levels."""
    levels = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        rule, _, level = item.partition("=")
        levels[rule.strip()] = level.strip()  # a rule named twice: the last one wins
    return tuple(levels.items())
