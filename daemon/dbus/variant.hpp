#pragma once
// sdbus::Variant -> JSON, for the D-Bus types the backends read. Never trusts the peer: an
// unexpected type gives std::nullopt (typed getters) or null (variantToJson), never a throw.

#include <sdbus-c++/sdbus-c++.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace qsd::dbus {

using Properties = std::map<std::string, sdbus::Variant>;

// Best-effort conversion of basic types, arrays of them, a{sv}, aa{sv}, a{ss}, aa{ss} and ay
// (as an array of numbers). Unknown signatures give null.
[[nodiscard]] nlohmann::json variantToJson(const sdbus::Variant& v);

// Typed reads that accept any integer width where a number is expected. Each looks at the
// variant's signature once (they run for every field of an object on every change).
[[nodiscard]] std::optional<bool> asBool(const sdbus::Variant& v);
[[nodiscard]] std::optional<int64_t> asInt(const sdbus::Variant& v);
[[nodiscard]] std::optional<uint64_t> asUint(const sdbus::Variant& v);     // negative values: nullopt
[[nodiscard]] std::optional<double> asDouble(const sdbus::Variant& v);
[[nodiscard]] std::optional<std::string> asString(const sdbus::Variant& v);   // s, o and g
[[nodiscard]] std::optional<std::vector<std::string>> asStrings(const sdbus::Variant& v); // as, ao
[[nodiscard]] std::optional<std::vector<uint8_t>> asBytes(const sdbus::Variant& v);     // ay

// An exact sdbus-c++ type (structs, arrays of structs: a tray's a(iiay) pixmaps), nullopt for
// any other type.
template <typename T>
[[nodiscard]] std::optional<T> as(const sdbus::Variant& v) {
	try {
		if (v.containsValueOfType<T>()) return v.get<T>();
	} catch (const sdbus::Error&) {
	}
	return std::nullopt;
}

// The variant's D-Bus signature, "" when it cannot be read.
[[nodiscard]] std::string signatureOf(const sdbus::Variant& v);

// Looks a key up in a property map.
[[nodiscard]] const sdbus::Variant* find(const Properties& props, const std::string& key);

// Reads typed properties out of property maps and degrades a wrongly typed one: the read gives
// std::nullopt (the caller's field becomes null or its default) and a warning is logged once per
// (object, property), so a peer that keeps sending garbage does not flood the journal. A
// missing property is std::nullopt without a warning: most are optional. One reader per
// backend; forget(object) when an object goes, so that a new object at the same path is
// reported again.
class PropertyReader {
public:
	explicit PropertyReader(std::string component): component_(std::move(component)) {}

	[[nodiscard]] std::optional<bool> boolean(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<int64_t> integer(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<uint64_t> unsignedInt(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<double> number(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<std::string> string(const Properties& props, std::string_view object, const std::string& name);
	[[nodiscard]] std::optional<std::vector<std::string>> strings(const Properties& props, std::string_view object,
	                                                              const std::string& name);
	[[nodiscard]] std::optional<std::vector<uint8_t>> bytes(const Properties& props, std::string_view object,
	                                                        const std::string& name);
	template <typename T>
	[[nodiscard]] std::optional<T> value(const Properties& props, std::string_view object, const std::string& name) {
		return read(props, object, name, &as<T>);
	}

	// For mapping code that found a wrongly typed property itself (a pure mapping function
	// returns the names; the backend reports them here). `props` gives the type for the log.
	void wrongType(std::string_view object, const std::string& name, const Properties& props);
	void wrongType(std::string_view object, const std::string& name, const sdbus::Variant* value);
	void forget(std::string_view object);
	void clear() { warned_.clear(); }
	[[nodiscard]] size_t warnings() const { return warned_.size(); }

private:
	template <typename R>
	std::optional<R> read(const Properties& props, std::string_view object, const std::string& name,
	                      std::optional<R> (*conv)(const sdbus::Variant&)) {
		const auto* v = find(props, name);
		if (!v) return std::nullopt;
		auto x = conv(*v);
		if (!x) wrongType(object, name, v);
		return x;
	}

	std::string component_;
	std::set<std::pair<std::string, std::string>, std::less<>> warned_;
};

} // namespace qsd::dbus
