"""Test harness: private D-Bus buses, python-dbusmock services, a real qsd, and a JSON-RPC
client that keeps a mirror of its subscriptions. Every integration test goes through this, so
assertions are made the way users see the daemon: through its socket."""

import copy
import datetime
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.environ.get("QSD_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
QSD = os.environ.get("QSD_BIN", os.path.join(BUILD, "daemon", "qsd"))
# The backends this build has, as CMake passes them to the tests (a build configured with
# -DWITH_NM=OFF leaves nm out); unset (pytest run by hand): every backend.
BUILT_BACKENDS = None if os.environ.get("QSD_BACKENDS_BUILT") is None else \
    set(filter(None, os.environ["QSD_BACKENDS_BUILT"].split(",")))


def skip_unless_built(backends):
    """Skips the calling test when it needs a backend this build left out: what it checks
    cannot happen there."""
    missing = sorted(set(backends) - BUILT_BACKENDS) if BUILT_BACKENDS is not None else []
    if missing:
        import pytest
        pytest.skip(f"this build has no {', '.join(missing)} backend")
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


# Every program a world starts gets SIGTERM when the harness that started it dies, however it
# dies: a harness killed by ctest's timeout, by scripts/flaky or by hand leaves no bus, mock,
# PipeWire or compositor running (they would load every later run and keep their sockets).
# setpriv sets the parent-death signal (prctl PR_SET_PDEATHSIG) and execs the program, which keeps
# the pid. The signal follows the thread that forked, so only programs started from the main thread
# get it (the soak restarts services from threads that end before its close()); and a changed user
# clears it, so a program run through setpriv already passes its own --pdeathsig.
DIE_WITH_HARNESS = ["setpriv", "--pdeathsig", "TERM", "--"]


def listed_functions():
    """The functions daemon/function-order.txt lists for the linker to lay out first (mangled
    names; its patterns, such as the static initializers', left out)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "daemon", "function-order.txt")
    with open(path) as f:
        return {line.strip()[len(".text."):] for line in f if line.startswith(".text.") and "*" not in line}


def die_with_harness(args):
    """`args` run so that the program gets SIGTERM when this process's main thread ends."""
    if args and args[0] == "setpriv" or threading.current_thread() is not threading.main_thread():
        return list(args)
    return DIE_WITH_HARNESS + list(args)


class _Missing:
    """The value of a field that is not in the tree at all (as opposed to a field that is null)."""

    def __repr__(self):
        return "MISSING"

    def __bool__(self):
        return False


MISSING = _Missing()

# What a crash, a sanitizer report or an escaped exception leaves in qsd's log.
CRASH_MARKERS = ("Sanitizer", "runtime error", "terminate called", "Segmentation fault")
CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE)


ACTIVATED_QSD = """#!/bin/sh
echo $$ > {pidfile}
exec {qsd} --backends={backends} --debug-api >> {log} 2>&1
"""


def activating_session_bus(env, service, backends):
    """Replaces env's session bus with one that starts qsd by D-Bus activation through the built
    service file `service` (systemd/<service>), its Exec pointed at a script that runs the built
    qsd with `backends` (the installed path does not exist here). Returns the file the started
    qsd's pid is written to; the keys of the built file are checked first."""
    built = open(os.path.join(BUILD, "systemd", service)).read()
    keys = dict(line.split("=", 1) for line in built.splitlines() if "=" in line and not line.startswith("#"))
    assert keys["SystemdService"] == "qsd.service"
    assert os.path.isabs(keys["Exec"]) and keys["Exec"].endswith("/qsd")
    services = os.path.join(env.dir, "services")
    os.makedirs(services)
    pidfile = os.path.join(env.dir, "qsd.pid")
    script = os.path.join(env.dir, "start-qsd.sh")
    with open(script, "w") as f:
        f.write(ACTIVATED_QSD.format(pidfile=pidfile, qsd=os.path.abspath(QSD), backends=",".join(backends),
                                     log=os.path.join(env.dir, "qsd-activated.log")))
    os.chmod(script, 0o755)
    with open(os.path.join(services, service), "w") as f:
        f.write(built.replace("Exec=" + keys["Exec"], "Exec=" + script))
    env.buses["session"].terminate()
    env.buses["session"].wait(10)
    conf = os.path.join(env.dir, "session-activating.conf")
    text = BUS_CONF.format(kind="session", path=os.path.join(env.dir, "session_activating_bus_socket"))
    with open(conf, "w") as f:
        f.write(text.replace("<auth>EXTERNAL</auth>", f"<auth>EXTERNAL</auth>\n  <servicedir>{services}</servicedir>"))
    env.env["DBUS_SESSION_BUS_ADDRESS"] = env.start_bus("session", conf)
    return pidfile


def stop_activated_qsd(env, pidfile):
    """Stops the qsd the bus started (its pid in `pidfile`) and checks its log for crashes."""
    pid = int(open(pidfile).read())
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z",
               10, what="the activated qsd's exit")
    log = env.qsd_log()
    assert not crash_markers(log), log[-4000:]


def crash_markers(log):
    """The crash markers found in a log (empty when it is clean)."""
    return [m for m in CRASH_MARKERS if m in log]


def processes_naming(text):
    """The processes other than this one whose environment names text, as "PID COMMAND LINE": a
    test's world exports its directory (XDG_RUNTIME_DIR, HOME) to everything it starts, so what
    is listed after its clean-up was left behind. Zombies, which run nothing, are left out."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if text.encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue   # gone meanwhile, or not ours to read
        found.append(f"{pid} {cmd}")
    return found


def stacks(pid):
    """Every thread's stack of a running process, from gdb, for a failure's message: a qsd that
    does not stop on SIGTERM is stuck somewhere its log cannot say."""
    if not shutil.which("gdb"):
        return "(no stacks: gdb is not installed)"
    try:
        out = subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                             capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "(no stacks: gdb took over 60 s)"
    lines = [line for line in out.stdout.splitlines() if line.startswith(("#", "Thread"))]
    return "\n".join(lines) if lines else f"(no stacks: {out.stderr.strip()[-500:]})"


def connectable(path):
    """Whether something accepts connections on the Unix socket at path (the file alone is
    there from bind(), before the listen() that makes a connection succeed)."""
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def listening(path):
    """Whether a Unix socket bound to path listens, read from /proc/net/unix without
    connecting (a connection would be a client: it starts a socket-activated service)."""
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            fields = line.split()
            # Flags 00010000 is __SO_ACCEPTCON: listen() was called.
            if len(fields) >= 8 and fields[7] == path and int(fields[3], 16) & 0x10000:
                return True
    return False


def ts(text):
    """A time of the tree (RFC 3339 UTC, \"...Z\") as an aware datetime."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def answers_late_once(body, seconds=6):
    """python-dbusmock method code (for AddMethod on one object) whose first call sleeps
    `seconds` before running `body`, past the 5 s qsd waits for a read of a system service (a
    service busy while the system starts); the mock serves nothing else meanwhile. Later calls
    run `body` at once. One such method per object: the flag is the object's."""
    return (f"if not getattr(self, '_answered_late', False):\n"
            f"    self._answered_late = True\n"
            f"    time.sleep({seconds})\n") + body


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


class AnswerChecker:
    """Every answer a test gets through Client.call_full is held against the API description
    (protocol/api/*.json, merged as the daemon serves it): a result against its method's result
    schema, with no member the schema leaves out; an error's data against its code's
    x-data-schema. So a method whose answers drift from what rpc.discover promises fails the test
    that calls it. A method's first 64 results are checked (a test of 100 000 calls pays for 64).
    QSD_CHECK_ANSWERS=0 turns it off."""

    API_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "protocol", "api")
    LIMIT = 64

    def __init__(self):
        import jsonschema  # python3-jsonschema (scripts/install-deps)
        core = json.load(open(os.path.join(self.API_DIR, "core.json")))
        doc = core
        for name in sorted(os.listdir(self.API_DIR)):
            if not name.endswith(".json") or name == "core.json":
                continue
            fragment = json.load(open(os.path.join(self.API_DIR, name)))
            doc["methods"] += fragment.get("methods", [])
            for section, entries in fragment.get("components", {}).items():
                doc["components"].setdefault(section, {}).update(entries)

        def strict(schema):
            if isinstance(schema, dict):
                if "properties" in schema and "additionalProperties" not in schema and "patternProperties" not in schema:
                    schema["additionalProperties"] = False
                for v in schema.values():
                    strict(v)
            elif isinstance(schema, list):
                for v in schema:
                    strict(v)
        strict_doc = copy.deepcopy(doc)
        strict(strict_doc["components"])
        resolver = jsonschema.RefResolver(base_uri="", referrer=strict_doc)
        loose = jsonschema.RefResolver(base_uri="", referrer=doc)
        self.results = {}
        for m, sm in zip(doc["methods"], strict_doc["methods"]):
            strict(sm["result"])
            self.results[m["name"]] = jsonschema.Draft7Validator(sm["result"]["schema"], resolver=resolver)
        self.errors = {e["code"]: jsonschema.Draft7Validator(e["x-data-schema"], resolver=loose)
                       for e in doc["components"]["errors"].values() if "x-data-schema" in e}
        self.counts = {}

    def check(self, method, params, answer):
        if "result" in answer:
            validator = self.results.get(method)
            n = self.counts.get(method, 0)
            if validator is None or n >= self.LIMIT:
                return
            self.counts[method] = n + 1
            problems = [e.message for e in validator.iter_errors(answer["result"])]
        else:
            error = answer.get("error") or {}
            validator = self.errors.get(error.get("code"))
            if validator is None or method not in self.results:
                return
            problems = [e.message for e in validator.iter_errors(error.get("data"))]
        if problems:
            raise AssertionError(f"{method} {json.dumps(params)[:300]} answered {json.dumps(answer)[:600]}, "
                                 f"which its description in protocol/api does not allow: {problems[:3]}")


_checker = None


def check_answer(method, params, answer):
    global _checker
    if os.environ.get("QSD_CHECK_ANSWERS", "1") in ("", "0"):
        return
    if _checker is None:
        _checker = AnswerChecker()
    _checker.check(method, params, answer)


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

    def read_line(self, timeout=10.0, raw=False):
        """The next line, parsed; with raw=True its bytes without the '\\n' (for checks on the
        encoding itself). Notifications read here are not applied to the mirrors."""
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
        return line if raw else json.loads(line)

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
        answer = self.answer(rid, timeout)
        check_answer(method, params, answer)
        return answer

    def answer(self, rid, timeout=10.0):
        """The answer to request `rid`, sent raw with send_raw (a call made meanwhile may have
        read it already)."""
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

    def value(self, sub, path):
        """The mirror's value at path, or MISSING when the field is not there."""
        return pointer_get(self.mirror(sub), path, MISSING)

    def wait_value(self, sub, path, expected=None, predicate=None, timeout=10.0):
        """Waits until the mirror of `sub` has `expected` at path (None means a null field, not a
        missing one: wait for MISSING, or use wait_absent, for that), or a value satisfying
        predicate (which is given None for a missing field)."""
        def ok():
            v = self.value(sub, path)
            if predicate:
                return predicate(None if v is MISSING else v)
            return v is expected if expected is MISSING else (v is not MISSING and v == expected)
        try:
            self.wait_for(ok, timeout, what=f"{path} == {expected!r}")
        except TimeoutError as e:
            raise TimeoutError(f"{e}; it is {self.value(sub, path)!r}") from None
        v = self.value(sub, path)
        return v if expected is MISSING else (None if v is MISSING else v)

    def wait_absent(self, sub, path, timeout=10.0):
        """Waits until the field at path is not in the mirror of `sub` at all."""
        return self.wait_value(sub, path, MISSING, timeout=timeout)

    def first_running(self, sub, backend, timeout=10.0):
        """Reads the subscription batch by batch, from its snapshot on, until `backend`'s state
        is `running` (the subscription must include /daemon/backends/<backend>): returns a copy of
        the mirror as of that first running state, and the states seen before it, in order.
        Clients hold a domain's old values across a reconnect until its backend says `running`,
        so what the domain holds in that very state is what they show."""
        return self.first_value(sub, f"/daemon/backends/{backend}/state", "running", timeout)

    def first_value(self, sub, path, value, timeout=10.0):
        """Reads the subscription batch by batch, from its snapshot on, until `path` is `value`:
        returns a copy of the mirror as of that first batch, and the other values `path` had
        before it, in order (None: absent)."""
        before = []

        def reached():
            # Asked after each line read: at most one batch applied to the mirror in between.
            now = pointer_get(self.mirror(sub), path, None)
            if now != value and (not before or before[-1] != now):
                before.append(now)
            return now == value
        try:
            self.wait_for(reached, timeout, what=f"{path} == {value!r}")
        except TimeoutError as e:
            raise TimeoutError(f"{e}; it is {before[-1]!r}") from None
        return copy.deepcopy(self.mirror(sub)), before

    def sync(self, timeout=10.0):
        """A barrier on this connection: every tree change qsd made before it read this request
        is in the mirrors when it returns (qsd sends an answer after the tree.changed of every
        earlier change, and the socket keeps the order). After a round trip that proves qsd
        handled what a D-Bus peer sent (D-Bus keeps a sender's order), this proves that nothing
        of it is still on its way to the client."""
        self.call("hello", timeout=timeout)


class NotifySocket:
    """The datagram socket systemd would own: records every sd_notify message."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []

    def receive(self, timeout):
        self.sock.settimeout(timeout)
        data = self.sock.recv(4096).decode()
        fields = dict(line.split("=", 1) for line in data.split("\n") if "=" in line)
        self.messages.append(fields)
        return fields

    def wait_for(self, key, value, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {key}={value} from qsd")
            try:
                fields = self.receive(remaining)
            except socket.timeout:
                continue
            if fields.get(key) == value:
                return fields

    def close(self):
        self.sock.close()


_SANITIZED = {}   # qsd binary -> whether it is the AddressSanitizer build (Env.sanitized)


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
        self.daemons = []   # every qsd start_qsd started, checked by close()
        self.check_exit = True   # close() fails unless every qsd exits cleanly
        self.buses = {}   # "system"/"session": the dbus-daemon's Popen
        if buses:
            self.start_buses()

    def start_buses(self):
        for kind in ("system", "session"):
            sock = os.path.join(self.dir, f"{kind}_bus_socket")
            conf = os.path.join(self.dir, f"{kind}.conf")
            with open(conf, "w") as f:
                f.write(BUS_CONF.format(kind=kind, path=sock))
            key = "DBUS_SYSTEM_BUS_ADDRESS" if kind == "system" else "DBUS_SESSION_BUS_ADDRESS"
            self.env[key] = self.start_bus(kind, conf)

    def start_bus(self, kind, conf):
        """The `kind` ("system" or "session") bus: a dbus-daemon with the configuration file
        `conf`, as this world's child (not forked away, so that it dies with the harness; its
        Popen is self.buses[kind]); returns its address once it listens."""
        name = f"{kind}-bus"
        r, w = os.pipe()
        try:
            self.buses[kind] = self.spawn(["dbus-daemon", f"--config-file={conf}", "--nofork", f"--print-address={w}"],
                                          name, pass_fds=(w,))
            os.close(w)
            w = None
            with os.fdopen(r, "r") as f:
                r = None
                address = f.readline().strip()
        finally:
            for fd in (r, w):
                if fd is not None:
                    os.close(fd)
        if not address:
            raise RuntimeError(f"dbus-daemon did not start: {open(os.path.join(self.dir, name + '.log')).read()}")
        return address

    def spawn(self, args, name, **kw):
        """Starts a program of this world, logging to NAME.log in its directory; close() stops it,
        and so does the harness's death (die_with_harness)."""
        log = open(os.path.join(self.dir, name + ".log"), "w")
        p = subprocess.Popen(die_with_harness(args), stdout=log, stderr=subprocess.STDOUT,
                             env=kw.pop("env", self.env), stdin=subprocess.DEVNULL, **kw)
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
            skip_unless_built(backends)
            cmd.append("--backends=" + ",".join(backends))
        cmd += list(args)
        e = dict(env or self.env)
        self.daemon = self.spawn(cmd, f"qsd-{len(self.procs)}", env=e)
        self.daemons.append(self.daemon)
        if wait:
            wait_until(lambda: self._connectable(), 10, what="qsd socket")
        return self.daemon

    def _connectable(self):
        if self.daemon is not None and self.daemon.poll() is not None:
            raise RuntimeError(f"qsd exited with {self.daemon.returncode}: {self.qsd_log()}")
        return connectable(self.socket)

    def stop_qsd(self, sig=signal.SIGTERM, timeout=10):
        if self.daemon is None:
            return None
        self.daemon.send_signal(sig)
        rc = self.daemon.wait(timeout)
        # Stopped on purpose: close() judges its log, not its status.
        self.daemon.qsd_stopped = True
        self.daemon = None
        return rc

    def exit_problems(self, timeout=10):
        """Stops every qsd still running with SIGTERM and returns what was wrong with how they
        ended: a status other than 0, a crash signal, sanitizer output or another crash marker
        in a log. A qsd a test stopped itself (stop_qsd) is judged by its log only, and one that
        exited by itself only by its log and by not dying of a crash signal."""
        problems = []
        for p in self.daemons:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    rc = p.wait(timeout)
                except subprocess.TimeoutExpired:
                    where = stacks(p.pid)
                    p.kill()
                    p.wait()
                    problems.append(f"qsd (pid {p.pid}) did not exit within {timeout} s of SIGTERM; its stacks:\n{where}")
                    continue
                if rc < 0:
                    problems.append(f"qsd (pid {p.pid}) died of {signal.Signals(-rc).name} (sent SIGTERM)")
                elif rc != 0:
                    problems.append(f"qsd (pid {p.pid}) exited with {rc} on SIGTERM")
            elif not getattr(p, "qsd_stopped", False) and -p.returncode in CRASH_SIGNALS:
                problems.append(f"qsd (pid {p.pid}) died of {signal.Signals(-p.returncode).name}")
        self.daemon = None
        log = self.qsd_log()
        found = crash_markers(log)
        if found:
            problems.append(f"qsd's log has {', '.join(found)}")
        if problems:
            problems.append("its log ends with:\n" + log[-4000:])
        return problems

    def assert_exits_cleanly(self, timeout=10):
        """Stops qsd (every one this world started) and asserts a clean exit (see exit_problems)."""
        problems = self.exit_problems(timeout)
        assert not problems, "\n".join(problems)

    def watch(self, *paths, throttle_ms=None):
        """A new client subscribed to `paths` (the whole tree when none): (client, subscription)."""
        c = self.client()
        return c, c.subscribe(list(paths) or [""], throttle_ms)

    def qsd_log(self):
        logs = sorted(f for f in os.listdir(self.dir) if f.startswith("qsd-"))
        return "".join(open(os.path.join(self.dir, f), errors="replace").read() for f in logs)

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

    def rss_kib(self, field="VmRSS"):
        """qsd's resident memory from /proc/<pid>/status: VmRSS, or another field (RssAnon)."""
        with open(f"/proc/{self.daemon.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def sanitized(self):
        """Whether qsd is the AddressSanitizer build, whose allocator is not glibc's: freed memory
        sits in a quarantine and every allocation is padded, so RSS says little about qsd's own
        bounds, and malloc_trim has nothing to give back. Read once per binary."""
        exe = os.path.realpath(f"/proc/{self.daemon.pid}/exe")
        if exe not in _SANITIZED:
            with open(exe, "rb") as f:
                _SANITIZED[exe] = b"AddressSanitizer" in f.read()
        return _SANITIZED[exe]

    def close(self, check=None, keep=False):
        """Stops everything. Unless check (default: self.check_exit) is False, fails, after
        cleaning up, when qsd did not exit cleanly (exit_problems). With keep, the directory
        with every program's log is left in place (and named on stderr)."""
        if getattr(self, "closed", False):
            return   # closing twice (a finally after an explicit close) is harmless
        self.closed = True
        check = self.check_exit if check is None else check
        problems = self.exit_problems() if check else []
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
        # A qsd that did not exit cleanly is a failure too.
        keep = keep or (problems and os.environ.get("QSD_TEST_KEEP") == "failed")
        if keep:
            sys.stderr.write(f"kept the test's directory, with every log: {self.dir}\n")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        assert not problems, "qsd did not exit cleanly: " + "\n".join(problems)
