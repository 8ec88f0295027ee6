#include "name_watcher.hpp"

#include "../log.hpp"
#include "guard.hpp"

namespace qsd {

NameWatcher::NameWatcher(BusConnection& bus, std::string name, std::function<void(const std::string&)> onAppeared,
                         std::function<void()> onVanished, Options options)
    : name_(std::move(name)), onAppeared_(std::move(onAppeared)), onVanished_(std::move(onVanished)),
      options_(std::move(options)), bus_(bus) {
	watch_ = bus.names().watch(name_, [this](const std::string& n, const std::string&, const std::string& newOwner) {
		if (n != name_) return;
		sawSignal_ = true;
		initial_.cancel();
		ownerChanged(newOwner);
	});
	initial_ = AsyncCall(bus_.daemon()
	                         .callMethodAsync("GetNameOwner")
	                         .onInterface("org.freedesktop.DBus")
	                         .withArguments(name_)
	                         .uponReplyInvoke([this](const sdbus::Error* error, std::string owner) {
		                         initial_.release();
		                         // A NameOwnerChanged that arrived first is newer than this answer.
		                         if (sawSignal_) return;
		                         dbus::guarded("following a name's owner", [&] {
			                         if (!error && !owner.empty()) ownerChanged(owner);
			                         else if (options_.activate) activate();
			                         else setStatus(Status::Absent);
		                         });
	                         }));
}

NameWatcher::~NameWatcher() = default;

void NameWatcher::activate() {
	setStatus(Status::Activating);
	// flags 0: none are defined. The bus answers once the service owns the name (its
	// NameOwnerChanged comes first) or once starting it failed.
	activation_ = AsyncCall(bus_.daemon()
	                            .callMethodAsync("StartServiceByName")
	                            .onInterface("org.freedesktop.DBus")
	                            .withArguments(name_, uint32_t(0))
	                            .uponReplyInvoke([this](const sdbus::Error* error, uint32_t) {
		                            activation_.release();
		                            if (error) {
			                            activationError_ = error->getName() + ": " + error->getMessage();
			                            log::info("dbus", "{} is not running and could not be started: {}", name_, activationError_);
		                            }
		                            if (status_ == Status::Activating)
			                            dbus::guarded("following a name's owner",
			                                    [&] { setStatus(present() ? Status::Present : Status::Absent); });
	                            }));
}

void NameWatcher::ownerChanged(const std::string& owner) {
	if (owner == owner_) {
		if (owner.empty() && status_ == Status::Resolving) setStatus(Status::Absent);
		return;
	}
	bool had = !owner_.empty();
	owner_ = owner;
	if (!owner_.empty()) activationError_.clear();
	// A new owner without a vanish in between (replacement): the old state is gone too.
	if (had && onVanished_) onVanished_();
	if (!owner_.empty() && onAppeared_) onAppeared_(owner_);
	// While StartServiceByName is in flight, its answer settles the status.
	if (!owner_.empty()) setStatus(Status::Present);
	else if (status_ != Status::Activating) setStatus(Status::Absent);
}

void NameWatcher::setStatus(Status status) {
	if (status == status_) return;
	status_ = status;
	if (options_.onStatus) options_.onStatus();
}

} // namespace qsd
