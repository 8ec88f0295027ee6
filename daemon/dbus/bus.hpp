#pragma once
// sdbus-c++ 1.2 connections driven by the daemon's sd-event loop, without any thread.
// sdbus-c++ 1.2 has no attachSdEventLoop(), so this is the adapter DESIGN.md describes: an io
// source on the connection's fd, a prepare hook that refreshes the events and the timeout
// before every poll, and handlers that process every pending message.

#include "../event_loop.hpp"

#include <sdbus-c++/sdbus-c++.h>

#include <memory>

namespace qsd {

class BusConnection {
public:
	enum class Kind { System, Session };

	// Connects (honours DBUS_SYSTEM_BUS_ADDRESS / DBUS_SESSION_BUS_ADDRESS). Throws sdbus::Error.
	BusConnection(EventLoop& loop, Kind kind);
	~BusConnection();
	BusConnection(const BusConnection&) = delete;
	BusConnection& operator=(const BusConnection&) = delete;

	[[nodiscard]] sdbus::IConnection& connection() { return *connection_; }
	[[nodiscard]] Kind kind() const { return kind_; }

	// Processes everything pending now (after a call was queued outside any dispatch).
	void process();

private:
	void prepare();

	Kind kind_;
	std::unique_ptr<sdbus::IConnection> connection_;
	EventSource io_;
	EventSource timer_;
};

// Cancels an async call when destroyed: sdbus-c++ 1.2's PendingAsyncCall is only a weak
// handle, and a reply delivered to a destroyed owner would be a use-after-free.
class AsyncCall {
public:
	AsyncCall() = default;
	explicit AsyncCall(sdbus::PendingAsyncCall call): call_(std::move(call)), armed_(true) {}
	AsyncCall(AsyncCall&& o) noexcept: call_(std::move(o.call_)), armed_(o.armed_) { o.armed_ = false; }
	AsyncCall& operator=(AsyncCall&& o) noexcept {
		if (this != &o) {
			cancel();
			call_ = std::move(o.call_);
			armed_ = o.armed_;
			o.armed_ = false;
		}
		return *this;
	}
	~AsyncCall() { cancel(); }
	AsyncCall(const AsyncCall&) = delete;
	AsyncCall& operator=(const AsyncCall&) = delete;

	void cancel() {
		if (armed_ && call_.isPending()) call_.cancel();
		armed_ = false;
	}
	[[nodiscard]] bool pending() const { return armed_ && call_.isPending(); }
	// Forgets the call without cancelling it: for its own reply handler, which runs inside the
	// call's slot data and must not destroy it (see dbus::CallSet).
	void release() { armed_ = false; }

private:
	sdbus::PendingAsyncCall call_;
	bool armed_ = false;
};

} // namespace qsd
