#!/usr/bin/env bash
# Builds the controller-runtime PostgresWriter (cmd/postgres-writer) the convergence benchmark runs
# beside the Rust operator, from the modules pinned in go.mod/go.sum, into target/go-peer/bin (or
# GO_PEER_BIN_DIR). Skipped when it was built from the same inputs; otherwise Go's build cache makes a
# rebuild cost only what changed. Prints the bin directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${GO_PEER_BIN_DIR:-$root/target/go-peer/bin}
program=postgres-writer
log() { printf 'go-peer: %s\n' "$*" >&2; }

cd "$here"
# What the binary depends on: the module graph, our sources (not their tests) and the toolchain.
inputs=$( { cat go.mod go.sum; find . -name '*.go' ! -name '*_test.go' -print0 | sort -z | xargs -0 cat; go version; } | sha256sum | cut -d' ' -f1)
if [ -x "$out/$program" ] && [ "$(cat "$out/.inputs-$program" 2>/dev/null)" = "$inputs" ]; then
  echo "$out"
  exit 0
fi

mkdir -p "$out"
log "building $program into $out"
start=$(date +%s)
rm -f "$out/.inputs-$program"
go build -trimpath -o "$out/$program" "./cmd/$program"
echo "$inputs" > "$out/.inputs-$program"
log "built in $(( $(date +%s) - start )) s"
echo "$out"
