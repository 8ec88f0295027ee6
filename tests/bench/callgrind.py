"""qsd's instructions per event under callgrind: a figure that does not move with the machine's
load, unlike wall-clock latency or schedstat CPU time (docs/performance.md, "Where qsd's share
goes").

With QSD_BENCH_CALLGRIND=1 a benchmark that uses this runs qsd under `valgrind --tool=callgrind`
(wrap() makes the wrapper qsdtest starts), zeroes the counters just before its measured loop
(start()) and dumps them just after (stop()), which gives qsd's instructions for exactly the
events of that loop: the start-up, the services' set-up and the warm-up are left out. The dump is
copied to $QSD_BENCH_CALLGRIND_DIR (default: the temporary directory) for callgrind_annotate (`--inclusive=yes` shows where the
instructions of one signal go).

Wall-clock figures printed under callgrind are meaningless (everything runs 20-50x slower).
"""

import atexit
import glob
import os
import shutil
import subprocess
import tempfile

ENABLED = os.environ.get("QSD_BENCH_CALLGRIND", "0") not in ("", "0")


_DIR = None


def wrap(qsd_bin, directory=None):
    """The path of a script that execs qsd_bin under callgrind (same pid), or qsd_bin unchanged.
    The script and its dumps live in a directory of their own for the whole run (a benchmark may
    start qsd again in another environment); `directory` is not used."""
    global _DIR
    if not ENABLED or os.path.basename(qsd_bin) == "qsd-callgrind":
        return qsd_bin
    if _DIR is None:
        _DIR = tempfile.mkdtemp(prefix="qsd-callgrind-")
        atexit.register(shutil.rmtree, _DIR, True)
    script = os.path.join(_DIR, "qsd-callgrind")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n"
                f"exec valgrind --tool=callgrind --callgrind-out-file={_DIR}/callgrind.out.%p "
                f"{os.path.abspath(qsd_bin)} \"$@\"\n")
    os.chmod(script, 0o755)
    return script


def _control(pid, command):
    subprocess.run(["callgrind_control", command, str(pid)], check=True, capture_output=True, timeout=60)


def start(pid):
    if ENABLED:
        _control(pid, "-z")


def stop(pid, directory, events, what="signal"):  # noqa: ARG001 (directory: see wrap)
    """Dumps the counters and prints qsd's instructions per event; returns them (None when off)."""
    if not ENABLED:
        return None
    _control(pid, "-d")
    dumps = sorted(glob.glob(os.path.join(_DIR, f"callgrind.out.{pid}.*")), key=os.path.getmtime)
    total = None
    with open(dumps[-1]) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
    per = total / events
    kept = os.path.join(os.environ.get("QSD_BENCH_CALLGRIND_DIR", tempfile.gettempdir()), os.path.basename(dumps[-1]))
    shutil.copy(dumps[-1], kept)
    print(f"  qsd instructions per {what} (callgrind, {events} {what}s): {per:,.0f}  (dump: {kept})")
    return per
