#!/usr/bin/python3
"""UPower: whole-process time of reading the display device's charge, three ways, in one run
against python-dbusmock's upower template on a private system bus:

  qsctl get /power/displayDevice/percentage --raw        (qsd answers from its tree)
  busctl --system get-property org.freedesktop.UPower \\
      /org/freedesktop/UPower/devices/DisplayDevice org.freedesktop.UPower.Device Percentage
  upower -i /org/freedesktop/UPower/devices/DisplayDevice

Each sample is fork + exec + exit of the command, measured around posix_spawn/waitpid with
CLOCK_MONOTONIC; the three commands are run round-robin so background load falls on all of them
alike. Prints median and p90 per command and the ratios to busctl (target in docs/performance.md: qsctl get
faster than busctl get-property for the same value).

A fourth row, busctl reading a property of the bus daemon itself, is busctl's floor without
any service answering.

Note that busctl and upower ask the UPower service itself, here a Python mock, so part of their
time is the mock's answer; qsctl never reaches UPower. That is the point of the daemon, and the
reason to read the figures as "what a status bar pays per poll", not as a D-Bus benchmark.

Then the latency of a change: the display device's Percentage PropertiesChanged -> the
tree.changed line at a qsd subscriber, against a plain sd-bus listener of the same signal (one
C program, tests/bench/listener.c, is both; target: p50 <= 1.2x, p99 <= 1.5x), then the same with
a minimal C relay (tests/bench/relay.c) in qsd's place: the floor any relaying daemon starts from
on this machine, and qsd's CPU time per signal beside the relay's. QSD_BENCH_CALLGRIND=1
prints qsd's instructions per signal instead of meaningful times (tests/bench/callgrind.py).

Usage: bench_upower.py [RUNS]   (default 200, 10 with QSD_BENCH_QUICK=1; QSD_BIN and QSCTL_BIN select the binaries,
                                 default build/daemon/qsd and build/cli/qsctl)
       bench_upower.py --latency [SAMPLES]   (the latency only; default 2000)
"""

import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
BUILD = os.path.join(HERE, "..", "..", "build")
os.environ.setdefault("QSD_BIN", os.path.join(BUILD, "daemon", "qsd"))
os.environ.setdefault("QSCTL_BIN", os.path.join(BUILD, "cli", "qsctl"))

import callgrind  # noqa: E402
import listener  # noqa: E402
import qsdtest  # noqa: E402
from benchstat import percentile  # noqa: E402
from qsdtest import Env  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]
qsdtest.QSCTL = os.environ["QSCTL_BIN"]

UP = "org.freedesktop.UPower"
DISPLAY = "/org/freedesktop/UPower/devices/DisplayDevice"


def run_once(argv, env):
    """Wall time of one whole process, in ms (stdout/stderr to /dev/null)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        fa = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
        t0 = time.monotonic_ns()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=fa)
        _, status = os.waitpid(pid, 0)
        t1 = time.monotonic_ns()
    finally:
        os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv} failed with {status}")
    return (t1 - t0) / 1e6


EMIT = """
import time
t = time.monotonic_ns()
self.UpdateProperties('org.freedesktop.UPower.Device', {'Percentage': dbus.Double(args[0])})
ret = dbus.UInt64(t)
"""


def latency(samples, warmup):
    """The display device's Percentage PropertiesChanged -> a plain sd-bus listener and a qsd
    subscriber (target: p50 <= 1.2x, p99 <= 1.5x the listener's)."""
    e = Env(buses=True)
    qsdtest.QSD = callgrind.wrap(qsdtest.QSD)
    try:
        exe = listener.executable(e.dir)
        e.start_mock("upower", {"OnBattery": True}, name=UP)
        e.gdbus("-d", UP, "-o", "/org/freedesktop/UPower", "-m", "org.freedesktop.DBus.Mock.SetupDisplayDevice",
                "2", "2", "73.5", "36.7", "50.0", "9.8", "7200", "0", "true", "battery-good-symbolic", "1")
        e.gdbus("-d", UP, "-o", DISPLAY, "-m", "org.freedesktop.DBus.Mock.AddMethod", "org.freedesktop.DBus.Mock",
                "BenchPercentage", "d", "t", EMIT)
        e.start_qsd(backends=["upower"], debug_api=False)
        c = e.client()
        path = "/power/displayDevice/percentage"
        sub = c.subscribe([path])
        c.wait_value(sub, path, 0.735)
        c.close()
        callgrind.start(e.daemon.pid)
        # A plain sd-bus listener of the device's PropertiesChanged and a qsd subscriber of its
        # percentage; the mock stamps CLOCK_MONOTONIC, then emits.
        args = ["--system", "--match", f"type='signal',sender='{UP}',interface='org.freedesktop.DBus.Properties',"
                f"member='PropertiesChanged',path='{DISPLAY}'", "--property", "Percentage:d", "--tree-scale", "100",
                "--call", UP, DISPLAY, "org.freedesktop.DBus.Mock", "BenchPercentage", "d", "--values", "10:1:80",
                e.socket, path]
        bus, qsd, misses, cpu = listener.run_timed(exe, args, samples + warmup, warmup, e.env, e.daemon.pid)
        callgrind.stop(e.daemon.pid, e.dir, samples + warmup)
        b50, b99, q50, q99 = percentile(bus, 50), percentile(bus, 99), percentile(qsd, 50), percentile(qsd, 99)
        print(f"UPower latency, display device Percentage PropertiesChanged -> receiver ({len(qsd)} samples, "
              f"{misses} missed)")
        print(f"  plain sd-bus listener : p50 {b50:8.1f} us   p99 {b99:8.1f} us")
        print(f"  qsd tree.changed line : p50 {q50:8.1f} us   p99 {q99:8.1f} us")
        print(f"  ratio qsd / sd-bus    : p50 {q50 / b50:.2f}x (target <= 1.2x)   p99 {q99 / b99:.2f}x (target <= 1.5x)")
        print(f"  qsd's own share       : p50 {q50 - b50:.1f} us")
        print(f"  qsd CPU per signal (schedstat): {cpu:.1f} us")
        listener.floor_after_qsd(e, exe, args, samples + warmup, warmup, q50 / b50, q99 / b99)
    finally:
        e.close()


def main():
    quick = bool(os.environ.get("QSD_BENCH_QUICK"))
    if "--latency" in sys.argv:   # only the signal latency: bench_upower.py --latency [SAMPLES]
        args = [a for a in sys.argv[1:] if not a.startswith("--")]
        latency(int(args[0]) if args else (50 if quick else 2000), 10 if quick else 100)
        return
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else (10 if quick else 200)
    e = Env(buses=True)
    try:
        e.start_mock("upower", {"OnBattery": True}, name=UP)
        e.gdbus("-d", UP, "-o", "/org/freedesktop/UPower", "-m", "org.freedesktop.DBus.Mock.SetupDisplayDevice",
                "2", "2", "73.5", "36.7", "50.0", "9.8", "7200", "0", "true", "battery-good-symbolic", "1")
        e.start_qsd(backends=["upower"], debug_api=False)
        c = e.client()
        sub = c.subscribe(["/power/displayDevice/percentage"])
        c.wait_value(sub, "/power/displayDevice/percentage", 0.735)
        c.close()

        env = dict(e.env)
        env["QSD_SOCKET"] = e.socket
        busctl = shutil.which("busctl") or "/usr/bin/busctl"
        upower = shutil.which("upower") or "/usr/bin/upower"
        commands = {
            "qsctl get --raw": [os.path.abspath(qsdtest.QSCTL), "get", "/power/displayDevice/percentage", "--raw"],
            "busctl get-property": [busctl, "--system", "get-property", UP, DISPLAY, UP + ".Device", "Percentage"],
        }
        # Reference: busctl's own floor, a property of the bus daemon (no Python mock answering).
        commands["busctl (bus daemon)"] = [busctl, "--system", "get-property", "org.freedesktop.DBus",
                                           "/org/freedesktop/DBus", "org.freedesktop.DBus", "Features"]
        if os.path.exists(upower):
            commands["upower -i"] = [upower, "-i", DISPLAY]
        else:
            print("bench_upower: no upower CLI (apt-get install upower); skipping it", file=sys.stderr)

        # Each command must give the value before it is timed.
        for name, argv in commands.items():
            out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
            ok = {"qsctl get --raw": lambda o: o.strip() == "0.735",
                  "busctl get-property": lambda o: o.strip() == "d 73.5",
                  "busctl (bus daemon)": lambda o: o.startswith("as "),
                  "upower -i": lambda o: "73.5%" in o}[name]
            if not ok(out):
                raise RuntimeError(f"{name} printed {out!r}")
            for _ in range(5):   # warm the page cache and the mock
                run_once(argv, env)

        samples = {name: [] for name in commands}
        for _ in range(runs):
            for name, argv in commands.items():
                samples[name].append(run_once(argv, env))

        base = statistics.median(samples["busctl get-property"])
        base90 = percentile(samples["busctl get-property"], 90)
        print(f"UPower display device percentage, whole process, {runs} runs each (ms):")
        print(f"  {'command':<22} {'median':>8} {'p90':>8} {'median/busctl':>14} {'p90/busctl':>11}")
        for name, s in samples.items():
            med = statistics.median(s)
            p90 = percentile(s, 90)
            print(f"  {name:<22} {med:8.2f} {p90:8.2f} {med / base:14.2f} {p90 / base90:11.2f}")
        qs = statistics.median(samples["qsctl get --raw"])
        print(f"qsctl get vs busctl get-property: {'faster' if qs < base else 'NOT faster'} "
              f"({qs:.2f} ms vs {base:.2f} ms median)")
    finally:
        e.close()
    print()
    latency(50 if quick else 2000, 10 if quick else 100)


if __name__ == "__main__":
    main()
