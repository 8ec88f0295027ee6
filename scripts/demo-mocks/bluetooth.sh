#!/usr/bin/env bash
# Stand-in BlueZ for scripts/demo: python-dbusmock's bluez5 template on the demo's private system
# bus, with one adapter hci0, a headset (paired, connected, its battery at 80 %), a mouse
# (paired) and a phone nearby. qsd registers its pairing agent with it. Prints the PID it
# started, and tells qsd to leave this machine's rfkill switches alone (they are not the mock's).
set -euo pipefail
: "${DBUS_SYSTEM_BUS_ADDRESS:?run from scripts/demo (needs the private system bus)}"

B=org.bluez
/usr/bin/python3 -m dbusmock --system -t bluez5 >/dev/null 2>&1 &
echo $!
echo "env QSD_RFKILL=/nonexistent"
gdbus wait --system --timeout 10 $B >/dev/null

m() { gdbus call --system -d $B -o / -m org.bluez.Mock."$@" >/dev/null; }
on() { local path=$1; shift; gdbus call --system -d $B -o "$path" -m org.freedesktop.DBus.Mock."$@" >/dev/null; }

m AddAdapter hci0 qsd-demo
m AddDevice hci0 00:1B:66:A1:B2:C3 WH-1000XM4
m AddDevice hci0 D4:F5:13:22:41:07 "MX Master 3"
m AddDevice hci0 3C:28:6D:90:11:5E "Pixel 8"
m PairDevice hci0 00:1B:66:A1:B2:C3 2360344
m PairDevice hci0 D4:F5:13:22:41:07 9600
m ConnectDevice hci0 00:1B:66:A1:B2:C3
H=/org/bluez/hci0/dev_00_1B_66_A1_B2_C3
on $H UpdateProperties org.bluez.Device1 "{'Icon': <'audio-headset'>}"
on /org/bluez/hci0/dev_D4_F5_13_22_41_07 UpdateProperties org.bluez.Device1 "{'Icon': <'input-mouse'>}"
# Battery1 appears as BlueZ adds it to a connected headset.
on $H AddProperties org.bluez.Battery1 "{'Percentage': <byte 80>}"
on / EmitSignal org.freedesktop.DBus.ObjectManager InterfacesAdded 'oa{sa{sv}}' \
  "[<objectpath '$H'>, <{'org.bluez.Battery1': {'Percentage': <byte 80>}}>]"
