// NetworkManager backend: life cycle, the bus name, the signals, the object cache and the
// calls (nm_backend.hpp says how the backend is split).

#include "nm_backend.hpp"

#include "../../log.hpp"

#include <algorithm>

namespace qsd {

namespace {
using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;
} // namespace

std::string nmLastComponent(const std::string& path) {
	auto pos = path.rfind('/');
	return pos == std::string::npos ? path : path.substr(pos + 1);
}

// ---------------------------------------------------------------------------------------------
// life cycle

void NmBackend::start() {
	if (started_) return;
	started_ = true;
	self_ = std::make_shared<NmBackend*>(this);
	context_.tree.set(kRoot, {{"available", false}});
	registerMethods();
	if (!context_.systemBus) {
		setState(BackendState::Failed, "no system bus connection");
		return;
	}
	setState(BackendState::Starting);
	conn_ = &context_.systemBus->connection();
	reaper_ = context_.loop.addDefer([this] { graveyard_.clear(); }, "nm-reaper");
	reaper_.setEnabled(SD_EVENT_OFF);
	publisher_ = context_.loop.addDefer([this] { publish(); }, "nm-publish");
	publisher_.setEnabled(SD_EVENT_OFF);

	installMatches();   // DESIGN.md: subscribe before enumerating
	// NetworkManager is D-Bus activatable: a session that starts before it (or without it
	// started) starts it, once.
	watcher_ = std::make_unique<NameWatcher>(
	    *conn_, kNmName, [this](const std::string& owner) { appeared(owner); }, [this] { vanished(); },
	    NameWatcher::Options{true, [this] { updateState(); }});
}

void NmBackend::stop() {
	if (!started_) return;
	started_ = false;
	self_.reset();
	methods_.clear();
	calls_.cancelAll();
	matches_.clear();
	watcher_.reset();
	scanners_.clear();
	objects_.clear();
	profiles_.clear();
	devices_.clear();
	proxies_.clear();
	graveyard_.clear();
	reaper_.reset();
	publisher_.reset();
	context_.tree.remove(kRoot);
	setState(BackendState::Stopped);
}

void NmBackend::installMatches() {
	// Two matches for the backend's whole life. sender= a well-known name is resolved by the bus
	// to its current owner, so they survive NetworkManager restarts; handlers still check the
	// sender against the owner we enumerated.
	std::string om = fmt::format("type='signal',sender='{}',interface='{}',path='{}'", kNmName, kOmIface, kOmPath);
	matches_.push_back(conn_->addMatch(om, [this](sdbus::Message& msg) { onObjectManager(msg); }));
	// One match per signal the backend uses (not one for everything under the path): other
	// signals (NetworkManager's legacy per-interface PropertiesChanged, Statistics, a mock's
	// MethodCalled) would wake the daemon for nothing.
	const std::pair<const char*, const char*> wanted[] = {
	    {kPropsIface, "PropertiesChanged"}, {kDevIface, "StateChanged"}, {kAcIface, "StateChanged"},
	    {kWifiIface, "AccessPointAdded"},   {kWifiIface, "AccessPointRemoved"}, {kConnIface, "Updated"},
	};
	for (const auto& [iface, member]: wanted) {
		std::string rule = fmt::format("type='signal',sender='{}',interface='{}',member='{}',path_namespace='{}'", kNmName,
		                               iface, member, kNmPath);
		matches_.push_back(conn_->addMatch(rule, [this](sdbus::Message& msg) { onSignal(msg); }));
	}
}

void NmBackend::updateState() {
	if (!conn_ || !watcher_) return;
	switch (watcher_->status()) {
	case NameWatcher::Status::Present: setState(ready_ ? BackendState::Running : BackendState::Starting); break;
	case NameWatcher::Status::Resolving:
	case NameWatcher::Status::Activating: setState(BackendState::Starting); break;
	case NameWatcher::Status::Absent:
		if (watcher_->activationError().empty()) setState(BackendState::Unavailable, "NetworkManager is not on the system bus");
		else
			setState(BackendState::Unavailable,
			         "NetworkManager is not on the system bus and could not be started: " + watcher_->activationError());
		break;
	}
}

void NmBackend::reset() {
	calls_.cancelAll();   // pending actions answer BackendUnavailable
	for (auto& [_, p]: proxies_) graveyard_.push_back(std::move(p));
	proxies_.clear();
	if (!graveyard_.empty() && reaper_) reaper_.setEnabled(SD_EVENT_ONESHOT);
	objects_.clear();
	profiles_.clear();
	devices_.clear();
	keyOfPath_.clear();
	apOwners_.clear();
	failures_.clear();
	dirtyAll_ = dirtyRoot_ = false;
	dirtyDevices_.clear();
	snapshot_ = ready_ = false;
	reader_.clear();
	for (auto& [_, s]: scanners_) s.timer.reset();
	lastScanRequest_.clear();
	shadowed_.clear();
	owner_.clear();
}

void NmBackend::appeared(const std::string& owner) {
	reset();
	owner_ = owner;
	log::info("nm", "NetworkManager is on the system bus ({})", owner);
	updateState();
	call(kOmPath, kOmIface, "GetManagedObjects", {}, [this](sdbus::MethodReply* reply, const sdbus::Error* e) {
		if (e) {
			log::error("nm", "GetManagedObjects failed: {}: {}", e->getName(), e->getMessage());
			setState(BackendState::Failed, "GetManagedObjects failed: " + e->getName());
			return;
		}
		ManagedObjects objects;
		try {
			*reply >> objects;
		} catch (const sdbus::Error& x) {
			log::error("nm", "GetManagedObjects answered with an unexpected type: {}", x.getMessage());
			setState(BackendState::Failed, "GetManagedObjects answered with an unexpected type");
			return;
		}
		snapshot_ = true;
		for (auto& [path, ifaces]: objects) addInterfaces(path, std::move(ifaces));
		maybeReady();
	});
}

void NmBackend::vanished() {
	bool had = !owner_.empty();
	reset();
	context_.tree.set(kRoot, {{"available", false}});
	if (had) log::info("nm", "NetworkManager left the system bus");
	updateState();
}

void NmBackend::maybeReady() {
	if (ready_ || !snapshot_) return;
	for (const auto& [_, p]: profiles_)
		if (!p.done) return;
	// Everything read: the whole domain lands in one batch.
	ready_ = true;
	context_.tree.set(kRoot, {{"available", true}, {"backend", "networkmanager"}, {"devices", json::object()}});
	publishRoot();
	publishDevices(true);
	std::vector<std::string> scanning;
	for (const auto& [key, _]: scanners_) scanning.push_back(key);
	for (const auto& key: scanning) scannerChanged(key);
	updateState();
}

// ---------------------------------------------------------------------------------------------
// cache

void NmBackend::addInterfaces(const std::string& path, Interfaces ifaces) {
	auto& obj = objects_[path];
	bool isProfile = ifaces.count(kConnIface) > 0;
	for (auto& [iface, p]: ifaces) obj[iface] = std::move(p);
	if (isProfile && !profiles_.count(path)) {
		profiles_[path].path = path;
		fetchProfile(path);
	}
	markDirty(path);
}

void NmBackend::fetchProfile(const std::string& path) {
	auto& p = profiles_[path];
	p.serial = nextSerial_++;
	uint64_t serial = p.serial;
	call(path, kConnIface, "GetSettings", {}, [this, path, serial](sdbus::MethodReply* reply, const sdbus::Error* e) {
		auto it = profiles_.find(path);
		if (it == profiles_.end() || it->second.serial != serial) return;
		auto& prof = it->second;
		if (e) {
			// Most often the profile went away between its signal and our call.
			log::info("nm", "reading profile {} failed: {}", path, e->getName());
		} else {
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
	});
}

void NmBackend::onObjectManager(sdbus::Message& msg) {
	try {
		if (!snapshot_ || msg.getSender() != owner_) return;
		std::string member = msg.getMemberName();
		sdbus::ObjectPath path;
		if (member == "InterfacesAdded") {
			Interfaces ifaces;
			msg >> path >> ifaces;
			addInterfaces(path, std::move(ifaces));
		} else if (member == "InterfacesRemoved") {
			std::vector<std::string> names;
			msg >> path >> names;
			auto it = objects_.find(path);
			if (it == objects_.end()) return;
			for (const auto& n: names) it->second.erase(n);
			bool profileGone = std::find(names.begin(), names.end(), kConnIface) != names.end();
			markDirty(path);
			if (it->second.empty()) objects_.erase(it);
			if (profileGone) {
				profiles_.erase(path);
				dirtyAll_ = true;
				schedulePublish();
				maybeReady();
			}
		}
	} catch (const sdbus::Error& e) {
		log::warning("nm", "malformed ObjectManager signal from NetworkManager: {}", e.getMessage());
	}
}

void NmBackend::onSignal(sdbus::Message& msg) {
	try {
		if (!snapshot_ || msg.getSender() != owner_) return;
		std::string iface = msg.getInterfaceName();
		std::string member = msg.getMemberName();
		std::string path = msg.getPath();
		if (iface == kPropsIface && member == "PropertiesChanged") {
			std::string changedIface;
			dbus::Properties changed;
			std::vector<std::string> invalidated;
			msg >> changedIface >> changed >> invalidated;
			auto it = objects_.find(path);
			// Unknown objects get their properties with InterfacesAdded.
			if (it == objects_.end()) return;
			auto& p = it->second[changedIface];
			bool strengthOnly = changedIface == kApIface && invalidated.empty() && changed.size() == 1 &&
			                    changed.count("Strength");
			for (auto& [k, v]: changed) p.insert_or_assign(k, std::move(v));
			for (const auto& k: invalidated) p.erase(k);
			// The most frequent change by far: written at once, without rebuilding the device.
			if (!strengthOnly || !strengthChanged(path)) markDirty(path);
		} else if (iface == kDevIface && member == "StateChanged") {
			uint32_t state = 0, old = 0, reason = 0;
			msg >> state >> old >> reason;
			if (state == nm::kDeviceStateFailed) failures_[path] = reason;
			else if (state == nm::kDeviceStateActivated) failures_.erase(path);
		} else if (iface == kAcIface && member == "StateChanged") {
			uint32_t state = 0, reason = 0;
			msg >> state >> reason;
			failureCheck(path, state, reason);
		} else if (iface == kWifiIface && (member == "AccessPointAdded" || member == "AccessPointRemoved")) {
			// NetworkManager also updates the AccessPoints property; this keeps the list right
			// when a signal comes without the property change.
			sdbus::ObjectPath ap;
			msg >> ap;
			auto it = objects_.find(path);
			if (it == objects_.end()) return;
			auto& wifi = it->second[kWifiIface];
			std::vector<sdbus::ObjectPath> list;
			if (auto v = wifi.find("AccessPoints"); v != wifi.end() && v->second.containsValueOfType<std::vector<sdbus::ObjectPath>>())
				list = v->second.get<std::vector<sdbus::ObjectPath>>();
			auto pos = std::find(list.begin(), list.end(), ap);
			if (member == "AccessPointAdded" && pos == list.end()) list.push_back(ap);
			else if (member == "AccessPointRemoved" && pos != list.end()) list.erase(pos);
			else return;
			wifi.insert_or_assign("AccessPoints", sdbus::Variant(list));
			markDirty(path);
		} else if (iface == kConnIface && member == "Updated") {
			if (profiles_.count(path)) fetchProfile(path);
		}
	} catch (const sdbus::Error& e) {
		log::warning("nm", "malformed signal from NetworkManager: {}", e.getMessage());
	}
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
	auto it = objects_.find(path);
	if (it == objects_.end()) return nullptr;
	auto jt = it->second.find(iface);
	return jt == it->second.end() ? nullptr : &jt->second;
}

const sdbus::Variant* NmBackend::prop(const std::string& path, const char* iface, const char* name) const {
	const auto* p = props(path, iface);
	return p ? dbus::find(*p, name) : nullptr;
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

sdbus::IProxy& NmBackend::proxy(const std::string& path) {
	auto& p = proxies_[path];
	if (!p) p = sdbus::createProxy(*conn_, kNmName, path);
	return *p;
}

void NmBackend::call(const std::string& path, const char* iface, const char* method,
                     const std::function<void(sdbus::MethodCall&)>& fill,
                     std::function<void(sdbus::MethodReply*, const sdbus::Error*)> done) {
	auto& px = proxy(path);
	auto msg = px.createMethodCall(iface, method);
	if (fill) fill(msg);
	calls_.start({}, px, msg, std::move(done));
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

std::unique_ptr<Backend> createNmBackend(BackendContext& context) { return std::make_unique<NmBackend>(context); }

} // namespace qsd
