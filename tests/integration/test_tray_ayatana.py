"""A real libayatana-appindicator item (python3-gi, GTK 3 menu through libdbusmenu) under
xvfb-run, with qsd as the watcher: it registers by object path, shows up complete with its GTK
menu, its theme icon is found in the icon theme path it announces, and a click sent through
tray.menuEvent reaches the app's GTK handler. Also the same app against another watcher that
exits: ayatana registers again with qsd, and the item stays listed throughout."""

import os
import random
import shutil
import signal

import pytest

import trayutil as t
from qsdtest import PY, wait_until

XVFB = shutil.which("xvfb-run")


def start_ayatana(env):
    theme = os.path.join(env.dir, "ayatana-theme")
    icon = os.path.join(theme, "hicolor", "64x64", "apps", "qsd-ayatana-icon.png")
    t.write_png(icon, 64, 64, (200, 100, 0, 255))
    record = os.path.join(env.dir, "ayatana-activated")
    e = dict(env.env)
    e.update(NO_AT_BRIDGE="1", GDK_BACKEND="x11")
    # Its own process group: xvfb-run does not pass a SIGTERM on to the app or to Xvfb, so the
    # group is signalled (here and, through the negative pid, by Env.close()).
    # -a looks for a free display from -n on; a random start keeps tests that run at the same
    # time from racing for the same number.
    p = env.spawn([XVFB, "-a", "-n", str(random.randint(100, 5000)), PY, os.path.join(t.HERE, "tray_ayatana_item.py"),
                   record, theme], "ayatana", env=e, start_new_session=True)
    env.procs.append(("pid", -p.pid))
    return p, icon, record


def stop_group(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    p.wait(15)


def alive(p):
    if p.poll() is not None:
        raise RuntimeError(f"the ayatana item exited with {p.returncode}")
    return True


def ayatana_items(c, sub):
    return {k: v for k, v in c.mirror(sub)["tray"]["items"].items() if v["id"] == "qsd-ayatana-test"}


def label_id(node, label):
    for ch in node["children"]:
        if ch["label"] == label:
            return ch["id"]
    return None


@pytest.mark.skipif(XVFB is None, reason="xvfb-run is not installed")
def test_a_libayatana_appindicator_item(env):
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_value(sub, "/tray/available", True, timeout=30)
    p, icon, record = start_ayatana(env)
    c.wait_for(lambda: alive(p) and len(ayatana_items(c, sub)) == 1, timeout=60, what="the ayatana item")
    (k, it), = ayatana_items(c, sub).items()
    # Registered by object path: the key is its unique name and that path.
    assert k.startswith(":") and "/org/ayatana/NotificationItem/" in k
    assert it["title"] == "Ayatana Test" and it["status"] == "active" and it["category"] == "applicationStatus"
    assert t.file_of(it["icon"]) == icon
    assert it["hasMenu"] is True
    c.wait_for(lambda: ayatana_items(c, sub)[k]["menu"] and
               label_id(ayatana_items(c, sub)[k]["menu"], "First entry") is not None, timeout=30, what="GTK menu")
    m = ayatana_items(c, sub)[k]["menu"]
    labels = [ch["label"] for ch in m["children"] if ch["visible"]]
    assert labels[:3] == ["First entry", "Second entry", "Check me"]
    check = next(ch for ch in m["children"] if ch["label"] == "Check me")
    assert check["toggleType"] == "checkmark" and check["toggleState"] == 0
    # libayatana-appindicator's items have no Activate: a primary click answers handled false
    # (Quickshell ignores the error), and the bar opens the menu instead.
    assert c.call("tray.activate", {"item": k, "x": 3, "y": 4}) == {"item": k, "handled": False}
    assert c.call("tray.secondaryActivate", {"item": k}) == {"item": k, "handled": True}
    # A click through qsd reaches the app's GTK "activate" handler.
    c.call("tray.menuEvent", {"item": k, "id": label_id(m, "Second entry"), "event": "clicked"})
    wait_until(lambda: os.path.exists(record) and "activated Second entry" in open(record).read(), 30,
               what="the app saw the click")
    c.call("tray.menuEvent", {"item": k, "id": check["id"], "event": "clicked"})
    c.wait_for(lambda: next(ch for ch in ayatana_items(c, sub)[k]["menu"]["children"]
                            if ch["label"] == "Check me")["toggleState"] == 1, timeout=30, what="checked")
    stop_group(p)
    c.wait_for(lambda: ayatana_items(c, sub) == {}, timeout=30, what="item gone with the app")


@pytest.mark.skipif(XVFB is None, reason="xvfb-run is not installed")
def test_ayatana_item_across_a_watcher_takeover(env):
    w = t.start_watcher(env)
    p, icon, record = start_ayatana(env)
    wait_until(lambda: alive(p) and any("ayatana" in s for s in t.registered(env)), 60, what="registered with the other watcher")
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_for(lambda: len(ayatana_items(c, sub)) == 1, timeout=30, what="hosted ayatana item")
    assert c.mirror(sub)["tray"]["isWatcher"] is False
    (k, _), = ayatana_items(c, sub).items()
    mark = len(c.notifications)
    w.terminate()
    w.wait(10)
    c.wait_value(sub, "/tray/isWatcher", True, timeout=30)
    # ayatana registers again with the new watcher: same key, no second item, no blink.
    wait_until(lambda: k in t.registered(env), 30, what="listed by qsd")
    # A round trip through qsd to the app: what its registration made qsd ask it is answered by
    # now (the app answers in order), and the tree changes that caused are in the mirror.
    c.call("tray.menuAboutToShow", {"item": k, "id": 0})
    assert list(ayatana_items(c, sub)) == [k]
    removes = [ch for n in c.notifications[mark:] if n["method"] == "tree.changed" for ch in n["params"]["changes"]
               if ch["op"] == "remove" and ch["path"].startswith("/tray/items")]
    assert removes == []
    assert p.poll() is None
