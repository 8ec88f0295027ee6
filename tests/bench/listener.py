"""The plain sd-bus listener and qsd subscriber of the D-Bus latency benchmarks (listener.c): the
one built with the project (bench-listener in $QSD_BUILD_DIR/tests/bench), else compiled here
with cc, so that a benchmark also runs against a build that has not made it."""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "listener.c")


def executable(workdir):
    build = os.environ.get("QSD_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
    exe = os.path.join(build, "tests", "bench", "bench-listener")
    if os.access(exe, os.X_OK):
        return exe
    exe = os.path.join(workdir, "bench-listener")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], check=True, capture_output=True,
                           text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", exe, SOURCE, *flags, "-lm"], check=True)
    return exe


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
