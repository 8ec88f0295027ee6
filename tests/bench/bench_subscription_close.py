#!/usr/bin/python3
"""Subscriptions of one filter coming and going: what qsd's loop spends when N connections, each
with 64 subscriptions of the same path (one filter group of N x 64 members), subscribe and then
all close. Prints, per N, qsd's CPU time (from /proc/<pid>/schedstat) for the subscriptions and
for the closes, in all and per subscription. A cost per subscription that grows with N is a cost
that grows faster than the number of subscribers (closing used to be quadratic: docs/
performance.md, "Fan-out latency").

Usage: bench_subscription_close.py [N...]   (default 64 256 900; QSD_BIN selects the daemon;
QSD_BENCH_QUICK=1: 16 and 64)
"""

import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import qsdtest  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]
QUICK = os.environ.get("QSD_BENCH_QUICK") == "1" or "--quick" in sys.argv
PER_CONNECTION = 64


def cpu_ms(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e6


def batch(client, requests, timeout=120):
    client.send_raw(json.dumps(requests) + "\n")
    deadline = time.monotonic() + timeout
    while True:
        message = client.read_line(deadline - time.monotonic())
        if isinstance(message, list):
            return message
        client._handle(message)


def main():
    sizes = [int(a) for a in sys.argv[1:] if not a.startswith("-")] or ([16, 64] if QUICK else [64, 256, 900])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, max(sizes) + 256)), hard))
    env = qsdtest.Env(buses=False)
    try:
        env.start_qsd("--max-clients", str(max(sizes) + 16), backends=[])
        pid = env.daemon.pid
        probe = env.client()
        probe.call("debug.set", {"path": "/debug/close/x", "value": 0})
        print("# N connections x 64 subscriptions of one path, then every connection closed: qsd's CPU")
        print(f"{'connections':>11} {'subscriptions':>13} {'subscribe ms':>12} {'us/sub':>7} {'close ms':>9} {'us/sub':>7}")
        for n in sizes:
            before = cpu_ms(pid)
            clients = []
            for _ in range(n):
                c = env.client()
                clients.append(c)
                answers = batch(c, [{"jsonrpc": "2.0", "id": i, "method": "tree.subscribe",
                                     "params": {"paths": ["/debug/close"]}} for i in range(PER_CONNECTION)])
                assert all("result" in a for a in answers), answers[:2]
            subscribed = cpu_ms(pid)
            for c in clients:
                c.close()
            # Every close handled: the server counts the connections (rpc.discover would not).
            qsdtest.wait_until(lambda: probe.call("tree.get", {"path": "/daemon/clients"})["value"] == 1, 60,
                               what="every connection closed")
            closed = cpu_ms(pid)
            subs = n * PER_CONNECTION
            print(f"{n:>11} {subs:>13} {subscribed - before:>12.0f} {(subscribed - before) / subs * 1000:>7.1f} "
                  f"{closed - subscribed:>9.0f} {(closed - subscribed) / subs * 1000:>7.1f}", flush=True)
        probe.close()
    finally:
        env.close()


if __name__ == "__main__":
    main()
