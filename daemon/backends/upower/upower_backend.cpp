// The "upower" backend's life cycle, and UPower and its devices (upower_backend.hpp says how
// the backend is split).

#include "upower_backend.hpp"

#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <chrono>
#include <utility>

namespace qsd::upower {

// ---------------------------------------------------------------------------------------------
// start / stop

void UpowerBackend::onBusStart() {
	// One match per service and interface, kept for the backend's life: sender= a well-known
	// name is checked by the bus against its current owner, so these survive restarts of either
	// service. Signals first (subscribe before enumerating), then the names.
	match(fmt::format("type='signal',sender='{}',interface='{}',member='PropertiesChanged',path_namespace='{}'", kUpName,
	                  kPropsIface, kUpPath),
	      [this](sdbus::Message& msg) { upPropertiesChanged(msg); }, "PropertiesChanged from UPower");
	match(fmt::format("type='signal',sender='{}',interface='{}',path='{}'", kUpName, kUpIface, kUpPath),
	      [this](sdbus::Message& msg) { upSignal(msg); }, "UPower signal");
	for (size_t i = 0; i < kPpd.size(); ++i)
		match(fmt::format("type='signal',sender='{}',interface='{}',member='PropertiesChanged',path='{}'", kPpd[i].name,
		                  kPropsIface, kPpd[i].path),
		      [this, i](sdbus::Message& msg) { ppdPropertiesChanged(i, msg); }, std::string("PropertiesChanged from ") + kPpd[i].name);
	for (size_t i = 0; i < kPpd.size(); ++i)
		match(fmt::format("type='signal',sender='{}',interface='{}',member='ProfileReleased',path='{}'", kPpd[i].name,
		                  kPpd[i].iface, kPpd[i].path),
		      [this, i](sdbus::Message& msg) { ppdProfileReleased(i, msg); }, std::string("ProfileReleased from ") + kPpd[i].name);
	// upowerd and power-profiles-daemon are D-Bus activated: nothing else may have started them
	// on a minimal session, so each name without an owner at start is started, once.
	NameWatcher::Options activate{true, [this] { updateState(); }};
	upWatcher_ = std::make_unique<NameWatcher>(
	    bus(), kUpName, [this](const std::string& owner) { upAppeared(owner); }, [this] { upVanished(); }, activate);
	for (size_t i = 0; i < kPpd.size(); ++i)
		ppdWatchers_[i] = std::make_unique<NameWatcher>(
		    bus(), kPpd[i].name, [this](const std::string&) { ppdNamesChanged(); }, [this] { ppdNamesChanged(); }, activate);
}

void UpowerBackend::onBusStop() {
	upWatcher_.reset();
	for (auto& w: ppdWatchers_) w.reset();
	upRetry_.reset();
	ppdRetry_.reset();
	devices_.clear();
	display_.reset();
	upProxy_.reset();
	ppdProxy_.reset();
	ppdHoldProxy_.reset();
	holds_.clear();
}

std::optional<Unavailable> UpowerBackend::availability() const {
	if (!ppdReady()) return Unavailable{kProfiles, "power-profiles-daemon is not on the system bus"};
	return std::nullopt;
}

void UpowerBackend::updateState() {
	if (!connected() || !upWatcher_) return;
	bool up = upWatcher_->present();
	bool pp = ppdActive_ >= 0;
	// A name not known yet, or a service being started.
	bool waiting = false;
	std::string why;
	for (const auto* w: {upWatcher_.get(), ppdWatchers_[0].get(), ppdWatchers_[1].get()}) {
		if (!w) continue;
		auto st = w->status();
		waiting = waiting || st == NameWatcher::Status::Resolving || st == NameWatcher::Status::Activating;
		if (!w->activationError().empty()) why += "; " + w->name() + " could not be started: " + w->activationError();
	}
	if ((up && !upReady_) || (pp && !ppdProps_.loaded()) || waiting) setState(BackendState::Starting);
	else if (up || pp) setState(BackendState::Running);
	else setState(BackendState::Unavailable, "neither UPower nor power-profiles-daemon is on the system bus" + why);
}

// ---------------------------------------------------------------------------------------------
// UPower

void UpowerBackend::upAppeared(const std::string& owner) {
	log::info("upower", "UPower appeared on the system bus ({})", owner);
	upVanished();   // from scratch, whatever was there
	upProxy_ = sdbus::createProxy(conn(), kUpName, kUpPath);
	updateState();

	upRead(kReadAll);
}

// The start-up reads: UPower's properties, its critical action, its display device and its
// devices. The domain is published once all of them answered. One that failed counts as
// answered for that (the domain does not wait for it) and is asked again (upLate): one that
// did not answer in time, and one answered with an error, which nothing else would ever make
// good (a failed EnumerateDevices left every battery out until UPower restarted). A method an
// old UPower does not have is not asked again.
void UpowerBackend::upRead(unsigned what) {
	if (what & kReadProps)
		upProps_.load(
		    calls_, "up", *upProxy_,
		    [this](const sdbus::Error* e) {
			    if (e) upLate(kReadProps, *e);
			    if (e && !upProps_.loaded()) upProps_.assign({});   // the domain does not wait for what it cannot read
			    if (upReady_ && !e) publishDaemon();
			    maybeUpReady();
		    },
		    dbus::kBusyTimeout);
	if (what & kReadCritical)
		calls_.start("up", upProxy_->callMethodAsync("GetCriticalAction").onInterface(kUpIface).withTimeout(dbus::kBusyTimeout),
		             [this](const sdbus::Error* e, std::string action) {
			             if (e) upLate(kReadCritical, *e);
			             else criticalAction_ = upower::criticalActionName(action);
			             criticalDone_ = true;
			             if (upReady_ && !e) publishDaemon();
			             maybeUpReady();
		             });
	if (what & kReadDisplay)
		calls_.start("up", upProxy_->callMethodAsync("GetDisplayDevice").onInterface(kUpIface).withTimeout(dbus::kBusyTimeout),
		             [this](const sdbus::Error* e, sdbus::ObjectPath path) {
			             if (e) {
				             upLate(kReadDisplay, *e);
				             displayDone_ = true;
				             maybeUpReady();
				             return;
			             }
			             display_ = std::make_unique<Device>();
			             display_->path = path;
			             display_->id = upower::deviceId(path);
			             display_->serial = nextSerial_++;
			             display_->proxy = sdbus::createProxy(conn(), kUpName, path);
			             display_->retry = Retry(kRereadDisplay);
			             // A device enumerated under the same path is the display device, not a device.
			             removeDevice(path);
			             fetchDevice(*display_, true);
		             });
	if (what & kReadDevices)
		calls_.start("up", upProxy_->callMethodAsync("EnumerateDevices").onInterface(kUpIface).withTimeout(dbus::kBusyTimeout),
		             [this](const sdbus::Error* e, std::vector<sdbus::ObjectPath> paths) {
			             if (e) upLate(kReadDevices, *e);
			             else
				             for (const auto& p: paths) addDevice(p);
			             enumDone_ = true;
			             maybeUpReady();
		             });
}

void UpowerBackend::upLate(unsigned what, const sdbus::Error& e) {
	const char* read = what == kReadProps ? "its properties" : what == kReadCritical ? "GetCriticalAction"
	                 : what == kReadDisplay ? "GetDisplayDevice" : "EnumerateDevices";
	if (e.getName() == "org.freedesktop.DBus.Error.UnknownMethod") {
		log::info("upower", "UPower has no {}: {}", read, e.getMessage());
		return;
	}
	upLate_ |= what;
	if (upRetry_.pending()) return;   // asked again with the others
	auto delay = upRetry_.schedule(
	    context_.loop,
	    [this] {
		    unsigned late = std::exchange(upLate_, 0);
		    if (upProxy_ && late) upRead(late);
	    },
	    "upower-late");
	if (dbus::timedOut(e))
		log::at(upRetry_.level(), "upower", "UPower did not answer in time; asking again in {} s", wholeSeconds(*delay));
	else
		log::at(upRetry_.level(), "upower", "reading {} of UPower failed: {}: {}; asking again in {} s", read, e.getName(),
		        e.getMessage(), wholeSeconds(*delay));
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
	criticalDone_ = displayDone_ = enumDone_ = upReady_ = false;
	upLate_ = 0;
	upRetry_.reset();
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

void UpowerBackend::addDevice(const std::string& path) {
	if (!upProxy_ || devices_.count(path) || (display_ && display_->path == path)) return;
	Device d;
	d.path = path;
	d.id = upower::deviceId(path);
	d.serial = nextSerial_++;
	try {
		d.proxy = sdbus::createProxy(conn(), kUpName, path);
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
	if (it->second.props.loaded() && upReady_) context_.tree.remove(pointer::join(kDevices, it->second.id));
	devices_.erase(it);
	maybeUpReady();
}

void UpowerBackend::fetchDevice(Device& d, bool display) {
	std::string path = d.path;
	uint64_t serial = d.serial;
	d.props.load(
	    calls_, "up:" + path, *d.proxy,
	    [this, path, serial, display](const sdbus::Error* e) {
		    bool isDisplay = false;
		    Device* dev = deviceAt(path, isDisplay);
		    if (!dev || dev->serial != serial || isDisplay != display) return;
		    if (e) return readFailed(*dev, display, *e);
		    dev->retry.reset();
		    if (display) displayDone_ = true;
		    if (upReady_) publishDevice(*dev, display);
		    else maybeUpReady();
	    },
	    dbus::kBusyTimeout);
}

// A GetAll that failed. A device that was never read and answered its first read with an error
// most often left between DeviceAdded and the call: it is forgotten (DeviceRemoved follows). The display device,
// a device read before (its properties were invalidated) and a device that did not answer in
// time (UPower busy) are still there: their stale values leave the tree and they are read again
// with backoff (kReread), without holding the rest of the domain back. A device is given up
// when the backoff is exhausted; the display device never is.
void UpowerBackend::readFailed(Device& d, bool display, const sdbus::Error& e) {
	// Only at the first failure in a row: a device read before is unpublished and cleared at its
	// first failure, and when the read asked again failed too it looked never read, and was
	// forgotten for good while it was still there.
	if (!display && !d.props.loaded() && !d.published && d.retry.failures() == 0 && !dbus::timedOut(e)) {
		log::info("upower", "reading device {} failed: {}: {}", d.path, e.getName(), e.getMessage());
		removeDevice(d.path);
		return;
	}
	if (d.retry.failures() == 0)
		log::info("upower", "reading {} failed: {}: {}; it leaves the tree until it is read again", d.path, e.getName(),
		          e.getMessage());
	if (d.published) {
		context_.tree.remove(display ? std::string(kDisplay) : pointer::join(kDevices, d.id));
		d.published = false;
	}
	d.props.clear();
	std::string path = d.path;
	uint64_t serial = d.serial;
	auto delay = d.retry.schedule(
	    context_.loop,
	    [this, path, serial, display] {
		    bool isDisplay = false;
		    Device* dev = deviceAt(path, isDisplay);
		    if (dev && dev->serial == serial && isDisplay == display) fetchDevice(*dev, display);
	    },
	    "upower-reread");
	if (!delay) {
		log::warning("upower", "device {} could not be read {} times in a row; it is left out", path, d.retry.failures());
		removeDevice(path);
		return;
	}
	if (display && !displayDone_) {
		// The rest of the domain does not wait for it.
		displayDone_ = true;
		maybeUpReady();
	} else if (!display && !d.late) {
		d.late = true;
		maybeUpReady();
	}
}

void UpowerBackend::maybeUpReady() {
	if (upReady_ || !upProxy_) return;
	if (!upProps_.loaded() || !criticalDone_ || !displayDone_ || !enumDone_) return;
	for (const auto& [_, d]: devices_)
		if (!d.props.loaded() && !d.late) return;
	// Everything read: publish the whole domain in this one dispatch, so it lands as one batch.
	upReady_ = true;
	publishDaemon();
	context_.tree.set(kDevices, json::object());
	for (auto& [_, d]: devices_)
		if (d.props.loaded()) publishDevice(d, false);
	if (display_ && display_->props.loaded()) publishDevice(*display_, true);
	context_.tree.set("/power/available", true);
	updateState();
}

void UpowerBackend::publishDaemon() {
	auto m = upower::mapDaemon(upProps_.values());
	for (const auto& name: m.badProperties) reader_.wrongType(kUpPath, name, upProps_.values());
	m.value["criticalAction"] = criticalAction_;
	context_.tree.update(kRoot, m.value);
}

void UpowerBackend::publishDevice(Device& d, bool display, const std::vector<std::string>* changed) {
	// A change maps and writes only the fields of the properties it names: re-mapping the whole
	// device through sdbus::Variant and diffing it in the tree was two thirds of qsd's cost per
	// signal (docs/performance.md, "Where qsd's share goes").
	if (!d.published) changed = nullptr;
	auto m = upower::mapDevice(d.props.values(), changed);
	for (const auto& name: m.badProperties) reader_.wrongType(d.path, name, d.props.values());
	auto at = display ? std::string(kDisplay) : pointer::join(kDevices, d.id);
	if (!changed) context_.tree.update(at, m.value);
	else
		for (auto& [field, value]: m.value.items()) context_.tree.set(pointer::join(at, field), std::move(value));
	d.published = true;
}

void UpowerBackend::upSignal(sdbus::Message& msg) {
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
	if (member == "DeviceAdded") addDevice(path);
	else removeDevice(path);
}

void UpowerBackend::upPropertiesChanged(sdbus::Message& msg) {
	if (!upProxy_ || msg.getSender() != upWatcher_->owner()) return;
	auto change = dbus::PropertiesChanged::read(msg);
	auto path = msg.getPath();
	if (path == kUpPath) {
		// Before GetAll answered, its reply (sent later) is newer than this signal.
		auto c = upProps_.apply(change);
		if (!c || !upProps_.loaded()) return;
		// Invalidated values are gone from the set: they are read again rather than published
		// as their defaults meanwhile (UPower itself sends values; a service that only
		// invalidates, as the Properties interface allows, left them out until qsd restarted).
		if (c->invalidated) return upRead(kReadProps);
		if (upReady_) publishDaemon();
		return;
	}
	bool display = false;
	Device* d = deviceAt(path, display);
	if (!d || !d->props.loaded()) return;
	auto c = d->props.apply(change);
	if (!c) return;
	if (c->invalidated) return fetchDevice(*d, display);
	if (upReady_) publishDevice(*d, display, &c->names);
}


} // namespace qsd::upower

namespace qsd {
std::unique_ptr<Backend> createUpowerBackend(BackendContext& context) { return std::make_unique<upower::UpowerBackend>(context); }
} // namespace qsd
