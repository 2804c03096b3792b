#!/usr/bin/env bash
# Debian packages the integration tests need (`make test` runs this first; the unit tier
# never installs anything): headless Chromium for the report test, docker-compose for the
# compose-file test, PostgreSQL and Redis for the Celery deployment test. (Ceph RadosGW is fetched by scripts/ceph-rgw.sh as .debs, unpacked under .cache/.)
set -euo pipefail
missing=()
command -v chromium > /dev/null || missing+=(chromium)
# `docker-compose config` validates docker-compose.yaml without an engine (none runs here).
command -v docker-compose > /dev/null || missing+=(docker-compose)
# The Celery deployment test starts its own PostgreSQL 15 (metadata DB) and Redis (broker).
[ -x /usr/lib/postgresql/15/bin/pg_ctl ] || missing+=(postgresql)
command -v redis-server > /dev/null || missing+=(redis-server)
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing ${missing[*]} from Debian's packages"
$SUDO apt-get install -y -qq "${missing[@]}" > /dev/null 2>&1 || {
  $SUDO apt-get update -qq > /dev/null && $SUDO apt-get install -y -qq "${missing[@]}" > /dev/null
}
