#pragma once
// One wl_display connection driven by the daemon's sd-event loop (docs/architecture.md, "One thread, one
// loop"; mako/swayidle discipline): the display fd is an io source; its handler reads with
// wl_display_prepare_read / read_events and dispatches with dispatch_pending; a prepare hook
// dispatches what is queued and flushes before the loop sleeps, and waits for EPOLLOUT when the
// socket is full. A hang-up, a read or flush error, or a protocol error is "compositor gone":
// reported once through onLost from a defer source, never from inside libwayland's dispatch,
// so the owner may destroy the Display (after its own proxies) right there.

#include "../../event_loop.hpp"
#include "../../log.hpp"

#include <wayland-client.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace qsd::wayland {

// A listener trampoline's body: nothing may escape into libwayland's dispatch.
template <typename F>
void guarded(const char* what, F&& f) noexcept {
	try {
		f();
	} catch (const std::exception& e) {
		log::error("wayland", "{} handler failed: {}", what, e.what());
	}
}

struct LostReason {
	bool protocolError = false;   // the compositor sent wl_display.error: it is still there
	std::string message;
};

class Display {
public:
	// Connects to the socket at `path` without blocking (a full listen backlog is EAGAIN).
	// Returns nullptr with errno set when there is nobody to talk to (ENOENT, ECONNREFUSED...).
	static std::unique_ptr<Display> connect(EventLoop& loop, const std::string& path,
	                                        std::function<void(const LostReason&)> onLost);
	~Display();
	Display(const Display&) = delete;
	Display& operator=(const Display&) = delete;

	[[nodiscard]] wl_display* get() const { return display_; }
	[[nodiscard]] bool lost() const { return lost_; }
	// The pid and command name of the process at the other end of the socket (SO_PEERCRED);
	// 0 and "" when unknown.
	[[nodiscard]] pid_t peerPid() const { return peerPid_; }
	[[nodiscard]] const std::string& peerCommand() const { return peerCommand_; }

	// Runs `done` once the compositor has handled every request sent before this call and
	// every event it sent in reply has been dispatched (wl_display.sync). Dropped, not run,
	// when the connection is lost or the Display destroyed.
	void sync(std::function<void()> done);

private:
	Display(EventLoop& loop, wl_display* display, std::function<void(const LostReason&)> onLost);
	void onIo(uint32_t revents);
	void prepare();
	void fail(LostReason reason);
	void checkError(const char* what);
	static void onSyncDone(void* data, wl_callback* callback, uint32_t) noexcept;

	EventLoop& loop_;
	wl_display* display_;
	std::function<void(const LostReason&)> onLost_;
	EventSource io_;
	EventSource reporter_;
	bool lost_ = false;
	bool wantWrite_ = false;
	LostReason reason_;
	pid_t peerPid_ = 0;
	std::string peerCommand_;
	struct Pending {
		Display* display;
		uint64_t id;
		wl_callback* callback;
		std::function<void()> done;
	};
	std::map<uint64_t, std::unique_ptr<Pending>> syncs_;
	uint64_t nextSync_ = 1;
};

} // namespace qsd::wayland
