/* The two receivers of the D-Bus latency benchmarks (bench_nm_latency.py, bench_upower.py,
 * bench_bluetooth.py, bench_mpris.py, bench_tray.py, bench_notifications.py), in one process and
 * one poll loop so that one clock times both:
 *   - a plain sd-bus listener: a match on the signal, timestamping its delivery (or, with
 *     --host-get, the last answer to the Gets a host sends after it);
 *   - a qsd subscriber: one tree.subscribe, timestamping the tree.changed line.
 * Each sample calls a method of the mock that reads CLOCK_MONOTONIC, emits, and returns that
 * time; the sample's value is the call's one argument, so both receivers can tell the signal
 * and the line it caused from older ones.
 *
 * usage: listener [OPTIONS] SOCKET TREE_PATH COUNT
 *   --system                 the system bus (default: the session bus)
 *   --match RULE             the signal's match rule
 *   --property NAME:TYPE     in a PropertiesChanged, the property NAME (D-Bus type y, n, i, u
 *                            or d; d is rounded) must hold the sample's value; without it, any
 *                            signal the rule matches counts
 *   --host-get IFACE:P1,P2.. after the signal, Get each property from its sender, as a tray
 *                            host does; the sender answers one call after another, so this host
 *                            is timed on even samples and qsd alone on odd ones
 *   --tree-scale N           the tree.changed value times N, rounded, must be the sample's
 *                            value; without it, any tree.changed line counts
 *   --call DEST PATH IFACE MEMBER SIG
 *                            the method that makes the mock emit; SIG (y, n, i, u or d) is the
 *                            type of its one argument; it returns the emission time (t or x)
 *   --values FIRST:STEP:PERIOD   sample i's value is FIRST + STEP * (i % PERIOD); PERIOD 0 never
 *                            wraps (default 0:1:0)
 *   --timeout SECONDS        how long a sample may take before it is a miss (default 2)
 *   --notify                 instead of the above: the application calling Notify (summary
 *                            "bench <i>") is the plain receiver, timed at the reply, from just
 *                            before the call; qsd's line is the one with that summary; each
 *                            notification is closed before the next sample
 * Prints one line a sample: "EMIT BUS QSD" (CLOCK_MONOTONIC ns; "-" for a receiver not timed on
 * that sample), or "miss".
 */
#include "bench_options.h"

#include <systemd/sd-bus.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
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

static struct signal_options opt;
static const char *get_iface;
static char *get_props[8];
static int n_get_props;
static bool notify_mode;
static char want[64];
static uint32_t notification;

static long expected;
static bool time_bus;
static int pending;
static uint64_t t_bus, t_qsd, t_emit;

static void fail(const char *what) {
	fprintf(stderr, "listener: %s\n", what);
	exit(1);
}

static bool holds_expected(sd_bus_message *m) {
	switch (opt.prop_type) {
	case 'y': { uint8_t v; return sd_bus_message_read(m, "v", "y", &v) >= 0 && v == expected; }
	case 'n': { int16_t v; return sd_bus_message_read(m, "v", "n", &v) >= 0 && v == expected; }
	case 'i': { int32_t v; return sd_bus_message_read(m, "v", "i", &v) >= 0 && v == expected; }
	case 'u': { uint32_t v; return sd_bus_message_read(m, "v", "u", &v) >= 0 && v == expected; }
	case 'd': { double v; return sd_bus_message_read(m, "v", "d", &v) >= 0 && lround(v) == expected; }
	}
	return false;
}

/* Whether a PropertiesChanged carries prop_name with the sample's value. */
static bool changes_property(sd_bus_message *m) {
	const char *iface;
	bool found = false;
	if (sd_bus_message_read(m, "s", &iface) < 0) return false;
	if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return false;
	while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
		const char *key;
		sd_bus_message_read(m, "s", &key);
		if (strcmp(key, opt.prop_name) == 0) found = holds_expected(m) || found;
		else sd_bus_message_skip(m, "v");
		sd_bus_message_exit_container(m);
	}
	return found;
}

static int on_get(sd_bus_message *m, void *ud, sd_bus_error *err) {
	(void)m; (void)ud; (void)err;
	if (--pending == 0) t_bus = now_ns();
	return 0;
}

static int on_signal(sd_bus_message *m, void *ud, sd_bus_error *err) {
	uint64_t t = now_ns();
	(void)err;
	if (!time_bus || t_bus || pending) return 0;
	if (get_iface) {
		pending = n_get_props;
		for (int i = 0; i < n_get_props; ++i)
			sd_bus_call_method_async(ud, NULL, sd_bus_message_get_sender(m), sd_bus_message_get_path(m),
			                         "org.freedesktop.DBus.Properties", "Get", on_get, NULL, "ss", get_iface,
			                         get_props[i]);
	} else if (!opt.prop_name || changes_property(m)) {
		t_bus = t;
	}
	return 0;
}

static int on_reply(sd_bus_message *m, void *ud, sd_bus_error *err) {
	char type = 0;
	(void)ud; (void)err;
	if (sd_bus_message_is_method_error(m, NULL)) fail("the emitting call failed");
	if (sd_bus_message_peek_type(m, &type, NULL) <= 0) fail("the emitting call returned no time");
	if (type == 'x') {
		int64_t t;
		sd_bus_message_read(m, "x", &t);
		t_emit = (uint64_t)t;
	} else {
		sd_bus_message_read(m, "t", &t_emit);
	}
	return 0;
}

static int on_notify_reply(sd_bus_message *m, void *ud, sd_bus_error *err) {
	(void)ud; (void)err;
	t_bus = now_ns();
	if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read(m, "u", &notification) < 0) fail("Notify failed");
	return 0;
}

static char buf[1 << 20];
static size_t len;

static void read_lines(int fd, uint64_t t) {
	ssize_t n = recv(fd, buf + len, sizeof buf - len - 1, MSG_DONTWAIT);
	if (n == 0) fail("qsd closed");
	if (n < 0) return;
	len += (size_t)n;
	buf[len] = 0;
	char *start = buf, *nl;
	while ((nl = strchr(start, '\n'))) {
		*nl = 0;
		/* the subscription's answer (with the snapshot) is not a tree.changed */
		if (strstr(start, "\"tree.changed\"") && !t_qsd) {
			char *v = strstr(start, "\"value\":");
			if ((opt.tree_scale == 0 || (v && lround(strtod(v + 8, NULL) * opt.tree_scale) == expected)) &&
			    (!want[0] || strstr(start, want)))
				t_qsd = t;
		}
		start = nl + 1;
	}
	len -= (size_t)(start - buf);
	memmove(buf, start, len);
}

static int append_value(sd_bus_message *m, char type, long v) {
	switch (type) {
	case 'y': return sd_bus_message_append(m, "y", (uint8_t)v);
	case 'n': return sd_bus_message_append(m, "n", (int16_t)v);
	case 'i': return sd_bus_message_append(m, "i", (int32_t)v);
	case 'u': return sd_bus_message_append(m, "u", (uint32_t)v);
	case 'd': return sd_bus_message_append(m, "d", (double)v);
	}
	return -1;
}

static bool is_value_type(const char *s) {
	return s[0] && !s[1] && strchr("ynuid", s[0]);
}

static void usage(void) {
	fprintf(stderr, "usage: listener [--system] --match RULE [--property NAME:TYPE | --host-get IFACE:PROP,...]\n"
	                "                [--tree-scale N] --call DEST PATH IFACE MEMBER SIG [--values FIRST:STEP:PERIOD]\n"
	                "                [--timeout SECONDS] SOCKET TREE_PATH COUNT\n"
	                "       listener --notify [--timeout SECONDS] SOCKET TREE_PATH COUNT\n");
	exit(2);
}

int main(int argc, char **argv) {
	const char *call[5] = {0}, *pos[3] = {0};
	long first = 0, step = 1, period = 0;
	double timeout = 2;
	int npos = 0;
	for (int i = 1; i < argc; ++i) {
		int parsed = parse_signal_option(argc, argv, &i, "ynuid", &opt);
		if (parsed < 0) usage();
		if (parsed) continue;
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--host-get") == 0 && more) {
			char *colon = strchr(argv[++i], ':');
			if (!colon) usage();
			*colon = 0;
			get_iface = argv[i];
			for (char *p = strtok(colon + 1, ","); p && n_get_props < 8; p = strtok(NULL, ","))
				get_props[n_get_props++] = p;
			if (n_get_props == 0) usage();
		} else if (strcmp(a, "--call") == 0 && i + 5 < argc) {
			for (int k = 0; k < 5; ++k) call[k] = argv[++i];
			if (!is_value_type(call[4])) usage();
		} else if (strcmp(a, "--values") == 0 && more) {
			if (sscanf(argv[++i], "%ld:%ld:%ld", &first, &step, &period) != 3 || period < 0) usage();
		} else if (strcmp(a, "--notify") == 0) {
			notify_mode = true;
		} else if (strcmp(a, "--timeout") == 0 && more) {
			timeout = strtod(argv[++i], NULL);
		} else if (a[0] == '-' && a[1] == '-') {
			usage();
		} else if (npos < 3) {
			pos[npos++] = a;
		} else {
			usage();
		}
	}
	if (npos != 3 || (opt.prop_name && get_iface) || (notify_mode ? opt.rule || call[0] : !opt.rule || !call[0])) usage();
	const char *sock = pos[0], *tree = pos[1];
	int count = atoi(pos[2]);

	sd_bus *bus;
	if ((opt.system_bus ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus)) < 0) fail("no bus");
	if (opt.rule && sd_bus_add_match(bus, NULL, opt.rule, on_signal, bus) < 0) fail("match failed");

	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, sock, sizeof sa.sun_path - 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("connect"); return 1; }
	char req[1024];
	int n = snprintf(req, sizeof req,
	                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tree.subscribe\",\"params\":{\"paths\":[\"%s\"]}}\n", tree);
	if (n < 0 || n >= (int)sizeof req || write(fd, req, (size_t)n) != n) fail("could not subscribe");

	for (int i = 0; i < count; ++i) {
		bool host_turn = !get_iface || i % 2 == 0, qsd_turn = !get_iface || i % 2 == 1;
		expected = first + step * (period ? i % period : i);
		time_bus = host_turn;
		t_bus = t_qsd = t_emit = 0;
		pending = 0;
		notification = 0;
		if (notify_mode) {
			char summary[32];
			snprintf(summary, sizeof summary, "bench %d", i);
			snprintf(want, sizeof want, "\"%s\"", summary);
			t_emit = now_ns();
			if (sd_bus_call_method_async(bus, NULL, "org.freedesktop.Notifications", "/org/freedesktop/Notifications",
			                             "org.freedesktop.Notifications", "Notify", on_notify_reply, NULL,
			                             "susssasa{sv}i", "bench", 0, "", summary, "", 0, 0, 0) < 0)
				fail("could not call Notify");
		} else {
			sd_bus_message *m;
			if (sd_bus_message_new_method_call(bus, &m, call[0], call[1], call[2], call[3]) < 0 ||
			    append_value(m, call[4][0], expected) < 0 || sd_bus_call_async(bus, NULL, m, on_reply, NULL, 0) < 0)
				fail("could not call the emitting method");
			sd_bus_message_unref(m);
		}
		uint64_t deadline = now_ns() + (uint64_t)(timeout * 1e9);
		bool done = false;
		for (;;) {
			while (sd_bus_process(bus, NULL) > 0) {}
			done = (t_bus || !host_turn) && t_qsd && t_emit;
			uint64_t now = now_ns();
			if (done || now > deadline) break;
			struct pollfd p[2] = {{.fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus)},
			                      {.fd = fd, .events = POLLIN}};
			poll(p, 2, (int)((deadline - now) / 1000000u) + 1);
			if (p[1].revents & POLLIN) read_lines(fd, now_ns());
		}
		if (!done) {
			printf("miss\n");
		} else {
			char b[24] = "-", q[24] = "-";
			if (host_turn) snprintf(b, sizeof b, "%llu", (unsigned long long)t_bus);
			if (qsd_turn) snprintf(q, sizeof q, "%llu", (unsigned long long)t_qsd);
			printf("%llu %s %s\n", (unsigned long long)t_emit, b, q);
		}
		fflush(stdout);
		/* Closed before the next sample, so the set shown stays small. */
		if (notify_mode && notification)
			sd_bus_call_method(bus, "org.freedesktop.Notifications", "/org/freedesktop/Notifications",
			                   "org.freedesktop.Notifications", "CloseNotification", NULL, NULL, "u", notification);
		usleep(2000);
	}
	close(fd);
	sd_bus_flush_close_unref(bus);
	return 0;
}
