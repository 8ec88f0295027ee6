// Profile settings: JSON without secrets, and the typed merge behind network.updateProfile.

#include "backends/nm/settings.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <gtest/gtest.h>

using namespace qsd::nm;
using json = nlohmann::json;

namespace {
RawSettings sample() {
	RawSettings s;
	s["connection"].emplace("id", sdbus::Variant(std::string("Home")));
	s["connection"].emplace("uuid", sdbus::Variant(std::string("u-1")));
	s["connection"].emplace("type", sdbus::Variant(std::string("802-11-wireless")));
	s["connection"].emplace("timestamp", sdbus::Variant(uint64_t(1700000000)));
	s["connection"].emplace("autoconnect-priority", sdbus::Variant(int32_t(0)));
	s["802-11-wireless"].emplace("ssid", sdbus::Variant(std::vector<uint8_t>{'H', 'o', 'm', 'e'}));
	s["802-11-wireless-security"].emplace("key-mgmt", sdbus::Variant(std::string("wpa-psk")));
	s["802-11-wireless-security"].emplace("psk", sdbus::Variant(std::string("hunter22")));
	s["802-11-wireless-security"].emplace("psk-flags", sdbus::Variant(uint32_t(0)));
	s["ipv4"].emplace("dns", sdbus::Variant(std::vector<uint32_t>{0x0101a8c0}));
	return s;
}
} // namespace

TEST(NmSettings, JsonLeavesSecretsOut) {
	auto j = settingsToJson(sample());
	EXPECT_EQ(j["connection"]["id"], "Home");
	EXPECT_EQ(j["802-11-wireless"]["ssid"], json({72, 111, 109, 101}));
	EXPECT_FALSE(j["802-11-wireless-security"].contains("psk"));
	EXPECT_EQ(j["802-11-wireless-security"]["psk-flags"], 0);
	EXPECT_EQ(j["ipv4"]["dns"], json({0x0101a8c0}));
	EXPECT_EQ(j.dump().find("hunter22"), std::string::npos);
}

TEST(NmSettings, ProfileInfo) {
	auto info = profileInfo(sample());
	EXPECT_EQ(info.id, "Home");
	EXPECT_EQ(info.uuid, "u-1");
	EXPECT_EQ(info.type, "802-11-wireless");
	EXPECT_EQ(info.timestamp, 1700000000u);
	ASSERT_TRUE(info.ssid);
	EXPECT_EQ(*info.ssid, (std::vector<uint8_t>{'H', 'o', 'm', 'e'}));
	EXPECT_EQ(info.security["key-mgmt"], "wpa-psk");
	EXPECT_FALSE(info.security.contains("psk"));
}

TEST(NmSettings, MergeKeepsTypesAndRemovesNulls) {
	auto merged = mergeSettings(sample(), {{"connection", {{"id", "Renamed"}, {"autoconnect-priority", 5}, {"autoconnect", false}}},
	                                        {"802-11-wireless", {{"ssid", "Other"}}},
	                                        {"802-11-wireless-security", {{"psk-flags", nullptr}}},
	                                        {"ipv4", {{"dns", {"1.1.1.1"}}, {"method", "auto"}}},
	                                        {"ipv6", {{"dns", {"2606:4700:4700::1111"}}, {"addr-gen-mode", 1}}},
	                                        {"proxy", nullptr}});
	EXPECT_EQ(merged["connection"].at("id").get<std::string>(), "Renamed");
	EXPECT_EQ(merged["connection"].at("autoconnect-priority").peekValueType(), "i");
	EXPECT_EQ(merged["connection"].at("autoconnect-priority").get<int32_t>(), 5);
	EXPECT_EQ(merged["connection"].at("autoconnect").peekValueType(), "b");
	EXPECT_EQ(merged["connection"].at("timestamp").peekValueType(), "t");   // untouched keys stay
	EXPECT_EQ(merged["802-11-wireless"].at("ssid").get<std::vector<uint8_t>>(), (std::vector<uint8_t>{'O', 't', 'h', 'e', 'r'}));
	EXPECT_FALSE(merged["802-11-wireless-security"].count("psk-flags"));
	EXPECT_EQ(merged["ipv4"].at("dns").get<std::vector<uint32_t>>(), (std::vector<uint32_t>{0x01010101}));
	EXPECT_EQ(merged["ipv6"].at("dns").peekValueType(), "aay");
	EXPECT_EQ(merged["ipv6"].at("addr-gen-mode").peekValueType(), "i");
}

namespace {
// A manual IPv4 profile as NetworkManager's GetSettings gives it: each renamed property in both
// spellings (the legacy addresses carry the gateway as well).
RawSettings manual() {
	using Dict = std::map<std::string, sdbus::Variant>;
	RawSettings s;
	s["connection"].emplace("id", sdbus::Variant(std::string("Manual")));
	s["connection"].emplace("master", sdbus::Variant(std::string("br0")));
	s["connection"].emplace("controller", sdbus::Variant(std::string("br0")));
	s["ipv4"].emplace("method", sdbus::Variant(std::string("manual")));
	s["ipv4"].emplace("addresses", sdbus::Variant(std::vector<std::vector<uint32_t>>{{0x0100000a, 24, 0xfe00000a}}));
	s["ipv4"].emplace("address-data", sdbus::Variant(std::vector<Dict>{
	                                      {{"address", sdbus::Variant(std::string("10.0.0.1"))}, {"prefix", sdbus::Variant(uint32_t(24))}}}));
	s["ipv4"].emplace("gateway", sdbus::Variant(std::string("10.0.0.254")));
	s["ipv4"].emplace("routes", sdbus::Variant(std::vector<std::vector<uint32_t>>{{0x0005a8c0, 24, 0xfe00000a, 0}}));
	s["ipv4"].emplace("route-data", sdbus::Variant(std::vector<Dict>{{{"dest", sdbus::Variant(std::string("192.168.5.0"))},
	                                                                 {"prefix", sdbus::Variant(uint32_t(24))}}}));
	s["ipv4"].emplace("dns", sdbus::Variant(std::vector<uint32_t>{0x0101a8c0}));
	s["ipv4"].emplace("dns-data", sdbus::Variant(std::vector<std::string>{"192.168.1.1"}));
	return s;
}
} // namespace

// NetworkManager prefers the legacy spelling when an Update carries both: a change to one must
// not travel with the cached other.
TEST(NmSettings, MergeDropsTheOtherSpellingOfAChangedProperty) {
	auto merged = mergeSettings(manual(), {{"ipv4", {{"address-data", json::array({json{{"address", "10.0.0.2"}, {"prefix", 24}}})}}}});
	const auto& ip = merged["ipv4"];
	EXPECT_FALSE(ip.count("addresses"));
	EXPECT_EQ(ip.at("address-data").peekValueType(), "aa{sv}");
	// Everything else is sent as it was.
	for (auto key: {"gateway", "routes", "route-data", "dns", "dns-data", "method"}) EXPECT_TRUE(ip.count(key)) << key;
	EXPECT_TRUE(merged["connection"].count("master"));

	merged = mergeSettings(manual(), {{"ipv4", {{"route-data", json::array()}, {"dns-data", json::array({"1.1.1.1"})}}}});
	EXPECT_FALSE(merged["ipv4"].count("routes"));
	EXPECT_FALSE(merged["ipv4"].count("dns"));
	EXPECT_TRUE(merged["ipv4"].count("addresses"));

	// The legacy spelling changed: the new one goes.
	merged = mergeSettings(manual(), {{"ipv4", {{"dns", json::array({"9.9.9.9"})}}}});
	EXPECT_FALSE(merged["ipv4"].count("dns-data"));
	EXPECT_EQ(merged["ipv4"].at("dns").get<std::vector<uint32_t>>(), (std::vector<uint32_t>{0x09090909}));

	// Removing one spelling removes the property.
	merged = mergeSettings(manual(), {{"ipv4", {{"address-data", nullptr}}}});
	EXPECT_FALSE(merged["ipv4"].count("address-data"));
	EXPECT_FALSE(merged["ipv4"].count("addresses"));

	// The gateway: the legacy addresses carry one that NetworkManager would take instead.
	merged = mergeSettings(manual(), {{"ipv4", {{"gateway", "10.0.0.253"}}}});
	EXPECT_FALSE(merged["ipv4"].count("addresses"));
	EXPECT_TRUE(merged["ipv4"].count("address-data"));
	EXPECT_EQ(merged["ipv4"].at("gateway").get<std::string>(), "10.0.0.253");

	// Both spellings named: both are the caller's.
	merged = mergeSettings(manual(), {{"ipv4", {{"routes", nullptr}, {"route-data", json::array()}}}});
	EXPECT_FALSE(merged["ipv4"].count("routes"));
	EXPECT_TRUE(merged["ipv4"].count("route-data"));

	// The other renamed properties.
	merged = mergeSettings(manual(), {{"connection", {{"controller", "br1"}}}});
	EXPECT_FALSE(merged["connection"].count("master"));
	EXPECT_EQ(merged["connection"].at("controller").get<std::string>(), "br1");
	RawSettings wifi;
	wifi["802-11-wireless"].emplace("cloned-mac-address", sdbus::Variant(std::vector<uint8_t>{2, 0, 0, 0, 0, 1}));
	wifi["802-11-wireless"].emplace("assigned-mac-address", sdbus::Variant(std::string("02:00:00:00:00:01")));
	merged = mergeSettings(wifi, {{"802-11-wireless", {{"assigned-mac-address", "random"}}}});
	EXPECT_FALSE(merged["802-11-wireless"].count("cloned-mac-address"));
	EXPECT_EQ(merged["802-11-wireless"].at("assigned-mac-address").get<std::string>(), "random");
	// A key of the same name in another setting is not touched.
	merged = mergeSettings(manual(), {{"custom", {{"address-data", "x"}}}});
	EXPECT_TRUE(merged["ipv4"].count("addresses"));
}

TEST(NmSettings, MergeRefusesValuesThatDoNotFitNamingTheParam) {
	auto refused = [](const json& changes) -> std::string {
		try {
			(void)mergeSettings(sample(), changes);
		} catch (const qsd::rpc::RpcException& e) {
			EXPECT_EQ(e.error.code, qsd::rpc::ErrorCode::InvalidParams);
			return e.error.data.value("param", "");
		}
		return "accepted";
	};
	EXPECT_EQ(refused({{"connection", {{"autoconnect-priority", "high"}}}}), "settings.connection.autoconnect-priority");
	EXPECT_EQ(refused({{"connection", {{"autoconnect-priority", 1LL << 40}}}}), "settings.connection.autoconnect-priority");
	EXPECT_EQ(refused({{"connection", "x"}}), "settings.connection");
	EXPECT_EQ(refused({{"ipv4", {{"dns", {"not an address"}}}}}), "settings.ipv4.dns");
	EXPECT_EQ(refused({{"802-11-wireless", {{"ssid", {1, 2, 300}}}}}), "settings.802-11-wireless.ssid");
	EXPECT_EQ(refused({{"custom", {{"mixed", {1, "a"}}}}}), "settings.custom.mixed");
	EXPECT_EQ(refused(json::array()), "settings");
	EXPECT_EQ(refused({{"custom", {{"flag", true}}}}), "accepted");
}

TEST(NmSettings, JsonToVariantRanges) {
	EXPECT_FALSE(jsonToVariant(-1, "u"));
	EXPECT_FALSE(jsonToVariant(256, "y"));
	EXPECT_TRUE(jsonToVariant(255, "y"));
	EXPECT_FALSE(jsonToVariant("x", "b"));
	EXPECT_FALSE(jsonToVariant(1, "a(ayuay)"));
	auto v = jsonToVariant(json::array({{{"address", "10.0.0.2"}, {"prefix", 24}}}), "aa{sv}");
	ASSERT_TRUE(v);
	EXPECT_EQ(v->peekValueType(), "aa{sv}");
}
