"""qsd as the session's notification server, driven by real clients: notify-send (libnotify) and
a Gio connection that calls org.freedesktop.Notifications with exact types and records its
signals. Assertions go through qsd's socket (the tree, the notifications.* methods) and, where
the D-Bus side is the subject, through the signals the clients receive."""

import datetime
import json
import os
import signal
import subprocess

import jsonschema
import pytest

import notifyutil as n
from notifyutil import history, items, notify_send
from qsdtest import QSCTL, RpcError, ts, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CAPABILITIES = ["actions", "body", "body-hyperlinks", "body-markup", "icon-static", "persistence", "inline-reply"]


def schema_validator(c, name):
    doc = c.call("rpc.discover")
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    return jsonschema.Draft7Validator({"$ref": f"#/components/schemas/{name}"}, resolver=resolver)


@pytest.fixture(autouse=True)
def clean_exit(env):
    yield
    n.check_clean_exit(env)


@pytest.fixture
def bus(env):
    b = n.Bus(env)
    yield b
    b.close()


def test_the_server_answers_the_specifications_calls(env, bus):
    c, sub = n.start(env)
    assert c.mirror(sub)["notifications"]["otherOwner"] is None
    assert c.mirror(sub)["notifications"]["available"] is True
    name, vendor, version, spec = bus.call("GetServerInformation", reply="ssss")
    assert (name, vendor, spec) == ("qsd", "qsd", "1.2")
    assert version == c.call("hello")["version"]
    caps = bus.call("GetCapabilities", reply="as")[0]
    for cap in ("actions", "body", "body-markup", "body-hyperlinks", "icon-static", "persistence", "inline-reply"):
        assert cap in caps, cap
    from gi.repository import Gio
    intro = bus.conn.call_sync(n.NAME, n.PATH, "org.freedesktop.DBus.Introspectable", "Introspect", None, None,
                               Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
    for member in ("Notify", "CloseNotification", "NotificationClosed", "ActionInvoked", "ActivationToken",
                   "NotificationReplied"):
        assert member in intro, member
    assert c.mirror(sub)["notifications"]["server"] == "active"
    assert c.call("tree.get", {"path": "/daemon/backends/notifications/state"})["value"] == "running"


def test_notify_send_plain_and_print_id(env):
    c, sub = n.start(env)
    first = notify_send(env, "-p", "Hello", "World <b>bold</b> &amp; more").stdout.strip()
    assert first == "1"
    c.wait_for(lambda: "1" in items(c, sub), what="item 1")
    it = items(c, sub)["1"]
    errors = [e.message for e in schema_validator(c, "Notification").iter_errors(it)]
    assert not errors, errors
    assert it["id"] == 1
    assert it["appName"] == "notify-send"
    assert it["summary"] == "Hello"
    assert it["body"] == "World <b>bold</b> &amp; more"
    assert it["bodyText"] == "World bold & more"
    assert it["urgency"] == "normal"
    assert it["actions"] == [] and it["image"] is None and it["popup"] is True
    assert it["resident"] is False and it["transient"] is False
    # expire_timeout -1: the default, 5 s.
    assert ts(it["expiresAt"]) - ts(it["createdAt"]) == datetime.timedelta(milliseconds=5000)
    # Ids count up, never 0.
    assert notify_send(env, "-p", "-a", "mail", "-c", "email.arrived", "-h", "string:desktop-entry:thunderbird",
                       "Second").stdout.strip() == "2"
    c.wait_for(lambda: "2" in items(c, sub), what="item 2")
    it = items(c, sub)["2"]
    assert (it["appName"], it["category"], it["desktopEntry"]) == ("mail", "email.arrived", "thunderbird")


def test_replace_keeps_the_id_and_closes_nothing(env, bus):
    c, sub = n.start(env)
    nid = notify_send(env, "-p", "Download", "10 %").stdout.strip()
    c.wait_for(lambda: nid in items(c, sub), what="item")
    assert notify_send(env, "-p", "-r", nid, "Download", "60 %").stdout.strip() == nid
    c.wait_for(lambda: items(c, sub)[nid]["body"] == "60 %", what="replaced in place")
    assert list(items(c, sub)) == [nid]
    # Replacing an id that is not shown gives a fresh one: unknown, then closed.
    fresh = notify_send(env, "-p", "-r", "999", "Other").stdout.strip()
    assert fresh not in (nid, "999", "0")
    c.call("notifications.dismiss", {"id": int(fresh)})
    again = notify_send(env, "-p", "-r", fresh, "Again").stdout.strip()
    assert again not in (nid, fresh)
    # The replacement sent no NotificationClosed: the first signal about nid is the dismissal.
    c.call("notifications.dismiss", {"id": int(nid)})
    bus.wait_signal(lambda s: ("NotificationClosed", int(nid), 2) in s, what="dismissal")
    assert [s for s in bus.signals if s[1] == int(nid)] == [("NotificationClosed", int(nid), 2)]


def test_a_stack_tag_updates_one_notification_in_place(env, bus):
    """A volume script: notify-send with x-dunst-stack-tag and a value on each key press. The
    same application's next notification with the same tag replaces the one shown (its id, in
    place, nothing closed), as replaces_id would; another tag, another application or a
    notification no longer shown gives a new one."""
    from gi.repository import GLib
    c, sub = n.start(env)

    def volume(level, *extra):
        return notify_send(env, "-p", "-h", "string:x-dunst-stack-tag:volume", "-h", f"int:value:{level}", *extra,
                           "Volume", f"{level} %").stdout.strip()

    nid = volume(40)
    c.wait_for(lambda: nid in items(c, sub), what="the volume notification")
    it = items(c, sub)[nid]
    assert (it["value"], it["stackTag"]) == (40, "volume")
    assert not [e.message for e in schema_validator(c, "Notification").iter_errors(it)]
    assert volume(55) == nid and volume(70) == nid
    c.wait_for(lambda: items(c, sub)[nid]["value"] == 70, what="updated in place")
    assert list(items(c, sub)) == [nid] and items(c, sub)[nid]["body"] == "70 %"
    # The tag of another application, and another tag of the same one, are other notifications.
    other_app = volume(10, "-a", "other-script")
    brightness = notify_send(env, "-p", "-h", "string:x-dunst-stack-tag:brightness", "Brightness").stdout.strip()
    assert len({nid, other_app, brightness}) == 3
    c.wait_for(lambda: len(items(c, sub)) == 3, what="three notifications")
    # x-canonical-private-synchronous is the same (Ubuntu's notify-osd tag); x-dunst-stack-tag
    # wins over it; an empty tag stacks nothing.
    sync = bus.notify("Sync", app="notify-send", hints={"x-canonical-private-synchronous": "volume", "value": 80})
    assert sync == int(nid)
    both = bus.notify("Both", app="notify-send", hints={"x-canonical-private-synchronous": "nothing",
                                                        "x-dunst-stack-tag": "volume"})
    assert both == int(nid)
    empty = bus.notify("Empty", app="notify-send", hints={"x-dunst-stack-tag": ""})
    assert empty != int(nid)
    c.wait_for(lambda: str(empty) in items(c, sub), what="the notification with an empty tag")
    assert items(c, sub)[nid]["summary"] == "Both" and items(c, sub)[str(empty)]["stackTag"] is None
    # A value outside 0..100 is clamped; of another type it is ignored and logged; a u is taken.
    assert items(c, sub)[nid]["value"] is None   # "Both" had none
    bus.notify("Loud", app="notify-send", hints={"x-dunst-stack-tag": "volume", "value": 150})
    c.wait_for(lambda: items(c, sub)[nid]["value"] == 100, what="clamped to 100")
    bus.notify("Under", app="notify-send", hints={"x-dunst-stack-tag": "volume", "value": -5})
    c.wait_for(lambda: items(c, sub)[nid]["value"] == 0, what="clamped to 0")
    bus.notify("Unsigned", app="notify-send", hints={"x-dunst-stack-tag": "volume", "value": GLib.Variant("u", 33)})
    c.wait_for(lambda: items(c, sub)[nid]["value"] == 33, what="an unsigned value")
    bus.notify("Text", app="notify-send", hints={"x-dunst-stack-tag": "volume", "value": GLib.Variant("s", "50")})
    c.wait_for(lambda: items(c, sub)[nid]["summary"] == "Text", what="a value of the wrong type")
    assert items(c, sub)[nid]["value"] is None
    wait_until(lambda: 'the hint "value" as s' in env.qsd_log(), 10, what="the wrong type logged")
    # Nothing about nid was closed while it was replaced; once dismissed, the tag makes a new one.
    assert not [s for s in bus.signals if s[1] == int(nid)]
    c.call("notifications.dismiss", {"id": int(nid)})
    assert volume(20) not in (nid, other_app, brightness)


def test_expiry_and_what_never_expires(env, bus):
    c, sub = n.start(env)
    crit = int(notify_send(env, "-p", "-u", "critical", "-t", "100", "Battery low").stdout)
    never = int(notify_send(env, "-p", "-t", "0", "Stays").stdout)
    short = int(notify_send(env, "-p", "-t", "200", "Short").stdout)
    c.wait_for(lambda: str(short) in history(c, sub), timeout=10, what="expiry")
    entry = history(c, sub)[str(short)]
    assert entry["closeReason"] == "expired"
    assert ts(entry["closedAt"]) >= ts(entry["expiresAt"]) - datetime.timedelta(milliseconds=5)
    bus.wait_signal(lambda s: ("NotificationClosed", short, 1) in s, what="NotificationClosed(short, 1)")
    # The critical one was due before the short one had it been allowed to expire.
    live = items(c, sub)
    assert live[str(crit)]["expiresAt"] is None and live[str(crit)]["urgency"] == "critical"
    assert live[str(never)]["expiresAt"] is None
    assert not [s for s in bus.signals if s[1] in (crit, never)]


def test_a_burst_never_expires_before_its_expiresat(env):
    # Calls that arrive together are handled in one pass of the loop. The deadline was counted
    # from when that pass woke, so the later ones expired up to the whole burst's time before the
    # expiresAt clients were shown (26 ms early on a loaded machine, found by a flaky hunt).
    c, sub = n.start(env)
    last = n.flood(env, 2000, 1000)
    c.wait_for(lambda: str(last) in history(c, sub), timeout=30, what="the last one expired")
    # The sender's last 100 stay until they expire; the ones before were pushed out (closed "as
    # expired" too, at once).
    expired = [e for e in history(c, sub).values() if e["id"] > last - 100]
    assert len(expired) == 100 and all(e["closeReason"] == "expired" for e in expired)
    early = [(e["id"], e["expiresAt"], e["closedAt"]) for e in expired
             if ts(e["closedAt"]) < ts(e["expiresAt"]) - datetime.timedelta(milliseconds=2)]
    assert not early, f"{len(early)} of {len(expired)} expired early, e.g. {early[:3]}"


def test_actions_through_notify_send(env, bus):
    c, sub = n.start(env)
    p = notify_send(env, "-A", "default=Open", "-A", "later=Remind me later", "Mail", "From Ann", wait=False)
    try:
        c.wait_for(lambda: items(c, sub), timeout=10, what="notify-send's notification")
        nid, it = next(iter(items(c, sub).items()))
        assert it["actions"] == [{"key": "default", "label": "Open"}, {"key": "later", "label": "Remind me later"}]
        # An action it does not offer, an unknown id.
        with pytest.raises(RpcError) as e:
            c.call("notifications.invokeAction", {"id": int(nid), "action": "delete"})
        assert e.value.code == -32602 and e.value.data["param"] == "action"
        assert e.value.data["available"] == ["default", "later"]
        with pytest.raises(RpcError) as e:
            c.call("notifications.invokeAction", {"id": 4242, "action": "later"})
        assert e.value.code == -32001 and e.value.data["param"] == "id"
        result = c.call("notifications.invokeAction", {"id": int(nid), "action": "later", "activationToken": "tok-1"})
        assert result == {"id": int(nid), "action": "later", "closed": True}
        out, err = p.communicate(timeout=10)
        assert p.returncode == 0, err
        assert out.strip() == "later"
    finally:
        if p.poll() is None:
            p.kill()
    # The token first, then the action, then the close (dismissed).
    bus.wait_signal(lambda s: ("NotificationClosed", int(nid), 2) in s, what="close after the action")
    mine = [s for s in bus.signals if s[1] == int(nid)]
    assert mine == [("ActivationToken", int(nid), "tok-1"), ("ActionInvoked", int(nid), "later"),
                    ("NotificationClosed", int(nid), 2)]
    c.wait_for(lambda: nid in history(c, sub), what="history")
    assert history(c, sub)[nid]["closeReason"] == "dismissed"


def test_a_resident_notification_stays_after_its_action(env, bus):
    c, sub = n.start(env)
    nid = bus.notify("Player", actions=["pause", "Pause"], hints={"resident": True})
    c.wait_for(lambda: str(nid) in items(c, sub), what="item")
    assert items(c, sub)[str(nid)]["resident"] is True
    assert c.call("notifications.invokeAction", {"id": nid, "action": "pause"})["closed"] is False
    bus.wait_signal(lambda s: ("ActionInvoked", nid, "pause") in s)
    assert str(nid) in items(c, sub)
    assert ("ActivationToken", nid) not in [s[:2] for s in bus.signals]


def test_close_notification_and_the_error_for_an_unknown_id(env, bus):
    c, sub = n.start(env)
    nid = bus.notify("Closing", timeout=0)
    c.wait_for(lambda: str(nid) in items(c, sub), what="item")
    bus.call("CloseNotification", "u", (nid,))
    bus.wait_signal(lambda s: ("NotificationClosed", nid, 3) in s)
    c.wait_for(lambda: str(nid) in history(c, sub) and str(nid) not in items(c, sub), what="history")
    assert history(c, sub)[str(nid)]["closeReason"] == "closedByApp"
    # Closed already, or never shown: the specification's error, and no signal.
    assert bus.error_name("CloseNotification", "u", (nid,)) == "org.freedesktop.Notifications.Error.InvalidId"
    assert bus.error_name("CloseNotification", "u", (777,)) == "org.freedesktop.Notifications.Error.InvalidId"
    other = bus.notify("Sentinel", timeout=0)
    c.call("notifications.dismiss", {"id": other})
    bus.wait_signal(lambda s: ("NotificationClosed", other, 2) in s)
    assert [s for s in bus.signals if s[0] == "NotificationClosed"] == [("NotificationClosed", nid, 3),
                                                                       ("NotificationClosed", other, 2)]


def test_a_shell_expires_a_notification_itself(env, bus):
    c, sub = n.start(env)
    # One that would never expire on its own: the shell decides it has been up long enough.
    held = bus.notify("held", timeout=0)
    other = bus.notify("other", timeout=0)
    c.wait_for(lambda: str(held) in items(c, sub) and str(other) in items(c, sub), what="two items")
    assert c.call("notifications.expire", {"id": held}) == {"id": held}
    bus.wait_signal(lambda s: ("NotificationClosed", held, 1) in s, what="NotificationClosed(held, 1)")
    c.wait_for(lambda: str(held) in history(c, sub), what="held in history")
    assert history(c, sub)[str(held)]["closeReason"] == "expired"
    assert str(other) in items(c, sub)
    assert not [s for s in bus.signals if s[0] == "NotificationClosed" and s[1] != held]
    with pytest.raises(RpcError) as e:
        c.call("notifications.expire", {"id": held})
    assert e.value.code == -32001 and e.value.data == {"param": "id", "id": held}


def test_dismiss_dismiss_all_and_history(env, bus):
    c, sub = n.start(env)
    ids = [bus.notify(f"n{i}", timeout=0) for i in range(4)]
    c.wait_for(lambda: len(items(c, sub)) == 4, what="four items")
    assert c.call("notifications.dismiss", {"id": ids[0]}) == {"id": ids[0]}
    assert c.call("notifications.dismissAll") == {"count": 3}
    bus.wait_signal(lambda s: len([x for x in s if x[0] == "NotificationClosed"]) == 4)
    assert sorted(s[1] for s in bus.signals if s == ("NotificationClosed", s[1], 2)) == ids
    c.wait_for(lambda: len(history(c, sub)) == 4 and not items(c, sub), what="all in history")
    entry = history(c, sub)[str(ids[1])]
    errors = [e.message for e in schema_validator(c, "NotificationHistoryEntry").iter_errors(entry)]
    assert not errors, errors
    assert entry["summary"] == "n1" and entry["closeReason"] == "dismissed"
    for method, params in (("notifications.dismiss", {"id": ids[0]}), ("notifications.removeFromHistory", {"id": 999})):
        with pytest.raises(RpcError) as e:
            c.call(method, params)
        assert e.value.code == -32001 and e.value.data == {"param": "id", "id": params["id"]}
    assert c.call("notifications.removeFromHistory", {"id": ids[0]}) == {"id": ids[0]}
    c.wait_for(lambda: str(ids[0]) not in history(c, sub), what="removed")
    assert c.call("notifications.clearHistory") == {"count": 3}
    c.wait_for(lambda: not history(c, sub), what="history cleared")
    assert c.call("notifications.dismissAll") == {"count": 0}


def test_do_not_disturb(env, bus):
    c, sub = n.start(env)
    assert c.call("notifications.setDnd", {"enabled": True}) == {"enabled": True}
    c.wait_value(sub, "/notifications/dnd", True)
    quiet = bus.notify("Quiet", timeout=300)
    loud = bus.notify("Low battery", hints={"urgency": 2})
    c.wait_for(lambda: {str(quiet), str(loud)} <= set(items(c, sub)), what="both")
    assert items(c, sub)[str(quiet)]["popup"] is False
    assert items(c, sub)[str(loud)]["popup"] is True
    # Held back, but it expires as usual.
    c.wait_for(lambda: str(quiet) in history(c, sub), what="expiry under DND")
    assert history(c, sub)[str(quiet)]["closeReason"] == "expired"
    c.call("notifications.setDnd", {"enabled": False})
    c.wait_value(sub, "/notifications/dnd", False)
    nid = bus.notify("Back")
    c.wait_for(lambda: str(nid) in items(c, sub), what="item")
    assert items(c, sub)[str(nid)]["popup"] is True


def test_transient_notifications_skip_history(env, bus):
    c, sub = n.start(env)
    nid = int(notify_send(env, "-p", "-e", "-t", "0", "Volume 40 %").stdout)
    kept = bus.notify("Kept", timeout=0)
    c.wait_for(lambda: {str(nid), str(kept)} <= set(items(c, sub)), what="items")
    assert items(c, sub)[str(nid)]["transient"] is True
    c.call("notifications.dismiss", {"id": nid})
    c.call("notifications.dismiss", {"id": kept})
    c.wait_for(lambda: str(kept) in history(c, sub), what="history")
    assert str(nid) not in history(c, sub) and str(nid) not in items(c, sub)


def test_inline_reply(env, bus):
    c, sub = n.start(env)
    chat = bus.notify("Ann", "Lunch?", actions=["default", "Open", "inline-reply", "Reply"])
    plain = bus.notify("No reply here", actions=["default", "Open"])
    c.wait_for(lambda: {str(chat), str(plain)} <= set(items(c, sub)), what="items")
    with pytest.raises(RpcError) as e:
        c.call("notifications.reply", {"id": plain, "text": "x"})
    assert e.value.code == -32602 and e.value.data["param"] == "id"
    assert c.call("notifications.reply", {"id": chat, "text": "On my way"}) == {"id": chat, "closed": True}
    bus.wait_signal(lambda s: ("NotificationClosed", chat, 2) in s)
    assert [s for s in bus.signals if s[1] == chat] == [("NotificationReplied", chat, "On my way"),
                                                         ("NotificationClosed", chat, 2)]


def test_configure_the_default_timeout_and_history_size(env, bus):
    c, sub = n.start(env)
    assert c.call("notifications.configure", {"defaultTimeoutMs": 300}) == {"defaultTimeoutMs": 300, "historyLimit": 200,
                                                                           "capabilities": DEFAULT_CAPABILITIES}
    c.wait_value(sub, "/notifications/defaultTimeoutMs", 300)
    nid = int(notify_send(env, "-p", "Soon gone").stdout)
    c.wait_for(lambda: str(nid) in items(c, sub) or str(nid) in history(c, sub), what="item")
    entry = items(c, sub).get(str(nid)) or history(c, sub)[str(nid)]
    assert ts(entry["expiresAt"]) - ts(entry["createdAt"]) == datetime.timedelta(milliseconds=300)
    c.wait_for(lambda: str(nid) in history(c, sub), what="expired after 300 ms")
    ids = [bus.notify(f"h{i}", timeout=0) for i in range(3)]
    for i in ids:
        c.call("notifications.dismiss", {"id": i})
    c.wait_for(lambda: len(history(c, sub)) == 4, what="four in history")
    # A smaller limit drops the oldest closed at once.
    c.call("notifications.configure", {"historyLimit": 2})
    c.wait_for(lambda: set(history(c, sub)) == {str(ids[1]), str(ids[2])}, what="the two newest kept")
    with pytest.raises(RpcError) as e:
        c.call("notifications.configure", {"historyLimit": 5000})
    assert e.value.code == -32602 and e.value.data["param"] == "historyLimit"


def test_the_capabilities_a_shell_configures_are_what_applications_are_told(env, bus):
    from gi.repository import GLib
    c, sub = n.start(env)
    assert c.mirror(sub)["notifications"]["capabilities"] == DEFAULT_CAPABILITIES
    assert bus.call("GetCapabilities", reply="as")[0] == DEFAULT_CAPABILITIES
    # A shell without inline replies or markup, with icons for its action buttons.
    r = c.call("notifications.configure", {"capabilities": ["body", "actions", "action-icons", "body", "persistence"]})
    assert r["capabilities"] == ["actions", "action-icons", "body", "persistence"]
    c.wait_value(sub, "/notifications/capabilities", r["capabilities"])
    assert bus.call("GetCapabilities", reply="as")[0] == r["capabilities"]
    # Every name the API allows is one qsd advertises (its table and the API's enum agree), in
    # the API's order.
    method = next(m for m in c.call("rpc.discover")["methods"] if m["name"] == "notifications.configure")
    allowed = next(p for p in method["params"] if p["name"] == "capabilities")["schema"]["items"]["enum"]
    assert c.call("notifications.configure", {"capabilities": allowed[::-1]})["capabilities"] == allowed
    c.call("notifications.configure", {"capabilities": r["capabilities"]})
    # What a notification carries is kept whatever is advertised; the hints for action icons
    # and the reply field's text are in the item for the shells that honour them.
    nid = bus.notify("marked", body="<b>bold</b>", actions=("media-playback-start", "Play", "inline-reply", "Reply"),
                     hints={"action-icons": True, "x-kde-reply-placeholder-text": "Answer " + "é" * 300}, timeout=0)
    c.wait_for(lambda: str(nid) in items(c, sub), what="the notification")
    it = items(c, sub)[str(nid)]
    assert it["body"] == "<b>bold</b>"
    assert [a["key"] for a in it["actions"]] == ["media-playback-start", "inline-reply"]
    assert it["actionIcons"] is True
    # Cut as the other names are: at most 256 bytes of whole characters, then "…".
    assert it["replyPlaceholder"].startswith("Answer éé") and len(it["replyPlaceholder"].encode()) == 255 + 3
    assert it["replyPlaceholder"].endswith("…")
    errors = [e.message for e in schema_validator(c, "Notification").iter_errors(it)]
    assert not errors, errors
    plain = bus.notify("plain", hints={"action-icons": GLib.Variant("s", "yes")}, timeout=0)
    c.wait_for(lambda: str(plain) in items(c, sub), what="the plain notification")
    assert items(c, sub)[str(plain)]["actionIcons"] is False and items(c, sub)[str(plain)]["replyPlaceholder"] is None
    for bad in (["sound"], ["icon-multi"], "body", [1]):
        with pytest.raises(RpcError) as e:
            c.call("notifications.configure", {"capabilities": bad})
        assert e.value.code == -32602 and e.value.data["param"].startswith("capabilities")
    assert bus.call("GetCapabilities", reply="as")[0] == r["capabilities"]
    # Kept across a restart, as the other settings are.
    assert env.stop_qsd() == 0
    c, sub = n.start(env)
    assert c.mirror(sub)["notifications"]["capabilities"] == r["capabilities"]
    assert bus.call("GetCapabilities", reply="as")[0] == r["capabilities"]
    assert c.call("notifications.configure", {"capabilities": []})["capabilities"] == []
    assert bus.call("GetCapabilities", reply="as")[0] == []


def test_a_subscriber_never_sees_a_half_made_item(env, bus):
    c, sub = n.start(env)
    watcher = env.client()
    wsub = watcher.subscribe(["/notifications/items"])
    v = schema_validator(c, "Notification")
    rgb = bytes(range(48))
    sent = []
    for i in range(20):
        hints = {"image-data": (4, 4, 12, False, 8, 3, rgb)} if i % 3 == 0 else {"urgency": i % 3}
        sent.append(bus.notify(f"item {i}", f"<i>{i}</i>", actions=["default", "Go"], hints=hints, timeout=0))
        if i % 4 == 1:
            bus.notify(f"item {i} again", replaces=sent[-1], timeout=0)
    for i in sent[:5]:
        c.call("notifications.dismiss", {"id": i})
    watcher.wait_for(lambda: len(watcher.mirror(wsub)["notifications"]["items"]) == 15, what="15 items")
    seen = 0
    for msg in watcher.notifications:
        if msg["method"] != "tree.changed":
            continue
        for op in msg["params"]["changes"]:
            parts = op["path"].split("/")
            assert parts[:3] == ["", "notifications", "items"], op
            if len(parts) == 4 and op["op"] == "add":
                errors = [e.message for e in v.iter_errors(op["value"])]
                assert not errors, (op, errors)
                seen += 1
            else:
                # In place on an item that is there, or an item removed whole.
                assert len(parts) > 4 or op["op"] == "remove", op
    # Each shown item arrived whole (one added and dismissed within one batch never shows at all).
    assert 15 <= seen <= 20
    watcher.close()


# docs/backends/notifications.md, "From a shell": each new popup's summary and body, for a tool
# that shows them (SHOW stands for it: swaynag in the documentation).
POPUP_ONE_LINER = ("qsctl watch --patch /notifications/items | jq --unbuffered -r '.changes[]? | select(.op == \"add\" "
                   "and .value.popup) | .value | [.summary, .bodyText] | @tsv' | while IFS=\"$(printf '\\t')\" read -r summary body; "
                   "do SHOW \"$summary\" \"$body\"; done")


def test_qsctl_watch_is_a_notification_log_and_popups_are_one_line_away(env):
    c, sub = n.start(env)
    shown = os.path.join(env.dir, "shown.txt")
    e = dict(env.env, QSD_SOCKET=env.socket, PATH=os.path.dirname(os.path.abspath(QSCTL)) + ":" + env.env["PATH"])
    script = "SHOW() { printf '%s | %s\\n' \"$1\" \"$2\" >> " + shown + "; }; " + POPUP_ONE_LINER
    # sh, as sway's exec runs it: bash's $'\t' was in the line, and sh split each summary at its t's.
    popups = subprocess.Popen(["sh", "-c", script], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    log = subprocess.Popen([QSCTL, "watch", "/notifications/items"], env=e, stdout=subprocess.PIPE, text=True)
    try:
        # The watch has its first line (the current value) before anything is sent.
        assert log.stdout.readline().strip() == "{}"
        # The pipeline's watch is subscribed once a sentinel gets through it.
        def sentinel_shown():
            notify_send(env, "sentinel")
            return os.path.exists(shown) and "sentinel" in open(shown).read()
        wait_until(sentinel_shown, interval=0.2, what="the pipeline's watch")
        c.call("notifications.setDnd", {"enabled": True})
        notify_send(env, "Held back", "under DND")
        c.call("notifications.setDnd", {"enabled": False})
        notify_send(env, "-u", "critical", "Battery low", "<b>5 %</b> left")
        notify_send(env, "Mail", "From Ann")

        def popups_shown():
            return [line for line in open(shown).read().splitlines() if not line.startswith("sentinel")]
        wait_until(lambda: len(popups_shown()) == 2, what="two popups shown")
        assert popups_shown() == ["Battery low | 5 % left", "Mail | From Ann"]
        # The log printed a line for each change: every notification, held back or not.
        summaries = set()
        while not {"Held back", "Battery low", "Mail"} <= summaries:
            summaries |= {it["summary"] for it in json.loads(log.stdout.readline()).values()}
    finally:
        os.killpg(popups.pid, signal.SIGTERM)
        popups.wait(10)
        log.kill()


def test_a_glib_applications_gnotification(env, bus):
    """What GTK and GLib applications send: Gio.Notification through GLib's own freedesktop
    backend. Its default action and a button with a target come back to the application as the
    GActions they name; sending under the same id replaces the one shown; withdrawing closes it."""
    c, sub = n.start(env)
    app = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "gnotification_app.py")], env=env.env,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def say(line, answer):
        app.stdin.write(line + "\n")
        app.stdin.flush()
        got = app.stdout.readline().strip()
        assert got == answer, (line, got, app.stderr.read() if app.poll() is not None else "")

    def shown(title):
        found = [(k, v) for k, v in items(c, sub).items() if v["summary"] == title]
        return found[0] if found else None

    try:
        assert app.stdout.readline().strip() == "ready"
        say("send msg-1 New message", "sent msg-1")
        c.wait_for(lambda: shown("New message"), timeout=10, what="the GNotification")
        nid, it = shown("New message")
        assert it["desktopEntry"] == "org.qsd.GNotificationTest"
        assert it["body"] == "Ann: lunch at 1?"
        assert [a["label"] for a in it["actions"]] == ["", "Reply", "Open"]
        assert it["actions"][0]["key"] == "default"
        assert it["image"] is not None and it["image"].endswith("mail-unread.png"), it["image"]
        reply = it["actions"][1]["key"]

        # The button with a target: GLib activates app.reply with "room-7".
        assert c.call("notifications.invokeAction", {"id": int(nid), "action": reply})["closed"] is True
        assert app.stdout.readline().strip() == "action reply room-7"
        c.wait_for(lambda: nid not in items(c, sub), what="closed after its action")

        # The default action: app.open, without a target.
        say("send msg-2 Second", "sent msg-2")
        c.wait_for(lambda: shown("Second"), timeout=10, what="the second GNotification")
        second, _ = shown("Second")
        c.call("notifications.invokeAction", {"id": int(second), "action": "default"})
        assert app.stdout.readline().strip() == "action open -"

        # The same GNotification id again replaces the one shown, in place; withdrawing it closes it.
        say("send msg-3 Draft", "sent msg-3")
        c.wait_for(lambda: shown("Draft"), timeout=10, what="the third GNotification")
        third, _ = shown("Draft")
        say("send msg-3 Draft, edited", "sent msg-3")
        c.wait_for(lambda: shown("Draft, edited"), timeout=10, what="the replacement")
        assert shown("Draft, edited")[0] == third
        assert shown("Draft") is None
        say("withdraw msg-3", "withdrawn msg-3")
        c.wait_for(lambda: third not in items(c, sub), timeout=10, what="the withdrawn notification gone")
        c.wait_for(lambda: third in history(c, sub), what="history")
        assert history(c, sub)[third]["closeReason"] == "closedByApp"
    finally:
        app.stdin.close()
        try:
            app.wait(timeout=10)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()
