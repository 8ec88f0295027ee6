// The secret agent's pure rules (daemon/backends/nm/secrets.hpp): what a prompt asks for, the
// checks on an answer, the reply NetworkManager gets, and the names of profile types.

#include "backends/nm/secrets.hpp"

#include "dbus/raw.hpp"
#include "dbus/variant.hpp"

#include <gtest/gtest.h>

using namespace qsd::nm;
using sdbus::Variant;

namespace {

RawSettings connection(const std::string& type, const std::string& id = "Profile") {
	RawSettings s;
	s["connection"] = {{"id", Variant(id)}, {"uuid", Variant(std::string("u-1"))}, {"type", Variant(type)}};
	return s;
}

RawSettings wifi(const std::string& keyMgmt) {
	auto s = connection("802-11-wireless", "Home");
	s["802-11-wireless"] = {{"ssid", Variant(std::vector<uint8_t>{'H', 'o', 'm', 'e'})}};
	s["802-11-wireless-security"] = {{"key-mgmt", Variant(keyMgmt)}};
	return s;
}

std::vector<std::string> keys(const SecretPrompt& p) {
	std::vector<std::string> out;
	for (const auto& f: p.fields) out.push_back(f.key);
	return out;
}

using Keys = std::vector<std::string>;

// The reply writeSecretsReply writes, read back as NetworkManager gets it.
RawSettings secretsReply(const SecretPrompt& p, const std::map<std::string, std::string>& secrets) {
	auto msg = qsd::dbus::plainMessage();
	writeSecretsReply(msg, p, secrets);
	msg.seal();
	msg.rewind(true);
	RawSettings out;
	msg >> out;
	return out;
}

} // namespace

TEST(NmSecretPrompt, WifiPskAndSae) {
	auto p = secretPrompt(wifi("wpa-psk"), "802-11-wireless-security", {}, kSecretsAllowInteraction);
	EXPECT_EQ(p.type, "wifi");
	EXPECT_EQ(p.setting, "802-11-wireless-security");
	EXPECT_EQ(p.profile, "u-1");
	EXPECT_EQ(p.profileName, "Home");
	EXPECT_EQ(p.ssid, "Home");
	EXPECT_EQ(p.vpnService, std::nullopt);
	EXPECT_EQ(p.reason, "missing");
	EXPECT_FALSE(p.userRequested);
	ASSERT_EQ(p.fields.size(), 1u);
	EXPECT_EQ(p.fields[0], (SecretField{"psk", "Password", true}));
	EXPECT_EQ(keys(secretPrompt(wifi("sae"), "802-11-wireless-security", {}, 1)), Keys{"psk"});
}

TEST(NmSecretPrompt, FlagsGiveTheReason) {
	auto p = secretPrompt(wifi("wpa-psk"), "802-11-wireless-security", {},
	                      kSecretsAllowInteraction | kSecretsRequestNew | kSecretsUserRequested);
	EXPECT_EQ(p.reason, "new");
	EXPECT_TRUE(p.userRequested);
}

TEST(NmSecretPrompt, WepAskesForTheTransmitKey) {
	auto s = wifi("none");
	EXPECT_EQ(keys(secretPrompt(s, "802-11-wireless-security", {}, 1)), Keys{"wep-key0"});
	s["802-11-wireless-security"].emplace("wep-tx-keyidx", Variant(uint32_t(2)));
	auto p = secretPrompt(s, "802-11-wireless-security", {}, 1);
	ASSERT_EQ(keys(p), Keys{"wep-key2"});
	EXPECT_EQ(p.fields[0].label, "WEP key");
	s["802-11-wireless-security"].insert_or_assign("wep-tx-keyidx", Variant(uint32_t(9)));   // out of range
	EXPECT_EQ(keys(secretPrompt(s, "802-11-wireless-security", {}, 1)), Keys{"wep-key0"});
}

TEST(NmSecretPrompt, LeapAndHintsForOtherKeyManagement) {
	auto s = wifi("ieee8021x");
	s["802-11-wireless-security"].emplace("auth-alg", Variant(std::string("leap")));
	EXPECT_EQ(keys(secretPrompt(s, "802-11-wireless-security", {}, 1)), Keys{"leap-password"});
	EXPECT_EQ(keys(secretPrompt(wifi("owe"), "802-11-wireless-security", {"psk"}, 1)), Keys{"psk"});
	EXPECT_TRUE(secretPrompt(wifi("owe"), "802-11-wireless-security", {}, 1).fields.empty());
}

TEST(NmSecretPrompt, Dot1xIdentityAndPassword) {
	auto s = connection("802-3-ethernet", "Office");
	s["802-1x"] = {{"eap", Variant(std::vector<std::string>{"peap"})}, {"identity", Variant(std::string("alice"))}};
	auto p = secretPrompt(s, "802-1x", {}, 5);
	EXPECT_EQ(p.type, "8021x");
	ASSERT_EQ(p.fields.size(), 2u);
	EXPECT_EQ(p.fields[0], (SecretField{"identity", "Username", false}));
	EXPECT_EQ(p.fields[1], (SecretField{"password", "Password", true}));
	EXPECT_EQ(p.ssid, std::nullopt);
	s["802-1x"].insert_or_assign("eap", Variant(std::vector<std::string>{"tls"}));
	EXPECT_EQ(keys(secretPrompt(s, "802-1x", {}, 1)), (Keys{"identity", "private-key-password"}));
	// Without hints, by the EAP method as NetworkManager's need_secrets: a SIM's PIN, the inner
	// TLS key's password of PEAP or TTLS.
	s["802-1x"].insert_or_assign("eap", Variant(std::vector<std::string>{"sim"}));
	EXPECT_EQ(keys(secretPrompt(s, "802-1x", {}, 1)), (Keys{"identity", "pin"}));
	s["802-1x"].insert_or_assign("eap", Variant(std::vector<std::string>{"peap"}));
	s["802-1x"].insert_or_assign("phase2-autheap", Variant(std::string("tls")));
	EXPECT_EQ(keys(secretPrompt(s, "802-1x", {}, 1)), (Keys{"identity", "phase2-private-key-password"}));
	s["802-1x"].insert_or_assign("phase2-autheap", Variant(std::string("mschapv2")));
	EXPECT_EQ(keys(secretPrompt(s, "802-1x", {}, 1)), (Keys{"identity", "password"}));
}

// NetworkManager's hints name the 802.1X keys it needs: those are asked for, not a password.
TEST(NmSecretPrompt, Dot1xFromHints) {
	auto s = connection("802-11-wireless", "Campus");
	s["802-1x"] = {{"eap", Variant(std::vector<std::string>{"peap"})}, {"phase2-auth", Variant(std::string("mschapv2"))}};
	auto p = secretPrompt(s, "802-1x", {"phase2-private-key-password"}, 1);
	ASSERT_EQ(p.fields.size(), 2u);
	EXPECT_EQ(p.fields[0], (SecretField{"identity", "Username", false}));
	EXPECT_EQ(p.fields[1], (SecretField{"phase2-private-key-password", "Inner private key password", true}));
	p = secretPrompt(s, "802-1x", {"ca-cert-password", "client-cert-password", "pin"}, 1);
	ASSERT_EQ(keys(p), (Keys{"identity", "ca-cert-password", "client-cert-password", "pin"}));
	EXPECT_EQ(p.fields[1].label, "CA certificate password");
	EXPECT_EQ(p.fields[2].label, "Client certificate password");
	EXPECT_EQ(p.fields[3].label, "PIN");
	for (const auto& f: p.fields) EXPECT_EQ(f.secret, f.key != "identity") << f.key;
	// password and its byte-array alternative password-raw: one field.
	EXPECT_EQ(keys(secretPrompt(s, "802-1x", {"password", "password-raw"}, 1)), (Keys{"identity", "password"}));
	p = secretPrompt(s, "802-1x", {"password-raw"}, 1);
	ASSERT_EQ(keys(p), (Keys{"identity", "password-raw"}));
	EXPECT_EQ(p.fields[1].label, "Password");
	// A hint of the identity only (iwd asks for it so): a secret is still asked for.
	EXPECT_EQ(keys(secretPrompt(s, "802-1x", {"identity"}, 1)), (Keys{"identity", "password"}));
}

TEST(NmSecretPrompt, VpnFromHintsThenDataFlags) {
	auto s = connection("vpn", "Work");
	std::map<std::string, std::string> data = {{"password-flags", "1"}, {"cert-pass-flags", "0"}, {"otp-flags", "5"},
	                                           {"remote", "vpn.example.com"}, {"Xauth password-flags", "2"}};
	s["vpn"] = {{"service-type", Variant(std::string("org.freedesktop.NetworkManager.openvpn"))}, {"data", Variant(data)},
	            // Secrets NetworkManager may pass along are never read.
	            {"secrets", Variant(std::map<std::string, std::string>{{"password", "hunter2"}})}};
	auto p = secretPrompt(s, "vpn", {"password", "challenge", "x-vpn-message:Enter the code from your token"}, 1);
	EXPECT_EQ(p.type, "vpn");
	EXPECT_EQ(p.vpnService, "openvpn");
	EXPECT_EQ(keys(p), (Keys{"password", "challenge"}));
	EXPECT_EQ(p.message, "Enter the code from your token");
	// Without hints: the flags that an agent owns or that are never saved, not the optional one.
	p = secretPrompt(s, "vpn", {}, 1);
	EXPECT_EQ(keys(p), (Keys{"Xauth password", "password"}));
	EXPECT_EQ(p.fields[0].label, "Xauth password");
	EXPECT_EQ(p.message, std::nullopt);
	// Nothing to go by: a password.
	s["vpn"].erase("data");
	EXPECT_EQ(keys(secretPrompt(s, "vpn", {}, 1)), Keys{"password"});
	auto json = promptJson(secretPrompt(s, "vpn", {}, 1), "r1", "2024-01-01T00:00:00Z");
	EXPECT_EQ(json.dump().find("hunter2"), std::string::npos);
}

TEST(NmSecretPrompt, WireGuardKeyAndPeerKeys) {
	auto s = connection("wireguard", "wg0");
	auto p = secretPrompt(s, "wireguard", {}, 1);
	EXPECT_EQ(p.type, "wireguard");
	EXPECT_EQ(p.vpnService, "wireguard");
	EXPECT_EQ(keys(p), Keys{"private-key"});
	auto peer = std::string("peers.") + std::string(43, 'A') + "=.preshared-key";
	EXPECT_EQ(keys(secretPrompt(s, "wireguard", {peer}, 1)), Keys{peer});
	EXPECT_EQ(keys(secretPrompt(s, "wireguard", {"private-key", peer}, 1)), (Keys{"private-key", peer}));
}

TEST(NmSecretPrompt, OtherSettings) {
	auto s = connection("gsm", "Mobile");
	s["gsm"] = {{"pin-flags", Variant(uint32_t(2))}, {"password-flags", Variant(uint32_t(4))}};
	auto p = secretPrompt(s, "gsm", {}, 1);
	EXPECT_EQ(p.type, "other");
	EXPECT_EQ(keys(p), Keys{"pin"});
	EXPECT_EQ(p.fields[0].label, "PIN");
	EXPECT_EQ(keys(secretPrompt(connection("pppoe"), "pppoe", {}, 1)), Keys{"password"});
	EXPECT_EQ(keys(secretPrompt(connection("macsec"), "macsec", {}, 1)), Keys{"mka-cak"});
	EXPECT_EQ(keys(secretPrompt(connection("pppoe"), "pppoe", {"password", "password"}, 1)), Keys{"password"});
	EXPECT_TRUE(secretPrompt(connection("bridge"), "bridge", {}, 1).fields.empty());
}

TEST(NmSecretPrompt, AsJson) {
	auto j = promptJson(secretPrompt(wifi("wpa-psk"), "802-11-wireless-security", {}, 3), "r7", "2024-05-01T10:00:00Z");
	EXPECT_EQ(j, nlohmann::json::parse(R"({"id": "r7", "profile": "u-1", "profileName": "Home", "type": "wifi",
	    "setting": "802-11-wireless-security", "fields": [{"key": "psk", "label": "Password", "secret": true}],
	    "ssid": "Home", "vpnService": null, "message": null, "reason": "new", "userRequested": false,
	    "createdAt": "2024-05-01T10:00:00Z"})"));
}

TEST(NmSecretAnswer, KeysMustBeFieldsAndPsksValid) {
	auto p = secretPrompt(wifi("wpa-psk"), "802-11-wireless-security", {}, 1);
	EXPECT_EQ(secretsProblem(p, {{"psk", "correct horse"}}), std::nullopt);
	auto bad = secretsProblem(p, {{"psk", "short"}});
	ASSERT_TRUE(bad);
	EXPECT_EQ(bad->param, "secrets.psk");
	bad = secretsProblem(p, {{"password", "whatever1"}});
	ASSERT_TRUE(bad);
	EXPECT_EQ(bad->param, "secrets.password");
	EXPECT_NE(bad->expected.find("psk"), std::string::npos);
	EXPECT_EQ(secretsProblem(p, {})->param, "secrets");
	EXPECT_EQ(secretsProblem(p, {{"psk", std::string("abcdefgh\0ij", 11)}})->param, "secrets.psk");
	// NetworkManager's rule (nm_utils_wpa_psk_valid): 8..63 bytes of anything, or 64 hex digits.
	EXPECT_EQ(secretsProblem(p, {{"psk", "p\xc3\xa4ssw\xc3\xb6rd-123"}}), std::nullopt);
	EXPECT_EQ(secretsProblem(p, {{"psk", std::string(64, 'F')}}), std::nullopt);
	EXPECT_EQ(secretsProblem(p, {{"psk", std::string(64, 'x')}})->param, "secrets.psk");
	// SAE passwords are not WPA passphrases: any length.
	auto sae = secretPrompt(wifi("sae"), "802-11-wireless-security", {}, 1);
	EXPECT_EQ(secretsProblem(sae, {{"psk", "short"}}), std::nullopt);
	EXPECT_EQ(secretsProblem(sae, {{"psk", std::string(100, 'x')}}), std::nullopt);
	EXPECT_EQ(secretsProblem(sae, {{"psk", ""}})->param, "secrets.psk");
}

TEST(NmSecretAnswer, AnIdentityAloneIsNoAnswer) {
	auto s = connection("802-3-ethernet", "Office");
	s["802-1x"] = {{"eap", Variant(std::vector<std::string>{"md5"})}};
	auto p = secretPrompt(s, "802-1x", {}, 1);
	auto bad = secretsProblem(p, {{"identity", "bob"}});
	ASSERT_TRUE(bad);
	EXPECT_EQ(bad->param, "secrets");
	EXPECT_NE(bad->expected.find("password"), std::string::npos);
	EXPECT_EQ(secretsProblem(p, {{"identity", "bob"}, {"password", "pw"}}), std::nullopt);
	EXPECT_EQ(secretsProblem(p, {{"password", "pw"}}), std::nullopt);
}

TEST(NmSecretAnswer, ReplyShapes) {
	auto p = secretPrompt(wifi("wpa-psk"), "802-11-wireless-security", {}, 1);
	auto r = secretsReply(p, {{"psk", "correct horse"}});
	ASSERT_EQ(r.size(), 1u);
	ASSERT_EQ(r.at("802-11-wireless-security").size(), 1u);
	EXPECT_EQ(r.at("802-11-wireless-security").at("psk").get<std::string>(), "correct horse");

	auto vpn = connection("vpn");
	vpn["vpn"] = {{"service-type", Variant(std::string("org.freedesktop.NetworkManager.openvpn"))}};
	r = secretsReply(secretPrompt(vpn, "vpn", {"password", "otp"}, 1), {{"password", "p"}, {"otp", "123456"}});
	ASSERT_EQ(r.at("vpn").size(), 1u);
	EXPECT_EQ(qsd::dbus::signatureOf(r.at("vpn").at("secrets")), "a{ss}");
	EXPECT_EQ((r.at("vpn").at("secrets").get<std::map<std::string, std::string>>()),
	          (std::map<std::string, std::string>{{"otp", "123456"}, {"password", "p"}}));

	auto dot1x = connection("802-3-ethernet");
	r = secretsReply(secretPrompt(dot1x, "802-1x", {"password-raw"}, 1), {{"password-raw", "p\xc3\xa4ss"}});
	EXPECT_EQ(qsd::dbus::signatureOf(r.at("802-1x").at("password-raw")), "ay");
	EXPECT_EQ(r.at("802-1x").at("password-raw").get<std::vector<uint8_t>>(), (std::vector<uint8_t>{'p', 0xc3, 0xa4, 's', 's'}));

	auto peer = std::string(43, 'B') + "=";
	auto wg = secretPrompt(connection("wireguard"), "wireguard", {"private-key", "peers." + peer + ".preshared-key"}, 1);
	r = secretsReply(wg, {{"private-key", "k"}, {"peers." + peer + ".preshared-key", "psk"}});
	const auto& g = r.at("wireguard");
	EXPECT_EQ(g.at("private-key").get<std::string>(), "k");
	auto peers = g.at("peers").get<std::vector<std::map<std::string, sdbus::Variant>>>();
	ASSERT_EQ(peers.size(), 1u);
	EXPECT_EQ(peers[0].at("public-key").get<std::string>(), peer);
	EXPECT_EQ(peers[0].at("preshared-key").get<std::string>(), "psk");
}

// GetSecrets' connection is read without the secrets NetworkManager passes along.
TEST(NmSecretConnection, ReadsOnlyWhatThePromptNeeds) {
	auto s = wifi("wpa-psk");
	s["802-11-wireless-security"].emplace("psk", Variant(std::string("hunter22")));
	s["802-11-wireless-security"].emplace("psk-flags", Variant(uint32_t(1)));
	s["802-11-wireless"].emplace("mode", Variant(std::string("infrastructure")));
	s["vpn"] = {{"service-type", Variant(std::string("org.freedesktop.NetworkManager.openvpn"))},
	            {"data", Variant(std::map<std::string, std::string>{{"password-flags", "1"}})},
	            {"secrets", Variant(std::map<std::string, std::string>{{"password", "vpn secret"}})}};
	s["802-1x"] = {{"eap", Variant(std::vector<std::string>{"peap"})}, {"password", Variant(std::string("eap secret"))},
	               {"password-raw", Variant(std::vector<uint8_t>{1, 2})}, {"phase2-auth", Variant(std::string("mschapv2"))}};
	auto msg = qsd::dbus::plainMessage();
	msg << s << sdbus::ObjectPath("/p") << std::string("802-11-wireless-security");
	msg.seal();
	msg.rewind(true);
	auto read = readConnection(msg);
	// The message goes on after it.
	sdbus::ObjectPath path;
	std::string setting;
	msg >> path >> setting;
	EXPECT_EQ(path, "/p");
	EXPECT_EQ(setting, "802-11-wireless-security");

	auto has = [&](const std::string& g, const std::string& k) { return read.count(g) && read.at(g).count(k); };
	for (auto [g, k]: {std::pair{"connection", "id"}, {"connection", "uuid"}, {"connection", "type"}, {"802-11-wireless", "ssid"},
	                   {"802-11-wireless-security", "key-mgmt"}, {"802-11-wireless-security", "psk-flags"},
	                   {"vpn", "service-type"}, {"vpn", "data"}, {"802-1x", "eap"}, {"802-1x", "phase2-auth"}})
		EXPECT_TRUE(has(g, k)) << g << "." << k;
	for (auto [g, k]: {std::pair{"802-11-wireless-security", "psk"}, {"vpn", "secrets"}, {"802-1x", "password"},
	                   {"802-1x", "password-raw"}, {"802-11-wireless", "mode"}})
		EXPECT_FALSE(has(g, k)) << g << "." << k;
	// The prompt is the same as from the whole connection.
	auto p = secretPrompt(read, "802-11-wireless-security", {}, 1);
	EXPECT_EQ(p.fields, secretPrompt(s, "802-11-wireless-security", {}, 1).fields);
	EXPECT_EQ(p.ssid, "Home");
	EXPECT_EQ(p.profile, "u-1");

	auto wrong = qsd::dbus::plainMessage();
	wrong << std::string("not a connection");
	wrong.seal();
	wrong.rewind(true);
	EXPECT_THROW((void)readConnection(wrong), sdbus::Error);
}

TEST(NmProfileNames, Types) {
	EXPECT_EQ(profileTypeName("802-11-wireless"), "wifi");
	EXPECT_EQ(profileTypeName("802-3-ethernet"), "wired");
	EXPECT_EQ(profileTypeName("802-11-olpc-mesh"), "olpcMesh");
	EXPECT_EQ(profileTypeName("vpn"), "vpn");
	EXPECT_EQ(profileTypeName("wireguard"), "wireguard");
	EXPECT_EQ(profileTypeName("bridge"), "bridge");
	EXPECT_EQ(profileTypeName("ip-tunnel"), "ipTunnel");
	EXPECT_EQ(profileTypeName("wifi-p2p"), "wifiP2p");
	EXPECT_EQ(profileTypeName("ovs-interface"), "ovsInterface");
	EXPECT_EQ(profileTypeName("6lowpan"), "6lowpan");
	EXPECT_EQ(profileTypeName(""), "");
}

TEST(NmProfileNames, VpnServices) {
	EXPECT_EQ(vpnServiceName("vpn", "org.freedesktop.NetworkManager.openvpn"), "openvpn");
	EXPECT_EQ(vpnServiceName("vpn", "org.freedesktop.NetworkManager.strongswan"), "strongswan");
	EXPECT_EQ(vpnServiceName("vpn", "openconnect"), "openconnect");
	EXPECT_EQ(vpnServiceName("vpn", ""), std::nullopt);
	EXPECT_EQ(vpnServiceName("vpn", "org.example."), std::nullopt);
	EXPECT_EQ(vpnServiceName("wireguard", ""), "wireguard");
	EXPECT_EQ(vpnServiceName("802-11-wireless", "org.freedesktop.NetworkManager.openvpn"), std::nullopt);
}
