"""A bus daemon that accepts qsd's connection but does not answer (stopped, wedged, overloaded)
must not hold qsd up: clients are answered, the backends on the other bus and on none run,
SIGTERM ends qsd at once, and the backends on that bus start when it answers, however late
(docs/architecture.md, "Start-up and the buses").

The bus that does not answer is HeldBus: a socket that accepts D-Bus connections and sends
nothing until release(); from then on it relays every connection, held and new, to the test's
real private system bus. With error_first, it answers its first connection itself instead, as a
bus daemon without GetId would (ErrorAnswer), and relays the rest at once."""

import os
import signal
import socket
import struct
import threading
import time

import pytest

from qsdtest import Env, RpcError, pointer_get, wait_until
import upmock

# Daemon::kBusAnswerTimeout and the first delay of Daemon::kBusRetry.
ANSWER_TIMEOUT = 10
FIRST_RETRY = 5


def _pad(buf, n):
    buf += b"\0" * (-len(buf) % n)


def _marshal_field(buf, code, sig, value):
    """One header field (a (yv) struct) of a little-endian D-Bus message, appended to buf."""
    _pad(buf, 8)
    buf += bytes([code, 1]) + sig.encode() + b"\0"
    if sig == "u":
        _pad(buf, 4)
        buf += struct.pack("<I", value)
    elif sig == "g":
        buf += bytes([len(value)]) + value.encode() + b"\0"
    else:
        _pad(buf, 4)
        buf += struct.pack("<I", len(value)) + value.encode() + b"\0"


def _message(mtype, serial, fields, body_string):
    """A little-endian D-Bus message (METHOD_RETURN 2, ERROR 3) whose body is one string."""
    body = struct.pack("<I", len(body_string)) + body_string.encode() + b"\0"
    head = bytearray(16)
    for code, sig, value in fields + [(8, "g", "s")]:
        _marshal_field(head, code, sig, value)
    fields_len = len(head) - 16
    _pad(head, 8)
    head[0:16] = b"l" + bytes([mtype, 0, 1]) + struct.pack("<III", len(body), serial, fields_len)
    return bytes(head) + body


def _parse_member(data):
    """(serial, member, total length) of the little-endian message at the start of data, or
    None while it is incomplete."""
    if len(data) < 16:
        return None
    body_len, serial, fields_len = struct.unpack_from("<III", data, 4)
    total = 16 + fields_len + (-(16 + fields_len) % 8) + body_len
    if len(data) < total:
        return None
    member, i = None, 16
    while i < 16 + fields_len:
        i += -i % 8
        code, siglen = data[i], data[i + 1]
        sig = chr(data[i + 2])
        i += 3 + siglen
        if sig == "g":
            i += 1 + data[i] + 1
        else:
            i += -i % 4
            if sig == "u":
                i += 4
            else:
                n = struct.unpack_from("<I", data, i)[0]
                if code == 3:
                    member = data[i + 4:i + 4 + n].decode()
                i += 4 + n + 1
    return serial, member, total


class ErrorAnswer:
    """A bus daemon that authenticates a client, welcomes it (Hello) and answers every other
    call with an error: a bus that works and does not know the method asked."""

    ERROR = "org.freedesktop.DBus.Error.UnknownMethod"

    def __init__(self, sock):
        self.sock = sock
        self.calls = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        try:
            data = self._authenticate()
            serial = 0
            while data is not None:
                parsed = _parse_member(data)
                if parsed is None:
                    more = self.sock.recv(65536)
                    if not more:
                        return
                    data += more
                    continue
                call_serial, member, total = parsed
                data = data[total:]
                self.calls.append(member)
                serial += 1
                fields = [(5, "u", call_serial), (6, "s", ":1.1"), (7, "s", "org.freedesktop.DBus")]
                if member == "Hello":
                    self.sock.sendall(_message(2, serial, fields, ":1.1"))
                else:
                    self.sock.sendall(_message(3, serial, fields + [(4, "s", self.ERROR)], f"no {member} here"))
        except OSError:
            pass

    def _authenticate(self):
        """The SASL exchange, line by line; returns what the client sent after BEGIN."""
        data = b""
        while True:
            while b"\r\n" not in data:
                more = self.sock.recv(4096)
                if not more:
                    return None
                data += more
            line, data = data.split(b"\r\n", 1)
            line = line.lstrip(b"\0")
            if line == b"AUTH EXTERNAL":
                self.sock.sendall(b"DATA\r\n")
            elif line.startswith((b"AUTH EXTERNAL ", b"DATA")):
                self.sock.sendall(b"OK " + b"0" * 32 + b"\r\n")
            elif line == b"NEGOTIATE_UNIX_FD":
                self.sock.sendall(b"AGREE_UNIX_FD\r\n")
            elif line == b"BEGIN":
                return data
            else:
                self.sock.sendall(b"ERROR\r\n")


class HeldBus:
    def __init__(self, path, target, error_first=False):
        self.path = path
        self.target = target
        self.released = error_first
        self.error_first = error_first
        self.error_answer = None
        self.held = []
        self.sockets = []
        self.open = 0   # relayed connections the client has not closed
        self.lock = threading.Lock()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def address(self):
        return "unix:path=" + self.path

    def connections(self):
        with self.lock:
            return len(self.held) + len(self.sockets) // 2

    def open_clients(self):
        with self.lock:
            return self.open

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if self.error_first and not self.error_answer:
                    self.held.append(client)   # counted and closed as a held one
                    self.error_answer = ErrorAnswer(client)
                elif self.released:
                    self._relay(client)
                else:
                    self.held.append(client)

    def release(self):
        with self.lock:
            self.released = True
            for client in self.held:
                self._relay(client)
            self.held = []

    def _relay(self, client):
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(self.target)
        self.sockets += [client, upstream]
        self.open += 1
        threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src, dst, from_client):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        if from_client:
            with self.lock:
                self.open -= 1
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self):
        self.listener.close()
        with self.lock:
            for s in self.held + self.sockets:
                s.close()


@pytest.fixture
def world():
    env = Env()
    upmock.start_upower(env)
    upmock.add_battery(env)
    system = env.env["DBUS_SYSTEM_BUS_ADDRESS"]   # unix:path=...,guid=...
    assert system.startswith("unix:path="), system
    held = HeldBus(os.path.join(env.dir, "held-system-bus"), system[len("unix:path="):].split(",")[0])
    qsd_env = dict(env.env, DBUS_SYSTEM_BUS_ADDRESS=held.address())
    yield env, held, qsd_env
    held.close()
    env.close()


def state(c, sub, backend):
    return pointer_get(c.mirror(sub), f"/daemon/backends/{backend}", {}) or {}


def test_clients_and_the_other_bus_are_served_while_a_bus_does_not_answer(world):
    env, held, qsd_env = world
    started = time.monotonic()
    env.start_qsd(backends=["upower", "notifications"], env=qsd_env)
    c = env.client()
    sub = c.subscribe(["/daemon/backends", "/power"])
    # The session bus answered: its backend runs, whatever the system bus does.
    c.wait_value(sub, "/daemon/backends/notifications/state", "running")
    upower = state(c, sub, "upower")
    # qsd did ask the held bus. Its connect() returns once the kernel queued the connection, so
    # the relay's thread may accept it after the other bus's backend runs (under load).
    wait_until(lambda: held.connections() >= 1, 10, what="qsd's connection to the held bus")
    assert pointer_get(c.mirror(sub), "/power/available") is False
    with pytest.raises(RpcError) as e:
        c.call("power.setProfile", {"profile": "balanced"})
    assert e.value.code == -32000
    # Until qsd gives the bus up (ANSWER_TIMEOUT after it started, which a loaded machine may
    # reach before this point), the backend on it is starting and says what it waits for.
    if time.monotonic() - started < ANSWER_TIMEOUT:
        assert upower.get("state") == "starting"
        assert e.value.data["reason"] == "the system bus has not answered yet"
    # SIGTERM is handled at once (it waited for the bus's 90 s authentication timeout before).
    assert env.stop_qsd(signal.SIGTERM, timeout=5) == 0


def test_a_bus_that_answers_late_is_used_then(world):
    env, held, qsd_env = world
    env.start_qsd(backends=["upower"], env=qsd_env)
    c = env.client()
    sub = c.subscribe(["/daemon/backends", "/power"])
    c.wait_value(sub, "/daemon/backends/upower/state", "starting")
    held.release()
    # At once, or (on a machine slow enough that qsd gave up first) when it asks again.
    c.wait_value(sub, "/daemon/backends/upower/state", "running", timeout=FIRST_RETRY + ANSWER_TIMEOUT + 10)
    c.wait_value(sub, "/power/available", True)
    c.wait_for(lambda: pointer_get(c.mirror(sub), "/power/devices", {}), what="the battery")
    assert env.stop_qsd() == 0


def test_a_bus_that_did_not_answer_in_time_is_asked_again(world):
    env, held, qsd_env = world
    env.start_qsd(backends=["upower"], env=qsd_env)
    c = env.client()
    sub = c.subscribe(["/daemon/backends", "/power"])
    c.wait_value(sub, "/daemon/backends/upower/state", "failed", timeout=ANSWER_TIMEOUT + 10)
    assert state(c, sub, "upower")["error"] == f"cannot connect to the system bus: no answer within {ANSWER_TIMEOUT} s"
    held.release()
    c.wait_value(sub, "/daemon/backends/upower/state", "running", timeout=FIRST_RETRY + ANSWER_TIMEOUT + 10)
    c.wait_value(sub, "/power/available", True)
    # Of all the connections qsd made to the bus (the probe that timed out, the one that was
    # answered, the backends' connection), qsd keeps one open: the probes' are closed.
    assert held.connections() >= 3
    wait_until(lambda: held.open_clients() == 1, 10, what="qsd to close its probes' connections")
    assert env.stop_qsd() == 0


@pytest.fixture
def error_first():
    env = Env()
    upmock.start_upower(env)
    upmock.add_battery(env)
    system = env.env["DBUS_SYSTEM_BUS_ADDRESS"]
    bus = HeldBus(os.path.join(env.dir, "error-first-system-bus"), system[len("unix:path="):].split(",")[0],
                  error_first=True)
    yield env, bus, dict(env.env, DBUS_SYSTEM_BUS_ADDRESS=bus.address())
    bus.close()
    env.close()


def test_an_error_from_the_bus_daemon_is_an_answer(error_first):
    """A bus daemon that answers qsd's question (GetId) with an error works: qsd connects at
    once, as it does when the answer is the bus's id, and neither waits nor asks again."""
    env, bus, qsd_env = error_first
    env.start_qsd(backends=["upower"], env=qsd_env)
    c = env.client()
    sub = c.subscribe(["/daemon/backends", "/power"])
    # Taken for no answer, the error would fail the backend and bring it up FIRST_RETRY later,
    # on a second question (which the relay answers): both are checked below.
    c.wait_value(sub, "/daemon/backends/upower/state", "running", timeout=FIRST_RETRY + ANSWER_TIMEOUT + 10)
    c.wait_value(sub, "/power/available", True)
    assert bus.error_answer.calls[:2] == ["Hello", "GetId"]
    assert "cannot connect to the system bus" not in env.qsd_log()
    # One question, then the backends' connection: no second question was asked.
    assert bus.connections() == 2
    assert env.stop_qsd() == 0
