"""scripts/demo, the README's first command, run the way a newcomer runs it, minus the install and
the build (QSD_DEMO_BUILD_DIR names the build whose qsd and qsctl it runs): it starts its
stand-ins on private buses (--mock: even where real services run), then qsd, and prints the tree
and its changes. The tree is read here through qsd's socket, as a user would with qsctl; on
SIGTERM the demo must stop every process it started and remove its directory."""

import os
import re
import signal
import subprocess

import qsdtest
from qsdtest import Client, wait_until

DEMO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "demo"))


def processes_naming(text):
    """The pids of the processes whose command line or environment mention text (the demo
    exports its directory as XDG_RUNTIME_DIR and HOME to everything it starts)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(pid))
                        break
            except OSError:
                pass   # gone meanwhile, or not ours to read
    return found


def test_demo_shows_every_backend_live_and_leaves_nothing_behind(tmp_path):
    out_path = tmp_path / "demo.out"
    env = dict(os.environ, QSD_DEMO_BUILD_DIR=os.path.abspath(qsdtest.BUILD))
    with open(out_path, "w") as out:
        demo = subprocess.Popen([DEMO, "--mock", "--for", "600"], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)

    def output():
        return out_path.read_text(errors="replace")

    directory = None
    try:
        socket_path = wait_until(lambda: re.search(r"QSD_SOCKET=(\S+)", output()), 120,
                                 what="the demo to print qsd's socket").group(1)
        directory = os.path.dirname(socket_path)
        wait_until(lambda: qsdtest.connectable(socket_path), 30, what="qsd to listen")
        c = Client(socket_path)
        sub = c.subscribe([""])
        backends = c.wait_value(sub, "/daemon/backends", predicate=lambda v: bool(v))
        for name in backends:
            c.wait_value(sub, f"/daemon/backends/{name}/state", "running", timeout=60)
        built = set(backends)
        # What each stand-in gives the tree.
        if "nm" in built:
            c.wait_value(sub, "/network/devices", predicate=lambda v: bool(v), timeout=30)
        if "upower" in built:
            c.wait_value(sub, "/power/displayDevice/percentage", predicate=lambda v: isinstance(v, (int, float)))
        if "pipewire" in built:
            c.wait_value(sub, "/audio/nodes", predicate=lambda v: bool(v), timeout=30)
        if "tray" in built:
            c.wait_value(sub, "/tray/items", predicate=lambda v: bool(v), timeout=30)
        if "wayland" in built:
            c.wait_value(sub, "/wayland/outputs", predicate=lambda v: bool(v), timeout=30)
        if "bluetooth" in built:
            c.wait_value(sub, "/bluetooth/adapters", predicate=lambda v: bool(v), timeout=30)
        if "mpris" in built:
            c.wait_value(sub, "/media/players/qsd_demo/playbackStatus", "playing", timeout=30)
            assert c.value(sub, "/media/players/qsd_demo/metadata/title") == "A demo track"
        if "notifications" in built:
            c.wait_value(sub, "/notifications/items", timeout=30,
                         predicate=lambda v: bool(v) and any(n.get("summary") == "Hello from scripts/demo"
                                                             for n in v.values()))
        c.close()
        # What it prints: the whole tree, then a line per change (the stand-in battery drains).
        wait_until(lambda: '"daemon": {' in output(), 30, what="the tree in the demo's output")
        if "upower" in built:
            wait_until(lambda: re.search(r"^/power/displayDevice/percentage = [0-9.]+$", output(), re.M), 30,
                       what="a change line in the demo's output")
    finally:
        demo.send_signal(signal.SIGTERM)
        try:
            demo.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            raise
    assert demo.returncode == 0, output()[-4000:]
    assert directory and not os.path.exists(directory), f"{directory} is left behind"
    # Everything the demo started was stopped before it exited (its clean-up waits for each).
    left = processes_naming(directory)
    assert not left, f"left running: {[open(f'/proc/{p}/cmdline').read().replace(chr(0), ' ') for p in left]}"
