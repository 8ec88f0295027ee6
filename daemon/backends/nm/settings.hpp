#pragma once
// Connection profiles (org.freedesktop.NetworkManager.Settings.Connection): the a{sa{sv}}
// settings as NetworkManager gives them, their JSON form without secrets, and the merge that
// network.updateProfile does (JSON changes written back with the D-Bus types NM expects).
// Pure functions: unit-tested in tests/unit/nm_settings_test.cpp.

#include <sdbus-c++/sdbus-c++.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qsd::nm {

using RawSettings = std::map<std::string, std::map<std::string, sdbus::Variant>>;

// {group: {key: value}} with every secret key (isSecretKey) left out. Values of D-Bus types
// JSON cannot carry faithfully (a(ayuay), aay...) are converted where known (ay -> array of
// numbers) or given as null.
[[nodiscard]] nlohmann::json settingsToJson(const RawSettings& settings);

// Merges `changes` ({group: {key: value or null} or null}) into `base`. A null value removes
// the key (a null group removes the group). A key that exists keeps its D-Bus type; a new key
// takes its type from NetworkManager's setting table where known, else from the JSON type
// (boolean b, string s, integer i, array of strings as, object of strings a{ss}).
// A change to one spelling of a property NetworkManager renamed (ipv4/ipv6 address-data and
// addresses, route-data and routes, dns-data and dns; connection controller and master...) drops
// the other spelling from the result unless the change names it too: NetworkManager would take
// the legacy one and ignore the change. A change to ipv4/ipv6 gateway drops the legacy addresses
// (which carry a gateway of their own) for the same reason.
// Throws rpc::RpcException (-32602, data {param: "settings.<group>.<key>", expected}) for a
// value that does not fit.
[[nodiscard]] RawSettings mergeSettings(const RawSettings& base, const nlohmann::json& changes);

// One JSON value as a variant of D-Bus signature `signature`; std::nullopt when it cannot be
// (wrong JSON type, out of range, or a signature qsd cannot write).
[[nodiscard]] std::optional<sdbus::Variant> jsonToVariant(const nlohmann::json& value, const std::string& signature);

// Fields the backend matches profiles on (never secrets).
struct ProfileInfo {
	std::string id;
	std::string uuid;
	std::string type;                      // connection.type ("802-11-wireless", "802-3-ethernet", ...)
	std::string interfaceName;             // connection.interface-name, "" when unbound
	uint64_t timestamp = 0;                // connection.timestamp (last activation, s)
	bool autoconnect = true;               // connection.autoconnect (NetworkManager omits it when true)
	std::string vpnServiceType;            // vpn.service-type ("org.freedesktop.NetworkManager.openvpn")
	std::optional<std::vector<uint8_t>> ssid;   // 802-11-wireless.ssid
	std::string wifiMode;                  // 802-11-wireless.mode ("" = infrastructure)
	nlohmann::json security = nullptr;     // 802-11-wireless-security without secrets, or null
};
[[nodiscard]] ProfileInfo profileInfo(const RawSettings& settings);

} // namespace qsd::nm
