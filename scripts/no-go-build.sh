#!/usr/bin/env bash
# kube-envtest as another project gets it: built without the `go-modules` feature (apimachinery then
# reads its committed snapshot of the Kubernetes types), with no `go` on PATH and cargo offline, and its
# tests and the example controller's tests run. Fails if any step wanted Go or the network.
#
# Selecting only these two packages leaves the feature off: in a workspace-wide build apiserver's
# default features turn it on for everyone. The crates whose features differ from the workspace build's
# are built a second time beside them in target/ (most of the dependency tree: measured in BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."

# PATH without every folder that holds a `go`.
path=""
IFS=: read -ra dirs <<< "$PATH"
for dir in "${dirs[@]}"; do
  if [ -n "$dir" ] && [ ! -x "$dir/go" ]; then
    path="${path:+$path:}$dir"
  fi
done
if PATH="$path" command -v go >/dev/null; then
  echo "no-go-build: go is still on PATH ($(PATH="$path" command -v go))" >&2
  exit 1
fi

start=$(date +%s)
PATH="$path" cargo nextest run --offline --locked -p kube-envtest -p configmap-mirror "$@"
echo "no-go-build: $(( $(date +%s) - start )) s"
