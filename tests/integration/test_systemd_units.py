"""The systemd user units and the daemon's side of the contract they rely on: the units carry the
keys docs/architecture.md ("systemd") names (and systemd itself accepts them), qsd sends READY=1 once its socket
listens and WATCHDOG=1 pings when a watchdog is configured (what Type=notify and WatchdogSec=
need), and it logs with <N> priority prefixes exactly when stderr is the journal's stream."""

import configparser
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from qsdtest import BUILD, QSD, Client, NotifySocket, wait_until

UNIT_DIR = os.path.join(BUILD, "systemd")
SRC_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "systemd")


def read_unit(path):
    """systemd unit syntax is close enough to INI for these files: no repeated keys."""
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.optionxform = str  # keys are case-sensitive
    with open(path) as f:
        cp.read_file(f)
    return cp


def test_the_socket_unit_listens_where_clients_look_privately():
    unit = read_unit(os.path.join(UNIT_DIR, "qsd.socket"))
    s = unit["Socket"]
    assert s["ListenStream"] == "%t/qsd/qsd.sock"
    assert s["SocketMode"] == "0600"
    assert s["DirectoryMode"] == "0700"
    # One daemon serves every connection: no Accept=yes (that would start one per client).
    assert s.get("Accept", "no") == "no"
    assert unit["Install"]["WantedBy"] == "sockets.target"


def test_the_service_unit_is_a_notify_service_with_a_watchdog_and_restart():
    unit = read_unit(os.path.join(UNIT_DIR, "qsd.service"))
    svc = unit["Service"]
    assert svc["Type"] == "notify"
    assert svc["Restart"] == "on-failure"
    m = re.fullmatch(r"(\d+)s", svc["WatchdogSec"])
    assert m and int(m.group(1)) > 0
    exe = svc["ExecStart"].split()[0]
    # configure_file substituted the installed path: absolute, and no @variable@ left.
    assert os.path.isabs(exe) and exe.endswith("/qsd"), exe
    assert "@" not in svc["ExecStart"]
    assert svc["ExecReload"] == "kill -HUP $MAINPID"
    assert "qsd.socket" in unit["Unit"]["Requires"].split()
    assert "qsd.socket" in unit["Unit"]["After"].split()


def test_the_sources_are_what_the_build_generates_from():
    # The socket is copied verbatim; the service only differs by the substituted ExecStart.
    with open(os.path.join(SRC_DIR, "qsd.socket")) as a, open(os.path.join(UNIT_DIR, "qsd.socket")) as b:
        assert a.read() == b.read()
    with open(os.path.join(SRC_DIR, "qsd.service")) as f:
        template = f.read()
    with open(os.path.join(UNIT_DIR, "qsd.service")) as f:
        generated = f.read()
    assert "ExecStart=@bindir@/qsd" in template
    assert re.sub(r"ExecStart=\S+/qsd", "ExecStart=@bindir@/qsd", generated) == template


def test_systemd_accepts_the_units():
    """systemd-analyze verify loads the units in a private manager; it needs no systemd as PID 1.
    ExecStart is pointed at the built binary, since the install path does not exist here."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    d = tempfile.mkdtemp(prefix="qsd-units.")
    try:
        with open(os.path.join(UNIT_DIR, "qsd.service")) as f:
            service = re.sub(r"ExecStart=\S+", "ExecStart=" + os.path.abspath(QSD), f.read())
        with open(os.path.join(d, "qsd.service"), "w") as f:
            f.write(service)
        shutil.copy(os.path.join(UNIT_DIR, "qsd.socket"), d)
        env = dict(os.environ, SYSTEMD_LOG_LEVEL="notice", XDG_RUNTIME_DIR=d)
        r = subprocess.run([analyze, "--user", "verify", "--man=no", os.path.join(d, "qsd.socket"), os.path.join(d, "qsd.service")],
                           capture_output=True, text=True, env=env, timeout=60, cwd=d)
        # --man=no: the man page is installed by "ninja install", not present in a build tree.
        # Only complaints about our own units count; a container lacks parts of the user
        # manager's environment (e.g. default.target dependencies) that are not ours to judge.
        ours = [l for l in (r.stdout + r.stderr).splitlines() if re.search(r"qsd\.(service|socket)", l)]
        assert r.returncode == 0 or not ours, r.stdout + r.stderr
        assert not ours, "\n".join(ours)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def world():
    d = tempfile.mkdtemp(prefix="qsd-notify.")
    run = os.path.join(d, "run")
    os.makedirs(run, mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=run)
    for k in ("QSD_SOCKET", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "LISTEN_FDS",
              "LISTEN_PID", "DBUS_SYSTEM_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"):
        env.pop(k, None)
    # No bus at all: the daemon must still start and notify (backends are not started here).
    env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + os.path.join(d, "no-system-bus")
    env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + os.path.join(d, "no-session-bus")
    yield {"dir": d, "env": env, "socket": os.path.join(run, "qsd", "qsd.sock")}
    shutil.rmtree(d, ignore_errors=True)


def start(world, env_extra=None, stderr=None, args=("--backends=",)):
    env = dict(world["env"])
    env.update(env_extra or {})
    return subprocess.Popen([QSD, *args], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=stderr if stderr is not None else subprocess.DEVNULL)


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    return proc.wait(10)


def connectable(path):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def test_ready_is_sent_once_the_socket_listens_and_stopping_on_sigterm(world):
    notify = NotifySocket(world["dir"])
    proc = start(world, {"NOTIFY_SOCKET": notify.path})
    try:
        ready = notify.wait_for("READY", "1")
        # READY=1 means "clients may connect now": the socket must already accept.
        assert connectable(world["socket"])
        assert ready.get("STATUS") == "listening"
        c = Client(world["socket"])
        assert c.call("hello")["protocol"] == 1
        c.close()
        assert stop(proc) == 0
        notify.wait_for("STOPPING", "1")
        assert not os.path.exists(world["socket"]), "qsd left its socket behind"
        assert [m for m in notify.messages if m.get("READY") == "1"] == [ready], "READY=1 sent more than once"
    finally:
        if proc.poll() is None:
            proc.kill()
        notify.close()


def test_watchdog_pings_arrive_while_watchdog_usec_is_set(world):
    notify = NotifySocket(world["dir"])
    # 200 ms: sd-event pings at a fraction of it, from the loop itself, so pings prove the
    # loop turns. WATCHDOG_PID is left out (it would have to name qsd's pid before it exists).
    proc = start(world, {"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"})
    try:
        notify.wait_for("READY", "1")
        for _ in range(3):
            notify.wait_for("WATCHDOG", "1")
        # The loop keeps serving between pings.
        c = Client(world["socket"])
        assert c.call("tree.get", {"path": "/daemon/protocol"})["value"] == 1
        c.close()
        notify.wait_for("WATCHDOG", "1")
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        notify.close()


def test_no_watchdog_pings_without_watchdog_usec(world):
    notify = NotifySocket(world["dir"])
    proc = start(world, {"NOTIFY_SOCKET": notify.path})
    try:
        notify.wait_for("READY", "1")
        c = Client(world["socket"])
        c.call("hello")
        c.close()
        assert stop(proc) == 0
        notify.wait_for("STOPPING", "1")
        assert not [m for m in notify.messages if "WATCHDOG" in m], notify.messages
    finally:
        if proc.poll() is None:
            proc.kill()
        notify.close()


def run_and_collect_stderr(world, journal_stream):
    """Runs qsd with stderr on a file; journal_stream(fd) gives JOURNAL_STREAM (or None)."""
    path = os.path.join(world["dir"], "stderr.log")
    with open(path, "w") as err:
        st = os.fstat(err.fileno())
        extra = {}
        js = journal_stream(st)
        if js is not None:
            extra["JOURNAL_STREAM"] = js
        proc = start(world, extra, stderr=err, args=("--backends=", "--debug-api"))
        try:
            wait_until(lambda: connectable(world["socket"]) or proc.poll() is not None, 10, what="qsd socket")
            assert proc.poll() is None
            assert stop(proc) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    with open(path) as f:
        return [l for l in f.read().splitlines() if l]


def test_logs_carry_priority_prefixes_when_stderr_is_the_journal(world):
    lines = run_and_collect_stderr(world, lambda st: f"{st.st_dev}:{st.st_ino}")
    assert lines
    for line in lines:
        assert re.match(r"^<[0-7]>\S", line), line
    # notice (5) for the debug API, info (6) for the socket and the signal.
    assert any(l.startswith("<5>") and "debug API" in l for l in lines), lines
    assert any(l.startswith("<6>") and "listening on" in l for l in lines), lines
    assert any(l.startswith("<6>") and "SIGTERM" in l for l in lines), lines


def test_logs_are_plain_when_stderr_is_not_the_journal(world):
    # No JOURNAL_STREAM, and a JOURNAL_STREAM naming another file (inherited by a child whose
    # stderr was redirected): both plain.
    for js in (lambda st: None, lambda st: f"{st.st_dev}:{st.st_ino + 1}"):
        lines = run_and_collect_stderr(world, js)
        assert lines
        for line in lines:
            assert not re.match(r"^<\d>", line), line
        assert any("listening on" in l for l in lines), lines
