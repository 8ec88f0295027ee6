/* The floor under any relaying daemon, for the D-Bus latency benchmarks (bench_nm_latency.py,
 * bench_upower.py, bench_bluetooth.py, bench_mpris.py): the least a relay can do. It matches the
 * same signal as the plain listener, and for each one writes one tree.changed-shaped line to every
 * client of its Unix socket; no tree, no JSON library, no backend.
 *
 * Measured with the same listener (listener.c) as qsd, in qsd's place, its ratio to the plain
 * listener is what the bus hop, a second process and the listener's second wake-up cost by
 * themselves on this machine; what qsd's ratio adds to it is qsd's own work.
 *
 * usage: relay [--system] --match RULE [--property NAME:TYPE] [--tree-scale N] SOCKET TREE_PATH
 *   --property NAME:TYPE   in a PropertiesChanged, the property NAME (D-Bus type y, n, i, u, d
 *                          or s) is the line's value (numbers divided by --tree-scale); without
 *                          it, or when the signal does not carry NAME, the value is null
 * Runs until killed.
 */
#define _GNU_SOURCE /* accept4 */
#include "bench_options.h"

#include <systemd/sd-bus.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int clients[64], nclients;
static const char *tree_path;
static struct signal_options opt;
static unsigned long long revision;

/* The value of prop_name in a PropertiesChanged, as JSON text in out ("null" when absent). */
static void read_value(sd_bus_message *m, char *out, size_t size) {
	const char *iface;
	snprintf(out, size, "null");
	if (!opt.prop_name || sd_bus_message_read(m, "s", &iface) < 0) return;
	if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return;
	while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
		const char *key;
		if (sd_bus_message_read(m, "s", &key) < 0) return;
		if (strcmp(key, opt.prop_name) != 0) {
			sd_bus_message_skip(m, "v");
		} else {
			union { uint8_t y; int16_t n; int32_t i; uint32_t u; double d; const char *s; } v;
			char sig[2] = {opt.prop_type, 0};
			double scale = opt.tree_scale ? opt.tree_scale : 1;
			if (sd_bus_message_read(m, "v", sig, &v) < 0) return;
			switch (opt.prop_type) {
			case 'y': snprintf(out, size, "%.17g", v.y / scale); break;
			case 'n': snprintf(out, size, "%.17g", v.n / scale); break;
			case 'i': snprintf(out, size, "%.17g", v.i / scale); break;
			case 'u': snprintf(out, size, "%.17g", v.u / scale); break;
			case 'd': snprintf(out, size, "%.17g", v.d / scale); break;
			case 's': snprintf(out, size, "\"%s\"", v.s); break; /* the benchmarks' values need no escaping */
			}
		}
		sd_bus_message_exit_container(m);
	}
}

static int on_signal(sd_bus_message *m, void *ud, sd_bus_error *err) {
	char value[512], line[2048];
	(void)ud; (void)err;
	read_value(m, value, sizeof value);
	int n = snprintf(line, sizeof line,
	                 "{\"jsonrpc\":\"2.0\",\"method\":\"tree.changed\",\"params\":{\"changes\":[{\"op\":\"replace\","
	                 "\"path\":\"%s\",\"value\":%s}],\"revision\":%llu,\"subscription\":1}}\n",
	                 tree_path, value, ++revision);
	if (n <= 0 || n >= (int)sizeof line) return 0;
	for (int i = 0; i < nclients; ++i) send(clients[i], line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	return 0;
}

static void usage(void) {
	fprintf(stderr, "usage: relay [--system] --match RULE [--property NAME:TYPE] [--tree-scale N] SOCKET TREE_PATH\n");
	exit(2);
}

int main(int argc, char **argv) {
	const char *pos[2] = {0};
	int npos = 0;
	for (int i = 1; i < argc; ++i) {
		int parsed = parse_signal_option(argc, argv, &i, "ynuids", &opt);
		if (parsed < 0) usage();
		if (parsed) continue;
		const char *a = argv[i];
		if (a[0] == '-' && a[1] == '-') {
			usage();
		} else if (npos < 2) {
			pos[npos++] = a;
		} else {
			usage();
		}
	}
	if (npos != 2 || !opt.rule) usage();
	tree_path = pos[1];

	sd_bus *bus;
	if ((opt.system_bus ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus)) < 0) {
		fprintf(stderr, "relay: no bus\n");
		return 1;
	}
	if (sd_bus_add_match(bus, NULL, opt.rule, on_signal, NULL) < 0) {
		fprintf(stderr, "relay: match failed\n");
		return 1;
	}
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, pos[0], sizeof sa.sun_path - 1);
	unlink(pos[0]);
	if (bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 8) < 0) {
		perror("relay: socket");
		return 1;
	}
	for (;;) {
		while (sd_bus_process(bus, NULL) > 0) {}
		struct pollfd p[66];
		int n = 0;
		p[n++] = (struct pollfd){.fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus)};
		p[n++] = (struct pollfd){.fd = ls, .events = POLLIN};
		for (int i = 0; i < nclients; ++i) p[n++] = (struct pollfd){.fd = clients[i], .events = POLLIN};
		if (poll(p, (nfds_t)n, -1) < 0) continue;
		if (p[1].revents & POLLIN) {
			int c = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
			if (c >= 0 && nclients < 64) clients[nclients++] = c;
			else if (c >= 0) close(c);
		}
		/* A client's requests (its tree.subscribe) are read and dropped; one that hangs up goes. */
		for (int i = 0; i < nclients; ++i) {
			if (!p[2 + i].revents) continue;
			char b[4096];
			if (recv(clients[i], b, sizeof b, 0) == 0) {
				close(clients[i]);
				clients[i] = clients[--nclients];
				p[2 + i] = p[2 + nclients];
				--i;
			}
		}
	}
}
