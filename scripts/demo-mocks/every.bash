# Sourced by scripts/demo and its stand-ins (not a stand-in itself: those end in .sh).
#
# every SECONDS COMMAND...: runs COMMAND every SECONDS in a background subshell (its output
# discarded) and prints that subshell's PID. TERM stops it together with the sleep it waits in,
# so nothing the demo started outlives the demo. COMMAND runs in that one subshell each time, so
# a shell function it names may keep state in variables from one run to the next.
every() {
  local period=$1
  shift
  (
    sleeper=""
    trap '[ -z "$sleeper" ] || { kill "$sleeper"; wait "$sleeper"; } 2>/dev/null; exit 0' TERM
    while :; do
      sleep "$period" &
      sleeper=$!
      wait "$sleeper"
      "$@" || true
    done
  ) >/dev/null 2>&1 &
  echo $!
}
