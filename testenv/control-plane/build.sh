#!/usr/bin/env bash
# Builds the upstream control plane the tests run against: etcd, kube-apiserver and
# kube-controller-manager, from the Go modules pinned in go.mod/go.sum, into
# target/control-plane/bin. Skipped when the binaries were built from the same inputs; otherwise
# Go's build cache makes a rebuild cost only what changed. Prints the bin directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${CONTROL_PLANE_BIN_DIR:-$root/target/control-plane/bin}
programs=(etcd kube-apiserver kube-controller-manager)
log() { printf 'control-plane: %s\n' "$*" >&2; }

cd "$here"
# What the binaries depend on: the module graph, our mains and the toolchain.
inputs=$( { cat go.mod go.sum; find cmd -name '*.go' -print0 | sort -z | xargs -0 cat; go version; } | sha256sum | cut -d' ' -f1)
stamp="$out/.inputs"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs" ] && for p in "${programs[@]}"; do [ -x "$out/$p" ] || exit 1; done; then
  echo "$out"
  exit 0
fi

# /version must answer the release the module pins, as a released binary does: clients pick
# behaviour by it, and an unstamped build says v0.0.0.
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
stamp_flags=""
for key in "gitVersion=$version" "gitMajor=1" "gitMinor=$minor" "gitTreeState=clean" "buildDate=1970-01-01T00:00:00Z"; do
  stamp_flags+=" -X k8s.io/component-base/version.$key -X k8s.io/client-go/pkg/version.$key"
done

mkdir -p "$out"
rm -f "$stamp"
log "building ${programs[*]} ($version) into $out"
start=$(date +%s)
for p in "${programs[@]}"; do
  go build -trimpath -ldflags "-s -w$stamp_flags" -o "$out/$p" "./cmd/$p"
done
echo "$inputs" > "$stamp"
log "built in $(( $(date +%s) - start )) s"
echo "$out"
