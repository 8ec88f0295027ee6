"""The daemon's life: who may connect (SO_PEERCRED), socket activation, the socket file it owns,
SIGTERM/SIGINT, and a second instance on the same socket."""

import fcntl
import json
import os
import signal
import socket
import stat
import subprocess

import pytest

from qsdtest import PY, QSD, Env, connectable, listening, wait_until
from rpcutil import connect_raw

PERMISSION_DENIED = -32004


@pytest.fixture
def env():
    e = Env(buses=False)
    yield e
    e.close()


def hello(path):
    s = connect_raw(path)
    try:
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"hello"}\n')
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            assert chunk, "closed without an answer"
            buf += chunk
        return json.loads(buf.split(b"\n")[0])["result"]
    finally:
        s.close()


CONNECT_AS_OTHER_USER = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"hello"}\n')
except OSError:
    pass
data = b""
while True:
    try:
        chunk = s.recv(65536)
    except ConnectionResetError:
        break
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another uid")
def test_another_uid_is_refused(env):
    env.start_qsd(backends=[])
    owner = env.client()
    sub = owner.subscribe(["/debug"])
    # Let another user reach the socket at all: search permission on every directory and
    # write permission on the socket (qsd creates them 0700 and 0600).
    for d in [env.dir, env.run, os.path.dirname(env.socket)]:
        os.chmod(d, 0o755)
    os.chmod(env.socket, 0o777)
    # Only `owner` is connected (the harness's readiness probe is reaped asynchronously).
    wait_until(lambda: owner.call("tree.get", {"path": "/daemon/clients"})["value"] == 1, 5)
    for _ in range(3):
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", PY, "-c",
                            CONNECT_AS_OTHER_USER, env.socket], capture_output=True, text=True, timeout=30, cwd="/")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        # One error line, then the connection is closed; hello was never answered.
        assert len(lines) == 1, r.stdout
        msg = json.loads(lines[0])
        assert msg["id"] is None and msg["error"]["code"] == PERMISSION_DENIED, msg
        assert msg["error"]["data"]["uid"] == 65534
    wait_until(lambda: "refusing a connection from uid 65534" in env.qsd_log(), 5, what="the refusal in the log")
    # The daemon and its own user's clients are unaffected; refused peers were never clients.
    assert owner.call("hello")["protocol"] == 1
    assert owner.call("tree.get", {"path": "/daemon/clients"})["value"] == 1
    owner.call("debug.set", {"path": "/debug/still", "value": True})
    owner.wait_value(sub, "/debug/still", True)
    assert env.daemon.poll() is None


def test_socket_file_and_directory_are_private(env):
    env.start_qsd(backends=[])
    st = os.stat(env.socket)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    assert stat.S_IMODE(os.stat(os.path.dirname(env.socket)).st_mode) == 0o700
    assert env.socket == os.path.join(env.run, "qsd", "qsd.sock")   # $XDG_RUNTIME_DIR/qsd/qsd.sock


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_exits_0_and_removes_the_socket(env, sig):
    env.start_qsd(backends=[])
    c = env.client()
    c.subscribe([""])
    assert os.path.exists(env.socket)
    rc = env.stop_qsd(sig)
    assert rc == 0, env.qsd_log()
    assert not os.path.exists(env.socket)
    # Its clients see the end of the stream.
    with pytest.raises(ConnectionError):
        while True:
            c.read_message(5)


def test_sigterm_while_a_request_is_in_flight_exits_cleanly(env):
    # A request still being worked on when qsd stops (a long debug.flood) is dropped with
    # everything it holds: the exit status is 0 and, under ASan, nothing leaks (Env.close
    # reads the log).
    env.start_qsd(backends=[])
    c, sub = env.watch("/debug")
    c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "debug.flood", "params": {"count": 10_000_000}}) + "\n")
    c.wait_for(lambda: "flood" in c.mirror(sub).get("debug", {}), what="the flood under way")
    assert env.stop_qsd() == 0, env.qsd_log()


def test_sighup_never_ends_the_daemon(env):
    # Whatever backends are built (here none), SIGHUP is a reload request, not a kill.
    env.start_qsd(backends=[])
    c = env.client()
    env.daemon.send_signal(signal.SIGHUP)
    assert c.call("hello")["protocol"] == 1
    env.daemon.send_signal(signal.SIGHUP)
    # Both signals were handled (each logs a line), and the daemon is still there after them.
    wait_until(lambda: env.qsd_log().count("SIGHUP") == 2 or env.daemon.poll() is not None,
               what="the second SIGHUP handled")
    assert env.daemon.poll() is None, env.qsd_log()
    assert c.call("tree.get", {"path": "/daemon/protocol"})["value"] == 1


def test_socket_option_and_environment_variable(env):
    path = os.path.join(env.dir, "elsewhere.sock")
    e = dict(env.env)
    e["QSD_SOCKET"] = path
    p = env.spawn([QSD, "--backends="], "qsd-envsock", env=e)
    wait_until(lambda: connectable(path), 10, what="the QSD_SOCKET socket accepting connections")
    assert hello(path)["protocol"] == 1
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 0
    assert not os.path.exists(path)


def test_second_instance_refuses_and_does_not_steal(env):
    env.start_qsd(backends=[])
    first = hello(env.socket)
    inode = os.stat(env.socket).st_ino
    second = subprocess.run([QSD, "--backends="], env=env.env, capture_output=True, text=True, timeout=20)
    assert second.returncode == 1, second.stderr
    assert "already listening" in second.stderr
    # The first daemon still owns the socket: same file, same epoch.
    assert os.stat(env.socket).st_ino == inode
    assert hello(env.socket)["epoch"] == first["epoch"]
    assert env.stop_qsd() == 0



def test_a_qsd_starting_on_the_same_path_refuses(env):
    """Checking that nobody listens, then binding, is two steps: two qsd started at the same
    moment both passed the check, and the second took the path from the first, which then
    served nobody while it queued for qsd's bus names. The path is taken under a lock on
    <socket>.lock: while another process holds it, qsd refuses and leaves the path alone."""
    os.makedirs(os.path.dirname(env.socket), mode=0o700, exist_ok=True)
    with open(env.socket + ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)   # a qsd between its check and its bind
        second = subprocess.run([QSD, "--backends="], env=env.env, capture_output=True, text=True, timeout=20)
        assert second.returncode == 1, second.stderr
        assert "already listening" in second.stderr and ".lock" in second.stderr, second.stderr
        assert not os.path.exists(env.socket)
    env.start_qsd(backends=[])   # once the lock is free
    assert hello(env.socket)["protocol"] == 1
    assert env.stop_qsd() == 0
    assert not os.path.exists(env.socket)

def test_stale_socket_file_is_replaced(env):
    os.makedirs(os.path.dirname(env.socket), mode=0o700)
    s = socket.socket(socket.AF_UNIX)
    s.bind(env.socket)
    s.close()   # a socket file nobody listens on, as a crashed daemon leaves it
    env.start_qsd(backends=[])
    assert hello(env.socket)["protocol"] == 1
    assert env.stop_qsd() == 0
    assert not os.path.exists(env.socket)


def test_socket_activation(env):
    path = os.path.join(env.dir, "activated.sock")
    p = env.spawn(["systemd-socket-activate", "-l", path, QSD, "--debug-api", "--backends="], "qsd-activated")
    wait_until(lambda: listening(path), 10, what="the activation socket listening")
    # qsd starts on the first connection and serves it on the passed fd.
    res = hello(path)
    assert res["protocol"] == 1 and "debug" in res["capabilities"]
    wait_until(lambda: "socket-activated fd" in open(os.path.join(env.dir, "qsd-activated.log")).read(), 5)
    c = connect_raw(path)
    c.sendall(b'{"jsonrpc":"2.0","id":2,"method":"tree.subscribe","params":{"paths":["/debug"]}}\n')
    assert json.loads(read_raw_line_sock(c))["id"] == 2
    c.close()
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 0
    # The socket belongs to whoever passed it: qsd leaves the file alone.
    assert os.path.exists(path) and stat.S_ISSOCK(os.stat(path).st_mode)


def read_raw_line_sock(s):
    buf = b""
    while b"\n" not in buf:
        chunk = s.recv(65536)
        assert chunk
        buf += chunk
    return buf.split(b"\n")[0]


def test_usage_errors(env):
    r = subprocess.run([QSD, "--no-such-option"], env=env.env, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "unknown option" in r.stderr
    e = dict(env.env)
    e.pop("XDG_RUNTIME_DIR")
    r = subprocess.run([QSD, "--backends="], env=e, capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and "XDG_RUNTIME_DIR" in r.stderr
    r = subprocess.run([QSD, "--version"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and r.stdout.startswith("qsd ")
    # A misspelt backend left that backend out without a word; a --max-clients that is no
    # number was read as 0, and every connection was refused.
    r = subprocess.run([QSD, "--backends=nm,uppower"], env=env.env, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and '"uppower"' in r.stderr and "upower" in r.stderr.split("uppower", 1)[1]
    for bad in ("abc", "0", "-1", "12x", ""):
        r = subprocess.run([QSD, f"--max-clients={bad}"], env=env.env, capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and "--max-clients needs a number" in r.stderr, bad


def test_the_connection_limit_is_the_one_qsd_runs_with(env):
    """rpc.discover's x-limits.connections is --max-clients, not the default of the description."""
    env.start_qsd("--max-clients", "3", backends=[])
    c = env.client()
    assert c.call("rpc.discover")["x-limits"]["connections"]["value"] == 3


def test_clients_count_in_the_tree(env):
    env.start_qsd(backends=[])
    a = env.client()
    sub = a.subscribe(["/daemon/clients"])
    # The harness's readiness probe may not be reaped yet: wait until only `a` is left.
    n = 1
    a.wait_value(sub, "/daemon/clients", n)
    b = env.client()
    a.wait_value(sub, "/daemon/clients", n + 1)
    b.close()
    a.wait_value(sub, "/daemon/clients", n)


@pytest.mark.parametrize("bus", ["system", "session"])
def test_a_lost_bus_ends_qsd_with_status_3(bus):
    """The bus daemon going away closes qsd's connection for good: qsd says so once and exits
    with 3 (so that Restart=on-failure starts it again on the new bus), instead of polling a
    closed connection and logging on every pass, and stops its backends cleanly on the way out
    (their proxies, matches, owned names and agents are on the dead connection)."""
    e = Env()
    try:
        # One backend with an owned name and one with a watched service on each bus.
        e.start_qsd(backends=["upower", "bluetooth", "notifications", "tray", "mpris"])
        c, sub = e.watch("/daemon/backends")
        # Both buses answered and qsd is connected to them: the session bus's notification
        # server runs, and UPower (not started here) was found missing on the system bus.
        c.wait_value(sub, "/daemon/backends/notifications/state", "running")
        c.wait_value(sub, "/daemon/backends/upower/state", "unavailable")
        c.close()
        e.buses[bus].send_signal(signal.SIGTERM)
        rc = e.daemon.wait(15)
        log = e.qsd_log()
        assert rc == 3, log[-3000:]
        assert f"the connection to the {bus} bus was lost" in log
        assert log.count("failed") < 5, log[-3000:]
        assert not os.path.exists(e.socket), "the socket file qsd bound is removed on the way out"
    finally:
        e.close()
