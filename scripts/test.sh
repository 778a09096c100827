#!/usr/bin/env bash
# `make test`: every test of the tiers TEST_CONTROL_PLANE names, installing first what a fresh machine
# lacks. embedded: the embedded API server; real: the upstream control plane; cluster: a real
# single-node cluster (as root); all (the default): the three. `both` is embedded and real.
#
# The cluster tier's cluster is started once for the run and stopped (and the machine cleaned up)
# whatever happens to the tests, Ctrl-C included. Builds that the cluster tier's tests do not need run
# beside them, at the lowest CPU priority, where those tests mostly wait on the node.
#
# Each phase's wall time is printed as it ends, and all of them as a table at the end (scripts/phase.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
tiers=${TEST_CONTROL_PLANE:-all}
case $tiers in
  embedded | real | both | cluster | all) ;;
  *) echo "TEST_CONTROL_PLANE must be embedded, real, both, cluster or all, not \"$tiers\"" >&2; exit 2 ;;
esac
runs() { [ "$tiers" = all ] || [ "$tiers" = "$1" ] || { [ "$tiers" = both ] && [ "$1" != cluster ]; }; }

# shellcheck source=phase.sh
source scripts/phase.sh

phase deps env TEST_CONTROL_PLANE="$tiers" bash scripts/test-deps.sh
if runs real || runs cluster; then
  phase "go control-plane" bash testenv/control-plane/build.sh "$(runs cluster && echo node || echo control-plane)" >/dev/null
fi
# The upstream e2e suite, which the conformance tier plays against both servers.
if runs real; then
  phase "go e2e" bash testenv/e2e/build.sh >/dev/null
fi
# Helm, from its Go module: the chart's lint and render run beside the embedded tier's tests, its
# install on the cluster tier.
if runs embedded || runs cluster; then
  phase "go helm" bash testenv/helm/build.sh >/dev/null
fi

status=0
target=${CARGO_TARGET_DIR:-target}
# A failed run names its failed tests, with the line each panicked with, again at the end of the log
# (from the JUnit report every profile writes, .config/nextest.toml).
nextest() {
  phase "nextest $1" cargo nextest run --workspace --no-fail-fast --profile "$@" && return 0
  status=1
  python3 scripts/failed-tests.py "$target/nextest/$1/junit.xml" | phase_excerpt "nextest $1 failed:"
}
# At the end, whatever happened: what runs in the background waited for, the cluster stopped (the
# machine cleaned up) if one was started, then the table of phases.
cluster_started=false
finish() {
  wait
  if $cluster_started; then phase "cluster down" bash testenv/cluster/down.sh; fi
  phase_summary
}
trap finish EXIT
# `beside NAME COMMAND...` runs the phase in the background at the lowest CPU priority, beside tests
# that mostly wait (on the node, on timers): the builds take the CPU those tests leave, and never slow
# them down. Its output goes to a file of its own rather than into the tests' (target/logs/); if it
# fails, the whole file is printed, and its error lines are kept for the end of the log.
beside() {
  local name=$1 log
  shift
  mkdir -p "$target/logs"
  log="$target/logs/$(printf '%s' "$name" | tr -cs 'a-z0-9' '-' | sed 's/-$//').log"
  (
    renice -n 19 -p "$BASHPID" >/dev/null || true
    phase "$name" "$@" >"$log" 2>&1 && { grep '^phase: ' "$log" >&2; exit 0; }
    failed=$?
    cat "$log" >&2
    { grep -E 'error|panicked|FAIL|failed|No space|Killed|signal' "$log" || true; } | tail -n 20 |
      phase_excerpt "$name failed; the lines of its log that say why (all of it above):"
    exit "$failed"
  ) &
}
# The operator's static binary for its image (`make static-binary`: a release build whose whole-program
# LTO links on one core, a quarter of an hour on 2 cores) builds beside the embedded and real tiers'
# tests, which mostly wait on servers and timers, rather than be waited for by the cluster tier's.
static_binary=""
if runs cluster; then
  beside "operator binary (beside)" make -s static-binary
  static_binary=$!
fi
case $tiers in
  all | both) nextest default ;;
  embedded | real) nextest "$tiers" ;;
esac
# The examples in the crates' docs (kube-envtest's start an embedded server), which nextest does not run.
if runs embedded; then
  phase doctests cargo test --doc --workspace -q || status=1
fi
# kube-envtest as another project builds it: no Go on PATH, offline; then from its packages, with the
# example project built and tested against them (cargo test: it is no workspace member).
no_go_build() { phase no-go-build bash scripts/no-go-build.sh --no-fail-fast || status=1; }
package_check=(bash scripts/package-check.sh --no-fail-fast)
# With the cluster tier, package-check runs beside its deployed tests and no-go-build after them (below).
if runs embedded && ! runs cluster; then
  no_go_build
  phase package-check "${package_check[@]}" || status=1
fi

if runs cluster; then
  # The node's own images, then the node.
  phase "images node" bash testenv/cluster/images.sh node
  cluster_started=true
  trap 'exit 130' INT TERM
  # A cluster already running (another checkout's, an earlier run's) holds other images: a fresh one.
  bash testenv/cluster/down.sh
  phase "cluster up" bash testenv/cluster/up.sh >/dev/null
  # The operator's image (`make docker-build`, from the static binary built above) is made beside the
  # first tests, which run the operator as processes; it is imported into the node as it is saved.
  wait "$static_binary" || status=1
  beside "images operator (beside)" bash testenv/cluster/images.sh operator
  operator_image=$!
  nextest cluster
  # package-check builds in a target directory of its own (cargo's lock on the workspace's is not
  # taken), beside the deployed tests; no-go-build, in the workspace's, after them.
  checks=""
  if runs embedded; then
    beside "package-check (beside)" "${package_check[@]}"
    checks=$!
  fi
  # The tests that deploy the operator, one at a time: mostly waiting on the node.
  if wait "$operator_image"; then nextest cluster-deployed; else status=1; fi
  if [ -n "$checks" ]; then
    wait "$checks" || status=1
    no_go_build
  fi
fi
exit $status
