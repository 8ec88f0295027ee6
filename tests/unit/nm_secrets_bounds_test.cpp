// The bounds of a secret prompt (daemon/backends/nm/secrets.hpp): what NetworkManager passes to
// GetSecrets holds what a user wrote into their own profile (vpn.data, connection.id) and what a
// VPN plugin hints, each as large as the system bus's 32 MiB message. Counts, never times: a prompt
// keeps kMaxSecretFields fields and counts the rest.

#include "backends/nm/secrets.hpp"

#include "dbus/variant.hpp"

#include <gtest/gtest.h>

#include <cstdio>

// Named, not anonymous: the unity build puts this file in one unit with nm_secrets_test.cpp,
// whose helpers have the same names.
namespace nm_secrets_bounds {

using namespace qsd::nm;
using sdbus::Variant;

RawSettings vpn(std::map<std::string, std::string> data, const std::string& id = "Work") {
	RawSettings s;
	s["connection"] = {{"id", Variant(id)}, {"uuid", Variant(std::string("u-1"))}, {"type", Variant(std::string("vpn"))}};
	s["vpn"] = {{"service-type", Variant(std::string("org.freedesktop.NetworkManager.openvpn"))}, {"data", Variant(data)}};
	return s;
}

// "k000000".."k<n-1>": sorted as the numbers, so the first kept are the first n.
std::string numbered(size_t i) {
	char buf[16];
	std::snprintf(buf, sizeof buf, "k%06zu", i);
	return buf;
}

std::vector<std::string> keys(const SecretPrompt& p) {
	std::vector<std::string> out;
	for (const auto& f: p.fields) out.push_back(f.key);
	return out;
}

// The review's profile: vpn.data with tens of thousands of agent-owned keys. Kept: the first
// kMaxSecretFields, in vpn.data's order; counted: the rest.
TEST(NmSecretBounds, VpnDataOfManyFlaggedKeys) {
	constexpr size_t n = 20000;
	std::map<std::string, std::string> data = {{"remote", "vpn.example.com"}};
	for (size_t i = 0; i < n; ++i) data.emplace(numbered(i) + "-flags", "1");
	auto p = secretPrompt(vpn(data), "vpn", {}, kSecretsAllowInteraction);
	ASSERT_EQ(p.fields.size(), kMaxSecretFields);
	for (size_t i = 0; i < kMaxSecretFields; ++i) EXPECT_EQ(p.fields[i].key, numbered(i));
	EXPECT_EQ(p.droppedFields, n - kMaxSecretFields);
	EXPECT_EQ(promptJson(p, "r1", "2024-01-01T00:00:00Z")["fields"].size(), kMaxSecretFields);
	// A plugin's hints, bounded the same: 100 keys, each 200 times. A repeat of a field kept is
	// that field; a key past the bound is counted each time it comes.
	static_assert(kMaxSecretFields < 100);
	std::vector<std::string> hints;
	for (size_t i = 0; i < n; ++i) hints.push_back(numbered(i % 100));
	p = secretPrompt(vpn({}), "vpn", hints, kSecretsAllowInteraction);
	ASSERT_EQ(p.fields.size(), kMaxSecretFields);
	EXPECT_EQ(p.fields.back().key, numbered(kMaxSecretFields - 1));
	EXPECT_EQ(p.droppedFields, (100 - kMaxSecretFields) * (n / 100));
}

// What real profiles ask for stays whole: no field left out below the bound.
TEST(NmSecretBounds, RealPromptsAreWhole) {
	auto p = secretPrompt(vpn({{"password-flags", "1"}, {"cert-pass-flags", "1"}, {"http-proxy-password-flags", "2"}}),
	                      "vpn", {}, kSecretsAllowInteraction);
	EXPECT_EQ(keys(p), (std::vector<std::string>{"cert-pass", "http-proxy-password", "password"}));
	EXPECT_EQ(p.droppedFields, 0u);
	std::map<std::string, std::string> data;
	for (size_t i = 0; i < kMaxSecretFields; ++i) data.emplace(numbered(i) + "-flags", "1");
	p = secretPrompt(vpn(data), "vpn", {}, kSecretsAllowInteraction);
	EXPECT_EQ(p.fields.size(), kMaxSecretFields);
	EXPECT_EQ(p.droppedFields, 0u);
}

// WireGuard: the private key first, then the peers' keys, all within the bound.
TEST(NmSecretBounds, WireGuardPeers) {
	RawSettings s;
	s["connection"] = {{"type", Variant(std::string("wireguard"))}};
	std::vector<std::string> hints;
	for (size_t i = 0; i < 200; ++i) hints.push_back("peers." + numbered(i) + std::string(36, 'A') + "=.preshared-key");
	hints.push_back("private-key");
	auto p = secretPrompt(s, "wireguard", hints, kSecretsAllowInteraction);
	ASSERT_EQ(p.fields.size(), kMaxSecretFields);
	EXPECT_EQ(p.fields[0].key, "private-key");
	EXPECT_EQ(p.fields[1].key, hints[0]);
	EXPECT_EQ(p.droppedFields, 200 - (kMaxSecretFields - 1));
}

// A key longer than kMaxSecretKeyBytes is no field: a prompt has no use for it, and its label
// would be a second copy.
TEST(NmSecretBounds, LongKeysAreNoFields) {
	std::string key(kMaxSecretKeyBytes + 1, 'k');
	auto p = secretPrompt(vpn({{key + "-flags", "1"}, {"password-flags", "1"}}), "vpn", {}, kSecretsAllowInteraction);
	EXPECT_EQ(keys(p), std::vector<std::string>{"password"});
	EXPECT_EQ(p.droppedFields, 1u);
	p = secretPrompt(vpn({}), "vpn", {key, key}, kSecretsAllowInteraction);
	EXPECT_EQ(keys(p), std::vector<std::string>{"password"});   // nothing else to go by
	EXPECT_EQ(p.droppedFields, 2u);
	// Exactly at the bound: a field.
	std::string longest(kMaxSecretKeyBytes, 'k');
	EXPECT_EQ(keys(secretPrompt(vpn({}), "vpn", {longest}, 1)), std::vector<std::string>{longest});
}

// The texts a prompt shows are cut where a character starts.
TEST(NmSecretBounds, TextsAreCut) {
	// 'e' then 'é' (2 bytes) again and again: the cut falls inside a character.
	std::string name = "e";
	while (name.size() < 3 * kMaxSecretTextBytes) name += "\xc3\xa9";
	std::string message(3 * kMaxSecretMessageBytes, 'm');
	auto s = vpn({}, name);
	s["connection"].insert_or_assign("uuid", Variant(name));
	s["vpn"].insert_or_assign("service-type", Variant("org.freedesktop.NetworkManager." + name));
	auto p = secretPrompt(s, "vpn", {"password", "x-vpn-message:" + message}, kSecretsAllowInteraction);
	// Sizes first: a failing comparison of the texts themselves would print kilobytes.
	auto cut = name.substr(0, kMaxSecretTextBytes - 1);
	EXPECT_EQ(p.profileName.size(), cut.size());
	EXPECT_TRUE(p.profileName == cut);
	EXPECT_TRUE(p.profile == cut);
	ASSERT_TRUE(p.vpnService);
	EXPECT_EQ(p.vpnService->size(), cut.size());
	EXPECT_TRUE(*p.vpnService == cut);
	ASSERT_TRUE(p.message);
	EXPECT_EQ(p.message->size(), kMaxSecretMessageBytes);
	EXPECT_TRUE(*p.message == message.substr(0, kMaxSecretMessageBytes));
	EXPECT_EQ(keys(p), std::vector<std::string>{"password"});
	// A setting name no NetworkManager setting has: nothing to ask for (NoSecrets).
	std::string setting(kMaxSecretKeyBytes + 1, 's');
	p = secretPrompt(s, setting, {"password"}, kSecretsAllowInteraction);
	EXPECT_TRUE(p.fields.empty());
	EXPECT_EQ(p.setting.size(), kMaxSecretKeyBytes);
}

} // namespace nm_secrets_bounds
