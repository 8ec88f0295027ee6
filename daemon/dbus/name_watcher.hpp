#pragma once
// Watches a D-Bus name: onAppeared when it gets an owner (also at start if it has one),
// onVanished when it loses it. Built on the connection's NameTracker (one match per name,
// shared) and its bus proxy; the initial owner is asked asynchronously.
//
// With Options::activate, a name that has no owner at start is started once through the bus
// (StartServiceByName), as Quickshell does: on a minimal session nothing else starts upowerd or
// power-profiles-daemon, which are D-Bus activated. Only once: a service that later goes away
// was stopped by someone, or crashed, and its supervisor (systemd) decides about restarting it.

#include "bus.hpp"
#include "names.hpp"

#include <functional>
#include <string>

namespace qsd {

struct NameWatcherOptions {
	// Start the service once (StartServiceByName) when the name has no owner at start.
	bool activate = false;
	// Called after every change of NameWatcher::status(), after onAppeared / onVanished.
	std::function<void()> onStatus;
};

class NameWatcher {
public:
	enum class Status {
		Resolving,    // the first GetNameOwner has not answered
		Present,      // the name has an owner
		Activating,   // no owner at start; StartServiceByName is in flight
		Absent,       // no owner (activationError() says why, when starting it failed)
	};
	using Options = NameWatcherOptions;

	NameWatcher(BusConnection& bus, std::string name, std::function<void(const std::string& owner)> onAppeared,
	            std::function<void()> onVanished, Options options = {});
	~NameWatcher();
	NameWatcher(const NameWatcher&) = delete;
	NameWatcher& operator=(const NameWatcher&) = delete;

	[[nodiscard]] bool present() const { return !owner_.empty(); }
	[[nodiscard]] const std::string& owner() const { return owner_; }
	[[nodiscard]] const std::string& name() const { return name_; }
	[[nodiscard]] Status status() const { return status_; }
	// Why the service could not be started ("org.freedesktop.DBus.Error.ServiceUnknown: The name
	// ... was not provided by any .service files"); "" when it was not tried or it worked.
	[[nodiscard]] const std::string& activationError() const { return activationError_; }

private:
	void ownerChanged(const std::string& owner);
	void activate();
	void setStatus(Status status);

	std::string name_;
	std::function<void(const std::string&)> onAppeared_;
	std::function<void()> onVanished_;
	Options options_;
	std::string owner_;
	Status status_ = Status::Resolving;
	std::string activationError_;
	BusConnection& bus_;
	NameTracker::Watch watch_;
	AsyncCall initial_;
	AsyncCall activation_;
	bool sawSignal_ = false;
};

} // namespace qsd
