#!/usr/bin/env bash
# Headless PipeWire for scripts/demo: pipewire and wireplumber in the demo's private
# XDG_RUNTIME_DIR (WirePlumber needs the demo's session bus), two null sinks ("Speakers",
# "Headphones") and a virtual microphone, a stream playing a quiet tone to the speakers, and a
# loop that moves the speakers' volume every few seconds so changes show in /audio.
# Prints the PIDs it started, one per line, and returns.
set -euo pipefail
: "${XDG_RUNTIME_DIR:?run from scripts/demo (needs the private runtime directory)}"
: "${DBUS_SESSION_BUS_ADDRESS:?run from scripts/demo (WirePlumber needs the private session bus)}"
. "$(dirname "$0")/every.bash"
for b in pipewire wireplumber pw-cli pw-cat wpctl pw-metadata; do
  command -v "$b" >/dev/null || { echo "pipewire stand-in: $b is missing" >&2; exit 0; }
done

pipewire >/dev/null 2>&1 &
echo $!
wireplumber >/dev/null 2>&1 &
echo $!
# Ready once WirePlumber created its "default" metadata.
for _ in $(seq 200); do
  pw-metadata -n default 0 2>/dev/null | grep -q 'Found "default"' && break
  sleep 0.05
done

sink() {  # sink <node.name> <description> <media.class> <positions>
  pw-cli create-node adapter "{ factory.name=support.null-audio-sink node.name=$1 node.description=\"$2\"
    media.class=$3 object.linger=true audio.position=[$4] }" >/dev/null
}
sink demo_speakers Speakers Audio/Sink "FL FR"
sink demo_headphones Headphones Audio/Sink "FL FR"
sink demo_mic "Microphone" Audio/Source/Virtual "MONO"

id_of() {  # the global id of a node by node.name, as wpctl takes it
  for _ in $(seq 100); do
    local id
    id=$(pw-cli ls Node 2>/dev/null | awk -v n="node.name = \"$1\"" '/^\tid /{id=$2} index($0, n){print id+0; exit}')
    [ -n "$id" ] && { echo "$id"; return; }
    sleep 0.05
  done
}
speakers=$(id_of demo_speakers)
wpctl set-default "$speakers" >/dev/null 2>&1 || true
wpctl set-volume "$speakers" 0.6 >/dev/null 2>&1 || true

# Ten minutes of a quiet 440 Hz tone, played to the speakers.
tone="$XDG_RUNTIME_DIR/qsd-demo-tone.wav"
/usr/bin/python3 - "$tone" <<'PY'
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000)
    second = b"".join(struct.pack("<h", int(3000 * math.sin(2 * math.pi * 440 * i / 8000))) for i in range(8000))
    for _ in range(600):
        w.writeframes(second)
PY
pw-cat --playback --target demo_speakers -P "{ node.name=demo-player application.name=\"Demo Player\" }" \
  "$tone" >/dev/null 2>&1 &
echo $!

# Move the speakers' volume so /audio changes while the demo watches.
turn() {   # 70, 80, 90, 30, 40 ... per cent
  wpctl set-volume "$speakers" "0.$(( 3 + ($1 + 3) % 7 ))"
}
every 4 turn
