"""For the example bar's picture: whenever qsd makes itself BlueZ's default agent (the bluez5
mock's RequestDefaultAgent), the mock asks it, from bluetoothd's own connection, to confirm the
passkey 123456 for the phone, as bluetoothd does when a phone pairs. Prints "ready" once it
listens."""

import os
import sys

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

sys.path.insert(0, os.environ.get("QSD_INTEGRATION_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "..", "..", "..", "tests", "integration")))
from bluezmock import AGENT_PATH, BLUEZ, BLUEZ_MOCK, MOCK  # noqa: E402


def qsd_name(bus):
    """The unique name of the qsd process on the bus."""
    daemon = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
    for name in daemon.ListNames():
        if not name.startswith(":"):
            continue
        try:
            pid = int(daemon.GetConnectionUnixProcessID(name))
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "qsd":
                    return str(name)
        except (dbus.DBusException, OSError):
            pass
    return None


def main():
    device = sys.argv[1]
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])

    def called(name, args):
        if name != "RequestDefaultAgent":
            return
        qsd = qsd_name(bus)
        if qsd:
            mock = dbus.Interface(bus.get_object(BLUEZ, "/"), BLUEZ_MOCK)
            mock.CallAgent(qsd, dbus.ObjectPath(AGENT_PATH), "RequestConfirmation", "ou",
                           dbus.Array([dbus.ObjectPath(device), dbus.UInt32(123456)], signature="v"))

    bus.add_signal_receiver(called, signal_name="MethodCalled", dbus_interface=MOCK, path="/org/bluez", bus_name=BLUEZ)
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
