#include "graph_detail.hpp"

#include "../../event_loop.hpp"
#include "../../log.hpp"
#include "../../text.hpp"
#include "pod.hpp"

#include <pipewire/extensions/metadata.h>
#include <spa/param/param.h>
#include <spa/utils/result.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string_view>
#include <type_traits>
#include <cerrno>
#include <cstring>
#include <new>

namespace qsd::pipewire {

void Object::retire() {
	if (!proxy) return;
	auto* state = static_cast<detail::ProxyState*>(pw_proxy_get_user_data(proxy));
	if (state->removed) {
		release();
		return;
	}
	spa_hook_remove(&objectListener);
	state->retired = true;   // onProxyRemoved destroys it (at the latest when the connection closes)
	proxy = nullptr;
}

Graph::Graph(pw_context* context): context_(context) {}

Graph::~Graph() {
	// Proxies first (each removes its listener), then the registry, then the connection.
	nodes_.clear();
	devices_.clear();
	links_.clear();
	clients_.clear();
	rereading_.reset();
	metadata_.reset();
	if (registry_) {
		spa_hook_remove(&registryListener_);
		pw_proxy_destroy(reinterpret_cast<pw_proxy*>(registry_));
	}
	if (core_) {
		spa_hook_remove(&coreListener_);
		pw_core_disconnect(core_);
	}
}

bool Graph::connect() {
	core_ = pw_context_connect(context_, nullptr, 0);
	if (!core_) return false;
	static const pw_core_events coreEvents = {
	    .version = PW_VERSION_CORE_EVENTS,
	    .info = &Graph::onCoreInfo,
	    .done = &Graph::onCoreDone,
	    .error = &Graph::onCoreError,
	};
	pw_core_add_listener(core_, &coreListener_, &coreEvents, this);
	registry_ = pw_core_get_registry(core_, PW_VERSION_REGISTRY, 0);
	static const pw_registry_events registryEvents = {
	    .version = PW_VERSION_REGISTRY_EVENTS,
	    .global = &Graph::onGlobal,
	    .global_remove = &Graph::onGlobalRemove,
	};
	pw_registry_add_listener(registry_, &registryListener_, &registryEvents, this);
	// Its done marks the end of the registry's first listing.
	registrySeq_ = pw_core_sync(core_, PW_ID_CORE, 0);
	return true;
}

// ---------------------------------------------------------------------------------------------
// core

void Graph::onCoreInfo(void* data, const pw_core_info* info) noexcept {
	detail::guarded("core info", [&] {
		(void)data;
		if (info && info->name) log::debug(detail::kLog, "connected to {} {}", info->name, info->version ? info->version : "");
	});
}

void Graph::onCoreDone(void* data, uint32_t id, int seq) noexcept {
	detail::guarded("core done", [&] {
		if (id == PW_ID_CORE) static_cast<Graph*>(data)->done(seq);
	});
}

void Graph::onCoreError(void* data, uint32_t id, int seq, int res, const char* message) noexcept {
	detail::guarded("core error", [&] {
		auto* g = static_cast<Graph*>(data);
		std::string msg = message ? message : "";
		if (id == PW_ID_CORE) {
			if (res == -EPIPE) g->lose("PipeWire closed the connection");
			// A request that crossed the removal of its object (a bind, then subscribe_params, on
			// a node that left meanwhile): routine, the registry announces the removal.
			else if (res == -ENOENT && msg.rfind("unknown resource ", 0) == 0)
				log::debug(detail::kLog, "PipeWire error (seq {}): {}: {}", seq, spa_strerror(res), msg);
			else log::warning(detail::kLog, "PipeWire error (seq {}): {}: {}", seq, spa_strerror(res), msg);
			return;
		}
		// A reading of the metadata again that PipeWire refused (the metadata left meanwhile):
		// dropped; the metadata held stays, and no write waits on this binding.
		if (g->rereading_ && g->rereading_->proxy && pw_proxy_get_id(g->rereading_->proxy) == id) {
			log::debug(detail::kLog, "reading the default metadata again failed: {}: {}", spa_strerror(res), msg);
			g->rereading_->retire();
			g->rereading_.reset();
			return;
		}
		Object* o = g->byProxyId(id);
		// ENOENT on objects that are going away is routine (Quickshell makes the same observation),
		// and so is ESTALE on a bind that came after its global left ("no global N any more").
		if (res == -ENOENT || res == -ESTALE)
			log::debug(detail::kLog, "PipeWire error on object {}: {}: {}", id, spa_strerror(res), msg);
		else log::info(detail::kLog, "PipeWire refused a request on {}: {}: {}", o ? o->id : id, spa_strerror(res), msg);
		if (o) g->errors_.push_back({o->id, res, msg.empty() ? std::string(spa_strerror(res)) : msg});
	});
}

void Graph::lose(std::string reason) {
	if (lost_) return;
	lost_ = true;
	lostReason_ = std::move(reason);
}

uint64_t Graph::requestSync() {
	uint64_t gen = nextGen_++;
	int seq = core_ ? pw_core_sync(core_, PW_ID_CORE, 0) : -1;
	syncWanted_ = false;   // this sync covers whatever waited for one
	if (seq < 0) return gen;
	syncs_.emplace_back(seq, gen);
	return gen;
}

void Graph::afterIterate() {
	if (syncWanted_ && !lost_) requestSync();
}

void Graph::done(int seq) {
	if (seq == registrySeq_ && !registryListed_) {
		registryListed_ = true;
		for (const auto& [id, _]: nodes_) initialIds_.insert(id);
		for (const auto& [id, _]: devices_) initialIds_.insert(id);
		for (const auto& [id, _]: links_) initialIds_.insert(id);
		for (const auto& [id, _]: clients_) initialIds_.insert(id);
		if (metadata_) initialIds_.insert(metadata_->id);
		// Everything listed was bound while the listing was read; one more round trip completes it.
		initialGen_ = requestSync();
		return;
	}
	auto it = std::find_if(syncs_.begin(), syncs_.end(), [&](const auto& s) { return s.first == seq; });
	if (it == syncs_.end()) return;
	uint64_t gen = it->second;
	syncs_.erase(syncs_.begin(), it + 1);
	completed(gen);
}

void Graph::completed(uint64_t gen) {
	completedGen_ = std::max(completedGen_, gen);
	auto finish = [&](Object& o, auto& set) {
		if (o.waitGen == 0 || o.waitGen > completedGen_) return;
		o.waitGen = 0;
		o.complete = true;
		set.insert(o.id);
	};
	for (auto& [_, n]: nodes_) finish(*n, changes_.nodes);
	// The devices of the round whose enumerations are all answered leave it. One that announced
	// more changes than the round lets it start (kMaxEnumerationPasses) waits for a later round,
	// incomplete (its waitGen is kQueuedGen), behind the devices already waiting.
	for (auto it = enumerating_.begin(); it != enumerating_.end();) {
		auto d = devices_.find(*it);
		if (d != devices_.end() && d->second->enumGen > completedGen_) {
			++it;
			continue;
		}
		if (d != devices_.end()) {
			d->second->enumGen = 0;
			if (!d->second->queuedParams.empty()) enumerationQueue_.push_back(*it);
		}
		it = enumerating_.erase(it);
	}
	for (auto& [_, d]: devices_) {
		if (d->waitGen == 0 || d->waitGen > completedGen_) continue;
		commitDevice(*d);
		finish(*d, changes_.devices);
	}
	for (auto& [_, l]: links_) finish(*l, changes_.links);
	for (auto& [_, c]: clients_) finish(*c, changes_.clients);
	// Every enumeration sent was answered before this done: the next round starts (its sync
	// goes out after this iteration).
	startRound();
	if (metadata_ && metadata_->waitGen && metadata_->waitGen <= completedGen_) {
		metadata_->waitGen = 0;
		metadata_->complete = true;
		changes_.defaults = true;
	}
	if (rereading_ && rereading_->waitGen && rereading_->waitGen <= completedGen_) {
		// Every property came before this done: PipeWire holds a client's requests (the sync)
		// until the metadata's owner answered the bind's ping, and then sends the new binding
		// all of them.
		rereading_->waitGen = 0;
		rereading_->complete = true;
		bool differ = !metadata_ || metadata_->defaults != rereading_->defaults;
		// Both bindings are of a global that is there: the first one is destroyed now (retire()
		// is for proxies whose global left).
		if (metadata_) metadata_->release();
		metadata_ = std::move(rereading_);
		if (differ) changes_.defaults = true;
		log::info(detail::kLog, "read the default metadata again: {}", differ ? "it had changed" : "nothing had changed");
	}
	if (!ready_ && initialGen_ && completedGen_ >= initialGen_) {
		// Everything the first listing held, complete (a device whose params came after its
		// bind's sync completes at a later one).
		bool all = true;
		for (uint32_t id: initialIds_) {
			const Object* o = nullptr;
			if (auto n = nodes_.find(id); n != nodes_.end()) o = n->second.get();
			else if (auto d = devices_.find(id); d != devices_.end()) o = d->second.get();
			else if (auto l = links_.find(id); l != links_.end()) o = l->second.get();
			else if (auto c = clients_.find(id); c != clients_.end()) o = c->second.get();
			else if (metadata_ && metadata_->id == id) o = metadata_.get();
			if (o && !o->complete) all = false;
		}
		if (all) {
			ready_ = true;
			initialIds_.clear();
		}
	}
}

Changes Graph::takeChanges() {
	Changes out = std::move(changes_);
	changes_ = Changes{};
	return out;
}

std::vector<Graph::Error> Graph::takeErrors() {
	std::vector<Error> out = std::move(errors_);
	errors_.clear();
	return out;
}

// ---------------------------------------------------------------------------------------------
// registry

void Graph::onGlobal(void* data, uint32_t id, uint32_t, const char* type, uint32_t version, const spa_dict* props) noexcept {
	detail::guarded("registry global", [&] { static_cast<Graph*>(data)->global(id, type, version, props); });
}

void Graph::onGlobalRemove(void* data, uint32_t id) noexcept {
	detail::guarded("registry global_remove", [&] { static_cast<Graph*>(data)->globalRemove(id); });
}

template <typename T>
T* Graph::bind(std::map<uint32_t, std::unique_ptr<T>>& map, uint32_t id, const char* type, uint32_t version,
               const spa_dict* props, const void* events) {
	if (map.count(id)) return nullptr;   // a global announced twice
	auto* proxy = detail::bindProxy(registry_, id, type, version);
	if (!proxy) {
		log::warning(detail::kLog, "binding {} {} failed: {}", type, id, std::strerror(errno));
		return nullptr;
	}
	auto o = std::make_unique<T>();
	o->graph = this;
	o->id = id;
	o->proxy = proxy;
	o->props = detail::toProps(props, detail::keysOf<T>());
	auto serial = propInt(o->props, "object.serial");
	o->serial = serial && *serial >= 0 ? uint64_t(*serial) : 0;
	// PipeWire before 0.3.44 has no serials; the global id is then the best key there is.
	o->key = serial ? std::to_string(*serial) : "id" + std::to_string(id);
	pw_proxy_add_object_listener(proxy, &o->objectListener, events, o.get());
	T* raw = o.get();
	map.emplace(id, std::move(o));
	bound(*raw);
	return raw;
}

void Graph::bound(Object& o) {
	o.waitGen = nextGen_;
	syncWanted_ = true;
}

void Graph::global(uint32_t id, const char* type, uint32_t version, const spa_dict* props) {
	if (!type) return;
	if (std::strcmp(type, PW_TYPE_INTERFACE_Node) == 0) {
		static const pw_node_events events = {
		    .version = PW_VERSION_NODE_EVENTS,
		    .info = &Graph::onNodeInfo,
		    .param = &Graph::onNodeParam,
		};
		if (auto* n = bind(nodes_, id, type, std::min<uint32_t>(version, PW_VERSION_NODE), props, &events)) {
			n->version = std::min<uint32_t>(version, PW_VERSION_NODE);
			uint32_t ids[] = {SPA_PARAM_Props};
			pw_node_subscribe_params(reinterpret_cast<pw_node*>(n->proxy), ids, 1);
		}
	} else if (std::strcmp(type, PW_TYPE_INTERFACE_Device) == 0) {
		if (devices_.count(id) || waitingDevices_.count(id)) return;   // a global announced twice
		uint32_t v = std::min<uint32_t>(version, PW_VERSION_DEVICE);
		if (devices_.size() >= kMaxDevices) deviceWaits(id, v, props);
		else bindDevice(id, v, props);
	} else if (std::strcmp(type, PW_TYPE_INTERFACE_Link) == 0) {
		static const pw_link_events events = {
		    .version = PW_VERSION_LINK_EVENTS,
		    .info = &Graph::onLinkInfo,
		};
		bind(links_, id, type, std::min<uint32_t>(version, PW_VERSION_LINK), props, &events);
	} else if (std::strcmp(type, PW_TYPE_INTERFACE_Client) == 0) {
		static const pw_client_events events = {
		    .version = PW_VERSION_CLIENT_EVENTS,
		    .info = &Graph::onClientInfo,
		};
		bind(clients_, id, type, std::min<uint32_t>(version, PW_VERSION_CLIENT), props, &events);
	} else if (std::strcmp(type, PW_TYPE_INTERFACE_Metadata) == 0) {
		const char* name = props ? spa_dict_lookup(props, PW_KEY_METADATA_NAME) : nullptr;
		if (!name || std::strcmp(name, "default") != 0 || metadata_) return;
		metadata_ = bindMetadata(id, std::min<uint32_t>(version, PW_VERSION_METADATA), detail::toProps(props, detail::kOtherKeys));
	}
}

void Graph::bindDevice(uint32_t id, uint32_t version, const spa_dict* props) {
	static const pw_device_events events = {
	    .version = PW_VERSION_DEVICE_EVENTS,
	    .info = &Graph::onDeviceInfo,
	    .param = &Graph::onDeviceParam,
	};
	// Params are enumerated when the first info lists them, and again on each change.
	bind(devices_, id, PW_TYPE_INTERFACE_Device, version, props, &events);
}

// Past kMaxDevices a device is not bound: nothing of it is read, PipeWire sends it no event, and
// what is kept is what binding it later takes (its serial makes its key, as the registry's props
// would have; the rest comes with its first info).
void Graph::deviceWaits(uint32_t id, uint32_t version, const spa_dict* props) {
	WaitingDevice w;
	w.order = nextWaitingOrder_++;
	w.version = version;
	Props p = detail::toProps(props, detail::kDeviceKeys);
	if (auto serial = propInt(p, "object.serial")) {
		w.serial = *serial;
		w.hasSerial = true;
	}
	waitingDevices_.emplace(id, w);
	waitingOrder_.emplace(w.order, id);
	uint64_t held = 0;
	if (!waitingLog_.allow(EventLoop::clock(), held)) return;
	auto name = p.find("device.name");
	log::info(detail::kLog, "{} devices are shown, the most there may be: device {} ({}) is not, until one of them goes ({} "
	                "waiting){}",
	          kMaxDevices, w.hasSerial ? std::to_string(w.serial) : "id" + std::to_string(id),
	          name != p.end() ? name->second : std::string("?"), waitingDevices_.size(),
	          log::heldBack(held));
}

// A shown device went: the one waiting longest takes its place.
void Graph::bindWaitingDevice() {
	if (devices_.size() >= kMaxDevices || waitingOrder_.empty()) return;
	auto first = waitingOrder_.begin();
	uint32_t id = first->second;
	waitingOrder_.erase(first);
	auto it = waitingDevices_.find(id);
	if (it == waitingDevices_.end()) return;
	WaitingDevice w = it->second;
	waitingDevices_.erase(it);
	std::string serial = std::to_string(w.serial);
	spa_dict_item item{"object.serial", serial.c_str()};
	spa_dict dict{0, 1, &item};
	uint64_t held = 0;
	if (waitingLog_.allow(EventLoop::clock(), held))
		log::info(detail::kLog, "device {} is shown now, in the place of one that went ({} still waiting){}",
		          w.hasSerial ? serial : "id" + std::to_string(id), waitingDevices_.size(),
		          log::heldBack(held));
	// A device that went while it waited is not here any more (globalRemove): this one's global
	// is there, unless its removal is already on the way, which retire() handles as for any bind.
	bindDevice(id, w.version, w.hasSerial ? &dict : nullptr);
}

std::unique_ptr<Metadata> Graph::bindMetadata(uint32_t id, uint32_t version, Props props) {
	auto* proxy = detail::bindProxy(registry_, id, PW_TYPE_INTERFACE_Metadata, version);
	if (!proxy) return nullptr;
	auto m = std::make_unique<Metadata>();
	m->graph = this;
	m->id = id;
	m->proxy = proxy;
	m->props = std::move(props);
	m->key = "metadata";
	m->version = version;
	static const pw_metadata_events events = {
	    .version = PW_VERSION_METADATA_EVENTS,
	    .property = &Graph::onMetadataProperty,
	};
	pw_proxy_add_object_listener(proxy, &m->objectListener, &events, m.get());
	bound(*m);
	return m;
}

bool Graph::rereadMetadata() {
	if (!metadata_ || !metadata_->complete || rereading_ || !registry_ || lost_) return false;
	rereading_ = bindMetadata(metadata_->id, metadata_->version, metadata_->props);
	return rereading_ != nullptr;
}

void Graph::globalRemove(uint32_t id) {
	auto drop = [&](auto& map, std::vector<std::string>* removed, std::set<uint32_t>* changed) {
		auto it = map.find(id);
		if (it == map.end()) return false;
		if (it->second->complete && removed) removed->push_back(it->second->key);
		if (changed) changed->erase(id);
		if constexpr (std::is_same_v<typename std::decay_t<decltype(map)>::mapped_type, std::unique_ptr<Node>>)
			if (it->second->watch) it->second->watch->retire();
		it->second->retire();
		map.erase(it);
		return true;
	};
	if (drop(nodes_, &changes_.removedNodes, &changes_.nodes)) return;
	if (drop(devices_, &changes_.removedDevices, &changes_.devices)) {
		leaveRound(id);
		bindWaitingDevice();
		return;
	}
	if (auto w = waitingDevices_.find(id); w != waitingDevices_.end()) {
		waitingOrder_.erase(w->second.order);
		waitingDevices_.erase(w);
		return;
	}
	if (drop(links_, &changes_.removedLinks, &changes_.links)) return;
	if (clients_.count(id)) {
		drop(clients_, nullptr, nullptr);
		changes_.clients.insert(id);   // its streams lose their application fallback
		return;
	}
	if (rereading_ && rereading_->id == id) {
		rereading_->retire();
		rereading_.reset();
	}
	if (metadata_ && metadata_->id == id) {
		metadata_->retire();
		metadata_.reset();
		changes_.defaults = true;
	}
}

Object* Graph::byProxyId(uint32_t proxyId) {
	auto match = [&](Object& o) { return o.proxy && pw_proxy_get_id(o.proxy) == proxyId; };
	for (auto& [_, o]: nodes_) if (match(*o) || (o->watch && match(*o->watch))) return o.get();
	for (auto& [_, o]: devices_) if (match(*o)) return o.get();
	for (auto& [_, o]: links_) if (match(*o)) return o.get();
	if (metadata_ && match(*metadata_)) return metadata_.get();
	return nullptr;
}

const Node* Graph::node(uint32_t id) const {
	auto it = nodes_.find(id);
	return it == nodes_.end() ? nullptr : it->second.get();
}

const Device* Graph::device(uint32_t id) const {
	auto it = devices_.find(id);
	return it == devices_.end() ? nullptr : it->second.get();
}

const Client* Graph::client(uint32_t id) const {
	auto it = clients_.find(id);
	return it == clients_.end() ? nullptr : it->second.get();
}

// ---------------------------------------------------------------------------------------------
// object events

void Graph::onNodeInfo(void* data, const pw_node_info* info) noexcept {
	detail::guarded("node info", [&] {
		auto* n = static_cast<Node*>(data);
		if (!info) return;
		n->haveInfo = true;
		if ((info->change_mask & PW_NODE_CHANGE_MASK_PROPS) && info->props) {
			auto props = detail::toProps(info->props, detail::kNodeKeys);
			if (props == n->props) return;
			n->props = std::move(props);
			if (n->complete) n->graph->changes_.nodes.insert(n->id);
		}
	});
}

void Graph::onWatchInfo(void* data, const pw_node_info* info) noexcept {
	detail::guarded("node info (watched properties)", [&] {
		auto* w = static_cast<PropertyWatch*>(data);
		if (!info || !(info->change_mask & PW_NODE_CHANGE_MASK_PROPS) || !info->props) return;
		PropItems items;
		items.reserve(info->props->n_items);
		const spa_dict_item* item = nullptr;
		spa_dict_for_each(item, info->props) {
			if (item->key && item->value) items.emplace_back(item->key, item->value);
		}
		bool cut = false;
		auto all = watchedProps(items, &cut);
		if (cut && !w->cutLogged) {
			w->cutLogged = true;
			log::info(detail::kLog, "node {} has {} properties: its properties show {} of them, some cut", w->key,
			          info->props->n_items, all.size());
		}
		if (w->all == all) return;
		w->all = std::move(all);
		auto it = w->graph->nodes_.find(w->id);
		if (it != w->graph->nodes_.end() && it->second->complete) w->graph->changes_.nodes.insert(w->id);
	});
}

void Graph::onNodeParam(void* data, int, uint32_t id, uint32_t, uint32_t, const spa_pod* param) noexcept {
	detail::guarded("node param", [&] {
		auto* n = static_cast<Node*>(data);
		if (id != SPA_PARAM_Props) return;
		// An adapter lists its volume Props and a second Props holding only its "params" struct.
		auto v = parseProps(param);
		if (!v) return;
		n->volume = std::move(v);
		if (n->complete) n->graph->changes_.nodes.insert(n->id);
	});
}

void Graph::onLinkInfo(void* data, const pw_link_info* info) noexcept {
	detail::guarded("link info", [&] {
		auto* l = static_cast<Link*>(data);
		if (!info) return;
		bool changed = !l->haveInfo || l->outputNode != info->output_node_id || l->inputNode != info->input_node_id ||
		               l->state != int(info->state);
		l->haveInfo = true;
		l->outputNode = info->output_node_id;
		l->inputNode = info->input_node_id;
		l->state = int(info->state);
		if (changed && l->complete) l->graph->changes_.links.insert(l->id);
	});
}

void Graph::onClientInfo(void* data, const pw_client_info* info) noexcept {
	detail::guarded("client info", [&] {
		auto* c = static_cast<Client*>(data);
		if (!info || !(info->change_mask & PW_CLIENT_CHANGE_MASK_PROPS) || !info->props) return;
		auto props = detail::toProps(info->props, detail::kClientKeys);
		if (props == c->props) return;
		c->props = std::move(props);
		if (c->complete) c->graph->changes_.clients.insert(c->id);
	});
}

// Only the four keys qsd shows are kept, each as the node name its value holds, parsed here once:
// any client may write the metadata, any key, values of any size, and they stay after it exits.
// Every default.* key was kept whole (5000 junk keys of 10 KB took qsd from 8.7 to 81.3 MiB) and
// parsed again on every flush of /audio (with two 8 MB values, 0.26 s of the loop per volume
// change).
int Graph::onMetadataProperty(void* data, uint32_t subject, const char* key, const char* type, const char* value) noexcept {
	detail::guarded("metadata property", [&] {
		auto* m = static_cast<Metadata*>(data);
		(void)type;
		if (subject != PW_ID_CORE) return;
		bool changed = false;
		if (!key) {
			changed = !m->defaults.empty();
			m->defaults.clear();   // the metadata was cleared
		} else {
			auto known = std::find_if(std::begin(kDefaultKeys), std::end(kDefaultKeys),
			                          [&](const char* k) { return std::strcmp(k, key) == 0; });
			if (known == std::end(kDefaultKeys)) return;
			std::optional<std::string> name;
			if (value && strnlen(value, kMaxDefaultValueBytes + 1) > kMaxDefaultValueBytes) {
				unsigned bit = 1u << (known - std::begin(kDefaultKeys));
				if (!(m->graph->oversizedLogged_ & bit)) {
					m->graph->oversizedLogged_ |= bit;
					log::info(detail::kLog, "the default metadata's {} is over {} bytes: ignored, as if unset", key,
					          kMaxDefaultValueBytes);
				}
			} else if (value) {
				name = defaultNodeName(value);
			}
			auto it = m->defaults.find(key);
			if (name) {
				changed = it == m->defaults.end() || it->second != *name;
				m->defaults.insert_or_assign(key, std::move(*name));
			} else if (it != m->defaults.end()) {
				changed = true;
				m->defaults.erase(it);
			}
		}
		if (m->complete && changed) m->graph->changes_.defaults = true;
	});
	return 0;
}

// ---------------------------------------------------------------------------------------------
// writes

int Graph::setNodeProps(uint32_t id, const std::optional<std::vector<float>>& volumes, std::optional<bool> mute) {
	auto it = nodes_.find(id);
	if (it == nodes_.end() || !it->second->proxy) return -ENOENT;
	uint8_t buffer[1024];
	spa_pod_builder b{};
	spa_pod_builder_init(&b, buffer, sizeof buffer);
	const spa_pod* pod = buildProps(b, volumes, mute);
	if (!pod) return -ENOSPC;
	return pw_node_set_param(reinterpret_cast<pw_node*>(it->second->proxy), SPA_PARAM_Props, 0, pod);
}

int Graph::setRoute(uint32_t id, int32_t index, int32_t cardDevice, const std::optional<std::vector<float>>& volumes,
                    std::optional<bool> mute) {
	auto it = devices_.find(id);
	if (it == devices_.end() || !it->second->proxy) return -ENOENT;
	uint8_t buffer[1024];
	spa_pod_builder b{};
	spa_pod_builder_init(&b, buffer, sizeof buffer);
	const spa_pod* pod = buildRoute(b, index, cardDevice, volumes, mute, true);
	if (!pod) return -ENOSPC;
	return pw_device_set_param(reinterpret_cast<pw_device*>(it->second->proxy), SPA_PARAM_Route, 0, pod);
}

int Graph::setProfile(uint32_t id, int32_t index) {
	auto it = devices_.find(id);
	if (it == devices_.end() || !it->second->proxy) return -ENOENT;
	uint8_t buffer[256];
	spa_pod_builder b{};
	spa_pod_builder_init(&b, buffer, sizeof buffer);
	const spa_pod* pod = buildProfile(b, index, true);
	if (!pod) return -ENOSPC;
	return pw_device_set_param(reinterpret_cast<pw_device*>(it->second->proxy), SPA_PARAM_Profile, 0, pod);
}

int Graph::setMetadata(uint32_t subject, const char* key, const char* type, const char* value) {
	if (!metadata_ || !metadata_->proxy) return -ENOENT;
	return pw_metadata_set_property(reinterpret_cast<pw_metadata*>(metadata_->proxy), subject, key, type, value);
}

int Graph::watchProperties(uint32_t node) {
	auto it = nodes_.find(node);
	if (it == nodes_.end() || !registry_ || lost_) return -ENOENT;
	Node& n = *it->second;
	if (n.watch) return 0;
	auto* proxy = detail::bindProxy(registry_, n.id, PW_TYPE_INTERFACE_Node, n.version);
	if (!proxy) return -errno;
	auto w = std::make_unique<PropertyWatch>();
	w->graph = this;
	w->id = n.id;
	w->key = n.key;
	w->serial = n.serial;
	w->proxy = proxy;
	static const pw_node_events events = {
	    .version = PW_VERSION_NODE_EVENTS,
	    .info = &Graph::onWatchInfo,
	};
	pw_proxy_add_object_listener(proxy, &w->objectListener, &events, w.get());
	n.watch = std::move(w);
	return 0;
}

void Graph::unwatchProperties(uint32_t node) {
	auto it = nodes_.find(node);
	if (it == nodes_.end() || !it->second->watch) return;
	// The node is still there (globalRemove retires a watch with its node), so the server knows
	// the binding and takes its destroy.
	it->second->watch.reset();
}

} // namespace qsd::pipewire
