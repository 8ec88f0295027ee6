#!/usr/bin/python3
"""The notifications of the QML tests and the example bar's picture, sent by one client each time
a server takes org.freedesktop.Notifications (each qsd the tests start), as applications keep
sending: a closed calendar reminder (for the history), a chat message with an avatar as
image-data and an inline reply, a mail with two actions and a ten-minute timeout, and a critical
low-battery warning. Prints "ready" once it watches the name.

  bar_notifications.py DIR    DIR: where the icon files are written"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gi.repository import Gio, GLib  # noqa: E402

import icons  # noqa: E402

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = {}
    for shape in ("mail", "battery"):
        files[shape] = os.path.join(out, f"qsd-bar-{shape}.png")
        with open(files[shape], "wb") as f:
            f.write(icons.png(shape, 64))
    avatar = b"".join(bytes(p) for row in icons.rgba("avatar", 48) for p in row)
    conn = Gio.bus_get_sync(Gio.BusType.SESSION, None)

    def notify(app, summary, body, actions=(), hints=None, timeout=-1, icon=""):
        args = GLib.Variant("(susssasa{sv}i)", (app, 0, icon, summary, body, list(actions), hints or {}, timeout))
        return conn.call_sync(NAME, PATH, NAME, "Notify", args, GLib.VariantType("(u)"), Gio.DBusCallFlags.NONE,
                              10000, None).unpack()[0]

    def send(*_):
        try:
            reminder = notify("Calendar", "Stand-up", "In 5 minutes, room 2", timeout=0)
            conn.call_sync(NAME, PATH, NAME, "CloseNotification", GLib.Variant("(u)", (reminder,)), None,
                           Gio.DBusCallFlags.NONE, 10000, None)
            notify("Chat", "Ann", "Lunch at noon? The new place on the corner.",
                   ["default", "Open", "inline-reply", "Reply"],
                   {"image-data": GLib.Variant("(iiibiiay)", (48, 48, 48 * 4, True, 8, 4, avatar)),
                    "category": GLib.Variant("s", "im.received")}, timeout=0)
            notify("Mail", "Weekly report", "Ann: the figures for <b>week 48</b> are in.",
                   ["default", "Open", "archive", "Archive", "later", "Remind me"],
                   {"image-path": GLib.Variant("s", "file://" + files["mail"])}, timeout=600000)
            notify("Power", "Battery low", "5 % left: plug in the charger", [],
                   {"urgency": GLib.Variant("y", 2), "image-path": GLib.Variant("s", files["battery"])})
        except GLib.Error as e:
            print(f"sending failed: {e.message}", file=sys.stderr, flush=True)
        return False

    def owner_changed(conn, sender, path, iface, signal, params):
        name, old, new = params.unpack()
        if name == NAME and new:
            GLib.idle_add(send)

    conn.signal_subscribe("org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", "/org/freedesktop/DBus",
                          NAME, Gio.DBusSignalFlags.NONE, owner_changed)
    owner = conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                           GLib.Variant("(s)", (NAME,)), GLib.VariantType("(b)"), Gio.DBusCallFlags.NONE, 10000,
                           None).unpack()[0]
    if owner:
        GLib.idle_add(send)
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
