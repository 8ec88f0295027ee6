#pragma once
// Pure mapping from NetworkManager D-Bus values to /network tree values. No I/O and no state:
// every table here is unit-tested (tests/unit/nm_mapping_test.cpp) and documented in
// docs/backends/nm.md.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qsd::nm {

// NMDeviceType values the tree knows; every other type is not listed (as in Quickshell).
inline constexpr uint32_t kDeviceTypeEthernet = 1;
inline constexpr uint32_t kDeviceTypeWifi = 2;
inline constexpr uint32_t kDeviceTypeVeth = 20;
// NMDeviceInterfaceFlags: the link has carrier.
inline constexpr uint32_t kInterfaceFlagCarrier = 0x10000;
// NMDeviceState values used for logic.
inline constexpr uint32_t kDeviceStateActivated = 100;
inline constexpr uint32_t kDeviceStateFailed = 120;
// NMActiveConnectionState / NMActiveConnectionStateReason values used for logic.
inline constexpr uint32_t kActiveStateActivated = 2;
inline constexpr uint32_t kActiveStateDeactivated = 4;
inline constexpr uint32_t kActiveReasonDeviceDisconnected = 3;
// NM80211Mode: infrastructure.
inline constexpr uint32_t kWifiModeInfra = 2;

// Device.State (NMDeviceState) -> "unknown" | "unmanaged" | "unavailable" | "disconnected" |
// "connecting" | "connected" | "disconnecting" | "failed". Unlike Quickshell, failed (120) is
// not folded into disconnecting, and unmanaged/unavailable are not folded into unknown.
[[nodiscard]] std::string deviceStateName(uint32_t state);
// Connection.Active.State (NMActiveConnectionState 0..4) -> "unknown" | "connecting" |
// "connected" | "disconnecting" | "disconnected".
[[nodiscard]] std::string activeStateName(uint32_t state);
// Manager.Connectivity (NMConnectivityState 0..4) -> "unknown" | "none" | "portal" |
// "limited" | "full".
[[nodiscard]] std::string connectivityName(uint32_t connectivity);
// Device.Wireless.Mode (NM80211Mode) -> "unknown" | "adHoc" | "station" | "accessPoint" | "mesh".
[[nodiscard]] std::string wifiModeName(uint32_t mode);
// Device StateChanged reason (NMDeviceStateReason) of a failure -> Quickshell's
// ConnectionFailReason as a string, or nullopt for reasons Quickshell does not report:
// 7 NO_SECRETS -> "noSecrets", 8 SUPPLICANT_DISCONNECT -> "wifiClientDisconnected",
// 10 SUPPLICANT_FAILED -> "wifiClientFailed", 11 SUPPLICANT_TIMEOUT -> "wifiAuthTimeout",
// 53 SSID_NOT_FOUND -> "wifiNetworkLost".
[[nodiscard]] std::optional<std::string> failReasonName(uint32_t deviceStateReason);
// AccessPoint.Frequency (MHz) -> "2.4GHz" | "5GHz" | "6GHz" | "60GHz" | "unknown".
[[nodiscard]] std::string bandName(uint32_t frequencyMhz);
// A percentage (AccessPoint.Strength) as 0..1, clamped.
[[nodiscard]] double fraction(int64_t percent);

// Wi-Fi security, named after Quickshell's WifiSecurityType in camelCase.
enum class Security { Wpa3SuiteB192, Sae, Wpa2Eap, Wpa2Psk, WpaEap, WpaPsk, StaticWep, DynamicWep, Leap, Owe, Open, Unknown };
[[nodiscard]] std::string securityName(Security s);
// The security a saved profile asks for, from its 802-11-wireless-security setting (an object
// {key-mgmt, auth-alg, proto: [..]} or null when the profile has none = open).
[[nodiscard]] Security securityFromSettings(const nlohmann::json& wirelessSecurity);
// The best security both the access point (Flags, WpaFlags, RsnFlags) and the device
// (WirelessCapabilities) support, most secure first, as libnm's nm_utils_security_valid decides.
[[nodiscard]] Security securityFromAp(uint32_t deviceCaps, bool adhoc, uint32_t apFlags, uint32_t wpaFlags, uint32_t rsnFlags);
// Whether a pre-shared key (network.connect's psk) makes sense for this security.
[[nodiscard]] bool takesPsk(Security s);
// securityName's inverse ("sae" -> Sae); nullopt for any other text ("unknown" included).
[[nodiscard]] std::optional<Security> securityFromName(std::string_view name);
// 802-11-wireless-security.key-mgmt for the security types qsd sets up itself (a new profile
// of network.connect): wpaPsk, wpa2Psk "wpa-psk", sae "sae", owe "owe", open "" (no security
// setting); nullopt for the others (WEP, EAP, LEAP, Suite B need more than a key).
[[nodiscard]] std::optional<std::string> keyMgmtFor(Security s);
// Why `psk` is not a key NetworkManager takes for 802-11-wireless-security.key-mgmt `keyMgmt`,
// nullopt when it is. wpa-psk (and anything but sae): nm_utils_wpa_psk_valid, a passphrase of
// 8..63 bytes (any bytes: UTF-8 is fine) or exactly 64 hex digits. sae (WPA3): any non-empty
// password. Never a NUL character (a D-Bus string would end there).
[[nodiscard]] std::optional<std::string> pskProblem(std::string_view psk, std::string_view keyMgmt = "wpa-psk");
// The rule pskProblem applies, for an error's `expected`.
[[nodiscard]] std::string pskExpected(std::string_view keyMgmt);
// Milliseconds until the next Device.Wireless.RequestScan is due: `intervalMs` after the newer
// of NetworkManager's last scan (LastScan, CLOCK_BOOTTIME ms; negative: never) and qsd's last
// request; 0 when due now (never scanned, or a time after `nowMs`).
[[nodiscard]] int64_t scanDelayMs(std::optional<int64_t> lastScanMs, std::optional<int64_t> lastRequestMs, int64_t nowMs,
                                  int64_t intervalMs);

// SSIDs are bytes. The tree key and display name of an SSID:
//  - valid UTF-8 without control characters and not starting with "x-ssid:" -> the text itself
//    (pointer::join escapes '/' and '~' in paths);
//  - anything else (invalid UTF-8, control bytes, the prefix itself) -> "x-ssid:" + lowercase
//    hex of the bytes. This is reversible (ssidFromKey) and never collides with a text key.
[[nodiscard]] std::string ssidKey(const std::vector<uint8_t>& ssid);
// The inverse of ssidKey: a key (or any text a client passes as a network name) -> the bytes.
[[nodiscard]] std::vector<uint8_t> ssidFromKey(std::string_view key);
// Display name: the text when valid UTF-8, else the bytes with each invalid sequence replaced
// by U+FFFD (the exact bytes are in the network's ssidHex field).
[[nodiscard]] std::string ssidName(const std::vector<uint8_t>& ssid);
[[nodiscard]] std::string hex(const std::vector<uint8_t>& bytes);
[[nodiscard]] bool isValidUtf8(std::string_view text);

// IPv4 address in network byte order (as NM's legacy uint32 arrays carry it) -> dotted quad.
[[nodiscard]] std::string ipv4FromUint(uint32_t networkOrder);
// 16 bytes -> the canonical textual IPv6 form; anything else gives "".
[[nodiscard]] std::string ipv6FromBytes(const std::vector<uint8_t>& bytes);

// Setting keys that hold secrets (psk, wep-key0..3, *password*, pin, secrets...). Their values
// are never put in the tree, in answers or in logs. "-flags" and "-type" keys are not secrets.
[[nodiscard]] bool isSecretKey(std::string_view key);

} // namespace qsd::nm
