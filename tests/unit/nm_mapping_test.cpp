// The NetworkManager mapping tables (daemon/backends/nm/mapping.hpp), value by value.

#include "backends/nm/mapping.hpp"

#include <gtest/gtest.h>

using namespace qsd::nm;

TEST(NmMapping, DeviceStatesTellFailedFromDisconnecting) {
	EXPECT_EQ(deviceStateName(0), "unknown");
	EXPECT_EQ(deviceStateName(10), "unmanaged");
	EXPECT_EQ(deviceStateName(20), "unavailable");
	EXPECT_EQ(deviceStateName(30), "disconnected");
	for (uint32_t s: {40u, 50u, 60u, 70u, 80u, 90u}) EXPECT_EQ(deviceStateName(s), "connecting") << s;
	EXPECT_EQ(deviceStateName(100), "connected");
	EXPECT_EQ(deviceStateName(110), "disconnecting");
	EXPECT_EQ(deviceStateName(120), "failed");
	EXPECT_EQ(deviceStateName(35), "unknown");
	EXPECT_EQ(deviceStateName(9999), "unknown");
}

TEST(NmMapping, ActiveConnectionConnectivityAndModes) {
	const char* active[] = {"unknown", "connecting", "connected", "disconnecting", "disconnected"};
	for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(activeStateName(i), active[i]);
	EXPECT_EQ(activeStateName(7), "unknown");
	const char* conn[] = {"unknown", "none", "portal", "limited", "full"};
	for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(connectivityName(i), conn[i]);
	EXPECT_EQ(connectivityName(42), "unknown");
	const char* modes[] = {"unknown", "adHoc", "station", "accessPoint", "mesh"};
	for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(wifiModeName(i), modes[i]);
	EXPECT_EQ(wifiModeName(9), "unknown");
}

TEST(NmMapping, FailReasonsAsQuickshellMapsThem) {
	EXPECT_EQ(failReasonName(7), "noSecrets");
	EXPECT_EQ(failReasonName(8), "wifiClientDisconnected");
	EXPECT_EQ(failReasonName(10), "wifiClientFailed");
	EXPECT_EQ(failReasonName(11), "wifiAuthTimeout");
	EXPECT_EQ(failReasonName(53), "wifiNetworkLost");
	for (uint32_t r: {0u, 1u, 4u, 9u, 36u, 54u}) EXPECT_FALSE(failReasonName(r).has_value()) << r;
}

TEST(NmMapping, BandsAndFractions) {
	EXPECT_EQ(bandName(2412), "2.4GHz");
	EXPECT_EQ(bandName(2484), "2.4GHz");
	EXPECT_EQ(bandName(5180), "5GHz");
	EXPECT_EQ(bandName(5955), "6GHz");
	EXPECT_EQ(bandName(60480), "60GHz");
	EXPECT_EQ(bandName(0), "unknown");
	EXPECT_DOUBLE_EQ(fraction(82), 0.82);
	EXPECT_DOUBLE_EQ(fraction(0), 0.0);
	EXPECT_DOUBLE_EQ(fraction(255), 1.0);
	EXPECT_DOUBLE_EQ(fraction(-3), 0.0);
}

TEST(NmMapping, SecurityFromProfileSettings) {
	using json = nlohmann::json;
	EXPECT_EQ(securityFromSettings(nullptr), Security::Open);
	EXPECT_EQ(securityFromSettings(json::object()), Security::Open);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "none"}}), Security::StaticWep);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "ieee8021x"}}), Security::DynamicWep);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "ieee8021x"}, {"auth-alg", "leap"}}), Security::Leap);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "wpa-psk"}}), Security::Wpa2Psk);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "wpa-psk"}, {"proto", {"wpa"}}}), Security::WpaPsk);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "wpa-psk"}, {"proto", {"wpa", "rsn"}}}), Security::Wpa2Psk);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "wpa-eap"}}), Security::Wpa2Eap);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "wpa-eap"}, {"proto", {"wpa"}}}), Security::WpaEap);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "sae"}}), Security::Sae);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "owe"}}), Security::Owe);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", "wpa-eap-suite-b-192"}}), Security::Wpa3SuiteB192);
	EXPECT_EQ(securityFromSettings({{"key-mgmt", 5}}), Security::Unknown);
	EXPECT_EQ(securityName(Security::Wpa2Psk), "wpa2Psk");
	EXPECT_EQ(securityName(Security::Unknown), "unknown");
	EXPECT_TRUE(takesPsk(Security::Sae));
	EXPECT_FALSE(takesPsk(Security::Open));
	EXPECT_FALSE(takesPsk(Security::Wpa2Eap));
}

TEST(NmMapping, SecurityFromAccessPointFlagsAsLibnm) {
	const uint32_t caps = 0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x20;   // WEP40/104, TKIP, CCMP, WPA, RSN
	EXPECT_EQ(securityFromAp(caps, false, 0, 0, 0), Security::Open);
	EXPECT_EQ(securityFromAp(caps, false, 0x1, 0, 0), Security::StaticWep);          // privacy only
	EXPECT_EQ(securityFromAp(caps, false, 0x1, 0, 0x188), Security::Wpa2Psk);         // RSN PSK CCMP
	EXPECT_EQ(securityFromAp(caps, false, 0x1, 0x144, 0), Security::WpaPsk);          // WPA PSK TKIP
	EXPECT_EQ(securityFromAp(caps, false, 0x1, 0, 0x488), Security::Sae);             // SAE CCMP
	EXPECT_EQ(securityFromAp(caps, false, 0x1, 0, 0x588), Security::Sae);             // transition: SAE first
	EXPECT_EQ(securityFromAp(caps, false, 0x1, 0, 0x288), Security::Wpa2Eap);
	EXPECT_EQ(securityFromAp(caps, false, 0x1, 0, 0x2088), Security::Wpa3SuiteB192);
	EXPECT_EQ(securityFromAp(caps, false, 0, 0, 0x808), Security::Owe);
	// A device without RSN cannot do WPA2: it falls back to what it can.
	EXPECT_EQ(securityFromAp(caps & ~0x20u, false, 0x1, 0x188, 0x188), Security::WpaPsk);
	// No common cipher: nothing fits.
	EXPECT_EQ(securityFromAp(0x10 | 0x20, false, 0x1, 0, 0x188), Security::Unknown);
	// Ad-hoc excludes enterprise and WPA1.
	EXPECT_EQ(securityFromAp(caps, true, 0x1, 0x144, 0), Security::Unknown);
}

TEST(NmMapping, SsidKeysAreReversibleAndNeverCollide) {
	auto bytes = [](std::string_view s) { return std::vector<uint8_t>(s.begin(), s.end()); };
	EXPECT_EQ(ssidKey(bytes("HomeNet")), "HomeNet");
	EXPECT_EQ(ssidKey(bytes("a/b~c")), "a/b~c");   // escaped by pointer::join, not here
	EXPECT_EQ(ssidKey(bytes("caf\xc3\xa9 \xf0\x9f\x98\x80")), "caf\xc3\xa9 \xf0\x9f\x98\x80");
	EXPECT_EQ(ssidKey({0xff, 0xfe, 'A'}), "x-ssid:fffe41");
	EXPECT_EQ(ssidKey(bytes("x-ssid:41")), "x-ssid:" + hex(bytes("x-ssid:41")));
	EXPECT_EQ(ssidKey(bytes("tab\there")), "x-ssid:" + hex(bytes("tab\there")));
	EXPECT_EQ(ssidKey({}), "x-ssid:");
	for (auto s: std::vector<std::vector<uint8_t>>{bytes("HomeNet"), {0xff, 0xfe, 'A'}, bytes("x-ssid:41"), bytes("a/b"),
	                                               {0xc0, 0x80}, {0xed, 0xa0, 0x80}, {0}})
		EXPECT_EQ(ssidFromKey(ssidKey(s)), s);
	// A client may also name a hidden SSID by text.
	EXPECT_EQ(ssidFromKey("Hidden"), bytes("Hidden"));
	EXPECT_EQ(ssidFromKey("x-ssid:zz"), bytes("x-ssid:zz"));   // not hex: taken as text
}

TEST(NmMapping, Utf8ValidationIsStrict) {
	EXPECT_TRUE(isValidUtf8("plain"));
	EXPECT_TRUE(isValidUtf8("\xf0\x9f\x98\x80"));
	EXPECT_FALSE(isValidUtf8("\xc0\x80"));           // overlong NUL
	EXPECT_FALSE(isValidUtf8("\xed\xa0\x80"));       // surrogate
	EXPECT_FALSE(isValidUtf8("\xf4\x90\x80\x80"));   // past U+10FFFF
	EXPECT_FALSE(isValidUtf8("\xe2\x82"));           // truncated
	EXPECT_FALSE(isValidUtf8("\xff"));
	EXPECT_EQ(ssidName({0xff, 0xfe, 'A', 'B'}), "\xef\xbf\xbd\xef\xbf\xbd" "AB");
	EXPECT_EQ(ssidName({'o', 'k'}), "ok");
}

TEST(NmMapping, AddressesAndSecretKeys) {
	EXPECT_EQ(ipv4FromUint(0x0101a8c0), "192.168.1.1");   // network byte order, as NM sends it
	std::vector<uint8_t> v6(16, 0);
	v6[0] = 0xfe;
	v6[1] = 0x80;
	v6[15] = 1;
	EXPECT_EQ(ipv6FromBytes(v6), "fe80::1");
	EXPECT_EQ(ipv6FromBytes({1, 2, 3}), "");
	for (auto k: {"psk", "wep-key0", "wep-key3", "password", "private-key-password", "leap-password", "pin", "secrets",
	              "phase2-client-cert-password"})
		EXPECT_TRUE(isSecretKey(k)) << k;
	for (auto k: {"psk-flags", "password-flags", "wep-key-type", "key-mgmt", "ssid", "id", "auth-alg"})
		EXPECT_FALSE(isSecretKey(k)) << k;
}
