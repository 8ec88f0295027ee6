#!/usr/bin/python3
"""Tray: (1) latency from an item's NewIcon signal to the tree.changed line at a qsd subscriber,
(2) qsd's RSS with 50 items, each with a 100-entry DBusMenu.

(1) A test item (tests/integration/tray_item.py) changes its icon and emits NewIcon in its
BenchIcon method, which returns CLOCK_MONOTONIC read just before the emission; this process,
subscribed to the item's `icon` field on a raw socket, timestamps the tree.changed line that
carries the new URL. Between the two, qsd re-reads IconName, IconPixmap and IconThemePath from
the item (three Gets answered by the Python item), resolves the icon and publishes. Two kinds:
  name    IconName alternates between two icons of a private theme tree (a theme lookup)
  pixmap  a new 32x32 IconPixmap each time (ARGB -> RGBA, hash, PNG written, old file deleted)
(2) One process serves 50 items registered by object path, each with a 32x32 pixmap and a flat
100-entry menu; RSS is read from /proc before the items and once all 50 are in the tree.

Usage: bench_tray.py [SAMPLES]   (default 500; 50 with QSD_BENCH_QUICK=1 or --quick; QSD_BIN selects the daemon)
"""

import json
import os
import select
import socket
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import qsdtest  # noqa: E402
import trayutil  # noqa: E402
from qsdtest import Env  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


class Raw:
    """A bare NDJSON subscriber: the receipt time of each tree.changed line."""

    def __init__(self, path, tree_path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tree.subscribe",
                                   "params": {"paths": [tree_path]}}).encode() + b"\n")
        self.next_line(10)

    def next_line(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            r, _, _ = select.select([self.s], [], [], max(0, deadline - time.monotonic()))
            if not r:
                return None, None
            self.buf += self.s.recv(1 << 20)
        t = time.monotonic_ns()
        line, self.buf = self.buf.split(b"\n", 1)
        return t, json.loads(line)

    def changed(self, timeout=5):
        while True:
            t, msg = self.next_line(timeout)
            if msg is None:
                return None
            if msg.get("method") == "tree.changed":
                return t


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def latency(env, kind, samples, warmup):
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
    raw = Raw(env.socket, "/tray/items/" + key.replace("~", "~0").replace("/", "~1") + "/icon")
    ctl = trayutil.control(env, name)
    out, missed = [], 0
    for n in range(samples + warmup):
        t0 = int(ctl.BenchIcon(n))
        t1 = raw.changed()
        if t1 is None:
            missed += 1
            continue
        if n >= warmup:
            out.append((t1 - t0) / 1000)
        time.sleep(0.002)
    return out, missed


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1" or "--quick" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    samples = int(args[0]) if args else (50 if quick else 500)
    warmup = 5 if quick else 50
    env = Env()
    try:
        env.start_qsd(backends=["tray"], debug_api=False)
        c = env.client()
        sub = c.subscribe(["/tray"])
        c.wait_value(sub, "/tray/available", True)
        c.close()
        print(f"Tray latency, item NewIcon -> tree.changed line at a subscriber ({samples} samples each)")
        for kind in ("name", "pixmap"):
            values, missed = latency(env, kind, samples, warmup)
            print(f"  {kind:6}: p50 {pct(values, 50):8.1f} us   p90 {pct(values, 90):8.1f} us   p99 {pct(values, 99):8.1f} us"
                  f"   mean {statistics.mean(values):.1f} us   ({missed} missed)")

        # RSS: a fresh daemon, so the latency runs do not count.
        env.stop_qsd()
        env.start_qsd(backends=["tray"], debug_api=False)
        c = env.client()
        sub = c.subscribe(["/tray/available"])
        c.wait_value(sub, "/tray/available", True)
        time.sleep(0.5)
        before = rss_kib(env.daemon.pid)
        count, entries = (10, 100) if quick else (50, 100)
        cfg = [{"register": "path", "path": f"/item/{i}", "menu": entries,
                "props": {"Id": f"bench-{i}", "Title": f"Item {i}", "Status": "Active",
                          "IconPixmap": [[32, 32, [i, 100, 200, 255]]]}} for i in range(count)]
        t0 = time.monotonic()
        trayutil.start_items(env, cfg, log="rss-items")
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
    finally:
        env.close()


if __name__ == "__main__":
    main()
