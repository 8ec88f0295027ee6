// The watcher's limits on what one connection may register, and its signals about the lists,
// coalesced: one PropertiesChanged(RegisteredStatusNotifierItems) and at most one
// StatusNotifierHostRegistered/Unregistered per loop pass, whatever a burst of registrations
// holds (each used to broadcast the whole list to every connection of the bus, which is
// quadratic in the number of items). The limits are explained in docs/architecture.md,
// "Hostile peers".

#include "tray_backend.hpp"

#include "../../log.hpp"

namespace qsd::tray {

bool TrayBackend::peerLog(uint64_t& suppressed) { return peerLog_.allow(context_.loop.now(), suppressed); }

bool TrayBackend::overItemLimit(const std::string& connection, const std::string& what) {
	auto n = itemsPerConnection_.find(connection);
	if (n == itemsPerConnection_.end() || n->second < kMaxItemsPerConnection) return false;
	uint64_t suppressed = 0;
	if (peerLog(suppressed))
		log::warning("tray", "{} has {} items already (the limit): {} refused{}", connection, n->second, what,
		             log::heldBack(suppressed));
	return true;
}

void TrayBackend::chargeItem(const std::string& connection) { ++itemsPerConnection_[connection]; }

void TrayBackend::releaseItem(const std::string& connection) {
	if (auto n = itemsPerConnection_.find(connection); n != itemsPerConnection_.end() && --n->second == 0)
		itemsPerConnection_.erase(n);
}

void TrayBackend::hostsChanged(bool registered) {
	(registered ? hostRegistered_ : hostUnregistered_) = true;
	if (deferred_) deferred_.setEnabled(SD_EVENT_ONESHOT);
}

void TrayBackend::flushWatcherSignals() {
	if (itemsChanged_ && object_ && role_ == Role::Watcher) {
		try {
			object_->emitPropertiesChangedSignal(kWatcherIface, {"RegisteredStatusNotifierItems"});
		} catch (const sdbus::Error& e) {
			log::warning("tray", "emitting PropertiesChanged failed: {}", e.getMessage());
		}
	}
	if (saveNeeded_) saveItems();
	if (hostRegistered_) emitWatcher("StatusNotifierHostRegistered");
	if (hostUnregistered_) emitWatcher("StatusNotifierHostUnregistered");
	itemsChanged_ = hostRegistered_ = hostUnregistered_ = false;
}

} // namespace qsd::tray
