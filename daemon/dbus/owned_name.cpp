#include "owned_name.hpp"

#include "../log.hpp"
#include "guard.hpp"

namespace qsd::dbus {

namespace {
constexpr const char* kBusIface = "org.freedesktop.DBus";
// RequestName's replies (D-Bus specification).
constexpr uint32_t kPrimaryOwner = 1;
constexpr uint32_t kInQueue = 2;
constexpr uint32_t kAlreadyOwner = 4;
} // namespace

OwnedName::OwnedName(BusConnection& bus, std::string name, std::function<void()> onChanged)
    : bus_(bus), name_(std::move(name)), onChanged_(std::move(onChanged)) {
	(void)bus_.uniqueName();   // read now, at start-up: the first read waits for Hello's reply
	watch_ = bus_.names().watch(name_, [this](const std::string& n, const std::string&, const std::string& newOwner) {
		if (n != name_) return;
		sawSignal_ = true;
		lookup_.cancel();
		ownerIs(newOwner);
	});
	lookup_ = AsyncCall(bus_.daemon().callMethodAsync("GetNameOwner").onInterface(kBusIface).withArguments(name_)
	                        .uponReplyInvoke([this](const sdbus::Error* e, std::string owner) {
		                        lookup_.release();
		                        // A NameOwnerChanged that came first is newer than this answer.
		                        if (sawSignal_) return;
		                        guarded("following an owned name", [&] { ownerIs(e ? std::string() : owner); });
	                        }));
}

OwnedName::~OwnedName() {
	lookup_.cancel();
	request_.cancel();
	pid_.cancel();
	if (requested_) {
		// Let the name go now rather than when the connection closes: whoever is queued behind
		// qsd takes over at once. Sent without waiting for a reply.
		try {
			auto m = bus_.daemon().createMethodCall(kBusIface, "ReleaseName");
			m << name_;
			m.dontExpectReply();
			bus_.daemon().callMethod(m);
		} catch (const sdbus::Error& e) {
			log::debug("dbus", "releasing {} failed: {}", name_, e.getMessage());
		}
	}
	objects_.clear();
}

sdbus::IObject& OwnedName::exportObject(const std::string& path) {
	auto& o = objects_[path];
	if (!o) o = sdbus::createObject(bus_.connection(), path);
	return *o;
}

void OwnedName::request() {
	if (requested_) return;
	requested_ = true;
	request_ = AsyncCall(bus_.daemon().callMethodAsync("RequestName").onInterface(kBusIface).withArguments(name_, uint32_t(0))
	                         .uponReplyInvoke([this](const sdbus::Error* e, uint32_t reply) {
		                         request_.release();
		                         if (e) {
			                         error_ = e->getName() + ": " + e->getMessage();
			                         log::warning("dbus", "cannot own {}: {}", name_, error_);
			                         guarded("following an owned name", [&] { set(State::Failed); });
			                         return;
		                         }
		                         if (reply == kInQueue)
			                         log::info("dbus", "{} is owned by {}; qsd waits in its queue", name_,
			                                   other_.empty() ? std::string("another program") : other_);
		                         // The owner itself is learnt from NameOwnerChanged (or the lookup);
		                         // this only settles a reply that came before either.
		                         if ((reply == kPrimaryOwner || reply == kAlreadyOwner) && owner_.empty())
			                         guarded("following an owned name", [&] { ownerIs(bus_.uniqueName()); });
	                         }));
}

void OwnedName::ownerIs(const std::string& owner) {
	if (owner == owner_ && state_ != State::Requesting) return;
	owner_ = owner;
	const auto& self = bus_.uniqueName();
	std::string other = owner.empty() || owner == self ? std::string() : owner;
	if (other != other_) {
		other_ = other;
		otherPid_.reset();
		pid_.cancel();
		if (!other_.empty())
			pid_ = AsyncCall(bus_.daemon().callMethodAsync("GetConnectionUnixProcessID").onInterface(kBusIface)
			                     .withArguments(other_)
			                     .uponReplyInvoke([this, asked = other_](const sdbus::Error* e, uint32_t pid) {
				                     pid_.release();
				                     if (e || asked != other_) return;
				                     otherPid_ = pid;
				                     if (onChanged_) guarded("following an owned name", onChanged_);
			                     }));
	}
	State next = state_;
	if (owner == self) next = State::Owner;
	else if (state_ != State::Failed && requested_ && !owner.empty()) next = State::Waiting;
	else if (state_ != State::Failed) next = State::Requesting;
	if (next == State::Owner && state_ != State::Owner) log::info("dbus", "qsd owns {}", name_);
	state_ = next;
	if (onChanged_) onChanged_();
}

void OwnedName::set(State state) {
	if (state_ == state) return;
	state_ = state;
	if (onChanged_) onChanged_();
}

} // namespace qsd::dbus
