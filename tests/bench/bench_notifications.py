#!/usr/bin/python3
"""Notifications: (1) latency of Notify to the tree.changed line at a qsd subscriber, against
Notify to its reply at the caller, in the same run; (2) a burst of 1000 notifications (from ten
applications: qsd shows at most 100 from one): qsd's CPU time, RSS after, and the history file's
size once they are in history; (3) idle wakeups with 20
notifications shown whose timeouts are an hour away, and with 20 that expire one after the other.

(1) One small C program (tests/bench/listener.c --notify) is both the application and a shell: it
calls Notify on the private session bus (sd-bus, asynchronously) and is subscribed to
/notifications/items on qsd's socket; it timestamps, from just before the call is sent, the
Notify reply and the tree.changed line that adds the notification (its summary is unique). qsd
sends the reply before it writes the tree, so the reply is the floor.
(2) The burst comes from ten senders, one after the other, each at full speed
(tests/integration/notifyutil.py's flood: 99 Notify calls without waiting, then one that
waits), default timeout (5 s); CPU from
/proc/<pid>/stat, RSS from /proc/<pid>/status; the file is read once the 200 newest are in
history (the rest went when history was full).
(3) Context switches of qsd (voluntary + non-voluntary, /proc/<pid>/status) over 10 s.

The test environment is put on /dev/shm when there is one, as a session's $XDG_RUNTIME_DIR is.

Usage: bench_notifications.py [SAMPLES]   (default 1000; 100 with QSD_BENCH_QUICK=1; QSD_BIN selects the daemon)
"""

import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import notifyutil  # noqa: E402
import callgrind  # noqa: E402
import listener  # noqa: E402
import qsdtest  # noqa: E402
from qsdtest import Env, wait_until  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def proc_status(pid, *fields):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k = line.split(":")[0]
            if k in fields:
                out[k] = int(line.split()[1])
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().split(")")[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def switches(pid):
    s = proc_status(pid, "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
    return s["voluntary_ctxt_switches"], s["nonvoluntary_ctxt_switches"]


def environment():
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tempfile.tempdir = shm
    e = Env(buses=True)
    tempfile.tempdir = None
    e.env.pop("WATCHDOG_USEC", None)
    return e


def latency(samples):
    e = environment()
    try:
        qsdtest.QSD = callgrind.wrap(qsdtest.QSD, e.dir)
        notifyutil.start(e, debug_api=False)
        exe = listener.executable(e.dir)
        warmup = max(10, samples // 20)
        callgrind.start(e.daemon.pid)
        reply, tree, misses = listener.run(exe, ["--notify", "--timeout", "5", e.socket, "/notifications/items"],
                                           samples + warmup, warmup, e.env)
        callgrind.stop(e.daemon.pid, e.dir, samples + warmup, "notification")
        print(f"(1) Notify -> reply at the caller vs Notify -> tree.changed at a subscriber, {len(tree)} samples"
              f" ({misses} missed), µs")
        print(f"    {'':28} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}")
        for name, v in (("reply at the caller", reply), ("tree.changed at subscriber", tree)):
            print(f"    {name:28} {pct(v, 50):8.0f} {pct(v, 90):8.0f} {pct(v, 99):8.0f} {max(v):8.0f}")
        diff = [t - r for r, t in zip(reply, tree)]
        print(f"    {'tree.changed - reply':28} {pct(diff, 50):8.0f} {pct(diff, 90):8.0f} {pct(diff, 99):8.0f} {max(diff):8.0f}")
        print(f"    ratio tree.changed / reply: p50 {pct(tree, 50) / pct(reply, 50):.2f}, p99 {pct(tree, 99) / pct(reply, 99):.2f}")
    finally:
        e.close()


def burst():
    e = environment()
    try:
        c, sub = notifyutil.start(e, debug_api=False)
        c.close()
        pid = e.daemon.pid
        notifyutil.flood(e, 10, timeout=1)
        rss0 = proc_status(pid, "VmRSS")["VmRSS"]
        cpu0 = cpu_seconds(pid)
        t0 = time.monotonic()
        # Ten applications (qsd shows at most 100 from one), one after the other at full speed.
        for _ in range(10):
            notifyutil.flood(e, 99, timeout=-1)
        wall = time.monotonic() - t0
        cpu = cpu_seconds(pid) - cpu0
        rss1 = proc_status(pid, "VmRSS")["VmRSS"]
        print("(2) a burst of 1000 Notify from 10 connections, 100 each (default timeout, 5 s)")
        print(f"    until the last reply: {wall * 1000:.0f} ms wall (10 flooder processes started); qsd CPU "
              f"{cpu * 1000:.0f} ms ({cpu * 1e6 / 1000:.0f} µs a notification)")
        print(f"    RSS before {rss0} KiB, right after {rss1} KiB (+{rss1 - rss0} KiB, 1000 shown)")
        c = e.client()
        wait_until(lambda: not c.call("tree.get", {"path": "/notifications/items"})["value"], timeout=30,
                   what="the burst expired")
        path = os.path.join(e.dir, "state", "qsd", "notifications.json")
        wait_until(lambda: len(json.load(open(path))["history"]) == 200, timeout=10, what="history written")
        rss2 = proc_status(pid, "VmRSS")["VmRSS"]
        print(f"    once expired: RSS {rss2} KiB (+{rss2 - rss0} KiB), history file {os.path.getsize(path)} bytes "
              f"({os.path.getsize(path) // 200} a notification, 200 in history)")
        c.close()
    finally:
        e.close()


def idle():
    e = environment()
    try:
        c, sub = notifyutil.start(e, debug_api=False)
        pid = e.daemon.pid
        bus = notifyutil.Bus(e)
        for i in range(20):
            bus.notify(f"far {i}", timeout=3_600_000)
        c.wait_for(lambda: len(notifyutil.items(c, sub)) == 20, what="20 shown")
        # The server gives freed heap back one second after a client left (the harness's
        # connection probe at start-up): a one-off that is not the notifications'.
        time.sleep(1.5)
        v0, n0 = switches(pid)
        t0 = time.monotonic()
        time.sleep(10)
        v1, n1 = switches(pid)
        print(f"(3) idle, 20 notifications shown that expire in an hour, one subscriber: "
              f"{v1 - v0} voluntary + {n1 - n0} non-voluntary context switches in {time.monotonic() - t0:.1f} s")
        for i in range(20):
            bus.notify(f"soon {i}", timeout=500 + 450 * i)
        v0, n0 = switches(pid)
        t0 = time.monotonic()
        time.sleep(10)
        v1, n1 = switches(pid)
        c.pump()
        print(f"    20 more that expire one after the other within the next 10 s: {v1 - v0} voluntary + "
              f"{n1 - n0} non-voluntary context switches in {time.monotonic() - t0:.1f} s "
              f"(the timer, the state file, the subscriber's changes)")
        bus.close()
    finally:
        e.close()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = bool(os.environ.get("QSD_BENCH_QUICK")) or "--quick" in sys.argv
    samples = int(args[0]) if args else (100 if quick else 1000)
    latency(samples)
    burst()
    idle()


if __name__ == "__main__":
    main()
