#!/usr/bin/env bash
# Builds the upstream programs the tests run, from the Go modules pinned in go.mod/go.sum, into
# target/control-plane/bin: by default the control plane (etcd, kube-apiserver,
# kube-controller-manager); `build.sh node` adds the node's programs the cluster tier runs (kubelet,
# kube-scheduler, kube-proxy); or name programs one by one. Each program is skipped when it was built
# from the same inputs; otherwise Go's build cache makes a rebuild cost only what changed. Prints the
# bin directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${CONTROL_PLANE_BIN_DIR:-$root/target/control-plane/bin}
control_plane=(etcd kube-apiserver kube-controller-manager)
node=(kubelet kube-scheduler kube-proxy)
programs=()
for arg in "${@:-control-plane}"; do
  case $arg in
    control-plane) programs+=("${control_plane[@]}") ;;
    node) programs+=("${control_plane[@]}" "${node[@]}") ;;
    *) [ -d "$(dirname "$0")/cmd/$arg" ] || { echo "control-plane: no program $arg" >&2; exit 2; }; programs+=("$arg") ;;
  esac
done
log() { printf 'control-plane: %s\n' "$*" >&2; }

cd "$here"
# What the binaries depend on: the module graph, our mains and the toolchain.
inputs=$( { cat go.mod go.sum; find cmd -name '*.go' -print0 | sort -z | xargs -0 cat; go version; } | sha256sum | cut -d' ' -f1)
stale=()
for p in "${programs[@]}"; do
  if [ ! -x "$out/$p" ] || [ "$(cat "$out/.inputs-$p" 2>/dev/null)" != "$inputs" ]; then stale+=("$p"); fi
done
if [ ${#stale[@]} -eq 0 ]; then
  echo "$out"
  exit 0
fi

# /version must answer the release the module pins, as a released binary does: clients pick
# behaviour by it, and an unstamped build says v0.0.0.
# shellcheck source=../release-stamp.sh
source "$here/../release-stamp.sh"

mkdir -p "$out"
log "building ${stale[*]} ($version) into $out"
start=$(date +%s)
for p in "${stale[@]}"; do
  rm -f "$out/.inputs-$p"
  go build -trimpath -ldflags "-s -w$stamp_flags" -o "$out/$p" "./cmd/$p"
  echo "$inputs" > "$out/.inputs-$p"
done
log "built in $(( $(date +%s) - start )) s"
echo "$out"
