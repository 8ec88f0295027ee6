#!/usr/bin/python3
"""Tray: (1) latency from an item's NewIcon signal to the tree.changed line at a qsd subscriber,
(2) qsd's RSS with 50 items, each with a 100-entry DBusMenu (and with 10 items of 15 entries).

(1) A test item (tests/integration/tray_item.py) changes its icon and emits NewIcon in its
BenchIcon method, which returns CLOCK_MONOTONIC read just before the emission. One small C
program (tests/bench/listener.c) is both a qsd subscriber (to the item's `icon` field,
timestamping the tree.changed line) and, for comparison, a plain sd-bus host doing what any host
must after NewIcon: it catches the signal and re-reads IconName, IconPixmap and IconThemePath
with three asynchronous Gets, timestamping the last answer. qsd does the same three Gets (the
Python item answers both), then resolves the icon and publishes. Two kinds:
  name    IconName alternates between two icons of a private theme tree (a theme lookup)
  pixmap  a new 32x32 IconPixmap each time (ARGB -> RGBA, hash, PNG written, old file deleted)
The test environment (and so $XDG_RUNTIME_DIR, where the PNG files go) is put on /dev/shm when
there is one: a session's $XDG_RUNTIME_DIR is a tmpfs, and creating files on a disk file system
would measure its journal instead.
(2) One process serves 50 items registered by object path, each with a 32x32 pixmap and a flat
100-entry menu; RSS is read from /proc before the items and once all 50 are in the tree.

Usage: bench_tray.py [SAMPLES]   (default 500; 50 with QSD_BENCH_QUICK=1 or --quick; QSD_BIN selects the daemon)
"""

import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import callgrind  # noqa: E402
import listener  # noqa: E402
import qsdtest  # noqa: E402
from benchstat import percentile  # noqa: E402
import trayutil  # noqa: E402
from qsdtest import Env  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def latency(env, exe, kind, samples, warmup):
    name = f"org.qsdtest.Bench{kind.capitalize()}"
    theme = os.path.join(env.dir, "bench-theme")
    for i, colour in enumerate([(200, 0, 0, 255), (0, 0, 200, 255)]):
        trayutil.write_png(os.path.join(theme, "hicolor", "64x64", "apps", f"qsd-bench-{i}.png"), 64, 64, colour)
    props = {"Id": name, "Status": "Active", "IconThemePath": theme}
    if kind == "name":
        props["IconName"] = "qsd-bench-1"
    else:
        props["IconPixmap"] = [[32, 32, [1, 2, 3, 255]]]
    trayutil.start_items(env, [{"register": "name", "name": name, "bench": kind, "props": props}])
    key = name + "/StatusNotifierItem"
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_for(lambda: key in c.mirror(sub)["tray"]["items"], what="bench item")
    c.close()
    tree = "/tray/items/" + key.replace("~", "~0").replace("/", "~1") + "/icon"
    callgrind.start(env.daemon.pid)
    # The plain host is timed on even samples, qsd alone on odd ones.
    args = ["--match", "type='signal',interface='org.kde.StatusNotifierItem',member='NewIcon',path='/StatusNotifierItem'",
            "--host-get", "org.kde.StatusNotifierItem:IconName,IconPixmap,IconThemePath",
            "--call", name, "/StatusNotifierItem", "org.qsdtest.Control", "BenchIcon", "u", "--timeout", "5",
            env.socket, tree]
    bus, qsd, missed = listener.run(exe, args, 2 * samples + warmup, warmup, env.env)
    callgrind.stop(env.daemon.pid, env.dir, 2 * samples + warmup)
    return bus, qsd, missed


def rss(env, count, entries):
    env.stop_qsd()
    env.start_qsd(backends=["tray"], debug_api=False)
    c = env.client()
    sub = c.subscribe(["/tray/available"])
    c.wait_value(sub, "/tray/available", True)
    time.sleep(0.5)
    before = rss_kib(env.daemon.pid)
    cfg = [{"register": "path", "path": f"/item/{i}", "menu": entries,
            "props": {"Id": f"bench-{i}", "Title": f"Item {i}", "Status": "Active",
                      "IconPixmap": [[32, 32, [i, 100, 200, 255]]]}} for i in range(count)]
    t0 = time.monotonic()
    items = trayutil.start_items(env, cfg, log="rss-items")
    sub2 = c.subscribe(["/tray/items"])

    def complete():
        got = c.mirror(sub2).get("tray", {}).get("items", {})
        return len(got) == count and all(len(i["menu"]["children"]) == entries for i in got.values())

    c.wait_for(complete, timeout=120, what="all items with their menus")
    elapsed = time.monotonic() - t0
    time.sleep(0.5)
    after = rss_kib(env.daemon.pid)
    icons = len(os.listdir(os.path.join(env.run, "qsd", "icons")))
    size = len(json.dumps(c.call("tree.get", {"path": "/tray"})["value"]))
    print(f"Tray RSS, {count} items x {entries}-entry menu (one process serving them, registered by path)")
    print(f"  qsd RSS before items : {before} KiB")
    print(f"  qsd RSS with items   : {after} KiB  (+{after - before} KiB, {(after - before) / count:.1f} KiB per item)")
    print(f"  /tray as JSON        : {size / 1024:.0f} KiB; icon files: {icons}; all in the tree {elapsed:.2f} s after start")
    c.close()
    items.terminate()
    items.wait(10)


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1" or "--quick" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    samples = int(args[0]) if args else (50 if quick else 500)
    warmup = 5 if quick else 50
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        tempfile.tempdir = "/dev/shm"
    env = Env()
    qsdtest.QSD = callgrind.wrap(qsdtest.QSD, env.dir)
    try:
        env.start_qsd(backends=["tray"], debug_api=False)
        c = env.client()
        sub = c.subscribe(["/tray"])
        c.wait_value(sub, "/tray/available", True)
        c.close()
        exe = listener.executable(env.dir)
        print(f"Tray latency, item NewIcon -> the new icon, {samples} samples each")
        for kind in ("name", "pixmap"):
            bus, qsd, missed = latency(env, exe, kind, samples, warmup)
            print(f"  {kind}: ({missed} missed)")
            print(f"    plain sd-bus host, 3 Gets answered : p50 {percentile(bus, 50):8.1f} us   p90 {percentile(bus, 90):8.1f} us"
                  f"   p99 {percentile(bus, 99):8.1f} us   mean {statistics.mean(bus):.1f} us")
            print(f"    qsd tree.changed line              : p50 {percentile(qsd, 50):8.1f} us   p90 {percentile(qsd, 90):8.1f} us"
                  f"   p99 {percentile(qsd, 99):8.1f} us   mean {statistics.mean(qsd):.1f} us")
            print(f"    ratio qsd / plain host             : p50 {percentile(qsd, 50) / percentile(bus, 50):.2f}x   p99 "
                  f"{percentile(qsd, 99) / percentile(bus, 99):.2f}x")

        # RSS: a fresh daemon per case, so the latency runs do not count.
        cases = [(10, 15), (10, 100)] if quick else [(10, 15), (50, 100)]
        for count, entries in cases:
            rss(env, count, entries)
    finally:
        env.close()


if __name__ == "__main__":
    main()
