#include "pod.hpp"

#include "../../text.hpp"

#include <spa/param/audio/raw-utils.h>
#include <spa/param/audio/raw.h>
#include <spa/param/param.h>
#include <spa/param/profile.h>
#include <spa/param/props.h>
#include <spa/param/route.h>
#include <spa/pod/iter.h>

#include <algorithm>
#include <cstring>

namespace qsd::pipewire {

namespace {

constexpr uint32_t kMaxChannels = SPA_AUDIO_MAX_CHANNELS;

// spa_pod_copy_array trusts the array's child size; a peer's pod is checked here first.
template <typename T>
bool readArray(const spa_pod* pod, uint32_t type, std::vector<T>& out) {
	if (!spa_pod_is_array(pod)) return false;
	const auto* arr = reinterpret_cast<const spa_pod_array*>(pod);
	if (arr->body.child.type != type || arr->body.child.size != sizeof(T)) return false;
	uint32_t n = (SPA_POD_BODY_SIZE(pod) - uint32_t(sizeof(spa_pod_array_body))) / uint32_t(sizeof(T));
	n = std::min(n, kMaxChannels);
	out.resize(n);
	if (n > 0) std::memcpy(out.data(), SPA_POD_ARRAY_VALUES(pod), n * sizeof(T));
	return true;
}

bool readInt(const spa_pod* pod, int32_t& out) { return spa_pod_get_int(pod, &out) == 0; }
bool readId(const spa_pod* pod, uint32_t& out) { return spa_pod_get_id(pod, &out) == 0; }

// The strings of a device's params (profile and route names and descriptions): cut at a
// character after kMaxParamTextBytes. Whoever exports the device chooses them, and 4 KB names
// were kept whole.
bool readString(const spa_pod* pod, std::string& out) {
	const char* s = nullptr;
	if (spa_pod_get_string(pod, &s) < 0 || !s) return false;
	out = cutAtCharacter(std::string_view(s, strnlen(s, SPA_POD_BODY_SIZE(pod))), kMaxParamTextBytes);
	return true;
}

template <typename F>
void forEachProp(const spa_pod* pod, F&& f) {
	const auto* obj = reinterpret_cast<const spa_pod_object*>(pod);
	const spa_pod_prop* prop = nullptr;
	SPA_POD_OBJECT_FOREACH(obj, prop) { f(prop->key, &prop->value); }
}

void addVolumeProps(spa_pod_builder& b, const std::optional<std::vector<float>>& volumes, std::optional<bool> mute) {
	if (volumes) {
		spa_pod_builder_prop(&b, SPA_PROP_channelVolumes, 0);
		spa_pod_builder_array(&b, sizeof(float), SPA_TYPE_Float, uint32_t(volumes->size()), volumes->data());
	}
	if (mute) {
		spa_pod_builder_prop(&b, SPA_PROP_mute, 0);
		spa_pod_builder_bool(&b, *mute);
	}
}

} // namespace

std::optional<VolumeState> parseProps(const spa_pod* pod) {
	if (!pod || !spa_pod_is_object_type(pod, SPA_TYPE_OBJECT_Props)) return std::nullopt;
	VolumeState s;
	bool any = false;
	forEachProp(pod, [&](uint32_t key, const spa_pod* value) {
		switch (key) {
		case SPA_PROP_channelVolumes:
			if (readArray(value, SPA_TYPE_Float, s.linear)) any = true;
			break;
		case SPA_PROP_channelMap:
			readArray(value, SPA_TYPE_Id, s.channelMap);
			break;
		case SPA_PROP_mute: {
			bool m = false;
			if (spa_pod_get_bool(value, &m) == 0) {
				s.mute = m;
				any = true;
			}
			break;
		}
		case SPA_PROP_volume: {
			float v = 0;
			if (spa_pod_get_float(value, &v) == 0) {
				s.volume = v;
				any = true;
			}
			break;
		}
		case SPA_PROP_volumeStep: {
			float v = 0;
			if (spa_pod_get_float(value, &v) == 0) s.step = v;
			break;
		}
		default: break;
		}
	});
	if (!any) return std::nullopt;
	return s;
}

std::optional<ProfileParam> parseProfile(const spa_pod* pod) {
	if (!pod || !spa_pod_is_object_type(pod, SPA_TYPE_OBJECT_ParamProfile)) return std::nullopt;
	ProfileParam p;
	forEachProp(pod, [&](uint32_t key, const spa_pod* value) {
		switch (key) {
		case SPA_PARAM_PROFILE_index: readInt(value, p.index); break;
		case SPA_PARAM_PROFILE_name: readString(value, p.name); break;
		case SPA_PARAM_PROFILE_description: readString(value, p.description); break;
		case SPA_PARAM_PROFILE_priority: readInt(value, p.priority); break;
		case SPA_PARAM_PROFILE_available: readId(value, p.available); break;
		default: break;
		}
	});
	if (p.index < 0) return std::nullopt;
	return p;
}

std::optional<RouteParam> parseRoute(const spa_pod* pod) {
	if (!pod || !spa_pod_is_object_type(pod, SPA_TYPE_OBJECT_ParamRoute)) return std::nullopt;
	RouteParam r;
	forEachProp(pod, [&](uint32_t key, const spa_pod* value) {
		switch (key) {
		case SPA_PARAM_ROUTE_index: readInt(value, r.index); break;
		case SPA_PARAM_ROUTE_direction: readId(value, r.direction); break;
		case SPA_PARAM_ROUTE_device: readInt(value, r.device); break;
		case SPA_PARAM_ROUTE_name: readString(value, r.name); break;
		case SPA_PARAM_ROUTE_description: readString(value, r.description); break;
		case SPA_PARAM_ROUTE_priority: readInt(value, r.priority); break;
		case SPA_PARAM_ROUTE_available: readId(value, r.available); break;
		case SPA_PARAM_ROUTE_profiles: readArray(value, SPA_TYPE_Int, r.profiles); break;
		case SPA_PARAM_ROUTE_devices: readArray(value, SPA_TYPE_Int, r.devices); break;
		case SPA_PARAM_ROUTE_props: r.props = parseProps(value); break;
		default: break;
		}
	});
	if (r.index < 0) return std::nullopt;
	return r;
}

const spa_pod* buildProps(spa_pod_builder& b, const std::optional<std::vector<float>>& volumes, std::optional<bool> mute) {
	spa_pod_frame f{};
	spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_Props, SPA_PARAM_Props);
	addVolumeProps(b, volumes, mute);
	return static_cast<const spa_pod*>(spa_pod_builder_pop(&b, &f));
}

const spa_pod* buildRoute(spa_pod_builder& b, int32_t index, int32_t device,
                          const std::optional<std::vector<float>>& volumes, std::optional<bool> mute, bool save) {
	spa_pod_frame f[2]{};
	spa_pod_builder_push_object(&b, &f[0], SPA_TYPE_OBJECT_ParamRoute, SPA_PARAM_Route);
	spa_pod_builder_prop(&b, SPA_PARAM_ROUTE_index, 0);
	spa_pod_builder_int(&b, index);
	spa_pod_builder_prop(&b, SPA_PARAM_ROUTE_device, 0);
	spa_pod_builder_int(&b, device);
	if (volumes || mute) {
		spa_pod_builder_prop(&b, SPA_PARAM_ROUTE_props, 0);
		spa_pod_builder_push_object(&b, &f[1], SPA_TYPE_OBJECT_Props, SPA_PARAM_Route);
		addVolumeProps(b, volumes, mute);
		spa_pod_builder_pop(&b, &f[1]);
	}
	spa_pod_builder_prop(&b, SPA_PARAM_ROUTE_save, 0);
	spa_pod_builder_bool(&b, save);
	return static_cast<const spa_pod*>(spa_pod_builder_pop(&b, &f[0]));
}

const spa_pod* buildProfile(spa_pod_builder& b, int32_t index, bool save) {
	spa_pod_frame f{};
	spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_ParamProfile, SPA_PARAM_Profile);
	spa_pod_builder_prop(&b, SPA_PARAM_PROFILE_index, 0);
	spa_pod_builder_int(&b, index);
	spa_pod_builder_prop(&b, SPA_PARAM_PROFILE_save, 0);
	spa_pod_builder_bool(&b, save);
	return static_cast<const spa_pod*>(spa_pod_builder_pop(&b, &f));
}

const spa_pod* buildCaptureFormat(spa_pod_builder& b, const std::vector<uint32_t>& positions) {
	spa_audio_info_raw info{};
	info.format = SPA_AUDIO_FORMAT_F32;
	info.channels = uint32_t(std::min<size_t>(positions.size(), kMaxChannels));
	for (uint32_t i = 0; i < info.channels; ++i) info.position[i] = positions[i];
	if (info.channels == 0) info.flags |= SPA_AUDIO_FLAG_UNPOSITIONED;
	return spa_format_audio_raw_build(&b, SPA_PARAM_EnumFormat, &info);
}

} // namespace qsd::pipewire
