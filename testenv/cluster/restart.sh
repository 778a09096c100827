#!/usr/bin/env bash
# Stops one of the running cluster's programs and starts it again with the command line up.sh gave it,
# as an upgrade or a crash of that program would: `restart.sh kube-apiserver [SECONDS]` stops
# kube-apiserver (SIGTERM, as a node's shutdown sends it), keeps it down for SECONDS (default 0), starts
# it again and waits until it answers /readyz. The cluster tier's fault tests play outages with it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
name=${1:?usage: restart.sh PROGRAM [SECONDS]}
down_for=${2:-0}
pid_file=$RUN/$name.pid
cmd_file=$RUN/$name.cmd
[ -f "$pid_file" ] && [ -f "$cmd_file" ] || { cluster_log "$name was not started by up.sh"; exit 1; }

pid=$(cat "$pid_file")
kill -TERM "$pid" 2>/dev/null || true
# Until it is gone (a zombie counts as gone: init may reap orphans late), then KILL after 30 s.
for _ in $(seq 150); do
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
  { [ -z "$state" ] || [ "$state" = Z ]; } && break
  sleep 0.2
done
kill -KILL "$pid" 2>/dev/null || true
sleep "$down_for"

eval "setsid $(cat "$cmd_file") >>\"\$LOGS/\$name.log\" 2>&1 </dev/null &"
echo $! >"$pid_file"
if [ "$name" = kube-apiserver ]; then
  deadline=$(( $(date +%s) + 120 ))
  until curl -sf --max-time 5 --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(cat "$PKI/admin.token")" \
      "https://$NODE_IP:$API_PORT/readyz" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || { cluster_log "kube-apiserver did not answer /readyz within 120 s"; exit 1; }
    sleep 0.2
  done
fi
cluster_log "$name restarted (down ${down_for} s)"
