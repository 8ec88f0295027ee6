"""ext-foreign-toplevel-list, which no compositor in Debian 12 offers, against a small
compositor built here from tests/integration/wayland_peer.c (libwayland-server, the same
protocol XML as the daemon): toplevel keys are the identifiers, also when wlr-foreign-toplevel-
management is offered next to it (the two handles of a window are paired), a window whose ext
handle comes late gets a counter key, ext-foreign-toplevel-list alone gives toplevels without
states, and an identifier reused by a restarted compositor is not reused as a key (after a
restart, keys are counter values). The same
compositor also sends a protocol error, which qsd treats as the compositor gone (and, since the
compositor is still there, connects again after a delay), also when it does so to every
connection for a while; a compositor killed (its socket left behind) is given up until its
socket is created again. With hundreds of windows, one window that opens, changes or closes
costs work for that window only (counted in qsd with gdb), and parents follow their windows."""

import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from qsdtest import pointer_get, wait_until

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
    # Identifiers are keys on the first compositor of qsd's life only: nothing remembers every
    # key given (that grew by 85 bytes for every window ever opened), so after it every key is a
    # counter value, which is never given twice.
    assert "peer-5-2" not in t and "peer-5-1" not in t
    assert all(k.isdigit() for k in t), t
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


def test_parents_follow_their_windows(env, peer_exe):
    peer = Peer(env, peer_exe, "--wlr")
    # Window 2's parent is announced after it (the peer sends it in a second pass).
    peer.send("add 2 child.app Child", "add 1 main.app Main", "parent 2 1")
    c, sub = start_qsd(env, peer)
    t = wait_tops(c, sub, lambda v: len(v) == 2)
    keys = {v["appId"]: k for k, v in t.items()}
    main, child = keys["main.app"], keys["child.app"]
    wait_tops(c, sub, lambda v: v[child]["parent"] == main, "the child's parent")
    # A parent that comes later, and a window that goes: its children say null.
    peer.send("add 3 dialog.app Dialog", "parent 3 2")
    t = wait_tops(c, sub, lambda v: len(v) == 3 and any(x["parent"] == child for x in v.values()), "the dialog's parent")
    dialog = next(k for k, v in t.items() if v["appId"] == "dialog.app")
    peer.send("close 1")
    wait_tops(c, sub, lambda v: main not in v and v[child]["parent"] is None)
    peer.send("close 2")
    t = wait_tops(c, sub, lambda v: set(v) == {dialog} and v[dialog]["parent"] is None)
    c.close()


def gdb_counter(pid, function, stop_at):
    """gdb attached to `pid`, counting calls of `function` until `stop_at` is called; None when
    gdb cannot attach. Read the count with gdb_count once the process has called `stop_at`."""
    gdb = subprocess.Popen(["gdb", "-q", "-nx", "-batch", "-p", str(pid), "-ex", "set pagination off",
                            "-ex", f"break {function}", "-ex", "ignore 1 1000000000", "-ex", f"break {stop_at}",
                            "-ex", "echo counting\\n", "-ex", "continue", "-ex", "info breakpoints 1", "-ex", "detach"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # Read from the fd itself: select() does not see what a Python buffer already holds.
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and select.select([gdb.stdout], [], [], deadline - time.monotonic())[0]:
        chunk = os.read(gdb.stdout.fileno(), 65536)
        out += chunk
        # The breakpoints are in before this, and the process runs on right after it.
        if not chunk or out.endswith(b"counting\n"):
            break
    text = out.decode(errors="replace")
    if "Breakpoint 1 at" not in text or "Breakpoint 2 at" not in text or not text.endswith("counting\n"):
        gdb.kill()
        gdb.wait()
        if "ptrace" in text:
            return None, text
        raise AssertionError("gdb could not set its breakpoints:\n" + text)
    return gdb, text


def gdb_count(gdb):
    out = gdb.communicate(timeout=60)[0].decode(errors="replace")
    m = re.search(r"breakpoint already hit (\d+) time", out)
    return int(m.group(1)) if m else 0, out


def test_one_window_among_many_costs_one_window(env, peer_exe):
    """Publishing rewrote every toplevel at each window that came or went (O(n) per window,
    O(n²) for n windows). The tree patch was O(1) even so (unchanged windows compare equal), so
    the work is counted inside qsd: the calls that build a toplevel's JSON."""
    if not shutil.which("gdb"):
        pytest.skip("gdb is not installed")
    n = 200
    peer = Peer(env, peer_exe, "--wlr")
    peer.send(*[f"add {i} app{i} Window {i}" for i in range(1, n + 1)])
    c, sub = start_qsd(env, peer)
    wait_tops(c, sub, lambda v: len(v) == n)
    gdb, text = gdb_counter(env.daemon.pid, "qsd::wayland::toplevelJson", "qsd::wayland::Toplevels::act")
    if gdb is None:
        pytest.skip("gdb cannot attach to qsd: " + text.strip().splitlines()[-1])
    try:
        # One window opens, one changes its title, one closes, each waited for.
        peer.send(f"add {n + 1} new.app New")
        t = wait_tops(c, sub, lambda v: len(v) == n + 1)
        new = next(k for k, v in t.items() if v["appId"] == "new.app")
        peer.send("title 7 Renamed")
        wait_tops(c, sub, lambda v: any(x["title"] == "Renamed" for x in v.values()))
        peer.send("close 9")
        wait_tops(c, sub, lambda v: len(v) == n and not any(x["appId"] == "app9" for x in v.values()))
        # The end mark: qsd stops at Toplevels::act, gdb reads the count and lets it go on.
        c.send_raw('{"jsonrpc":"2.0","id":"mark","method":"wayland.activate","params":{"toplevel":"%s"}}\n' % new)
        calls, out = gdb_count(gdb)
    finally:
        if gdb.poll() is None:
            gdb.send_signal(signal.SIGINT)
            gdb.wait(30)
    assert c.answer("mark", timeout=30)["result"] == {"toplevel": new}
    # The new window's and the renamed one's: 2 (it was 2 + n + (n - 1) = 401).
    what = f"{calls} toplevel JSON builds for one window opened, one renamed and one closed among {n}"
    assert 2 <= calls <= 3, what   # at least those two: the count works
    c.close()


def test_a_compositor_that_keeps_dropping_qsd_is_retried(env, peer_exe):
    """The compositor accepts every connection and ends the first six before qsd has read
    anything (as one does with a client too slow for the burst of events it sent). It is still
    there: qsd tries again, with growing delays, instead of giving up after five tries."""
    peer = Peer(env, peer_exe, "--wlr", "--kick-binds", "6")
    peer.send("add 1 a.app A")
    e = dict(env.env)
    e["WAYLAND_DISPLAY"] = peer.socket
    env.start_qsd(backends=["wayland"], env=e)
    c = env.client()
    sub = c.subscribe(["/wayland"])
    # Retried after 0.1, 0.2, 0.4, 0.8, 1.6 and 3.2 s: the seventh connection gets in.
    c.wait_value(sub, "/wayland/available", True, timeout=30)
    wait_tops(c, sub, lambda v: len(v) == 1)
    # (libwayland-server's own messages about the kicked clients come on the same pipe.)
    kicked = []
    while len(kicked) < 6 and (line := peer.proc.stdout.readline()):
        if line.startswith("kicked"):
            kicked.append(line.strip())
    assert kicked == [f"kicked {i}" for i in range(1, 7)]
    log = env.qsd_log()
    assert "giving up retrying" not in log
    assert "keeps closing the connection" in log
    c.close()


def test_a_killed_compositor_is_given_up_until_its_socket_is_back(env, peer_exe):
    """A compositor that crashed leaves its socket, which refuses: qsd tries a few more times
    and then waits for the socket to be created again, without waking up meanwhile."""
    peer = Peer(env, peer_exe, "--wlr")
    peer.send("add 1 a.app A")
    c, sub = start_qsd(env, peer)
    wait_tops(c, sub, lambda v: len(v) == 1)
    peer.proc.kill()
    peer.proc.wait()
    assert os.path.exists(peer.socket)
    c.wait_value(sub, "/wayland", {"available": False}, timeout=20)
    wait_until(lambda: "giving up retrying" in env.qsd_log(), 20, what="qsd giving up the stale socket")
    # A new compositor replaces the stale socket: the watch sees it.
    peer = Peer(env, peer_exe, "--wlr", generation=2)
    peer.send("add 2 b.app B")
    c.wait_value(sub, "/wayland/available", True, timeout=20)
    wait_tops(c, sub, lambda v: [x["appId"] for x in v.values()] == ["b.app"])
    c.close()


def test_an_output_that_goes_before_qsds_sync_returns(env, peer_exe):
    """Monitors that come and go in one burst (a flicker on hotplug, a dock replugged): qsd binds
    each and asks for a sync before publishing it; the output is gone when the sync returns.
    Before, the sync's callback wrote into the freed output (the sanitizer build aborts on it), and
    an output allocated in its place was published before its own sync returned."""
    peer = Peer(env, peer_exe)
    c, sub = start_qsd(env, peer)
    c.wait_for(lambda: pointer_get(c.mirror(sub), "/wayland/outputs/PEER-1", None) is not None, 20, what="PEER-1")
    peer.send(*[f"output-flicker FLICKER-{i}" for i in range(8)], "output LATER-1")
    c.wait_for(lambda: pointer_get(c.mirror(sub), "/wayland/outputs/LATER-1", None) is not None, 20, what="LATER-1")
    later = pointer_get(c.mirror(sub), "/wayland/outputs/LATER-1")
    assert later["mode"]["width"] == 1920 and later["mode"]["height"] == 1080, later
    assert not [k for k in pointer_get(c.mirror(sub), "/wayland/outputs") if k.startswith("FLICKER")]
    assert env.daemon.poll() is None
