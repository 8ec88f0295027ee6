"""The tray backend as the session's StatusNotifierWatcher and as a host of another watcher, on
a private session bus with real items (tray_item.py) and a small watcher (tray_watcher.py).
Assertions go through qsd's socket, and through the bus where the watcher API is the subject."""

import json
import os

import pytest

import trayutil as t
from qsdtest import BUILD, RpcError, activating_session_bus, stop_activated_qsd, wait_until

ITEMS = "/tray/items"


def items(c, sub):
    return c.mirror(sub)["tray"]["items"]


def item_cfg(name=None, register="name", path="/StatusNotifierItem", **props):
    cfg = {"register": register, "path": path, "props": {"Id": props.pop("Id", name or path), "Status": "Active", **props}}
    if name:
        cfg["name"] = name
    return cfg


def test_qsd_is_the_watcher_with_the_full_api(env):
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    c.wait_value(sub, "/tray/available", True, timeout=30)
    c.wait_value(sub, "/daemon/backends/tray/state", "running", timeout=30)
    assert c.mirror(sub)["tray"]["isWatcher"] is True
    import dbus
    bus = t.session(env)
    assert t.owner(env, t.WATCHER) == t.owner(env, t.WATCHER)  # owned
    obj = bus.get_object(t.WATCHER, "/StatusNotifierWatcher")
    props = obj.GetAll(t.WATCHER, dbus_interface="org.freedesktop.DBus.Properties")
    assert list(props["RegisteredStatusNotifierItems"]) == []
    assert bool(props["IsStatusNotifierHostRegistered"]) is True
    assert int(props["ProtocolVersion"]) == 0
    # qsd is a host too, under the conventional name.
    names = [str(n) for n in bus.list_names()]
    assert any(n.startswith("org.kde.StatusNotifierHost-") for n in names)
    # Introspection lists the four signals.
    xml = str(obj.Introspect(dbus_interface="org.freedesktop.DBus.Introspectable"))
    for s in ("StatusNotifierItemRegistered", "StatusNotifierItemUnregistered", "StatusNotifierHostRegistered",
              "StatusNotifierHostUnregistered", "RegisterStatusNotifierHost"):
        assert s in xml, s
    # Another host registers: accepted.
    obj.RegisterStatusNotifierHost("org.kde.StatusNotifierHost-4242", dbus_interface=t.WATCHER)
    # An invalid registration is refused with InvalidArgs; a name nobody owns with NameHasNoOwner.
    with pytest.raises(dbus.exceptions.DBusException) as e:
        obj.RegisterStatusNotifierItem("not a name", dbus_interface=t.WATCHER)
    assert e.value.get_dbus_name() == "org.freedesktop.DBus.Error.InvalidArgs"
    with pytest.raises(dbus.exceptions.DBusException) as e:
        obj.RegisterStatusNotifierItem("org.qsdtest.Nobody", dbus_interface=t.WATCHER)
    assert e.value.get_dbus_name() == "org.freedesktop.DBus.Error.NameHasNoOwner"


def test_registration_by_name_unique_name_and_path(env):
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    c.wait_value(sub, "/tray/available", True, timeout=30)
    # Three processes (one object per path each), as three apps would be.
    p = t.start_items(env, [item_cfg("org.qsdtest.ByName", "name", Title="by name")])
    # The unique-name and path items own a name too, only to be found by the test.
    t.start_items(env, [dict(item_cfg("org.qsdtest.Unique", "unique", Id="by-unique", Title="by unique name"))])
    t.start_items(env, [item_cfg("org.qsdtest.Path", "path", "/org/ayatana/NotificationItem/by_path", Id="by-path",
                                 Title="by path")])
    unique = t.owner(env, "org.qsdtest.Unique")
    path_owner = t.owner(env, "org.qsdtest.Path")
    keys = {"org.qsdtest.ByName/StatusNotifierItem", unique + "/StatusNotifierItem",
            path_owner + "/org/ayatana/NotificationItem/by_path"}
    c.wait_for(lambda: set(items(c, sub)) == keys, timeout=30, what="three items")
    # The keys are the watcher's own spelling, in registration order on the bus.
    assert sorted(t.registered(env)) == sorted(keys)
    got = items(c, sub)
    assert got["org.qsdtest.ByName/StatusNotifierItem"]["title"] == "by name"
    assert got["org.qsdtest.ByName/StatusNotifierItem"]["service"] == "org.qsdtest.ByName"
    assert got[unique + "/StatusNotifierItem"]["title"] == "by unique name"
    assert got[path_owner + "/org/ayatana/NotificationItem/by_path"]["objectPath"] == "/org/ayatana/NotificationItem/by_path"
    # Registering again is harmless: still three.
    t.session(env).get_object(t.WATCHER, "/StatusNotifierWatcher").RegisterStatusNotifierItem(
        "org.qsdtest.ByName", dbus_interface=t.WATCHER)
    assert len(t.registered(env)) == 3
    # An item goes when its bus name goes: from the tree and from the watcher's list.
    p.terminate()
    p.wait(10)
    c.wait_for(lambda: set(items(c, sub)) == keys - {"org.qsdtest.ByName/StatusNotifierItem"}, timeout=30, what="item removed")
    wait_until(lambda: "org.qsdtest.ByName/StatusNotifierItem" not in t.registered(env), 30, what="watcher list updated")
    assert c.mirror(sub)["tray"]["available"] is True


def test_items_started_before_qsd_register_when_it_appears(env):
    # The items start with no watcher at all (their registration fails); like real apps they
    # register when a watcher appears.
    p = t.start_items(env, [dict(item_cfg("org.qsdtest.Early", "name"), reregister=True)])
    assert t.calls(env, "org.qsdtest.Early")[0][0] == "registerFailed"
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    c.wait_for(lambda: "org.qsdtest.Early/StatusNotifierItem" in items(c, sub), timeout=30, what="early item")
    assert p.poll() is None


def test_an_item_registered_once_before_qsd_runs_starts_it(env):
    # qsd.socket is enabled and qsd.service is not (the preset): at login, before any bar has
    # connected, no qsd runs. An application that registers its item once then (trayscale, the
    # ProtonVPN app) got ServiceUnknown, and its icon was missing for the whole session. The
    # installed service file makes the bus start qsd for it.
    built = open(os.path.join(BUILD, "systemd", "org.qsd.StatusNotifierWatcher.service")).read()
    assert f"Name={t.WATCHER}" in built.splitlines()
    pidfile = activating_session_bus(env, "org.qsd.StatusNotifierWatcher.service", ["tray"])
    t.start_items(env, [item_cfg("org.qsdtest.OneShot", "name", Title="registers once")])
    try:
        wait_until(lambda: any(call[0].startswith("register") for call in t.calls(env, "org.qsdtest.OneShot")), 30,
                   what="the item's registration answered")
        assert [call for call in t.calls(env, "org.qsdtest.OneShot") if call[0].startswith("register")] == [["registered"]]
        c, sub = env.watch("/tray")
        c.wait_for(lambda: "org.qsdtest.OneShot/StatusNotifierItem" in items(c, sub), timeout=30, what="the item")
        assert items(c, sub)["org.qsdtest.OneShot/StatusNotifierItem"]["title"] == "registers once"
    finally:
        stop_activated_qsd(env, pidfile)


def test_host_of_another_watcher_then_takeover_without_blinking(env):
    w = t.start_watcher(env)
    watcher_owner = t.owner(env, t.WATCHER)
    # Two items that never register again on their own (like trayscale), registered with the
    # other watcher before qsd starts.
    t.start_items(env, [item_cfg("org.qsdtest.Stubborn1", "name", Title="one"),
                        item_cfg(None, "path", "/org/ayatana/NotificationItem/two", Id="two", Title="two")])
    two_key = t.owner(env, "org.qsdtest.Stubborn1") + "/org/ayatana/NotificationItem/two"
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    c.wait_value(sub, "/tray/available", True, timeout=30)
    assert c.mirror(sub)["tray"]["isWatcher"] is False
    c.wait_for(lambda: set(items(c, sub)) == {"org.qsdtest.Stubborn1/StatusNotifierItem", two_key}, timeout=30, what="hosted items")
    assert t.owner(env, t.WATCHER) == watcher_owner
    # qsd registered as a host of the other watcher.
    hosts = json.loads(str(t.control(env, t.WATCHER, "/StatusNotifierWatcher").Hosts()))
    assert any(h.startswith("org.kde.StatusNotifierHost-") for h in hosts)
    # The list is kept current while qsd hosts: an item registering now appears.
    late = t.start_items(env, [item_cfg("org.qsdtest.Late", "name", Title="late")])
    c.wait_for(lambda: "org.qsdtest.Late/StatusNotifierItem" in items(c, sub), timeout=30, what="late item")
    late.terminate()
    late.wait(10)
    c.wait_for(lambda: "org.qsdtest.Late/StatusNotifierItem" not in items(c, sub), timeout=30, what="late item gone")

    # The other watcher exits: qsd owns the name in the same step and keeps every item.
    mark = len(c.notifications)
    w.terminate()
    w.wait(10)
    c.wait_value(sub, "/tray/isWatcher", True, timeout=30)
    wait_until(lambda: sorted(t.registered(env)) == sorted(["org.qsdtest.Stubborn1/StatusNotifierItem", two_key]), 30,
               what="qsd lists the adopted items")
    assert set(items(c, sub)) == {"org.qsdtest.Stubborn1/StatusNotifierItem", two_key}
    # A round trip through qsd to the items' process (both items share its connection): what the
    # takeover made qsd ask them is answered by now, and its effects are in the mirror.
    c.call("tray.activate", {"item": "org.qsdtest.Stubborn1/StatusNotifierItem", "x": 1, "y": 2})
    removes = [ch for n in c.notifications[mark:] if n["method"] == "tree.changed" for ch in n["params"]["changes"]
               if ch["op"] == "remove" and ch["path"].startswith(ITEMS)]
    assert removes == [], removes
    assert c.mirror(sub)["tray"]["available"] is True
    # Items that lost their registration are told a host is there (to register again).
    wait_until(lambda: ["StatusNotifierHostRegistered"] in t.calls(env, "org.qsdtest.Stubborn1"),
               what="StatusNotifierHostRegistered seen by the item")
    # The adopted items still work: actions reach them (the activation above).
    assert ["Activate", 1, 2] in t.calls(env, "org.qsdtest.Stubborn1")


def test_items_that_never_register_again_survive_a_restart_of_qsd(env):
    """qsd keeps its watcher list in $XDG_RUNTIME_DIR/qsd/tray-items.json: after a restart (an
    upgrade, a crash) it takes back the items whose connection still owns their name, which
    matters for items that register once and never again (trayscale, Proton VPN)."""
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray")
    c.wait_value(sub, "/tray/isWatcher", True, timeout=30)
    t.start_items(env, [item_cfg("org.qsdtest.Stubborn1", "name", Title="one"),
                        item_cfg(None, "path", "/org/ayatana/NotificationItem/two", Id="two", Title="two")])
    keys = {"org.qsdtest.Stubborn1/StatusNotifierItem",
            t.owner(env, "org.qsdtest.Stubborn1") + "/org/ayatana/NotificationItem/two"}
    c.wait_for(lambda: set(items(c, sub)) == keys, timeout=30, what="the two items")
    # An item whose process left while qsd ran: its name has no owner when qsd comes back.
    gone = t.start_items(env, [item_cfg("org.qsdtest.Gone", "name")], log="gone")
    c.wait_for(lambda: "org.qsdtest.Gone/StatusNotifierItem" in items(c, sub), timeout=30, what="the item that leaves")
    gone.terminate()
    gone.wait(10)
    c.wait_for(lambda: set(items(c, sub)) == keys, timeout=30, what="the item that left removed")

    assert env.stop_qsd() == 0
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray")
    c.wait_value(sub, "/tray/isWatcher", True, timeout=30)
    c.wait_for(lambda: set(items(c, sub)) == keys, timeout=30, what="the items taken back")
    assert items(c, sub)["org.qsdtest.Stubborn1/StatusNotifierItem"]["title"] == "one"
    wait_until(lambda: sorted(t.registered(env)) == sorted(keys), 30, what="the watcher lists them")
    # They did not register again (they never do): qsd took them back, and they work.
    assert [x for x in t.calls(env, "org.qsdtest.Stubborn1") if x[0] == "registered"] == [["registered"]]
    c.call("tray.activate", {"item": "org.qsdtest.Stubborn1/StatusNotifierItem", "x": 1, "y": 2})
    assert ["Activate", 1, 2] in t.calls(env, "org.qsdtest.Stubborn1")
    assert "org.qsdtest.Gone/StatusNotifierItem" not in items(c, sub)
    assert "taken back from qsd's last run" in env.qsd_log()


def test_a_bar_that_replaces_the_watcher_is_refused(env):
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    c.wait_value(sub, "/tray/isWatcher", True, timeout=30)
    qsd_owner = t.owner(env, t.WATCHER)
    import dbus
    # Waybar once asked with REPLACE_EXISTING: qsd does not allow replacement, so it stays.
    bar = dbus.bus.BusConnection(env.env["DBUS_SESSION_BUS_ADDRESS"])
    reply = bar.request_name(t.WATCHER, dbus.bus.NAME_FLAG_REPLACE_EXISTING | dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
    assert reply == dbus.bus.REQUEST_NAME_REPLY_EXISTS
    assert t.owner(env, t.WATCHER) == qsd_owner
    # Had the bus taken the name from qsd, it would have told qsd before answering the bar.
    t.bus_barrier(env, c)
    assert c.mirror(sub)["tray"]["isWatcher"] is True


def test_unavailable_answers_and_unknown_items(env):
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    c.wait_value(sub, "/tray/available", True, timeout=30)
    with pytest.raises(RpcError) as e:
        c.call("tray.activate", {"item": "org.qsdtest.Nothing/StatusNotifierItem"})
    assert e.value.code == -32001 and e.value.data["param"] == "item"
    with pytest.raises(RpcError) as e:
        c.call("tray.scroll", {"item": "x", "delta": 1, "orientation": "diagonal"})
    assert e.value.code == -32602 and e.value.data["param"] == "orientation"


def test_a_watcher_that_answered_too_late_is_asked_again(env):
    """The other watcher answers qsd's first Get of its items and its host registration after
    6 s, past the 5 s qsd waits: both are asked again, and the items registered before qsd came
    are shown."""
    t.start_watcher(env, slow=True)
    t.start_items(env, [item_cfg("org.qsdtest.Early", "name", Title="early")])
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray")
    c.wait_for(lambda: "org.qsdtest.Early/StatusNotifierItem" in items(c, sub), timeout=30, what="the early item")
    # Registered at least twice: the first call, done after its late answer, and the next.
    wait_until(lambda: len([h for h in json.loads(str(t.control(env, t.WATCHER, "/StatusNotifierWatcher").Hosts()))
                            if h.startswith("org.kde.StatusNotifierHost-")]) >= 2, 30, what="two host registrations")
    log = env.qsd_log()
    assert "did not answer RegisteredStatusNotifierItems in time" in log
    assert "did not answer RegisterStatusNotifierHost in time" in log
    assert env.daemon.poll() is None


def test_running_only_once_the_items_taken_back_are_shown(env):
    """Clients (the QML module, `qsctl watch --reconnect`) keep /tray as it was across a
    reconnect until the backend says `running`: a backend that said so as it became the
    watcher, before the items of its last run were read again, emptied every bar's tray at each
    restart of qsd (an open menu closed). So the first state in which it runs after a restart
    has the items it took back, here answering their reads a second late, with their menus; an
    item that registers later leaves it running. A client that does not follow
    /daemon/backends holds /tray until /tray/available, which turns true with that state."""
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray")
    c.wait_value(sub, "/tray/isWatcher", True, timeout=30)
    t.start_items(env, [dict(item_cfg("org.qsdtest.Late1", "name", Title="one"), readDelay=1.0, menu="demo"),
                        dict(item_cfg(None, "path", "/org/ayatana/NotificationItem/two", Id="two", Title="two"),
                             readDelay=1.0)])
    keys = {"org.qsdtest.Late1/StatusNotifierItem",
            t.owner(env, "org.qsdtest.Late1") + "/org/ayatana/NotificationItem/two"}
    c.wait_for(lambda: set(items(c, sub)) == keys, timeout=30, what="the two items")

    assert env.stop_qsd() == 0
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    # A client that does not follow /daemon/backends ends its hold on /tray/available.
    bare, bare_sub = env.watch("/tray")
    doc, before = c.first_running(sub, "tray", timeout=30)
    assert set(doc["tray"]["items"]) == keys
    assert "starting" in before, before
    assert set(doc["tray"]["order"]) == keys
    assert doc["tray"]["items"]["org.qsdtest.Late1/StatusNotifierItem"]["menu"]["children"]
    assert doc["tray"]["isWatcher"] is True and doc["tray"]["available"] is True
    doc, before = bare.first_value(bare_sub, "/tray/available", True, timeout=30)
    assert set(doc["tray"]["items"]) == keys
    assert before == [False], before

    seen = set()

    def later_shown():
        seen.add(c.value(sub, "/daemon/backends/tray/state"))
        return "org.qsdtest.Later/StatusNotifierItem" in items(c, sub)

    t.start_items(env, [dict(item_cfg("org.qsdtest.Later", "name"), readDelay=1.0)], log="later")
    c.wait_for(later_shown, timeout=30, what="the item that registered later")
    assert seen == {"running"}


def test_as_a_host_running_only_once_the_listed_items_are_shown(env):
    """As a host of another watcher, the first state in which the backend runs has the items of
    that watcher's list, answering their reads a second late."""
    t.start_watcher(env)
    t.start_items(env, [dict(item_cfg("org.qsdtest.Listed1", "name"), readDelay=1.0),
                        dict(item_cfg(None, "path", "/org/ayatana/NotificationItem/two", Id="two"), readDelay=1.0)])
    keys = {"org.qsdtest.Listed1/StatusNotifierItem",
            t.owner(env, "org.qsdtest.Listed1") + "/org/ayatana/NotificationItem/two"}
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    bare, bare_sub = env.watch("/tray")
    doc, before = c.first_running(sub, "tray", timeout=30)
    assert set(doc["tray"]["items"]) == keys
    assert "starting" in before, before
    assert doc["tray"]["isWatcher"] is False and doc["tray"]["available"] is True
    doc, before = bare.first_value(bare_sub, "/tray/available", True, timeout=30)
    assert set(doc["tray"]["items"]) == keys
    assert before == [False], before


def test_an_item_late_to_answer_holds_running_2_s_at_most(env):
    """The wait for the items taken back is bounded: one that answers after 4.5 s is not waited
    for past 2 s, and appears when it answers, the backend running. (The prompt item is not
    asserted in the first running state: on a machine too loaded to read it within 2 s, the
    bound rightly leaves it out too; the test above checks that it is waited for.)"""
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray")
    c.wait_value(sub, "/tray/isWatcher", True, timeout=30)
    t.start_items(env, [item_cfg("org.qsdtest.Prompt", "name")], log="prompt")
    t.start_items(env, [dict(item_cfg("org.qsdtest.Slow", "name"), readDelay=4.5)], log="slow")
    keys = {"org.qsdtest.Prompt/StatusNotifierItem", "org.qsdtest.Slow/StatusNotifierItem"}
    c.wait_for(lambda: set(items(c, sub)) == keys, timeout=30, what="the two items")

    assert env.stop_qsd() == 0
    env.start_qsd(backends=["tray"])
    c, sub = env.watch("/tray", "/daemon/backends/tray")
    doc, before = c.first_running(sub, "tray", timeout=30)
    assert "org.qsdtest.Slow/StatusNotifierItem" not in doc["tray"]["items"], doc["tray"]["items"]
    assert "starting" in before, before
    seen = set()

    def slow_shown():
        seen.add(c.value(sub, "/daemon/backends/tray/state"))
        return "org.qsdtest.Slow/StatusNotifierItem" in items(c, sub)

    c.wait_for(slow_shown, timeout=30, what="the slow item")
    assert seen == {"running"}
