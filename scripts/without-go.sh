#!/usr/bin/env bash
# Runs its arguments as a command with no `go` on PATH (every folder that holds one left out), as on a
# machine without Go. Fails if a `go` is still found.
set -euo pipefail
path=""
IFS=: read -ra dirs <<< "$PATH"
for dir in "${dirs[@]}"; do
  if [ -n "$dir" ] && [ ! -x "$dir/go" ]; then
    path="${path:+$path:}$dir"
  fi
done
if PATH="$path" command -v go >/dev/null; then
  echo "without-go: go is still on PATH ($(PATH="$path" command -v go))" >&2
  exit 1
fi
PATH="$path" exec "$@"
