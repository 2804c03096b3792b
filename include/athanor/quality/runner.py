"""Run a suite with Great Expectations inside DuckDB, and keep its results.

GX runs on the caller's own connection (see `gx_duckdb.py`): the batch may be a
temp table inside an open load transaction (`delivery`), and every expectation is
pushed down as SQL; no rows are pulled into pandas.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from athanor.errors import DataRejected
from athanor.quality.suites import ERROR, SOURCE_COLUMN, WARN, QualityConfig, Rule, suite_rules
from athanor.warehouse import insert_rows, quote_ident, sql

EXAMPLES = 5
# Tables that hold many loads: a batch is the rows of one load_id.
LOADED_TABLES = ("billing_facts", "job_run_facts", "storage_objects", "gpu_samples")
BATCH_VIEW = "dq_batch"


@dataclass(frozen=True)
class BatchContext:
    run_id: str
    load_id: str | None = None
    file_names: tuple[str, ...] = ()
    as_of: date | None = None
    source_format: str | None = None  # 'focus' | 'cur2': messages then name the source's columns


@dataclass(frozen=True)
class RuleResult:
    rule: str
    column: str | None
    severity: str  # error | warn
    success: bool
    unexpected_count: int | None
    examples: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    observed_value: str | None = None
    exception: str | None = None  # the rule could not be evaluated
    unit: str = "row"

    def line(self, default_files: tuple[str, ...] = (), source_format: str | None = None) -> str:
        """`file: rule R failed on column C, N bad rows (e.g. row 3: value, ...)`."""
        files = ", ".join(self.files or default_files) or "batch"
        column = SOURCE_COLUMN.get(source_format or "", {}).get(self.column or "", self.column)
        text = f"{files}: rule {self.rule} failed" + (f" on column {column}" if column else "")
        if self.exception:
            return text + f" (could not be evaluated: {self.exception})"
        if self.unexpected_count is not None:
            plural = "s" if self.unexpected_count != 1 else ""
            text += f", {self.unexpected_count:,} bad {self.unit}{plural}"
        elif self.observed_value is not None:
            text += f", observed {self.observed_value}"
        if self.examples:
            more = ", ..." if (self.unexpected_count or 0) > len(self.examples) else ""
            text += f" (e.g. {', '.join(self.examples)}{more})"
        return text


@dataclass(frozen=True)
class ValidationOutcome:
    suite: str
    table: str
    context: BatchContext
    results: tuple[RuleResult, ...]
    document: dict[str, Any] = field(default_factory=dict)  # the GX result documents, as JSON
    seconds: float = 0.0
    checked_at: datetime = field(default_factory=lambda: datetime.now(UTC).replace(tzinfo=None))

    @property
    def failures(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.results if not r.success)

    @property
    def errors(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.failures if r.severity == ERROR)

    @property
    def warnings(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.failures if r.severity == WARN)

    @property
    def ok(self) -> bool:
        return not self.errors

    def message(self) -> str:
        """One line: the first error (else the first warning), and how many other rules failed."""
        shown = (self.errors or self.warnings)[:1]
        if not shown:
            return f"{', '.join(self.context.file_names) or self.table}: all {len(self.results)} {self.suite} rules passed"
        line = shown[0].line(self.context.file_names, self.context.source_format)
        others = [r.rule for r in self.failures if r is not shown[0]]
        if others:
            line += f"; {len(others)} more rule(s) failed: {', '.join(others)}"
        return line

    def lines(self) -> list[str]:
        """One line per failed rule, errors first."""
        return [
            f"[{r.severity}] " + r.line(self.context.file_names, self.context.source_format)
            for r in self.errors + self.warnings
        ]


class QualityError(DataRejected, ValueError):
    """A batch with an error-level rule failure; `str()` is `outcome.message()`."""

    def __init__(self, outcome: ValidationOutcome) -> None:
        self.outcome = outcome
        super().__init__(outcome.message())


def _show(value: Any) -> str:
    if isinstance(value, Decimal):
        text = format(value.normalize(), "f")
        return text if text != "-0" else "0"
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, str):
        return value if len(value) <= 80 else value[:77] + "..."
    return "null" if value is None else str(value)


def _example(entry: Mapping[str, Any], source_format: str | None) -> tuple[str | None, str]:
    """(file, 'row 3: value') from one unexpected row GX returned."""
    names = SOURCE_COLUMN.get(source_format or "", {})
    file = entry.get("source_file")
    row = entry.get("source_row")
    values = {k: v for k, v in entry.items() if k not in ("source_file", "source_row")}
    if len(values) == 1:
        shown = _show(next(iter(values.values())))
    else:
        shown = ", ".join(f"{names.get(k, k)}={_show(v)}" for k, v in values.items())
    if "bucket" in entry and "key" in entry and row is None:
        return None, shown
    return file, (f"row {row}: {shown}" if row is not None else shown)


def _raised(info: Mapping[str, Any] | None) -> str | None:
    """The first exception message in a GX exception_info (flat, or keyed by metric)."""
    if not info:
        return None
    entries = [info] if "raised_exception" in info else [v for v in info.values() if isinstance(v, Mapping)]
    for entry in entries:
        if entry.get("raised_exception"):
            return str(entry.get("exception_message") or "unknown error").strip().splitlines()[0]
    return None


def _rule_result(rule: Rule, severity: str, gx_result: Any, source_format: str | None) -> RuleResult:
    message = _raised(gx_result.exception_info)
    if message:
        # A rule that cannot run proves nothing: it blocks like an error.
        return RuleResult(rule.name, rule.column, ERROR, False, None, exception=message, unit=rule.unit)
    result = gx_result.result or {}
    if rule.expectation == "UnexpectedRowsExpectation":
        count = int(result.get("observed_value") or 0)
        entries = (result.get("details") or {}).get("unexpected_rows") or []
    else:
        count = result.get("unexpected_count")
        entries = result.get("partial_unexpected_index_list") or [
            {"value": v} for v in result.get("partial_unexpected_list") or []
        ]
    examples, files = [], []
    for entry in entries[:EXAMPLES]:
        file, shown = _example(entry, source_format)
        examples.append(shown)
        if file and file not in files:
            files.append(file)
    observed = result.get("observed_value")
    return RuleResult(
        rule.name,
        rule.column,
        severity,
        bool(gx_result.success),
        None if count is None else int(count),
        tuple(examples) if not gx_result.success else (),
        tuple(files) if not gx_result.success else (),
        None if observed is None else _show(observed),
        unit=rule.unit,
    )


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [row[0] for row in con.execute(f"describe select * from {quote_ident(table)}").fetchall()]


FileFigures = Mapping[str, Any] | Iterable[tuple[Path | str, int, Mapping[str | None, Decimal]]]


def _figures(file_figures: FileFigures) -> list[tuple[str, int, Mapping[str | None, Decimal]]]:
    """(file name, rows, {currency: BilledCost total}) from ingest's per-file totals or plain tuples."""
    if isinstance(file_figures, Mapping):
        return [(Path(name).name, int(t.rows), dict(t.billed)) for name, t in file_figures.items()]
    return [(Path(file).name, int(rows), dict(totals)) for file, rows, totals in file_figures]


def _prepare(
    con: duckdb.DuckDBPyConnection,
    context: BatchContext,
    config: QualityConfig,
    file_figures: FileFigures | None,
) -> None:
    """Temp tables the SQL rules read: bound parameters and the figures read from the files."""
    params = {
        "load_id": context.load_id or "",
        "restatement_min_share": config.restatement_min_share,
        "as_of": context.as_of,
    }
    con.execute(sql("quality/run/params"), params)
    con.execute(sql("quality/run/file_figures"))
    if file_figures is not None:
        rows = [
            {
                "source_file": name,
                "billing_currency": currency,
                "file_rows": file_rows,
                "file_billed_cost": total,
            }
            for name, file_rows, totals in _figures(file_figures)
            for currency, total in (totals.items() or [(None, None)])
        ]
        insert_rows(con, "dq_file_figures", rows)
    elif context.load_id:
        con.execute(sql("quality/run/file_figures_from_reconciliations"), {"load_id": context.load_id})


def _quiet_gx() -> None:
    """Great Expectations' INFO chatter off (its warnings still show).

    GX logs at INFO every function its import decorates, and the context, data source and
    batch it builds: ~400 lines of a load's task log, burying what was loaded and rejected.
    """
    for name, logger in [("great_expectations", None), *logging.root.manager.loggerDict.items()]:
        if name.startswith("great_expectations") and not isinstance(logger, logging.PlaceHolder):
            logging.getLogger(name).setLevel(logging.WARNING)


_gx_importing = threading.Lock()
_gx_ready = threading.Event()


def _import_gx() -> None:
    """Import Great Expectations and its DuckDB dialect, quietly, once per process."""
    with _gx_importing:  # a load that reaches its rules while the warm-up imports waits for it
        if _gx_ready.is_set():
            return
        _quiet_gx()  # before the import, which logs a line per decorated function
        import great_expectations  # noqa: F401

        from athanor.quality import gx_duckdb

        gx_duckdb.install()
        _quiet_gx()  # again: GX sets some of its loggers' levels as it imports them
        _gx_ready.set()


def start_importing_gx() -> None:
    """Import Great Expectations on a thread of its own, for a load about to stage a delivery.

    The import is 3.5-5 s of Python, the same at any size: 40 % of a 1M-line load's time was
    spent in it after DuckDB had staged the rows. DuckDB stages without holding the GIL, so
    the import runs on the other core meanwhile. An import that fails is raised again where
    the rules need it.
    """
    if not _gx_ready.is_set():
        threading.Thread(target=_import_quietly, name="import-great-expectations", daemon=True).start()


def _import_quietly() -> None:
    with contextlib.suppress(Exception):
        _import_gx()


ROWS_TABLE = "dq_rows_{}"
# GX asks for {batch} in a row query (it warns without); a leading comment keeps it, says what
# the table holds, and survives GX wrapping the query in `select count(*) from (...)`.
_FROM_ROWS = "/* rule {rule}: its SQL run once on {{batch}} */ select * from {table}"


def _run_once(
    con: duckdb.DuckDBPyConnection, table: str, rules: list[tuple[Rule, str]]
) -> tuple[list[tuple[Rule, str]], list[str]]:
    """Each row-query rule's SQL run once, into a temp table that the rule GX runs then reads.

    GX computes a row-query rule as two metrics, each its own query over the batch: the
    unexpected rows (fetched up to a cap) and their count; on a failure, once more for the
    examples. A rule reading the whole delivery (uniqueness, reconciliation, history) thus read
    it two or three times. Here DuckDB evaluates the rule's SQL on the batch once, keeping its
    unexpected rows in order (usually none); GX still runs every rule, verdict and count and
    examples, from that result. A query that fails to run here is left to GX as it was, so
    the failure is reported by GX as before ("could not be evaluated").
    """
    fed: list[tuple[Rule, str]] = []
    tables: list[str] = []
    for rule, severity in rules:
        query = rule.kwargs.get("unexpected_rows_query")
        if rule.expectation != "UnexpectedRowsExpectation" or not isinstance(query, str):
            fed.append((rule, severity))
            continue
        name = ROWS_TABLE.format(len(tables))
        try:
            # As GX substitutes it: the batch's table name; braces doubled in the SQL undone.
            body = query.format(batch=table).rstrip("; \t\r\n\v\f")
            con.execute(f"create or replace temp table {name} as\n{body}\n")
        except duckdb.Error:
            fed.append((rule, severity))
            continue
        tables.append(name)
        kwargs = {**rule.kwargs, "unexpected_rows_query": _FROM_ROWS.format(rule=rule.name, table=name)}
        fed.append((replace(rule, kwargs=kwargs), severity))
    return fed, tables


def _drop(con: duckdb.DuckDBPyConnection, tables: list[str]) -> None:
    for name in tables:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction drops them at its rollback
            con.execute(f"drop table if exists {name}")


def _gx_validate(
    con: duckdb.DuckDBPyConnection, table: str, rules: list[tuple[Rule, str]], index_columns: list[str]
):
    """Run the rules with GX on `table`; returns (GX results in rule order, GX JSON documents)."""
    rules, computed = _run_once(con, table, rules)
    try:
        return _gx_run(con, table, rules, index_columns)
    finally:
        _drop(con, computed)


def _gx_run(
    con: duckdb.DuckDBPyConnection, table: str, rules: list[tuple[Rule, str]], index_columns: list[str]
):
    _import_gx()
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from sqlalchemy.pool import StaticPool

    from athanor.quality import gx_duckdb

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    engine = gx_duckdb.engine_for(con)
    datasource = context.data_sources.add_sql(
        name="athanor_warehouse",
        connection_string=gx_duckdb.DRIVER_URL,
        kwargs={"creator": engine.pool._creator, "poolclass": StaticPool},
    )
    batch = (
        datasource.add_table_asset(name=table, table_name=table)
        .add_batch_definition_whole_table("batch")
        .get_batch()
    )

    def run(members: list[Rule], result_format: str) -> None:
        expectations = [
            getattr(gx.expectations, r.expectation)(**dict(r.kwargs), meta={"rule": r.name}) for r in members
        ]
        suite = gx.ExpectationSuite(name=f"athanor_{result_format.lower()}", expectations=expectations)
        fmt: dict[str, Any] = {"result_format": result_format, "partial_unexpected_count": EXAMPLES}
        if index_columns and result_format == "SUMMARY":
            fmt["unexpected_index_column_names"] = index_columns
        validation = batch.validate(suite, result_format=fmt)
        documents.append(validation.to_json_dict())
        for gx_result in validation.results:
            by_id[gx_result.expectation_config.meta["rule"]] = gx_result

    by_id: dict[str, Any] = {}
    documents: list[dict[str, Any]] = []
    run([rule for rule, _ in rules], "SUMMARY")
    # Row-query rules return their rows only in COMPLETE mode, which for column-map rules
    # would list every bad value: only the row-query rules that failed run again for examples.
    failed_queries = [
        rule
        for rule, _ in rules
        if rule.expectation == "UnexpectedRowsExpectation"
        and by_id[rule.name].success is False
        and not _raised(by_id[rule.name].exception_info)
    ]
    if failed_queries:
        run(failed_queries, "COMPLETE")
    return [by_id[rule.name] for rule, _ in rules], documents


def validate_batch(
    con: duckdb.DuckDBPyConnection,
    table: str,
    suite: str,
    *,
    context: BatchContext,
    config: QualityConfig | None = None,
    file_figures: FileFigures | None = None,
) -> ValidationOutcome:
    """Validate one batch of `table` with a suite, in DuckDB, on the caller's connection.

    A table that holds many loads (billing_facts, job_run_facts, storage_objects) is
    narrowed to `context.load_id`; any other table or view (e.g. the load's temp table
    `delivery`, or a view of a raw file) is the batch as a whole. `file_figures` are the
    (file, rows, {currency: BilledCost total}) read from the files (or ingest's
    {file: totals}), for the reconciliation rule; without them the `reconciliations`
    rows of the load are used.
    """
    started = time.monotonic()
    config = config or QualityConfig.from_env()
    _prepare(con, context, config, file_figures)
    target = table
    if table in LOADED_TABLES and context.load_id:
        load = "'" + context.load_id.replace("'", "''") + "'"
        con.execute(sql("quality/run/batch_view", view=BATCH_VIEW, table=quote_ident(table), load_id=load))
        target = BATCH_VIEW
    columns = _columns(con, target)
    index_columns = [c for c in ("source_file", "source_row") if c in columns]
    if not index_columns and {"bucket", "key"} <= set(columns):
        index_columns = ["bucket", "key"]
    rules = [
        (rule, config.severity_of(rule)) for rule in suite_rules(suite, set(columns), context.source_format)
    ]
    gx_results, documents = _gx_validate(con, target, rules, index_columns)
    results = tuple(
        _rule_result(rule, severity, gx_result, context.source_format)
        for (rule, severity), gx_result in zip(rules, gx_results, strict=True)
    )
    con.execute(f"drop view if exists {BATCH_VIEW}")
    document = {
        "suite": suite,
        "table": table,
        "run_id": context.run_id,
        "load_id": context.load_id,
        "validations": documents,
    }
    return ValidationOutcome(suite, table, context, results, document, time.monotonic() - started)


def store_results(
    con: duckdb.DuckDBPyConnection, outcome: ValidationOutcome, artifacts_dir: Path | None = None
) -> Path | None:
    """Write every rule's result to `dq_results` (replacing an earlier check of the same batch),
    and the GX result document to `<artifacts_dir>/<run_id>/dq-<suite>-<load_id>.json`."""
    ctx = outcome.context
    con.execute(
        "delete from dq_results where run_id = ? and load_id is not distinct from ? and suite = ?",
        [ctx.run_id, ctx.load_id, outcome.suite],
    )
    rows = [
        {
            "run_id": ctx.run_id,
            "load_id": ctx.load_id,
            "suite": outcome.suite,
            "table_name": outcome.table,
            "rule": r.rule,
            "column_name": r.column,
            "severity": r.severity,
            "success": r.success,
            "observed_value": r.observed_value,
            "unexpected_count": r.unexpected_count,
            "examples": list(r.examples),
            "files": list(r.files) or list(ctx.file_names),
            "exception": r.exception,
            "checked_at": outcome.checked_at,
        }
        for r in outcome.results
    ]
    insert_rows(con, "dq_results", rows)
    if artifacts_dir is None:
        return None
    path = Path(artifacts_dir) / ctx.run_id / f"dq-{outcome.suite}-{ctx.load_id or 'batch'}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(outcome_document(outcome), indent=1, default=str))
    return path


def outcome_document(outcome: ValidationOutcome) -> dict[str, Any]:
    """What Athanor concluded (message, failures) next to the GX result documents."""
    return {
        "message": outcome.message(),
        "ok": outcome.ok,
        "checked_at": outcome.checked_at.isoformat(),
        "files": list(outcome.context.file_names),
        "failures": [
            {
                "rule": r.rule,
                "column": r.column,
                "severity": r.severity,
                "unexpected_count": r.unexpected_count,
                "examples": list(r.examples),
                "files": list(r.files),
                "exception": r.exception,
            }
            for r in outcome.failures
        ],
        "great_expectations": outcome.document,
    }


def check_delivery(
    con: duckdb.DuckDBPyConnection,
    source_format: Any,
    *,
    load_id: str,
    file_names: Iterable[str],
    file_figures: FileFigures,
    run_id: str | None = None,
    as_of: date | None = None,
    config: QualityConfig | None = None,
) -> ValidationOutcome:
    """The ingest hook: validate the load's rows in billing_facts before they replace anything.

    Call it inside the load's transaction, after the files are staged and before
    restated rows are deleted (the history rules compare with them). Passing: the
    results go to `dq_results` (they commit with the load) and the outcome, maybe
    with warnings, is returned. An error-level failure raises `QualityError`
    carrying the outcome: the transaction rolls back, and the caller stores the
    results and quarantines the files. `source_format` is the BillingFormat or its name.
    """
    name = getattr(source_format, "name", source_format)
    context = BatchContext(run_id or f"load-{load_id}", load_id, tuple(file_names), as_of, name)
    outcome = validate_batch(
        con, "billing_facts", "billing_facts", context=context, config=config, file_figures=file_figures
    )
    if not outcome.ok:
        raise QualityError(outcome)
    store_results(con, outcome)
    return outcome


def warnings_for_load(con: duckdb.DuckDBPyConnection, load_id: str) -> list[str]:
    """The stored warning lines of a load's latest check (for the run summary and the report)."""
    rows = con.execute(sql("quality/run/load_warnings"), {"load_id": load_id}).fetchall()
    return [
        f"{', '.join(files)}: rule {rule} warned, {count} bad row{'s' if count != 1 else ''} (e.g. {', '.join(examples)})"
        for rule, count, examples, files in rows
    ]
