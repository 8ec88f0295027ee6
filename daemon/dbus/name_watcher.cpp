#include "name_watcher.hpp"

#include "../log.hpp"

namespace qsd {

NameWatcher::NameWatcher(sdbus::IConnection& connection, std::string name, std::function<void(const std::string&)> onAppeared,
                         std::function<void()> onVanished)
    : name_(std::move(name)), onAppeared_(std::move(onAppeared)), onVanished_(std::move(onVanished)) {
	auto rule = "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
	            "member='NameOwnerChanged',arg0='" + name_ + "'";
	match_ = connection.addMatch(rule, [this](sdbus::Message& msg) {
		try {
			std::string n, oldOwner, newOwner;
			msg >> n >> oldOwner >> newOwner;
			if (n != name_) return;
			sawSignal_ = true;
			initial_.cancel();
			ownerChanged(newOwner);
		} catch (const sdbus::Error& e) {
			log::warning("dbus", "malformed NameOwnerChanged for {}: {}", name_, e.getMessage());
		}
	});
	bus_ = sdbus::createProxy(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus");
	initial_ = AsyncCall(bus_->callMethodAsync("GetNameOwner")
	                         .onInterface("org.freedesktop.DBus")
	                         .withArguments(name_)
	                         .uponReplyInvoke([this](const sdbus::Error* error, std::string owner) {
		                         // A NameOwnerChanged that arrived first is newer than this answer.
		                         if (sawSignal_) return;
		                         ownerChanged(error ? std::string() : owner);
	                         }));
}

NameWatcher::~NameWatcher() = default;

void NameWatcher::ownerChanged(const std::string& owner) {
	if (owner == owner_) return;
	bool had = !owner_.empty();
	owner_ = owner;
	// A new owner without a vanish in between (replacement): the old state is gone too.
	if (had && onVanished_) onVanished_();
	if (!owner_.empty() && onAppeared_) onAppeared_(owner_);
}

} // namespace qsd
