#!/usr/bin/env bash
# `make demo`: demo exports -> embedded Airflow runs both DAGs for the latest demo day -> report.
set -euo pipefail
source "$(dirname "$0")/airflow-env.sh"
cd "$ATHANOR_ROOT"
DEMO_DATE="${DEMO_DATE:-2026-11-30}"
# Where the settings put things (athanor.settings): under ATHANOR_HOME unless named.
landing="${ATHANOR_LANDING:-$ATHANOR_HOME/landing}"
reports="${ATHANOR_REPORTS:-$ATHANOR_HOME/reports}"
warehouse="${ATHANOR_WAREHOUSE:-$ATHANOR_HOME/warehouse/athanor.duckdb}"

echo "==> demo exports as delivered on $DEMO_DATE -> $landing"
athanor demo --out "$landing" --as-of "$DEMO_DATE"

"$ATHANOR_ROOT/scripts/demo-night.sh" "$DEMO_DATE"

report="$reports/latest/report.html"
[ -f "$report" ] || { echo "no report was written" >&2; exit 1; }
echo
athanor query "select ChargeCategory, x_PricingModel as pricing, round(sum(EffectiveCost), 2) as effective_cost_usd
               from focus_charges group by all order by 3 desc limit 8"
echo
echo "Report:     $report"
echo "JSON:       $reports/latest/recommendations.json"
echo "Warehouse:  $warehouse  (analysts: ${warehouse%.duckdb}-snapshot.duckdb)"
