#include "peers.hpp"

namespace qsd::tray {

HostRegistry::Result HostRegistry::add(const std::string& connection, const std::string& name) {
	auto& names = byConnection_[connection];
	if (names.count(name)) return Result::Known;
	if (names.size() >= kMaxHostsPerConnection) {
		if (names.empty()) byConnection_.erase(connection);
		return Result::TooMany;
	}
	names.insert(name);
	byName_[name].insert(connection);
	++count_;
	return Result::Added;
}

std::vector<std::string> HostRegistry::nameLeft(const std::string& name) {
	std::vector<std::string> gone;
	// The connection itself left: every host it registered.
	if (auto c = byConnection_.find(name); c != byConnection_.end()) {
		for (const auto& registered: c->second) {
			auto n = byName_.find(registered);
			if (n != byName_.end() && n->second.erase(name) && n->second.empty()) byName_.erase(n);
			gone.push_back(registered);
		}
		byConnection_.erase(c);
	}
	// A registered name lost its owner: the hosts registered under it.
	if (auto n = byName_.find(name); n != byName_.end()) {
		for (const auto& connection: n->second) {
			auto c = byConnection_.find(connection);
			if (c == byConnection_.end()) continue;
			c->second.erase(name);
			if (c->second.empty()) byConnection_.erase(c);
			gone.push_back(name);
		}
		byName_.erase(n);
	}
	count_ -= gone.size();
	return gone;
}

size_t HostRegistry::of(const std::string& connection) const {
	auto c = byConnection_.find(connection);
	return c == byConnection_.end() ? 0 : c->second.size();
}

} // namespace qsd::tray
