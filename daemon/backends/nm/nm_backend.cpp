// NetworkManager backend: life cycle, the bus name, the signals, the object cache and the
// calls (nm_backend.hpp says how the backend is split).

#include "nm_backend.hpp"

#include "../../log.hpp"

#include <algorithm>

namespace qsd::nm {

std::string nmLastComponent(const std::string& path) {
	auto pos = path.rfind('/');
	return pos == std::string::npos ? path : path.substr(pos + 1);
}

// ---------------------------------------------------------------------------------------------
// life cycle

void NmBackend::onBusStart() {
	publisher_ = context_.loop.addDefer([this] { publish(); }, "nm-publish");
	publisher_.setEnabled(SD_EVENT_OFF);
	// Subscribe before enumerating (docs/architecture.md, "Backends"). One match per signal the
	// backend uses besides the cache's, not one for everything under the path: NetworkManager's
	// legacy per-interface PropertiesChanged, Statistics or a mock's MethodCalled would wake the
	// daemon for nothing. sender= a well-known name is resolved by the bus to its current owner,
	// so the matches survive restarts; the handlers check the sender against the cache's owner.
	auto rule = [](const char* iface, const char* member) {
		return fmt::format("type='signal',sender='{}',interface='{}',member='{}',path_namespace='{}'", kNmName, iface, member,
		                   kNmPath);
	};
	match(rule(kDevIface, "StateChanged"), [this](sdbus::Message& m) { onDeviceState(m); }, "Device.StateChanged");
	match(rule(kAcIface, "StateChanged"), [this](sdbus::Message& m) { onActiveState(m); }, "Connection.Active.StateChanged");
	match(rule(kWifiIface, "AccessPointAdded"), [this](sdbus::Message& m) { onAccessPoint(m); }, "AccessPointAdded");
	match(rule(kWifiIface, "AccessPointRemoved"), [this](sdbus::Message& m) { onAccessPoint(m); }, "AccessPointRemoved");
	match(rule(kConnIface, "Updated"), [this](sdbus::Message& m) { onProfileUpdated(m); }, "Settings.Connection.Updated");
	// The agent is exported before NetworkManager learns of it (registerAgent, once its objects
	// are read), so its first call finds it.
	exportAgent();
	// NetworkManager is D-Bus activatable: a session that starts before it (or without it
	// started) starts it, once.
	dbus::ObjectCache::Options options{kNmName, kOmPath, kNmPath, {true, [this] { updateState(); }}, "nm"};
	dbus::ObjectCache::Hooks hooks;
	hooks.appeared = [this](const std::string&) { appeared(); };
	hooks.ready = [this] { snapshot(); };
	hooks.lost = [this] { vanished(); };
	hooks.added = [this](const std::string& path, const std::vector<std::string>& ifaces) { added(path, ifaces); };
	hooks.removed = [this](const std::string& path, const std::vector<std::string>& ifaces) { removed(path, ifaces); };
	hooks.changed = [this](const std::string& path, const std::string& iface, const std::vector<std::string>& names) {
		changed(path, iface, names);
	};
	cache_ = std::make_unique<dbus::ObjectCache>(bus(), calls_, std::move(options), std::move(hooks));
}

void NmBackend::onBusStop() {
	// qsd is stopping: NetworkManager asks the next agent at once instead of waiting.
	secretHolders_.clear();
	std::vector<std::string> ids;
	for (const auto& [id, _]: requests_) ids.push_back(id);
	for (const auto& id: ids) finishRequest(id, "org.freedesktop.NetworkManager.SecretAgent.NoSecrets", "qsd is stopping");
	unregisterAgent();
	agentRetry_.reset();
	agent_.reset();
	cache_.reset();
	scanners_.clear();
	profiles_.clear();
	devices_.clear();
	publisher_.reset();
}

std::optional<Unavailable> NmBackend::availability() const {
	if (!ready_) return Unavailable{kRoot, "NetworkManager is not on the system bus"};
	return std::nullopt;
}

void NmBackend::updateState() {
	if (!cache_) return;
	const auto& name = cache_->name();
	switch (name.status()) {
	case NameWatcher::Status::Present: setState(ready_ ? BackendState::Running : BackendState::Starting); break;
	case NameWatcher::Status::Resolving:
	case NameWatcher::Status::Activating: setState(BackendState::Starting); break;
	case NameWatcher::Status::Absent:
		if (name.activationError().empty()) setState(BackendState::Unavailable, "NetworkManager is not on the system bus");
		else
			setState(BackendState::Unavailable,
			         "NetworkManager is not on the system bus and could not be started: " + name.activationError());
		break;
	}
}

void NmBackend::reset() {
	calls_.cancel({});   // the backend's own calls: pending actions answer BackendUnavailable
	profiles_.clear();
	devices_.clear();
	keyOfPath_.clear();
	apOwners_.clear();
	failures_.clear();
	dirtyAll_ = dirtyRoot_ = false;
	dirtyDevices_.clear();
	ready_ = false;
	reader_.clear();
	for (auto& [_, s]: scanners_) s.timer.reset();
	lastScanRequest_.clear();
	shadowed_.clear();
	profilesPublished_ = json::object();
	vpnActivePublished_ = false;
	// A NetworkManager that left forgot the agent and will not read answers to its calls.
	dropRequests();
	agentRegistered_ = agentRegistering_ = false;
	agentRetry_.reset();
}

void NmBackend::appeared() {
	reset();
	log::info("nm", "NetworkManager is on the system bus ({})", cache_->owner());
	updateState();
}

void NmBackend::snapshot() {
	for (const auto& [path, ifaces]: cache_->objects())
		if (ifaces.count(kConnIface)) added(path, {kConnIface});
	registerAgent();
	maybeReady();
}

void NmBackend::vanished() {
	reset();
	context_.tree.set(kRoot, {{"available", false}});
	log::info("nm", "NetworkManager left the system bus");
	updateState();
}

void NmBackend::maybeReady() {
	if (ready_ || !cache_ || !cache_->ready()) return;
	for (const auto& [_, p]: profiles_)
		if (!p.done) return;
	// Everything read: the whole domain lands in one batch.
	ready_ = true;
	context_.tree.set(kRoot, {{"available", true},
	                          {"backend", "networkmanager"},
	                          {"devices", json::object()},
	                          {"profiles", json::object()},
	                          {"vpnActive", false},
	                          {"secretAgentRegistered", agentRegistered_},
	                          {"secretRequests", requestsJson()}});
	publishRoot();
	publishDevices(true);
	publishProfiles();
	std::vector<std::string> scanning;
	for (const auto& [key, _]: scanners_) scanning.push_back(key);
	for (const auto& key: scanning) scannerChanged(key);
	updateState();
}

// ---------------------------------------------------------------------------------------------
// cache

void NmBackend::added(const std::string& path, const std::vector<std::string>& interfaces) {
	// An AgentManager that comes after the rest (a registration that failed is tried again now).
	if (path == kAgentManagerPath) registerAgent();
	bool isProfile = std::find(interfaces.begin(), interfaces.end(), kConnIface) != interfaces.end();
	if (isProfile && !profiles_.count(path)) {
		profiles_[path].path = path;
		fetchProfile(path);
	}
	markDirty(path);
}

void NmBackend::removed(const std::string& path, const std::vector<std::string>& interfaces) {
	markDirty(path);
	// The whole object is gone (the cache forgot it before this hook): what is kept by its path
	// goes with it. NetworkManager gives every new access point and every device plugged again a
	// new path, so a wrongly typed property's "warned once" entry and a failed device's reason
	// stayed for each one that left (about 180 and 150 bytes, for the session's life).
	if (!cache_->object(path)) {
		reader_.forget(path);
		failures_.erase(path);
	}
	if (std::find(interfaces.begin(), interfaces.end(), kConnIface) != interfaces.end()) {
		profiles_.erase(path);
		dirtyAll_ = true;
		schedulePublish();
		maybeReady();
	}
}

void NmBackend::changed(const std::string& path, const std::string& interface, const std::vector<std::string>& names) {
	// The most frequent change by far: written at once, without rebuilding the device.
	bool strengthOnly = interface == kApIface && names.size() == 1 && names.front() == "Strength";
	if (!strengthOnly || !strengthChanged(path)) markDirty(path);
}

void NmBackend::fetchProfile(const std::string& path) {
	auto& p = profiles_[path];
	p.serial = nextSerial_++;
	p.retry.cancel();   // this read replaces one planned after a timeout
	uint64_t serial = p.serial;
	call(
	    path, kConnIface, "GetSettings", {},
	    [this, path, serial](sdbus::MethodReply* reply, const sdbus::Error* e) {
		    auto it = profiles_.find(path);
		    if (it == profiles_.end() || it->second.serial != serial) return;
		    auto& prof = it->second;
		    if (e && dbus::timedOut(*e)) {
			    // Shown without its settings meanwhile: the rest of /network does not wait.
			    auto delay = prof.retry.schedule(
			        context_.loop,
			        [this, path] {
				        if (profiles_.count(path)) fetchProfile(path);
			        },
			        "nm-profile-reread");
			    if (delay)
				    log::at(prof.retry.level(), "nm", "profile {}: GetSettings did not answer in time; asking again in {} s",
				            path, wholeSeconds(*delay));
			    else
				    log::warning("nm", "profile {}: GetSettings did not answer {} times; asked again on its next Updated", path,
				                 prof.retry.failures() + 1);
		    } else if (e) {
			    // Most often the profile went away between its signal and our call.
			    log::info("nm", "reading profile {} failed: {}", path, e->getName());
		    } else {
			    prof.retry.reset();
			    try {
				    nm::RawSettings raw;
				    *reply >> raw;
				    prof.raw = std::move(raw);
				    prof.info = nm::profileInfo(prof.raw);
			    } catch (const sdbus::Error& x) {
				    log::warning("nm", "profile {}: GetSettings answered with an unexpected type", path);
			    }
		    }
		    prof.done = true;
		    if (ready_) {
			    dirtyAll_ = true;
			    schedulePublish();
		    } else {
			    maybeReady();
		    }
	    },
	    dbus::kBusyTimeout);
}

void NmBackend::onDeviceState(sdbus::Message& msg) {
	if (!cache_->ready() || !cache_->fromOwner(msg)) return;
	uint32_t state = 0, old = 0, reason = 0;
	msg >> state >> old >> reason;
	std::string path = msg.getPath();
	if (state == nm::kDeviceStateFailed) failures_[path] = reason;
	else if (state == nm::kDeviceStateActivated) failures_.erase(path);
}

void NmBackend::onActiveState(sdbus::Message& msg) {
	if (!cache_->ready() || !cache_->fromOwner(msg)) return;
	uint32_t state = 0, reason = 0;
	msg >> state >> reason;
	failureCheck(msg.getPath(), state, reason);
}

void NmBackend::onAccessPoint(sdbus::Message& msg) {
	if (!cache_->ready() || !cache_->fromOwner(msg)) return;
	// NetworkManager also updates the AccessPoints property; this keeps the list right when a
	// signal comes without the property change.
	std::string path = msg.getPath();
	std::string member = msg.getMemberName();
	sdbus::ObjectPath ap;
	msg >> ap;
	auto* wifi = cache_->mutableProperties(path, kWifiIface);
	if (!wifi) return;
	std::vector<std::string> list;
	if (auto v = wifi->find("AccessPoints"); v != wifi->end() && v->second.signature() == "ao") list = *v->second.stringsValue();
	auto pos = std::find(list.begin(), list.end(), ap);
	if (member == "AccessPointAdded" && pos == list.end()) list.push_back(ap);
	else if (member == "AccessPointRemoved" && pos != list.end()) list.erase(pos);
	else return;
	wifi->insert_or_assign("AccessPoints", dbus::Value::texts(std::move(list), 'o'));
	markDirty(path);
}

void NmBackend::onProfileUpdated(sdbus::Message& msg) {
	if (!cache_->ready() || !cache_->fromOwner(msg)) return;
	std::string path = msg.getPath();
	if (profiles_.count(path)) fetchProfile(path);
}

void NmBackend::markDirty(const std::string& path) {
	if (!ready_) return;
	if (path == kNmPath) {
		dirtyRoot_ = true;
	} else if (auto it = apOwners_.find(path); it != apOwners_.end()) {
		dirtyDevices_.insert(it->second.begin(), it->second.end());
		// A new AP of a device is found through the device's AccessPoints change.
	} else if (keyOfPath_.count(path)) {
		dirtyDevices_.insert(path);
	} else {
		// Devices, active connections, IP configs, profiles: rare; rebuild every device.
		dirtyAll_ = true;
	}
	schedulePublish();
}

void NmBackend::failureCheck(const std::string& acPath, uint32_t state, uint32_t reason) {
	// Quickshell's rule: an active connection deactivated because its device disconnected,
	// after the device failed with one of the reasons it maps.
	if (state != nm::kActiveStateDeactivated || reason != nm::kActiveReasonDeviceDisconnected) return;
	auto devices = getStrings(acPath, kAcIface, "Devices");
	if (!devices) return;
	for (const auto& devPath: *devices) {
		auto f = failures_.find(devPath);
		if (f == failures_.end()) continue;
		auto name = nm::failReasonName(f->second);
		failures_.erase(f);
		auto k = keyOfPath_.find(devPath);
		if (!name || k == keyOfPath_.end()) continue;
		std::string network;
		if (auto conn = getString(acPath, kAcIface, "Connection")) network = networkKeyOfProfile(*conn, k->second);
		if (network.empty()) {
			if (auto ap = getString(acPath, kAcIface, "SpecificObject"))
				if (auto ssid = getBytes(*ap, kApIface, "Ssid")) network = nm::ssidKey(*ssid);
		}
		if (network.empty()) network = k->second;   // wired: the network is named after its device
		log::info("nm", "connection on {} failed: {}", k->second, *name);
		emitEvent("network.connectionFailed", {{"device", k->second}, {"network", network}, {"reason", *name}});
	}
}

std::string NmBackend::networkKeyOfProfile(const std::string& profilePath, const std::string& deviceKey) const {
	auto it = profiles_.find(profilePath);
	if (it == profiles_.end()) return {};
	const auto& info = it->second.info;
	if (info.type == "802-11-wireless" && info.ssid) return nm::ssidKey(*info.ssid);
	if (info.type == "802-3-ethernet") return deviceKey;
	return {};
}

// ---------------------------------------------------------------------------------------------
// typed reads

const dbus::Properties* NmBackend::props(const std::string& path, const char* iface) const {
	return cache_ ? cache_->properties(path, iface) : nullptr;
}

const dbus::Value* NmBackend::prop(const std::string& path, const char* iface, const char* name) const {
	return cache_ ? cache_->property(path, iface, name) : nullptr;
}

std::optional<uint64_t> NmBackend::getUint(const std::string& path, const char* iface, const char* name) {
	const auto* p = props(path, iface);
	return p ? reader_.unsignedInt(*p, path, name) : std::nullopt;
}

std::optional<int64_t> NmBackend::getInt(const std::string& path, const char* iface, const char* name) {
	const auto* p = props(path, iface);
	return p ? reader_.integer(*p, path, name) : std::nullopt;
}

std::optional<bool> NmBackend::getBool(const std::string& path, const char* iface, const char* name) {
	const auto* p = props(path, iface);
	return p ? reader_.boolean(*p, path, name) : std::nullopt;
}

std::optional<std::string> NmBackend::getString(const std::string& path, const char* iface, const char* name) {
	const auto* p = props(path, iface);
	return p ? reader_.string(*p, path, name) : std::nullopt;
}

std::optional<std::vector<std::string>> NmBackend::getStrings(const std::string& path, const char* iface, const char* name) {
	const auto* p = props(path, iface);
	return p ? reader_.strings(*p, path, name) : std::nullopt;
}

std::optional<std::vector<uint8_t>> NmBackend::getBytes(const std::string& path, const char* iface, const char* name) {
	const auto* p = props(path, iface);
	return p ? reader_.bytes(*p, path, name) : std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// calls

void NmBackend::call(const std::string& path, const char* iface, const char* method,
                     const std::function<void(sdbus::MethodCall&)>& fill,
                     std::function<void(sdbus::MethodReply*, const sdbus::Error*)> done, std::chrono::microseconds timeout) {
	auto& px = cache_->proxy(path);
	auto msg = px.createMethodCall(iface, method);
	if (fill) fill(msg);
	calls_.start({}, px, msg, std::move(done), timeout);
}

void NmBackend::setProperty(const std::string& path, const char* iface, const char* name, sdbus::Variant value,
                            std::shared_ptr<Answer> answer, json result) {
	std::string i = iface, n = name;
	call(
	    path, kPropsIface, "Set", [&](sdbus::MethodCall& m) { m << i << n << value; },
	    [answer, result](sdbus::MethodReply*, const sdbus::Error* e) {
		    if (e) answer->failed(*e);
		    else answer->result(result);
	    });
}


} // namespace qsd::nm

namespace qsd {
std::unique_ptr<Backend> createNmBackend(BackendContext& context) { return std::make_unique<nm::NmBackend>(context); }
} // namespace qsd
