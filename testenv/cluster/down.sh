#!/usr/bin/env bash
# Stops the cluster tier's cluster and leaves the machine as it was before up.sh: processes stopped by
# their PIDs, every container and pod sandbox removed, mounts, cgroups, iptables rules, the bridge and
# the Service route removed, sysctls restored, and the files the kubelet and containerd keep outside
# CLUSTER_DIR removed. Safe to run at any point, also after a failed or partial start, and twice.
# With --keep-logs, CLUSTER_DIR/logs stays for reading; the rest of CLUSTER_DIR goes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
BIN=${CONTROL_PLANE_BIN_DIR:-$root/target/control-plane/bin}
keep_logs=false
[ "${1:-}" = --keep-logs ] && keep_logs=true
[ -d "$CLUSTER_DIR" ] || exit 0

# A process counts as gone once it is a zombie: init may reap orphans late.
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)
  [ -n "$state" ] && [ "$state" != Z ]
}
stop() { # name
  local file=$RUN/$1.pid pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.2; done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$file"
}

rm -f "$RUN/up"
# The node first, so that nothing restarts the containers removed next.
stop kube-proxy
stop kubelet
stop kube-scheduler
stop kube-controller-manager
if [ -S "$CONTAINERD_SOCK" ]; then
  ctr_() { ctr -a "$CONTAINERD_SOCK" -n k8s.io "$@"; }
  for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$id" >/dev/null 2>&1; done
  for _ in $(seq 25); do [ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break; ctr_ tasks ls -q | xargs -r -n1 ctr_ tasks delete -f >/dev/null 2>&1; sleep 0.2; done
  ctr_ containers ls -q 2>/dev/null | xargs -r ctr_ containers rm >/dev/null 2>&1
fi
stop containerd
# containerd-shims outlive containerd; each is started with our socket's address.
for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
stop kube-apiserver
stop etcd

# Anything of the cluster's still running, found by the paths in its command line: a process whose
# PID file a failed start overwrote or never wrote.
for pid in $(pgrep -f -- "$CLUSTER_DIR/" 2>/dev/null); do
  [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null
done

# Mounts under CLUSTER_DIR (root filesystems, shm, network namespaces, volumes), deepest first.
awk -v dir="$CLUSTER_DIR/" 'index($2, dir) == 1 {print $2}' /proc/self/mounts | sort -r |
  while read -r mount; do umount "$mount" 2>/dev/null || umount -l "$mount"; done

# iptables: kube-proxy's own clean-up, then the kubelet's chains and the tier's rules.
[ -x "$BIN/kube-proxy" ] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1
for table in filter nat mangle; do
  iptables -t "$table" -S 2>/dev/null | grep -E -- '-j KUBE-' | sed 's/^-A/-D/' |
    while read -r rule; do eval "iptables -t $table $rule"; done
  chains=$(iptables -t "$table" -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}')
  for chain in $chains; do iptables -t "$table" -F "$chain"; done
  for chain in $chains; do iptables -t "$table" -X "$chain"; done
done
iptables -S FORWARD | grep -- '--comment operator-cluster' | sed 's/^-A/-D/' |
  while read -r rule; do eval "iptables $rule"; done

# The network: pods' veths, the Service route, the bridge.
ip route del "$SERVICE_CIDR" dev "$BRIDGE" 2>/dev/null
for veth in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
  ip link del "$veth" 2>/dev/null
done
ip link del "$BRIDGE" 2>/dev/null

# The kubelet's cgroups (kubepods/...), deepest first, in every hierarchy.
for hierarchy in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
  [ -d "$hierarchy/kubepods" ] && find "$hierarchy/kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null
done

# What the kubelet and containerd keep at fixed paths: ours removed, then the directories if empty.
for link in /var/log/containers/*.log; do
  [ -L "$link" ] && case $(readlink "$link") in "$CLUSTER_DIR"/*) rm -f "$link" ;; esac
done
rm -f /var/lib/kubelet/device-plugins/kubelet.sock /var/lib/kubelet/device-plugins/DEPRECATION /var/lib/kubelet/plugins_registry/*.sock
rm -f /var/lib/cni/results/operator-* /var/lib/cni/results/cni-loopback-*
rmdir /var/log/containers /var/lib/kubelet/device-plugins /var/lib/kubelet/plugins_registry /var/lib/kubelet/plugins \
  /var/lib/kubelet /var/lib/cni/results /var/lib/cni /run/containerd/runc/k8s.io /run/containerd/runc \
  /run/containerd/s /run/containerd/fifo /run/containerd 2>/dev/null

# Sysctls back as they were.
if [ -f "$RUN/sysctls.saved" ]; then
  sed 's/ = /=/' "$RUN/sysctls.saved" | xargs sysctl -q -w
fi

if $keep_logs; then
  find "$CLUSTER_DIR" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
else
  rm -rf "$CLUSTER_DIR"
fi
cluster_log "stopped and cleaned up"
