// Every mapping table of the upower backend (daemon/backends/upower/mapping.hpp), against the
// numbering of UPower's up-types.h and power-profiles-daemon's strings.

#include "backends/upower/mapping.hpp"
#include "helpers.hpp"

#include <qsd/protocol/api.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

using namespace qsd;
using namespace qsd::upower;
using json = nlohmann::json;

using qsd::testing::props;
using qsd::testing::schemaEnum;

TEST(UpowerMapping, DeviceTypes) {
	const char* expected[] = {"unknown",  "linePower",  "battery",    "ups",        "monitor",       "mouse",
	                          "keyboard", "pda",        "phone",      "mediaPlayer", "tablet",       "computer",
	                          "gamingInput", "pen",     "touchpad",   "modem",      "network",       "headset",
	                          "speakers", "headphones", "video",      "otherAudio", "remoteControl", "printer",
	                          "scanner",  "camera",     "wearable",   "toy",        "bluetoothGeneric"};
	auto documented = schemaEnum("PowerDeviceType");
	for (uint64_t i = 0; i < std::size(expected); ++i) {
		EXPECT_EQ(deviceTypeName(i), expected[i]) << i;
		EXPECT_TRUE(documented.count(expected[i])) << expected[i];
	}
	EXPECT_EQ(documented.size(), std::size(expected));
	EXPECT_EQ(deviceTypeName(29), "unknown");
	EXPECT_EQ(deviceTypeName(std::numeric_limits<uint64_t>::max()), "unknown");
}

TEST(UpowerMapping, DeviceStates) {
	const char* expected[] = {"unknown", "charging", "discharging", "empty", "fullyCharged", "pendingCharge", "pendingDischarge"};
	auto documented = schemaEnum("PowerDeviceState");
	for (uint64_t i = 0; i < std::size(expected); ++i) {
		EXPECT_EQ(upower::deviceStateName(i), expected[i]);
		EXPECT_TRUE(documented.count(expected[i])) << expected[i];
	}
	EXPECT_EQ(documented.size(), std::size(expected));
	EXPECT_EQ(upower::deviceStateName(7), "unknown");
}

TEST(UpowerMapping, Technologies) {
	const char* expected[] = {"unknown",  "lithiumIon",    "lithiumPolymer",    "lithiumIronPhosphate",
	                          "leadAcid", "nickelCadmium", "nickelMetalHydride"};
	auto documented = schemaEnum("PowerTechnology");
	for (uint64_t i = 0; i < std::size(expected); ++i) {
		EXPECT_EQ(technologyName(i), expected[i]);
		EXPECT_TRUE(documented.count(expected[i])) << expected[i];
	}
	EXPECT_EQ(technologyName(7), "unknown");
}

TEST(UpowerMapping, Levels) {
	const char* expected[] = {"unknown", "none", "discharging", "low", "critical", "action", "normal", "high", "full"};
	auto documented = schemaEnum("PowerLevel");
	for (uint64_t i = 0; i < std::size(expected); ++i) {
		EXPECT_EQ(levelName(i), expected[i]);
		EXPECT_TRUE(documented.count(expected[i])) << expected[i];
	}
	EXPECT_EQ(levelName(9), "unknown");
}

TEST(UpowerMapping, CriticalActions) {
	EXPECT_EQ(criticalActionName("PowerOff"), "powerOff");
	EXPECT_EQ(criticalActionName("Hibernate"), "hibernate");
	EXPECT_EQ(criticalActionName("HybridSleep"), "hybridSleep");
	EXPECT_EQ(criticalActionName("Suspend"), "suspend");
	EXPECT_EQ(criticalActionName("Ignore"), "ignore");
	EXPECT_EQ(criticalActionName("poweroff"), "unknown");
	EXPECT_EQ(criticalActionName(""), "unknown");
	auto documented = schemaEnum("CriticalAction");
	for (const char* v: {"powerOff", "hibernate", "hybridSleep", "suspend", "ignore", "unknown"}) EXPECT_TRUE(documented.count(v));
}

TEST(UpowerMapping, Profiles) {
	EXPECT_EQ(profileName("power-saver"), "powerSaver");
	EXPECT_EQ(profileName("balanced"), "balanced");
	EXPECT_EQ(profileName("performance"), "performance");
	EXPECT_EQ(profileName("powerSaver"), std::nullopt);   // tree names are not the daemon's
	EXPECT_EQ(profileName("turbo"), std::nullopt);
	EXPECT_EQ(ppdProfileName("powerSaver"), "power-saver");
	EXPECT_EQ(ppdProfileName("power-saver"), "power-saver");
	EXPECT_EQ(ppdProfileName("balanced"), "balanced");
	EXPECT_EQ(ppdProfileName("performance"), "performance");
	EXPECT_EQ(ppdProfileName("Performance"), std::nullopt);
	EXPECT_EQ(ppdProfileName(""), std::nullopt);
	auto documented = schemaEnum("PowerProfile");
	for (const char* v: {"powerSaver", "balanced", "performance", "unknown"}) EXPECT_TRUE(documented.count(v));
}

TEST(UpowerMapping, DegradationReasons) {
	EXPECT_EQ(degradationReasonName(""), "none");
	EXPECT_EQ(degradationReasonName("lap-detected"), "lapDetected");
	EXPECT_EQ(degradationReasonName("high-operating-temperature"), "highTemperature");
	EXPECT_EQ(degradationReasonName("cosmic-rays"), "unknown");
	auto documented = schemaEnum("PerformanceDegradationReason");
	for (const char* v: {"none", "lapDetected", "highTemperature", "unknown"}) EXPECT_TRUE(documented.count(v));
}

TEST(UpowerMapping, FractionIsZeroToOne) {
	EXPECT_DOUBLE_EQ(upower::fraction(73.5).get<double>(), 0.735);
	EXPECT_DOUBLE_EQ(upower::fraction(100).get<double>(), 1.0);
	EXPECT_DOUBLE_EQ(upower::fraction(0).get<double>(), 0.0);
	EXPECT_DOUBLE_EQ(upower::fraction(140).get<double>(), 1.0);    // clamped
	EXPECT_DOUBLE_EQ(upower::fraction(-3).get<double>(), 0.0);
	EXPECT_TRUE(upower::fraction(std::nan("")).is_null());
}

TEST(UpowerMapping, UpdateTime) {
	EXPECT_TRUE(rfc3339(0).is_null());
	EXPECT_EQ(rfc3339(1700000000), "2023-11-14T22:13:20.000Z");   // milliseconds, as every time stamp of the tree
	EXPECT_TRUE(rfc3339(std::numeric_limits<uint64_t>::max()).is_null());
}

TEST(UpowerMapping, DeviceIds) {
	EXPECT_EQ(upower::deviceId("/org/freedesktop/UPower/devices/battery_BAT0"), "battery_BAT0");
	EXPECT_EQ(upower::deviceId("/org/freedesktop/UPower/devices/mouse_dev_AA_BB"), "mouse_dev_AA_BB");
	EXPECT_EQ(upower::deviceId("plain"), "plain");
}

TEST(UpowerMapping, FullDevice) {
	auto p = props({
	    {"Type", sdbus::Variant(uint32_t(2))},
	    {"PowerSupply", sdbus::Variant(true)},
	    {"Energy", sdbus::Variant(36.75)},
	    {"EnergyFull", sdbus::Variant(50.0)},
	    {"EnergyFullDesign", sdbus::Variant(57.0)},
	    {"EnergyRate", sdbus::Variant(12.5)},
	    {"TimeToEmpty", sdbus::Variant(int64_t(7200))},
	    {"TimeToFull", sdbus::Variant(int64_t(0))},
	    {"Percentage", sdbus::Variant(73.5)},
	    {"Capacity", sdbus::Variant(87.5)},
	    {"IsPresent", sdbus::Variant(true)},
	    {"State", sdbus::Variant(uint32_t(2))},
	    {"IconName", sdbus::Variant(std::string("battery-good-symbolic"))},
	    {"NativePath", sdbus::Variant(std::string("BAT0"))},
	    {"Model", sdbus::Variant(std::string("5B10W13930"))},
	    {"Vendor", sdbus::Variant(std::string("SMP"))},
	    {"Serial", sdbus::Variant(std::string("1234"))},
	    {"Technology", sdbus::Variant(uint32_t(2))},
	    {"WarningLevel", sdbus::Variant(uint32_t(1))},
	    {"BatteryLevel", sdbus::Variant(uint32_t(1))},
	    {"ChargeCycles", sdbus::Variant(int32_t(311))},
	    {"Temperature", sdbus::Variant(31.5)},
	    {"Voltage", sdbus::Variant(12.1)},
	    {"Online", sdbus::Variant(false)},
	    {"UpdateTime", sdbus::Variant(uint64_t(1700000000))},
	});
	auto m = mapDevice(p);
	EXPECT_TRUE(m.badProperties.empty());
	json expected = {
	    {"type", "battery"},          {"powerSupply", true},        {"energy", 36.75},
	    {"energyCapacity", 50.0},     {"energyFullDesign", 57.0},   {"changeRate", 12.5},
	    {"timeToEmpty", 7200},        {"timeToFull", 0},            {"percentage", 0.735},
	    {"healthPercentage", 0.875},  {"healthSupported", true},    {"isPresent", true},
	    {"state", "discharging"},     {"iconName", "battery-good-symbolic"},
	    {"isLaptopBattery", true},    {"nativePath", "BAT0"},       {"model", "5B10W13930"},
	    {"vendor", "SMP"},            {"serial", "1234"},           {"technology", "lithiumPolymer"},
	    {"warningLevel", "none"},     {"batteryLevel", "none"},     {"chargeCycles", 311},
	    {"temperature", 31.5},        {"voltage", 12.1},            {"online", false},
	    {"updateTime", "2023-11-14T22:13:20.000Z"},
	};
	EXPECT_EQ(m.value, expected) << m.value.dump();

	// Every field of the schema is there, and nothing else.
	const auto& required = api::openrpc()["components"]["schemas"]["PowerDevice"]["required"];
	EXPECT_EQ(required.size(), m.value.size());
	for (const auto& f: required) EXPECT_TRUE(m.value.contains(f.get<std::string>())) << f;
}

TEST(UpowerMapping, MissingPropertiesTakeUpowerDefaults) {
	// python-dbusmock's AddAC sends only these three.
	auto m = mapDevice(props({{"PowerSupply", sdbus::Variant(true)},
	                          {"Model", sdbus::Variant(std::string("Mock AC"))},
	                          {"Online", sdbus::Variant(true)}}));
	EXPECT_TRUE(m.badProperties.empty());
	EXPECT_EQ(m.value["type"], "unknown");
	EXPECT_EQ(m.value["state"], "unknown");
	EXPECT_EQ(m.value["online"], true);
	EXPECT_EQ(m.value["percentage"], 0.0);
	EXPECT_EQ(m.value["timeToEmpty"], 0);
	EXPECT_EQ(m.value["iconName"], "");
	EXPECT_TRUE(m.value["chargeCycles"].is_null());
	EXPECT_TRUE(m.value["updateTime"].is_null());
	EXPECT_EQ(m.value["healthSupported"], false);
	EXPECT_EQ(m.value["isLaptopBattery"], false);
}

TEST(UpowerMapping, WrongTypesDegradeOnlyTheirField) {
	auto m = mapDevice(props({
	    {"Type", sdbus::Variant(std::string("battery"))},   // should be u
	    {"Percentage", sdbus::Variant(std::string("73"))},   // should be d
	    {"IsPresent", sdbus::Variant(uint32_t(1))},          // should be b
	    {"Model", sdbus::Variant(42.0)},                     // should be s
	    {"State", sdbus::Variant(uint32_t(1))},
	    {"TimeToFull", sdbus::Variant(int32_t(600))},        // i for x: any integer is fine
	    {"Energy", sdbus::Variant(uint32_t(20))},            // u for d: any number is fine
	}));
	EXPECT_EQ(std::set<std::string>(m.badProperties.begin(), m.badProperties.end()),
	          (std::set<std::string>{"Type", "Percentage", "IsPresent", "Model"}));
	EXPECT_TRUE(m.value["type"].is_null());
	EXPECT_TRUE(m.value["percentage"].is_null());
	EXPECT_TRUE(m.value["isPresent"].is_null());
	EXPECT_TRUE(m.value["model"].is_null());
	EXPECT_EQ(m.value["state"], "charging");
	EXPECT_EQ(m.value["timeToFull"], 600);
	EXPECT_EQ(m.value["energy"], 20.0);
	EXPECT_EQ(m.value["isLaptopBattery"], false);
}

TEST(UpowerMapping, OddNumbers) {
	auto m = mapDevice(props({{"TimeToEmpty", sdbus::Variant(int64_t(-5))},
	                          {"ChargeCycles", sdbus::Variant(int32_t(-1))},
	                          {"EnergyRate", sdbus::Variant(std::numeric_limits<double>::infinity())},
	                          {"Capacity", sdbus::Variant(0.0)}}));
	EXPECT_EQ(m.value["timeToEmpty"], 0);
	EXPECT_TRUE(m.value["chargeCycles"].is_null());
	EXPECT_TRUE(m.value["changeRate"].is_null());
	EXPECT_EQ(m.value["healthSupported"], false);
}

TEST(UpowerMapping, Daemon) {
	auto m = mapDaemon(props({{"OnBattery", sdbus::Variant(true)},
	                          {"LidIsPresent", sdbus::Variant(true)},
	                          {"LidIsClosed", sdbus::Variant(std::string("no"))},
	                          {"DaemonVersion", sdbus::Variant(std::string("1.90.2"))}}));
	EXPECT_EQ(m.value, (json{{"onBattery", true}, {"lidIsPresent", true}, {"lidIsClosed", nullptr}, {"daemonVersion", "1.90.2"}}));
	EXPECT_EQ(m.badProperties, std::vector<std::string>{"LidIsClosed"});
	auto empty = mapDaemon({});
	EXPECT_EQ(empty.value, (json{{"onBattery", false}, {"lidIsPresent", false}, {"lidIsClosed", false}, {"daemonVersion", ""}}));
}

namespace {
using Dict = std::map<std::string, sdbus::Variant>;
Dict profileEntry(const char* name) { return Dict{{"Profile", sdbus::Variant(std::string(name))}, {"Driver", sdbus::Variant(std::string("platform_profile"))}}; }
Dict holdEntry(const char* profile, const char* app, const char* reason) {
	return Dict{{"Profile", sdbus::Variant(std::string(profile))},
	            {"ApplicationId", sdbus::Variant(std::string(app))},
	            {"Reason", sdbus::Variant(std::string(reason))}};
}
} // namespace

TEST(UpowerMapping, ProfilesDaemon) {
	auto m = mapProfiles(props({
	    {"ActiveProfile", sdbus::Variant(std::string("power-saver"))},
	    {"Profiles", sdbus::Variant(std::vector<Dict>{profileEntry("power-saver"), profileEntry("balanced"), profileEntry("turbo")})},
	    {"PerformanceDegraded", sdbus::Variant(std::string("lap-detected"))},
	    {"Actions", sdbus::Variant(std::vector<std::string>{"trickle_charge"})},
	    {"ActiveProfileHolds", sdbus::Variant(std::vector<Dict>{holdEntry("power-saver", "org.gnome.Settings", "low battery")})},
	    {"Version", sdbus::Variant(std::string("0.21"))},
	}));
	EXPECT_TRUE(m.badProperties.empty());
	EXPECT_EQ(m.unknownValues, std::vector<std::string>{"Profiles=turbo"});
	json expected = {
	    {"profile", "powerSaver"},
	    {"profiles", {"powerSaver", "balanced"}},
	    {"hasPerformanceProfile", false},
	    {"degradationReason", "lapDetected"},
	    {"holds", {{"org.gnome.Settings:powerSaver",
	                {{"profile", "powerSaver"}, {"applicationId", "org.gnome.Settings"}, {"reason", "low battery"}, {"state", "active"}}}}},
	    {"actions", {"trickle_charge"}},
	    {"daemonVersion", "0.21"},
	};
	EXPECT_EQ(m.value, expected) << m.value.dump();
}

TEST(UpowerMapping, ProfilesWrongTypes) {
	auto m = mapProfiles(props({
	    {"ActiveProfile", sdbus::Variant(uint32_t(2))},
	    {"Profiles", sdbus::Variant(std::vector<std::string>{"balanced"})},
	    {"PerformanceDegraded", sdbus::Variant(false)},
	    {"ActiveProfileHolds", sdbus::Variant(std::string("none"))},
	    {"Actions", sdbus::Variant(int32_t(0))},
	}));
	EXPECT_EQ(std::set<std::string>(m.badProperties.begin(), m.badProperties.end()),
	          (std::set<std::string>{"ActiveProfile", "Profiles", "PerformanceDegraded", "ActiveProfileHolds", "Actions"}));
	EXPECT_TRUE(m.value["profile"].is_null());
	EXPECT_TRUE(m.value["profiles"].is_null());
	EXPECT_EQ(m.value["hasPerformanceProfile"], false);
	EXPECT_TRUE(m.value["holds"].is_null());
	EXPECT_TRUE(m.value["daemonVersion"].is_null());
	auto unknown = mapProfiles(props({{"ActiveProfile", sdbus::Variant(std::string("turbo"))},
	                                  {"PerformanceDegraded", sdbus::Variant(std::string("cosmic-rays"))}}));
	EXPECT_EQ(unknown.value["profile"], "unknown");
	EXPECT_EQ(unknown.value["degradationReason"], "unknown");
	EXPECT_EQ(unknown.unknownValues.size(), 2u);
}

TEST(UpowerMapping, HoldsAcceptWhatDaemonsSend) {
	// aa{ss}: python-dbusmock after HoldProfile.
	std::vector<std::map<std::string, std::string>> ss = {{{"Profile", "performance"}, {"ApplicationId", "a"}, {"Reason", "r"}}};
	auto h = parseHolds(sdbus::Variant(ss));
	ASSERT_TRUE(h);
	ASSERT_EQ(h->size(), 1u);
	EXPECT_EQ((*h)[0].profile, "performance");
	EXPECT_EQ((*h)[0].applicationId, "a");
	EXPECT_EQ((*h)[0].reason, "r");
	// a(aa{sv}): python-dbusmock's empty list.
	using Wrapped = std::vector<sdbus::Struct<std::vector<Dict>>>;
	auto empty = parseHolds(sdbus::Variant(Wrapped{}));
	ASSERT_TRUE(empty);
	EXPECT_TRUE(empty->empty());
	// aa{sv}: the specification.
	auto sv = parseHolds(sdbus::Variant(std::vector<Dict>{holdEntry("balanced", "b", "")}));
	ASSERT_TRUE(sv);
	EXPECT_EQ((*sv)[0].profile, "balanced");
	// Anything else is a wrong type.
	EXPECT_FALSE(parseHolds(sdbus::Variant(std::vector<std::string>{"x"})));
	EXPECT_FALSE(parseHolds(sdbus::Variant(uint32_t(1))));
}

TEST(UpowerMapping, HoldKeysAreStableAndUnique) {
	std::vector<Hold> holds = {{"performance", "org.example.Game", "b"},
	                           {"power-saver", "org.gnome.Settings", "battery"},
	                           {"performance", "org.example.Game", "a"},
	                           {"weird", "x/y", "z"}};
	auto o = holdsObject(holds);
	EXPECT_EQ(o.size(), 4u);
	EXPECT_EQ(o["org.example.Game:performance"]["reason"], "a");
	EXPECT_EQ(o["org.example.Game:performance#2"]["reason"], "b");
	EXPECT_EQ(o["org.gnome.Settings:powerSaver"]["profile"], "powerSaver");
	EXPECT_EQ(o["x/y:weird"]["profile"], "unknown");
	// Independent of the order the daemon lists them in.
	std::reverse(holds.begin(), holds.end());
	EXPECT_EQ(holdsObject(holds), o);
}

TEST(UpowerMapping, OwnHoldsShowTheirStateAndCookie) {
	std::vector<Hold> daemon = {{"performance", "org.example.Game", "render"}, {"balanced", "other.app", ""}};
	std::vector<OwnHold> own = {
	    {7, {"performance", "org.example.Game", "render"}, "active", nullptr},    // the daemon lists it
	    {8, {"power-saver", "org.example.Bar", "battery"}, "pending", nullptr},   // not answered yet
	    {9, {"performance", "org.example.Game", "again"}, "failed", {{"name", "org.example.Busy"}, {"message", "busy"}}},
	    {10, {"balanced", "x", ""}, "active", nullptr},                           // the daemon's list is behind
	};
	auto o = holdsObject(daemon, own);
	EXPECT_EQ(o.size(), 5u) << o.dump();
	EXPECT_EQ(o["org.example.Game:performance"], (nlohmann::json{{"profile", "performance"}, {"applicationId", "org.example.Game"},
	                                                             {"reason", "again"}, {"state", "failed"}, {"cookie", 9},
	                                                             {"error", {{"name", "org.example.Busy"}, {"message", "busy"}}}}));
	EXPECT_EQ(o["org.example.Game:performance#2"]["state"], "active");
	EXPECT_EQ(o["org.example.Game:performance#2"]["cookie"], 7);
	EXPECT_EQ(o["org.example.Bar:powerSaver"]["state"], "pending");
	EXPECT_EQ(o["org.example.Bar:powerSaver"]["cookie"], 8);
	EXPECT_FALSE(o["other.app:balanced"].contains("cookie"));   // another program's hold
	EXPECT_EQ(o["other.app:balanced"]["state"], "active");
	EXPECT_EQ(o["x:balanced"]["cookie"], 10);
	// A pending hold keeps its key when it becomes active and the daemon lists it.
	std::vector<Hold> later = daemon;
	later.push_back({"power-saver", "org.example.Bar", "battery"});
	own[1].state = "active";
	auto p = holdsObject(later, own);
	EXPECT_EQ(p["org.example.Bar:powerSaver"]["state"], "active");
	EXPECT_EQ(p["org.example.Bar:powerSaver"]["cookie"], 8);
	EXPECT_EQ(p.size(), 5u);
	// Two equal holds, one of them qsd's: the daemon's copy without a cookie comes first.
	auto q = holdsObject({{"balanced", "a", ""}, {"balanced", "a", ""}}, {{3, {"balanced", "a", ""}, "active", nullptr}});
	EXPECT_FALSE(q["a:balanced"].contains("cookie"));
	EXPECT_EQ(q["a:balanced#2"]["cookie"], 3);
}
