#include "names.hpp"

#include "../log.hpp"

#include <vector>

namespace qsd {

namespace {
constexpr const char* kBase =
    "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
    "member='NameOwnerChanged'";
} // namespace

NameTracker::Watch& NameTracker::Watch::operator=(Watch&& o) noexcept {
	if (this != &o) {
		reset();
		tracker_ = o.tracker_;
		rule_ = std::move(o.rule_);
		id_ = o.id_;
		o.tracker_ = nullptr;
	}
	return *this;
}

void NameTracker::Watch::reset() {
	if (tracker_) tracker_->remove(rule_, id_);
	tracker_ = nullptr;
}

NameTracker::NameTracker(BusConnection& bus): bus_(bus) {
	sweeper_ = bus.loop().addDefer([this] { sweep(); }, "name-tracker-sweep");
	sweeper_.setEnabled(SD_EVENT_OFF);
}

NameTracker::~NameTracker() = default;

NameTracker::Watch NameTracker::watch(const std::string& name, Handler handler) {
	return add(std::string(kBase) + ",arg0='" + name + "'", std::move(handler));
}

NameTracker::Watch NameTracker::watchNamespace(const std::string& prefix, Handler handler) {
	return add(std::string(kBase) + ",arg0namespace='" + prefix + "'", std::move(handler));
}

NameTracker::Watch NameTracker::watchAll(Handler handler) { return add(kBase, std::move(handler)); }

NameTracker::Watch NameTracker::add(std::string rule, Handler handler) {
	auto it = rules_.find(rule);
	if (it == rules_.end()) {
		it = rules_.emplace(rule, Rule{}).first;
		// The map's node is stable: the slot's callback finds its rule by key, which survives a
		// rehash of nothing (std::map never moves nodes).
		it->second.slot = bus_.connection().addMatch(rule, [this, key = rule](sdbus::Message& msg) { dispatch(key, msg); });
	}
	uint64_t id = next_++;
	it->second.handlers.emplace(id, std::make_shared<Handler>(std::move(handler)));
	return Watch(this, std::move(rule), id);
}

void NameTracker::remove(const std::string& rule, uint64_t id) {
	auto it = rules_.find(rule);
	if (it == rules_.end()) return;
	it->second.handlers.erase(id);
	if (it->second.handlers.empty()) sweeper_.setEnabled(SD_EVENT_ONESHOT);
}

void NameTracker::sweep() {
	for (auto it = rules_.begin(); it != rules_.end();) {
		if (it->second.handlers.empty()) it = rules_.erase(it);
		else ++it;
	}
}

void NameTracker::dispatch(const std::string& rule, sdbus::Message& msg) {
	auto it = rules_.find(rule);
	if (it == rules_.end()) return;
	std::string name, oldOwner, newOwner;
	try {
		msg >> name >> oldOwner >> newOwner;
	} catch (const sdbus::Error& e) {
		// Only the bus sends this signal; a garbled one is worth one warning.
		if (!it->second.warned) log::warning("dbus", "malformed NameOwnerChanged: {}", e.getMessage());
		it->second.warned = true;
		return;
	}
	// A handler may drop its own watch, or others of this rule: run over a snapshot, and skip
	// the ones that went meanwhile.
	std::vector<std::pair<uint64_t, std::shared_ptr<Handler>>> handlers(it->second.handlers.begin(), it->second.handlers.end());
	for (auto& [id, h]: handlers) {
		auto r = rules_.find(rule);
		if (r == rules_.end() || !r->second.handlers.count(id)) continue;
		try {
			(*h)(name, oldOwner, newOwner);
		} catch (const std::exception& e) {
			log::error("dbus", "a NameOwnerChanged handler for {} failed: {}", name, e.what());
		}
	}
}

} // namespace qsd
