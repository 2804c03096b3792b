# Source me: the environment for the embedded Airflow that `make demo`, `make airflow`
# and the end-to-end tests use. Everything lives under the project folder.
ATHANOR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export ATHANOR_HOME="${ATHANOR_HOME:-$ATHANOR_ROOT}"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$ATHANOR_ROOT/.airflow}"
# `airflow standalone` spawns bare `airflow` children: the venv must be on PATH.
export PATH="$ATHANOR_ROOT/.venv/bin:$PATH"
export AIRFLOW__CORE__DAGS_FOLDER="$ATHANOR_ROOT/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$ATHANOR_ROOT/plugins"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTOR=LocalExecutor
# 2 cores: the default of 32 parallel workers only thrashes.
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-4}"
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=False
export AIRFLOW__API__HOST="${AIRFLOW__API__HOST:-127.0.0.1}"
export AIRFLOW__API__PORT="${AIRFLOW__API__PORT:-8080}"
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-sqlite:///$AIRFLOW_HOME/airflow.db}"
# INFO: a task's log shows what each stage read, loaded, skipped, rejected and wrote.
export AIRFLOW__LOGGING__LOGGING_LEVEL="${AIRFLOW__LOGGING__LOGGING_LEVEL:-INFO}"
mkdir -p "$AIRFLOW_HOME"
# The generated JWT secret is too short and warns on every call: keep a 64-byte one per install.
if [ ! -s "$AIRFLOW_HOME/jwt_secret" ]; then
  (umask 077; head -c 48 /dev/urandom | base64 | tr -d '\n' > "$AIRFLOW_HOME/jwt_secret")
fi
export AIRFLOW__API_AUTH__JWT_SECRET="$(cat "$AIRFLOW_HOME/jwt_secret")"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
