#!/usr/bin/env bash
# `make airflow`: the full Airflow UI on http://127.0.0.1:8080 with the project's DAGs.
#
# What `airflow standalone` runs (api-server, scheduler, dag-processor, triggerer; SQLite,
# LocalExecutor, simple auth), started in order: standalone starts all four at once, and a
# task the scheduler queues before the api-server listens fails with "Connection refused"
# (tasks report to the execution API the api-server serves). The scheduler starts only once
# the api-server answers its health check. Ctrl-C (or any component ending) stops them all.
set -euo pipefail
source "$(dirname "$0")/airflow-env.sh"
cd "$ATHANOR_ROOT"
url="http://$AIRFLOW__API__HOST:$AIRFLOW__API__PORT"
# Task workers call back into the api-server; Airflow assumes localhost:8080 otherwise.
export AIRFLOW__API__BASE_URL="${AIRFLOW__API__BASE_URL:-$url}"
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="${AIRFLOW__CORE__EXECUTION_API_SERVER_URL:-$url/execution/}"
API_WAIT_S="${API_WAIT_S:-180}"

airflow db migrate > "$AIRFLOW_HOME/migrate.log" 2>&1 || { cat "$AIRFLOW_HOME/migrate.log"; exit 1; }
airflow pools set athanor_duckdb_writer 1 "DuckDB allows one writer" > /dev/null
landing="${ATHANOR_LANDING:-$ATHANOR_HOME/landing}"
case "$landing" in s3://*) ;; *) [ -d "$landing" ] || athanor demo --out "$landing" ;; esac

pids=()
stop() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap stop EXIT
trap 'stop; exit 130' INT TERM

airflow api-server & pids+=($!)
airflow dag-processor & pids+=($!)  # parses DAGs; queues nothing, so it need not wait
echo "==> waiting for the api-server at $url"
for ((waited = 0; ; waited++)); do
  curl -fsS -o /dev/null --max-time 2 "$url/api/v2/monitor/health" && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "the api-server exited" >&2; exit 1; }
  ((waited < API_WAIT_S)) || { echo "the api-server did not answer in ${API_WAIT_S} s" >&2; exit 1; }
  sleep 1
done
echo "==> api-server up after ~${waited} s: starting the scheduler and the triggerer"
airflow scheduler & pids+=($!)
airflow triggerer & pids+=($!)

echo "Airflow UI: $url  (user admin; password in $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated)"
wait -n "${pids[@]}" || true
echo "an Airflow component ended: stopping the others" >&2
