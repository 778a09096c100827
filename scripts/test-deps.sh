#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine, and nothing when it is already there:
# PostgreSQL server binaries (tests start throwaway clusters), a Python venv with the official
# `kubernetes` client (tests script it against the embedded API server), cargo-nextest, and, unless
# only the embedded tier runs, the Go modules of the upstream control plane (testenv/control-plane),
# of the upstream e2e suite (testenv/e2e) and of Helm (testenv/helm). The cluster tier adds what a
# node and the image build need: containerd, runc, the CNI plugins, iptables, Docker's daemon (to
# build images from Dockerfiles), musl (the operator's static binary) and the Go modules of CoreDNS
# and the tier's images.
# Idempotent; safe to run before every `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'test-deps: %s\n' "$*" >&2; }

have_postgres() {
  command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    log "missing $*: install it with: sudo apt-get install -y $*"
    exit 1
  fi
  if [ -z "${APT_UPDATED:-}" ]; then
    apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! have_postgres; then
  log "installing PostgreSQL server binaries"
  apt_install postgresql
fi

if ! command -v kubectl >/dev/null 2>&1; then
  log "kubectl not found: tests that script kubectl need a kubectl (1.27+) on PATH"
  exit 1
fi

# The Python client is pinned to the version the API server's design was checked against.
PY_KUBERNETES_VERSION=37.0.2
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c "import kubernetes, sys; sys.exit(kubernetes.__version__ != '$PY_KUBERNETES_VERSION')" 2>/dev/null; then
  log "creating .venv with kubernetes==$PY_KUBERNETES_VERSION"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check "kubernetes==$PY_KUBERNETES_VERSION"
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  log "installing cargo-nextest"
  cargo install --locked -q cargo-nextest
fi
tier=${TEST_CONTROL_PLANE:-all}
if [ "$tier" != embedded ]; then
  # The real tier builds kube-apiserver from its Go modules: Go must be as new as its go.mod asks.
  need=$(sed -n 's/^go \([0-9.]*\)$/\1/p' testenv/control-plane/go.mod)
  if ! command -v go >/dev/null 2>&1; then
    log "the real control plane needs Go $need or newer, or run TEST_CONTROL_PLANE=embedded"
    exit 1
  fi
  have=$(go env GOVERSION | sed 's/^go//')
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
    log "Go $have is older than the $need testenv/control-plane needs"
    exit 1
  fi
  # Checked against go.sum; a no-op when the module cache has them. testenv/e2e: the upstream e2e
  # suite the conformance tier runs against both servers.
  (cd testenv/control-plane && go mod download)
  (cd testenv/e2e && go mod download)
  # testenv/helm: Helm, which the chart's tests build (its install on the cluster tier, its lint and
  # render beside the embedded tier's tests).
  (cd testenv/helm && go mod download)
fi

if [ "$tier" = cluster ] || [ "$tier" = all ]; then
  missing=()
  command -v containerd >/dev/null 2>&1 || missing+=(containerd)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v musl-gcc >/dev/null 2>&1 || missing+=(musl-tools)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (the cluster tier's node and image build)"
    apt_install "${missing[@]}"
  fi
  if ! rustup target list --installed | grep -qx x86_64-unknown-linux-musl; then
    log "adding the Rust target x86_64-unknown-linux-musl (the operator's static binary)"
    rustup target add x86_64-unknown-linux-musl >/dev/null
  fi
  (cd testenv/cluster/coredns && go mod download)
  (cd testenv/cluster/images && go mod download)
fi
log "ready"
