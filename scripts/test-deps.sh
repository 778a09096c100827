#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine, and nothing when it is already there:
# PostgreSQL server binaries (tests start throwaway clusters), a Python venv with the official
# `kubernetes` client (tests script it against the embedded API server), cargo-nextest, and, unless
# only the embedded tier runs, the Go modules of the upstream control plane (testenv/control-plane)
# and of the upstream e2e suite (testenv/e2e).
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
if [ "${TEST_CONTROL_PLANE:-both}" != embedded ]; then
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
fi
log "ready"
