"""The services the soak restarts, one class per service, each tied to the qsd backend it
feeds: the soak uses the classes whose backend the daemon under test has (hello's
capabilities "backend:<id>"). A class starts its service with some content, stops it, restarts
it (by default: stop, a pause, start), makes small changes while it runs (churn), and names
actions clients may call against it. Every service is started before qsd (so qsd can be given
what it needs to find it, and meets some of them already running) and stopped by the soak.

The real services reuse the integration tests' helpers: tests/integration/pwtest.py for PipeWire
and WirePlumber, trayutil.py with tray_item.py and tray_watcher.py for the tray, waylandenv.py
for sway.

To add a service: write one more class with those methods and add it to SERVICES."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import dbus  # noqa: E402  (Debian's python3: dbusmock and dbus-python live there)

from nmmock import AP, SEC_NONE, NmMock  # noqa: E402
from qsdtest import Client, pointer_get, wait_until  # noqa: E402

UP = "org.freedesktop.UPower"
UP_PATH = "/org/freedesktop/UPower"
MOCK = "org.freedesktop.DBus.Mock"
HADESS = "net.hadess.PowerProfiles"


def escape(token):
    return token.replace("~", "~0").replace("/", "~1")


class Service:
    name = "service"
    backend = ""
    churn_per_second = 5   # how often churn() is called while the service runs, on average

    def __init__(self, env, tree=None, error=None):
        self.env = env
        self.proc = None
        # The whole tree as the soak's observer last read it (for keys to act on), and how to
        # report something qsd did wrong.
        self.tree = tree or (lambda: {})
        self.error = error or (lambda what: print(f"soak: ERROR {what}", flush=True))
        self.counts = {}

    @staticmethod
    def missing():
        """Why the service cannot run on this machine (a tool not installed), or None."""
        return None

    def qsd_env(self, env):
        """Adds to qsd's environment what it needs to find the service (after the first start)."""

    def start(self):
        raise NotImplementedError

    def stop(self):
        if self.proc and self.proc.poll() is None:
            # Not always politely: a service may die as well as exit.
            self.proc.send_signal(random.choice([signal.SIGTERM, signal.SIGKILL]))
            self.proc.wait(10)
        self.proc = None

    def restart(self, pause):
        """One restart; pause(seconds) waits unless the soak is ending."""
        self.stop()
        pause(random.uniform(0, 2))   # down for a moment, or not at all
        self.start()

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def churn(self):
        """One small change of the service's state (called while it runs; may fail if it just went)."""

    def actions(self):
        """[(method, params)] a client may call; params may be a callable giving them."""
        return []

    def note(self):
        """What the restarts were, for the report ("" when they are all alike)."""
        return ", ".join(f"{n} {k}" for k, n in self.counts.items())

    def count(self, key):
        self.counts[key] = self.counts.get(key, 0) + 1

    def at(self, path, default=None):
        return pointer_get(self.tree(), path, default)


def reap(proc, sig=signal.SIGTERM):
    if proc is not None and proc.poll() is None:
        proc.send_signal(sig)
    if proc is not None:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


class NetworkManagerMock(Service):
    name = "NetworkManager (python-dbusmock)"
    backend = "nm"

    def start(self):
        self.nm = NmMock(self.env)
        self.proc = self.nm.proc
        m = self.nm
        self.wlan = m.add_wifi("wlan0")
        self.aps = [m.add_ap(self.wlan, "ap_home", "HomeNet", "00:11:22:33:44:55", strength=70),
                    m.add_ap(self.wlan, "ap_cafe", "Cafe", "00:11:22:33:44:66", strength=40, security=SEC_NONE),
                    m.add_ap(self.wlan, "ap_far", "Far", "00:11:22:33:44:77", strength=20)]
        home = m.add_profile(self.wlan, "conn_home", "HomeNet")
        m.activate(self.wlan, home, self.aps[0], "Active_home")
        m.add_wired("eth0")

    def stop(self):
        super().stop()
        try:
            self.nm.bus.close()
        except Exception:  # noqa: BLE001
            pass

    def churn(self):
        ap = random.choice(self.aps)
        self.nm.iface(ap).UpdateProperties(AP, {"Strength": dbus.Byte(random.randint(5, 99))})
        if random.random() < 0.1:
            self.nm.mock.SetConnectivity(random.choice([1, 4]))

    def actions(self):
        return [("network.setWifiEnabled", lambda: {"enabled": random.random() < 0.8}),
                ("network.setScannerEnabled", lambda: {"device": "wlan0", "enabled": random.random() < 0.5}),
                ("network.checkConnectivity", {}),
                ("network.connect", {"device": "wlan0", "network": "HomeNet"}),
                ("network.connect", {"device": "eth0", "network": "eth0"}),
                ("network.setAutoconnect", lambda: {"device": "eth0", "autoconnect": random.random() < 0.5})]


class UPowerMock(Service):
    name = "UPower (python-dbusmock)"
    backend = "upower"

    def start(self):
        self.proc = self.env.start_mock("upower", {"OnBattery": True, "DaemonVersion": "0.99.20"}, name=UP)
        self.bus = self.env.dbus()
        self.mock = dbus.Interface(self.bus.get_object(UP, UP_PATH), MOCK)
        self.bat = self.mock.AddDischargingBattery("BAT0", "Soak Battery", 80.0, 7200)
        self.mock.SetupDisplayDevice(2, 2, 80.0, 36.7, 50.0, 12.3, 7200, 0, True, "battery-good-symbolic", 3)

    def stop(self):
        super().stop()
        try:
            self.bus.close()
        except Exception:  # noqa: BLE001
            pass

    def churn(self):
        pct = dbus.Double(random.uniform(5, 100))
        self.mock.SetDeviceProperties(self.bat, {"Percentage": pct})
        if random.random() < 0.2:
            self.mock.SetDeviceProperties(UP_PATH + "/devices/DisplayDevice", {"Percentage": pct})
        if random.random() < 0.05:
            self.mock.AddDischargingBattery("BAT1", "Spare", random.uniform(5, 100), 3600)
        if random.random() < 0.05:
            self.mock.RemoveObject(UP_PATH + "/devices/battery_BAT1")
            self.mock.EmitSignal(UP, "DeviceRemoved", "o", [dbus.ObjectPath(UP_PATH + "/devices/battery_BAT1")])


class PowerProfilesMock(Service):
    name = "power-profiles-daemon (python-dbusmock)"
    backend = "upower"

    def start(self):
        self.proc = self.env.start_mock("power_profiles_daemon", None, name=HADESS)

    def actions(self):
        return [("power.setProfile", lambda: {"profile": random.choice(["powerSaver", "balanced", "performance"])}),
                ("power.holdProfile", lambda: {"profile": random.choice(["powerSaver", "performance"]),
                                               "reason": "soak", "applicationId": "soak"})]


class PipeWireService(Service):
    """Real pipewire and wireplumber (pwtest.PipeWire) in the soak's private world: its
    XDG_RUNTIME_DIR, state and config directories and its session bus, which WirePlumber needs.
    After each start: two null sinks, a virtual source and a pw-cat stream playing a tone.
    Restarts are of both daemons, or of WirePlumber alone (the defaults go and come back)."""
    name = "PipeWire + WirePlumber"
    backend = "pipewire"
    churn_per_second = 1.5
    SINKS = ["soak_sink_a", "soak_sink_b"]
    NAMES = SINKS + ["soak_mic", "soak-player"]

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.pw = None
        self.ids = {}     # node.name -> global id, for wpctl
        self.player = None

    @staticmethod
    def missing():
        import pwtest
        for b in pwtest.BINARIES:
            if shutil.which(b) is None:
                return f"{b} is not installed (scripts/install-deps installs it)"
        return None

    def start(self):
        from pwtest import PipeWire
        if self.pw is None:
            self.pw = PipeWire(self.env)   # starts both daemons
        else:
            self.stop()   # whatever is left of the last run (after a failed churn or start)
            self.pw.start()
        self.proc = self.pw.pw
        self.ids = {n: self.pw.add_null(n) for n in self.SINKS}
        self.ids["soak_mic"] = self.pw.add_null("soak_mic", "Audio/Source/Virtual", "MONO")
        self.wpctl("set-default", self.ids[random.choice(self.SINKS)])
        self.play()

    def play(self):
        self.player = self.pw.play("soak-player")   # returns once the node is there
        self.ids["soak-player"] = self.pw.node_id("soak-player")

    def stop(self):
        if self.pw is None:
            return
        sig = random.choice([signal.SIGTERM, signal.SIGKILL])
        reap(self.player, sig)
        self.player = None
        self.pw.kill(self.pw.wp, sig)
        self.pw.kill(self.pw.pw, sig)
        self.pw.wp = self.pw.pw = self.proc = None

    def restart(self, pause):
        if random.random() < 0.25 and self.running():
            self.count("WirePlumber alone")
            self.pw.kill(self.pw.wp, random.choice([signal.SIGTERM, signal.SIGKILL]))
            pause(random.uniform(0, 2))
            self.pw.start_wireplumber()
            self.wpctl("set-default", self.ids[random.choice(self.SINKS)])
            return
        self.count("both daemons")
        super().restart(pause)

    def wpctl(self, *args):
        self.pw.run(["wpctl", *[str(a) for a in args]], check=False)

    def churn(self):
        r = random.random()
        node = self.ids[random.choice([n for n in self.NAMES if n in self.ids])]
        if r < 0.35:
            self.wpctl("set-volume", node, round(random.uniform(0, 1.2), 2))
        elif r < 0.6:
            self.wpctl("set-mute", node, "toggle")
        elif r < 0.8:
            self.wpctl("set-default", self.ids[random.choice(self.SINKS)])
        elif self.player is not None and self.player.poll() is None:
            reap(self.player)   # the stream ends: its node and links go
            self.player = None
            self.ids.pop("soak-player", None)
        else:
            reap(self.player)
            self.play()

    def key(self, names=None):
        """The key of one of the soak's nodes in the tree (a serial), or one that names nothing."""
        nodes = self.at("/audio/nodes", {}) or {}
        keys = [k for k, n in nodes.items() if isinstance(n, dict) and n.get("name") in (names or self.NAMES)]
        return random.choice(keys) if keys else "999999"

    def actions(self):
        return [("audio.setVolume", lambda: {"node": self.key(), "volume": round(random.uniform(0, 1.5), 2)}),
                ("audio.setMuted", lambda: {"node": self.key(), "muted": random.random() < 0.5}),
                ("audio.setPreferredDefault", lambda: {"node": self.key(self.SINKS) if random.random() < 0.9 else None,
                                                       "kind": "sink"}),
                ("audio.monitorPeaks", lambda: {"node": self.key(), "enabled": random.random() < 0.8})]


class TrayItems(Service):
    """Real StatusNotifierItems (tray_item.py, in three processes: two items registered by name,
    one by object path as libappindicator registers, one whose Activate takes 1.5 s), each with a
    DBusMenu,
    and a second watcher (tray_watcher.py, as a bar runs one) that owns the watcher name before
    qsd starts, so qsd begins as its host. A restart is one of: item processes killed and
    started again; the second watcher killed and started again (qsd takes the name over when it
    goes, and refuses it to the next one); the slow item killed while qsd waits for its answer."""
    name = "StatusNotifierItems + a second watcher"
    backend = "tray"
    churn_per_second = 3
    WATCHER = "org.kde.StatusNotifierWatcher"
    SLOW = "org.qsdsoak.Slow"
    PROCS = {
        "a": [{"register": "name", "name": "org.qsdsoak.A", "reregister": True, "menu": "demo",
               "props": {"Id": "soak-a", "Title": "A", "IconName": "soak-a", "Status": "Active",
                         "Category": "ApplicationStatus", "ToolTip": {"title": "A", "description": "<b>a</b>"}}}],
        # Two items in one process: B at the default path, P registered by its object path.
        "bp": [{"register": "name", "name": "org.qsdsoak.B", "reregister": True, "menu": 8,
                "props": {"Id": "soak-b", "Title": "B", "IconPixmap": [[16, 16, [255, 0, 0, 255]],
                                                                       [32, 32, [0, 0, 255, 255]]]}},
               {"register": "path", "name": "org.qsdsoak.P", "path": "/org/ayatana/NotificationItem/soak",
                "reregister": True, "menu": "demo", "props": {"Id": "soak-p", "Title": "P", "IconName": "soak-p"}}],
        "slow": [{"register": "name", "name": SLOW, "slow": 1.5, "reregister": True, "menu": 4,
                  "props": {"Id": "soak-slow", "Title": "slow"}}],
    }
    # Items the churn changes, by the name their control interface is reached at.
    CHURNED = {"org.qsdsoak.A": "/StatusNotifierItem", "org.qsdsoak.B": "/StatusNotifierItem",
               "org.qsdsoak.P": "/org/ayatana/NotificationItem/soak"}

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.procs = {}
        self.watcher = None
        self.bus = None
        self.added = {}   # menu entries added per item since it started (bounded: a menu must not grow for ever)

    def start(self):
        import trayutil
        if self.bus is None:
            self.bus = trayutil.session(self.env)
            self.watcher = trayutil.start_watcher(self.env)
        for which in self.PROCS:
            if which not in self.procs or self.procs[which].poll() is not None:
                self.start_items(which)

    def start_items(self, which):
        import trayutil
        reap(self.procs.pop(which, None))
        self.procs[which] = trayutil.start_items(self.env, self.PROCS[which], log=f"items-{which}")
        for cfg in self.PROCS[which]:
            self.added[cfg["name"]] = 0

    def stop(self):
        for which in list(self.procs):
            reap(self.procs.pop(which), random.choice([signal.SIGTERM, signal.SIGKILL]))
        reap(self.watcher)
        self.watcher = None

    def running(self):
        return len(self.procs) == len(self.PROCS) and all(p.poll() is None for p in self.procs.values())

    def restart(self, pause):
        r = random.random()
        if r < 0.15:
            self.count("second watcher")
            self.restart_watcher()
        elif r < 0.3:
            self.count("slow item killed mid-call")
            self.kill_mid_call(pause)
        else:
            self.count("item processes")
            which = random.sample(list(self.PROCS), random.randint(1, len(self.PROCS)))
            for w in which:
                reap(self.procs.pop(w, None), random.choice([signal.SIGTERM, signal.SIGKILL]))
            pause(random.uniform(0, 2))
            for w in which:
                self.start_items(w)

    def restart_watcher(self):
        """The second watcher goes (if it still runs) and a new one starts. qsd must own the
        name from then on: it was queued for it, and it never lets it go."""
        from qsdtest import PY
        import trayutil
        reap(self.watcher, random.choice([signal.SIGTERM, signal.SIGKILL]))
        log = f"watcher-{len(self.env.procs)}"
        self.watcher = self.env.spawn([PY, os.path.join(trayutil.HERE, "tray_watcher.py")], log)
        try:
            self.watcher.wait(30)
        except subprocess.TimeoutExpired:
            self.error("a second watcher got org.kde.StatusNotifierWatcher while qsd runs")
            return
        with open(os.path.join(self.env.dir, log + ".log")) as f:
            out = f.read()
        if "NameExists" not in out:
            self.error(f"the second watcher failed otherwise: {out[-500:]}")
        self.watcher = None
        self.until("/tray/isWatcher", lambda v: v is True, "qsd to be the watcher")

    def until(self, path, predicate, what, timeout=30):
        c = Client(self.env.socket, timeout=20)
        try:
            def ok():
                try:
                    return predicate(c.call("tree.get", {"path": path}, timeout=20)["value"])
                except Exception:  # noqa: BLE001  (-32001: not there yet)
                    return False
            wait_until(ok, timeout, interval=0.2, what=what)
            return True
        except TimeoutError:
            self.error(f"timed out waiting for {what} ({path})")
            return False
        finally:
            c.close()

    def kill_mid_call(self, pause):
        """tray.activate on the slow item, which is killed before it answers: qsd must answer
        (-32000, it went away; or -32002, the bus's NoReply) and go on."""
        key = self.SLOW + "/StatusNotifierItem"
        if not self.until("/tray/items/" + escape(key), lambda v: v is not None, "the slow item in the tree"):
            return
        c = Client(self.env.socket, timeout=20)
        try:
            c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tray.activate", "params": {"item": key}}) + "\n")
            pause(random.uniform(0.1, 0.8))
            reap(self.procs.pop("slow"), signal.SIGKILL)
            deadline = time.monotonic() + 20
            while True:
                msg = c.read_message(max(0.01, deadline - time.monotonic()))
                if msg.get("id") == 1:
                    break
            code = msg.get("error", {}).get("code")
            if "result" in msg:
                self.count("answered before the kill")
            elif code not in (-32000, -32002):
                self.error(f"tray.activate on an item killed mid-call answered {msg}")
        except (TimeoutError, ConnectionError, OSError) as e:
            self.error(f"tray.activate on an item killed mid-call: {type(e).__name__}: {e}")
        finally:
            c.close()
        pause(random.uniform(0, 1))
        self.start_items("slow")

    def churn(self):
        service = random.choice(list(self.CHURNED))
        ctl = dbus.Interface(self.bus.get_object(service, self.CHURNED[service]), "org.qsdtest.Control")
        r = random.random()
        if r < 0.4:
            ctl.Set("Title", json.dumps(f"{service[-1]} {random.randint(0, 999)}"), "NewTitle")
        elif r < 0.75:
            if service == "org.qsdsoak.B":
                rgba = [random.randint(0, 255) for _ in range(3)] + [255]
                ctl.Set("IconPixmap", json.dumps([[16, 16, rgba], [32, 32, rgba]]), "NewIcon")
            else:
                ctl.Set("IconName", json.dumps(random.choice(["soak-a", "soak-b", "soak-c"])), "NewIcon")
        elif r < 0.85 and self.added.get(service, 0) < 30:
            self.added[service] = self.added.get(service, 0) + 1
            ctl.AddMenuEntry(f"entry {random.randint(0, 999)}")   # LayoutUpdated
        elif r < 0.95:
            ctl.Set("Status", json.dumps(random.choice(["Active", "Passive", "NeedsAttention"])), "NewStatus")
        else:
            # A bar that finds qsd watching registers as its host and goes.
            import trayutil
            bar = trayutil.session(self.env)
            try:
                bar.get_object(self.WATCHER, "/StatusNotifierWatcher").RegisterStatusNotifierHost(
                    bar.get_unique_name(), dbus_interface=self.WATCHER)
            finally:
                bar.close()

    def item(self, with_menu=False):
        items = self.at("/tray/items", {}) or {}
        keys = [k for k, v in items.items() if isinstance(v, dict) and (v.get("menu") or not with_menu)]
        return random.choice(keys) if keys else "org.qsdsoak.A/StatusNotifierItem"

    def menu_ids(self, key, submenus=False):
        ids = []

        def walk(entry):
            if isinstance(entry, dict):
                if not submenus or entry.get("submenu"):
                    ids.append(entry.get("id", 0))
                for child in entry.get("children", []):
                    walk(child)
        walk(self.at("/tray/items/" + escape(key) + "/menu"))
        return ids or [0]

    def menu_event(self):
        key = self.item(with_menu=True)
        return {"item": key, "id": random.choice(self.menu_ids(key)),
                "event": random.choice(["clicked", "clicked", "hovered", "opened", "closed"])}

    def about_to_show(self):
        key = self.item(with_menu=True)
        return {"item": key, "id": random.choice(self.menu_ids(key, submenus=True))}

    def actions(self):
        return [("tray.activate", lambda: {"item": self.item(), "x": random.randint(-10, 2000), "y": random.randint(0, 40)}),
                ("tray.menuEvent", self.menu_event),
                ("tray.menuAboutToShow", self.about_to_show)]


class HeadlessSway(Service):
    """sway 1.7 headless (waylandenv.Sway: as nobody with setpriv under root, WLR_BACKENDS=headless,
    WLR_RENDERER=pixman), with foot windows. qsd is given the socket's absolute path, which
    stays the same across restarts (sway's runtime directory does). Restart: sway killed
    (SIGTERM or SIGKILL; its windows go with it) and started again with two windows. Churn:
    output scale and resolution, windows opened and closed, now and then a new output."""
    name = "sway (headless) + foot windows"
    backend = "wayland"
    churn_per_second = 1
    MAX_WINDOWS = 4

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.sway = None
        self.socket = None
        self.windows = {}   # app id -> foot Popen

    @staticmethod
    def missing():
        from waylandenv import skip_reason
        return skip_reason(need_foot=True)

    def qsd_env(self, env):
        from waylandenv import qsd_env
        env["WAYLAND_DISPLAY"] = qsd_env(self.env, self.sway)["WAYLAND_DISPLAY"]
        env.pop("XDG_CURRENT_DESKTOP", None)

    def start(self):
        from waylandenv import Sway
        if self.sway is None:
            self.sway = Sway(self.env, "soak-sway")
        self.stop()   # whatever is left of the last run (after a failed churn or start)
        self.sway.start()
        self.proc = self.sway.proc
        if self.socket is None:
            self.socket = self.sway.socket
        elif self.sway.socket != self.socket:
            raise RuntimeError(f"sway listens on {self.sway.socket}, not on {self.socket} where qsd looks")
        for _ in range(2):
            self.open_window()

    def stop(self):
        if self.sway is not None:
            self.sway.stop(random.choice([signal.SIGTERM, signal.SIGKILL]))
        self.proc = None
        for app_id in list(self.windows):
            reap(self.windows.pop(app_id))

    def open_window(self):
        for app_id, p in list(self.windows.items()):
            if p.poll() is not None:   # closed by a client (wayland.close is not used) or its sleep ended
                reap(self.windows.pop(app_id))
        free = [f"soak.w{i}" for i in range(self.MAX_WINDOWS) if f"soak.w{i}" not in self.windows]
        if free:
            app_id = free[0]
            self.windows[app_id] = self.sway.foot(app_id, f"Soak {app_id[-1]} {random.randint(0, 999)}")

    def close_window(self):
        app_id = random.choice(list(self.windows))
        if random.random() < 0.5:
            self.sway.msg(f"[app_id={app_id}]", "kill", check=False)
        reap(self.windows.pop(app_id))

    def churn(self):
        r = random.random()
        if r < 0.3:
            self.sway.msg("output", "HEADLESS-1", "scale", random.choice(["1", "1.25", "1.5", "2"]), check=False)
        elif r < 0.5:
            self.sway.msg("output", "HEADLESS-1", "resolution", random.choice(["1920x1080", "1280x720", "1600x900"]),
                          check=False)
        elif r < 0.95:
            if len(self.windows) < 2 or (len(self.windows) < self.MAX_WINDOWS and random.random() < 0.5):
                self.open_window()
            else:
                self.close_window()
        elif len(self.sway.outputs()) < 3:
            self.sway.msg("create_output", check=False)   # outputs cannot be removed: bounded by restarts

    def toplevel(self):
        keys = list((self.at("/wayland/toplevels", {}) or {}).keys())
        return random.choice(keys) if keys else "999999"

    def configure(self):
        outputs = list((self.at("/wayland/outputs", {}) or {}).keys()) or ["HEADLESS-1"]
        p = {"output": random.choice(outputs)}
        r = random.random()
        if r < 0.4:
            p["scale"] = random.choice([1, 1.5, 2])
        elif r < 0.8:
            w, h = random.choice([(1920, 1080), (1280, 720)])
            p["mode"] = {"width": w, "height": h}
        else:
            p["transform"] = random.choice(["normal", "rotated90"])
        return p

    def actions(self):
        return [("wayland.activate", lambda: {"toplevel": self.toplevel()}),
                ("wayland.setMaximized", lambda: {"toplevel": self.toplevel(), "maximized": random.random() < 0.5}),
                ("wayland.configureOutput", self.configure)]


class NotificationSenders(Service):
    """Applications sending notifications: qsd is the server, so there is nothing to start or
    restart. Churn sends one with notify-send (now and then critical, or replacing the last
    one); clients dismiss, invoke (refused: notify-send only offers actions it waits for), turn
    Do-Not-Disturb on and off, clear the history."""
    name = "notification senders (notify-send)"
    backend = "notifications"
    churn_per_second = 4

    @staticmethod
    def missing():
        return None if shutil.which("notify-send") else "notify-send is not installed (libnotify-bin)"

    def start(self):
        self.last = None

    def stop(self):
        pass

    def running(self):
        return True

    def churn(self):
        args = ["-p", "-t", str(random.choice([0, 200, 3000]))]
        args += ["-u", "critical"] if random.random() < 0.1 else []
        args += ["-r", self.last] if self.last and random.random() < 0.3 else []
        out = subprocess.run(["notify-send", *args, "soak", f"<b>{random.random()}</b>"], env=self.env.env,
                             capture_output=True, text=True, timeout=10)
        self.last = out.stdout.strip() if out.returncode == 0 else self.last

    def actions(self):
        def shown():
            return {"id": int(random.choice(list(self.at("/notifications/items", {})) or ["1"]))}
        return [("notifications.dismiss", shown), ("notifications.dismissAll", {}),
                ("notifications.invokeAction", lambda: dict(shown(), action="default")),
                ("notifications.setDnd", lambda: {"enabled": random.random() < 0.3}),
                ("notifications.clearHistory", {})]



class BluezMock(Service):
    """bluetoothd as python-dbusmock's bluez5 (tests/integration/bluezmock.py): two adapters,
    paired and nearby devices. Churn: RSSI, batteries that come and go, devices found and
    forgotten, an adapter removed and added again, questions to qsd's agent (answered by the
    soak's clients, cancelled by BlueZ, or left to time out)."""
    name = "BlueZ (python-dbusmock)"
    backend = "bluetooth"

    def qsd_env(self, env):
        env["QSD_RFKILL"] = os.path.join(self.env.dir, "no-rfkill")
        env["QSD_BLUETOOTH_AGENT_TIMEOUT_MS"] = "3000"

    def start(self):
        from bluezmock import Bluez
        self.bz = Bluez(self.env, ["hci0", "hci1"])
        self.proc = self.bz.proc
        self.addresses = [f"00:11:22:33:44:{i:02X}" for i in range(8)]
        for i, address in enumerate(self.addresses):
            self.bz.add_device(address, f"Device {i}", adapter="hci0" if i < 6 else "hci1")
            if i < 3:
                self.bz.mock.PairDevice("hci0", address, 0)
        self.extra = 0

    def stop(self):
        super().stop()
        try:
            self.bz.bus.close()
        except Exception:  # noqa: BLE001
            pass

    def churn(self):
        from bluezmock import DEVICE
        bz, r = self.bz, random.random()
        address = random.choice(self.addresses[:6])
        path = bz.device_path(address)
        if r < 0.5:
            bz.update(path, DEVICE, {"RSSI": dbus.Int16(random.randint(-95, -30))})
        elif r < 0.65:
            if random.random() < 0.5:
                bz.add_battery(path, random.randint(0, 100))
            else:
                bz.remove_battery(path)
        elif r < 0.75:
            self.extra += 1
            bz.add_device(f"10:00:00:00:{self.extra // 256 % 256:02X}:{self.extra % 256:02X}", f"Found {self.extra}")
        elif r < 0.8:
            # hci1 goes without a word about its devices, and comes back (as after a resume).
            bz.remove_adapter("hci1")
            bz.add_adapter("hci1", "again")
        elif r < 0.95:
            name = bz.qsd_name(self.env.daemon.pid) if self.env.daemon else None
            method = random.choice(["RequestConfirmation"] * 6 + ["DisplayPasskey"] * 3 + ["Cancel"])
            passkey = dbus.UInt32(random.randint(0, 999999))
            if name and method == "Cancel":
                bz.call_agent(name, method, "")
            elif name and method == "RequestConfirmation":
                bz.call_agent(name, method, "ou", dbus.ObjectPath(path), passkey)
            elif name:
                bz.call_agent(name, method, "ouq", dbus.ObjectPath(path), passkey, dbus.UInt16(random.randint(0, 6)))
        else:
            bz.update(bz.device_path(address), DEVICE, {"Alias": "\u00e9" * random.randint(0, 400)})

    def actions(self):
        def request():
            requests = self.at("/bluetooth/agent/requests", {}) or {}
            return {"request": random.choice(list(requests) or ["1"]), "accept": random.random() < 0.5}
        dev = lambda: {"device": "hci0_" + random.choice(self.addresses[:6]).replace(":", "_")}  # noqa: E731
        return [("bluetooth.setDiscovering", lambda: {"adapter": random.choice(["hci0", "hci1"]),
                                                      "enabled": random.random() < 0.6}),
                ("bluetooth.setEnabled", lambda: {"adapter": "hci0", "enabled": random.random() < 0.8}),
                ("bluetooth.connect", dev),
                ("bluetooth.disconnect", dev),
                ("bluetooth.setTrusted", lambda: dict(dev(), trusted=random.random() < 0.5)),
                ("bluetooth.answer", request)]


SERVICES = [NetworkManagerMock, UPowerMock, PowerProfilesMock, PipeWireService, TrayItems, HeadlessSway,
            NotificationSenders, BluezMock]
