"""python-dbusmock's upower and power_profiles_daemon templates (and power-profiles-daemon on its
newer bus name) on a private system bus, driven through org.freedesktop.DBus.Mock: starting
them, adding devices, and reading what qsd asked them."""

import json
import os

from qsdtest import PY

UP = "org.freedesktop.UPower"
UP_PATH = "/org/freedesktop/UPower"
DEV_IFACE = "org.freedesktop.UPower.Device"
DISPLAY = UP_PATH + "/devices/DisplayDevice"
MOCK = "org.freedesktop.DBus.Mock"
HADESS = ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles")
NEW_PPD = ("org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles",
           "org.freedesktop.UPower.PowerProfiles")


def dbus_mod():
    import dbus  # noqa: only under /usr/bin/python3
    return dbus


def up_mock(env):
    bus = env.dbus()
    return dbus_mod().Interface(bus.get_object(UP, UP_PATH), MOCK)


def ppd_obj(env, svc=HADESS):
    return env.dbus().get_object(svc[0], svc[1])


def start_upower(env, **params):
    p = {"OnBattery": True, "DaemonVersion": "0.99.20", "GetCriticalAction": "PowerOff"}
    p.update(params)
    return env.start_mock("upower", p, name=UP)


def start_hadess(env, **params):
    return env.start_mock("power_profiles_daemon", params or None, name=HADESS[0])


NEW_PPD_TEMPLATE = """
# power-profiles-daemon 0.20+ on its newer bus name. python-dbusmock's own template only knows
# net.hadess.PowerProfiles; a template (rather than calls after start-up) makes the object
# complete before the mock answers its first call.
import dbus
BUS_NAME = "org.freedesktop.UPower.PowerProfiles"
MAIN_OBJ = "/org/freedesktop/UPower/PowerProfiles"
MAIN_IFACE = "org.freedesktop.UPower.PowerProfiles"
SYSTEM_BUS = True

def load(mock, parameters):
    profiles = parameters.get("Profiles", ["power-saver", "balanced", "performance"])
    mock.AddProperties(MAIN_IFACE, dbus.Dictionary({
        "ActiveProfile": parameters.get("ActiveProfile", "balanced"),
        "PerformanceDegraded": "",
        "Profiles": dbus.Array([dbus.Dictionary({"Profile": p, "Driver": "dbusmock"}, signature="sv")
                                for p in profiles], signature="a{sv}"),
        "Actions": dbus.Array([], signature="s"),
        "ActiveProfileHolds": dbus.Array([], signature="a{sv}"),
        "Version": "0.21",
    }, signature="sv"))
    mock.AddMethods(MAIN_IFACE, [
        ("HoldProfile", "sss", "u", "ret = 7"),
        ("ReleaseProfile", "u", "", ""),
    ])
"""


def start_new_ppd(env, active="balanced"):
    path = os.path.join(env.dir, "new_ppd_template.py")
    with open(path, "w") as f:
        f.write(NEW_PPD_TEMPLATE)
    p = env.spawn([PY, "-m", "dbusmock", "--system", "-t", path, "-p", json.dumps({"ActiveProfile": active})],
                  "mock-new-ppd-%d" % len(env.procs))
    env.wait_bus_name(NEW_PPD[0])
    return p


def add_battery(env, name="BAT0", pct=73.5, seconds=7200):
    return up_mock(env).AddDischargingBattery(name, "Mock Battery", pct, seconds)


def add_mouse(env, name="mouse_hidpp"):
    """A peripheral: a mouse battery, not a power supply (UPower Type 5)."""
    dbus = dbus_mod()
    path = UP_PATH + "/devices/" + name
    mock = up_mock(env)
    mock.AddObject(path, DEV_IFACE, {
        "Type": dbus.UInt32(5), "PowerSupply": False, "IsPresent": True, "Model": "MX Master 3",
        "Vendor": "Logitech", "Percentage": dbus.Double(55.0), "State": dbus.UInt32(2),
        "BatteryLevel": dbus.UInt32(1), "NativePath": "hidpp_battery_0", "Serial": "4c-a1-2f",
    }, dbus.Array([], signature="(ssss)"))
    mock.EmitSignal(UP, "DeviceAdded", "o", [dbus.ObjectPath(path)])
    return path


def setup_display(env, pct=73.5, state=2):
    up_mock(env).SetupDisplayDevice(2, state, pct, 36.7, 50.0, 12.3, 7200, 0, True, "battery-good-symbolic", 3)


def method_calls(obj, method):
    return [list(args) for _, args in dbus_mod().Interface(obj, MOCK).GetMethodCalls(method)]
