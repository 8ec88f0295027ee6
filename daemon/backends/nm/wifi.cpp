// NetworkManager backend: Wi-Fi networks (access points grouped by SSID, saved profiles in
// range or not), the Strength shortcut, and the scanner clients hold.

#include "nm_backend.hpp"

#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <time.h>

namespace qsd::nm {

// An access point's Strength changed: update its field and its network's signalStrength
// directly. Anything less simple (a pending rebuild, a new reference AP of a network whose
// security comes from the AP) answers false, and the caller marks the device dirty instead.
bool NmBackend::strengthChanged(const std::string& apPath) {
	if (!ready_ || dirtyAll_) return false;
	auto owners = apOwners_.find(apPath);
	if (owners == apOwners_.end() || owners->second.empty()) return false;
	auto strength = getUint(apPath, kApIface, "Strength");
	if (!strength) return false;
	for (const auto& devPath: owners->second)
		if (dirtyDevices_.count(devPath) || !keyOfPath_.count(devPath)) return false;
	auto bssid = getString(apPath, kApIface, "HwAddress").value_or("");
	if (bssid.empty()) bssid = nmLastComponent(apPath);
	for (const auto& devPath: owners->second) {
		auto& dev = devices_[keyOfPath_[devPath]];
		NetModel* net = nullptr;
		std::string key;
		for (auto& [k, n]: dev.networks)
			if (std::find(n.aps.begin(), n.aps.end(), apPath) != n.aps.end()) {
				net = &n;
				key = k;
				break;
			}
		if (!net) return false;
		auto& pubNets = dev.published["networks"];
		auto pubNet = pubNets.find(key);
		if (pubNet == pubNets.end() || !(*pubNet)["accessPoints"].contains(bssid)) return false;
		// The reference AP: the active one stays; otherwise the strongest.
		std::string ref = net->refAp;
		int64_t refStrength = -1;
		if (!net->refActive) {
			for (const auto& ap: net->aps) {
				auto s = getUint(ap, kApIface, "Strength");
				if (s && int64_t(*s) > refStrength) {
					ref = ap;
					refStrength = int64_t(*s);
				}
			}
		}
		if (ref != net->refAp && net->profiles.empty()) return false;   // security may follow the AP
		net->refAp = ref;
		auto rs = ref.empty() ? std::nullopt : getUint(ref, kApIface, "Strength");
		json signal = rs ? nm::fraction(int64_t(*rs)) : 0.0;
		json value = nm::fraction(int64_t(*strength));
		auto netPath = pointer::join(pointer::join(pointer::join(kDevices, dev.key), "networks"), key);
		context_.tree.set(pointer::join(pointer::join(pointer::join(netPath, "accessPoints"), bssid), "strength"), value);
		context_.tree.set(pointer::join(netPath, "signalStrength"), signal);
		(*pubNet)["accessPoints"][bssid]["strength"] = std::move(value);
		(*pubNet)["signalStrength"] = std::move(signal);
	}
	return true;
}


void NmBackend::buildWifi(const std::string& path, DevModel& model, json& dev, json& networks, const Active& active) {
	auto caps = uint32_t(getUint(path, kWifiIface, "WirelessCapabilities").value_or(0));
	auto mode = uint32_t(getUint(path, kWifiIface, "Mode").value_or(0));
	dev["mode"] = nm::wifiModeName(mode);
	auto sc = scanners_.find(model.key);
	dev["scannerEnabled"] = sc != scanners_.end() && !sc->second.holders.empty();
	std::string activeAp = getString(path, kWifiIface, "ActiveAccessPoint").value_or("/");
	if ((activeAp == "/" || activeAp.empty()) && props(active.specific, kApIface)) activeAp = active.specific;

	// Access points grouped by SSID (infrastructure mode, non-empty SSID only). The owner
	// index is rebuilt for this device, so APs that went away do not pile up in it.
	for (auto& [_, owners]: apOwners_) owners.erase(path);
	std::map<std::string, std::vector<std::string>> apsOf;
	for (const auto& ap: getStrings(path, kWifiIface, "AccessPoints").value_or(std::vector<std::string>{})) {
		if (!props(ap, kApIface)) continue;
		apOwners_[ap].insert(path);
		auto ssid = getBytes(ap, kApIface, "Ssid");
		if (!ssid || ssid->empty()) continue;
		if (auto apMode = getUint(ap, kApIface, "Mode"); apMode && *apMode != nm::kWifiModeInfra) continue;
		auto key = nm::ssidKey(*ssid);
		apsOf[key].push_back(ap);
		model.networks[key].ssid = *ssid;
	}
	// Saved Wi-Fi profiles this device can use, in range or not.
	for (const auto& [ppath, p]: profiles_) {
		const auto& info = p.info;
		if (!p.done || info.type != "802-11-wireless" || !info.ssid || info.ssid->empty()) continue;
		if (!info.wifiMode.empty() && info.wifiMode != "infrastructure") continue;
		if (!info.interfaceName.empty() && info.interfaceName != model.key) continue;
		auto key = nm::ssidKey(*info.ssid);
		auto& net = model.networks[key];
		net.ssid = *info.ssid;
		net.profiles.push_back(ppath);
	}
	// The network of the active connection: its profile's SSID, else the active AP's (a
	// profile of another kind, an access point mode profile).
	std::string activeKey;
	if (!active.path.empty()) {
		activeKey = networkKeyOfProfile(active.profile, model.key);
		if (activeKey.empty() && props(activeAp, kApIface))
			if (auto ssid = getBytes(activeAp, kApIface, "Ssid")) activeKey = nm::ssidKey(*ssid);
		if (!activeKey.empty()) model.networks[activeKey].ssid = nm::ssidFromKey(activeKey);
	}
	for (auto& [key, net]: model.networks) {
		if (key == activeKey) {
			net.active = true;
			net.state = active.state;
		}
		sortProfiles(net, active.profile);
		networks[key] = buildNetwork(model, net, apsOf[key], activeAp, caps, mode == 1);
	}
}

json NmBackend::buildNetwork(const DevModel& dev, NetModel& net, const std::vector<std::string>& aps,
                             const std::string& activeAp, uint32_t caps, bool adhoc) {
	json n;
	n["name"] = nm::ssidName(net.ssid);
	n["ssidHex"] = nm::hex(net.ssid);
	n["device"] = dev.key;
	n["state"] = net.state;
	n["connected"] = net.state == "connected";
	n["stateChanging"] = net.state == "connecting" || net.state == "disconnecting";
	n["known"] = !net.profiles.empty();
	n["visible"] = !aps.empty();

	// Reference access point: the active one, else the strongest.
	json apsJson = json::object();
	int64_t best = -1;
	net.aps = aps;
	net.refActive = false;
	for (const auto& ap: aps) {
		auto strength = getUint(ap, kApIface, "Strength");
		auto bssid = getString(ap, kApIface, "HwAddress").value_or("");
		if (bssid.empty()) bssid = nmLastComponent(ap);
		auto freq = getUint(ap, kApIface, "Frequency");
		auto rate = getUint(ap, kApIface, "MaxBitrate");
		apsJson[bssid] = {{"bssid", bssid},
		                  {"frequency", freq ? json(*freq) : json(nullptr)},
		                  {"band", freq ? json(nm::bandName(uint32_t(*freq))) : json("unknown")},
		                  {"maxBitrate", rate ? json(*rate) : json(nullptr)},
		                  {"strength", strength ? json(nm::fraction(int64_t(*strength))) : json(nullptr)},
		                  {"active", ap == activeAp}};
		if (ap == activeAp) {
			net.refAp = ap;
			net.refActive = true;
			best = 1000;
		} else if (strength && int64_t(*strength) > best) {
			net.refAp = ap;
			best = int64_t(*strength);
		} else if (net.refAp.empty()) {
			net.refAp = ap;
		}
	}
	auto refStrength = net.refAp.empty() ? std::nullopt : getUint(net.refAp, kApIface, "Strength");
	n["signalStrength"] = refStrength ? nm::fraction(int64_t(*refStrength)) : 0.0;
	n["accessPoints"] = std::move(apsJson);

	if (!net.profiles.empty()) {
		net.security = nm::securityFromSettings(profiles_[net.profiles.front()].info.security);
	} else if (!net.refAp.empty()) {
		net.security = nm::securityFromAp(caps, adhoc, uint32_t(getUint(net.refAp, kApIface, "Flags").value_or(0)),
		                                  uint32_t(getUint(net.refAp, kApIface, "WpaFlags").value_or(0)),
		                                  uint32_t(getUint(net.refAp, kApIface, "RsnFlags").value_or(0)));
	} else {
		net.security = nm::Security::Unknown;
	}
	n["security"] = nm::securityName(net.security);
	addProfiles(n, net);
	return n;
}

void NmBackend::scanReleased(const std::string& device, uint64_t id) {
	auto it = scanners_.find(device);
	if (it == scanners_.end()) return;
	it->second.holders.erase(id);
	scannerChanged(device);
}

void NmBackend::scannerChanged(const std::string& device) {
	auto it = scanners_.find(device);
	if (it == scanners_.end()) return;
	auto& s = it->second;
	if (s.holders.empty()) {
		scanners_.erase(it);
	} else if (ready_ && !s.timer) {
		s.timer = context_.loop.addIdleTimer([this, device] { scanTick(device); }, "nm-scan");
		scanTick(device);
	}
	if (ready_) {
		auto d = devices_.find(device);
		if (d != devices_.end()) {
			dirtyDevices_.insert(d->second.path);
			schedulePublish();
		}
	}
}

// Requests a scan when one is due, then checks again when the next one will be: the interval
// after NetworkManager's last scan (LastScan) or qsd's last request, whichever is newer, as
// Quickshell does. A scan that happened anyway — NetworkManager's own, another program's — is
// not asked for again, and NetworkManager's rate limit for scan requests is never hit.
void NmBackend::scanTick(const std::string& device) {
	auto it = scanners_.find(device);
	if (it == scanners_.end() || !ready_) return;
	std::optional<int64_t> lastScan;
	if (auto d = devices_.find(device); d != devices_.end()) lastScan = getInt(d->second.path, kWifiIface, "LastScan");
	timespec ts{};
	clock_gettime(CLOCK_BOOTTIME, &ts);   // LastScan's clock
	int64_t now = int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
	auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(kScanInterval).count();
	std::optional<int64_t> lastRequest;
	if (auto r = lastScanRequest_.find(device); r != lastScanRequest_.end()) lastRequest = r->second;
	int64_t wait = nm::scanDelayMs(lastScan, lastRequest, now, interval);
	if (wait == 0) {
		if (requestScan(device)) lastScanRequest_[device] = now;
		wait = interval;
	}
	it->second.timer.setTime(context_.loop.now() + uint64_t(wait) * 1000);
}

bool NmBackend::requestScan(const std::string& device) {
	auto d = devices_.find(device);
	if (!ready_ || d == devices_.end() || !d->second.wifi) return false;
	call(
	    d->second.path, kWifiIface, "RequestScan", [](sdbus::MethodCall& m) { m << std::map<std::string, sdbus::Variant>{}; },
	    [device](sdbus::MethodReply*, const sdbus::Error* e) {
		    // NetworkManager refuses scans that come too soon after the last one; not an error.
		    if (e) log::debug("nm", "RequestScan on {}: {}: {}", device, e->getName(), e->getMessage());
	    });
	return true;
}

} // namespace qsd::nm
