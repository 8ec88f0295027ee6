// The "upower" backend: /power from UPower (org.freedesktop.UPower) and power-profiles-daemon
// (org.freedesktop.UPower.PowerProfiles or net.hadess.PowerProfiles), each watched on its own,
// so either service may come and go without touching the other's subtree.
//
// D-Bus discipline (DESIGN.md, "One thread, one loop"): the only blocking D-Bus work is the
// AddMatch of the signal matches and name watchers, done once in start() and kept across
// service restarts; everything else is an async call tracked in a dbus::CallSet, so a vanished service
// cancels its own calls and a reply never reaches a destroyed owner.

#include "mapping.hpp"

#include "../../dbus/call_set.hpp"
#include "../../dbus/name_watcher.hpp"
#include "../../dbus/variant.hpp"
#include "../../log.hpp"
#include "../../server/client.hpp"
#include "../answer.hpp"
#include "../backend.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <array>
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

constexpr const char* kPropsIface = "org.freedesktop.DBus.Properties";
constexpr const char* kUpName = "org.freedesktop.UPower";
constexpr const char* kUpPath = "/org/freedesktop/UPower";
constexpr const char* kUpIface = "org.freedesktop.UPower";
constexpr const char* kDevIface = "org.freedesktop.UPower.Device";

// power-profiles-daemon's two names, in order of preference: the newer one first (0.20+ owns
// both; tuned-ppd owns only the newer one; older releases only the hadess one).
struct PpdService {
	const char* name;
	const char* path;
	const char* iface;
};
constexpr std::array<PpdService, 2> kPpd = {{
    {"org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles", "org.freedesktop.UPower.PowerProfiles"},
    {"net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles"},
}};

constexpr const char* kRoot = "/power";
constexpr const char* kDevices = "/power/devices";
constexpr const char* kDisplay = "/power/displayDevice";
constexpr const char* kProfiles = "/power/profiles";

class UpowerBackend final: public Backend {
public:
	explicit UpowerBackend(BackendContext& context): Backend(context) {}
	~UpowerBackend() override { stop(); }

	std::string_view id() const override { return "upower"; }
	std::string_view root() const override { return kRoot; }

	void start() override;
	void stop() override;

private:
	struct Device {
		std::string path;
		std::string id;
		uint64_t serial = 0;                  // tells a stale reply from one for a re-added path
		std::unique_ptr<sdbus::IProxy> proxy;
		dbus::Properties props;
		bool loaded = false;                  // GetAll answered
	};

	// A hold made through power.holdProfile. It belongs to the client connection: the
	// ClientSession owns a HoldToken whose destruction (disconnect, or power.releaseProfile)
	// releases it. Our own ids are the cookies clients see, so they survive a restart of
	// power-profiles-daemon, after which the hold is made again.
	struct ClientHold {
		uint64_t id = 0;
		std::weak_ptr<ClientSession> client;
		std::string profile;     // the daemon's spelling
		std::string reason;
		std::string applicationId;
		std::optional<uint32_t> cookie;   // power-profiles-daemon's, while it holds
		std::string owner;                // the unique name that gave the cookie
		bool pending = false;             // HoldProfile in flight
		bool confirmed = false;           // the client got its cookie
		bool released = false;            // let go while HoldProfile was in flight
	};
	struct HoldToken {
		HoldToken(std::weak_ptr<UpowerBackend*> b, uint64_t i): backend(std::move(b)), id(i) {}
		HoldToken(const HoldToken&) = delete;
		HoldToken& operator=(const HoldToken&) = delete;
		std::weak_ptr<UpowerBackend*> backend;
		uint64_t id;
		~HoldToken() {
			if (auto b = backend.lock()) (*b)->clientReleased(id);
		}
	};

	// --- start-up
	void installMatches();
	void registerMethods();
	void updateState();

	// --- UPower
	void upAppeared(const std::string& owner);
	void upVanished();
	void upSignal(sdbus::Message& msg);
	void upPropertiesChanged(sdbus::Message& msg);
	void addDevice(const std::string& path, bool initial);
	void removeDevice(const std::string& path);
	void fetchDevice(Device& d, bool display);
	void maybeUpReady();
	void publishDaemon();
	void publishDevice(Device& d, bool display);
	Device* deviceAt(const std::string& path, bool& display);

	// --- power-profiles-daemon
	void ppdNamesChanged();
	void ppdPropertiesChanged(size_t service, sdbus::Message& msg);
	void publishProfiles();
	void refreshHolds();
	void hold(ClientHold& h, std::shared_ptr<Answer> answer);
	void release(uint32_t cookie);
	void clientReleased(uint64_t id);
	[[nodiscard]] bool ppdReady() const { return ppdActive_ >= 0 && ppdLoaded_; }
	[[nodiscard]] const PpdService& ppd() const { return kPpd[size_t(ppdActive_)]; }
	std::string checkProfile(const Params& p);

	// --- helpers
	void bury(std::unique_ptr<sdbus::IProxy> proxy);
	void syncObject(const std::string& path, const json& value);

	sdbus::IConnection* conn_ = nullptr;
	bool started_ = false;
	std::shared_ptr<UpowerBackend*> self_;
	dbus::CallSet calls_{"upower"};
	dbus::PropertyReader reader_{"upower"};
	std::vector<MethodRegistration> methods_;
	std::vector<sdbus::Slot> matches_;
	std::unique_ptr<sdbus::IProxy> busProxy_;
	bool resolved_ = false;                     // the initial name owners are known
	// Proxies dropped while one of their calls may be running are destroyed from here.
	std::vector<std::unique_ptr<sdbus::IProxy>> graveyard_;
	EventSource reaper_;

	// UPower
	std::unique_ptr<NameWatcher> upWatcher_;
	std::unique_ptr<sdbus::IProxy> upProxy_;
	dbus::Properties upProps_;
	bool upPropsLoaded_ = false;
	json criticalAction_ = nullptr;
	bool criticalDone_ = false;
	bool displayDone_ = false;
	bool enumDone_ = false;
	bool upReady_ = false;
	std::map<std::string, Device> devices_;       // by object path
	std::unique_ptr<Device> display_;
	uint64_t nextSerial_ = 1;

	// power-profiles-daemon
	std::array<std::unique_ptr<NameWatcher>, 2> ppdWatchers_;
	int ppdActive_ = -1;                         // index into kPpd
	std::string ppdOwner_;
	std::unique_ptr<sdbus::IProxy> ppdProxy_;
	dbus::Properties ppdProps_;
	bool ppdLoaded_ = false;
	std::set<std::string> ppdUnknown_;          // unknown enum values already logged
	std::map<uint64_t, ClientHold> holds_;
	uint64_t nextHold_ = 1;
};

// ---------------------------------------------------------------------------------------------
// start / stop

void UpowerBackend::start() {
	if (started_) return;
	started_ = true;
	self_ = std::make_shared<UpowerBackend*>(this);
	context_.tree.set(kRoot, {{"available", false}, {"profiles", {{"available", false}}}});
	registerMethods();
	if (!context_.systemBus) {
		setState(BackendState::Failed, "no system bus connection");
		return;
	}
	setState(BackendState::Starting);
	conn_ = &context_.systemBus->connection();
	reaper_ = context_.loop.addDefer([this] { graveyard_.clear(); }, "upower-reaper");
	reaper_.setEnabled(SD_EVENT_OFF);

	// Signals first (DESIGN.md: subscribe before enumerating), then the names.
	installMatches();
	upWatcher_ = std::make_unique<NameWatcher>(
	    *conn_, kUpName, [this](const std::string& owner) { upAppeared(owner); }, [this] { upVanished(); });
	for (size_t i = 0; i < kPpd.size(); ++i)
		ppdWatchers_[i] = std::make_unique<NameWatcher>(
		    *conn_, kPpd[i].name, [this](const std::string&) { ppdNamesChanged(); }, [this] { ppdNamesChanged(); });

	// The bus answers one connection's requests in order, so this reply comes after the
	// watchers' GetNameOwner answers: then a service that is absent is known to be absent.
	busProxy_ = sdbus::createProxy(*conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
	calls_.start("bus",
	             busProxy_->callMethodAsync("GetId").onInterface("org.freedesktop.DBus"), 
	                 [this](const sdbus::Error*, std::string) {
		                 resolved_ = true;
		                 updateState();
	                 });
}

void UpowerBackend::stop() {
	if (!started_) return;
	started_ = false;
	// Tokens still attached to clients must not call back into a stopped backend.
	self_.reset();
	methods_.clear();
	calls_.cancelPrefix("");
	matches_.clear();
	upWatcher_.reset();
	for (auto& w: ppdWatchers_) w.reset();
	devices_.clear();
	display_.reset();
	upProxy_.reset();
	ppdProxy_.reset();
	busProxy_.reset();
	graveyard_.clear();
	reaper_.reset();
	holds_.clear();
	context_.tree.remove(kRoot);
	setState(BackendState::Stopped);
}

void UpowerBackend::installMatches() {
	// One match per service and interface, on the connection, kept for the backend's life.
	// sender= a well-known name is checked by the bus against its current owner, so these
	// survive restarts of either service.
	std::string upProps = fmt::format("type='signal',sender='{}',interface='{}',member='PropertiesChanged',path_namespace='{}'",
	                                  kUpName, kPropsIface, kUpPath);
	matches_.push_back(conn_->addMatch(upProps, [this](sdbus::Message& msg) { upPropertiesChanged(msg); }));
	std::string upSignals = fmt::format("type='signal',sender='{}',interface='{}',path='{}'", kUpName, kUpIface, kUpPath);
	matches_.push_back(conn_->addMatch(upSignals, [this](sdbus::Message& msg) { upSignal(msg); }));
	for (size_t i = 0; i < kPpd.size(); ++i) {
		std::string rule = fmt::format("type='signal',sender='{}',interface='{}',member='PropertiesChanged',path='{}'",
		                               kPpd[i].name, kPropsIface, kPpd[i].path);
		matches_.push_back(conn_->addMatch(rule, [this, i](sdbus::Message& msg) { ppdPropertiesChanged(i, msg); }));
	}
}

void UpowerBackend::updateState() {
	if (!conn_) return;
	bool up = upWatcher_ && upWatcher_->present();
	bool pp = ppdActive_ >= 0;
	if ((up && !upReady_) || (pp && !ppdLoaded_)) {
		setState(BackendState::Starting);
	} else if (up || pp) {
		setState(BackendState::Running);
	} else if (resolved_) {
		setState(BackendState::Unavailable, "neither UPower nor power-profiles-daemon is on the system bus");
	}
}

// ---------------------------------------------------------------------------------------------
// helpers

void UpowerBackend::bury(std::unique_ptr<sdbus::IProxy> proxy) {
	if (!proxy) return;
	graveyard_.push_back(std::move(proxy));
	if (reaper_) reaper_.setEnabled(SD_EVENT_ONESHOT);
	else graveyard_.clear();
}


// Writes `value` (an object) at `path` as per-key changes, so a change addresses one item.
void UpowerBackend::syncObject(const std::string& path, const json& value) {
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
		const json* old = context_.tree.find(pointer::join(path, key));
		if (old && old->is_object() && v.is_object()) syncObject(pointer::join(path, key), v);
		else context_.tree.set(pointer::join(path, key), v);
	}
}

// ---------------------------------------------------------------------------------------------
// UPower

void UpowerBackend::upAppeared(const std::string& owner) {
	log::info("upower", "UPower appeared on the system bus ({})", owner);
	upVanished();   // from scratch, whatever was there
	upProxy_ = sdbus::createProxy(*conn_, kUpName, kUpPath);
	updateState();

	calls_.start("up",
	             upProxy_->callMethodAsync("GetAll").onInterface(kPropsIface).withArguments(std::string(kUpIface)),
	                 [this](const sdbus::Error* e, dbus::Properties props) {
		                 if (e) log::warning("upower", "reading UPower's properties failed: {}: {}", e->getName(), e->getMessage());
		                 else upProps_ = std::move(props);
		                 upPropsLoaded_ = true;
		                 if (upReady_) publishDaemon();
		                 maybeUpReady();
	                 });

	calls_.start("up",
	             upProxy_->callMethodAsync("GetCriticalAction").onInterface(kUpIface),
	                 [this](const sdbus::Error* e, std::string action) {
		                 if (e) log::info("upower", "GetCriticalAction failed: {}: {}", e->getName(), e->getMessage());
		                 else criticalAction_ = upower::criticalActionName(action);
		                 criticalDone_ = true;
		                 maybeUpReady();
	                 });

	calls_.start("up",
	             upProxy_->callMethodAsync("GetDisplayDevice").onInterface(kUpIface),
	                 [this](const sdbus::Error* e, sdbus::ObjectPath path) {
		                 if (e) {
			                 log::info("upower", "GetDisplayDevice failed: {}: {}", e->getName(), e->getMessage());
			                 displayDone_ = true;
			                 maybeUpReady();
			                 return;
		                 }
		                 display_ = std::make_unique<Device>();
		                 display_->path = path;
		                 display_->id = upower::deviceId(path);
		                 display_->serial = nextSerial_++;
		                 display_->proxy = sdbus::createProxy(*conn_, kUpName, path);
		                 // A device enumerated under the same path is the display device, not a device.
		                 removeDevice(path);
		                 fetchDevice(*display_, true);
	                 });

	calls_.start("up",
	             upProxy_->callMethodAsync("EnumerateDevices").onInterface(kUpIface),
	                 [this](const sdbus::Error* e, std::vector<sdbus::ObjectPath> paths) {
		                 if (e) log::warning("upower", "EnumerateDevices failed: {}: {}", e->getName(), e->getMessage());
		                 else
			                 for (const auto& p: paths) addDevice(p, true);
		                 enumDone_ = true;
		                 maybeUpReady();
	                 });
}

void UpowerBackend::upVanished() {
	bool had = upProxy_ != nullptr;
	calls_.cancelPrefix("up");
	for (auto& [_, d]: devices_) bury(std::move(d.proxy));
	devices_.clear();
	if (display_) bury(std::move(display_->proxy));
	display_.reset();
	bury(std::move(upProxy_));
	upProps_.clear();
	upPropsLoaded_ = criticalDone_ = displayDone_ = enumDone_ = upReady_ = false;
	criticalAction_ = nullptr;
	reader_.clear();
	auto& tree = context_.tree;
	for (const char* key: {"onBattery", "lidIsPresent", "lidIsClosed", "criticalAction", "daemonVersion", "displayDevice",
	                       "devices"})
		tree.remove(pointer::join(kRoot, key));
	tree.set("/power/available", false);
	if (had) log::info("upower", "UPower left the system bus");
	updateState();
}

UpowerBackend::Device* UpowerBackend::deviceAt(const std::string& path, bool& display) {
	display = display_ && display_->path == path;
	if (display) return display_.get();
	auto it = devices_.find(path);
	return it == devices_.end() ? nullptr : &it->second;
}

void UpowerBackend::addDevice(const std::string& path, bool /*initial*/) {
	if (!upProxy_ || devices_.count(path) || (display_ && display_->path == path)) return;
	Device d;
	d.path = path;
	d.id = upower::deviceId(path);
	d.serial = nextSerial_++;
	try {
		d.proxy = sdbus::createProxy(*conn_, kUpName, path);
	} catch (const sdbus::Error& e) {
		log::warning("upower", "ignoring device {}: {}", path, e.getMessage());
		return;
	}
	auto& ref = devices_.emplace(path, std::move(d)).first->second;
	fetchDevice(ref, false);
}

void UpowerBackend::removeDevice(const std::string& path) {
	auto it = devices_.find(path);
	if (it == devices_.end()) return;
	calls_.cancel("up:" + path);
	bury(std::move(it->second.proxy));
	reader_.forget(path);
	if (it->second.loaded && upReady_) context_.tree.remove(pointer::join(kDevices, it->second.id));
	devices_.erase(it);
	maybeUpReady();
}

void UpowerBackend::fetchDevice(Device& d, bool display) {
	std::string path = d.path;
	uint64_t serial = d.serial;
	calls_.start("up:" + path,
	             d.proxy->callMethodAsync("GetAll").onInterface(kPropsIface).withArguments(std::string(kDevIface)),
	                 [this, path, serial, display](const sdbus::Error* e, dbus::Properties props) {
		                 bool isDisplay = false;
		                 Device* dev = deviceAt(path, isDisplay);
		                 if (!dev || dev->serial != serial || isDisplay != display) return;
		                 if (e) {
			                 // Most often the device left between DeviceAdded and our call.
			                 log::info("upower", "reading device {} failed: {}: {}", path, e->getName(), e->getMessage());
			                 if (display) {
				                 bury(std::move(display_->proxy));
				                 display_.reset();
				                 displayDone_ = true;
				                 maybeUpReady();
			                 } else {
				                 removeDevice(path);
			                 }
			                 return;
		                 }
		                 dev->props = std::move(props);
		                 dev->loaded = true;
		                 if (display) displayDone_ = true;
		                 if (upReady_) publishDevice(*dev, display);
		                 else maybeUpReady();
	                 });
}

void UpowerBackend::maybeUpReady() {
	if (upReady_ || !upProxy_) return;
	if (!upPropsLoaded_ || !criticalDone_ || !displayDone_ || !enumDone_) return;
	for (const auto& [_, d]: devices_)
		if (!d.loaded) return;
	// Everything read: publish the whole domain in this one dispatch, so it lands as one batch.
	upReady_ = true;
	publishDaemon();
	context_.tree.set(kDevices, json::object());
	for (auto& [_, d]: devices_) publishDevice(d, false);
	if (display_ && display_->loaded) publishDevice(*display_, true);
	context_.tree.set("/power/available", true);
	updateState();
}

void UpowerBackend::publishDaemon() {
	auto m = upower::mapDaemon(upProps_);
	for (const auto& name: m.badProperties) reader_.wrongType(kUpPath, name, upProps_);
	m.value["criticalAction"] = criticalAction_;
	context_.tree.update(kRoot, m.value);
}

void UpowerBackend::publishDevice(Device& d, bool display) {
	auto m = upower::mapDevice(d.props);
	for (const auto& name: m.badProperties) reader_.wrongType(d.path, name, d.props);
	context_.tree.update(display ? std::string(kDisplay) : pointer::join(kDevices, d.id), m.value);
}

void UpowerBackend::upSignal(sdbus::Message& msg) {
	try {
		if (!upProxy_ || msg.getSender() != upWatcher_->owner()) return;
		auto member = msg.getMemberName();
		if (member != "DeviceAdded" && member != "DeviceRemoved") return;
		std::string path;
		std::string type, contents;
		msg.peekType(type, contents);
		if (type == "o") {
			sdbus::ObjectPath p;
			msg >> p;
			path = p;
		} else if (type == "s") {   // UPower before 0.99 sent the path as a string
			msg >> path;
		} else {
			return;
		}
		if (member == "DeviceAdded") addDevice(path, false);
		else removeDevice(path);
	} catch (const sdbus::Error& e) {
		log::warning("upower", "malformed UPower signal: {}", e.getMessage());
	}
}

void UpowerBackend::upPropertiesChanged(sdbus::Message& msg) {
	try {
		if (!upProxy_ || msg.getSender() != upWatcher_->owner()) return;
		std::string iface;
		dbus::Properties changed;
		std::vector<std::string> invalidated;
		msg >> iface >> changed >> invalidated;
		auto path = msg.getPath();
		if (path == kUpPath && iface == kUpIface) {
			// Before GetAll answered, its reply (sent later) is newer than this signal.
			if (!upPropsLoaded_) return;
			for (auto& [k, v]: changed) upProps_[k] = std::move(v);
			for (const auto& k: invalidated) upProps_.erase(k);
			if (upReady_) publishDaemon();
			return;
		}
		if (iface != kDevIface) return;
		bool display = false;
		Device* d = deviceAt(path, display);
		if (!d || !d->loaded) return;
		for (auto& [k, v]: changed) d->props[k] = std::move(v);
		if (!invalidated.empty()) {
			fetchDevice(*d, display);
			return;
		}
		if (upReady_) publishDevice(*d, display);
	} catch (const sdbus::Error& e) {
		log::warning("upower", "malformed PropertiesChanged from UPower: {}", e.getMessage());
	}
}

// ---------------------------------------------------------------------------------------------
// power-profiles-daemon

void UpowerBackend::ppdNamesChanged() {
	int want = -1;
	for (size_t i = 0; i < kPpd.size(); ++i)
		if (ppdWatchers_[i] && ppdWatchers_[i]->present()) {
			want = int(i);
			break;
		}
	std::string owner = want >= 0 ? ppdWatchers_[size_t(want)]->owner() : std::string();
	if (want == ppdActive_ && owner == ppdOwner_) return;

	bool ownerChanged = owner != ppdOwner_;
	calls_.cancel("ppd");   // pending actions answer BackendUnavailable
	bury(std::move(ppdProxy_));
	ppdProps_.clear();
	ppdLoaded_ = false;
	if (ppdActive_ >= 0) reader_.forget(ppd().name);
	ppdUnknown_.clear();
	{
		// Cancelled HoldProfile calls answered BackendUnavailable: those holds are forgotten.
		// With a new instance, the holds died with the old one; they are made again below.
		std::vector<uint64_t> drop;
		for (auto& [id, h]: holds_) {
			if (ownerChanged) {
				h.cookie.reset();
				h.owner.clear();
			}
			h.pending = false;
			if (!h.confirmed || h.released) drop.push_back(id);
		}
		for (auto id: drop) {
			auto client = holds_[id].client.lock();
			holds_.erase(id);
			if (client) client->detach("power.hold." + std::to_string(id));
		}
	}
	if (ppdActive_ >= 0 && want != ppdActive_)
		log::info("upower", "{} left the system bus", kPpd[size_t(ppdActive_)].name);
	ppdActive_ = want;
	ppdOwner_ = owner;
	if (want < 0) {
		context_.tree.set(kProfiles, {{"available", false}});
		updateState();
		return;
	}
	log::info("upower", "using power profiles from {} ({})", ppd().name, owner);
	ppdProxy_ = sdbus::createProxy(*conn_, ppd().name, ppd().path);
	updateState();
	calls_.start("ppd",
	             ppdProxy_->callMethodAsync("GetAll").onInterface(kPropsIface).withArguments(std::string(ppd().iface)),
	                 [this, ownerChanged](const sdbus::Error* e, dbus::Properties props) {
		                 if (e) log::warning("upower", "reading {}'s properties failed: {}: {}", ppd().name, e->getName(),
		                                     e->getMessage());
		                 else ppdProps_ = std::move(props);
		                 ppdLoaded_ = true;
		                 publishProfiles();
		                 if (ownerChanged)
			                 for (auto& [_, h]: holds_)
				                 if (!h.cookie && !h.pending) hold(h, nullptr);
		                 updateState();
	                 });
}

void UpowerBackend::ppdPropertiesChanged(size_t service, sdbus::Message& msg) {
	try {
		if (int(service) != ppdActive_ || !ppdLoaded_) return;
		if (msg.getSender() != ppdOwner_ || msg.getPath() != kPpd[service].path) return;
		std::string iface;
		dbus::Properties changed;
		std::vector<std::string> invalidated;
		msg >> iface >> changed >> invalidated;
		if (iface != kPpd[service].iface) return;
		for (auto& [k, v]: changed) ppdProps_[k] = std::move(v);
		for (const auto& k: invalidated) ppdProps_.erase(k);
		publishProfiles();
	} catch (const sdbus::Error& e) {
		log::warning("upower", "malformed PropertiesChanged from {}: {}", kPpd[service].name, e.getMessage());
	}
}

void UpowerBackend::publishProfiles() {
	auto m = upower::mapProfiles(ppdProps_);
	for (const auto& name: m.badProperties) reader_.wrongType(ppd().name, name, ppdProps_);
	for (const auto& u: m.unknownValues)
		if (ppdUnknown_.insert(u).second) log::warning("upower", "{}: unknown value {}; mapped to \"unknown\" or left out", ppd().name, u);
	m.value["available"] = true;
	m.value["busName"] = ppd().name;
	syncObject(kProfiles, m.value);
}

void UpowerBackend::refreshHolds() {
	// power-profiles-daemon before 0.20 (and python-dbusmock) does not signal
	// ActiveProfileHolds after HoldProfile/ReleaseProfile, so read it after our own calls.
	if (!ppdProxy_) return;
	calls_.start("ppd",
	             ppdProxy_->callMethodAsync("Get").onInterface(kPropsIface)
	                 .withArguments(std::string(ppd().iface), std::string("ActiveProfileHolds")),
	                 [this](const sdbus::Error* e, sdbus::Variant v) {
		                 if (e || !ppdLoaded_) return;
		                 ppdProps_["ActiveProfileHolds"] = std::move(v);
		                 publishProfiles();
	                 });
}

void UpowerBackend::hold(ClientHold& h, std::shared_ptr<Answer> answer) {
	h.pending = true;
	uint64_t holdId = h.id;
	calls_.start(
	    "ppd",
	    ppdProxy_->callMethodAsync("HoldProfile").onInterface(ppd().iface).withArguments(h.profile, h.reason, h.applicationId),
	    [this, holdId, answer](const sdbus::Error* e, uint32_t cookie) {
		        auto it = holds_.find(holdId);
		        if (e) {
			        log::warning("upower", "HoldProfile failed: {}: {}", e->getName(), e->getMessage());
			        if (answer) answer->failed(*e);
			        if (it != holds_.end()) {
				        it->second.pending = false;
				        if (!it->second.confirmed || it->second.released) {
					        auto client = it->second.client.lock();
					        holds_.erase(it);
					        if (client) client->detach("power.hold." + std::to_string(holdId));
				        }
			        }
			        return;
		        }
		        if (it == holds_.end() || it->second.released) {
			        // The client let go (or went away) while we waited.
			        release(cookie);
			        if (it != holds_.end()) holds_.erase(it);
			        if (answer) answer->result({{"cookie", holdId}});
			        return;
		        }
		        auto& h = it->second;
		        h.pending = false;
		        h.cookie = cookie;
		        h.owner = ppdOwner_;
		        h.confirmed = true;
		        if (answer) answer->result({{"cookie", holdId}});
		        refreshHolds();
	    });
}

void UpowerBackend::release(uint32_t cookie) {
	if (!ppdProxy_) return;
	calls_.start("ppd",
	             ppdProxy_->callMethodAsync("ReleaseProfile").onInterface(ppd().iface).withArguments(cookie),
	                 [this, cookie](const sdbus::Error* e) {
		                 if (e) log::info("upower", "ReleaseProfile({}) failed: {}: {}", cookie, e->getName(), e->getMessage());
		                 refreshHolds();
	                 });
}

// A client's hold token was destroyed (disconnect or power.releaseProfile).
void UpowerBackend::clientReleased(uint64_t id) {
	auto it = holds_.find(id);
	if (it == holds_.end()) return;
	auto& h = it->second;
	if (h.pending) {
		h.released = true;   // released when HoldProfile answers
		return;
	}
	if (h.cookie && h.owner == ppdOwner_) release(*h.cookie);
	holds_.erase(it);
}

// ---------------------------------------------------------------------------------------------
// methods

std::string UpowerBackend::checkProfile(const Params& p) {
	auto name = p.string("profile");
	auto ppdName = upower::ppdProfileName(name);
	if (!ppdName) Params::fail("profile", "one of \"powerSaver\", \"balanced\", \"performance\"");
	auto tree = *upower::profileName(*ppdName);
	const json* available = context_.tree.find("/power/profiles/profiles");
	if (available && available->is_array() && std::find(available->begin(), available->end(), tree) == available->end())
		throw RpcException(ErrorCode::InvalidParams, "The " + tree + " profile is not available on this machine",
		                   {{"param", "profile"}, {"expected", "one of the profiles in /power/profiles/profiles"},
		                    {"available", *available}});
	return *ppdName;
}

void UpowerBackend::registerMethods() {
	auto& disp = context_.dispatcher;
	auto unavailable = [this]() {
		std::string why = !conn_ ? "there is no system bus connection" : "power-profiles-daemon is not on the system bus";
		return RpcException(ErrorCode::BackendUnavailable, "Power profiles are unavailable: " + why,
		                    {{"backend", "upower"}, {"path", kProfiles}});
	};

	disp.addAsync("power.setProfile", [this, unavailable](const json& params, Responder responder, ClientSession&) {
		Params p(params);
		(void)p.string("profile");
		if (!ppdReady()) throw unavailable();
		auto profile = checkProfile(p);
		auto answer = std::make_shared<Answer>(std::move(responder), "upower", ppd().name);
		calls_.start("ppd",
		             ppdProxy_->callMethodAsync("Set").onInterface(kPropsIface)
		                 .withArguments(std::string(ppd().iface), std::string("ActiveProfile"), sdbus::Variant(profile)),
		                 [answer, profile](const sdbus::Error* e) {
			                 if (e) answer->failed(*e);
			                 else answer->result({{"profile", *upower::profileName(profile)}});
		                 });
	});
	methods_.emplace_back(disp, "power.setProfile");

	disp.addAsync("power.holdProfile", [this, unavailable](const json& params, Responder responder, ClientSession& client) {
		Params p(params);
		(void)p.string("profile");
		auto reason = p.optString("reason").value_or("");
		auto applicationId = p.optString("applicationId").value_or("qsd");
		if (!ppdReady()) throw unavailable();
		auto profile = checkProfile(p);
		auto id = nextHold_++;
		auto& h = holds_[id];
		h.id = id;
		h.client = client.weak();
		h.profile = profile;
		h.reason = reason;
		h.applicationId = applicationId;
		// The token is the client's from now on: a disconnect before the answer releases too.
		client.attach("power.hold." + std::to_string(id),
		              std::make_shared<HoldToken>(std::weak_ptr<UpowerBackend*>(self_), id));
		hold(h, std::make_shared<Answer>(std::move(responder), "upower", ppd().name));
	});
	methods_.emplace_back(disp, "power.holdProfile");

	disp.add("power.releaseProfile", [this](const json& params, ClientSession& client) {
		Params p(params);
		auto cookie = p.integer("cookie");
		auto it = cookie > 0 ? holds_.find(uint64_t(cookie)) : holds_.end();
		if (it == holds_.end() || it->second.client.lock().get() != &client)
			throw RpcException(ErrorCode::NotFound, "No profile hold with this cookie on this connection",
			                   {{"param", "cookie"}, {"cookie", cookie}});
		// The token's destruction releases the hold (now, or when HoldProfile answers).
		client.detach("power.hold." + std::to_string(cookie));
		return json{{"cookie", cookie}};
	});
	methods_.emplace_back(disp, "power.releaseProfile");
}

} // namespace

std::unique_ptr<Backend> createUpowerBackend(BackendContext& context) { return std::make_unique<UpowerBackend>(context); }

} // namespace qsd
