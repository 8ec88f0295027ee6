#include "settings.hpp"

#include "mapping.hpp"

#include "../../dbus/variant.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <arpa/inet.h>

#include <limits>

namespace qsd::nm {

using json = nlohmann::json;

namespace {

using dbus::signatureOf;

json toJson(const sdbus::Variant& v) {
	auto sig = signatureOf(v);
	try {
		if (sig == "aay") {   // ipv6.dns and similar: arrays of byte arrays
			json a = json::array();
			for (const auto& bytes: v.get<std::vector<std::vector<uint8_t>>>()) {
				auto text = ipv6FromBytes(bytes);
				a.push_back(text.empty() ? json(bytes) : json(text));
			}
			return a;
		}
		if (sig == "au") return v.get<std::vector<uint32_t>>();
	} catch (const sdbus::Error&) {
		return nullptr;
	}
	return dbus::variantToJson(v);
}

// The D-Bus types of NetworkManager settings a client is likely to add (nm-settings-dbus(5)).
std::string knownSignature(const std::string& group, const std::string& key) {
	static const std::map<std::string, std::string> common = {
	    {"connection.autoconnect", "b"}, {"connection.autoconnect-priority", "i"}, {"connection.autoconnect-retries", "i"},
	    {"connection.id", "s"}, {"connection.interface-name", "s"}, {"connection.zone", "s"}, {"connection.metered", "i"},
	    {"connection.permissions", "as"}, {"connection.auth-retries", "i"}, {"connection.type", "s"},
	    {"connection.uuid", "s"}, {"connection.timestamp", "t"},
	    {"802-11-wireless.ssid", "ay"}, {"802-11-wireless.hidden", "b"}, {"802-11-wireless.mode", "s"},
	    {"802-11-wireless.band", "s"}, {"802-11-wireless.channel", "u"}, {"802-11-wireless.powersave", "u"},
	    {"802-11-wireless.mtu", "u"}, {"802-11-wireless.bssid", "ay"}, {"802-11-wireless.mac-address", "ay"},
	    {"802-11-wireless.cloned-mac-address", "ay"}, {"802-11-wireless.security", "s"},
	    {"802-11-wireless-security.key-mgmt", "s"}, {"802-11-wireless-security.auth-alg", "s"},
	    {"802-11-wireless-security.proto", "as"}, {"802-11-wireless-security.pairwise", "as"},
	    {"802-11-wireless-security.group", "as"}, {"802-11-wireless-security.psk", "s"},
	    {"802-11-wireless-security.psk-flags", "u"}, {"802-11-wireless-security.pmf", "i"},
	    {"802-11-wireless-security.wep-key-type", "u"}, {"802-11-wireless-security.wep-tx-keyidx", "u"},
	    {"802-3-ethernet.auto-negotiate", "b"}, {"802-3-ethernet.speed", "u"}, {"802-3-ethernet.duplex", "s"},
	    {"802-3-ethernet.mtu", "u"}, {"802-3-ethernet.wake-on-lan", "u"}, {"802-3-ethernet.mac-address", "ay"},
	};
	if (auto it = common.find(group + "." + key); it != common.end()) return it->second;
	if (group == "ipv4" || group == "ipv6") {
		static const std::map<std::string, std::string> ip = {
		    {"method", "s"}, {"gateway", "s"}, {"ignore-auto-dns", "b"}, {"ignore-auto-routes", "b"},
		    {"never-default", "b"}, {"may-fail", "b"}, {"route-metric", "x"}, {"route-table", "u"},
		    {"dns-search", "as"}, {"dns-options", "as"}, {"dns-priority", "i"}, {"address-data", "aa{sv}"},
		    {"route-data", "aa{sv}"}, {"dhcp-hostname", "s"}, {"dhcp-send-hostname", "b"}, {"dhcp-timeout", "i"},
		    {"required-timeout", "i"}, {"addr-gen-mode", "i"}, {"ip6-privacy", "i"},
		};
		if (auto it = ip.find(key); it != ip.end()) return it->second;
		if (key == "dns") return group == "ipv4" ? "au" : "aay";
	}
	return {};
}

std::string inferSignature(const json& v) {
	if (v.is_boolean()) return "b";
	if (v.is_string()) return "s";
	if (v.is_number_integer() || v.is_number_unsigned()) return "i";
	if (v.is_number_float()) return "d";
	if (v.is_array()) {
		bool strings = true, objects = true;
		for (const auto& e: v) {
			strings = strings && e.is_string();
			objects = objects && e.is_object();
		}
		if (strings) return "as";
		if (objects) return "aa{sv}";
		return {};
	}
	if (v.is_object()) {
		bool strings = true;
		for (const auto& [_, e]: v.items()) strings = strings && e.is_string();
		return strings ? "a{ss}" : "a{sv}";
	}
	return {};
}

// Values inside a{sv} / aa{sv} (address-data, route-data): prefixes and metrics are u.
std::optional<sdbus::Variant> inferVariant(const json& v) {
	if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) return jsonToVariant(v, "u");
	auto sig = inferSignature(v);
	if (sig.empty()) return std::nullopt;
	return jsonToVariant(v, sig);
}

template <typename T>
std::optional<sdbus::Variant> integer(const json& v) {
	if (!v.is_number_integer() && !v.is_number_unsigned()) return std::nullopt;
	if (v.is_number_unsigned()) {
		auto u = v.get<uint64_t>();
		if (u > uint64_t(std::numeric_limits<T>::max())) return std::nullopt;
		return sdbus::Variant(T(u));
	}
	auto i = v.get<int64_t>();
	if constexpr (std::is_signed_v<T>) {
		if (i < int64_t(std::numeric_limits<T>::min()) || i > int64_t(std::numeric_limits<T>::max())) return std::nullopt;
	} else {
		if (i < 0 || uint64_t(i) > uint64_t(std::numeric_limits<T>::max())) return std::nullopt;
	}
	return sdbus::Variant(T(i));
}

std::optional<std::vector<uint8_t>> bytesOf(const json& v) {
	if (v.is_string()) return ssidFromKey(v.get<std::string>());
	if (!v.is_array()) return std::nullopt;
	std::vector<uint8_t> out;
	for (const auto& e: v) {
		if (!e.is_number_integer() && !e.is_number_unsigned()) return std::nullopt;
		auto i = e.get<int64_t>();
		if (i < 0 || i > 255) return std::nullopt;
		out.push_back(uint8_t(i));
	}
	return out;
}

// NetworkManager renamed some properties and still sends both spellings in GetSettings. When an
// Update carries both, the daemon takes the legacy one and ignores the other
// (_nm_setting_use_legacy_property in libnm-core: "The daemon prefers the legacy property if it
// exists"). So a change to one spelling must not travel with the cached value of the other, or
// NetworkManager keeps the old value without a word. Each entry: the key a change names -> the
// cached key that would override it. `gateway` is no twin of `addresses`, but the legacy
// `addresses` carries the gateway too, and NetworkManager then ignores `gateway` the same way.
const std::vector<std::string>& overriddenBy(const std::string& group, const std::string& key) {
	static const std::vector<std::string> none;
	static const std::map<std::string, std::vector<std::string>> ip = {
	    {"address-data", {"addresses"}}, {"addresses", {"address-data"}}, {"route-data", {"routes"}},
	    {"routes", {"route-data"}},      {"dns-data", {"dns"}},           {"dns", {"dns-data"}},
	    {"gateway", {"addresses"}},
	};
	static const std::map<std::string, std::vector<std::string>> connection = {
	    {"controller", {"master"}},     {"master", {"controller"}},
	    {"port-type", {"slave-type"}},  {"slave-type", {"port-type"}},
	    {"autoconnect-ports", {"autoconnect-slaves"}}, {"autoconnect-slaves", {"autoconnect-ports"}},
	};
	static const std::map<std::string, std::vector<std::string>> mac = {
	    {"mac-address-denylist", {"mac-address-blacklist"}}, {"mac-address-blacklist", {"mac-address-denylist"}},
	    {"assigned-mac-address", {"cloned-mac-address"}},     {"cloned-mac-address", {"assigned-mac-address"}},
	};
	const std::map<std::string, std::vector<std::string>>* table = nullptr;
	if (group == "ipv4" || group == "ipv6") table = &ip;
	else if (group == "connection") table = &connection;
	else if (group == "802-3-ethernet" || group == "802-11-wireless") table = &mac;
	if (!table) return none;
	auto it = table->find(key);
	return it == table->end() ? none : it->second;
}

} // namespace

std::optional<sdbus::Variant> jsonToVariant(const json& v, const std::string& sig) {
	if (sig == "s") return v.is_string() ? std::optional(sdbus::Variant(v.get<std::string>())) : std::nullopt;
	if (sig == "b") return v.is_boolean() ? std::optional(sdbus::Variant(v.get<bool>())) : std::nullopt;
	if (sig == "i") return integer<int32_t>(v);
	if (sig == "u") return integer<uint32_t>(v);
	if (sig == "x") return integer<int64_t>(v);
	if (sig == "t") return integer<uint64_t>(v);
	if (sig == "y") return integer<uint8_t>(v);
	if (sig == "n") return integer<int16_t>(v);
	if (sig == "q") return integer<uint16_t>(v);
	if (sig == "d") return v.is_number() ? std::optional(sdbus::Variant(v.get<double>())) : std::nullopt;
	if (sig == "ay") {
		auto b = bytesOf(v);
		if (!b) return std::nullopt;
		return sdbus::Variant(*b);
	}
	if (sig == "as") {
		if (!v.is_array()) return std::nullopt;
		std::vector<std::string> out;
		for (const auto& e: v) {
			if (!e.is_string()) return std::nullopt;
			out.push_back(e.get<std::string>());
		}
		return sdbus::Variant(out);
	}
	if (sig == "au" || sig == "ai") {
		if (!v.is_array()) return std::nullopt;
		std::vector<uint32_t> u;
		std::vector<int32_t> i;
		for (const auto& e: v) {
			if (sig == "au" && e.is_string()) {   // ipv4.dns given as dotted quads
				in_addr a{};
				if (inet_pton(AF_INET, e.get<std::string>().c_str(), &a) != 1) return std::nullopt;
				u.push_back(a.s_addr);
				continue;
			}
			auto x = sig == "au" ? integer<uint32_t>(e) : integer<int32_t>(e);
			if (!x) return std::nullopt;
			if (sig == "au") u.push_back(x->get<uint32_t>());
			else i.push_back(x->get<int32_t>());
		}
		return sig == "au" ? sdbus::Variant(u) : sdbus::Variant(i);
	}
	if (sig == "aay") {   // ipv6.dns as textual addresses or byte arrays
		if (!v.is_array()) return std::nullopt;
		std::vector<std::vector<uint8_t>> out;
		for (const auto& e: v) {
			if (e.is_string()) {
				in6_addr a{};
				if (inet_pton(AF_INET6, e.get<std::string>().c_str(), &a) != 1) return std::nullopt;
				out.emplace_back(a.s6_addr, a.s6_addr + 16);
				continue;
			}
			auto b = bytesOf(e);
			if (!b) return std::nullopt;
			out.push_back(*b);
		}
		return sdbus::Variant(out);
	}
	if (sig == "a{ss}") {
		if (!v.is_object()) return std::nullopt;
		std::map<std::string, std::string> out;
		for (const auto& [k, e]: v.items()) {
			if (!e.is_string()) return std::nullopt;
			out[k] = e.get<std::string>();
		}
		return sdbus::Variant(out);
	}
	if (sig == "a{sv}") {
		if (!v.is_object()) return std::nullopt;
		std::map<std::string, sdbus::Variant> out;
		for (const auto& [k, e]: v.items()) {
			auto x = inferVariant(e);
			if (!x) return std::nullopt;
			out.emplace(k, std::move(*x));
		}
		return sdbus::Variant(out);
	}
	if (sig == "aa{sv}") {
		if (!v.is_array()) return std::nullopt;
		std::vector<std::map<std::string, sdbus::Variant>> out;
		for (const auto& obj: v) {
			if (!obj.is_object()) return std::nullopt;
			std::map<std::string, sdbus::Variant> m;
			for (const auto& [k, e]: obj.items()) {
				auto x = inferVariant(e);
				if (!x) return std::nullopt;
				m.emplace(k, std::move(*x));
			}
			out.push_back(std::move(m));
		}
		return sdbus::Variant(out);
	}
	return std::nullopt;
}

json settingsToJson(const RawSettings& settings) {
	json out = json::object();
	for (const auto& [group, keys]: settings) {
		json g = json::object();
		for (const auto& [key, value]: keys) {
			if (isSecretKey(key)) continue;
			g[key] = toJson(value);
		}
		out[group] = std::move(g);
	}
	return out;
}

RawSettings mergeSettings(const RawSettings& base, const json& changes) {
	if (!changes.is_object()) rpc::Params::fail("settings", "an object {group: {key: value or null}}");
	RawSettings out = base;
	for (const auto& [group, keys]: changes.items()) {
		if (keys.is_null()) {
			out.erase(group);
			continue;
		}
		std::string param = "settings." + group;
		if (!keys.is_object())
			throw rpc::RpcException(rpc::ErrorCode::InvalidParams, "Invalid params: " + param + " must be an object or null",
			                        {{"param", param}, {"expected", "an object {key: value or null} or null"}});
		auto& target = out[group];
		for (const auto& [key, value]: keys.items()) {
			// The cached other spelling goes, unless the change names it too (then both are
			// the caller's, sent as given).
			for (const auto& other: overriddenBy(group, key))
				if (!keys.contains(other)) target.erase(other);
			if (value.is_null()) {
				target.erase(key);
				continue;
			}
			std::string sig;
			if (auto it = target.find(key); it != target.end()) sig = signatureOf(it->second);
			if (sig.empty()) sig = knownSignature(group, key);
			if (sig.empty()) sig = inferSignature(value);
			auto v = sig.empty() ? std::nullopt : jsonToVariant(value, sig);
			if (!v) {
				std::string p = param + "." + key;
				throw rpc::RpcException(rpc::ErrorCode::InvalidParams, "Invalid params: " + p + " does not fit its D-Bus type",
				                        {{"param", p}, {"expected", sig.empty() ? std::string("a value of a known type")
				                                                                : "a value of D-Bus type " + sig}});
			}
			target.insert_or_assign(key, std::move(*v));
		}
	}
	return out;
}

ProfileInfo profileInfo(const RawSettings& settings) {
	ProfileInfo info;
	auto group = [&](const char* name) -> const std::map<std::string, sdbus::Variant>* {
		auto it = settings.find(name);
		return it == settings.end() ? nullptr : &it->second;
	};
	auto str = [](const std::map<std::string, sdbus::Variant>* g, const char* key) {
		if (!g) return std::string();
		auto it = g->find(key);
		if (it == g->end()) return std::string();
		return dbus::asString(it->second).value_or("");
	};
	const auto* c = group("connection");
	info.id = str(c, "id");
	info.uuid = str(c, "uuid");
	info.type = str(c, "type");
	info.interfaceName = str(c, "interface-name");
	if (c) {
		if (auto it = c->find("timestamp"); it != c->end()) info.timestamp = dbus::asUint(it->second).value_or(0);
		if (auto it = c->find("autoconnect"); it != c->end()) info.autoconnect = dbus::asBool(it->second).value_or(true);
	}
	info.vpnServiceType = str(group("vpn"), "service-type");
	if (const auto* w = group("802-11-wireless")) {
		if (auto it = w->find("ssid"); it != w->end()) info.ssid = dbus::asBytes(it->second);
		info.wifiMode = str(w, "mode");
	}
	if (const auto* s = group("802-11-wireless-security")) {
		json sec = json::object();
		for (const auto& [key, value]: *s)
			if (!isSecretKey(key)) sec[key] = toJson(value);
		info.security = std::move(sec);
	}
	return info;
}

} // namespace qsd::nm
