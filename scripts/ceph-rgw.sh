#!/usr/bin/env bash
# Single-node Ceph (1 mon + 1 memstore OSD, no mgr, auth none) + RadosGW, an S3 server on loopback,
# run from Debian's .debs unpacked under BASE_DIR (nothing installed system-wide, no root paths touched).
#
#   scripts/ceph-rgw.sh up BASE_DIR      start (idempotent: a running cluster is reused); prints endpoint + keys
#   scripts/ceph-rgw.sh down BASE_DIR    stop the daemons this script started, by their recorded PIDs
#   scripts/ceph-rgw.sh status BASE_DIR  exit 0 and print the endpoint when the cluster answers
#
# Environment: RGW_PORT (default 7480), CEPH_MON_PORT (default 6789), RGW_PACKAGES (the folder
# holding debs/ and the unpacked root/, default BASE_DIR: clusters in other folders can share one),
# RGW_ACCESS_KEY / RGW_SECRET_KEY (defaults below), RGW_LC_DEBUG_INTERVAL (default 10: one lifecycle
# "day" lasts 10 s, for tests; set it to 0 for real-time lifecycle semantics), RGW_MEMSTORE_BYTES
# (default 2 GiB: the OSD keeps every object in memory, so this is what the bucket can hold).
# Based on the measured recipe in the team's shared recipes (ceph-rgw-up.sh / ceph-rgw-down.sh).
set -Eeuo pipefail

CMD=${1:-}
BASE=${2:-}
if [ -z "$CMD" ] || [ -z "$BASE" ]; then
  echo "usage: $0 up|down|status BASE_DIR" >&2
  exit 2
fi
mkdir -p "$BASE"
BASE=$(cd "$BASE" && pwd)
PKG=${RGW_PACKAGES:-$BASE}
mkdir -p "$PKG"
R=$PKG/root
C=$BASE/cluster
RGW_PORT=${RGW_PORT:-7480}
MON_PORT=${CEPH_MON_PORT:-6789}
ACCESS=${RGW_ACCESS_KEY:-LOCALACCESSKEY}
SECRET=${RGW_SECRET_KEY:-localsecretkey123}
LC_INTERVAL=${RGW_LC_DEBUG_INTERVAL:-10}
MEMSTORE_BYTES=${RGW_MEMSTORE_BYTES:-2147483648}
ENDPOINT=http://127.0.0.1:$RGW_PORT
PACKAGES="radosgw ceph-mon ceph-osd ceph-common"

alive() { [ -f "$C/$1.pid" ] && kill -0 "$(cat "$C/$1.pid")" 2>/dev/null; }

print_endpoint() {
  echo "RGW_ENDPOINT=$ENDPOINT"
  echo "RGW_ACCESS_KEY=$ACCESS"
  echo "RGW_SECRET_KEY=$SECRET"
  echo "RGW_PIDS=mon:$(cat "$C/mon.pid") osd:$(cat "$C/osd.pid") rgw:$(cat "$C/rgw.pid")"
}

stop_all() {
  for n in rgw osd mon; do
    [ -f "$C/$n.pid" ] || continue
    P=$(cat "$C/$n.pid")
    kill "$P" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$P" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$P" 2>/dev/null; then echo "$n ($P) did not stop, sending KILL" >&2; kill -9 "$P" || true; fi
    rm -f "$C/$n.pid"
  done
}

download() {
  # The package list comes from a simulated install, so the dependencies come along.
  local debs
  debs=$(apt-get install --simulate $PACKAGES 2>/dev/null | awk '/^Inst/{print $2}' || true)
  mkdir -p "$PKG/debs"
  [ -n "$debs" ] && (cd "$PKG/debs" && apt-get download $debs) && return 0
  echo "apt-get download failed; running apt-get update once and retrying" >&2
  apt-get update >/dev/null
  debs=$(apt-get install --simulate $PACKAGES 2>/dev/null | awk '/^Inst/{print $2}')
  (cd "$PKG/debs" && apt-get download $debs)
}

unpack() {
  # One cluster at a time unpacks the shared packages; the others wait, then find them there.
  exec 9> "$PKG/.unpack.lock"
  flock 9
  if ! { [ -x "$R/usr/bin/radosgw" ] && [ -x "$R/usr/bin/ceph-osd" ]; }; then
    if ! ls "$PKG"/debs/*.deb >/dev/null 2>&1; then download; fi
    mkdir -p "$R"
    for d in "$PKG"/debs/*.deb; do dpkg -x "$d" "$R"; done
  fi
  exec 9>&-  # closing it releases the lock (and the daemons do not inherit it)
}

use_root() {
  export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu/ceph:$R/lib/x86_64-linux-gnu
  export PYTHONPATH=$R/usr/lib/python3/dist-packages
  export PATH=$R/usr/bin:$PATH
  export CEPH_CONF=$C/ceph.conf
}

start_osd() {
  # Belt and braces for the zero-fsid race (see ceph.conf): the store is already made, so a restart is safe.
  local attempt
  for attempt in 1 2 3 4; do
    setsid nohup ceph-osd -i "$1" -f >> "$C/log/osd.stdout" 2>&1 &
    echo $! > "$C/osd.pid"
    for _ in $(seq 1 60); do
      timeout 10 ceph osd stat 2>/dev/null | grep -q '1 up' && return 0
      alive osd || break
      sleep 1
    done
    echo "ceph-osd exited during start (attempt $attempt), starting it again" >&2
    sleep 1
  done
  echo "ceph-osd did not come up; see $C/log/" >&2
  return 1
}

wait_for_mon() {
  # A new mon answers before its first commit has loaded client.admin's caps; a command sent in that
  # window is refused ("Error EPERM: problem getting command descriptions from mon."). The window is
  # milliseconds on a quiet machine and long enough under a loaded test run, so ask until accepted.
  for _ in $(seq 1 60); do
    timeout 10 ceph -s > /dev/null 2>&1 && return 0
    alive mon || break
    sleep 1
  done
  timeout 10 ceph -s > /dev/null # once more, letting its error reach the caller
}

start_rgw() {
  setsid nohup radosgw -n client.rgw.local -f >> "$C/log/rgw.stdout" 2>&1 &
  echo $! > "$C/rgw.pid"
  for _ in $(seq 1 120); do curl -s -o /dev/null "$ENDPOINT/" && return 0; sleep 1; done
  echo "radosgw did not come up; see $C/log/" >&2
  return 1
}

write_conf() {
  local fsid=$1
  cat > "$C/ceph.conf" <<CONF
[global]
fsid = $fsid
mon_host = v1:127.0.0.1:$MON_PORT
mon_initial_members = a
public_network = 127.0.0.0/8
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
ms_bind_ipv6 = false
ms_bind_msgr2 = false
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_max_pg_per_osd = 1000
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 5
# The mon's store is a few MB and the OSD keeps objects in memory: a disk 95 % full (the mon's
# default floor) must not stop the cluster, as it did a test run on a nearly full machine.
mon_data_avail_crit = 1
osd_crush_chooseleaf_type = 0
run_dir = $C/run
admin_socket = $C/run/\$name.asok
log_file = $C/log/\$name.log
keyring = $C/keyring
plugin_dir = $R/usr/lib/x86_64-linux-gnu/ceph
erasure_code_dir = $R/usr/lib/x86_64-linux-gnu/ceph/erasure-code
osd_class_dir = $R/usr/lib/x86_64-linux-gnu/rados-classes
crash_dir = $C/crash
[mon.a]
mon_data = $C/mon.a
[osd.0]
osd_data = $C/osd.0
osd_objectstore = memstore
# The OSD's own start-up mon commands (crush location, device class) race its first monmap and are
# sometimes sent with a zero fsid ("wrong fsid", the OSD exits); the script places the OSD itself.
osd_crush_update_on_start = false
osd_class_update_on_start = false
memstore_device_bytes = $MEMSTORE_BYTES
[client.rgw.local]
rgw_frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw_data = $C/rgw
rgw_lc_debug_interval = $LC_INTERVAL
CONF
}

up() {
  if alive mon && alive osd && alive rgw && curl -s -o /dev/null "$ENDPOINT/"; then
    echo "already running" >&2
    print_endpoint
    return 0
  fi
  # A half-started cluster (one daemon died) is not worth repairing: memstore keeps nothing anyway.
  stop_all
  trap 'echo "start failed; stopping the daemons started so far" >&2; stop_all' ERR
  unpack
  use_root
  rm -rf "$C"
  mkdir -p "$C"/{run,log,mon.a,osd.0,rgw,crash}
  cd "$C" # the daemons misbehave when started from some other folders (seen: OSD with a zero fsid)
  local fsid osd_uuid osd_id
  fsid=$(cat /proc/sys/kernel/random/uuid)
  write_conf "$fsid"
  ceph-authtool --create-keyring "$C/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$C/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
  # --addv with an explicit v1 address: plain --add takes any port but 6789 for a msgr2 (v2) one.
  monmaptool --create --fsid "$fsid" --addv a "[v1:127.0.0.1:$MON_PORT]" "$C/monmap" >/dev/null
  ceph-mon --mkfs -i a --monmap "$C/monmap" --keyring "$C/keyring"
  setsid nohup ceph-mon -i a -f > "$C/log/mon.stdout" 2>&1 &
  echo $! > "$C/mon.pid"
  wait_for_mon
  osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  osd_id=$(timeout 30 ceph osd new "$osd_uuid")
  ceph-osd -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" > "$C/log/osd.mkfs" 2>&1
  timeout 30 ceph osd crush add "osd.$osd_id" 1.0 root=default >/dev/null 2>&1
  start_osd "$osd_id"
  start_rgw # the first start creates the default realm/zonegroup/zone and the .rgw pools
  timeout 30 radosgw-admin user create --uid=local --display-name=local \
    --access-key="$ACCESS" --secret-key="$SECRET" >/dev/null
  # Extra storage classes, so lifecycle transitions to STANDARD_IA / GLACIER are accepted.
  local sc pool
  for sc in STANDARD_IA GLACIER; do
    pool=$(echo "$sc" | tr 'A-Z_' 'a-z-')
    timeout 30 radosgw-admin zonegroup placement add --rgw-zonegroup default \
      --placement-id default-placement --storage-class "$sc" >/dev/null
    timeout 30 radosgw-admin zone placement add --rgw-zone default --placement-id default-placement \
      --storage-class "$sc" --data-pool "default.rgw.$pool.data" >/dev/null
  done
  local p
  p=$(cat "$C/rgw.pid")
  kill "$p"
  for _ in $(seq 1 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
  start_rgw # restart so the new placement targets are loaded
  trap - ERR
  print_endpoint
}

case "$CMD" in
  up) up ;;
  down) stop_all; echo stopped ;;
  status)
    if alive rgw && curl -s -o /dev/null "$ENDPOINT/"; then print_endpoint; else echo "not running" >&2; exit 1; fi
    ;;
  *) echo "usage: $0 up|down|status BASE_DIR" >&2; exit 2 ;;
esac
