#include "call_set.hpp"

#include "../log.hpp"

#include <vector>

namespace qsd::dbus {

void CallSet::start(std::string group, sdbus::IProxy& proxy, const sdbus::MethodCall& message, RawHandler handler,
                    std::chrono::microseconds timeout) {
	uint64_t id = next_++;
	auto call = proxy.callMethod(
	    message,
	    [this, id, handler = std::move(handler)](sdbus::MethodReply& reply, const sdbus::Error* e) {
		    forget(id);
		    try {
			    handler(e ? nullptr : &reply, e);
		    } catch (const sdbus::Error& x) {
			    failed(x.getMessage().c_str());
		    } catch (const std::exception& x) {
			    failed(x.what());
		    }
	    },
	    uint64_t(timeout.count()));
	track(id, std::move(group), std::move(call));
}

void CallSet::track(uint64_t id, std::string group, sdbus::PendingAsyncCall call) {
	// A reply can only arrive from a later dispatch, so the entry always exists before it.
	calls_.emplace(id, Entry{std::move(group), AsyncCall(std::move(call))});
}

void CallSet::forget(uint64_t id) {
	auto it = calls_.find(id);
	if (it == calls_.end()) return;
	it->second.call.release();
	calls_.erase(it);
}

void CallSet::failed(const char* what) const {
	// A reply that did not have the shape the handler expected (a peer sending garbage), or a
	// bug in the handler: log it; the loop goes on.
	log::warning(component_, "a D-Bus reply could not be handled: {}", what);
}

template <typename Pred>
void CallSet::cancelIf(Pred pred) {
	// Cancelling destroys handlers, whose captures (a responder, say) may answer a client and
	// re-enter this set: take the doomed entries out of the map before cancelling any.
	std::vector<AsyncCall> doomed;
	for (auto it = calls_.begin(); it != calls_.end();) {
		if (pred(it->second.group)) {
			doomed.push_back(std::move(it->second.call));
			it = calls_.erase(it);
		} else {
			++it;
		}
	}
	for (auto& c: doomed) c.cancel();
}

void CallSet::cancel(std::string_view group) {
	cancelIf([&](const std::string& g) { return g == group; });
}

void CallSet::cancelPrefix(std::string_view prefix) {
	cancelIf([&](const std::string& g) { return std::string_view(g).substr(0, prefix.size()) == prefix; });
}

void CallSet::cancelAll() {
	cancelIf([](const std::string&) { return true; });
}

size_t CallSet::count(std::string_view group) const {
	size_t n = 0;
	for (const auto& [_, e]: calls_)
		if (e.group == group) ++n;
	return n;
}

} // namespace qsd::dbus
