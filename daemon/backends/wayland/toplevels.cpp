#include "toplevels.hpp"

#include "../../log.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <algorithm>

namespace qsd::wayland {

namespace {

using rpc::ErrorCode;
using rpc::RpcException;

constexpr const char* kToplevels = "/wayland/toplevels";

// Answers a request exactly once: with the result, or BackendUnavailable when the connection
// is lost first (the pending wl_display.sync is then dropped with this inside it).
class Answer {
public:
	explicit Answer(Responder responder): responder_(std::move(responder)) {}
	Answer(const Answer&) = delete;
	Answer& operator=(const Answer&) = delete;
	~Answer() {
		if (!done_)
			responder_.error(ErrorCode::BackendUnavailable, "The compositor went away before answering", {{"backend", "wayland"}});
	}
	void result(json value) {
		done_ = true;
		responder_.result(std::move(value));
	}

private:
	Responder responder_;
	bool done_ = false;
};

} // namespace

struct Toplevels::Window {
	Toplevels* owner;
	zwlr_foreign_toplevel_handle_v1* wlr = nullptr;
	ExtHandle* ext = nullptr;   // the paired handle, or the only one without wlr
	std::string title, appId;
	ToplevelFlags flags;
	std::vector<wl_output*> outputs;
	zwlr_foreign_toplevel_handle_v1* parent = nullptr;
	bool done = false;   // the first done was seen: the window is complete
	std::string key;     // given when published
};

struct Toplevels::ExtHandle {
	Toplevels* owner;
	ext_foreign_toplevel_handle_v1* proxy;
	std::string title, appId, identifier;
	bool done = false;
	Window* window = nullptr;
};

Toplevels::Toplevels(Tree& tree, Display& display, Outputs& outputs, KeyBook& keys)
    : tree_(tree), display_(display), outputs_(outputs), keys_(keys) {}

Toplevels::~Toplevels() {
	for (auto& w: windows_)
		if (w->wlr) zwlr_foreign_toplevel_handle_v1_destroy(w->wlr);
	windows_.clear();
	for (auto& e: exts_) ext_foreign_toplevel_handle_v1_destroy(e->proxy);
	exts_.clear();
	if (wlr_) zwlr_foreign_toplevel_manager_v1_destroy(wlr_);
	if (ext_) ext_foreign_toplevel_list_v1_destroy(ext_);
	if (seat_) {
		if (wl_seat_get_version(seat_) >= WL_SEAT_RELEASE_SINCE_VERSION) wl_seat_release(seat_);
		else wl_seat_destroy(seat_);
	}
}

// ---------------------------------------------------------------------------------------------
// wlr-foreign-toplevel-management

const zwlr_foreign_toplevel_handle_v1_listener Toplevels::kWlrHandleListener = {
    .title = [](void* data, zwlr_foreign_toplevel_handle_v1*, const char* title) noexcept {
	    guarded("toplevel.title", [&] { static_cast<Window*>(data)->title = title ? title : ""; });
    },
    .app_id = [](void* data, zwlr_foreign_toplevel_handle_v1*, const char* appId) noexcept {
	    guarded("toplevel.app_id", [&] { static_cast<Window*>(data)->appId = appId ? appId : ""; });
    },
    .output_enter = [](void* data, zwlr_foreign_toplevel_handle_v1*, wl_output* output) noexcept {
	    guarded("toplevel.output_enter", [&] {
		    auto* w = static_cast<Window*>(data);
		    if (std::find(w->outputs.begin(), w->outputs.end(), output) == w->outputs.end()) w->outputs.push_back(output);
	    });
    },
    .output_leave = [](void* data, zwlr_foreign_toplevel_handle_v1*, wl_output* output) noexcept {
	    guarded("toplevel.output_leave", [&] { std::erase(static_cast<Window*>(data)->outputs, output); });
    },
    .state = [](void* data, zwlr_foreign_toplevel_handle_v1*, wl_array* state) noexcept {
	    guarded("toplevel.state", [&] {
		    auto* w = static_cast<Window*>(data);
		    const auto* values = static_cast<const uint32_t*>(state->data);
		    w->flags = toplevelFlags(std::span<const uint32_t>(values, state->size / sizeof(uint32_t)));
	    });
    },
    .done = [](void* data, zwlr_foreign_toplevel_handle_v1*) noexcept {
	    guarded("toplevel.done", [&] {
		    auto* w = static_cast<Window*>(data);
		    bool first = !w->done;
		    w->done = true;
		    if (!w->owner->ready_) return;
		    if (first) w->owner->pairAndPublish();
		    else if (!w->key.empty()) w->owner->publish(*w);
	    });
    },
    .closed = [](void* data, zwlr_foreign_toplevel_handle_v1*) noexcept {
	    guarded("toplevel.closed", [&] {
		    auto* w = static_cast<Window*>(data);
		    w->owner->removeWindow(w);
	    });
    },
    .parent = [](void* data, zwlr_foreign_toplevel_handle_v1*, zwlr_foreign_toplevel_handle_v1* parent) noexcept {
	    guarded("toplevel.parent", [&] { static_cast<Window*>(data)->parent = parent; });
    },
};

const zwlr_foreign_toplevel_manager_v1_listener Toplevels::kWlrManagerListener = {
    .toplevel = [](void* data, zwlr_foreign_toplevel_manager_v1*, zwlr_foreign_toplevel_handle_v1* handle) noexcept {
	    guarded("toplevel manager.toplevel", [&] {
		    auto* self = static_cast<Toplevels*>(data);
		    auto w = std::make_unique<Window>(Window{self, handle});
		    zwlr_foreign_toplevel_handle_v1_add_listener(handle, &kWlrHandleListener, w.get());
		    self->windows_.push_back(std::move(w));
	    });
    },
    .finished = [](void* data, zwlr_foreign_toplevel_manager_v1*) noexcept {
	    guarded("toplevel manager.finished", [&] {
		    auto* self = static_cast<Toplevels*>(data);
		    log::info("wayland", "the compositor stopped the toplevel list (zwlr_foreign_toplevel_manager_v1.finished)");
		    zwlr_foreign_toplevel_manager_v1_destroy(self->wlr_);
		    self->wlr_ = nullptr;
	    });
    },
};

void Toplevels::bindWlr(wl_registry* registry, uint32_t global, uint32_t version) {
	if (wlr_) return;
	if (ready_ && !available()) tree_.set(kToplevels, json::object());   // offered late
	wlrVersion_ = bindVersion(version, 3);
	wlr_ = static_cast<zwlr_foreign_toplevel_manager_v1*>(
	    wl_registry_bind(registry, global, &zwlr_foreign_toplevel_manager_v1_interface, wlrVersion_));
	zwlr_foreign_toplevel_manager_v1_add_listener(wlr_, &kWlrManagerListener, this);
}

// ---------------------------------------------------------------------------------------------
// ext-foreign-toplevel-list

const ext_foreign_toplevel_handle_v1_listener Toplevels::kExtHandleListener = {
    .closed = [](void* data, ext_foreign_toplevel_handle_v1*) noexcept {
	    guarded("ext toplevel.closed", [&] {
		    auto* e = static_cast<ExtHandle*>(data);
		    e->owner->removeExt(e);
	    });
    },
    .done = [](void* data, ext_foreign_toplevel_handle_v1*) noexcept {
	    guarded("ext toplevel.done", [&] {
		    auto* e = static_cast<ExtHandle*>(data);
		    Toplevels* self = e->owner;
		    bool first = !e->done;
		    e->done = true;
		    if (self->wlr_) {
			    // Only the key comes from here; a wlr window may be waiting for it.
			    if (first && self->ready_) self->pairAndPublish();
			    return;
		    }
		    if (!e->window) {
			    auto w = std::make_unique<Window>(Window{self});
			    w->ext = e;
			    e->window = w.get();
			    self->windows_.push_back(std::move(w));
		    }
		    e->window->title = e->title;
		    e->window->appId = e->appId;
		    e->window->done = true;
		    if (!self->ready_) return;
		    if (first) self->pairAndPublish();
		    else self->publish(*e->window);
	    });
    },
    .title = [](void* data, ext_foreign_toplevel_handle_v1*, const char* title) noexcept {
	    guarded("ext toplevel.title", [&] { static_cast<ExtHandle*>(data)->title = title ? title : ""; });
    },
    .app_id = [](void* data, ext_foreign_toplevel_handle_v1*, const char* appId) noexcept {
	    guarded("ext toplevel.app_id", [&] { static_cast<ExtHandle*>(data)->appId = appId ? appId : ""; });
    },
    .identifier = [](void* data, ext_foreign_toplevel_handle_v1*, const char* identifier) noexcept {
	    guarded("ext toplevel.identifier", [&] { static_cast<ExtHandle*>(data)->identifier = identifier ? identifier : ""; });
    },
};

const ext_foreign_toplevel_list_v1_listener Toplevels::kExtListListener = {
    .toplevel = [](void* data, ext_foreign_toplevel_list_v1*, ext_foreign_toplevel_handle_v1* handle) noexcept {
	    guarded("ext toplevel list.toplevel", [&] {
		    auto* self = static_cast<Toplevels*>(data);
		    auto e = std::make_unique<ExtHandle>(ExtHandle{self, handle});
		    ext_foreign_toplevel_handle_v1_add_listener(handle, &kExtHandleListener, e.get());
		    self->exts_.push_back(std::move(e));
	    });
    },
    .finished = [](void* data, ext_foreign_toplevel_list_v1*) noexcept {
	    guarded("ext toplevel list.finished", [&] {
		    auto* self = static_cast<Toplevels*>(data);
		    log::info("wayland", "the compositor stopped the toplevel list (ext_foreign_toplevel_list_v1.finished)");
		    ext_foreign_toplevel_list_v1_destroy(self->ext_);
		    self->ext_ = nullptr;
	    });
    },
};

void Toplevels::bindExt(wl_registry* registry, uint32_t global, uint32_t version) {
	if (ext_) return;
	if (ready_ && !available()) tree_.set(kToplevels, json::object());   // offered late
	ext_ = static_cast<ext_foreign_toplevel_list_v1*>(
	    wl_registry_bind(registry, global, &ext_foreign_toplevel_list_v1_interface, bindVersion(version, 1)));
	ext_foreign_toplevel_list_v1_add_listener(ext_, &kExtListListener, this);
}

void Toplevels::bindSeat(wl_registry* registry, uint32_t global, uint32_t version) {
	if (seat_) return;   // activation needs a seat; the first one is the seat of a desktop session
	static const wl_seat_listener listener = {
	    .capabilities = [](void*, wl_seat*, uint32_t) noexcept {},
	    .name = [](void*, wl_seat*, const char*) noexcept {},
	};
	seat_ = static_cast<wl_seat*>(wl_registry_bind(registry, global, &wl_seat_interface, bindVersion(version, 5)));
	wl_seat_add_listener(seat_, &listener, nullptr);
	seatGlobal_ = global;
}

bool Toplevels::removeGlobal(uint32_t global) {
	if (!seat_ || global != seatGlobal_) return false;
	if (wl_seat_get_version(seat_) >= WL_SEAT_RELEASE_SINCE_VERSION) wl_seat_release(seat_);
	else wl_seat_destroy(seat_);
	seat_ = nullptr;
	seatGlobal_ = 0;
	return true;
}

// ---------------------------------------------------------------------------------------------
// publishing

void Toplevels::setReady() {
	ready_ = true;
	if (!available()) return;
	tree_.set(kToplevels, json::object());
	// Two roundtrips are behind us: every handle of both protocols is in.
	pairAndPublish(true);
}

void Toplevels::pairAndPublish(bool settled) {
	bool waiting = std::any_of(windows_.begin(), windows_.end(), [](const auto& w) { return w->done && w->key.empty(); });
	if (!waiting) return;
	if (wlr_ && ext_ && !settled) {
		// The ext handle of a new window may still be on its way: let the compositor answer a
		// sync first (compositors send both protocols' events for one window together).
		if (!pairing_) {
			pairing_ = true;
			display_.sync([this] {
				pairing_ = false;
				pairAndPublish(true);
			});
		}
		return;
	}
	for (auto& w: windows_) {
		if (!w->done || !w->key.empty()) continue;
		if (wlr_ && !w->ext) {
			for (auto& e: exts_) {
				if (!e->done || e->window || e->appId != w->appId || e->title != w->title) continue;
				e->window = w.get();
				w->ext = e.get();
				break;
			}
		}
		std::optional<std::string> identifier;
		if (w->ext && !w->ext->identifier.empty()) identifier = w->ext->identifier;
		w->key = toplevelKey(identifier, keys_.counter, [this](const std::string& k) { return keys_.used.count(k) > 0; });
		keys_.used.insert(w->key);
	}
	refresh();
}

void Toplevels::refresh() {
	if (!ready_) return;
	for (auto& w: windows_)
		if (!w->key.empty()) publish(*w);
}

void Toplevels::publish(Window& w) {
	ToplevelInfo info;
	info.title = w.wlr ? w.title : (w.ext ? w.ext->title : w.title);
	info.appId = w.wlr ? w.appId : (w.ext ? w.ext->appId : w.appId);
	if (w.wlr) {
		info.flags = w.flags;
		std::vector<std::string> names;
		for (auto* o: w.outputs) {
			auto n = outputs_.nameOf(o);
			if (!n.empty()) names.push_back(std::move(n));
		}
		std::sort(names.begin(), names.end());
		names.erase(std::unique(names.begin(), names.end()), names.end());
		info.outputs = std::move(names);
		if (w.parent) {
			for (const auto& p: windows_)
				if (p->wlr == w.parent && !p->key.empty()) info.parent = p->key;
		}
	}
	auto value = toplevelJson(info);
	auto it = published_.find(w.key);
	if (it != published_.end() && it->second == value) return;
	auto path = pointer::join(kToplevels, w.key);
	if (it == published_.end()) tree_.set(path, value);
	else tree_.update(path, value);
	published_[w.key] = std::move(value);
}

void Toplevels::removeWindow(Window* w) {
	if (!w->key.empty()) {
		tree_.remove(pointer::join(kToplevels, w->key));
		published_.erase(w->key);
	}
	if (w->ext) w->ext->window = nullptr;
	if (w->wlr) {
		// A child's parent handle is destroyed here, and the protocol sends no parent event
		// for that: forget it.
		for (auto& other: windows_)
			if (other->parent == w->wlr) other->parent = nullptr;
		zwlr_foreign_toplevel_handle_v1_destroy(w->wlr);
	}
	std::erase_if(windows_, [&](const auto& p) { return p.get() == w; });
	refresh();
}

void Toplevels::removeExt(ExtHandle* e) {
	Window* w = e->window;
	ext_foreign_toplevel_handle_v1_destroy(e->proxy);
	std::erase_if(exts_, [&](const auto& p) { return p.get() == e; });
	if (!w) return;
	w->ext = nullptr;
	// Without wlr the ext handle is the window; with it, the window keeps its key.
	if (!w->wlr) removeWindow(w);
}

void Toplevels::forgetOutput(wl_output* output) {
	for (auto& w: windows_) std::erase(w->outputs, output);
}

Toplevels::Window* Toplevels::windowByKey(const std::string& key) const {
	for (const auto& w: windows_)
		if (w->key == key) return w.get();
	return nullptr;
}

// ---------------------------------------------------------------------------------------------
// actions

void Toplevels::act(const std::string& key, Action action, const std::string& output, Responder responder) {
	if (!wlr_)
		throw RpcException(ErrorCode::BackendUnavailable,
		                   "The compositor does not offer toplevel control (zwlr_foreign_toplevel_manager_v1)",
		                   {{"backend", "wayland"}, {"missing", "zwlr_foreign_toplevel_manager_v1"}});
	Window* w = windowByKey(key);
	if (!w || !w->wlr) throw RpcException(ErrorCode::NotFound, "No toplevel with this key", {{"param", "toplevel"}, {"toplevel", key}});
	auto* h = w->wlr;
	switch (action) {
	case Action::Activate:
		if (!seat_)
			throw RpcException(ErrorCode::BackendUnavailable, "The compositor offers no seat to activate a toplevel on",
			                   {{"backend", "wayland"}, {"missing", "wl_seat"}});
		zwlr_foreign_toplevel_handle_v1_activate(h, seat_);
		break;
	case Action::Close: zwlr_foreign_toplevel_handle_v1_close(h); break;
	case Action::Maximize: zwlr_foreign_toplevel_handle_v1_set_maximized(h); break;
	case Action::Unmaximize: zwlr_foreign_toplevel_handle_v1_unset_maximized(h); break;
	case Action::Minimize: zwlr_foreign_toplevel_handle_v1_set_minimized(h); break;
	case Action::Unminimize: zwlr_foreign_toplevel_handle_v1_unset_minimized(h); break;
	case Action::Fullscreen:
	case Action::Unfullscreen: {
		if (wlrVersion_ < ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_SET_FULLSCREEN_SINCE_VERSION)
			throw RpcException(ErrorCode::BackendUnavailable,
			                   "The compositor's zwlr_foreign_toplevel_manager_v1 is version 1, without fullscreen",
			                   {{"backend", "wayland"}, {"missing", "zwlr_foreign_toplevel_manager_v1 version 2"}});
		if (action == Action::Unfullscreen) {
			zwlr_foreign_toplevel_handle_v1_unset_fullscreen(h);
			break;
		}
		wl_output* o = nullptr;
		if (!output.empty()) {
			o = outputs_.find(output);
			if (!o) throw RpcException(ErrorCode::NotFound, "No output with this name", {{"param", "output"}, {"output", output}});
		}
		zwlr_foreign_toplevel_handle_v1_set_fullscreen(h, o);
		break;
	}
	}
	// The requests have no reply; a sync returns once the compositor has processed them.
	auto answer = std::make_shared<Answer>(std::move(responder));
	display_.sync([answer, key] { answer->result({{"toplevel", key}}); });
}

} // namespace qsd::wayland
