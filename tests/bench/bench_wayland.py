#!/usr/bin/python3
"""Wayland: latency of an output change and idle wakeups, against a real headless sway 1.7.

Latency: `output HEADLESS-1 scale 2` (then `scale 1`, alternating) is sent on sway's IPC socket,
the way swaymsg sends it, but from this process so that swaymsg's start-up is not counted. t0 is
taken just before the command is written; one select() loop timestamps whatever arrives:

  sway reply     t0 -> sway's IPC reply (sway has applied the change)
  plain client   t0 -> wl_output.done with the new scale at a bare Wayland client in this
                 process (the reference: the same events, seen by a client that does nothing else)
  tree.changed   t0 -> the tree.changed line carrying /wayland/outputs/HEADLESS-1/scale at a
                 client subscribed to /wayland

Idle: context switches of qsd over a window with sway, two foot windows and the subscriber
connected and nothing changing (target in docs/performance.md: 0), then the same with the compositor gone
(qsd waiting on its inotify watch).

Usage: bench_wayland.py [RUNS]   (default 200, 10 with QSD_BENCH_QUICK=1; QSD_BIN selects the daemon)
"""

import json
import os
import select
import signal
import socket
import statistics
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
BUILD = os.path.join(HERE, "..", "..", "build")
os.environ.setdefault("QSD_BIN", os.path.join(BUILD, "daemon", "qsd"))

import qsdtest  # noqa: E402
from benchstat import percentile  # noqa: E402
from qsdtest import Env  # noqa: E402
from waylandenv import Sway, qsd_env, skip_reason  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]
SCALE_PATH = "/wayland/outputs/HEADLESS-1/scale"


def ctx(pid):
    vol = nonvol = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                vol = int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                nonvol = int(line.split()[1])
    return vol, nonvol


class SwayIpc:
    """sway's IPC (i3 protocol): "i3-ipc", payload length, type, payload."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def send(self, command):
        data = command.encode()
        self.sock.sendall(b"i3-ipc" + struct.pack("=II", len(data), 0) + data)

    def reply_ready(self):
        """Reads what is there; returns the reply once complete, else None."""
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("sway closed its IPC socket")
        self.buf += chunk
        if len(self.buf) < 14:
            return None
        length = struct.unpack("=I", self.buf[6:10])[0]
        if len(self.buf) < 14 + length:
            return None
        payload, self.buf = self.buf[14:14 + length], self.buf[14 + length:]
        return json.loads(payload)


class PlainClient:
    """A bare Wayland client (the wire protocol by hand): binds every wl_output and reports
    when one named HEADLESS-1 gets wl_output.done after a scale event. The reference for
    qsd's latency: the same change seen by a client that does nothing else."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 3
        self.outputs = {}      # object id -> {"name", "scale", "pending"}
        self.send(1, 1, struct.pack("=I", 2))   # wl_display.get_registry(new_id 2)
        self.send(1, 0, struct.pack("=I", self.next_id))   # wl_display.sync(callback)
        self.sync_id = self.next_id
        self.next_id += 1

    def send(self, obj, opcode, args):
        self.sock.sendall(struct.pack("=II", obj, ((8 + len(args)) << 16) | opcode) + args)

    @staticmethod
    def string(data, off):
        n = struct.unpack_from("=I", data, off)[0]
        return data[off + 4:off + 4 + n - 1].decode(), off + 4 + ((n + 3) & ~3)

    def read(self):
        """Handles what arrived; returns the scale of HEADLESS-1 when its done came with one."""
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the compositor closed the connection")
        self.buf += chunk
        done_scale = None
        while len(self.buf) >= 8:
            obj, word = struct.unpack_from("=II", self.buf, 0)
            size, opcode = word >> 16, word & 0xFFFF
            if len(self.buf) < size:
                break
            body, self.buf = self.buf[8:size], self.buf[size:]
            if obj == 2 and opcode == 0:   # wl_registry.global(name, interface, version)
                name = struct.unpack_from("=I", body, 0)[0]
                iface, off = self.string(body, 4)
                if iface == "wl_output":
                    iface_bytes = b"wl_output\0"
                    padded = iface_bytes + b"\0" * ((4 - len(iface_bytes) % 4) % 4)
                    args = struct.pack("=II", name, len(iface_bytes)) + padded + struct.pack("=II", 4, self.next_id)
                    self.send(2, 0, args)   # wl_registry.bind(name, interface, version 4, new_id)
                    self.outputs[self.next_id] = {"name": None, "scale": None, "pending": None}
                    self.next_id += 1
            elif obj in self.outputs:
                o = self.outputs[obj]
                if opcode == 3:   # scale
                    o["pending"] = struct.unpack_from("=i", body, 0)[0]
                elif opcode == 4:   # name
                    o["name"], _ = self.string(body, 0)
                elif opcode == 2:   # done
                    if o["pending"] is not None:
                        o["scale"], o["pending"] = o["pending"], None
                        if o["name"] == "HEADLESS-1":
                            done_scale = o["scale"]
        return done_scale


def measure(c, sub, ipc, runs, plain):
    replies, lines, plains = [], [], []
    scale = qsdtest.pointer_get(c.mirror(sub), SCALE_PATH)
    for _ in range(runs):
        scale = 2 if scale == 1 else 1
        t0 = time.monotonic_ns()
        ipc.send(f"output HEADLESS-1 scale {scale}")
        t_reply = t_line = t_plain = None
        while t_reply is None or t_line is None or t_plain is None:
            ready, _, _ = select.select([ipc.sock, c.sock, plain.sock], [], [], 10)
            if not ready:
                raise TimeoutError("no reply or no tree.changed within 10 s")
            now = time.monotonic_ns()
            if ipc.sock in ready and t_reply is None:
                reply = ipc.reply_ready()
                if reply is not None:
                    if not reply[0].get("success"):
                        raise RuntimeError(f"sway refused: {reply}")
                    t_reply = now
            if plain.sock in ready and plain.read() == scale and t_plain is None:
                t_plain = now
            if c.sock in ready:
                chunk = c.sock.recv(1 << 20)
                if not chunk:
                    raise ConnectionError("qsd closed the connection")
                c.buf += chunk
                while b"\n" in c.buf:
                    line, c.buf = c.buf.split(b"\n", 1)
                    msg = json.loads(line)
                    c._handle(msg)
                    if t_line is None and msg.get("method") == "tree.changed" and any(
                            ch["path"] == SCALE_PATH and ch.get("value") == scale for ch in msg["params"]["changes"]):
                        t_line = now
        replies.append((t_reply - t0) / 1000)
        lines.append((t_line - t0) / 1000)
        plains.append((t_plain - t0) / 1000)
        time.sleep(0.02)   # let sway and qsd finish the rest of the change (xdg-output, heads)
        c.pump(0.005)
    assert qsdtest.pointer_get(c.mirror(sub), SCALE_PATH) == scale
    return replies, lines, plains


def idle(env, seconds):
    time.sleep(0.5)
    a = ctx(env.daemon.pid)
    time.sleep(seconds)
    b = ctx(env.daemon.pid)
    return b[0] - a[0], b[1] - a[1]


def row(name, values):
    return (f"  {name:<16} {statistics.median(values):9.0f} {percentile(values, 90):9.0f} "
            f"{percentile(values, 99):9.0f} {max(values):9.0f}")


def main():
    reason = skip_reason()
    if reason:
        print(f"bench_wayland: skipped: {reason}")
        return
    quick = bool(os.environ.get("QSD_BENCH_QUICK"))
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else (10 if quick else 200)
    window = 1.0 if quick else 10.0
    e = Env(buses=False)
    try:
        sway = Sway(e).start()
        sway.foot("bench.a", "Bench A")
        sway.foot("bench.b", "Bench B")
        e.start_qsd(backends=["wayland"], debug_api=False, env=qsd_env(e, sway))
        c = e.client()
        sub = c.subscribe(["/wayland"])
        c.wait_value(sub, "/wayland/available", True, timeout=20)
        c.wait_for(lambda: len(qsdtest.pointer_get(c.mirror(sub), "/wayland/toplevels", {})) == 2, 20, what="2 toplevels")
        ipc = SwayIpc(sway.ipc)
        plain = PlainClient(sway.socket)

        measure(c, sub, ipc, 5, plain)   # warm-up (the plain client binds its outputs here)
        replies, lines, plains = measure(c, sub, ipc, runs, plain)
        print(f"# wayland: output scale change -> tree.changed, {runs} runs, sway 1.7 headless, times in µs")
        print(f"  {'':<16} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>9}")
        print(row("sway reply", replies))
        print(row("plain client", plains))
        print(row("tree.changed", lines))
        print(row("qsd - plain", [q - p for q, p in zip(lines, plains)]))
        print(f"ratio tree.changed / plain client: p50 {statistics.median(lines) / statistics.median(plains):.2f}, "
              f"p99 {percentile(lines, 99) / percentile(plains, 99):.2f}")

        c.pump(0.2)
        vol, nonvol = idle(e, window)
        print(f"# idle: qsd with sway, 2 toplevels, 1 subscriber to /wayland, nothing changing, {window:.0f} s window")
        print(f"context switches: voluntary {vol}, non-voluntary {nonvol}, total {vol + nonvol} ({(vol + nonvol) / window:.2f}/s)")

        sway.stop(signal.SIGTERM)
        c.wait_value(sub, "/wayland/available", False, timeout=20)
        # The server checks the heap a second after a flush that removed values (the compositor's
        # outputs and toplevels): a one-off, then nothing.
        c.pump(1.5)
        vol, nonvol = idle(e, window)
        print(f"# idle: compositor gone (qsd waits on inotify), {window:.0f} s window")
        print(f"context switches: voluntary {vol}, non-voluntary {nonvol}, total {vol + nonvol} ({(vol + nonvol) / window:.2f}/s)")
        c.close()
    finally:
        e.close()


if __name__ == "__main__":
    main()
