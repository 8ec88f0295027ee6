#pragma once
// sdbus::Variant -> JSON, for the D-Bus types the backends read. Never trusts the peer: an
// unexpected type gives std::nullopt (typed getters) or null (variantToJson), never a throw.

#include <sdbus-c++/sdbus-c++.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qsd::dbus {

using Properties = std::map<std::string, sdbus::Variant>;

// Best-effort conversion of basic types, arrays of them, a{sv}, aa{sv}, a{ss}, aa{ss} and ay
// (as an array of numbers). Unknown signatures give null.
[[nodiscard]] nlohmann::json variantToJson(const sdbus::Variant& v);

// Typed reads that accept any integer width where a number is expected.
[[nodiscard]] std::optional<bool> asBool(const sdbus::Variant& v);
[[nodiscard]] std::optional<int64_t> asInt(const sdbus::Variant& v);
[[nodiscard]] std::optional<uint64_t> asUint(const sdbus::Variant& v);
[[nodiscard]] std::optional<double> asDouble(const sdbus::Variant& v);
[[nodiscard]] std::optional<std::string> asString(const sdbus::Variant& v);   // s, o and g
[[nodiscard]] std::optional<std::vector<std::string>> asStrings(const sdbus::Variant& v); // as, ao
[[nodiscard]] std::optional<std::vector<uint8_t>> asBytes(const sdbus::Variant& v);     // ay

// Looks a key up in a property map.
[[nodiscard]] const sdbus::Variant* find(const Properties& props, const std::string& key);

} // namespace qsd::dbus
