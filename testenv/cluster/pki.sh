#!/usr/bin/env bash
# The cluster tier's credentials, in CLUSTER_DIR/pki: a CA; kube-apiserver's serving certificate (for
# the node's address, the `kubernetes` Service's and its DNS names); the client certificate it calls
# kubelets with; the ServiceAccount token signing keys; and a token file with one token per client:
# the administrator (system:masters), the node (system:node:<name> in system:nodes), kube-proxy, the
# scheduler and the controller manager, each with a kubeconfig. Made once per start.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
mkdir -p "$PKI"
cd "$PKI"
umask 077

openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj /CN=operator-cluster-ca 2>/dev/null
sign() { # name subject [subjectAltName]
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  if [ -n "${3:-}" ]; then
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$1.ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' >"$1.ext"
  fi
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
sign apiserver /CN=kube-apiserver "IP:$NODE_IP,IP:$API_SERVICE_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
openssl genrsa -out service-account.key 2048 2>/dev/null
openssl rsa -in service-account.key -pubout -out service-account.pub 2>/dev/null

token() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
admin=$(token) node=$(token) proxy=$(token) scheduler=$(token) controller_manager=$(token)
cat >tokens.csv <<T
$admin,admin,admin,"system:masters"
$node,system:node:$NODE_NAME,system:node:$NODE_NAME,"system:nodes"
$proxy,system:kube-proxy,system:kube-proxy
$scheduler,system:kube-scheduler,system:kube-scheduler
$controller_manager,system:kube-controller-manager,system:kube-controller-manager
T
kubeconfig() { # file token
  cat >"$1" <<K
apiVersion: v1
kind: Config
clusters: [{name: operator-cluster, cluster: {server: "https://$NODE_IP:$API_PORT", certificate-authority: $PKI/ca.crt}}]
users: [{name: user, user: {token: $2}}]
contexts: [{name: operator-cluster, context: {cluster: operator-cluster, user: user}}]
current-context: operator-cluster
K
}
kubeconfig "$CLUSTER_DIR/admin.kubeconfig" "$admin"
kubeconfig node.kubeconfig "$node"
kubeconfig proxy.kubeconfig "$proxy"
kubeconfig scheduler.kubeconfig "$scheduler"
kubeconfig controller-manager.kubeconfig "$controller_manager"
echo "$admin" >admin.token
# The CA is public: tests and pods read it.
chmod 644 ca.crt
