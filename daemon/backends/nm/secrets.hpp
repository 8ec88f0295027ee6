#pragma once
// The secret agent's pure part: what a prompt asks for, given NetworkManager's GetSecrets
// arguments, and the reply NetworkManager expects for the values a shell typed. Also the names
// /network/profiles gives connection types and VPN services. No I/O and no state: every rule is
// unit-tested (tests/unit/nm_secrets_test.cpp) and documented in docs/backends/nm.md.
//
// Nothing here keeps a secret: a prompt holds the names of the fields only. The connection
// NetworkManager passes to GetSecrets may carry secrets the agent is allowed to see (a VPN's
// vpn.secrets, system-owned passwords); readConnection skips them unread.

#include "settings.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qsd::nm {

// NMSecretAgentGetSecretsFlags.
inline constexpr uint32_t kSecretsAllowInteraction = 0x1;
inline constexpr uint32_t kSecretsRequestNew = 0x2;
inline constexpr uint32_t kSecretsUserRequested = 0x4;
// NMSecretAgentCapabilities: the agent handles VPN secrets for the VPN plugin (hints).
inline constexpr uint32_t kAgentCapabilityVpnHints = 0x1;
// NMSettingSecretFlags.
inline constexpr uint32_t kSecretFlagAgentOwned = 0x1;
inline constexpr uint32_t kSecretFlagNotSaved = 0x2;
inline constexpr uint32_t kSecretFlagNotRequired = 0x4;

// Bounds of one prompt. A prompt's fields come from what NetworkManager passes on: the hints (a VPN
// plugin's, NetworkManager's own) and the "<key>-flags" of a VPN's vpn.data, which any user who
// may change their own profiles writes, as many keys as the system bus's 32 MiB message holds
// (130 000 agent-owned keys of 200 bytes were 8*10^9 comparisons to de-duplicate, 139 s of the
// loop, and 57 MB in the tree and the event per prompt). Real prompts are far below each bound: a VPN plugin asks for 1 to 4
// secrets (openvpn password, cert-pass, http-proxy-password; vpnc Xauth password and IPSec
// secret; openconnect gateway, cookie, gwcert), 802.1X for up to 8, WireGuard for its key and
// one pre-shared key per peer.
inline constexpr size_t kMaxSecretFields = 64;     // the rest are left out (SecretPrompt::droppedFields)
inline constexpr size_t kMaxSecretKeyBytes = 255;  // a longer key is no field (a peer's: 64 bytes)
inline constexpr size_t kMaxSecretTextBytes = 1024;      // profile, profileName, ssid, vpnService
inline constexpr size_t kMaxSecretMessageBytes = 4096;   // a VPN plugin's "x-vpn-message:" text

struct SecretField {
	std::string key;      // the setting's key ("psk", "password", "wep-key0", a VPN plugin's name)
	std::string label;    // for people ("Password")
	bool secret = true;   // false: shown for context (802.1x identity), not a secret
	bool operator==(const SecretField&) const = default;
};

// One GetSecrets call, as a shell is asked to answer it.
struct SecretPrompt {
	std::string profile;                  // connection.uuid
	std::string profileName;              // connection.id
	std::string type;                     // "wifi", "vpn", "wireguard", "8021x" or "other"
	std::string setting;                  // the setting NetworkManager asks for ("802-11-wireless-security")
	std::vector<SecretField> fields;      // what to ask for; empty: nothing an agent can answer
	std::optional<std::string> ssid;      // Wi-Fi: the SSID as text
	std::optional<std::string> vpnService;   // "openvpn", "wireguard"...
	std::optional<std::string> message;   // a VPN plugin's text for the prompt ("x-vpn-message:" hint)
	std::string reason;                   // "new" (REQUEST_NEW: the last secret was wrong) or "missing"
	bool userRequested = false;           // USER_REQUESTED: someone asked for this activation
	std::string keyMgmt;                  // 802-11-wireless-security.key-mgmt, for checking a psk
	size_t droppedFields = 0;             // keys past kMaxSecretFields or over kMaxSecretKeyBytes
};

// What to ask for: from the setting NetworkManager names, the connection (without reading a
// secret), the hints and the flags.
//  - 802-11-wireless-security: key-mgmt wpa-psk/sae -> psk; none (WEP) -> wep-key<wep-tx-keyidx>;
//    ieee8021x with auth-alg leap -> leap-password; else the hints.
//  - 802-1x: identity (not secret), then the hints (NetworkManager's keys: password,
//    phase2-private-key-password, pin, ca-cert-password...; password-raw only without password;
//    identity and "x-" hints are no fields). Without a hint of a secret, by the first EAP method:
//    tls -> private-key-password; sim -> pin; peap/ttls with an inner (phase2) tls ->
//    phase2-private-key-password; any other -> password.
//  - vpn: the hints (a plugin's secret names; "x-vpn-message:" gives `message`), else every
//    vpn.data "<key>-flags" that is agent-owned or not saved and not "not required", else password.
//  - wireguard: private-key when the hints name it or there are none; "peers.<key>.preshared-key"
//    hints as they are.
//  - any other setting: the hints, else every "<key>-flags" key that is agent-owned or not saved
//    and not "not required", else password for gsm, cdma, pppoe and adsl, mka-cak for macsec.
// Each key once, the first kMaxSecretFields in that order; a key longer than kMaxSecretKeyBytes is
// no field. Both are counted in droppedFields. The texts are cut where a character starts, at
// kMaxSecretTextBytes (the message at kMaxSecretMessageBytes); a setting name longer than
// kMaxSecretKeyBytes (no setting of NetworkManager's is) gives no fields. Linear in the hints and
// vpn.data, times log(kMaxSecretFields).
[[nodiscard]] SecretPrompt secretPrompt(const RawSettings& connection, const std::string& setting,
                                        const std::vector<std::string>& hints, uint32_t flags);

// The prompt as /network/secretRequests/<id> and the network.secretsRequested event carry it.
[[nodiscard]] nlohmann::json promptJson(const SecretPrompt& prompt, const std::string& id, const std::string& createdAt);

// Why `secrets` cannot answer `prompt`: {param, expected} of the -32602 error, nullopt when they
// can. Each key must be one of the prompt's fields, at least one of them a secret one (an 802.1X
// identity alone answers nothing: NetworkManager takes only secrets from an agent), no value may
// hold a NUL, and a Wi-Fi psk must be one NetworkManager takes for the key management
// (pskProblem: WPA-PSK 8..63 bytes or 64 hex digits, SAE any non-empty password).
struct SecretsProblem {
	std::string param;      // "secrets.psk"
	std::string expected;
};
[[nodiscard]] std::optional<SecretsProblem> secretsProblem(const SecretPrompt& prompt,
                                                           const std::map<std::string, std::string>& secrets);

// Writes the GetSecrets reply for `secrets` (a{sa{sv}}) into `reply`: {setting: {key: value}}
// (802-1x password-raw as the bytes, ay); a VPN's {vpn: {secrets: a{ss}}}; WireGuard peers' keys
// as {wireguard: {peers: [{public-key, preshared-key}]}}. The values go into the message only: no
// other copy is made.
void writeSecretsReply(sdbus::Message& reply, const SecretPrompt& prompt, const std::map<std::string, std::string>& secrets);

// Whether secretPrompt reads `group`.`key` of GetSecrets' connection: connection id, uuid and
// type, 802-11-wireless ssid, vpn service-type and data, and in any setting key-mgmt, auth-alg,
// wep-tx-keyidx, eap, phase2-auth, phase2-autheap and the "-flags" keys. Never a secret.
[[nodiscard]] bool promptReads(std::string_view group, std::string_view key);
// Reads GetSecrets' connection argument (a{sa{sv}}) at `message`'s read position, keeping only
// what promptReads names; every other value (the secrets NetworkManager may pass along among
// them) is skipped unread. Throws sdbus::Error for a message that holds anything else.
[[nodiscard]] RawSettings readConnection(sdbus::Message& message);

// /network/profiles/<uuid>/type from connection.type: "802-11-wireless" -> "wifi",
// "802-3-ethernet" -> "wired", "802-11-olpc-mesh" -> "olpcMesh", anything else in camelCase
// ("wireguard", "vpn", "ip-tunnel" -> "ipTunnel", "wifi-p2p" -> "wifiP2p"); "" stays "".
[[nodiscard]] std::string profileTypeName(std::string_view connectionType);
// The VPN plugin's short name: vpn.service-type's last dot-separated part
// ("org.freedesktop.NetworkManager.openvpn" -> "openvpn"), "wireguard" for a WireGuard
// profile, nullopt for anything else (or a VPN without a service type).
[[nodiscard]] std::optional<std::string> vpnServiceName(std::string_view connectionType, std::string_view serviceType);

} // namespace qsd::nm
