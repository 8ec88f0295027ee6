#!/usr/bin/python3
"""MPRIS: (1) latency from a player's PropertiesChanged(PlaybackStatus) to the tree.changed line
at a qsd subscriber, against the same signal's delivery to a plain sd-bus listener; (2) qsd's
idle wakeups over 10 s with two real players playing (the position is not pushed: 0 expected).

(1) The test player (tests/integration/mpris_player.py) toggles its PlaybackStatus in its Emit
method, which returns CLOCK_MONOTONIC read just before the emission. One small C program (built
here against libsystemd) is both a qsd subscriber to the player's playbackStatus, timestamping
the tree.changed line, and a plain sd-bus listener with a match on the same PropertiesChanged,
timestamping its delivery; both get every signal, so each sample has both figures. Prints p50
and p99 of each and their ratios (DESIGN.md target: p50 <= 1.2x, p99 <= 1.5x the listener's).
(2) Two mpv players with mpv-mpris (--no-video --ao=null) play; after a settling second the
context switches of every qsd thread are counted over 10 s (/proc/<pid>/task/*/status), with one
whole-tree subscriber connected.

Usage: bench_mpris.py [SAMPLES]   (default 1000; 100 with QSD_BENCH_QUICK=1 or --quick; QSD_BIN selects the daemon)
"""

import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("QSD_BIN", os.path.join(HERE, "..", "..", "build", "daemon", "qsd"))

import callgrind  # noqa: E402
import mprisutil  # noqa: E402
import qsdtest  # noqa: E402
from qsdtest import Env, wait_until  # noqa: E402

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

static uint64_t t_bus, t_qsd, t_emit;

static int on_signal(sd_bus_message *m, void *ud, sd_bus_error *e) {
	(void)m; (void)ud; (void)e;
	if (!t_bus) t_bus = now_ns();
	return 0;
}

static int on_reply(sd_bus_message *m, void *ud, sd_bus_error *e) {
	(void)ud; (void)e;
	int64_t t = 0;
	if (sd_bus_message_is_method_error(m, NULL)) { fprintf(stderr, "Emit failed\n"); exit(1); }
	sd_bus_message_read(m, "x", &t);
	t_emit = (uint64_t)t;
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
	if (argc != 5) { fprintf(stderr, "usage: listener SOCKET SERVICE TREE_PATH COUNT\n"); return 2; }
	const char *sock = argv[1], *dest = argv[2], *tree = argv[3];
	int count = atoi(argv[4]);
	sd_bus *bus;
	if (sd_bus_open_user(&bus) < 0) { fprintf(stderr, "no bus\n"); return 1; }
	if (sd_bus_match_signal(bus, NULL, NULL, "/org/mpris/MediaPlayer2", "org.freedesktop.DBus.Properties",
	                        "PropertiesChanged", on_signal, NULL) < 0) { fprintf(stderr, "match failed\n"); return 1; }
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, sock, sizeof sa.sun_path - 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("connect"); return 1; }
	char req[1024];
	int n = snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tree.subscribe\",\"params\":{\"paths\":[\"%s\"]}}\n", tree);
	if (write(fd, req, (size_t)n) != n) return 1;
	for (int i = 0; i < count; ++i) {
		t_bus = t_qsd = t_emit = 0;
		if (sd_bus_call_method_async(bus, NULL, dest, "/org/mpris/MediaPlayer2", "org.qsdtest.Control", "Emit", on_reply,
		                             NULL, "i", 1) < 0) return 1;
		uint64_t deadline = now_ns() + 5000000000u;
		while (!(t_bus && t_qsd && t_emit)) {
			while (sd_bus_process(bus, NULL) > 0) {}
			if (t_bus && t_qsd && t_emit) break;
			struct pollfd p[2] = {{.fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus)}, {.fd = fd, .events = POLLIN}};
			uint64_t now = now_ns();
			if (now > deadline) break;
			poll(p, 2, (int)((deadline - now) / 1000000u) + 1);
			if (p[1].revents & POLLIN) read_lines(fd);
		}
		if (t_bus && t_qsd && t_emit)
			printf("%llu %llu %llu\n", (unsigned long long)t_emit, (unsigned long long)t_bus, (unsigned long long)t_qsd);
		else printf("miss\n");
		fflush(stdout);
		usleep(2000);
	}
	return 0;
}
"""


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def cpu_ns(pid):
    """CPU time of every thread of pid, from /proc/<pid>/task/*/schedstat (ns)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def switches(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def build_listener(env):
    exe = os.path.join(env.dir, "mpris-listener")
    with open(exe + ".c", "w") as f:
        f.write(LISTENER_C)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsystemd"], check=True, capture_output=True,
                           text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", exe, exe + ".c", *flags], check=True)
    return exe


def latency(env, samples, warmup):
    name = "org.mpris.MediaPlayer2.bench"
    player = mprisutil.start_player(env, {"name": name})
    c = env.client()
    sub = c.subscribe(["/media/players"])
    c.wait_for(lambda: "bench" in c.mirror(sub)["media"]["players"], what="the bench player")
    c.close()
    exe = build_listener(env)
    callgrind.start(env.daemon.pid)
    cpu0 = cpu_ns(env.daemon.pid)
    out = subprocess.run([exe, env.socket, name, "/media/players/bench/playbackStatus", str(samples + warmup)], check=True,
                         capture_output=True, text=True, env=env.env, timeout=1800).stdout.split("\n")
    cpu = (cpu_ns(env.daemon.pid) - cpu0) / (samples + warmup) / 1000
    rows = [line.split() for line in out if line and line != "miss"][warmup:]
    missed = sum(1 for line in out if line == "miss")
    bus = [(int(b) - int(e)) / 1000 for e, b, q in rows]
    qsd = [(int(q) - int(e)) / 1000 for e, b, q in rows]
    print(f"PropertiesChanged(PlaybackStatus) -> delivery, {len(rows)} samples ({missed} missed), µs:")
    print(f"  {'':<28} {'p50':>8} {'p99':>8}")
    print(f"  {'plain sd-bus listener':<28} {pct(bus, 50):8.0f} {pct(bus, 99):8.0f}")
    print(f"  {'qsd tree.changed line':<28} {pct(qsd, 50):8.0f} {pct(qsd, 99):8.0f}")
    print(f"  ratio qsd / listener: p50 {pct(qsd, 50) / pct(bus, 50):.2f}x, p99 {pct(qsd, 99) / pct(bus, 99):.2f}x "
          f"(target 1.2x / 1.5x)")
    print(f"  qsd CPU per signal (schedstat, with its Position reads): {cpu:.0f} µs")
    callgrind.stop(env.daemon.pid, env.dir, samples + warmup)
    player.terminate()
    player.wait(10)


def idle(env, window):
    if not (shutil.which("mpv") and os.path.exists(mprisutil.MPV_MPRIS) and shutil.which("sox")):
        print("Idle wakeups: skipped (needs mpv, mpv-mpris and sox)")
        return
    c = env.client()
    sub = c.subscribe([""])
    c.wait_for(lambda: not c.mirror(sub)["media"]["players"], timeout=30, what="no player left")
    a = mprisutil.Mpv(env, [mprisutil.track(env, "idle-a", title="A", artist="X", seconds=120)], paused=False)
    b = mprisutil.Mpv(env, [mprisutil.track(env, "idle-b", title="B", artist="Y", seconds=120, freq=330)], paused=False)

    def both_playing():
        players = c.mirror(sub).get("media", {}).get("players", {})
        return len(players) == 2 and all(p["playbackStatus"] == "playing" for p in players.values())

    c.wait_for(both_playing, timeout=30, what="two players playing")
    c.pump(1.0)   # the 100 ms position re-reads of the status change, then nothing
    pid = env.daemon.pid
    seen = len(c.notifications)
    before = switches(pid)
    t0 = time.monotonic()
    c.pump(window)   # the subscriber stays connected and reads whatever comes (nothing should)
    elapsed = time.monotonic() - t0
    after = switches(pid)
    changes = [n for n in c.notifications[seen:] if n["method"] == "tree.changed"]
    print(f"Idle wakeups of qsd over {elapsed:.1f} s with two mpv players playing: {after - before} "
          f"(context switches, all threads); tree.changed seen by the subscriber in that time: "
          f"{len(changes)}")
    assert a.get("pause") is False and b.get("pause") is False
    c.close()


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1" or "--quick" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    samples = int(args[0]) if args else (100 if quick else 1000)
    warmup = 10 if quick else 100
    env = Env()
    qsdtest.QSD = callgrind.wrap(qsdtest.QSD, env.dir)
    try:
        env.start_qsd(backends=["mpris"], debug_api=False)
        c = env.client()
        sub = c.subscribe(["/media/available"])
        c.wait_value(sub, "/media/available", True)
        c.close()
        latency(env, samples, warmup)
        print()
        idle(env, 10.0)
    finally:
        env.close()


if __name__ == "__main__":
    main()
