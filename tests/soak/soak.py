"""Soak: a long run of qsd against services that come and go and clients that misbehave.

  * The services of tests/soak/services.py that the build has (python-dbusmock NetworkManager,
    UPower and power-profiles-daemon today) run on private buses, change all the time, and are
    stopped (SIGTERM or SIGKILL) and started again at random intervals.
  * 50 clients connect, subscribe to random paths, call random actions and disconnect, in
    turn: some are killed mid-request (the socket closed under a request, a qsctl SIGKILLed),
    some never read what they subscribed to, some send garbage.
  * One observer keeps a mirror of the whole tree from the change stream and compares it with
    tree.get every few seconds.
  * qsd's RSS and open fds are printed every minute.

At the end it prints the counts of errors (answers qsd should not give, missing answers,
change streams that do not apply), mismatches (mirror != tree.get) and crashes (qsd exited),
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

from qsdtest import QSCTL, Client, Env, RpcError  # noqa: E402

import services as svc  # noqa: E402

# Answers a well-formed request may get while services come and go: backend unavailable, not
# found (an id that just went away), the service's own refusal, bad params (a profile this
# machine does not offer, a network that is not there at the moment).
EXPECTED_CODES = {-32000, -32001, -32002, -32602}
FIXED_PATHS = ["", "/daemon", "/daemon/backends", "/daemon/clients", "/power", "/power/profiles", "/power/devices",
               "/power/displayDevice", "/network", "/network/devices", "/network/devices/wlan0/networks"]


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
        self.errors = []
        self.mismatches = 0
        self.crashes = 0
        self.counts = {"connections": 0, "calls": 0, "rejected": 0, "killed": 0, "silent": 0, "garbage": 0,
                       "restarts": 0, "checks": 0}
        self.paths = list(FIXED_PATHS)
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

    def start(self):
        self.env.start_qsd()   # every backend the build has
        probe = self.env.client()
        caps = probe.call("hello")["capabilities"]
        probe.close()
        backends = {c.split(":", 1)[1] for c in caps if c.startswith("backend:")}
        for cls in svc.SERVICES:
            if cls.backend in backends:
                s = cls(self.env)
                s.start()
                self.services.append(s)
                self.actions += s.actions()
        names = ", ".join(s.name for s in self.services) or "none"
        print(f"soak: qsd pid {self.env.daemon.pid}, backends {sorted(backends)}; services: {names}", flush=True)

    # --- the services: restarts and churn

    def chaos(self):
        minutes = self.args.minutes
        # Restart every 10..40 s in a long run; scaled down for a short one.
        lo, hi = (10, 40) if minutes >= 5 else (3, 12)
        due = {id(s): time.monotonic() + random.uniform(lo, hi) for s in self.services}
        while not self.stopping.wait(0.1):
            now = time.monotonic()
            for s in self.services:
                try:
                    if now >= due[id(s)]:
                        s.stop()
                        self.stopping.wait(random.uniform(0, 2))   # down for a moment, or not at all
                        s.start()
                        self.count("restarts")
                        due[id(s)] = time.monotonic() + random.uniform(lo, hi)
                    elif s.running() and random.random() < 0.5:
                        s.churn()
                except Exception as e:  # noqa: BLE001  (a service that just went, a mock's refusal)
                    if not s.running():
                        try:
                            s.start()
                        except Exception as e2:  # noqa: BLE001
                            print(f"soak: could not start {s.name}: {e2} (after {e})", flush=True)

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
        args = random.choice([["watch", ""], ["get", ""], ["call", "rpc.discover"], ["watch", "/power", "/network"]])
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
        self.stopping.wait(random.uniform(2, 10))

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

    def sample(self):
        pid = self.env.daemon.pid
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        # Client sockets come and go: what must stay flat is the fds less one per connected
        # client. The two are read a moment apart while clients connect and leave, so
        # the smallest of a few readings is taken.
        probe = self.env.client()
        best = None
        for _ in range(5):
            fds = len(os.listdir(f"/proc/{pid}/fd"))
            clients = probe.call("tree.get", {"path": "/daemon/clients"})["value"] - 1   # less the probe
            if best is None or fds - 1 - clients < best[2]:
                best = (fds, clients, fds - 1 - clients)
        probe.close()
        return (rss, *best)

    def run(self):
        minutes = self.args.minutes
        self.start()
        threads = [threading.Thread(target=self.chaos, daemon=True), threading.Thread(target=self.observer, daemon=True)]
        threads += [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(self.args.clients)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        # Every minute; a short run samples more often so that "flat" means something.
        every = 60 if minutes >= 3 else 10
        samples = []
        print("soak:  minute   RSS MiB   fds  clients  fds-less-clients", flush=True)
        while time.monotonic() - t0 < minutes * 60:
            time.sleep(min(every, max(0.1, t0 + minutes * 60 - time.monotonic())))
            if not self.qsd_alive():
                self.crashes += 1
                print(f"soak: qsd exited with {self.env.daemon.returncode}\n{self.env.qsd_log()[-4000:]}", flush=True)
                break
            try:
                rss, fds, clients, base = self.sample()
            except (OSError, RpcError, TimeoutError, ConnectionError) as e:
                self.error(f"sampling: {e}")
                continue
            samples.append((time.monotonic() - t0, rss, base))
            print(f"soak: {(time.monotonic() - t0) / 60:7.2f} {rss / 1024:9.2f} {fds:5d} {clients:8d} {base:17d}", flush=True)
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
        return self.report(samples, log)

    def report(self, samples, log):
        # Flat after the first minute. The heap grows to its working size while every kind of
        # client and every restart has come by at the same time; that can take another minute
        # or two. A leak does not stop growing: the second half of the run must not go above
        # the peak of the first half (after the first minute) by more than max(1 MiB, 10 %) of
        # RSS, or 2 fds. A run shorter than 3 minutes has too little to compare.
        after = [s for s in samples if s[0] >= 60 - 1]
        flat = True
        rss_note = fds_note = "n/a (run shorter than 3 minutes)"
        if self.args.minutes >= 3 and len(after) >= 2:
            half = len(after) // 2
            early, late = after[:max(1, half)], after[max(1, half):]
            peak_rss, peak_fds = max(r[1] for r in early), max(r[2] for r in early)
            late_rss, late_fds = max(r[1] for r in late), max(r[2] for r in late)
            flat = late_rss - peak_rss <= max(1024, peak_rss // 10) and late_fds <= peak_fds + 2
            rss_note = (f"{after[0][1] / 1024:.2f} at the first minute, peak {peak_rss / 1024:.2f} MiB in the first "
                        f"half, {late_rss / 1024:.2f} in the second")
            fds_note = f"{after[0][2]} at the first minute, peak {peak_fds} in the first half, {late_fds} in the second"
        c = self.counts
        print(f"soak: {self.args.minutes} min, {c['connections']} client connections ({c['killed']} killed mid-request, "
              f"{c['silent']} never reading, {c['garbage']} garbage), {c['calls']} calls ({c['rejected']} refused as "
              f"expected), {c['restarts']} service restarts, {c['checks']} mirror checks", flush=True)
        verdict = "" if rss_note.startswith("n/a") else ("; flat" if flat else "; NOT FLAT")
        print(f"soak: RSS {rss_note}; fds less client sockets {fds_note}{verdict}", flush=True)
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
