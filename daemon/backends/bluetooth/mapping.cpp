#include "mapping.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace qsd::bluetooth {

using json = nlohmann::json;

namespace {

constexpr std::string_view kRoot = "/org/bluez/";

bool isKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// "11_22_33_44_55_66" (as BlueZ spells an address in a path).
bool isPathAddress(std::string_view s) {
	if (s.size() != 17) return false;
	for (size_t i = 0; i < s.size(); ++i) {
		if (i % 3 == 2) {
			if (s[i] != '_') return false;
		} else if (!isHex(s[i])) {
			return false;
		}
	}
	return true;
}

// Reads typed fields into a tree object, noting properties of the wrong type.
class Reader {
public:
	Reader(const dbus::Properties& props, Mapped& out): props_(props), out_(out) {}

	// A boolean; `fallback` when the property is missing, null when it has another type.
	json boolean(const char* property, json fallback) {
		const auto* v = dbus::find(props_, property);
		if (!v) return fallback;
		if (auto b = dbus::asBool(*v)) return *b;
		return bad(property);
	}
	std::optional<bool> optBoolean(const char* property) {
		const auto* v = dbus::find(props_, property);
		if (!v) return std::nullopt;
		auto b = dbus::asBool(*v);
		if (!b) bad(property);
		return b;
	}
	json unsignedInt(const char* property, json fallback) {
		const auto* v = dbus::find(props_, property);
		if (!v) return fallback;
		if (auto u = dbus::asUint(*v)) return *u;
		return bad(property);
	}
	json integer(const char* property) {
		const auto* v = dbus::find(props_, property);
		if (!v) return nullptr;
		if (auto i = dbus::asInt(*v)) return *i;
		return bad(property);
	}
	std::optional<std::string> string(const char* property) {
		const auto* v = dbus::find(props_, property);
		if (!v) return std::nullopt;
		auto s = dbus::asString(*v);
		if (!s) bad(property);
		return s;
	}
	json boundedString(const char* property, size_t maxBytes) {
		auto s = string(property);
		if (!s) return nullptr;
		return bounded(std::move(*s), maxBytes);
	}

private:
	json bad(const char* property) {
		out_.badProperties.emplace_back(property);
		return nullptr;
	}
	const dbus::Properties& props_;
	Mapped& out_;
};

} // namespace

std::string bounded(std::string s, size_t maxBytes) {
	if (s.size() <= maxBytes) return s;
	size_t cut = maxBytes;
	// Back up over continuation bytes (10xxxxxx) to the start of the character that would be cut.
	while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
	// A copy, not s.resize(cut): a shortened string keeps its whole buffer.
	return s.substr(0, cut);
}

std::optional<std::string> adapterKey(std::string_view path) {
	if (path.substr(0, kRoot.size()) != kRoot) return std::nullopt;
	auto rest = path.substr(kRoot.size());
	if (rest.empty() || rest.size() > 64 || !std::all_of(rest.begin(), rest.end(), isKeyChar)) return std::nullopt;
	return std::string(rest);
}

std::optional<DeviceId> deviceId(std::string_view path) {
	if (path.substr(0, kRoot.size()) != kRoot) return std::nullopt;
	auto rest = path.substr(kRoot.size());
	auto slash = rest.find('/');
	if (slash == std::string_view::npos) return std::nullopt;
	auto adapter = adapterKey(path.substr(0, kRoot.size() + slash));
	auto dev = rest.substr(slash + 1);
	if (!adapter || dev.substr(0, 4) != "dev_" || !isPathAddress(dev.substr(4))) return std::nullopt;
	DeviceId id;
	id.adapter = *adapter;
	id.key = *adapter + "_" + std::string(dev.substr(4));
	id.address = std::string(dev.substr(4));
	std::replace(id.address.begin(), id.address.end(), '_', ':');
	return id;
}

bool isAddress(std::string_view s) {
	if (s.size() != 17) return false;
	for (size_t i = 0; i < s.size(); ++i) {
		if (i % 3 == 2) {
			if (s[i] != ':') return false;
		} else if (!isHex(s[i])) {
			return false;
		}
	}
	return true;
}

std::string adapterState(std::optional<bool> powered, const std::optional<std::string>& powerState, bool rfkillBlocked,
                         Intent pending) {
	if (rfkillBlocked) return "blocked";
	if (powerState) {
		const auto& s = *powerState;
		if (s == "off-blocked") return "blocked";
		if (s == "off-enabling") return "enabling";
		if (s == "on-disabling") return "disabling";
		// BlueZ reports a transition of its own; one of qsd's that it has not begun shows too.
		if (s == "on") return pending == Intent::Off ? "disabling" : "enabled";
		if (s == "off") return pending == Intent::On ? "enabling" : "disabled";
		// An unknown value: Powered says what it can.
	}
	bool on = powered.value_or(false);
	if (pending == Intent::On && !on) return "enabling";
	if (pending == Intent::Off && on) return "disabling";
	return on ? "enabled" : "disabled";
}

std::string deviceState(std::optional<bool> connected, Intent pending) {
	bool on = connected.value_or(false);
	if (pending == Intent::On && !on) return "connecting";
	if (pending == Intent::Off && on) return "disconnecting";
	return on ? "connected" : "disconnected";
}

std::optional<double> batteryFraction(uint64_t percentage) {
	if (percentage > 100) return std::nullopt;
	return double(percentage) / 100.0;
}

std::optional<std::string> passkeyText(uint64_t passkey) {
	if (passkey > 999999) return std::nullopt;
	return fmt::format("{:06d}", passkey);
}

bool isPinCode(std::string_view s) {
	if (s.empty() || s.size() > 16) return false;
	return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

const char* agentKindName(AgentKind kind) {
	switch (kind) {
	case AgentKind::RequestPinCode: return "requestPinCode";
	case AgentKind::DisplayPinCode: return "displayPinCode";
	case AgentKind::RequestPasskey: return "requestPasskey";
	case AgentKind::DisplayPasskey: return "displayPasskey";
	case AgentKind::RequestConfirmation: return "requestConfirmation";
	case AgentKind::RequestAuthorization: return "requestAuthorization";
	case AgentKind::AuthorizeService: return "authorizeService";
	}
	return "unknown";
}

bool answeredAtOnce(AgentKind kind) { return kind == AgentKind::DisplayPinCode || kind == AgentKind::DisplayPasskey; }

Mapped mapAdapter(const dbus::Properties& props, const AdapterInputs& in) {
	Mapped out{json::object(), {}};
	Reader r(props, out);
	auto& o = out.value;
	o["name"] = r.boundedString("Name", kMaxNameBytes);
	auto address = r.string("Address");
	o["address"] = address && isAddress(*address) ? json(*address) : json(nullptr);
	o["alias"] = r.boundedString("Alias", kMaxNameBytes);
	auto powered = r.optBoolean("Powered");
	o["enabled"] = powered.value_or(false);
	auto powerState = r.string("PowerState");
	o["state"] = adapterState(powered, powerState, in.rfkillBlocked, in.pending);
	o["discoverable"] = r.boolean("Discoverable", false);
	o["discoverableTimeout"] = r.unsignedInt("DiscoverableTimeout", 0);
	o["pairable"] = r.boolean("Pairable", false);
	o["pairableTimeout"] = r.unsignedInt("PairableTimeout", 0);
	o["discovering"] = r.boolean("Discovering", false);
	return out;
}

std::string deviceIcon(const dbus::Properties& device) {
	const auto* v = dbus::find(device, "Icon");
	if (!v) return {};
	auto s = dbus::asString(*v);
	return s ? bounded(std::move(*s), kMaxIconBytes) : std::string();
}

Mapped mapDevice(const dbus::Properties& device, const dbus::Properties* battery, const DeviceInputs& in) {
	Mapped out{json::object(), {}};
	Reader r(device, out);
	auto& o = out.value;
	auto address = r.string("Address");
	o["address"] = address && isAddress(*address) ? *address : in.pathAddress;
	o["name"] = r.boundedString("Name", kMaxNameBytes);
	o["alias"] = r.boundedString("Alias", kMaxNameBytes);
	auto icon = r.boundedString("Icon", kMaxIconBytes);
	o["icon"] = icon.is_string() && !icon.get_ref<const std::string&>().empty() ? icon : json(nullptr);
	o["iconUrl"] = in.iconUrl;
	o["adapter"] = in.adapter;
	o["paired"] = r.boolean("Paired", false);
	// Bonded is newer than Paired (BlueZ 5.73): false where BlueZ does not have it.
	o["bonded"] = r.boolean("Bonded", false);
	o["trusted"] = r.boolean("Trusted", false);
	o["blocked"] = r.boolean("Blocked", false);
	auto connected = r.optBoolean("Connected");
	o["connected"] = connected.value_or(false);
	o["state"] = deviceState(connected, in.pending);
	o["pairing"] = in.pairing;
	o["rssi"] = r.integer("RSSI");
	o["battery"] = nullptr;
	if (battery) {
		if (const auto* v = dbus::find(*battery, "Percentage")) {
			auto pct = dbus::asUint(*v);
			auto fraction = pct ? batteryFraction(*pct) : std::nullopt;
			if (fraction) o["battery"] = *fraction;
			else out.badProperties.emplace_back("Percentage");
		}
	}
	o["wakeAllowed"] = r.boolean("WakeAllowed", false);
	return out;
}

bool naturalLess(std::string_view a, std::string_view b) {
	size_t i = 0, j = 0;
	while (i < a.size() && j < b.size()) {
		bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
		if (da && db) {
			size_t ei = i, ej = j;
			while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
			while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
			auto na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
			// Without leading zeros, a longer run is a larger number.
			while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
			while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
			if (na.size() != nb.size()) return na.size() < nb.size();
			if (na != nb) return na < nb;
			i = ei;
			j = ej;
		} else {
			if (a[i] != b[j]) return a[i] < b[j];
			++i;
			++j;
		}
	}
	if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
	return a < b;
}

std::optional<std::string> defaultAdapter(const std::vector<std::string>& keys) {
	if (keys.empty()) return std::nullopt;
	return *std::min_element(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) { return naturalLess(a, b); });
}

// ---- rfkill ----------------------------------------------------------------------------------

RfkillEvent parseRfkillEvent(std::span<const uint8_t, kRfkillEventSize> bytes) {
	RfkillEvent e;
	std::memcpy(&e.idx, bytes.data(), sizeof e.idx);
	e.type = bytes[4];
	e.op = bytes[5];
	e.soft = bytes[6] != 0;
	e.hard = bytes[7] != 0;
	return e;
}

std::array<uint8_t, kRfkillEventSize> rfkillChange(uint32_t idx, bool soft) {
	std::array<uint8_t, kRfkillEventSize> out{};
	std::memcpy(out.data(), &idx, sizeof idx);
	out[4] = kRfkillTypeBluetooth;
	out[5] = kRfkillOpChange;
	out[6] = soft ? 1 : 0;
	out[7] = 0;
	return out;
}

bool RfkillTable::apply(const RfkillEvent& event, const std::string& name) {
	if (event.op == kRfkillOpDel) return switches_.erase(event.idx) != 0;
	if (event.type != kRfkillTypeBluetooth) return false;
	if (event.op != kRfkillOpAdd && event.op != kRfkillOpChange) return false;
	auto it = switches_.find(event.idx);
	if (it == switches_.end()) {
		switches_.emplace(event.idx, Switch{name, event.soft, event.hard});
		return true;
	}
	auto& s = it->second;
	if (s.soft == event.soft && s.hard == event.hard) return false;
	s.soft = event.soft;
	s.hard = event.hard;
	return true;
}

RfkillTable::Block RfkillTable::blockOf(std::string_view adapter) const {
	Block b;
	for (const auto& [idx, s]: switches_) {
		bool own = s.name == adapter;
		bool platform = s.name.substr(0, 3) != "hci";
		if (!own && !platform) continue;
		if (!s.soft && !s.hard) continue;
		b.names.push_back(s.name);
		if (s.hard) b.hard = true;
		if (s.soft) {
			b.soft = true;
			b.softSwitches.push_back(idx);
		}
	}
	return b;
}

} // namespace qsd::bluetooth
