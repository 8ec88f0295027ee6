#include "properties.hpp"

#include "raw.hpp"

namespace qsd::dbus {

PropertiesChanged PropertiesChanged::read(sdbus::Message& msg, const std::set<std::string>* keep) {
	PropertiesChanged c;
	c.interface = readInterface(msg);
	c.readValues(msg, keep);
	return c;
}

std::string PropertiesChanged::readInterface(sdbus::Message& msg) {
	const char* interface = nullptr;
	if (checkRead(sd_bus_message_read_basic(rawMessage(msg), 's', &interface), "interface") == 0)
		throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", "malformed message: the interface is missing");
	return interface ? interface : "";
}

void PropertiesChanged::readValues(sdbus::Message& msg, const std::set<std::string>* keep) {
	sd_bus_message* m = rawMessage(msg);
	readProperties(msg, changed, keep);
	if (checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "s"), "invalidated") == 0)
		throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", "malformed message: the invalidated list is missing");
	for (;;) {
		const char* name = nullptr;
		if (checkRead(sd_bus_message_read_basic(m, 's', &name), "invalidated name") == 0) break;
		invalidated.emplace_back(name ? name : "");
	}
	checkRead(sd_bus_message_exit_container(m), "invalidated");
}

void PropertySet::assign(Properties values) {
	values_ = std::move(values);
	loaded_ = true;
}

void PropertySet::clear() {
	values_.clear();
	loaded_ = false;
	++generation_;
}

std::optional<PropertySet::Change> PropertySet::apply(PropertiesChanged& change) {
	if (!interface_.empty() && change.interface != interface_) return std::nullopt;
	Change out;
	for (auto& [k, v]: change.changed) {
		out.names.push_back(k);
		if (loaded_) values_.insert_or_assign(k, std::move(v));
	}
	for (const auto& k: change.invalidated) {
		out.names.push_back(k);
		if (loaded_) values_.erase(k);
		out.invalidated = true;
	}
	return out;
}

std::optional<PropertySet::Change> PropertySet::apply(sdbus::Message& msg) {
	auto change = PropertiesChanged::read(msg);
	return apply(change);
}

void PropertySet::load(CallSet& calls, std::string group, sdbus::IProxy& proxy, std::function<void(const sdbus::Error*)> done,
                       std::chrono::microseconds timeout) {
	uint64_t generation = ++generation_;
	auto invoker = proxy.callMethodAsync("GetAll").onInterface(kPropertiesIface).withArguments(interface_);
	if (timeout.count() > 0) invoker.withTimeout(timeout);
	calls.start(std::move(group), invoker, [this, generation, done = std::move(done)](const sdbus::Error* e, Properties props) {
		// A newer load (or a clear) went out meanwhile: this answer is stale.
		if (generation != generation_) return;
		if (!e) assign(std::move(props));
		if (done) done(e);
	});
}

} // namespace qsd::dbus
