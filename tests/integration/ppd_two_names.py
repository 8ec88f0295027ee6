"""A power-profiles-daemon 0.20+ stand-in: one connection owning both of its bus names,
net.hadess.PowerProfiles first and then org.freedesktop.UPower.PowerProfiles, as the real one
does (it owns the old name from the new one's bus_acquired handler). Usage: ppd_two_names.py LOG
[late]; each HoldProfile and ReleaseProfile is appended to LOG as "HoldProfile <name> <profile>
<app> <cookie>", "ReleaseProfile <name> <cookie>" or "Set <name> <property> <value>". With "late",
the new name is taken only in the first HoldProfile, before it answers: the second name comes
while a hold is out; with "late-set", likewise in the first Set."""

import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

LOG = sys.argv[1]
LATE = sys.argv[2:] == ["late"]
LATE_SET = sys.argv[2:] == ["late-set"]
PROFILES = ("power-saver", "balanced", "performance")
holds = {}
active = ["balanced"]
next_cookie = [100]


def note(*words):
    with open(LOG, "a") as f:
        f.write(" ".join(str(w) for w in words) + "\n")


def props():
    return {"ActiveProfile": active[0], "PerformanceDegraded": "", "Version": "0.21",
            "Profiles": dbus.Array([dbus.Dictionary({"Profile": p, "Driver": "stand-in"}, signature="sv")
                                    for p in PROFILES], signature="a{sv}"),
            "Actions": dbus.Array([], signature="s"),
            "ActiveProfileHolds": dbus.Array([dbus.Dictionary({"Profile": p, "Reason": r, "ApplicationId": a},
                                                              signature="sv") for p, r, a in holds.values()],
                                             signature="a{sv}")}


def service(iface, path):
    class Service(dbus.service.Object):
        @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss", out_signature="v")
        def Get(self, _iface, name):
            return props()[name]

        @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="s", out_signature="a{sv}")
        def GetAll(self, _iface):
            return props()

        @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ssv")
        def Set(self, _iface, name, value):
            if LATE_SET and len(names) == 1:
                names.append(dbus.service.BusName("org.freedesktop.UPower.PowerProfiles", bus))
            if name == "ActiveProfile":
                active[0] = str(value)
            note("Set", iface, name, value)

        @dbus.service.method(iface, in_signature="sss", out_signature="u")
        def HoldProfile(self, profile, reason, app):
            if LATE and len(names) == 1:
                names.append(dbus.service.BusName("org.freedesktop.UPower.PowerProfiles", bus))
            next_cookie[0] += 1
            holds[next_cookie[0]] = (profile, reason, app)
            note("HoldProfile", iface, profile, app, next_cookie[0])
            return dbus.UInt32(next_cookie[0])

        @dbus.service.method(iface, in_signature="u")
        def ReleaseProfile(self, cookie):
            holds.pop(int(cookie), None)
            note("ReleaseProfile", iface, int(cookie))

    return Service(bus, path)


dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
objects = [service("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles"),
           service("org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles")]
names = [dbus.service.BusName(n, bus)
         for n in ("net.hadess.PowerProfiles", "org.freedesktop.UPower.PowerProfiles")[:1 if LATE or LATE_SET else 2]]
GLib.MainLoop().run()
