"""The plain sd-bus listener and qsd subscriber of the D-Bus latency benchmarks (listener.c), and
the minimal relay measured in qsd's place (relay.c): the ones built with the project
(bench-listener and bench-relay in $QSD_BUILD_DIR/tests/bench), else compiled here with cc, so
that a benchmark also runs against a build that has not made them."""

import os
import subprocess

import callgrind
import qsdtest
from benchstat import percentile

HERE = os.path.dirname(os.path.abspath(__file__))


def _built(name, source, workdir):
    build = os.environ.get("QSD_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
    exe = os.path.join(build, "tests", "bench", name)
    if os.access(exe, os.X_OK):
        return exe
    exe = os.path.join(workdir, name)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], check=True, capture_output=True,
                           text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, source), *flags, "-lm"], check=True)
    return exe


def executable(workdir):
    return _built("bench-listener", "listener.c", workdir)


def run(exe, args, count, warmup, env):
    """Runs the listener for count samples (args: its options, SOCKET and TREE_PATH). Returns the
    plain listener's and qsd's latencies in µs, the first warmup samples left out, and how many
    samples were missed."""
    out = subprocess.run([exe, *args, str(count)], check=True, capture_output=True, text=True, env=env,
                         timeout=1800).stdout.split("\n")
    rows = [line.split() for line in out if line and line != "miss"][warmup:]
    misses = sum(1 for line in out if line == "miss")
    bus = [(int(b) - int(e)) / 1000 for e, b, q in rows if b != "-"]
    qsd = [(int(q) - int(e)) / 1000 for e, b, q in rows if q != "-"]
    return bus, qsd, misses


# The listener's options that say which signal to relay and how; the relay takes the same.
_RELAY_OPTIONS = {"--system": 0, "--match": 1, "--property": 1, "--tree-scale": 1}


def relay_floor(env, exe, args, count, warmup):
    """Runs the listener again (args: its options, SOCKET and TREE_PATH, as for run) with the
    minimal relay (relay.c) in qsd's place: the same signal in, one tree.changed-shaped line out.
    qsd must be stopped first, or it takes its share of the cores from the relay's samples.
    Returns what run returns, and the relay's CPU time per sample in µs."""
    relay_args, i = [], 0
    while i < len(args) - 2:
        n = _RELAY_OPTIONS.get(args[i])
        if n is None:
            i += 1 + (5 if args[i] == "--call" else 1 if args[i] in ("--values", "--timeout", "--host-get") else 0)
            continue
        relay_args += args[i:i + 1 + n]
        i += 1 + n
    sock = os.path.join(env.dir, "relay.sock")
    relay = env.spawn([_built("bench-relay", "relay.c", env.dir), *relay_args, sock, args[-1]], "relay")
    try:
        qsdtest.wait_until(lambda: qsdtest.connectable(sock), 10, what="the relay's socket")
        cpu0 = cpu_ns(relay.pid)
        bus, rel, misses = run(exe, [*args[:-2], sock, args[-1]], count, warmup, env.env)
        return bus, rel, misses, (cpu_ns(relay.pid) - cpu0) / count / 1000
    finally:
        relay.terminate()
        relay.wait(10)


def cpu_ns(pid):
    """CPU time of every thread of pid so far (/proc/<pid>/task/*/schedstat), in ns."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total


def run_timed(exe, args, count, warmup, env, pid):
    """run(), and the CPU time per sample in µs that process pid (qsd) spent meanwhile."""
    cpu0 = cpu_ns(pid)
    bus, qsd, misses = run(exe, args, count, warmup, env)
    return bus, qsd, misses, (cpu_ns(pid) - cpu0) / count / 1000


def floor_after_qsd(env, exe, args, count, warmup, qsd_p50_ratio, qsd_p99_ratio):
    """Stops qsd, measures the relay in its place (relay_floor) and prints it against qsd's
    ratios. Does nothing under callgrind, whose qsd times mean nothing; returns whether it ran."""
    if callgrind.ENABLED:
        return False
    env.stop_qsd()   # or it takes its share of the two cores from the relay's samples
    bus, rel, _, relay_cpu = relay_floor(env, exe, args, count, warmup)
    print_floor(bus, rel, relay_cpu, qsd_p50_ratio, qsd_p99_ratio)
    return True


def print_floor(bus, relay, relay_cpu_us, qsd_p50_ratio, qsd_p99_ratio):
    """Prints the relay's figures against the plain listener of its own run, and how far qsd's
    ratios (measured just before) are above the relay's."""
    b50, b99, r50, r99 = percentile(bus, 50), percentile(bus, 99), percentile(relay, 50), percentile(relay, 99)
    print(f"  floor: a minimal C relay in qsd's place (relay.c: the signal in, one line out), {len(relay)} samples:")
    print(f"    relay / sd-bus      : p50 {r50 / b50:.2f}x   p99 {r99 / b99:.2f}x   (its share: p50 {r50 - b50:.1f} us;"
          f" listener p50 {b50:.1f} us)")
    print(f"    qsd above the relay : p50 {qsd_p50_ratio - r50 / b50:+.2f}x   p99 {qsd_p99_ratio - r99 / b99:+.2f}x")
    print(f"    relay CPU per signal (schedstat): {relay_cpu_us:.1f} us")
