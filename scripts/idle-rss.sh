#!/usr/bin/env bash
# The resident memory of an idle `operator run`: every controller, a PostgreSQL it reaches, CRDs
# installed, no resources, against the embedded API server. Prints VmRSS in KiB 30, 40 and 50 s after
# the operator logged "controllers started". Figures go in BENCHMARKS.md.
#
#   scripts/idle-rss.sh OPERATOR_BINARY APISERVER_BINARY
#
# Needs PostgreSQL's server binaries; as root, PostgreSQL runs as the `postgres` user.
set -euo pipefail
operator=$1 apiserver=$2
work=$(mktemp -d /tmp/idle-rss.XXXXXX)
chmod 755 "$work"
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_postgres() { if [ "$(id -u)" -eq 0 ]; then su postgres -c "$*"; else sh -c "$*"; fi; }
mkdir "$work/pg"
[ "$(id -u)" -ne 0 ] || chown postgres "$work/pg"
cleanup() {
  kill "${op_pid:-}" "${api_pid:-}" 2>/dev/null || true
  as_postgres "$pgbin/pg_ctl -D $work/pg/data -m immediate -w stop" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
as_postgres "$pgbin/initdb -D $work/pg/data -U postgres --auth=trust --no-sync" >/dev/null
as_postgres "$pgbin/pg_ctl -D $work/pg/data -l $work/pg/log -w start \
  -o '-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work/pg'" >/dev/null
"$apiserver" --addr 127.0.0.1:0 --kubeconfig "$work/kubeconfig" >"$work/apiserver.log" 2>&1 &
api_pid=$!
for _ in $(seq 100); do [ -s "$work/kubeconfig" ] && break; sleep 0.1; done
export KUBECONFIG=$work/kubeconfig
"$operator" install
DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" "$operator" run \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$work/operator.log" 2>&1 &
op_pid=$!
for _ in $(seq 300); do grep -q "controllers started" "$work/operator.log" && break; sleep 0.1; done
grep -q "controllers started" "$work/operator.log" || { cat "$work/operator.log" >&2; exit 1; }
for wait in 30 10 10; do
  sleep "$wait"
  awk '/VmRSS/ {print $2}' "/proc/$op_pid/status"
done
