"""Budgets: a file of monthly amounts per scope, held against the month's actual and forecast spend.

The file (ATHANOR_BUDGETS) is YAML (a `budgets:` list of mappings) or CSV (one budget a row),
with the fields below; README "Budgets" shows both. Like the cloud consoles' budgets, each has
alert thresholds in % of the amount, against the actual spend of the month so far and against
the forecast of the whole month. Every error names the file, the row, the column and the rule.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import yaml

SCOPES = ("total", "team", "account", "service")
COLUMNS = ("name", "scope", "value", "amount", "currency", "alert_actual_pct", "alert_forecast_pct")
REQUIRED = ("name", "scope", "amount")
DEFAULT_ACTUAL_PCT = (100.0,)
DEFAULT_FORECAST_PCT = (100.0,)
# A budgets file is a few lines a person writes: these bound what a wrong or hostile one costs.
MAX_BYTES = 1_000_000
MAX_DEPTH = 32  # `budgets:` > a list > a mapping > a list of percentages is four levels


class BudgetsError(ValueError):
    """The budgets file breaks a rule; the message lists every problem found."""


@dataclass(frozen=True)
class Budget:
    name: str
    scope_kind: str
    scope_value: str  # 'all' for the total
    amount: float
    currency: str
    alert_actual_pct: tuple[float, ...]
    alert_forecast_pct: tuple[float, ...]

    @property
    def scope(self) -> str:
        return f"{self.scope_kind}:{self.scope_value}"


@dataclass(frozen=True)
class BudgetStatus:
    budget: Budget
    month: date
    actual: float  # the month so far
    forecast: float | None  # the month whole: actual so far + forecast of the rest
    basis: str  # actual | forecast
    threshold_pct: float
    unknown: bool = False  # a bill is stale: the month's figures miss its charges

    @property
    def figure(self) -> float | None:
        return self.actual if self.basis == "actual" else self.forecast

    @property
    def breached(self) -> bool:
        figure = self.figure
        return (
            not self.unknown
            and figure is not None
            and figure >= self.budget.amount * self.threshold_pct / 100
        )

    @property
    def status(self) -> str:
        return "unknown" if self.unknown else "breached" if self.breached else "within"

    @property
    def alert_key(self) -> str:
        return f"budget:{self.budget.name}:{self.month:%Y-%m}:{self.basis}:{self.threshold_pct:g}"

    def message(self) -> str:
        b = self.budget
        figure = self.figure or 0.0
        what = "spent so far" if self.basis == "actual" else "forecast for the month"
        return (
            f"Athanor budget alert: {b.name} ({b.scope}) {self.month:%Y-%m}: {b.currency} {figure:,.2f} "
            f"{what}, {figure / b.amount:.0%} of the {b.amount:,.2f} budget "
            f"(threshold {self.threshold_pct:g}% of {self.basis})"
        )


def _percentages(raw: Any, where: str, problems: list[str]) -> tuple[float, ...] | None:
    if raw is None or raw == "":
        return None
    items = raw if isinstance(raw, list) else [p for p in re.split(r"[;\s]+", str(raw)) if p]
    out = []
    for item in items:
        try:
            pct = float(str(item).rstrip("%"))
        except ValueError:
            problems.append(f"{where}: {item!r} is not a percentage (rule: numbers, e.g. 80;100)")
            continue
        if not (0 < pct <= 1000) or not math.isfinite(pct):
            problems.append(f"{where}: {item!r} must be above 0 and at most 1000 (rule: percentage)")
            continue
        out.append(pct)
    return tuple(sorted(set(out)))


def parse_budgets(rows: list[dict[str, Any]], file: str) -> list[Budget]:
    """Budgets from rows of {column: value}, row numbers from 1; every problem in one BudgetsError."""
    problems: list[str] = []
    budgets: list[Budget] = []
    names: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        at = f"{file}: row {number}"
        if not isinstance(row, dict):
            problems.append(f"{at}: a budget must be a mapping of the columns {', '.join(COLUMNS)}")
            continue
        row = {str(k).strip().lower(): v for k, v in row.items()}
        for column in sorted(set(row) - set(COLUMNS)):
            problems.append(f"{at}, column {column}: unknown column (rule: one of {', '.join(COLUMNS)})")
        for column in REQUIRED:
            if row.get(column) in (None, ""):
                problems.append(f"{at}, column {column}: missing (rule: required)")
        name = str(row.get("name") or "").strip()
        if name in names:
            problems.append(f"{at}, column name: {name!r} is also row {names[name]} (rule: names unique)")
        names.setdefault(name, number)
        scope = str(row.get("scope") or "").strip().lower()
        if scope and scope not in SCOPES:
            problems.append(f"{at}, column scope: {scope!r} (rule: one of {', '.join(SCOPES)})")
        value = str(row.get("value") or "").strip()
        if scope == "total":
            if value not in ("", "all"):
                problems.append(f"{at}, column value: {value!r} (rule: empty or 'all' for scope total)")
            value = "all"
        elif scope in SCOPES and not value:
            problems.append(f"{at}, column value: missing (rule: the {scope} the budget is for)")
        amount = None
        if row.get("amount") not in (None, ""):
            try:
                amount = float(str(row["amount"]).replace(",", "").replace("_", ""))
            except ValueError:
                problems.append(f"{at}, column amount: {row['amount']!r} is not a number (rule: amount > 0)")
            else:
                if not (amount > 0 and math.isfinite(amount)):
                    problems.append(f"{at}, column amount: {row['amount']!r} (rule: amount > 0)")
                    amount = None
        currency = str(row.get("currency") or "USD").strip().upper()
        if not re.fullmatch(r"[A-Z]{3}", currency):
            problems.append(f"{at}, column currency: {row.get('currency')!r} (rule: ISO 4217 code, e.g. USD)")
        actual = _percentages(row.get("alert_actual_pct"), f"{at}, column alert_actual_pct", problems)
        forecast = _percentages(row.get("alert_forecast_pct"), f"{at}, column alert_forecast_pct", problems)
        if name and scope in SCOPES and value and amount is not None:
            budgets.append(
                Budget(
                    name,
                    scope,
                    value,
                    amount,
                    currency,
                    DEFAULT_ACTUAL_PCT if actual is None else actual,
                    DEFAULT_FORECAST_PCT if forecast is None else forecast,
                )
            )
    if problems:
        raise BudgetsError("; ".join(problems))
    return budgets


class _PlainLoader(yaml.SafeLoader):
    """YAML's safe loader without anchors and aliases, and no deeper than MAX_DEPTH.

    An alias repeats a node by reference: nine levels of ten ("billion laughs") make 10^9
    values of a 1 KB file once anything walks them. A budgets file has nothing to repeat.
    """

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
            raise yaml.composer.ComposerError(
                None,
                None,
                f"an {'alias' if sign == '*' else 'anchor'} ({sign}{event.anchor}): "
                "a budgets file repeats nothing by reference",
                event.start_mark,
            )
        if self._depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def read_budgets(path: Path) -> list[Budget]:
    """The budgets of a YAML (.yaml, .yml) or CSV file."""
    file = path.name
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise BudgetsError(f"{file}: {size:,} bytes, over the {MAX_BYTES:,} a budgets file may have")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BudgetsError(f"{path}: no such budgets file (ATHANOR_BUDGETS)") from None
    except UnicodeDecodeError as exc:
        raise BudgetsError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:  # a folder, a file without read permission
        raise BudgetsError(f"{file}: cannot be read ({exc.strerror or exc})") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            document = yaml.load(text, Loader=_PlainLoader)  # a SafeLoader, stricter still
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f" line {mark.line + 1}" if mark else ""
            raise BudgetsError(f"{file}:{line} not valid YAML: {getattr(exc, 'problem', exc)}") from None
        except RecursionError:  # the scanner's own recursion, before a node is composed
            raise BudgetsError(f"{file}: not valid YAML: nested too deep") from None
        rows = document.get("budgets") if isinstance(document, dict) else None
        if not isinstance(rows, list):
            raise BudgetsError(f"{file}: expected a top-level 'budgets:' list of budgets")
        return parse_budgets(rows, file)
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        rows = []
        for row in reader:
            if None in row:
                raise BudgetsError(f"{file}: row {reader.line_num - 1}: more cells than the header's columns")
            rows.append(row)
        return parse_budgets(rows, file)
    raise BudgetsError(f"{file}: a budgets file is .yaml, .yml or .csv")


def statuses(
    budget: Budget, month: date, actual: float, forecast: float | None, unknown: bool = False
) -> list[BudgetStatus]:
    """One status per threshold of the budget; `unknown` when a stale bill leaves it undecidable."""
    return [
        BudgetStatus(budget, month, actual, forecast, "actual", p, unknown) for p in budget.alert_actual_pct
    ] + [
        BudgetStatus(budget, month, actual, forecast, "forecast", p, unknown)
        for p in budget.alert_forecast_pct
    ]
