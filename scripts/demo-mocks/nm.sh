#!/usr/bin/env bash
# A stand-in NetworkManager for scripts/demo: python-dbusmock's networkmanager template on the
# demo's private system bus (DBUS_SYSTEM_BUS_ADDRESS), with a Wi-Fi device seeing three networks
# (one saved and connected) and a wired device with a 1 Gb/s link. Prints the PIDs it started,
# one per line, and returns.
set -euo pipefail
: "${DBUS_SYSTEM_BUS_ADDRESS:?run from scripts/demo (needs the private system bus)}"

NM=org.freedesktop.NetworkManager
P=/org/freedesktop/NetworkManager
/usr/bin/python3 -m dbusmock --system -t networkmanager -p '{"Version": "1.42.4"}' >/dev/null 2>&1 &
echo $!
gdbus wait --system --timeout 10 $NM >/dev/null

m() { gdbus call --system -d $NM -o /org/freedesktop -m org.freedesktop.DBus.Mock."$@" >/dev/null; }
on() { local path=$1; shift; gdbus call --system -d $NM -o "$path" -m org.freedesktop.DBus.Mock."$@" >/dev/null; }

on $P AddProperty $NM ConnectivityCheckAvailable '<true>'
on $P AddProperty $NM ConnectivityCheckEnabled '<true>'

m AddWiFiDevice wlan0 wlan0 30
W=$P/Devices/wlan0
on $W AddProperty $NM.Device Autoconnect '<true>'
on $W AddProperty $NM.Device HwAddress "<'11:22:33:44:55:66'>"
on $W AddMethod $NM.Device Disconnect '' '' \
  "self.Set('$NM.Device', 'ActiveConnection', dbus.ObjectPath('/')); self.Set('$NM.Device', 'State', dbus.UInt32(30))"
m AddAccessPoint $W ap_home HomeNet 00:11:22:33:44:55 2 2437 54000 82 0x100
m AddAccessPoint $W ap_cafe "Café ☕" 00:11:22:33:44:66 2 5180 130000 48 0
m AddAccessPoint $W ap_next Neighbour 00:11:22:33:44:77 2 2412 54000 21 0x100
on $P/AccessPoint/ap_next UpdateProperties $NM.AccessPoint "{'WpaFlags': <uint32 0>, 'RsnFlags': <uint32 0x188>}"
m AddWiFiConnection $W conn_home HomeNet wpa-psk
m AddActiveConnection "['$W']" $P/Settings/conn_home $P/AccessPoint/ap_home Active_home 2

m AddEthernetDevice eth0 eth0 30
E=$P/Devices/eth0
on $E AddProperty $NM.Device Autoconnect '<true>'
on $E AddProperty $NM.Device HwAddress "<'78:dd:08:d2:3d:43'>"
on $E AddProperty $NM.Device InterfaceFlags '<uint32 65539>'
on $E UpdateProperties $NM.Device.Wired "{'Speed': <uint32 1000>, 'Carrier': <true>}"
