"""Data-quality suites, configuration, results and quarantine (GX runs on small DuckDB tables)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import duckdb
import pytest

from athanor.quality import (
    BatchContext,
    QualityConfig,
    RuleResult,
    ValidationOutcome,
    list_quarantine,
    quarantine,
    release,
    store_results,
    suite_rules,
    validate_batch,
)
from athanor.warehouse import migrate


@pytest.fixture
def con():
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    migrate(con)
    yield con
    con.close()


def test_every_suite_has_named_unique_rules_with_valid_severity():
    for suite in ("billing_facts", "job_run_facts", "storage_objects", "focus_raw", "cur2_raw"):
        rules = suite_rules(suite)
        names = [r.name for r in rules]
        assert len(names) == len(set(names)) > 5
        assert {r.severity for r in rules} <= {"error", "warn"}
    with pytest.raises(KeyError, match="unknown data-quality suite 'nope'"):
        suite_rules("nope")


def test_billing_suite_covers_the_rules_asked_for():
    names = {r.name for r in suite_rules("billing_facts")}
    assert {
        "charge_category_in_set",
        "pricing_category_in_set",
        "commitment_discount_status_in_set",
        "charge_frequency_in_set",
        "pricing_model_in_set",
        "usage_quantity_non_negative",
        "cost_negative_only_for_credits",
        "charge_period_within_billing_period",
        "charge_period_end_after_start",
        "line_item_unique",
        "currency_consistent_per_account",
        "reconciles_with_file",
        "restated_period_shrank",
        "delivery_repeats_loaded_file",
    } <= names
    severity = {r.name: r.severity for r in suite_rules("billing_facts")}
    assert severity["delivery_repeats_loaded_file"] == "warn" and severity["line_item_unique"] == "error"
    # Cost anomalies are the spend watch's (athanor.watch), not a quality rule computed a second way.
    assert "daily_cost_anomaly" not in names


def test_config_overrides_severity_from_env_and_rejects_unknown_levels():
    config = QualityConfig.from_env(
        {
            "ATHANOR_DQ_SEVERITY": "line_item_unique=warn, delivery_repeats_loaded_file=error",
        }
    )
    rules = {r.name: r for r in suite_rules("billing_facts")}
    assert config.severity_of(rules["line_item_unique"]) == "warn"
    assert config.severity_of(rules["delivery_repeats_loaded_file"]) == "error"
    assert config.severity_of(rules["charge_category_in_set"]) == "error"  # default kept
    with pytest.raises(ValueError, match="must be one of"):
        QualityConfig(severity={"line_item_unique": "fatal"})
    with pytest.raises(TypeError):
        config.severity["x"] = "warn"  # frozen


def test_message_names_file_rule_source_column_count_and_examples():
    result = RuleResult(
        "charge_period_within_billing_period",
        "charge_period_start",
        "error",
        False,
        12,
        ("row 3: 2026-10-31 23:00:00", "row 4: 2026-10-31 23:00:00"),
        ("focus-2026-11.csv.gz",),
    )
    outcome = ValidationOutcome(
        "billing_facts", "billing_facts", BatchContext("r", "l", ("a.csv",), None, "focus"), (result,)
    )
    assert not outcome.ok
    assert outcome.message() == (
        "focus-2026-11.csv.gz: rule charge_period_within_billing_period failed on column ChargePeriodStart, "
        "12 bad rows (e.g. row 3: 2026-10-31 23:00:00, row 4: 2026-10-31 23:00:00, ...)"
    )


def _jobs(con):
    con.execute(
        """insert into job_run_facts (load_id, source_file, source_row, source, job_id, start_time, end_time, state,
               instance_count, gpus_per_instance, pricing_model, duration_s, censored, gpu_count) values
           ('L1', 'jobs.csv', 1, 'generic', 'a', '2026-11-01 00:00', '2026-11-01 02:00', 'completed', 2, 8, 'spot', 7200, false, 16),
           ('L1', 'jobs.csv', 2, 'generic', 'b', '2026-11-01 00:00', '2026-11-01 01:00', 'exploded', 1, 8, 'on_demand', 3600, false, 8),
           ('L1', 'jobs.csv', 3, 'generic', 'c', '2026-11-01 05:00', '2026-11-01 04:00', 'preempted', 1, 8, 'spot', -3600, true, 4),
           ('L0', 'old.csv', 1, 'generic', 'z', '2026-10-01 00:00', '2026-10-01 01:00', 'unknown', 1, 1, 'spot', 1, false, 1)"""
    )


@pytest.mark.slow
def test_job_suite_on_one_load_and_severity_override(con, tmp_path):
    _jobs(con)
    context = BatchContext("run-1", "L1", ("jobs.csv",), date(2026, 11, 2))
    outcome = validate_batch(con, "job_run_facts", "job_run_facts", context=context, config=QualityConfig())
    failed = {r.rule: (r.unexpected_count, r.examples) for r in outcome.failures}
    # Load L0's unknown state is outside the batch; L1 has one bad state, one end before start,
    # one negative duration and one gpu_count (4) != 1 x 8.
    assert failed == {
        "job_state_in_set": (1, ("row 2: exploded",)),
        "job_end_after_start": (1, ("row 3: end_time=2026-11-01 04:00:00, start_time=2026-11-01 05:00:00",)),
        "duration_non_negative": (1, ("row 3: -3600.0",)),
        "job_gpu_count_consistent": (1, ("row 3: 4",)),
    }
    assert outcome.message() == (
        "jobs.csv: rule job_state_in_set failed on column state, 1 bad row (e.g. row 2: exploded); "
        "3 more rule(s) failed: duration_non_negative, job_end_after_start, job_gpu_count_consistent"
    )
    relaxed = QualityConfig().with_severity(
        job_state_in_set="warn",
        job_end_after_start="warn",
        duration_non_negative="warn",
        job_gpu_count_consistent="warn",
    )
    assert validate_batch(con, "job_run_facts", "job_run_facts", context=context, config=relaxed).ok

    path = store_results(con, outcome, tmp_path / "artifacts")
    stored = con.execute(
        "select rule, severity, success, unexpected_count from dq_results where not success order by rule"
    ).fetchall()
    assert stored == [
        ("duration_non_negative", "error", False, 1),
        ("job_end_after_start", "error", False, 1),
        ("job_gpu_count_consistent", "error", False, 1),
        ("job_state_in_set", "error", False, 1),
    ]
    total = con.execute("select count(*) from dq_results").fetchone()[0]
    assert total == len(suite_rules("job_run_facts"))
    store_results(con, outcome)  # re-storing the same check replaces it
    assert con.execute("select count(*) from dq_results").fetchone()[0] == total
    document = json.loads(path.read_text())
    assert path == tmp_path / "artifacts" / "run-1" / "dq-job_run_facts-L1.json"
    assert document["message"] == outcome.message()
    assert document["great_expectations"]["validations"][0]["success"] is False


@pytest.mark.slow
def test_storage_suite_flags_sizes_classes_and_duplicate_versions(con):
    con.execute(
        """insert into storage_objects (load_id, inventory_date, bucket, key, version_id, size_bytes, storage_class) values
           ('S1', '2026-11-30', 'ckpt', 'run1/step-100.pt', 'v1', 1000, 'STANDARD'),
           ('S1', '2026-11-30', 'ckpt', 'run1/step-200.pt', 'v1', -5, 'GLACIER'),
           ('S1', '2026-11-30', 'ckpt', 'run1/step-300.pt', 'v1', 10, 'COLD_STORAGE')"""
    )
    outcome = validate_batch(con, "storage_objects", "storage_objects", context=BatchContext("r", "S1"))
    assert {r.rule: r.unexpected_count for r in outcome.failures} == {
        "size_non_negative": 1,
        "storage_class_in_set": 1,
    }


@pytest.mark.slow
def test_raw_focus_suite_checks_columns_types_and_enums_before_mapping(con):
    con.execute(
        """create temp table src_raw as select * from (values
             ('1.5', '1.5', 'A', 'USD', '2026-11-01', '2026-12-01', 'Usage', '2026-11-01', '2026-11-02', 'usage-based'),
             ('abc', '1.5', 'A', 'USD', '2026-11-01', '2026-12-01', 'Refund', 'soon', '2026-11-02', 'Weekly'))
           t(BilledCost, EffectiveCost, BillingAccountId, BillingCurrency, BillingPeriodStart, BillingPeriodEnd,
             ChargeCategory, ChargePeriodStart, ChargePeriodEnd, ChargeFrequency)"""
    )
    outcome = validate_batch(con, "src_raw", "focus_raw", context=BatchContext("r", None, ("f.csv",)))
    assert {r.rule: (r.unexpected_count, r.examples) for r in outcome.failures} == {
        "BilledCost_is_decimal": (1, ("abc",)),
        "ChargePeriodStart_is_timestamp": (1, ("soon",)),
        "ChargeCategory_in_set": (1, ("Refund",)),
        "ChargeFrequency_in_set": (1, ("Weekly",)),
    }


@pytest.mark.slow
def test_reconciliation_rule_compares_loaded_rows_with_file_figures(con):
    con.execute(
        """insert into billing_facts (load_id, source_file, source_row, source_format, billing_account_id,
               billing_currency, billing_period_start, billing_period_end, charge_period_start, charge_period_end,
               charge_category, billed_cost, effective_cost) values
           ('B1', 'a.csv', 1, 'focus', 'acct', 'USD', '2026-11-01', '2026-12-01', '2026-11-01', '2026-11-02', 'Usage', 2.50, 2.50),
           ('B1', 'a.csv', 2, 'focus', 'acct', 'USD', '2026-11-01', '2026-12-01', '2026-11-02', '2026-11-03', 'Usage', 1.25, 1.25)"""
    )
    context = BatchContext("r", "B1", ("a.csv",), None, "focus")
    good = validate_batch(
        con,
        "billing_facts",
        "billing_facts",
        context=context,
        file_figures=[("a.csv", 2, {"usd": Decimal("3.75")})],
    )  # 2.50 + 1.25
    assert good.ok and not good.failures
    bad = validate_batch(
        con,
        "billing_facts",
        "billing_facts",
        context=context,
        file_figures=[("a.csv", 3, {"USD": Decimal("3.70")})],
    )
    (failure,) = bad.failures
    assert failure.rule == "reconciles_with_file" and failure.unexpected_count == 2
    assert failure.examples == (
        "USD file 3.700000000000, loaded 3.750000000000",
        "file has 3 rows, loaded 2 rows",
    )


def test_quarantine_and_release_round_trip(tmp_path):
    landing = tmp_path / "landing" / "export-2026-11"
    landing.mkdir(parents=True)
    parts = [landing / "part-1.csv", landing / "part-2.csv"]
    for i, part in enumerate(parts):
        part.write_text(f"data {i}\n")
    target = quarantine(parts, "part-2.csv: rule line_item_unique failed", tmp_path / "q", "run-7")
    assert target == tmp_path / "q" / "run-7" / "export-2026-11"
    assert not any(p.exists() for p in parts)
    assert (
        json.loads((target / "validation.json").read_text())["message"]
        == "part-2.csv: rule line_item_unique failed"
    )
    (listed,) = list_quarantine(tmp_path / "q")
    assert (listed.run_id, listed.files) == ("run-7", ("part-1.csv", "part-2.csv"))
    released = release(target, tmp_path / "q")
    assert released == [str(p) for p in parts] and [p.read_text() for p in parts] == ["data 0\n", "data 1\n"]
    assert not (tmp_path / "q" / "run-7").exists()


def test_a_row_query_rule_reads_the_batch_once_and_gx_still_gives_count_and_examples(con):
    # GX computes a row-query rule as two queries (its rows, their count) and, failing, both
    # again for the examples: four passes over the batch. The runner evaluates the rule's SQL
    # once; a Python function in the rule counts the rows it is called on.
    from athanor.quality.runner import _gx_validate
    from athanor.quality.suites import Rule

    calls = []
    con.create_function("negative", lambda x: calls.append(x) or x < 0, ["INTEGER"], "BOOLEAN")
    con.execute("create temp table batch as select * from (values (1, -4), (2, 7), (3, -1)) t(source_row, x)")
    rule = Rule(
        "x_not_negative",
        "UnexpectedRowsExpectation",
        {
            "unexpected_rows_query": "select source_row, x as value from {batch} where negative(x) order by source_row"
        },
    )
    (result,), documents = _gx_validate(con, "batch", [(rule, "error")], ["source_row"])
    assert sorted(calls) == [-4, -1, 7]  # three rows, one pass
    assert result.success is False and result.result["observed_value"] == 2
    assert result.result["details"]["unexpected_rows"] == [
        {"source_row": 1, "value": -4},
        {"source_row": 3, "value": -1},
    ]
    assert len(documents) == 2  # SUMMARY, then COMPLETE for the failed rule: both GX's documents
    # The rows table is gone afterwards; a second run on the same connection works the same.
    assert not con.execute("select * from duckdb_tables() where table_name like 'dq_rows_%'").fetchall()


def test_a_row_query_rule_that_cannot_run_is_reported_by_gx_as_before(con):
    from athanor.quality.runner import _gx_validate, _raised
    from athanor.quality.suites import Rule

    con.execute("create temp table batch as select 1 as source_row")
    rule = Rule("broken", "UnexpectedRowsExpectation", {"unexpected_rows_query": "select nope from {batch}"})
    (result,), _ = _gx_validate(con, "batch", [(rule, "error")], ["source_row"])
    assert result.success is False
    assert "nope" in _raised(result.exception_info)
