// BlueZ backend: life cycle, the object cache's hooks, the tree and rfkill
// (bluetooth_backend.hpp says how the backend is split).

#include "bluetooth_backend.hpp"

#include "../../log.hpp"

#include <algorithm>
#include <cstdlib>

#include <sys/epoll.h>

namespace qsd::bluetooth {

namespace {
bool has(const std::vector<std::string>& list, const char* name) { return std::find(list.begin(), list.end(), name) != list.end(); }
} // namespace

BluetoothBackend::BluetoothBackend(BackendContext& context): BusBackend(context, Bus::System, "bluetooth") {
	// How long a question waits for a client. BlueZ's own limit is the same 60 s; tests shorten it.
	if (const char* t = std::getenv("QSD_BLUETOOTH_AGENT_TIMEOUT_MS"); t && *t) {
		char* end = nullptr;
		long long ms = std::strtoll(t, &end, 10);
		if (end && *end == '\0' && ms > 0 && ms <= 3600 * 1000) agentTimeout_ = std::chrono::milliseconds(ms);
	}
}

BluetoothBackend::~BluetoothBackend() { stop(); }

// ---------------------------------------------------------------------------------------------
// life cycle

void BluetoothBackend::onBusStart() {
	rfkill_ = std::make_unique<RfkillWatch>(context_.loop, RfkillWatch::fromEnvironment(), [this] { rfkillChanged(); });
	watchIconThemes();
	// The agent is on qsd's connection from the start: BlueZ may call it as soon as it is registered.
	exportAgent();
	// bluetoothd is started by the system (bluetooth.target) where there is hardware; qsd does
	// not activate it. The cache's matches are installed now, before anything is read.
	dbus::ObjectCache::Options options{kBluez, "/", kBluezPath, {false, [this] { updateState(); }}, "bluetooth"};
	// Only what the tree shows is kept: a BLE device also has GATT objects, advertising and
	// manufacturer data, whose values would cost most of the memory and wake qsd for nothing.
	options.interfaces = {
	    {kAdapterIface, {"Name", "Address", "Alias", "Powered", "PowerState", "Discoverable", "DiscoverableTimeout", "Pairable",
	                     "PairableTimeout", "Discovering"}},
	    {kDeviceIface, {"Address", "Name", "Alias", "Icon", "Paired", "Bonded", "Trusted", "Blocked", "Connected", "RSSI",
	                    "WakeAllowed"}},
	    {kBatteryIface, {"Percentage"}},
	};
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
	updateState();
}

void BluetoothBackend::onBusStop() {
	// Pending requests go unanswered: qsd is stopping, and BlueZ cancels them with its timeout.
	requests_.clear();
	unblocks_.clear();
	discovery_.clear();
	iconRescan_.reset();
	iconThemes_.reset();
	cache_.reset();
	agent_.reset();
	rfkill_.reset();
	adapters_.clear();
	devices_.clear();
	ready_ = false;
}

std::optional<Unavailable> BluetoothBackend::availability() const {
	if (!ready_) return Unavailable{kRoot, "BlueZ (bluetoothd) is not on the system bus"};
	return std::nullopt;
}

void BluetoothBackend::updateState() {
	if (!cache_) return;
	switch (cache_->name().status()) {
	case NameWatcher::Status::Present: setState(ready_ ? BackendState::Running : BackendState::Starting); break;
	case NameWatcher::Status::Resolving:
	case NameWatcher::Status::Activating: setState(BackendState::Starting); break;
	case NameWatcher::Status::Absent: setState(BackendState::Unavailable, "BlueZ (bluetoothd) is not on the system bus"); break;
	}
}

void BluetoothBackend::reset() {
	calls_.cancel({});        // actions: their requests answer BackendUnavailable
	calls_.cancel("agent");
	cancelAllRequests("BlueZ left the bus");
	unblocks_.clear();        // their setEnabled answers BackendUnavailable
	for (auto it = discovery_.begin(); it != discovery_.end();) {
		// BlueZ forgot qsd's sessions; the claims held stay, and start discovery again when it is
		// back. A claim whose StartDiscovery was still in flight is answered BackendUnavailable
		// (its Answer goes with `waiting`), so it is not kept either, as in discoveryLost: nothing
		// may start discovery later for a request that failed.
		auto& d = it->second;
		d.phase = Discovery::Phase::Stopped;
		++d.serial;
		for (const auto& w: d.waiting) d.holders.erase(w.first);
		d.waiting.clear();
		it = d.holders.empty() ? discovery_.erase(it) : std::next(it);
	}
	adapters_.clear();
	devices_.clear();
	published_ = 0;
	ready_ = false;
	agentRegistered_ = false;
	agentDefault_ = false;
	agentError_ = nullptr;
	agentRetry_.reset();
	reader_.clear();
}

void BluetoothBackend::appeared() {
	reset();
	log::info("bluetooth", "BlueZ is on the system bus ({})", cache_->owner());
	updateState();
}

void BluetoothBackend::vanished() {
	reset();
	context_.tree.set(kRoot, {{"available", false}});
	log::info("bluetooth", "BlueZ left the system bus");
	updateState();
}

void BluetoothBackend::snapshot() {
	ready_ = true;
	// Everything read: the whole domain lands in one batch.
	context_.tree.set(kRoot, {{"available", true},
	                          {"defaultAdapter", nullptr},
	                          {"adapters", json::object()},
	                          {"devices", json::object()},
	                          {"agent", {{"registered", false}, {"isDefault", false}, {"error", nullptr}, {"requests", json::object()}}}});
	for (const auto& [path, ifaces]: cache_->objects()) {
		if (!ifaces.count(kAdapterIface)) continue;
		if (auto key = adapterKey(path)) addAdapter(path, *key);
	}
	publishDefaultAdapter();
	registerAgent();
	updateState();
}

// ---------------------------------------------------------------------------------------------
// the cache's hooks

void BluetoothBackend::added(const std::string& path, const std::vector<std::string>& interfaces) {
	if (has(interfaces, kAdapterIface)) {
		if (auto key = adapterKey(path)) {
			if (adapters_.count(*key)) publishAdapter(*key);
			else addAdapter(path, *key);
			publishDefaultAdapter();
		} else {
			log::warning("bluetooth", "an adapter at {} is not where BlueZ puts adapters; it is left out", path);
		}
	}
	if (has(interfaces, kDeviceIface) || has(interfaces, kBatteryIface)) {
		auto id = deviceId(path);
		if (!id) {
			if (has(interfaces, kDeviceIface))
				log::warning("bluetooth", "a device at {} is not where BlueZ puts devices; it is left out", path);
			return;
		}
		if (devices_.count(id->key)) publishDevice(id->key);
		else addDevice(path, *id);
	}
}

void BluetoothBackend::removed(const std::string& path, const std::vector<std::string>& interfaces) {
	if (has(interfaces, kAdapterIface)) {
		if (auto key = adapterKey(path); key && adapters_.count(*key)) removeAdapter(*key);
		return;
	}
	auto id = deviceId(path);
	if (!id || !devices_.count(id->key)) return;
	if (has(interfaces, kDeviceIface)) removeDevice(id->key);
	else if (has(interfaces, kBatteryIface)) publishDevice(id->key);
}

void BluetoothBackend::changed(const std::string& path, const std::string& interface, const std::vector<std::string>& names) {
	if (interface == kAdapterIface) {
		auto key = adapterKey(path);
		if (!key) return;
		auto it = adapters_.find(*key);
		if (it == adapters_.end()) return;
		// A setEnabled that BlueZ accepted ends when Powered changes (see power()).
		if (it->second.awaitingPowered && has(names, "Powered")) {
			it->second.pending = Intent::None;
			it->second.awaitingPowered = false;
		}
		publishAdapter(*key);
		if (has(names, "Powered")) {
			const auto* v = cache_->property(it->second.path, kAdapterIface, "Powered");
			// BlueZ ends every discovery session of an adapter that powers off (adapter_stop), qsd's
			// too: the claims still held start a new one when it is powered again. A discovery BlueZ
			// refused (the adapter was off) is tried again then as well.
			if (v && dbus::asBool(*v).value_or(false)) retryDiscovery(*key);
			else discoveryPoweredOff(*key);
		}
		return;
	}
	if (interface != kDeviceIface && interface != kBatteryIface) return;
	auto id = deviceId(path);
	if (!id) return;
	auto it = devices_.find(id->key);
	if (it == devices_.end()) return;
	// The most frequent change by far while discovering: one field, written without rebuilding
	// the device (as mapDevice would write it).
	if (interface == kDeviceIface && names.size() == 1 && names.front() == "RSSI" && it->second.published) {
		json rssi = nullptr;
		if (const auto* v = cache_->property(path, kDeviceIface, "RSSI")) {
			if (auto i = dbus::asInt(*v)) rssi = *i;
			else reader_.wrongType(path, "RSSI", v);
		}
		context_.tree.set(std::string(kDevices) + "/" + id->key + "/rssi", std::move(rssi));
		return;
	}
	publishDevice(id->key);
	// What was shown for the pairing is no longer needed once the device is paired, nor once its
	// link is gone: no pairing goes on without one, and BlueZ cancels no display request (a
	// pairing the other side started and gave up on ends so; questions BlueZ cancels itself).
	if (interface == kDeviceIface) {
		auto boolOf = [&](const char* name) -> std::optional<bool> {
			const auto* v = cache_->property(path, kDeviceIface, name);
			return v ? dbus::asBool(*v) : std::nullopt;
		};
		if (has(names, "Paired") && boolOf("Paired") == true) endDisplayOf(id->key, "the device is paired");
		else if (has(names, "Connected") && boolOf("Connected") == false) endDisplayOf(id->key, "the device disconnected");
	}
}

void BluetoothBackend::addAdapter(const std::string& path, const std::string& key) {
	auto& a = adapters_[key];
	a.path = path;
	publishAdapter(key);
	log::info("bluetooth", "adapter {}", key);
	// Its devices, also those BlueZ announced before it.
	for (const auto& [p, ifaces]: cache_->objects()) {
		if (!ifaces.count(kDeviceIface)) continue;
		auto id = deviceId(p);
		if (id && id->adapter == key && !devices_.count(id->key)) addDevice(p, *id);
	}
	reconcileDiscovery(key);
	unblocked();
}

void BluetoothBackend::removeAdapter(const std::string& key) {
	auto it = adapters_.find(key);
	if (it == adapters_.end()) return;
	std::string path = it->second.path;
	std::vector<std::string> gone;
	for (const auto& [k, d]: devices_)
		if (d.adapter == key) gone.push_back(k);
	for (const auto& k: gone) removeDevice(k);
	// BlueZ does not always announce its devices' removal when their adapter goes (a resume, an
	// rfkill block, a crash): whatever is still cached under it is stale and must not come back.
	cache_->forgetBelow(path);
	adapters_.erase(it);
	reader_.forget(path);
	context_.tree.remove(std::string(kAdapters) + "/" + key);
	publishDefaultAdapter();
	discoveryLost(key);
	log::info("bluetooth", "adapter {} is gone", key);
}

void BluetoothBackend::addDevice(const std::string& path, const DeviceId& id) {
	// A device is shown with its adapter; one that comes first waits for it (addAdapter).
	if (!adapters_.count(id.adapter) || !cache_->properties(path, kDeviceIface)) return;
	auto [it, added] = devices_.try_emplace(id.key);
	auto& d = it->second;
	if (added) d.instance = nextSerial_++;
	d.path = path;
	d.adapter = id.adapter;
	d.address = id.address;
	publishDevice(id.key);
}

void BluetoothBackend::removeDevice(const std::string& key) {
	auto it = devices_.find(key);
	if (it == devices_.end()) return;
	endRequestsOf(key, "the device is gone");
	bool wasPublished = it->second.published;
	reader_.forget(it->second.path);
	devices_.erase(it);
	if (!wasPublished) return;
	--published_;
	context_.tree.remove(std::string(kDevices) + "/" + key);
	// Room again for a device left out over the limit.
	for (auto& [k, d]: devices_) {
		if (published_ >= kMaxDevices) break;
		if (!d.published) publishDevice(k);
	}
}

// ---------------------------------------------------------------------------------------------
// the tree

void BluetoothBackend::publishAdapter(const std::string& key) {
	if (!ready_) return;
	auto it = adapters_.find(key);
	if (it == adapters_.end()) return;
	const auto* props = cache_->properties(it->second.path, kAdapterIface);
	if (!props) return;
	auto mapped = mapAdapter(*props, {rfkillBlocked(key), it->second.pending});
	for (const auto& name: mapped.badProperties) reader_.wrongType(it->second.path, name, *props);
	context_.tree.sync(std::string(kAdapters) + "/" + key, mapped.value);
}

void BluetoothBackend::publishDevice(const std::string& key) {
	if (!ready_) return;
	auto it = devices_.find(key);
	if (it == devices_.end()) return;
	auto& d = it->second;
	const auto* props = cache_->properties(d.path, kDeviceIface);
	if (!props) return;
	const auto* battery = cache_->properties(d.path, kBatteryIface);
	// The theme is searched when the icon name or the installed themes change, not on every
	// RSSI change.
	auto icon = deviceIcon(*props);
	auto& themes = *context_.icons;
	if (icon != d.icon || d.iconVersion != themes.generation() || (icon.empty() && !d.iconUrl.is_null())) {
		d.icon = icon;
		d.iconVersion = themes.generation();
		auto url = themes.url(icon, kIconSize);   // a name only: a path is not taken as a file
		d.iconUrl = url ? json(*url) : json(nullptr);
	}
	DeviceInputs in{d.adapter, d.address, d.pending, d.pairing > 0, d.iconUrl};
	auto mapped = mapDevice(*props, battery, in);
	for (const auto& name: mapped.badProperties) {
		if (name == "Percentage" && battery) reader_.wrongType(d.path, name, *battery);
		else reader_.wrongType(d.path, name, *props);
	}
	std::string path = std::string(kDevices) + "/" + key;
	if (!d.published) {
		if (published_ >= kMaxDevices) {
			if (!overLimitWarned_)
				log::warning("bluetooth", "more than {} devices: {} and later ones are left out of the tree", kMaxDevices, key);
			overLimitWarned_ = true;
			return;
		}
		d.published = true;
		++published_;
		context_.tree.set(path, std::move(mapped.value));
		return;
	}
	context_.tree.sync(path, mapped.value);
}

void BluetoothBackend::publishDefaultAdapter() {
	if (!ready_) return;
	std::vector<std::string> keys;
	for (const auto& [k, _]: adapters_) keys.push_back(k);
	auto key = defaultAdapter(keys);
	context_.tree.set(std::string(kRoot) + "/defaultAdapter", key ? json(*key) : json(nullptr));
}

void BluetoothBackend::publishAgent() {
	if (!ready_) return;
	context_.tree.update(std::string(kRoot) + "/agent",
	                     {{"registered", agentRegistered_}, {"isDefault", agentDefault_}, {"error", agentError_}});
}

// ---------------------------------------------------------------------------------------------
// icon themes

void BluetoothBackend::watchIconThemes() {
	// An icon theme installed while qsd runs: the devices' icons are looked up again.
	iconThemes_ = context_.icons->onChange([this] { iconThemesChanged(); });
	iconRescan_ = context_.loop.addIdleTimer([this] {
		for (const auto& [key, d]: devices_)
			if (d.published) publishDevice(key);
	}, "bluetooth-icon-rescan");
}

void BluetoothBackend::iconThemesChanged() {
	if (sd_event_source_get_enabled(iconRescan_.get(), nullptr) > 0) return;
	log::debug("bluetooth", "the icon themes changed: resolving the devices' icons again");
	iconRescan_.setTime(context_.loop.now() + std::chrono::duration_cast<std::chrono::microseconds>(kIconRescanDelay).count());
}

// ---------------------------------------------------------------------------------------------
// rfkill

bool BluetoothBackend::rfkillBlocked(const std::string& adapter) const {
	return rfkill_ && rfkill_->available() && rfkill_->table().blockOf(adapter).blocked();
}

void BluetoothBackend::rfkillChanged() {
	for (const auto& [key, _]: adapters_) publishAdapter(key);
	unblocked();
}

} // namespace qsd::bluetooth

namespace qsd {
std::unique_ptr<Backend> createBluetoothBackend(BackendContext& context) {
	return std::make_unique<bluetooth::BluetoothBackend>(context);
}
} // namespace qsd
