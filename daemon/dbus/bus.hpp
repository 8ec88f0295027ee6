#pragma once
// sdbus-c++ 1.2 connections driven by the daemon's sd-event loop, without any thread.
// sdbus-c++ 1.2 has no attachSdEventLoop(), so this is the adapter docs/architecture.md
// describes: an io source on the connection's fd, a prepare hook that refreshes the events and
// the timeout before every poll, and handlers that process every pending message.
//
// What every user of a connection shares is here once: the proxy of the bus itself
// (org.freedesktop.DBus: GetNameOwner, RequestName, ListNames), the fan-out of NameOwnerChanged
// (names.hpp), our unique name, and a reaper for proxies that must not die inside their own
// callback.

#include "../event_loop.hpp"

#include <sdbus-c++/sdbus-c++.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qsd {

class NameTracker;

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
	[[nodiscard]] EventLoop& loop() { return loop_; }

	// org.freedesktop.DBus at /org/freedesktop/DBus, one proxy for every user.
	[[nodiscard]] sdbus::IProxy& daemon();
	// NameOwnerChanged, one match per distinct rule whatever the number of watchers.
	[[nodiscard]] NameTracker& names();
	// The bus's id, as its probe read it (BusProbe::busId; "" when not known). The tray and MPRIS
	// tell their files of qsd's last run on this bus from a later bus's by it. (The probe and this
	// connection reach the same bus daemon: one that goes away ends qsd, exit status 3.)
	[[nodiscard]] const std::string& id() const { return id_; }
	void setId(std::string id) { id_ = std::move(id); }
	// Our unique name (":1.42"). The first read waits for the bus's Hello reply: start-up only.
	[[nodiscard]] const std::string& uniqueName();
	// Destroys `proxy` on the next loop pass: a call of it may be running now.
	void bury(std::unique_ptr<sdbus::IProxy> proxy);

	// Processes everything pending now (after a call was queued outside any dispatch).
	void process();

	// Runs once when the connection is lost (the bus daemon went away or closed it). The
	// connection's sources are off by then: a closed connection is never polled again.
	void onLost(std::function<void()> handler) { onLost_ = std::move(handler); }
	[[nodiscard]] bool lost() const { return lost_; }

private:
	void prepare();
	// Whether `e` says the connection is gone; if so, stops polling it and runs onLost once.
	bool disconnected(const sdbus::Error& e);

	EventLoop& loop_;
	Kind kind_;
	std::unique_ptr<sdbus::IConnection> connection_;
	EventSource io_;
	EventSource timer_;
	std::unique_ptr<sdbus::IProxy> daemon_;
	std::unique_ptr<NameTracker> names_;
	std::string unique_;
	std::string id_;
	std::vector<std::unique_ptr<sdbus::IProxy>> graveyard_;
	EventSource reaper_;
	std::function<void()> onLost_;
	bool lost_ = false;
	uint32_t events_ = 0;             // what io_ and timer_ were last set to (prepare())
	uint64_t timeout_ = UINT64_MAX;
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
