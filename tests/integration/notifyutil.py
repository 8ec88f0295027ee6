"""Helpers of the notification tests: a Gio connection to the private session bus that calls the
org.freedesktop.Notifications server with exact D-Bus types (any hint, of any type, image-data
included) and records its signals, and notify-send (libnotify-bin) run against that bus."""

import os
import subprocess

from qsdtest import wait_until

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
IFACE = "org.freedesktop.Notifications"


def gi():
    from gi.repository import Gio, GLib  # noqa: only under /usr/bin/python3
    return Gio, GLib


class Bus:
    """One client connection: calls, and every signal of the notification interface it sees,
    in the order the bus delivered them."""

    def __init__(self, env):
        Gio, GLib = gi()
        self.Gio, self.GLib = Gio, GLib
        self.ctx = GLib.MainContext.new()
        self.ctx.push_thread_default()
        self.conn = Gio.DBusConnection.new_for_address_sync(
            env.env["DBUS_SESSION_BUS_ADDRESS"],
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
        self.signals = []
        self.conn.signal_subscribe(None, IFACE, None, PATH, None, Gio.DBusSignalFlags.NONE, self._signal)

    def close(self):
        self.conn.close_sync(None)
        self.ctx.pop_thread_default()

    def _signal(self, conn, sender, path, iface, member, params):
        self.signals.append((member, *params.unpack()))

    def pump(self):
        while self.ctx.iteration(False):
            pass

    def wait_signal(self, predicate, timeout=10, what="signal"):
        def found():
            self.pump()
            return predicate(self.signals)
        return wait_until(found, timeout, interval=0.005, what=what)

    def call(self, method, signature=None, args=(), reply=None, name=NAME, timeout_ms=10000):
        GLib = self.GLib
        params = GLib.Variant(f"({signature})", tuple(args)) if signature else None
        result = self.conn.call_sync(name, PATH, IFACE, method, params,
                                     GLib.VariantType(f"({reply})") if reply is not None else None,
                                     self.Gio.DBusCallFlags.NONE, timeout_ms, None)
        self.pump()
        return result.unpack() if result is not None else None

    def error_name(self, method, signature=None, args=()):
        """The D-Bus error name the call fails with (None when it succeeds)."""
        try:
            self.call(method, signature, args)
        except self.GLib.Error as e:
            return self.Gio.DBusError.get_remote_error(e)
        return None

    def notify(self, summary="summary", body="", app="qsd-test", replaces=0, icon="", actions=(), hints=None,
               timeout=-1, name=NAME):
        """Notify with hints given as {name: GLib.Variant} (or plain values typed by hint())."""
        h = {k: v if isinstance(v, self.GLib.Variant) else hint(k, v) for k, v in (hints or {}).items()}
        return self.call("Notify", "susssasa{sv}i", (app, replaces, icon, summary, body, list(actions), h, timeout), "u",
                         name=name)[0]

    def send_no_reply(self, summary, timeout=-1, app="flood"):
        """Notify without waiting, and without asking for a reply (NO_REPLY_EXPECTED)."""
        Gio, GLib = self.Gio, self.GLib
        msg = Gio.DBusMessage.new_method_call(NAME, PATH, IFACE, "Notify")
        msg.set_body(GLib.Variant("(susssasa{sv}i)", (app, 0, "", summary, "", [], {}, timeout)))
        msg.set_flags(Gio.DBusMessageFlags.NO_REPLY_EXPECTED)
        self.conn.send_message(msg, Gio.DBusSendMessageFlags.NONE)


def hint(name, value):
    """The specification's type for a hint given as a plain value."""
    from gi.repository import GLib
    types = {"urgency": "y", "category": "s", "desktop-entry": "s", "image-path": "s", "image_path": "s",
             "resident": "b", "transient": "b", "x": "i", "y": "i", "suppress-sound": "b", "sound-name": "s",
             "x-kde-reply-placeholder-text": "s", "action-icons": "b", "value": "i", "x-dunst-stack-tag": "s",
             "x-canonical-private-synchronous": "s"}
    if name in ("image-data", "image_data", "icon_data"):
        w, h, stride, alpha, bits, channels, data = value
        return GLib.Variant("(iiibiiay)", (w, h, stride, alpha, bits, channels, bytes(data)))
    return GLib.Variant(types[name], value)


def notify_send(env, *args, wait=True, timeout=20):
    """Runs notify-send on the private session bus; returns the CompletedProcess (or the Popen
    when wait is False)."""
    cmd = ["notify-send", *args]
    if not wait:
        return subprocess.Popen(cmd, env=env.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, env=env.env, capture_output=True, text=True, timeout=timeout, check=True)


def start(env, *args, **kw):
    """qsd with the notifications backend, and a client subscribed to /notifications once qsd
    owns the name (unless wait_active is False)."""
    wait_active = kw.pop("wait_active", True)
    env.start_qsd(*args, backends=kw.pop("backends", ["notifications"]), **kw)
    c = env.client()
    sub = c.subscribe(["/notifications"])
    if wait_active:
        c.wait_value(sub, "/notifications/server", "active", timeout=20)
    return c, sub


def items(c, sub):
    return c.mirror(sub)["notifications"]["items"]


def history(c, sub):
    return c.mirror(sub)["notifications"]["history"]


FLOOD_C = r"""
#include <systemd/sd-bus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* flood COUNT TIMEOUT_MS: COUNT Notify calls from one connection, sent without waiting and
   without asking for replies, then one that waits: its reply (an id, printed) means qsd
   handled every call before it. TIMEOUT_MS -2 alternates -1 and 1 (the last one: 1). The last
   call waits up to 500 s, inside the caller's 600: a deadline only for a qsd that hangs, since
   a loaded machine can take minutes over what takes qsd 7 s alone (seen over 60 s in a flaky
   hunt with four tests at once beside a build). */
static int notify(sd_bus *bus, int i, int timeout, int reply, uint32_t *id) {
	sd_bus_message *m = NULL, *r = NULL;
	char summary[64];
	snprintf(summary, sizeof summary, "flood %d", i);
	int e = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.Notifications", "/org/freedesktop/Notifications",
	                                       "org.freedesktop.Notifications", "Notify");
	if (e >= 0) e = sd_bus_message_append(m, "susssasa{sv}i", "flood", 0, "", summary, "", 0, 0,
	                                      timeout == -2 ? (i % 2 ? -1 : 1) : timeout);
	if (e >= 0 && !reply) e = sd_bus_message_set_expect_reply(m, 0);
	if (e >= 0) e = reply ? sd_bus_call(bus, m, 500 * 1000000ull, NULL, &r) : sd_bus_send(bus, m, NULL);
	if (e >= 0 && reply) e = sd_bus_message_read(r, "u", id);
	sd_bus_message_unref(m);
	sd_bus_message_unref(r);
	return e;
}

int main(int argc, char **argv) {
	if (argc != 3) return 2;
	int count = atoi(argv[1]), timeout = atoi(argv[2]);
	sd_bus *bus;
	if (sd_bus_open_user(&bus) < 0) { fprintf(stderr, "no bus\n"); return 1; }
	for (int i = 0; i < count; ++i) {
		if (notify(bus, i, timeout, 0, NULL) < 0) { fprintf(stderr, "send failed\n"); return 1; }
		if (i % 1000 == 999 && sd_bus_flush(bus) < 0) return 1;
	}
	uint32_t id = 0;
	int e = notify(bus, count, timeout == -2 ? 1 : timeout, 1, &id);
	if (e < 0) { fprintf(stderr, "last call failed: %s\n", strerror(-e)); return 1; }
	printf("%u\n", id);
	return 0;
}
"""


def flood(env, count, timeout=-2):
    """COUNT Notify calls from one sender (one connection) at full speed, then one more that
    waits for its reply (a small sd-bus program built here); returns that last one's id,
    answered once qsd handled all of them. timeout -2 alternates -1 and 1 ms."""
    exe = os.path.join(env.dir, "notify-flood")
    if not os.path.exists(exe):
        with open(exe + ".c", "w") as f:
            f.write(FLOOD_C)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], check=True, capture_output=True,
                               text=True).stdout.split()
        subprocess.run(["cc", "-O2", "-o", exe, exe + ".c", *flags], check=True)
    out = subprocess.run([exe, str(count), str(timeout)], env=env.env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def check_clean_exit(env):
    """Stops qsd, if it still runs, and checks that it exited with 0 and logged no sanitizer
    report (under the ASan/UBSan build a leak or an error is a failure of the test)."""
    if env.daemon is None or env.daemon.poll() is not None:
        return
    rc = env.stop_qsd()
    log = env.qsd_log()
    assert rc == 0 and "Sanitizer" not in log and "runtime error" not in log, log[-4000:]
