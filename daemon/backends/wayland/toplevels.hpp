#pragma once
// /wayland/toplevels and the toplevel actions.
//
// wlr-foreign-toplevel-management gives everything (title, app id, states, outputs, parent) and
// the actions; ext-foreign-toplevel-list gives title, app id and a stable identifier. With
// both, a wlr handle is paired with the ext handle of the same toplevel so that the key is the
// identifier: the two protocols do not reference each other, so the pairing is by (app id,
// title) among unpaired handles, after a wl_display.sync that lets both protocols' events for a
// new window arrive (compositors send them together). Without a match the key is a counter.
// With ext-foreign-toplevel-list alone, toplevels have title and app id; state fields are null.
//
// Cost: a compositor may list thousands of windows (and resend them all on every reconnection),
// so a window that appears, changes or goes costs O(log n) work and only its own tree writes
// (plus its children's `parent` when it gets a key or goes); every window is rewritten only when
// output names change. Rewriting all of them on each add and close made n windows cost O(n²):
// seconds of CPU for 1500, and with 3000 qsd read so slowly that the compositor dropped it.

#include "display.hpp"
#include "mapping.hpp"
#include "outputs.hpp"

#include "../../server/dispatcher.hpp"
#include "../../tree.hpp"

#include "ext-foreign-toplevel-list-v1-client-protocol.h"
#include "wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace qsd::wayland {

// What keeps a key from being given to another window in this epoch, also across compositor
// restarts (ext-foreign-toplevel-list identifiers are unique per compositor only), in constant
// space: a set of every key given grew by 85 bytes for every window ever opened. The counter only
// grows and stays above every numeric identifier used as a key (toplevelKey); identifiers are
// keys only on the first compositor connection of the epoch, every later window gets a counter
// value (a window read again after a reconnect did before: its identifier was taken).
struct KeyBook {
	uint64_t counter = 0;
	bool identifiers = true;
};

class Toplevels {
public:
	// `keys` is the backend's and outlives every connection.
	Toplevels(Tree& tree, Display& display, Outputs& outputs, KeyBook& keys);
	~Toplevels();   // destroys every proxy (the display must still be connected)
	Toplevels(const Toplevels&) = delete;
	Toplevels& operator=(const Toplevels&) = delete;

	void bindWlr(wl_registry* registry, uint32_t global, uint32_t version);
	void bindExt(wl_registry* registry, uint32_t global, uint32_t version);
	void bindSeat(wl_registry* registry, uint32_t global, uint32_t version);
	bool removeGlobal(uint32_t global);   // the seat, when it goes
	[[nodiscard]] bool available() const { return wlr_ || ext_; }

	void setReady();
	// Output names changed: rewrite every toplevel's outputs.
	void outputsChanged() { refresh(); }
	// A wl_output is being destroyed: no window is on it any more.
	void forgetOutput(wl_output* output);

	enum class Action { Activate, Close, Maximize, Unmaximize, Minimize, Unminimize, Fullscreen, Unfullscreen };
	// Sends the request and answers once the compositor has processed it (wl_display.sync).
	// `output` only for Fullscreen (nullptr: the compositor chooses). Throws rpc::RpcException.
	void act(const std::string& key, Action action, const std::string& output, Responder responder);

private:
	struct Window;
	struct ExtHandle;

	void refresh();
	void publish(Window& w);
	// A window's first done: it waits for a key (given by pairAndPublish).
	void complete(Window& w);
	// Gives keys to complete windows that have none and publishes them; `settled`: no event
	// of either protocol can still be on its way for them.
	void pairAndPublish(bool settled = false);
	void setParent(Window& w, Window* parent);
	void removeWindow(Window* w);
	void removeExt(ExtHandle* e);
	// Keeps `unpaired_` right for `e`: listed while it is done and has no window.
	void indexExt(ExtHandle& e);
	Window* windowByKey(const std::string& key) const;

	static const zwlr_foreign_toplevel_manager_v1_listener kWlrManagerListener;
	static const zwlr_foreign_toplevel_handle_v1_listener kWlrHandleListener;
	static const ext_foreign_toplevel_list_v1_listener kExtListListener;
	static const ext_foreign_toplevel_handle_v1_listener kExtHandleListener;

	Tree& tree_;
	Display& display_;
	Outputs& outputs_;
	KeyBook& keys_;
	bool ready_ = false;
	zwlr_foreign_toplevel_manager_v1* wlr_ = nullptr;
	uint32_t wlrVersion_ = 0;
	ext_foreign_toplevel_list_v1* ext_ = nullptr;
	wl_seat* seat_ = nullptr;
	uint32_t seatGlobal_ = 0;
	uint64_t nextSeq_ = 1;   // creation order of windows and ext handles
	// By creation order (the order counter keys are given in); erased in O(log n).
	std::map<uint64_t, std::unique_ptr<Window>> windows_;
	std::map<uint64_t, std::unique_ptr<ExtHandle>> exts_;
	// Complete windows without a key yet, in the order they completed.
	std::vector<Window*> waiting_;
	std::unordered_map<std::string, Window*> byKey_;
	// Done ext handles without a window, by (app id, title, creation order): a new wlr window
	// finds its pair with one lookup, the oldest first.
	std::map<std::tuple<std::string, std::string, uint64_t>, ExtHandle*> unpaired_;
	bool pairing_ = false;   // a sync for pairing is in flight
};

} // namespace qsd::wayland
