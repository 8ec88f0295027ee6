#include "toplevels.hpp"

#include "../../log.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <optional>

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
			responder_.error(ErrorCode::BackendUnavailable, "The compositor went away before answering",
			                 {{"backend", "wayland"}, {"service", "the compositor"}});
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
	uint64_t seq;
	zwlr_foreign_toplevel_handle_v1* wlr = nullptr;
	ExtHandle* ext = nullptr;   // the paired handle, or the only one without wlr
	std::string title, appId;
	ToplevelFlags flags;
	std::vector<wl_output*> outputs;
	// The window the wlr `parent` event named, and the windows that name this one: a window
	// that gets a key or goes rewrites its children's `parent`, and nothing else.
	Window* parent = nullptr;
	std::vector<Window*> children;
	bool done = false;      // the first done was seen: the window is complete
	bool waiting = false;   // in waiting_
	std::string key;        // given when published
	// What /wayland/toplevels/<key> holds, to write only what changed.
	std::optional<json> published;
};

struct Toplevels::ExtHandle {
	Toplevels* owner;
	uint64_t seq;
	ext_foreign_toplevel_handle_v1* proxy;
	std::string title, appId, identifier;
	bool done = false;
	Window* window = nullptr;
	// Its entry in unpaired_, when listed there.
	std::optional<decltype(Toplevels::unpaired_)::iterator> slot;
};

Toplevels::Toplevels(Tree& tree, Display& display, Outputs& outputs, KeyBook& keys)
    : tree_(tree), display_(display), outputs_(outputs), keys_(keys) {}

Toplevels::~Toplevels() {
	for (auto& [_, w]: windows_)
		if (w->wlr) zwlr_foreign_toplevel_handle_v1_destroy(w->wlr);
	for (auto& [_, e]: exts_) ext_foreign_toplevel_handle_v1_destroy(e->proxy);
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
		    if (first) w->owner->complete(*w);
		    else if (w->owner->ready_ && !w->key.empty()) w->owner->publish(*w);
	    });
    },
    .closed = [](void* data, zwlr_foreign_toplevel_handle_v1*) noexcept {
	    guarded("toplevel.closed", [&] {
		    auto* w = static_cast<Window*>(data);
		    w->owner->removeWindow(w);
	    });
    },
    .parent = [](void* data, zwlr_foreign_toplevel_handle_v1*, zwlr_foreign_toplevel_handle_v1* parent) noexcept {
	    guarded("toplevel.parent", [&] {
		    auto* w = static_cast<Window*>(data);
		    // Every live handle carries its Window (a destroyed one arrives as null).
		    auto* p = parent ? static_cast<Window*>(zwlr_foreign_toplevel_handle_v1_get_user_data(parent)) : nullptr;
		    w->owner->setParent(*w, p);
	    });
    },
};

const zwlr_foreign_toplevel_manager_v1_listener Toplevels::kWlrManagerListener = {
    .toplevel = [](void* data, zwlr_foreign_toplevel_manager_v1*, zwlr_foreign_toplevel_handle_v1* handle) noexcept {
	    guarded("toplevel manager.toplevel", [&] {
		    auto* self = static_cast<Toplevels*>(data);
		    auto seq = self->nextSeq_++;
		    auto* w = self->windows_.emplace(seq, std::make_unique<Window>(Window{self, seq, handle})).first->second.get();
		    zwlr_foreign_toplevel_handle_v1_add_listener(handle, &kWlrHandleListener, w);
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
			    self->indexExt(*e);
			    if (first && self->ready_) self->pairAndPublish();
			    return;
		    }
		    if (!e->window) {
			    auto seq = self->nextSeq_++;
			    auto* w = self->windows_.emplace(seq, std::make_unique<Window>(Window{self, seq})).first->second.get();
			    w->ext = e;
			    e->window = w;
			    self->indexExt(*e);
		    }
		    Window& w = *e->window;
		    w.title = e->title;
		    w.appId = e->appId;
		    if (!w.done) {
			    w.done = true;
			    self->complete(w);
		    } else if (self->ready_ && !w.key.empty()) {
			    self->publish(w);
		    }
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
		    auto seq = self->nextSeq_++;
		    auto* e = self->exts_.emplace(seq, std::make_unique<ExtHandle>(ExtHandle{self, seq, handle})).first->second.get();
		    ext_foreign_toplevel_handle_v1_add_listener(handle, &kExtHandleListener, e);
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

void Toplevels::complete(Window& w) {
	if (!w.waiting) {
		w.waiting = true;
		waiting_.push_back(&w);
	}
	if (ready_) pairAndPublish();
}

void Toplevels::pairAndPublish(bool settled) {
	if (waiting_.empty()) return;
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
	// Counter keys follow the order the windows were announced in.
	auto batch = std::move(waiting_);
	waiting_.clear();
	std::sort(batch.begin(), batch.end(), [](const Window* a, const Window* b) { return a->seq < b->seq; });
	for (Window* w: batch) {
		w->waiting = false;
		if (wlr_ && !w->ext) {
			// The oldest done, unpaired ext handle with the same app id and title.
			auto it = unpaired_.lower_bound({w->appId, w->title, 0});
			if (it != unpaired_.end() && std::get<0>(it->first) == w->appId && std::get<1>(it->first) == w->title) {
				ExtHandle* e = it->second;
				e->window = w;
				w->ext = e;
				indexExt(*e);
			}
		}
		std::optional<std::string> identifier;
		if (w->ext && !w->ext->identifier.empty()) identifier = w->ext->identifier;
		w->key = toplevelKey(keys_.identifiers ? identifier : std::nullopt, keys_.counter,
		                     [this](const std::string& k) { return byKey_.count(k) > 0; });
		byKey_[w->key] = w;
	}
	if (!ready_) return;
	for (Window* w: batch) {
		publish(*w);
		// Children published before this window had a key said `parent: null`.
		for (Window* c: w->children)
			if (!c->key.empty()) publish(*c);
	}
}

void Toplevels::refresh() {
	if (!ready_) return;
	for (auto& [_, w]: windows_)
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
		if (w.parent && !w.parent->key.empty()) info.parent = w.parent->key;
	}
	auto value = toplevelJson(info);
	if (w.published && *w.published == value) return;
	auto path = pointer::join(kToplevels, w.key);
	if (!w.published) tree_.set(path, value);
	else tree_.update(path, value);
	w.published = std::move(value);
}

void Toplevels::setParent(Window& w, Window* parent) {
	if (w.parent == parent) return;
	if (w.parent) std::erase(w.parent->children, &w);
	w.parent = parent;
	if (parent) parent->children.push_back(&w);
	// Published at the next done, as every other change of the window.
}

void Toplevels::indexExt(ExtHandle& e) {
	bool listed = e.done && !e.window;
	if (e.slot) {
		// Listed under the title and app id it had then: moved when they changed.
		const auto& [appId, title, _] = (*e.slot)->first;
		if (listed && appId == e.appId && title == e.title) return;
		unpaired_.erase(*e.slot);
		e.slot.reset();
	}
	if (listed) e.slot = unpaired_.emplace(std::make_tuple(e.appId, e.title, e.seq), &e).first;
}

void Toplevels::removeWindow(Window* w) {
	if (!w->key.empty()) {
		if (w->published) tree_.remove(pointer::join(kToplevels, w->key));
		byKey_.erase(w->key);
	}
	if (w->waiting) std::erase(waiting_, w);
	if (w->ext) {
		w->ext->window = nullptr;
		indexExt(*w->ext);
	}
	setParent(*w, nullptr);
	// A child's parent handle is destroyed here, and the protocol sends no parent event for
	// that: forget it, and rewrite those children (only them).
	auto orphans = std::move(w->children);
	for (Window* c: orphans) c->parent = nullptr;
	if (w->wlr) zwlr_foreign_toplevel_handle_v1_destroy(w->wlr);
	windows_.erase(w->seq);
	if (!ready_) return;
	for (Window* c: orphans)
		if (!c->key.empty()) publish(*c);
}

void Toplevels::removeExt(ExtHandle* e) {
	Window* w = e->window;
	if (e->slot) unpaired_.erase(*e->slot);
	ext_foreign_toplevel_handle_v1_destroy(e->proxy);
	exts_.erase(e->seq);
	if (!w) return;
	w->ext = nullptr;
	// Without wlr the ext handle is the window; with it, the window keeps its key.
	if (!w->wlr) removeWindow(w);
}

void Toplevels::forgetOutput(wl_output* output) {
	for (auto& [_, w]: windows_) std::erase(w->outputs, output);
}

Toplevels::Window* Toplevels::windowByKey(const std::string& key) const {
	auto it = byKey_.find(key);
	return it == byKey_.end() ? nullptr : it->second;
}

// ---------------------------------------------------------------------------------------------
// actions

namespace {
// -32000 for what the compositor lacks: {backend, path, reason}, as every refused action has, and
// the interface in `missing`.
[[noreturn]] void lacking(const char* reason, const char* missing) {
	throw RpcException(ErrorCode::BackendUnavailable, reason,
	                   {{"backend", "wayland"}, {"path", "/wayland/toplevels"}, {"reason", reason}, {"missing", missing}});
}
} // namespace

void Toplevels::act(const std::string& key, Action action, const std::string& output, Responder responder) {
	if (!wlr_)
		lacking("The compositor does not offer toplevel control (zwlr_foreign_toplevel_manager_v1)",
		        "zwlr_foreign_toplevel_manager_v1");
	Window* w = windowByKey(key);
	if (!w || !w->wlr) throw RpcException(ErrorCode::NotFound, "No toplevel with this key", {{"param", "toplevel"}, {"toplevel", key}});
	auto* h = w->wlr;
	switch (action) {
	case Action::Activate:
		if (!seat_)
			lacking("The compositor offers no seat to activate a toplevel on", "wl_seat");
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
			lacking("The compositor's zwlr_foreign_toplevel_manager_v1 is version 1, without fullscreen",
			        "zwlr_foreign_toplevel_manager_v1 version 2");
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
