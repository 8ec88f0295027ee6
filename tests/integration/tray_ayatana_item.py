#!/usr/bin/python3
"""A real libayatana-appindicator item (GTK 3 menu) for the tray tests. argv[1] is a file the app
appends a line to when a menu entry is activated ("activated <label>"), argv[2] the icon theme
path it announces. Run under a display (xvfb-run): GTK needs one."""

import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("AyatanaAppIndicator3", "0.1")
from gi.repository import AyatanaAppIndicator3 as AI  # noqa: E402
from gi.repository import GLib, Gtk  # noqa: E402

record, theme = sys.argv[1], sys.argv[2]


def activated(item):
    with open(record, "a") as f:
        f.write(f"activated {item.get_label()}\n")


ind = AI.Indicator.new("qsd-ayatana-test", "qsd-ayatana-icon", AI.IndicatorCategory.APPLICATION_STATUS)
ind.set_icon_theme_path(theme)
ind.set_status(AI.IndicatorStatus.ACTIVE)
ind.set_title("Ayatana Test")
menu = Gtk.Menu()
for label in ("First entry", "Second entry"):
    mi = Gtk.MenuItem(label=label)
    mi.connect("activate", activated)
    mi.show()
    menu.append(mi)
check = Gtk.CheckMenuItem(label="Check me")
check.connect("activate", activated)
check.show()
menu.append(check)
ind.set_menu(menu)
GLib.timeout_add(100, lambda: print("ready", flush=True) and False)
Gtk.main()
