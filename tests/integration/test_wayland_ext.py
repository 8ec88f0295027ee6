"""ext-foreign-toplevel-list, which no compositor in Debian 12 offers, against a small
compositor built here from tests/integration/wayland_peer.c (libwayland-server, the same
protocol XML as the daemon): toplevel keys are the identifiers, also when wlr-foreign-toplevel-
management is offered next to it (the two handles of a window are paired), a window whose ext
handle comes late gets a counter key, ext-foreign-toplevel-list alone gives toplevels without
states, and an identifier reused by a restarted compositor is not reused as a key. The same
compositor also sends a protocol error, which qsd treats as the compositor gone (and, since the
compositor is still there, connects again after a delay)."""

import os
import shutil
import subprocess
import tempfile

import pytest

from qsdtest import pointer_get

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
PROTOCOLS = os.path.join(ROOT, "daemon", "backends", "wayland", "protocols")


def build_peer(out):
    for tool in ("cc", "pkg-config", "wayland-scanner"):
        if not shutil.which(tool):
            return None, f"{tool} is not installed"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "wayland-server"], capture_output=True, text=True)
    if flags.returncode != 0:
        return None, "wayland-server (libwayland-dev) is not installed"
    sources = []
    for xml in ("ext-foreign-toplevel-list-v1.xml", "wlr-foreign-toplevel-management-unstable-v1.xml"):
        stem = xml[:-4]
        src = os.path.join(PROTOCOLS, xml)
        subprocess.run(["wayland-scanner", "server-header", src, os.path.join(out, stem + "-server-protocol.h")], check=True)
        subprocess.run(["wayland-scanner", "private-code", src, os.path.join(out, stem + "-protocol.c")], check=True)
        sources.append(os.path.join(out, stem + "-protocol.c"))
    exe = os.path.join(out, "wayland_peer")
    r = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-o", exe, os.path.join(HERE, "wayland_peer.c"), *sources,
                        "-I", out, *flags.stdout.split()], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("building wayland_peer failed:\n" + r.stderr)
    return exe, None


@pytest.fixture(scope="module")
def peer_exe():
    out = tempfile.mkdtemp(prefix="qsd-wayland-peer.")
    exe, reason = build_peer(out)
    if exe is None:
        shutil.rmtree(out, ignore_errors=True)
        pytest.skip(reason)
    yield exe
    shutil.rmtree(out, ignore_errors=True)


class Peer:
    def __init__(self, env, exe, *flags, generation=1):
        self.socket = os.path.join(env.run, "wayland-peer")
        self.proc = subprocess.Popen([exe, "--socket", self.socket, "--generation", str(generation), *flags],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        env.procs.append(("popen", self.proc))
        assert self.proc.stdout.readline().strip() == f"ready {generation}"
        self.lines = []

    def send(self, *commands):
        for c in commands:
            self.proc.stdin.write(c + "\n")
        self.proc.stdin.flush()

    def requests(self, n):
        """The next n requests qsd made, as the peer saw them."""
        while len(self.lines) < n:
            self.lines.append(self.proc.stdout.readline().strip())
        out, self.lines = self.lines[:n], self.lines[n:]
        return out

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(10)


def start_qsd(env, peer):
    e = dict(env.env)
    e["WAYLAND_DISPLAY"] = peer.socket
    env.start_qsd(backends=["wayland"], env=e)
    c = env.client()
    sub = c.subscribe(["/wayland"])
    c.wait_value(sub, "/wayland/available", True, timeout=20)
    return c, sub


def tops(c, sub):
    return pointer_get(c.mirror(sub), "/wayland/toplevels", None)


def wait_tops(c, sub, predicate, what="toplevels"):
    c.wait_for(lambda: predicate(tops(c, sub) or {}), 20, what=what)
    return tops(c, sub)


def test_both_protocols_key_by_identifier(env, peer_exe):
    peer = Peer(env, peer_exe, "--wlr", "--ext")
    peer.send("add 1 org.example.Files Home", "add 2 foot ~")
    c, sub = start_qsd(env, peer)
    missing = pointer_get(c.mirror(sub), "/wayland/compositor/missing")
    assert set(missing) == {"zwlr_output_manager_v1", "zxdg_output_manager_v1"}
    t = wait_tops(c, sub, lambda v: len(v) == 2)
    assert set(t) == {"peer-1-1", "peer-1-2"}
    assert t["peer-1-1"] == {"title": "Home", "appId": "org.example.Files", "activated": False, "maximized": False,
                             "minimized": False, "fullscreen": False, "outputs": ["PEER-1"], "parent": None}

    # Windows added later, two of them alike (same app id and title): each gets its own identifier.
    peer.send("add 3 foot ~", "add 4 foot ~")
    t = wait_tops(c, sub, lambda v: len(v) == 4)
    assert set(t) == {"peer-1-1", "peer-1-2", "peer-1-3", "peer-1-4"}

    # The actions reach the compositor through the wlr handle of the paired window.
    c.call("wayland.activate", {"toplevel": "peer-1-3"})
    assert peer.requests(1) == ["request activate 3"]
    wait_tops(c, sub, lambda v: v["peer-1-3"]["activated"])
    c.call("wayland.setMaximized", {"toplevel": "peer-1-1", "maximized": True})
    assert peer.requests(1) == ["request set_maximized 1"]
    wait_tops(c, sub, lambda v: v["peer-1-1"]["maximized"])
    c.call("wayland.setFullscreen", {"toplevel": "peer-1-2", "fullscreen": True, "output": "PEER-1"})
    assert peer.requests(1) == ["request fullscreen-on-output 2"]

    peer.send("title 1 Documents")
    wait_tops(c, sub, lambda v: v["peer-1-1"]["title"] == "Documents")
    c.call("wayland.close", {"toplevel": "peer-1-4"})
    assert peer.requests(1) == ["request close 4"]
    wait_tops(c, sub, lambda v: "peer-1-4" not in v and len(v) == 3)
    c.close()


def test_a_late_ext_handle_leaves_a_counter_key(env, peer_exe):
    peer = Peer(env, peer_exe, "--wlr", "--ext")
    c, sub = start_qsd(env, peer)
    assert tops(c, sub) == {}
    peer.send("ext-late", "add 7 late.app Late")
    t = wait_tops(c, sub, lambda v: len(v) == 1)
    (key,) = t
    assert key.isdigit() and t[key]["appId"] == "late.app"
    peer.send("ext-now", "add 8 on.time OnTime")
    t = wait_tops(c, sub, lambda v: len(v) == 2)
    assert "peer-1-8" in t and key in t
    c.close()


def test_ext_list_alone(env, peer_exe):
    peer = Peer(env, peer_exe, "--ext")
    peer.send("add 1 org.example.Files Home")
    c, sub = start_qsd(env, peer)
    assert "zwlr_foreign_toplevel_manager_v1" in pointer_get(c.mirror(sub), "/wayland/compositor/missing")
    t = wait_tops(c, sub, lambda v: len(v) == 1)
    assert t == {"peer-1-1": {"title": "Home", "appId": "org.example.Files", "activated": None, "maximized": None,
                              "minimized": None, "fullscreen": None, "outputs": None, "parent": None}}
    peer.send("title 1 Documents", "add 2 foot ~")
    wait_tops(c, sub, lambda v: len(v) == 2 and v["peer-1-1"]["title"] == "Documents")
    peer.send("close 1")
    wait_tops(c, sub, lambda v: set(v) == {"peer-1-2"})
    e = c.call_full("wayland.close", {"toplevel": "peer-1-2"})["error"]
    assert e["code"] == -32000 and e["data"]["missing"] == "zwlr_foreign_toplevel_manager_v1"
    c.close()


def test_identifiers_reused_by_a_new_compositor_are_not_reused_as_keys(env, peer_exe):
    peer = Peer(env, peer_exe, "--ext", generation=5)
    peer.send("add 1 a.app A")
    c, sub = start_qsd(env, peer)
    wait_tops(c, sub, lambda v: set(v) == {"peer-5-1"})
    peer.stop()
    c.wait_value(sub, "/wayland", {"available": False}, timeout=20)
    # The same identifiers again, as a compositor restarted with the same generation might.
    peer = Peer(env, peer_exe, "--ext", generation=5)
    peer.send("add 1 b.app B", "add 2 c.app C")
    c.wait_value(sub, "/wayland/available", True, timeout=30)
    t = wait_tops(c, sub, lambda v: len(v) == 2)
    assert "peer-5-2" in t and "peer-5-1" not in t
    reused = [k for k, v in t.items() if v["appId"] == "b.app"]
    assert reused and reused[0].isdigit()
    c.close()


def test_a_protocol_error_drops_the_connection_and_qsd_comes_back(env, peer_exe):
    peer = Peer(env, peer_exe, "--wlr")
    peer.send("add 1 a.app A")
    c, sub = start_qsd(env, peer)
    wait_tops(c, sub, lambda v: len(v) == 1)
    peer.send("kick")
    c.wait_value(sub, "/wayland", {"available": False}, timeout=20)
    # The compositor is still there: qsd connects again (after 0.1 s), and reads it afresh.
    c.wait_value(sub, "/wayland/available", True, timeout=20)
    t = wait_tops(c, sub, lambda v: len(v) == 1)
    assert list(t.values())[0]["appId"] == "a.app"
    assert "protocol error 0 on wl_output" in env.qsd_log()
    c.close()
