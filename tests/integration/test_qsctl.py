"""qsctl through a real qsd: every command, every exit code, the output forms scripts rely on
(--raw, --compact, one JSON line per change), watch across a daemon restart and a resync.

Changes are driven with the debug API (debug.set / debug.flood write under /debug), so these
tests need no D-Bus service at all."""

import json
import os
import queue
import signal
import subprocess
import threading

import pytest

from qsdtest import QSCTL, pointer_get, wait_until


@pytest.fixture
def qenv(bare_env):
    bare_env.start_qsd(backends=[], debug_api=True)
    return bare_env


def qsctl_env(env, **overrides):
    e = dict(env.env)
    e["QSD_SOCKET"] = env.socket
    for k, v in overrides.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


class Stream:
    """A long-running qsctl (watch) whose stdout lines are read with a timeout."""

    def __init__(self, env, *args, extra_env=None):
        self.proc = subprocess.Popen([QSCTL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True,
                                     env=extra_env or qsctl_env(env))
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True).start()
        self.err_lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err_lines), daemon=True).start()

    @staticmethod
    def _pump(f, q):
        for line in f:
            q.put(line.rstrip("\n"))
        q.put(None)

    def line(self, timeout=10):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no line from qsctl") from None
        assert line is not None, f"qsctl ended (rc={self.proc.wait(5)}): {self.err()}"
        return line

    def json_line(self, timeout=10):
        return json.loads(self.line(timeout))

    def err_line(self, timeout=10):
        line = self.err_lines.get(timeout=timeout)
        assert line is not None, "qsctl closed stderr"
        return line

    def err(self):
        out = []
        while True:
            try:
                line = self.err_lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                out.append(line)
        return "\n".join(out)

    def wait(self, timeout=10):
        return self.proc.wait(timeout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def streams():
    started = []
    yield lambda env, *args, **kw: started.append(Stream(env, *args, **kw)) or started[-1]
    for s in started:
        s.close()


def dset(client, path, value):
    client.call("debug.set", {"path": path, "value": value})


# --- get -------------------------------------------------------------------------------------

def test_get_whole_tree_and_a_path(qenv):
    c = qenv.client()
    hello = c.call("hello")
    r = qenv.qsctl("get")
    assert r.returncode == 0, r.stderr
    tree = json.loads(r.stdout)
    assert tree["daemon"]["epoch"] == hello["epoch"]
    assert r.stdout.startswith("{\n  "), "pretty JSON by default"

    r = qenv.qsctl("get", "/daemon/version")
    assert r.returncode == 0
    assert r.stdout == json.dumps(hello["version"]) + "\n"
    # The leading '/' may be left out; "/" is the whole tree.
    assert qenv.qsctl("get", "daemon/version").stdout == r.stdout
    assert json.loads(qenv.qsctl("get", "/").stdout)["daemon"]["epoch"] == hello["epoch"]


def test_get_raw_prints_bare_values(qenv):
    c = qenv.client()
    values = {
        "s": ("Home Wifi", "Home Wifi"),
        "quoted": ('say "hi"', 'say "hi"'),
        "i": (42, "42"),
        "f": (0.5, "0.5"),
        "neg": (-3, "-3"),
        "t": (True, "true"),
        "b": (False, "false"),
        "n": (None, "null"),
        "o": ({"b": [1, 2], "a": "x"}, '{"a":"x","b":[1,2]}'),
        "arr": ([1, "two"], '[1,"two"]'),
    }
    for key, (value, _) in values.items():
        dset(c, f"/debug/{key}", value)
    for key, (value, raw) in values.items():
        r = qenv.qsctl("get", "--raw", f"/debug/{key}")
        assert r.returncode == 0, r.stderr
        assert r.stdout == raw + "\n", key
        # Without --raw everything is JSON that parses back to the value.
        assert json.loads(qenv.qsctl("get", f"/debug/{key}").stdout) == value


def test_get_compact_is_one_line(qenv):
    c = qenv.client()
    dset(c, "/debug/o", {"a": {"b": [1, 2, 3]}, "c": "d"})
    r = qenv.qsctl("get", "-c", "/debug/o")
    assert r.returncode == 0
    assert r.stdout == '{"a":{"b":[1,2,3]},"c":"d"}\n'
    pretty = qenv.qsctl("get", "/debug/o").stdout
    assert pretty.count("\n") > 1 and json.loads(pretty) == json.loads(r.stdout)


def test_get_keys_lists_a_collection(qenv):
    c = qenv.client()
    dset(c, "/debug/devices", {"wlan0": {"up": True}, "a/b~c": {}, "eth0": 1})
    r = qenv.qsctl("get", "--keys", "/debug/devices")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["a/b~c", "eth0", "wlan0"]   # raw names, sorted
    assert qenv.qsctl("get", "-k", "/debug/devices/wlan0").stdout == "up\n"
    assert qenv.qsctl("get", "-k", "/debug/devices/eth0").stdout == ""
    dset(c, "/debug/list", ["x", "y"])
    assert qenv.qsctl("get", "-k", "/debug/list").stdout == "0\n1\n"
    assert set(qenv.qsctl("get", "-k").stdout.split()) == {"daemon", "debug"}
    # A name containing '/' or '~' is addressed with the escapes.
    assert qenv.qsctl("get", "-c", "/debug/devices/a~1b~0c").stdout == "{}\n"


def test_get_missing_path_is_an_rpc_error(qenv):
    r = qenv.qsctl("get", "/debug/absent")
    assert r.returncode == 1
    assert r.stdout == ""
    assert "No value at /debug/absent" in r.stderr
    assert "-32001" in r.stderr
    assert '"path":"/debug/absent"' in r.stderr  # the error's data
    # A malformed pointer is the daemon's InvalidParams, with the param named.
    r = qenv.qsctl("get", "/bad~2escape")
    assert r.returncode == 1
    assert "-32602" in r.stderr and '"param":"path"' in r.stderr


# --- socket selection and exit code 3 ----------------------------------------------------------

def test_socket_option_env_and_default(bare_env):
    # Default location: $XDG_RUNTIME_DIR/qsd/qsd.sock, exactly as the daemon picks it.
    bare_env.start_qsd(backends=[], debug_api=True)
    default_env = qsctl_env(bare_env, QSD_SOCKET=None)
    r = subprocess.run([QSCTL, "get", "--raw", "/daemon/pid"], capture_output=True, text=True, env=default_env)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == bare_env.daemon.pid

    # A second daemon elsewhere: QSD_SOCKET selects it, and --socket beats QSD_SOCKET.
    first_pid = bare_env.daemon.pid
    other = os.path.join(bare_env.dir, "other.sock")
    bare_env.start_qsd(backends=[], socket_path=other)
    second_pid = bare_env.daemon.pid
    r = subprocess.run([QSCTL, "get", "-r", "/daemon/pid"], capture_output=True, text=True,
                       env=qsctl_env(bare_env, QSD_SOCKET=other))
    assert int(r.stdout) == second_pid
    default_sock = os.path.join(bare_env.run, "qsd", "qsd.sock")
    r = subprocess.run([QSCTL, "--socket", default_sock, "get", "-r", "/daemon/pid"], capture_output=True,
                       text=True, env=qsctl_env(bare_env, QSD_SOCKET=other))
    assert int(r.stdout) == first_pid
    r = subprocess.run([QSCTL, "get", "-r", "/daemon/pid", f"--socket={default_sock}"], capture_output=True,
                       text=True, env=qsctl_env(bare_env, QSD_SOCKET=other))
    assert int(r.stdout) == first_pid


def test_cannot_connect_exits_3(bare_env):
    # No daemon at all.
    for args in (["get"], ["get", "/x"], ["watch", "/x"], ["call", "hello"], ["describe"], ["status"]):
        r = bare_env.qsctl(*args)
        assert r.returncode == 3, (args, r.stdout, r.stderr)
        assert "cannot connect" in r.stderr and bare_env.socket in r.stderr
        assert r.stdout == ""
    # No way to find the socket.
    r = subprocess.run([QSCTL, "get"], capture_output=True, text=True,
                       env=qsctl_env(bare_env, QSD_SOCKET=None, XDG_RUNTIME_DIR=None))
    assert r.returncode == 3
    assert "XDG_RUNTIME_DIR" in r.stderr


def test_connection_lost_without_reconnect_exits_3(qenv, streams):
    w = streams(qenv, "watch", "/debug/x")
    assert w.line() == "null"
    qenv.stop_qsd()
    assert w.wait() == 3
    assert "connection to qsd lost" in w.err_line()


# --- usage: exit code 2, before any connection ---------------------------------------------------

@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["get", "/a", "/b"],
    ["get", "--bogus"],
    ["get", "--patch"],
    ["get", "--raw", "--compact"],
    ["status", "extra"],
    ["status", "--raw"],
    ["describe", "a", "b"],
    ["call"],
    ["call", "debug.set", "novalue"],
    ["call", "debug.set", "=1"],
    ["call", "debug.set", "value:={not json"],
    ["call", "debug.set", "--params", "[1]", "a=1"],
    ["call", "debug.set", "--params", "42"],
    ["watch", "--count", "0"],
    ["watch", "--count", "x"],
    ["watch", "--throttle", "-5"],
    ["watch", "--raw", "--patch"],
    ["watch", "--compact"],
    ["watch", "--jq"],
    ["watch", "--jq", ".a |||"],
    ["watch", "--jq", ".", "--patch"],
    ["watch", "--restart-grace", "100"],
    ["watch", "--reconnect", "--restart-grace", "-1"],
    ["watch", "--reconnect", "--restart-grace", "100", "--patch"],
    ["get", "--jq", "."],
    ["get", "--outlive-parent"],
    ["get", "--socket"],
    ["get", "--timeout", "0"],
    ["get", "--keys", "--raw"],
    ["watch", "--keys"],
])
def test_usage_errors_exit_2(bare_env, args):
    # No daemon runs: a usage error is reported as such, not as "cannot connect".
    r = bare_env.qsctl(*args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert r.stderr.startswith("qsctl: ")
    assert "--help" in r.stderr
    assert r.stdout == ""


def test_help_and_version(qenv):
    r = qenv.qsctl("--help")
    assert r.returncode == 0
    for word in ("get", "watch", "call", "describe", "status", "--raw", "--patch", "--reconnect", "--count",
                 "--socket", "--params", "--json", "--jq", "--restart-grace", "--outlive-parent", "Exit status"):
        assert word in r.stdout, word
    assert qenv.qsctl("help").stdout == r.stdout
    assert qenv.qsctl("get", "-h").stdout == r.stdout
    v = qenv.qsctl("--version")
    assert v.returncode == 0
    hello = qenv.client().call("hello")
    assert v.stdout == f"qsctl {hello['version']} (protocol {hello['protocol']})\n"


# --- watch -------------------------------------------------------------------------------------

def test_watch_prints_current_value_then_each_change(qenv, streams):
    c = qenv.client()
    w = streams(qenv, "watch", "/debug/w", "--count", "5")
    assert w.line() == "null", "absent at first: null"
    dset(c, "/debug/w", 1)
    assert w.line() == "1"
    dset(c, "/debug/w", 1)              # equal: no batch, no line
    dset(c, "/debug/elsewhere", 7)      # outside the watched path: no line
    dset(c, "/debug/w", "two")
    assert w.line() == '"two"'
    dset(c, "/debug/w", {"a": {"b": 1}})
    assert w.line() == '{"a":{"b":1}}'
    c.call("debug.remove", {"path": "/debug/w"})
    assert w.line() == "null"
    assert w.wait() == 0, "--count 5 ends after the fifth line"
    assert w.proc.stdout.read() == ""


def test_watch_a_subtree_prints_the_whole_value(qenv, streams):
    c = qenv.client()
    dset(c, "/debug/dev", {"name": "eth0", "up": False})
    w = streams(qenv, "watch", "debug/dev", "-n", "3")
    assert w.json_line() == {"name": "eth0", "up": False}
    dset(c, "/debug/dev/up", True)
    assert w.json_line() == {"name": "eth0", "up": True}
    dset(c, "/debug/dev/speed", 1000)
    assert w.json_line() == {"name": "eth0", "up": True, "speed": 1000}
    assert w.wait() == 0


def test_watch_raw_and_several_paths(qenv, streams):
    c = qenv.client()
    dset(c, "/debug/s", "a")
    raw = streams(qenv, "watch", "--raw", "/debug/s", "--count", "3")
    both = streams(qenv, "watch", "/debug/s", "/debug/t", "--count", "3")
    assert raw.line() == "a"
    assert both.json_line() == {"/debug/s": "a", "/debug/t": None}
    dset(c, "/debug/s", "b c")
    assert raw.line() == "b c"
    assert both.json_line() == {"/debug/s": "b c", "/debug/t": None}
    dset(c, "/debug/t", [1])
    assert both.json_line() == {"/debug/s": "b c", "/debug/t": [1]}
    dset(c, "/debug/s", True)
    assert raw.line() == "true"
    assert raw.wait() == 0 and both.wait() == 0


def test_watch_whole_tree_by_default(qenv, streams):
    c = qenv.client()
    w = streams(qenv, "watch")
    first = w.json_line()
    assert "daemon" in first and "debug" not in first
    dset(c, "/debug/x", 1)
    # Every line is the whole tree; /daemon/clients may change in between (the watcher's own
    # connection counts too), so read until our write shows up.
    for _ in range(5):
        line = w.json_line()
        if "debug" in line:
            break
    assert line["debug"] == {"x": 1}
    assert line["daemon"]["epoch"] == first["daemon"]["epoch"]


def test_watch_patch_prints_raw_batches(qenv, streams):
    c = qenv.client()
    dset(c, "/debug/p", {"a": 1})
    w = streams(qenv, "watch", "--patch", "/debug/p", "--count", "3")
    first = w.json_line()
    assert first["snapshot"] == {"/debug/p": {"a": 1}}
    assert first["epoch"] == c.call("hello")["epoch"]
    dset(c, "/debug/p/a", 2)
    second = w.json_line()
    assert second["changes"] == [{"op": "replace", "path": "/debug/p/a", "value": 2}]
    assert second["revision"] > first["revision"]
    c.call("debug.remove", {"path": "/debug/p"})
    third = w.json_line()
    assert third["changes"] == [{"op": "remove", "path": "/debug/p"}]
    assert third["revision"] > second["revision"]
    assert w.wait() == 0


def test_watch_reconnect_across_a_daemon_restart(qenv, streams):
    c = qenv.client()
    dset(c, "/debug/r", 1)
    w = streams(qenv, "watch", "--reconnect", "/debug/r")
    p = streams(qenv, "watch", "--reconnect", "--patch", "/debug/r")
    assert w.line() == "1"
    first_epoch = p.json_line()["epoch"]
    dset(c, "/debug/r", 2)
    assert w.line() == "2"
    assert p.json_line()["changes"][0]["value"] == 2

    c.close()
    assert qenv.stop_qsd() == 0
    assert "reconnecting" in w.err_line()
    assert w.proc.poll() is None, "--reconnect keeps running while qsd is away"

    qenv.start_qsd(backends=[], debug_api=True)   # same socket path
    # The new daemon has no /debug/r: the watcher resubscribed and prints the new value.
    assert w.line() == "null"
    again = p.json_line()
    assert again["snapshot"] == {} and again["epoch"] != first_epoch
    c = qenv.client()
    dset(c, "/debug/r", "back")
    assert w.line() == '"back"'
    assert p.json_line()["changes"][0]["value"] == "back"


UPOWER = "org.freedesktop.UPower"


def set_on_battery(env, value):
    env.gdbus("-d", UPOWER, "-o", "/org/freedesktop/UPower", "-m", "org.freedesktop.DBus.Properties.Set",
              UPOWER, "OnBattery", f"<{'true' if value else 'false'}>")


def restart_with_upower_stuck(env, w):
    """Restarts qsd while the UPower service cannot answer (stopped with SIGSTOP), so the new
    daemon's upower backend stays `starting`; returns a function that lets the service go on."""
    c = env.client()
    sub = c.subscribe(["/daemon/backends/upower/state"])
    c.wait_value(sub, "/daemon/backends/upower/state", "running")
    c.close()
    env.stop_qsd()
    assert "reconnecting" in w.err_line()
    mock = env.upower_mock
    mock.send_signal(signal.SIGSTOP)
    env.start_qsd(backends=["upower"], debug_api=True)
    c = env.client()
    sub = c.subscribe(["/daemon/backends/upower", "/power"])
    assert c.mirror(sub)["daemon"]["backends"]["upower"]["state"] == "starting"
    assert pointer_get(c.mirror(sub), "/power/onBattery", None) is None   # what qsd says while starting

    def resume():
        mock.send_signal(signal.SIGCONT)
        c.wait_value(sub, "/daemon/backends/upower/state", "running")
        c.close()
    return resume


def start_qsd_with_upower(env):
    env.start_qsd(backends=["upower"], debug_api=True)
    c = env.client()
    sub = c.subscribe(["/daemon/backends/upower/state"])
    c.wait_value(sub, "/daemon/backends/upower/state", "running")
    c.close()


@pytest.fixture
def upenv(env):
    env.upower_mock = env.start_mock("upower", {"OnBattery": False, "DaemonVersion": "0.99.20"}, name=UPOWER)
    yield env
    env.upower_mock.send_signal(signal.SIGCONT)   # a stopped mock would not end


def test_watch_reconnect_holds_the_value_while_the_backend_starts(upenv, streams):
    """After a restart, a path keeps the value printed last while its backend is `starting`:
    no `null` between the two daemons. The grace is long, so only `running` ends the hold."""
    start_qsd_with_upower(upenv)
    w = streams(upenv, "watch", "--reconnect", "--restart-grace", "60000", "/power/onBattery")
    several = streams(upenv, "watch", "--reconnect", "--restart-grace", "60000", "/power/onBattery", "/daemon/protocol")
    assert w.line() == "false"
    assert several.json_line() == {"/power/onBattery": False, "/daemon/protocol": 1}
    resume = restart_with_upower_stuck(upenv, w)
    resume()
    # The value the new daemon has is the one shown: nothing is printed. A change is, and is
    # the next line (not a null before it).
    set_on_battery(upenv, True)
    assert w.line() == "true"
    assert several.json_line() == {"/power/onBattery": True, "/daemon/protocol": 1}
    assert w.proc.poll() is None


def test_watch_reconnect_shows_the_daemons_value_when_the_grace_ends(upenv, streams):
    start_qsd_with_upower(upenv)
    w = streams(upenv, "watch", "--reconnect", "--restart-grace", "300", "/power/onBattery")
    off = streams(upenv, "watch", "--reconnect", "--restart-grace", "0", "/power/onBattery")
    jq = streams(upenv, "watch", "--reconnect", "--jq", "{onBattery: .}", "/power/onBattery")
    assert w.line() == off.line() == "false"
    assert jq.json_line() == {"onBattery": False}
    resume = restart_with_upower_stuck(upenv, w)
    # Without a grace the restart shows as it is; with one, once it is over.
    assert off.line() == "null"
    assert w.line() == "null"
    resume()
    assert w.line() == off.line() == "false"
    # --jq is given what is shown: the filter never saw the null (3 s grace, the default).
    set_on_battery(upenv, True)
    assert jq.json_line() == {"onBattery": True}


def test_watch_reconnect_waits_for_a_daemon_not_yet_started(bare_env, streams):
    w = streams(bare_env, "watch", "-R", "/daemon/protocol", "-n", "1")
    assert "waiting for qsd" in w.err_line()
    bare_env.start_qsd(backends=[], debug_api=True)
    assert w.line() == "1"
    assert w.wait() == 0


def test_watch_slow_reader_is_resynced(qenv, streams):
    """qsctl stops reading (SIGSTOP) during a flood larger than the daemon's outbound queue:
    the daemon drops the stream and sends tree.resync; qsctl applies it and ends on the daemon's
    exact value."""
    c = qenv.client()
    dset(c, "/debug/flood", {})
    patch = streams(qenv, "watch", "--patch", "/debug/flood")
    value = streams(qenv, "watch", "/debug/flood")
    assert "snapshot" in patch.json_line()
    assert value.json_line() == {}
    for s in (patch, value):
        s.proc.send_signal(signal.SIGSTOP)
    c.call("debug.flood", {"path": "/debug/flood", "count": 60000, "keys": 50, "batch": 1}, timeout=120)
    final = c.call("tree.get", {"path": "/debug/flood"})["value"]
    for s in (patch, value):
        s.proc.send_signal(signal.SIGCONT)

    def saw_resync():
        return json.loads(patch.line(30)).get("resync") is True
    wait_until(saw_resync, 60, interval=0, what="a tree.resync line")

    def value_is_final():
        return json.loads(value.line(30)) == final
    wait_until(value_is_final, 60, interval=0, what="the final value")


def test_watch_jq_prints_what_the_filter_makes_of_each_value(qenv, streams):
    c = qenv.client()
    dset(c, "/debug/bat", {"p": 0.5, "s": "discharging"})
    module = streams(qenv, "watch", "--jq", r'{text: "\(.p * 100 | round)%", class: .s}', "/debug/bat")
    several = streams(qenv, "watch", "--raw", "--jq", ".s, .p, {p}", "/debug/bat")
    assert module.json_line() == {"text": "50%", "class": "discharging"}
    # Every output on its own line; --raw prints strings as jq -r does.
    assert [several.line() for _ in range(3)] == ["discharging", "0.5", '{"p":0.5}']

    # A new value that the filter turns into the same output prints nothing.
    dset(c, "/debug/bat/p", 0.501)
    assert [several.line() for _ in range(3)] == ["discharging", "0.501", '{"p":0.501}']
    dset(c, "/debug/bat/s", "charging")
    assert module.json_line() == {"text": "50%", "class": "charging"}, "the 50.1 % line was not printed"

    # An error is the filter's: reported, and the watch goes on.
    dset(c, "/debug/bat", {"p": None, "s": "unknown"})
    assert module.err_line() == "qsctl: jq: error: null (null) and number (100) cannot be multiplied"
    dset(c, "/debug/bat", {"p": 1, "s": "fullyCharged"})
    assert module.json_line() == {"text": "100%", "class": "fullyCharged"}
    assert module.proc.poll() is None

    # --count counts the lines printed.
    r = qenv.qsctl("watch", "--count", "2", "--jq", ".s, .p", "/debug/bat")
    assert r.returncode == 0 and r.stdout == '"fullyCharged"\n1\n'


def test_watch_jq_that_does_not_compile_is_a_usage_error(bare_env):
    r = bare_env.qsctl("watch", "--jq", "{text: .a", "/power")   # no daemon: nothing is sent
    assert r.returncode == 2
    assert r.stderr.startswith("qsctl: --jq: jq: error: syntax error"), r.stderr
    assert "compile error" in r.stderr


def process_state(pid):
    """The state letter of /proc/PID/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


@pytest.fixture
def orphans():
    """Processes a test leaves to others to end; those still running at the end are killed."""
    pids = []
    yield pids
    for pid in pids:
        if process_state(pid) not in (None, "Z"):
            os.kill(pid, signal.SIGKILL)


def watch_under_a_shell(env, orphans, *args):
    """qsctl watch started by `sh -c` (as bars start modules), the shell staying its parent;
    returns (shell, qsctl's pid, the file its standard error goes to)."""
    n = len(os.listdir(env.dir))
    pidfile = os.path.join(env.dir, f"qsctl-{n}.pid")
    errfile = os.path.join(env.dir, f"qsctl-{n}.err")
    script = '"$0" "$@" > /dev/null 2> "$ERRFILE" & echo $! > "$PIDFILE"; wait'
    e = qsctl_env(env, PIDFILE=pidfile, ERRFILE=errfile)
    shell = subprocess.Popen(["sh", "-c", script, QSCTL, *args], env=e, stdin=subprocess.DEVNULL)

    def pid():
        try:
            with open(pidfile) as f:
                return int(f.read())
        except (FileNotFoundError, ValueError):
            return None
    qsctl = wait_until(pid, what="qsctl's pid")
    orphans.append(qsctl)
    return shell, qsctl, errfile


def says(path, text):
    try:
        with open(path) as f:
            return text in f.read()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("daemon", [True, False], ids=["connected", "waiting"])
def test_watch_ends_when_its_parent_dies(bare_env, orphans, daemon):
    """A bar restarting kills the shell it started the module with: the watch goes with it,
    whether it is connected or waiting for the daemon to come back."""
    if daemon:
        bare_env.start_qsd(backends=[], debug_api=True)
    shell, pid, err = watch_under_a_shell(bare_env, orphans, "watch", "--reconnect", "/debug/x")
    kept, kept_pid, kept_err = watch_under_a_shell(bare_env, orphans, "watch", "--reconnect", "--outlive-parent", "/debug/x")
    # The shell writes qsctl's pid as soon as it forked. Ended before qsctl armed its
    # parent-death signal (at start-up, before it connects), it would leave qsctl nothing to
    # notice: wait until both are connected, or say that they wait for the daemon.
    if daemon:
        c = bare_env.client()
        sub = c.subscribe(["/daemon/clients"])
        c.wait_value(sub, "/daemon/clients", predicate=lambda n: n >= 3)   # both watches are in
    else:
        for f in (err, kept_err):
            wait_until(lambda: says(f, "waiting for qsd"), what="qsctl to wait for the daemon")
    for s, p in ((shell, pid), (kept, kept_pid)):
        assert process_state(p) not in (None, "Z")
        s.kill()
        s.wait(5)
    wait_until(lambda: process_state(pid) in (None, "Z"), what="qsctl to end with its parent")
    assert process_state(kept_pid) not in (None, "Z"), "--outlive-parent keeps running"
    os.kill(kept_pid, signal.SIGTERM)
    wait_until(lambda: process_state(kept_pid) in (None, "Z"), what="qsctl to end on SIGTERM")


def test_watch_ends_when_its_reader_goes_away(qenv, orphans):
    """`qsctl watch | head -1`, or a bar that closed the pipe: the watch ends at once, not at the
    next change (which may never come)."""
    p = subprocess.Popen([QSCTL, "watch", "--reconnect", "/debug/quiet"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=qsctl_env(qenv))
    orphans.append(p.pid)
    assert p.stdout.readline() == b"null\n"
    p.stdout.close()
    assert p.wait(10) == 0
    assert p.stderr.read() == b""


def test_watch_rpc_error_exits_1(qenv):
    r = qenv.qsctl("watch", "/bad~9")
    assert r.returncode == 1
    assert "tree.subscribe" in r.stderr and "-32602" in r.stderr


# --- call --------------------------------------------------------------------------------------

def test_call_parses_values_as_json_when_they_parse(qenv):
    c = qenv.client()
    cases = [
        (["value=true"], True),
        (["value=0.25"], 0.25),
        (["value=-7"], -7),
        (["value=null"], None),
        (["value=[1,2]"], [1, 2]),
        (['value={"k":"v"}'], {"k": "v"}),
        (['value="quoted"'], "quoted"),
        (["value=Home Wifi"], "Home Wifi"),     # not JSON: a string
        (["value=tru"], "tru"),
        (["value="], ""),
        (["value==1234"], "1234"),              # KEY==TEXT: always a string
        (["value==true"], "true"),
        (["value:=1234"], 1234),                # KEY:=JSON: always JSON
        (["value:=\"x=y\""], "x=y"),
        (["value=a=b"], "a=b"),                 # split at the first '='
    ]
    for i, (args, expected) in enumerate(cases):
        path = f"/debug/c{i}"
        r = qenv.qsctl("call", "debug.set", f"path={path}", *args)
        assert r.returncode == 0, (args, r.stderr)
        assert json.loads(r.stdout) == {"path": path}
        assert c.call("tree.get", {"path": path})["value"] == expected, args


def test_call_params_option_and_output_forms(qenv):
    c = qenv.client()
    r = qenv.qsctl("call", "debug.set", "--params", '{"path":"/debug/p","value":{"n":1}}')
    assert r.returncode == 0, r.stderr
    assert c.call("tree.get", {"path": "/debug/p"})["value"] == {"n": 1}
    # KEY=VALUE overrides --params; '-' reads the params from stdin.
    r = qenv.qsctl("call", "debug.set", "--params", "-", "value=2", input='{"path":"/debug/p","value":1}')
    assert r.returncode == 0, r.stderr
    assert c.call("tree.get", {"path": "/debug/p"})["value"] == 2
    # Output: pretty by default, --compact on one line, --raw bare.
    assert qenv.qsctl("call", "debug.set", "path=/debug/q", "value=1", "-c").stdout == '{"path":"/debug/q"}\n'
    hello = qenv.qsctl("call", "hello")
    assert hello.returncode == 0 and json.loads(hello.stdout)["protocol"] == 1
    assert hello.stdout.startswith("{\n")
    assert qenv.qsctl("call", "hello", "--compact").stdout.count("\n") == 1


def test_call_errors_exit_1_with_message_and_data(qenv):
    r = qenv.qsctl("call", "debug.set", "path=/daemon/version", "value=1")
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr.startswith("qsctl: debug.set: ")
    assert "-32602" in r.stderr and '"param":"path"' in r.stderr
    r = qenv.qsctl("call", "no.such.method")
    assert r.returncode == 1
    assert "Method not found" in r.stderr and "-32601" in r.stderr
    r = qenv.qsctl("call", "debug.remove", "path=/debug/never")
    assert r.returncode == 1 and "-32001" in r.stderr


# --- describe ----------------------------------------------------------------------------------

def test_describe_lists_methods_and_shows_one(qenv):
    doc = qenv.client().call("rpc.discover")
    names = [m["name"] for m in doc["methods"]]
    assert "tree.get" in names, "the core methods are described in protocol/api/core.json"

    r = qenv.qsctl("describe")
    assert r.returncode == 0, r.stderr
    listed = [line.split()[0] for line in r.stdout.splitlines() if line.startswith("  ")]
    for name in names:
        assert name in listed, name

    r = qenv.qsctl("describe", "tree.get")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("tree.get")
    assert "Params:" in r.stdout
    method = next(m for m in doc["methods"] if m["name"] == "tree.get")
    for p in method.get("params", []):
        assert p["name"] in r.stdout
    assert "Usage: qsctl call tree.get path=VALUE" in r.stdout

    r = qenv.qsctl("describe", "--json", "tree.get")
    assert json.loads(r.stdout) == method
    assert json.loads(qenv.qsctl("describe", "-j").stdout) == doc

    # A domain prefix lists its methods.
    r = qenv.qsctl("describe", "tree")
    assert r.returncode == 0
    assert {line.split()[0] for line in r.stdout.splitlines()} == {n for n in names if n.startswith("tree.")}

    # Events are described too (their data).
    for event in doc.get("x-events", []):
        r = qenv.qsctl("describe", event["name"])
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"{event['name']} (event)")
        assert json.loads(qenv.qsctl("describe", "--json", event["name"]).stdout) == event

    r = qenv.qsctl("describe", "no.such")
    assert r.returncode == 1 and "no method" in r.stderr


# --- status ------------------------------------------------------------------------------------

def test_status(qenv):
    c = qenv.client()
    daemon = c.call("tree.get", {"path": "/daemon"})["value"]
    r = qenv.qsctl("status")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith(f"qsd {daemon['version']}, protocol {daemon['protocol']}, pid {daemon['pid']}\n")
    assert daemon["epoch"] in out
    assert f"started   {daemon['startedAt']} (up " in out
    # At least this client and qsctl's own connection.
    clients = next(line for line in out.splitlines() if line.startswith("clients "))
    assert int(clients.split()[1]) >= 2
    assert "backends  none\n" in out

    r = qenv.qsctl("status", "--json")
    assert r.returncode == 0
    j = json.loads(r.stdout)
    assert j["epoch"] == daemon["epoch"] and j["pid"] == daemon["pid"] and j["backends"] == {}


def test_status_lists_backends(env):
    """With a real backend whose service is absent, status shows its state from /daemon."""
    env.start_qsd(backends=["upower"], debug_api=False)
    c = env.client()
    sub = c.subscribe(["/daemon/backends"])
    # Past "starting", the state stays put: the service never appears in this test.
    c.wait_value(sub, "/daemon/backends/upower/state", predicate=lambda v: v not in (None, "starting"))
    backend = c.call("tree.get", {"path": "/daemon/backends/upower"})["value"]
    r = env.qsctl("status")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "backends" in lines
    line = next(x for x in lines if x.startswith("  upower"))
    assert line.split()[1] == backend["state"]
    assert f"since {backend['since']}" in line
    if backend.get("error"):
        # Long errors are filled onto continuation lines.
        assert backend["error"] in " ".join(r.stdout.split())


# --- the conditions scripts and bars put qsctl in ----------------------------------------------

def test_a_closed_standard_output_is_an_error_not_a_request_to_qsd(qenv):
    """With stdout closed, the socket took its number, and qsctl's output went to qsd as a
    request: a value holding a JSON-RPC request was run by qsd."""
    c = qenv.client()
    request = {"jsonrpc": "2.0", "id": 99, "method": "debug.set", "params": {"path": "/debug/pwned", "value": True}}
    dset(c, "/debug/cmd", json.dumps(request))
    r = subprocess.run(f"exec {QSCTL} get --raw /debug/cmd >&-", shell=True, env=qsctl_env(qenv),
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 4 and "cannot write the output" in r.stderr, (r.returncode, r.stderr)
    assert c.call_full("tree.get", {"path": "/debug/pwned"})["error"]["code"] == -32001
    # A full disk is said as such (it was status 3, "cannot connect", with nothing on stderr).
    with open("/dev/full", "w") as full:
        r = subprocess.run([QSCTL, "get", "/debug/cmd"], env=qsctl_env(qenv), stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=20)
    assert r.returncode == 4 and "No space left on device" in r.stderr


def test_an_answer_with_id_null_is_the_answer(bare_env, streams):
    """qsd answers a line it cannot read, and a connection over its limit, with id null. qsctl
    waited past it (30 s by default, then "no answer", status 3) or said "Broken pipe"; it is
    the answer: status 1 at once, with qsd's message."""
    bare_env.start_qsd("--max-clients", "2", backends=[], debug_api=True)
    big = json.dumps({"path": "/debug/big", "value": "x" * (1 << 20)})
    r = bare_env.qsctl("call", "debug.set", "--params", "-", input=big)
    assert r.returncode == 1 and "line too long" in r.stderr and "-32600" in r.stderr, r.stderr
    # Two watches hold the two slots (the first says 2 once the second is in).
    holder = streams(bare_env, "watch", "/daemon/clients")
    second = streams(bare_env, "watch", "/daemon/version")
    second.line()
    wait_until(lambda: holder.line() == "2", 20, what="both slots taken")
    r = bare_env.qsctl("get", "/daemon/version")
    assert r.returncode == 1 and "Too many connections" in r.stderr, (r.returncode, r.stderr)
    # watch --reconnect refused: it says so, backs off, and is served once a slot frees (it tried
    # again at once, 20 000 times a second, each refusal a line in qsd's log).
    w = streams(bare_env, "watch", "--reconnect", "/daemon/version", "-n", "1")
    assert "Too many connections" in w.err_line()
    second.close()
    assert w.line() == '"0.1.0"'
    assert bare_env.qsd_log().count("refusing a connection") < 100


def test_watch_jq_stops_at_count_and_bounds_a_run(qenv):
    """The outputs of one run were all collected before any was printed: `repeat(.)` grew until
    the process died (bad_alloc), and --count could not stop it."""
    r = qenv.qsctl("watch", "-n", "2", "--jq", "repeat(.)", "/daemon/protocol", timeout=20)
    assert r.returncode == 0 and r.stdout == "1\n1\n", (r.returncode, r.stderr[-300:])
