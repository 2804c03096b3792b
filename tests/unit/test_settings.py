"""Configuration flows one way: the environment is read once, into Settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from athanor.quality import QualityConfig
from athanor.settings import Settings


def test_defaults_follow_the_home_folder(tmp_path: Path) -> None:
    s = Settings.from_env({"ATHANOR_HOME": str(tmp_path)})
    assert (s.warehouse, s.snapshot, s.landing, s.reports) == (
        tmp_path / "warehouse" / "athanor.duckdb",
        tmp_path / "warehouse" / "athanor-snapshot.duckdb",
        str(tmp_path / "landing"),
        tmp_path / "reports",
    )
    assert (s.alert_webhook, s.dq_severity, s.watch.budgets, s.s3_endpoint_url, s.aws_region) == (
        None,
        (),
        None,
        None,
        "us-east-1",
    )


def test_every_knob_is_read_here() -> None:
    s = Settings.from_env(
        {
            "ATHANOR_ALERT_WEBHOOK": "https://hooks.example.invalid/T000/secret-token",
            "ATHANOR_DQ_SEVERITY": " line_item_unique=warn, ,cost_jump = error,line_item_unique=error",
            "ATHANOR_ANOMALY_K": "3.5",
            "ATHANOR_BUDGETS": "budgets.yaml",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
            "AWS_REGION": "eu-west-1",
        }
    )
    assert s.alert_webhook == "https://hooks.example.invalid/T000/secret-token"
    # A rule named twice: the last level wins.
    assert s.dq_severity == (("line_item_unique", "error"), ("cost_jump", "error"))
    assert (s.watch.anomaly_k, s.watch.budgets) == (3.5, Path("budgets.yaml"))
    assert (s.s3_endpoint_url, s.aws_region) == ("http://127.0.0.1:9000", "eu-west-1")
    with pytest.raises(ValueError, match="ATHANOR_ANOMALY_WEEKS must be a whole number, got 'eight'"):
        Settings.from_env({"ATHANOR_ANOMALY_WEEKS": "eight"})
    # A count of days, weeks or months below 1 would read no history (the watch's window from
    # a day after as_of): refused, naming the variable.
    for variable in (
        "ATHANOR_WATCH_HISTORY_DAYS",
        "ATHANOR_ANOMALY_MIN_WEEKS",
        "ATHANOR_FORECAST_HORIZON_DAYS",
    ):
        with pytest.raises(ValueError, match=f"{variable} must be at least 1, got '0'"):
            Settings.from_env({variable: "0"})
    assert Settings.from_env({"ATHANOR_WATCH_HISTORY_DAYS": "1"}).watch.history_days == 1
    # Athanor's own endpoint variable wins over AWS's.
    both = {"ATHANOR_S3_ENDPOINT_URL": "http://127.0.0.1:7480", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}
    assert Settings.from_env(both).s3_endpoint_url == "http://127.0.0.1:7480"


def test_the_webhook_stays_out_of_logs_and_settings_stay_hashable() -> None:
    s = Settings.from_env({"ATHANOR_ALERT_WEBHOOK": "https://hooks.example.invalid/secret-token"})
    assert "secret-token" not in repr(s)
    assert hash(s) == hash(
        Settings.from_env({"ATHANOR_ALERT_WEBHOOK": "https://hooks.example.invalid/secret-token"})
    )


def test_the_quality_config_is_built_from_the_settings() -> None:
    s = Settings.from_env({"ATHANOR_DQ_SEVERITY": "line_item_unique=warn"})
    config = QualityConfig.from_settings(s)
    assert dict(config.severity) == {"line_item_unique": "warn"}
    with pytest.raises(ValueError, match="severity of rule line_item_unique"):
        QualityConfig.from_settings(Settings.from_env({"ATHANOR_DQ_SEVERITY": "line_item_unique=fatal"}))
