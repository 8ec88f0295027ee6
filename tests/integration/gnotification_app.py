#!/usr/bin/python3
"""A GLib application that notifies the way GTK and GLib applications do: Gio.Notification, sent
through GLib's own org.freedesktop.Notifications backend (the one GLib picks outside a sandbox
when no org.gtk.Notifications server runs). It reads commands on stdin and prints what it is
activated with, one line each:

  send <id> <title>   a notification with a default action, a button with a target and one without
  withdraw <id>       withdraw_notification(<id>)

  -> "ready", "sent <id>" (once GLib has the server's answer), "withdrawn <id>",
     "action <name> <target or ->"
"""

import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402


def main():
    app = Gio.Application(application_id="org.qsd.GNotificationTest", flags=Gio.ApplicationFlags.NON_UNIQUE)

    def on_action(action, target):
        print("action", action.get_name(), target.unpack() if target is not None else "-", flush=True)

    for name, target_type in (("open", None), ("reply", GLib.VariantType.new("s"))):
        a = Gio.SimpleAction.new(name, target_type)
        a.connect("activate", on_action)
        app.add_action(a)

    def on_line(channel, _condition):
        line = channel.readline()
        if not line:
            app.quit()
            return False
        cmd, *rest = line.strip().split(" ", 2)
        if cmd == "send":
            n = Gio.Notification.new(rest[1])
            n.set_body("Ann: lunch at 1?")
            n.set_icon(Gio.ThemedIcon.new("mail-unread"))
            n.set_default_action("app.open")
            n.add_button_with_target("Reply", "app.reply", GLib.Variant("s", "room-7"))
            n.add_button("Open", "app.open")
            app.send_notification(rest[0], n)
            # GLib learns the server's id from Notify's reply, and replaces or withdraws by that id;
            # before it, the same notification id sends a new notification. A Ping on the same
            # connection is answered after Notify, and its callback runs after Notify's.
            app.get_dbus_connection().call(
                "org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.DBus.Peer",
                "Ping", None, None, Gio.DBusCallFlags.NONE, 10000, None,
                lambda conn, res, nid=rest[0]: (conn.call_finish(res), print("sent", nid, flush=True)))
        elif cmd == "withdraw":
            app.withdraw_notification(rest[0])
            print("withdrawn", rest[0], flush=True)
        return True

    def on_activate(application):
        application.hold()
        GLib.io_add_watch(GLib.IOChannel.unix_new(sys.stdin.fileno()), GLib.IO_IN | GLib.IO_HUP, on_line)
        print("ready", flush=True)

    app.connect("activate", on_activate)
    return app.run([])


if __name__ == "__main__":
    sys.exit(main())
