#!/usr/bin/python3
"""The tray items of the QML tests and the example bar's picture: the integration tests' items
(tests/integration/tray_item.py: real StatusNotifierItems with a DBusMenu that records every
call), with drawn icons (icons.py) instead of solid squares. A pixmap may be given as
{"shape": "chat", "size": 64}; the menu's icon-data is the notes icon. Same arguments and
"ready" line as tray_item.py."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.environ.get("QSD_INTEGRATION_DIR", os.path.join(HERE, "..", "..", "..", "tests", "integration")))

import dbus  # noqa: E402

import icons  # noqa: E402
import tray_item  # noqa: E402

_solid_pixmaps = tray_item.pixmaps


def pixmaps(spec):
    if spec and isinstance(spec, list) and isinstance(spec[0], dict):
        return dbus.Array([dbus.Struct((dbus.Int32(p["size"]), dbus.Int32(p["size"]),
                                        dbus.ByteArray(icons.argb(p["shape"], p["size"]))), signature="iiay")
                           for p in spec], signature="(iiay)")
    return _solid_pixmaps(spec)


tray_item.pixmaps = pixmaps
tray_item.png_bytes = lambda w, h, rgba: icons.png("notes", 32)

if __name__ == "__main__":
    tray_item.main()
