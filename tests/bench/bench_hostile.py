#!/usr/bin/python3
"""Hostile peers: what each attack of tests/integration/test_tray_hostile.py (and the slow-client
one of test_slow_client.py) costs the daemon, at full size. Prints, per attack:

  stalls  the latency of tree.get from another client while the attack runs (a prober sends
          one, waits for the answer, sends the next): p50, p99, max, and the attack's duration
  memory  qsd's RSS before, at its peak during the attack (sampled with the probes) and after

Goals (docs/architecture.md, "Hostile peers"): tree.get p99 within 100 ms during each stall,
RSS within 10 MiB of where it started during and after each memory attack. The figures go to
docs/performance.md, "Hostile peers"; nothing is asserted here.

Usage: bench_hostile.py [ATTACK...]   (QSD_BIN selects the daemon; QSD_BENCH_QUICK=1: smaller
attacks, for the smoke run)
"""

import os
import select
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import qsdtest  # noqa: E402
import test_tray_hostile as h  # noqa: E402
import trayutil as t  # noqa: E402
from qsdtest import Env  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]
QUICK = os.environ.get("QSD_BENCH_QUICK") == "1" or "--quick" in sys.argv
MiB = 1024


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


class Probe:
    """tree.get from another client, one after the other, and RSS samples, until `done()`."""

    def __init__(self, env):
        self.env = env
        self.client = env.client()
        self.latencies = []
        self.rss = []

    def run(self, done, pump=(), timeout=600):
        start = time.monotonic()
        while not done():
            if time.monotonic() - start > timeout:
                raise TimeoutError("the attack did not finish")
            t0 = time.monotonic()
            self.client.call("tree.get", {"path": "/tray/available"}, timeout=120)
            self.latencies.append((time.monotonic() - t0) * 1000)
            self.rss.append(self.env.rss_kib())
            for c in pump:
                while select.select([c.sock], [], [], 0)[0]:
                    c.read_message(1)
        return time.monotonic() - start

    def report(self, name, seconds, rss0=None, settle=None):
        lat = self.latencies
        if lat:
            line = (f"{name:<28} {seconds:6.1f} s  tree.get p50 {statistics.median(lat):6.2f} ms  p99 {pct(lat, 99):7.2f} ms"
                    f"  max {max(lat):7.2f} ms  ({len(lat)} probes)")
        else:   # the attack was over before the first probe
            line = f"{name:<28} {seconds:6.1f} s  (over before the first probe)"
        if rss0 is not None:
            after = self.env.rss_kib()
            if settle:
                # The heap is trimmed a second after large frees.
                deadline = time.monotonic() + 3
                while time.monotonic() < deadline:
                    after = min(after, self.env.rss_kib())
                    time.sleep(0.1)
            line += f"  RSS {rss0 / MiB:.1f} MiB, peak +{(max(self.rss + [rss0]) - rss0) / MiB:.1f}, after +{(after - rss0) / MiB:.1f}"
        print(line, flush=True)


def tray(env):
    env.start_qsd(backends=["tray"])
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_value(sub, "/tray/available", True, timeout=30)
    return c, sub


def item(c, sub, key):
    return c.mirror(sub)["tray"]["items"].get(key)


# --- stalls -----------------------------------------------------------------------------------

def fifo(env):
    theme = os.path.join(env.dir, "fifo-theme")
    os.makedirs(os.path.join(theme, "hicolor"))
    os.mkfifo(os.path.join(theme, "hicolor", "index.theme"))
    c, sub = tray(env)
    p = Probe(env)
    n = 10 if QUICK else 100
    t.start_items(env, [{"register": "name", "name": "org.qsdtest.Fifo",
                         "props": {"Id": "fifo", "IconThemePath": theme, "IconName": "qsd-0"}}])
    t.control(env, "org.qsdtest.Fifo").LongNames(n, 0)
    key = h.key_of("org.qsdtest.Fifo")
    s = p.run(lambda: (item(c, sub, key) or {}).get("title") == "long names done", [c])
    p.report(f"FIFO index.theme, {n} NewIcon", s)


def menu_icons(env):
    theme = os.path.join(env.dir, "big-theme")
    h.private_tree(theme, 520)
    c, sub = tray(env)
    p = Probe(env)
    n, rounds = (200, 5) if QUICK else (1000, 20)
    name = "org.qsdtest.BigMenu"
    t.start_items(env, [{"register": "name", "name": name, "menu": f"icons:{n}", "props": {"Id": "big", "IconThemePath": theme}}])
    key = h.key_of(name)
    t.control(env, name).Flood(0, rounds)
    s = p.run(lambda: (item(c, sub, key) or {}).get("menu") and item(c, sub, key)["menu"]["children"][0]["label"] == f"Flood {rounds}", [c])
    p.report(f"{n} menu icons x {rounds + 1} builds", s)


def long_names(env):
    theme = os.path.join(env.dir, "tree")
    h.private_tree(theme, 520)
    c, sub = tray(env)
    p = Probe(env)
    n = 10 if QUICK else 60
    name = "org.qsdtest.LongNames"
    t.start_items(env, [{"register": "name", "name": name, "props": {"Id": "long", "IconName": "x", "IconThemePath": theme}}])
    key = h.key_of(name)
    c.wait_for(lambda: item(c, sub, key), timeout=30)
    t.control(env, name).LongNames(n, 256 << 10)
    s = p.run(lambda: item(c, sub, key)["title"] == "long names done", [c])
    p.report(f"{n} 256 KiB icon names", s)


def huge_png(env):
    theme = os.path.join(env.dir, "huge-theme")
    t.write_png(os.path.join(theme, "hicolor", "64x64", "apps", "qsd-huge.png"), 4096, 4096, (0, 0, 255, 255))
    c, sub = tray(env)
    p = Probe(env)
    n = 5 if QUICK else 30
    name = "org.qsdtest.Huge"
    t.start_items(env, [{"register": "name", "name": name, "props": {
        "Id": "huge", "IconThemePath": theme, "IconName": "qsd-huge",
        "OverlayIconPixmap": [t.pixmap(16, 16, (255, 0, 0, 255), quadrant=True)]}}])
    key = h.key_of(name)
    c.wait_for(lambda: item(c, sub, key), timeout=120)
    t.control(env, name).NewIcons(n)
    s = p.run(lambda: item(c, sub, key)["title"] == "new icons done", [c])
    p.report(f"4096 px PNG + overlay x {n}", s)


def unknown_ids(env):
    c, sub = tray(env)
    p = Probe(env)
    ids, times = (20000, 3) if QUICK else (200000, 10)
    name = "org.qsdtest.Flood"
    t.start_items(env, [{"register": "name", "name": name, "menu": 4095, "props": {"Id": "flood"}}])
    key = h.key_of(name)
    c.wait_for(lambda: item(c, sub, key), timeout=120)
    ctl = t.control(env, name)
    ctl.Flood(ids, times, timeout=600)
    s = p.run(lambda: item(c, sub, key)["menu"]["children"][0]["label"] == f"Flood {times}", [c])
    p.report(f"{ids} unknown ids x {times}", s)


# --- memory -----------------------------------------------------------------------------------

def distinct_names(env):
    c, sub = tray(env)
    name = "org.qsdtest.Names"
    t.start_items(env, [{"register": "name", "name": name, "menu": 1, "props": {"Id": "names"}}])
    key = h.key_of(name)
    c.wait_for(lambda: item(c, sub, key), timeout=30)
    p = Probe(env)
    rss0 = env.rss_kib()
    n, rounds = (500, 5) if QUICK else (2000, 30)
    t.control(env, name).Relayout(n, rounds, 200)
    s = p.run(lambda: item(c, sub, key)["menu"]["children"][0]["iconName"].startswith(f"r{rounds}-1-"), [c])
    p.report(f"{n * rounds} distinct icon names", s, rss0, settle=True)


def hosts(env):
    c, sub = tray(env)
    p = Probe(env)
    rss0 = env.rss_kib()
    n = 2000 if QUICK else 20000
    peer = h.LoopBus(env)
    t0 = time.monotonic()
    peer.calls("RegisterStatusNotifierHost", [f"org.qsdtest.Nobody{i}" for i in range(n)])
    s = p.run(lambda: True) + time.monotonic() - t0
    p.rss.append(env.rss_kib())
    p.report(f"{n} hosts nobody owns", s, rss0, settle=True)


def items(env):
    c, sub = tray(env)
    p = Probe(env)
    rss0 = env.rss_kib()
    n = 1000 if QUICK else 10000
    peer = h.LoopBus(env)
    t0 = time.monotonic()
    peer.calls("RegisterStatusNotifierItem", [f"/qsdtest/Item{i}" for i in range(n)])
    s = p.run(lambda: True) + time.monotonic() - t0
    p.rss.append(env.rss_kib())
    p.report(f"{n} items from one connection", s, rss0, settle=True)


def icon_data(env):
    c, sub = tray(env)
    p = Probe(env)
    rss0 = env.rss_kib()
    n = 50 if QUICK else 300
    name = "org.qsdtest.IconData"
    t.start_items(env, [{"register": "name", "name": name, "menu": f"icondata:{n}:100000", "props": {"Id": "icondata"}}])
    key = h.key_of(name)
    s = p.run(lambda: item(c, sub, key), [c])
    p.report(f"{n} x 100 KB menu icon-data", s, rss0, settle=True)
    print(f"{'':<28} icon files: {h.icon_dir_bytes(env) / 1024 / 1024:.1f} MiB", flush=True)


def never_read(env):
    env.start_qsd(backends=[])
    n, count = (8, 20000) if QUICK else (100, 100000)
    idle = []
    for _ in range(n):
        cl = env.client()
        cl.subscribe([""])
        idle.append(cl)
    driver = env.client()
    p = Probe(env)
    p.client.call("debug.set", {"path": "/debug/probe", "value": 0})
    rss0 = env.rss_kib()
    driver.send_raw('{"jsonrpc":"2.0","id":"flood","method":"debug.flood","params":{"path":"/debug/flood","count":%d,"batch":1,"keys":1000}}\n' % count)
    answered = []

    def done():
        while select.select([driver.sock], [], [], 0)[0]:
            msg = driver.read_message(1)
            if msg.get("id") == "flood":
                answered.append(msg)
        return bool(answered)

    orig = p.client.call
    p.client.call = lambda m, params, timeout: orig("tree.get", {"path": "/debug/probe"}, timeout)
    s = p.run(done)
    p.report(f"{n} clients never reading, {count} batches", s, rss0, settle=True)


ATTACKS = {
    "fifo": fifo, "menu-icons": menu_icons, "long-names": long_names, "huge-png": huge_png, "unknown-ids": unknown_ids,
    "distinct-names": distinct_names, "hosts": hosts, "items": items, "icon-data": icon_data, "never-read": never_read,
}


def main():
    chosen = [a for a in sys.argv[1:] if not a.startswith("--")] or list(ATTACKS)
    print(f"qsd: {qsdtest.QSD}{' (quick)' if QUICK else ''}")
    for name in chosen:
        env = Env()
        try:
            ATTACKS[name](env)
        finally:
            env.close()


if __name__ == "__main__":
    main()
