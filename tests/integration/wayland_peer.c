/* A small Wayland compositor for the tests, for the one protocol no compositor in Debian 12
 * offers: ext-foreign-toplevel-list (identifiers), alone or next to wlr-foreign-toplevel-
 * management. It has no surfaces: its toplevels are driven by the test, one command per line
 * on stdin, and it writes what clients ask on stdout:
 *
 *   add ID APP_ID TITLE...   a toplevel (its ext identifier is "peer-GEN-ID")
 *   title ID TITLE...        a new title
 *   parent ID PARENT         the toplevel's wlr parent (0: none)
 *   close ID                 the toplevel goes (its children are not told: wlr sends nothing)
 *   ext-late                 toplevels added next get their ext handle only with "ext-now"
 *   ext-now                  send the ext handles held back
 *   kick                     a protocol error to every client (on its wl_output)
 *   output NAME              one more wl_output (1920x1080), named NAME
 *   output-flicker NAME      one more wl_output, removed again at once: a monitor that comes and
 *                            goes before the client's sync after binding it returns
 *
 *   -> "ready" once listening; "request ID activate|close|maximize|..." for each request;
 *      "kicked N" for each client turned away by --kick-binds.
 *
 * Offers wl_output v4 ("PEER-1", 1280x720), wl_seat, and with --wlr / --ext the toplevel
 * protocols. --kick-binds N: the first N clients to bind wl_output get a protocol error right
 * there (a compositor that is there and keeps dropping the client before it has read anything).
 * Built by test_wayland_ext.py with wayland-scanner and libwayland-server.
 * Usage: wayland_peer --socket PATH [--wlr] [--ext] [--generation N] [--kick-binds N] */

#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "ext-foreign-toplevel-list-v1-server-protocol.h"
#include "wlr-foreign-toplevel-management-unstable-v1-server-protocol.h"

#define MAX_TOPLEVELS 1024
#define MAX_CLIENTS 16

struct toplevel {
	bool used;
	int id, parent_id;
	char app_id[128], title[256], identifier[64];
	bool activated, maximized, minimized, fullscreen;
	bool ext_held;                               /* ext handles not sent yet ("ext-late") */
	struct wl_resource *wlr[MAX_CLIENTS];        /* per wlr manager resource */
	struct wl_resource *ext[MAX_CLIENTS];        /* per ext list resource */
};

static struct wl_display *display;
static struct toplevel toplevels[MAX_TOPLEVELS];
static struct wl_resource *wlr_managers[MAX_CLIENTS];
static struct wl_resource *ext_lists[MAX_CLIENTS];
static struct wl_resource *outputs[MAX_CLIENTS];
static int generation = 1;
static bool ext_late;
static int kick_binds, kicked;

static void say(const char *fmt, const char *a, int id) {
	printf(fmt, a, id);
	fflush(stdout);
}

static struct wl_resource *output_of(struct wl_client *client) {
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (outputs[i] && wl_resource_get_client(outputs[i]) == client) return outputs[i];
	return NULL;
}

static void remove_slot(struct wl_resource **slots, struct wl_resource *r) {
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (slots[i] == r) slots[i] = NULL;
}

static int add_slot(struct wl_resource **slots, struct wl_resource *r) {
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (!slots[i]) {
			slots[i] = r;
			return i;
		}
	return -1;
}

/* ---- wlr-foreign-toplevel-management */

static void send_wlr_state(struct toplevel *t, struct wl_resource *h) {
	struct wl_array states;
	wl_array_init(&states);
	uint32_t *s;
	if (t->maximized) { s = wl_array_add(&states, sizeof *s); *s = ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MAXIMIZED; }
	if (t->minimized) { s = wl_array_add(&states, sizeof *s); *s = ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED; }
	if (t->activated) { s = wl_array_add(&states, sizeof *s); *s = ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED; }
	if (t->fullscreen) { s = wl_array_add(&states, sizeof *s); *s = ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_FULLSCREEN; }
	zwlr_foreign_toplevel_handle_v1_send_state(h, &states);
	wl_array_release(&states);
}

static void wlr_changed(struct toplevel *t) {
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (!t->wlr[i]) continue;
		send_wlr_state(t, t->wlr[i]);
		zwlr_foreign_toplevel_handle_v1_send_done(t->wlr[i]);
	}
}

static struct toplevel *toplevel_of_handle(struct wl_resource *h) { return wl_resource_get_user_data(h); }

static void close_toplevel(struct toplevel *t);
static struct toplevel *find(int id);

/* Sends the parent (v3) on the client's handle `slot`, when both toplevels have one there. */
static bool send_wlr_parent(struct toplevel *t, int slot) {
	struct wl_resource *h = t->wlr[slot];
	if (!h || wl_resource_get_version(h) < ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_PARENT_SINCE_VERSION) return false;
	struct toplevel *p = t->parent_id ? find(t->parent_id) : NULL;
	if (t->parent_id && (!p || !p->wlr[slot])) return false;
	zwlr_foreign_toplevel_handle_v1_send_parent(h, p ? p->wlr[slot] : NULL);
	return true;
}

#define REQUEST(name, body)                                                                    \
	static void name(struct wl_client *c, struct wl_resource *h) {                             \
		(void)c;                                                                               \
		struct toplevel *t = toplevel_of_handle(h);                                            \
		if (!t) return;                                                                        \
		say("request %s %d\n", #name + 4, t->id);                                              \
		body;                                                                                  \
		wlr_changed(t);                                                                        \
	}
REQUEST(req_set_maximized, t->maximized = true)
REQUEST(req_unset_maximized, t->maximized = false)
REQUEST(req_set_minimized, t->minimized = true)
REQUEST(req_unset_minimized, t->minimized = false)
REQUEST(req_unset_fullscreen, t->fullscreen = false)

static void req_activate(struct wl_client *c, struct wl_resource *h, struct wl_resource *seat) {
	(void)c;
	struct toplevel *t = toplevel_of_handle(h);
	if (!t || !seat) return;
	say("request %s %d\n", "activate", t->id);
	for (int i = 0; i < MAX_TOPLEVELS; i++) {
		if (!toplevels[i].used || toplevels[i].activated == (&toplevels[i] == t)) continue;
		toplevels[i].activated = &toplevels[i] == t;
		wlr_changed(&toplevels[i]);
	}
}

static void req_close(struct wl_client *c, struct wl_resource *h) {
	(void)c;
	struct toplevel *t = toplevel_of_handle(h);
	if (!t) return;
	say("request %s %d\n", "close", t->id);
	close_toplevel(t);
}

static void req_set_rectangle(struct wl_client *c, struct wl_resource *h, struct wl_resource *s, int32_t x, int32_t y,
                              int32_t w, int32_t ht) {
	(void)c; (void)h; (void)s; (void)x; (void)y; (void)w; (void)ht;
}

static void req_destroy(struct wl_client *c, struct wl_resource *h) {
	(void)c;
	wl_resource_destroy(h);
}

static void req_set_fullscreen(struct wl_client *c, struct wl_resource *h, struct wl_resource *output) {
	(void)c;
	struct toplevel *t = toplevel_of_handle(h);
	if (!t) return;
	say("request %s %d\n", output ? "fullscreen-on-output" : "fullscreen", t->id);
	t->fullscreen = true;
	wlr_changed(t);
}

static const struct zwlr_foreign_toplevel_handle_v1_interface wlr_handle_impl = {
    .set_maximized = req_set_maximized,
    .unset_maximized = req_unset_maximized,
    .set_minimized = req_set_minimized,
    .unset_minimized = req_unset_minimized,
    .activate = req_activate,
    .close = req_close,
    .set_rectangle = req_set_rectangle,
    .destroy = req_destroy,
    .set_fullscreen = req_set_fullscreen,
    .unset_fullscreen = req_unset_fullscreen,
};

static void wlr_handle_gone(struct wl_resource *h) {
	struct toplevel *t = toplevel_of_handle(h);
	if (t) remove_slot(t->wlr, h);
}

static void wlr_announce(struct toplevel *t, int slot) {
	struct wl_resource *m = wlr_managers[slot];
	struct wl_client *client = wl_resource_get_client(m);
	struct wl_resource *h = wl_resource_create(client, &zwlr_foreign_toplevel_handle_v1_interface, wl_resource_get_version(m), 0);
	wl_resource_set_implementation(h, &wlr_handle_impl, t, wlr_handle_gone);
	t->wlr[slot] = h;
	zwlr_foreign_toplevel_manager_v1_send_toplevel(m, h);
	zwlr_foreign_toplevel_handle_v1_send_title(h, t->title);
	zwlr_foreign_toplevel_handle_v1_send_app_id(h, t->app_id);
	struct wl_resource *o = output_of(client);
	if (o) zwlr_foreign_toplevel_handle_v1_send_output_enter(h, o);
	send_wlr_state(t, h);
	if (t->parent_id) send_wlr_parent(t, slot);
	zwlr_foreign_toplevel_handle_v1_send_done(h);
}

static void wlr_manager_stop(struct wl_client *c, struct wl_resource *m) {
	(void)c;
	zwlr_foreign_toplevel_manager_v1_send_finished(m);
	wl_resource_destroy(m);
}

static const struct zwlr_foreign_toplevel_manager_v1_interface wlr_manager_impl = {.stop = wlr_manager_stop};

static void wlr_manager_gone(struct wl_resource *m) { remove_slot(wlr_managers, m); }

static void bind_wlr(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
	(void)data;
	struct wl_resource *m = wl_resource_create(client, &zwlr_foreign_toplevel_manager_v1_interface, version, id);
	wl_resource_set_implementation(m, &wlr_manager_impl, NULL, wlr_manager_gone);
	int slot = add_slot(wlr_managers, m);
	for (int i = 0; i < MAX_TOPLEVELS && slot >= 0; i++)
		if (toplevels[i].used) wlr_announce(&toplevels[i], slot);
	/* A parent announced after its child: the child learns it now. */
	for (int i = 0; i < MAX_TOPLEVELS && slot >= 0; i++)
		if (toplevels[i].used && toplevels[i].parent_id && send_wlr_parent(&toplevels[i], slot))
			zwlr_foreign_toplevel_handle_v1_send_done(toplevels[i].wlr[slot]);
}

/* ---- ext-foreign-toplevel-list */

static void ext_handle_destroy(struct wl_client *c, struct wl_resource *h) {
	(void)c;
	wl_resource_destroy(h);
}

static const struct ext_foreign_toplevel_handle_v1_interface ext_handle_impl = {.destroy = ext_handle_destroy};

static void ext_handle_gone(struct wl_resource *h) {
	struct toplevel *t = wl_resource_get_user_data(h);
	if (t) remove_slot(t->ext, h);
}

static void ext_announce(struct toplevel *t, int slot) {
	struct wl_resource *l = ext_lists[slot];
	struct wl_resource *h = wl_resource_create(wl_resource_get_client(l), &ext_foreign_toplevel_handle_v1_interface,
	                                           wl_resource_get_version(l), 0);
	wl_resource_set_implementation(h, &ext_handle_impl, t, ext_handle_gone);
	t->ext[slot] = h;
	ext_foreign_toplevel_list_v1_send_toplevel(l, h);
	ext_foreign_toplevel_handle_v1_send_identifier(h, t->identifier);
	ext_foreign_toplevel_handle_v1_send_title(h, t->title);
	ext_foreign_toplevel_handle_v1_send_app_id(h, t->app_id);
	ext_foreign_toplevel_handle_v1_send_done(h);
}

static void ext_list_stop(struct wl_client *c, struct wl_resource *l) {
	(void)c;
	ext_foreign_toplevel_list_v1_send_finished(l);
}

static void ext_list_destroy(struct wl_client *c, struct wl_resource *l) {
	(void)c;
	wl_resource_destroy(l);
}

static const struct ext_foreign_toplevel_list_v1_interface ext_list_impl = {.stop = ext_list_stop, .destroy = ext_list_destroy};

static void ext_list_gone(struct wl_resource *l) { remove_slot(ext_lists, l); }

static void bind_ext(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
	(void)data;
	struct wl_resource *l = wl_resource_create(client, &ext_foreign_toplevel_list_v1_interface, version, id);
	wl_resource_set_implementation(l, &ext_list_impl, NULL, ext_list_gone);
	int slot = add_slot(ext_lists, l);
	for (int i = 0; i < MAX_TOPLEVELS && slot >= 0; i++)
		if (toplevels[i].used && !toplevels[i].ext_held) ext_announce(&toplevels[i], slot);
}

/* ---- wl_output, wl_seat */


static void output_release(struct wl_client *c, struct wl_resource *r) {
	(void)c;
	wl_resource_destroy(r);
}

static const struct wl_output_interface output_impl = {.release = output_release};

/* The outputs "output" and "output-flicker" add: a name each, never freed (a test's few). */
static void bind_extra_output(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
	struct wl_resource *r = wl_resource_create(client, &wl_output_interface, version, id);
	if (!r) return;
	wl_resource_set_implementation(r, &output_impl, NULL, NULL);
	wl_output_send_geometry(r, 0, 0, 500, 280, WL_OUTPUT_SUBPIXEL_UNKNOWN, "Peer", "Extra", WL_OUTPUT_TRANSFORM_NORMAL);
	wl_output_send_mode(r, WL_OUTPUT_MODE_CURRENT | WL_OUTPUT_MODE_PREFERRED, 1920, 1080, 60000);
	if (version >= WL_OUTPUT_SCALE_SINCE_VERSION) wl_output_send_scale(r, 1);
	if (version >= WL_OUTPUT_NAME_SINCE_VERSION) {
		wl_output_send_name(r, data);
		wl_output_send_description(r, data);
	}
	if (version >= WL_OUTPUT_DONE_SINCE_VERSION) wl_output_send_done(r);
}

static struct wl_global *extra_output(const char *name) {
	return wl_global_create(display, &wl_output_interface, 4, strdup(name), bind_extra_output);
}

static void output_gone(struct wl_resource *r) { remove_slot(outputs, r); }

static void bind_output(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
	(void)data;
	struct wl_resource *r = wl_resource_create(client, &wl_output_interface, version, id);
	wl_resource_set_implementation(r, &output_impl, NULL, output_gone);
	if (kicked < kick_binds) {
		printf("kicked %d\n", ++kicked);
		fflush(stdout);
		wl_resource_post_error(r, 0, "kicked at bind by the test");
		return;
	}
	add_slot(outputs, r);
	wl_output_send_geometry(r, 0, 0, 300, 170, WL_OUTPUT_SUBPIXEL_UNKNOWN, "Peer", "Test Panel", WL_OUTPUT_TRANSFORM_NORMAL);
	wl_output_send_mode(r, WL_OUTPUT_MODE_CURRENT | WL_OUTPUT_MODE_PREFERRED, 1280, 720, 60000);
	if (version >= WL_OUTPUT_SCALE_SINCE_VERSION) wl_output_send_scale(r, 1);
	if (version >= WL_OUTPUT_NAME_SINCE_VERSION) {
		wl_output_send_name(r, "PEER-1");
		wl_output_send_description(r, "Peer test panel");
	}
	if (version >= WL_OUTPUT_DONE_SINCE_VERSION) wl_output_send_done(r);
}

static void seat_get_nothing(struct wl_client *c, struct wl_resource *r, uint32_t id) {
	(void)c; (void)id;
	wl_resource_post_error(r, WL_SEAT_ERROR_MISSING_CAPABILITY, "no input devices");
}

static void seat_release(struct wl_client *c, struct wl_resource *r) {
	(void)c;
	wl_resource_destroy(r);
}

static const struct wl_seat_interface seat_impl = {
    .get_pointer = seat_get_nothing, .get_keyboard = seat_get_nothing, .get_touch = seat_get_nothing, .release = seat_release};

static void bind_seat(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
	(void)data;
	struct wl_resource *r = wl_resource_create(client, &wl_seat_interface, version, id);
	wl_resource_set_implementation(r, &seat_impl, NULL, NULL);
	wl_seat_send_capabilities(r, 0);
	if (version >= WL_SEAT_NAME_SINCE_VERSION) wl_seat_send_name(r, "seat0");
}

/* ---- toplevels driven from stdin */

static struct toplevel *find(int id) {
	for (int i = 0; i < MAX_TOPLEVELS; i++)
		if (toplevels[i].used && toplevels[i].id == id) return &toplevels[i];
	return NULL;
}

static void close_toplevel(struct toplevel *t) {
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (t->wlr[i]) {
			zwlr_foreign_toplevel_handle_v1_send_closed(t->wlr[i]);
			wl_resource_set_user_data(t->wlr[i], NULL);
		}
		if (t->ext[i]) {
			ext_foreign_toplevel_handle_v1_send_closed(t->ext[i]);
			wl_resource_set_user_data(t->ext[i], NULL);
		}
	}
	memset(t, 0, sizeof *t);
}

static void command(char *line) {
	char *cmd = strtok(line, " \n");
	if (!cmd) return;
	if (!strcmp(cmd, "ext-late")) {
		ext_late = true;
		return;
	}
	if (!strcmp(cmd, "kick")) {
		for (int i = 0; i < MAX_CLIENTS; i++)
			if (outputs[i]) wl_resource_post_error(outputs[i], 0, "kicked by the test");
		return;
	}
	if (!strcmp(cmd, "ext-now")) {
		ext_late = false;
		for (int i = 0; i < MAX_TOPLEVELS; i++) {
			if (!toplevels[i].used || !toplevels[i].ext_held) continue;
			toplevels[i].ext_held = false;
			for (int s = 0; s < MAX_CLIENTS; s++)
				if (ext_lists[s]) ext_announce(&toplevels[i], s);
		}
		return;
	}
	char *arg = strtok(NULL, " \n");
	if (!arg) return;
	if (!strcmp(cmd, "output")) {
		extra_output(arg);
		return;
	}
	if (!strcmp(cmd, "output-flicker")) {
		wl_global_remove(extra_output(arg));
		return;
	}
	int id = atoi(arg);
	char *rest = strtok(NULL, "\n");
	if (!strcmp(cmd, "add")) {
		struct toplevel *t = NULL;
		for (int i = 0; i < MAX_TOPLEVELS && !t; i++)
			if (!toplevels[i].used) t = &toplevels[i];
		if (!t || !rest) return;
		t->used = true;
		t->id = id;
		char *title = strchr(rest, ' ');
		if (title) *title++ = 0;
		snprintf(t->app_id, sizeof t->app_id, "%s", rest);
		snprintf(t->title, sizeof t->title, "%s", title ? title : "");
		snprintf(t->identifier, sizeof t->identifier, "peer-%d-%d", generation, id);
		t->ext_held = ext_late;
		for (int s = 0; s < MAX_CLIENTS; s++) {
			if (wlr_managers[s]) wlr_announce(t, s);
			if (ext_lists[s] && !t->ext_held) ext_announce(t, s);
		}
	} else if (!strcmp(cmd, "title")) {
		struct toplevel *t = find(id);
		if (!t || !rest) return;
		snprintf(t->title, sizeof t->title, "%s", rest);
		for (int s = 0; s < MAX_CLIENTS; s++) {
			if (t->wlr[s]) {
				zwlr_foreign_toplevel_handle_v1_send_title(t->wlr[s], t->title);
				zwlr_foreign_toplevel_handle_v1_send_done(t->wlr[s]);
			}
			if (t->ext[s]) {
				ext_foreign_toplevel_handle_v1_send_title(t->ext[s], t->title);
				ext_foreign_toplevel_handle_v1_send_done(t->ext[s]);
			}
		}
	} else if (!strcmp(cmd, "parent")) {
		struct toplevel *t = find(id);
		if (!t || !rest) return;
		t->parent_id = atoi(rest);
		for (int s = 0; s < MAX_CLIENTS; s++)
			if (send_wlr_parent(t, s)) zwlr_foreign_toplevel_handle_v1_send_done(t->wlr[s]);
	} else if (!strcmp(cmd, "close")) {
		struct toplevel *t = find(id);
		if (t) close_toplevel(t);
	}
}

static int on_stdin(int fd, uint32_t mask, void *data) {
	(void)data;
	static char buf[4096];
	static size_t len;
	if (mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR)) {
		wl_display_terminate(display);
		return 0;
	}
	ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
	if (n <= 0) {
		wl_display_terminate(display);
		return 0;
	}
	len += (size_t)n;
	buf[len] = 0;
	char *start = buf, *nl;
	while ((nl = strchr(start, '\n'))) {
		*nl = 0;
		command(start);
		start = nl + 1;
	}
	len = strlen(start);
	memmove(buf, start, len);
	wl_display_flush_clients(display);
	return 0;
}

int main(int argc, char **argv) {
	const char *socket = NULL;
	bool wlr = false, ext = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) socket = argv[++i];
		else if (!strcmp(argv[i], "--wlr")) wlr = true;
		else if (!strcmp(argv[i], "--ext")) ext = true;
		else if (!strcmp(argv[i], "--generation") && i + 1 < argc) generation = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--kick-binds") && i + 1 < argc) kick_binds = atoi(argv[++i]);
	}
	if (!socket) {
		fprintf(stderr, "usage: wayland_peer --socket PATH [--wlr] [--ext] [--generation N] [--kick-binds N]\n");
		return 2;
	}
	display = wl_display_create();
	if (wl_display_add_socket(display, socket) != 0) {
		perror("wl_display_add_socket");
		return 1;
	}
	wl_global_create(display, &wl_output_interface, 4, NULL, bind_output);
	wl_global_create(display, &wl_seat_interface, 5, NULL, bind_seat);
	if (wlr) wl_global_create(display, &zwlr_foreign_toplevel_manager_v1_interface, 3, NULL, bind_wlr);
	if (ext) wl_global_create(display, &ext_foreign_toplevel_list_v1_interface, 1, NULL, bind_ext);
	wl_event_loop_add_fd(wl_display_get_event_loop(display), 0, WL_EVENT_READABLE, on_stdin, NULL);
	say("%sready %d\n", "", generation);
	wl_display_run(display);
	wl_display_destroy_clients(display);
	wl_display_destroy(display);
	return 0;
}
