#!/usr/bin/env bash
# kube-envtest built as another project gets it: without the `go-modules` feature (apimachinery then
# reads its committed snapshot of the Kubernetes types), with no `go` on PATH and cargo offline, and its
# tests run. Fails if any step wanted Go or the network. (scripts/package-check.sh builds a project
# outside the workspace against its packages.)
#
# Selecting only this package leaves the feature off: in a workspace-wide build apiserver's default
# features turn it on for everyone. The crates whose features differ from the workspace build's are
# built a second time beside them in target/ (most of the dependency tree: measured in BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
bash scripts/without-go.sh cargo nextest run --offline --locked -p kube-envtest "$@"
echo "no-go-build: $(( $(date +%s) - start )) s"
