# Sourced by .ci/run and scripts/test.sh: `phase NAME COMMAND...` runs COMMAND and prints one line with
# its wall time (`phase: NAME  N s`), so that a CI log says where the time goes; `phase_summary` prints
# every phase of the run again as a table, then what `phase_excerpt` kept of the phases that failed (the
# end of a CI log is what a reader sees first: why it failed belongs there, not only thousands of lines
# above). The lines are collected in the file PHASE_LOG, which the outermost script creates and its
# children inherit.
if [ -z "${PHASE_LOG:-}" ]; then
  PHASE_LOG=$(mktemp)
  export PHASE_LOG
  phase_log_owner=$$
fi

phase() { # name command...: the command's exit status is phase's
  local name=$1 start=$SECONDS status=0 line
  shift
  "$@" || status=$?
  line=$(printf '%-24s %5d s' "$name" $((SECONDS - start)))
  [ "$status" -eq 0 ] || line+=" (exit $status)"
  echo "phase: $line" >&2
  echo "$line" >>"$PHASE_LOG"
  return "$status"
}

# title lines...: kept for the end of the run, below the table (lines from standard input).
phase_excerpt() {
  { echo "$1"; sed 's/^/  /'; } >>"$PHASE_LOG.failures"
}

# Prints the table in the script that made PHASE_LOG (and removes the file), nothing in its children.
phase_summary() {
  [ "${phase_log_owner:-}" = $$ ] || return 0
  echo "phases (wall time; the machine's other load included):" >&2
  sed 's/^/  /' "$PHASE_LOG" >&2
  if [ -s "$PHASE_LOG.failures" ]; then
    echo "what failed:" >&2
    cat "$PHASE_LOG.failures" >&2
  fi
  rm -f "$PHASE_LOG" "$PHASE_LOG.failures"
}
