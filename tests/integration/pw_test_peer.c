/* A hostile client of the session's PipeWire, for the tests of qsd's bounds on what such a client
 * sends it (test_pipewire_hostile.py). Any application may do each of these:
 *
 *   pw_test_peer device PROFILES ROUTES LENGTH
 *       exports a device (pw_core_export of a spa_device, as pw_test_device.c and WirePlumber
 *       do) of class Audio/Device named qsd_hostile_card, with PROFILES EnumProfile entries,
 *       ROUTES EnumRoute entries and ROUTES active Route entries (one per card device), each
 *       name and description LENGTH bytes: "p<index>-" or "r<index>-", then "é" (2 bytes) to
 *       the length. Prints "ready <global id>" once exported; SIGTERM ends it.
 *   pw_test_peer devices COUNT PROFILES ROUTES LENGTH
 *       the same, COUNT devices exported one after the other, named qsd_hostile_card_<i>.
 *       Prints "ready <global id> <global id>..." once PipeWire has all of them, in the order
 *       they were exported; SIGTERM ends it, and they go with it.
 *   pw_test_peer metadata KEY LENGTH COUNT NAME
 *       writes COUNT keys of the "default" metadata (subject 0): KEY itself when COUNT is 1,
 *       else KEY.0, KEY.1..., each {"name":"NAME","pad":"xxx..."} of LENGTH bytes (type
 *       Spa:String:JSON). Longer than the 128 KiB an argument of pw-metadata can be. Prints
 *       "done" once PipeWire has them all (a core sync), and exits.
 *   pw_test_peer nodes COUNT
 *       creates COUNT audio sinks without volume controls (spa-node-factory's
 *       support.null-audio-sink, no adapter: no Props), named qsd_novol_<i>. Prints "ready"
 *       once PipeWire has them all; SIGTERM ends it, and they go with it. */

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pipewire/extensions/metadata.h>
#include <pipewire/pipewire.h>
#include <spa/monitor/device.h>
#include <spa/monitor/utils.h>
#include <spa/param/param.h>
#include <spa/param/profile.h>
#include <spa/param/route.h>
#include <spa/pod/builder.h>

struct data;

/* One exported device. */
struct device {
	struct data *d;
	struct spa_device device;
	struct spa_hook_list hooks;
	struct spa_device_info info;
	struct spa_param_info params[4];
	char name[64];
	struct spa_dict_item items[4];
	struct pw_proxy *proxy;
	struct spa_hook proxy_listener;
	uint32_t global;
};

struct data {
	struct pw_main_loop *loop;
	struct pw_context *context;
	struct pw_core *core;
	struct spa_hook core_listener;
	int sync_seq;
	void (*on_synced)(struct data *d);

	/* device, devices */
	struct device *devices;
	long n_devices, n_bound;
	bool numbered;
	long profiles, routes, length;

	/* metadata */
	struct pw_registry *registry;
	struct spa_hook registry_listener;
	struct pw_metadata *metadata;
	const char *key, *name;
	long count;
};

static void on_done(void *data, uint32_t id, int seq)
{
	struct data *d = data;
	if (id == PW_ID_CORE && seq == d->sync_seq && d->on_synced)
		d->on_synced(d);
}

static void on_error(void *data, uint32_t id, int seq, int res, const char *message)
{
	struct data *d = data;
	fprintf(stderr, "error on %u (seq %d): %d %s\n", id, seq, res, message);
	if (id == PW_ID_CORE && res == -EPIPE)
		pw_main_loop_quit(d->loop);
}

static const struct pw_core_events core_events = {
	PW_VERSION_CORE_EVENTS,
	.done = on_done,
	.error = on_error,
};

static void do_quit(void *data, int signal_number)
{
	struct data *d = data;
	(void)signal_number;
	pw_main_loop_quit(d->loop);
}

/* "<prefix><index>-" then "é" up to `length` bytes (a last odd byte is "x"). */
static void fill_name(char *out, long length, char prefix, uint32_t index)
{
	int n = snprintf(out, (size_t)length + 1, "%c%u-", prefix, index);
	long i = n < length ? n : length;
	for (; i + 1 < length; i += 2) {
		out[i] = (char)0xC3;
		out[i + 1] = (char)0xA9;
	}
	if (i < length)
		out[i++] = 'x';
	out[length] = 0;
}

/* --- device */

static void emit_info(struct device *dev)
{
	dev->info.change_mask = SPA_DEVICE_CHANGE_MASK_PARAMS | SPA_DEVICE_CHANGE_MASK_PROPS;
	dev->info.props = &SPA_DICT_INIT_ARRAY(dev->items);
	dev->info.params = dev->params;
	dev->info.n_params = 4;
	spa_device_emit_info(&dev->hooks, &dev->info);
	dev->info.change_mask = 0;
}

static int device_add_listener(void *object, struct spa_hook *listener, const struct spa_device_events *events,
			       void *data)
{
	struct device *dev = object;
	struct spa_hook_list save;
	spa_hook_list_isolate(&dev->hooks, &save, listener, events, data);
	if (events->info)
		emit_info(dev);
	spa_hook_list_join(&dev->hooks, &save);
	return 0;
}

static int device_sync(void *object, int seq)
{
	struct device *dev = object;
	spa_device_emit_result(&dev->hooks, seq, 0, 0, NULL);
	return 0;
}

static int device_enum_params(void *object, int seq, uint32_t id, uint32_t start, uint32_t num,
			      const struct spa_pod *filter)
{
	struct device *dev = object;
	struct data *d = dev->d;
	(void)filter;
	long n = id == SPA_PARAM_EnumProfile ? d->profiles
		: id == SPA_PARAM_Profile ? 1
		: id == SPA_PARAM_EnumRoute || id == SPA_PARAM_Route ? d->routes : 0;
	size_t size = 2 * (size_t)d->length + 4096;
	uint8_t *buffer = malloc(size);
	char *name = malloc((size_t)d->length + 1);
	struct spa_result_device_params result = {.id = id, .next = start};
	for (uint32_t c = 0; c < num; c++) {
		result.index = result.next++;
		if (result.index >= n)
			break;
		struct spa_pod_builder b;
		struct spa_pod_frame f;
		spa_pod_builder_init(&b, buffer, size);
		if (id == SPA_PARAM_EnumProfile || id == SPA_PARAM_Profile) {
			fill_name(name, d->length, 'p', result.index);
			spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_ParamProfile, id);
			spa_pod_builder_add(&b, SPA_PARAM_PROFILE_index, SPA_POD_Int(result.index), SPA_PARAM_PROFILE_name,
					    SPA_POD_String(name), SPA_PARAM_PROFILE_description, SPA_POD_String(name),
					    SPA_PARAM_PROFILE_available, SPA_POD_Id(SPA_PARAM_AVAILABILITY_yes), 0);
		} else {
			fill_name(name, d->length, 'r', result.index);
			spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_ParamRoute, id);
			spa_pod_builder_add(&b, SPA_PARAM_ROUTE_index, SPA_POD_Int(result.index), SPA_PARAM_ROUTE_direction,
					    SPA_POD_Id(SPA_DIRECTION_OUTPUT), SPA_PARAM_ROUTE_name, SPA_POD_String(name),
					    SPA_PARAM_ROUTE_description, SPA_POD_String(name), SPA_PARAM_ROUTE_available,
					    SPA_POD_Id(SPA_PARAM_AVAILABILITY_yes), 0);
			if (id == SPA_PARAM_Route)
				spa_pod_builder_add(&b, SPA_PARAM_ROUTE_device, SPA_POD_Int(result.index), 0);
		}
		result.param = spa_pod_builder_pop(&b, &f);
		spa_device_emit_result(&dev->hooks, seq, 0, SPA_RESULT_TYPE_DEVICE_PARAMS, &result);
	}
	free(name);
	free(buffer);
	return 0;
}

static int device_set_param(void *object, uint32_t id, uint32_t flags, const struct spa_pod *param)
{
	(void)object, (void)id, (void)flags, (void)param;
	return 0;
}

static const struct spa_device_methods device_methods = {
	SPA_VERSION_DEVICE_METHODS,
	.add_listener = device_add_listener,
	.sync = device_sync,
	.enum_params = device_enum_params,
	.set_param = device_set_param,
};

/* "ready" and the global ids once every device is bound: the server handles a client's exports
 * in order, so the ids are in the order the devices were exported. */
static void on_bound(void *data, uint32_t global_id)
{
	struct device *dev = data;
	struct data *d = dev->d;
	if (dev->global != SPA_ID_INVALID)
		return;
	dev->global = global_id;
	if (++d->n_bound < d->n_devices)
		return;
	printf("ready");
	for (long i = 0; i < d->n_devices; i++)
		printf(" %u", d->devices[i].global);
	printf("\n");
	fflush(stdout);
}

static const struct pw_proxy_events proxy_events = {
	PW_VERSION_PROXY_EVENTS,
	.bound = on_bound,
};

static int run_device(struct data *d)
{
	d->devices = calloc((size_t)d->n_devices, sizeof *d->devices);
	if (!d->devices)
		return 1;
	for (long i = 0; i < d->n_devices; i++) {
		struct device *dev = &d->devices[i];
		dev->d = d;
		dev->global = SPA_ID_INVALID;
		if (d->numbered)
			snprintf(dev->name, sizeof dev->name, "qsd_hostile_card_%ld", i);
		else
			snprintf(dev->name, sizeof dev->name, "qsd_hostile_card");
		dev->items[0] = SPA_DICT_ITEM_INIT(PW_KEY_MEDIA_CLASS, "Audio/Device");
		dev->items[1] = SPA_DICT_ITEM_INIT(PW_KEY_DEVICE_API, "qsd-hostile");
		dev->items[2] = SPA_DICT_ITEM_INIT(PW_KEY_DEVICE_NAME, dev->name);
		dev->items[3] = SPA_DICT_ITEM_INIT(PW_KEY_DEVICE_DESCRIPTION, "qsd hostile card");
		spa_hook_list_init(&dev->hooks);
		dev->device.iface = SPA_INTERFACE_INIT(SPA_TYPE_INTERFACE_Device, SPA_VERSION_DEVICE, &device_methods, dev);
		dev->info = SPA_DEVICE_INFO_INIT();
		dev->params[0] = SPA_PARAM_INFO(SPA_PARAM_EnumProfile, SPA_PARAM_INFO_READ);
		dev->params[1] = SPA_PARAM_INFO(SPA_PARAM_Profile, SPA_PARAM_INFO_READWRITE);
		dev->params[2] = SPA_PARAM_INFO(SPA_PARAM_EnumRoute, SPA_PARAM_INFO_READ);
		dev->params[3] = SPA_PARAM_INFO(SPA_PARAM_Route, SPA_PARAM_INFO_READWRITE);
		dev->proxy = pw_core_export(d->core, SPA_TYPE_INTERFACE_Device, &SPA_DICT_INIT_ARRAY(dev->items),
					    &dev->device, 0);
		if (!dev->proxy) {
			perror("pw_core_export");
			return 1;
		}
		pw_proxy_add_listener(dev->proxy, &dev->proxy_listener, &proxy_events, dev);
		/* Let the messages go out as they are made: the connection's buffer holds a few. */
		pw_loop_iterate(pw_main_loop_get_loop(d->loop), 0);
	}
	pw_main_loop_run(d->loop);
	return 0;
}

/* --- metadata */

static void metadata_written(struct data *d)
{
	printf("done\n");
	fflush(stdout);
	pw_main_loop_quit(d->loop);
}

static void on_global(void *data, uint32_t id, uint32_t permissions, const char *type, uint32_t version,
		      const struct spa_dict *props)
{
	struct data *d = data;
	(void)permissions, (void)version;
	if (d->metadata || strcmp(type, PW_TYPE_INTERFACE_Metadata) != 0 || !props)
		return;
	const char *name = spa_dict_lookup(props, PW_KEY_METADATA_NAME);
	if (!name || strcmp(name, "default") != 0)
		return;
	d->metadata = pw_registry_bind(d->registry, id, type, PW_VERSION_METADATA, 0);
	char *value = malloc((size_t)d->length + 1);
	int head = snprintf(value, (size_t)d->length + 1, "{\"name\":\"%s\",\"pad\":\"", d->name);
	long i = head;
	for (; i < d->length - 2; i++)
		value[i] = 'x';
	if (i < d->length)
		memcpy(value + i, "\"}", 2), i += 2;
	value[i] = 0;
	for (long k = 0; k < d->count; k++) {
		char key[512];
		if (d->count == 1)
			snprintf(key, sizeof key, "%s", d->key);
		else
			snprintf(key, sizeof key, "%s.%ld", d->key, k);
		pw_metadata_set_property(d->metadata, 0, key, "Spa:String:JSON", value);
		/* Let the messages go out as they are made: the connection's buffer holds a few. */
		pw_loop_iterate(pw_main_loop_get_loop(d->loop), 0);
	}
	free(value);
	d->on_synced = metadata_written;
	d->sync_seq = pw_core_sync(d->core, PW_ID_CORE, 0);
}

static const struct pw_registry_events registry_events = {
	PW_VERSION_REGISTRY_EVENTS,
	.global = on_global,
};

static int run_metadata(struct data *d)
{
	d->registry = pw_core_get_registry(d->core, PW_VERSION_REGISTRY, 0);
	pw_registry_add_listener(d->registry, &d->registry_listener, &registry_events, d);
	pw_main_loop_run(d->loop);
	return d->metadata ? 0 : 1;
}

/* --- nodes */

static void nodes_made(struct data *d)
{
	(void)d;
	printf("ready\n");
	fflush(stdout);
}

static int run_nodes(struct data *d)
{
	for (long i = 0; i < d->count; i++) {
		char name[64];
		snprintf(name, sizeof name, "qsd_novol_%ld", i);
		struct spa_dict_item items[] = {
			{"factory.name", "support.null-audio-sink"},
			{PW_KEY_NODE_NAME, name},
			{PW_KEY_MEDIA_CLASS, "Audio/Sink"},
		};
		if (!pw_core_create_object(d->core, "spa-node-factory", PW_TYPE_INTERFACE_Node, PW_VERSION_NODE,
					   &SPA_DICT_INIT_ARRAY(items), 0)) {
			perror("pw_core_create_object");
			return 1;
		}
	}
	d->on_synced = nodes_made;
	d->sync_seq = pw_core_sync(d->core, PW_ID_CORE, 0);
	pw_main_loop_run(d->loop);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: pw_test_peer device PROFILES ROUTES LENGTH | devices COUNT PROFILES ROUTES LENGTH | "
			"metadata KEY LENGTH COUNT NAME | nodes COUNT\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct data d = {0};
	if (argc < 2)
		return usage();
	const char *mode = argv[1];
	if (strcmp(mode, "device") == 0 && argc == 5) {
		d.n_devices = 1;
		d.profiles = atol(argv[2]);
		d.routes = atol(argv[3]);
		d.length = atol(argv[4]);
	} else if (strcmp(mode, "devices") == 0 && argc == 6) {
		d.n_devices = atol(argv[2]);
		d.numbered = true;
		d.profiles = atol(argv[3]);
		d.routes = atol(argv[4]);
		d.length = atol(argv[5]);
	} else if (strcmp(mode, "metadata") == 0 && argc == 6) {
		d.key = argv[2];
		d.length = atol(argv[3]);
		d.count = atol(argv[4]);
		d.name = argv[5];
	} else if (strcmp(mode, "nodes") == 0 && argc == 3) {
		d.count = atol(argv[2]);
	} else {
		return usage();
	}
	if (d.length < 0 || d.length > (64l << 20) || d.count < 0 || d.profiles < 0 || d.routes < 0 ||
	    (d.numbered && (d.n_devices < 1 || d.n_devices > 100000)))
		return usage();

	pw_init(NULL, NULL);
	d.loop = pw_main_loop_new(NULL);
	struct pw_loop *loop = pw_main_loop_get_loop(d.loop);
	pw_loop_add_signal(loop, SIGINT, do_quit, &d);
	pw_loop_add_signal(loop, SIGTERM, do_quit, &d);
	d.context = pw_context_new(loop, NULL, 0);
	d.core = pw_context_connect(d.context, NULL, 0);
	if (!d.core) {
		perror("pw_context_connect");
		return 1;
	}
	pw_core_add_listener(d.core, &d.core_listener, &core_events, &d);

	int res = d.n_devices > 0 ? run_device(&d) : strcmp(mode, "metadata") == 0 ? run_metadata(&d) : run_nodes(&d);
	for (long i = 0; d.devices && i < d.n_devices; i++)
		if (d.devices[i].proxy)
			pw_proxy_destroy(d.devices[i].proxy);
	free(d.devices);
	if (d.metadata)
		pw_proxy_destroy((struct pw_proxy *)d.metadata);
	if (d.registry)
		pw_proxy_destroy((struct pw_proxy *)d.registry);
	pw_core_disconnect(d.core);
	pw_context_destroy(d.context);
	pw_main_loop_destroy(d.loop);
	pw_deinit();
	return res;
}
