"""Test harness: private D-Bus buses, python-dbusmock services, a real qsd, and a JSON-RPC
client that keeps a mirror of its subscriptions. Every integration test goes through this, so
assertions are made the way users see the daemon: through its socket."""

import copy
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time

BUILD = os.environ.get("QSD_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
QSD = os.environ.get("QSD_BIN", os.path.join(BUILD, "daemon", "qsd"))
QSCTL = os.environ.get("QSCTL_BIN", os.path.join(BUILD, "cli", "qsctl"))
PY = "/usr/bin/python3"  # dbusmock and dbus-python live in Debian's python, not in a pyenv one

BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{kind}</type>
  <keep_umask/>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def wait_until(predicate, timeout=10.0, interval=0.02, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)


class RpcError(Exception):
    def __init__(self, error):
        super().__init__(f"{error.get('code')}: {error.get('message')} {error.get('data', '')}")
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


def pointer_tokens(path):
    if path == "":
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def pointer_get(doc, path, default=KeyError):
    cur = doc
    for t in pointer_tokens(path):
        if not isinstance(cur, dict) or t not in cur:
            if default is KeyError:
                raise KeyError(path)
            return default
        cur = cur[t]
    return cur


def apply_patch(doc, changes):
    """RFC 6902 add/replace/remove on a dict tree (the daemon only emits these)."""
    for op in changes:
        toks = pointer_tokens(op["path"])
        if not toks:
            if op["op"] == "remove":
                doc.clear()
            else:
                doc.clear()
                doc.update(copy.deepcopy(op["value"]))
            continue
        parent = doc
        for t in toks[:-1]:
            parent = parent[t]
        if op["op"] in ("add", "replace"):
            if op["op"] == "replace" and toks[-1] not in parent:
                raise KeyError(f"replace of missing {op['path']}")
            # A copy: later patches must not change the recorded notification.
            parent[toks[-1]] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del parent[toks[-1]]
        else:
            raise ValueError(op)
    return doc


class Client:
    """A line-oriented JSON-RPC client with a mirror per subscription."""

    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 1
        self.notifications = []
        self.responses = {}
        self.mirrors = {}  # subscription -> {"doc", "revision", "paths"}

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def read_line(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no line from qsd")
            r, _, _ = select.select([self.sock], [], [], remaining)
            if not r:
                continue
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("qsd closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def _handle(self, msg):
        if isinstance(msg, dict) and "method" in msg and "id" not in msg:
            self._notification(msg)
            return None
        return msg

    def _notification(self, msg):
        self.notifications.append(msg)
        p = msg.get("params", {})
        if msg["method"] == "tree.changed" and p.get("subscription") in self.mirrors:
            m = self.mirrors[p["subscription"]]
            assert p["revision"] > m["revision"], (p["revision"], m["revision"])
            apply_patch(m["doc"], p["changes"])
            m["revision"] = p["revision"]
        elif msg["method"] == "tree.resync" and p.get("subscription") in self.mirrors:
            m = self.mirrors[p["subscription"]]
            m["doc"] = self._doc_from_snapshot(m["paths"], p["snapshot"])
            m["revision"] = p["revision"]

    def read_message(self, timeout=10.0):
        """Next message; notifications are also recorded and applied to the mirrors."""
        msg = self.read_line(timeout)
        self._handle(msg)
        return msg

    def request_raw(self, line, timeout=10.0):
        """Sends a raw line and returns the next non-notification message (or None on timeout
        when no answer is expected)."""
        self.send_raw(line if line.endswith("\n") else line + "\n")
        deadline = time.monotonic() + timeout
        while True:
            msg = self._handle(self.read_line(max(0.01, deadline - time.monotonic())))
            if msg is not None:
                return msg

    def call_full(self, method, params=None, timeout=10.0):
        rid = self.next_id
        self.next_id += 1
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            req["params"] = params
        self.send_raw(json.dumps(req) + "\n")
        deadline = time.monotonic() + timeout
        while rid not in self.responses:
            msg = self._handle(self.read_line(max(0.01, deadline - time.monotonic())))
            if msg is not None:
                self.responses[msg.get("id")] = msg
        return self.responses.pop(rid)

    def call(self, method, params=None, timeout=10.0):
        resp = self.call_full(method, params, timeout)
        if "error" in resp:
            raise RpcError(resp["error"])
        return resp["result"]

    @staticmethod
    def _doc_from_snapshot(paths, snapshot):
        doc = {}
        for path in paths:
            if path == "":
                if "" in snapshot:
                    doc = json.loads(json.dumps(snapshot[""]))
                continue
            toks = pointer_tokens(path)
            cur = doc
            for t in toks[:-1]:
                cur = cur.setdefault(t, {})
            if path in snapshot:
                cur[toks[-1]] = json.loads(json.dumps(snapshot[path]))
        return doc

    def subscribe(self, paths, throttle_ms=None):
        params = {"paths": paths}
        if throttle_ms is not None:
            params["throttleMs"] = throttle_ms
        res = self.call("tree.subscribe", params)
        self.mirrors[res["subscription"]] = {
            "doc": self._doc_from_snapshot(paths, res["snapshot"]),
            "revision": res["revision"],
            "paths": paths,
        }
        return res["subscription"]

    def mirror(self, sub):
        return self.mirrors[sub]["doc"]

    def pump(self, timeout=0.05):
        """Reads whatever arrives within `timeout`."""
        try:
            while True:
                self.read_message(timeout)
        except TimeoutError:
            pass

    def wait_for(self, predicate, timeout=10.0, what="condition"):
        """Reads messages until predicate() is true."""
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out waiting for {what}")
            try:
                self.read_message(remaining)
            except TimeoutError:
                pass
        return True

    def wait_value(self, sub, path, expected=None, predicate=None, timeout=10.0):
        """Waits until the mirror of `sub` has `expected` (or a value satisfying predicate) at path."""
        def ok():
            v = pointer_get(self.mirror(sub), path, None)
            return predicate(v) if predicate else v == expected
        self.wait_for(ok, timeout, what=f"{path} == {expected!r}")
        return pointer_get(self.mirror(sub), path, None)


class Env:
    """A private world: temp dirs for XDG variables, optional private system and session
    buses, python-dbusmock services, and qsd itself. Everything is stopped by close()."""

    def __init__(self, buses=True):
        self.dir = tempfile.mkdtemp(prefix="qsd-test.")
        self.procs = []
        self.run = os.path.join(self.dir, "run")
        os.makedirs(self.run, mode=0o700)
        for d in ("home", "state", "config"):
            os.makedirs(os.path.join(self.dir, d))
        self.env = dict(os.environ)
        self.env.update(
            HOME=os.path.join(self.dir, "home"),
            XDG_RUNTIME_DIR=self.run,
            XDG_STATE_HOME=os.path.join(self.dir, "state"),
            XDG_CONFIG_HOME=os.path.join(self.dir, "config"),
        )
        self.env.pop("QSD_SOCKET", None)
        self.env.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        self.env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        self.socket = os.path.join(self.run, "qsd", "qsd.sock")
        self.daemon = None
        if buses:
            self.start_buses()

    def start_buses(self):
        for kind in ("system", "session"):
            sock = os.path.join(self.dir, f"{kind}_bus_socket")
            conf = os.path.join(self.dir, f"{kind}.conf")
            with open(conf, "w") as f:
                f.write(BUS_CONF.format(kind=kind, path=sock))
            out = subprocess.run(
                ["dbus-daemon", f"--config-file={conf}", "--fork", "--print-address=1", "--print-pid=1"],
                check=True, capture_output=True, text=True, env=self.env,
            ).stdout.split("\n")
            self.procs.append(("pid", int(out[1])))
            key = "DBUS_SYSTEM_BUS_ADDRESS" if kind == "system" else "DBUS_SESSION_BUS_ADDRESS"
            self.env[key] = out[0].strip()

    def spawn(self, args, name, **kw):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=kw.pop("env", self.env),
                             stdin=subprocess.DEVNULL, **kw)
        self.procs.append(("popen", p))
        return p

    def wait_bus_name(self, name, system=True, timeout=15):
        subprocess.run(["gdbus", "wait", "--system" if system else "--session", "--timeout", str(timeout), name],
                       check=True, env=self.env, capture_output=True)

    def start_mock(self, template, params=None, system=True, name=None):
        """Starts a python-dbusmock template; returns its Popen."""
        args = [PY, "-m", "dbusmock", "--system" if system else "--session", "-t", template]
        if params:
            args += ["-p", json.dumps(params)]
        p = self.spawn(args, f"mock-{template}-{len(self.procs)}")
        if name:
            self.wait_bus_name(name, system)
        return p

    def start_qsd(self, *args, backends=None, debug_api=True, socket_path=None, wait=True, env=None):
        cmd = [QSD]
        if socket_path:
            self.socket = socket_path
            cmd += ["--socket", socket_path]
        if debug_api:
            cmd.append("--debug-api")
        if backends is not None:
            cmd.append("--backends=" + ",".join(backends))
        cmd += list(args)
        e = dict(env or self.env)
        self.daemon = self.spawn(cmd, f"qsd-{len(self.procs)}", env=e)
        if wait:
            wait_until(lambda: self._connectable(), 10, what="qsd socket")
        return self.daemon

    def _connectable(self):
        if self.daemon is not None and self.daemon.poll() is not None:
            raise RuntimeError(f"qsd exited with {self.daemon.returncode}: {self.qsd_log()}")
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def stop_qsd(self, sig=signal.SIGTERM, timeout=10):
        if self.daemon is None:
            return None
        self.daemon.send_signal(sig)
        rc = self.daemon.wait(timeout)
        self.daemon = None
        return rc

    def qsd_log(self):
        logs = sorted(f for f in os.listdir(self.dir) if f.startswith("qsd-"))
        return "".join(open(os.path.join(self.dir, f)).read() for f in logs)

    def client(self):
        return Client(self.socket)

    def qsctl(self, *args, check=False, timeout=20, input=None):
        e = dict(self.env)
        e["QSD_SOCKET"] = self.socket
        return subprocess.run([QSCTL, *args], capture_output=True, text=True, env=e, timeout=timeout, check=check,
                              input=input)

    def gdbus(self, *args, system=True):
        return subprocess.run(["gdbus", "call", "--system" if system else "--session", *args], check=True,
                              capture_output=True, text=True, env=self.env).stdout

    def dbus(self):
        """A dbus-python system bus connection to the private bus (for driving mocks)."""
        import dbus  # noqa: imported lazily: only under /usr/bin/python3
        return dbus.bus.BusConnection(self.env["DBUS_SYSTEM_BUS_ADDRESS"])

    def rss_kib(self):
        with open(f"/proc/{self.daemon.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def close(self):
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
        for kind, p in reversed(self.procs):
            try:
                if kind == "pid":
                    os.kill(p, signal.SIGTERM)
                elif p.poll() is None:
                    p.terminate()
            except (ProcessLookupError, OSError):
                pass
        for kind, p in self.procs:
            if kind == "popen":
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
