/* A playback stream for the PipeWire tests whose node properties change while it runs, as an
 * application's do when it renames its stream (pw_stream_update_properties; pipewire-pulse does
 * the same for pa_stream_set_name). pw-cat sets its properties once, and nothing in a test
 * session changes a node's properties after that.
 *
 * Usage: pw_test_stream NAME [KEY=VALUE...]
 * The node is named NAME and carries the KEY=VALUE properties; it plays silence. Prints
 * "ready <node id>" once the node exists. Then each line read on stdin, "KEY=VALUE", is set on
 * the node ("KEY=" sets an empty value); each one is answered "set KEY" once sent. End of input,
 * SIGTERM or SIGINT end it. */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/param/audio/format-utils.h>

struct app {
	struct pw_main_loop* loop;
	struct pw_stream* stream;
	struct spa_hook listener;
	int ready;
	char line[65536];
	size_t used;
};

static void on_process(void* data) {
	struct app* a = data;
	struct pw_buffer* b = pw_stream_dequeue_buffer(a->stream);
	if (!b) return;
	struct spa_buffer* buf = b->buffer;
	if (buf->datas[0].data) {
		uint32_t size = buf->datas[0].maxsize;
		if (b->requested && b->requested * sizeof(float) * 2 < size) size = b->requested * sizeof(float) * 2;
		memset(buf->datas[0].data, 0, size);
		buf->datas[0].chunk->offset = 0;
		buf->datas[0].chunk->stride = sizeof(float) * 2;
		buf->datas[0].chunk->size = size;
	}
	pw_stream_queue_buffer(a->stream, b);
}

static void on_state(void* data, enum pw_stream_state old, enum pw_stream_state state, const char* error) {
	struct app* a = data;
	(void)old;
	if (state == PW_STREAM_STATE_ERROR) {
		fprintf(stderr, "stream error: %s\n", error ? error : "?");
		pw_main_loop_quit(a->loop);
		return;
	}
	if (!a->ready && pw_stream_get_node_id(a->stream) != SPA_ID_INVALID) {
		a->ready = 1;
		printf("ready %u\n", pw_stream_get_node_id(a->stream));
		fflush(stdout);
	}
}

static const struct pw_stream_events stream_events = {
    .version = PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state,
    .process = on_process,
};

static void set_property(struct app* a, char* line) {
	char* eq = strchr(line, '=');
	if (!eq || eq == line) {
		fprintf(stderr, "ignored (not KEY=VALUE): %s\n", line);
		return;
	}
	*eq = '\0';
	struct spa_dict_item item = SPA_DICT_ITEM_INIT(line, eq + 1);
	struct spa_dict dict = SPA_DICT_INIT(&item, 1);
	pw_stream_update_properties(a->stream, &dict);
	printf("set %s\n", line);
	fflush(stdout);
}

static void on_stdin(void* data, int fd, uint32_t mask) {
	struct app* a = data;
	if (!(mask & SPA_IO_IN)) {
		pw_main_loop_quit(a->loop);
		return;
	}
	ssize_t n = read(fd, a->line + a->used, sizeof(a->line) - 1 - a->used);
	if (n <= 0) {
		pw_main_loop_quit(a->loop);
		return;
	}
	a->used += (size_t)n;
	char* start = a->line;
	char* nl;
	while ((nl = memchr(start, '\n', a->used - (size_t)(start - a->line)))) {
		*nl = '\0';
		set_property(a, start);
		start = nl + 1;
	}
	a->used -= (size_t)(start - a->line);
	memmove(a->line, start, a->used);
	if (a->used == sizeof(a->line) - 1) a->used = 0;   // a line too long for the buffer is dropped
}

static void on_signal(void* data, int signal_number) {
	(void)signal_number;
	pw_main_loop_quit(((struct app*)data)->loop);
}

int main(int argc, char** argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: %s NAME [KEY=VALUE...]\n", argv[0]);
		return 2;
	}
	pw_init(&argc, &argv);
	struct app a = {0};
	a.loop = pw_main_loop_new(NULL);
	struct pw_loop* loop = pw_main_loop_get_loop(a.loop);
	pw_loop_add_signal(loop, SIGINT, on_signal, &a);
	pw_loop_add_signal(loop, SIGTERM, on_signal, &a);
	pw_loop_add_io(loop, STDIN_FILENO, SPA_IO_IN | SPA_IO_HUP | SPA_IO_ERR, false, on_stdin, &a);

	struct pw_properties* props = pw_properties_new(PW_KEY_MEDIA_TYPE, "Audio", PW_KEY_MEDIA_CATEGORY, "Playback",
	                                                PW_KEY_MEDIA_ROLE, "Music", PW_KEY_NODE_NAME, argv[1],
	                                                PW_KEY_APP_NAME, "qsd-test-stream", NULL);
	for (int i = 2; i < argc; ++i) {
		char* eq = strchr(argv[i], '=');
		if (!eq) continue;
		*eq = '\0';
		pw_properties_set(props, argv[i], eq + 1);
	}
	a.stream = pw_stream_new_simple(loop, argv[1], props, &stream_events, &a);

	uint8_t buffer[1024];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
	const struct spa_pod* params[1];
	params[0] = spa_format_audio_raw_build(&b, SPA_PARAM_EnumFormat,
	                                       &SPA_AUDIO_INFO_RAW_INIT(.format = SPA_AUDIO_FORMAT_F32, .channels = 2,
	                                                                .rate = 48000));
	pw_stream_connect(a.stream, PW_DIRECTION_OUTPUT, PW_ID_ANY,
	                  PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS | PW_STREAM_FLAG_RT_PROCESS, params, 1);
	pw_main_loop_run(a.loop);
	pw_stream_destroy(a.stream);
	pw_main_loop_destroy(a.loop);
	pw_deinit();
	return 0;
}
