/* A sound card for the PipeWire tests, exported to a real PipeWire daemon the way WirePlumber
 * exports ALSA cards: a spa_device implemented here and handed to the server with
 * pw_core_export(), with the EnumProfile/Profile/EnumRoute/Route params of an ACP card, and one
 * adapter node (support.null-audio-sink) per card device of the active profile, carrying
 * device.id and card.profile.device as WirePlumber's ALSA nodes do. Without sound hardware this
 * is the only way to have a card whose profile and ports can change and whose volume lives in
 * its Route param.
 *
 * Route volumes are stored as ACP stores them (spa/plugins/alsa/acp/acp.c, volume.h): as
 * PulseAudio's pa_volume_t, lround(cbrt(linear) * 65536), reported back as (v / 65536)^3 in a
 * float; a route is announced as changed only when what it stores changed (its port, its mute,
 * those integers). With --hw-volume-steps N the card is a mixer without a dB scale and N steps
 * (alsa-mixer.c): the volume is the hardware step nearest to what was asked, as ACP reports it.
 * Its routes report ACP's volumeStep (1/65537, or 1/N), or STEP with --volume-step, or none with
 * --no-volume-step, like the Bluetooth sinks behind Quickshell's issues #807 and #857.
 *
 * Usage: pw_test_device [--name NAME] [--profile INDEX] [--volume-step STEP] [--no-volume-step]
 *                       [--hw-volume-steps N]
 * Prints "ready <device global id>" once exported and its nodes are created; every change it
 * accepts is logged on stderr. SIGTERM/SIGINT end it (its nodes go with it).
 *
 * Profiles: 0 off; 1 output:analog-stereo (card device 0); 2 output:analog-stereo+input:analog-mono
 * (card devices 0 and 1). Routes: 0 analog-output-speaker and 1 analog-output-headphones (output,
 * device 0, profiles 1 and 2); 2 analog-input-mic (input, device 1, profile 2). */

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pipewire/pipewire.h>
#include <spa/monitor/device.h>
#include <spa/monitor/utils.h>
#include <spa/param/audio/raw.h>
#include <spa/param/param.h>
#include <spa/param/profile.h>
#include <spa/param/props.h>
#include <spa/param/route.h>
#include <spa/pod/builder.h>
#include <spa/pod/parser.h>
#include <spa/utils/result.h>

#define N_PROFILES 3
#define N_ROUTES 3
#define N_DEVS 2

struct profile {
	const char *name;
	const char *description;
	int priority;
	int n_devs;
	int devs[N_DEVS];
};

struct route {
	const char *name;
	const char *description;
	enum spa_direction direction;
	int priority;
	int device;
	int n_profiles;
	int profiles[2];
};

struct cdev {
	const char *suffix;
	const char *media_class;
	enum spa_direction direction;
	uint32_t channels;
	uint32_t map[2];
	uint32_t volumes[2];   /* pa_volume_t: 65536 is 100 % */
	bool mute;
	int route;
	struct pw_proxy *node;
};

static const struct profile profiles[N_PROFILES] = {
	{"off", "Off", 0, 0, {0, 0}},
	{"output:analog-stereo", "Analog Stereo Output", 6500, 1, {0, 0}},
	{"output:analog-stereo+input:analog-mono", "Analog Stereo Duplex", 6565, 2, {0, 1}},
};

static const struct route routes[N_ROUTES] = {
	{"analog-output-speaker", "Speakers", SPA_DIRECTION_OUTPUT, 100, 0, 2, {1, 2}},
	{"analog-output-headphones", "Headphones", SPA_DIRECTION_OUTPUT, 90, 0, 2, {1, 2}},
	{"analog-input-mic", "Microphone", SPA_DIRECTION_INPUT, 80, 1, 1, {2, 2}},
};

struct data {
	struct pw_main_loop *loop;
	struct pw_context *context;
	struct pw_core *core;
	struct spa_hook core_listener;

	struct spa_device device;
	struct spa_hook_list hooks;
	struct spa_device_info info;
	struct spa_param_info params[4];

	struct pw_proxy *proxy;
	struct spa_hook proxy_listener;
	uint32_t bound_id;
	bool ready;

	const char *name;
	int profile;
	float volume_step;      /* reported; 0: none */
	long hw_steps;          /* a mixer without a dB scale: its number of steps; 0: dB or software */
	struct cdev devs[N_DEVS];
};

#define PA_VOLUME_NORM 65536u

/* pa_sw_volume_from_linear and pa_sw_volume_to_linear (acp/volume.h). */
static uint32_t pa_from_linear(double v)
{
	if (!(v > 0.0))
		return 0;
	double r = cbrt(v) * PA_VOLUME_NORM;
	return r >= (double)(UINT32_MAX / 2) ? UINT32_MAX / 2 : (uint32_t)lround(r);
}

static float pa_to_linear(uint32_t v)
{
	if (v == 0)
		return 0.0f;
	if (v == PA_VOLUME_NORM)
		return 1.0f;
	double f = (double)v / PA_VOLUME_NORM;
	return (float)(f * f * f);
}

/* What a mixer without a dB scale reaches: to_alsa_volume, clamped to its range, then
 * from_alsa_volume (alsa-mixer.c), which acp.c's set_volume reports as the real volume. */
static uint32_t hw_step(const struct data *d, uint32_t v)
{
	long range = d->hw_steps - 1;
	long hw = lround((double)v * (double)range / PA_VOLUME_NORM);
	if (hw < 0)
		hw = 0;
	if (hw > range)
		hw = range;
	return (uint32_t)lround((double)hw * PA_VOLUME_NORM / (double)range);
}

#define IDX_EnumProfile 0
#define IDX_Profile 1
#define IDX_EnumRoute 2
#define IDX_Route 3

static bool profile_has_dev(int profile, int dev)
{
	for (int i = 0; i < profiles[profile].n_devs; i++)
		if (profiles[profile].devs[i] == dev)
			return true;
	return false;
}

static bool route_in_profile(int route, int profile)
{
	for (int i = 0; i < routes[route].n_profiles; i++)
		if (routes[route].profiles[i] == profile)
			return true;
	return false;
}

static void emit_info(struct data *d, bool full)
{
	static const struct spa_dict_item items[] = {
		{PW_KEY_MEDIA_CLASS, "Audio/Device"},
		{PW_KEY_DEVICE_API, "qsd-test"},
	};
	struct spa_dict_item all[4];
	char desc[128];
	uint32_t n = 0;

	all[n++] = items[0];
	all[n++] = items[1];
	all[n++] = SPA_DICT_ITEM_INIT(PW_KEY_DEVICE_NAME, d->name);
	snprintf(desc, sizeof(desc), "Test Card %s", d->name);
	all[n++] = SPA_DICT_ITEM_INIT(PW_KEY_DEVICE_DESCRIPTION, desc);

	if (full)
		d->info.change_mask = SPA_DEVICE_CHANGE_MASK_PROPS | SPA_DEVICE_CHANGE_MASK_PARAMS;
	d->info.props = &SPA_DICT_INIT(all, n);
	for (int i = 0; i < 4; i++) {
		if (d->params[i].user > 0) {
			d->params[i].flags ^= SPA_PARAM_INFO_SERIAL;
			d->params[i].user = 0;
		}
	}
	d->info.params = d->params;
	d->info.n_params = 4;
	spa_device_emit_info(&d->hooks, &d->info);
	d->info.change_mask = 0;
}

static void changed(struct data *d, int idx)
{
	d->info.change_mask |= SPA_DEVICE_CHANGE_MASK_PARAMS;
	d->params[idx].user++;
}

static struct spa_pod *build_profile(struct spa_pod_builder *b, uint32_t id, int index)
{
	const struct profile *p = &profiles[index];
	struct spa_pod_frame f[2];
	int32_t sinks[N_DEVS], sources[N_DEVS];
	int n_sinks = 0, n_sources = 0;

	for (int i = 0; i < p->n_devs; i++) {
		if (p->devs[i] == 0)
			sinks[n_sinks++] = 0;
		else
			sources[n_sources++] = p->devs[i];
	}
	spa_pod_builder_push_object(b, &f[0], SPA_TYPE_OBJECT_ParamProfile, id);
	spa_pod_builder_add(b,
		SPA_PARAM_PROFILE_index, SPA_POD_Int(index),
		SPA_PARAM_PROFILE_name, SPA_POD_String(p->name),
		SPA_PARAM_PROFILE_description, SPA_POD_String(p->description),
		SPA_PARAM_PROFILE_priority, SPA_POD_Int(p->priority),
		SPA_PARAM_PROFILE_available, SPA_POD_Id(SPA_PARAM_AVAILABILITY_yes),
		0);
	spa_pod_builder_prop(b, SPA_PARAM_PROFILE_classes, 0);
	spa_pod_builder_push_struct(b, &f[1]);
	spa_pod_builder_int(b, (n_sinks > 0) + (n_sources > 0));
	if (n_sources > 0)
		spa_pod_builder_add_struct(b, SPA_POD_String("Audio/Source"), SPA_POD_Int(n_sources),
			SPA_POD_String("card.profile.devices"),
			SPA_POD_Array(sizeof(int32_t), SPA_TYPE_Int, n_sources, sources));
	if (n_sinks > 0)
		spa_pod_builder_add_struct(b, SPA_POD_String("Audio/Sink"), SPA_POD_Int(n_sinks),
			SPA_POD_String("card.profile.devices"),
			SPA_POD_Array(sizeof(int32_t), SPA_TYPE_Int, n_sinks, sinks));
	spa_pod_builder_pop(b, &f[1]);
	if (id == SPA_PARAM_Profile) {
		spa_pod_builder_prop(b, SPA_PARAM_PROFILE_save, 0);
		spa_pod_builder_bool(b, false);
	}
	return spa_pod_builder_pop(b, &f[0]);
}

static struct spa_pod *build_route(struct data *d, struct spa_pod_builder *b, uint32_t id, int index, struct cdev *dev)
{
	const struct route *r = &routes[index];
	struct spa_pod_frame f[2];

	spa_pod_builder_push_object(b, &f[0], SPA_TYPE_OBJECT_ParamRoute, id);
	spa_pod_builder_add(b,
		SPA_PARAM_ROUTE_index, SPA_POD_Int(index),
		SPA_PARAM_ROUTE_direction, SPA_POD_Id(r->direction),
		SPA_PARAM_ROUTE_name, SPA_POD_String(r->name),
		SPA_PARAM_ROUTE_description, SPA_POD_String(r->description),
		SPA_PARAM_ROUTE_priority, SPA_POD_Int(r->priority),
		SPA_PARAM_ROUTE_available, SPA_POD_Id(SPA_PARAM_AVAILABILITY_yes),
		0);
	spa_pod_builder_prop(b, SPA_PARAM_ROUTE_profiles, 0);
	spa_pod_builder_array(b, sizeof(int32_t), SPA_TYPE_Int, r->n_profiles, r->profiles);
	if (dev != NULL) {
		spa_pod_builder_prop(b, SPA_PARAM_ROUTE_device, 0);
		spa_pod_builder_int(b, r->device);
		spa_pod_builder_prop(b, SPA_PARAM_ROUTE_props, 0);
		spa_pod_builder_push_object(b, &f[1], SPA_TYPE_OBJECT_Props, id);
		spa_pod_builder_prop(b, SPA_PROP_mute, 0);
		spa_pod_builder_bool(b, dev->mute);
		float volumes[2];
		for (uint32_t i = 0; i < dev->channels; i++)
			volumes[i] = pa_to_linear(dev->volumes[i]);
		spa_pod_builder_prop(b, SPA_PROP_channelVolumes, 0);
		spa_pod_builder_array(b, sizeof(float), SPA_TYPE_Float, dev->channels, volumes);
		spa_pod_builder_prop(b, SPA_PROP_volumeBase, SPA_POD_PROP_FLAG_READONLY);
		spa_pod_builder_float(b, 1.0f);
		if (d->volume_step > 0.0f) {
			spa_pod_builder_prop(b, SPA_PROP_volumeStep, SPA_POD_PROP_FLAG_READONLY);
			spa_pod_builder_float(b, d->volume_step);
		}
		spa_pod_builder_prop(b, SPA_PROP_channelMap, 0);
		spa_pod_builder_array(b, sizeof(uint32_t), SPA_TYPE_Id, dev->channels, dev->map);
		spa_pod_builder_pop(b, &f[1]);
	}
	int32_t devices[1] = {r->device};
	spa_pod_builder_prop(b, SPA_PARAM_ROUTE_devices, 0);
	spa_pod_builder_array(b, sizeof(int32_t), SPA_TYPE_Int, 1, devices);
	if (dev != NULL) {
		spa_pod_builder_prop(b, SPA_PARAM_ROUTE_profile, 0);
		spa_pod_builder_int(b, d->profile);
		spa_pod_builder_prop(b, SPA_PARAM_ROUTE_save, 0);
		spa_pod_builder_bool(b, false);
	}
	return spa_pod_builder_pop(b, &f[0]);
}

static int impl_enum_params(void *object, int seq, uint32_t id, uint32_t start, uint32_t num,
		const struct spa_pod *filter)
{
	struct data *d = object;
	uint8_t buffer[4096];
	struct spa_pod_builder b;
	struct spa_result_device_params result;
	uint32_t count = 0;

	(void)filter;
	result.id = id;
	result.next = start;
	while (count < num) {
		struct spa_pod *param = NULL;
		result.index = result.next++;
		spa_pod_builder_init(&b, buffer, sizeof(buffer));
		switch (id) {
		case SPA_PARAM_EnumProfile:
			if (result.index >= N_PROFILES)
				return 0;
			param = build_profile(&b, id, (int)result.index);
			break;
		case SPA_PARAM_Profile:
			if (result.index > 0)
				return 0;
			param = build_profile(&b, id, d->profile);
			break;
		case SPA_PARAM_EnumRoute:
			if (result.index >= N_ROUTES)
				return 0;
			param = build_route(d, &b, id, (int)result.index, NULL);
			break;
		case SPA_PARAM_Route:
			if (result.index >= N_DEVS)
				return 0;
			if (!profile_has_dev(d->profile, (int)result.index))
				continue;
			param = build_route(d, &b, id, d->devs[result.index].route, &d->devs[result.index]);
			break;
		default:
			return -ENOENT;
		}
		result.param = param;
		spa_device_emit_result(&d->hooks, seq, 0, SPA_RESULT_TYPE_DEVICE_PARAMS, &result);
		count++;
	}
	return 0;
}

static void destroy_node(struct cdev *dev)
{
	if (dev->node) {
		pw_proxy_destroy(dev->node);
		dev->node = NULL;
	}
}

static void create_node(struct data *d, int index)
{
	struct cdev *dev = &d->devs[index];
	char name[128], desc[160], devid[16], cpd[16];
	struct spa_dict_item items[10];
	uint32_t n = 0;

	if (dev->node)
		return;
	snprintf(name, sizeof(name), "%s.%s", d->name, dev->suffix);
	snprintf(desc, sizeof(desc), "Test Card %s %s", d->name, dev->suffix);
	snprintf(devid, sizeof(devid), "%u", d->bound_id);
	snprintf(cpd, sizeof(cpd), "%d", index);
	items[n++] = SPA_DICT_ITEM_INIT("factory.name", "support.null-audio-sink");
	items[n++] = SPA_DICT_ITEM_INIT(PW_KEY_NODE_NAME, name);
	items[n++] = SPA_DICT_ITEM_INIT(PW_KEY_NODE_DESCRIPTION, desc);
	items[n++] = SPA_DICT_ITEM_INIT(PW_KEY_MEDIA_CLASS, dev->media_class);
	items[n++] = SPA_DICT_ITEM_INIT(PW_KEY_DEVICE_ID, devid);
	items[n++] = SPA_DICT_ITEM_INIT("card.profile.device", cpd);
	items[n++] = SPA_DICT_ITEM_INIT("audio.position", dev->channels == 2 ? "[ FL FR ]" : "[ MONO ]");
	items[n++] = SPA_DICT_ITEM_INIT("device.routes", "1");
	dev->node = pw_core_create_object(d->core, "adapter", PW_TYPE_INTERFACE_Node, PW_VERSION_NODE,
			&SPA_DICT_INIT(items, n), 0);
}

static void sync_nodes(struct data *d)
{
	for (int i = 0; i < N_DEVS; i++) {
		if (profile_has_dev(d->profile, i))
			create_node(d, i);
		else
			destroy_node(&d->devs[i]);
	}
}

/* Returns whether what the route stores changed (ACP's volume_changed and mute_changed). */
static bool apply_props(struct data *d, struct cdev *dev, const struct spa_pod *props)
{
	const struct spa_pod_object *obj = (const struct spa_pod_object *)props;
	const struct spa_pod_prop *prop;
	bool changed = false;

	if (!spa_pod_is_object_type(props, SPA_TYPE_OBJECT_Props))
		return false;
	SPA_POD_OBJECT_FOREACH(obj, prop) {
		switch (prop->key) {
		case SPA_PROP_mute: {
			bool mute;
			if (spa_pod_get_bool(&prop->value, &mute) == 0 && mute != dev->mute) {
				dev->mute = mute;
				changed = true;
			}
			break;
		}
		case SPA_PROP_channelVolumes: {
			float v[SPA_AUDIO_MAX_CHANNELS];
			uint32_t n = spa_pod_copy_array(&prop->value, SPA_TYPE_Float, v, SPA_AUDIO_MAX_CHANNELS);
			/* A single value sets every channel (WirePlumber restores routes this way). */
			for (uint32_t i = 0; n > 0 && i < dev->channels; i++) {
				uint32_t pa = pa_from_linear(v[i < n ? i : n - 1]);
				if (d->hw_steps > 0)
					pa = hw_step(d, pa);
				changed |= pa != dev->volumes[i];
				dev->volumes[i] = pa;
			}
			break;
		}
		default:
			break;
		}
	}
	return changed;
}

static int impl_set_param(void *object, uint32_t id, uint32_t flags, const struct spa_pod *param)
{
	struct data *d = object;
	(void)flags;

	switch (id) {
	case SPA_PARAM_Profile: {
		int32_t index = -1;
		if (param == NULL || spa_pod_parse_object(param, SPA_TYPE_OBJECT_ParamProfile, NULL,
				SPA_PARAM_PROFILE_index, SPA_POD_Int(&index)) < 0)
			return -EINVAL;
		if (index < 0 || index >= N_PROFILES)
			return -EINVAL;
		fprintf(stderr, "pw_test_device: profile %d -> %d\n", d->profile, index);
		d->profile = index;
		for (int i = 0; i < N_DEVS; i++)
			if (!route_in_profile(d->devs[i].route, index))
				for (int r = 0; r < N_ROUTES; r++)
					if (routes[r].device == i && route_in_profile(r, index)) {
						d->devs[i].route = r;
						break;
					}
		sync_nodes(d);
		changed(d, IDX_Profile);
		changed(d, IDX_Route);
		changed(d, IDX_EnumRoute);
		emit_info(d, false);
		return 0;
	}
	case SPA_PARAM_Route: {
		int32_t index = -1, device = -1;
		struct spa_pod *props = NULL;
		bool save = false;
		if (param == NULL || spa_pod_parse_object(param, SPA_TYPE_OBJECT_ParamRoute, NULL,
				SPA_PARAM_ROUTE_index, SPA_POD_Int(&index),
				SPA_PARAM_ROUTE_device, SPA_POD_Int(&device),
				SPA_PARAM_ROUTE_props, SPA_POD_OPT_Pod(&props),
				SPA_PARAM_ROUTE_save, SPA_POD_OPT_Bool(&save)) < 0)
			return -EINVAL;
		if (index < 0 || index >= N_ROUTES || device < 0 || device >= N_DEVS ||
		    routes[index].device != device || !route_in_profile(index, d->profile))
			return -EINVAL;
		bool moved = d->devs[device].route != index;
		d->devs[device].route = index;
		bool stored = props != NULL && apply_props(d, &d->devs[device], props);
		fprintf(stderr, "pw_test_device: route %d on device %d: mute %d volumes %u %u save %d%s\n", index, device,
			d->devs[device].mute, d->devs[device].volumes[0], d->devs[device].volumes[1], save,
			moved || stored ? "" : " (unchanged)");
		/* ACP announces a route only when its port, volume or mute changed. */
		if (moved || stored)
			changed(d, IDX_Route);
		emit_info(d, false);
		return 0;
	}
	default:
		return -ENOENT;
	}
}

static int impl_add_listener(void *object, struct spa_hook *listener,
		const struct spa_device_events *events, void *data)
{
	struct data *d = object;
	struct spa_hook_list save;

	spa_hook_list_isolate(&d->hooks, &save, listener, events, data);
	if (events->info)
		emit_info(d, true);
	spa_hook_list_join(&d->hooks, &save);
	return 0;
}

static int impl_sync(void *object, int seq)
{
	struct data *d = object;
	spa_device_emit_result(&d->hooks, seq, 0, 0, NULL);
	return 0;
}

static const struct spa_device_methods impl_device = {
	SPA_VERSION_DEVICE_METHODS,
	.add_listener = impl_add_listener,
	.sync = impl_sync,
	.enum_params = impl_enum_params,
	.set_param = impl_set_param,
};

static void on_bound(void *data, uint32_t global_id)
{
	struct data *d = data;
	d->bound_id = global_id;
	sync_nodes(d);
	pw_core_sync(d->core, PW_ID_CORE, 0);
}

static const struct pw_proxy_events proxy_events = {
	PW_VERSION_PROXY_EVENTS,
	.bound = on_bound,
};

static void on_core_done(void *data, uint32_t id, int seq)
{
	struct data *d = data;
	(void)seq;
	if (id == PW_ID_CORE && d->bound_id != SPA_ID_INVALID && !d->ready) {
		d->ready = true;
		printf("ready %u\n", d->bound_id);
		fflush(stdout);
	}
}

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message)
{
	struct data *d = data;
	fprintf(stderr, "pw_test_device: error on %u (seq %d): %s: %s\n", id, seq, spa_strerror(res), message);
	if (id == PW_ID_CORE && res == -EPIPE)
		pw_main_loop_quit(d->loop);
}

static const struct pw_core_events core_events = {
	PW_VERSION_CORE_EVENTS,
	.done = on_core_done,
	.error = on_core_error,
};

static void on_signal(void *data, int signo)
{
	struct data *d = data;
	(void)signo;
	pw_main_loop_quit(d->loop);
}

int main(int argc, char *argv[])
{
	struct data d = {0};
	d.name = "qsd_test_card";
	d.profile = 1;
	d.bound_id = SPA_ID_INVALID;
	float volume_step = -1.0f;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-volume-step") == 0)
			volume_step = 0.0f;
		else if (i + 1 >= argc)
			break;
		else if (strcmp(argv[i], "--name") == 0)
			d.name = argv[++i];
		else if (strcmp(argv[i], "--profile") == 0)
			d.profile = atoi(argv[++i]);
		else if (strcmp(argv[i], "--volume-step") == 0)
			volume_step = (float)atof(argv[++i]);
		else if (strcmp(argv[i], "--hw-volume-steps") == 0)
			d.hw_steps = atol(argv[++i]);
	}
	if (d.profile < 0 || d.profile >= N_PROFILES)
		d.profile = 1;
	if (d.hw_steps == 1 || d.hw_steps < 0)
		d.hw_steps = 0;
	/* ACP's volume_step: 1 / n_volume_steps, PA_VOLUME_NORM + 1 of them with a dB scale. */
	d.volume_step = volume_step >= 0.0f ? volume_step : 1.0f / (float)(d.hw_steps > 0 ? d.hw_steps : PA_VOLUME_NORM + 1);

	d.devs[0] = (struct cdev){"speaker", "Audio/Sink", SPA_DIRECTION_OUTPUT, 2,
		{SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR}, {PA_VOLUME_NORM, PA_VOLUME_NORM}, false, 0, NULL};
	d.devs[1] = (struct cdev){"mic", "Audio/Source", SPA_DIRECTION_INPUT, 1,
		{SPA_AUDIO_CHANNEL_MONO, 0}, {PA_VOLUME_NORM, PA_VOLUME_NORM}, false, 2, NULL};

	pw_init(&argc, &argv);
	d.loop = pw_main_loop_new(NULL);
	pw_loop_add_signal(pw_main_loop_get_loop(d.loop), SIGINT, on_signal, &d);
	pw_loop_add_signal(pw_main_loop_get_loop(d.loop), SIGTERM, on_signal, &d);
	d.context = pw_context_new(pw_main_loop_get_loop(d.loop), NULL, 0);
	d.core = pw_context_connect(d.context, NULL, 0);
	if (d.core == NULL) {
		fprintf(stderr, "pw_test_device: cannot connect: %s\n", strerror(errno));
		return 1;
	}
	pw_core_add_listener(d.core, &d.core_listener, &core_events, &d);

	spa_hook_list_init(&d.hooks);
	d.device.iface = SPA_INTERFACE_INIT(SPA_TYPE_INTERFACE_Device, SPA_VERSION_DEVICE, &impl_device, &d);
	d.info = SPA_DEVICE_INFO_INIT();
	d.params[IDX_EnumProfile] = SPA_PARAM_INFO(SPA_PARAM_EnumProfile, SPA_PARAM_INFO_READ);
	d.params[IDX_Profile] = SPA_PARAM_INFO(SPA_PARAM_Profile, SPA_PARAM_INFO_READWRITE);
	d.params[IDX_EnumRoute] = SPA_PARAM_INFO(SPA_PARAM_EnumRoute, SPA_PARAM_INFO_READ);
	d.params[IDX_Route] = SPA_PARAM_INFO(SPA_PARAM_Route, SPA_PARAM_INFO_READWRITE);

	struct spa_dict_item items[] = {
		{PW_KEY_MEDIA_CLASS, "Audio/Device"},
		{PW_KEY_DEVICE_API, "qsd-test"},
		{PW_KEY_DEVICE_NAME, d.name},
	};
	d.proxy = pw_core_export(d.core, SPA_TYPE_INTERFACE_Device, &SPA_DICT_INIT_ARRAY(items), &d.device, 0);
	if (d.proxy == NULL) {
		fprintf(stderr, "pw_test_device: export failed: %s\n", strerror(errno));
		return 1;
	}
	pw_proxy_add_listener(d.proxy, &d.proxy_listener, &proxy_events, &d);

	pw_main_loop_run(d.loop);

	for (int i = 0; i < N_DEVS; i++)
		destroy_node(&d.devs[i]);
	pw_proxy_destroy(d.proxy);
	pw_core_disconnect(d.core);
	pw_context_destroy(d.context);
	pw_main_loop_destroy(d.loop);
	pw_deinit();
	return 0;
}
