#pragma once
// Waits on the loop for a bus to answer, before the daemon makes its sdbus-c++ connection to it.
//
// sdbus-c++ 1.2 connects synchronously: its connection's constructor waits in sd_bus_flush()
// until the bus daemon has authenticated the connection and answered Hello. A bus daemon that
// accepts connections but does not answer (stopped, wedged, overloaded) held qsd there, in its
// start-up, for sd-bus's authentication timeout (90 s) per bus: no client answered, no backend
// started, SIGTERM not handled. So each bus is asked first with a plain sd-bus connection driven
// by the loop (its GetId answer proves that authentication and Hello went through); the
// sdbus-c++ connection is made once it answered, when its own handshake takes a round trip.

#include "bus.hpp"

#include <systemd/sd-bus.h>

#include <chrono>
#include <functional>
#include <string>

namespace qsd {

class BusProbe {
public:
	enum class Result {
		Answered,   // the bus answered: connect now
		Refused,    // the connection failed at once (no socket, no address): connecting shows why
		NoAnswer,   // nothing within the timeout, or the bus closed the connection: `why`
	};
	using Done = std::function<void(Result result, const std::string& why)>;
	// The bus's id (org.freedesktop.DBus.GetId, which the probe asks): empty until answered.
	[[nodiscard]] const std::string& busId() const { return id_; }

	// Starts asking (DBUS_SYSTEM_BUS_ADDRESS / DBUS_SESSION_BUS_ADDRESS, as sd-bus and sdbus-c++
	// read them). `done` runs once, from the loop, never from this constructor.
	BusProbe(EventLoop& loop, BusConnection::Kind kind, std::chrono::microseconds timeout, Done done);
	~BusProbe();
	BusProbe(const BusProbe&) = delete;
	BusProbe& operator=(const BusProbe&) = delete;

private:
	static int onReply(sd_bus_message* reply, void* userdata, sd_bus_error* error);
	void settle(Result result, std::string why);
	void finish();
	void release();

	sd_bus* bus_ = nullptr;
	sd_bus_slot* call_ = nullptr;
	EventSource timeout_;
	EventSource finish_;
	Done done_;
	Result result_ = Result::NoAnswer;
	std::string why_;
	std::string id_;
	bool settled_ = false;
};

} // namespace qsd
