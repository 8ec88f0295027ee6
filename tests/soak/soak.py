"""Soak: a long run of qsd against services that come and go and clients that misbehave.

  * The services of tests/soak/services.py that the build has a backend for (python-dbusmock
    NetworkManager, UPower and power-profiles-daemon; real PipeWire and WirePlumber; real
    StatusNotifierItems and a second watcher; headless sway with foot windows) run in a private
    world (buses, runtime directory), change all the time, and are stopped (SIGTERM or SIGKILL)
    and started again at random intervals. They start before qsd, which is started with every
    backend the build has, and are stopped at the end; no process of the run may be left.
  * 50 clients connect, subscribe to random paths, call random actions and disconnect, in
    turn: some are killed mid-request (the socket closed under a request, a qsctl SIGKILLed),
    some never read what they subscribed to, some send garbage.
  * One observer keeps a mirror of the whole tree from the change stream and compares it with
    tree.get every few seconds.
  * qsd's RSS and open fds are printed every minute.

At the end it prints the counts of errors (answers qsd should not give, missing answers,
change streams that do not apply, processes left running), mismatches (mirror != tree.get at the
same revision) and crashes (qsd exited),
and whether RSS and fds stayed flat after the first minute. The exit status is 0 only when all
three counts are 0 and both stayed flat.

Usage: /usr/bin/python3 tests/soak/soak.py [--minutes N] [--clients N] [--seed N]
(QSD_BIN / QSCTL_BIN name the binaries, as for the integration tests; scripts/soak sets them.)
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from qsdtest import QSCTL, QSD, Client, Env, RpcError, processes_naming, wait_until  # noqa: E402

import services as svc  # noqa: E402

# Answers a well-formed request may get while services come and go: backend unavailable, not
# found (an id that just went away), the service's own refusal, bad params (a profile this
# machine does not offer, a network that is not there at the moment).
EXPECTED_CODES = {-32000, -32001, -32002, -32602}
FIXED_PATHS = ["", "/daemon", "/daemon/backends", "/daemon/clients", "/power", "/power/profiles", "/power/devices",
               "/power/displayDevice", "/network", "/network/devices", "/network/devices/wlan0/networks",
               "/audio", "/audio/nodes", "/audio/defaultAudioSink", "/tray", "/tray/items", "/wayland",
               "/notifications/items",
               "/wayland/outputs", "/wayland/toplevels"]


def pump(c, seconds):
    """Reads (and applies) what arrives for `seconds`: Client.pump waits for a quiet moment,
    which a busy change stream never has."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            c.read_message(left)
        except TimeoutError:
            return


class Soak:
    def __init__(self, args):
        self.args = args
        self.env = Env(buses=True)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.quiet = threading.Event()
        self.quiet_fd_kinds = []   # fd_kinds() at each quiet sample, the first before the clients
        self.errors = []
        self.mismatches = 0
        self.crashes = 0
        self.counts = {"connections": 0, "calls": 0, "rejected": 0, "killed": 0, "silent": 0, "garbage": 0,
                       "restarts": 0, "checks": 0}
        self.restarts = {}   # service name -> restarts
        self.paths = list(FIXED_PATHS)
        self.latest = {}     # the whole tree at the observer's last check: the keys services act on
        self.actions = [("tree.get", lambda: {"path": random.choice(self.paths)}), ("hello", {}),
                        ("events.subscribe", {"topics": ["*"]})]
        self.services = []

    # --- bookkeeping

    def error(self, what):
        with self.lock:
            self.errors.append(what)
            if len(self.errors) <= 20:
                print(f"soak: ERROR {what}", flush=True)

    def count(self, key, n=1):
        with self.lock:
            self.counts[key] += n

    def qsd_alive(self):
        return self.env.daemon is not None and self.env.daemon.poll() is None

    # --- set-up

    def probe_backends(self):
        """The backends the build has: hello's capabilities of a qsd started on a socket of its
        own, with no bus, compositor or PipeWire to find (it must not take the tray's watcher
        name before the services are there)."""
        d = os.path.join(self.env.dir, "probe")
        os.makedirs(d, mode=0o700)
        e = dict(self.env.env, XDG_RUNTIME_DIR=d, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={d}/no-bus",
                 DBUS_SESSION_BUS_ADDRESS=f"unix:path={d}/no-bus")
        e.pop("WAYLAND_DISPLAY", None)
        sock = os.path.join(d, "qsd.sock")
        with open(os.path.join(self.env.dir, "qsd-probe.log"), "w") as log:
            p = subprocess.Popen([QSD, "--socket", sock], stdout=log, stderr=subprocess.STDOUT, env=e,
                                 stdin=subprocess.DEVNULL)
        try:
            def connect():
                if p.poll() is not None:
                    raise RuntimeError(f"qsd exited with {p.returncode} at start: {self.env.qsd_log()}")
                try:
                    return Client(sock, timeout=20)
                except OSError:
                    return None
            c = wait_until(connect, 20, what="qsd's socket")
            caps = c.call("hello", timeout=20)["capabilities"]
            c.close()
        finally:
            p.terminate()
            p.wait(20)
        return {c.split(":", 1)[1] for c in caps if c.startswith("backend:")}

    def start(self):
        backends = self.probe_backends()
        for cls in svc.SERVICES:
            if cls.backend not in backends:
                continue
            why = cls.missing()
            if why:
                # The build has the backend but this machine cannot run the service: say so loudly.
                self.error(f"cannot run {cls.name} for the {cls.backend} backend: {why}")
                continue
            s = cls(self.env, tree=lambda: self.latest, error=self.error)
            s.start()
            self.services.append(s)
            self.restarts[s.name] = 0
            self.actions += s.actions()
        qsd_env = dict(self.env.env)
        for s in self.services:
            s.qsd_env(qsd_env)
        self.env.start_qsd(env=qsd_env)   # every backend the build has
        c = self.env.client()
        got = c.call("hello")
        self.latest = c.call("tree.get", {"path": ""})["value"]
        c.close()
        backends_now = {c.split(":", 1)[1] for c in got["capabilities"] if c.startswith("backend:")}
        if backends_now != backends:
            self.error(f"qsd has the backends {sorted(backends_now)}, the probe said {sorted(backends)}")
        names = ", ".join(s.name for s in self.services) or "none"
        print(f"soak: qsd pid {self.env.daemon.pid}, backends {sorted(backends)}; services: {names}", flush=True)

    # --- the services: restarts and churn

    def chaos(self, s):
        """One thread per service: its restarts and its churn."""
        minutes = self.args.minutes
        # Restart every 10..40 s in a long run; scaled down for a short one.
        lo, hi = (10, 40) if minutes >= 5 else (3, 12)
        due = time.monotonic() + random.uniform(lo, hi)
        tick = 0.1
        while not self.stopping.wait(tick):
            try:
                if time.monotonic() >= due:
                    s.restart(self.stopping.wait)
                    self.count("restarts")
                    with self.lock:
                        self.restarts[s.name] += 1
                    due = time.monotonic() + random.uniform(lo, hi)
                elif s.running() and random.random() < s.churn_per_second * tick:
                    s.churn()
            except Exception as e:  # noqa: BLE001  (a service that just went, a mock's refusal)
                if self.stopping.is_set():
                    return
                if not s.running():
                    try:
                        s.start()
                    except Exception as e2:  # noqa: BLE001
                        print(f"soak: could not start {s.name}: {e2} (after {type(e).__name__}: {e})", flush=True)

    # --- the clients

    def call(self, c, method, params):
        self.count("calls")
        try:
            return c.call(method, params() if callable(params) else params, timeout=20)
        except RpcError as e:
            if e.code in EXPECTED_CODES:
                self.count("rejected")
                return None
            raise

    def normal(self, c):
        subs = []
        for _ in range(random.randint(0, 3)):
            paths = random.sample(self.paths, random.randint(1, 3))
            throttle = random.choice([None, None, 0, 50, 250])
            subs.append(c.subscribe(paths, throttle))
        cookies = []
        for _ in range(random.randint(1, 10)):
            method, params = random.choice(self.actions)
            result = self.call(c, method, params)
            if method == "power.holdProfile" and result:
                cookies.append(result["cookie"])
            if cookies and random.random() < 0.3:
                self.call(c, "power.releaseProfile", {"cookie": cookies.pop()})
            pump(c, random.uniform(0, 0.3))
        if subs and random.random() < 0.3:
            self.call(c, "tree.unsubscribe", {"subscription": random.choice(subs)})
        pump(c, random.uniform(0, 0.5))

    def killed(self, c):
        # The socket closed with a request in flight (a client killed mid-request), sometimes
        # in the middle of a line.
        self.count("killed")
        method, params = random.choice(self.actions + [("rpc.discover", {}), ("tree.subscribe", {"paths": [""]})])
        line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                           "params": params() if callable(params) else params}) + "\n"
        if random.random() < 0.3:
            line = line[:random.randint(1, len(line) - 1)]
        c.send_raw(line)

    def killed_qsctl(self):
        self.count("killed")
        env = dict(self.env.env)
        env["QSD_SOCKET"] = self.env.socket
        args = random.choice([["watch", ""], ["get", ""], ["call", "rpc.discover"], ["watch", "/power", "/network"],
                              ["watch", "/audio", "/tray", "/wayland"]])
        p = subprocess.Popen([QSCTL, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(random.uniform(0, 0.2))
        p.send_signal(signal.SIGKILL)
        p.wait()

    def silent(self, c):
        # Subscribes to everything and never reads: qsd must bound what it queues for it.
        self.count("silent")
        c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tree.subscribe", "params": {"paths": [""]}}) + "\n")
        for i in range(random.randint(0, 50)):
            c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 2 + i, "method": "tree.get", "params": {"path": ""}}) + "\n")
        deadline = time.monotonic() + random.uniform(2, 10)
        while time.monotonic() < deadline and not self.quiet.is_set() and not self.stopping.wait(0.1):
            pass

    def garbage(self, c):
        self.count("garbage")
        cases = [("{not json\n", -32700), ("[]\n", -32600), ('{"jsonrpc":"2.0","id":1}\n', -32600),
                 ('{"jsonrpc":"2.0","id":1,"method":"no.such"}\n', -32601),
                 ('{"jsonrpc":"2.0","id":1,"method":"tree.get","params":{"path":"x"}}\n', -32602),
                 ('[{"jsonrpc":"2.0","id":1,"method":"hello"},{"jsonrpc":"2.0","method":"hello"}]\n', None)]
        line, code = random.choice(cases)
        reply = c.request_raw(line, timeout=20)
        if code is None:
            if not (isinstance(reply, list) and len(reply) == 1 and "result" in reply[0]):
                self.error(f"batch answered {reply!r}")
        elif not isinstance(reply, dict) or reply.get("error", {}).get("code") != code:
            self.error(f"{line.strip()!r} answered {reply!r}, expected code {code}")

    def client(self, n):
        rnd = random.Random(self.args.seed * 1000 + n)
        while not self.stopping.is_set():
            if self.quiet.is_set():   # the sampler wants qsd without clients for a moment
                self.stopping.wait(0.1)
                continue
            kind = rnd.choices(["normal", "killed", "qsctl", "silent", "garbage"], [65, 12, 5, 10, 8])[0]
            if kind == "qsctl":
                self.killed_qsctl()
                continue
            c = None
            try:
                c = Client(self.env.socket, timeout=20)
                self.count("connections")
                getattr(self, kind)(c)
            except (RpcError, TimeoutError, ConnectionError, OSError, KeyError, AssertionError, ValueError) as e:
                if self.stopping.is_set():
                    break
                if not self.qsd_alive():
                    break
                self.error(f"client {n} ({kind}): {type(e).__name__}: {e}")
            finally:
                if c:
                    c.close()
            self.stopping.wait(rnd.uniform(0, 0.5))

    # --- the observer: mirror vs tree.get

    def check(self, c, sub):
        got = c.call("tree.get", {"path": ""}, timeout=20)
        mirror = c.mirrors[sub]
        self.count("checks")
        if mirror["revision"] != got["revision"] or mirror["doc"] != got["value"]:
            with self.lock:
                self.mismatches += 1
            print(f"soak: MISMATCH at revision {got['revision']} (mirror at {mirror['revision']})", flush=True)
        # Paths to subscribe to: what exists now, a few levels deep.
        found = set(FIXED_PATHS)

        def walk(node, path, depth):
            if depth > 4 or not isinstance(node, dict):
                return
            for k, v in node.items():
                p = path + "/" + k.replace("~", "~0").replace("/", "~1")
                found.add(p)
                walk(v, p, depth + 1)
        walk(got["value"], "", 0)
        self.paths = sorted(found)
        self.latest = got["value"]

    def observer(self):
        c = Client(self.env.socket, timeout=20)
        sub = c.subscribe([""])
        next_check = time.monotonic() + 3
        try:
            while not self.stopping.is_set():
                pump(c, 0.2)
                if time.monotonic() >= next_check:
                    self.check(c, sub)
                    next_check = time.monotonic() + 3
            self.check(c, sub)
        except Exception as e:  # noqa: BLE001
            if self.qsd_alive():
                self.error(f"observer: {type(e).__name__}: {e}")
        finally:
            c.close()

    # --- figures

    def status_kib(self, key):
        with open(f"/proc/{self.env.daemon.pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))

    def fds_less_clients(self, probe):
        """(open fds, connected clients less the probe, fds less one per client and the probe).
        Clients come and go between the two readings, so the smallest of a few is taken."""
        best = None
        for _ in range(5):
            fds = len(os.listdir(f"/proc/{self.env.daemon.pid}/fd"))
            clients = probe.call("tree.get", {"path": "/daemon/clients"})["value"] - 1
            if best is None or fds - 1 - clients < best[2]:
                best = (fds, clients, fds - 1 - clients)
        return best

    def fd_kinds(self):
        """qsd's open fds by kind ("socket", "anon_inode:[timerfd]", "inotify", a file's path...):
        printed when the fds grew, to say which kind did. Sockets include the clients'."""
        kinds = {}
        fd_dir = f"/proc/{self.env.daemon.pid}/fd"
        for fd in os.listdir(fd_dir):
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            kind = target.split(":[", 1)[0] if target.startswith(("socket:", "pipe:")) else target
            kinds[kind] = kinds.get(kind, 0) + 1
        return kinds

    def sample(self):
        """RSS and fds as they are, with the clients at work."""
        probe = self.env.client()
        try:
            return (self.status_kib("VmRSS"), *self.fds_less_clients(probe))
        finally:
            probe.close()

    def quiet_sample(self, others):
        """RSS and fds less client sockets with no client but `others` connected (the observer)
        and no level meter open: the clients pause (each ends what it is doing first) while the
        services go on. Level meters (about 8 fds and 0.5 MiB each) and the queues of clients
        that never read come and go with the clients, so this is where a leak shows."""
        self.quiet.set()
        probe = self.env.client()
        try:
            def settled():
                clients = probe.call("tree.get", {"path": "/daemon/clients"})["value"] - 1
                try:
                    nodes = probe.call("tree.get", {"path": "/audio/nodes"})["value"]
                except RpcError:
                    nodes = {}
                meters = sum(1 for n in nodes.values() if isinstance(n, dict) and "peaks" in n)
                return clients <= others and meters == 0
            try:
                wait_until(settled, 60, interval=0.1, what="the clients to leave")
            except TimeoutError:
                clients = probe.call("tree.get", {"path": "/daemon/clients"})["value"] - 1
                self.error(f"60 s after the clients were told to pause, {clients} connections (of which {others} "
                           f"stay) or a level meter were still there")
            # qsd gives freed heap back a second after a big client queue went (Server::heapFreed).
            time.sleep(2)
            rss = self.status_kib("VmRSS")
            fds = self.fds_less_clients(probe)[2]
            self.quiet_fd_kinds.append(self.fd_kinds())
            return rss, fds
        finally:
            probe.close()
            self.quiet.clear()

    def run(self):
        minutes = self.args.minutes
        self.start()
        q0 = self.quiet_sample(0)
        threads = [threading.Thread(target=self.chaos, args=(s,), daemon=True) for s in self.services]
        threads.append(threading.Thread(target=self.observer, daemon=True))
        threads += [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(self.args.clients)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        # Every minute, with a quiet sample; a short run samples (busy only) more often.
        long_run = minutes >= 3
        every = 60 if long_run else 10
        samples = []   # (seconds, quiet RSS KiB, quiet fds less clients)
        print(f"soak: before the clients: RSS {q0[0] / 1024:.2f} MiB, fds {q0[1]}", flush=True)
        print("soak:  minute   RSS MiB   fds  clients  fds-less-clients  | quiet: RSS MiB  fds-less-clients", flush=True)
        end = t0 + minutes * 60
        while time.monotonic() < end:
            time.sleep(min(every, max(0.1, end - time.monotonic())))
            if not self.qsd_alive():
                self.crashes += 1
                print(f"soak: qsd exited with {self.env.daemon.returncode}\n{self.env.qsd_log()[-4000:]}", flush=True)
                break
            at = time.monotonic() - t0
            try:
                rss, fds, clients, base = self.sample()
                quiet = self.quiet_sample(1) if long_run or time.monotonic() >= end else None
            except (OSError, RpcError, TimeoutError, ConnectionError) as e:
                self.error(f"sampling: {e}")
                continue
            line = f"soak: {at / 60:7.2f} {rss / 1024:9.2f} {fds:5d} {clients:8d} {base:17d}"
            if quiet:
                samples.append((at, *quiet))
                line += f"  |        {quiet[0] / 1024:7.2f} {quiet[1]:17d}"
                # Which kinds differ from before the clients when there are more than the
                # fan-out's ring (made after that sample): a leak keeps growing in one kind; a
                # service caught mid-restart moves a few and goes back. ("socket" counts the
                # sampling client too.)
                if len(self.quiet_fd_kinds) >= 2:
                    first, now = self.quiet_fd_kinds[0], self.quiet_fd_kinds[-1]
                    ring = "anon_inode:[io_uring]"
                    if quiet[1] > q0[1] + now.get(ring, 0) - first.get(ring, 0):
                        moved = {k: now.get(k, 0) - first.get(k, 0) for k in set(first) | set(now)
                                 if now.get(k, 0) != first.get(k, 0)}
                        line += "  " + " ".join(f"{k} {d:+d}" for k, d in sorted(moved.items()))
            print(line, flush=True)
        self.stopping.set()
        for t in threads:
            t.join(30)
        if self.crashes == 0 and not self.qsd_alive():
            self.crashes += 1
        for s in self.services:
            try:
                s.stop()
            except Exception:  # noqa: BLE001
                pass
        if self.crashes == 0:
            # A clean exit on SIGTERM; under the sanitizers, LeakSanitizer reports at exit.
            rc = self.env.stop_qsd()
            if rc != 0:
                self.error(f"qsd exited with {rc} on SIGTERM")
        log = self.env.qsd_log()
        if "ERROR: AddressSanitizer" in log or "ERROR: LeakSanitizer" in log or "runtime error:" in log:
            self.error("the sanitizers reported in qsd's log")
        self.close()
        return self.report(q0, samples, log)

    def close(self):
        """Stops everything the run started, and checks that nothing is left: every process
        started for the run has the run's directory in its environment (XDG_RUNTIME_DIR, HOME)."""
        mark = self.env.dir
        self.env.close()
        try:
            wait_until(lambda: not processes_naming(mark), 10, interval=0.2, what="the run's processes to exit")
        except TimeoutError:
            for p in processes_naming(mark):
                self.error(f"left running after the run: {p}")

    def report(self, q0, samples, log):
        # Measured quiet (see quiet_sample). fds: qsd holds no more than before the first client
        # (+2: a backend between its service's socket and the inotify watch waiting for it; +1
        # for the fan-out's io_uring, below).
        # RSS: the heap grows to its working size while every kind of client and every restart
        # has come by at the same time, which can take a minute or two; a leak does not stop
        # growing: the second half of the run (after the first minute) must not go above the
        # peak of the first half by more than max(1 MiB, 10 %). A run shorter than 3 minutes has
        # too little to compare for RSS.
        # qsd's io_uring for the fan-out is made at its first write to several clients, after
        # the sample before the clients: one fd more for the rest of its life, not a leak.
        ring = "anon_inode:[io_uring]"
        rings = [k.get(ring, 0) for k in self.quiet_fd_kinds]
        ring_made = 1 if rings and rings[0] == 0 and max(rings) == 1 else 0
        fds_flat = all(q[2] <= q0[1] + 2 + ring_made for q in samples)
        quiet_fds = [q[2] for q in samples]
        fds_note = (f"{q0[1]} before the clients; after the pauses {min(quiet_fds)}..{max(quiet_fds)}, "
                    f"{quiet_fds[-1]} at the end" if quiet_fds else f"{q0[1]} before the clients; no pause")
        after = [q for q in samples if q[0] >= 60 - 1]
        rss_flat = True
        rss_note = "n/a (run shorter than 3 minutes)"
        if self.args.minutes >= 3 and len(after) >= 2:
            half = len(after) // 2
            early, late = after[:max(1, half)], after[max(1, half):]
            peak_rss, late_rss = max(r[1] for r in early), max(r[1] for r in late)
            rss_flat = late_rss - peak_rss <= max(1024, peak_rss // 10)
            rss_note = (f"{after[0][1] / 1024:.2f} at the first minute, peak {peak_rss / 1024:.2f} MiB in the first "
                        f"half, {late_rss / 1024:.2f} in the second, {after[-1][1] / 1024:.2f} at the end")
            with open(QSD, "rb") as f:
                if b"AddressSanitizer" in f.read():
                    # ASan keeps freed memory in its quarantine and never gives its heap back:
                    # RSS says nothing there. LeakSanitizer at exit is the leak check.
                    rss_flat = True
                    rss_note += " (not judged under ASan: its quarantine holds freed memory)"
        flat = fds_flat and rss_flat
        c = self.counts
        print(f"soak: {self.args.minutes} min, {c['connections']} client connections ({c['killed']} killed mid-request, "
              f"{c['silent']} never reading, {c['garbage']} garbage), {c['calls']} calls ({c['rejected']} refused as "
              f"expected), {c['restarts']} service restarts, {c['checks']} mirror checks", flush=True)
        for s in self.services:
            note = s.note()
            print(f"soak:   {s.name}: {self.restarts[s.name]} restarts" + (f" ({note})" if note else ""), flush=True)
        print(f"soak: quiet RSS {rss_note}{'' if rss_flat else ': NOT FLAT'}", flush=True)
        print(f"soak: quiet fds less client sockets {fds_note}{'' if fds_flat else ': GREW'}", flush=True)
        if not fds_flat and self.quiet_fd_kinds:
            first, last = self.quiet_fd_kinds[0], self.quiet_fd_kinds[-1]
            grown = {k: f"{first.get(k, 0)} -> {last.get(k, 0)}" for k in sorted(set(first) | set(last))
                     if first.get(k, 0) != last.get(k, 0)}
            print(f"soak: qsd's fds by kind, before the clients and at the last pause: {grown}", flush=True)
        print(f"soak: errors {len(self.errors)}, mismatches {self.mismatches}, crashes {self.crashes}", flush=True)
        ok = not self.errors and self.mismatches == 0 and self.crashes == 0 and flat
        if not ok:
            print("soak: FAILED; qsd's log ends with:\n" + log[-3000:], flush=True)
        return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    args = ap.parse_args()
    random.seed(args.seed)
    print(f"soak: {args.minutes} min, {args.clients} clients, seed {args.seed}", flush=True)
    soak = Soak(args)
    try:
        status = soak.run()
    finally:
        soak.env.close()
    sys.exit(status)


if __name__ == "__main__":
    main()
