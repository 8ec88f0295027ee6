"""Helpers of the MPRIS tests: tagged audio files made with sox, real mpv players with the
mpv-mpris plugin (--no-video --ao=null) and their own state through mpv's JSON IPC, playerctl,
the edge-case player (mpris_player.py), and a dbus-monitor that counts qsd's calls."""

import datetime
import json
import os
import socket
import subprocess
import time

from qsdtest import PY, ts, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
MPV_MPRIS = "/usr/lib/mpv-mpris/mpris.so"
PREFIX = "org.mpris.MediaPlayer2."


def session(env):
    import dbus  # noqa: only under /usr/bin/python3
    return dbus.bus.BusConnection(env.env["DBUS_SESSION_BUS_ADDRESS"])


def track(env, name, title=None, artist=None, album=None, seconds=30, freq=440):
    """An Ogg Vorbis file of a sine tone with Vorbis comments, made by sox."""
    path = os.path.join(env.dir, name + ".ogg")
    tags = []
    for key, value in (("TITLE", title), ("ARTIST", artist), ("ALBUM", album)):
        if value is not None:
            tags += ["--add-comment", f"{key}={value}"]
    subprocess.run(["sox", "-n", "-r", "8000", "-c", "1", *tags, path, "synth", str(seconds), "sine", str(freq),
                    "vol", "0.1"], check=True, capture_output=True)
    return path


class Mpv:
    """One mpv process: paused at start unless told, controlled over its JSON IPC socket."""

    def __init__(self, env, files, paused=True, extra=()):
        self.env = env
        self.ipc = os.path.join(env.dir, f"mpv-{len(env.procs)}.sock")
        args = ["mpv", "--no-config", "--no-video", "--ao=null", f"--script={MPV_MPRIS}", "--idle=yes",
                "--keep-open=yes", "--hr-seek=yes", f"--input-ipc-server={self.ipc}", *extra]
        if paused:
            args.append("--pause")
        self.proc = env.spawn(args + list(files), f"mpv-{len(env.procs)}")
        wait_until(lambda: self._alive() and os.path.exists(self.ipc), 20, what="mpv's IPC socket")

    def _alive(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"mpv exited with {self.proc.returncode}")
        return True

    def command(self, *cmd):
        with MpvIpc(self.ipc) as ipc:
            return ipc.command(*cmd)

    def get(self, prop):
        return self.command("get_property", prop)

    def events(self):
        """A connection that receives the events mpv sends from now on (mpv sends each to every
        IPC client): MpvIpc.wait; a context manager."""
        ipc = MpvIpc(self.ipc)
        # Answered, the connection is one of mpv's clients: every later event reaches it.
        ipc.command("get_property", "pid")
        return ipc

    def loaded(self):
        try:
            return self.get("time-pos") is not None and self.get("seeking") is False
        except RuntimeError:   # no file yet: the property is unavailable
            return False

    def owner(self):
        """The mpv-mpris player name this mpv owns (mpv, or mpv.instance<pid> when mpv was taken)."""
        for key in ("mpv", f"mpv.instance{self.proc.pid}"):
            if pid_of(self.env, PREFIX + key) == self.proc.pid:
                return key
        return None


class MpvIpc:
    """One connection to mpv's JSON IPC: commands, and the events seen meanwhile."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buf = b""
        self.seen = []
        self.next_id = 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def _read_until(self, done, timeout):
        """Reads messages (recording events) until done(message) is true."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                msg = json.loads(line)
                if "event" in msg:
                    self.seen.append(msg["event"])
                if done(msg):
                    return msg
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"mpv's events so far: {self.seen}")
            self.sock.settimeout(remaining)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("mpv closed its IPC socket")
            self.buf += chunk

    def command(self, *cmd, timeout=10):
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall((json.dumps({"command": list(cmd), "request_id": rid}) + "\n").encode())
        msg = self._read_until(lambda msg: msg.get("request_id") == rid, timeout)
        if msg.get("error") != "success":
            raise RuntimeError(f"mpv {cmd}: {msg}")
        return msg.get("data")

    def wait(self, name, after, timeout=10):
        """Until event `name` came after event `after`."""
        def done(_):
            return after in self.seen and name in self.seen[self.seen.index(after) + 1:]
        if not done(None):
            self._read_until(done, timeout)


def pid_of(env, name):
    import dbus
    try:
        bus = session(env)
        return int(bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                     "GetConnectionUnixProcessID", "s", (name,)))
    except dbus.exceptions.DBusException:
        return None


def unique_name_of_pid(env, pid):
    """The session bus connection of process `pid` (qsd's, to tell its calls apart)."""
    bus = session(env)
    for name in bus.list_names():
        if name.startswith(":") and pid_of(env, name) == pid:
            return str(name)
    return None


def playerctl(env, *args, check=True):
    return subprocess.run(["playerctl", *args], capture_output=True, text=True, env=env.env, timeout=20, check=check)


def start_player(env, config, log="player"):
    """Starts mpris_player.py with `config`; returns its Popen once it owns its name."""
    log = f"{log}-{len(env.procs)}"
    cfg = os.path.join(env.dir, log + ".json")
    with open(cfg, "w") as f:
        json.dump(config, f)
    p = env.spawn([PY, os.path.join(HERE, "mpris_player.py"), "@" + cfg], log)
    path = os.path.join(env.dir, log + ".log")

    def ready():
        if p.poll() is not None:
            raise RuntimeError(f"player exited with {p.returncode}: {open(path).read()}")
        return os.path.exists(path) and "ready" in open(path).read()

    wait_until(ready, 30, what="player ready")
    return p


def control(env, name):
    import dbus
    return dbus.Interface(session(env).get_object(name, "/org/mpris/MediaPlayer2"), "org.qsdtest.Control")


def calls(env, name):
    return json.loads(str(control(env, name).Calls()))


class Monitor:
    """dbus-monitor of the method calls one connection (qsd's) makes on the session bus."""

    def __init__(self, env, sender):
        self.path = os.path.join(env.dir, f"monitor-{len(env.procs)}.log")
        self.proc = env.spawn(["stdbuf", "-oL", "dbus-monitor", "--session", f"type='method_call',sender='{sender}'"],
                              os.path.basename(self.path)[:-4])
        # Once it is a monitor, the bus takes its unique name back: NameLost is printed then.
        wait_until(lambda: "NameLost" in self.text(), 10, what="dbus-monitor")

    def text(self):
        return open(self.path).read() if os.path.exists(self.path) else ""

    def calls(self):
        """(member, destination) of every method call seen so far, in order."""
        out = []
        for line in self.text().splitlines():
            if line.startswith("method call "):
                fields = dict(f.split("=", 1) for f in line.replace(";", "").split() if "=" in f)
                out.append((fields.get("member"), fields.get("destination")))
        return out


def wall_now():
    return datetime.datetime.now(datetime.timezone.utc)


def client_position(player, now=None):
    """What a client computes from the tree: position + (now - positionAt) x rate while playing,
    `now` the wall clock (a datetime; the present when None)."""
    if player["position"] is None:
        return None
    if player["playbackStatus"] != "playing":
        return player["position"]
    return player["position"] + ((now or wall_now()) - ts(player["positionAt"])).total_seconds() * player["rate"]


def bracket(player, read):
    """read() (the player's own position) and the positions a client computes from the tree's
    `player` just before and just after it ran: what read() returned lies between those two."""
    before = wall_now()
    told = read()
    after = wall_now()
    return client_position(player, before), told, client_position(player, after)


def position_brackets(env, c, sub, key):
    """bracket() of player `key` with playerctl's position. The mirror is brought up to date
    first, so a pair qsd stamped again since it was last read counts."""
    c.pump()
    return bracket(c.mirror(sub)["media"]["players"][key],
                   lambda: float(playerctl(env, "-p", key, "position").stdout))


def now_mono():
    return time.monotonic()
