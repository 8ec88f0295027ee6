// NetworkManager backend: the network.* methods and the calls behind them.

#include "nm_backend.hpp"

#include "../../log.hpp"

#include "../../server/client.hpp"

#include <set>

namespace qsd::nm {

// ---------------------------------------------------------------------------------------------
// actions

NmBackend::DevModel& NmBackend::device(const Params& p) {
	auto key = p.string("device");
	auto it = devices_.find(key);
	if (it == devices_.end())
		throw RpcException(ErrorCode::NotFound, "No device " + key + " in /network/devices",
		                   {{"param", "device"}, {"device", key}});
	return it->second;
}

NmBackend::NetModel& NmBackend::network(DevModel& dev, const std::string& key) {
	auto it = dev.networks.find(key);
	if (it == dev.networks.end())
		throw RpcException(ErrorCode::NotFound, "No network " + key + " on " + dev.key,
		                   {{"param", "network"}, {"device", dev.key}, {"network", key}});
	return it->second;
}

NmBackend::Profile& NmBackend::profile(const Params& p) {
	auto uuid = p.string("profile");
	for (auto& [_, prof]: profiles_)
		if (prof.done && prof.info.uuid == uuid) return prof;
	throw RpcException(ErrorCode::NotFound, "No profile with uuid " + uuid, {{"param", "profile"}, {"profile", uuid}});
}

void NmBackend::activate(const std::string& profilePath, const DevModel& dev, std::shared_ptr<Answer> answer, json result) {
	std::string devPath = dev.path;
	call(
	    kNmPath, kNmIface, "ActivateConnection",
	    [&](sdbus::MethodCall& m) {
		    m << sdbus::ObjectPath(profilePath) << sdbus::ObjectPath(devPath) << sdbus::ObjectPath("/");
	    },
	    [answer, result](sdbus::MethodReply*, const sdbus::Error* e) {
		    if (e) answer->failed(*e);
		    else answer->result(result);
	    });
}

void NmBackend::addAndActivate(nm::RawSettings settings, const DevModel& dev, const std::string& ap,
                               std::shared_ptr<Answer> answer, json result) {
	std::string devPath = dev.path;
	call(
	    kNmPath, kNmIface, "AddAndActivateConnection",
	    [&](sdbus::MethodCall& m) {
		    m << settings << sdbus::ObjectPath(devPath) << sdbus::ObjectPath(ap.empty() ? "/" : ap);
	    },
	    [answer, result](sdbus::MethodReply*, const sdbus::Error* e) {
		    if (e) answer->failed(*e);
		    else answer->result(result);
	    });
}

namespace {
constexpr const char* kSecurityExpected = R"(one of "open", "owe", "wpaPsk", "wpa2Psk", "sae")";

// 802-11-wireless-security for a new profile: key-mgmt and the key, nothing for open.
void addSecurity(nm::RawSettings& s, nm::Security security, const std::optional<std::string>& psk) {
	auto keyMgmt = nm::keyMgmtFor(security).value_or("");
	if (keyMgmt.empty()) return;
	auto& sec = s["802-11-wireless-security"];
	sec.insert_or_assign("key-mgmt", sdbus::Variant(keyMgmt));
	if (psk) sec.insert_or_assign("psk", sdbus::Variant(*psk));
}

// A key goes with the security types that take one, and only with them.
void checkKeyFits(nm::Security security, const std::optional<std::string>& psk) {
	if (nm::takesPsk(security) && !psk)
		throw RpcException(ErrorCode::InvalidParams, "Invalid params: security " + nm::securityName(security) + " needs a psk",
		                   {{"param", "psk"}, {"expected", "a key for this security"}});
	if (!nm::takesPsk(security) && psk)
		throw RpcException(ErrorCode::InvalidParams,
		                   "Invalid params: security " + nm::securityName(security) + " takes no psk",
		                   {{"param", "psk"}, {"expected", "no psk for this security"}, {"security", nm::securityName(security)}});
}
} // namespace

void NmBackend::connectNetwork(Call& c) {
	auto answer = c.answer();
	const auto& p = c.params();
	auto& dev = device(p);
	auto key = p.string("network");
	auto psk = p.optString("psk");
	bool hidden = p.optBoolean("hidden").value_or(false);
	std::optional<nm::Security> security;
	if (auto name = p.optString("security")) {
		security = nm::securityFromName(*name);
		if (!security || !nm::keyMgmtFor(*security)) Params::fail("security", kSecurityExpected);
	}
	json result = {{"device", dev.key}, {"network", key}};
	// The key's rule depends on the key management it goes with (WPA-PSK or SAE), known only once
	// the security is: checked before anything is called.
	auto checkPsk = [&psk](std::string_view keyMgmt) {
		if (!psk) return;
		if (auto why = nm::pskProblem(*psk, keyMgmt))
			throw RpcException(ErrorCode::InvalidParams, "Invalid params: psk: " + *why,
			                   {{"param", "psk"}, {"expected", nm::pskExpected(keyMgmt)}});
	};

	if (!dev.wifi) {
		if (psk || hidden || security)
			Params::fail(psk ? "psk" : hidden ? "hidden" : "security",
			             "nothing: a wired network takes no psk or security and is never hidden");
		auto& net = network(dev, key);
		// Already connected: answered at once. Activating again would take the link down and up.
		if (net.active && net.state == "connected") return answer->result(result);
		if (!net.profiles.empty()) return activate(net.profiles.front(), dev, answer, result);
		nm::RawSettings s;
		s["connection"].emplace("type", sdbus::Variant(std::string("802-3-ethernet")));
		s["connection"].emplace("id", sdbus::Variant(dev.key));
		s["connection"].emplace("interface-name", sdbus::Variant(dev.key));
		return addAndActivate(std::move(s), dev, "", answer, result);
	}

	auto it = dev.networks.find(key);
	if (it == dev.networks.end() || (hidden && it->second.refAp.empty() && it->second.profiles.empty())) {
		if (!hidden) network(dev, key);   // throws NotFound
		// A hidden network: NetworkManager probes for the SSID. Nothing tells its security, so it
		// is the caller's `security`, else WPA2/WPA3-transition PSK with a key and open without.
		auto ssid = nm::ssidFromKey(key);
		if (ssid.empty() || ssid.size() > 32) Params::fail("network", "an SSID of 1..32 bytes");
		auto sec = security.value_or(psk ? nm::Security::Wpa2Psk : nm::Security::Open);
		checkKeyFits(sec, psk);
		checkPsk(nm::keyMgmtFor(sec).value_or(""));
		nm::RawSettings s;
		s["802-11-wireless"].emplace("ssid", sdbus::Variant(ssid));
		s["802-11-wireless"].emplace("hidden", sdbus::Variant(true));
		addSecurity(s, sec, psk);
		return addAndActivate(std::move(s), dev, "", answer, result);
	}
	auto& net = it->second;
	if (!psk && !security) {
		if (net.active && net.state == "connected") return answer->result(result);
		if (!net.profiles.empty()) return activate(net.profiles.front(), dev, answer, result);
		if (net.refAp.empty())
			throw RpcException(ErrorCode::NotFound, "Network " + key + " is not in range and has no saved profile",
			                   {{"param", "network"}, {"device", dev.key}, {"network", key}});
		return addAndActivate({}, dev, net.refAp, answer, result);
	}
	// The security the caller names, else the network's own (from its profile or access point).
	auto sec = security.value_or(net.security == nm::Security::Unknown ? nm::Security::Wpa2Psk : net.security);
	if (!security && psk && !nm::takesPsk(net.security) && net.security != nm::Security::Unknown)
		throw RpcException(ErrorCode::InvalidParams,
		                   "Invalid params: network " + key + " uses " + nm::securityName(net.security) + ", which takes no psk",
		                   {{"param", "psk"}, {"expected", "no psk for this network"}, {"security", nm::securityName(net.security)}});
	checkKeyFits(sec, psk);
	if (!net.profiles.empty()) {
		// Update the reference profile with the key (and the key management when it has none),
		// then activate it.
		auto path = net.profiles.front();
		const auto& saved = profiles_[path];
		auto keyMgmt = nm::keyMgmtFor(sec).value_or("wpa-psk");
		if (const auto& s = saved.info.security; s.is_object())
			if (auto it = s.find("key-mgmt"); it != s.end() && it->is_string()) keyMgmt = it->get<std::string>();
		checkPsk(keyMgmt);
		auto merged = saved.raw;
		if (psk) {
			auto& s = merged["802-11-wireless-security"];
			if (!s.count("key-mgmt")) s.emplace("key-mgmt", sdbus::Variant(nm::keyMgmtFor(sec).value_or("wpa-psk")));
			s.insert_or_assign("psk", sdbus::Variant(*psk));
		}
		std::string devKey = dev.key;
		call(
		    path, kConnIface, "Update", [&](sdbus::MethodCall& m) { m << merged; },
		    [this, answer, result, path, devKey](sdbus::MethodReply*, const sdbus::Error* e) {
			    if (e) return answer->failed(*e);
			    auto d = devices_.find(devKey);
			    if (d == devices_.end()) return answer->error(ErrorCode::NotFound, "The device went away", {{"param", "device"}});
			    activate(path, d->second, answer, result);
		    });
		return;
	}
	if (net.refAp.empty())
		throw RpcException(ErrorCode::NotFound, "Network " + key + " is not in range and has no saved profile",
		                   {{"param", "network"}, {"device", dev.key}, {"network", key}});
	checkPsk(nm::keyMgmtFor(sec).value_or(""));
	nm::RawSettings s;
	addSecurity(s, sec, psk);
	addAndActivate(std::move(s), dev, net.refAp, answer, result);
}

std::span<const Backend::Method> NmBackend::methods() const {
	static constexpr Method table[] = {
	    method<&NmBackend::setWifiEnabled>("network.setWifiEnabled"),
	    method<&NmBackend::setConnectivityCheckEnabled>("network.setConnectivityCheckEnabled"),
	    method<&NmBackend::checkConnectivity>("network.checkConnectivity"),
	    method<&NmBackend::disconnectDevice>("network.disconnectDevice"),
	    method<&NmBackend::setAutoconnect>("network.setAutoconnect"),
	    method<&NmBackend::setManaged>("network.setManaged"),
	    method<&NmBackend::setScannerEnabled>("network.setScannerEnabled"),
	    method<&NmBackend::connectNetwork>("network.connect"),
	    method<&NmBackend::connectProfile>("network.connectProfile"),
	    method<&NmBackend::disconnectNetwork>("network.disconnect"),
	    method<&NmBackend::forget>("network.forget"),
	    method<&NmBackend::getProfile>("network.getProfile"),
	    method<&NmBackend::updateProfile>("network.updateProfile"),
	    method<&NmBackend::clearSecrets>("network.clearSecrets"),
	    method<&NmBackend::deleteProfile>("network.deleteProfile"),
	    method<&NmBackend::activateProfile>("network.activateProfile"),
	    method<&NmBackend::deactivateProfile>("network.deactivateProfile"),
	    // The claim is the client's, whether or not NetworkManager is there now.
	    method<&NmBackend::handleSecrets>("network.handleSecrets", false),
	    method<&NmBackend::answerSecrets>("network.answerSecrets"),
	    method<&NmBackend::cancelSecrets>("network.cancelSecrets"),
	};
	return table;
}

namespace {
// The answer of a call whose reply carries nothing: `result` when it succeeded.
auto answerWith(std::shared_ptr<Answer> a, json result) {
	return [a = std::move(a), result = std::move(result)](sdbus::MethodReply*, const sdbus::Error* e) {
		if (e) a->failed(*e);
		else a->result(result);
	};
}
} // namespace

void NmBackend::setWifiEnabled(Call& c) {
	bool on = c.params().boolean("enabled");
	setProperty(kNmPath, kNmIface, "WirelessEnabled", sdbus::Variant(on), c.answer(), {{"enabled", on}});
}

void NmBackend::setConnectivityCheckEnabled(Call& c) {
	bool on = c.params().boolean("enabled");
	setProperty(kNmPath, kNmIface, "ConnectivityCheckEnabled", sdbus::Variant(on), c.answer(), {{"enabled", on}});
}

void NmBackend::checkConnectivity(Call& c) {
	call(kNmPath, kNmIface, "CheckConnectivity", {}, [a = c.answer()](sdbus::MethodReply* r, const sdbus::Error* e) {
		if (e) return a->failed(*e);
		uint32_t connectivity = 0;
		*r >> connectivity;
		a->result({{"connectivity", nm::connectivityName(connectivity)}});
	});
}

void NmBackend::disconnectDevice(Call& c) {
	auto& dev = device(c.params());
	call(dev.path, kDevIface, "Disconnect", {}, answerWith(c.answer(), {{"device", dev.key}}));
}

void NmBackend::setAutoconnect(Call& c) {
	auto& dev = device(c.params());
	bool on = c.params().boolean("autoconnect");
	setProperty(dev.path, kDevIface, "Autoconnect", sdbus::Variant(on), c.answer(), {{"device", dev.key}, {"autoconnect", on}});
}

void NmBackend::setManaged(Call& c) {
	auto& dev = device(c.params());
	bool on = c.params().boolean("managed");
	setProperty(dev.path, kDevIface, "Managed", sdbus::Variant(on), c.answer(), {{"device", dev.key}, {"managed", on}});
}

void NmBackend::setScannerEnabled(Call& c) {
	auto& dev = device(c.params());
	bool on = c.params().boolean("enabled");
	if (!dev.wifi) Params::fail("device", "a Wi-Fi device");
	std::string leaseKey = "network.scan." + dev.key;
	if (on) {
		auto id = nextScanToken_++;
		scanners_[dev.key].holders.insert(id);
		// Replacing an earlier lease of this client releases that one.
		grantLease(c.client(), leaseKey, [this, device = dev.key, id] { scanReleased(device, id); });
		scannerChanged(dev.key);
	} else {
		revokeLease(c.client(), leaseKey);
	}
	c.result({{"device", dev.key}, {"enabled", on}});
}

void NmBackend::connectProfile(Call& c) {
	auto& dev = device(c.params());
	auto& prof = profile(c.params());
	activate(prof.path, dev, c.answer(), {{"device", dev.key}, {"profile", prof.info.uuid}});
}

void NmBackend::disconnectNetwork(Call& c) {
	const auto& p = c.params();
	auto& dev = device(p);
	auto key = p.string("network");
	auto& net = network(dev, key);
	if (!net.active)
		throw RpcException(ErrorCode::InvalidParams, "Invalid params: network " + key + " is not active on " + dev.key,
		                   {{"param", "network"}, {"expected", "the network that is active on the device"}});
	// As Quickshell: Device.Disconnect (which also stops autoconnect until the next activation).
	call(dev.path, kDevIface, "Disconnect", {}, answerWith(c.answer(), {{"device", dev.key}, {"network", key}}));
}

void NmBackend::forget(Call& c) {
	const auto& p = c.params();
	auto key = p.string("network");
	auto devKey = p.optString("device");
	if (devKey) (void)device(p);
	std::set<std::string> paths;
	for (auto& [k, dev]: devices_) {
		if (devKey && k != *devKey) continue;
		auto it = dev.networks.find(key);
		if (it != dev.networks.end()) paths.insert(it->second.profiles.begin(), it->second.profiles.end());
	}
	if (paths.empty())
		throw RpcException(ErrorCode::NotFound, "No saved profile for network " + key, {{"param", "network"}, {"network", key}});
	auto a = c.answer();
	auto remaining = std::make_shared<size_t>(paths.size());
	json uuids = json::array();
	for (const auto& path: paths) uuids.push_back(profiles_[path].info.uuid);
	json result = {{"network", key}, {"profiles", uuids}};
	for (const auto& path: paths)
		call(path, kConnIface, "Delete", {}, [a, remaining, result](sdbus::MethodReply*, const sdbus::Error* e) {
			if (e) a->failed(*e);
			if (--*remaining == 0) a->result(result);
		});
}

void NmBackend::getProfile(Call& c) {
	auto& prof = profile(c.params());
	std::string path = prof.path;
	call(path, kConnIface, "GetSettings", {}, [this, a = c.answer(), path](sdbus::MethodReply* r, const sdbus::Error* e) {
		if (e) return a->failed(*e);
		nm::RawSettings raw;
		*r >> raw;
		auto info = nm::profileInfo(raw);
		a->result({{"id", info.id}, {"uuid", info.uuid}, {"type", info.type}, {"settings", nm::settingsToJson(raw)}});
		// Keep the cache in step (an Updated signal may still be on its way).
		if (auto it = profiles_.find(path); it != profiles_.end()) {
			it->second.raw = std::move(raw);
			it->second.info = std::move(info);
		}
	});
}

void NmBackend::updateProfile(Call& c) {
	const auto& p = c.params();
	auto& prof = profile(p);
	const auto& changes = p.object("settings");
	for (const auto& [group, keys]: changes.items())
		if (keys.is_object())
			for (const auto& [key, _]: keys.items())
				if (group == "connection" && (key == "uuid" || key == "type"))
					Params::fail("settings", "changes that keep connection.uuid and connection.type");
	auto merged = nm::mergeSettings(prof.raw, changes);
	call(
	    prof.path, kConnIface, "Update", [&](sdbus::MethodCall& m) { m << merged; },
	    answerWith(c.answer(), {{"profile", prof.info.uuid}}));
}

void NmBackend::clearSecrets(Call& c) {
	auto& prof = profile(c.params());
	call(prof.path, kConnIface, "ClearSecrets", {}, answerWith(c.answer(), {{"profile", prof.info.uuid}}));
}

void NmBackend::deleteProfile(Call& c) {
	auto& prof = profile(c.params());
	call(prof.path, kConnIface, "Delete", {}, answerWith(c.answer(), {{"profile", prof.info.uuid}}));
}

void NmBackend::activateProfile(Call& c) {
	const auto& p = c.params();
	auto& prof = profile(p);
	json result = {{"profile", prof.info.uuid}};
	std::string devPath = "/";   // NetworkManager picks the device (a VPN needs none)
	if (p.optString("device")) {
		auto& dev = device(p);
		devPath = dev.path;
		result["device"] = dev.key;
	}
	std::string path = prof.path;
	call(
	    kNmPath, kNmIface, "ActivateConnection",
	    [&](sdbus::MethodCall& m) { m << sdbus::ObjectPath(path) << sdbus::ObjectPath(devPath) << sdbus::ObjectPath("/"); },
	    answerWith(c.answer(), result));
}

void NmBackend::deactivateProfile(Call& c) {
	auto& prof = profile(c.params());
	json result = {{"profile", prof.info.uuid}};
	auto ac = activeConnectionOf(prof.path);
	if (ac.empty()) return c.result(result);   // not active: nothing to do
	call(
	    kNmPath, kNmIface, "DeactivateConnection", [&](sdbus::MethodCall& m) { m << sdbus::ObjectPath(ac); },
	    answerWith(c.answer(), result));
}

} // namespace qsd::nm
