#include "secrets.hpp"

#include "mapping.hpp"

#include "../../dbus/raw.hpp"
#include "../../dbus/variant.hpp"
#include "../../text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace qsd::nm {

using json = nlohmann::json;

namespace {

using Group = std::map<std::string, sdbus::Variant>;

const Group* group(const RawSettings& s, const std::string& name) {
	auto it = s.find(name);
	return it == s.end() ? nullptr : &it->second;
}

const sdbus::Variant* value(const Group* g, const std::string& key) {
	if (!g) return nullptr;
	auto it = g->find(key);
	return it == g->end() ? nullptr : &it->second;
}

std::string text(const Group* g, const std::string& key) {
	const auto* v = value(g, key);
	return v ? dbus::asString(*v).value_or("") : std::string();
}

bool starts(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ends(std::string_view s, std::string_view suffix) {
	return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A secret an agent is asked for: owned by an agent or never saved, and not optional.
bool askable(uint64_t flags) {
	return (flags & (kSecretFlagAgentOwned | kSecretFlagNotSaved)) && !(flags & kSecretFlagNotRequired);
}

std::optional<uint64_t> parseUint(std::string_view s) {
	uint64_t v = 0;
	auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
	if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
	return v;
}

std::string label(const std::string& key) {
	static const std::map<std::string, std::string> known = {
	    {"psk", "Password"},
	    {"password", "Password"},
	    {"leap-password", "Password"},
	    {"identity", "Username"},
	    {"private-key", "Private key"},
	    {"private-key-password", "Private key password"},
	    {"phase2-private-key-password", "Inner private key password"},
	    {"password-raw", "Password"},
	    {"ca-cert-password", "CA certificate password"},
	    {"client-cert-password", "Client certificate password"},
	    {"phase2-ca-cert-password", "Inner CA certificate password"},
	    {"phase2-client-cert-password", "Inner client certificate password"},
	    {"pin", "PIN"},
	    {"mka-cak", "Connectivity association key"},
	    {"cert-pass", "Certificate password"},
	};
	if (auto it = known.find(key); it != known.end()) return it->second;
	if (starts(key, "wep-key") && key.size() == 8) return "WEP key";
	if (starts(key, "peers.") && ends(key, ".preshared-key")) {
		auto peer = key.substr(6, key.size() - 6 - 14);
		return "Pre-shared key of peer " + peer.substr(0, 8);
	}
	// A VPN plugin's own name: "Xauth password", "cert-pass" -> "Cert pass".
	std::string out = key;
	std::replace(out.begin(), out.end(), '-', ' ');
	std::replace(out.begin(), out.end(), '_', ' ');
	if (!out.empty()) out[0] = char(std::toupper(static_cast<unsigned char>(out[0])));
	return out;
}

// A peer's text as a prompt keeps it: cut where a character starts.
std::string bounded(std::string_view s, size_t max) { return std::string(cutAtCharacter(s, max)); }

// A prompt's fields as they are found: each key once, at most kMaxSecretFields of them, none
// longer than kMaxSecretKeyBytes; the keys left out are counted in droppedFields (a key repeated
// past the bound each time). The keys kept are looked up in a set: scanning the list for each
// key made a vpn.data of 130 000 flagged keys quadratic (8*10^9 comparisons, 139 s of the loop).
class Fields {
public:
	explicit Fields(SecretPrompt& p): p_(p) {}
	void add(const std::string& key, bool secret = true) {
		if (key.empty()) return;
		if (key.size() > kMaxSecretKeyBytes) {
			++p_.droppedFields;
			return;
		}
		if (kept_.contains(key)) return;
		if (p_.fields.size() >= kMaxSecretFields) {
			++p_.droppedFields;
			return;
		}
		kept_.insert(key);
		p_.fields.push_back({key, label(key), secret});
	}
	[[nodiscard]] size_t size() const { return p_.fields.size(); }
	[[nodiscard]] bool empty() const { return p_.fields.empty(); }

private:
	SecretPrompt& p_;
	std::set<std::string, std::less<>> kept_;
};

// Every "<key>-flags" of a setting whose secret an agent is asked for; `flag` reads a value.
template <typename Map, typename Read>
void flaggedKeys(Fields& fields, const Map& keys, Read flag) {
	for (const auto& [key, v]: keys) {
		if (!ends(key, "-flags")) continue;
		if (auto f = flag(v); f && askable(*f)) fields.add(key.substr(0, key.size() - 6));
	}
}

void wifiSecurityFields(SecretPrompt& p, Fields& fields, const Group* sec, const std::vector<std::string>& hints) {
	const auto& km = p.keyMgmt;
	if (km == "wpa-psk" || km == "sae") {
		fields.add("psk");
	} else if (km == "none") {
		uint64_t idx = 0;
		if (const auto* v = value(sec, "wep-tx-keyidx")) idx = dbus::asUint(*v).value_or(0);
		fields.add("wep-key" + std::to_string(idx <= 3 ? idx : 0));
	} else if (km == "ieee8021x" && text(sec, "auth-alg") == "leap") {
		fields.add("leap-password");
	} else {
		for (const auto& h: hints) fields.add(h);
	}
}

void dot1xFields(Fields& fields, const Group* dot1x, const std::vector<std::string>& hints) {
	fields.add("identity", false);
	// The hints name the keys NetworkManager needs (its need_secrets: phase2-private-key-password,
	// pin, ca-cert-password...): asked for exactly, or NetworkManager asks again and again.
	// identity is no secret, and NetworkManager ignores it in an agent's reply. password-raw is
	// the alternative NetworkManager names with password: one field does.
	bool password = std::find(hints.begin(), hints.end(), "password") != hints.end();
	for (const auto& h: hints)
		if (h != "identity" && !starts(h, "x-") && !(h == "password-raw" && password)) fields.add(h);
	if (fields.size() > 1) return;
	// No hints: NetworkManager's own Ethernet and Wi-Fi devices give none for 802.1X. What its
	// need_secrets asks for, by the first EAP method.
	std::vector<std::string> eap;
	if (const auto* v = value(dot1x, "eap")) eap = dbus::asStrings(*v).value_or(std::vector<std::string>{});
	auto method = eap.empty() ? std::string() : eap.front();
	auto inner = text(dot1x, "phase2-auth");
	if (inner.empty()) inner = text(dot1x, "phase2-autheap");
	if (method == "tls") fields.add("private-key-password");
	else if (method == "sim") fields.add("pin");
	else if ((method == "peap" || method == "ttls") && inner == "tls") fields.add("phase2-private-key-password");
	else fields.add("password");
}

void vpnFields(SecretPrompt& p, Fields& fields, const Group* vpn, const std::vector<std::string>& hints) {
	for (const auto& h: hints) {
		if (starts(h, "x-vpn-message:")) p.message = bounded(std::string_view(h).substr(14), kMaxSecretMessageBytes);
		else if (!starts(h, "x-")) fields.add(h);
	}
	if (fields.empty())
		if (const auto* v = value(vpn, "data"))
			if (auto data = dbus::as<std::map<std::string, std::string>>(*v))
				flaggedKeys(fields, *data, [](const std::string& s) { return parseUint(s); });
	if (fields.empty()) fields.add("password");
}

void wireguardFields(Fields& fields, const std::vector<std::string>& hints) {
	// The private key first, when the hints name it or there are none.
	if (hints.empty() || std::find(hints.begin(), hints.end(), "private-key") != hints.end()) fields.add("private-key");
	for (const auto& h: hints)
		if (starts(h, "peers.") && ends(h, ".preshared-key") && h.size() > 20) fields.add(h);
}

void otherFields(SecretPrompt& p, Fields& fields, const Group* g, const std::vector<std::string>& hints) {
	for (const auto& h: hints) fields.add(h);
	if (!fields.empty()) return;
	if (g) flaggedKeys(fields, *g, [](const sdbus::Variant& v) { return dbus::asUint(v); });
	if (!fields.empty()) return;
	const auto& s = p.setting;
	if (s == "gsm" || s == "cdma" || s == "pppoe" || s == "adsl") fields.add("password");
	else if (s == "macsec") fields.add("mka-cak");
}

} // namespace

SecretPrompt secretPrompt(const RawSettings& connection, const std::string& setting, const std::vector<std::string>& hints,
                          uint32_t flags) {
	SecretPrompt p;
	// The texts are kept in the tree and sent in an event while the prompt waits: connection.id
	// is the user's to write, at any length NetworkManager's D-Bus message holds.
	const auto* con = group(connection, "connection");
	p.profile = bounded(text(con, "uuid"), kMaxSecretTextBytes);
	p.profileName = bounded(text(con, "id"), kMaxSecretTextBytes);
	p.reason = flags & kSecretsRequestNew ? "new" : "missing";
	p.userRequested = flags & kSecretsUserRequested;
	auto type = text(con, "type");
	if (const auto* ssid = value(group(connection, "802-11-wireless"), "ssid"))
		if (auto bytes = dbus::asBytes(*ssid)) p.ssid = bounded(ssidName(*bytes), kMaxSecretTextBytes);
	const auto* vpn = group(connection, "vpn");
	if (auto service = vpnServiceName(type, text(vpn, "service-type"))) p.vpnService = bounded(*service, kMaxSecretTextBytes);
	if (setting.size() > kMaxSecretKeyBytes) {
		// No setting of NetworkManager's has such a name: nothing to ask for (NoSecrets). Cut,
		// since the refusal's log line names it.
		p.setting = bounded(setting, kMaxSecretKeyBytes);
		p.type = "other";
		return p;
	}
	p.setting = setting;
	Fields fields(p);
	const auto* own = group(connection, setting);
	if (setting == "802-11-wireless-security") {
		p.type = "wifi";
		p.keyMgmt = text(own, "key-mgmt");
		wifiSecurityFields(p, fields, own, hints);
	} else if (setting == "802-1x") {
		p.type = "8021x";
		dot1xFields(fields, own, hints);
	} else if (setting == "vpn") {
		p.type = "vpn";
		vpnFields(p, fields, vpn, hints);
	} else if (setting == "wireguard") {
		p.type = "wireguard";
		wireguardFields(fields, hints);
	} else {
		p.type = "other";
		otherFields(p, fields, own, hints);
	}
	return p;
}

json promptJson(const SecretPrompt& p, const std::string& id, const std::string& createdAt) {
	json fields = json::array();
	for (const auto& f: p.fields) fields.push_back({{"key", f.key}, {"label", f.label}, {"secret", f.secret}});
	auto opt = [](const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); };
	return {{"id", id},
	        {"profile", p.profile},
	        {"profileName", p.profileName},
	        {"type", p.type},
	        {"setting", p.setting},
	        {"fields", std::move(fields)},
	        {"ssid", opt(p.ssid)},
	        {"vpnService", opt(p.vpnService)},
	        {"message", opt(p.message)},
	        {"reason", p.reason},
	        {"userRequested", p.userRequested},
	        {"createdAt", createdAt}};
}

std::optional<SecretsProblem> secretsProblem(const SecretPrompt& p, const std::map<std::string, std::string>& secrets) {
	std::string names, secretNames;
	for (const auto& f: p.fields) {
		names += (names.empty() ? "" : ", ") + f.key;
		if (f.secret) secretNames += (secretNames.empty() ? "" : ", ") + f.key;
	}
	if (secrets.empty()) return SecretsProblem{"secrets", "at least one of the request's fields: " + names};
	bool secret = false;
	for (const auto& entry: secrets) {
		// Named, not a structured binding: clang 14 cannot capture those in a lambda.
		const std::string& key = entry.first;
		const std::string& v = entry.second;
		auto f = std::find_if(p.fields.begin(), p.fields.end(), [&](const SecretField& x) { return x.key == key; });
		if (f == p.fields.end()) return SecretsProblem{"secrets." + key, "one of the request's fields: " + names};
		secret = secret || f->secret;
		// D-Bus strings end at the first NUL: the value would arrive cut short.
		if (v.find('\0') != std::string::npos) return SecretsProblem{"secrets." + key, "a string without NUL characters"};
	}
	// NetworkManager takes only secrets from an agent (an 802.1X identity alone is ignored), and
	// would ask again at once.
	if (!secret) return SecretsProblem{"secrets", "at least one of the request's secret fields: " + secretNames};
	if (p.setting == "802-11-wireless-security")
		if (auto it = secrets.find("psk"); it != secrets.end() && pskProblem(it->second, p.keyMgmt))
			return SecretsProblem{"secrets.psk", pskExpected(p.keyMgmt)};
	return std::nullopt;
}

void writeSecretsReply(sdbus::Message& m, const SecretPrompt& p, const std::map<std::string, std::string>& secrets) {
	// Written straight into the reply: an sdbus::Variant per value would be one more copy of each
	// secret, in a message of its own that is freed without being overwritten.
	auto entry = [&m](const std::string& key, const char* signature) {
		m.openDictEntry("sv");
		m << key;
		m.openVariant(signature);
	};
	auto endEntry = [&m] {
		m.closeVariant();
		m.closeDictEntry();
	};
	m.openContainer("{sa{sv}}");
	m.openDictEntry("sa{sv}");
	m << p.setting;
	m.openContainer("{sv}");
	if (p.setting == "vpn") {
		// VPN plugins take their secrets as vpn.secrets, a{ss}.
		entry("secrets", "a{ss}");
		m.openContainer("{ss}");
		for (const auto& [key, v]: secrets) {
			m.openDictEntry("ss");
			m << key << v;
			m.closeDictEntry();
		}
		m.closeContainer();
		endEntry();
	} else {
		std::vector<std::pair<std::string, const std::string*>> peers;
		for (const auto& [key, v]: secrets) {
			if (p.setting == "wireguard" && starts(key, "peers.") && ends(key, ".preshared-key")) {
				peers.emplace_back(key.substr(6, key.size() - 6 - 14), &v);
			} else if (key == "password-raw") {
				// 802-1x.password-raw is a byte array: the bytes typed.
				entry(key, "ay");
				if (int r = sd_bus_message_append_array(dbus::rawMessage(m), 'y', v.data(), v.size()); r < 0)
					throw sdbus::createError(-r, "writing password-raw into the reply failed");
				endEntry();
			} else {
				entry(key, "s");
				m << v;
				endEntry();
			}
		}
		if (!peers.empty()) {
			// WireGuard peers' keys: {peers: [{public-key, preshared-key}]}.
			entry("peers", "aa{sv}");
			m.openContainer("a{sv}");
			for (const auto& [publicKey, v]: peers) {
				m.openContainer("{sv}");
				entry("public-key", "s");
				m << publicKey;
				endEntry();
				entry("preshared-key", "s");
				m << *v;
				endEntry();
				m.closeContainer();
			}
			m.closeContainer();
			endEntry();
		}
	}
	m.closeContainer();
	m.closeDictEntry();
	m.closeContainer();
}

bool promptReads(std::string_view group, std::string_view key) {
	if (group == "connection") return key == "id" || key == "uuid" || key == "type";
	if (group == "802-11-wireless" && key == "ssid") return true;
	if (group == "vpn" && (key == "service-type" || key == "data")) return true;
	return key == "key-mgmt" || key == "auth-alg" || key == "wep-tx-keyidx" || key == "eap" || key == "phase2-auth" ||
	       key == "phase2-autheap" || ends(key, "-flags");
}

RawSettings readConnection(sdbus::Message& m) {
	// Read with sd-bus, to skip what is not read without copying it (sdbus-c++ would make a
	// Variant, a message of its own, of every value).
	auto* raw = dbus::rawMessage(m);
	using dbus::checkRead;
	RawSettings out;
	checkRead(sd_bus_message_enter_container(raw, 'a', "{sa{sv}}"), "connection");
	while (checkRead(sd_bus_message_enter_container(raw, 'e', "sa{sv}"), "connection") > 0) {
		const char* group = nullptr;
		checkRead(sd_bus_message_read_basic(raw, 's', &group), "setting name");
		std::string name = group ? group : "";
		checkRead(sd_bus_message_enter_container(raw, 'a', "{sv}"), "setting");
		while (checkRead(sd_bus_message_enter_container(raw, 'e', "sv"), "setting") > 0) {
			const char* k = nullptr;
			checkRead(sd_bus_message_read_basic(raw, 's', &k), "key");
			std::string key = k ? k : "";
			if (promptReads(name, key)) {
				sdbus::Variant v;
				m >> v;
				out[name].insert_or_assign(key, std::move(v));
			} else {
				checkRead(sd_bus_message_skip(raw, "v"), "value");
			}
			checkRead(sd_bus_message_exit_container(raw), "setting");
		}
		checkRead(sd_bus_message_exit_container(raw), "setting");
		checkRead(sd_bus_message_exit_container(raw), "connection");
	}
	checkRead(sd_bus_message_exit_container(raw), "connection");
	return out;
}

std::string profileTypeName(std::string_view type) {
	if (type == "802-11-wireless") return "wifi";
	if (type == "802-3-ethernet") return "wired";
	if (type == "802-11-olpc-mesh") return "olpcMesh";
	std::string out;
	bool upper = false;
	for (char c: type) {
		if (c == '-' || c == '_') {
			upper = !out.empty();
			continue;
		}
		out += upper ? char(std::toupper(static_cast<unsigned char>(c))) : c;
		upper = false;
	}
	return out;
}

std::optional<std::string> vpnServiceName(std::string_view type, std::string_view serviceType) {
	if (type == "wireguard") return "wireguard";
	if (type != "vpn" || serviceType.empty()) return std::nullopt;
	auto dot = serviceType.rfind('.');
	auto name = dot == std::string_view::npos ? serviceType : serviceType.substr(dot + 1);
	if (name.empty()) return std::nullopt;
	return std::string(name);
}

} // namespace qsd::nm
