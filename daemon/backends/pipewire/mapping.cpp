#include "mapping.hpp"

#include "../../text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace qsd::pipewire {

// ---- volumes

double cubicFromLinear(double linear) {
	if (!std::isfinite(linear) || linear <= 0) return 0;
	return std::cbrt(linear);
}

float linearFromCubic(double cubic) {
	if (!std::isfinite(cubic) || cubic <= 0) return 0;
	return float(cubic * cubic * cubic);
}

double meanVolume(std::span<const double> volumes) {
	if (volumes.empty()) return 0;
	double sum = 0;
	for (double v: volumes) sum += v;
	return sum / double(volumes.size());
}

std::vector<double> scaleVolumes(std::span<const double> volumes, double newMean) {
	double old = meanVolume(volumes);
	std::vector<double> out(volumes.begin(), volumes.end());
	for (auto& v: out) v = old > 0 ? v * newMean / old : newMean;
	return out;
}

bool sameVolume(double read, double written, double quantum) {
	// A cubic volume goes through float (v^3) and back (cbrt): a few ulps of float apart, and the
	// tree's 6 decimals.
	double tolerance = 1e-6 + 1e-5 * std::max(std::fabs(read), std::fabs(written));
	// A card with n steps reports volumeStep 1/n and stores v as the nearest of the n - 1
	// intervals' ends: half of 1/(n - 1) away at most, plus ACP's rounding to PulseAudio's
	// 1/65536 on the way there.
	if (std::isfinite(quantum) && quantum > 0 && quantum < 1) tolerance += 0.5 * quantum / (1 - quantum) + 0.5 / 65536.0;
	return std::fabs(read - written) <= tolerance;
}

double routeQuantum(const VolumeState& route) {
	constexpr double kPulseStep = 1.0 / 65536.0;
	if (!route.step || !std::isfinite(*route.step) || *route.step <= 0 || *route.step >= 1) return kPulseStep;
	return std::max(double(*route.step), kPulseStep);
}

// Float channel volumes carry about 7 significant digits: the tree shows 6 decimals, so a
// volume set to 0.35 reads 0.35 rather than 0.35000000000000003.
static double tidy(double v) { return std::round(v * 1e6) / 1e6; }

std::vector<double> cubicVolumes(const VolumeState& state) {
	std::vector<double> out;
	out.reserve(state.linear.size());
	for (float v: state.linear) out.push_back(tidy(cubicFromLinear(v)));
	return out;
}

json audioJson(const VolumeState& state) {
	auto volumes = cubicVolumes(state);
	json channels = json::array();
	for (size_t i = 0; i < volumes.size(); ++i)
		channels.push_back(i < state.channelMap.size() ? channelName(state.channelMap[i]) : std::string("unknown"));
	double volume = tidy(volumes.empty() ? cubicFromLinear(state.volume.value_or(0.0f)) : meanVolume(volumes));
	return {{"volume", volume}, {"volumes", volumes}, {"channels", std::move(channels)}, {"muted", state.mute.value_or(false)}};
}

std::string channelName(uint32_t channel) {
	// The order of enum spa_audio_channel (spa/param/audio/raw.h), names as Quickshell's
	// PwAudioChannel in camelCase.
	static constexpr std::array<const char*, 38> names = {
	    "unknown",          "na",                  "mono",          "frontLeft",           "frontRight",
	    "frontCenter",      "lowFrequencyEffects", "sideLeft",      "sideRight",           "frontLeftCenter",
	    "frontRightCenter", "rearCenter",          "rearLeft",      "rearRight",           "topCenter",
	    "topFrontLeft",     "topFrontCenter",      "topFrontRight", "topRearLeft",         "topRearCenter",
	    "topRearRight",     "rearLeftCenter",      "rearRightCenter", "frontLeftWide",     "frontRightWide",
	    "lowFrequencyEffects2", "frontLeftHigh",   "frontCenterHigh", "frontRightHigh",    "topFrontLeftCenter",
	    "topFrontRightCenter", "topSideLeft",      "topSideRight",  "lowFrequencyEffectsLeft", "lowFrequencyEffectsRight",
	    "bottomCenter",     "bottomLeftCenter",    "bottomRightCenter"};
	constexpr uint32_t auxStart = 0x1000, customStart = 0x10000;
	if (channel < names.size()) return names[channel];
	if (channel >= customStart) return "custom" + std::to_string(channel - customStart);
	if (channel >= auxStart && channel < auxStart + 0x1000) return "aux" + std::to_string(channel - auxStart);
	return "unknown";
}

// ---- node kinds

NodeType nodeType(std::string_view mediaClass) {
	auto starts = [&](std::string_view prefix) {
		// "Audio/Source" matches "Audio/Source" and "Audio/Source/Virtual", not "Audio/SourceX".
		return mediaClass.substr(0, prefix.size()) == prefix &&
		       (mediaClass.size() == prefix.size() || mediaClass[prefix.size()] == '/');
	};
	if (starts("Audio/Sink")) return NodeType::AudioSink;
	if (starts("Audio/Source")) return NodeType::AudioSource;
	if (starts("Audio/Duplex")) return NodeType::AudioDuplex;
	if (starts("Stream/Output/Audio")) return NodeType::AudioOutStream;
	if (starts("Stream/Input/Audio")) return NodeType::AudioInStream;
	if (starts("Video/Source")) return NodeType::VideoSource;
	if (starts("Video/Sink")) return NodeType::VideoSink;
	return NodeType::Other;
}

NodeType nodeType(const Props& props) {
	auto it = props.find("media.class");
	return nodeType(it == props.end() ? std::string_view() : std::string_view(it->second));
}

const char* toString(NodeType type) {
	switch (type) {
	case NodeType::AudioSink: return "audioSink";
	case NodeType::AudioSource: return "audioSource";
	case NodeType::AudioDuplex: return "audioDuplex";
	case NodeType::AudioOutStream: return "audioOutStream";
	case NodeType::AudioInStream: return "audioInStream";
	case NodeType::VideoSource: return "videoSource";
	case NodeType::VideoSink: return "videoSink";
	case NodeType::Other: return "other";
	}
	return "other";
}

bool isSink(NodeType type) {
	return type == NodeType::AudioSink || type == NodeType::AudioDuplex || type == NodeType::AudioOutStream ||
	       type == NodeType::VideoSink;
}

bool isStream(NodeType type) { return type == NodeType::AudioOutStream || type == NodeType::AudioInStream; }

bool isAudio(NodeType type) {
	return type == NodeType::AudioSink || type == NodeType::AudioSource || type == NodeType::AudioDuplex ||
	       type == NodeType::AudioOutStream || type == NodeType::AudioInStream;
}

static bool propTrue(const Props& props, std::string_view key) {
	auto it = props.find(key);
	return it != props.end() && (it->second == "true" || it->second == "1");
}

bool isMonitorStream(const Props& props) {
	auto it = props.find("media.category");
	if (it != props.end() && (it->second == "Monitor" || it->second == "Manager")) return true;
	return propTrue(props, "stream.monitor");
}

bool isMonitorNode(NodeType type, const Props& props, bool capturesSink) {
	if (isMonitorStream(props)) return true;
	return type == NodeType::AudioInStream && (capturesSink || propTrue(props, "stream.capture.sink"));
}

Capture captureOf(NodeType source, std::string_view deviceApi, bool device, NodeType consumer) {
	if (source == NodeType::AudioSource) return consumer == NodeType::AudioInStream ? Capture::Microphone : Capture::None;
	if (source != NodeType::VideoSource) return Capture::None;
	if (deviceApi == "v4l2" || deviceApi == "libcamera") return Capture::Camera;
	return device || !deviceApi.empty() ? Capture::None : Capture::Screencast;
}

const char* toString(Capture capture) {
	switch (capture) {
	case Capture::Microphone: return "microphone";
	case Capture::Camera: return "camera";
	case Capture::Screencast: return "screencast";
	case Capture::None: return "none";
	}
	return "none";
}

const char* linkStateName(int state) {
	switch (state) {
	case -2: return "error";
	case -1: return "unlinked";
	case 0: return "init";
	case 1: return "negotiating";
	case 2: return "allocating";
	case 3: return "paused";
	case 4: return "active";
	default: return "unknown";
	}
}

const char* availabilityName(uint32_t available) {
	switch (available) {
	case 1: return "no";
	case 2: return "yes";
	default: return "unknown";
	}
}

const char* directionName(uint32_t direction) { return direction == 0 ? "input" : "output"; }

// ---- properties

json propString(const Props& props, std::string_view key) {
	auto it = props.find(key);
	if (it == props.end()) return nullptr;
	return it->second;
}

std::optional<int64_t> propInt(const Props& props, std::string_view key) {
	auto it = props.find(key);
	if (it == props.end()) return std::nullopt;
	int64_t v = 0;
	const auto& s = it->second;
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
	if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
	return v;
}

json applicationJson(const Props& node, const Props* client) {
	auto pick = [&](std::string_view key) {
		json v = propString(node, key);
		if (v.is_null() && client) v = propString(*client, key);
		return v;
	};
	json pid = nullptr;
	auto id = propInt(node, "application.process.id");
	if (!id && client) id = propInt(*client, "application.process.id");
	if (id && *id > 0) pid = *id;
	return {{"name", pick("application.name")},
	        {"iconName", pick("application.icon-name")},
	        {"processId", pid},
	        {"binary", pick("application.process.binary")}};
}

json mediaJson(const Props& node) {
	return {{"name", propString(node, "media.name")},
	        {"title", propString(node, "media.title")},
	        {"artist", propString(node, "media.artist")},
	        {"role", propString(node, "media.role")}};
}

Props watchedProps(const PropItems& items, bool* cut) {
	Props out;
	size_t bytes = 0;
	bool left = false;
	for (const auto& [key, value]: items) {
		if (out.size() == kMaxWatchedProps) {
			left = true;
			break;
		}
		if (key.empty() || key.size() > kMaxWatchedPropKey) {
			left = true;
			continue;
		}
		auto kept = cutAtCharacter(value, kMaxPropBytes);
		if (kept.size() != value.size()) left = true;
		if (bytes + key.size() + kept.size() > kMaxWatchedPropsBytes) {
			left = true;
			break;
		}
		if (out.emplace(key, kept).second) bytes += key.size() + kept.size();
	}
	if (cut) *cut = left;
	return out;
}

std::optional<std::string> defaultNodeName(std::string_view value) {
	if (value.empty()) return std::nullopt;
	auto parsed = json::parse(value, nullptr, false);
	if (parsed.is_discarded()) return std::string(value);   // a bare node name
	if (parsed.is_string()) return parsed.get<std::string>();
	if (parsed.is_object()) {
		auto it = parsed.find("name");
		if (it != parsed.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
			return it->get<std::string>();
	}
	return std::nullopt;
}

std::optional<std::string> defaultNodeValue(std::string_view nodeName) {
	try {
		return json{{"name", nodeName}}.dump();
	} catch (const json::type_error&) {
		return std::nullopt;   // not UTF-8
	}
}

// ---- device params

json profileJson(const ProfileParam& p) {
	return {{"index", p.index}, {"name", p.name}, {"description", p.description}, {"available", availabilityName(p.available)}};
}

json routeJson(const RouteParam& r) {
	return {{"index", r.index},
	        {"name", r.name},
	        {"description", r.description},
	        {"direction", directionName(r.direction)},
	        {"available", availabilityName(r.available)}};
}

const RouteParam* volumeRoute(const std::vector<RouteParam>& routes, int64_t cardDevice) {
	for (const auto& r: routes)
		if (r.device == cardDevice && r.props && !r.props->linear.empty() && r.props->mute) return &r;
	return nullptr;
}

// ---- socket location

std::vector<SocketLocation> socketLocations(const std::function<const char*(const char*)>& env) {
	auto get = [&](const char* name) -> std::string {
		const char* v = env(name);
		return v ? std::string(v) : std::string();
	};
	std::string name = get("PIPEWIRE_REMOTE");
	if (name.empty()) name = "pipewire-0";
	if (name.front() == '/') {
		auto slash = name.find_last_of('/');
		return {{slash == 0 ? std::string("/") : name.substr(0, slash), name.substr(slash + 1)}};
	}
	std::vector<SocketLocation> out;
	const char* runtime = env("PIPEWIRE_RUNTIME_DIR");
	if (!runtime) runtime = env("XDG_RUNTIME_DIR");
	if (!runtime) runtime = env("USERPROFILE");
	if (runtime && *runtime) out.push_back({runtime, name});
	if (!runtime || std::string_view(runtime) != "/run/pipewire") out.push_back({"/run/pipewire", name});
	return out;
}

// ---- peaks

void accumulatePeaks(const float* samples, size_t frames, size_t channels, std::vector<float>& peaks) {
	if (peaks.size() != channels) peaks.assign(channels, 0.0f);
	if (!samples || channels == 0) return;
	for (size_t f = 0; f < frames; ++f)
		for (size_t c = 0; c < channels; ++c) {
			float v = std::fabs(samples[f * channels + c]);
			if (v > peaks[c]) peaks[c] = std::min(v, 1.0f);   // NaN never compares greater
		}
}

} // namespace qsd::pipewire
