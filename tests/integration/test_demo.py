"""scripts/demo, the README's first command, run the way a newcomer runs it, minus the install and
the build (QSD_DEMO_BUILD_DIR names the build whose qsd and qsctl it runs): it starts its
stand-ins on private buses (--mock: even where real services run), then qsd, and prints the tree
and its changes. The tree is read here through qsd's socket, as a user would with qsctl; on
SIGTERM the demo must stop every process it started and remove its directory."""

import os
import re
import signal
import subprocess

import pytest
import qsdtest
import waylandenv
from qsdtest import Client, processes_naming, wait_until

DEMO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "demo"))


class Demo:
    """scripts/demo --mock running (until stop()), with qsd's socket read from what it printed."""

    def __init__(self, tmp_path, environment=None):
        self.out_path = tmp_path / "demo.out"
        env = dict(os.environ, QSD_DEMO_BUILD_DIR=os.path.abspath(qsdtest.BUILD))
        env.pop("WAYLAND_DISPLAY", None)
        env.update(environment or {})
        with open(self.out_path, "w") as out:
            self.proc = subprocess.Popen([DEMO, "--mock", "--for", "600"], stdout=out, stderr=subprocess.STDOUT,
                                         env=env, start_new_session=True)
        self.directory = None
        self.client = None
        try:
            socket_path = wait_until(lambda: re.search(r"QSD_SOCKET=(\S+)", self.output()), 120,
                                     what="the demo to print qsd's socket").group(1)
            self.directory = os.path.dirname(socket_path)
            wait_until(lambda: qsdtest.connectable(socket_path), 30, what="qsd to listen")
            self.client = Client(socket_path)
            self.sub = self.client.subscribe([""])
            self.backends = set(self.client.wait_value(self.sub, "/daemon/backends", predicate=lambda v: bool(v)))
            for name in self.backends:
                self.client.wait_value(self.sub, f"/daemon/backends/{name}/state", "running", timeout=60)
        except BaseException:
            self.terminate()
            raise

    def output(self):
        return self.out_path.read_text(errors="replace")

    def terminate(self):
        """SIGTERM, as a service manager or `kill` sends it, and the wait for the demo to stop
        what it started; its process group is killed if it takes over a minute. Whether it
        stopped by itself."""
        if self.client:
            self.client.close()
        if self.proc.poll() is not None:
            return True
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
            return True
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return False

    def stop(self):
        """Stops the demo and checks that it exited with 0, removed its directory and left no
        process behind."""
        assert self.terminate(), "the demo did not exit within 60 s of SIGTERM"
        assert self.proc.returncode == 0, self.output()[-4000:]
        assert not os.path.exists(self.directory), f"{self.directory} is left behind"
        # Its clean-up stops each process it started and waits for it. A command one of its
        # loops had running may end a moment later (a gdbus call, a sleep of a few seconds);
        # anything still there after that grace was left behind.
        try:
            wait_until(lambda: not processes_naming(self.directory), 10, interval=0.1,
                       what="the demo's processes to end")
        except TimeoutError:
            raise AssertionError(f"left running: {processes_naming(self.directory)}") from None


def test_demo_shows_every_backend_live_and_leaves_nothing_behind(tmp_path):
    demo = Demo(tmp_path)
    try:
        c, sub, built = demo.client, demo.sub, demo.backends
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
            # The stand-in compositor: two outputs and a terminal.
            c.wait_value(sub, "/wayland/outputs", predicate=lambda v: v and set(v) == {"HEADLESS-1", "HEADLESS-2"},
                         timeout=30)
            c.wait_value(sub, "/wayland/toplevels", timeout=30,
                         predicate=lambda v: v and any(w.get("appId") == "demo.terminal" for w in v.values()))
        if "bluetooth" in built:
            c.wait_value(sub, "/bluetooth/adapters", predicate=lambda v: bool(v), timeout=30)
        if "mpris" in built:
            c.wait_value(sub, "/media/players/qsd_demo/playbackStatus", "playing", timeout=30)
            assert c.value(sub, "/media/players/qsd_demo/metadata/title") == "A demo track"
        if "notifications" in built:
            c.wait_value(sub, "/notifications/items", timeout=30,
                         predicate=lambda v: bool(v) and any(n.get("summary") == "Hello from scripts/demo"
                                                             for n in v.values()))
        # What it prints: the whole tree, then a line per change (the stand-in battery drains).
        wait_until(lambda: '"daemon": {' in demo.output(), 30, what="the tree in the demo's output")
        if "upower" in built:
            wait_until(lambda: re.search(r"^/power/displayDevice/percentage = [0-9.]+$", demo.output(), re.M), 30,
                       what="a change line in the demo's output")
        demo.stop()
    finally:
        demo.terminate()


def test_demo_inside_a_wayland_session_shows_its_compositor(tmp_path, bare_env):
    """Run from a Wayland session, WAYLAND_DISPLAY names the compositor's socket relative to the
    session's XDG_RUNTIME_DIR, which the demo replaces with a private one: the session's
    compositor is still the one shown, and no stand-in compositor is started."""
    qsdtest.skip_unless_built(["wayland"])
    reason = waylandenv.skip_reason(need_foot=False)
    if reason:
        pytest.skip(reason)
    sway = waylandenv.Sway(bare_env).start()
    demo = Demo(tmp_path, {"XDG_RUNTIME_DIR": os.path.dirname(sway.socket),
                           "WAYLAND_DISPLAY": os.path.basename(sway.socket)})
    try:
        c, sub = demo.client, demo.sub
        c.wait_value(sub, "/wayland/outputs", predicate=lambda v: v and set(v) == {"HEADLESS-1"}, timeout=30)
        assert c.value(sub, "/wayland/toplevels") == {}
        demo.stop()
    finally:
        demo.terminate()
