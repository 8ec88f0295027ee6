"""Tray items that are broken or hostile (tray_item.py playing them, on a private session bus):
nothing they send may hang qsd, stall it for long, or grow its memory without bound. Each test
is one way an item once did; the state each waits for arrives at once with the limits in place
(docs/architecture.md, "Hostile peers"), and only after minutes, or never, without them.

Also what a desktop shows for icons: the platform's default theme, a raster before an SVG, and
an icon installed while qsd runs."""

import os
import signal

import trayutil as t

HICOLOR_INDEX = """[Icon Theme]
Name=Hicolor
Directories=48x48/apps

[48x48/apps]
Size=48
Type=Fixed
"""


def start(env, **kw):
    env.start_qsd(backends=["tray"], **kw)
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_value(sub, "/tray/available", True, timeout=30)
    return c, sub


def key_of(name):
    return name + "/StatusNotifierItem"


def wait_item(c, sub, key, timeout=30, predicate=lambda it: True):
    c.wait_for(lambda: key in c.mirror(sub)["tray"]["items"] and predicate(c.mirror(sub)["tray"]["items"][key]),
               timeout=timeout, what=key)
    return c.mirror(sub)["tray"]["items"][key]


def responsive(env):
    """Another client's tree.get is answered (the daemon's loop is not stuck)."""
    other = env.client()
    try:
        assert other.call("tree.get", {"path": "/tray/available"}, timeout=10)["value"] is True
    finally:
        other.close()


def rss_judged(env):
    """RSS is judged in the optimised build only (scripts/soak does the same)."""
    return not env.sanitized()


def private_tree(root, dirs):
    """A bare theme tree of `dirs` directories (no index.theme), as apps ship."""
    sizes = [16, 20, 22, 24, 28, 32, 36, 40, 42, 44, 48, 56, 60, 64, 72, 80, 96, 100, 112, 128, 150, 160, 192, 256, 384, 512]
    cats = ["actions", "animations", "apps", "categories", "devices", "emblems", "emotes", "filesystems", "intl",
            "mimetypes", "places", "status", "stock", "panel", "legacy", "symbolic", "extra", "misc", "ui", "ui2"]
    made = 0
    for s in sizes:
        for c in cats:
            if made == dirs:
                return
            os.makedirs(os.path.join(root, "hicolor", f"{s}x{s}", c), exist_ok=True)
            made += 1


# ---------------------------------------------------------------------------------------------
# stalls and hangs


def test_a_fifo_for_index_theme_does_not_hang_qsd(env):
    # An IconThemePath whose hicolor/index.theme is a FIFO, and a name that is not found: qsd
    # once waited in open() for a writer, for ever (even SIGTERM went unanswered).
    theme = os.path.join(env.dir, "fifo-theme")
    os.makedirs(os.path.join(theme, "hicolor"))
    os.mkfifo(os.path.join(theme, "hicolor", "index.theme"))
    os.mkfifo(os.path.join(theme, "qsd-fifo.png"))
    c, sub = start(env)
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Fifo",
                         "props": {"Id": "fifo", "IconThemePath": theme, "IconName": "qsd-not-there"}}])
    it = wait_item(c, sub, key_of("org.qsdtest.Fifo"))
    assert it["icon"] is None
    responsive(env)
    assert env.stop_qsd() == 0


def test_menu_icons_are_looked_up_in_an_index_not_per_entry(env):
    # 1000 menu entries whose icon-names are not found, with an IconThemePath of 520
    # directories: each lookup once walked the whole tree (about 30 ms an entry).
    theme = os.path.join(env.dir, "big-theme")
    private_tree(theme, 520)
    t.write_png(os.path.join(theme, "hicolor", "48x48", "apps", "qsd-big-found.png"), 48, 48, (1, 2, 3, 255))
    c, sub = start(env)
    name = "org.qsdtest.BigMenu"
    t.start_items(env, [{"register": "name", "name": name, "menu": "icons:1000",
                         "props": {"Id": "big", "IconThemePath": theme, "IconName": "qsd-big-found"}}])
    it = wait_item(c, sub, key_of(name))
    assert t.file_of(it["icon"]).endswith("/hicolor/48x48/apps/qsd-big-found.png")
    assert len(it["menu"]["children"]) == 1000 and it["menu"]["children"][0]["icon"] is None
    # Every change of the menu rebuilds it; names already resolved are not looked up again.
    t.control(env, name).Flood(0, 5)
    c.wait_for(lambda: c.mirror(sub)["tray"]["items"][key_of(name)]["menu"]["children"][0]["label"] == "Flood 5",
               timeout=30, what="the last update")
    # An icon that appears in the item's tree is found at the next rebuild.
    t.write_png(os.path.join(theme, "hicolor", "48x48", "apps", "qsd-missing-2.png"), 48, 48, (4, 5, 6, 255))
    t.control(env, name).Flood(0, 1)
    c.wait_for(lambda: c.mirror(sub)["tray"]["items"][key_of(name)]["menu"]["children"][1]["icon"] is not None,
               timeout=30, what="the new menu icon")
    responsive(env)


def test_icon_names_longer_than_a_file_name_are_refused(env):
    # Distinct 1 MiB icon names, one NewIcon each: every lookup once built thousands of
    # candidate paths that long (a path per directory of every theme, and of the item's tree).
    theme = os.path.join(env.dir, "tree")
    private_tree(theme, 520)
    c, sub = start(env)
    name = "org.qsdtest.LongNames"
    t.start_items(env, [{"register": "name", "name": name,
                         "props": {"Id": "long", "IconName": "qsd-short", "IconThemePath": theme}}])
    wait_item(c, sub, key_of(name))
    t.control(env, name).LongNames(120, 1 << 20)
    # The item sends each name as soon as qsd asks for the last one, so the 120 MiB go through
    # as one burst, published once at its end: under the sanitizer build on a loaded 2-core
    # machine (scripts/flaky) that once took longer than 30 s.
    it = wait_item(c, sub, key_of(name), timeout=120, predicate=lambda it: it["title"] == "long names done")
    # Shown up to a path's length, not sent whole to every subscriber.
    assert it["icon"] is None and it["iconName"] == "119-" + "n" * (4096 - 4)
    assert env.qsd_log().count("is longer than a file name; it is not looked up") == 1
    responsive(env)


def test_menu_updates_naming_unknown_entries_cost_a_probe_each(env):
    # ItemsPropertiesUpdated naming 100 000 entries a 4095-entry menu does not have: each id was
    # once searched for through the whole menu.
    c, sub = start(env)
    name = "org.qsdtest.Flood"
    t.start_items(env, [{"register": "name", "name": name, "menu": 4095, "props": {"Id": "flood"}}])
    wait_item(c, sub, key_of(name), timeout=60)
    t.control(env, name).Flood(100000, 20, timeout=300)
    c.wait_for(lambda: c.mirror(sub)["tray"]["items"][key_of(name)]["menu"]["children"][0]["label"] == "Flood 20",
               timeout=30, what="the last update")
    responsive(env)


def test_a_burst_of_layout_updates_costs_a_read_at_a_time(env):
    # 500 LayoutUpdated in a row, each about a changed 4095-entry menu: every loop pass that saw
    # one sent a GetLayout (67 of them), each reply a whole layout to read, while the item had
    # not answered the first. A read is now out at most once per menu; what comes meanwhile is
    # read after its answer, in one go.
    c, sub = start(env)
    name = "org.qsdtest.Relayouts"
    t.start_items(env, [{"register": "name", "name": name, "menu": 4095, "props": {"Id": "relayouts"}}])
    wait_item(c, sub, key_of(name), timeout=60)
    reads = sum(1 for call in t.calls(env, name) if call[0] == "GetLayout")
    t.control(env, name).Relayouts(500, timeout=300)
    c.wait_for(lambda: c.mirror(sub)["tray"]["items"][key_of(name)]["menu"]["children"][0]["label"] == "Relayout 500",
               timeout=60, what="the last layout")
    # The item sends all 500 before it answers anything: the read out then, and one after it.
    assert sum(1 for call in t.calls(env, name) if call[0] == "GetLayout") - reads <= 2
    responsive(env)


def test_distinct_icon_names_leave_no_memory_behind(env):
    # Every name looked up was cached for good, found or not: distinct names (an app that makes
    # a new one per change, or a hostile one) grew qsd from 7 to 34 MiB in a minute. 20 layouts
    # of 2000 entries, each entry's icon-name new every time.
    from qsdtest import wait_until
    c, sub = start(env)
    name = "org.qsdtest.Names"
    t.start_items(env, [{"register": "name", "name": name, "menu": 1, "props": {"Id": "names"}}])
    wait_item(c, sub, key_of(name))

    def round_shown(n):
        children = c.mirror(sub)["tray"]["items"][key_of(name)]["menu"]["children"]
        return len(children) == 2000 and children[0]["iconName"].startswith(f"r{n}-1-")

    # The measure starts with one such menu shown: what stays is the current menu, and the
    # installed themes' file lists the first lookups read (several MiB where many themes are
    # installed), neither of which more names add to.
    t.control(env, name).Relayout(2000, 1, 200)
    c.wait_for(lambda: round_shown(1), timeout=60, what="the first layout")
    rss = env.rss_kib()
    t.control(env, name).Relayout(2000, 20, 200)
    c.wait_for(lambda: round_shown(20), timeout=60, what="the last layout")
    # 38 000 names more (7.6 MB of them alone) and nothing kept; the heap is trimmed a second
    # after a large layout.
    if rss_judged(env):
        wait_until(lambda: env.rss_kib() - rss < 3 * 1024, 30, what="qsd's RSS within 3 MiB of where it was")
    responsive(env)


def test_a_huge_icon_with_an_overlay_is_not_decoded_on_every_new_icon(env):
    # A 4096 px theme PNG and an overlay: once decoded, composed and encoded again on every
    # NewIcon (1.4 s each). Files beyond the pixmap limit are left to the client, with the overlay
    # beside them; smaller ones are composed once per (file, overlay).
    theme = os.path.join(env.dir, "huge-theme")
    huge = os.path.join(theme, "hicolor", "64x64", "apps", "qsd-huge.png")
    t.write_png(huge, 4096, 4096, (0, 0, 255, 255))
    small = os.path.join(theme, "hicolor", "64x64", "apps", "qsd-small.png")
    t.write_png(small, 64, 64, (0, 0, 255, 255))
    overlay = [t.pixmap(16, 16, (255, 0, 0, 255), quadrant=True)]
    c, sub = start(env)
    huge_name, small_name = "org.qsdtest.Huge", "org.qsdtest.Small"
    t.start_items(env, [{"register": "name", "name": huge_name,
                         "props": {"Id": "huge", "IconThemePath": theme, "IconName": "qsd-huge", "OverlayIconPixmap": overlay}}])
    t.start_items(env, [{"register": "name", "name": small_name,
                         "props": {"Id": "small", "IconThemePath": theme, "IconName": "qsd-small", "OverlayIconPixmap": overlay}}])
    it = wait_item(c, sub, key_of(huge_name))
    assert t.file_of(it["icon"]) == huge and it["overlayIcon"] is not None
    composed = wait_item(c, sub, key_of(small_name))["icon"]
    w, h, rows = t.read_png(t.file_of(composed))
    assert (w, h) == (64, 64) and rows[0][0] == (255, 0, 0, 255) and rows[63][63] == (0, 0, 255, 255)
    t.control(env, huge_name).NewIcons(30)
    t.control(env, small_name).NewIcons(30)
    wait_item(c, sub, key_of(huge_name), predicate=lambda it: it["title"] == "new icons done")
    assert wait_item(c, sub, key_of(small_name), predicate=lambda it: it["title"] == "new icons done")["icon"] == composed
    responsive(env)


# ---------------------------------------------------------------------------------------------
# what a desktop would show


def private_data_dirs(env):
    """$XDG_DATA_DIRS of its own, with a hicolor index, so only the test's themes are installed."""
    share = os.path.join(env.dir, "share")
    os.makedirs(os.path.join(share, "icons", "hicolor", "48x48", "apps"))
    with open(os.path.join(share, "icons", "hicolor", "index.theme"), "w") as f:
        f.write(HICOLOR_INDEX)
    env.env["XDG_DATA_DIRS"] = share
    return share


def test_without_a_configured_theme_the_platform_default_is_searched(env):
    # pasystray's audio-volume-high was null with Adwaita installed and no theme configured.
    share = private_data_dirs(env)
    adwaita = os.path.join(share, "icons", "Adwaita")
    os.makedirs(adwaita)
    with open(os.path.join(adwaita, "index.theme"), "w") as f:
        f.write("[Icon Theme]\nName=Adwaita\nInherits=hicolor\nDirectories=48x48/status\n\n[48x48/status]\nSize=48\nType=Fixed\n")
    t.write_png(os.path.join(adwaita, "48x48", "status", "qsd-volume-high.png"), 48, 48, (7, 7, 7, 255))
    c, sub = start(env)
    assert "searched as Adwaita > hicolor" in env.qsd_log()
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Volume", "props": {"Id": "volume", "IconName": "qsd-volume-high"}}])
    it = wait_item(c, sub, key_of("org.qsdtest.Volume"))
    assert t.file_of(it["icon"]) == os.path.join(adwaita, "48x48", "status", "qsd-volume-high.png")


def test_a_raster_is_chosen_over_an_svg(env):
    # nm-applet's nm-device-wired: a 22 px PNG and a scalable SVG; a QML Image without Qt's SVG
    # plugin shows nothing for the SVG.
    theme = os.path.join(env.dir, "nm-theme")
    png = os.path.join(theme, "hicolor", "22x22", "devices", "qsd-wired.png")
    t.write_png(png, 22, 22, (0, 9, 0, 255))
    os.makedirs(os.path.join(theme, "hicolor", "scalable", "devices"))
    with open(os.path.join(theme, "hicolor", "scalable", "devices", "qsd-wired.svg"), "w") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"/>')
    c, sub = start(env)
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Wired",
                         "props": {"Id": "wired", "IconThemePath": theme, "IconName": "qsd-wired"}}])
    assert t.file_of(wait_item(c, sub, key_of("org.qsdtest.Wired"))["icon"]) == png


def test_an_icon_installed_while_qsd_runs_shows_up(env):
    share = private_data_dirs(env)
    c, sub = start(env)
    name = "org.qsdtest.Later"
    t.start_items(env, [{"register": "name", "name": name, "menu": "icons:3",
                         "props": {"Id": "later", "IconName": "qsd-missing-1"}}])
    it = wait_item(c, sub, key_of(name))
    assert it["icon"] is None and it["menu"]["children"][0]["icon"] is None
    # Installed in the theme (a package, or an app at its first start): the item's icon and its
    # menu's icon appear, without the app doing anything.
    icon = os.path.join(share, "icons", "hicolor", "48x48", "apps", "qsd-missing-1.png")
    t.write_png(icon + ".tmp", 48, 48, (3, 3, 3, 255))
    os.rename(icon + ".tmp", icon)
    it = wait_item(c, sub, key_of(name), predicate=lambda it: it["icon"] is not None and
                   it["menu"]["children"][0]["icon"] is not None)
    assert t.file_of(it["icon"]) == icon and t.file_of(it["menu"]["children"][0]["icon"]) == icon
    # In a base directory that did not exist when qsd started.
    user = os.path.join(env.dir, "home", ".local", "share", "icons", "qsd-missing-2.png")
    t.write_png(user, 16, 16, (3, 3, 3, 255))
    it = wait_item(c, sub, key_of(name), predicate=lambda it: it["menu"]["children"][1]["icon"] is not None)
    assert t.file_of(it["menu"]["children"][1]["icon"]) == user


# ---------------------------------------------------------------------------------------------
# what one connection may register


class LoopBus:
    """A dbus-python connection of the test's own, on a GLib main loop: calls pipelined, signals
    counted."""

    def __init__(self, env):
        import dbus
        import dbus.mainloop.glib
        from gi.repository import GLib
        self.dbus, self.GLib = dbus, GLib
        self.bus = dbus.bus.BusConnection(env.env["DBUS_SESSION_BUS_ADDRESS"], mainloop=dbus.mainloop.glib.DBusGMainLoop())
        self.watcher = self.bus.get_object(t.WATCHER, "/StatusNotifierWatcher")
        self.signals = []
        for member in ("StatusNotifierHostRegistered", "StatusNotifierHostUnregistered", "StatusNotifierItemRegistered"):
            self.bus.add_signal_receiver(lambda *a, m=member: self.signals.append(m), member, t.WATCHER,
                                         path="/StatusNotifierWatcher")
        self.bus.add_signal_receiver(lambda *a: self.signals.append("PropertiesChanged"), "PropertiesChanged",
                                     "org.freedesktop.DBus.Properties", path="/StatusNotifierWatcher")

    def pump(self, done, timeout=60, what="replies"):
        ctx = self.GLib.MainContext.default()
        expired = []
        source = self.GLib.timeout_add(int(timeout * 1000), lambda: expired.append(1) or False)
        while not done():
            if expired:
                raise TimeoutError(f"timed out waiting for {what}")
            ctx.iteration(True)
        self.GLib.source_remove(source)

    def calls(self, method, args, window=100):
        """Calls `method` with each argument, `window` calls outstanding at a time (the bus
        refuses more pending calls than that on its own); the replies: "ok" or the error's
        name, in order."""
        results = [None] * len(args)
        sent = [0]

        def send():
            i = sent[0]
            sent[0] += 1
            getattr(self.watcher, method)(args[i], dbus_interface=t.WATCHER,
                                          reply_handler=lambda *r: answered(i, "ok"),
                                          error_handler=lambda e: answered(i, e.get_dbus_name()))

        def answered(i, result):
            results[i] = result
            if sent[0] < len(args):
                send()

        for _ in range(min(window, len(args))):
            send()
        self.pump(lambda: None not in results)
        return results

    def sync(self):
        """Waits until everything qsd sent before now has arrived (one round trip)."""
        done = []
        self.watcher.Get(t.WATCHER, "ProtocolVersion", dbus_interface="org.freedesktop.DBus.Properties",
                         reply_handler=lambda *r: done.append(1), error_handler=lambda e: done.append(1))
        self.pump(lambda: done, what="a round trip")

    def close(self):
        self.bus.close()


LIMIT = "org.freedesktop.DBus.Error.LimitsExceeded"


def test_hosts_are_kept_per_connection_within_a_limit(env):
    # RegisterStatusNotifierHost with names nobody owns was kept for ever, each broadcast and
    # logged: 300 000 calls took 98 MiB.
    c, sub = start(env)
    peer = LoopBus(env)
    results = peer.calls("RegisterStatusNotifierHost", [f"org.qsdtest.Nobody{i}" for i in range(2000)])
    assert results.count("ok") == 16 and results.count(LIMIT) == 2000 - 16
    # The signals go out in the loop pass after the calls were answered: a round trip made at
    # once may overtake them (qsd can read it in the same pass as the last call). The first one
    # is waited for; the round trip after it brings the rest of that pass.
    peer.pump(lambda: "StatusNotifierHostRegistered" in peer.signals, timeout=30, what="StatusNotifierHostRegistered")
    peer.sync()
    # At most one StatusNotifierHostRegistered per loop pass, and only for hosts kept; the log
    # is rate-limited.
    assert 1 <= peer.signals.count("StatusNotifierHostRegistered") <= 16
    assert env.qsd_log().count("org.qsdtest.Nobody") <= 33
    # Another connection has its own share; the hosts go with their connection.
    other = LoopBus(env)
    assert other.calls("RegisterStatusNotifierHost", ["org.qsdtest.Other"]) == ["ok"]
    peer.close()
    other.pump(lambda: "StatusNotifierHostUnregistered" in other.signals, timeout=30, what="StatusNotifierHostUnregistered")
    responsive(env)


def test_invalid_registrations_are_logged_as_one_bounded_line_within_a_limit(env):
    # Any application can register anything in a loop: each invalid registration was logged
    # whole (1 MiB in one line), every time (2 000 lines in 0.2 s), and a newline in it started a
    # line of the peer's own, which journald reads as an entry at the priority its "<N>" says.
    c, sub = start(env)
    peer = LoopBus(env)
    forged = "x\n<0>qsd: error: tray: FORGED"
    results = peer.calls("RegisterStatusNotifierItem", [forged] + [f"bad item {i}" for i in range(2000)] + ["y" * (1 << 20)])
    assert results == ["org.freedesktop.DBus.Error.InvalidArgs"] * 2002
    try:
        peer.watcher.RegisterStatusNotifierItem("z" * (1 << 20), dbus_interface=t.WATCHER)
        raise AssertionError("a 1 MiB name was registered")
    except peer.dbus.DBusException as e:
        assert e.get_dbus_name() == "org.freedesktop.DBus.Error.InvalidArgs" and len(str(e)) < 600
    peer.sync()
    log = env.qsd_log()
    assert "registered an invalid item \"x\\n<0>qsd: error: tray: FORGED\"" in log
    assert not any(line.startswith("<0>") or "FORGED" in line and "invalid item" not in line for line in log.splitlines())
    assert log.count("registered an invalid item") <= 33
    assert max(len(line) for line in log.splitlines()) < 4096
    responsive(env)


def test_items_are_kept_per_connection_and_the_list_is_announced_once_a_pass(env):
    # One connection registering thousands of object paths: each registration broadcast the
    # whole RegisteredStatusNotifierItems (quadratic: 10 000 paths took 813 MiB).
    c, sub = start(env)
    rss = env.rss_kib()
    peer = LoopBus(env)
    results = peer.calls("RegisterStatusNotifierItem", [f"/qsdtest/Item{i}" for i in range(2000)])
    assert results.count("ok") == 64 and results.count(LIMIT) == 2000 - 64
    # The list is announced in the pass after the calls (see the hosts' test above).
    peer.pump(lambda: "PropertiesChanged" in peer.signals, timeout=30, what="PropertiesChanged")
    peer.sync()
    assert peer.signals.count("StatusNotifierItemRegistered") == 64
    # At most one PropertiesChanged(RegisteredStatusNotifierItems) per loop pass.
    assert 1 <= peer.signals.count("PropertiesChanged") <= 64
    mine = [k for k in t.registered(env) if k.startswith(peer.bus.get_unique_name() + "/")]
    assert len(mine) == 64
    assert not rss_judged(env) or env.rss_kib() - rss < 10 * 1024
    # They go with the connection; then it may register again.
    peer.close()
    wait_until_registered = lambda: not any(k.startswith(":") and "/qsdtest/Item" in k for k in t.registered(env))
    c.wait_for(wait_until_registered, timeout=30, what="the items gone")
    again = LoopBus(env)
    assert again.calls("RegisterStatusNotifierItem", ["/qsdtest/Again"]) == ["ok"]
    responsive(env)


def icon_dir_bytes(env):
    d = os.path.join(env.run, "qsd", "icons")
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".png"))


def test_menu_icon_data_is_bounded_per_connection(env):
    # 300 entries with 100 KB of icon-data each: 30 MB of PNG files in $XDG_RUNTIME_DIR (a
    # tmpfs shared with every socket of the session), and as much in qsd's memory.
    from qsdtest import wait_until
    c, sub = start(env)
    rss = env.rss_kib()
    name = "org.qsdtest.IconData"
    # The sanitizer build, where RSS is not judged, is sent 10 MB: still past the 8 MiB read of a
    # layout and the 4 MiB of a connection.
    entries = 300 if rss_judged(env) else 100
    t.start_items(env, [{"register": "name", "name": name, "menu": f"icondata:{entries}:100000", "props": {"Id": "icondata"}}])
    # The item appears once its menu was read or that read timed out: on a loaded machine the
    # item takes longer than the 5 s qsd waits to send 30 MB, and qsd asks again 1, 2, 4, 8 and
    # 16 s after each timeout.
    it = wait_item(c, sub, key_of(name), timeout=120, predicate=lambda it: it["menu"] is not None)
    icons = [ch["icon"] for ch in it["menu"]["children"]]
    assert icons[0] is not None and icons[-1] is None
    assert 0 < icon_dir_bytes(env) <= 4 << 20
    assert env.qsd_log().count("its icon files would take more than 4096 KiB") == 1
    # The bytes are in the files, not in qsd's memory (the heap is trimmed a second after).
    if rss_judged(env):
        wait_until(lambda: env.rss_kib() - rss < 10 * 1024, 30, what="qsd's RSS back within 10 MiB of its start")
    # Other connections have their own share; the item's files go with it.
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Other", "menu": "icondata:2:1000", "props": {"Id": "other"}}])
    other = wait_item(c, sub, key_of("org.qsdtest.Other"))
    assert all(ch["icon"] is not None for ch in other["menu"]["children"])
    t.control(env, name).Quit()
    c.wait_for(lambda: key_of(name) not in c.mirror(sub)["tray"]["items"], timeout=30, what="the item gone")
    assert icon_dir_bytes(env) == 2000
    responsive(env)


def test_one_connections_items_share_its_icon_files_budget(env):
    # The budget was per item: one connection serving nine items of 4 MB of menu icons filled the
    # session's 32 MiB, and every other application's icons were null from then on. The items of
    # one connection now share one budget; here two items of 3 MB each, over one connection.
    c, sub = start(env)
    # Registered by object path, as libappindicator does: both are served by one connection.
    ids = ["icons-a", "icons-b"]
    t.start_items(env, [{"register": "path", "path": f"/Item{i}", "menu": "icondata:30:100000", "props": {"Id": d}}
                        for i, d in enumerate(ids)])

    def menus():
        items = [it for it in c.mirror(sub)["tray"]["items"].values() if it["id"] in ids]
        return [it["menu"] for it in items] if len(items) == 2 and all(it["menu"] for it in items) else None

    c.wait_for(menus, timeout=120, what="both items with their menus")
    shown = sum(ch["icon"] is not None for m in menus() for ch in m["children"])
    # 100 kB icons: 41 fit in 4 MiB, and nothing else of that connection's is stored.
    assert shown == (4 << 20) // 100_000, shown
    assert icon_dir_bytes(env) == shown * 100_000
    assert env.qsd_log().count("its icon files would take more than 4096 KiB") == 1
    # Another application's icons are stored.
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Other", "menu": "icondata:2:1000", "props": {"Id": "other"}}])
    other = wait_item(c, sub, key_of("org.qsdtest.Other"))
    assert all(ch["icon"] is not None for ch in other["menu"]["children"])
    responsive(env)


def test_one_connections_items_share_its_pixmap_budget(env):
    # Each pixmap property keeps the one entry its icon is made of, up to 1024 px (4 MiB), and an
    # item has three: one connection's 64 items could keep 768 MiB in qsd for as long as they
    # lived. The items of one connection now keep 8 MiB in all; a property past that is not kept
    # (its icon is null, or made of its name), logged once per item.
    c, sub = start(env)
    big = [{"width": 1024, "height": 1024, "bytes": 4 << 20}]   # transparent, 4 MiB
    ids = ["pixmaps-a", "pixmaps-b", "pixmaps-c"]
    # Registered by object path: all three are served by one connection.
    t.start_items(env, [{"register": "path", "path": f"/Item{n}", "props": {"Id": ident, "IconPixmap": big}}
                        for n, ident in enumerate(ids)])

    def items():
        found = [it for it in c.mirror(sub)["tray"]["items"].values() if it["id"] in ids]
        return found if len(found) == len(ids) else None

    c.wait_for(items, timeout=60, what="the three items")
    # The two read first keep their 4 MiB each; the third keeps nothing.
    assert sorted(it["icon"] is not None for it in items()) == [False, True, True]
    assert env.qsd_log().count("its pixmaps would take more than 8192 KiB of its connection's") == 1
    # Another connection's item has 8 MiB of its own.
    other = "org.qsdtest.OtherPixmaps"
    t.start_items(env, [{"register": "name", "name": other, "props": {"Id": "other", "IconPixmap": big}}])
    assert wait_item(c, sub, key_of(other))["icon"] is not None
    responsive(env)


def test_long_texts_are_cut_at_a_character(env):
    # Any process on the session bus can be an item, and every subscriber of /tray is sent what
    # it shows: 100 KB titles, tooltips, statuses and menu labels are kept as their first 1 KiB
    # (the tooltip's markup 16 KiB, icon names 4 KiB), each ending with a whole character.
    import json
    c, sub = start(env)
    name = "org.qsdtest.LongTexts"
    long = "a" + "é" * 50000   # byte 1024 (and 16 384) is the middle of an "é"
    t.start_items(env, [{"register": "name", "name": name, "menu": "demo", "props": {"Id": "long"}}])
    wait_item(c, sub, key_of(name), predicate=lambda it: it["menu"] is not None)
    item = t.control(env, name)
    item.Set("ToolTip", json.dumps({"title": long, "description": long}), "NewToolTip")
    item.Set("Title", json.dumps(long), "NewTitle")
    item.AddMenuEntry(long)
    # A status that is not in the table is shown as sent, within the same bound; NewStatus
    # carries it. Icon names are shown up to a path's length (4 KiB).
    item.Set("Status", json.dumps("b" + long), "NewStatus")
    item.Set("IconName", json.dumps(long), "NewIcon")
    it = wait_item(c, sub, key_of(name), predicate=lambda it: it["title"] != "" and it["tooltipTitle"] != ""
                   and len(it["menu"]["children"]) == 6 and it["status"] != "active" and it["iconName"] != "")
    assert it["title"] == it["tooltipTitle"] == "a" + "é" * 511
    assert it["tooltipDescription"] == "a" + "é" * 8191
    assert it["menu"]["children"][-1]["label"] == "a" + "é" * 511
    assert it["status"] == "ba" + "é" * 511
    assert it["iconName"] == "a" + "é" * 2047
    responsive(env)


def test_registering_another_connections_paths_counts_against_the_caller(env):
    # One connection registered "<another's unique name>/bogus/pN" 64 times: each counted against
    # the other connection, whose own item was then refused (LimitsExceeded: the app had no
    # icon), and never against the caller, which registered 704 items for 11 connections.
    c, sub = start(env)
    victim_name = "org.qsdtest.Victim"
    p = t.start_items(env, [{"register": "none", "name": victim_name, "props": {"Id": "victim"}}])
    victim = t.owner(env, victim_name)
    # The victim answers nothing while the caller registers: qsd's reads of the made-up paths wait
    # (5 s each, asked again 1, 2, 4... s later), so the paths are all still held when the second
    # batch comes, however slow the machine (answered at once, they are dropped 7 s after their
    # first read).
    p.send_signal(signal.SIGSTOP)
    try:
        attacker = LoopBus(env)
        results = attacker.calls("RegisterStatusNotifierItem", [f"{victim}/bogus/p{i}" for i in range(100)])
        assert results.count("ok") == 64 and results.count(LIMIT) == 100 - 64
        # The caller has used its share, whoever's names it gives.
        others = [LoopBus(env) for _ in range(3)]
        results = attacker.calls("RegisterStatusNotifierItem",
                                 [f"{o.bus.get_unique_name()}/x/p{i}" for o in others for i in range(10)])
        assert results == [LIMIT] * 30
    finally:
        p.send_signal(signal.SIGCONT)
    # The victim's own item is registered and shown: what another connection registered counts
    # against it only once it answered for it.
    assert t.control(env, victim_name).Register("", "/StatusNotifierItem") == "ok"
    wait_item(c, sub, victim + "/StatusNotifierItem")
    # Nothing answers at those paths: after a few reads they are dropped, and the caller has its
    # share back.
    from qsdtest import wait_until
    wait_until(lambda: not any("/bogus/" in k for k in t.registered(env)), 60, what="the made-up paths dropped")
    assert "nothing answers for it at its path" in env.qsd_log()
    assert attacker.calls("RegisterStatusNotifierItem", [f"{victim}/bogus/again"]) == ["ok"]
    assert victim + "/StatusNotifierItem" in c.mirror(sub)["tray"]["items"]
    responsive(env)


def test_only_the_pixmap_an_icon_is_made_of_is_kept(env):
    # Seven 1x1 entries of 4 MiB each in IconPixmap, AttentionIconPixmap and OverlayIconPixmap:
    # every entry up to 4 MiB was copied whatever its size, and qsd grew by 112 MiB for good, for
    # an item whose icon was null. Read one property at a time (GetAll fails), each Get a 28 MiB
    # answer.
    c, sub = start(env)
    rss = env.rss_kib()
    # The sanitizer build, where RSS is not judged, reads one such entry per property (the same
    # paths in qsd: 4 MiB answers read in 40 s under ASan were most of this file's time there).
    junk = [{"width": 1, "height": 1, "bytes": (4 << 20) - 1}] * (7 if rss_judged(env) else 1)
    name = "org.qsdtest.Pixmaps"
    t.start_items(env, [{"register": "name", "name": name, "getAllFails": True,
                         "props": {"Id": "pixmaps", "IconPixmap": junk + [t.pixmap(16, 16, (255, 0, 0, 255))],
                                   "AttentionIconPixmap": junk, "OverlayIconPixmap": junk}}])
    it = wait_item(c, sub, key_of(name), timeout=60)
    # The one usable entry is the icon.
    w, h, rows = t.read_png(t.file_of(it["icon"]))
    assert (w, h) == (16, 16) and rows[0][0] == (255, 0, 0, 255)
    # The answers' memory is given back (the heap is trimmed after a large read); the cache keeps
    # one 16 px pixmap.
    if rss_judged(env):
        from qsdtest import wait_until
        wait_until(lambda: env.rss_kib() - rss < 10 * 1024, 30, what="qsd's RSS within 10 MiB of where it was")
    responsive(env)


def menu_entries(entry):
    return 1 + sum(menu_entries(ch) for ch in entry["children"])


def menu_depth(entry):
    return 1 + max((menu_depth(ch) for ch in entry["children"]), default=-1)


def test_submenus_read_again_stay_within_the_bounds_of_the_whole_menu(env):
    # The 16-level and 4096-entry bounds held per GetLayout: a submenu read again
    # (LayoutUpdated(parent), tray.menuAboutToShow) was spliced in whole, so 4000 entries under
    # entry after entry grew a menu to 164 001 entries (+387 MiB), and chained submenus reached
    # 4 515 levels (the menu's JSON, its weight and its icons are made recursively).
    c, sub = start(env)
    wide, deep = "org.qsdtest.Wide", "org.qsdtest.Deep"
    t.start_items(env, [{"register": "name", "name": wide, "menu": 3, "props": {"Id": "wide"}}])
    t.start_items(env, [{"register": "name", "name": deep, "menu": "deep", "props": {"Id": "deep"}}])
    wait_item(c, sub, key_of(wide))
    deep_key = key_of(deep)
    menu = wait_item(c, sub, deep_key)["menu"]
    assert menu_depth(menu) == 16   # 20 levels sent
    for parent in (1, 2, 3):
        t.control(env, wide).Grow(parent, 4000, f"grown {parent}")
    menu = wait_item(c, sub, key_of(wide), timeout=60, predicate=lambda it: [
        ch["label"] for ch in it["menu"]["children"]] == ["grown 1", "grown 2", "grown 3"])["menu"]
    assert menu_entries(menu) == 4096
    # The deepest entry read again: what it sends below it is past the menu's 16 levels.
    t.control(env, deep).Grow(16, 0, "read again")

    def deepest(menu):
        while menu["children"]:
            menu = menu["children"][0]
        return menu

    menu = wait_item(c, sub, deep_key, predicate=lambda it: deepest(it["menu"])["label"] == "read again")["menu"]
    assert menu_depth(menu) == 16 and deepest(menu)["id"] == 16
    # So is a submenu a client opens.
    c.call("tray.menuAboutToShow", {"item": deep_key, "id": 16})
    assert menu_depth(c.mirror(sub)["tray"]["items"][deep_key]["menu"]) == 16
    c.call("tray.menuAboutToShow", {"item": key_of(wide), "id": 2})
    assert menu_entries(c.mirror(sub)["tray"]["items"][key_of(wide)]["menu"]) == 4096
    responsive(env)


def test_layout_updates_while_a_read_is_out_are_not_kept_one_by_one(env):
    # Each distinct parent of a LayoutUpdated that came while a GetLayout was out was kept until
    # it answered, and an item may hold its answer 5 s and do it again: past a few parents, one
    # read of the whole menu covers them, and nothing more is kept.
    c, sub = start(env)
    name = "org.qsdtest.Parents"
    t.start_items(env, [{"register": "name", "name": name, "menu": 3, "props": {"Id": "parents"}}])
    wait_item(c, sub, key_of(name))
    rss = env.rss_kib()
    # 300 000 parents, sent before the item answers the read the first one asked for; the call
    # returns once qsd handled them all. The sanitizer build, where RSS is not judged, takes the
    # same path with 30 000.
    t.control(env, name).UpdatedParents(300000 if rss_judged(env) else 30000, "after the burst", timeout=300)
    wait_item(c, sub, key_of(name), timeout=60, predicate=lambda it: it["menu"]["children"][0]["label"] == "after the burst")
    assert not rss_judged(env) or env.rss_kib() - rss < 4 * 1024
    responsive(env)


def test_a_submenu_opened_as_the_item_changes_its_menu_is_not_read_in_the_new_one(env):
    # tray.menuAboutToShow checked that the item was the same when AboutToShow answered, not
    # the menu: when that answer came in the same read as the new Menu path (NewMenu), the entry
    # was read in the new menu (GetLayout(3) of a menu that has no entry 3), which then counted
    # as read, and was null until its root came.
    import signal
    from qsdtest import wait_until
    c, sub = start(env)
    name = "org.qsdtest.Swap"
    t.start_items(env, [{"register": "name", "name": name, "menu": "demo", "swapMenu": 2, "props": {"Id": "swap"}}])
    wait_item(c, sub, key_of(name), predicate=lambda it: it["menu"] is not None)
    item = t.control(env, name)
    import json
    rid = c.next_id
    c.next_id += 1
    c.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tray.menuAboutToShow",
                           "params": {"item": key_of(name), "id": 3}}) + "\n")
    # The item holds AboutToShow, sends NewMenu, and holds qsd's Get of Menu; both answers then
    # reach a stopped qsd, which reads them in one go.
    wait_until(lambda: item.Held() == 1, 30, what="qsd's Get of Menu after NewMenu")
    os.kill(env.daemon.pid, signal.SIGSTOP)
    try:
        item.Release()
    finally:
        os.kill(env.daemon.pid, signal.SIGCONT)
    while rid not in c.responses:
        msg = c.read_message(30)
        if "id" in msg and "method" not in msg:
            c.responses[msg["id"]] = msg
    answer = c.responses.pop(rid)
    error = answer.get("error")
    assert error and error["code"] == -32001 and error["data"] == {"param": "id", "item": key_of(name), "id": 3}, answer
    it = wait_item(c, sub, key_of(name), predicate=lambda it: it["menu"] is not None and
                   [ch["label"] for ch in it["menu"]["children"]] == ["Entry 1", "Entry 2"])
    assert it["menu"]["children"][0]["id"] == 1
    assert not [call for call in t.calls(env, name) if call[-1] == "Menu2" and call[:2] == ["GetLayout", 3]]
    responsive(env)


def test_registrations_with_qsd_while_another_process_is_the_watcher_are_refused(env):
    # qsd's watcher object is on its connection in every role: while another process was the
    # watcher, a registration sent to qsd's unique name put the item in /tray all the same.
    import dbus
    t.start_watcher(env)
    c, sub = start(env)
    assert c.mirror(sub)["tray"]["isWatcher"] is False
    qsd = t.owner(env, f"org.kde.StatusNotifierHost-{env.daemon.pid}")
    assert qsd.startswith(":")
    name = "org.qsdtest.Sideways"
    t.start_items(env, [{"register": "none", "name": name, "props": {"Id": "sideways"}}])
    item = t.control(env, name)
    refused = "org.freedesktop.DBus.Error.Failed"
    assert item.Register(qsd, "/StatusNotifierItem") == refused
    assert item.Register(qsd, name) == refused
    try:
        t.session(env).call_blocking(qsd, "/StatusNotifierWatcher", t.WATCHER, "RegisterStatusNotifierHost", "s",
                                     ("org.qsdtest.Host",))
        raise AssertionError("RegisterStatusNotifierHost was accepted")
    except dbus.exceptions.DBusException as e:
        assert e.get_dbus_name() == refused
    t.bus_barrier(env, c)
    assert c.mirror(sub)["tray"]["items"] == {}
    # Registered with the watcher, it is shown.
    assert item.Register("", name) == "ok"
    wait_item(c, sub, key_of(name))
    responsive(env)
