#pragma once
// What one D-Bus connection may register with qsd's StatusNotifierWatcher, and how often qsd
// says so in the log. Any process on the session bus can call the watcher: without these
// bounds, RegisterStatusNotifierHost with names nobody owns was stored for ever (300 000 calls:
// 98 MiB, as many broadcasts and log lines), and one connection registering 10 000 items took
// qsd to 813 MiB (docs/architecture.md, "Hostile peers"). Pure bookkeeping, unit-tested in
// tests/unit/tray_peers_test.cpp.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace qsd::tray {

// Items counted against one connection: those whose bus names it owns, and those it registered
// for another connection's name (TrayBackend::Item::registrar). A real app has one or two;
// Waybar-style test programs a few dozen.
constexpr size_t kMaxItemsPerConnection = 64;
// Hosts one connection may register: a bar process has one per output (Waybar on four
// monitors registers four).
constexpr size_t kMaxHostsPerConnection = 16;

// The hosts registered with the watcher, keyed by the connection that registered them (its
// unique name): a name nobody owns costs nothing beyond its connection's share, and goes when
// that connection leaves. A host also goes when the name it registered loses its owner.
class HostRegistry {
public:
	enum class Result { Added, Known, TooMany };

	Result add(const std::string& connection, const std::string& name);
	// `name` lost its owner (a connection's unique name: the connection left): the hosts that
	// go, as registered names.
	std::vector<std::string> nameLeft(const std::string& name);
	[[nodiscard]] size_t size() const { return count_; }
	[[nodiscard]] size_t of(const std::string& connection) const;

private:
	std::map<std::string, std::set<std::string>> byConnection_;   // connection -> registered names
	std::map<std::string, std::set<std::string>> byName_;         // registered name -> connections
	size_t count_ = 0;
};

} // namespace qsd::tray
