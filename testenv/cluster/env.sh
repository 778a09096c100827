# The cluster tier's addresses, ports and paths, sourced by up.sh, down.sh and images.sh. One node per
# machine: the kubelet and containerd hard-code paths outside CLUSTER_DIR (/var/lib/kubelet/device-plugins,
# /var/log/containers, /run/containerd/...), so the state directory is machine-wide too.
#
# Every address is on a bridge the tier creates; nothing is routed, forwarded or masqueraded off the
# machine: pods talk to each other, to the node and to Services, and that is all.

CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/operator-cluster}
BRIDGE=operator-k8s
NODE_NAME=operator-node
# The bridge's address is the node's: kube-apiserver, the kubelet and kube-proxy listen on it.
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24
# The first Service address is the `kubernetes` Service's, the tenth cluster DNS's, as in kubeadm.
API_SERVICE_IP=10.96.0.1
DNS_SERVICE_IP=10.96.0.10
API_PORT=6443
# etcd on loopback, away from its default ports (a developer's own etcd may hold those).
ETCD_CLIENT_PORT=12379
ETCD_PEER_PORT=12380

RUN=$CLUSTER_DIR/run
LOGS=$CLUSTER_DIR/logs
PKI=$CLUSTER_DIR/pki
CONFIG=$CLUSTER_DIR/config
# What images.sh builds (the images' archive among it), kept per checkout between runs.
CLUSTER_IMAGES=${CLUSTER_IMAGES:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/target/cluster-images}
CONTAINERD_SOCK=$RUN/containerd.sock

# The Debian package of the CNI plugins installs them here.
CNI_BIN_DIR=${CNI_BIN_DIR:-/usr/lib/cni}

# The images the node runs besides the operator: made locally, never pulled.
PAUSE_IMAGE=localhost/operator-test/pause:1
WEB_IMAGE=localhost/operator-test/web:1
COREDNS_IMAGE=localhost/operator-test/coredns:1.12.0
# The operator's image as `make docker-build IMG=...` builds it for the tier.
OPERATOR_IMAGE=${OPERATOR_IMAGE:-localhost/operator:cluster-test}
# The same image tagged again, for the chart's upgrade (crates/operator/tests/deployed_helm.rs).
OPERATOR_IMAGE_UPGRADE=${OPERATOR_IMAGE_UPGRADE:-localhost/operator:cluster-test-upgrade}

# Sysctls the kubelet and kube-proxy change, and ours: saved at start and restored by down.sh.
SAVED_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet)

cluster_log() { printf 'cluster: %s\n' "$*" >&2; }
