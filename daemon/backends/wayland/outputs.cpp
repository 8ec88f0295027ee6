#include "outputs.hpp"

#include "../../log.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <algorithm>

namespace qsd::wayland {

namespace {

constexpr const char* kOutputs = "/wayland/outputs";

} // namespace

struct Outputs::Output {
	Outputs* owner;
	uint32_t global;
	uint32_t version;
	wl_output* proxy = nullptr;
	zxdg_output_v1* xdg = nullptr;
	WlOutputInfo info;
	XdgOutputInfo xdgInfo;
	std::optional<Mode> pendingMode;   // wl_output.mode events before done
	bool sawMode = false;
	bool done = false;      // a wl_output.done (or, for v1, any event) was seen
	bool settled = false;   // the sync after binding returned: xdg-output has answered too
	uint64_t serial = 0;    // tells the sync of a removed output from one of a new output
};

struct Outputs::ModeObject {
	Head* head;
	zwlr_output_mode_v1* proxy;
	Mode mode;
};

struct Outputs::Head {
	Outputs* owner;
	zwlr_output_head_v1* proxy;
	HeadInfo info;   // modes and mode are filled from the objects below when read
	std::vector<std::unique_ptr<ModeObject>> modes;
	ModeObject* current = nullptr;
	// Past a sync after its first done: its wl_output, if it has one, has been announced.
	bool settled = false;
};

struct Outputs::Configuration {
	Outputs* owner;
	uint64_t id;
	OutputConfig request;
	Responder responder;
	int attempts = 0;
	zwlr_output_configuration_v1* proxy = nullptr;
	std::vector<zwlr_output_configuration_head_v1*> heads;

	void release() {
		for (auto* h: heads) zwlr_output_configuration_head_v1_destroy(h);
		heads.clear();
		if (proxy) zwlr_output_configuration_v1_destroy(proxy);
		proxy = nullptr;
	}
};

Outputs::Outputs(Tree& tree, Display& display, std::function<void()> onNamesChanged,
                 std::function<void(wl_output*)> onRemoved)
    : tree_(tree), display_(display), onNamesChanged_(std::move(onNamesChanged)), onRemoved_(std::move(onRemoved)) {}

Outputs::~Outputs() {
	for (auto& [_, c]: configurations_) {
		c->release();
		c->responder.error(rpc::ErrorCode::BackendUnavailable, "The compositor went away before answering",
		                   {{"backend", "wayland"}, {"service", "the compositor"}});
	}
	configurations_.clear();
	for (auto& o: outputs_) destroyOutput(*o);
	outputs_.clear();
	for (auto& h: heads_) destroyHead(*h);
	heads_.clear();
	if (manager_) zwlr_output_manager_v1_destroy(manager_);
	if (xdgManager_) zxdg_output_manager_v1_destroy(xdgManager_);
}

void Outputs::destroyOutput(Output& o) {
	if (o.xdg) zxdg_output_v1_destroy(o.xdg);
	o.xdg = nullptr;
	if (o.proxy) {
		if (o.version >= WL_OUTPUT_RELEASE_SINCE_VERSION) wl_output_release(o.proxy);
		else wl_output_destroy(o.proxy);
	}
	o.proxy = nullptr;
}

void Outputs::destroyHead(Head& h) {
	// Version 2 has no release request: these are client-side destroys.
	for (auto& m: h.modes) zwlr_output_mode_v1_destroy(m->proxy);
	h.modes.clear();
	if (h.proxy) zwlr_output_head_v1_destroy(h.proxy);
	h.proxy = nullptr;
}

// ---------------------------------------------------------------------------------------------
// wl_output and xdg_output

const wl_output_listener Outputs::kOutputListener = {
    .geometry = [](void* data, wl_output*, int32_t, int32_t, int32_t width, int32_t height, int32_t, const char* make,
                   const char* model, int32_t transform) noexcept {
	    guarded("wl_output.geometry", [&] {
		    auto* o = static_cast<Output*>(data);
		    o->info.physicalWidth = width;
		    o->info.physicalHeight = height;
		    o->info.make = make ? make : "";
		    o->info.model = model ? model : "";
		    o->info.transform = transform;
	    });
    },
    .mode = [](void* data, wl_output*, uint32_t flags, int32_t width, int32_t height, int32_t refresh) noexcept {
	    guarded("wl_output.mode", [&] {
		    auto* o = static_cast<Output*>(data);
		    // Only the current mode matters; wl_output lists others only in version 1-3 and
		    // wlr-output-management lists them all anyway.
		    if (flags & WL_OUTPUT_MODE_CURRENT) o->pendingMode = Mode{width, height, refresh, false};
		    o->sawMode = true;
	    });
    },
    .done = [](void* data, wl_output*) noexcept {
	    guarded("wl_output.done", [&] {
		    auto* o = static_cast<Output*>(data);
		    if (o->pendingMode) o->info.mode = o->pendingMode;
		    o->done = true;
		    o->owner->refresh();
	    });
    },
    .scale = [](void* data, wl_output*, int32_t factor) noexcept {
	    guarded("wl_output.scale", [&] { static_cast<Output*>(data)->info.scale = factor; });
    },
    .name = [](void* data, wl_output*, const char* name) noexcept {
	    guarded("wl_output.name", [&] { static_cast<Output*>(data)->info.name = name ? name : ""; });
    },
    .description = [](void* data, wl_output*, const char* description) noexcept {
	    guarded("wl_output.description", [&] { static_cast<Output*>(data)->info.description = description ? description : ""; });
    },
};

const zxdg_output_v1_listener Outputs::kXdgListener = {
    .logical_position = [](void* data, zxdg_output_v1*, int32_t x, int32_t y) noexcept {
	    guarded("xdg_output.logical_position", [&] { static_cast<Output*>(data)->xdgInfo.position = std::make_pair(x, y); });
    },
    .logical_size = [](void* data, zxdg_output_v1*, int32_t w, int32_t h) noexcept {
	    guarded("xdg_output.logical_size", [&] { static_cast<Output*>(data)->xdgInfo.size = std::make_pair(w, h); });
    },
    .done = [](void* data, zxdg_output_v1*) noexcept {
	    // Version 3 replaced this event by wl_output.done; older versions end a change here.
	    guarded("xdg_output.done", [&] { static_cast<Output*>(data)->owner->refresh(); });
    },
    .name = [](void* data, zxdg_output_v1*, const char* name) noexcept {
	    guarded("xdg_output.name", [&] { static_cast<Output*>(data)->xdgInfo.name = name ? name : ""; });
    },
    .description = [](void* data, zxdg_output_v1*, const char* description) noexcept {
	    guarded("xdg_output.description",
	            [&] { static_cast<Output*>(data)->xdgInfo.description = description ? description : ""; });
    },
};

void Outputs::addOutput(wl_registry* registry, uint32_t global, uint32_t version) {
	auto o = std::make_unique<Output>(Output{this, global, bindVersion(version, 4)});
	o->proxy = static_cast<wl_output*>(wl_registry_bind(registry, global, &wl_output_interface, o->version));
	wl_output_add_listener(o->proxy, &kOutputListener, o.get());
	if (xdgManager_) {
		o->xdg = zxdg_output_manager_v1_get_xdg_output(xdgManager_, o->proxy);
		zxdg_output_v1_add_listener(o->xdg, &kXdgListener, o.get());
	}
	// Version 1 has no done event: what the bind brings is all there is.
	if (o->version < WL_OUTPUT_DONE_SINCE_VERSION) o->done = true;
	o->serial = ++outputSerial_;
	uint64_t serial = o->serial;
	outputs_.push_back(std::move(o));
	// The output may go before the sync returns (a monitor that flickers on hotplug, a dock
	// replugged: global and global_remove in one burst). The sync outlives it, so it finds the
	// output by serial: it held the bare pointer, wrote into freed memory, and a new output
	// allocated there was marked settled before its own sync returned, published half-read.
	if (ready_) {
		display_.sync([this, serial] {
			for (auto& out: outputs_)
				if (out->serial == serial) out->settled = true;
			refresh();
		});
	}
}

bool Outputs::removeGlobal(uint32_t global) {
	auto it = std::find_if(outputs_.begin(), outputs_.end(), [&](const auto& o) { return o->global == global; });
	if (it == outputs_.end()) return false;
	onRemoved_((*it)->proxy);
	destroyOutput(**it);
	outputs_.erase(it);
	refresh();
	return true;
}

void Outputs::bindXdgManager(wl_registry* registry, uint32_t global, uint32_t version) {
	if (xdgManager_) return;
	xdgVersion_ = bindVersion(version, 3);
	xdgManager_ = static_cast<zxdg_output_manager_v1*>(
	    wl_registry_bind(registry, global, &zxdg_output_manager_v1_interface, xdgVersion_));
	// Outputs bound before the manager was announced get their xdg_output now.
	for (auto& o: outputs_) {
		if (o->xdg) continue;
		o->xdg = zxdg_output_manager_v1_get_xdg_output(xdgManager_, o->proxy);
		zxdg_output_v1_add_listener(o->xdg, &kXdgListener, o.get());
	}
}

// ---------------------------------------------------------------------------------------------
// wlr-output-management

const zwlr_output_mode_v1_listener Outputs::kModeListener = {
    .size = [](void* data, zwlr_output_mode_v1*, int32_t w, int32_t h) noexcept {
	    guarded("zwlr_output_mode_v1.size", [&] {
		    auto* m = static_cast<ModeObject*>(data);
		    m->mode.width = w;
		    m->mode.height = h;
	    });
    },
    .refresh = [](void* data, zwlr_output_mode_v1*, int32_t refresh) noexcept {
	    guarded("zwlr_output_mode_v1.refresh", [&] { static_cast<ModeObject*>(data)->mode.refresh = refresh; });
    },
    .preferred = [](void* data, zwlr_output_mode_v1*) noexcept {
	    guarded("zwlr_output_mode_v1.preferred", [&] { static_cast<ModeObject*>(data)->mode.preferred = true; });
    },
    .finished = [](void* data, zwlr_output_mode_v1*) noexcept {
	    guarded("zwlr_output_mode_v1.finished", [&] {
		    auto* m = static_cast<ModeObject*>(data);
		    Head* h = m->head;
		    if (h->current == m) h->current = nullptr;
		    zwlr_output_mode_v1_destroy(m->proxy);
		    std::erase_if(h->modes, [&](const auto& p) { return p.get() == m; });
	    });
    },
};

const zwlr_output_head_v1_listener Outputs::kHeadListener = {
    .name = [](void* data, zwlr_output_head_v1*, const char* name) noexcept {
	    guarded("zwlr_output_head_v1.name", [&] { static_cast<Head*>(data)->info.name = name ? name : ""; });
    },
    .description = [](void* data, zwlr_output_head_v1*, const char* description) noexcept {
	    guarded("zwlr_output_head_v1.description",
	            [&] { static_cast<Head*>(data)->info.description = description ? description : ""; });
    },
    .physical_size = [](void* data, zwlr_output_head_v1*, int32_t w, int32_t h) noexcept {
	    guarded("zwlr_output_head_v1.physical_size",
	            [&] { static_cast<Head*>(data)->info.physicalSize = std::make_pair(w, h); });
    },
    .mode = [](void* data, zwlr_output_head_v1*, zwlr_output_mode_v1* mode) noexcept {
	    guarded("zwlr_output_head_v1.mode", [&] {
		    auto* h = static_cast<Head*>(data);
		    auto m = std::make_unique<ModeObject>(ModeObject{h, mode, {}});
		    zwlr_output_mode_v1_add_listener(mode, &kModeListener, m.get());
		    h->modes.push_back(std::move(m));
	    });
    },
    .enabled = [](void* data, zwlr_output_head_v1*, int32_t enabled) noexcept {
	    guarded("zwlr_output_head_v1.enabled", [&] { static_cast<Head*>(data)->info.enabled = enabled != 0; });
    },
    .current_mode = [](void* data, zwlr_output_head_v1*, zwlr_output_mode_v1* mode) noexcept {
	    guarded("zwlr_output_head_v1.current_mode", [&] {
		    auto* h = static_cast<Head*>(data);
		    h->current = nullptr;
		    for (auto& m: h->modes)
			    if (m->proxy == mode) h->current = m.get();
	    });
    },
    .position = [](void* data, zwlr_output_head_v1*, int32_t x, int32_t y) noexcept {
	    guarded("zwlr_output_head_v1.position", [&] { static_cast<Head*>(data)->info.position = std::make_pair(x, y); });
    },
    .transform = [](void* data, zwlr_output_head_v1*, int32_t transform) noexcept {
	    guarded("zwlr_output_head_v1.transform", [&] { static_cast<Head*>(data)->info.transform = transform; });
    },
    .scale = [](void* data, zwlr_output_head_v1*, wl_fixed_t scale) noexcept {
	    guarded("zwlr_output_head_v1.scale", [&] { static_cast<Head*>(data)->info.scale = wl_fixed_to_double(scale); });
    },
    .finished = [](void* data, zwlr_output_head_v1*) noexcept {
	    guarded("zwlr_output_head_v1.finished", [&] {
		    auto* h = static_cast<Head*>(data);
		    Outputs* self = h->owner;
		    self->destroyHead(*h);
		    // Written at the manager's done, which follows.
		    std::erase_if(self->heads_, [&](const auto& p) { return p.get() == h; });
	    });
    },
    .make = [](void* data, zwlr_output_head_v1*, const char* make) noexcept {
	    guarded("zwlr_output_head_v1.make", [&] { static_cast<Head*>(data)->info.make = make ? make : ""; });
    },
    .model = [](void* data, zwlr_output_head_v1*, const char* model) noexcept {
	    guarded("zwlr_output_head_v1.model", [&] { static_cast<Head*>(data)->info.model = model ? model : ""; });
    },
    .serial_number = [](void* data, zwlr_output_head_v1*, const char* serial) noexcept {
	    guarded("zwlr_output_head_v1.serial_number", [&] { static_cast<Head*>(data)->info.serial = serial ? serial : ""; });
    },
};

const zwlr_output_manager_v1_listener Outputs::kManagerListener = {
    .head = [](void* data, zwlr_output_manager_v1*, zwlr_output_head_v1* head) noexcept {
	    guarded("zwlr_output_manager_v1.head", [&] {
		    auto* self = static_cast<Outputs*>(data);
		    auto h = std::make_unique<Head>(Head{self, head, {}, {}, nullptr});
		    zwlr_output_head_v1_add_listener(head, &kHeadListener, h.get());
		    self->heads_.push_back(std::move(h));
	    });
    },
    .done = [](void* data, zwlr_output_manager_v1*, uint32_t serial) noexcept {
	    guarded("zwlr_output_manager_v1.done", [&] {
		    auto* self = static_cast<Outputs*>(data);
		    self->serial_ = serial;
		    self->managerDone_ = true;
		    bool fresh = std::any_of(self->heads_.begin(), self->heads_.end(), [](const auto& h) { return !h->settled; });
		    if (fresh && self->ready_ && !self->settlingHeads_) {
			    // A new head may be followed by its wl_output global (sway sends the head
			    // first): only then can it tell an output that is off from one being added.
			    self->settlingHeads_ = true;
			    self->display_.sync([self] {
				    self->settlingHeads_ = false;
				    for (auto& h: self->heads_) h->settled = true;
				    self->refresh();
			    });
		    }
		    self->refresh();
	    });
    },
    .finished = [](void* data, zwlr_output_manager_v1*) noexcept {
	    guarded("zwlr_output_manager_v1.finished", [&] {
		    auto* self = static_cast<Outputs*>(data);
		    log::info("wayland", "the compositor stopped output management; outputs lose their modes");
		    for (auto& h: self->heads_) self->destroyHead(*h);
		    self->heads_.clear();
		    zwlr_output_manager_v1_destroy(self->manager_);
		    self->manager_ = nullptr;
		    self->refresh();
	    });
    },
};

void Outputs::bindOutputManager(wl_registry* registry, uint32_t global, uint32_t version) {
	if (manager_) return;
	manager_ = static_cast<zwlr_output_manager_v1*>(
	    wl_registry_bind(registry, global, &zwlr_output_manager_v1_interface, bindVersion(version, 2)));
	zwlr_output_manager_v1_add_listener(manager_, &kManagerListener, this);
}

HeadInfo Outputs::headInfo(const Head& h) const {
	HeadInfo info = h.info;
	info.modes.clear();
	for (const auto& m: h.modes) info.modes.push_back(m->mode);
	info.mode = h.current ? std::optional<Mode>(h.current->mode) : std::nullopt;
	return info;
}

bool Outputs::enabled(const Head& h) const {
	if (h.info.enabled) return true;
	// A head with a wl_output is on, whatever it says (see outputJson).
	for (const auto& o: outputs_)
		if (o->done && outputName(&o->info, o->xdg ? &o->xdgInfo : nullptr, nullptr) == h.info.name) return true;
	return false;
}

Outputs::Head* Outputs::headNamed(const std::string& name) const {
	for (const auto& h: heads_)
		if (h->info.name == name) return h.get();
	return nullptr;
}

// ---------------------------------------------------------------------------------------------
// publishing

void Outputs::setReady() {
	ready_ = true;
	for (auto& o: outputs_) o->settled = true;
	for (auto& h: heads_) h->settled = true;
	refresh();
}

void Outputs::refresh() {
	if (!ready_) return;
	std::map<std::string, json> now;
	std::map<wl_output*, std::string> names;
	std::vector<const Head*> used;
	for (const auto& o: outputs_) {
		if (!o->settled || !o->done) continue;
		const XdgOutputInfo* xdg = o->xdg ? &o->xdgInfo : nullptr;
		// Match the head by the output's own name (heads are named like xdg-output names).
		std::string own = outputName(&o->info, xdg, nullptr);
		const Head* head = own.empty() ? nullptr : headNamed(own);
		std::optional<HeadInfo> hi;
		if (head) {
			hi = headInfo(*head);
			used.push_back(head);
		}
		auto name = outputName(&o->info, xdg, hi ? &*hi : nullptr);
		if (name.empty()) continue;   // a version 1-3 wl_output without xdg-output has no name
		// Without the head yet (it follows with the manager's next done), the output shows
		// without modes for a moment; with output management offered, wait for the head.
		if (manager_ && !head) continue;
		now[name] = outputJson(&o->info, xdg, hi ? &*hi : nullptr);
		names[o->proxy] = name;
	}
	// Heads without a wl_output: disabled outputs. An enabled one waits for its wl_output,
	// and a new one for the outputs being bound (one of them may be its own).
	bool binding = std::any_of(outputs_.begin(), outputs_.end(), [](const auto& o) { return !o->settled; });
	for (const auto& h: heads_) {
		if (std::find(used.begin(), used.end(), h.get()) != used.end()) continue;
		if (!h->settled || enabled(*h) || h->info.name.empty() || now.count(h->info.name)) continue;
		if (binding && !published_.count(h->info.name)) continue;
		auto hi = headInfo(*h);
		now[h->info.name] = outputJson(nullptr, nullptr, &hi);
	}

	for (auto it = published_.begin(); it != published_.end();) {
		if (now.count(it->first)) {
			++it;
			continue;
		}
		tree_.remove(pointer::join(kOutputs, it->first));
		it = published_.erase(it);
	}
	for (auto& [name, value]: now) {
		auto it = published_.find(name);
		if (it != published_.end() && it->second == value) continue;
		writeOutput(name, value);
		published_[name] = std::move(value);
	}
	if (tree_.find(kOutputs) == nullptr) tree_.set(kOutputs, json::object());
	if (names != names_) {
		names_ = std::move(names);
		onNamesChanged_();
	}
}

void Outputs::writeOutput(const std::string& name, const json& value) {
	auto path = pointer::join(kOutputs, name);
	const json* existing = tree_.find(path);
	if (!existing || !existing->is_object()) {
		tree_.set(path, value);
		return;
	}
	std::vector<std::string> gone;
	for (const auto& [key, _]: existing->items())
		if (!value.contains(key)) gone.push_back(key);
	for (const auto& key: gone) tree_.remove(pointer::join(path, key));
	tree_.update(path, value);
}

std::string Outputs::nameOf(wl_output* output) const {
	auto it = names_.find(output);
	return it == names_.end() ? std::string() : it->second;
}

wl_output* Outputs::find(const std::string& name) const {
	for (const auto& [proxy, n]: names_)
		if (n == name) return proxy;
	return nullptr;
}

// ---------------------------------------------------------------------------------------------
// wayland.configureOutput

const zwlr_output_configuration_v1_listener Outputs::kConfigurationListener = {
    .succeeded = [](void* data, zwlr_output_configuration_v1*) noexcept {
	    guarded("zwlr_output_configuration_v1.succeeded", [&] {
		    auto* c = static_cast<Configuration*>(data);
		    c->owner->finish(*c, 0);
	    });
    },
    .failed = [](void* data, zwlr_output_configuration_v1*) noexcept {
	    guarded("zwlr_output_configuration_v1.failed", [&] {
		    auto* c = static_cast<Configuration*>(data);
		    c->owner->finish(*c, 1);
	    });
    },
    .cancelled = [](void* data, zwlr_output_configuration_v1*) noexcept {
	    guarded("zwlr_output_configuration_v1.cancelled", [&] {
		    auto* c = static_cast<Configuration*>(data);
		    c->owner->finish(*c, 2);
	    });
    },
};

namespace {
constexpr const char* kNoOutputManager = "The compositor does not offer output configuration (zwlr_output_manager_v1)";
} // namespace

void Outputs::configure(OutputConfig config, Responder responder) {
	using rpc::ErrorCode;
	using rpc::RpcException;
	if (!manager_)
		throw RpcException(ErrorCode::BackendUnavailable, kNoOutputManager,
		                   {{"backend", "wayland"}, {"path", "/wayland/outputs"}, {"reason", kNoOutputManager},
		                    {"missing", "zwlr_output_manager_v1"}});
	Head* head = headNamed(config.output);
	if (!head || !managerDone_)
		throw RpcException(ErrorCode::NotFound, "No output with this name", {{"param", "output"}, {"output", config.output}});
	bool enable = config.enabled.value_or(enabled(*head));
	if (!enable && config.changesProperties()) {
		std::string why = config.enabled ? "an output being disabled takes no other settings"
		                                 : "the output is disabled; pass enabled: true to configure it";
		throw RpcException(ErrorCode::InvalidParams, "Invalid params: " + why, {{"param", "enabled"}, {"expected", "true"}});
	}
	auto id = nextConfiguration_++;
	auto c = std::make_unique<Configuration>(Configuration{this, id, std::move(config), std::move(responder)});
	auto* raw = c.get();
	configurations_.emplace(id, std::move(c));
	apply(*raw);
}

void Outputs::apply(Configuration& c) {
	c.release();
	++c.attempts;
	c.proxy = zwlr_output_manager_v1_create_configuration(manager_, serial_);
	zwlr_output_configuration_v1_add_listener(c.proxy, &kConfigurationListener, &c);
	// Every head must be named once: the target as asked, the others as they are.
	for (const auto& h: heads_) {
		bool target = h->info.name == c.request.output;
		bool on = enabled(*h);
		bool enable = target ? c.request.enabled.value_or(on) : on;
		if (!enable) {
			zwlr_output_configuration_v1_disable_head(c.proxy, h->proxy);
			continue;
		}
		auto* ch = zwlr_output_configuration_v1_enable_head(c.proxy, h->proxy);
		c.heads.push_back(ch);
		if (!target) continue;
		const auto& r = c.request;
		if (r.mode) {
			std::vector<Mode> modes;
			for (const auto& m: h->modes) modes.push_back(m->mode);
			if (auto i = pickMode(modes, *r.mode)) {
				zwlr_output_configuration_head_v1_set_mode(ch, h->modes[*i]->proxy);
			} else {
				// Not an advertised mode (headless and virtual outputs advertise none).
				zwlr_output_configuration_head_v1_set_custom_mode(ch, r.mode->width, r.mode->height,
				                                                  r.mode->refresh ? refreshMilliHz(*r.mode->refresh) : 0);
			}
		}
		if (r.position) zwlr_output_configuration_head_v1_set_position(ch, r.position->first, r.position->second);
		if (r.transform) zwlr_output_configuration_head_v1_set_transform(ch, *r.transform);
		if (r.scale) zwlr_output_configuration_head_v1_set_scale(ch, wl_fixed_from_double(*r.scale));
	}
	zwlr_output_configuration_v1_apply(c.proxy);
}

void Outputs::finish(Configuration& c, int outcome) {
	auto it = configurations_.find(c.id);
	if (it == configurations_.end()) return;
	if (outcome == 2 && c.attempts < 3 && manager_ && headNamed(c.request.output)) {
		log::debug("wayland", "output configuration for {} cancelled (outputs changed); trying again", c.request.output);
		apply(c);
		return;
	}
	auto owned = std::move(it->second);
	configurations_.erase(it);
	owned->release();
	const auto& name = owned->request.output;
	if (outcome == 0) {
		owned->responder.result({{"output", name}});
	} else if (outcome == 1) {
		log::info("wayland", "the compositor refused the configuration of output {}", name);
		std::string message = "The compositor refused the output configuration";
		owned->responder.error(rpc::ErrorCode::BackendFailed, message,
		                       {{"backend", "wayland"}, {"name", "wayland.Failed"}, {"message", message}, {"output", name},
		                        {"reason", "failed"}});
	} else {
		std::string message = "The compositor cancelled the output configuration: outputs kept changing";
		owned->responder.error(rpc::ErrorCode::BackendFailed, message,
		                       {{"backend", "wayland"}, {"name", "wayland.Cancelled"}, {"message", message}, {"output", name},
		                        {"reason", "cancelled"}});
	}
}

} // namespace qsd::wayland
