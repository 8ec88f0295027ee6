// The "nm" backend: /network from NetworkManager (org.freedesktop.NetworkManager).
//
// Model: one cache of every NetworkManager object and its properties, filled by a single
// ObjectManager.GetManagedObjects call and kept current by three connection-level matches
// installed once in start() (ObjectManager signals, every signal from NetworkManager under its
// path, and the name watcher). PropertiesChanged, InterfacesAdded and InterfacesRemoved carry
// full property values, so after start-up only profile settings (GetSettings) and actions need
// calls, all of them asynchronous. The tree is derived from the cache: a change marks the
// devices it touches dirty, and one deferred pass per loop iteration rebuilds those devices and
// writes only the fields that differ, so an access point's strength change is a one-field patch.

#include "mapping.hpp"
#include "settings.hpp"

#include "../../dbus/call_set.hpp"
#include "../../dbus/name_watcher.hpp"
#include "../../dbus/variant.hpp"
#include "../../log.hpp"
#include "../../server/client.hpp"
#include "../answer.hpp"
#include "../backend.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qsd {

namespace {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;

constexpr const char* kNmName = "org.freedesktop.NetworkManager";
constexpr const char* kNmPath = "/org/freedesktop/NetworkManager";
constexpr const char* kOmPath = "/org/freedesktop";
constexpr const char* kNmIface = "org.freedesktop.NetworkManager";
constexpr const char* kDevIface = "org.freedesktop.NetworkManager.Device";
constexpr const char* kWiredIface = "org.freedesktop.NetworkManager.Device.Wired";
constexpr const char* kWifiIface = "org.freedesktop.NetworkManager.Device.Wireless";
constexpr const char* kApIface = "org.freedesktop.NetworkManager.AccessPoint";
constexpr const char* kAcIface = "org.freedesktop.NetworkManager.Connection.Active";
constexpr const char* kConnIface = "org.freedesktop.NetworkManager.Settings.Connection";
constexpr const char* kIp4Iface = "org.freedesktop.NetworkManager.IP4Config";
constexpr const char* kIp6Iface = "org.freedesktop.NetworkManager.IP6Config";
constexpr const char* kPropsIface = "org.freedesktop.DBus.Properties";
constexpr const char* kOmIface = "org.freedesktop.DBus.ObjectManager";

constexpr const char* kRoot = "/network";
constexpr const char* kDevices = "/network/devices";
// Quickshell's scanner period: a RequestScan about every 10 s while someone wants fresh results.
constexpr auto kScanInterval = std::chrono::seconds(10);

using Interfaces = std::map<std::string, dbus::Properties>;
using ManagedObjects = std::map<sdbus::ObjectPath, Interfaces>;

// Last path component, for ids of objects that have no better one.
std::string lastComponent(const std::string& path) {
	auto pos = path.rfind('/');
	return pos == std::string::npos ? path : path.substr(pos + 1);
}

class NmBackend final: public Backend {
public:
	explicit NmBackend(BackendContext& context): Backend(context) {}
	~NmBackend() override { stop(); }

	std::string_view id() const override { return "nm"; }
	std::string_view root() const override { return kRoot; }

	void start() override;
	void stop() override;

private:
	struct Profile {
		std::string path;
		nm::RawSettings raw;          // as GetSettings gave it (NetworkManager never sends secrets)
		nm::ProfileInfo info;
		bool done = false;            // GetSettings answered (or failed)
		uint64_t serial = 0;          // tells a stale reply from the latest request
	};
	struct NetModel {
		std::vector<uint8_t> ssid;
		std::vector<std::string> profiles;   // profile paths, the reference one first
		std::string refAp;                   // reference access point path, "" when none
		bool refActive = false;              // the reference AP is the device's active one
		std::vector<std::string> aps;        // access point paths
		std::string state = "disconnected";
		bool active = false;                 // the device's active connection is this network
		nm::Security security = nm::Security::Unknown;
	};
	struct DevModel {
		std::string path;
		std::string key;
		bool wifi = false;
		std::map<std::string, NetModel> networks;
		json published;                      // what the tree holds for it, for diffing in memory
	};
	// A client's wish to keep a device's scan results fresh; dropped with the connection.
	struct ScanToken {
		ScanToken(std::weak_ptr<NmBackend*> b, std::string d, uint64_t i): backend(std::move(b)), device(std::move(d)), id(i) {}
		ScanToken(const ScanToken&) = delete;
		ScanToken& operator=(const ScanToken&) = delete;
		~ScanToken() {
			if (auto b = backend.lock()) (*b)->scanReleased(device, id);
		}
		std::weak_ptr<NmBackend*> backend;
		std::string device;
		uint64_t id;
	};
	struct Scanner {
		std::set<uint64_t> holders;
		EventSource timer;
	};

	// --- life cycle
	void installMatches();
	void registerMethods();
	void appeared(const std::string& owner);
	void vanished();
	void reset();
	void maybeReady();
	void updateState();

	// --- cache
	void onObjectManager(sdbus::Message& msg);
	void onSignal(sdbus::Message& msg);
	void addInterfaces(const std::string& path, Interfaces ifaces);
	void fetchProfile(const std::string& path);
	void markDirty(const std::string& path);
	bool strengthChanged(const std::string& apPath);
	void failureCheck(const std::string& acPath, uint32_t state, uint32_t reason);

	// --- tree
	void schedulePublish();
	void publish();
	void publishRoot();
	void publishDevices(bool all);
	std::optional<std::pair<json, DevModel>> buildDevice(const std::string& path);
	json buildIp(const std::string& configPath, bool v6);
	json buildNetwork(const DevModel& dev, const std::string& key, NetModel& net, const std::vector<std::string>& aps,
	                  const std::string& activeAp, uint32_t caps, bool adhoc);
	void syncObject(const std::string& path, const json& value);
	void syncDiff(const std::string& path, const json& old, const json& value);
	std::string networkKeyOfProfile(const std::string& profilePath, const std::string& deviceKey) const;

	// --- typed reads that degrade and log once
	const dbus::Properties* props(const std::string& path, const char* iface) const;
	const sdbus::Variant* prop(const std::string& path, const char* iface, const char* name) const;
	std::optional<uint64_t> getUint(const std::string& path, const char* iface, const char* name);
	std::optional<bool> getBool(const std::string& path, const char* iface, const char* name);
	std::optional<std::string> getString(const std::string& path, const char* iface, const char* name);
	std::optional<std::vector<std::string>> getStrings(const std::string& path, const char* iface, const char* name);
	std::optional<std::vector<uint8_t>> getBytes(const std::string& path, const char* iface, const char* name);

	// --- calls
	sdbus::IProxy& proxy(const std::string& path);
	void call(const std::string& path, const char* iface, const char* method, const std::function<void(sdbus::MethodCall&)>& fill,
	          std::function<void(sdbus::MethodReply*, const sdbus::Error*)> done);
	void setProperty(const std::string& path, const char* iface, const char* name, sdbus::Variant value,
	                 std::shared_ptr<Answer> answer, json result);

	// --- actions
	void requireReady() const;
	DevModel& device(const Params& p);
	NetModel& network(DevModel& dev, const std::string& key);
	Profile& profile(const Params& p);
	void activate(const std::string& profilePath, const DevModel& dev, std::shared_ptr<Answer> answer, json result);
	void addAndActivate(nm::RawSettings settings, const DevModel& dev, const std::string& ap, std::shared_ptr<Answer> answer,
	                    json result);
	void connect(const json& params, std::shared_ptr<Answer> answer);
	void scanReleased(const std::string& device, uint64_t id);
	void scannerChanged(const std::string& device);
	void requestScan(const std::string& device);

	sdbus::IConnection* conn_ = nullptr;
	bool started_ = false;
	std::shared_ptr<NmBackend*> self_;
	dbus::CallSet calls_{"nm"};
	dbus::PropertyReader reader_{"nm"};
	std::vector<MethodRegistration> methods_;
	std::vector<sdbus::Slot> matches_;
	std::unique_ptr<NameWatcher> watcher_;
	std::unique_ptr<sdbus::IProxy> busProxy_;
	bool resolved_ = false;
	AsyncCall resolve_;
	std::string owner_;
	std::map<std::string, std::unique_ptr<sdbus::IProxy>> proxies_;
	std::vector<std::unique_ptr<sdbus::IProxy>> graveyard_;
	EventSource reaper_;
	EventSource publisher_;

	std::map<std::string, Interfaces> objects_;   // every NetworkManager object, by path
	std::map<std::string, Profile> profiles_;     // Settings.Connection objects, by path
	bool snapshot_ = false;                       // GetManagedObjects answered
	bool ready_ = false;                          // the domain is complete and published
	uint64_t nextSerial_ = 1;
	std::map<std::string, DevModel> devices_;     // published devices, by key
	std::map<std::string, std::string> keyOfPath_;   // device path -> key
	std::map<std::string, std::set<std::string>> apOwners_;   // AP path -> device paths
	bool dirtyAll_ = false;
	bool dirtyRoot_ = false;
	std::set<std::string> dirtyDevices_;
	std::map<std::string, uint32_t> failures_;    // device path -> last Failed state reason
	std::map<std::string, Scanner> scanners_;     // by device key
	uint64_t nextScanToken_ = 1;
};

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
	watcher_ = std::make_unique<NameWatcher>(
	    *conn_, kNmName, [this](const std::string& owner) { appeared(owner); }, [this] { vanished(); });
	// The bus answers in order: this reply comes after the watcher's GetNameOwner answer, so an
	// absent NetworkManager is known to be absent then.
	busProxy_ = sdbus::createProxy(*conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
	// Not in calls_: an appearing NetworkManager cancels those, and this one must still land.
	resolve_ = AsyncCall(busProxy_->callMethodAsync("GetId").onInterface("org.freedesktop.DBus").uponReplyInvoke(
	    [this](const sdbus::Error*, std::string) {
		    resolved_ = true;
		    updateState();
	    }));
}

void NmBackend::stop() {
	if (!started_) return;
	started_ = false;
	self_.reset();
	methods_.clear();
	calls_.cancelAll();
	matches_.clear();
	watcher_.reset();
	resolve_.cancel();
	busProxy_.reset();
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
	if (!conn_) return;
	if (watcher_ && watcher_->present()) setState(ready_ ? BackendState::Running : BackendState::Starting);
	else if (resolved_) setState(BackendState::Unavailable, "NetworkManager is not on the system bus");
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
	owner_.clear();
}

void NmBackend::appeared(const std::string& owner) {
	reset();
	owner_ = owner;
	resolved_ = true;
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
	if (bssid.empty()) bssid = lastComponent(apPath);
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
// tree

void NmBackend::schedulePublish() {
	if (ready_ && publisher_) publisher_.setEnabled(SD_EVENT_ONESHOT);
}

void NmBackend::publish() {
	if (!ready_) return;
	if (dirtyRoot_ || dirtyAll_) publishRoot();
	publishDevices(dirtyAll_);
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
		for (const auto& [path, ifaces]: objects_)
			if (ifaces.count(kDevIface)) paths.insert(path);
		// Devices that are gone.
		for (const auto& [path, _]: keyOfPath_)
			if (!props(path, kDevIface)) paths.insert(path);
	} else {
		paths = dirtyDevices_;
	}
	for (const auto& path: paths) {
		auto built = buildDevice(path);
		auto old = keyOfPath_.find(path);
		std::string oldKey = old == keyOfPath_.end() ? std::string() : old->second;
		if (!built || built->second.key != oldKey) {
			if (!oldKey.empty()) {
				context_.tree.remove(pointer::join(kDevices, oldKey));
				devices_.erase(oldKey);
				keyOfPath_.erase(path);
				for (auto& [_, owners]: apOwners_) owners.erase(path);
			}
		}
		if (!built) continue;
		auto& [value, model] = *built;
		// Two devices with one interface name: the first one keeps it.
		if (auto other = devices_.find(model.key); other != devices_.end() && other->second.path != path) continue;
		keyOfPath_[path] = model.key;
		auto devPath = pointer::join(kDevices, model.key);
		if (auto prev = devices_.find(model.key); prev != devices_.end() && !prev->second.published.is_null())
			syncDiff(devPath, prev->second.published, value);
		else
			syncObject(devPath, value);
		model.published = std::move(value);
		devices_[model.key] = std::move(model);
	}
	for (auto it = apOwners_.begin(); it != apOwners_.end();)
		it = it->second.empty() ? apOwners_.erase(it) : std::next(it);
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
		try {
			if (!v6 && ns->containsValueOfType<std::vector<uint32_t>>()) {
				for (auto a: ns->get<std::vector<uint32_t>>()) out["dns"].push_back(nm::ipv4FromUint(a));
			} else if (v6 && ns->containsValueOfType<std::vector<std::vector<uint8_t>>>()) {
				for (const auto& a: ns->get<std::vector<std::vector<uint8_t>>>())
					if (auto text = nm::ipv6FromBytes(a); !text.empty()) out["dns"].push_back(text);
			} else {
				reader_.wrongType(configPath, "Nameservers", ns);
			}
		} catch (const sdbus::Error&) {
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
	std::string ac = getString(path, kDevIface, "ActiveConnection").value_or("/");
	if (ac != "/" && !props(ac, kAcIface)) ac = "/";
	std::string acProfile, acSpecific, acState = "disconnected";
	if (ac != "/") {
		acProfile = getString(ac, kAcIface, "Connection").value_or("");
		acSpecific = getString(ac, kAcIface, "SpecificObject").value_or("");
		acState = nm::activeStateName(uint32_t(getUint(ac, kAcIface, "State").value_or(0)));
	}

	json networks = json::object();
	if (model.wifi) {
		auto caps = uint32_t(getUint(path, kWifiIface, "WirelessCapabilities").value_or(0));
		auto mode = uint32_t(getUint(path, kWifiIface, "Mode").value_or(0));
		dev["mode"] = nm::wifiModeName(mode);
		auto sc = scanners_.find(model.key);
		dev["scannerEnabled"] = sc != scanners_.end() && !sc->second.holders.empty();
		auto lastScan = prop(path, kWifiIface, "LastScan");
		(void)lastScan;
		std::string activeAp = getString(path, kWifiIface, "ActiveAccessPoint").value_or("/");
		if ((activeAp == "/" || activeAp.empty()) && props(acSpecific, kApIface)) activeAp = acSpecific;

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
			if (!info.interfaceName.empty() && info.interfaceName != *ifname) continue;
			auto key = nm::ssidKey(*info.ssid);
			auto& net = model.networks[key];
			net.ssid = *info.ssid;
			net.profiles.push_back(ppath);
		}
		std::string activeKey;
		if (ac != "/") {
			activeKey = networkKeyOfProfile(acProfile, model.key);
			if (activeKey.empty() && props(activeAp, kApIface))
				if (auto ssid = getBytes(activeAp, kApIface, "Ssid")) activeKey = nm::ssidKey(*ssid);
			if (!activeKey.empty()) model.networks[activeKey].ssid = nm::ssidFromKey(activeKey);
		}
		for (auto& [key, net]: model.networks) {
			if (key == activeKey) {
				net.active = true;
				net.state = acState;
			}
			// The reference profile: the active one, else the most recently used.
			// (clang 14 cannot capture a structured binding in a lambda)
			const bool isActive = net.active;
			std::stable_sort(net.profiles.begin(), net.profiles.end(), [&](const std::string& a, const std::string& b) {
				bool aa = isActive && a == acProfile, ba = isActive && b == acProfile;
				if (aa != ba) return aa;
				return profiles_[a].info.timestamp > profiles_[b].info.timestamp;
			});
			networks[key] = buildNetwork(model, key, net, apsOf[key], activeAp, caps, mode == 1);
		}
	} else {
		auto speed = getUint(path, kWiredIface, "Speed");
		dev["linkSpeed"] = speed ? json(*speed) : json(nullptr);
		bool hasLink = false;
		if (auto flags = getUint(path, kDevIface, "InterfaceFlags")) hasLink = *flags & nm::kInterfaceFlagCarrier;
		else hasLink = getBool(path, kWiredIface, "Carrier").value_or(false);   // NetworkManager before 1.22
		dev["hasLink"] = hasLink;
		if (hasLink) {
			NetModel net;
			std::set<std::string> seen;
			auto add = [&](const std::string& p) {
				auto it = profiles_.find(p);
				if (it == profiles_.end() || !it->second.done || it->second.info.type != "802-3-ethernet") return;
				if (seen.insert(p).second) net.profiles.push_back(p);
			};
			if (ac != "/") add(acProfile);
			for (const auto& p: getStrings(path, kDevIface, "AvailableConnections").value_or(std::vector<std::string>{})) add(p);
			for (const auto& [ppath, p]: profiles_)
				if (p.info.interfaceName == *ifname) add(ppath);
			if (ac != "/" && (acProfile.empty() || seen.count(acProfile) || !profiles_.count(acProfile))) {
				net.active = true;
				net.state = acState;
			}
			json n;
			n["name"] = *ifname;
			n["device"] = model.key;
			n["state"] = net.state;
			n["connected"] = net.state == "connected";
			n["stateChanging"] = net.state == "connecting" || net.state == "disconnecting";
			n["known"] = !net.profiles.empty();
			json profs = json::object();
			for (const auto& p: net.profiles) {
				const auto& info = profiles_[p].info;
				if (!info.uuid.empty()) profs[info.uuid] = {{"id", info.id}, {"uuid", info.uuid}};
			}
			n["profiles"] = std::move(profs);
			networks[*ifname] = std::move(n);
			model.networks[*ifname] = std::move(net);
		}
	}
	dev["networks"] = std::move(networks);
	return std::make_pair(std::move(dev), std::move(model));
}

json NmBackend::buildNetwork(const DevModel& dev, const std::string& key, NetModel& net, const std::vector<std::string>& aps,
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
		if (bssid.empty()) bssid = lastComponent(ap);
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
	json profs = json::object();
	for (const auto& p: net.profiles) {
		const auto& info = profiles_[p].info;
		if (!info.uuid.empty()) profs[info.uuid] = {{"id", info.id}, {"uuid", info.uuid}};
	}
	n["profiles"] = std::move(profs);
	(void)key;
	return n;
}

// Writes `value` (an object) at `path` as per-key changes, so a change addresses one field.
void NmBackend::syncObject(const std::string& path, const json& value) {
	const json* existing = context_.tree.find(path);
	if (!existing || !existing->is_object() || !value.is_object()) {
		context_.tree.set(path, value);
		return;
	}
	std::vector<std::string> gone;
	for (const auto& [key, _]: existing->items())
		if (!value.contains(key)) gone.push_back(key);
	for (const auto& key: gone) context_.tree.remove(pointer::join(path, key));
	for (const auto& [key, v]: value.items()) {
		auto child = pointer::join(path, key);
		const json* old = context_.tree.find(child);
		if (old && old->is_object() && v.is_object()) syncObject(child, v);
		else context_.tree.set(child, v);
	}
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

// ---------------------------------------------------------------------------------------------
// actions

void NmBackend::requireReady() const {
	if (!ready_) {
		std::string why = !conn_ ? "there is no system bus connection" : "NetworkManager is not on the system bus";
		throw RpcException(ErrorCode::BackendUnavailable, "The network is unavailable: " + why,
		                   {{"backend", "nm"}, {"path", kRoot}});
	}
}

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

void NmBackend::connect(const json& params, std::shared_ptr<Answer> answer) {
	Params p(params);
	auto& dev = device(p);
	auto key = p.string("network");
	auto psk = p.optString("psk");
	bool hidden = p.optBoolean("hidden").value_or(false);
	json result = {{"device", dev.key}, {"network", key}};
	if (psk && (psk->size() < 8 || psk->size() > 64))
		throw RpcException(ErrorCode::InvalidParams, "Invalid params: psk must be 8..63 characters or 64 hex digits",
		                   {{"param", "psk"}, {"expected", "a WPA passphrase of 8..63 characters or 64 hex digits"}});

	if (!dev.wifi) {
		if (psk || hidden) Params::fail(psk ? "psk" : "hidden", "nothing: a wired network takes no psk and is never hidden");
		auto& net = network(dev, key);
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
		// A hidden network: NetworkManager probes for the SSID.
		auto ssid = nm::ssidFromKey(key);
		if (ssid.empty() || ssid.size() > 32) Params::fail("network", "an SSID of 1..32 bytes");
		nm::RawSettings s;
		s["802-11-wireless"].emplace("ssid", sdbus::Variant(ssid));
		s["802-11-wireless"].emplace("hidden", sdbus::Variant(true));
		if (psk) {
			s["802-11-wireless-security"].emplace("key-mgmt", sdbus::Variant(std::string("wpa-psk")));
			s["802-11-wireless-security"].emplace("psk", sdbus::Variant(*psk));
		}
		return addAndActivate(std::move(s), dev, "", answer, result);
	}
	auto& net = it->second;
	if (!psk) {
		if (net.active && net.state == "connected") return answer->result(result);
		if (!net.profiles.empty()) return activate(net.profiles.front(), dev, answer, result);
		if (net.refAp.empty())
			throw RpcException(ErrorCode::NotFound, "Network " + key + " is not in range and has no saved profile",
			                   {{"param", "network"}, {"device", dev.key}, {"network", key}});
		return addAndActivate({}, dev, net.refAp, answer, result);
	}
	if (!nm::takesPsk(net.security) && net.security != nm::Security::Unknown)
		throw RpcException(ErrorCode::InvalidParams,
		                   "Invalid params: network " + key + " uses " + nm::securityName(net.security) + ", which takes no psk",
		                   {{"param", "psk"}, {"expected", "no psk for this network"}, {"security", nm::securityName(net.security)}});
	if (!net.profiles.empty()) {
		// Update the reference profile with the key, then activate it.
		auto path = net.profiles.front();
		auto merged = profiles_[path].raw;
		auto& sec = merged["802-11-wireless-security"];
		if (!sec.count("key-mgmt"))
			sec.emplace("key-mgmt", sdbus::Variant(std::string(net.security == nm::Security::Sae ? "sae" : "wpa-psk")));
		sec.insert_or_assign("psk", sdbus::Variant(*psk));
		std::string devPath = dev.path;
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
	nm::RawSettings s;
	s["802-11-wireless-security"].emplace("key-mgmt", sdbus::Variant(std::string(net.security == nm::Security::Sae ? "sae" : "wpa-psk")));
	s["802-11-wireless-security"].emplace("psk", sdbus::Variant(*psk));
	addAndActivate(std::move(s), dev, net.refAp, answer, result);
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
		requestScan(device);
		s.timer = context_.loop.addTimer(kScanInterval, [this, device] {
			auto jt = scanners_.find(device);
			if (jt == scanners_.end()) return;
			requestScan(device);
			jt->second.timer.setTime(context_.loop.now() + std::chrono::duration_cast<std::chrono::microseconds>(kScanInterval).count());
		}, "nm-scan");
	}
	if (ready_) {
		auto d = devices_.find(device);
		if (d != devices_.end()) {
			dirtyDevices_.insert(d->second.path);
			schedulePublish();
		}
	}
}

void NmBackend::requestScan(const std::string& device) {
	auto d = devices_.find(device);
	if (!ready_ || d == devices_.end() || !d->second.wifi) return;
	call(
	    d->second.path, kWifiIface, "RequestScan", [](sdbus::MethodCall& m) { m << std::map<std::string, sdbus::Variant>{}; },
	    [device](sdbus::MethodReply*, const sdbus::Error* e) {
		    // NetworkManager refuses scans that come too soon after the last one; not an error.
		    if (e) log::debug("nm", "RequestScan on {}: {}: {}", device, e->getName(), e->getMessage());
	    });
}

void NmBackend::registerMethods() {
	auto& disp = context_.dispatcher;
	auto add = [&](const char* name, std::function<void(const json&, std::shared_ptr<Answer>, ClientSession&)> fn) {
		disp.addAsync(name, [this, fn = std::move(fn)](const json& params, Responder responder, ClientSession& client) {
			requireReady();
			auto answer = std::make_shared<Answer>(std::move(responder), "nm", kNmName);
			// Errors found before the call answer through the Answer, which owns the responder now.
			try {
				fn(params, answer, client);
			} catch (const RpcException& e) {
				answer->error(e.error.code, e.error.message, e.error.data);
			} catch (const sdbus::Error& e) {
				answer->failed(e);
			}
		});
		methods_.emplace_back(disp, name);
	};

	add("network.setWifiEnabled", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		bool on = Params(params).boolean("enabled");
		setProperty(kNmPath, kNmIface, "WirelessEnabled", sdbus::Variant(on), a, {{"enabled", on}});
	});
	add("network.setConnectivityCheckEnabled", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		bool on = Params(params).boolean("enabled");
		setProperty(kNmPath, kNmIface, "ConnectivityCheckEnabled", sdbus::Variant(on), a, {{"enabled", on}});
	});
	add("network.checkConnectivity", [this](const json&, std::shared_ptr<Answer> a, ClientSession&) {
		call(kNmPath, kNmIface, "CheckConnectivity", {}, [a](sdbus::MethodReply* r, const sdbus::Error* e) {
			if (e) return a->failed(*e);
			uint32_t c = 0;
			*r >> c;
			a->result({{"connectivity", nm::connectivityName(c)}});
		});
	});
	add("network.disconnectDevice", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		auto& dev = device(Params(params));
		json result = {{"device", dev.key}};
		call(dev.path, kDevIface, "Disconnect", {}, [a, result](sdbus::MethodReply*, const sdbus::Error* e) {
			if (e) a->failed(*e);
			else a->result(result);
		});
	});
	add("network.setAutoconnect", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		Params p(params);
		auto& dev = device(p);
		bool on = p.boolean("autoconnect");
		setProperty(dev.path, kDevIface, "Autoconnect", sdbus::Variant(on), a, {{"device", dev.key}, {"autoconnect", on}});
	});
	add("network.setManaged", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		Params p(params);
		auto& dev = device(p);
		bool on = p.boolean("managed");
		setProperty(dev.path, kDevIface, "Managed", sdbus::Variant(on), a, {{"device", dev.key}, {"managed", on}});
	});
	add("network.setScannerEnabled", [this](const json& params, std::shared_ptr<Answer> a, ClientSession& client) {
		Params p(params);
		auto& dev = device(p);
		bool on = p.boolean("enabled");
		if (!dev.wifi) Params::fail("device", "a Wi-Fi device");
		std::string tokenKey = "network.scan." + dev.key;
		if (on) {
			auto id = nextScanToken_++;
			scanners_[dev.key].holders.insert(id);
			// Replacing an earlier token of this client releases that one.
			client.attach(tokenKey, std::make_shared<ScanToken>(std::weak_ptr<NmBackend*>(self_), dev.key, id));
			scannerChanged(dev.key);
		} else {
			client.detach(tokenKey);
		}
		a->result({{"device", dev.key}, {"enabled", on}});
	});
	add("network.connect", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) { connect(params, a); });
	add("network.connectProfile", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		Params p(params);
		auto& dev = device(p);
		auto& prof = profile(p);
		activate(prof.path, dev, a, {{"device", dev.key}, {"profile", prof.info.uuid}});
	});
	add("network.disconnect", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		Params p(params);
		auto& dev = device(p);
		auto key = p.string("network");
		auto& net = network(dev, key);
		if (!net.active)
			throw RpcException(ErrorCode::InvalidParams, "Invalid params: network " + key + " is not active on " + dev.key,
			                   {{"param", "network"}, {"expected", "the network that is active on the device"}});
		// As Quickshell: Device.Disconnect (which also stops autoconnect until the next activation).
		json result = {{"device", dev.key}, {"network", key}};
		call(dev.path, kDevIface, "Disconnect", {}, [a, result](sdbus::MethodReply*, const sdbus::Error* e) {
			if (e) a->failed(*e);
			else a->result(result);
		});
	});
	add("network.forget", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		Params p(params);
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
			throw RpcException(ErrorCode::NotFound, "No saved profile for network " + key,
			                   {{"param", "network"}, {"network", key}});
		auto remaining = std::make_shared<size_t>(paths.size());
		json uuids = json::array();
		for (const auto& path: paths) uuids.push_back(profiles_[path].info.uuid);
		json result = {{"network", key}, {"profiles", uuids}};
		for (const auto& path: paths)
			call(path, kConnIface, "Delete", {}, [a, remaining, result](sdbus::MethodReply*, const sdbus::Error* e) {
				if (e) a->failed(*e);
				if (--*remaining == 0) a->result(result);
			});
	});
	add("network.getProfile", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		auto& prof = profile(Params(params));
		std::string path = prof.path;
		call(path, kConnIface, "GetSettings", {}, [this, a, path](sdbus::MethodReply* r, const sdbus::Error* e) {
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
	});
	add("network.updateProfile", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		Params p(params);
		auto& prof = profile(p);
		const auto& changes = p.object("settings");
		for (const auto& [group, keys]: changes.items())
			if (keys.is_object())
				for (const auto& [key, _]: keys.items())
					if (group == "connection" && (key == "uuid" || key == "type"))
						Params::fail("settings", "changes that keep connection.uuid and connection.type");
		auto merged = nm::mergeSettings(prof.raw, changes);
		json result = {{"profile", prof.info.uuid}};
		call(
		    prof.path, kConnIface, "Update", [&](sdbus::MethodCall& m) { m << merged; },
		    [a, result](sdbus::MethodReply*, const sdbus::Error* e) {
			    if (e) a->failed(*e);
			    else a->result(result);
		    });
	});
	add("network.clearSecrets", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		auto& prof = profile(Params(params));
		json result = {{"profile", prof.info.uuid}};
		call(prof.path, kConnIface, "ClearSecrets", {}, [a, result](sdbus::MethodReply*, const sdbus::Error* e) {
			if (e) a->failed(*e);
			else a->result(result);
		});
	});
	add("network.deleteProfile", [this](const json& params, std::shared_ptr<Answer> a, ClientSession&) {
		auto& prof = profile(Params(params));
		json result = {{"profile", prof.info.uuid}};
		call(prof.path, kConnIface, "Delete", {}, [a, result](sdbus::MethodReply*, const sdbus::Error* e) {
			if (e) a->failed(*e);
			else a->result(result);
		});
	});
}

} // namespace

std::unique_ptr<Backend> createNmBackend(BackendContext& context) { return std::make_unique<NmBackend>(context); }

} // namespace qsd
