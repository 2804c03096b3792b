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

echo "==> Airflow metadata database ($AIRFLOW_HOME)"
airflow db migrate > "$AIRFLOW_HOME/migrate.log" 2>&1 || { cat "$AIRFLOW_HOME/migrate.log"; exit 1; }
airflow pools set athanor_duckdb_writer 1 "DuckDB allows one writer" > /dev/null

# The nightly run covers the day before it fires: DEMO_DATE's data is processed by the run
# of the next day at 02:30 UTC (its data interval ends then). The optimize DAG normally starts
# on the ingest's asset event, which names the day; here it is told the day directly.
RUN_AT="$(python -c 'import datetime as d, sys; print(d.date.fromisoformat(sys.argv[1]) + d.timedelta(days=1))' "$DEMO_DATE")T02:30:00+00:00"
run_dag() {  # dag, logical date, [conf]
  local dag=$1 log="$AIRFLOW_HOME/$1.log"
  echo "==> airflow dags test $*"
  if ! airflow dags test "$dag" "$2" ${3:+--conf "$3"} > "$log" 2>&1; then
    tail -n 60 "$log"; echo "$dag failed; full log: $log" >&2; exit 1
  fi
  grep -E "Marking run .* (success|failed)|state=" "$log" | tail -n 1 || true
}
run_dag athanor_ingest "$RUN_AT"
run_dag athanor_optimize "$RUN_AT" "{\"as_of\": \"$DEMO_DATE\", \"apply_lifecycle\": false}"

report="$reports/latest/report.html"
[ -f "$report" ] || { echo "no report was written" >&2; exit 1; }
echo
athanor query "select ChargeCategory, x_PricingModel as pricing, round(sum(EffectiveCost), 2) as effective_cost_usd
               from focus_charges group by all order by 3 desc limit 8"
echo
echo "Report:     $report"
echo "JSON:       $reports/latest/recommendations.json"
echo "Warehouse:  $warehouse  (analysts: ${warehouse%.duckdb}-snapshot.duckdb)"
