// The bluetooth.* methods. Each answers once BlueZ answered the call that carries it out; the
// state it changes arrives through the tree. Discovery is a claim of the client's connection.

#include "bluetooth_backend.hpp"

#include "../../log.hpp"

#include <fmt/format.h>

#include <cstring>

namespace qsd::bluetooth {

using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;

namespace {
constexpr const char* kPropsIface = "org.freedesktop.DBus.Properties";

// The answer of a call whose reply carries nothing: `result` when it succeeded.
auto answerWith(std::shared_ptr<Answer> a, json result) {
	return [a = std::move(a), result = std::move(result)](const sdbus::Error* e) {
		if (e) a->failed(*e);
		else a->result(result);
	};
}
} // namespace

std::span<const Backend::Method> BluetoothBackend::methods() const {
	static constexpr Method table[] = {
	    method<&BluetoothBackend::setEnabled>("bluetooth.setEnabled"),
	    method<&BluetoothBackend::setDiscoverable>("bluetooth.setDiscoverable"),
	    method<&BluetoothBackend::setPairable>("bluetooth.setPairable"),
	    // Giving a claim up works whatever the state of BlueZ.
	    method<&BluetoothBackend::setDiscovering>("bluetooth.setDiscovering", false),
	    method<&BluetoothBackend::pair>("bluetooth.pair"),
	    method<&BluetoothBackend::cancelPairing>("bluetooth.cancelPairing"),
	    method<&BluetoothBackend::connectDevice>("bluetooth.connect"),
	    method<&BluetoothBackend::disconnectDevice>("bluetooth.disconnect"),
	    method<&BluetoothBackend::forget>("bluetooth.forget"),
	    method<&BluetoothBackend::setTrusted>("bluetooth.setTrusted"),
	    method<&BluetoothBackend::setBlocked>("bluetooth.setBlocked"),
	    method<&BluetoothBackend::setWakeAllowed>("bluetooth.setWakeAllowed"),
	    method<&BluetoothBackend::setAlias>("bluetooth.setAlias"),
	    method<&BluetoothBackend::answer>("bluetooth.answer"),
	};
	return table;
}

BluetoothBackend::AdapterModel& BluetoothBackend::adapter(const Params& p, const char* param) {
	auto key = p.string(param);
	auto it = adapters_.find(key);
	if (it == adapters_.end()) throw RpcException(ErrorCode::NotFound, "No adapter " + key, {{"param", param}, {param, key}});
	return it->second;
}

BluetoothBackend::DeviceModel& BluetoothBackend::device(const Params& p, const char* param) {
	auto key = p.string(param);
	auto it = devices_.find(key);
	if (it == devices_.end() || !it->second.published)
		throw RpcException(ErrorCode::NotFound, "No device " + key, {{"param", param}, {param, key}});
	return it->second;
}

void BluetoothBackend::callMethod(const std::string& path, const char* iface, const char* method,
                                  const std::function<void(sdbus::MethodCall&)>& fill, std::function<void(const sdbus::Error*)> done,
                                  std::chrono::microseconds timeout) {
	auto& px = cache_->proxy(path);
	auto msg = px.createMethodCall(iface, method);
	if (fill) fill(msg);
	calls_.start({}, px, msg, [done = std::move(done)](sdbus::MethodReply*, const sdbus::Error* e) { done(e); }, timeout);
}

void BluetoothBackend::setProperty(const std::string& path, const char* iface, const char* name, sdbus::Variant value,
                                   std::function<void(const sdbus::Error*)> done) {
	std::string i = iface, n = name;
	callMethod(path, kPropsIface, "Set", [&](sdbus::MethodCall& m) { m << i << n << value; }, std::move(done));
}

// ---------------------------------------------------------------------------------------------
// adapters

void BluetoothBackend::setEnabled(Call& c) {
	const auto& p = c.params();
	auto key = p.string("adapter");
	(void)adapter(p);
	bool on = p.boolean("enabled");
	auto answer = c.answer();
	if (on && rfkill_ && rfkill_->available()) {
		auto block = rfkill_->table().blockOf(key);
		auto names = fmt::format("{}", fmt::join(block.names, ", "));
		// BlueZ cannot power a blocked radio ("Failed to set mode"): the block goes first.
		if (block.hard) {
			auto message = fmt::format("{} is hard-blocked by rfkill ({}): a switch or the firmware blocks it", key, names);
			return answer->error(ErrorCode::BackendFailed, message,
			                     {{"backend", "bluetooth"}, {"name", "qsd.rfkill.HardBlocked"}, {"message", message}, {"switches", block.names}});
		}
		if (block.soft) {
			for (auto idx: block.softSwitches) {
				if (int err = rfkill_->unblock(idx)) {
					auto message = fmt::format("{} is soft-blocked by rfkill ({}) and qsd may not unblock it: {}", key, names,
					                           std::strerror(err));
					return answer->error(ErrorCode::BackendFailed, message,
					                     {{"backend", "bluetooth"}, {"name", "qsd.rfkill.SoftBlocked"}, {"message", message},
					                      {"switches", block.names}});
				}
			}
			log::info("bluetooth", "lifting the rfkill soft block of {} ({})", key, names);
			// Powered once the kernel reports the switch unblocked (unblocked()).
			auto pending = std::make_unique<PendingUnblock>();
			pending->adapter = key;
			pending->answer = answer;
			auto* raw = pending.get();
			pending->timer = context_.loop.addTimer(
			    kUnblockTimeout,
			    [this, raw] {
				    auto it = std::find_if(unblocks_.begin(), unblocks_.end(), [raw](const auto& u) { return u.get() == raw; });
				    if (it == unblocks_.end()) return;
				    auto u = std::move(*it);
				    unblocks_.erase(it);
				    auto message = fmt::format("{}: rfkill did not report the soft block lifted", u->adapter);
				    u->answer->error(ErrorCode::BackendFailed, message,
				                     {{"backend", "bluetooth"}, {"name", "qsd.rfkill.SoftBlocked"}, {"message", message}});
			    },
			    "bluetooth-unblock");
			unblocks_.push_back(std::move(pending));
			return;
		}
	}
	power(key, on, std::move(answer));
}

void BluetoothBackend::unblocked() {
	if (unblocks_.empty() || !ready_) return;
	std::vector<std::unique_ptr<PendingUnblock>> due;
	for (auto it = unblocks_.begin(); it != unblocks_.end();) {
		// The adapter may go and come back while the kernel unblocks it; it must be there.
		bool there = adapters_.count((*it)->adapter) != 0;
		bool free = !rfkill_ || !rfkill_->available() || !rfkill_->table().blockOf((*it)->adapter).soft;
		if (there && free) {
			due.push_back(std::move(*it));
			it = unblocks_.erase(it);
		} else {
			++it;
		}
	}
	for (auto& u: due) power(u->adapter, true, u->answer);
}

void BluetoothBackend::power(const std::string& key, bool on, std::shared_ptr<Answer> answer) {
	auto it = adapters_.find(key);
	if (it == adapters_.end())
		return answer->error(ErrorCode::NotFound, "No adapter " + key, {{"param", "adapter"}, {"adapter", key}});
	auto& a = it->second;
	// The latest call wins (the serial below): a setEnabled(true) still waiting for the kernel to
	// lift a soft block must not power the adapter when the kernel reports, after this call. It is
	// answered now; the block it lifted stays lifted.
	std::vector<std::unique_ptr<PendingUnblock>> superseded;
	for (auto u = unblocks_.begin(); u != unblocks_.end();) {
		if ((*u)->adapter == key) {
			superseded.push_back(std::move(*u));
			u = unblocks_.erase(u);
		} else {
			++u;
		}
	}
	for (auto& u: superseded) {
		auto message = fmt::format("{}: superseded by a later bluetooth.setEnabled", key);
		u->answer->error(ErrorCode::BackendFailed, message,
		                 {{"backend", "bluetooth"}, {"name", "qsd.bluetooth.Superseded"}, {"message", message}});
	}
	uint64_t serial = nextSerial_++;
	a.pending = on ? Intent::On : Intent::Off;
	a.serial = serial;
	a.awaitingPowered = false;
	publishAdapter(key);
	setProperty(a.path, kAdapterIface, "Powered", sdbus::Variant(on), [this, key, serial, on, answer](const sdbus::Error* e) {
		auto it = adapters_.find(key);
		if (it != adapters_.end() && it->second.serial == serial) {
			auto& a = it->second;
			const auto* v = cache_->property(a.path, kAdapterIface, "Powered");
			bool reached = v && dbus::asBool(*v) == on;
			// Accepted but not there yet: "enabling" lasts until Powered changes (changed()).
			if (e || reached) a.pending = Intent::None;
			else a.awaitingPowered = true;
			publishAdapter(key);
		}
		if (e) answer->failed(*e);
		else answer->result({{"adapter", key}, {"enabled", on}});
	});
}

void BluetoothBackend::setAdapterFlag(Call& c, const char* param, const char* property, const char* timeoutProperty) {
	const auto& p = c.params();
	auto key = p.string("adapter");
	auto path = adapter(p).path;
	bool on = p.boolean(param);
	auto timeout = p.optInteger("timeout");
	json result = {{"adapter", key}, {param, on}};
	if (timeout) result["timeout"] = *timeout;
	auto answer = c.answer();
	std::string prop = property;
	auto setFlag = [this, path, prop, on, answer, result] {
		setProperty(path, kAdapterIface, prop.c_str(), sdbus::Variant(on), answerWith(answer, result));
	};
	if (!timeout) return setFlag();
	// The timeout first: BlueZ starts counting when the flag is set.
	setProperty(path, kAdapterIface, timeoutProperty, sdbus::Variant(uint32_t(*timeout)), [answer, setFlag](const sdbus::Error* e) {
		if (e) return answer->failed(*e);
		setFlag();
	});
}

void BluetoothBackend::setDiscoverable(Call& c) { setAdapterFlag(c, "discoverable", "Discoverable", "DiscoverableTimeout"); }

void BluetoothBackend::setPairable(Call& c) { setAdapterFlag(c, "pairable", "Pairable", "PairableTimeout"); }

// ---------------------------------------------------------------------------------------------
// discovery: BlueZ keeps one discovery session per D-Bus client, and stops it when that client
// leaves the bus or calls StopDiscovery. qsd is that one client for all of its clients: a session
// runs while at least one connection claims it.

void BluetoothBackend::setDiscovering(Call& c) {
	const auto& p = c.params();
	auto key = p.string("adapter");
	bool on = p.boolean("enabled");
	std::string leaseKey = "bluetooth.discovery." + key;
	if (!on) {
		// A claim is given up whatever the state of BlueZ and of its adapter (it may have gone
		// with the claim held); giving up none names an unknown adapter like any other call.
		if (!revokeLease(c.client(), leaseKey) && ready_) (void)adapter(p);
		return c.result({{"adapter", key}, {"enabled", false}});
	}
	if (auto why = precondition()) throw unavailable(*why);
	if (auto why = availability()) throw unavailable(*why);
	(void)adapter(p);
	uint64_t holder = nextHolder_++;
	auto& d = discovery_[key];
	d.holders.insert(holder);
	// Replacing this client's earlier claim releases that one (after this one is counted).
	grantLease(c.client(), leaseKey, [this, key, holder] { discoveryReleased(key, holder); });
	auto answer = c.answer();
	auto& dd = discovery_[key];
	if (dd.phase == Discovery::Phase::Running) answer->result({{"adapter", key}, {"enabled", true}});
	else dd.waiting.emplace_back(holder, answer);
	// A new claim tries a refused start again.
	if (dd.phase == Discovery::Phase::Failed) dd.phase = Discovery::Phase::Stopped;
	reconcileDiscovery(key);
}

void BluetoothBackend::discoveryReleased(const std::string& adapter, uint64_t holder) {
	auto it = discovery_.find(adapter);
	if (it == discovery_.end()) return;
	it->second.holders.erase(holder);
	reconcileDiscovery(adapter);
}

void BluetoothBackend::reconcileDiscovery(const std::string& key) {
	auto it = discovery_.find(key);
	if (it == discovery_.end()) return;
	auto& d = it->second;
	auto a = adapters_.find(key);
	if (ready_ && a != adapters_.end()) {
		if (!d.holders.empty() && d.phase == Discovery::Phase::Stopped) {
			d.phase = Discovery::Phase::Starting;
			uint64_t serial = ++d.serial;
			log::info("bluetooth", "discovery on {} starts ({} claim(s))", key, d.holders.size());
			callMethod(a->second.path, kAdapterIface, "StartDiscovery", {}, [this, key, serial](const sdbus::Error* e) {
				auto it = discovery_.find(key);
				if (it == discovery_.end() || it->second.serial != serial) return;
				auto& d = it->second;
				auto waiting = std::move(d.waiting);
				d.waiting.clear();
				if (e) {
					// The claims asked now are refused; they are not kept (the client may ask again).
					// Claims held from before wait for the adapter to change.
					log::info("bluetooth", "StartDiscovery on {} failed: {}: {}", key, e->getName(), e->getMessage());
					d.phase = Discovery::Phase::Failed;
					for (auto& [h, _]: waiting) d.holders.erase(h);
				} else {
					d.phase = Discovery::Phase::Running;
				}
				for (auto& [_, answer]: waiting) {
					if (e) answer->failed(*e);
					else answer->result({{"adapter", key}, {"enabled", true}});
				}
				reconcileDiscovery(key);
			});
			return;
		}
		if (d.holders.empty() && d.phase == Discovery::Phase::Running) {
			d.phase = Discovery::Phase::Stopping;
			uint64_t serial = ++d.serial;
			log::info("bluetooth", "discovery on {} stops (no claim left)", key);
			callMethod(a->second.path, kAdapterIface, "StopDiscovery", {}, [this, key, serial](const sdbus::Error* e) {
				auto it = discovery_.find(key);
				if (it == discovery_.end() || it->second.serial != serial) return;
				if (e) log::debug("bluetooth", "StopDiscovery on {}: {}: {}", key, e->getName(), e->getMessage());
				it->second.phase = Discovery::Phase::Stopped;
				reconcileDiscovery(key);
			});
			return;
		}
	}
	bool idle = d.phase == Discovery::Phase::Stopped || d.phase == Discovery::Phase::Failed;
	if (d.holders.empty() && idle && d.waiting.empty()) discovery_.erase(it);
}

void BluetoothBackend::retryDiscovery(const std::string& key) {
	auto it = discovery_.find(key);
	if (it == discovery_.end() || it->second.phase != Discovery::Phase::Failed) return;
	it->second.phase = Discovery::Phase::Stopped;
	reconcileDiscovery(key);
}

void BluetoothBackend::discoveryPoweredOff(const std::string& key) {
	auto it = discovery_.find(key);
	if (it == discovery_.end() || it->second.phase != Discovery::Phase::Running) return;
	// The session went with the power; nothing is left to stop. Powered again, it starts anew
	// for the claims still held (retryDiscovery); a claim asked meanwhile tries at once.
	log::info("bluetooth", "{} powered off: its discovery session ended", key);
	it->second.phase = Discovery::Phase::Failed;
	++it->second.serial;
	reconcileDiscovery(key);
}

void BluetoothBackend::discoveryLost(const std::string& key) {
	auto it = discovery_.find(key);
	if (it == discovery_.end()) return;
	// The adapter went with its session. Claims asked meanwhile answer BackendUnavailable; the
	// claims held start discovery again when the adapter is back.
	auto& d = it->second;
	d.phase = Discovery::Phase::Stopped;
	++d.serial;
	auto waiting = std::move(d.waiting);
	d.waiting.clear();
	for (auto& [h, _]: waiting) d.holders.erase(h);
	waiting.clear();
	reconcileDiscovery(key);
}

// ---------------------------------------------------------------------------------------------
// devices

void BluetoothBackend::pair(Call& c) {
	auto& d = device(c.params());
	auto key = c.params().string("device");
	auto path = d.path;
	auto instance = d.instance;
	++d.pairing;
	publishDevice(key);
	auto answer = c.answer();
	callMethod(
	    path, kDeviceIface, "Pair", {},
	    [this, key, path, instance, answer](const sdbus::Error* e) {
		    // Only the device the call was for: one removed and found again meanwhile (the answer
		    // can take kPairTimeout) has pairings and a passkey shown of its own.
		    auto it = devices_.find(key);
		    bool same = it != devices_.end() && it->second.instance == instance;
		    if (same) {
			    if (it->second.pairing > 0) --it->second.pairing;
			    publishDevice(key);
		    }
		    // The pairing failed: BlueZ sends no Cancel for the passkey or PIN code it had qsd show
		    // (those calls wait for no answer), which would stay on screen until the timeout.
		    // InProgress is no failure of the pairing that goes on (another one's).
		    if (same && e && e->getName() != "org.bluez.Error.InProgress") endDisplayOf(key, "the pairing failed");
		    if (e) return answer->failed(*e);
		    // Trusted, or the device will not reconnect on its own (what bluetoothctl users do by hand).
		    setProperty(path, kDeviceIface, "Trusted", sdbus::Variant(true), [answer, key](const sdbus::Error* e) {
			    if (e) log::warning("bluetooth", "{} is paired, but setting Trusted failed: {}", key, e->getName());
			    answer->result({{"device", key}, {"paired", true}, {"trusted", e == nullptr}});
		    });
	    },
	    kPairTimeout);
}

void BluetoothBackend::cancelPairing(Call& c) {
	auto& d = device(c.params());
	auto key = c.params().string("device");
	auto answer = c.answer();
	callMethod(d.path, kDeviceIface, "CancelPairing", {}, [this, key, answer](const sdbus::Error* e) {
		// Cancelled, or BlueZ had no pairing of its own to cancel (DoesNotExist: the other side
		// started it): either way the user is done with it, and what it showed goes.
		endDisplayOf(key, "the pairing was cancelled");
		if (e) answer->failed(*e);
		else answer->result({{"device", key}});
	});
}

void BluetoothBackend::connectDevice(Call& c) {
	auto& d = device(c.params());
	auto key = c.params().string("device");
	d.pending = Intent::On;
	uint64_t serial = d.serial = nextSerial_++;
	publishDevice(key);
	auto answer = c.answer();
	callMethod(
	    d.path, kDeviceIface, "Connect", {},
	    [this, key, serial, answer](const sdbus::Error* e) {
		    auto it = devices_.find(key);
		    if (it != devices_.end() && it->second.serial == serial) {
			    it->second.pending = Intent::None;
			    publishDevice(key);
		    }
		    if (e) answer->failed(*e);
		    else answer->result({{"device", key}, {"connected", true}});
	    },
	    kConnectTimeout);
}

void BluetoothBackend::disconnectDevice(Call& c) {
	auto& d = device(c.params());
	auto key = c.params().string("device");
	d.pending = Intent::Off;
	uint64_t serial = d.serial = nextSerial_++;
	publishDevice(key);
	auto answer = c.answer();
	callMethod(d.path, kDeviceIface, "Disconnect", {}, [this, key, serial, answer](const sdbus::Error* e) {
		auto it = devices_.find(key);
		if (it != devices_.end() && it->second.serial == serial) {
			it->second.pending = Intent::None;
			publishDevice(key);
		}
		if (e) answer->failed(*e);
		else answer->result({{"device", key}, {"connected", false}});
	});
}

void BluetoothBackend::forget(Call& c) {
	auto& d = device(c.params());
	auto key = c.params().string("device");
	auto a = adapters_.find(d.adapter);
	if (a == adapters_.end()) throw RpcException(ErrorCode::NotFound, "No adapter " + d.adapter, {{"param", "device"}, {"device", key}});
	sdbus::ObjectPath target(d.path);
	callMethod(a->second.path, kAdapterIface, "RemoveDevice", [&](sdbus::MethodCall& m) { m << target; },
	           answerWith(c.answer(), {{"device", key}}));
}

void BluetoothBackend::setDeviceFlag(Call& c, const char* param, const char* property) {
	auto& d = device(c.params());
	auto key = c.params().string("device");
	bool on = c.params().boolean(param);
	setProperty(d.path, kDeviceIface, property, sdbus::Variant(on), answerWith(c.answer(), {{"device", key}, {param, on}}));
}

void BluetoothBackend::setTrusted(Call& c) { setDeviceFlag(c, "trusted", "Trusted"); }

void BluetoothBackend::setBlocked(Call& c) { setDeviceFlag(c, "blocked", "Blocked"); }

void BluetoothBackend::setWakeAllowed(Call& c) { setDeviceFlag(c, "wakeAllowed", "WakeAllowed"); }

void BluetoothBackend::setAlias(Call& c) {
	const auto& p = c.params();
	bool hasAdapter = p.has("adapter"), hasDevice = p.has("device");
	if (hasAdapter == hasDevice) Params::fail(hasAdapter ? "device" : "adapter", "exactly one of adapter and device");
	auto alias = p.string("alias");
	if (alias.size() > kMaxNameBytes) Params::fail("alias", "at most 248 bytes of UTF-8");
	json result = {{"alias", alias}};
	std::string path;
	const char* iface = nullptr;
	if (hasAdapter) {
		path = adapter(p).path;
		iface = kAdapterIface;
		result["adapter"] = p.string("adapter");
	} else {
		path = device(p).path;
		iface = kDeviceIface;
		result["device"] = p.string("device");
	}
	// "" gives the alias back to the name (BlueZ's rule).
	setProperty(path, iface, "Alias", sdbus::Variant(alias), answerWith(c.answer(), result));
}

} // namespace qsd::bluetooth
