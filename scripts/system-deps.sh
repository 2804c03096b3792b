#!/usr/bin/env bash
# Debian packages the real-server tests need: headless Chromium for the report test.
# (Ceph RadosGW is fetched by scripts/ceph-rgw.sh as .debs and unpacked under .cache/.)
set -euo pipefail
missing=()
command -v chromium > /dev/null || missing+=(chromium)
# Validates docker-compose.yaml without an engine (no Docker engine runs on these machines).
command -v docker-compose > /dev/null || missing+=(docker-compose)
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing ${missing[*]} from Debian's packages"
$SUDO apt-get install -y -qq "${missing[@]}" > /dev/null 2>&1 || {
  $SUDO apt-get update -qq > /dev/null && $SUDO apt-get install -y -qq "${missing[@]}" > /dev/null
}
