#!/usr/bin/python3
"""NetworkManager latency: an access point's Strength PropertiesChanged on the bus -> the
tree.changed line at a qsd subscriber, side by side with a plain sd-bus listener receiving the
same signal, in one run.

One small C program (tests/bench/listener.c) is both the plain sd-bus listener (a match on the
AP's PropertiesChanged, parsing the Strength out of it) and the qsd subscriber (one
subscription to that AP's strength field), in one poll loop, so both are timed by the same
clock and the same process. The signal's emission time comes from the mock itself: a method
added to python-dbusmock's AP object reads CLOCK_MONOTONIC, then emits the PropertiesChanged,
and returns that time. Latency = receipt - emission, for each of the two receivers.

Usage: bench_nm_latency.py [SAMPLES]   (QSD_BIN selects the daemon, default build/daemon/qsd;
QSD_BENCH_QUICK=1 takes 50 samples)
Prints p50 and p99 of both and their ratios (targets in docs/performance.md: p50 <= 1.2x, p99 <= 1.5x),
then the same for a minimal C relay (RELAY_C) in qsd's place: the floor any relaying daemon
starts from on this machine.
"""

import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import callgrind  # noqa: E402
import listener  # noqa: E402
import qsdtest  # noqa: E402
from benchstat import percentile  # noqa: E402
from nmmock import NmMock  # noqa: E402
from qsdtest import Env  # noqa: E402

# The floor under any relaying daemon on this machine: a C program that does nothing but turn
# the AP's PropertiesChanged into a tree.changed-shaped line for its socket clients. Measured with
# the same listener as qsd, its ratio is what the bus hop, the second process and the listener's
# second wake-up cost by themselves; qsd's own work is what its ratio adds to that.
RELAY_C = r"""
/* The least a relay can do: a D-Bus signal in, a line out to every socket client. */
#define _GNU_SOURCE
#include <systemd/sd-bus.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
static int clients[64], nclients;
static const char *tree_path;
static unsigned long long rev;
static int on_signal(sd_bus_message *m, void *ud, sd_bus_error *err) {
	const char *iface; (void)ud; (void)err;
	if (sd_bus_message_read(m, "s", &iface) < 0) return 0;
	if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return 0;
	while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
		const char *key; sd_bus_message_read(m, "s", &key);
		if (strcmp(key, "Strength") == 0) {
			uint8_t v;
			if (sd_bus_message_read(m, "v", "y", &v) >= 0) {
				char line[1024];
				int n = snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"method\":\"tree.changed\",\"params\":{\"changes\":[{\"op\":\"replace\",\"path\":\"%s\",\"value\":%.2f}],\"revision\":%llu,\"subscription\":1}}\n", tree_path, v / 100.0, ++rev);
				for (int i = 0; i < nclients; ++i) send(clients[i], line, n, MSG_DONTWAIT | MSG_NOSIGNAL);
			}
		} else sd_bus_message_skip(m, "v");
		sd_bus_message_exit_container(m);
	}
	return 0;
}
int main(int argc, char **argv) {
	const char *sock = argv[1], *ap = argv[2]; tree_path = argv[3];
	sd_bus *bus; if (sd_bus_open_system(&bus) < 0) return 1;
	char rule[512];
	snprintf(rule, sizeof rule, "type='signal',sender='org.freedesktop.NetworkManager',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='%s'", ap);
	if (sd_bus_add_match(bus, NULL, rule, on_signal, NULL) < 0) return 1;
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX}; strncpy(sa.sun_path, sock, sizeof sa.sun_path - 1);
	unlink(sock); if (bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 8) < 0) return 1;
	for (;;) {
		while (sd_bus_process(bus, NULL) > 0) {}
		struct pollfd p[66]; int n = 0;
		p[n++] = (struct pollfd){.fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus)};
		p[n++] = (struct pollfd){.fd = ls, .events = POLLIN};
		for (int i = 0; i < nclients; ++i) p[n++] = (struct pollfd){.fd = clients[i], .events = POLLIN};
		poll(p, n, -1);
		if (p[1].revents & POLLIN) { int c = accept4(ls, NULL, NULL, SOCK_NONBLOCK); if (c >= 0 && nclients < 64) clients[nclients++] = c; }
		for (int i = 0; i < nclients; ++i) if (p[2 + i].revents) { char b[4096]; ssize_t r = recv(clients[i], b, sizeof b, 0); if (r == 0) { close(clients[i]); clients[i] = clients[--nclients]; --i; } }
	}
}
"""

EMIT = """
import time
t = time.monotonic_ns()
self.UpdateProperties('org.freedesktop.NetworkManager.AccessPoint', {'Strength': dbus.Byte(args[0])})
ret = dbus.UInt64(t)
"""


def listener_args(socket, ap, path):
    """The listener's options for the AP's Strength, through qsd or the relay at socket."""
    return ["--system", "--match", "type='signal',sender='org.freedesktop.NetworkManager',"
            f"interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='{ap}'",
            "--property", "Strength:y", "--tree-scale", "100",
            "--call", "org.freedesktop.NetworkManager", ap, "org.freedesktop.DBus.Mock", "BenchStrength", "y",
            "--values", "10:1:80", socket, path]


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1"
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else (50 if quick else 2000)
    warmup = 10 if quick else 100
    env = Env()
    qsdtest.QSD = callgrind.wrap(qsdtest.QSD, env.dir)
    try:
        exe = listener.executable(env.dir)

        m = NmMock(env)
        w = m.add_wifi("wlan0")
        ap = m.add_ap(w, "ap_bench", "Bench", "00:11:22:33:44:55", strength=50)
        m.iface(ap).AddMethod("org.freedesktop.DBus.Mock", "BenchStrength", "y", "t", EMIT)
        env.start_qsd(backends=["nm"], debug_api=False)
        c = env.client()
        path = "/network/devices/wlan0/networks/Bench/accessPoints/00:11:22:33:44:55/strength"
        sub = c.subscribe(["/network"])
        c.wait_value(sub, path, 0.5)
        c.close()

        callgrind.start(env.daemon.pid)
        bus, qsd, misses = listener.run(exe, listener_args(env.socket, ap, path), samples + warmup, warmup, env.env)
        callgrind.stop(env.daemon.pid, env.dir, samples + warmup)
        b50, b99, q50, q99 = percentile(bus, 50), percentile(bus, 99), percentile(qsd, 50), percentile(qsd, 99)
        print(f"NetworkManager latency, AP Strength PropertiesChanged -> receiver ({len(qsd)} samples, {misses} missed)")
        print(f"  plain sd-bus listener : p50 {b50:8.1f} us   p99 {b99:8.1f} us   mean {statistics.mean(bus):.1f} us")
        print(f"  qsd tree.changed line : p50 {q50:8.1f} us   p99 {q99:8.1f} us   mean {statistics.mean(qsd):.1f} us")
        print(f"  ratio qsd / sd-bus    : p50 {q50 / b50:.2f}x (target <= 1.2x)   p99 {q99 / b99:.2f}x (target <= 1.5x)")
        print(f"  qsd's own share       : p50 {q50 - b50:.1f} us   p99 {q99 - b99:.1f} us")
        if callgrind.ENABLED:
            return
        # qsd stops first: it would take its share of the two cores from the relay's samples.
        env.stop_qsd()
        relay = os.path.join(env.dir, "relay")
        with open(relay + ".c", "w") as f:
            f.write(RELAY_C)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], check=True, capture_output=True,
                               text=True).stdout.split()
        subprocess.run(["cc", "-O2", "-o", relay, relay + ".c", *flags], check=True)
        sock = os.path.join(env.dir, "relay.sock")
        env.spawn([relay, sock, ap, path], "relay")
        qsdtest.wait_until(lambda: qsdtest.connectable(sock), 10, what="the relay's socket")
        bus, rel, _ = listener.run(exe, listener_args(sock, ap, path), samples + warmup, warmup, env.env)
        rb50, rb99, r50, r99 = percentile(bus, 50), percentile(bus, 99), percentile(rel, 50), percentile(rel, 99)
        print(f"  floor: a minimal C relay (the signal in, one line out, no tree), same listener, {len(rel)} samples:")
        print(f"    relay / sd-bus      : p50 {r50 / rb50:.2f}x   p99 {r99 / rb99:.2f}x   (its share: p50 {r50 - rb50:.1f} us)")
    finally:
        env.close()


if __name__ == "__main__":
    main()
