// NetworkManager backend: every saved connection, whatever its type (/network/profiles/<uuid>),
// with the state of its active connection, and /network/vpnActive. Rebuilt in the publishing
// pass whenever a profile or an active connection changed, and written as differences.

#include "nm_backend.hpp"

#include <qsd/protocol/mirror.hpp>

namespace qsd::nm {

namespace {
// The order in which an active connection stands for its profile when there are several (a
// multi-connect profile): the one that is up first.
int rank(const std::string& state) {
	if (state == "connected") return 0;
	if (state == "connecting") return 1;
	if (state == "disconnecting") return 2;
	return 3;
}
} // namespace

std::string NmBackend::activeConnectionOf(const std::string& profilePath) {
	std::string best;
	int bestRank = 4;
	for (const auto& [path, ifaces]: cache_->objects()) {
		if (!ifaces.count(kAcIface) || getString(path, kAcIface, "Connection").value_or("") != profilePath) continue;
		auto state = nm::activeStateName(uint32_t(getUint(path, kAcIface, "State").value_or(0)));
		if (state == "disconnected") continue;
		if (int r = rank(state); r < bestRank) {
			best = path;
			bestRank = r;
		}
	}
	return best;
}

json NmBackend::buildProfiles(bool& vpnActive) {
	vpnActive = false;
	// Active connections by profile path: the one that is up first.
	struct Ac {
		std::string state;
		json device = nullptr;
		bool isDefault = false;
	};
	std::map<std::string, Ac> active;
	for (const auto& [path, ifaces]: cache_->objects()) {
		if (!ifaces.count(kAcIface)) continue;
		auto profile = getString(path, kAcIface, "Connection");
		if (!profile || !profiles_.count(*profile)) continue;
		Ac ac;
		ac.state = nm::activeStateName(uint32_t(getUint(path, kAcIface, "State").value_or(0)));
		if (ac.state == "disconnected") continue;
		for (const auto& dev: getStrings(path, kAcIface, "Devices").value_or(std::vector<std::string>{}))
			if (auto k = keyOfPath_.find(dev); k != keyOfPath_.end()) {
				ac.device = k->second;
				break;
			}
		ac.isDefault = getBool(path, kAcIface, "Default").value_or(false) || getBool(path, kAcIface, "Default6").value_or(false);
		auto it = active.find(*profile);
		if (it == active.end() || rank(ac.state) < rank(it->second.state)) active[*profile] = std::move(ac);
	}
	json out = json::object();
	for (const auto& [path, p]: profiles_) {
		const auto& info = p.info;
		if (!p.done || info.uuid.empty()) continue;
		auto vpn = nm::vpnServiceName(info.type, info.vpnServiceType);
		auto a = active.find(path);
		bool isActive = a != active.end();
		json prof = {{"id", info.id},
		             {"uuid", info.uuid},
		             {"type", nm::profileTypeName(info.type)},
		             {"vpnService", vpn ? json(*vpn) : json(nullptr)},
		             {"autoconnect", info.autoconnect},
		             {"interfaceName", info.interfaceName.empty() ? json(nullptr) : json(info.interfaceName)},
		             {"timestamp", info.timestamp ? json(info.timestamp) : json(nullptr)},
		             {"active", isActive},
		             {"state", isActive ? a->second.state : "disconnected"},
		             {"device", isActive ? a->second.device : json(nullptr)},
		             {"default", isActive && a->second.isDefault}};
		if ((info.type == "vpn" || info.type == "wireguard") && isActive && a->second.state == "connected") vpnActive = true;
		out[info.uuid] = std::move(prof);
	}
	return out;
}

void NmBackend::publishProfiles() {
	bool vpnActive = false;
	auto profiles = buildProfiles(vpnActive);
	syncDiff(kProfiles, profilesPublished_, profiles);
	profilesPublished_ = std::move(profiles);
	if (vpnActive != vpnActivePublished_) {
		context_.tree.set(std::string(kRoot) + "/vpnActive", vpnActive);
		vpnActivePublished_ = vpnActive;
	}
}

} // namespace qsd::nm
