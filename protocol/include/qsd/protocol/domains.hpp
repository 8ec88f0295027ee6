#pragma once
// Which backend writes which top-level domain of the tree (docs/tree.md). A client holds a
// domain's last values across a reconnect while its backend is "starting" (the QML client's
// restartGraceMs, `qsctl watch --reconnect`): one table for both clients, checked against the
// daemon's backends by a unit test, so that a new backend cannot be left out of one of them.

#include <array>
#include <string_view>

namespace qsd {

struct DomainBackend {
	std::string_view domain;
	std::string_view backend;
};

inline constexpr std::array<DomainBackend, 8> kDomainBackends{{
    {"network", "nm"},
    {"power", "upower"},
    {"audio", "pipewire"},
    {"tray", "tray"},
    {"wayland", "wayland"},
    {"media", "mpris"},
    {"notifications", "notifications"},
    {"bluetooth", "bluetooth"},
}};

// The backend that writes `domain` ("network" -> "nm"); empty for the daemon's own domains.
constexpr std::string_view backendOfDomain(std::string_view domain) {
	for (const auto& entry: kDomainBackends)
		if (entry.domain == domain) return entry.backend;
	return {};
}

} // namespace qsd
