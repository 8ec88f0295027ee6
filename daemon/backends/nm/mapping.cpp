#include "mapping.hpp"

#include "../../text.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

namespace qsd::nm {

using json = nlohmann::json;

std::string deviceStateName(uint32_t state) {
	if (state == 10) return "unmanaged";
	if (state == 20) return "unavailable";
	if (state == 30) return "disconnected";
	if (state >= 40 && state <= 90) return "connecting";   // prepare .. secondaries
	if (state == 100) return "connected";
	if (state == 110) return "disconnecting";
	if (state == 120) return "failed";
	return "unknown";
}

std::string activeStateName(uint32_t state) {
	switch (state) {
	case 1: return "connecting";
	case 2: return "connected";
	case 3: return "disconnecting";
	case 4: return "disconnected";
	default: return "unknown";
	}
}

std::string connectivityName(uint32_t connectivity) {
	switch (connectivity) {
	case 1: return "none";
	case 2: return "portal";
	case 3: return "limited";
	case 4: return "full";
	default: return "unknown";
	}
}

std::string wifiModeName(uint32_t mode) {
	switch (mode) {
	case 1: return "adHoc";
	case 2: return "station";
	case 3: return "accessPoint";
	case 4: return "mesh";
	default: return "unknown";
	}
}

std::optional<std::string> failReasonName(uint32_t reason) {
	switch (reason) {
	case 7: return "noSecrets";
	case 8: return "wifiClientDisconnected";
	case 10: return "wifiClientFailed";
	case 11: return "wifiAuthTimeout";
	case 53: return "wifiNetworkLost";
	default: return std::nullopt;
	}
}

std::string bandName(uint32_t mhz) {
	if (mhz >= 2400 && mhz < 2500) return "2.4GHz";
	if (mhz >= 5150 && mhz < 5925) return "5GHz";
	if (mhz >= 5925 && mhz <= 7125) return "6GHz";
	if (mhz >= 57000 && mhz <= 71000) return "60GHz";
	return "unknown";
}

double fraction(int64_t percent) { return double(std::clamp<int64_t>(percent, 0, 100)) / 100.0; }

std::string securityName(Security s) {
	switch (s) {
	case Security::Wpa3SuiteB192: return "wpa3SuiteB192";
	case Security::Sae: return "sae";
	case Security::Wpa2Eap: return "wpa2Eap";
	case Security::Wpa2Psk: return "wpa2Psk";
	case Security::WpaEap: return "wpaEap";
	case Security::WpaPsk: return "wpaPsk";
	case Security::StaticWep: return "staticWep";
	case Security::DynamicWep: return "dynamicWep";
	case Security::Leap: return "leap";
	case Security::Owe: return "owe";
	case Security::Open: return "open";
	case Security::Unknown: break;
	}
	return "unknown";
}

bool takesPsk(Security s) { return s == Security::WpaPsk || s == Security::Wpa2Psk || s == Security::Sae; }

std::optional<Security> securityFromName(std::string_view name) {
	for (auto s: {Security::Wpa3SuiteB192, Security::Sae, Security::Wpa2Eap, Security::Wpa2Psk, Security::WpaEap,
	              Security::WpaPsk, Security::StaticWep, Security::DynamicWep, Security::Leap, Security::Owe, Security::Open})
		if (securityName(s) == name) return s;
	return std::nullopt;
}

std::optional<std::string> keyMgmtFor(Security s) {
	switch (s) {
	case Security::Open: return std::string();
	case Security::Owe: return "owe";
	case Security::WpaPsk:
	case Security::Wpa2Psk: return "wpa-psk";
	case Security::Sae: return "sae";
	default: return std::nullopt;
	}
}

std::optional<std::string> pskProblem(std::string_view psk, std::string_view keyMgmt) {
	// D-Bus strings end at the first NUL: the key would arrive cut short.
	if (psk.find('\0') != std::string_view::npos) return "a key must not contain NUL characters";
	// SAE (WPA3) takes a password of any length; NetworkManager checks none
	// (nm-setting-wireless-security.c, verify_secrets: "sae" is left out of the PSK check).
	if (keyMgmt == "sae") {
		if (psk.empty()) return "an SAE password must not be empty";
		return std::nullopt;
	}
	// As NetworkManager's nm_utils_wpa_psk_valid: 8..63 bytes, any bytes (a UTF-8 passphrase
	// such as "pässwörd-123" is fine), or the raw key as exactly 64 hex digits.
	if (psk.size() == 64) {
		for (char c: psk)
			if (!std::isxdigit(static_cast<unsigned char>(c))) return "a 64-byte key must be 64 hex digits";
		return std::nullopt;
	}
	if (psk.size() < 8 || psk.size() > 63) return "a passphrase must have 8..63 bytes (or be 64 hex digits)";
	return std::nullopt;
}

std::string pskExpected(std::string_view keyMgmt) {
	if (keyMgmt == "sae") return "a non-empty SAE password without NUL characters";
	return "a WPA passphrase of 8..63 bytes (UTF-8 is fine) or 64 hex digits";
}

int64_t scanDelayMs(std::optional<int64_t> lastScanMs, std::optional<int64_t> lastRequestMs, int64_t nowMs,
                    int64_t intervalMs) {
	int64_t last = -1;
	if (lastScanMs && *lastScanMs >= 0) last = *lastScanMs;
	if (lastRequestMs && *lastRequestMs > last) last = *lastRequestMs;
	// Never scanned, or a time from the future (another boot's): due now.
	if (last < 0 || last > nowMs) return 0;
	int64_t age = nowMs - last;
	return age >= intervalMs ? 0 : intervalMs - age;
}

Security securityFromSettings(const json& sec) {
	if (!sec.is_object() || sec.empty()) return Security::Open;
	auto str = [&](const char* key) {
		auto it = sec.find(key);
		return it != sec.end() && it->is_string() ? it->get<std::string>() : std::string();
	};
	std::string keyMgmt = str("key-mgmt");
	// WPA1 only when the profile restricts itself to the "wpa" protocol; a profile that allows
	// "rsn" (or does not say) is WPA2.
	bool wpaOnly = false;
	if (auto it = sec.find("proto"); it != sec.end() && it->is_array() && !it->empty()) {
		wpaOnly = true;
		for (const auto& p: *it)
			if (!p.is_string() || p.get<std::string>() != "wpa") wpaOnly = false;
	}
	if (keyMgmt == "none") return Security::StaticWep;
	if (keyMgmt == "ieee8021x") return str("auth-alg") == "leap" ? Security::Leap : Security::DynamicWep;
	if (keyMgmt == "wpa-psk") return wpaOnly ? Security::WpaPsk : Security::Wpa2Psk;
	if (keyMgmt == "wpa-eap") return wpaOnly ? Security::WpaEap : Security::Wpa2Eap;
	if (keyMgmt == "sae") return Security::Sae;
	if (keyMgmt == "wpa-eap-suite-b-192") return Security::Wpa3SuiteB192;
	if (keyMgmt == "owe") return Security::Owe;
	return Security::Unknown;
}

namespace {
// NM80211ApFlags
constexpr uint32_t kApPrivacy = 0x1;
// NM80211ApSecurityFlags
constexpr uint32_t kPairWep40 = 0x1, kPairWep104 = 0x2, kPairTkip = 0x4, kPairCcmp = 0x8;
constexpr uint32_t kGroupWep40 = 0x10, kGroupWep104 = 0x20, kGroupTkip = 0x40, kGroupCcmp = 0x80;
constexpr uint32_t kKeyPsk = 0x100, kKey8021x = 0x200, kKeySae = 0x400, kKeyOwe = 0x800, kKeyOweTm = 0x1000,
                   kKeySuiteB192 = 0x2000;
// NMDeviceWifiCapabilities
constexpr uint32_t kCapWep40 = 0x1, kCapWep104 = 0x2, kCapTkip = 0x4, kCapCcmp = 0x8, kCapWpa = 0x10, kCapRsn = 0x20,
                   kCapIbssRsn = 0x2000;

// The device must share at least one pairwise and one group cipher with the AP.
bool ciphersMatch(uint32_t caps, uint32_t ap, bool staticWep) {
	bool pair = staticWep;   // static WEP has group ciphers only
	if (!staticWep) {
		pair = ((caps & kCapWep40) && (ap & kPairWep40)) || ((caps & kCapWep104) && (ap & kPairWep104)) ||
		       ((caps & kCapTkip) && (ap & kPairTkip)) || ((caps & kCapCcmp) && (ap & kPairCcmp));
	}
	bool group = ((caps & kCapWep40) && (ap & kGroupWep40)) || ((caps & kCapWep104) && (ap & kGroupWep104));
	if (!staticWep) group = group || ((caps & kCapTkip) && (ap & kGroupTkip)) || ((caps & kCapCcmp) && (ap & kGroupCcmp));
	return pair && group;
}

bool pskCipher(uint32_t caps, uint32_t ap) {
	return ((ap & kPairTkip) && (caps & kCapTkip)) || ((ap & kPairCcmp) && (caps & kCapCcmp));
}

bool valid(Security type, uint32_t caps, bool adhoc, uint32_t flags, uint32_t wpa, uint32_t rsn) {
	bool privacy = flags & kApPrivacy;
	switch (type) {
	case Security::Open: return !privacy && !wpa && !rsn;
	case Security::Leap:
	case Security::StaticWep:
		if (type == Security::Leap && adhoc) return false;
		if (!privacy) return false;
		if (wpa || rsn) return ciphersMatch(caps, wpa, true) || ciphersMatch(caps, rsn, true);
		return true;
	case Security::DynamicWep:
		if (adhoc || rsn || !privacy) return false;
		if (wpa) return (wpa & kKey8021x) && ciphersMatch(caps, wpa, false);
		return true;
	case Security::WpaPsk:
		if (adhoc || !(caps & kCapWpa)) return false;
		return (wpa & kKeyPsk) && pskCipher(caps, wpa);
	case Security::Wpa2Psk:
		if (!(caps & kCapRsn)) return false;
		if (adhoc) return (caps & kCapIbssRsn) && (rsn & kPairCcmp) && (caps & kCapCcmp);
		return (rsn & kKeyPsk) && pskCipher(caps, rsn);
	case Security::WpaEap:
		if (adhoc || !(caps & kCapWpa)) return false;
		return (wpa & kKey8021x) && ciphersMatch(caps, wpa, false);
	case Security::Wpa2Eap:
		if (adhoc || !(caps & kCapRsn)) return false;
		return (rsn & kKey8021x) && ciphersMatch(caps, rsn, false);
	case Security::Sae:
		if (!(caps & kCapRsn)) return false;
		if (adhoc) return (caps & kCapIbssRsn) && (rsn & kPairCcmp) && (caps & kCapCcmp);
		return (rsn & kKeySae) && pskCipher(caps, rsn);
	case Security::Owe:
		if (adhoc || !(caps & kCapRsn)) return false;
		return rsn & (kKeyOwe | kKeyOweTm);
	case Security::Wpa3SuiteB192:
		if (adhoc || !(caps & kCapRsn)) return false;
		return rsn & kKeySuiteB192;
	case Security::Unknown: return false;
	}
	return false;
}
} // namespace

Security securityFromAp(uint32_t caps, bool adhoc, uint32_t flags, uint32_t wpa, uint32_t rsn) {
	for (int i = int(Security::Wpa3SuiteB192); i <= int(Security::Open); ++i) {
		auto s = Security(i);
		if (valid(s, caps, adhoc, flags, wpa, rsn)) return s;
	}
	return Security::Unknown;
}

bool isValidUtf8(std::string_view s) {
	for (size_t i = 0; i < s.size();) {
		// NUL is a byte of an SSID like any other here; utf8SequenceAt refuses it.
		size_t n = s[i] == '\0' ? 1 : utf8SequenceAt(s, i);
		if (n == 0) return false;
		i += n;
	}
	return true;
}

std::string hex(const std::vector<uint8_t>& bytes) {
	static const char digits[] = "0123456789abcdef";
	std::string out;
	out.reserve(bytes.size() * 2);
	for (auto b: bytes) {
		out.push_back(digits[b >> 4]);
		out.push_back(digits[b & 0xF]);
	}
	return out;
}

namespace {
constexpr std::string_view kHexPrefix = "x-ssid:";

bool plainText(const std::vector<uint8_t>& ssid) {
	std::string_view text(reinterpret_cast<const char*>(ssid.data()), ssid.size());
	if (text.empty() || !isValidUtf8(text)) return false;
	if (text.substr(0, kHexPrefix.size()) == kHexPrefix) return false;
	for (unsigned char c: text)
		if (c < 0x20 || c == 0x7F) return false;
	return true;
}

int hexDigit(char c) {
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}
} // namespace

std::string ssidKey(const std::vector<uint8_t>& ssid) {
	if (plainText(ssid)) return std::string(ssid.begin(), ssid.end());
	return std::string(kHexPrefix) + hex(ssid);
}

std::vector<uint8_t> ssidFromKey(std::string_view key) {
	if (key.substr(0, kHexPrefix.size()) == kHexPrefix) {
		auto digits = key.substr(kHexPrefix.size());
		std::vector<uint8_t> out;
		bool ok = digits.size() % 2 == 0;
		for (size_t i = 0; ok && i < digits.size(); i += 2) {
			int hi = hexDigit(digits[i]), lo = hexDigit(digits[i + 1]);
			if (hi < 0 || lo < 0) ok = false;
			else out.push_back(uint8_t(hi * 16 + lo));
		}
		if (ok) return out;
	}
	return std::vector<uint8_t>(key.begin(), key.end());
}

std::string ssidName(const std::vector<uint8_t>& ssid) {
	std::string text(ssid.begin(), ssid.end());
	if (isValidUtf8(text)) return text;
	// Replace each invalid byte with U+FFFD, keeping the valid sequences.
	std::string out;
	size_t i = 0;
	while (i < text.size()) {
		size_t best = 0;
		for (size_t n = 1; n <= 4 && i + n <= text.size(); ++n)
			if (isValidUtf8(std::string_view(text).substr(i, n))) {
				best = n;
				break;
			}
		if (best) {
			out.append(text, i, best);
			i += best;
		} else {
			out += "\xEF\xBF\xBD";
			++i;
		}
	}
	return out;
}

std::string ipv4FromUint(uint32_t networkOrder) {
	char buf[INET_ADDRSTRLEN] = {};
	in_addr a{};
	a.s_addr = networkOrder;   // already in network byte order, as NM sends it
	if (!inet_ntop(AF_INET, &a, buf, sizeof buf)) return {};
	return buf;
}

std::string ipv6FromBytes(const std::vector<uint8_t>& bytes) {
	if (bytes.size() != 16) return {};
	char buf[INET6_ADDRSTRLEN] = {};
	in6_addr a{};
	std::copy(bytes.begin(), bytes.end(), a.s6_addr);
	if (!inet_ntop(AF_INET6, &a, buf, sizeof buf)) return {};
	return buf;
}

bool isSecretKey(std::string_view key) {
	auto endsWith = [&](std::string_view suffix) {
		return key.size() >= suffix.size() && key.substr(key.size() - suffix.size()) == suffix;
	};
	if (endsWith("-flags") || endsWith("-type")) return false;
	if (key == "psk" || key == "pin" || key == "secrets" || key == "leap-password" || key == "wep-key0" ||
	    key == "wep-key1" || key == "wep-key2" || key == "wep-key3")
		return true;
	return key.find("password") != std::string_view::npos || key.find("secret") != std::string_view::npos ||
	       key.find("psk") != std::string_view::npos;
}

} // namespace qsd::nm
