#pragma once
// org.freedesktop.DBus.Properties, read once for everyone: a PropertiesChanged decoded, and the
// properties of one interface of one object kept current from GetAll and PropertiesChanged.

#include "call_set.hpp"
#include "variant.hpp"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qsd::dbus {

constexpr const char* kPropertiesIface = "org.freedesktop.DBus.Properties";

// PropertiesChanged(s interface, a{sv} changed, as invalidated), from the start of the message.
// read() throws sdbus::Error on a message of another shape. With `keep`, only the changed values
// it names are decoded (the names of the others are not reported either).
struct PropertiesChanged {
	std::string interface;
	Properties changed;
	std::vector<std::string> invalidated;
	static PropertiesChanged read(sdbus::Message& msg, const std::set<std::string>* keep = nullptr);
	// The same in two steps, for a reader that decides from the interface whether to go on.
	static std::string readInterface(sdbus::Message& msg);
	void readValues(sdbus::Message& msg, const std::set<std::string>* keep = nullptr);
};

// The properties of one interface of one object.
class PropertySet {
public:
	struct Change {
		std::vector<std::string> names;   // every property that changed or was invalidated
		bool invalidated = false;         // some value is gone until the set is read again
	};

	explicit PropertySet(std::string interface = {}): interface_(std::move(interface)) {}

	[[nodiscard]] const std::string& interface() const { return interface_; }
	[[nodiscard]] const Properties& values() const { return values_; }
	[[nodiscard]] Properties& values() { return values_; }
	[[nodiscard]] bool loaded() const { return loaded_; }
	[[nodiscard]] const Value* find(const std::string& name) const { return dbus::find(values_, name); }

	// Replaces every value (a GetAll's answer).
	void assign(Properties values);
	void clear();
	// Merges a PropertiesChanged: changed values replace the old ones, invalidated ones are
	// dropped (a peer that invalidates expects them to be read again: see load()). nullopt when
	// it is about another interface. Before the first assign() nothing is merged (the GetAll on
	// its way is newer) but the names are still reported.
	std::optional<Change> apply(PropertiesChanged& change);
	// Decodes and merges in one step (throws sdbus::Error on a malformed message).
	std::optional<Change> apply(sdbus::Message& msg);

	// GetAll(interface) through `proxy`, tracked in `calls` under `group`; on success the values
	// are replaced. `done` runs either way with the error (nullptr on success).
	void load(CallSet& calls, std::string group, sdbus::IProxy& proxy, std::function<void(const sdbus::Error*)> done,
	          std::chrono::microseconds timeout = std::chrono::microseconds(0));

private:
	std::string interface_;
	Properties values_;
	bool loaded_ = false;
	uint64_t generation_ = 0;   // tells a stale GetAll answer from the latest one
};

} // namespace qsd::dbus
