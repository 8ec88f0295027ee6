#!/usr/bin/python3
"""A stock Qt 6 QSystemTrayIcon (PyQt6) for the tray tests: Qt's own StatusNotifierItem and
DBusMenu (QDBusTrayIcon, QDBusMenuAdaptor), with a menu holding a submenu. argv[1] is a FIFO the
test writes commands to, one a line: "add LABEL" adds an action to the submenu (Qt then emits
LayoutUpdated for the submenu). Run under a display (xvfb-run): Qt's xcb platform needs one."""

import os
import sys

from PyQt6.QtCore import QSocketNotifier
from PyQt6.QtGui import QAction, QIcon, QImage, QPixmap, QColor
from PyQt6.QtWidgets import QApplication, QMenu, QSystemTrayIcon

app = QApplication(sys.argv[:1])
app.setApplicationName("qsd-qt-test")
app.setQuitOnLastWindowClosed(False)

image = QImage(22, 22, QImage.Format.Format_ARGB32)
image.fill(QColor(0, 120, 200))
tray = QSystemTrayIcon(QIcon(QPixmap.fromImage(image)))
tray.setToolTip("Qt Test")

menu = QMenu()
menu.addAction(QAction("Top action", menu))
sub = QMenu("More options", menu)
sub.addAction(QAction("Child one", sub))
menu.addMenu(sub)
menu.addSeparator()
menu.addAction(QAction("Quit", menu))
tray.setContextMenu(menu)
tray.show()

# O_RDWR: the FIFO always has a writer (this process), so it never reads end-of-file.
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
pending = b""


def command():
    global pending
    try:
        pending += os.read(fd, 4096)
    except BlockingIOError:
        return
    while b"\n" in pending:
        line, pending = pending.split(b"\n", 1)
        verb, _, arg = line.decode().partition(" ")
        if verb == "add":
            sub.addAction(QAction(arg, sub))


notifier = QSocketNotifier(fd, QSocketNotifier.Type.Read)
notifier.activated.connect(command)
print("ready", flush=True)
app.exec()
