// The audio.* methods. Each one validates everything before it sends anything (-32602 naming the
// parameter), writes what wpctl would write, and answers only once the change is visible: the
// param or metadata event came back and the tree shows it. The server sends an answer after the
// tree.changed of the writes made before it, so a subscriber on the same connection gets the
// change before the response.

#include "pipewire_backend.hpp"

#include "../../log.hpp"
#include "../../server/client.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <pipewire/impl-module.h>
#include <pipewire/pipewire.h>

#include <algorithm>
#include <cmath>

namespace qsd::pipewire {

namespace {

using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;

constexpr uint64_t kTimeoutUs = 5'000'000;
// How long a write to the default metadata may go unseen before qsd reads the metadata again.
constexpr uint64_t kMetadataRereadUs = 1'000'000;
constexpr uint64_t kPeakIntervalUs = 40'000;   // 25 Hz
constexpr uint64_t kPeakSilenceUs = 250'000;   // no buffers for this long: the meter drops to 0
// 10 on the cubic scale is 1000 % (linear 1000); PipeWire itself takes any float.
constexpr double kMaxVolume = 10.0;

[[noreturn]] void bad(const char* param, const std::string& expected, const json& value = nullptr) {
	json data = {{"param", param}, {"expected", expected}};
	if (!value.is_null()) data["value"] = value;
	throw RpcException(ErrorCode::InvalidParams, std::string("Invalid params: '") + param + "' must be " + expected,
	                   std::move(data));
}

// A well-formed key that names nothing: -32001 like every other domain's unknown id (core.json),
// with data {param, <param>}; a key of the wrong kind of object stays -32602.
[[noreturn]] void notFound(const char* param, const char* what, const json& value) {
	throw RpcException(ErrorCode::NotFound, std::string("No ") + what + " with this key",
	                   {{"param", param}, {param, value}});
}

double checkVolume(const json& v, const char* param) {
	if (!v.is_number()) bad(param, "a number from 0 to 10 (cubic scale, 1.0 = 100 %)", v);
	double d = v.get<double>();
	if (!std::isfinite(d) || d < 0 || d > kMaxVolume) bad(param, "a number from 0 to 10 (cubic scale, 1.0 = 100 %)", v);
	return d;
}

// BackendFailed carries {name, message} like a D-Bus error (core.json), plus the backend.
json failure(const char* name, const std::string& message) {
	return {{"backend", "pipewire"}, {"name", name}, {"message", message}};
}

[[noreturn]] void sendFailed(const char* what, int res) {
	std::string message = std::string(what) + " failed: " + std::strerror(-res);
	throw RpcException(ErrorCode::BackendFailed, message, failure("pipewire.SendFailed", message));
}

std::string peaksKey(const std::string& node) { return "audio.peaks." + node; }
std::string propertiesKey(const std::string& node) { return "audio.properties." + node; }

// A key param: the key string, or the object.serial as a number (qsctl's key=52 parses as one).
std::optional<std::string> keyOf(const json& v) {
	if (v.is_string()) return v.get<std::string>();
	if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
	if (v.is_number_integer() && v.get<int64_t>() >= 0) return std::to_string(v.get<int64_t>());
	return std::nullopt;
}

// The key in `param`, which must be present; `expected` describes it in the -32602 error.
std::string keyParam(const json& params, const char* param, const std::string& expected) {
	const json* v = params.is_object() && params.contains(param) ? &params.at(param) : nullptr;
	auto key = v ? keyOf(*v) : std::nullopt;
	if (!key) bad(param, expected, v ? *v : json(nullptr));
	return *key;
}

} // namespace

const Node& PipewireBackend::audioNode(const json& params, const char* param) const {
	static const std::string expected = "the key of an audio node in /audio/nodes";
	auto key = keyParam(params, param, expected);
	const Node* n = nodeByKey(key);
	if (!n) notFound(param, "node in /audio/nodes", params.at(param));
	if (!isAudio(nodeType(n->props))) bad(param, expected, params.at(param));
	return *n;
}

std::span<const Backend::Method> PipewireBackend::methods() const {
	static constexpr Method table[] = {
	    method<&PipewireBackend::setVolume>("audio.setVolume"),
	    method<&PipewireBackend::setVolumes>("audio.setVolumes"),
	    method<&PipewireBackend::setMuted>("audio.setMuted"),
	    method<&PipewireBackend::setPreferredDefault>("audio.setPreferredDefault"),
	    method<&PipewireBackend::moveStream>("audio.moveStream"),
	    method<&PipewireBackend::setDeviceProfile>("audio.setDeviceProfile"),
	    method<&PipewireBackend::setRoute>("audio.setRoute"),
	    // Turning a meter off is always possible: one that ended with PipeWire is already gone.
	    method<&PipewireBackend::monitorPeaksMethod>("audio.monitorPeaks", false),
	    // The same for a watch of a node's properties.
	    method<&PipewireBackend::watchPropertiesMethod>("audio.watchProperties", false),
	};
	return table;
}

std::optional<Unavailable> PipewireBackend::availability() const {
	if (graph_ && ready_) return std::nullopt;
	return Unavailable{kRoot, unavailableWhy_.empty() ? "PipeWire is not connected" : unavailableWhy_};
}

void PipewireBackend::setVolume(Call& c) {
	const auto& p = c.params();
	const json& params = c.raw();
	(void)keyParam(params, "node", "the key of an audio node in /audio/nodes");
	double volume = checkVolume(p.any("volume"), "volume");
	const Node& n = audioNode(params, "node");
	auto src = volumeSource(n);
	if (!src.state || src.state->linear.empty()) bad("node", "a node with channel volumes", params.at("node"));
	writeVolume(n, src, scaleVolumes(cubicVolumes(*src.state), volume), std::nullopt, c.answer());
}

void PipewireBackend::setVolumes(Call& c) {
	const auto& p = c.params();
	const json& params = c.raw();
	(void)keyParam(params, "node", "the key of an audio node in /audio/nodes");
	const json& list = p.array("volumes");
	std::vector<double> volumes;
	for (const auto& v: list) volumes.push_back(checkVolume(v, "volumes"));
	const Node& n = audioNode(params, "node");
	auto src = volumeSource(n);
	if (!src.state || src.state->linear.empty()) bad("node", "a node with channel volumes", params.at("node"));
	if (volumes.size() != src.state->linear.size())
		bad("volumes", "an array of " + std::to_string(src.state->linear.size()) + " numbers (one per channel)", list);
	writeVolume(n, src, std::move(volumes), std::nullopt, c.answer());
}

void PipewireBackend::setMuted(Call& c) {
	const auto& p = c.params();
	const json& params = c.raw();
	(void)keyParam(params, "node", "the key of an audio node in /audio/nodes");
	bool muted = p.boolean("muted");
	const Node& n = audioNode(params, "node");
	auto src = volumeSource(n);
	if (!src.state) bad("node", "a node with a mute control", params.at("node"));
	writeVolume(n, src, std::nullopt, muted, c.answer());
}

void PipewireBackend::setPreferredDefault(Call& c) {
	const auto& p = c.params();
	const json& node = p.any("node");
	auto nodeKey = node.is_null() ? std::optional<std::string>() : keyOf(node);
	if (!node.is_null() && !nodeKey) bad("node", "the key of a sink or source node, or null", node);
	auto kind = p.optString("kind");
	if (kind && *kind != "sink" && *kind != "source") bad("kind", "\"sink\" or \"source\"", *kind);
	std::string name;
	std::string key;
	std::string value;   // the metadata's value
	if (nodeKey) {
		const Node* n = nodeByKey(*nodeKey);
		if (!n) notFound("node", "node in /audio/nodes", node);
		auto type = nodeType(n->props);
		if (!n || (type != NodeType::AudioSink && type != NodeType::AudioSource && type != NodeType::AudioDuplex))
			bad("node", "the key of a sink or source node (not a stream) in /audio/nodes, or null", node);
		std::string own = type == NodeType::AudioSink ? "sink" : type == NodeType::AudioSource ? "source" : "";
		if (own.empty() && !kind) bad("kind", "\"sink\" or \"source\" (the node is a duplex node)");
		if (kind && !own.empty() && *kind != own) bad("kind", "\"" + own + "\" for this node (or left out)", *kind);
		if (!kind) kind = own;
		auto nm = n->props.find("node.name");
		if (nm == n->props.end() || nm->second.empty()) bad("node", "a node with a node.name", node);
		name = nm->second;
		key = n->key;
		auto v = defaultNodeValue(name);
		// Checked here, not left to the JSON library's exception, which the dispatcher reported
		// with that library's own message.
		if (!v) bad("node", "a node whose node.name is UTF-8 (the session manager keeps defaults as JSON)", node);
		value = std::move(*v);
	} else if (!kind) {
		bad("kind", "\"sink\" or \"source\" (required when node is null)");
	}
	if (!graph_->defaults())
		throw RpcException(ErrorCode::BackendUnavailable,
		                   "No session manager: PipeWire has no \"default\" metadata (is WirePlumber running?)",
		                   {{"backend", "pipewire"}, {"metadata", "default"}});
	std::string metadataKey = "default.configured.audio." + *kind;
	int r = graph_->setMetadata(0, metadataKey.c_str(), name.empty() ? nullptr : "Spa:String:JSON",
	                            name.empty() ? nullptr : value.c_str());
	if (r < 0) sendFailed("Setting the metadata", r);
	Waiter w;
	w.answer = c.answer();
	w.object = graph_->defaults()->id;
	w.metadata = true;
	w.what = metadataKey;
	w.target = metadataKey;
	w.check = [this, metadataKey, name, key, kind = *kind]() -> std::optional<json> {
		const Metadata* m = graph_->defaults();
		if (!m) throw RpcException(ErrorCode::BackendUnavailable, "The session manager left", {{"backend", "pipewire"}});
		auto it = m->defaults.find(metadataKey);
		auto current = it == m->defaults.end() ? std::nullopt : std::optional<std::string>(it->second);
		if (name.empty() ? current.has_value() : current != name) return std::nullopt;
		return json{{"kind", kind}, {"node", key.empty() ? json(nullptr) : json(key)}};
	};
	wait(std::move(w));
}

void PipewireBackend::moveStream(Call& c) {
	const auto& p = c.params();
	const json& params = c.raw();
	auto streamKey = keyParam(params, "stream", "the key of a stream (isStream) in /audio/nodes");
	const json& target = p.any("target");
	auto targetKey = target.is_null() ? std::optional<std::string>() : keyOf(target);
	if (!target.is_null() && !targetKey) bad("target", "the key of a sink or source node, or null", target);
	const Node* s = nodeByKey(streamKey);
	if (!s) notFound("stream", "node in /audio/nodes", params.at("stream"));
	if (!isStream(nodeType(s->props))) bad("stream", "the key of a stream (isStream) in /audio/nodes", params.at("stream"));
	bool output = nodeType(s->props) == NodeType::AudioOutStream;
	const Node* t = nullptr;
	if (targetKey) {
		t = nodeByKey(*targetKey);
		if (!t) notFound("target", "node in /audio/nodes", target);
		auto type = nodeType(t->props);
		bool fits = isAudio(type) && !isStream(type) &&
		            (!output || type == NodeType::AudioSink || type == NodeType::AudioDuplex);
		if (!fits)
			bad("target", output ? "the key of a sink node in /audio/nodes, or null"
			                     : "the key of a source or sink node in /audio/nodes, or null",
			    target);
	}
	if (!graph_->defaults())
		throw RpcException(ErrorCode::BackendUnavailable,
		                   "No session manager: PipeWire has no \"default\" metadata (is WirePlumber running?)",
		                   {{"backend", "pipewire"}, {"metadata", "default"}});
	std::string serial = t ? std::to_string(t->serial) : std::string();
	int r = graph_->setMetadata(s->id, "target.object", t ? "Spa:Id" : nullptr, t ? serial.c_str() : nullptr);
	if (r >= 0 && !t) r = graph_->setMetadata(s->id, "target.node", nullptr, nullptr);
	if (r < 0) sendFailed("Setting the metadata", r);
	Waiter w;
	w.answer = c.answer();
	w.object = graph_->defaults()->id;
	w.metadata = true;
	w.what = "the move of stream " + s->key;
	w.target = "move " + s->key;
	w.check = [this, stream = s->key, targetKey = t ? t->key : std::string(), output]() -> std::optional<json> {
		const Node* sn = nodeByKey(stream);
		if (!sn) throw RpcException(ErrorCode::NotFound, "The stream went away", {{"param", "stream"}, {"stream", stream}});
		std::string want = targetKey;
		if (want.empty()) {   // back to following the default
			const json& d = defaults_[output ? "defaultAudioSink" : "defaultAudioSource"];
			if (!d.is_string()) return std::nullopt;
			want = d.get<std::string>();
		}
		auto wantId = nodeIds_.find(want);
		if (wantId == nodeIds_.end()) return std::nullopt;
		const auto& adjacency = output ? playingTo_ : capturedFrom_;
		auto it = adjacency.find(sn->id);
		if (it == adjacency.end() || !it->second.count(wantId->second)) return std::nullopt;
		return json{{"stream", stream}, {"target", targetKey.empty() ? json(nullptr) : json(want)}};
	};
	wait(std::move(w));
}

void PipewireBackend::setDeviceProfile(Call& c) {
	const auto& p = c.params();
	const json& params = c.raw();
	auto deviceKey = keyParam(params, "device", "the key of a device in /audio/devices");
	const json& profile = p.any("profile");
	if (!profile.is_string() && !profile.is_number_integer())
		bad("profile", "a profile index or name from the device's profiles", profile);
	const Device* d = deviceByKey(deviceKey);
	if (!d) notFound("device", "device in /audio/devices", params.at("device"));
	auto it = std::find_if(d->profiles.begin(), d->profiles.end(), [&](const ProfileParam& x) {
		return profile.is_string() ? x.name == profile.get<std::string>() : x.index == profile.get<int64_t>();
	});
	if (it == d->profiles.end()) bad("profile", "a profile index or name from the device's profiles", profile);
	int32_t index = it->index;
	int r = graph_->setProfile(d->id, index);
	if (r < 0) sendFailed("Setting the profile", r);
	Waiter w;
	w.answer = c.answer();
	w.object = d->id;
	w.what = "profile " + it->name + " of device " + d->key;
	w.target = "profile " + d->key;
	w.check = [this, key = d->key, index]() -> std::optional<json> {
		const Device* dev = deviceByKey(key);
		if (!dev) throw RpcException(ErrorCode::NotFound, "The device went away", {{"param", "device"}, {"device", key}});
		if (!dev->profile || dev->profile->index != index) return std::nullopt;
		return json{{"device", key}, {"profile", dev->profile->name}, {"profileIndex", index}};
	};
	wait(std::move(w));
}

void PipewireBackend::setRoute(Call& c) {
	const auto& p = c.params();
	const json& params = c.raw();
	auto deviceKey = keyParam(params, "device", "the key of a device in /audio/devices");
	int64_t index = p.integer("route");
	const Device* d = deviceByKey(deviceKey);
	if (!d) notFound("device", "device in /audio/devices", params.at("device"));
	auto it = std::find_if(d->routes.begin(), d->routes.end(), [&](const RouteParam& r) {
		bool inProfile = r.profiles.empty() || !d->profile ||
		                 std::find(r.profiles.begin(), r.profiles.end(), d->profile->index) != r.profiles.end();
		return r.index == index && inProfile && !r.devices.empty();
	});
	if (it == d->routes.end()) bad("route", "the index of one of the device's ports (its active profile's routes)", index);
	// The card device it goes to: the one whose port it replaces, as pavucontrol's port switch.
	int32_t cardDevice = it->devices.front();
	for (const auto& a: d->activeRoutes)
		if (a.direction == it->direction && std::find(it->devices.begin(), it->devices.end(), a.device) != it->devices.end()) {
			cardDevice = a.device;
			break;
		}
	int r = graph_->setRoute(d->id, it->index, cardDevice, std::nullopt, std::nullopt);
	if (r < 0) sendFailed("Setting the route", r);
	Waiter w;
	w.answer = c.answer();
	w.object = d->id;
	w.what = "route " + it->name + " of device " + d->key;
	w.target = "route " + d->key + " " + std::to_string(cardDevice);
	w.check = [this, key = d->key, route = it->index, cardDevice]() -> std::optional<json> {
		const Device* dev = deviceByKey(key);
		if (!dev) throw RpcException(ErrorCode::NotFound, "The device went away", {{"param", "device"}, {"device", key}});
		for (const auto& a: dev->activeRoutes)
			if (a.device == cardDevice && a.index == route)
				return json{{"device", key}, {"route", route}, {"name", a.name}};
		return std::nullopt;
	};
	wait(std::move(w));
}

void PipewireBackend::monitorPeaksMethod(Call& c) {
	const auto& p = c.params();
	const json& params = c.raw();
	auto key = keyParam(params, "node", "the key of an audio node in /audio/nodes");
	bool enabled = p.boolean("enabled");
	if (!enabled) {
		revokeLease(c.client(), peaksKey(key));
		c.result({{"node", key}, {"enabled", false}});
		return;
	}
	if (auto why = availability()) throw unavailable(*why);
	const Node& n = audioNode(params, "node");
	monitorPeaks(n, c.answer(), c.client());
}

void PipewireBackend::watchPropertiesMethod(Call& c) {
	const auto& p = c.params();
	const json& params = c.raw();
	auto key = keyParam(params, "node", "the key of an audio node in /audio/nodes");
	bool enabled = p.boolean("enabled");
	if (!enabled) {
		revokeLease(c.client(), propertiesKey(key));
		c.result({{"node", key}, {"enabled", false}});
		return;
	}
	if (auto why = availability()) throw unavailable(*why);
	// Any node in /audio/nodes, a video one too, as Quickshell's PwNode.properties.
	const Node* n = nodeByKey(key);
	if (!n) notFound("node", "node in /audio/nodes", params.at("node"));
	watchProperties(*n, c.answer(), c.client());
}

void PipewireBackend::writeVolume(const Node& n, const VolumeSource& src, std::optional<std::vector<double>> volumes,
                                  std::optional<bool> mute, std::shared_ptr<Answer> answer) {
	std::optional<std::vector<float>> linear;
	if (volumes) {
		linear.emplace();
		for (double v: *volumes) linear->push_back(linearFromCubic(v));
	}
	// A node of a sound card goes through the card's Route, as wpctl writes it; the route's
	// volumeStep is not consulted, so cards that report none (Bluetooth) work too.
	int r = src.device ? graph_->setRoute(src.device->id, src.route, src.cardDevice, linear, mute)
	                   : graph_->setNodeProps(n.id, linear, mute);
	if (r < 0) sendFailed("Sending the change", r);
	// A card stores what it can (its own steps, its hardware's range) and tells nothing when that
	// is what it had: its routes, read again after the write, are its answer.
	uint64_t readBack = src.device ? graph_->readBackRoutes(src.device->id) : 0;
	Waiter w;
	w.answer = std::move(answer);
	w.object = src.device ? src.device->id : n.id;
	w.what = (volumes ? "the volume" : "the mute") + std::string(" of node ") + n.key;
	w.target = (volumes ? "volume " : "mute ") + n.key;
	w.check = [this, key = n.key, volumes = std::move(volumes), mute, readBack]() -> std::optional<json> {
		const Node* node = nodeByKey(key);
		if (!node) throw RpcException(ErrorCode::NotFound, "The node went away", {{"param", "node"}, {"node", key}});
		auto s = volumeSource(*node);
		if (!s.state) return std::nullopt;
		auto result = [&] { return json{{"node", key}, {"audio", audioJson(*s.state)}}; };
		bool applied = !mute || s.state->mute.value_or(false) == *mute;
		if (volumes) {
			double quantum = s.device ? routeQuantum(*s.state) : 0.0;
			auto current = cubicVolumes(*s.state);
			applied = applied && current.size() == volumes->size();
			for (size_t i = 0; applied && i < current.size(); ++i)
				applied = sameVolume(current[i], (*volumes)[i], quantum);
		}
		if (applied) return result();
		if (s.device && readBack && graph_->readBack(s.device->id, readBack)) return result();
		return std::nullopt;
	};
	wait(std::move(w));
}

// ---------------------------------------------------------------------------------------------
// waits

void PipewireBackend::answer(Waiter& w, const json& result) {
	w.answer->result(result);
	for (auto& a: w.earlier) a->result(result);
}

void PipewireBackend::refuse(Waiter& w, rpc::ErrorCode code, const std::string& message, const json& data) {
	w.answer->error(code, message, data);
	for (auto& a: w.earlier) a->error(code, message, data);
}

void PipewireBackend::wait(Waiter w) {
	w.deadline = context_.loop.now() + kTimeoutUs;
	// The latest write of a target wins: PipeWire applies the writes in order, and an earlier value
	// may never show (a scroll wheel's twenty volume steps: each answered pipewire.Timeout after
	// 5 s but the last). The calls still waiting answer with this one: what it finds, or its error.
	if (!w.target.empty())
		for (auto it = waiters_.begin(); it != waiters_.end();) {
			if (it->target != w.target) {
				++it;
				continue;
			}
			w.earlier.push_back(std::move(it->answer));
			std::move(it->earlier.begin(), it->earlier.end(), std::back_inserter(w.earlier));
			it = waiters_.erase(it);
		}
	try {
		// Already so (a no-op change): nothing to wait for.
		if (auto r = w.check()) {
			answer(w, *r);
			return;
		}
	} catch (const RpcException& e) {
		refuse(w, e.error.code, e.error.message, e.error.data);
		return;
	}
	bool metadata = w.metadata;
	waiters_.push_back(std::move(w));
	if (metadata && !waiterRereadTimer_.enabled()) {
		if (!waiterRereadTimer_)
			waiterRereadTimer_ = context_.loop.addIdleTimer([this] { rereadForWaiters(); }, "pipewire-write-reread");
		waiterRereadTimer_.setTime(context_.loop.now() + kMetadataRereadUs);
	}
	if (!waitTimer_) waitTimer_ = context_.loop.addIdleTimer([this] { expireWaiters(); }, "pipewire-action-timeout");
	uint64_t first = UINT64_MAX;
	for (const auto& x: waiters_) first = std::min(first, x.deadline);
	waitTimer_.setTime(first);
}

void PipewireBackend::checkWaiters() {
	auto errors = graph_ ? graph_->takeErrors() : std::vector<Graph::Error>{};
	if (waiters_.empty()) return;
	for (auto it = waiters_.begin(); it != waiters_.end();) {
		auto err = std::find_if(errors.begin(), errors.end(), [&](const Graph::Error& e) { return e.global == it->object; });
		try {
			if (err != errors.end()) {
				auto data = failure("pipewire.Refused", err->message);
				data["errno"] = -err->res;
				refuse(*it, ErrorCode::BackendFailed, "PipeWire refused " + it->what + ": " + err->message, data);
			} else if (auto r = it->check()) {
				answer(*it, *r);
			} else {
				++it;
				continue;
			}
		} catch (const RpcException& e) {
			refuse(*it, e.error.code, e.error.message, e.error.data);
		}
		it = waiters_.erase(it);
	}
	if (waiters_.empty()) {
		waitTimer_.setEnabled(SD_EVENT_OFF);
		if (waiterRereadTimer_) waiterRereadTimer_.setEnabled(SD_EVENT_OFF);
	}
}

// qsd's own write to the default metadata that has not come back within a second: PipeWire's
// metadata module sends the clients bound to it none of its changes while another client's bind
// waits for WirePlumber (docs/backends/pipewire.md), and the state qsd then holds can look
// consistent (the preferred default unchanged), so the check of the defaults does not read it
// again. The waiting action does: the metadata is bound and read once more, and the waiting
// actions are checked against what that reading brings. Once a second while such writes wait,
// never for other changes.
void PipewireBackend::rereadForWaiters() {
	bool waiting = std::any_of(waiters_.begin(), waiters_.end(), [](const Waiter& w) { return w.metadata; });
	if (!waiting || !graph_) return;
	if (graph_->rereadMetadata())
		log::info("pipewire", "a write to the default metadata has not come back for a second: reading the metadata again, "
		                "in case PipeWire did not send qsd the change");
	waiterRereadTimer_.setTime(context_.loop.now() + kMetadataRereadUs);
}

void PipewireBackend::expireWaiters() {
	uint64_t now = context_.loop.now();
	uint64_t next = UINT64_MAX;
	for (auto it = waiters_.begin(); it != waiters_.end();) {
		if (it->deadline > now) {
			next = std::min(next, it->deadline);
			++it;
			continue;
		}
		log::warning("pipewire", "PipeWire did not apply {} within {} s", it->what, kTimeoutUs / 1'000'000);
		std::string message = "PipeWire did not apply " + it->what + " within " + std::to_string(kTimeoutUs / 1'000'000) + " s";
		refuse(*it, ErrorCode::BackendFailed, message, failure("pipewire.Timeout", message));
		it = waiters_.erase(it);
	}
	if (next != UINT64_MAX) waitTimer_.setTime(next);
}

void PipewireBackend::failWaiters(rpc::ErrorCode code, const std::string& message) {
	for (auto& w: waiters_) refuse(w, code, message, {{"backend", "pipewire"}});
	waiters_.clear();
	if (waitTimer_) waitTimer_.setEnabled(SD_EVENT_OFF);
	if (waiterRereadTimer_) waiterRereadTimer_.setEnabled(SD_EVENT_OFF);
}

// ---------------------------------------------------------------------------------------------
// level meters

void PipewireBackend::monitorPeaks(const Node& n, std::shared_ptr<Answer> answer, ClientSession& client) {
	if (!clientNodeLoaded_) {
		// pw_stream's client node and adapter, loaded with the first level meter.
		for (const char* module: {"libpipewire-module-client-node", "libpipewire-module-adapter"})
			if (!pw_context_load_module(pwContext_, module, nullptr, nullptr))
				throw RpcException(ErrorCode::BackendFailed, std::string("Cannot load ") + module,
				                   failure("pipewire.StreamFailed", std::strerror(errno)));
		clientNodeLoaded_ = true;
	}
	auto& m = monitors_[n.key];
	if (!m.stream) {
		auto type = nodeType(n.props);
		std::vector<uint32_t> positions;
		if (auto src = volumeSource(n); src.state) positions = src.state->channelMap;
		m.stream = std::make_unique<PeakStream>(graph_->core(), std::to_string(n.serial),
		                                        type == NodeType::AudioSink || type == NodeType::AudioDuplex, positions);
		if (!m.stream->ok() || !m.stream->error().empty()) {
			std::string why = m.stream->error();
			monitors_.erase(n.key);
			throw RpcException(ErrorCode::BackendFailed, "Cannot open a level meter: " + why,
			                   failure("pipewire.StreamFailed", why));
		}
	}
	if (!m.clients.count(client.id())) {
		m.clients[client.id()] = client.weak();
		grantLease(client, peaksKey(n.key), [this, node = n.key, id = client.id()] { monitorReleased(node, id); });
	}
	if (!peakTimer_) peakTimer_ = context_.loop.addIdleTimer([this] { publishPeaks(); }, "pipewire-peaks");
	if (!peakTimer_.enabled()) peakTimer_.setTime(context_.loop.now() + kPeakIntervalUs);
	Waiter w;
	w.answer = std::move(answer);
	w.object = n.id;
	w.what = "the level meter of node " + n.key;
	w.check = [this, key = n.key]() -> std::optional<json> {
		auto it = monitors_.find(key);
		if (it == monitors_.end())
			throw RpcException(ErrorCode::NotFound, "The node went away", {{"param", "node"}, {"node", key}});
		auto& mon = it->second;
		if (!mon.stream->error().empty())
			throw RpcException(ErrorCode::BackendFailed, "The level meter failed: " + mon.stream->error(),
			                   failure("pipewire.StreamFailed", mon.stream->error()));
		if (!mon.stream->connected()) return std::nullopt;
		if (!mon.published) {
			mon.published = true;
			mon.peaks.assign(mon.stream->channels(), 0.0f);
			std::string path = pointer::join(kNodes, key);
			context_.tree.set(path + "/peaks", json(std::vector<double>(mon.peaks.size(), 0.0)));
			context_.tree.set(path + "/peak", 0.0);
			publishPeakChannels(key, mon);
		}
		return json{{"node", key}, {"enabled", true}};
	};
	wait(std::move(w));
}

void PipewireBackend::publishPeaks() {
	for (auto& [key, m]: monitors_) {
		if (!m.published || !m.stream->connected()) continue;
		auto peaks = m.stream->take(context_.loop.now(), kPeakSilenceUs);
		if (!peaks) continue;
		json list = json::array();
		double peak = 0;
		for (float v: *peaks) {
			double r = std::round(double(v) * 10000.0) / 10000.0;   // no noise below 0.01 %
			list.push_back(r);
			peak = std::max(peak, r);
		}
		std::string path = pointer::join(kNodes, key);
		context_.tree.set(path + "/peaks", std::move(list));
		context_.tree.set(path + "/peak", peak);
		publishPeakChannels(key, m);
	}
	if (!monitors_.empty()) peakTimer_.setTime(context_.loop.now() + kPeakIntervalUs);
}

// The channel of each entry of peaks, as the format PipeWire negotiated for the meter names them
// (Quickshell's PwNodePeakMonitor.channels); written when it changes.
void PipewireBackend::publishPeakChannels(const std::string& key, Monitor& m) {
	const auto& positions = m.stream->positions();
	if (m.channelsPublished && m.positions == positions) return;
	m.positions = positions;
	m.channelsPublished = true;
	json names = json::array();
	for (uint32_t p: positions) names.push_back(channelName(p));
	context_.tree.set(pointer::join(kNodes, key) + "/peakChannels", std::move(names));
}

void PipewireBackend::monitorReleased(const std::string& node, uint64_t client) {
	auto it = monitors_.find(node);
	if (it == monitors_.end()) return;
	it->second.clients.erase(client);
	if (it->second.clients.empty()) dropMonitor(node);
}

void PipewireBackend::dropMonitor(std::string node) {
	auto it = monitors_.find(node);
	if (it == monitors_.end()) return;
	auto clients = std::move(it->second.clients);
	bool wasPublished = it->second.published;
	monitors_.erase(it);   // closes the stream
	if (wasPublished && nodeIds_.count(node)) {
		std::string path = pointer::join(kNodes, node);
		context_.tree.remove(path + "/peaks");
		context_.tree.remove(path + "/peak");
		context_.tree.remove(path + "/peakChannels");
	}
	// The remaining clients' leases: their release finds no monitor any more.
	for (auto& [_, weak]: clients)
		if (auto c = weak.lock()) revokeLease(*c, peaksKey(node));
	if (monitors_.empty()) peakTimer_.setEnabled(SD_EVENT_OFF);
}

void PipewireBackend::dropAllMonitors() {
	while (!monitors_.empty()) dropMonitor(monitors_.begin()->first);
}

// ---------------------------------------------------------------------------------------------
// watched properties

void PipewireBackend::watchProperties(const Node& n, std::shared_ptr<Answer> answer, ClientSession& client) {
	if (int res = graph_->watchProperties(n.id); res < 0) sendFailed("binding the node", res);
	auto& clients = propertyWatchers_[n.key];
	if (!clients.count(client.id())) {
		clients[client.id()] = client.weak();
		grantLease(client, propertiesKey(n.key), [this, node = n.key, id = client.id()] { propertiesReleased(node, id); });
	}
	Waiter w;
	w.answer = std::move(answer);
	w.object = n.id;
	w.what = "the properties of node " + n.key;
	w.check = [this, key = n.key, id = n.id]() -> std::optional<json> {
		const Node* node = graph_ ? graph_->node(id) : nullptr;
		if (!node || !propertyWatchers_.count(key))
			throw RpcException(ErrorCode::NotFound, "The node went away", {{"param", "node"}, {"node", key}});
		// In the tree, not only received: an info that came in this loop pass is published by the
		// flush() after it, and the answer must not overtake it.
		if (!node->watch || !node->watch->all || !context_.tree.find(pointer::join(kNodes, key) + "/properties"))
			return std::nullopt;
		return json{{"node", key}, {"enabled", true}};
	};
	wait(std::move(w));
}

void PipewireBackend::propertiesReleased(const std::string& node, uint64_t client) {
	auto it = propertyWatchers_.find(node);
	if (it == propertyWatchers_.end()) return;
	it->second.erase(client);
	if (it->second.empty()) dropPropertyWatch(node);
}

void PipewireBackend::dropPropertyWatch(std::string node) {
	auto it = propertyWatchers_.find(node);
	if (it == propertyWatchers_.end()) return;
	auto clients = std::move(it->second);
	propertyWatchers_.erase(it);
	if (auto id = nodeIds_.find(node); id != nodeIds_.end() && graph_) {
		graph_->unwatchProperties(id->second);   // a node that left was unwatched with it
		if (const Node* n = graph_->node(id->second)) publishNode(*n);
	}
	for (auto& [_, weak]: clients)
		if (auto c = weak.lock()) revokeLease(*c, propertiesKey(node));
}

void PipewireBackend::dropAllPropertyWatches() {
	while (!propertyWatchers_.empty()) dropPropertyWatch(propertyWatchers_.begin()->first);
}

} // namespace qsd::pipewire
