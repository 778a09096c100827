#!/usr/bin/env bash
# `make test`: every test of the tiers TEST_CONTROL_PLANE names, installing first what a fresh machine
# lacks. embedded: the embedded API server; real: the upstream control plane; cluster: a real
# single-node cluster (as root); all (the default): the three. `both` is embedded and real.
#
# The cluster tier's cluster is started once for the run and stopped (and the machine cleaned up)
# whatever happens to the tests, Ctrl-C included.
set -euo pipefail
cd "$(dirname "$0")/.."
tiers=${TEST_CONTROL_PLANE:-all}
case $tiers in
  embedded | real | both | cluster | all) ;;
  *) echo "TEST_CONTROL_PLANE must be embedded, real, both, cluster or all, not \"$tiers\"" >&2; exit 2 ;;
esac
runs() { [ "$tiers" = all ] || [ "$tiers" = "$1" ] || { [ "$tiers" = both ] && [ "$1" != cluster ]; }; }

TEST_CONTROL_PLANE=$tiers bash scripts/test-deps.sh
if runs real || runs cluster; then
  bash testenv/control-plane/build.sh "$(runs cluster && echo node || echo control-plane)" >/dev/null
fi
# The upstream e2e suite, which the conformance tier plays against both servers.
if runs real; then
  bash testenv/e2e/build.sh >/dev/null
fi
# Helm, from its Go module: the chart's lint and render run beside the embedded tier's tests, its
# install on the cluster tier.
if runs embedded || runs cluster; then
  bash testenv/helm/build.sh >/dev/null
fi

status=0
nextest() { cargo nextest run --workspace --no-fail-fast "$@" || status=1; }
case $tiers in
  all | both) nextest --profile default ;;
  embedded | real) nextest --profile "$tiers" ;;
esac
# kube-envtest as another project builds it: no Go on PATH, offline; then from its packages, with the
# example project built and tested against them (cargo test: it is no workspace member).
if runs embedded; then
  bash scripts/no-go-build.sh --no-fail-fast || status=1
  bash scripts/package-check.sh --no-fail-fast || status=1
fi

if runs cluster; then
  # The images first (the operator's with `make docker-build`), then the node they run on.
  bash testenv/cluster/images.sh
  trap 'bash testenv/cluster/down.sh' EXIT
  trap 'exit 130' INT TERM
  # A cluster already running (another checkout's, an earlier run's) holds other images: a fresh one.
  bash testenv/cluster/down.sh
  bash testenv/cluster/up.sh >/dev/null
  nextest --profile cluster
  nextest --profile cluster-deployed
fi
exit $status
