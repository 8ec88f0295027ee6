#!/usr/bin/python3
"""Tray: (1) latency from an item's NewIcon signal to the tree.changed line at a qsd subscriber,
(2) qsd's RSS with 50 items, each with a 100-entry DBusMenu (and with 10 items of 15 entries).

(1) A test item (tests/integration/tray_item.py) changes its icon and emits NewIcon in its
BenchIcon method, which returns CLOCK_MONOTONIC read just before the emission. One small C
program (built here against libsystemd) is both a qsd subscriber (to the item's `icon` field,
timestamping the tree.changed line) and, for comparison, a plain sd-bus host doing what any host
must after NewIcon: it catches the signal and re-reads IconName, IconPixmap and IconThemePath
with three asynchronous Gets, timestamping the last answer. qsd does the same three Gets (the
Python item answers both), then resolves the icon and publishes. Two kinds:
  name    IconName alternates between two icons of a private theme tree (a theme lookup)
  pixmap  a new 32x32 IconPixmap each time (ARGB -> RGBA, hash, PNG written, old file deleted)
The test environment (and so $XDG_RUNTIME_DIR, where the PNG files go) is put on /dev/shm when
there is one: a session's $XDG_RUNTIME_DIR is a tmpfs, and creating files on a disk file system
would measure its journal instead.
(2) One process serves 50 items registered by object path, each with a 32x32 pixmap and a flat
100-entry menu; RSS is read from /proc before the items and once all 50 are in the tree.

Usage: bench_tray.py [SAMPLES]   (default 500; 50 with QSD_BENCH_QUICK=1 or --quick; QSD_BIN selects the daemon)
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import callgrind  # noqa: E402
import qsdtest  # noqa: E402
from benchstat import percentile  # noqa: E402
import trayutil  # noqa: E402
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

static const char *dest, *path;
static int pending;
static uint64_t t_bus, t_qsd, t_emit;

static int on_get(sd_bus_message *m, void *ud, sd_bus_error *e) {
	(void)m; (void)ud; (void)e;
	if (--pending == 0) t_bus = now_ns();
	return 0;
}

static int host_mode;

static int on_signal(sd_bus_message *m, void *ud, sd_bus_error *e) {
	(void)e;
	sd_bus *bus = ud;
	const char *props[] = {"IconName", "IconPixmap", "IconThemePath"};
	if (!host_mode || t_bus || pending) return 0;
	pending = 3;
	for (int i = 0; i < 3; ++i)
		sd_bus_call_method_async(bus, NULL, sd_bus_message_get_sender(m), path, "org.freedesktop.DBus.Properties", "Get",
		                         on_get, NULL, "ss", "org.kde.StatusNotifierItem", props[i]);
	return 0;
}

static int on_reply(sd_bus_message *m, void *ud, sd_bus_error *e) {
	(void)ud; (void)e;
	uint64_t t = 0;
	if (sd_bus_message_is_method_error(m, NULL)) { fprintf(stderr, "BenchIcon failed\n"); exit(1); }
	sd_bus_message_read(m, "t", &t);
	t_emit = t;
	return 0;
}

static char buf[1 << 20];
static size_t len;

static void read_lines(int fd) {
	ssize_t n = recv(fd, buf + len, sizeof buf - len - 1, MSG_DONTWAIT);
	uint64_t t = now_ns();
	if (n == 0) { fprintf(stderr, "qsd closed\n"); exit(1); }
	if (n < 0) return;
	len += (size_t)n;
	buf[len] = 0;
	char *start = buf, *nl;
	while ((nl = strchr(start, '\n'))) {
		*nl = 0;
		if (strstr(start, "\"tree.changed\"") && !t_qsd) t_qsd = t;
		start = nl + 1;
	}
	len -= (size_t)(start - buf);
	memmove(buf, start, len);
}

int main(int argc, char **argv) {
	if (argc != 6) { fprintf(stderr, "usage: listener SOCKET SERVICE ITEM_PATH TREE_PATH COUNT\n"); return 2; }
	const char *sock = argv[1], *tree = argv[4];
	dest = argv[2]; path = argv[3];
	int count = atoi(argv[5]);
	sd_bus *bus;
	if (sd_bus_open_user(&bus) < 0) { fprintf(stderr, "no bus\n"); return 1; }
	char rule[512];
	snprintf(rule, sizeof rule, "type='signal',interface='org.kde.StatusNotifierItem',member='NewIcon',path='%s'", path);
	if (sd_bus_add_match(bus, NULL, rule, on_signal, bus) < 0) { fprintf(stderr, "match failed\n"); return 1; }
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, sock, sizeof sa.sun_path - 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("connect"); return 1; }
	char req[1024];
	int n = snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tree.subscribe\",\"params\":{\"paths\":[\"%s\"]}}\n", tree);
	if (write(fd, req, (size_t)n) != n) return 1;
	for (int i = 0; i < count; ++i) {
		t_bus = t_qsd = t_emit = 0;
		pending = 0;
		host_mode = i % 2 == 0;
		if (sd_bus_call_method_async(bus, NULL, dest, path, "org.qsdtest.Control", "BenchIcon", on_reply, NULL, "u",
		                             (uint32_t)i) < 0) return 1;
		uint64_t deadline = now_ns() + 5000000000u;
		while (!((t_bus || !host_mode) && t_qsd && t_emit)) {
			while (sd_bus_process(bus, NULL) > 0) {}
			if ((t_bus || !host_mode) && t_qsd && t_emit) break;
			struct pollfd p[2] = {{.fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus)}, {.fd = fd, .events = POLLIN}};
			uint64_t now = now_ns();
			if (now > deadline) break;
			poll(p, 2, (int)((deadline - now) / 1000000u) + 1);
			if (p[1].revents & POLLIN) read_lines(fd);
		}
		if ((t_bus || !host_mode) && t_qsd && t_emit)
			printf("%s %llu %llu\n", host_mode ? "bus" : "qsd", (unsigned long long)t_emit,
			       (unsigned long long)(host_mode ? t_bus : t_qsd));
		else printf("miss\n");
		fflush(stdout);
		usleep(2000);
	}
	return 0;
}
"""


def build_listener(env):
    exe = os.path.join(env.dir, "tray-listener")
    with open(exe + ".c", "w") as f:
        f.write(LISTENER_C)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], check=True, capture_output=True,
                           text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", exe, exe + ".c", *flags], check=True)
    return exe


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def latency(env, exe, kind, samples, warmup):
    name = f"org.qsdtest.Bench{kind.capitalize()}"
    theme = os.path.join(env.dir, "bench-theme")
    for i, colour in enumerate([(200, 0, 0, 255), (0, 0, 200, 255)]):
        trayutil.write_png(os.path.join(theme, "hicolor", "64x64", "apps", f"qsd-bench-{i}.png"), 64, 64, colour)
    props = {"Id": name, "Status": "Active", "IconThemePath": theme}
    if kind == "name":
        props["IconName"] = "qsd-bench-1"
    else:
        props["IconPixmap"] = [[32, 32, [1, 2, 3, 255]]]
    trayutil.start_items(env, [{"register": "name", "name": name, "bench": kind, "props": props}])
    key = name + "/StatusNotifierItem"
    c = env.client()
    sub = c.subscribe(["/tray"])
    c.wait_for(lambda: key in c.mirror(sub)["tray"]["items"], what="bench item")
    c.close()
    tree = "/tray/items/" + key.replace("~", "~0").replace("/", "~1") + "/icon"
    callgrind.start(env.daemon.pid)
    out = subprocess.run([exe, env.socket, name, "/StatusNotifierItem", tree, str(2 * samples + warmup)], check=True,
                         capture_output=True, text=True, env=env.env, timeout=1800).stdout.split("\n")
    callgrind.stop(env.daemon.pid, env.dir, 2 * samples + warmup)
    rows = [line.split() for line in out if line and line != "miss"][warmup:]
    missed = sum(1 for line in out if line == "miss")
    bus = [(int(t) - int(e)) / 1000 for k, e, t in rows if k == "bus"]
    qsd = [(int(t) - int(e)) / 1000 for k, e, t in rows if k == "qsd"]
    return bus, qsd, missed


def rss(env, count, entries):
    env.stop_qsd()
    env.start_qsd(backends=["tray"], debug_api=False)
    c = env.client()
    sub = c.subscribe(["/tray/available"])
    c.wait_value(sub, "/tray/available", True)
    time.sleep(0.5)
    before = rss_kib(env.daemon.pid)
    cfg = [{"register": "path", "path": f"/item/{i}", "menu": entries,
            "props": {"Id": f"bench-{i}", "Title": f"Item {i}", "Status": "Active",
                      "IconPixmap": [[32, 32, [i, 100, 200, 255]]]}} for i in range(count)]
    t0 = time.monotonic()
    items = trayutil.start_items(env, cfg, log="rss-items")
    sub2 = c.subscribe(["/tray/items"])

    def complete():
        got = c.mirror(sub2).get("tray", {}).get("items", {})
        return len(got) == count and all(len(i["menu"]["children"]) == entries for i in got.values())

    c.wait_for(complete, timeout=120, what="all items with their menus")
    elapsed = time.monotonic() - t0
    time.sleep(0.5)
    after = rss_kib(env.daemon.pid)
    icons = len(os.listdir(os.path.join(env.run, "qsd", "icons")))
    size = len(json.dumps(c.call("tree.get", {"path": "/tray"})["value"]))
    print(f"Tray RSS, {count} items x {entries}-entry menu (one process serving them, registered by path)")
    print(f"  qsd RSS before items : {before} KiB")
    print(f"  qsd RSS with items   : {after} KiB  (+{after - before} KiB, {(after - before) / count:.1f} KiB per item)")
    print(f"  /tray as JSON        : {size / 1024:.0f} KiB; icon files: {icons}; all in the tree {elapsed:.2f} s after start")
    c.close()
    items.terminate()
    items.wait(10)


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1" or "--quick" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    samples = int(args[0]) if args else (50 if quick else 500)
    warmup = 5 if quick else 50
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        tempfile.tempdir = "/dev/shm"
    env = Env()
    qsdtest.QSD = callgrind.wrap(qsdtest.QSD, env.dir)
    try:
        env.start_qsd(backends=["tray"], debug_api=False)
        c = env.client()
        sub = c.subscribe(["/tray"])
        c.wait_value(sub, "/tray/available", True)
        c.close()
        exe = build_listener(env)
        print(f"Tray latency, item NewIcon -> the new icon, {samples} samples each")
        for kind in ("name", "pixmap"):
            bus, qsd, missed = latency(env, exe, kind, samples, warmup)
            print(f"  {kind}: ({missed} missed)")
            print(f"    plain sd-bus host, 3 Gets answered : p50 {percentile(bus, 50):8.1f} us   p90 {percentile(bus, 90):8.1f} us"
                  f"   p99 {percentile(bus, 99):8.1f} us   mean {statistics.mean(bus):.1f} us")
            print(f"    qsd tree.changed line              : p50 {percentile(qsd, 50):8.1f} us   p90 {percentile(qsd, 90):8.1f} us"
                  f"   p99 {percentile(qsd, 99):8.1f} us   mean {statistics.mean(qsd):.1f} us")
            print(f"    ratio qsd / plain host             : p50 {percentile(qsd, 50) / percentile(bus, 50):.2f}x   p99 "
                  f"{percentile(qsd, 99) / percentile(bus, 99):.2f}x")

        # RSS: a fresh daemon per case, so the latency runs do not count.
        cases = [(10, 15), (10, 100)] if quick else [(10, 15), (50, 100)]
        for count, entries in cases:
            rss(env, count, entries)
    finally:
        env.close()


if __name__ == "__main__":
    main()
