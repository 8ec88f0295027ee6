"""DBusMenu layouts in /tray/items/<key>/menu: fetched before anyone opens them, clicks that
reach the item (a checkbox and a radio group the item records and updates), a submenu filled on
AboutToShow that is in the tree before tray.menuAboutToShow answers, and LayoutUpdated. Real
items (tray_item.py) on a private session bus."""

import os

import pytest

import trayutil as t
from qsdtest import RpcError

NAME = "org.qsdtest.Menu"
KEY = NAME + "/StatusNotifierItem"


@pytest.fixture
def menu(env):
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_value(sub, "/tray/available", True, timeout=30)
    theme = os.path.join(env.dir, "apptheme")
    t.write_png(os.path.join(theme, "hicolor", "32x32", "actions", "qsd-test-menu-icon.png"), 32, 32, (9, 9, 9, 255))
    t.start_items(env, [{"register": "name", "name": NAME, "menu": "demo",
                         "props": {"Id": "menu", "Status": "Active", "IconThemePath": theme}}])
    c.wait_for(lambda: KEY in c.mirror(sub)["tray"]["items"], timeout=30, what="item with menu")
    return env, c, sub


def root(c, sub):
    return c.mirror(sub)["tray"]["items"][KEY]["menu"]


def entry(node, eid):
    if node["id"] == eid:
        return node
    for ch in node["children"]:
        found = entry(ch, eid)
        if found:
            return found
    return None


def test_the_menu_is_in_the_tree_when_the_item_appears(menu):
    env, c, sub = menu
    it = c.mirror(sub)["tray"]["items"][KEY]
    # The item appeared with its menu, complete, in one add.
    adds = [ch for n in c.notifications if n["method"] == "tree.changed" for ch in n["params"]["changes"]
            if ch["path"] == "/tray/items/" + KEY.replace("/", "~1")]
    assert len(adds) == 1 and adds[0]["op"] == "add" and adds[0]["value"]["menu"] is not None
    assert it["hasMenu"] is True
    m = it["menu"]
    assert m["id"] == 0 and m["submenu"] is True
    assert [ch["id"] for ch in m["children"]] == [1, 2, 3, 7, 8]
    # The item also sent a child that is not (ia{sv}av): skipped, and said so.
    assert "1 menu entries were not (ia{sv}av)" in env.qsd_log()
    opened = entry(m, 1)
    assert opened["label"] == "Open" and opened["mnemonic"] == "o" and opened["type"] == "standard"
    # icon-data (PNG bytes) is written as a file; icon-name is looked up in the item's theme path.
    w, h, rows = t.read_png(t.file_of(opened["icon"]))
    assert (w, h) == (16, 16) and rows[0][0] == (0, 200, 0, 255)
    assert entry(m, 7)["iconName"] == "qsd-test-menu-icon"
    assert t.file_of(entry(m, 7)["icon"]).endswith("/hicolor/32x32/actions/qsd-test-menu-icon.png")
    assert entry(m, 7)["enabled"] is False
    assert entry(m, 2)["type"] == "separator"
    assert entry(m, 8)["shortcut"] == "Control+q"
    options = entry(m, 3)
    assert options["submenu"] is True and options["label"] == "Options"
    assert [(ch["label"], ch["toggleType"], ch["toggleState"]) for ch in options["children"]] == [
        ("Sync", "checkmark", 1), ("Mode A", "radio", 1), ("Mode B", "radio", 0)]
    # Every entry carries the schema's fields.
    schema = c.call("rpc.discover")["components"]["schemas"]["TrayMenuEntry"]
    assert set(opened) == set(schema["required"])
    # The root was asked with AboutToShow(0) before the layout was read.
    assert ["AboutToShow", 0] in t.calls(env, NAME)
    # The whole tray domain matches the schema rpc.discover serves.
    import jsonschema
    doc = c.call("rpc.discover")
    tray = c.call("tree.get", {"path": "/tray"})["value"]
    v = jsonschema.Draft7Validator({"$ref": "#/components/schemas/Tray"}, resolver=jsonschema.RefResolver("", doc))
    errors = [e.message for e in v.iter_errors(tray)]
    assert not errors, errors


def test_clicks_reach_the_item_and_its_updates_reach_the_tree(menu):
    env, c, sub = menu
    assert c.call("tray.menuEvent", {"item": KEY, "id": 4, "event": "clicked"}) == {"item": KEY, "id": 4}
    c.wait_for(lambda: entry(root(c, sub), 4)["toggleState"] == 0, timeout=30, what="checkbox off")
    c.call("tray.menuEvent", {"item": KEY, "id": 6, "event": "clicked"})
    c.wait_for(lambda: entry(root(c, sub), 6)["toggleState"] == 1, timeout=30, what="radio B on")
    assert entry(root(c, sub), 5)["toggleState"] == 0
    c.call("tray.menuEvent", {"item": KEY, "id": 3, "event": "opened"})
    c.call("tray.menuEvent", {"item": KEY, "id": 3, "event": "hovered"})
    c.call("tray.menuEvent", {"item": KEY, "id": 3, "event": "closed"})
    events = [x for x in t.calls(env, NAME) if x[0] == "Event"]
    assert events == [["Event", 4, "clicked"], ["Event", 6, "clicked"], ["Event", 3, "opened"], ["Event", 3, "hovered"],
                      ["Event", 3, "closed"]]
    with pytest.raises(RpcError) as e:
        c.call("tray.menuEvent", {"item": KEY, "id": 99, "event": "clicked"})
    assert e.value.code == -32001 and e.value.data["param"] == "id"
    with pytest.raises(RpcError) as e:
        c.call("tray.menuEvent", {"item": KEY, "id": 4, "event": "pressed"})
    assert e.value.code == -32602 and e.value.data["param"] == "event"



def test_a_malformed_properties_update_changes_nothing(menu):
    """An ItemsPropertiesUpdated whose second argument is missing is rejected whole: its first
    part had changed the entry in qsd's menu before, unpublished, and the next valid update of
    another entry published it."""
    env, c, sub = menu
    ctl = t.control(env, NAME)
    # One connection's signals reach qsd in the order it sent them: the malformed one first.
    ctl.HalfUpdate(1, "Rejected")
    ctl.Relabel(8, "Quit now")
    c.wait_for(lambda: entry(root(c, sub), 8)["label"] == "Quit now", timeout=30, what="the valid update")
    assert "malformed menu signal" in env.qsd_log()
    assert entry(root(c, sub), 1)["label"] == "Open"

def test_about_to_show_answers_after_the_refreshed_submenu_is_in_the_tree(menu):
    env, c, sub = menu
    assert [ch["label"] for ch in entry(root(c, sub), 3)["children"]] == ["Sync", "Mode A", "Mode B"]
    r = c.call("tray.menuAboutToShow", {"item": KEY, "id": 3})
    assert r == {"item": KEY, "id": 3, "needUpdate": True}
    # No waiting: the client's mirror has it when the answer arrives (the item sent no
    # LayoutUpdated; qsd read the submenu itself).
    assert [ch["label"] for ch in entry(root(c, sub), 3)["children"]] == ["Sync", "Mode A", "Mode B", "Recent"]
    assert ["AboutToShow", 3] in t.calls(env, NAME)


def test_layout_updated_changes_the_menu_in_the_tree(menu):
    env, c, sub = menu
    t.control(env, NAME).AddMenuEntry("Added later")
    c.wait_for(lambda: root(c, sub)["children"][-1]["label"] == "Added later", timeout=30, what="new entry")
    assert [ch["id"] for ch in root(c, sub)["children"]][:5] == [1, 2, 3, 7, 8]


def test_a_layout_read_again_that_answers_too_late_is_asked_again(menu):
    # The app is busy when it sends LayoutUpdated: the read misses qsd's 5 s. The menu shown stays
    # and is read again a second later. Before, the old entries stayed until the next LayoutUpdated.
    env, c, sub = menu
    ctl = t.control(env, NAME)
    ctl.SlowLayouts(1)
    ctl.AddMenuEntry("Added later")
    c.wait_for(lambda: root(c, sub)["children"][-1]["label"] == "Added later", timeout=30, what="the entry read again")
    assert "reading submenu 0 again did not answer (org.freedesktop.DBus.Error.NoReply); asking again in 1 s" in env.qsd_log()


def test_a_new_menu_path_is_read_again(menu):
    env, c, sub = menu
    # A path with no menu behind it: the menu cannot be read and is null (hasMenu stays true).
    t.set_prop(env, NAME, "Menu", "/Nothing/Here", "NewMenu")
    c.wait_for(lambda: c.mirror(sub)["tray"]["items"][KEY]["menu"] is None, timeout=30, what="menu gone")
    assert c.mirror(sub)["tray"]["items"][KEY]["hasMenu"] is True
    t.set_prop(env, NAME, "Menu", "/StatusNotifierItem/Menu", "NewMenu")
    c.wait_for(lambda: root(c, sub) is not None and [ch["id"] for ch in root(c, sub)["children"]] == [1, 2, 3, 7, 8],
               timeout=30, what="menu back")


def test_a_menu_deeper_than_the_limit_is_cut(env):
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Deep", "menu": "deep", "props": {"Id": "deep"}}])
    k = "org.qsdtest.Deep/StatusNotifierItem"
    c.wait_for(lambda: k in c.mirror(sub)["tray"]["items"], timeout=30, what="deep item")
    node, depth = c.mirror(sub)["tray"]["items"][k]["menu"], 0
    while node["children"]:
        node, depth = node["children"][0], depth + 1
    assert depth == 16 and node["label"] == "Level 16"
    assert "1 menu entries were not (ia{sv}av) or over the limits" in env.qsd_log()


def test_an_item_without_dbusmenu_uses_context_menu(env):
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_value(sub, "/tray/available", True, timeout=30)
    # Wine's items (Quickshell #1096): "/NO_DBUSMENU", and ContextMenu is the way to a menu.
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Wine", "props": {"Id": "wine", "Menu": "/NO_DBUSMENU"}}])
    k = "org.qsdtest.Wine/StatusNotifierItem"
    c.wait_for(lambda: k in c.mirror(sub)["tray"]["items"], timeout=30, what="wine item")
    it = c.mirror(sub)["tray"]["items"][k]
    assert it["hasMenu"] is False and it["menu"] is None
    c.call("tray.contextMenu", {"item": k, "x": 3, "y": 4})
    assert ["ContextMenu", 3, 4] in t.calls(env, "org.qsdtest.Wine")
    with pytest.raises(RpcError) as e:
        c.call("tray.menuEvent", {"item": k, "id": 0, "event": "clicked"})
    assert e.value.code == -32001 and e.value.data["param"] == "item"


def late_menu(env):
    """qsd with the tray, and an item whose menu answers its first GetLayout after 6 s, past the
    5 s qsd waits (an app busy at login, a layout of megabytes). Returns (c, sub) once the item
    appeared, which is once that read timed out: with its menu null and hasMenu true."""
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_value(sub, "/tray/available", True, timeout=30)
    t.start_items(env, [{"register": "name", "name": NAME, "menu": 3, "slowLayouts": 1, "props": {"Id": "late"}}])
    c.wait_for(lambda: KEY in c.mirror(sub)["tray"]["items"], timeout=30, what="the item")
    adds = [ch for n in c.notifications if n["method"] == "tree.changed" for ch in n["params"]["changes"]
            if ch["path"] == "/tray/items/" + KEY.replace("/", "~1")]
    assert adds[0]["value"]["hasMenu"] is True and adds[0]["value"]["menu"] is None
    assert "reading its menu /StatusNotifierItem/Menu failed: org.freedesktop.DBus.Error.NoReply" in env.qsd_log()
    return c, sub


def test_a_menu_that_answered_too_late_is_read_again(env):
    # Before, it stayed null until the app's next LayoutUpdated, which an unchanged menu never sends.
    c, sub = late_menu(env)
    assert "asking for its menu again in 1 s" in env.qsd_log()
    c.wait_for(lambda: root(c, sub) is not None, timeout=30, what="the menu read again")
    assert [ch["label"] for ch in root(c, sub)["children"]] == ["Entry 1", "Entry 2", "Entry 3"]
    # The read that timed out, and the one asked again a second later (or more, should that one
    # miss the 5 s too on a loaded machine).
    reads = [x for x in t.calls(env, NAME) if x[0] == "GetLayout"]
    assert len(reads) >= 2 and all(x == ["GetLayout", 0] for x in reads)


def test_opening_a_menu_not_read_yet_reads_it(env):
    # Before, tray.menuAboutToShow answered -32001 "has no menu" for it.
    c, sub = late_menu(env)
    got = c.call("tray.menuAboutToShow", {"item": KEY, "id": 0}, timeout=20)
    assert got["item"] == KEY and got["id"] == 0
    # In the tree before the answer.
    assert [ch["label"] for ch in root(c, sub)["children"]] == ["Entry 1", "Entry 2", "Entry 3"]
