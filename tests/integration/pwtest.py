"""Real PipeWire for the audio tests: pipewire and wireplumber (and pipewire-pulse when a test
needs pactl) started in the test's private world (qsdtest.Env: its own XDG_RUNTIME_DIR, HOME,
XDG_STATE_HOME, XDG_CONFIG_HOME and session bus), null sinks and sources made with pw-cli,
streams played with pw-cat from a generated WAV, and the test sound card (pw_test_device.c)
that exports a device with profiles and routes. Checks go through wpctl and pw-dump, as a user
would look."""

import json
import math
import os
import shutil
import signal
import struct
import subprocess
import wave

import pytest

from qsdtest import BUILD, wait_until

BINARIES = ["pipewire", "wireplumber", "pw-cli", "pw-dump", "pw-cat", "wpctl", "pw-metadata"]
TEST_DEVICE = os.path.join(BUILD, "tests", "pw-test-device")
TEST_STREAM = os.path.join(BUILD, "tests", "pw-test-stream")
TEST_PEER = os.path.join(BUILD, "tests", "pw-test-peer")


def require(*extra):
    """Skips the test, saying why, when a binary it needs is missing (scripts/install-deps
    installs them all)."""
    for b in BINARIES + list(extra):
        if shutil.which(b) is None:
            pytest.skip(f"{b} is not installed (scripts/install-deps installs it)")


def write_tone(path, seconds=600, rate=8000, amplitude=0.5, freq=440):
    """A stereo 16-bit WAV of a sine at `amplitude` (peaks read it back), long enough to outlive
    any test."""
    period = bytearray()
    n = rate // 100   # 10 ms of a 100 Hz-periodic tone keeps the file small to build
    for i in range(n):
        v = int(amplitude * 32767 * math.sin(2 * math.pi * freq * i / rate))
        period += struct.pack("<hh", v, v)
    with wave.open(path, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        chunk = bytes(period) * 100   # one second
        for _ in range(seconds):
            w.writeframes(chunk)


class PipeWire:
    """pipewire + wireplumber in `env`. Each daemon can be killed and started again."""

    def __init__(self, env, wireplumber=True, pulse=False, extra_env=None):
        require(*(["pipewire-pulse", "pactl"] if pulse else []))
        self.env = env
        self.penv = dict(env.env)
        if extra_env:
            self.penv.update(extra_env)
        self.pw = None
        self.wp = None
        self.pulse = None
        self.logs = {}   # program -> its log's name in env.dir
        self.hangs = []   # readiness probes that did not finish, with the daemons' states
        self.tone = os.path.join(env.dir, "tone.wav")
        self.start(wireplumber=wireplumber, pulse=pulse)

    # --- daemons

    def start(self, wireplumber=True, pulse=False):
        self.pw = self.spawn("pipewire")
        self.ready(self.pw, "pipewire", lambda: self.probe(["pw-cli", "info", "0"]).returncode == 0,
                   "PipeWire answering")
        if wireplumber:
            self.start_wireplumber()
        if pulse:
            self.pulse = self.spawn("pipewire-pulse")
            self.ready(self.pulse, "pipewire-pulse", lambda: self.probe(["pactl", "info"]).returncode == 0,
                       "pipewire-pulse answering pactl")

    def start_wireplumber(self):
        # Ready when it created the "default" metadata and wrote into it the default devices it
        # saved last time: it does that after the metadata appears (module-default-nodes'
        # on_metadata_added), and a default set before then (wpctl set-default) is overwritten.
        saved = self.saved_defaults()
        self.wp = self.spawn("wireplumber")

        def ready():
            if not saved:
                # Only the metadata's global is needed, and the registry lists it without a
                # bind. A bind (pw-metadata) waits for WirePlumber's answer to a ping, and
                # PipeWire sends the clients bound before (qsd) no change meanwhile: the
                # defaults WirePlumber writes as it starts could be lost to qsd (PipeWire's
                # metadata module; docs/backends/pipewire.md).
                return 'metadata.name = "default"' in self.probe(["pw-cli", "ls", "Metadata"]).stdout
            out = self.probe(["pw-metadata", "-n", "default", "0"]).stdout
            return 'Found "default"' in out and all(f"key:'{key}'" in out for key in saved)
        self.ready(self.wp, "wireplumber", ready,
                   "WirePlumber's default metadata" + (f" with its saved {', '.join(saved)}" if saved else ""))

    def saved_defaults(self):
        """The default.configured.* keys WirePlumber saved in its state file, which it restores
        when it starts."""
        state = self.penv.get("XDG_STATE_HOME") or os.path.join(self.penv["HOME"], ".local", "state")
        try:
            with open(os.path.join(state, "wireplumber", "default-nodes")) as f:
                lines = f.read().splitlines()
        except OSError:
            return []
        keys = [line.split("=", 1)[0] for line in lines if "=" in line]
        # default.configured.audio.sink.0, .1...: the earlier choices, kept in the file only.
        return [k for k in keys if k.startswith("default.configured.") and not k.rsplit(".", 1)[1].isdigit()]

    def spawn(self, program):
        self.logs[program] = f"{program}-{len(self.env.procs)}"
        return self.env.spawn([program], self.logs[program], env=self.penv)

    def probe(self, args, timeout=5):
        """Runs a readiness probe. A probe that does not finish is "not ready yet", not an error:
        pw-metadata binding WirePlumber's "default" metadata is held by PipeWire (the binding
        client is marked busy) until WirePlumber answers a ping, so it hangs for as long as
        WirePlumber's loop does not run. Each hang is written down with what the daemons were
        doing (their kernel wait channels) for ready()'s error."""
        try:
            return self.run(args, check=False, timeout=timeout)
        except subprocess.TimeoutExpired:
            states = []
            for name, proc in (("pipewire", self.pw), ("wireplumber", self.wp)):
                if proc is not None and proc.poll() is None:
                    states.append(f"{name} {self.state(proc.pid)}")
            self.hangs.append(f"{' '.join(args)} did not finish in {timeout} s ({'; '.join(states)})")
            return subprocess.CompletedProcess(args, -1, "", "")

    @staticmethod
    def state(pid):
        """Each thread's state and kernel wait channel: where a stuck daemon waits."""
        out = []
        try:
            for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
                try:
                    with open(f"/proc/{pid}/task/{tid}/stat") as f:
                        stat = f.read().rsplit(")", 1)[1].split()[0]
                    with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                        wchan = f.read().strip() or "-"
                    with open(f"/proc/{pid}/task/{tid}/comm") as f:
                        comm = f.read().strip()
                    out.append(f"{comm}:{stat}:{wchan}")
                except OSError:
                    pass
        except OSError as e:
            return f"(unreadable: {e})"
        return " ".join(out)

    def ready(self, proc, program, predicate, what, timeout=40):
        """Waits for a daemon to answer; if it does not, the error carries its exit status, the
        probes that hung, and the end of its log (a daemon that failed to start says why
        there)."""
        try:
            # A daemon that answered once is ready: asking again could only add a hang.
            def check():
                if proc.poll() is not None:
                    return "exited"
                return "ready" if predicate() else None
            if wait_until(check, timeout, what=what) == "ready":
                return
        except TimeoutError:
            pass
        try:
            with open(os.path.join(self.env.dir, self.logs[program] + ".log")) as f:
                log = f.read()[-3000:]
        except OSError as e:
            log = f"(no log: {e})"
        state = "still running" if proc.poll() is None else f"exited with {proc.returncode}"
        hangs = "".join(f"\n  probe hung: {h}" for h in self.hangs[-5:])
        raise TimeoutError(f"timed out waiting for {what}: {program} {state}{hangs}; its log ends with:\n{log}")

    def kill(self, proc, sig=signal.SIGKILL):
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            proc.wait(10)

    def stop_wireplumber(self):
        self.kill(self.wp, signal.SIGTERM)
        self.wp = None

    def kill_all(self):
        self.kill(self.wp)
        self.kill(self.pulse)
        self.kill(self.pw)
        self.wp = self.pulse = self.pw = None

    # --- tools

    def run(self, args, check=True, timeout=20):
        return subprocess.run(args, capture_output=True, text=True, env=self.penv, check=check, timeout=timeout)

    def dump(self):
        # pw-dump 0.3.65 can print a second array when objects change while it dumps (seen on a
        # loaded machine): read every array, later entries of an id replacing earlier ones and
        # an entry with info null (a removal) dropping it.
        text = self.run(["pw-dump"]).stdout
        decoder, pos, objects = json.JSONDecoder(), 0, {}
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            chunk, pos = decoder.raw_decode(text, pos)
            for o in chunk:
                if "info" in o and o["info"] is None and "metadata" not in o:
                    objects.pop(o["id"], None)
                else:
                    objects[o["id"]] = o
        return list(objects.values())

    def node_by_name(self, name):
        for o in self.dump():
            if o.get("type") == "PipeWire:Interface:Node" and (o.get("info") or {}).get("props", {}).get("node.name") == name:
                return o
        return None

    def node_id(self, name):
        o = wait_until(lambda: self.node_by_name(name), 20, what=f"node {name} in pw-dump")
        return o["id"]

    def wpctl_volume(self, node_id):
        """(volume, muted) as `wpctl get-volume` prints them."""
        out = self.run(["wpctl", "get-volume", str(node_id)]).stdout.split()
        return float(out[1]), "[MUTED]" in out

    def metadata(self, key, subject=0):
        for o in self.dump():
            if o.get("type") == "PipeWire:Interface:Metadata" and o.get("props", {}).get("metadata.name") == "default":
                for m in o.get("metadata", []):
                    if m["subject"] == subject and m["key"] == key:
                        return m["value"]
        return None

    def add_null(self, name, media_class="Audio/Sink", positions="FL FR", description=None):
        desc = description or name.replace("_", " ").title()
        self.run(["pw-cli", "create-node", "adapter",
                  "{ factory.name=support.null-audio-sink node.name=%s node.description=\"%s\" media.class=%s "
                  "object.linger=true audio.position=[%s] }" % (name, desc, media_class, positions)])
        return self.node_id(name)

    def play(self, name="test-player", target=None, app="qsd-test-player"):
        """A pw-cat playback stream of the tone, its node named `name`."""
        if not os.path.exists(self.tone):
            write_tone(self.tone)
        args = ["pw-cat", "--playback", "--media-role", "Music", "-P",
                "{ node.name=%s application.name=%s }" % (name, app)]
        if target is not None:
            args += ["--target", str(target)]
        p = self.env.spawn(args + [self.tone], f"pw-cat-{name}-{len(self.env.procs)}", env=self.penv)
        self.node_id(name)
        return p

    def record(self, name="test-recorder"):
        args = ["pw-cat", "--record", "--media-role", "Communication", "-P", "{ node.name=%s }" % name,
                "--rate", "8000", "--channels", "1", os.devnull]
        p = self.env.spawn(args, f"pw-cat-{name}-{len(self.env.procs)}", env=self.penv)
        self.node_id(name)
        return p

    def card(self, name="qsd_test_card", profile=None, options=()):
        """The test sound card; returns its Popen once it printed "ready <device id>". `options`:
        more of pw_test_device's options (--no-volume-step, --hw-volume-steps N...)."""
        if not os.path.exists(TEST_DEVICE):
            pytest.skip(f"{TEST_DEVICE} is not built (it is built with the tests when WITH_PIPEWIRE is on)")
        args = [TEST_DEVICE, "--name", name]
        if profile is not None:
            args += ["--profile", str(profile)]
        args += list(options)
        n = len(self.env.procs)
        out = os.path.join(self.env.dir, f"card-{name}-{n}.out")
        err = os.path.join(self.env.dir, f"card-{name}-{n}.log")
        p = subprocess.Popen(args, stdout=open(out, "w"), stderr=open(err, "w"), stdin=subprocess.DEVNULL,
                             env=self.penv)
        self.env.procs.append(("popen", p))
        wait_until(lambda: "ready" in open(out).read(), 20, what="the test card exported")
        return p

    def stream(self, name, props=None):
        """pw_test_stream: a playback stream of silence named `name` with the extra properties
        `props`, whose properties a test changes with TestStream.set. Returns once the node is in
        PipeWire."""
        if not os.path.exists(TEST_STREAM):
            pytest.skip(f"{TEST_STREAM} is not built (it is built with the tests when WITH_PIPEWIRE is on)")
        n = len(self.env.procs)
        out = os.path.join(self.env.dir, f"stream-{name}-{n}.out")
        err = os.path.join(self.env.dir, f"stream-{name}-{n}.log")
        args = [TEST_STREAM, name] + [f"{k}={v}" for k, v in (props or {}).items()]
        p = subprocess.Popen(args, stdout=open(out, "w"), stderr=open(err, "w"), stdin=subprocess.PIPE,
                             env=self.penv, text=True)
        self.env.procs.append(("popen", p))
        wait_until(lambda: "ready" in open(out).read(), 20, what=f"the test stream {name} in PipeWire")
        return TestStream(p, out)

    def peer(self, *args):
        """pw_test_peer, a hostile client (its modes: pw_test_peer.c). `device` and `nodes` run until
        the test ends (or the Popen returned is terminated) and return once PipeWire has what they
        made; `metadata` returns once PipeWire has every key it wrote."""
        if not os.path.exists(TEST_PEER):
            pytest.skip(f"{TEST_PEER} is not built (it is built with the tests when WITH_PIPEWIRE is on)")
        n = len(self.env.procs)
        out = os.path.join(self.env.dir, f"peer-{args[0]}-{n}.out")
        err = os.path.join(self.env.dir, f"peer-{args[0]}-{n}.log")
        p = subprocess.Popen([TEST_PEER] + [str(a) for a in args], stdout=open(out, "w"), stderr=open(err, "w"),
                             stdin=subprocess.DEVNULL, env=self.penv)
        self.env.procs.append(("popen", p))
        word = "done" if args[0] == "metadata" else "ready"
        wait_until(lambda: word in open(out).read() or p.poll() is not None, 30, what=f"pw_test_peer {args[0]}")
        assert word in open(out).read(), f"pw_test_peer {args[0]} exited with {p.returncode}: {open(err).read()}"
        return p

    def card_log(self, name="qsd_test_card"):
        return "".join(open(os.path.join(self.env.dir, f)).read() for f in sorted(os.listdir(self.env.dir))
                       if f.startswith(f"card-{name}-") and f.endswith(".log"))


class TestStream:
    def __init__(self, proc, out):
        self.proc, self.out = proc, out

    def set(self, key, value):
        """Sets one property of the node; returns once pw_test_stream has sent the change."""
        sent = open(self.out).read().count(f"set {key}\n")
        self.proc.stdin.write(f"{key}={value}\n")
        self.proc.stdin.flush()
        wait_until(lambda: open(self.out).read().count(f"set {key}\n") > sent, 20, what=f"{key} set on the stream")


def receive_queue(pid):
    """Bytes waiting in the receive queues of a process's Unix sockets (ss): what PipeWire sent a
    stopped process (WirePlumber, the test card) that it has not read yet."""
    out = subprocess.run(["ss", "-x", "-p", "-n"], capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[2]) for line in out.splitlines()[1:] if f"pid={pid}," in line)


def exits_cleanly(env):
    """Stops qsd and checks it exited with 0 and left no crash marker in its log (Env.close
    checks that too): under the sanitizer build a leak or a sanitizer report at exit shows up
    here."""
    if env.daemon is not None and env.daemon.poll() is not None:
        assert env.daemon.returncode == 0, env.qsd_log()
    env.assert_exits_cleanly()
    # No handler of a PipeWire event threw (the trampolines log and swallow it).
    log = env.qsd_log()
    assert "pipewire: handling" not in log, log


def audio_nodes(c, sub):
    return c.mirror(sub).get("audio", {}).get("nodes", {})


def audio_devices(c, sub):
    return c.mirror(sub).get("audio", {}).get("devices", {})


def device_names(c, sub):
    """The `name` (device.name) of every device in the mirror of /audio."""
    return [d["name"] for d in audio_devices(c, sub).values()]


def sinks_world(env, *names):
    """PipeWire (with WirePlumber) with a null sink per name, and qsd with its PipeWire backend:
    (pw, a client, its subscription to /audio, the sinks' keys in the order of `names`)."""
    pw = PipeWire(env)
    for name in names:
        pw.add_null(name)
    env.start_qsd(backends=["pipewire"])
    c, sub = env.watch("/audio")
    c.wait_value(sub, "/audio/available", True, timeout=30)
    return pw, c, sub, [node_key(c, sub, name) for name in names]


def node_key(c, sub, name, timeout=20):
    """The key of the node named `name` once it is in the mirror."""
    def find():
        for k, n in audio_nodes(c, sub).items():
            if n["name"] == name:
                return k
        return None
    c.wait_for(lambda: find() is not None, timeout, what=f"node {name} in /audio")
    return find()
