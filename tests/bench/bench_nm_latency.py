#!/usr/bin/python3
"""NetworkManager latency: an access point's Strength PropertiesChanged on the bus -> the
tree.changed line at a qsd subscriber, side by side with a plain sd-bus listener receiving the
same signal, in one run.

One small C program (tests/bench/listener.c) is both the plain sd-bus listener (a match on the
AP's PropertiesChanged, parsing the Strength out of it) and the qsd subscriber (one
subscription to that AP's strength field), in one poll loop, so both are timed by the same
clock and the same process. The signal's emission time comes from the mock itself: a method
added to python-dbusmock's AP object reads CLOCK_MONOTONIC, then emits the PropertiesChanged,
and returns that time. Latency = receipt - emission, for each of the two receivers.

Usage: bench_nm_latency.py [SAMPLES]   (QSD_BIN selects the daemon, default build/daemon/qsd;
QSD_BENCH_QUICK=1 takes 50 samples)
Prints p50 and p99 of both and their ratios (targets in docs/performance.md: p50 <= 1.2x, p99 <= 1.5x),
then the same for a minimal C relay (relay.c) in qsd's place: the floor any relaying daemon
starts from on this machine.
"""

import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import callgrind  # noqa: E402
import listener  # noqa: E402
import qsdtest  # noqa: E402
from benchstat import percentile  # noqa: E402
from nmmock import NmMock  # noqa: E402
from qsdtest import Env  # noqa: E402

EMIT = """
import time
t = time.monotonic_ns()
self.UpdateProperties('org.freedesktop.NetworkManager.AccessPoint', {'Strength': dbus.Byte(args[0])})
ret = dbus.UInt64(t)
"""


def listener_args(socket, ap, path):
    """The listener's options for the AP's Strength, through qsd or the relay at socket."""
    return ["--system", "--match", "type='signal',sender='org.freedesktop.NetworkManager',"
            f"interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='{ap}'",
            "--property", "Strength:y", "--tree-scale", "100",
            "--call", "org.freedesktop.NetworkManager", ap, "org.freedesktop.DBus.Mock", "BenchStrength", "y",
            "--values", "10:1:80", socket, path]


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1"
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else (50 if quick else 2000)
    warmup = 10 if quick else 100
    env = Env()
    qsdtest.QSD = callgrind.wrap(qsdtest.QSD, env.dir)
    try:
        exe = listener.executable(env.dir)

        m = NmMock(env)
        w = m.add_wifi("wlan0")
        ap = m.add_ap(w, "ap_bench", "Bench", "00:11:22:33:44:55", strength=50)
        m.iface(ap).AddMethod("org.freedesktop.DBus.Mock", "BenchStrength", "y", "t", EMIT)
        env.start_qsd(backends=["nm"], debug_api=False)
        c = env.client()
        path = "/network/devices/wlan0/networks/Bench/accessPoints/00:11:22:33:44:55/strength"
        sub = c.subscribe(["/network"])
        c.wait_value(sub, path, 0.5)
        c.close()

        callgrind.start(env.daemon.pid)
        bus, qsd, misses, cpu = listener.run_timed(exe, listener_args(env.socket, ap, path), samples + warmup, warmup,
                                                   env.env, env.daemon.pid)
        callgrind.stop(env.daemon.pid, env.dir, samples + warmup)
        b50, b99, q50, q99 = percentile(bus, 50), percentile(bus, 99), percentile(qsd, 50), percentile(qsd, 99)
        print(f"NetworkManager latency, AP Strength PropertiesChanged -> receiver ({len(qsd)} samples, {misses} missed)")
        print(f"  plain sd-bus listener : p50 {b50:8.1f} us   p99 {b99:8.1f} us   mean {statistics.mean(bus):.1f} us")
        print(f"  qsd tree.changed line : p50 {q50:8.1f} us   p99 {q99:8.1f} us   mean {statistics.mean(qsd):.1f} us")
        print(f"  ratio qsd / sd-bus    : p50 {q50 / b50:.2f}x (target <= 1.2x)   p99 {q99 / b99:.2f}x (target <= 1.5x)")
        print(f"  qsd's own share       : p50 {q50 - b50:.1f} us   p99 {q99 - b99:.1f} us")
        print(f"  qsd CPU per signal (schedstat): {cpu:.1f} us")
        listener.floor_after_qsd(env, exe, listener_args(env.socket, ap, path), samples + warmup, warmup, q50 / b50,
                                 q99 / b99)
    finally:
        env.close()


if __name__ == "__main__":
    main()
