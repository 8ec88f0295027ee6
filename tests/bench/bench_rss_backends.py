#!/usr/bin/python3
"""RSS of qsd with every compiled-in backend running against its service, idle and with 64
whole-tree subscribers (target in docs/performance.md: <= 9 MiB RSS and <= 5 MiB Pss with all backends and 64 subscribers).

The services, all started here: python-dbusmock's NetworkManager (a Wi-Fi device with 4
access points, a wired device, saved profiles, an active connection), UPower (a discharging
battery) and power-profiles-daemon on private system and session buses; real pipewire and
wireplumber with 4 null sinks, a null source and 2 playing streams; BlueZ (bluez5 mock) with an
adapter and 6 paired devices; 10 tray items with
15-entry menus (a typical tray) on the session bus; headless sway with 2 outputs and 2 foot
windows. A service that cannot run here (no sway, ...) is left out and said so; its backend
then runs without it and reports that in /daemon/backends.

Usage: bench_rss_backends.py   (QSD_BIN selects the daemon, default build/daemon/qsd;
                                QSD_BENCH_QUICK=1: 4 subscribers instead of 64;
                                QSD_BENCH_BACKENDS=nm,upower: only those backends run)
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
BUILD = os.path.join(HERE, "..", "..", "build")
os.environ.setdefault("QSD_BIN", os.path.join(BUILD, "daemon", "qsd"))
os.environ.setdefault("QSCTL_BIN", os.path.join(BUILD, "cli", "qsctl"))

import pwtest  # noqa: E402
import trayutil  # noqa: E402
import waylandenv  # noqa: E402
from nmmock import NmMock  # noqa: E402
from qsdtest import Env, pointer_get  # noqa: E402


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    quick = os.environ.get("QSD_BENCH_QUICK", "0") not in ("", "0")
    subscribers = 4 if quick else 64
    env = Env()
    try:
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
        # BlueZ: one adapter, six paired devices, two of them connected with a battery.
        from bluezmock import Bluez
        bz = Bluez(env, ["hci0"])
        for i in range(6):
            path = bz.add_device(f"00:11:22:33:44:{i:02X}", f"Device {i}")
            bz.mock.PairDevice("hci0", f"00:11:22:33:44:{i:02X}", 0)
            if i < 2:
                bz.mock.ConnectDevice("hci0", f"00:11:22:33:44:{i:02X}")
                bz.add_battery(path, 60 + i)

        left_out = []
        pw = pwtest.PipeWire(env)
        for i in range(4):
            pw.add_null(f"bench_sink_{i}")
        pw.add_null("bench_source", media_class="Audio/Source/Virtual", positions="MONO")
        pw.play("bench-player-a", target="bench_sink_0")
        pw.play("bench-player-b", target="bench_sink_1")
        qsd_env = None
        why = waylandenv.skip_reason()
        if why:
            left_out.append(f"sway ({why})")
        else:
            sway = waylandenv.Sway(env).start()
            sway.msg("create_output")
            sway.foot("bench.a", "Window A")
            sway.foot("bench.b", "Window B")
            qsd_env = waylandenv.qsd_env(env, sway)

        only = os.environ.get("QSD_BENCH_BACKENDS")   # e.g. "nm,upower": the others left out
        env.start_qsd(debug_api=False, env=qsd_env, backends=only.split(",") if only is not None else None)
        # Items register with a watcher: qsd's, so they come after it.
        trayutil.start_items(env, [{"register": "path", "path": f"/item/{i}", "menu": 15,
                                    "props": {"Id": f"app-{i}", "Title": f"App {i}", "Status": "Active",
                                              "IconPixmap": [[32, 32, [i, 100, 200, 255]]]}} for i in range(10)],
                             log="rss-items")
        pid = env.daemon.pid
        c = env.client()
        sub = c.subscribe([""])
        on = set(only.split(",")) if only is not None else {"nm", "upower", "pipewire", "tray", "wayland", "bluetooth"}
        if "nm" in on:
            c.wait_value(sub, "/network/available", True, timeout=20)
        if "upower" in on:
            c.wait_value(sub, "/power/available", True, timeout=20)
        if "pipewire" in on:
            c.wait_value(sub, "/audio/available", True, timeout=20)
        if "bluetooth" in on and "bluetooth" in pointer_get(c.mirror(sub), "/daemon/backends", {}):
            c.wait_for(lambda: len(pointer_get(c.mirror(sub), "/bluetooth/devices", {})) == 6, timeout=20,
                       what="6 Bluetooth devices")
        if "tray" in on:
            c.wait_for(lambda: len(pointer_get(c.mirror(sub), "/tray/items", {})) == 10, timeout=60,
                       what="10 tray items")
        if qsd_env and "wayland" in on:
            c.wait_for(lambda: len(pointer_get(c.mirror(sub), "/wayland/toplevels", {})) == 2, timeout=30,
                       what="2 toplevels")
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
        one = status_kib(pid, "VmRSS")

        clients = []
        for _ in range(subscribers):
            cl = env.client()
            cl.subscribe([""])
            clients.append(cl)
        time.sleep(0.3)
        many = status_kib(pid, "VmRSS")
        hwm = status_kib(pid, "VmHWM")
        anon, files = status_kib(pid, "RssAnon"), status_kib(pid, "RssFile")
        # PSS divides each shared page by the number of processes mapping it: what qsd adds to
        # a session where other processes use the same libraries.
        with open(f"/proc/{pid}/smaps_rollup") as f:
            pss = next(int(line.split()[1]) for line in f if line.startswith("Pss:"))

        print(f"# RSS of qsd with all compiled-in backends against their services ({leaves} leaves in the tree)")
        print("backends: " + ", ".join(f"{k}={v.get('state')}" for k, v in sorted(backends.items())))
        if left_out:
            print("left out: " + "; ".join(left_out))
        print(f"{'state':<44} {'VmRSS MiB':>10}")
        print(f"{'backends up, 1 whole-tree subscriber':<44} {one / 1024:>10.2f}")
        print(f"{f'{subscribers + 1} whole-tree subscribers':<44} {many / 1024:>10.2f}")
        print(f"{'VmHWM':<44} {hwm / 1024:>10.2f}")
        # RssFile is pages of the binary and its libraries (libc, libstdc++, libsystemd,
        # libpipewire...), shared with every other process that maps them; RssAnon is qsd's own.
        print(f"{'  of which RssAnon (heap, stacks: qsd own)':<44} {anon / 1024:>10.2f}")
        print(f"{'  of which RssFile (binary and libraries)':<44} {files / 1024:>10.2f}")
        print(f"{'Pss (shared pages split among their users)':<44} {pss / 1024:>10.2f}")
        for cl in clients:
            cl.close()
        c.close()
    finally:
        env.close()


if __name__ == "__main__":
    main()
