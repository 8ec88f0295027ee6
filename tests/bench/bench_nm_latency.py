#!/usr/bin/python3
"""NetworkManager latency: an access point's Strength PropertiesChanged on the bus -> the
tree.changed line at a qsd subscriber, side by side with a plain sd-bus listener receiving the
same signal, in one run.

One small C program (built here against libsystemd) is both the plain sd-bus listener (a match
on the AP's PropertiesChanged, parsing the Strength out of it) and the qsd subscriber (one
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
import qsdtest  # noqa: E402
from benchstat import percentile  # noqa: E402
from nmmock import AP, NmMock  # noqa: E402
from qsdtest import Env  # noqa: E402

LISTENER_C = r"""
#include <systemd/sd-bus.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int expected = -1;
static uint64_t t_bus, t_qsd, t_emit;

static int on_signal(sd_bus_message *m, void *ud, sd_bus_error *err) {
	uint64_t t = now_ns();
	const char *iface;
	(void)ud; (void)err;
	if (sd_bus_message_read(m, "s", &iface) < 0) return 0;
	if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return 0;
	while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
		const char *key;
		sd_bus_message_read(m, "s", &key);
		if (strcmp(key, "Strength") == 0) {
			uint8_t v;
			if (sd_bus_message_read(m, "v", "y", &v) >= 0 && v == expected && !t_bus) t_bus = t;
		} else {
			sd_bus_message_skip(m, "v");
		}
		sd_bus_message_exit_container(m);
	}
	return 0;
}

static int on_reply(sd_bus_message *m, void *ud, sd_bus_error *err) {
	(void)ud; (void)err;
	uint64_t t = 0;
	if (sd_bus_message_is_method_error(m, NULL)) { fprintf(stderr, "emit failed\n"); exit(1); }
	sd_bus_message_read(m, "t", &t);
	t_emit = t;
	return 0;
}

static char buf[1 << 20];
static size_t len;

static void read_lines(int fd, uint64_t t) {
	ssize_t n = recv(fd, buf + len, sizeof buf - len - 1, MSG_DONTWAIT);
	if (n == 0) { fprintf(stderr, "qsd closed\n"); exit(1); }
	if (n < 0) return;
	len += (size_t)n;
	buf[len] = 0;
	char *start = buf, *nl;
	while ((nl = strchr(start, '\n'))) {
		*nl = 0;
		char *v = strstr(start, "\"tree.changed\"") ? strstr(start, "\"value\":") : NULL;
		if (v) {
			double x = strtod(v + 8, NULL);
			if ((int)lround(x * 100) == expected && !t_qsd) t_qsd = t;
		}
		start = nl + 1;
	}
	len -= (size_t)(start - buf);
	memmove(buf, start, len);
}

int main(int argc, char **argv) {
	if (argc != 5) { fprintf(stderr, "usage: listener SOCKET AP_PATH TREE_PATH COUNT\n"); return 2; }
	const char *sock = argv[1], *ap = argv[2], *path = argv[3];
	int count = atoi(argv[4]);
	sd_bus *bus;
	if (sd_bus_open_system(&bus) < 0) { fprintf(stderr, "no bus\n"); return 1; }
	char rule[512];
	snprintf(rule, sizeof rule, "type='signal',sender='org.freedesktop.NetworkManager',"
	         "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='%s'", ap);
	if (sd_bus_add_match(bus, NULL, rule, on_signal, NULL) < 0) { fprintf(stderr, "match failed\n"); return 1; }

	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, sock, sizeof sa.sun_path - 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("connect"); return 1; }
	char req[1024];
	int n = snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tree.subscribe\",\"params\":{\"paths\":[\"%s\"]}}\n", path);
	if (write(fd, req, (size_t)n) != n) return 1;
	/* the answer (with the snapshot) is skipped by read_lines: it is not a tree.changed */

	for (int i = 0; i < count; ++i) {
		expected = 10 + (i % 80);
		t_bus = t_qsd = t_emit = 0;
		if (sd_bus_call_method_async(bus, NULL, "org.freedesktop.NetworkManager", ap, "org.freedesktop.DBus.Mock",
		                             "BenchStrength", on_reply, NULL, "y", (uint8_t)expected) < 0) return 1;
		uint64_t deadline = now_ns() + 2000000000u;
		while (!(t_bus && t_qsd && t_emit)) {
			while (sd_bus_process(bus, NULL) > 0) {}
			if (t_bus && t_qsd && t_emit) break;
			struct pollfd p[2] = {{.fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus)}, {.fd = fd, .events = POLLIN}};
			uint64_t now = now_ns();
			if (now > deadline) break;
			poll(p, 2, (int)((deadline - now) / 1000000u) + 1);
			if (p[1].revents & POLLIN) read_lines(fd, now_ns());
		}
		if (t_bus && t_qsd && t_emit) printf("%llu %llu %llu\n", (unsigned long long)t_emit, (unsigned long long)t_bus,
		                                     (unsigned long long)t_qsd);
		else printf("miss\n");
		fflush(stdout);
		usleep(2000);
	}
	return 0;
}
"""

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


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1"
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else (50 if quick else 2000)
    warmup = 10 if quick else 100
    env = Env()
    qsdtest.QSD = callgrind.wrap(qsdtest.QSD, env.dir)
    try:
        exe = os.path.join(env.dir, "nm-listener")
        src = exe + ".c"
        with open(src, "w") as f:
            f.write(LISTENER_C)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], check=True, capture_output=True,
                               text=True).stdout.split()
        subprocess.run(["cc", "-O2", "-o", exe, src, *flags, "-lm"], check=True)

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
        out = subprocess.run([exe, env.socket, ap, path, str(samples + warmup)], check=True, capture_output=True,
                             text=True, env=env.env, timeout=1800).stdout.split("\n")
        callgrind.stop(env.daemon.pid, env.dir, samples + warmup)
        rows = [line.split() for line in out if line and line != "miss"][warmup:]
        misses = sum(1 for line in out if line == "miss")
        bus = [(int(b) - int(e)) / 1000 for e, b, q in rows]
        qsd = [(int(q) - int(e)) / 1000 for e, b, q in rows]
        b50, b99, q50, q99 = percentile(bus, 50), percentile(bus, 99), percentile(qsd, 50), percentile(qsd, 99)
        print(f"NetworkManager latency, AP Strength PropertiesChanged -> receiver ({len(rows)} samples, {misses} missed)")
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
        subprocess.run(["cc", "-O2", "-o", relay, relay + ".c", *flags], check=True)
        sock = os.path.join(env.dir, "relay.sock")
        env.spawn([relay, sock, ap, path], "relay")
        qsdtest.wait_until(lambda: qsdtest.connectable(sock), 10, what="the relay's socket")
        out = subprocess.run([exe, sock, ap, path, str(samples + warmup)], check=True, capture_output=True,
                             text=True, env=env.env, timeout=1800).stdout.split("\n")
        rows = [line.split() for line in out if line and line != "miss"][warmup:]
        bus = [(int(b) - int(e)) / 1000 for e, b, q in rows]
        rel = [(int(q) - int(e)) / 1000 for e, b, q in rows]
        rb50, rb99, r50, r99 = percentile(bus, 50), percentile(bus, 99), percentile(rel, 50), percentile(rel, 99)
        print(f"  floor: a minimal C relay (the signal in, one line out, no tree), same listener, {len(rows)} samples:")
        print(f"    relay / sd-bus      : p50 {r50 / rb50:.2f}x   p99 {r99 / rb99:.2f}x   (its share: p50 {r50 - rb50:.1f} us)")
    finally:
        env.close()


if __name__ == "__main__":
    main()
