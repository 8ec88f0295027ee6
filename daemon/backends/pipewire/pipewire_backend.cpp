// The "pipewire" backend's lifecycle and publishing. Lifetime (docs/architecture.md, "Backends"): while no
// PipeWire answers, /audio is {"available": false} and the directories where its socket appears
// are watched (inotify, no polling); a lost connection (core error EPIPE) empties /audio at once
// and the backend connects again as soon as the socket is back.

#include "pipewire_backend.hpp"

#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <pipewire/impl-module.h>
#include <pipewire/pipewire.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <tuple>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <sys/stat.h>

namespace qsd {

namespace pipewire {

namespace {

constexpr const char* kLog = "pipewire";
constexpr uint64_t kRereadDelayUs = 1'000'000;   // how long the defaults may look inconsistent
// When a device's param list announced as changed and read unchanged is read again, by attempt:
// soon, then later, as a stale answer from PipeWire's cache lasts until an enumeration started
// before it was answered is answered (one of WirePlumber's, as a rule: milliseconds, longer
// under load). See Graph::paramRereadAttempt.
constexpr uint64_t kParamRereadDelayUs[Graph::kMaxParamRereads] = {200'000, 1'000'000, 5'000'000};

std::string socketList(const std::vector<SocketLocation>& locations) {
	std::string out;
	for (const auto& l: locations) out += (out.empty() ? "" : ", ") + l.path();
	return out;
}

} // namespace

PipewireBackend::PipewireBackend(BackendContext& context): Backend(context) {}

PipewireBackend::~PipewireBackend() { stop(); }

void PipewireBackend::onStart() {
	setState(BackendState::Starting);
	watch_ = std::make_unique<SocketWatch>(context_.loop, socketLocations([](const char* n) { return std::getenv(n); }),
	                                       [this] {
		                                       // Not from inside the inotify callback: the watch is disarmed on success.
		                                       quickRetry_.emplace(kQuickRetry);
		                                       retry_.setTime(context_.loop.now());
	                                       });
	retry_ = context_.loop.addIdleTimer([this] { connect(); }, "pipewire-connect");
	quickRetry_.reset();
	connect();
}

bool PipewireBackend::openContext() {
	if (pwContext_) return true;
	try {
		pwLoop_ = std::make_unique<PwLoop>(context_.loop, [this] { afterIterate(); });
		// client.conf without what qsd never uses (session-manager, client-device, adapter, the
		// D-Bus support plugin): their pages are memory; client-node comes with the first level
		// meter.
		// libpipewire's own logging stays off, as client.conf has it: qsd logs what matters.
		// loop.cancel: the data-loop thread stopped below is cancelled, not asked to stop. Asked
		// (libpipewire 0.3.65, data-loop.c), the request runs on the asking thread when the new
		// thread has not entered its loop yet; if it enters just then, it waits in epoll_wait for
		// a wake-up that never comes, and qsd waited forever in pw_data_loop_stop at start (seen
		// once in 600 starts on a loaded machine). Cancelling works whenever the thread got to.
		pwContext_ = pw_context_new(pwLoop_->get(),
		                            pw_properties_new(PW_KEY_CONFIG_NAME, "null", "support.dbus", "false", "log.level", "0",
		                                              "loop.cancel", "true", nullptr),
		                            0);
		if (!pwContext_) throw std::runtime_error(std::string("pw_context_new failed: ") + std::strerror(errno));
		// libpipewire 0.3's pw_context_new starts a data-loop thread (context.c) for realtime
		// processing. qsd runs no realtime graph — its only streams are level meters, which
		// need no realtime scheduling — so that thread is stopped and its loop is iterated from
		// qsd's own loop like the main one: the daemon stays one thread (docs/architecture.md).
		pw_data_loop* data = pw_context_get_data_loop(pwContext_);
		pw_data_loop_stop(data);
		dataLoop_ = std::make_unique<PwLoop>(context_.loop, pw_data_loop_get_loop(data), "pipewire-data-loop");
		pw_context_add_spa_lib(pwContext_, "audio.convert.*", "audioconvert/libspa-audioconvert");
		pw_context_add_spa_lib(pwContext_, "support.*", "support/libspa-support");
		for (const char* module: {"libpipewire-module-protocol-native", "libpipewire-module-metadata"})
			if (!pw_context_load_module(pwContext_, module, nullptr, nullptr))
				throw std::runtime_error(fmt::format("loading {} failed: {}", module, std::strerror(errno)));
	} catch (const std::exception& e) {
		log::error(kLog, "cannot set up libpipewire: {}", e.what());
		closeContext();
		retry_.reset();
		watch_->disarm();
		setState(BackendState::Failed, e.what());
		return false;
	}
	return true;
}

void PipewireBackend::closeContext() {
	dataLoop_.reset();   // left before the context that owns it is destroyed
	if (pwContext_) pw_context_destroy(pwContext_);
	pwContext_ = nullptr;
	clientNodeLoaded_ = false;   // the modules went with the context
	pwLoop_.reset();
}

bool PipewireBackend::socketPresent() const {
	struct stat st {};
	for (const auto& l: watch_->locations())
		if (::stat(l.path().c_str(), &st) == 0) return true;
	return false;
}

void PipewireBackend::onStop() {
	dropAllMonitors();
	dropAllPropertyWatches();
	failWaiters(rpc::ErrorCode::BackendUnavailable, "the pipewire backend stopped");
	waitTimer_.reset();
	waiterRereadTimer_.reset();
	peakTimer_.reset();
	rereadTimer_.reset();
	paramRereadTimer_.reset();
	retry_.reset();
	watch_.reset();
	graph_.reset();
	closeContext();
	nodeKeys_.clear();
	nodeIds_.clear();
	deviceKeys_.clear();
	deviceIds_.clear();
	linkKeys_.clear();
	noVolumeLogged_.clear();
}

void PipewireBackend::connect() {
	if (!started() || graph_ || !watch_) return;
	// Watch first, so a socket that appears during this attempt is not missed.
	watch_->arm();
	// Not from inside libpipewire's loop (a lost connection is seen there): this runs from a
	// timer or from onStart, so the context can go.
	bool present = socketPresent();
	std::unique_ptr<Graph> g;
	bool connected = false;
	int err = ENOENT;
	if (present) {
		if (!openContext()) return;
		g = std::make_unique<Graph>(pwContext_);
		connected = g->connect();
		err = errno;
	}
	if (!connected) {
		g.reset();
		closeContext();
		// libpipewire sums up its attempts as EHOSTDOWN (or ECONNREFUSED, ENOENT): no daemon.
		bool absent = err == EHOSTDOWN || err == ECONNREFUSED || err == ENOENT;
		std::string why = fmt::format("PipeWire is not running (no daemon at {}{}{})", socketList(watch_->locations()),
		                              absent ? "" : ": ", absent ? "" : std::strerror(err));
		if (why != unavailableWhy_) log::info(kLog, "{}; waiting for its socket", why);
		publishUnavailable(why);
		auto delay = quickRetry_ ? quickRetry_->next() : std::nullopt;
		if (delay) retry_.setTime(context_.loop.now() + uint64_t(delay->count()));
		else quickRetry_.reset();
		return;
	}
	quickRetry_.reset();
	graph_ = std::move(g);
	watch_->disarm();
	unavailableWhy_.clear();
	setState(BackendState::Starting);
	log::info(kLog, "connected to PipeWire");
}

void PipewireBackend::publishUnavailable(const std::string& why) {
	unavailableWhy_ = why;
	context_.tree.set(kRoot, {{"available", false}});
	setState(BackendState::Unavailable, why);
}

void PipewireBackend::afterIterate() {
	if (!graph_) return;
	if (graph_->lost()) {
		std::string why = graph_->lostReason();   // teardown destroys the graph
		teardown(why, true);
		return;
	}
	graph_->afterIterate();
	flush();
	if (int attempt = graph_->paramRereadAttempt(); attempt > 0 && !paramRereadTimer_.enabled()) {
		if (!paramRereadTimer_)
			paramRereadTimer_ = context_.loop.addIdleTimer(
			    [this] {
				    if (graph_) graph_->rereadParams();
			    },
			    "pipewire-params");
		paramRereadTimer_.setTime(context_.loop.now() + kParamRereadDelayUs[attempt - 1]);
	}
}

void PipewireBackend::teardown(const std::string& why, bool reconnect) {
	log::info(kLog, "{}: /audio is unavailable until it returns", why);
	dropAllMonitors();   // their streams belong to the connection
	dropAllPropertyWatches();
	failWaiters(rpc::ErrorCode::BackendUnavailable, why + " before the change was seen");
	graph_.reset();
	ready_ = false;
	nodeKeys_.clear();
	nodeIds_.clear();
	deviceKeys_.clear();
	deviceIds_.clear();
	linkKeys_.clear();
	noVolumeLogged_.clear();
	playingTo_.clear();
	capturedFrom_.clear();
	defaults_ = json::object();
	rereadFor_.clear();
	rereadTimer_.setEnabled(SD_EVENT_OFF);
	paramRereadTimer_.setEnabled(SD_EVENT_OFF);
	publishUnavailable(why);
	if (reconnect) {
		// At once: with socket activation the socket never goes away, and a quick restart may
		// already be listening. Otherwise the watch brings the next attempt.
		quickRetry_.reset();
		retry_.setTime(context_.loop.now());
	}
}

// ---------------------------------------------------------------------------------------------
// publishing

bool PipewireBackend::published(const Node& n) const { return nodeKeys_.count(n.id) > 0; }

bool PipewireBackend::isMonitor(const Node& n) const {
	return isMonitorNode(nodeType(n.props), n.props, sinkCaptures_.count(n.id) > 0);
}

const Node* PipewireBackend::nodeByKey(const std::string& key) const {
	auto it = nodeIds_.find(key);
	return it == nodeIds_.end() || !graph_ ? nullptr : graph_->node(it->second);
}

const Device* PipewireBackend::deviceByKey(const std::string& key) const {
	auto it = deviceIds_.find(key);
	return it == deviceIds_.end() || !graph_ ? nullptr : graph_->device(it->second);
}

PipewireBackend::VolumeSource PipewireBackend::volumeSource(const Node& n) const {
	VolumeSource src;
	auto deviceId = propInt(n.props, "device.id");
	auto cardDevice = propInt(n.props, "card.profile.device");
	if (deviceId && cardDevice && graph_) {
		const Device* d = graph_->device(uint32_t(*deviceId));
		auto cls = d ? d->props.find("media.class") : Props::const_iterator();
		if (d && cls != d->props.end() && cls->second == "Audio/Device") {
			if (const RouteParam* r = volumeRoute(d->activeRoutes, *cardDevice)) {
				src.state = *r->props;
				if (src.state->channelMap.empty() && n.volume) src.state->channelMap = n.volume->channelMap;
				src.device = d;
				src.route = r->index;
				src.cardDevice = r->device;
				return src;
			}
		}
	}
	if (n.volume && n.volume->usable()) src.state = n.volume;
	return src;
}

json PipewireBackend::nodeJson(const Node& n) const {
	auto type = nodeType(n.props);
	json device = nullptr;
	if (auto id = propInt(n.props, "device.id")) {
		auto it = deviceKeys_.find(uint32_t(*id));
		if (it != deviceKeys_.end()) device = it->second;
	}
	json application = nullptr;
	if (isStream(type)) {
		const Client* c = nullptr;
		if (auto id = propInt(n.props, "client.id"); id && graph_) c = graph_->client(uint32_t(*id));
		application = applicationJson(n.props, c ? &c->props : nullptr);
	}
	json audio = nullptr;
	if (isAudio(type))
		if (auto src = volumeSource(n); src.state) audio = audioJson(*src.state);
	auto keys = [&](const std::map<uint32_t, std::set<uint32_t>>& adjacency) {
		std::vector<std::pair<uint64_t, std::string>> list;
		if (auto it = adjacency.find(n.id); it != adjacency.end())
			for (uint32_t id: it->second)
				if (const Node* o = graph_->node(id); o && published(*o)) list.emplace_back(o->serial, o->key);
		std::sort(list.begin(), list.end());
		json out = json::array();
		for (auto& [_, k]: list) out.push_back(k);
		return out;
	};
	json out = {{"id", n.id},
	           {"serial", n.serial},
	           {"name", propString(n.props, "node.name")},
	           {"description", propString(n.props, "node.description")},
	           {"nickname", propString(n.props, "node.nick")},
	           {"mediaClass", propString(n.props, "media.class")},
	           {"type", toString(type)},
	           {"isSink", isSink(type)},
	           {"isStream", isStream(type)},
	           {"isMonitor", isMonitor(n)},
	           {"application", std::move(application)},
	           {"media", mediaJson(n.props)},
	           {"device", std::move(device)},
	           {"audio", std::move(audio)},
	           {"playingTo", keys(playingTo_)},
	           {"capturedFrom", keys(capturedFrom_)}};
	// Only while a client watches them (audio.watchProperties), once PipeWire sent them.
	if (n.watch && n.watch->all) {
		json all = json::object();
		for (const auto& [k, v]: *n.watch->all) all.emplace(k, v);
		out["properties"] = std::move(all);
	}
	return out;
}

json PipewireBackend::deviceJson(const Device& d) const {
	json profiles = json::array();
	for (const auto& p: d.profiles) profiles.push_back(profileJson(p));
	json routes = {{"output", nullptr}, {"input", nullptr}};
	// With several card devices per direction, the route of the lowest card device is shown.
	std::vector<const RouteParam*> active;
	for (const auto& r: d.activeRoutes) active.push_back(&r);
	std::sort(active.begin(), active.end(), [](auto* a, auto* b) { return a->device < b->device; });
	for (const RouteParam* r: active) {
		auto& slot = routes[directionName(r->direction)];
		if (slot.is_null()) slot = routeJson(*r);
	}
	json ports = json::array();
	for (const auto& r: d.routes) {
		bool inProfile = r.profiles.empty() || !d.profile ||
		                 std::find(r.profiles.begin(), r.profiles.end(), d.profile->index) != r.profiles.end();
		if (inProfile) ports.push_back(routeJson(r));
	}
	return {{"id", d.id},
	        {"serial", d.serial},
	        {"name", propString(d.props, "device.name")},
	        {"description", propString(d.props, "device.description")},
	        {"nickname", propString(d.props, "device.nick")},
	        {"api", propString(d.props, "device.api")},
	        {"profile", d.profile ? json(d.profile->name) : json(nullptr)},
	        {"profileIndex", d.profile ? json(d.profile->index) : json(nullptr)},
	        {"profiles", std::move(profiles)},
	        {"routes", std::move(routes)},
	        {"ports", std::move(ports)}};
}

std::optional<std::string> PipewireBackend::defaultKey(const char* metadataKey, bool sink) const {
	const Metadata* m = graph_ ? graph_->defaults() : nullptr;
	if (!m) return std::nullopt;
	auto it = m->defaults.find(metadataKey);
	if (it == m->defaults.end()) return std::nullopt;
	const std::string* name = &it->second;   // parsed when it arrived
	// Names are not unique: the oldest node of the right direction. A node of the other one is no
	// default of this: without any source, WirePlumber names a sink as the default source (its
	// monitor is what recording from the default then records), and a microphone widget showed the
	// speakers' volume and muted the speakers (Quickshell's issue 304, fixed there the same way).
	const Node* best = nullptr;
	for (const auto& [id, key]: nodeKeys_) {
		const Node* n = graph_->node(id);
		if (!n) continue;
		auto nm = n->props.find("node.name");
		if (nm == n->props.end() || nm->second != *name) continue;
		auto type = nodeType(n->props);
		bool match = type == NodeType::AudioDuplex || (sink ? type == NodeType::AudioSink : type == NodeType::AudioSource);
		if (match && (!best || n->serial < best->serial)) best = n;
	}
	if (!best) return std::nullopt;
	return best->key;
}

void PipewireBackend::publishDefaults() {
	static constexpr std::array<std::tuple<const char*, const char*, bool>, 4> keys = {{
	    {"defaultAudioSink", "default.audio.sink", true},
	    {"defaultAudioSource", "default.audio.source", false},
	    {"preferredDefaultAudioSink", "default.configured.audio.sink", true},
	    {"preferredDefaultAudioSource", "default.configured.audio.source", false},
	}};
	for (const auto& [field, metadataKey, sink]: keys) {
		auto key = defaultKey(metadataKey, sink);
		json value = key ? json(*key) : json(nullptr);
		defaults_[field] = value;
		context_.tree.set(pointer::join(kRoot, field), std::move(value));
	}
}

// Two states of the defaults that WirePlumber does not leave for long, but that qsd keeps when
// PipeWire's metadata module dropped a change on its way to qsd (it sends the clients bound to
// the metadata none while another client's bind waits for WirePlumber's answer to a ping:
// docs/backends/pipewire.md): a preferred default that names a present node other than the
// default, and audio sinks (or sources) with no default for them. WirePlumber writes the default
// right after it changes the preferred one, and one as soon as a device appears.
bool PipewireBackend::defaultsSuspect() const {
	const Metadata* m = graph_ ? graph_->defaults() : nullptr;
	if (!m || !m->complete) return false;
	auto field = [&](const char* name) { return defaults_.value(name, json()); };
	for (const auto& [preferred, effective]: {std::pair{"preferredDefaultAudioSink", "defaultAudioSink"},
	                                          std::pair{"preferredDefaultAudioSource", "defaultAudioSource"}}) {
		json p = field(preferred), e = field(effective);
		if (!p.is_null() && !e.is_null() && p != e) return true;
	}
	bool noSink = field("defaultAudioSink").is_null(), noSource = field("defaultAudioSource").is_null();
	if (!noSink && !noSource) return false;
	for (const auto& [id, _]: nodeKeys_) {
		const Node* n = graph_->node(id);
		if (!n) continue;
		auto type = nodeType(n->props);
		if (noSink && (type == NodeType::AudioSink || type == NodeType::AudioDuplex)) return true;
		if (noSource && (type == NodeType::AudioSource || type == NodeType::AudioDuplex)) return true;
	}
	return false;
}

// Such a state that lasts a second makes qsd read the metadata again, once for each such state
// (until the defaults look consistent again): a bind of its own opens the same gap for the other
// clients for as long as WirePlumber takes to answer, so it is not made on every change, and a
// state WirePlumber keeps on purpose (a preferred sink it does not take, a sink it never makes
// the default) costs one reading.
void PipewireBackend::checkDefaults() {
	bool suspect = defaultsSuspect();
	if (!suspect) rereadFor_.clear();
	if (!suspect || defaults_.dump() == rereadFor_) {
		rereadTimer_.setEnabled(SD_EVENT_OFF);
		return;
	}
	if (rereadTimer_.enabled()) return;
	if (!rereadTimer_) rereadTimer_ = context_.loop.addIdleTimer([this] { rereadDefaults(); }, "pipewire-defaults");
	rereadTimer_.setTime(context_.loop.now() + kRereadDelayUs);
}

void PipewireBackend::rereadDefaults() {
	if (!graph_ || !defaultsSuspect()) return;
	std::string state = defaults_.dump();
	if (state == rereadFor_ || !graph_->rereadMetadata()) return;
	rereadFor_ = std::move(state);
	log::info(kLog, "the defaults have looked inconsistent for a second ({}): reading the default metadata again, "
	                "in case PipeWire did not send qsd a change",
	          rereadFor_);
}

void PipewireBackend::publishNode(const Node& n) {
	if (!n.complete) return;
	std::string path = pointer::join(kNodes, n.key);
	json value = nodeJson(n);
	if (value["audio"].is_null() && value["type"].get_ref<const std::string&>().rfind("audio", 0) == 0 &&
	    noVolumeLogged_.insert(n.key).second)
		logNoVolume(n.key, value["name"]);
	if (!published(n)) {
		nodeKeys_[n.id] = n.key;
		nodeIds_[n.key] = n.id;
		context_.tree.set(path, std::move(value));
		return;
	}
	context_.tree.sync(path, value, {"peaks", "peak", "peakChannels"});
}

void PipewireBackend::logNoVolume(const std::string& key, const json& name) {
	uint64_t held = 0;
	if (!noVolumeLog_.allow(context_.loop.now(), held)) return;
	log::info(kLog, "audio node {} ({}) has no volume controls (no Props param): its audio is null{}", key,
	          name.is_string() ? name.get_ref<const std::string&>() : std::string("?"), log::heldBack(held));
}

void PipewireBackend::publishDevice(const Device& d) {
	if (!d.complete) return;
	std::string path = pointer::join(kDevices, d.key);
	if (!deviceKeys_.count(d.id)) {
		deviceKeys_[d.id] = d.key;
		deviceIds_[d.key] = d.id;
		context_.tree.set(path, deviceJson(d));
		return;
	}
	context_.tree.sync(path, deviceJson(d));
}

// Publishes every link whose two nodes are published, removes the others, and recomputes
// playingTo/capturedFrom; nodes whose lists changed are added to dirtyNodes.
void PipewireBackend::publishLinks(std::set<uint32_t>& dirtyNodes) {
	std::map<uint32_t, std::set<uint32_t>> playing, captured;
	std::set<uint32_t> sinkCaptures;
	std::set<uint32_t> keep;
	for (const auto& [id, l]: graph_->links()) {
		if (!l->complete || !l->haveInfo) continue;
		const Node* out = graph_->node(l->outputNode);
		const Node* in = graph_->node(l->inputNode);
		if (!out || !in || !published(*out) || !published(*in)) continue;
		keep.insert(id);
		json value = {{"id", l->id}, {"output", out->key}, {"input", in->key}, {"state", linkStateName(l->state)}};
		std::string path = pointer::join(kLinks, l->key);
		if (!linkKeys_.count(id)) {
			linkKeys_[id] = l->key;
			context_.tree.set(path, std::move(value));
		} else {
			context_.tree.sync(path, value);
		}
		if (!isMonitorStream(in->props) && !isMonitorStream(out->props)) {
			playing[out->id].insert(in->id);
			captured[in->id].insert(out->id);
		}
		if (nodeType(out->props) == NodeType::AudioSink) sinkCaptures.insert(in->id);
	}
	for (auto it = linkKeys_.begin(); it != linkKeys_.end();) {
		if (keep.count(it->first)) {
			++it;
			continue;
		}
		context_.tree.remove(pointer::join(kLinks, it->second));
		it = linkKeys_.erase(it);
	}
	auto diff = [&](const auto& before, const auto& after) {
		for (const auto& [id, set]: before) {
			auto it = after.find(id);
			if (it == after.end() || it->second != set) dirtyNodes.insert(id);
		}
		for (const auto& [id, _]: after)
			if (!before.count(id)) dirtyNodes.insert(id);
	};
	diff(playingTo_, playing);
	diff(capturedFrom_, captured);
	std::set_symmetric_difference(sinkCaptures_.begin(), sinkCaptures_.end(), sinkCaptures.begin(), sinkCaptures.end(),
	                              std::inserter(dirtyNodes, dirtyNodes.end()));
	playingTo_ = std::move(playing);
	capturedFrom_ = std::move(captured);
	sinkCaptures_ = std::move(sinkCaptures);
}

void PipewireBackend::publishAll() {
	(void)graph_->takeChanges();   // everything is published below
	ready_ = true;
	auto& tree = context_.tree;
	// One write of the whole domain, so /audio becomes available complete in one batch.
	json audio = {{"available", true}, {"nodes", json::object()}, {"devices", json::object()}, {"links", json::object()}};
	tree.set(kRoot, audio);
	for (const auto& [_, d]: graph_->devices()) publishDevice(*d);
	for (const auto& [_, n]: graph_->nodes())
		if (n->complete) {
			nodeKeys_[n->id] = n->key;
			nodeIds_[n->key] = n->id;
		}
	std::set<uint32_t> dirty;
	publishLinks(dirty);
	// Each node is written whole (nothing is there yet), after the links it refers to.
	for (const auto& [id, _]: nodeKeys_) publishNode(*graph_->node(id));
	publishDefaults();
	publishViews();
	checkDefaults();
	setState(BackendState::Running);
	log::info(kLog, "/audio is complete: {} nodes, {} devices{}, {} links{}", nodeKeys_.size(), deviceKeys_.size(),
	          graph_->waitingDevices() ? fmt::format(" ({} more waiting, past the bound)", graph_->waitingDevices()) : "",
	          linkKeys_.size(), graph_->defaults() ? "" : " (no session manager: defaults are null)");
}

void PipewireBackend::flush() {
	if (!ready_) {
		if (graph_->ready()) publishAll();
		checkWaiters();
		return;
	}
	Changes ch = graph_->takeChanges();
	if (ch.empty()) {
		checkWaiters();
		return;
	}
	auto& tree = context_.tree;
	std::set<uint32_t> dirty = std::move(ch.nodes);
	bool structure = !ch.links.empty() || !ch.removedLinks.empty() || !ch.removedNodes.empty();

	for (const auto& key: ch.removedNodes) {
		noVolumeLogged_.erase(key);
		auto it = nodeIds_.find(key);
		if (it == nodeIds_.end()) continue;
		dropMonitor(key);
		dropPropertyWatch(key);
		nodeKeys_.erase(it->second);
		dirty.erase(it->second);
		nodeIds_.erase(it);
		tree.remove(pointer::join(kNodes, key));
	}
	for (const auto& key: ch.removedDevices) {
		auto it = deviceIds_.find(key);
		if (it == deviceIds_.end()) continue;
		deviceKeys_.erase(it->second);
		deviceIds_.erase(it);
		tree.remove(pointer::join(kDevices, key));
		// Its nodes lose their `device` and any route-backed volume.
		for (const auto& [id, _]: nodeKeys_)
			if (const Node* n = graph_->node(id); n && n->props.count("device.id")) dirty.insert(id);
	}
	for (uint32_t id: ch.devices) {
		const Device* d = graph_->device(id);
		if (!d) continue;
		publishDevice(*d);
		for (const auto& [nid, n]: graph_->nodes()) {
			auto dev = propInt(n->props, "device.id");
			if (dev && uint32_t(*dev) == id) dirty.insert(nid);
		}
	}
	for (uint32_t id: ch.clients)
		for (const auto& [nid, n]: graph_->nodes()) {
			auto c = propInt(n->props, "client.id");
			if (c && uint32_t(*c) == id) dirty.insert(nid);
		}
	// New nodes first, so links to them can be published in this same batch.
	for (uint32_t id: dirty)
		if (const Node* n = graph_->node(id); n && n->complete && !published(*n)) {
			publishNode(*n);
			structure = true;
		}
	if (structure) publishLinks(dirty);
	for (uint32_t id: dirty)
		if (const Node* n = graph_->node(id)) publishNode(*n);
	publishDefaults();
	publishViews();
	checkDefaults();
	checkWaiters();
}

} // namespace pipewire

std::unique_ptr<Backend> createPipewireBackend(BackendContext& context) {
	return std::make_unique<pipewire::PipewireBackend>(context);
}

} // namespace qsd
