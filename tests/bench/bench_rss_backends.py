#!/usr/bin/python3
"""RSS and Pss of qsd (1) with every compiled-in backend running against its service and 65
whole-tree subscribers (target in docs/performance.md: <= 9 MiB RSS and <= 5 MiB Pss), and (2)
per backend: qsd with that backend alone, its service present and absent, against qsd with no
backend (target: a backend whose service is absent costs <= 0.2 MiB).

The services, all started here: python-dbusmock's NetworkManager (a Wi-Fi device with 4
access points, a wired device, saved profiles, an active connection), UPower (a discharging
battery) and power-profiles-daemon on private system and session buses; real pipewire and
wireplumber with 4 null sinks, a null source and 2 playing streams; BlueZ (bluez5 mock) with an
adapter and 6 paired devices; 10 tray items with
15-entry menus (a typical tray) on the session bus; headless sway with 2 outputs and 2 foot
windows; an MPRIS player (tests/integration/mpris_player.py) on the session bus. The
notification server needs no service. A service that cannot run here (no sway, ...) is left out
and said so; its backend then runs without it and reports that in /daemon/backends. "Absent"
runs qsd in a second private world where nothing is started (empty buses, no PipeWire socket,
no Wayland compositor, no tray item, no player).

The session looks icons up in the installed icon theme, as a desktop does (the backends that
show icons keep an index of the installed themes once they looked one name up). The icon theme
is Adwaita (gtk-3.0/settings.ini in the private XDG_CONFIG_HOME; XDG_DATA_DIRS is
/usr/local/share:/usr/share, so the themes searched are those in /usr/share/icons); every BlueZ
device has an `Icon` (audio-headset, input-mouse, ...); 5 of the 10 tray items show a theme
icon by name (IconName network-wireless, audio-volume-high, ...), the other 5 pixmaps; 2
notifications that never expire (expire timeout 0), with an app icon name (dialog-information,
mail-unread), are shown before the figures are read (and again in each per-backend run with the
notifications backend); the player's DesktopEntry names a .desktop file in the private
XDG_DATA_HOME/applications whose Icon= is multimedia-player. Once settled, the benchmark waits
until those icons resolved, prints how many did per backend (/bluetooth/devices/*/iconUrl,
/tray/items/*/icon of the named items, /notifications/items/*/appIcon, /media/players/*/iconUrl)
and fails when a backend that runs resolved none: the figures would then be those of a session
without lookups. Without /usr/share/icons/Adwaita that check is skipped, and said so.

Then (3) the same qsd with a Qt shell beside it: the example bar (client-qml/examples/bar, every
domain, `import Qsd`) run by Qt's qml runtime offscreen, connected to this qsd. On a desktop a
shell like it always runs; it maps libstdc++, libc and libm as qsd does, so those pages are
shared, which is what Pss counts. Left out, and said so, without Qt's qml runtime or the built
QML module.

Each figure is read once the backend has settled (running with its service's objects in the
tree, or unavailable, and its icons resolved) and 0.5 s more. RSS counts every resident page;
Pss divides each shared page by the number of processes mapping it, so libraries that
PipeWire's or sway's own processes also map count partly (a desktop session shares them the
same way).

Usage: bench_rss_backends.py   (QSD_BIN selects the daemon, default build/daemon/qsd;
                                QSD_BENCH_QUICK=1: 4 subscribers instead of 64;
                                QSD_BENCH_BACKENDS=nm,upower: only those backends run;
                                QSD_BENCH_PER_BACKEND=0: skip the per-backend table)
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
BUILD = os.path.join(HERE, "..", "..", "build")
os.environ.setdefault("QSD_BIN", os.path.join(BUILD, "daemon", "qsd"))
os.environ.setdefault("QSCTL_BIN", os.path.join(BUILD, "cli", "qsctl"))

import mprisutil  # noqa: E402
import notifyutil  # noqa: E402
import pwtest  # noqa: E402
import trayutil  # noqa: E402
import waylandenv  # noqa: E402
from nmmock import NmMock  # noqa: E402
from qsdtest import Env, listed_functions, pointer_get  # noqa: E402


ALL = ["nm", "upower", "pipewire", "tray", "wayland", "mpris", "notifications", "bluetooth"]

# Icons looked up in the installed theme, as on a desktop: names Adwaita has (as PNG files).
ADWAITA = "/usr/share/icons/Adwaita"
ICON_BACKENDS = ["bluetooth", "tray", "notifications", "mpris"]   # the backends that look icons up
DEVICE_ICONS = ["audio-headset", "input-mouse", "input-keyboard", "phone", "computer", "audio-card"]
# (Adwaita 43 has bluetooth-active only as a -symbolic icon, which the lookup does not fall back to.)
TRAY_ICON_NAMES = ["network-wireless", "audio-volume-high", "battery-good", "mail-unread", "software-update-available"]
NOTIFICATIONS = [("Software", "dialog-information", "Updates available", "3 updates can be installed"),
                 ("Mail", "mail-unread", "2 new messages", "<b>Alice</b>: lunch tomorrow?")]
PLAYER_ENTRY = "qsd-bench-player"   # the player's DesktopEntry: <it>.desktop, Icon=PLAYER_ICON
PLAYER_ICON = "multimedia-player"
# How many icons each of those backends is asked for (6 devices, the named tray items, the
# notifications, the player).
ICONS_ASKED = {"bluetooth": len(DEVICE_ICONS), "tray": len(TRAY_ICON_NAMES), "notifications": len(NOTIFICATIONS),
               "mpris": 1}


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_settled(pid, still=5, step=0.1, timeout=30):
    """Returns once pid's VmRSS has stayed the same over `still` reads `step` s apart."""
    deadline = time.monotonic() + timeout
    last, same = -1, 0
    while same < still and time.monotonic() < deadline:
        try:
            rss = status_kib(pid, "VmRSS")
        except OSError:
            return   # it exited: the caller says so
        same = same + 1 if rss == last else 0
        last = rss
        time.sleep(step)


def memory(pid):
    """RSS, Pss, RssAnon and RssFile of pid, in KiB."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        rollup = {line.split()[0].rstrip(":"): int(line.split()[1]) for line in f if line.split()[-1] == "kB"}
    return {"rss": rollup["Rss"], "pss": rollup["Pss"], "anon": status_kib(pid, "RssAnon"),
            "file": status_kib(pid, "RssFile")}


def by_mapping(pid):
    """{mapping name: [Rss, Pss]} in KiB, from /proc/<pid>/smaps: the binary, each library
    (libpipewire's modules and plugins by their own names), [heap], [stack], anonymous."""
    out = {}
    name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(None, 1)[0]
            if "-" in first and not first.endswith(":"):
                parts = line.split(None, 5)
                name = os.path.basename(parts[5].strip()) if len(parts) > 5 else "(anonymous)"
                out.setdefault(name, [0, 0])
            elif first in ("Rss:", "Pss:"):
                out[name][0 if first == "Rss:" else 1] += int(line.split()[1])
    return out


def defined_symbols(binary):
    """`nm -S --defined-only` of binary, one list of fields per symbol (address, [size,] type,
    name); None without nm."""
    try:
        out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [line.split() for line in out.splitlines() if line.strip()]


def function_order(symbols):
    """(listed, present): the functions daemon/function-order.txt lists for the linker to lay out
    together, and how many of them the binary has (`symbols`: defined_symbols()). Fewer present
    means the list is older than the code (scripts/order-functions writes it again)."""
    listed = listed_functions()
    names = {fields[-1] for fields in symbols}
    return len(listed), len(listed & names)


WINDOW = 64 * 1024   # the kernel's fault-around: a read fault maps the file's cached pages around it


def stray_code(pid, binary, symbols):
    """(resident, windows): how many 64 KiB windows of the binary's .text that lie wholly outside
    the functions daemon/function-order.txt lays out together have a resident page, out of how
    many there are. With a current list this is at most a window or two (a rare path); each more is
    a function that runs and is not listed, which keeps its whole window resident
    (scripts/order-functions lists them again). None without readelf or /proc/<pid>/pagemap.
    `symbols`: defined_symbols() of binary."""
    listed = listed_functions()
    try:
        sections = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    text = None
    for line in sections.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 5 and fields[1] == ".text":
            text = (int(fields[3], 16), int(fields[3], 16) + int(fields[5], 16))
    if not text:
        return None
    # Where the listed functions are: gold lays them out together (after the others, here). A
    # few static inline functions of the protocol headers have copies in several objects under
    # one name, and the copies that never run land elsewhere; so the region is the largest run of
    # listed functions that follow one another within a window.
    listed_at = sorted((int(f[0], 16), int(f[1], 16)) for f in symbols
                       if len(f) == 4 and f[3] in listed and text[0] <= int(f[0], 16) < text[1])
    runs = []
    for address, size in listed_at:
        if runs and address - runs[-1][1] <= WINDOW:
            runs[-1][1] = max(runs[-1][1], address + size)
        else:
            runs.append([address, address + size])
    if not runs:
        return None
    lo, hi = max(runs, key=lambda r: r[1] - r[0])
    # The load bias of a PIE: where the mapping of file offset 0 starts (one executable segment
    # from offset 0, as gold lays the binary out).
    base = None
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and os.path.realpath(parts[5]) == binary and int(parts[2], 16) == 0:
                base = int(parts[0].split("-")[0], 16)
                break
    if base is None:
        return None
    # The windows wholly outside the region (those it shares a window with are its own).
    windows = [w for w in range(text[0] // WINDOW * WINDOW, text[1], WINDOW) if w + WINDOW <= lo or w >= hi]
    resident = 0
    try:
        with open(f"/proc/{pid}/pagemap", "rb") as f:
            for w in windows:
                start = max(w, text[0])
                pages = -(-(min(w + WINDOW, text[1]) - start) // 4096)
                f.seek((base + start) // 4096 * 8)
                entries = f.read(8 * pages)
                if any(int.from_bytes(entries[i:i + 8], "little") >> 63 for i in range(0, len(entries), 8)):
                    resident += 1
    except OSError:
        return None
    return resident, len(windows)


def desktop_files(env):
    """qsd's environment additions of a desktop session that looks icons up: the icon theme
    configured (GTK's settings.ini), the standard data directories (the installed themes under
    /usr/share/icons), and a private XDG_DATA_HOME with the player's .desktop file."""
    gtk = os.path.join(env.env["XDG_CONFIG_HOME"], "gtk-3.0")
    os.makedirs(gtk, exist_ok=True)
    with open(os.path.join(gtk, "settings.ini"), "w") as f:
        f.write("[Settings]\ngtk-icon-theme-name=Adwaita\n")
    data = os.path.join(env.dir, "data")
    os.makedirs(os.path.join(data, "applications"), exist_ok=True)
    with open(os.path.join(data, "applications", PLAYER_ENTRY + ".desktop"), "w") as f:
        f.write("[Desktop Entry]\nType=Application\nName=Bench Player\nExec=true %U\n"
                f"Icon={PLAYER_ICON}\nCategories=AudioVideo;Audio;Player;\n")
    return {"XDG_DATA_HOME": data, "XDG_DATA_DIRS": "/usr/local/share:/usr/share"}


def start_services(env):
    """Starts every backend's service in env; returns (qsd's environment, what was left out,
    whether sway runs)."""
    m = NmMock(env)
    w = m.add_wifi("wlan0")
    home_ap = m.add_ap(w, "ap_home", "HomeNet", "00:11:22:33:44:55", freq=2437, strength=82)
    m.add_ap(w, "ap_home5", "HomeNet", "00:11:22:33:44:56", freq=5180, strength=30)
    m.add_ap(w, "ap_cafe", "CafeOpen", "00:11:22:33:44:66", freq=5180, strength=40)
    m.add_ap(w, "ap_nb", "Neighbour", "00:11:22:33:44:77", freq=2412, strength=15)
    home = m.add_profile(w, "conn_home", "HomeNet")
    m.add_saved("FarAway")
    m.activate(w, home, home_ap, "Active_home")
    m.add_wired("eth0")
    env.start_mock("upower", {"OnBattery": True, "DaemonVersion": "0.99.20"}, name="org.freedesktop.UPower")
    import dbus  # noqa: only under /usr/bin/python3
    up = dbus.Interface(env.dbus().get_object("org.freedesktop.UPower", "/org/freedesktop/UPower"),
                        "org.freedesktop.DBus.Mock")
    up.AddDischargingBattery("BAT0", "Battery", 73.5, 3600)
    env.start_mock("power_profiles_daemon", name="net.hadess.PowerProfiles")
    # BlueZ: one adapter, six paired devices with their icons, two of them connected with a battery.
    from bluezmock import DEVICE, Bluez
    bz = Bluez(env, ["hci0"])
    for i in range(6):
        path = bz.add_device(f"00:11:22:33:44:{i:02X}", f"Device {i}")
        bz.update(path, DEVICE, {"Icon": DEVICE_ICONS[i]})
        bz.mock.PairDevice("hci0", f"00:11:22:33:44:{i:02X}", 0)
        if i < 2:
            bz.mock.ConnectDevice("hci0", f"00:11:22:33:44:{i:02X}")
            bz.add_battery(path, 60 + i)
    mprisutil.start_player(env, {"name": "org.mpris.MediaPlayer2.bench",
                                 "root": {"Identity": "Bench Player", "DesktopEntry": PLAYER_ENTRY}})

    left_out = []
    pw = pwtest.PipeWire(env)
    for i in range(4):
        pw.add_null(f"bench_sink_{i}")
    pw.add_null("bench_source", media_class="Audio/Source/Virtual", positions="MONO")
    pw.play("bench-player-a", target="bench_sink_0")
    pw.play("bench-player-b", target="bench_sink_1")
    qsd_env = dict(env.env)
    why = waylandenv.skip_reason()
    if why:
        left_out.append(f"sway ({why})")
    else:
        sway = waylandenv.Sway(env).start()
        sway.msg("create_output")
        sway.foot("bench.a", "Window A")
        sway.foot("bench.b", "Window B")
        qsd_env = waylandenv.qsd_env(env, sway)
    qsd_env.pop("QSD_ICON_THEME", None)   # the theme is the session's (settings.ini), not the caller's
    qsd_env.update(desktop_files(env))
    return qsd_env, left_out, not why


def wait_settled(c, sub, on, present, wayland=True):
    """Waits until every backend in `on` has its service's objects in the tree (present) or has
    settled without it (not starting)."""
    if not present:
        def settled():
            states = pointer_get(c.mirror(sub), "/daemon/backends", {})
            return all(states.get(b, {}).get("state") not in (None, "starting") for b in on)
        c.wait_for(settled, timeout=30, what="every backend settled")
        return
    if "nm" in on:
        c.wait_value(sub, "/network/available", True, timeout=20)
    if "upower" in on:
        c.wait_value(sub, "/power/available", True, timeout=20)
    if "pipewire" in on:
        c.wait_value(sub, "/audio/available", True, timeout=20)
    if "notifications" in on:
        c.wait_value(sub, "/notifications/available", True, timeout=20)
    if "mpris" in on:
        c.wait_for(lambda: "bench" in pointer_get(c.mirror(sub), "/media/players", {}), timeout=20,
                   what="the MPRIS player")
    if "bluetooth" in on and "bluetooth" in pointer_get(c.mirror(sub), "/daemon/backends", {}):
        c.wait_for(lambda: len(pointer_get(c.mirror(sub), "/bluetooth/devices", {})) == 6, timeout=20,
                   what="6 Bluetooth devices")
    if "tray" in on:
        c.wait_for(lambda: len(pointer_get(c.mirror(sub), "/tray/items", {})) == 10, timeout=60,
                   what="10 tray items")
    if wayland and "wayland" in on:
        c.wait_for(lambda: len(pointer_get(c.mirror(sub), "/wayland/toplevels", {})) == 2, timeout=30,
                   what="2 toplevels")


# Half of the items show a theme icon by name (as nm-applet, pasystray, ayatana's items do),
# the others pixmaps (as Electron's and Qt's items do).
TRAY_ITEMS = [{"register": "path", "path": f"/item/{i}", "menu": 15, "reregister": True,
               "props": {"Id": f"app-{i}", "Title": f"App {i}", "Status": "Active",
                         **({"IconName": TRAY_ICON_NAMES[i // 2]} if i % 2 == 0 else
                            {"IconPixmap": [[32, 32, [i, 100, 200, 255]]]})}} for i in range(10)]


def show_notifications(env, c, sub):
    """Shows NOTIFICATIONS (never expiring: expire timeout 0) once qsd owns the name; returns
    the sender's connection (close it once the figures are read: an application that sent
    notifications still runs)."""
    c.wait_value(sub, "/notifications/server", "active", timeout=20)
    bus = notifyutil.Bus(env)
    for app, icon, summary, body in NOTIFICATIONS:
        bus.notify(summary, body, app=app, icon=icon, timeout=0)
    return bus


def lookups_expected():
    """Why icons cannot resolve here (None when they can)."""
    if not os.path.isdir(ADWAITA):
        return f"{ADWAITA} is absent"
    return None


def icon_counts(tree):
    """{backend: (icon URLs resolved, icons asked for)} in the tree: each device's iconUrl, the
    icon of each tray item that names one (the others have pixmaps), each notification's appIcon,
    each player's iconUrl."""
    def values(path):
        v = pointer_get(tree, path, {})
        return list(v.values()) if isinstance(v, dict) else []
    named = [i for i in values("/tray/items") if i.get("iconName")]
    fields = {"bluetooth": (values("/bluetooth/devices"), "iconUrl"), "tray": (named, "icon"),
              "notifications": (values("/notifications/items"), "appIcon"),
              "mpris": (values("/media/players"), "iconUrl")}
    return {b: (sum(1 for x in xs if x.get(field)), len(xs)) for b, (xs, field) in fields.items()}


def wait_icons(c, sub, on):
    """Waits (up to 10 s) until every icon the backends in `on` that run were asked for resolved
    (without the theme: until they were asked); returns (those backends, the counts). Fails,
    loudly, when one of them resolved none: the figures would be those of a session without
    lookups."""
    states = pointer_get(c.mirror(sub), "/daemon/backends", {})
    expect = [b for b in ICON_BACKENDS if b in on and states.get(b, {}).get("state") == "running"]
    check = lookups_expected() is None

    def done():
        counts = icon_counts(c.mirror(sub))
        return all(counts[b][1] >= ICONS_ASKED[b] and (counts[b][0] == counts[b][1] or not check) for b in expect)
    try:
        c.wait_for(done, timeout=10, what="every icon resolved")
    except TimeoutError:
        pass   # the counts say which did not
    counts = icon_counts(c.mirror(sub))
    none = [b for b in expect if counts[b][0] == 0]
    if check and none:
        raise SystemExit(f"FAIL: no icon resolved by {', '.join(none)} ("
                         + ", ".join(f"{b} {counts[b][0]}/{counts[b][1]}" for b in expect)
                         + f") although {ADWAITA} is installed: the figures would be those of a session "
                         "without icon lookups")
    return expect, counts


def one(env, qsd_env, backends, present, wayland, items):
    """qsd with `backends` alone: its memory once settled. Starts the tray items the first time
    (they register with qsd's watcher, and again with each new one)."""
    env.start_qsd(debug_api=False, env=qsd_env, backends=backends)
    if present and "tray" in backends and not items:
        items.append(trayutil.start_items(env, TRAY_ITEMS, log="rss-items"))
    c = env.client()
    sub = c.subscribe(["/daemon/backends"] + [f"/{r}" for r in ("network", "power", "audio", "notifications", "media",
                                                                 "bluetooth", "tray", "wayland")])
    wait_settled(c, sub, backends, present, wayland)
    sender = None
    if present:
        if "notifications" in backends:
            sender = show_notifications(env, c, sub)
        wait_icons(c, sub, backends)
    time.sleep(0.5)
    figures = memory(env.daemon.pid)
    if sender:
        sender.close()
    c.close()
    env.stop_qsd()
    return figures


def per_backend(env, qsd_env, wayland, items, on):
    absent = Env()
    try:
        rows = []
        none_present = one(env, qsd_env, [], True, wayland, items)
        none_absent = one(absent, None, [], False, False, [])
        for b in on:
            rows.append((b, one(env, qsd_env, [b], True, wayland, items), one(absent, None, [b], False, False, [])))
        # What a backend without its service adds to a qsd that runs the others (also without
        # theirs): costs every backend shares (the bus connections, the params-checking API
        # description, the registry's code) are left out.
        all_absent = one(absent, None, on, False, False, [])
        marginal = {b: one(absent, None, [x for x in on if x != b], False, False, []) for b in on}
    finally:
        absent.close()
    mib = 1024
    print()
    print("# Per backend: qsd with that backend alone, against qsd with no backend (MiB; + is the backend's cost)")
    print(f"{'backend':<14} {'service present: RSS':>21} {'Pss':>13} {'service absent: RSS':>21} {'Pss':>13}")
    print(f"{'(none)':<14} {none_present['rss'] / mib:>21.2f} {none_present['pss'] / mib:>13.2f} "
          f"{none_absent['rss'] / mib:>21.2f} {none_absent['pss'] / mib:>13.2f}")
    for b, p, a in rows:
        def cell(x, base, key, width):
            return f"{x[key] / mib:.2f} ({(x[key] - base[key]) / mib:+.2f})".rjust(width)
        print(f"{b:<14} {cell(p, none_present, 'rss', 21)} {cell(p, none_present, 'pss', 13)} "
              f"{cell(a, none_absent, 'rss', 21)} {cell(a, none_absent, 'pss', 13)}")
    print()
    print(f"# Every service absent: all {len(on)} backends {all_absent['rss'] / mib:.2f} MiB RSS, "
          f"{all_absent['pss'] / mib:.2f} Pss; what each adds to the others (target <= 0.2 MiB)")
    print(f"{'backend':<14} {'RSS':>8} {'Pss':>8}")
    for b in on:
        print(f"{b:<14} {(all_absent['rss'] - marginal[b]['rss']) / mib:>+8.2f} "
              f"{(all_absent['pss'] - marginal[b]['pss']) / mib:>+8.2f}")


def qt_shell(env, c, sub, clients_before):
    """Starts the example bar under Qt's qml runtime (offscreen) against this qsd and returns its
    Popen once it is connected (one more client in /daemon/clients) and its parts are drawn, or
    a reason why it cannot run here."""
    qml_dir = os.path.join(BUILD, "client-qml", "qml")
    if not os.path.exists(os.path.join(qml_dir, "Qsd", "qmldir")):
        return None, f"no QML module in {qml_dir} (a build without WITH_QML)"
    try:
        bins = subprocess.run(["qtpaths6", "--query", "QT_INSTALL_BINS"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None, "no qtpaths6"
    qml = os.path.join(bins, "qml")
    if not os.access(qml, os.X_OK):
        return None, f"no Qt qml runtime at {qml}"
    bar = os.path.join(HERE, "..", "..", "client-qml", "examples", "bar", "bar.qml")
    shell_env = dict(env.env, QML_IMPORT_PATH=qml_dir, QT_QPA_PLATFORM="offscreen", QSD_SOCKET=env.socket)
    shell_env.pop("QML2_IMPORT_PATH", None)
    p = env.spawn([qml, bar], "rss-qt-shell", env=shell_env)
    c.wait_value(sub, "/daemon/clients", predicate=lambda n: (n or 0) > clients_before, timeout=60)
    # Its bindings evaluated and its window drawn: what qsd's Pss depends on is the pages the
    # shell has mapped, so wait until the shell's own RSS stops growing (unchanged over half a
    # second) rather than for a fixed time.
    rss_settled(p.pid)
    if p.poll() is not None:
        return None, f"the bar exited with {p.returncode} (see rss-qt-shell.log)"
    return p, None


def main():
    quick = os.environ.get("QSD_BENCH_QUICK", "0") not in ("", "0")
    subscribers = 4 if quick else 64
    only = os.environ.get("QSD_BENCH_BACKENDS")   # e.g. "nm,upower": the others left out
    on = [b for b in ALL if only is None or b in only.split(",")]
    env = Env()
    try:
        qsd_env, left_out, wayland = start_services(env)
        items = []
        env.start_qsd(debug_api=False, env=qsd_env, backends=on)
        pid = env.daemon.pid
        # Items register with a watcher: qsd's, so they come after it.
        if "tray" in on:
            items.append(trayutil.start_items(env, TRAY_ITEMS, log="rss-items"))
        c = env.client()
        sub = c.subscribe([""])
        wait_settled(c, sub, on, True, wayland)
        sender = show_notifications(env, c, sub) if "notifications" in on else None
        icon_backends, icons = wait_icons(c, sub, on)
        time.sleep(0.5)
        c.pump(0.2)
        tree = c.mirror(sub)
        backends = pointer_get(tree, "/daemon/backends", {})
        leaves = 0
        stack = [tree]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                stack.extend(v.values())
            else:
                leaves += 1
        one_sub = memory(pid)

        clients = []
        for _ in range(subscribers):
            cl = env.client()
            cl.subscribe([""])
            clients.append(cl)
        time.sleep(0.3)
        many = memory(pid)
        hwm = status_kib(pid, "VmHWM")

        print(f"# RSS of qsd with all compiled-in backends against their services ({leaves} leaves in the tree)")
        print("backends: " + ", ".join(f"{k}={v.get('state')}" for k, v in sorted(backends.items())))
        if left_out:
            print("left out: " + "; ".join(left_out))
        why_not = lookups_expected()
        print("icons resolved in the icon theme: "
              + (", ".join(f"{b} {icons[b][0]}/{icons[b][1]}" for b in icon_backends) or "no backend looks icons up")
              + (f"   (NOT CHECKED: {why_not}; the names cannot resolve, and the figures leave out "
                 "what a desktop's icon lookups cost)" if why_not else ""))
        print(f"{'state':<44} {'VmRSS MiB':>10} {'Pss MiB':>8}")
        print(f"{'backends up, 1 whole-tree subscriber':<44} {one_sub['rss'] / 1024:>10.2f} {one_sub['pss'] / 1024:>8.2f}")
        print(f"{f'{subscribers + 1} whole-tree subscribers':<44} {many['rss'] / 1024:>10.2f} {many['pss'] / 1024:>8.2f}"
              f"   (target 9 / 5)")
        print(f"{'VmHWM':<44} {hwm / 1024:>10.2f}")
        # RssFile is pages of the binary and its libraries (libc, libstdc++, libsystemd,
        # libpipewire...), shared with every other process that maps them; RssAnon is qsd's own.
        print(f"{'  of which RssAnon (heap, stacks: qsd own)':<44} {many['anon'] / 1024:>10.2f}")
        print(f"{'  of which RssFile (binary and libraries)':<44} {many['file'] / 1024:>10.2f}")
        print("where it is (per mapping, MiB, the largest first):")
        alone = by_mapping(pid)
        for name, (rss, pss) in sorted(alone.items(), key=lambda kv: -kv[1][0])[:24]:
            print(f"  {name:<42} RSS {rss / 1024:5.2f}  Pss {pss / 1024:5.2f}")
        binary = os.path.realpath(os.environ["QSD_BIN"])
        symbols = defined_symbols(binary)
        order = function_order(symbols) if symbols else None
        if order:
            print(f"  (the binary has {order[1]} of the {order[0]} functions daemon/function-order.txt lays out "
                  "together: fewer, and more of its code is resident; scripts/order-functions lists them again)")
        stray = stray_code(pid, binary, symbols) if symbols else None
        if stray:
            print(f"  (of the binary's code outside those functions, {stray[0]} of {stray[1]} windows of 64 KiB are "
                  "resident: more than one or two is code that runs and is not listed)")
        shell, why = qt_shell(env, c, sub, pointer_get(c.mirror(sub), "/daemon/clients", 0))
        if shell:
            beside = memory(pid)
            mapped = by_mapping(pid)
            print("# with a Qt shell beside it (the example bar under Qt's qml runtime, offscreen, one more "
                  "client): qsd's own figures")
            print(f"{'  RSS / Pss':<44} {beside['rss'] / 1024:>10.2f} {beside['pss'] / 1024:>8.2f}   (target 9 / 5)")
            print("  what the shell shares (Pss MiB without it -> with it, the largest changes):")
            moved = sorted(mapped, key=lambda n: mapped[n][1] - alone.get(n, [0, 0])[1])
            for name in [n for n in moved if mapped[n][1] < alone.get(n, [0, 0])[1]][:8]:
                print(f"  {name:<42} Pss {alone[name][1] / 1024:5.2f} -> {mapped[name][1] / 1024:5.2f}")
            shell.terminate()
            shell.wait(10)
        else:
            print(f"# with a Qt shell beside it: left out ({why})")
        for cl in clients:
            cl.close()
        if sender:
            sender.close()
        c.close()
        env.stop_qsd()
        if os.environ.get("QSD_BENCH_PER_BACKEND", "1") not in ("", "0"):
            per_backend(env, qsd_env, wayland, items, on)
    finally:
        env.close()


if __name__ == "__main__":
    main()
