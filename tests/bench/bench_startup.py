#!/usr/bin/python3
"""Start-up: how long a qsd that has just been started (by socket activation at login, or after a
crash) takes until a bar sees the whole session, and what that costs it in CPU time.

The services are those of bench_rss_backends.py, started once: NetworkManager, UPower and
power-profiles-daemon (python-dbusmock), real PipeWire and WirePlumber with 4 null sinks and 2
streams, BlueZ with 6 paired devices, 10 tray items with 15-entry menus, headless sway with 2
windows, an MPRIS player; the icon theme is looked up as a desktop does. Then qsd is started
again and again (all eight backends), and each run times, from the moment qsd is spawned:

  listening  qsd says READY=1 (sd_notify, sent once it listens) on the benchmark's NOTIFY_SOCKET
  answer     the answer to tree.subscribe [""] (the first tree a bar gets)
  <backend>  the moment the subscriber's mirror holds that backend's service's objects: the
             network, power and audio `available`, the player, the 6 Bluetooth devices, the 10
             tray items (the items register again when they see qsd's watcher appear: their
             own reaction is in that figure), the 2 Wayland toplevels
  settled    all of the above

and qsd's CPU time (user + system, /proc/<pid>/schedstat) when settled. A milestone is timed
when the line that completes it is read, in this Python client: a few hundred microseconds late.

Usage: bench_startup.py [RUNS]   (default 10; 3 with QSD_BENCH_QUICK=1 or --quick; QSD_BIN
selects the daemon, default build/daemon/qsd)
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import bench_rss_backends as services  # noqa: E402
import trayutil  # noqa: E402
from benchstat import percentile as pct  # noqa: E402
from qsdtest import Client, Env, NotifySocket, pointer_get  # noqa: E402


def cpu_ms(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e6


def conditions(wayland):
    """{milestone: predicate on the mirrored tree}: the service's objects are in the tree (what
    bench_rss_backends.wait_settled waits for)."""
    def count(path, n):
        return lambda tree: len(pointer_get(tree, path, {}) or {}) == n
    found = {
        "nm": lambda tree: pointer_get(tree, "/network/available") is True,
        "upower": lambda tree: pointer_get(tree, "/power/available") is True,
        "pipewire": lambda tree: pointer_get(tree, "/audio/available") is True,
        "notifications": lambda tree: pointer_get(tree, "/notifications/available") is True,
        "mpris": lambda tree: "bench" in (pointer_get(tree, "/media/players", {}) or {}),
        "bluetooth": count("/bluetooth/devices", 6),
        "tray": count("/tray/items", len(services.TRAY_ITEMS)),
    }
    if wayland:
        found["wayland"] = count("/wayland/toplevels", 2)
    return found


def one_run(env, qsd_env, found, notify):
    t0 = time.monotonic()
    env.start_qsd(debug_api=False, env=qsd_env, backends=services.ALL, wait=False)
    pid = env.daemon.pid
    notify.wait_for("READY", "1")
    at = {"listening": time.monotonic() - t0}
    c = Client(env.socket)
    sub = c.subscribe([""])
    at["answer"] = time.monotonic() - t0
    deadline = t0 + 60
    while True:
        tree = c.mirror(sub)
        now = time.monotonic() - t0
        for name, ok in found.items():
            if name not in at and ok(tree):
                at[name] = now
        if all(name in at for name in found):
            break
        if time.monotonic() > deadline:
            missing = ", ".join(n for n in found if n not in at)
            raise TimeoutError(f"qsd did not show {missing} within 60 s")
        try:
            c.read_message(deadline - time.monotonic())
        except TimeoutError:
            pass
    at["settled"] = max(at[name] for name in found)
    cpu = cpu_ms(pid)
    c.close()
    env.stop_qsd()
    return at, cpu


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1" or "--quick" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = int(args[0]) if args else (3 if quick else 10)
    env = Env()
    try:
        qsd_env, left_out, wayland = services.start_services(env)
        found = conditions(wayland)
        # The tray items register with qsd's watcher, so they start after the first qsd (whose
        # run is not counted); later they register again with each new qsd.
        env.start_qsd(debug_api=False, env=qsd_env, backends=services.ALL)
        trayutil.start_items(env, services.TRAY_ITEMS, log="startup-items")
        c = env.client()
        sub = c.subscribe([""])
        services.wait_settled(c, sub, services.ALL, True, wayland)
        c.close()
        env.stop_qsd()

        # qsd tells it listens as it tells systemd (Type=notify), on a socket of our own.
        notify = NotifySocket(env.dir)
        run_env = dict(qsd_env, NOTIFY_SOCKET=notify.path)
        results = [one_run(env, run_env, found, notify) for _ in range(runs)]
        notify.close()
        order = ["listening", "answer"] + sorted(found, key=lambda n: pct([r[0][n] for r in results], 50)) + ["settled"]
        print(f"# qsd start-up, all eight backends against their services, {runs} runs "
              "(ms from the spawn; the subscriber's view)")
        if left_out:
            print("left out: " + "; ".join(left_out))
        print(f"{'milestone':<16} {'p50':>8} {'max':>8}")
        for name in order:
            values = [r[0][name] * 1000 for r in results]
            print(f"{name:<16} {pct(values, 50):>8.1f} {max(values):>8.1f}")
        cpu = [r[1] for r in results]
        print(f"{'qsd CPU, settled':<16} {pct(cpu, 50):>8.1f} {max(cpu):>8.1f}   (ms of user + system time)")
    finally:
        env.close()


if __name__ == "__main__":
    main()
