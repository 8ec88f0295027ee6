#!/usr/bin/env bash
# Stand-in UPower and power-profiles-daemon for scripts/demo: python-dbusmock's upower and
# power_profiles_daemon templates on the demo's private system bus (DBUS_SYSTEM_BUS_ADDRESS),
# with a discharging laptop battery BAT0 at 73.5 %, mains power unplugged, a mouse, and the
# display device UPower composes from them. Prints the PIDs it started, one per line, and returns.
set -euo pipefail
: "${DBUS_SYSTEM_BUS_ADDRESS:?run from scripts/demo (needs the private system bus)}"

U=org.freedesktop.UPower
UP=/org/freedesktop/UPower
PP=net.hadess.PowerProfiles

/usr/bin/python3 -m dbusmock --system -t upower \
  -p '{"DaemonVersion": "0.99.20", "OnBattery": true, "GetCriticalAction": "PowerOff"}' >/dev/null 2>&1 &
echo $!
/usr/bin/python3 -m dbusmock --system -t power_profiles_daemon >/dev/null 2>&1 &
echo $!
gdbus wait --system --timeout 10 $U >/dev/null
gdbus wait --system --timeout 10 $PP >/dev/null

m() { gdbus call --system -d $U -o $UP -m org.freedesktop.DBus.Mock."$@" >/dev/null; }
on() { local path=$1; shift; gdbus call --system -d $U -o "$path" -m org.freedesktop.DBus.Mock."$@" >/dev/null; }

# AddDischargingBattery(name, model, percentage, seconds to empty)
m AddDischargingBattery BAT0 "Mock Battery" 73.5 7200
B=$UP/devices/BAT0
on $B AddProperty $U.Device NativePath "<'BAT0'>"
on $B AddProperty $U.Device Vendor "<'Qsd Cells'>"
on $B AddProperty $U.Device IconName "<'battery-good-symbolic'>"
on $B AddProperty $U.Device Capacity '<92.5>'
on $B AddProperty $U.Device EnergyRate '<9.8>'
on $B AddProperty $U.Device Technology '<uint32 1>'
on $B AddProperty $U.Device ChargeCycles '<int32 127>'
m AddAC line_power_AC "Mock AC"
on $UP/devices/line_power_AC UpdateProperties $U.Device "{'Online': <false>}"
on $UP/devices/line_power_AC AddProperty $U.Device Type '<uint32 1>'

# A peripheral: a wireless mouse with its own battery (Type 5, not a power supply).
on $UP AddObject $UP/devices/mouse_hidpp $U.Device \
  "{'Type': <uint32 5>, 'PowerSupply': <false>, 'IsPresent': <true>, 'Model': <'MX Master 3'>,
    'Vendor': <'Logitech'>, 'Percentage': <55.0>, 'State': <uint32 2>, 'IconName': <'input-mouse'>}" '@a(ssss) []'
gdbus call --system -d $U -o $UP -m org.freedesktop.DBus.Mock.EmitSignal $U DeviceAdded o "[<objectpath '$UP/devices/mouse_hidpp'>]" >/dev/null

# SetupDisplayDevice(type, state, percentage, energy, energy_full, rate, time_to_empty,
#                    time_to_full, present, icon, warning_level)
m SetupDisplayDevice 2 2 73.5 36.7 50.0 9.8 7200 0 true battery-good-symbolic 1
