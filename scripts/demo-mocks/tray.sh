#!/usr/bin/env bash
# A stand-in tray icon for scripts/demo: the test suite's StatusNotifierItem
# (tests/integration/tray_item.py) on the demo's private session bus, with a 32 px pixmap icon, a
# tooltip and a menu (a submenu, a checkbox, a radio group). qsd is started after it: the item
# registers as soon as qsd owns the watcher name, as real apps do. Prints its PID and returns.
set -euo pipefail
: "${DBUS_SESSION_BUS_ADDRESS:?run from scripts/demo (needs the private session bus)}"
cd "$(dirname "$0")/../.."

/usr/bin/python3 tests/integration/tray_item.py '[{"register": "name", "name": "org.qsd.DemoItem", "reregister": true,
  "menu": "demo", "props": {"Id": "qsd-demo", "Title": "qsd demo item", "Status": "Active",
  "Category": "ApplicationStatus", "IconPixmap": [[32, 32, [52, 101, 164, 255]]],
  "ToolTip": {"title": "qsd demo", "description": "Click me: <b>qsctl call tray.activate item=org.qsd.DemoItem/StatusNotifierItem</b>"}}}]' \
  >/dev/null 2>&1 &
echo $!
