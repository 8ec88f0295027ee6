"""Tray items in /tray/items with qsd as the watcher: their fields, non-standard and mistyped
values, icons (pixmaps written as PNG files, themes in a private IconThemePath tree, the overlay,
the attention variant, files removed when unused), change signals, and the item actions,
including an item that does not answer. Real items (tray_item.py) on a private session bus."""

import os
import threading

import pytest

import trayutil as t
from qsdtest import RpcError, wait_until

RED = (255, 0, 0, 255)
BLUE = (0, 0, 255, 255)
GREEN = (0, 255, 0, 255)


@pytest.fixture
def tray(env):
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_value(sub, "/tray/available", True, timeout=30)
    return env, c, sub


def key(name):
    return name + "/StatusNotifierItem"


def wait_item(c, sub, name, pred=lambda it: True, what=None):
    k = key(name)
    c.wait_for(lambda: k in c.mirror(sub)["tray"]["items"] and pred(c.mirror(sub)["tray"]["items"][k]),
               timeout=30, what=what or f"item {k}")
    return c.mirror(sub)["tray"]["items"][k]


def icons_dir(env):
    return os.path.join(env.run, "qsd", "icons")


def test_fields_of_a_complete_item(tray):
    env, c, sub = tray
    theme = os.path.join(env.dir, "apptheme")
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Full", "props": {
        "Id": "full", "Title": "Full item", "Status": "Passive", "Category": "Communications",
        "IconName": "qsd-full", "AttentionIconName": "qsd-full-attention", "OverlayIconName": "",
        "IconThemePath": theme, "ItemIsMenu": True,
        # A tooltip with an icon of its own (not shown; skipped when read).
        "ToolTip": {"title": "Tip", "description": "<b>bold</b> &amp; more", "pixmaps": [t.pixmap(48, 48, RED)]}}}])
    it = wait_item(c, sub, "org.qsdtest.Full")
    assert it["id"] == "full" and it["title"] == "Full item"
    assert it["status"] == "passive" and it["category"] == "communications"
    assert it["iconName"] == "qsd-full" and it["attentionIconName"] == "qsd-full-attention"
    assert it["iconThemePath"] == theme
    assert it["tooltipTitle"] == "Tip"
    assert it["tooltipDescription"] == "<b>bold</b> &amp; more"  # markup kept as sent
    assert it["onlyMenu"] is True and it["hasMenu"] is False and it["menu"] is None
    assert it["icon"] is None  # the name is nowhere and there is no pixmap
    assert it["service"] == "org.qsdtest.Full" and it["objectPath"] == "/StatusNotifierItem"
    # Every field of the schema, no more.
    schema = c.call("rpc.discover")["components"]["schemas"]["TrayItem"]
    assert set(it) == set(schema["required"]) == set(schema["properties"])


def test_the_order_is_quickshells(tray):
    """/tray/order lists the items as Quickshell's SystemTray orders them: by category (the four
    of the specification in its order, then any other), then by id case-insensitively."""
    env, c, sub = tray
    items = [("org.qsdtest.Hw", "Hardware", "zeta"), ("org.qsdtest.B", "ApplicationStatus", "Beta"),
             ("org.qsdtest.A", "ApplicationStatus", "alpha"), ("org.qsdtest.Sys", "SystemServices", "x"),
             ("org.qsdtest.Custom", "Custom", "b")]
    for n, cat, i in items:
        t.start_items(env, [{"register": "name", "name": n, "props": {"Id": i, "Category": cat}}])
    leaving = t.start_items(env, [{"register": "name", "name": "org.qsdtest.None", "props": {"Id": "a"}}])
    # An item without a Category is applicationStatus (the specification's default): id "a" first.
    expected = [key(n) for n in ("org.qsdtest.None", "org.qsdtest.A", "org.qsdtest.B", "org.qsdtest.Sys",
                                 "org.qsdtest.Hw", "org.qsdtest.Custom")]
    c.wait_value(sub, "/tray/order", expected, timeout=30)
    assert c.mirror(sub)["tray"]["items"][key("org.qsdtest.None")]["category"] == "applicationStatus"
    # An item leaving leaves the order in the same change as the items.
    leaving.terminate()
    c.wait_for(lambda: key("org.qsdtest.None") not in c.mirror(sub)["tray"]["items"], timeout=30, what="item gone")
    assert c.mirror(sub)["tray"]["order"] == [k for k in expected if k != key("org.qsdtest.None")]


def test_a_free_text_status_is_shown_and_a_mistyped_category_degrades(tray):
    env, c, sub = tray
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Odd", "props": {
        "Id": "odd", "Status": "Connected to server", "Category": 5, "IconPixmap": "not pixels",
        "OverlayIconPixmap": [t.pixmap(8, 8, RED)]}}])
    it = wait_item(c, sub, "org.qsdtest.Odd")
    # Never hidden (Quickshell #495): the raw string is the status.
    assert it["status"] == "Connected to server"
    assert it["category"] is None
    # No icon from a string pixmap; the overlay alone is given as such.
    assert it["icon"] is None and t.read_png(t.file_of(it["overlayIcon"]))[0] == 8
    log = env.qsd_log()
    assert "property Category has the unexpected D-Bus type 'i'" in log
    assert "property IconPixmap has the unexpected D-Bus type 's'" in log
    # Logged once, however often the item is read again.
    t.set_prop(env, "org.qsdtest.Odd", "Title", "again", "NewTitle")
    wait_item(c, sub, "org.qsdtest.Odd", lambda i: i["title"] == "again")
    assert env.qsd_log().count("property Category has the unexpected") == 1


def test_an_item_whose_getall_fails_is_read_property_by_property(tray):
    env, c, sub = tray
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.NoGetAll", "getAllFails": True,
                         "props": {"Id": "nogetall", "Title": "read one by one", "Status": "Active"}}])
    it = wait_item(c, sub, "org.qsdtest.NoGetAll")
    assert it["title"] == "read one by one" and it["status"] == "active"
    assert ["GetAll"] in t.calls(env, "org.qsdtest.NoGetAll")


def test_an_item_that_answered_too_late_is_read_again(tray):
    # An app busy while the session starts answers neither GetAll nor the Gets of each property
    # within the 5 s qsd waits for each. Before, qsd left the item out until it sent a signal,
    # which an unchanged item never does; now it asks again a second later.
    env, c, sub = tray
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Late", "slowReads": 1,
                         "props": {"Id": "late", "Title": "answered late", "Status": "Active"}}])
    it = wait_item(c, sub, "org.qsdtest.Late")
    assert it["title"] == "answered late"
    # The read that timed out, and the one asked again (or more, should that one miss the 5 s too
    # on a loaded machine).
    assert len([x for x in t.calls(env, "org.qsdtest.Late") if x[0] == "GetAll"]) >= 2
    assert "org.qsdtest.Late/StatusNotifierItem: reading its properties timed out; asking again in 1 s" in env.qsd_log()


def test_pixmap_icons_are_png_files_of_the_best_size(tray):
    env, c, sub = tray
    # 16, 96 and 32: the smallest at least 64 px is 96.
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Pix", "props": {"Id": "pix", "IconPixmap": [
        t.pixmap(16, 16, RED), t.pixmap(96, 96, RED), t.pixmap(32, 32, RED)]}}])
    # None is that large: the largest.
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Small", "props": {"Id": "small", "IconPixmap": [
        t.pixmap(22, 22, BLUE), t.pixmap(16, 16, BLUE)]}}])
    it = wait_item(c, sub, "org.qsdtest.Pix")
    path = t.file_of(it["icon"])
    assert os.path.dirname(path) == icons_dir(env)
    w, h, rows = t.read_png(path)
    assert (w, h) == (96, 96)
    assert rows[0][0] == RED and rows[95][95] == RED  # ARGB -> RGBA
    small = wait_item(c, sub, "org.qsdtest.Small")
    w, h, rows = t.read_png(t.file_of(small["icon"]))
    assert (w, h) == (22, 22) and rows[10][10] == BLUE


def test_theme_icons_from_a_private_icon_theme_path(tray):
    env, c, sub = tray
    theme = os.path.join(env.dir, "apptheme")
    # An app's own hicolor tree without index.theme (Quickshell #26/#147), and a flat file.
    tree_icon = os.path.join(theme, "hicolor", "48x48", "apps", "qsd-private-icon.png")
    t.write_png(tree_icon, 48, 48, GREEN)
    t.write_png(os.path.join(theme, "hicolor", "16x16", "apps", "qsd-private-icon.png"), 16, 16, GREEN)
    flat_icon = os.path.join(theme, "qsd-flat-icon.png")
    t.write_png(flat_icon, 24, 24, BLUE)
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Themed", "props": {
        "Id": "themed", "IconName": "qsd-private-icon", "IconThemePath": theme,
        # A pixmap too: the theme icon wins.
        "IconPixmap": [t.pixmap(8, 8, RED)]}}])
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Flat", "props": {
        "Id": "flat", "IconName": "qsd-flat-icon", "IconThemePath": theme}}])
    it = wait_item(c, sub, "org.qsdtest.Themed")
    # The theme's own file (the nearest size to 64: 48), not a copy.
    assert t.file_of(it["icon"]) == tree_icon
    assert t.file_of(wait_item(c, sub, "org.qsdtest.Flat")["icon"]) == flat_icon
    # Nothing was written for theme icons.
    assert os.listdir(icons_dir(env)) == []


def test_overlay_attention_and_files_removed_when_unused(tray):
    env, c, sub = tray
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Over", "props": {
        "Id": "over", "Status": "Active", "IconPixmap": [t.pixmap(64, 64, RED)],
        "AttentionIconPixmap": [t.pixmap(64, 64, GREEN)]}}])
    it = wait_item(c, sub, "org.qsdtest.Over")
    plain = it["icon"]
    assert t.read_png(t.file_of(plain))[2][0][0] == RED
    # An overlay (top-left quadrant blue, the rest transparent) is composed over the icon.
    t.set_prop(env, "org.qsdtest.Over", "OverlayIconPixmap", [t.pixmap(32, 32, BLUE, quadrant=True)], "NewOverlayIcon")
    it = wait_item(c, sub, "org.qsdtest.Over", lambda i: i["icon"] != plain, "composed icon")
    w, h, rows = t.read_png(t.file_of(it["icon"]))
    assert (w, h) == (64, 64)
    assert rows[4][4] == BLUE and rows[60][60] == RED
    assert it["overlayIcon"] is None
    # The plain icon's file is gone: nothing refers to it.
    wait_until(lambda: not os.path.exists(t.file_of(plain)), 30, what="old icon file removed")
    composed = it["icon"]
    # NeedsAttention: the attention pixmap (with the overlay); Active again: back to the same file name.
    t.set_prop(env, "org.qsdtest.Over", "Status", "NeedsAttention", "NewStatus")
    it = wait_item(c, sub, "org.qsdtest.Over", lambda i: i["status"] == "needsAttention", "attention")
    rows = t.read_png(t.file_of(it["icon"]))[2]
    assert rows[60][60] == GREEN and rows[4][4] == BLUE
    t.set_prop(env, "org.qsdtest.Over", "Status", "Active", "NewStatus")
    it = wait_item(c, sub, "org.qsdtest.Over", lambda i: i["status"] == "active", "active again")
    assert it["icon"] == composed
    assert sorted(os.listdir(icons_dir(env))) == [os.path.basename(t.file_of(composed))]


def test_change_signals_update_fields_and_leaving_removes_files(tray):
    env, c, sub = tray
    p = t.start_items(env, [{"register": "name", "name": "org.qsdtest.Change", "props": {
        "Id": "change", "Title": "before", "Status": "Active", "IconPixmap": [t.pixmap(64, 64, RED)]}}])
    it = wait_item(c, sub, "org.qsdtest.Change")
    first = it["icon"]
    mark = len(c.notifications)
    t.set_prop(env, "org.qsdtest.Change", "Title", "after", "NewTitle")
    wait_item(c, sub, "org.qsdtest.Change", lambda i: i["title"] == "after", "new title")
    # One field changed, one field in the patch.
    changes = [ch for n in c.notifications[mark:] if n["method"] == "tree.changed" for ch in n["params"]["changes"]]
    assert [ch["path"] for ch in changes] == ["/tray/items/org.qsdtest.Change~1StatusNotifierItem/title"]
    t.set_prop(env, "org.qsdtest.Change", "ToolTip", {"title": "t", "description": "d"}, "NewToolTip")
    wait_item(c, sub, "org.qsdtest.Change", lambda i: i["tooltipDescription"] == "d", "tooltip")
    t.set_prop(env, "org.qsdtest.Change", "IconPixmap", [t.pixmap(64, 64, BLUE)], "NewIcon")
    it = wait_item(c, sub, "org.qsdtest.Change", lambda i: i["icon"] != first, "new icon")
    assert t.read_png(t.file_of(it["icon"]))[2][0][0] == BLUE
    # A property the item drops takes its default.
    t.set_prop(env, "org.qsdtest.Change", "Title", None, "NewTitle")
    wait_item(c, sub, "org.qsdtest.Change", lambda i: i["title"] == "", "title dropped")
    # The item exits: removed as a whole, and its icon file with it.
    p.terminate()
    p.wait(10)
    c.wait_for(lambda: c.mirror(sub)["tray"]["items"] == {}, timeout=30, what="item removed")
    wait_until(lambda: os.listdir(icons_dir(env)) == [], 30, what="icon files removed")


def test_a_property_read_again_that_answers_too_late_is_asked_again(tray):
    # The app is busy when it sends NewTitle: the Get misses qsd's 5 s. The old title stays and
    # is read again a second later. Before, it stayed until the app signalled its title again.
    env, c, sub = tray
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Busy", "props": {"Id": "busy", "Title": "old"}}])
    wait_item(c, sub, "org.qsdtest.Busy", lambda i: i["title"] == "old")
    t.control(env, "org.qsdtest.Busy").SlowGet("Title")
    t.set_prop(env, "org.qsdtest.Busy", "Title", "new", "NewTitle")
    wait_item(c, sub, "org.qsdtest.Busy", lambda i: i["title"] == "new", "the title read again")
    assert "re-reading Title did not answer; the old value stays, asking again in 1 s" in env.qsd_log()


def test_a_second_qsd_leaves_the_first_ones_icon_files_alone(tray):
    env, c, sub = tray
    first_socket = env.socket
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Both", "props": {
        "Id": "both", "IconPixmap": [t.pixmap(64, 64, RED)]}}])
    url = wait_item(c, sub, "org.qsdtest.Both")["icon"]
    path = t.file_of(url)
    png = open(path, "rb").read()

    def untouched():
        # Not removed and written again: the same inode, modified at the same moment, same bytes.
        now = os.stat(path)
        return (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns) and open(path, "rb").read() == png

    before = os.stat(path)
    # A second qsd in the same session (runtime directory, session bus) on a socket of its own:
    # a host of the first one's watcher, with the same item in its own tree.
    env.start_qsd(backends=["tray"], socket_path=os.path.join(env.run, "second.sock"))
    c2 = env.client()
    sub2 = c2.subscribe(["/tray"])
    own = t.file_of(wait_item(c2, sub2, "org.qsdtest.Both", lambda i: i["icon"] is not None)["icon"])
    assert t.read_png(own)[2][0][0] == RED
    assert os.path.dirname(os.path.dirname(own)) == os.path.join(env.run, "qsd")
    # The first one's file is untouched.
    assert untouched()
    c2.close()
    assert env.stop_qsd() == 0
    env.socket = first_socket
    # The second took what it wrote with it, and only that.
    assert not os.path.exists(os.path.dirname(own))
    assert untouched()
    c.sync()
    assert c.mirror(sub)["tray"]["items"][key("org.qsdtest.Both")]["icon"] == url


def test_actions_reach_the_item(tray):
    env, c, sub = tray
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Act", "props": {"Id": "act"}}])
    wait_item(c, sub, "org.qsdtest.Act")
    k = key("org.qsdtest.Act")
    assert c.call("tray.activate", {"item": k, "x": 10, "y": 20}) == {"item": k, "handled": True}
    c.call("tray.secondaryActivate", {"item": k})
    c.call("tray.contextMenu", {"item": k, "x": 5, "y": 6})
    c.call("tray.scroll", {"item": k, "delta": 3, "orientation": "horizontal"})
    c.call("tray.scroll", {"item": k, "delta": -1})
    got = [x for x in t.calls(env, "org.qsdtest.Act") if x[0] in ("Activate", "SecondaryActivate", "ContextMenu", "Scroll")]
    assert got == [["Activate", 10, 20], ["SecondaryActivate", 0, 0], ["ContextMenu", 5, 6], ["Scroll", 3, "horizontal"],
                   ["Scroll", -1, "vertical"]]
    # qsctl has the same form.
    r = env.qsctl("call", "tray.activate", f"item={k}", "x=7", "y=8")
    assert r.returncode == 0, r.stderr
    assert ["Activate", 7, 8] in t.calls(env, "org.qsdtest.Act")
    with pytest.raises(RpcError) as e:
        c.call("tray.activate", {"item": k, "x": 1 << 40})
    assert e.value.code == -32602 and e.value.data["param"] == "x"


def test_a_connection_has_at_most_64_calls_out(tray):
    # 100 000 tray.activate in a row, never read, had as many Activate calls out to the item at
    # once: each an action in an application on behalf of any local process, their answers
    # queued past every budget. At 64 waiting, qsd reads no more of that connection's requests
    # until 32 are answered.
    import json
    import socket
    env, c, sub = tray
    name = "org.qsdtest.Busy"
    t.start_items(env, [{"register": "name", "name": name, "holdActivate": True, "props": {"Id": "busy"}}])
    wait_item(c, sub, name)
    k = key(name)
    flood = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    flood.connect(env.socket)
    flood.sendall("".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tray.activate",
                                      "params": {"item": k, "x": 1, "y": i}}) + "\n" for i in range(200)).encode())

    def activations():
        return [call for call in t.calls(env, name) if call[0] == "Activate"]

    wait_until(lambda: len(activations()) >= 64, 30, what="64 activations at the item")
    # Another client's activation reaches the item after whatever qsd sent before it: the
    # flood's requests were all read at once, so without the bound they would all be ahead.
    probe = env.client()
    probe.send_raw(json.dumps({"jsonrpc": "2.0", "id": "probe", "method": "tray.activate",
                               "params": {"item": k, "x": 2, "y": 0}}) + "\n")
    wait_until(lambda: [2, 0] in [call[1:3] for call in activations()], 30, what="the other client's activation")
    calls = activations()
    before = calls[:[call[1:3] for call in calls].index([2, 0])]
    assert len(before) == 64 and [call[2] for call in before] == list(range(64))
    # Answered, the rest follow, and every request of the flood gets its answer.
    t.control(env, name).ReleaseActivate()
    answers = b""
    flood.settimeout(30)
    while answers.count(b"\n") < 200:
        chunk = flood.recv(1 << 16)
        assert chunk, "qsd closed the connection"
        answers += chunk
    got = [json.loads(line) for line in answers.splitlines()]
    assert sorted(m["id"] for m in got) == list(range(200)) and all("result" in m for m in got), got[:3]
    assert probe.read_line(30)["id"] == "probe"
    assert len(activations()) == 201
    assert "has 64 requests waiting for their answers, pausing its requests" in env.qsd_log()
    flood.close()
    probe.close()


def test_an_item_that_does_not_answer_never_blocks_the_daemon(tray):
    env, c, sub = tray
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Slow", "slow": 8, "props": {"Id": "slow"}}])
    wait_item(c, sub, "org.qsdtest.Slow")
    k = key("org.qsdtest.Slow")
    result = {}

    def activate():
        other = env.client()
        try:
            other.call("tray.activate", {"item": k}, timeout=30)
        except RpcError as e:
            result["error"] = e
        finally:
            result["done"] = True
            other.close()

    th = threading.Thread(target=activate)
    th.start()
    # While the item hangs, qsd answers everyone else.
    for _ in range(5):
        assert c.call("tree.get", {"path": "/tray/available"})["value"] is True
    assert "done" not in result
    th.join(30)
    e = result["error"]
    assert e.code == -32002
    assert k in e.message and "5 s" in e.message
    assert e.data["item"] == k and e.data["name"] == "org.freedesktop.DBus.Error.NoReply"
