#!/usr/bin/python3
"""Bluetooth (BlueZ through python-dbusmock's bluez5 template, on a private system bus):

1. Latency: a device's RSSI PropertiesChanged on the bus -> the tree.changed line at a qsd
   subscriber, side by side with a plain sd-bus listener receiving the same signal, in one run.
   One small C program (built here against libsystemd) is both receivers in one poll loop, so
   both are timed by the same clock; the emission time comes from the mock itself (a method
   added to the device reads CLOCK_MONOTONIC, then emits PropertiesChanged, and returns it).
2. Memory: qsd's RSS and Pss with the bluetooth backend and BlueZ holding 2 adapters x 200
   devices, against the same qsd before the devices came.
3. Idle: qsd's context switches (every wakeup is one) over a window with those 400 devices and
   nothing discovering or changing. The target is 0: nothing is polled.

Usage: bench_bluetooth.py [SAMPLES]   (QSD_BIN selects the daemon, default build/daemon/qsd;
QSD_BENCH_QUICK=1: 50 samples, 40 devices, a 1 s window)
"""

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import callgrind  # noqa: E402
import qsdtest  # noqa: E402
from bluezmock import DEVICE, Bluez, dbus_mod  # noqa: E402
from qsdtest import Env  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]

LISTENER_C = r"""
#include <systemd/sd-bus.h>
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

static int expected;
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
		if (strcmp(key, "RSSI") == 0) {
			int16_t v;
			if (sd_bus_message_read(m, "v", "n", &v) >= 0 && v == expected && !t_bus) t_bus = t;
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
		if (v && atoi(v + 8) == expected && !t_qsd) t_qsd = t;
		start = nl + 1;
	}
	len -= (size_t)(start - buf);
	memmove(buf, start, len);
}

int main(int argc, char **argv) {
	if (argc != 5) { fprintf(stderr, "usage: listener SOCKET DEVICE_PATH TREE_PATH COUNT\n"); return 2; }
	const char *sock = argv[1], *dev = argv[2], *path = argv[3];
	int count = atoi(argv[4]);
	sd_bus *bus;
	if (sd_bus_open_system(&bus) < 0) { fprintf(stderr, "no bus\n"); return 1; }
	char rule[512];
	snprintf(rule, sizeof rule, "type='signal',sender='org.bluez',"
	         "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='%s'", dev);
	if (sd_bus_add_match(bus, NULL, rule, on_signal, NULL) < 0) { fprintf(stderr, "match failed\n"); return 1; }

	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, sock, sizeof sa.sun_path - 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("connect"); return 1; }
	char req[1024];
	int n = snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tree.subscribe\",\"params\":{\"paths\":[\"%s\"]}}\n", path);
	if (write(fd, req, (size_t)n) != n) return 1;

	for (int i = 0; i < count; ++i) {
		expected = -30 - (i % 60);
		t_bus = t_qsd = t_emit = 0;
		if (sd_bus_call_method_async(bus, NULL, "org.bluez", dev, "org.qsd.Test", "BenchRssi", on_reply, NULL, "n",
		                             (int16_t)expected) < 0) return 1;
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

EMIT = """
import time
t = time.monotonic_ns()
self.UpdateProperties('org.bluez.Device1', {'RSSI': dbus.Int16(args[0])})
ret = dbus.UInt64(t)
"""

# Devices added inside the mock, in one call (one InterfacesAdded each, as BlueZ sends them).
ADD_MANY = """
for i in range(args[1]):
    self.AddDevice(args[0], '10:00:00:%02X:%02X:%02X' % (args[2], i // 256, i % 256), 'Device %d' % i)
"""


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def memory(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                out["rss"] = int(line.split()[1])
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                out["pss"] = int(line.split()[1])
    return out


def switches(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                    total += int(line.split()[1])
    return total


def latency(samples, warmup):
    env = Env()
    qsdtest.QSD = callgrind.wrap(qsdtest.QSD, env.dir)
    try:
        env.env["QSD_RFKILL"] = os.path.join(env.dir, "no-rfkill")
        exe = os.path.join(env.dir, "bt-listener")
        with open(exe + ".c", "w") as f:
            f.write(LISTENER_C)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], check=True, capture_output=True,
                               text=True).stdout.split()
        subprocess.run(["cc", "-O2", "-o", exe, exe + ".c", *flags], check=True)
        bz = Bluez(env, ["hci0"])
        dev = bz.add_device()
        bz.control(dev).AddMethod("org.qsd.Test", "BenchRssi", "n", "t", EMIT)
        env.start_qsd(backends=["bluetooth"], debug_api=False)
        c = env.client()
        path = f"/bluetooth/devices/{Bluez.device_key()}/rssi"
        sub = c.subscribe(["/bluetooth"])
        c.wait_value(sub, path, -79)
        c.close()
        callgrind.start(env.daemon.pid)
        out = subprocess.run([exe, env.socket, dev, path, str(samples + warmup)], check=True, capture_output=True,
                             text=True, env=env.env, timeout=1800).stdout.split("\n")
        callgrind.stop(env.daemon.pid, env.dir, samples + warmup)
        rows = [line.split() for line in out if line and line != "miss"][warmup:]
        misses = sum(1 for line in out if line == "miss")
        bus = [(int(b) - int(e)) / 1000 for e, b, q in rows]
        qsd = [(int(q) - int(e)) / 1000 for e, b, q in rows]
        b50, b99, q50, q99 = pct(bus, 50), pct(bus, 99), pct(qsd, 50), pct(qsd, 99)
        print(f"# Latency, a device's RSSI PropertiesChanged -> receiver ({len(rows)} samples, {misses} missed)")
        print(f"  plain sd-bus listener : p50 {b50:8.1f} us   p99 {b99:8.1f} us   mean {statistics.mean(bus):.1f} us")
        print(f"  qsd tree.changed line : p50 {q50:8.1f} us   p99 {q99:8.1f} us   mean {statistics.mean(qsd):.1f} us")
        print(f"  ratio qsd / sd-bus    : p50 {q50 / b50:.2f}x (target <= 1.2x)   p99 {q99 / b99:.2f}x (target <= 1.5x)")
        print(f"  qsd's own share       : p50 {q50 - b50:.1f} us   p99 {q99 - b99:.1f} us")
    finally:
        env.close()


def memory_and_idle(per_adapter, window):
    env = Env()
    try:
        env.env["QSD_RFKILL"] = os.path.join(env.dir, "no-rfkill")
        bz = Bluez(env, ["hci0", "hci1"])
        bz.control("/").AddMethod("org.qsd.Test", "AddMany", "suy", "", ADD_MANY)
        env.start_qsd(backends=["bluetooth"], debug_api=False)
        c = env.client()
        sub = c.subscribe(["/bluetooth"])
        c.wait_value(sub, "/bluetooth/agent/isDefault", True)
        pid = env.daemon.pid
        before = memory(pid)
        many = dbus_mod().Interface(bz.root, "org.qsd.Test")
        for n, adapter in enumerate(("hci0", "hci1")):
            many.AddMany(adapter, dbus_mod().UInt32(per_adapter), dbus_mod().Byte(n), timeout=600)
        total = 2 * per_adapter
        c.wait_for(lambda: len(c.mirror(sub)["bluetooth"]["devices"]) == total, timeout=120, what=f"{total} devices")
        # One change after all of them: the backend has handled every signal before it.
        last = Bluez.device_path("10:00:00:01:%02X:%02X" % ((per_adapter - 1) // 256, (per_adapter - 1) % 256), "hci1")
        bz.update(last, DEVICE, {"RSSI": dbus_mod().Int16(-42)})
        key = last.split("/")[-1][4:]
        c.wait_value(sub, f"/bluetooth/devices/hci1_{key}/rssi", -42)
        after = memory(pid)
        print(f"# Memory, qsd with the bluetooth backend alone (KiB)")
        print(f"  2 adapters, no devices    : RSS {before['rss']:6d}   Pss {before['pss']:6d}")
        print(f"  2 adapters x {per_adapter} devices : RSS {after['rss']:6d}   Pss {after['pss']:6d}"
              f"   (+{(after['rss'] - before['rss']) / total:.2f} KiB RSS per device)")
        # Idle: nothing discovering, nothing changing (after the last answer has been written).
        time.sleep(0.5)
        s0 = switches(pid)
        time.sleep(window)
        s1 = switches(pid)
        print(f"# Idle, {total} devices, nothing discovering: {s1 - s0} context switches of qsd in {window:.0f} s"
              f" (target 0)")
        c.close()
    finally:
        env.close()


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1"
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else (50 if quick else 2000)
    latency(samples, 10 if quick else 100)
    memory_and_idle(20 if quick else 200, 1.0 if quick else 10.0)


if __name__ == "__main__":
    main()
