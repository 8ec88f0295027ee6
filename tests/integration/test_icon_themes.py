"""The daemon's one icon theme lookup, as the four backends that show icons use it: a tray item's
IconName, a notification's app_icon, a Bluetooth device's Icon and a media player's desktop
entry all resolve through the same index of the installed themes, which qsd builds and watches
once (one inotify instance, whatever the number of backends), and an icon installed while qsd
runs reaches every backend that shows it."""

import os

import mprisutil
import notifyutil
import trayutil
from bluezmock import DEVICE, Bluez
from qsdtest import pointer_get

ADDRESS = "11:22:33:44:55:66"
DEV = "hci0_11_22_33_44_55_66"
ITEM = "org.qsdtest.Shared~1StatusNotifierItem"   # its key, as a JSON Pointer token
PLAYER = "shared"


def write_png(path):
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
    os.rename(tmp, path)   # as a package manager installs a file: whole, under its name


def install_theme(env):
    """A hicolor theme of the test's own as the only installed one, and a desktop entry that
    names an icon of it; returns the theme's icon directory."""
    data = os.path.join(env.dir, "data")
    icons = os.path.join(data, "icons", "hicolor", "32x32", "apps")
    os.makedirs(icons)
    with open(os.path.join(data, "icons", "hicolor", "index.theme"), "w") as f:
        f.write("[Icon Theme]\nName=Hicolor\nDirectories=32x32/apps\n\n[32x32/apps]\nSize=32\nType=Fixed\n")
    write_png(os.path.join(icons, "qsdtest-shared.png"))
    env.env["XDG_DATA_HOME"] = os.path.join(env.dir, "home-data")
    apps = os.path.join(env.env["XDG_DATA_HOME"], "applications")
    os.makedirs(apps)
    with open(os.path.join(apps, "org.qsdtest.Shared.desktop"), "w") as f:
        f.write("[Desktop Entry]\nType=Application\nName=Shared\nIcon=qsdtest-shared\n")
    env.env["XDG_DATA_DIRS"] = data
    env.env["QSD_ICON_THEME"] = "hicolor"
    # This machine's own rfkill switches are not the test's.
    env.env["QSD_RFKILL"] = os.path.join(env.dir, "no-rfkill")
    return icons


def inotify_instances_watching(pid, directory):
    """qsd's inotify descriptors with a watch on `directory` (from /proc/<pid>/fdinfo)."""
    ino = format(os.stat(directory).st_ino, "x")
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                if any(line.startswith("inotify ") and f" ino:{ino} " in line for line in f):
                    found.append(fd)
        except FileNotFoundError:
            continue
    return found


def test_four_backends_share_one_index_and_its_changes(env):
    icons = install_theme(env)
    shared = "file://" + os.path.join(icons, "qsdtest-shared.png")
    bz = Bluez(env, ("hci0",))
    dev_path = bz.add_device(ADDRESS, "Headset")
    bz.update(dev_path, DEVICE, {"Icon": "qsdtest-shared"})
    env.start_qsd(backends=["tray", "notifications", "bluetooth", "mpris"])
    c = env.client()
    sub = c.subscribe(["/tray", "/notifications", "/bluetooth", "/media"])
    for root in ("tray", "bluetooth", "media"):
        c.wait_value(sub, f"/{root}/available", True, timeout=30)
    c.wait_value(sub, "/notifications/server", "active", timeout=30)

    def at(path):
        return pointer_get(c.mirror(sub), path, None)

    trayutil.start_items(env, [{"register": "name", "name": "org.qsdtest.Shared",
                                "props": {"Id": "shared", "IconName": "qsdtest-shared"}}])
    notifyutil.notify_send(env, "-i", "qsdtest-shared", "-t", "0", "shown")
    mprisutil.start_player(env, {"name": "org.mpris.MediaPlayer2." + PLAYER, "root": {"DesktopEntry": "org.qsdtest.Shared"}})

    # Each backend draws at its own size (tray 64, notifications 128, Bluetooth 32, players 64);
    # the theme has one size, so all four show the same file.
    c.wait_value(sub, f"/bluetooth/devices/{DEV}/iconUrl", shared, timeout=20)
    c.wait_value(sub, f"/tray/items/{ITEM}/icon", shared, timeout=20)
    c.wait_value(sub, f"/media/players/{PLAYER}/iconUrl", shared, timeout=20)
    c.wait_for(lambda: [n["appIcon"] for n in (at("/notifications/items") or {}).values()] == [shared],
               timeout=20, what="the notification's appIcon")

    # One index, one set of watches: each backend used to keep its own (four inotify instances).
    watching = inotify_instances_watching(env.daemon.pid, icons)
    assert len(watching) == 1, f"inotify instances watching the theme: {watching}"

    # Names the theme does not have yet, then installed while qsd runs: the backends that keep
    # showing an icon (the tray item, the device) both hear of the change from the one watch.
    bz.update(dev_path, DEVICE, {"Icon": "qsdtest-late"})
    trayutil.set_prop(env, "org.qsdtest.Shared", "IconName", "qsdtest-late", "NewIcon")
    c.wait_value(sub, f"/bluetooth/devices/{DEV}/icon", "qsdtest-late", timeout=20)
    c.wait_value(sub, f"/tray/items/{ITEM}/iconName", "qsdtest-late", timeout=20)
    assert at(f"/bluetooth/devices/{DEV}/iconUrl") is None and at(f"/tray/items/{ITEM}/icon") is None
    write_png(os.path.join(icons, "qsdtest-late.png"))
    late = "file://" + os.path.join(icons, "qsdtest-late.png")
    c.wait_value(sub, f"/bluetooth/devices/{DEV}/iconUrl", late, timeout=20)
    c.wait_value(sub, f"/tray/items/{ITEM}/icon", late, timeout=20)
    assert len(inotify_instances_watching(env.daemon.pid, icons)) == 1
