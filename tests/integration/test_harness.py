"""The harness itself: a test killed mid-run (ctest's timeout, scripts/flaky, a developer's
Ctrl-C or kill -9) leaves nothing of its world running. Before, the buses (forked away) and every
program the world started outlived it, loading every later run on the machine."""

import os
import signal
import shutil
import subprocess
import textwrap

from qsdtest import PY, processes_naming, wait_until
from waylandenv import skip_reason

HERE = os.path.dirname(os.path.abspath(__file__))

# A harness process: a world with both buses, a mock, qsd and (where it runs) sway, whose
# setpriv changes the user, which clears a parent-death signal set before. It then holds its
# world until it is killed.
WORLD = textwrap.dedent("""
    import signal, sys
    sys.path.insert(0, {here!r})
    from qsdtest import Env, processes_naming
    import upmock, waylandenv
    e = Env()
    upmock.start_upower(e)
    if {sway}:
        waylandenv.Sway(e).start()
    e.start_qsd(backends=[])
    print(e.dir, len(processes_naming(e.dir)), flush=True)
    signal.pause()
""")


def test_a_killed_harness_leaves_nothing_running():
    sway = skip_reason(need_foot=False) is None
    p = subprocess.Popen([PY, "-c", WORLD.format(here=HERE, sway=sway)], stdout=subprocess.PIPE, text=True)
    world = None
    try:
        line = p.stdout.readline().split()
        assert len(line) == 2, f"the world did not start (exit {p.poll()})"
        world, started = line[0], int(line[1])
        # dbus-daemon twice, the mock and qsd, and sway.
        assert started >= 4 + sway, processes_naming(world)
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        try:
            wait_until(lambda: not processes_naming(world), 10, what="nothing of the world left")
        except TimeoutError:
            raise AssertionError(f"left running 10 s after the harness was killed: {processes_naming(world)}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if world:
            for left in processes_naming(world):
                os.kill(int(left.split()[0]), signal.SIGKILL)
            shutil.rmtree(world, ignore_errors=True)
