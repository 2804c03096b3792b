"""The demo's budgets file: the fleet's monthly budget and one per team, the llm team's set below
what it spends (November: about $161,000 against $150,000), so the report and the webhook show a
breach. `athanor demo` writes it to <home>/budgets.yaml, which the settings take when
ATHANOR_BUDGETS is not set.
"""

from __future__ import annotations

from pathlib import Path

DEMO_BUDGETS = """\
# Monthly budgets of the demo fleet (effective cost, USD, calendar months in UTC).
# scope: total | team | account | service; value: the team, account or service.
# alert_actual_pct: alert when the month's spend so far reaches these % of the amount;
# alert_forecast_pct: when the forecast of the whole month does.
budgets:
  - name: fleet
    scope: total
    amount: 500000
    alert_actual_pct: [80, 100]
    alert_forecast_pct: [100]
  - name: llm
    scope: team
    value: llm
    amount: 150000
    alert_actual_pct: [90, 100]
    alert_forecast_pct: [100]
  - name: vision
    scope: team
    value: vision
    amount: 200000
"""


def write_budgets(home: Path) -> Path | None:
    """Write the demo budgets to <home>/budgets.yaml unless a budgets file is already there."""
    path = home / "budgets.yaml"
    if path.exists():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEMO_BUDGETS, encoding="utf-8")
    return path
