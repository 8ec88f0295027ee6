#pragma once
// libpipewire inside qsd's sd-event loop (docs/architecture.md, "One thread, one loop"): one pw_loop,
// entered once, whose fd is an sd-event io source that runs pw_loop_iterate(loop, 0); and a
// watch of the directories where PipeWire's socket appears, with sd-event inotify sources.

#include "../../event_loop.hpp"
#include "mapping.hpp"

#include <functional>
#include <string>
#include <vector>

struct pw_loop;

namespace qsd::pipewire {

class PwLoop {
public:
	// afterIterate runs after every pw_loop_iterate, once the events it dispatched are handled.
	PwLoop(EventLoop& loop, std::function<void()> afterIterate);
	// Drives a loop libpipewire owns (the context's data loop, whose thread was stopped): entered
	// and iterated from qsd's loop like our own, left but not destroyed in the destructor.
	PwLoop(EventLoop& loop, pw_loop* adopted, const char* description);
	~PwLoop();
	PwLoop(const PwLoop&) = delete;
	PwLoop& operator=(const PwLoop&) = delete;

	[[nodiscard]] pw_loop* get() const { return loop_; }

private:
	void attach(EventLoop& loop, const char* description);

	pw_loop* loop_ = nullptr;
	bool owned_ = true;
	bool entered_ = false;
	EventSource io_;
	std::function<void()> afterIterate_;
};

// Calls onAppeared when a file named like the socket is created (or moved in) in one of the
// locations' directories. Directories that do not exist are not watched (logged once).
// Only armed while qsd is not connected, so a connected daemon gets no wakeups from other files
// of the runtime directory.
class SocketWatch {
public:
	SocketWatch(EventLoop& loop, std::vector<SocketLocation> locations, std::function<void()> onAppeared);
	SocketWatch(const SocketWatch&) = delete;
	SocketWatch& operator=(const SocketWatch&) = delete;

	void arm();
	void disarm();
	[[nodiscard]] bool armed() const { return !sources_.empty(); }
	[[nodiscard]] const std::vector<SocketLocation>& locations() const { return locations_; }

private:
	struct Watch {
		SocketWatch* owner;
		std::string name;
	};
	EventLoop& loop_;
	std::vector<SocketLocation> locations_;
	std::function<void()> onAppeared_;
	std::vector<std::unique_ptr<Watch>> watches_;
	std::vector<EventSource> sources_;
	bool warned_ = false;

	static int onInotify(sd_event_source* s, const struct inotify_event* event, void* userdata) noexcept;
};

} // namespace qsd::pipewire
