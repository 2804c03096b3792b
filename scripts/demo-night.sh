#!/usr/bin/env bash
# One demo night in the embedded Airflow: the ingest, then the optimize, for DAY (YYYY-MM-DD),
# as `make demo` runs them (`airflow dags test`), leaving no run behind for the scheduler.
set -euo pipefail
source "$(dirname "$0")/airflow-env.sh"
cd "$ATHANOR_ROOT"
DEMO_DATE="$1"

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
# The ingest's asset event would also queue an optimize run in the metadata database, which
# the first `make airflow` (its scheduler) then started: a second optimize of the day that
# rewrote the report. Airflow queues no run for a paused DAG, so the optimize is paused while
# the ingest runs, and unpaused (DAGs start unpaused here) whatever happens; the event itself
# is still recorded.
airflow dags reserialize > "$AIRFLOW_HOME/reserialize.log" 2>&1 || { cat "$AIRFLOW_HOME/reserialize.log"; exit 1; }
airflow dags pause athanor_optimize > /dev/null
trap 'airflow dags unpause athanor_optimize > /dev/null' EXIT
run_dag athanor_ingest "$RUN_AT"
airflow dags unpause athanor_optimize > /dev/null
trap - EXIT
run_dag athanor_optimize "$RUN_AT" "{\"as_of\": \"$DEMO_DATE\", \"apply_lifecycle\": false}"
