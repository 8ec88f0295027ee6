#include "object_cache.hpp"

#include "raw.hpp"

#include "../log.hpp"

#include <fmt/format.h>

namespace qsd::dbus {

namespace {
constexpr const char* kManagerIface = "org.freedesktop.DBus.ObjectManager";
} // namespace

ObjectCache::ObjectCache(BusConnection& bus, CallSet& calls, Options options, Hooks hooks)
    : bus_(bus), calls_(calls), options_(std::move(options)), hooks_(std::move(hooks)), group_("cache:" + options_.service) {
	auto& conn = bus_.connection();
	// Subscribe before enumerating (docs/architecture.md, "Backends").
	matches_.push_back(conn.addMatch(fmt::format("type='signal',sender='{}',interface='{}',path='{}'", options_.service,
	                                             kManagerIface, options_.managerPath),
	                                 [this](sdbus::Message& m) { onManager(m); }));
	matches_.push_back(conn.addMatch(fmt::format("type='signal',sender='{}',interface='{}',member='PropertiesChanged',"
	                                             "path_namespace='{}'",
	                                             options_.service, kPropertiesIface, options_.pathNamespace),
	                                 [this](sdbus::Message& m) { onProperties(m); }));
	watcher_ = std::make_unique<NameWatcher>(
	    bus_, options_.service, [this](const std::string& owner) { appeared(owner); }, [this] { vanished(); }, options_.name);
}

ObjectCache::~ObjectCache() {
	calls_.cancel(group_);
	watcher_.reset();
	matches_.clear();
	for (auto& [_, p]: proxies_) bus_.bury(std::move(p));
	for (auto& p: retired_) bus_.bury(std::move(p));
}

const ObjectCache::Interfaces* ObjectCache::object(const std::string& path) const {
	auto it = objects_.find(path);
	return it == objects_.end() ? nullptr : &it->second;
}

const Properties* ObjectCache::properties(const std::string& path, const std::string& interface) const {
	const auto* o = object(path);
	if (!o) return nullptr;
	auto it = o->find(interface);
	return it == o->end() ? nullptr : &it->second;
}

const Value* ObjectCache::property(const std::string& path, const std::string& interface, const std::string& name) const {
	const auto* p = properties(path, interface);
	return p ? find(*p, name) : nullptr;
}

Properties* ObjectCache::mutableProperties(const std::string& path, const std::string& interface) {
	auto it = objects_.find(path);
	if (it == objects_.end()) return nullptr;
	auto jt = it->second.find(interface);
	return jt == it->second.end() ? nullptr : &jt->second;
}

bool ObjectCache::fromOwner(sdbus::Message& msg) const { return !owner_.empty() && msg.getSender() == owner_; }

sdbus::IProxy& ObjectCache::proxy(const std::string& path) {
	auto& p = proxies_[path];
	if (!p) p = sdbus::createProxy(bus_.connection(), options_.service, path);
	return *p;
}

bool ObjectCache::keeps(const std::string& interface) const {
	return options_.interfaces.empty() || options_.interfaces.count(interface) != 0;
}

void ObjectCache::filter(const std::string& interface, Properties& props) const {
	if (options_.interfaces.empty()) return;
	auto it = options_.interfaces.find(interface);
	if (it == options_.interfaces.end() || it->second.empty()) return;
	std::erase_if(props, [&](const auto& kv) { return !it->second.count(kv.first); });
}

void ObjectCache::retire(const std::string& path) {
	for (auto r = rereads_.lower_bound({path, {}}); r != rereads_.end() && r->first.first == path;) r = rereads_.erase(r);
	auto it = proxies_.find(path);
	if (it == proxies_.end()) return;
	retired_.push_back(std::move(it->second));
	proxies_.erase(it);
	while (retired_.size() > kRetiredProxies) {
		bus_.bury(std::move(retired_.front()));
		retired_.pop_front();
	}
}

std::vector<std::string> ObjectCache::forgetBelow(const std::string& path) {
	std::vector<std::string> gone;
	auto prefix = path + "/";
	for (auto it = objects_.lower_bound(prefix); it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
		gone.push_back(it->first);
		it = objects_.erase(it);
	}
	for (const auto& p: gone) retire(p);
	return gone;
}

void ObjectCache::appeared(const std::string& owner) {
	vanished();
	owner_ = owner;
	if (hooks_.appeared) hooks_.appeared(owner);
	enumerate();
}

void ObjectCache::enumerate() {
	auto& px = proxy(options_.managerPath);
	calls_.start(group_, px, px.createMethodCall(kManagerIface, "GetManagedObjects"),
	             [this](sdbus::MethodReply* reply, const sdbus::Error* e) {
		             const bool noManager = e && (e->getName() == "org.freedesktop.DBus.Error.UnknownMethod" ||
		                                          e->getName() == "org.freedesktop.DBus.Error.UnknownInterface" ||
		                                          e->getName() == "org.freedesktop.DBus.Error.UnknownObject");
		             if (e && !noManager) {
			             // A service busy while the system starts (no answer in time, or an error
			             // while it is not ready): asked again for as long as it keeps its name,
			             // since nothing else would ever fill the mirror. An owner that is gone
			             // already is not (its vanish follows and cancels this).
			             auto delay = retry_.schedule(
			                 bus_.loop(),
			                 [this] {
				                 if (!owner_.empty() && !ready_) enumerate();
			                 },
			                 "object-cache-retry");
			             if (timedOut(*e))
				             log::at(retry_.level(), options_.log, "GetManagedObjects on {} did not answer in time; asking again in {} s",
				                     options_.service, wholeSeconds(*delay));
			             else
				             log::at(retry_.level(), options_.log, "GetManagedObjects on {} failed: {}: {}; asking again in {} s",
				                     options_.service, e->getName(), e->getMessage(), wholeSeconds(*delay));
			             return;
		             }
		             if (e) {
			             // The service does not implement ObjectManager: nothing can be mirrored.
			             log::warning(options_.log, "GetManagedObjects on {} failed: {}: {}", options_.service, e->getName(),
			                          e->getMessage());
			             return;
		             }
		             retry_.reset();
		             // a{oa{sa{sv}}}, read straight into the cache: what is not kept is skipped.
		             sd_bus_message* m = rawMessage(*reply);
		             Objects objects;
		             checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{oa{sa{sv}}}"), "objects");
		             for (;;) {
			             if (checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "oa{sa{sv}}"), "object") == 0) break;
			             const char* path = nullptr;
			             checkRead(sd_bus_message_read_basic(m, 'o', &path), "object path");
			             Interfaces kept;
			             readInterfaces(*reply, kept);
			             if (!kept.empty()) objects[path ? path : ""] = std::move(kept);
			             checkRead(sd_bus_message_exit_container(m), "object");
		             }
		             checkRead(sd_bus_message_exit_container(m), "objects");
		             objects_ = std::move(objects);
		             ready_ = true;
		             if (hooks_.ready) hooks_.ready();
	             },
	             options_.timeout);
}

void ObjectCache::readInterfaces(sdbus::Message& msg, Interfaces& out) const {
	sd_bus_message* m = rawMessage(msg);
	checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sa{sv}}"), "interfaces");
	for (;;) {
		if (checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sa{sv}"), "interface") == 0) break;
		const char* name = nullptr;
		checkRead(sd_bus_message_read_basic(m, 's', &name), "interface name");
		std::string iface = name ? name : "";
		if (!keeps(iface)) {
			checkRead(sd_bus_message_skip(m, "a{sv}"), "properties");
		} else {
			const std::set<std::string>* kept = nullptr;
			if (auto k = options_.interfaces.find(iface); k != options_.interfaces.end() && !k->second.empty()) kept = &k->second;
			Properties props;
			readProperties(msg, props, kept);
			out.insert_or_assign(std::move(iface), std::move(props));
		}
		checkRead(sd_bus_message_exit_container(m), "interface");
	}
	checkRead(sd_bus_message_exit_container(m), "interfaces");
}

void ObjectCache::vanished() {
	bool had = !owner_.empty();
	calls_.cancel(group_);
	objects_.clear();
	for (auto& [_, p]: proxies_) bus_.bury(std::move(p));
	proxies_.clear();
	for (auto& p: retired_) bus_.bury(std::move(p));
	retired_.clear();
	owner_.clear();
	ready_ = false;
	retry_.reset();
	rereads_.clear();
	if (had && hooks_.lost) hooks_.lost();
}

void ObjectCache::malformed(const char* what, const std::string& why) {
	if (!warned_) log::warning(options_.log, "malformed {} from {}: {} (further ones are logged at debug level)", what, options_.service, why);
	else log::debug(options_.log, "malformed {} from {}: {}", what, options_.service, why);
	warned_ = true;
}

void ObjectCache::onManager(sdbus::Message& msg) {
	try {
		// Before the snapshot, GetManagedObjects' answer (sent later) is newer than a signal.
		if (!ready_ || !fromOwner(msg)) return;
		std::string member = msg.getMemberName();
		sdbus::ObjectPath path;
		if (member == "InterfacesAdded") {
			Interfaces ifaces;
			msg >> path;
			readInterfaces(msg, ifaces);
			std::vector<std::string> names;
			for (auto& [iface, props]: ifaces) {
				names.push_back(iface);
				objects_[path].insert_or_assign(iface, std::move(props));
			}
			if (hooks_.added && !names.empty()) hooks_.added(path, names);
		} else if (member == "InterfacesRemoved") {
			std::vector<std::string> names;
			msg >> path >> names;
			auto it = objects_.find(path);
			// Removing what is not there is harmless.
			if (it == objects_.end()) return;
			std::vector<std::string> gone;
			for (const auto& n: names)
				if (it->second.erase(n)) gone.push_back(n);
			// Its proxy is retired, not destroyed: a call on the object (Delete, whose answer
			// follows this signal) would be cancelled with it.
			if (it->second.empty()) {
				objects_.erase(it);
				retire(path);
			}
			if (hooks_.removed && !gone.empty()) hooks_.removed(path, gone);
		}
	} catch (const sdbus::Error& e) {
		malformed("ObjectManager signal", e.getMessage());
	} catch (const std::exception& e) {
		// A backend's hook that failed (guard.hpp: nothing may leave a callback of sd-bus).
		log::error("dbus", "{}: handling an ObjectManager signal failed: {}", options_.service, e.what());
	}
}

void ObjectCache::onProperties(sdbus::Message& msg) {
	try {
		if (!ready_ || !fromOwner(msg)) return;
		std::string path = msg.getPath();
		auto it = objects_.find(path);
		// Unknown objects and interfaces get their properties with InterfacesAdded.
		if (it == objects_.end()) return;
		dbus::PropertiesChanged change;
		change.interface = PropertiesChanged::readInterface(msg);
		auto jt = it->second.find(change.interface);
		if (jt == it->second.end()) return;
		const std::set<std::string>* kept = nullptr;
		if (auto k = options_.interfaces.find(change.interface); k != options_.interfaces.end() && !k->second.empty())
			kept = &k->second;
		// Values that are not kept are skipped unread.
		change.readValues(msg, kept);
		std::vector<std::string> names;
		names.reserve(change.changed.size());
		for (auto& [k, v]: change.changed) {
			names.push_back(k);
			jt->second.insert_or_assign(k, std::move(v));
		}
		std::vector<std::string> invalidated;
		for (auto& k: change.invalidated) {
			if (kept && !kept->count(k)) continue;
			jt->second.erase(k);
			invalidated.push_back(std::move(k));
		}
		if (hooks_.changed && !names.empty()) hooks_.changed(path, change.interface, names);
		if (!invalidated.empty()) reread(path, change.interface, std::move(invalidated));
	} catch (const sdbus::Error& e) {
		malformed("PropertiesChanged", e.getMessage());
	} catch (const std::exception& e) {
		log::error("dbus", "{}: handling a PropertiesChanged failed: {}", options_.service, e.what());
	}
}

// Invalidated properties are gone from the cache until this answer; one GetAll of the
// interface brings back those that still have a value (BlueZ invalidates a device's RSSI when
// it is no longer seen: the Get would fail, and the property stays absent).
//
// A read that fails (the service busy, or answering with an error) is made again: until then the
// invalidated values are unknown, and the backend is told so at the first failure, since it still
// shows what it was last told (a hook runs with the names of changed values only). Before, a
// failed read left those values shown as they were until the property changed again.
void ObjectCache::reread(const std::string& path, const std::string& interface, std::vector<std::string> invalidated) {
	// A new invalidation after the reads asked again gave up starts afresh: kept used up, a later
	// failure was never asked again, and logged a warning at every invalidation.
	if (!invalidated.empty())
		if (auto r = rereads_.find({path, interface}); r != rereads_.end() && !r->second->pending()) rereads_.erase(r);
	auto& px = proxy(path);
	calls_.start(group_, px.callMethodAsync("GetAll").onInterface(kPropertiesIface).withArguments(interface),
	             [this, path, interface, invalidated = std::move(invalidated)](const sdbus::Error* e, Properties props) {
		             auto* p = mutableProperties(path, interface);
		             if (!p) return;
		             std::vector<std::string> names;
		             if (e) {
			             auto& retry = rereads_[{path, interface}];
			             if (!retry) retry = std::make_unique<Retry>(kReread);
			             auto delay = retry->schedule(
			                 bus_.loop(),
			                 [this, path, interface] {
				                 if (mutableProperties(path, interface)) reread(path, interface, {});
			                 },
			                 "object-cache-reread");
			             if (delay)
				             log::at(retry->level(log::Level::Info), options_.log, "re-reading {} of {} failed: {}; asking again in {} ms",
				                     interface, path, e->getName(),
				                     std::chrono::duration_cast<std::chrono::milliseconds>(*delay).count());
			             else
				             log::warning(options_.log, "re-reading {} of {} failed: {}; its invalidated properties stay unknown until they change",
				                          interface, path, e->getName());
			             if (hooks_.changed && !invalidated.empty()) hooks_.changed(path, interface, invalidated);
			             return;
		             }
		             rereads_.erase({path, interface});
		             filter(interface, props);
		             for (const auto& [k, _]: *p) names.push_back(k);
		             for (const auto& [k, _]: props)
			             if (!p->count(k)) names.push_back(k);
		             *p = std::move(props);
		             if (hooks_.changed && !names.empty()) hooks_.changed(path, interface, names);
	             });
}

} // namespace qsd::dbus
