#pragma once
// A well-known name qsd serves on (org.kde.StatusNotifierWatcher,
// org.freedesktop.Notifications), owned politely: RequestName without REPLACE_EXISTING (an
// owner is never pushed out), without ALLOW_REPLACEMENT (a later program that asks to replace
// qsd is refused and the state qsd serves outlives it), and without DO_NOT_QUEUE: qsd waits in
// the name's queue, and when the owner leaves the bus hands the name to qsd in the same step,
// with no moment in which nobody serves it.
//
// The objects served on the name are exported through exportObject() before request(), so a
// call that arrives the moment the name is granted finds them. The destructor releases the
// name (a watcher queued behind qsd takes over at once) and then the objects.
//
// Whether qsd owns the name is learnt from NameOwnerChanged (the connection's NameTracker),
// which says what NameAcquired/NameLost would and also who the owner is when it is not qsd.

#include "bus.hpp"
#include "names.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace qsd::dbus {

class OwnedName {
public:
	enum class State {
		Requesting,   // RequestName or the first owner lookup has not answered
		Owner,        // qsd owns the name
		Waiting,      // another connection owns it; qsd is queued behind it
		Failed,       // RequestName failed (error() says why): qsd serves nothing on the name
	};

	// onChanged runs after every change of state() or otherOwner().
	OwnedName(BusConnection& bus, std::string name, std::function<void()> onChanged);
	~OwnedName();
	OwnedName(const OwnedName&) = delete;
	OwnedName& operator=(const OwnedName&) = delete;

	// Exports an object at `path` for the life of this name (register its vtable and call
	// finishRegistration() before request()).
	sdbus::IObject& exportObject(const std::string& path);
	// Asks for the name (asynchronously).
	void request();

	[[nodiscard]] State state() const { return state_; }
	[[nodiscard]] bool owned() const { return state_ == State::Owner; }
	[[nodiscard]] const std::string& name() const { return name_; }
	// The unique name of the owner while it is not qsd ("" otherwise), and its process id once
	// the bus told it.
	[[nodiscard]] const std::string& otherOwner() const { return other_; }
	[[nodiscard]] std::optional<uint32_t> otherPid() const { return otherPid_; }
	[[nodiscard]] const std::string& error() const { return error_; }

private:
	void ownerIs(const std::string& owner);
	void set(State state);

	BusConnection& bus_;
	std::string name_;
	std::function<void()> onChanged_;
	std::map<std::string, std::unique_ptr<sdbus::IObject>> objects_;
	NameTracker::Watch watch_;
	AsyncCall lookup_;
	AsyncCall request_;
	AsyncCall pid_;
	bool sawSignal_ = false;
	bool requested_ = false;
	State state_ = State::Requesting;
	std::string owner_;
	std::string other_;
	std::optional<uint32_t> otherPid_;
	std::string error_;
};

} // namespace qsd::dbus
