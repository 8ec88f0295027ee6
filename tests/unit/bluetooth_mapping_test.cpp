// Every mapping table of the bluetooth backend (daemon/backends/bluetooth/mapping.hpp), against
// BlueZ's object paths and property types, the kernel's rfkill records, and the enums
// protocol/api/bluetooth.json documents.

#ifdef QSD_BLUETOOTH_BACKEND

#include "backends/bluetooth/mapping.hpp"
#include "helpers.hpp"

#include <qsd/protocol/api.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <set>

using namespace qsd;
using namespace qsd::bluetooth;
using json = nlohmann::json;

using qsd::testing::keys;
using qsd::testing::props;
using qsd::testing::schemaEnum;

namespace {

std::set<std::string> schemaRequired(const char* name) {
	const auto& r = api::openrpc()["components"]["schemas"][name]["required"];
	return std::set<std::string>(r.begin(), r.end());
}

} // namespace

TEST(BluetoothMapping, AdapterKeys) {
	EXPECT_EQ(adapterKey("/org/bluez/hci0"), "hci0");
	EXPECT_EQ(adapterKey("/org/bluez/hci12"), "hci12");
	EXPECT_FALSE(adapterKey("/org/bluez"));
	EXPECT_FALSE(adapterKey("/org/bluez/"));
	EXPECT_FALSE(adapterKey("/org/bluez/hci0/dev_11_22_33_44_55_66"));
	EXPECT_FALSE(adapterKey("/org/other/hci0"));
	EXPECT_FALSE(adapterKey("/org/bluezz/hci0"));
}

TEST(BluetoothMapping, DeviceKeys) {
	auto id = deviceId("/org/bluez/hci0/dev_11_22_33_44_55_66");
	ASSERT_TRUE(id);
	EXPECT_EQ(id->adapter, "hci0");
	EXPECT_EQ(id->key, "hci0_11_22_33_44_55_66");
	EXPECT_EQ(id->address, "11:22:33:44:55:66");
	EXPECT_EQ(deviceId("/org/bluez/hci1/dev_AA_BB_CC_DD_EE_FF")->key, "hci1_AA_BB_CC_DD_EE_FF");
	// Not devices: the adapter, a service below a device, a malformed address, another tree.
	EXPECT_FALSE(deviceId("/org/bluez/hci0"));
	EXPECT_FALSE(deviceId("/org/bluez/hci0/dev_11_22_33_44_55_66/service0001"));
	EXPECT_FALSE(deviceId("/org/bluez/hci0/dev_11_22_33_44_55"));
	EXPECT_FALSE(deviceId("/org/bluez/hci0/dev_11_22_33_44_55_GG"));
	EXPECT_FALSE(deviceId("/org/bluez/hci0/player0"));
	EXPECT_FALSE(deviceId("/org/other/hci0/dev_11_22_33_44_55_66"));
	EXPECT_TRUE(isAddress("11:22:33:44:55:66"));
	EXPECT_TRUE(isAddress("aa:bb:cc:dd:ee:ff"));
	EXPECT_FALSE(isAddress("11-22-33-44-55-66"));
	EXPECT_FALSE(isAddress("11:22:33:44:55:6"));
}

TEST(BluetoothMapping, BoundedStringsCutAtCharacters) {
	EXPECT_EQ(bounded("short", 248), "short");
	EXPECT_EQ(bounded(std::string(300, 'x'), 248).size(), 248u);
	// What is cut keeps no room for the rest (a shortened string would keep its whole buffer).
	EXPECT_LE(bounded(std::string(1'000'000, 'x'), 248).capacity(), 512u);
	// "é" is two bytes: a cut in its middle drops it whole.
	std::string s = std::string(247, 'a') + "\xc3\xa9";
	EXPECT_EQ(bounded(s, 248), std::string(247, 'a'));
	EXPECT_EQ(bounded(s, 249), s);
	// A four-byte character cut after its second byte.
	std::string emoji = "ab\xf0\x9f\x8e\xa7";
	EXPECT_EQ(bounded(emoji, 4), "ab");
}

TEST(BluetoothMapping, AdapterStates) {
	auto documented = schemaEnum("BluetoothAdapterState");
	EXPECT_EQ(documented, (std::set<std::string>{"disabled", "enabled", "enabling", "disabling", "blocked"}));
	using I = Intent;
	std::optional<std::string> none;
	// Powered alone.
	EXPECT_EQ(adapterState(true, none, false, I::None), "enabled");
	EXPECT_EQ(adapterState(false, none, false, I::None), "disabled");
	EXPECT_EQ(adapterState(std::nullopt, none, false, I::None), "disabled");
	EXPECT_EQ(adapterState(false, none, false, I::On), "enabling");
	EXPECT_EQ(adapterState(true, none, false, I::Off), "disabling");
	EXPECT_EQ(adapterState(true, none, false, I::On), "enabled");
	// rfkill wins over everything.
	EXPECT_EQ(adapterState(true, std::string("on"), true, I::None), "blocked");
	EXPECT_EQ(adapterState(false, none, true, I::On), "blocked");
	// BlueZ's PowerState.
	EXPECT_EQ(adapterState(false, std::string("off-blocked"), false, I::None), "blocked");
	EXPECT_EQ(adapterState(false, std::string("off-enabling"), false, I::None), "enabling");
	EXPECT_EQ(adapterState(true, std::string("on-disabling"), false, I::None), "disabling");
	EXPECT_EQ(adapterState(true, std::string("on"), false, I::None), "enabled");
	EXPECT_EQ(adapterState(false, std::string("off"), false, I::None), "disabled");
	EXPECT_EQ(adapterState(false, std::string("off"), false, I::On), "enabling");
	EXPECT_EQ(adapterState(true, std::string("on"), false, I::Off), "disabling");
	// An unknown PowerState: Powered decides.
	EXPECT_EQ(adapterState(true, std::string("sideways"), false, I::None), "enabled");
	for (auto p: {true, false})
		for (auto b: {true, false})
			for (auto i: {I::None, I::On, I::Off})
				for (const auto& ps: {none, std::optional<std::string>("on"), std::optional<std::string>("off-blocked")})
					EXPECT_TRUE(documented.count(adapterState(p, ps, b, i)));
}

TEST(BluetoothMapping, DeviceStates) {
	auto documented = schemaEnum("BluetoothDeviceState");
	EXPECT_EQ(documented, (std::set<std::string>{"disconnected", "connecting", "connected", "disconnecting"}));
	EXPECT_EQ(deviceState(true, Intent::None), "connected");
	EXPECT_EQ(deviceState(false, Intent::None), "disconnected");
	EXPECT_EQ(deviceState(std::nullopt, Intent::None), "disconnected");
	EXPECT_EQ(deviceState(false, Intent::On), "connecting");
	EXPECT_EQ(deviceState(true, Intent::On), "connected");
	EXPECT_EQ(deviceState(true, Intent::Off), "disconnecting");
	EXPECT_EQ(deviceState(false, Intent::Off), "disconnected");
}

TEST(BluetoothMapping, BatteryPasskeysAndPins) {
	EXPECT_DOUBLE_EQ(*batteryFraction(87), 0.87);
	EXPECT_DOUBLE_EQ(*batteryFraction(0), 0.0);
	EXPECT_DOUBLE_EQ(*batteryFraction(100), 1.0);
	EXPECT_FALSE(batteryFraction(101));
	EXPECT_FALSE(batteryFraction(255));
	EXPECT_EQ(passkeyText(123456), "123456");
	EXPECT_EQ(passkeyText(42), "000042");
	EXPECT_EQ(passkeyText(0), "000000");
	EXPECT_EQ(passkeyText(999999), "999999");
	EXPECT_FALSE(passkeyText(1000000));
	EXPECT_TRUE(isPinCode("0000"));
	EXPECT_TRUE(isPinCode("abcDEF1234567890"));
	EXPECT_FALSE(isPinCode(""));
	EXPECT_FALSE(isPinCode("12345678901234567"));
	EXPECT_FALSE(isPinCode("12\n34"));
}

TEST(BluetoothMapping, AgentKinds) {
	auto documented = schemaEnum("BluetoothAgentRequestKind");
	std::set<std::string> mapped;
	for (auto k: {AgentKind::RequestPinCode, AgentKind::DisplayPinCode, AgentKind::RequestPasskey, AgentKind::DisplayPasskey,
	              AgentKind::RequestConfirmation, AgentKind::RequestAuthorization, AgentKind::AuthorizeService})
		mapped.insert(agentKindName(k));
	EXPECT_EQ(mapped, documented);
	EXPECT_TRUE(answeredAtOnce(AgentKind::DisplayPasskey));
	EXPECT_TRUE(answeredAtOnce(AgentKind::DisplayPinCode));
	EXPECT_FALSE(answeredAtOnce(AgentKind::RequestConfirmation));
	EXPECT_FALSE(answeredAtOnce(AgentKind::RequestPinCode));
}

TEST(BluetoothMapping, AdapterObjects) {
	auto m = mapAdapter(props({{"Name", sdbus::Variant(std::string("laptop"))},
	                           {"Alias", sdbus::Variant(std::string("My laptop"))},
	                           {"Address", sdbus::Variant(std::string("00:01:02:03:04:05"))},
	                           {"Powered", sdbus::Variant(true)},
	                           {"Discoverable", sdbus::Variant(false)},
	                           {"DiscoverableTimeout", sdbus::Variant(uint32_t(180))},
	                           {"Pairable", sdbus::Variant(true)},
	                           {"Discovering", sdbus::Variant(true)}}),
	                    {});
	EXPECT_TRUE(m.badProperties.empty());
	EXPECT_EQ(m.value, (json{{"name", "laptop"},
	                         {"address", "00:01:02:03:04:05"},
	                         {"alias", "My laptop"},
	                         {"enabled", true},
	                         {"state", "enabled"},
	                         {"discoverable", false},
	                         {"discoverableTimeout", 180},
	                         {"pairable", true},
	                         {"pairableTimeout", 0},
	                         {"discovering", true}}));
	EXPECT_EQ(keys(m.value), schemaRequired("BluetoothAdapter"));
	// Wrong types degrade the field and are reported; the object is still complete.
	auto bad = mapAdapter(props({{"Powered", sdbus::Variant(std::string("yes"))},
	                             {"Alias", sdbus::Variant(uint32_t(3))},
	                             {"Address", sdbus::Variant(std::string("nonsense"))},
	                             {"Discovering", sdbus::Variant(int32_t(1))}}),
	                      {true, Intent::None});
	EXPECT_EQ(bad.value["enabled"], false);
	EXPECT_EQ(bad.value["state"], "blocked");
	EXPECT_EQ(bad.value["alias"], nullptr);
	EXPECT_EQ(bad.value["address"], nullptr);
	EXPECT_EQ(bad.value["discovering"], nullptr);
	EXPECT_EQ(std::set<std::string>(bad.badProperties.begin(), bad.badProperties.end()),
	          (std::set<std::string>{"Powered", "Alias", "Discovering"}));
	EXPECT_EQ(keys(bad.value), schemaRequired("BluetoothAdapter"));
}

TEST(BluetoothMapping, DeviceObjects) {
	auto device = props({{"Address", sdbus::Variant(std::string("11:22:33:44:55:66"))},
	                     {"Name", sdbus::Variant(std::string("Headset"))},
	                     {"Alias", sdbus::Variant(std::string("My headset"))},
	                     {"Icon", sdbus::Variant(std::string("audio-headset"))},
	                     {"Paired", sdbus::Variant(true)},
	                     {"Trusted", sdbus::Variant(true)},
	                     {"Blocked", sdbus::Variant(false)},
	                     {"Connected", sdbus::Variant(true)},
	                     {"RSSI", sdbus::Variant(int16_t(-60))},
	                     {"WakeAllowed", sdbus::Variant(false)}});
	auto battery = props({{"Percentage", sdbus::Variant(uint8_t(87))}});
	DeviceInputs in{"hci0", "11:22:33:44:55:66", Intent::None, false, "file:///icons/audio-headset.png"};
	auto m = mapDevice(device, &battery, in);
	EXPECT_TRUE(m.badProperties.empty());
	EXPECT_EQ(m.value, (json{{"address", "11:22:33:44:55:66"},
	                         {"name", "Headset"},
	                         {"alias", "My headset"},
	                         {"icon", "audio-headset"},
	                         {"iconUrl", "file:///icons/audio-headset.png"},
	                         {"adapter", "hci0"},
	                         {"paired", true},
	                         {"bonded", false},
	                         {"trusted", true},
	                         {"blocked", false},
	                         {"connected", true},
	                         {"state", "connected"},
	                         {"pairing", false},
	                         {"rssi", -60},
	                         {"battery", 0.87},
	                         {"wakeAllowed", false}}));
	EXPECT_EQ(keys(m.value), schemaRequired("BluetoothDevice"));
	// No battery interface, no RSSI, no name: nulls.
	auto bare = mapDevice(props({{"Alias", sdbus::Variant(std::string("11-22-33-44-55-66"))}}), nullptr,
	                      {"hci0", "11:22:33:44:55:66", Intent::On, true, nullptr});
	EXPECT_EQ(bare.value["battery"], nullptr);
	EXPECT_EQ(bare.value["rssi"], nullptr);
	EXPECT_EQ(bare.value["name"], nullptr);
	EXPECT_EQ(bare.value["icon"], nullptr);
	EXPECT_EQ(bare.value["address"], "11:22:33:44:55:66");
	EXPECT_EQ(bare.value["state"], "connecting");
	EXPECT_EQ(bare.value["pairing"], true);
	EXPECT_EQ(keys(bare.value), schemaRequired("BluetoothDevice"));
	// A hostile name is cut; a battery over 100 % or of the wrong type is null and reported.
	auto hostile = props({{"Name", sdbus::Variant(std::string(5000, 'n'))}, {"Alias", sdbus::Variant(std::string(5000, 'a'))},
	                      {"Icon", sdbus::Variant(std::string(500, 'i'))}, {"Connected", sdbus::Variant(std::string("no"))},
	                      {"RSSI", sdbus::Variant(std::string("loud"))}});
	auto over = props({{"Percentage", sdbus::Variant(uint8_t(200))}});
	auto h = mapDevice(hostile, &over, {"hci0", "11:22:33:44:55:66", Intent::None, false, nullptr});
	EXPECT_EQ(h.value["name"].get<std::string>().size(), bluetooth::kMaxNameBytes);
	EXPECT_EQ(h.value["alias"].get<std::string>().size(), bluetooth::kMaxNameBytes);
	EXPECT_EQ(h.value["icon"].get<std::string>().size(), kMaxIconBytes);
	EXPECT_EQ(h.value["battery"], nullptr);
	EXPECT_EQ(h.value["rssi"], nullptr);
	EXPECT_EQ(h.value["connected"], false);
	EXPECT_EQ(std::set<std::string>(h.badProperties.begin(), h.badProperties.end()),
	          (std::set<std::string>{"Connected", "RSSI", "Percentage"}));
	auto wrong = props({{"Percentage", sdbus::Variant(std::string("87"))}});
	EXPECT_EQ(mapDevice(device, &wrong, in).value["battery"], nullptr);
	EXPECT_EQ(deviceIcon(hostile).size(), kMaxIconBytes);
	EXPECT_EQ(deviceIcon(device), "audio-headset");
	EXPECT_EQ(deviceIcon(props({})), "");
}

TEST(BluetoothMapping, DefaultAdapterIsTheFirstInNaturalOrder) {
	EXPECT_FALSE(defaultAdapter({}));
	EXPECT_EQ(defaultAdapter({"hci1", "hci0"}), "hci0");
	EXPECT_EQ(defaultAdapter({"hci10", "hci2"}), "hci2");
	EXPECT_TRUE(naturalLess("hci2", "hci10"));
	EXPECT_FALSE(naturalLess("hci10", "hci2"));
	EXPECT_TRUE(naturalLess("hci0", "hci00"));
	EXPECT_FALSE(naturalLess("hci0", "hci0"));
}

TEST(BluetoothMapping, RfkillRecords) {
	// struct rfkill_event in host order: idx, type, op, soft, hard.
	uint8_t raw[kRfkillEventSize] = {};
	uint32_t idx = 7;
	std::memcpy(raw, &idx, 4);
	raw[4] = kRfkillTypeBluetooth;
	raw[5] = kRfkillOpChange;
	raw[6] = 1;
	raw[7] = 0;
	auto e = parseRfkillEvent(std::span<const uint8_t, kRfkillEventSize>(raw, kRfkillEventSize));
	EXPECT_EQ(e.idx, 7u);
	EXPECT_EQ(e.type, kRfkillTypeBluetooth);
	EXPECT_EQ(e.op, kRfkillOpChange);
	EXPECT_TRUE(e.soft);
	EXPECT_FALSE(e.hard);
	auto change = rfkillChange(7, false);
	auto back = parseRfkillEvent(change);
	EXPECT_EQ(back.idx, 7u);
	EXPECT_EQ(back.op, kRfkillOpChange);
	EXPECT_FALSE(back.soft);
}

TEST(BluetoothMapping, RfkillTableBlocksTheAdapterItNames) {
	RfkillTable t;
	auto ev = [](uint32_t idx, uint8_t type, uint8_t op, bool soft, bool hard) { return RfkillEvent{idx, type, op, soft, hard}; };
	EXPECT_TRUE(t.apply(ev(0, kRfkillTypeBluetooth, kRfkillOpAdd, false, false), "hci0"));
	EXPECT_TRUE(t.apply(ev(1, kRfkillTypeBluetooth, kRfkillOpAdd, true, false), "hci1"));
	// Other radios are not Bluetooth's business.
	EXPECT_FALSE(t.apply(ev(2, 1 /* wlan */, kRfkillOpAdd, true, true), "phy0"));
	EXPECT_FALSE(t.blockOf("hci0").blocked());
	auto b1 = t.blockOf("hci1");
	EXPECT_TRUE(b1.soft);
	EXPECT_FALSE(b1.hard);
	EXPECT_EQ(b1.softSwitches, std::vector<uint32_t>{1});
	EXPECT_EQ(b1.names, std::vector<std::string>{"hci1"});
	// An unchanged state is no change; a hard block is.
	EXPECT_FALSE(t.apply(ev(1, kRfkillTypeBluetooth, kRfkillOpChange, true, false), ""));
	EXPECT_TRUE(t.apply(ev(0, kRfkillTypeBluetooth, kRfkillOpChange, false, true), ""));
	EXPECT_TRUE(t.blockOf("hci0").hard);
	EXPECT_TRUE(t.blockOf("hci0").softSwitches.empty());
	// A platform switch blocks every adapter.
	EXPECT_TRUE(t.apply(ev(5, kRfkillTypeBluetooth, kRfkillOpAdd, true, false), "tpacpi_bluetooth_sw"));
	auto b0 = t.blockOf("hci0");
	EXPECT_TRUE(b0.hard && b0.soft);
	EXPECT_EQ(b0.softSwitches, std::vector<uint32_t>{5});
	EXPECT_EQ(t.blockOf("hci2").names, std::vector<std::string>{"tpacpi_bluetooth_sw"});
	// Gone switches block nothing.
	EXPECT_TRUE(t.apply(ev(5, kRfkillTypeBluetooth, kRfkillOpDel, false, false), ""));
	EXPECT_TRUE(t.apply(ev(0, kRfkillTypeBluetooth, kRfkillOpDel, false, false), ""));
	EXPECT_FALSE(t.blockOf("hci0").blocked());
	EXPECT_FALSE(t.apply(ev(9, kRfkillTypeBluetooth, kRfkillOpDel, false, false), ""));
}

#endif // QSD_BLUETOOTH_BACKEND
