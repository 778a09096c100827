#!/usr/bin/env bash
# Builds Helm (helm.sh/helm/v3's cmd/helm, the `tool` of go.mod, at the release go.mod pins) into
# target/helm/bin (or HELM_BIN_DIR), for the chart's tests: never a downloaded binary. Skipped when it
# was built from the same inputs; otherwise Go's build cache makes a rebuild cost only what changed.
# Prints the bin directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${HELM_BIN_DIR:-$root/target/helm/bin}
log() { printf 'helm: %s\n' "$*" >&2; }

cd "$here"
# What the binary depends on: the module graph and the toolchain.
inputs=$( { cat go.mod go.sum; go version; } | sha256sum | cut -d' ' -f1)
if [ -x "$out/helm" ] && [ "$(cat "$out/.inputs-helm" 2>/dev/null)" = "$inputs" ]; then
  echo "$out"
  exit 0
fi

# `helm version` must say the release go.mod pins, as the released binary does (Helm's Makefile sets
# the same variable); unstamped, it names only its minor version.
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
mkdir -p "$out"
log "building helm $version into $out"
start=$(date +%s)
rm -f "$out/.inputs-helm"
go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" -o "$out/helm" helm.sh/helm/v3/cmd/helm
echo "$inputs" > "$out/.inputs-helm"
log "built in $(( $(date +%s) - start )) s"
echo "$out"
