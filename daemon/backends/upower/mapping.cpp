#include "mapping.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <map>

#include <fmt/format.h>

namespace qsd::upower {

using json = nlohmann::json;

namespace {

template <size_t N>
std::string fromTable(const std::array<const char*, N>& table, uint64_t value) {
	return value < N && table[value] ? table[value] : "unknown";
}

// UpDeviceKind, in UPower's numbering (up-types.h). Names follow Quickshell's UPowerDeviceType.
constexpr std::array<const char*, 29> kTypes = {
    "unknown",  "linePower",   "battery",       "ups",     "monitor", "mouse",   "keyboard", "pda",
    "phone",    "mediaPlayer", "tablet",        "computer", "gamingInput", "pen", "touchpad", "modem",
    "network",  "headset",     "speakers",      "headphones", "video", "otherAudio", "remoteControl",
    "printer",  "scanner",     "camera",        "wearable", "toy",     "bluetoothGeneric"};

// UpDeviceState.
constexpr std::array<const char*, 7> kStates = {"unknown",     "charging",      "discharging",     "empty",
                                                "fullyCharged", "pendingCharge", "pendingDischarge"};

// UpDeviceTechnology.
constexpr std::array<const char*, 7> kTechnologies = {"unknown",  "lithiumIon",    "lithiumPolymer",
                                                      "lithiumIronPhosphate", "leadAcid", "nickelCadmium",
                                                      "nickelMetalHydride"};

// UpDeviceLevel, used by WarningLevel and BatteryLevel.
constexpr std::array<const char*, 9> kLevels = {"unknown", "none",   "discharging", "low", "critical",
                                                "action",  "normal", "high",        "full"};

struct ProfileName {
	const char* ppd;
	const char* tree;
};
constexpr std::array<ProfileName, 3> kProfiles = {{
    {"power-saver", "powerSaver"},
    {"balanced", "balanced"},
    {"performance", "performance"},
}};

} // namespace

std::string deviceTypeName(uint64_t type) { return fromTable(kTypes, type); }
std::string deviceStateName(uint64_t state) { return fromTable(kStates, state); }
std::string technologyName(uint64_t technology) { return fromTable(kTechnologies, technology); }
std::string levelName(uint64_t level) { return fromTable(kLevels, level); }

std::string criticalActionName(std::string_view action) {
	static const std::map<std::string_view, const char*> table = {
	    {"PowerOff", "powerOff"}, {"Hibernate", "hibernate"}, {"HybridSleep", "hybridSleep"},
	    {"Suspend", "suspend"},   {"Ignore", "ignore"},
	};
	auto it = table.find(action);
	return it == table.end() ? "unknown" : it->second;
}

std::optional<std::string> profileName(std::string_view ppdName) {
	for (const auto& p: kProfiles)
		if (ppdName == p.ppd) return p.tree;
	return std::nullopt;
}

std::optional<std::string> ppdProfileName(std::string_view name) {
	for (const auto& p: kProfiles)
		if (name == p.tree || name == p.ppd) return p.ppd;
	return std::nullopt;
}

std::string degradationReasonName(std::string_view reason) {
	if (reason.empty()) return "none";
	if (reason == "lap-detected") return "lapDetected";
	if (reason == "high-operating-temperature") return "highTemperature";
	return "unknown";
}

json fraction(double percent) {
	if (std::isnan(percent)) return nullptr;
	return std::clamp(percent / 100.0, 0.0, 1.0);
}

json rfc3339(uint64_t unixSeconds) {
	if (unixSeconds == 0) return nullptr;
	// Beyond what time_t and a 4-digit year hold: not a time UPower can mean.
	if (unixSeconds > 253402300799ull) return nullptr;
	auto t = static_cast<std::time_t>(unixSeconds);
	std::tm tm{};
	gmtime_r(&t, &tm);
	char buf[32];
	// With milliseconds, as every time stamp of the tree (docs/tree.md): UPower's are whole seconds.
	std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	return std::string(buf);
}

std::string deviceId(std::string_view objectPath) {
	auto pos = objectPath.rfind('/');
	return std::string(pos == std::string_view::npos ? objectPath : objectPath.substr(pos + 1));
}

namespace {

enum class Kind {
	Bool,         // b
	Number,       // d (any numeric accepted)
	Integer,      // x / i (any integer)
	String,       // s
	Type,         // u: UpDeviceKind
	State,        // u: UpDeviceState
	Technology,   // u: UpDeviceTechnology
	Level,        // u: UpDeviceLevel
	Fraction,     // d: 0..100 -> 0..1
	Cycles,       // i: -1 (unknown) -> null
	Time,         // t: Unix seconds -> RFC 3339
};

struct Field {
	const char* property;   // D-Bus property of org.freedesktop.UPower.Device
	const char* name;       // tree field
	Kind kind;
};

// Every field of a device object, in schema order. Derived fields (healthSupported,
// isLaptopBattery) are computed after.
constexpr std::array<Field, 25> kDeviceFields = {{
    {"Type", "type", Kind::Type},
    {"PowerSupply", "powerSupply", Kind::Bool},
    {"Energy", "energy", Kind::Number},
    {"EnergyFull", "energyCapacity", Kind::Number},
    {"EnergyFullDesign", "energyFullDesign", Kind::Number},
    {"EnergyRate", "changeRate", Kind::Number},
    {"TimeToEmpty", "timeToEmpty", Kind::Integer},
    {"TimeToFull", "timeToFull", Kind::Integer},
    {"Percentage", "percentage", Kind::Fraction},
    {"Capacity", "healthPercentage", Kind::Fraction},
    {"IsPresent", "isPresent", Kind::Bool},
    {"State", "state", Kind::State},
    {"IconName", "iconName", Kind::String},
    {"NativePath", "nativePath", Kind::String},
    {"Model", "model", Kind::String},
    {"Vendor", "vendor", Kind::String},
    {"Serial", "serial", Kind::String},
    {"Technology", "technology", Kind::Technology},
    {"WarningLevel", "warningLevel", Kind::Level},
    {"BatteryLevel", "batteryLevel", Kind::Level},
    {"ChargeCycles", "chargeCycles", Kind::Cycles},
    {"Temperature", "temperature", Kind::Number},
    {"Voltage", "voltage", Kind::Number},
    {"Online", "online", Kind::Bool},
    {"UpdateTime", "updateTime", Kind::Time},
}};

// The value UPower itself reports when it knows nothing (a property the peer did not send).
json defaultFor(Kind kind) {
	switch (kind) {
	case Kind::Bool: return false;
	case Kind::Number: return 0.0;
	case Kind::Integer: return 0;
	case Kind::String: return "";
	case Kind::Type:
	case Kind::State:
	case Kind::Technology:
	case Kind::Level: return "unknown";
	case Kind::Fraction: return 0.0;
	case Kind::Cycles:
	case Kind::Time: return nullptr;
	}
	return nullptr;
}

// std::nullopt: the variant has the wrong type.
std::optional<json> convert(Kind kind, const dbus::Value& v) {
	switch (kind) {
	case Kind::Bool:
		if (auto b = dbus::asBool(v)) return json(*b);
		return std::nullopt;
	case Kind::Number:
		if (auto d = dbus::asDouble(v)) return std::isfinite(*d) ? json(*d) : json(nullptr);
		return std::nullopt;
	case Kind::Integer:
		if (auto i = dbus::asInt(v)) return json(std::max<int64_t>(*i, 0));
		return std::nullopt;
	case Kind::String:
		if (auto s = dbus::asString(v)) return json(*s);
		return std::nullopt;
	case Kind::Type:
	case Kind::State:
	case Kind::Technology:
	case Kind::Level: {
		auto u = dbus::asUint(v);
		if (!u) return std::nullopt;
		switch (kind) {
		case Kind::Type: return json(deviceTypeName(*u));
		case Kind::State: return json(deviceStateName(*u));
		case Kind::Technology: return json(technologyName(*u));
		default: return json(levelName(*u));
		}
	}
	case Kind::Fraction:
		if (auto d = dbus::asDouble(v)) return fraction(*d);
		return std::nullopt;
	case Kind::Cycles:
		if (auto i = dbus::asInt(v)) return *i < 0 ? json(nullptr) : json(*i);
		return std::nullopt;
	case Kind::Time:
		if (auto u = dbus::asUint(v)) return rfc3339(*u);
		return std::nullopt;
	}
	return std::nullopt;
}

} // namespace

Mapped mapDevice(const dbus::Properties& props, const std::vector<std::string>* only) {
	Mapped out{json::object(), {}};
	auto& o = out.value;
	auto named = [&](std::string_view property) {
		return !only || std::find(only->begin(), only->end(), property) != only->end();
	};
	// The derived fields need both of their inputs.
	bool laptop = named("Type") || named("PowerSupply");
	for (const auto& f: kDeviceFields) {
		std::string_view property = f.property;
		if (!named(property) && !(laptop && (property == "Type" || property == "PowerSupply"))) continue;
		const auto* v = dbus::find(props, f.property);
		if (!v) {
			o[f.name] = defaultFor(f.kind);
			continue;
		}
		if (auto j = convert(f.kind, *v)) {
			o[f.name] = std::move(*j);
		} else {
			o[f.name] = nullptr;
			out.badProperties.emplace_back(f.property);
		}
	}
	// Derived as Quickshell does: health is supported when UPower reports a capacity.
	if (o.contains("healthPercentage"))
		o["healthSupported"] = o["healthPercentage"].is_number() && o["healthPercentage"].get<double>() > 0.0;
	if (laptop) o["isLaptopBattery"] = o["type"] == "battery" && o["powerSupply"] == true;
	return out;
}

Mapped mapDaemon(const dbus::Properties& props) {
	Mapped out{json::object(), {}};
	auto& o = out.value;
	auto put = [&](const char* property, const char* name, Kind kind) {
		const auto* v = dbus::find(props, property);
		if (!v) {
			o[name] = defaultFor(kind);
			return;
		}
		if (auto j = convert(kind, *v)) o[name] = std::move(*j);
		else {
			o[name] = nullptr;
			out.badProperties.emplace_back(property);
		}
	};
	put("OnBattery", "onBattery", Kind::Bool);
	put("LidIsPresent", "lidIsPresent", Kind::Bool);
	put("LidIsClosed", "lidIsClosed", Kind::Bool);
	put("DaemonVersion", "daemonVersion", Kind::String);
	return out;
}

std::optional<std::vector<Hold>> parseHolds(const dbus::Value& v) {
	json j = dbus::variantToJson(v);
	if (j.is_null()) {
		// python-dbusmock declares its empty list with the element signature "(aa{sv})".
		using Wrapped = std::vector<sdbus::Struct<std::vector<std::map<std::string, sdbus::Variant>>>>;
		if (auto wrapped = dbus::as<Wrapped>(v)) {
			j = json::array();
			for (const auto& s: *wrapped) {
				for (const auto& m: std::get<0>(s)) {
					json o = json::object();
					for (const auto& [k, inner]: m) o[k] = dbus::variantToJson(inner);
					j.push_back(std::move(o));
				}
			}
		}
	}
	if (!j.is_array()) return std::nullopt;
	std::vector<Hold> holds;
	for (const auto& e: j) {
		if (!e.is_object()) return std::nullopt;
		auto str = [&](const char* key) {
			auto it = e.find(key);
			return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
		};
		holds.push_back({str("Profile"), str("ApplicationId"), str("Reason")});
	}
	return holds;
}

json holdsObject(std::vector<Hold> daemonHolds, const std::vector<OwnHold>& own) {
	struct Entry {
		Hold hold;
		uint64_t cookie = 0;   // 0: not one of qsd's
		std::string state = "active";
		json error = nullptr;
	};
	auto same = [](const Hold& a, const Hold& b) {
		return a.profile == b.profile && a.applicationId == b.applicationId && a.reason == b.reason;
	};
	std::vector<Entry> entries;
	for (auto& h: daemonHolds) entries.push_back({std::move(h)});
	std::vector<const OwnHold*> mine;
	for (const auto& o: own) mine.push_back(&o);
	std::sort(mine.begin(), mine.end(), [](const OwnHold* a, const OwnHold* b) { return a->cookie < b->cookie; });
	for (const auto* o: mine) {
		if (o->state == "active") {
			auto it = std::find_if(entries.begin(), entries.end(),
			                       [&](const Entry& e) { return e.cookie == 0 && same(e.hold, o->hold); });
			if (it != entries.end()) {
				it->cookie = o->cookie;
				continue;
			}
		}
		entries.push_back({o->hold, o->cookie, o->state, o->error});
	}
	// The order (and with it the "#n" of each key) depends on the content only, so a hold keeps
	// its key when it goes from pending to active.
	std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
		return std::tie(a.hold.applicationId, a.hold.profile, a.hold.reason, a.cookie) <
		       std::tie(b.hold.applicationId, b.hold.profile, b.hold.reason, b.cookie);
	});
	json out = json::object();
	std::map<std::string, int> seen;
	for (const auto& e: entries) {
		auto tree = profileName(e.hold.profile);
		std::string base = e.hold.applicationId + ":" + (tree ? *tree : e.hold.profile);
		int n = ++seen[base];
		std::string key = n == 1 ? base : fmt::format("{}#{}", base, n);
		json v = {{"profile", tree ? *tree : std::string("unknown")},
		          {"applicationId", e.hold.applicationId},
		          {"reason", e.hold.reason},
		          {"state", e.state}};
		if (e.cookie) v["cookie"] = e.cookie;
		if (!e.error.is_null()) v["error"] = e.error;
		out[key] = std::move(v);
	}
	return out;
}

MappedProfiles mapProfiles(const dbus::Properties& props, const std::vector<OwnHold>& own) {
	MappedProfiles out{json::object(), {}, {}};
	auto& o = out.value;

	o["profile"] = "unknown";
	if (const auto* v = dbus::find(props, "ActiveProfile")) {
		if (auto s = dbus::asString(*v)) {
			if (auto name = profileName(*s)) o["profile"] = *name;
			else out.unknownValues.push_back("ActiveProfile=" + *s);
		} else {
			o["profile"] = nullptr;
			out.badProperties.emplace_back("ActiveProfile");
		}
	}

	o["profiles"] = json::array();
	if (const auto* v = dbus::find(props, "Profiles")) {
		json list = dbus::variantToJson(*v);
		bool ok = list.is_array() && std::all_of(list.begin(), list.end(), [](const json& e) { return e.is_object(); });
		if (!ok) {
			o["profiles"] = nullptr;
			out.badProperties.emplace_back("Profiles");
		} else {
			for (const auto& e: list) {
				auto it = e.find("Profile");
				if (it == e.end() || !it->is_string()) continue;
				if (auto name = profileName(it->get<std::string>())) {
					if (std::find(o["profiles"].begin(), o["profiles"].end(), *name) == o["profiles"].end())
						o["profiles"].push_back(*name);
				} else {
					out.unknownValues.push_back("Profiles=" + it->get<std::string>());
				}
			}
		}
	}
	o["hasPerformanceProfile"] = o["profiles"].is_array() &&
	                             std::find(o["profiles"].begin(), o["profiles"].end(), "performance") != o["profiles"].end();

	o["degradationReason"] = "none";
	if (const auto* v = dbus::find(props, "PerformanceDegraded")) {
		if (auto s = dbus::asString(*v)) {
			o["degradationReason"] = degradationReasonName(*s);
			if (o["degradationReason"] == "unknown") out.unknownValues.push_back("PerformanceDegraded=" + *s);
		} else {
			o["degradationReason"] = nullptr;
			out.badProperties.emplace_back("PerformanceDegraded");
		}
	}

	o["holds"] = holdsObject({}, own);
	if (const auto* v = dbus::find(props, "ActiveProfileHolds")) {
		if (auto holds = parseHolds(*v)) o["holds"] = holdsObject(std::move(*holds), own);
		else {
			o["holds"] = nullptr;
			out.badProperties.emplace_back("ActiveProfileHolds");
		}
	}

	o["actions"] = json::array();
	if (const auto* v = dbus::find(props, "Actions")) {
		if (auto list = dbus::asStrings(*v)) o["actions"] = *list;
		else {
			o["actions"] = nullptr;
			out.badProperties.emplace_back("Actions");
		}
	}

	o["daemonVersion"] = nullptr;
	if (const auto* v = dbus::find(props, "Version")) {
		if (auto s = dbus::asString(*v)) o["daemonVersion"] = *s;
		else out.badProperties.emplace_back("Version");
	}
	return out;
}

} // namespace qsd::upower
