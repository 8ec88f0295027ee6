#!/usr/bin/python3
"""A small StatusNotifierWatcher (as a bar would run one), for the tests in which qsd finds the
name taken: it owns org.kde.StatusNotifierWatcher, lists the items registered with it (as
"service/path"), unregisters an item when its bus name goes, and records the hosts that
registered (org.qsdtest.Control.Hosts() -> JSON). Prints "ready" once it owns the name.
With --slow, the first Get and the first RegisterStatusNotifierHost are answered after 6 s (a
watcher busy while the session starts), without blocking the rest."""

import json
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

NAME = "org.kde.StatusNotifierWatcher"
PATH = "/StatusNotifierWatcher"
PROPS = "org.freedesktop.DBus.Properties"


SLOW_MS = 6000


class Watcher(dbus.service.Object):
    def __init__(self, bus, slow=False):
        super().__init__(bus, PATH)
        self.bus = bus
        self.slow = {"Get", "RegisterStatusNotifierHost"} if slow else set()
        self.items = []
        self.hosts = []
        bus.add_signal_receiver(self.owner_changed, "NameOwnerChanged", "org.freedesktop.DBus", "org.freedesktop.DBus",
                                "/org/freedesktop/DBus")

    def owner_changed(self, name, old, new):
        if new:
            return
        for entry in [e for e in self.items if e.split("/", 1)[0] == name]:
            self.items.remove(entry)
            self.StatusNotifierItemUnregistered(entry)
            self.PropertiesChanged(NAME, {"RegisteredStatusNotifierItems": dbus.Array(self.items, signature="s")}, [])

    @dbus.service.method(NAME, in_signature="s", out_signature="", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        entry = sender + service if service.startswith("/") else service + "/StatusNotifierItem"
        if entry in self.items:
            return
        self.items.append(entry)
        self.StatusNotifierItemRegistered(entry)
        self.PropertiesChanged(NAME, {"RegisteredStatusNotifierItems": dbus.Array(self.items, signature="s")}, [])

    def answer(self, method, ok, work):
        """Runs work() and answers with its result now, or after SLOW_MS for a slow first call."""
        if method not in self.slow:
            return ok(*work())
        self.slow.discard(method)

        def later():
            ok(*work())
            return False  # once
        GLib.timeout_add(SLOW_MS, later)

    @dbus.service.method(NAME, in_signature="s", out_signature="", sender_keyword="sender",
                         async_callbacks=("ok", "err"))
    def RegisterStatusNotifierHost(self, service, sender=None, ok=None, err=None):
        def work():
            self.hosts.append(str(service))
            self.StatusNotifierHostRegistered()
            return ()
        self.answer("RegisterStatusNotifierHost", ok, work)

    @dbus.service.method("org.qsdtest.Control", in_signature="", out_signature="s")
    def Hosts(self):
        return json.dumps(self.hosts)

    @dbus.service.signal(NAME, signature="s")
    def StatusNotifierItemRegistered(self, service):
        pass

    @dbus.service.signal(NAME, signature="s")
    def StatusNotifierItemUnregistered(self, service):
        pass

    @dbus.service.signal(NAME, signature="")
    def StatusNotifierHostRegistered(self):
        pass

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, iface, changed, invalidated):
        pass

    def props(self):
        return {"RegisteredStatusNotifierItems": dbus.Array(self.items, signature="s"),
                "IsStatusNotifierHostRegistered": dbus.Boolean(bool(self.hosts)), "ProtocolVersion": dbus.Int32(0)}

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v", async_callbacks=("ok", "err"))
    def Get(self, iface, prop, ok=None, err=None):
        self.answer("Get", ok, lambda: (self.props()[prop],))

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, iface):
        return dbus.Dictionary(self.props(), signature="sv")


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    watcher = Watcher(bus, slow="--slow" in sys.argv[1:])
    name = dbus.service.BusName(NAME, bus, do_not_queue=True)
    print("ready", flush=True)
    GLib.MainLoop().run()
    del watcher, name  # both kept for the process' life


if __name__ == "__main__":
    main()
