/* What the D-Bus latency benchmarks' two C programs (listener.c, relay.c) parse alike: which
 * signal they follow and how its value maps to the tree's. */
#ifndef QSD_BENCH_OPTIONS_H
#define QSD_BENCH_OPTIONS_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct signal_options {
	bool system_bus;        /* --system: the system bus (default: the session bus) */
	const char *rule;       /* --match RULE: the signal's match rule */
	const char *prop_name;  /* --property NAME:TYPE: in a PropertiesChanged, the property NAME */
	char prop_type;         /*   of D-Bus type TYPE */
	double tree_scale;      /* --tree-scale N: the tree's value times N is the property's (0: unset) */
};

/* If argv[*i] is one of the options above, reads it (and its value, moving *i past it) into o
 * and returns 1; returns 0 for another argument, -1 for one of them that is malformed (no value,
 * a TYPE not among types, a scale of 0). */
static inline int parse_signal_option(int argc, char **argv, int *i, const char *types, struct signal_options *o) {
	const char *a = argv[*i];
	bool more = *i + 1 < argc;
	if (strcmp(a, "--system") == 0) {
		o->system_bus = true;
		return 1;
	}
	if (strcmp(a, "--match") != 0 && strcmp(a, "--property") != 0 && strcmp(a, "--tree-scale") != 0) return 0;
	if (!more) return -1;
	char *value = argv[++*i];
	if (a[2] == 'm') {
		o->rule = value;
	} else if (a[2] == 'p') {
		char *colon = strrchr(value, ':');
		if (!colon || !colon[1] || colon[2] || !strchr(types, colon[1])) return -1;
		*colon = 0;
		o->prop_name = value;
		o->prop_type = colon[1];
	} else {
		o->tree_scale = strtod(value, NULL);
		if (o->tree_scale == 0) return -1;
	}
	return 1;
}

#endif
