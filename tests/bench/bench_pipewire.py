#!/usr/bin/python3
"""PipeWire: figures of the pipewire backend against a real pipewire + wireplumber started here,
each in one run:

1. Latency of a volume change to a sink: from the change to the tree.changed line at a qsd
   subscriber, side by side with `pw-dump --monitor` printing the same change. One small C
   program (built here against libpipewire) makes the changes and is both receivers, in one
   poll loop, so both are timed by the same clock in the same process. Two origins:
   - wpctl: the program spawns `wpctl set-volume <id> <v>` (the origin is the spawn, so both
     include wpctl's own start-up);
   - param: the program writes the node's Props itself (pw_node_set_param, what wpctl sends),
     timed right before the write: the sharper comparison.
2. RSS of qsd (--backends=pipewire) with an empty graph and with 100 null sinks + 20 streams.
3. Idle wakeups: context switches of every qsd thread over 10 s with those 20 streams playing and
   no level meter (target 0), while PipeWire is down waiting for its socket (0: no polling),
   and with one level meter (for scale).
4. Reconnect: PipeWire killed and started again, time from its start to /audio available.

Usage: bench_pipewire.py [SAMPLES]   (QSD_BIN selects the daemon, default build/daemon/qsd;
QSD_BENCH_QUICK=1: 50 samples, 10 sinks + 2 streams, 1 s windows)
"""

import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
BUILD = os.path.join(HERE, "..", "..", "build")
os.environ.setdefault("QSD_BIN", os.path.join(BUILD, "daemon", "qsd"))
os.environ.setdefault("QSCTL_BIN", os.path.join(BUILD, "cli", "qsctl"))

import qsdtest  # noqa: E402
from benchstat import percentile  # noqa: E402
from pwtest import PipeWire, node_key  # noqa: E402
from qsdtest import Env  # noqa: E402

qsdtest.QSD = os.environ["QSD_BIN"]

LATENCY_C = r"""
#include <pipewire/pipewire.h>
#include <spa/param/props.h>
#include <spa/pod/builder.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t target;
static struct pw_registry *reg;
static struct pw_node *node;
static int synced, sync_seq;

static void on_global(void *d, uint32_t id, uint32_t perm, const char *type, uint32_t ver, const struct spa_dict *props) {
	(void)d; (void)perm; (void)props;
	if (id == target && strcmp(type, PW_TYPE_INTERFACE_Node) == 0)
		node = pw_registry_bind(reg, id, type, PW_VERSION_NODE, 0);
	(void)ver;
}
static const struct pw_registry_events reg_events = { PW_VERSION_REGISTRY_EVENTS, .global = on_global };
static void on_done(void *d, uint32_t id, int seq) { (void)d; if (id == PW_ID_CORE && seq == sync_seq) synced = 1; }
static const struct pw_core_events core_events = { PW_VERSION_CORE_EVENTS, .done = on_done };

static char qbuf[1 << 20], dbuf[1 << 22];
static size_t qlen, dlen;
static double expect_v;
static float expect_lin;
static uint64_t t_qsd, t_dump;

static void read_qsd(int fd, uint64_t t, const char *path) {
	ssize_t n = recv(fd, qbuf + qlen, sizeof qbuf - qlen - 1, MSG_DONTWAIT);
	if (n == 0) { fprintf(stderr, "qsd closed\n"); exit(1); }
	if (n < 0) return;
	qlen += (size_t)n; qbuf[qlen] = 0;
	char *start = qbuf, *nl;
	while ((nl = strchr(start, '\n'))) {
		*nl = 0;
		char *p = strstr(start, "\"tree.changed\"") ? strstr(start, path) : NULL;
		char *v = p ? strstr(p, "\"value\":") : NULL;
		if (v && !t_qsd && fabs(strtod(v + 8, NULL) - expect_v) < 1e-5) t_qsd = t;
		start = nl + 1;
	}
	qlen -= (size_t)(start - qbuf);
	memmove(qbuf, start, qlen);
}

static void read_dump(int fd, uint64_t t) {
	ssize_t n = read(fd, dbuf + dlen, sizeof dbuf - dlen - 1);
	if (n <= 0) return;
	dlen += (size_t)n; dbuf[dlen] = 0;
	/* pw-dump prints "channelVolumes": [ 0.027271, 0.027271 ] (%f): compare the number. */
	static const char key[] = "\"channelVolumes\": [ ";
	for (char *p = strstr(dbuf, key); p && !t_dump; p = strstr(p + 1, key)) {
		double x = strtod(p + sizeof key - 1, NULL);
		if (fabs(x - expect_lin) < 2e-6) t_dump = t;
	}
	if (dlen > sizeof dbuf / 2) { dlen = 0; }
}

int main(int argc, char **argv) {
	if (argc != 6) { fprintf(stderr, "usage: latency SOCKET PATH NODE_ID COUNT param|wpctl\n"); return 2; }
	const char *sock = argv[1], *path = argv[2], *mode = argv[5];
	target = (uint32_t)atoi(argv[3]);
	int count = atoi(argv[4]);
	int use_wpctl = strcmp(mode, "wpctl") == 0;

	pw_init(&argc, &argv);
	struct pw_loop *loop = pw_loop_new(NULL);
	struct pw_context *ctx = pw_context_new(loop, NULL, 0);
	struct pw_core *core = pw_context_connect(ctx, NULL, 0);
	if (!core) { fprintf(stderr, "no pipewire\n"); return 1; }
	struct spa_hook core_l = {0}, reg_l = {0};
	pw_core_add_listener(core, &core_l, &core_events, NULL);
	reg = pw_core_get_registry(core, PW_VERSION_REGISTRY, 0);
	pw_registry_add_listener(reg, &reg_l, &reg_events, NULL);
	pw_loop_enter(loop);
	sync_seq = pw_core_sync(core, PW_ID_CORE, 0);
	while (!synced) pw_loop_iterate(loop, -1);
	if (!node) { fprintf(stderr, "node %u not found\n", target); return 1; }

	int pfd[2];
	if (pipe(pfd) < 0) return 1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	pid_t dump_pid;
	char *dargs[] = {"pw-dump", "-N", "--monitor", NULL};
	if (posix_spawnp(&dump_pid, "pw-dump", &fa, NULL, dargs, environ) != 0) { perror("pw-dump"); return 1; }
	close(pfd[1]);
	int dfd = pfd[0];

	int qfd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, sock, sizeof sa.sun_path - 1);
	if (connect(qfd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("connect"); return 1; }
	char req[1024];
	int n = snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tree.subscribe\",\"params\":{\"paths\":[\"%s\"]}}\n", path);
	if (write(qfd, req, (size_t)n) != n) return 1;

	/* Let pw-dump print its first full dump and settle. */
	uint64_t settle = now_ns() + 1500000000u;
	while (now_ns() < settle) {
		struct pollfd p[3] = {{.fd = dfd, .events = POLLIN}, {.fd = qfd, .events = POLLIN}, {.fd = pw_loop_get_fd(loop), .events = POLLIN}};
		poll(p, 3, 50);
		if (p[0].revents & POLLIN) { ssize_t r = read(dfd, dbuf, sizeof dbuf); (void)r; }
		if (p[1].revents & POLLIN) { expect_v = -1; read_qsd(qfd, 0, path); }
		if (p[2].revents & POLLIN) pw_loop_iterate(loop, 0);
	}
	dlen = 0;

	for (int i = 0; i < count; ++i) {
		double v = 0.300 + (double)(i % 600) * 0.001;
		float lin = (float)(v * v * v);
		expect_v = v;
		expect_lin = lin;
		t_qsd = t_dump = 0;
		dlen = 0;
		pid_t wp = 0;
		uint64_t t0 = now_ns();
		if (use_wpctl) {
			char id[16], vol[32];
			snprintf(id, sizeof id, "%u", target);
			snprintf(vol, sizeof vol, "%.3f", v);
			char *wargs[] = {"wpctl", "set-volume", id, vol, NULL};
			if (posix_spawnp(&wp, "wpctl", NULL, NULL, wargs, environ) != 0) { perror("wpctl"); return 1; }
		} else {
			uint8_t buf[256];
			struct spa_pod_builder b;
			spa_pod_builder_init(&b, buf, sizeof buf);
			float vols[2] = {lin, lin};
			struct spa_pod_frame f;
			spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_Props, SPA_PARAM_Props);
			spa_pod_builder_prop(&b, SPA_PROP_channelVolumes, 0);
			spa_pod_builder_array(&b, sizeof(float), SPA_TYPE_Float, 2, vols);
			struct spa_pod *pod = spa_pod_builder_pop(&b, &f);
			pw_node_set_param(node, SPA_PARAM_Props, 0, pod);
			pw_loop_iterate(loop, 0); /* flush */
		}
		uint64_t deadline = t0 + 3000000000u;
		while (!(t_qsd && t_dump) && now_ns() < deadline) {
			struct pollfd p[3] = {{.fd = dfd, .events = POLLIN}, {.fd = qfd, .events = POLLIN}, {.fd = pw_loop_get_fd(loop), .events = POLLIN}};
			poll(p, 3, 100);
			uint64_t t = now_ns();
			if (p[0].revents & POLLIN) read_dump(dfd, t);
			if (p[1].revents & POLLIN) read_qsd(qfd, t, path);
			if (p[2].revents & POLLIN) pw_loop_iterate(loop, 0);
		}
		if (wp) waitpid(wp, NULL, 0);
		if (t_qsd && t_dump) printf("%llu %llu %llu\n", (unsigned long long)t0, (unsigned long long)t_qsd, (unsigned long long)t_dump);
		else printf("miss %d %d\n", t_qsd != 0, t_dump != 0);
		fflush(stdout);
		usleep(2000);
	}
	kill(dump_pid, SIGTERM);
	waitpid(dump_pid, NULL, 0);
	return 0;
}
"""


def switches(pid):
    """Voluntary + non-voluntary context switches summed over every thread of pid."""
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


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def idle(pid, seconds):
    a = switches(pid)
    time.sleep(seconds)
    return switches(pid) - a


def latency(env, pw, exe, samples, warmup):
    env.start_qsd(backends=["pipewire"], debug_api=False)
    c = env.client()
    sub = c.subscribe(["/audio"])
    c.wait_value(sub, "/audio/available", True, timeout=30)
    key = node_key(c, sub, "bench_sink")
    c.close()
    nid = pw.node_id("bench_sink")
    path = f"/audio/nodes/{key}/audio/volume"
    results = {}
    for mode in ("param", "wpctl"):
        n = samples if mode == "param" else max(10, samples // 4)
        out = subprocess.run([exe, env.socket, path, str(nid), str(n + warmup), mode], check=True,
                             capture_output=True, text=True, env=pw.penv, timeout=3600).stdout.split("\n")
        rows = [line.split() for line in out if line and not line.startswith("miss")][warmup:]
        misses = sum(1 for line in out if line.startswith("miss"))
        qsd = [(int(q) - int(t0)) / 1000 for t0, q, d in rows]
        dump = [(int(d) - int(t0)) / 1000 for t0, q, d in rows]
        results[mode] = (qsd, dump, misses)
    env.stop_qsd()
    return results


def main():
    quick = os.environ.get("QSD_BENCH_QUICK") == "1"
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else (50 if quick else 1000)
    warmup = 5 if quick else 50
    sinks, streams = (10, 2) if quick else (100, 20)
    window = 1.0 if quick else 10.0
    env = Env()
    try:
        exe = os.path.join(env.dir, "pw-latency")
        with open(exe + ".c", "w") as f:
            f.write(LATENCY_C)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libpipewire-0.3"], check=True, capture_output=True,
                               text=True).stdout.split()
        subprocess.run(["cc", "-O2", "-w", "-o", exe, exe + ".c", *flags, "-lm"], check=True)

        pw = PipeWire(env)
        sink = pw.add_null("bench_sink")
        pw.run(["wpctl", "set-default", str(sink)])

        # 1. latency
        res = latency(env, pw, exe, samples, warmup)
        print("# PipeWire latency: a sink's volume change -> receiver (qsd: the tree.changed line at a subscriber;")
        print("#   pw-dump --monitor: its printout of the node), same run, same clock")
        for mode, title in (("param", "origin: Props written (pw_node_set_param)"), ("wpctl", "origin: wpctl set-volume spawned")):
            qsd, dump, misses = res[mode]
            q50, q99, d50, d99 = percentile(qsd, 50), percentile(qsd, 99), percentile(dump, 50), percentile(dump, 99)
            print(f"{title} ({len(qsd)} samples, {misses} missed)")
            print(f"  pw-dump --monitor   : p50 {d50:9.1f} us   p99 {d99:9.1f} us   mean {statistics.mean(dump):.1f} us")
            print(f"  qsd tree.changed    : p50 {q50:9.1f} us   p99 {q99:9.1f} us   mean {statistics.mean(qsd):.1f} us")
            print(f"  ratio qsd / pw-dump : p50 {q50 / d50:.2f}x   p99 {q99 / d99:.2f}x")

        # 2. RSS, empty graph (one sink) then sinks + streams
        env.start_qsd(backends=["pipewire"], debug_api=False)
        pid = env.daemon.pid
        c = env.client()
        sub = c.subscribe(["/audio"])
        c.wait_value(sub, "/audio/available", True, timeout=30)
        time.sleep(0.5)
        c.pump(0.2)
        empty = rss_kib(pid)
        # pw-cli runs its commands from a file in one connection (one process per sink would be slow).
        cmds = os.path.join(env.dir, "sinks.pw")
        with open(cmds, "w") as f:
            for i in range(sinks):
                f.write("create-node adapter { factory.name=support.null-audio-sink node.name=bench_%03d "
                        "media.class=Audio/Sink object.linger=true audio.position=[FL FR] }\n" % i)
        subprocess.run(f"pw-cli < {cmds}", shell=True, env=pw.penv, capture_output=True, timeout=300)
        players = [pw.play(f"bench-player-{i}", target=f"bench_{i:03d}") for i in range(streams)]
        c.wait_for(lambda: sum(1 for n in c.mirror(sub)["audio"]["nodes"].values()
                               if (n["name"] or "").startswith(("bench_", "bench-player-"))) >= sinks + streams,
                   120, what="every sink and stream")
        c.wait_for(lambda: sum(1 for n in c.mirror(sub)["audio"]["nodes"].values() if n["playingTo"]) >= streams,
                   120, what="every stream linked")
        time.sleep(1.0)
        c.pump(0.2)
        size = len(json.dumps(c.mirror(sub)))
        full = rss_kib(pid)
        print()
        print(f"# RSS of qsd --backends=pipewire (one whole-tree subscriber), {threads(pid)} threads")
        print(f"  one sink                          : {empty / 1024:6.2f} MiB")
        print(f"  {sinks} null sinks + {streams} streams playing : {full / 1024:6.2f} MiB  "
              f"({len(c.mirror(sub)['audio']['nodes'])} nodes, {len(c.mirror(sub)['audio']['links'])} links, "
              f"{size / 1024:.0f} KiB of JSON)")

        # 3. idle wakeups
        c.pump(0.5)
        quiet = idle(pid, window)
        meter = env.client()
        first = next(k for k, n in c.mirror(sub)["audio"]["nodes"].items() if n["name"] == "bench_000")
        meter.call("audio.monitorPeaks", {"node": first, "enabled": True})
        time.sleep(0.5)
        metering = idle(pid, window)
        meter.close()
        c.close()
        time.sleep(0.5)
        print()
        print(f"# Idle wakeups of qsd (context switches, all threads) over {window:.0f} s")
        print(f"  {streams} streams playing, no level meter : {quiet} ({quiet / window:.2f}/s)")
        print(f"  one level meter on a playing sink    : {metering} ({metering / window:.1f}/s)")

        # 4. PipeWire down (no polling), then the reconnect
        for p in players:
            p.terminate()
        pw.kill_all()
        time.sleep(1.0)
        down = idle(pid, window)
        print(f"  PipeWire down, waiting for its socket : {down} ({down / window:.2f}/s)")
        c = env.client()
        sub = c.subscribe(["/audio/available"])
        socket_path = os.path.join(env.run, "pipewire-0")
        if os.path.exists(socket_path):
            os.unlink(socket_path)   # the dead daemon's; the new one binds it again
        pw.pw = env.spawn(["pipewire"], "pipewire-again", env=pw.penv)
        while not os.path.exists(socket_path):
            time.sleep(0.0005)
        t0 = time.monotonic()
        c.wait_value(sub, "/audio/available", True, timeout=30)
        back = time.monotonic() - t0
        print()
        print(f"# Reconnect: PipeWire killed and started again: its socket appears -> /audio available (this "
              f"client's tree.changed): {back * 1000:.1f} ms")
        c.close()
    finally:
        env.close()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
