#!/usr/bin/env bash
# Starts the cluster tier's single-node cluster and waits until it is ready for tests: the bridge, a
# PKI, containerd with the tier's images, etcd, kube-apiserver, kube-controller-manager (every default
# controller), kube-scheduler, the kubelet, kube-proxy (iptables) and cluster DNS (CoreDNS, as the
# kube-dns addon runs it). State lives in CLUSTER_DIR; down.sh undoes all of it, also after a failed
# start. Writes CLUSTER_DIR/admin.kubeconfig and prints its path.
#
# Needs root, the programs of `testenv/control-plane/build.sh node` and the images of images.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
BIN=${CONTROL_PLANE_BIN_DIR:-$root/target/control-plane/bin}
started=$(date +%s%N)
elapsed() { local ms=$(( ($(date +%s%N) - started) / 1000000 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }
step() { cluster_log "$(elapsed) s: $*"; }

if [ "$(id -u)" -ne 0 ]; then
  cluster_log "the cluster tier runs a kubelet and changes the host's network: run it as root"
  exit 1
fi
# A cluster that runs and answers is kept. One whose marker outlived it (a reboot keeps /var/tmp, a
# killed program) is cleaned up below and started again.
api() { # path: succeeds when the API server answers 2xx
  curl -sf --max-time 5 --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(cat "$PKI/admin.token")" "https://$NODE_IP:$API_PORT$1"
}
all_running() {
  local program
  for program in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    kill -0 "$(cat "$RUN/$program.pid" 2>/dev/null)" 2>/dev/null || return 1
  done
}
if [ -f "$RUN/up" ]; then
  if all_running && api /readyz >/dev/null 2>&1; then
    cluster_log "already running (state in $CLUSTER_DIR); testenv/cluster/down.sh stops it"
    echo "$CLUSTER_DIR/admin.kubeconfig"
    exit 0
  fi
  cluster_log "the cluster in $CLUSTER_DIR no longer runs: cleaning it up and starting again"
fi
for program in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
  [ -x "$BIN/$program" ] || { cluster_log "no $BIN/$program: run testenv/control-plane/build.sh node"; exit 1; }
done
for tool in containerd containerd-shim-runc-v2 runc ctr iptables openssl curl kubectl; do
  command -v "$tool" >/dev/null || { cluster_log "$tool is missing: scripts/test-deps.sh installs it"; exit 1; }
done
[ -x "$CNI_BIN_DIR/bridge" ] || { cluster_log "no CNI plugins in $CNI_BIN_DIR: scripts/test-deps.sh installs them"; exit 1; }
[ -f "$CLUSTER_IMAGES/images.tar" ] || { cluster_log "no $CLUSTER_IMAGES/images.tar: run testenv/cluster/images.sh"; exit 1; }

# What a start that failed or was interrupted left behind goes first.
if [ -d "$RUN" ]; then
  "$here/down.sh"
fi

# Whatever fails from here on, leave the machine as it was.
trap 'cluster_log "start failed; the end of each log is in $LOGS"; "$here/down.sh" --keep-logs' ERR
mkdir -p "$RUN" "$LOGS" "$PKI" "$CONFIG" "$CLUSTER_DIR/pod-logs" "$CLUSTER_DIR/kubelet" "$CLUSTER_DIR/cni/net.d"

# A program in the background, in a session of its own (so that a test run's Ctrl-C does not reach
# it), its PID kept for down.sh and its command line for restart.sh.
start() { # name program args...
  local name=$1; shift
  setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
  printf '%q ' "$@" >"$RUN/$name.cmd"
}
running() { kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }
# Polls `check` every 0.2 s for up to `seconds`; fails naming what it waited for and showing its log.
wait_for() { # what seconds log check...
  local what=$1 seconds=$2 log=$3; shift 3
  local deadline=$(( $(date +%s) + seconds ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      cluster_log "timed out after ${seconds}s waiting for $what; the end of $log:"
      tail -n 30 "$LOGS/$log.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
  step "$what"
}

# --- The host: sysctls saved first, so that down.sh can put back what the kubelet changes.
[ -f "$RUN/sysctls.saved" ] || sysctl "${SAVED_SYSCTLS[@]}" >"$RUN/sysctls.saved"

# --- Network: the bridge carries the node's address and the pods; the Service range is routed onto it,
# and traffic is forwarded only from the bridge back into it.
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
fi
ip route replace "$SERVICE_CIDR" dev "$BRIDGE" src "$NODE_IP"
# Forwarding is switched on for this bridge alone (net.ipv4.ip_forward stays as it was): a pod's
# packet to a Service address is translated by kube-proxy's rules and goes back out on the bridge.
sysctl -q -w "net.ipv4.conf.$BRIDGE.forwarding=1"
for rule in "-i $BRIDGE -o $BRIDGE -j ACCEPT" "-i $BRIDGE ! -o $BRIDGE -j DROP" "! -i $BRIDGE -o $BRIDGE -j DROP"; do
  # shellcheck disable=SC2086
  iptables -C FORWARD $rule -m comment --comment operator-cluster 2>/dev/null ||
    iptables -I FORWARD $rule -m comment --comment operator-cluster
done
cat >"$CLUSTER_DIR/cni/net.d/10-operator.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "operator",
  "plugins": [{
    "type": "bridge",
    "bridge": "$BRIDGE",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": "$CLUSTER_DIR/cni/ipam"
    }
  }]
}
EOF
# Pods with dnsPolicy Default (cluster DNS itself) get this: a nameserver nothing answers, so no name
# is ever resolved off the machine.
echo "nameserver $NODE_IP" >"$CONFIG/resolv.conf"
step "network"

"$here/pki.sh"
step "certificates and tokens"

# --- containerd, with the tier's images.
cat >"$CONFIG/containerd.toml" <<EOF
version = 2
root = "$CLUSTER_DIR/containerd/root"
state = "$CLUSTER_DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$CLUSTER_DIR/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  # Machines whose processes lack CAP_SYS_RESOURCE cannot give a process a negative oom_score_adj,
  # and the kubelet asks -998 for the sandbox: runc then fails every pod. Clamped to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$CLUSTER_DIR/cni/net.d"
EOF
start containerd containerd --config "$CONFIG/containerd.toml"
wait_for containerd 30 containerd ctr -a "$CONTAINERD_SOCK" version
for archive in images.tar operator.tar; do
  [ ! -f "$CLUSTER_IMAGES/$archive" ] || ctr -a "$CONTAINERD_SOCK" -n k8s.io images import "$CLUSTER_IMAGES/$archive" >/dev/null
done
step "images imported"

# --- The control plane.
start etcd "$BIN/etcd" --name=default --data-dir="$CLUSTER_DIR/etcd" \
  --listen-client-urls="http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster="default=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync=true --log-level=warn
start kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port="$API_PORT" \
  --cert-dir="$CLUSTER_DIR/apiserver-certs" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
  --token-auth-file="$PKI/tokens.csv" --authorization-mode=Node,RBAC \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$PKI/service-account.pub" \
  --service-account-signing-key-file="$PKI/service-account.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --allow-privileged=true \
  --enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP
wait_for "kube-apiserver ready" 120 kube-apiserver api /readyz
# Each controller with its own ServiceAccount and bootstrap role, as kubeadm runs it.
start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$PKI/controller-manager.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1 --secure-port=0 --controllers='*' \
  --root-ca-file="$PKI/ca.crt" --service-account-private-key-file="$PKI/service-account.key" \
  --use-service-account-credentials=true --cluster-cidr="$POD_CIDR" --service-cluster-ip-range="$SERVICE_CIDR"
start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$PKI/scheduler.kubeconfig" --leader-elect=false \
  --bind-address=127.0.0.1 --secure-port=10259

# --- The node.
cat >"$CONFIG/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
# containerd 1.6 does not report its cgroup driver; the host mounts cgroup v1 hierarchies.
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
podLogsDir: $CLUSTER_DIR/pod-logs
resolvConf: $CONFIG/resolv.conf
clusterDNS: [$DNS_SERVICE_IP]
clusterDomain: cluster.local
hairpinMode: hairpin-veth
# The machine's disk is shared with builds: never evict pods or taint the node for disk in a test cluster.
evictionHard: {memory.available: "50Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
# How often the kubelet syncs each pod (with up to half as much again of jitter), which is also when an
# updated Secret or ConfigMap reaches the volumes that mount it: 10 s instead of the default minute, so
# that the tests of a rotated Secret wait seconds where a default kubelet takes one to two minutes.
# BENCHMARKS.md gives the figures under both.
syncFrequency: 10s
EOF
start kubelet "$BIN/kubelet" --config="$CONFIG/kubelet.yaml" --kubeconfig="$PKI/node.kubeconfig" \
  --root-dir="$CLUSTER_DIR/kubelet" --cert-dir="$CLUSTER_DIR/kubelet/pki" \
  --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --pod-infra-container-image="$PAUSE_IMAGE"
cat >"$CONFIG/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $PKI/proxy.kubeconfig}
mode: iptables
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
# Leave the host's conntrack settings as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
start kube-proxy "$BIN/kube-proxy" --config="$CONFIG/kube-proxy.yaml"

kubectl_() { KUBECONFIG=$CLUSTER_DIR/admin.kubeconfig kubectl --request-timeout=5s "$@"; }
node_ready() { kubectl_ wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s; }
wait_for "node $NODE_NAME ready" 120 kubelet node_ready
for name in kube-controller-manager kube-scheduler kube-proxy; do
  running "$name" || { cluster_log "$name exited:"; tail -n 30 "$LOGS/$name.log" >&2; false; }
done

# --- Cluster DNS, as the kube-dns addon: CoreDNS pods behind the Service kube-dns.
sed -e "s|@DNS_SERVICE_IP@|$DNS_SERVICE_IP|g" -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|g" "$here/coredns.yaml" |
  kubectl_ apply -f - >/dev/null
dns_ready() { kubectl_ -n kube-system wait --for=condition=Available deployment/coredns --timeout=2s; }
wait_for "cluster DNS available" 120 kubelet dns_ready
wait_for "ServiceAccount default" 60 kube-controller-manager api /api/v1/namespaces/default/serviceaccounts/default

trap - ERR
touch "$RUN/up"
step "ready"
echo "$CLUSTER_DIR/admin.kubeconfig"
