#!/usr/bin/env bash
# Prints the resident memory of the running cluster tier, process by process: the control plane, the
# node's programs, containerd's shims and every container's processes (CoreDNS, pods of tests). The
# figure BENCHMARKS.md gives for the tier's idle footprint.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
[ -f "$RUN/up" ] || { cluster_log "no cluster runs"; exit 1; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
total=0
row() { printf '%-28s %8.1f MiB\n' "$1" "$(echo "$2" | awk '{print $1 / 1024}')"; total=$((total + $2)); }
for name in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy containerd; do
  row "$name" "$(rss_kib "$(cat "$RUN/$name.pid")")"
done
shims=0 containers=0
for shim in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK"); do
  shims=$((shims + $(rss_kib "$shim")))
  for child in $(pgrep -P "$shim"); do
    containers=$((containers + $(rss_kib "$child")))
    for grandchild in $(pgrep -P "$child"); do containers=$((containers + $(rss_kib "$grandchild"))); done
  done
done
row "containerd shims" "$shims"
row "containers (pause, pods)" "$containers"
printf '%-28s %8.1f MiB\n' "all" "$(echo "$total" | awk '{print $1 / 1024}')"
