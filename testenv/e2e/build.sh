#!/usr/bin/env bash
# Builds the upstream e2e suite the conformance tier runs: e2e.test (sig-api-machinery's specs and
# the e2e framework, from the Go modules pinned in go.mod/go.sum) and the ginkgo CLI that runs it on
# parallel processes, into target/e2e/bin. Skipped when both were built from the same inputs;
# otherwise Go's build cache makes a rebuild cost only what changed. Prints the bin directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${E2E_BIN_DIR:-$root/target/e2e/bin}
log() { printf 'e2e: %s\n' "$*" >&2; }

cd "$here"
# What the binaries depend on: the module graph, our main and the toolchain.
inputs=$( { cat go.mod go.sum; find . -name '*.go' -print0 | sort -z | xargs -0 cat; go version; } | sha256sum | cut -d' ' -f1)
stamp="$out/.inputs"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs" ] && [ -x "$out/e2e.test" ] && [ -x "$out/ginkgo" ]; then
  echo "$out"
  exit 0
fi

# The suite reports the release it was built from (`e2e.test --version`), and the specs that compare
# the server's version with their own read it: an unstamped build says v0.0.0.
# shellcheck source=../release-stamp.sh
source "$here/../release-stamp.sh"

mkdir -p "$out"
rm -f "$stamp"
log "building e2e.test ($version) and ginkgo into $out"
start=$(date +%s)
# A test binary, as upstream's e2e.test is: Ginkgo runs its specs from a Go test.
go test -c -trimpath -ldflags "-s -w$stamp_flags" -o "$out/e2e.test" .
# The ginkgo CLI at the version go.mod pins (a tool of this module): it runs e2e.test on several
# processes and merges their reports.
go build -trimpath -ldflags "-s -w" -o "$out/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
echo "$inputs" > "$stamp"
log "built in $(( $(date +%s) - start )) s"
echo "$out"
