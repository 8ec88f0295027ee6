#pragma once
// A mirror of a service's objects through org.freedesktop.DBus.ObjectManager: one
// GetManagedObjects when the service appears, then InterfacesAdded, InterfacesRemoved and
// PropertiesChanged (invalidated properties are read again with one GetAll of their interface).
// NetworkManager and BlueZ are both served this way; the backend derives its tree from the
// cache and hears about every change through the hooks.
//
// Matches are installed in the constructor (start-up) with sender= the well-known name, so they
// survive restarts of the service; messages from anyone but the current owner are dropped. The
// service's name is watched; when it goes, the cache empties and `lost` runs; when it comes
// back, everything is read again from scratch.

#include "../retry.hpp"
#include "../event_loop.hpp"
#include "call_set.hpp"
#include "name_watcher.hpp"
#include "properties.hpp"
#include "variant.hpp"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace qsd::dbus {

class ObjectCache {
public:
	using Interfaces = std::map<std::string, Properties>;
	using Objects = std::map<std::string, Interfaces>;

	struct Options {
		std::string service;          // "org.freedesktop.NetworkManager"
		std::string managerPath;      // where ObjectManager is: "/org/freedesktop", "/"
		std::string pathNamespace;    // whose PropertiesChanged to follow: "/org/freedesktop/NetworkManager", "/"
		NameWatcher::Options name;    // activation, status hook
		std::string log = "dbus";     // log category
		// The interfaces to mirror, each with the properties to keep (an empty set: all of
		// them). Empty: every interface and property. What is not kept costs no memory and
		// runs no hook: BlueZ's GATT objects and advertising data, which qsd never reads.
		std::map<std::string, std::set<std::string>> interfaces = {};
		// How long GetManagedObjects may take (0: sd-bus's 25 s). One that times out or fails (a
		// service busy or not ready while the system starts) is asked again 1, 2, 4... up to
		// 30 s later, for as long as the service keeps its name; the mirror is empty and not
		// ready meanwhile.
		std::chrono::microseconds timeout{0};
	};
	// Every hook is optional. Paths and interfaces are the object's; the cache already holds the
	// new state when a hook runs (a removed interface is gone; its object too when it was the
	// last). None runs before `ready`, except `appeared`.
	struct Hooks {
		std::function<void(const std::string& owner)> appeared;   // GetManagedObjects is on its way
		std::function<void()> ready;                              // the snapshot is in
		std::function<void()> lost;                               // the service left; the cache is empty
		std::function<void(const std::string& path, const std::vector<std::string>& interfaces)> added;
		std::function<void(const std::string& path, const std::vector<std::string>& interfaces)> removed;
		std::function<void(const std::string& path, const std::string& interface, const std::vector<std::string>& names)> changed;
	};

	ObjectCache(BusConnection& bus, CallSet& calls, Options options, Hooks hooks);
	~ObjectCache();
	ObjectCache(const ObjectCache&) = delete;
	ObjectCache& operator=(const ObjectCache&) = delete;

	[[nodiscard]] bool ready() const { return ready_; }
	[[nodiscard]] const std::string& owner() const { return owner_; }
	[[nodiscard]] const NameWatcher& name() const { return *watcher_; }
	[[nodiscard]] const Objects& objects() const { return objects_; }
	[[nodiscard]] const Interfaces* object(const std::string& path) const;
	[[nodiscard]] const Properties* properties(const std::string& path, const std::string& interface) const;
	[[nodiscard]] const Value* property(const std::string& path, const std::string& interface, const std::string& name) const;
	// For a backend that learns a value from another signal than PropertiesChanged
	// (NetworkManager's AccessPointAdded): nullptr when the object or interface is unknown.
	[[nodiscard]] Properties* mutableProperties(const std::string& path, const std::string& interface);
	// Whether a message comes from the service's current owner.
	[[nodiscard]] bool fromOwner(sdbus::Message& msg) const;

	// Forgets every object below `path` (not `path` itself) without a signal: for a service
	// that drops a subtree without InterfacesRemoved for each object (BlueZ, when an adapter
	// goes, does not always announce its devices). No hook runs; returns the paths forgotten.
	std::vector<std::string> forgetBelow(const std::string& path);

	// A proxy of one of the service's objects, for calls; kept until the service goes (also
	// after the object: destroying a proxy cancels its calls, and an object's removal often
	// comes before the answer to the call that removed it). The proxies of the last
	// kRetiredProxies removed objects are kept; older ones are destroyed, so a service whose
	// objects come and go (BlueZ during discovery) does not grow the cache without bound.
	sdbus::IProxy& proxy(const std::string& path);
	static constexpr size_t kRetiredProxies = 64;
	[[nodiscard]] size_t proxyCount() const { return proxies_.size() + retired_.size(); }

private:
	void appeared(const std::string& owner);
	void enumerate();
	void vanished();
	void onManager(sdbus::Message& msg);
	void onProperties(sdbus::Message& msg);
	// One GetAll of `interface` for the properties `invalidated` named (gone from the cache
	// meanwhile); asked again (kReread) when it fails.
	void reread(const std::string& path, const std::string& interface, std::vector<std::string> invalidated);
	void retire(const std::string& path);
	// Whether an interface is mirrored; drops the properties of it that are not kept.
	[[nodiscard]] bool keeps(const std::string& interface) const;
	void filter(const std::string& interface, Properties& props) const;
	// An a{sa{sv}} at msg's read position: the interfaces and properties kept.
	void readInterfaces(sdbus::Message& msg, Interfaces& out) const;
	void malformed(const char* what, const std::string& why);

	BusConnection& bus_;
	CallSet& calls_;
	Options options_;
	Hooks hooks_;
	std::string group_;
	std::vector<sdbus::Slot> matches_;
	std::unique_ptr<NameWatcher> watcher_;
	std::string owner_;
	bool ready_ = false;
	bool warned_ = false;
	Retry retry_{kAskAgain};   // GetManagedObjects timed out
	// Re-reads of invalidated properties that failed, by path and interface: each is asked again
	// until it answers, the object goes or the policy gives up.
	static constexpr Backoff::Policy kReread{std::chrono::milliseconds(250), std::chrono::seconds(8), 6};
	std::map<std::pair<std::string, std::string>, std::unique_ptr<Retry>> rereads_;
	Objects objects_;
	std::map<std::string, std::unique_ptr<sdbus::IProxy>> proxies_;
	std::deque<std::unique_ptr<sdbus::IProxy>> retired_;   // of removed objects, oldest first
};

} // namespace qsd::dbus
