#!/usr/bin/env bash
# `make airflow`: the full Airflow UI on http://127.0.0.1:8080 with the project's DAGs.
set -euo pipefail
source "$(dirname "$0")/airflow-env.sh"
cd "$ATHANOR_ROOT"
airflow db migrate > "$AIRFLOW_HOME/migrate.log" 2>&1 || { cat "$AIRFLOW_HOME/migrate.log"; exit 1; }
airflow pools set athanor_duckdb_writer 1 "DuckDB allows one writer" > /dev/null
[ -d landing ] || athanor demo --out landing
echo "Airflow UI: http://$AIRFLOW__API__HOST:$AIRFLOW__API__PORT  (user admin; password in $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated)"
exec airflow standalone
