"""A bus daemon that accepts qsd's connection but does not answer (stopped, wedged, overloaded)
must not hold qsd up: clients are answered, the backends on the other bus and on none run,
SIGTERM ends qsd at once, and the backends on that bus start when it answers, however late
(docs/architecture.md, "Start-up and the buses").

The bus that does not answer is HeldBus: a socket that accepts D-Bus connections and sends
nothing until release(); from then on it relays every connection, held and new, to the test's
real private system bus."""

import os
import signal
import socket
import threading
import time

import pytest

from qsdtest import Env, RpcError, pointer_get, wait_until
import upmock

# Daemon::kBusAnswerTimeout and the first delay of Daemon::kBusRetry.
ANSWER_TIMEOUT = 10
FIRST_RETRY = 5


class HeldBus:
    def __init__(self, path, target):
        self.path = path
        self.target = target
        self.released = False
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
                if self.released:
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
