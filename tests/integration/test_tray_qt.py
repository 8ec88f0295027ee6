"""A stock Qt 6 QSystemTrayIcon (PyQt6, tray_qt_item.py) under xvfb-run, with qsd as the
watcher: Qt's own StatusNotifierItem and DBusMenu. Qt answers GetLayout(submenu, -1) with an
empty property map for the submenu entry itself; the submenu keeps its label after
tray.menuAboutToShow and after a LayoutUpdated that names it (an action added to it)."""

import os
import random
import shutil
import signal

import pytest

import trayutil as t
from qsdtest import PY

XVFB = shutil.which("xvfb-run")

pytestmark = pytest.mark.skipif(XVFB is None, reason="xvfb-run is not installed (scripts/install-deps)")


def start_qt(env):
    fifo = os.path.join(env.dir, "qt-commands")
    os.mkfifo(fifo)
    e = dict(env.env)
    e.update(QT_QPA_PLATFORM="xcb", QT_ACCESSIBILITY="0")
    # Its own process group: xvfb-run passes no SIGTERM on (see test_tray_ayatana.py).
    p = env.spawn([XVFB, "-a", "-n", str(random.randint(100, 5000)), PY, os.path.join(t.HERE, "tray_qt_item.py"), fifo],
                  "qt", env=e, start_new_session=True)
    env.procs.append(("pid", -p.pid))
    return p, fifo


def qt_item(c, sub):
    for k, v in c.mirror(sub)["tray"]["items"].items():
        if v["menu"] and any(ch["label"] == "More options" for ch in v["menu"]["children"]):
            return k, v
    return None, None


def submenu(item):
    return next(ch for ch in item["menu"]["children"] if ch["submenu"] and ch["id"] != 0)


def test_qt_submenus_keep_their_labels(env):
    pytest.importorskip("PyQt6.QtWidgets")
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_value(sub, "/tray/available", True, timeout=30)
    p, fifo = start_qt(env)

    def ready():
        if p.poll() is not None:
            raise RuntimeError(f"the Qt item exited with {p.returncode}: {open(os.path.join(env.dir, 'qt.log')).read()}")
        return qt_item(c, sub)[0] is not None

    c.wait_for(ready, timeout=60, what="the Qt item with its menu")
    key, item = qt_item(c, sub)
    more = submenu(item)
    assert more["label"] == "More options"
    assert [ch["label"] for ch in more["children"]] == ["Child one"]
    # AboutToShow on the submenu, then qsd reads GetLayout(submenu, -1): Qt sends the entry
    # without properties. Its label, and its place in its parent, stay.
    r = c.call("tray.menuAboutToShow", {"item": key, "id": more["id"]}, timeout=20)
    assert r["item"] == key
    again = submenu(c.mirror(sub)["tray"]["items"][key])
    assert again["label"] == "More options" and again["submenu"] is True and again["enabled"] is True
    assert [ch["label"] for ch in again["children"]] == ["Child one"]
    # An action added to the submenu: Qt emits LayoutUpdated(revision, submenu); qsd reads the
    # submenu again and the new child shows up under the same label.
    with open(fifo, "w") as f:
        f.write("add Child two\n")
    c.wait_for(lambda: [ch["label"] for ch in submenu(c.mirror(sub)["tray"]["items"][key])["children"]] ==
               ["Child one", "Child two"], timeout=30, what="the added child")
    assert submenu(c.mirror(sub)["tray"]["items"][key])["label"] == "More options"
    os.killpg(p.pid, signal.SIGTERM)
