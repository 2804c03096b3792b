#!/usr/bin/env bash
# `make demo`: demo exports -> embedded Airflow runs both DAGs for the latest demo day -> report.
set -euo pipefail
source "$(dirname "$0")/airflow-env.sh"
cd "$ATHANOR_ROOT"
DEMO_DATE="${DEMO_DATE:-2026-11-30}"

echo "==> demo exports as delivered on $DEMO_DATE -> landing/"
athanor demo --out landing --as-of "$DEMO_DATE"

echo "==> Airflow metadata database ($AIRFLOW_HOME)"
airflow db migrate > "$AIRFLOW_HOME/migrate.log" 2>&1 || { cat "$AIRFLOW_HOME/migrate.log"; exit 1; }
airflow pools set athanor_duckdb_writer 1 "DuckDB allows one writer" > /dev/null

for dag in athanor_ingest athanor_optimize; do
  echo "==> airflow dags test $dag $DEMO_DATE"
  log="$AIRFLOW_HOME/$dag.log"
  if ! airflow dags test "$dag" "$DEMO_DATE" > "$log" 2>&1; then
    tail -n 60 "$log"; echo "$dag failed; full log: $log" >&2; exit 1
  fi
  grep -E "Marking run .* (success|failed)|state=" "$log" | tail -n 1 || true
done

report="$ATHANOR_ROOT/reports/latest/report.html"
[ -f "$report" ] || { echo "no report was written" >&2; exit 1; }
echo
athanor query "select ChargeCategory, x_PricingModel as pricing, round(sum(EffectiveCost), 2) as effective_cost_usd
               from focus_charges group by all order by 3 desc limit 8"
echo
echo "Report:     $report"
echo "JSON:       $ATHANOR_ROOT/reports/latest/recommendations.json"
echo "Warehouse:  $ATHANOR_ROOT/warehouse/athanor.duckdb  (analysts: warehouse/athanor-snapshot.duckdb)"
