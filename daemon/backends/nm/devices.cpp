// NetworkManager backend: the tree. /network's own fields, devices, IP details and wired
// networks, written as per-field differences from what was last published.

#include "nm_backend.hpp"

#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <set>

namespace qsd::nm {

// ---------------------------------------------------------------------------------------------
// tree

void NmBackend::schedulePublish() {
	if (ready_ && publisher_) publisher_.setEnabled(SD_EVENT_ONESHOT);
}

void NmBackend::publish() {
	if (!ready_) return;
	if (dirtyRoot_ || dirtyAll_) publishRoot();
	publishDevices(dirtyAll_);
	// After the devices: a profile names its device by the key they were published under.
	if (dirtyRoot_ || dirtyAll_) publishProfiles();
	dirtyAll_ = dirtyRoot_ = false;
	dirtyDevices_.clear();
}

void NmBackend::publishRoot() {
	json root;
	auto b = [&](const char* name) -> json {
		auto v = getBool(kNmPath, kNmIface, name);
		return v ? json(*v) : json(nullptr);
	};
	root["wifiEnabled"] = b("WirelessEnabled");
	root["wifiHardwareEnabled"] = b("WirelessHardwareEnabled");
	root["networkingEnabled"] = b("NetworkingEnabled");
	// Older NetworkManager (and python-dbusmock) lack the connectivity-check properties.
	root["canCheckConnectivity"] = b("ConnectivityCheckAvailable").is_boolean() ? b("ConnectivityCheckAvailable") : json(false);
	root["connectivityCheckEnabled"] = b("ConnectivityCheckEnabled").is_boolean() ? b("ConnectivityCheckEnabled") : json(false);
	auto c = getUint(kNmPath, kNmIface, "Connectivity");
	root["connectivity"] = nm::connectivityName(uint32_t(c.value_or(0)));
	root["version"] = getString(kNmPath, kNmIface, "Version").value_or("");
	context_.tree.update(kRoot, root);
}

void NmBackend::publishDevices(bool all) {
	std::set<std::string> paths;
	if (all) {
		for (const auto& [path, ifaces]: cache_->objects())
			if (ifaces.count(kDevIface)) paths.insert(path);
		// Devices that are gone.
		for (const auto& [path, _]: keyOfPath_)
			if (!props(path, kDevIface)) paths.insert(path);
	} else {
		paths = dirtyDevices_;
	}
	// Removals and renames first, so that a key they free is there for a device built below.
	std::vector<std::pair<std::string, std::pair<json, DevModel>>> built;
	bool freed = false;
	for (const auto& path: paths) {
		auto b = buildDevice(path);
		auto old = keyOfPath_.find(path);
		if (old != keyOfPath_.end() && (!b || b->second.key != old->second)) {
			unpublishDevice(path);
			freed = true;
		}
		if (b) built.emplace_back(path, std::move(*b));
		else shadowed_.erase(path);
	}
	for (auto& [path, b]: built) publishDevice(path, std::move(b.first), std::move(b.second));
	// Two devices with one interface name (a NIC renamed while another one appears): the first
	// keeps the key and the other one waits; when the first goes, the other one takes it.
	if (freed) {
		std::vector<std::string> waiting(shadowed_.begin(), shadowed_.end());
		for (const auto& path: waiting)
			if (auto b = buildDevice(path)) publishDevice(path, std::move(b->first), std::move(b->second));
			else shadowed_.erase(path);
	}
	for (auto it = apOwners_.begin(); it != apOwners_.end();)
		it = it->second.empty() ? apOwners_.erase(it) : std::next(it);
}

void NmBackend::unpublishDevice(const std::string& path) {
	auto old = keyOfPath_.find(path);
	if (old == keyOfPath_.end()) return;
	context_.tree.remove(pointer::join(kDevices, old->second));
	devices_.erase(old->second);
	keyOfPath_.erase(old);
	for (auto& [_, owners]: apOwners_) owners.erase(path);
}

void NmBackend::publishDevice(const std::string& path, json value, DevModel model) {
	if (auto other = devices_.find(model.key); other != devices_.end() && other->second.path != path) {
		shadowed_.insert(path);
		return;
	}
	shadowed_.erase(path);
	keyOfPath_[path] = model.key;
	auto devPath = pointer::join(kDevices, model.key);
	if (auto prev = devices_.find(model.key); prev != devices_.end() && !prev->second.published.is_null())
		syncDiff(devPath, prev->second.published, value);
	else
		context_.tree.sync(devPath, value);
	model.published = std::move(value);
	devices_[model.key] = std::move(model);
}

json NmBackend::buildIp(const std::string& configPath, bool v6) {
	json out = {{"addresses", json::array()}, {"gateway", nullptr}, {"dns", json::array()}};
	const char* iface = v6 ? kIp6Iface : kIp4Iface;
	if (configPath.empty() || configPath == "/" || !props(configPath, iface)) return out;
	if (const auto* v = prop(configPath, iface, "AddressData")) {
		auto data = dbus::variantToJson(*v);
		if (data.is_array()) {
			for (const auto& a: data)
				if (a.is_object() && a.contains("address") && a["address"].is_string())
					out["addresses"].push_back({{"address", a["address"]}, {"prefix", a.value("prefix", json(nullptr))}});
		} else {
			reader_.wrongType(configPath, "AddressData", v);
		}
	}
	if (auto gw = getString(configPath, iface, "Gateway"); gw && !gw->empty()) out["gateway"] = *gw;
	if (const auto* v = prop(configPath, iface, "NameserverData"); v && !v6) {
		auto data = dbus::variantToJson(*v);
		if (data.is_array())
			for (const auto& a: data)
				if (a.is_object() && a.contains("address") && a["address"].is_string()) out["dns"].push_back(a["address"]);
	} else if (const auto* ns = prop(configPath, iface, "Nameservers")) {
		if (auto v4 = v6 ? std::nullopt : dbus::as<std::vector<uint32_t>>(*ns)) {
			for (auto a: *v4) out["dns"].push_back(nm::ipv4FromUint(a));
		} else if (auto v6list = v6 ? dbus::as<std::vector<std::vector<uint8_t>>>(*ns) : std::nullopt) {
			for (const auto& a: *v6list)
				if (auto text = nm::ipv6FromBytes(a); !text.empty()) out["dns"].push_back(text);
		} else {
			reader_.wrongType(configPath, "Nameservers", ns);
		}
	}
	return out;
}

std::optional<std::pair<json, NmBackend::DevModel>> NmBackend::buildDevice(const std::string& path) {
	if (!props(path, kDevIface)) return std::nullopt;
	auto type = getUint(path, kDevIface, "DeviceType");
	// Veth (20) is Ethernet to NetworkManager (same settings, Device.Wired interface).
	if (!type || (*type != nm::kDeviceTypeWifi && *type != nm::kDeviceTypeEthernet && *type != nm::kDeviceTypeVeth))
		return std::nullopt;
	if (auto real = getBool(path, kDevIface, "Real"); real && !*real) return std::nullopt;   // placeholders
	auto ifname = getString(path, kDevIface, "Interface");
	if (!ifname || ifname->empty()) return std::nullopt;

	DevModel model;
	model.path = path;
	model.key = *ifname;
	model.wifi = *type == nm::kDeviceTypeWifi;
	json dev;
	dev["type"] = model.wifi ? "wifi" : "wired";
	dev["name"] = *ifname;
	auto address = getString(path, kDevIface, "HwAddress");
	if (!address) address = getString(path, model.wifi ? kWifiIface : kWiredIface, "HwAddress");
	dev["address"] = address ? json(*address) : json(nullptr);
	auto state = getUint(path, kDevIface, "State");
	dev["state"] = nm::deviceStateName(uint32_t(state.value_or(0)));
	dev["connected"] = state && *state == nm::kDeviceStateActivated;
	auto managed = getBool(path, kDevIface, "Managed");
	dev["nmManaged"] = managed ? json(*managed) : json(nullptr);
	auto autoconnect = getBool(path, kDevIface, "Autoconnect");
	if (!autoconnect) autoconnect = getBool(path, kDevIface, "AutoConnect");   // python-dbusmock's spelling
	dev["autoconnect"] = autoconnect ? json(*autoconnect) : json(nullptr);
	dev["ip4"] = buildIp(getString(path, kDevIface, "Ip4Config").value_or(""), false);
	dev["ip6"] = buildIp(getString(path, kDevIface, "Ip6Config").value_or(""), true);

	// The active connection, when NetworkManager has one for this device.
	Active active;
	active.path = getString(path, kDevIface, "ActiveConnection").value_or("/");
	if (active.path != "/" && props(active.path, kAcIface)) {
		active.profile = getString(active.path, kAcIface, "Connection").value_or("");
		active.specific = getString(active.path, kAcIface, "SpecificObject").value_or("");
		active.state = nm::activeStateName(uint32_t(getUint(active.path, kAcIface, "State").value_or(0)));
	} else {
		active.path.clear();
	}

	json networks = json::object();
	if (model.wifi) buildWifi(path, model, dev, networks, active);
	else buildWired(path, model, dev, networks, active);
	dev["networks"] = std::move(networks);
	return std::make_pair(std::move(dev), std::move(model));
}

void NmBackend::buildWired(const std::string& path, DevModel& model, json& dev, json& networks, const Active& active) {
	auto speed = getUint(path, kWiredIface, "Speed");
	dev["linkSpeed"] = speed ? json(*speed) : json(nullptr);
	bool hasLink = false;
	if (auto flags = getUint(path, kDevIface, "InterfaceFlags")) hasLink = *flags & nm::kInterfaceFlagCarrier;
	else hasLink = getBool(path, kWiredIface, "Carrier").value_or(false);   // NetworkManager before 1.22
	dev["hasLink"] = hasLink;
	if (!hasLink) return;

	// A wired device has one network, and its active connection is that network's, whatever the
	// profile's type: PPPoE, a bond or bridge port, a veth profile.
	NetModel net;
	std::set<std::string> seen;
	auto add = [&](const std::string& p, bool anyType) {
		auto it = profiles_.find(p);
		if (it == profiles_.end() || !it->second.done) return;
		const auto& type = it->second.info.type;
		if (!anyType && type != "802-3-ethernet" && type != "veth") return;
		if (seen.insert(p).second) net.profiles.push_back(p);
	};
	if (!active.path.empty()) add(active.profile, true);
	// NetworkManager's own list of what can run here, of any type.
	for (const auto& p: getStrings(path, kDevIface, "AvailableConnections").value_or(std::vector<std::string>{})) add(p, true);
	for (const auto& [ppath, p]: profiles_)
		if (p.info.interfaceName == model.key) add(ppath, false);
	if (!active.path.empty()) {
		net.active = true;
		net.state = active.state;
	}
	sortProfiles(net, active.profile);
	json n;
	n["name"] = model.key;
	n["device"] = model.key;
	n["state"] = net.state;
	n["connected"] = net.state == "connected";
	n["stateChanging"] = net.state == "connecting" || net.state == "disconnecting";
	n["known"] = !net.profiles.empty();
	addProfiles(n, net);
	networks[model.key] = std::move(n);
	model.networks[model.key] = std::move(net);
}

// The reference profile, first: the active one, else the most recently used
// (connection.timestamp), then the others from newest to oldest.
void NmBackend::sortProfiles(NetModel& net, const std::string& activeProfile) {
	// (clang 14 cannot capture a structured binding in a lambda)
	const bool isActive = net.active;
	std::stable_sort(net.profiles.begin(), net.profiles.end(), [&](const std::string& a, const std::string& b) {
		bool aa = isActive && a == activeProfile, ba = isActive && b == activeProfile;
		if (aa != ba) return aa;
		return profiles_[a].info.timestamp > profiles_[b].info.timestamp;
	});
}

// A network's profiles/<uuid> and referenceProfile (the one network.connect activates).
void NmBackend::addProfiles(json& n, const NetModel& net) {
	json profs = json::object();
	json reference = nullptr;
	for (const auto& p: net.profiles) {
		const auto& info = profiles_[p].info;
		if (info.uuid.empty()) continue;
		profs[info.uuid] = {{"id", info.id}, {"uuid", info.uuid}};
		if (reference.is_null()) reference = info.uuid;
	}
	n["profiles"] = std::move(profs);
	n["referenceProfile"] = std::move(reference);
}

// The same, against the value last written there (kept by the backend), so unchanged subtrees
// cost one in-memory comparison instead of a tree lookup per field: an access point's strength
// change touches one leaf of a device with dozens of networks.
void NmBackend::syncDiff(const std::string& path, const json& old, const json& value) {
	if (old == value) return;
	if (!old.is_object() || !value.is_object()) {
		context_.tree.set(path, value);
		return;
	}
	for (const auto& [key, _]: old.items())
		if (!value.contains(key)) context_.tree.remove(pointer::join(path, key));
	for (const auto& [key, v]: value.items()) {
		auto it = old.find(key);
		if (it == old.end()) context_.tree.set(pointer::join(path, key), v);
		else if (*it != v) syncDiff(pointer::join(path, key), *it, v);
	}
}

} // namespace qsd::nm
