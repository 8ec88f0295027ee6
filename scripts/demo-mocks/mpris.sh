#!/usr/bin/env bash
# A stand-in media player for scripts/demo: the test suite's MPRIS player
# (tests/integration/mpris_player.py) on the demo's private session bus, playing a 3-minute track.
# Its position moves without any signal, as real players' does; qsd estimates it (/media/active/
# position and positionAt). Try: qsctl call media.playPause player=qsd_demo
# Prints its PID and returns.
set -euo pipefail
: "${DBUS_SESSION_BUS_ADDRESS:?run from scripts/demo (needs the private session bus)}"
cd "$(dirname "$0")/../.."

/usr/bin/python3 tests/integration/mpris_player.py '{"name": "org.mpris.MediaPlayer2.qsd_demo",
  "root": {"Identity": "qsd demo player"}, "player": {"PlaybackStatus": "Playing"},
  "metadata": {"mpris:trackid": "/org/qsd/demo/track/1", "xesam:title": "A demo track",
               "xesam:artist": ["qsd"], "xesam:album": "Stand-ins", "mpris:length": 180000000}}' \
  >/dev/null 2>&1 &
echo $!
