# Sourced by scripts/demo and its stand-ins (not a stand-in itself: those end in .sh).
#
# every SECONDS COMMAND...: runs `COMMAND... N` every SECONDS (N = 1, 2, ...: a command works out
# its next value from it) in a background subshell, its output discarded, and prints that
# subshell's PID. TERM stops it at once together with the sleep or the command it waits for, so
# nothing the demo started outlives the demo: both run in the background and are waited for,
# since bash runs a trap only once a foreground command has ended.
every() {
  local period=$1
  shift
  (
    child=""
    trap '[ -z "$child" ] || { kill "$child"; wait "$child"; } 2>/dev/null; exit 0' TERM
    n=0
    while :; do
      sleep "$period" &
      child=$!
      wait "$child"
      n=$((n + 1))
      "$@" "$n" &
      child=$!
      wait "$child"
      child=""
    done
  ) >/dev/null 2>&1 &
  echo $!
}
