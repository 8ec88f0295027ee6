#!/usr/bin/env bash
# Headless sway for scripts/demo: a compositor with two outputs and a foot window, so /wayland
# has outputs and a toplevel; a loop changes HEADLESS-2's scale every few seconds so changes
# show. sway refuses to run as root: as root it runs as `nobody` (setpriv) in a runtime directory
# of its own. Left out when a compositor is already there (WAYLAND_DISPLAY set) or sway is missing.
# Prints the PIDs it started, one per line, and "env WAYLAND_DISPLAY=<socket>" for qsd.
set -euo pipefail
: "${XDG_RUNTIME_DIR:?run from scripts/demo (needs the private runtime directory)}"
. "$(dirname "$0")/every.bash"
[ -z "${WAYLAND_DISPLAY:-}" ] || exit 0
for b in sway swaymsg foot; do
  command -v "$b" >/dev/null || { echo "wayland stand-in: $b is missing" >&2; exit 0; }
done

demo=$(dirname "$XDG_RUNTIME_DIR")
dir="$demo/wayland"
mkdir -p "$dir"
printf 'xwayland disable\noutput HEADLESS-1 resolution 1920x1080 position 0 0\n' > "$dir/config"
run=()
if [ "$(id -u)" -eq 0 ]; then
  command -v setpriv >/dev/null || { echo "wayland stand-in: sway refuses root and setpriv is missing" >&2; exit 0; }
  chmod 711 "$demo"                       # nobody reaches its own directory, nothing else
  chown -R nobody:nogroup "$dir"
  run=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi
chmod 700 "$dir"
env -i PATH=/usr/bin:/bin HOME="$dir" XDG_RUNTIME_DIR="$dir" WLR_BACKENDS=headless WLR_RENDERER=pixman \
  WLR_LIBINPUT_NO_DEVICES=1 "${run[@]}" sway -c "$dir/config" >/dev/null 2>&1 &
sway_pid=$!
echo "$sway_pid"
for _ in $(seq 200); do
  ipc=$(ls "$dir"/sway-ipc.*."$sway_pid".sock 2>/dev/null || true)
  socket=$(ls -d "$dir"/wayland-[0-9] 2>/dev/null | head -n 1 || true)
  [ -n "$ipc" ] && [ -n "$socket" ] && swaymsg -s "$ipc" -t get_outputs >/dev/null 2>&1 && break
  sleep 0.05
done
[ -n "${socket:-}" ] || { echo "wayland stand-in: sway did not start" >&2; exit 0; }
swaymsg -s "$ipc" create_output >/dev/null 2>&1 || true
WAYLAND_DISPLAY="$socket" foot --app-id=demo.terminal --title="Demo terminal" sleep 3600 >/dev/null 2>&1 &
echo $!
rescale() {   # 1.5, 1, 1.5 ...
  swaymsg -s "$ipc" output HEADLESS-2 scale "$([ $(( $1 % 2 )) = 1 ] && echo 1.5 || echo 1)"
}
every 5 rescale
echo "env WAYLAND_DISPLAY=$socket"
