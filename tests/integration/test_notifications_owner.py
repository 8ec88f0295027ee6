"""Owning org.freedesktop.Notifications politely, and what outlives qsd: a server that has the
name first (python-dbusmock's notification_daemon template, another qsd) keeps it while qsd waits
in the queue, and qsd takes over the moment it leaves; history, Do-Not-Disturb, the settings and
the id counter survive a restart, a crash included."""

import ctypes
import json
import os
import signal
import struct
import time

import pytest

import notifyutil as n
import trayutil
from notifyutil import history, items, notify_send
from qsdtest import BUILD, RpcError, activating_session_bus, stop_activated_qsd, wait_until


@pytest.fixture(autouse=True)
def clean_exit(env):
    yield
    n.check_clean_exit(env)


def test_qsd_waits_behind_another_server_and_takes_over_when_it_leaves(env):
    # A history from an earlier run, served while qsd waits.
    c, sub = n.start(env)
    earlier = notify_send(env, "-p", "Earlier").stdout.strip()
    c.call("notifications.dismiss", {"id": int(earlier)})
    assert env.stop_qsd() == 0
    mock = env.start_mock("notification_daemon", system=False, name=n.NAME)
    c, sub = n.start(env, wait_active=False)
    c.wait_value(sub, "/notifications/server", "waiting", timeout=20)
    other = c.wait_value(sub, "/notifications/otherOwner", predicate=lambda v: v and v["pid"], timeout=20)
    assert other["pid"] == mock.pid
    assert other["processName"] == open(f"/proc/{mock.pid}/comm").read().strip()
    assert other["busName"].startswith(":")
    # Waiting is a normal state, and the domain is served.
    assert c.call("tree.get", {"path": "/daemon/backends/notifications/state"})["value"] == "running"
    assert c.mirror(sub)["notifications"]["available"] is True
    assert history(c, sub)[earlier]["summary"] == "Earlier"
    # Meanwhile notify-send reaches the other server.
    assert notify_send(env, "-p", "To the mock").stdout.strip() == "1"
    assert items(c, sub) == {}
    # The other server leaves: the bus hands the name to qsd, and notify-send reaches qsd.
    mock.terminate()
    mock.wait(10)
    c.wait_value(sub, "/notifications/server", "active", timeout=20)
    assert c.mirror(sub)["notifications"]["otherOwner"] is None
    nid = notify_send(env, "-p", "To qsd").stdout.strip()
    c.wait_for(lambda: nid in items(c, sub), what="qsd's notification")
    assert items(c, sub)[nid]["summary"] == "To qsd"
    assert int(nid) > int(earlier)


def test_a_notification_sent_before_qsd_runs_starts_it(env):
    """The installed service file makes the session bus start qsd for the first notification
    (before any bar connected to qsd's socket): notify-send gets qsd's id, and the notification
    is in the tree when a client connects."""
    built = open(os.path.join(BUILD, "systemd", "org.qsd.Notifications.service")).read()
    assert f"Name={n.NAME}" in built.splitlines()
    pidfile = activating_session_bus(env, "org.qsd.Notifications.service", ["notifications"])

    # No qsd runs: the bus starts it, and notify-send's call waits for it to own the name.
    nid = notify_send(env, "-p", "Before any bar").stdout.strip()
    pid = int(open(pidfile).read())
    try:
        c = env.client()
        sub = c.subscribe(["/notifications"])
        c.wait_value(sub, "/notifications/server", "active", timeout=20)
        c.wait_for(lambda: nid in items(c, sub), what="the first notification")
        assert items(c, sub)[nid]["summary"] == "Before any bar"
        # The one qsd serves the next ones; the bus starts nothing more.
        nid2 = notify_send(env, "-p", "After").stdout.strip()
        c.wait_for(lambda: nid2 in items(c, sub), what="the second notification")
        assert int(open(pidfile).read()) == pid
    finally:
        stop_activated_qsd(env, pidfile)


def test_a_second_qsd_waits_and_continues_the_ids_and_the_history(env):
    c, sub = n.start(env)
    first_daemon = env.daemon
    first_socket = env.socket
    a = int(notify_send(env, "-p", "one").stdout)
    c.call("notifications.dismiss", {"id": a})
    # A second qsd (its own socket) queues behind the first.
    env.start_qsd(backends=["notifications"], socket_path=os.path.join(env.run, "second.sock"))
    c2 = env.client()
    sub2 = c2.subscribe(["/notifications"])
    other = c2.wait_value(sub2, "/notifications/otherOwner", predicate=lambda v: v and v["processName"], timeout=20)
    assert other["processName"] == "qsd" and other["pid"] == first_daemon.pid
    assert c2.mirror(sub2)["notifications"]["server"] == "waiting"
    b = int(notify_send(env, "-p", "two").stdout)
    c.call("notifications.dismiss", {"id": b})
    c.call("notifications.setDnd", {"enabled": True})
    # The first stops: the second owns the name at once, hands out ids after the first's, and
    # goes on with the first's history and Do-Not-Disturb (what the first left in the file).
    first_daemon.send_signal(signal.SIGTERM)
    assert first_daemon.wait(10) == 0
    c2.wait_value(sub2, "/notifications/server", "active", timeout=20)
    d = int(notify_send(env, "-p", "three").stdout)
    assert d > b > a
    c2.wait_for(lambda: str(d) in items(c2, sub2), what="the second qsd's notification")
    got = c2.mirror(sub2)["notifications"]
    assert {got["history"][str(i)]["summary"] for i in (a, b)} == {"one", "two"}
    assert got["dnd"] is True and got["items"][str(d)]["popup"] is False
    # And keeps them: the file the second writes still has them.
    c2.call("notifications.dismiss", {"id": d})
    state = os.path.join(env.dir, "state", "qsd", "notifications.json")
    wait_until(lambda: d in [e["id"] for e in json.load(open(state))["history"]], what="the second's history written")
    assert [e["id"] for e in json.load(open(state))["history"]] == [a, b, d]
    c.close()
    c2.close()
    env.socket = first_socket


def test_a_second_qsd_leaves_the_first_ones_image_files_alone(env):
    c, sub = n.start(env)
    bus = n.Bus(env)
    first_socket = env.socket
    try:
        red = (1, 1, 3, False, 8, 3, b"\xff\x00\x00")
        shown = bus.notify("Shown", hints={"image-data": red}, timeout=0)
        closed = bus.notify("Closed", hints={"image-data": (1, 1, 3, False, 8, 3, b"\x00\xff\x00")}, timeout=0)
        c.call("notifications.dismiss", {"id": closed})
        c.wait_for(lambda: str(closed) in history(c, sub), what="history")
        image = items(c, sub)[str(shown)]["image"]
        copy = history(c, sub)[str(closed)]["image"]
        env.start_qsd(backends=["notifications"], socket_path=os.path.join(env.run, "second.sock"))
        c2 = env.client()
        sub2 = c2.subscribe(["/notifications"])
        c2.wait_value(sub2, "/notifications/server", "waiting", timeout=20)
        # The second has started (and read the state file): the first's files are still there.
        for url in (image, copy):
            assert os.path.exists(url[len("file://"):]), url
        c2.close()
    finally:
        bus.close()
        env.socket = first_socket


def queued_owners(bus):
    """The unique names queued for org.freedesktop.Notifications, the owner first."""
    GLib = bus.GLib
    return bus.conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListQueuedOwners",
                              GLib.Variant("(s)", (n.NAME,)), GLib.VariantType("(as)"), bus.Gio.DBusCallFlags.NONE, 5000,
                              None).unpack()[0]


def test_a_waiting_qsd_serves_no_notifications(env):
    """A qsd queued behind the server is no server: it has no Notifications object while it
    waits, so a caller that finds its unique name (ListQueuedOwners gives it) gets the bus's
    UnknownObject, and neither the server's image files nor its ids are touched. Once it has the
    name, the object is there for the first call."""
    c, sub = n.start(env)
    first_daemon = env.daemon
    first_socket = env.socket
    bus = n.Bus(env)
    try:
        shown = bus.notify("Shown", hints={"image-data": (1, 1, 3, False, 8, 3, b"\xff\x00\x00")}, timeout=0)
        c.wait_for(lambda: str(shown) in items(c, sub), what="the first qsd's notification")
        image = trayutil.file_of(items(c, sub)[str(shown)]["image"])
        env.start_qsd(backends=["notifications"], socket_path=os.path.join(env.run, "second.sock"))
        c2 = env.client()
        sub2 = c2.subscribe(["/notifications"])
        c2.wait_value(sub2, "/notifications/server", "waiting", timeout=20)
        # qsd says waiting once it learnt who owns the name; the bus queues it when its
        # RequestName arrives.
        second = wait_until(lambda: queued_owners(bus)[1:], what="the second qsd queued")[0]
        for method, signature, args in (("Notify", "susssasa{sv}i", ("hostile", 0, "", "To the queue", "", [], {}, 0)),
                                        ("CloseNotification", "u", (shown,)),
                                        ("GetCapabilities", None, ())):
            with pytest.raises(bus.GLib.Error) as e:
                bus.call(method, signature, args, name=second)
            assert bus.Gio.DBusError.get_remote_error(e.value) == "org.freedesktop.DBus.Error.UnknownObject", method
        assert os.path.exists(image)
        assert c2.mirror(sub2)["notifications"]["items"] == {}
        assert str(shown) in items(c, sub)
        # The server's ids go on as if nothing happened.
        assert bus.notify("Next") == shown + 1
        # The first leaves: the second has the object for the first notification the name brings.
        first_daemon.send_signal(signal.SIGTERM)
        assert first_daemon.wait(10) == 0
        nid = int(notify_send(env, "-p", "To the second").stdout)
        assert nid > shown + 1
        c2.wait_for(lambda: str(nid) in c2.mirror(sub2)["notifications"]["items"], what="the second's notification")
        assert queued_owners(bus) == [second]
        c.close()
        c2.close()
    finally:
        bus.close()
        env.socket = first_socket


def test_a_waiting_qsd_refuses_to_change_the_servers_state(env):
    """The notifications.* methods of a qsd queued behind the server would act on a stale copy
    of the server's state (its history's image files, its state file): they are refused with
    -32000 naming the server, and the waiting qsd writes nothing, also when it stops."""
    c, sub = n.start(env)
    first_daemon = env.daemon
    first_socket = env.socket
    bus = n.Bus(env)
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    try:
        closed = bus.notify("Closed", hints={"image-data": (1, 1, 3, False, 8, 3, b"\x00\xff\x00")}, timeout=0)
        c.call("notifications.dismiss", {"id": closed})
        c.wait_for(lambda: str(closed) in history(c, sub), what="history")
        copy = trayutil.file_of(history(c, sub)[str(closed)]["image"])
        wait_until(lambda: [e["id"] for e in json.load(open(path))["history"]] == [closed], what="history written")
        written = open(path, "rb").read()
        env.start_qsd(backends=["notifications"], socket_path=os.path.join(env.run, "second.sock"))
        c2 = env.client()
        sub2 = c2.subscribe(["/notifications"])
        c2.wait_value(sub2, "/notifications/otherOwner", predicate=lambda v: v and v["processName"], timeout=20)
        assert c2.mirror(sub2)["notifications"]["server"] == "waiting"
        assert str(closed) in c2.mirror(sub2)["notifications"]["history"]
        for method, params in (("notifications.clearHistory", {}), ("notifications.removeFromHistory", {"id": closed}),
                               ("notifications.configure", {"historyLimit": 0}),
                               ("notifications.setDnd", {"enabled": True}), ("notifications.dismissAll", {})):
            with pytest.raises(RpcError) as e:
                c2.call(method, params)
            assert e.value.code == -32000, method
            assert e.value.data["backend"] == "notifications" and e.value.data["path"] == "/notifications"
            assert e.value.data["otherOwner"]["pid"] == first_daemon.pid, method
            assert "not the notification server" in e.value.data["reason"] and "(qsd)" in e.value.data["reason"]
        got = c2.mirror(sub2)["notifications"]
        assert str(closed) in got["history"] and got["dnd"] is False and got["historyLimit"] == 200
        assert os.path.exists(copy)
        # The waiting qsd stops: it leaves the server's state file as the server wrote it.
        assert env.stop_qsd() == 0
        assert open(path, "rb").read() == written
        assert os.path.exists(copy)
        assert history(c, sub)[str(closed)]["image"] == "file://" + copy
        assert c.call("notifications.setDnd", {"enabled": True}) == {"enabled": True}
        c.close()
        c2.close()
    finally:
        bus.close()
        env.daemon = first_daemon
        env.socket = first_socket


def test_the_state_file_keeps_the_newest_history_within_4_mib(env):
    """A sender can make each history entry tens of KiB in the file (texts of characters JSON
    escapes, at their bounds; action keys of control characters, kept as sent), and the file is
    rewritten whole up to once a second. It is kept within 4 MiB: the oldest entries are left
    out of it, and bodyText, computed again when the file is read, is not written. The newest
    history survives a restart as it was."""
    c, sub = n.start(env)
    bus = n.Bus(env)
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    quote = '"'
    actions = []
    for k in range(16):
        actions += [f"{k:02d}" + "\x01" * 254, quote * 256]
    try:
        ids = []
        for i in range(200):
            hints = {"category": quote * 256, "desktop-entry": quote * 256, "x-kde-reply-placeholder-text": quote * 256,
                     "x-dunst-stack-tag": f"{i}" + quote * 250}
            ids.append(bus.notify(quote * 1024, quote * 16384, app=quote * 256, actions=actions, hints=hints, timeout=0))
        # One connection has at most 100 shown: the older ones went to history as they came.
        c.call("notifications.dismissAll", timeout=60)
        # A subscriber that read nothing during those 14 MB of changes was left behind (see
        # test_slow_client.py); a new one reads the tree as it is.
        c.close()
        c = env.client()
        sub = c.subscribe(["/notifications"])
        before = history(c, sub)
        assert sorted(int(i) for i in before) == ids
        wait_until(lambda: [e["id"] for e in json.load(open(path))["history"][-1:]] == ids[-1:], what="the newest written")
        assert os.path.getsize(path) <= 4 << 20
        assert "left out of the file" in env.qsd_log()
        assert env.stop_qsd() == 0
    finally:
        bus.close()
    assert os.path.getsize(path) <= 4 << 20
    c, sub = n.start(env)
    after = history(c, sub)
    kept = sorted(int(i) for i in after)
    # The newest, each as it was (bodyText included); at least a quarter of them fit.
    assert kept == ids[-len(kept):] and len(kept) >= 50
    assert {k: after[k] for k in after} == {k: before[k] for k in after}
    assert int(notify_send(env, "-p", "after restart").stdout) == ids[-1] + 1


def test_a_state_file_qsd_cannot_read_is_set_aside(env):
    """A state file over the 64 MiB qsd reads (an older qsd wrote one with no bound) is kept as
    notifications.json.bad, and logged, rather than overwritten."""
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write('{"version": 1, "lastId": 41, "reservedId": 41, "clean": true, "history": []' + " " * (65 << 20) + "}")
    size = os.path.getsize(path)
    c, sub = n.start(env)
    assert os.path.getsize(path + ".bad") == size
    wait_until(lambda: json.load(open(path))["lastId"] >= 0, what="a new state file")
    assert os.path.getsize(path) < 4096
    log = env.qsd_log()
    assert "not a state qsd can read (it is larger than 64 MiB)" in log and "notifications.json.bad" in log


def test_a_restart_keeps_history_dnd_settings_and_the_id_counter(env):
    c, sub = n.start(env)
    bus = n.Bus(env)
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    try:
        ids = [bus.notify(f"n{i}", timeout=0) for i in range(3)]
        shown = bus.notify("still shown", timeout=0)
        c.call("notifications.dismiss", {"id": ids[0]})
        c.call("notifications.dismiss", {"id": ids[1]})
        bus.call("CloseNotification", "u", (ids[2],))
        c.call("notifications.setDnd", {"enabled": True})
        c.call("notifications.configure", {"defaultTimeoutMs": 7000, "historyLimit": 50})
        c.wait_for(lambda: len(history(c, sub)) == 3, what="three in history")
        before = history(c, sub)
        # The file written while qsd runs holds the one shown too (for a crash, below).
        wait_until(lambda: [e["id"] for e in json.load(open(path)).get("shown", [])] == [shown]
                   and len(json.load(open(path))["history"]) == 3, what="the one shown written")
        # A clean stop: what is shown goes to history too, and its sender is told (reason 4).
        assert env.stop_qsd() == 0
        bus.wait_signal(lambda s: ("NotificationClosed", shown, 4) in s, what="NotificationClosed(shown, 4)")
    finally:
        bus.close()
    state = json.load(open(path))
    assert state["clean"] is True and state["lastId"] == shown
    # Each notification once: the one shown is in history, and no longer among those shown
    # (the next start would put it in history a second time).
    assert [e["id"] for e in state["history"]] == [*ids, shown] and state["shown"] == []
    c, sub = n.start(env)
    got = c.mirror(sub)["notifications"]
    assert got["dnd"] is True and got["defaultTimeoutMs"] == 7000 and got["historyLimit"] == 50
    assert {k: got["history"][k] for k in before} == before
    assert sorted(int(k) for k in got["history"]) == [*ids, shown]
    assert got["history"][str(shown)]["closeReason"] == "undefined"
    assert got["items"] == {}
    # The counter continues where it was: no id is given twice.
    assert int(notify_send(env, "-p", "after restart").stdout) == shown + 1


class FileWrites:
    """Counts the atomic writes (renames onto it) of one file, through inotify. Renames from the
    temporary file are watched too: inotify merges an event with the one queued before it when
    they are alike, and every rename onto the file looks alike."""

    IN_MOVED_FROM = 0x40
    IN_MOVED_TO = 0x80

    def __init__(self, path):
        self.name = os.path.basename(path).encode()
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0
        assert self.libc.inotify_add_watch(self.fd, os.path.dirname(path).encode(),
                                                self.IN_MOVED_FROM | self.IN_MOVED_TO) >= 0
        self.count = 0

    def read(self):
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return self.count
        pos = 0
        while pos < len(data):
            _, mask, _, length = struct.unpack_from("iIII", data, pos)
            name = data[pos + 16:pos + 16 + length].rstrip(b"\0")
            pos += 16 + length
            if mask & self.IN_MOVED_TO and name == self.name:
                self.count += 1
        return self.count

    def close(self):
        os.close(self.fd)


def test_the_state_file_is_written_at_most_once_a_second(env):
    c, sub = n.start(env)
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    writes = FileWrites(path)
    bus = n.Bus(env)
    try:
        start = time.monotonic()
        ids = [bus.notify(f"n{i}", timeout=0) for i in range(40)]
        for i in ids:
            c.call("notifications.dismiss", {"id": i})
        # Every change reaches the file, in as few writes as the seconds it took allow.
        wait_until(lambda: writes.read() and len(json.load(open(path))["history"]) == 40, what="the history written")
        elapsed = time.monotonic() - start
        assert writes.read() <= int(elapsed) + 2, (writes.count, elapsed)
    finally:
        bus.close()
        writes.close()


def test_ids_are_not_reused_after_a_crash(env):
    c, sub = n.start(env)
    first = int(notify_send(env, "-p", "before the crash").stdout)
    last = int(notify_send(env, "-p", "just before").stdout)
    assert last == first + 1
    env.stop_qsd(sig=signal.SIGKILL)
    state = json.load(open(os.path.join(env.dir, "state", "qsd", "notifications.json")))
    assert state["clean"] is False and state["reservedId"] >= last
    c, sub = n.start(env)
    after = int(notify_send(env, "-p", "after the crash").stdout)
    assert after > state["reservedId"] >= last
    # The file is rewritten at once with a new reservation, never behind the ids handed out.
    state = json.load(open(os.path.join(env.dir, "state", "qsd", "notifications.json")))
    assert state["reservedId"] >= after


def test_what_is_shown_when_qsd_dies_goes_to_history_after_the_restart(env):
    """A qsd that dies uncleanly (SIGKILL, a segfault, the watchdog's SIGABRT) closes nothing.
    The state file holds the notifications shown as well as history, and the next qsd puts
    them in history as a clean stop would have: the same fields, closeReason undefined, history's
    own copy of a stored image. Nothing is shown again or kept twice, a transient notification
    is not kept (as at a stop), and the ids go on past them."""
    c, sub = n.start(env)
    bus = n.Bus(env)
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    try:
        alice = bus.notify("Message from Alice", "<b>Lunch</b> at 12?", app="chat", timeout=0,
                           actions=["default", "Open", "inline-reply", "Reply"],
                           hints={"category": "im.received", "desktop-entry": "chat", "value": 40})
        bob = bus.notify("Missed call from Bob", app="phone", timeout=60000,
                         hints={"urgency": 1, "image-data": (2, 1, 6, False, 8, 3, bytes([200, 0, 0, 0, 0, 200]))})
        copied = bus.notify("Copied", app="clipboard", hints={"transient": True}, timeout=0)
        carol = bus.notify("Carol is online", app="chat", timeout=0)
        c.call("notifications.dismiss", {"id": carol})
        c.wait_for(lambda: set(items(c, sub)) == {str(alice), str(bob), str(copied)}, what="three shown")
        shown = items(c, sub)
        image = trayutil.file_of(shown[str(bob)]["image"])
        with open(image, "rb") as f:
            png = f.read()
        # The dismissal came after every Notify: once the file has it, the same write or a
        # later one has what was shown then.
        wait_until(lambda: carol in [e["id"] for e in json.load(open(path))["history"]], what="the state written")
        state = json.load(open(path))
        assert env.stop_qsd(sig=signal.SIGKILL) == -signal.SIGKILL
    finally:
        bus.close()
    c, sub = n.start(env)
    # Taking the name and reading the file are one step: once qsd is active, they are there.
    got = c.mirror(sub)["notifications"]
    assert got["items"] == {}
    assert sorted(int(k) for k in got["history"]) == [alice, bob, carol]
    assert got["history"][str(carol)]["closeReason"] == "dismissed"
    for nid in (alice, bob):
        entry = dict(got["history"][str(nid)])
        expected = dict(shown[str(nid)])
        assert entry.pop("closeReason") == "undefined"
        assert entry.pop("closedAt") > expected["createdAt"]
        if nid == bob:
            # History's own copy, as a stop makes it: the new qsd empties the store's directory.
            copy = trayutil.file_of(entry.pop("image"))
            assert os.path.dirname(copy) == os.path.join(os.path.dirname(image), "history")
            with open(copy, "rb") as f:
                assert f.read() == png
            del expected["image"]
        assert entry == expected
    assert [e["id"] for e in state["shown"]] == [alice, bob] and state["clean"] is False
    # An id never given before, past the reservation of the qsd that died.
    after = int(notify_send(env, "-p", "after the crash").stdout)
    assert after > state["reservedId"] >= max(alice, bob, copied, carol)
    c.wait_for(lambda: str(after) in items(c, sub), what="the new one shown")
    before = history(c, sub)
    # A clean stop now: each notification once in the file, and the same history after it.
    assert env.stop_qsd() == 0
    state = json.load(open(path))
    assert [e["id"] for e in state["history"]] == [carol, alice, bob, after] and state["shown"] == []
    c, sub = n.start(env)
    got = history(c, sub)
    assert sorted(int(k) for k in got) == [alice, bob, carol, after]
    assert {k: got[k] for k in before} == before


def test_a_waiting_qsd_keeps_what_the_server_showed_when_it_died(env):
    """A second qsd waits behind the first: it shows the first's history, not what the first
    shows (those are the first's to close). When the first dies uncleanly, the second takes
    the name and puts what the first showed in history."""
    c, sub = n.start(env)
    first_daemon = env.daemon
    first_socket = env.socket
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    b = int(notify_send(env, "-p", "-t", "0", "two").stdout)
    a = int(notify_send(env, "-p", "one").stdout)
    c.call("notifications.dismiss", {"id": a})
    # The dismissal came last: the write that has it has what is shown too.
    wait_until(lambda: [e["id"] for e in json.load(open(path))["history"]] == [a], what="the state written")
    env.start_qsd(backends=["notifications"], socket_path=os.path.join(env.run, "second.sock"))
    c2 = env.client()
    sub2 = c2.subscribe(["/notifications"])
    c2.wait_value(sub2, "/notifications/server", "waiting", timeout=20)
    got = c2.mirror(sub2)["notifications"]
    assert list(got["history"]) == [str(a)] and got["items"] == {}
    state = json.load(open(path))
    first_daemon.send_signal(signal.SIGKILL)
    first_daemon.wait(10)
    first_daemon.qsd_stopped = True   # killed on purpose
    c2.wait_value(sub2, "/notifications/server", "active", timeout=20)
    got = c2.mirror(sub2)["notifications"]
    assert sorted(int(k) for k in got["history"]) == [b, a] and got["items"] == {}
    assert got["history"][str(b)]["summary"] == "two" and got["history"][str(b)]["closeReason"] == "undefined"
    assert int(notify_send(env, "-p", "three").stdout) > state["reservedId"] >= a
    c.close()
    c2.close()
    env.socket = first_socket


def test_history_written_before_a_field_existed_gets_its_default(env):
    """An entry from an older qsd's state file lacks the fields added since (actionIcons,
    replyPlaceholder): it is shown with the values it would have had, as the schema says."""
    c, sub = n.start(env)
    nid = int(notify_send(env, "-p", "old").stdout)
    c.call("notifications.dismiss", {"id": nid})
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    wait_until(lambda: [e["id"] for e in json.load(open(path))["history"]] == [nid], what="history written")
    assert env.stop_qsd() == 0
    state = json.load(open(path))
    for entry in state["history"]:
        del entry["actionIcons"], entry["replyPlaceholder"]
    with open(path, "w") as f:
        json.dump(state, f)
    c, sub = n.start(env)
    entry = history(c, sub)[str(nid)]
    assert entry["summary"] == "old" and entry["actionIcons"] is False and entry["replyPlaceholder"] is None
    from test_notifications import schema_validator
    errors = [e.message for e in schema_validator(c, "NotificationHistoryEntry").iter_errors(entry)]
    assert not errors, errors


def test_a_state_file_that_is_not_json_is_set_aside(env):
    path = os.path.join(env.dir, "state", "qsd", "notifications.json")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("{not json")
    c, sub = n.start(env)
    assert int(notify_send(env, "-p", "fresh").stdout) == 1
    assert open(path + ".bad").read() == "{not json"
    wait_until(lambda: json.load(open(path))["lastId"] >= 0, what="a new state file")
    assert "not a state qsd can read" in env.qsd_log()
