#include "mapping.hpp"

#include "../../dbus/raw.hpp"
#include "../../text.hpp"

#include <systemd/sd-bus.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <limits>
#include <map>
#include <tuple>

namespace qsd::mpris {

using json = nlohmann::json;

std::optional<std::string> playerKey(std::string_view busName) {
	std::string_view prefix(kPrefix);
	if (busName.size() <= prefix.size() + 1 || busName.substr(0, prefix.size()) != prefix || busName[prefix.size()] != '.')
		return std::nullopt;
	auto key = busName.substr(prefix.size() + 1);
	if (key == "playerctld") return std::nullopt;
	return std::string(key);
}

std::string cutText(std::string s, size_t max) {
	if (s.size() <= max) return s;
	// A copy of the prefix, not s.resize(): a shortened string keeps its buffer, so a 25 MB title
	// cut to 1 KiB would still hold 25 MB.
	return std::string(cutAtCharacter(s, max));
}

std::optional<std::string> playbackStatus(std::string_view wire) {
	if (wire == "Playing") return "playing";
	if (wire == "Paused") return "paused";
	if (wire == "Stopped") return "stopped";
	return std::nullopt;
}

std::optional<std::string> loopStatus(std::string_view wire) {
	if (wire == "None") return "none";
	if (wire == "Track") return "track";
	if (wire == "Playlist") return "playlist";
	return std::nullopt;
}

std::optional<std::string> wireLoopStatus(std::string_view tree) {
	if (tree == "none") return "None";
	if (tree == "track") return "Track";
	if (tree == "playlist") return "Playlist";
	return std::nullopt;
}

int64_t microseconds(double s) {
	double us = std::round(s * 1e6);
	if (!(us == us)) return 0;   // NaN
	if (us >= 9.2e18) return std::numeric_limits<int64_t>::max();
	if (us <= -9.2e18) return std::numeric_limits<int64_t>::min();
	return int64_t(us);
}

json urlField(const std::optional<std::string>& url) {
	if (!url || url->size() > kMaxUrl) return nullptr;
	return *url;
}

namespace {

// Metadata's entries as read (mapEntries): the plain values a field can be made of decoded, any
// other kept as its type only (dbus::Value::unread).
using Entries = std::map<std::string, dbus::Value>;

[[noreturn]] void malformedValue(const char* what) {
	throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", std::string("malformed message: ") + what);
}

// Bytes of a Metadata string that are read: one more than any field keeps (a URL), so that a
// longer one is still known to be too long (null), and a text field cut from it is the same.
constexpr size_t kMaxEntryBytes = std::max({kMaxUrl, kMaxTrackId, kMaxText}) + 1;

// Metadata's entries as read from its a{sv} (operator>> below).
struct BoundedEntries {
	Entries entries;
	bool tooLarge = false;
	bool bounded = false;   // anything left out (readBounded)
};

// Reads the a{sv} at `msg`'s read position into `e`: its entries up to kMaxMetadataEntries. One
// more makes it tooLarge, and its entries are dropped: the rest is skipped, which sd-bus does
// without decoding or copying anything (made an sdbus::Variant each, a million entries took 7 s
// and 1.1 GiB before they were counted). sdbus-c++ calls it where it reads this type, so that
// sdbus::Variant::get<BoundedEntries>() reads a cached Metadata in the variant's own message.
sdbus::Message& operator>>(sdbus::Message& msg, BoundedEntries& e) {
	sd_bus_message* m = dbus::rawMessage(msg);
	dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}"), "Metadata");
	size_t count = 0;
	while (dbus::checkRead(sd_bus_message_at_end(m, false), "Metadata") == 0) {
		if (count == kMaxMetadataEntries) {
			e.tooLarge = e.bounded = true;
			e.entries.clear();
			while (dbus::checkRead(sd_bus_message_at_end(m, false), "Metadata") == 0)
				dbus::checkRead(sd_bus_message_skip(m, "{sv}"), "Metadata entry");
			break;
		}
		++count;
		dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv"), "Metadata entry");
		const char* key = nullptr;
		dbus::checkRead(sd_bus_message_read_basic(m, 's', &key), "Metadata key");
		std::string name(key ? key : "");
		// Lists as the artists are: their first kMaxArtists items.
		e.entries.insert_or_assign(std::move(name), readBounded(msg, kMaxEntryBytes, kMaxArtists, &e.bounded));
		dbus::checkRead(sd_bus_message_exit_container(m), "Metadata entry");
	}
	dbus::checkRead(sd_bus_message_exit_container(m), "Metadata");
	return msg;
}

} // namespace
} // namespace qsd::mpris

template <>
struct sdbus::signature_of<qsd::mpris::BoundedEntries> {
	static constexpr bool is_valid = true;
	static const std::string str() { return "a{sv}"; }
};

namespace qsd::mpris {
namespace {

// A text entry: cut to kMaxText, null when absent or of another type.
json text(const Entries& m, const char* key, std::vector<std::string>& bad) {
	auto it = m.find(key);
	if (it == m.end()) return nullptr;
	auto s = dbus::asString(it->second);
	if (!s) {
		bad.emplace_back(key);
		return nullptr;
	}
	return cutText(std::move(*s));
}

// An artist list: `as`, or a plain string (one artist), as players send both.
json names(const Entries& m, const char* key, std::vector<std::string>& bad) {
	json out = json::array();
	auto it = m.find(key);
	if (it == m.end()) return out;
	std::vector<std::string> list;
	if (auto v = dbus::asStrings(it->second)) list = std::move(*v);
	else if (auto s = dbus::asString(it->second)) list.push_back(std::move(*s));
	else bad.emplace_back(key);
	for (auto& n: list) {
		if (out.size() == kMaxArtists) break;
		out.push_back(cutText(std::move(n)));
	}
	return out;
}

// The tree's metadata from the entries read (`out` holds what reading them found).
Metadata mapEntries(const Entries& m, Metadata out) {
	auto& bad = out.badEntries;

	json trackId = nullptr;
	if (auto it = m.find("mpris:trackid"); it != m.end()) {
		// An object path, as the specification types it: SetPosition sends it back as one. A
		// string that is not a path ("spotify:track:…") is no track id.
		if (auto s = dbus::asString(it->second); s && s->size() <= kMaxTrackId && sd_bus_object_path_is_valid(s->c_str())) {
			trackId = *s;
			out.trackId = std::move(*s);
		} else if (!s || s->size() <= kMaxTrackId) {
			bad.emplace_back("mpris:trackid");
		}
	}
	json title = text(m, "xesam:title", bad);
	json url = nullptr;
	if (auto it = m.find("xesam:url"); it != m.end()) {
		auto s = dbus::asString(it->second);
		if (!s) bad.emplace_back("xesam:url");
		url = urlField(s);
	}
	json artUrl = nullptr;
	if (auto it = m.find("mpris:artUrl"); it != m.end()) {
		auto s = dbus::asString(it->second);
		if (!s) bad.emplace_back("mpris:artUrl");
		artUrl = urlField(s);
	}
	json trackNumber = nullptr;
	if (auto it = m.find("xesam:trackNumber"); it != m.end()) {
		if (auto n = dbus::asInt(it->second)) trackNumber = *n;
		else bad.emplace_back("xesam:trackNumber");
	}
	if (auto it = m.find("mpris:length"); it != m.end()) {
		// x per the specification; some players send t or a double.
		if (auto n = dbus::asInt(it->second)) {
			if (*n > 0) out.length = seconds(*n);
		} else if (auto d = dbus::asDouble(it->second); d && std::isfinite(*d)) {
			if (*d > 0) out.length = *d / 1e6;
		} else {
			bad.emplace_back("mpris:length");
		}
	}

	if (auto it = m.find("kde:pid"); it != m.end())
		if (auto n = dbus::asInt(it->second); n && *n > 0 && *n <= int64_t(UINT32_MAX)) out.browserPid = uint32_t(*n);

	static const std::set<std::string_view> known = {"mpris:trackid", "xesam:title", "xesam:artist", "xesam:album",
	                                                  "xesam:albumArtist", "mpris:artUrl", "xesam:url",
	                                                  "xesam:trackNumber", "mpris:length"};
	json other = json::object();
	for (auto& [key, v]: m) {
		if (known.count(key) || key.empty() || key.size() > kMaxMetadataKey) continue;
		if (auto s = dbus::asString(v)) other[key] = cutText(std::move(*s));
		else if (auto b = dbus::asBool(v)) other[key] = *b;
		else if (auto n = dbus::asInt(v)) other[key] = *n;
		else if (auto u = dbus::asUint(v)) other[key] = *u;
		else if (auto d = dbus::asDouble(v); d && std::isfinite(*d)) other[key] = *d;
		else if (auto list = dbus::asStrings(v)) {
			json items = json::array();
			for (auto& item: *list) {
				if (items.size() == kMaxArtists) break;
				items.push_back(cutText(std::move(item)));
			}
			other[key] = std::move(items);
		}
	}

	out.value = {{"trackId", trackId},
	             {"title", title},
	             {"artists", names(m, "xesam:artist", bad)},
	             {"album", text(m, "xesam:album", bad)},
	             {"albumArtists", names(m, "xesam:albumArtist", bad)},
	             {"artUrl", artUrl},
	             {"url", url},
	             {"trackNumber", trackNumber},
	             {"other", std::move(other)}};
	// The id, and the title and URL too: browsers give every track the same id (Firefox
	// "/org/mpris/MediaPlayer2/firefox", WebKit ".../webkit"), so a tab that plays the next track
	// changes only those.
	out.trackKey = (out.trackId ? *out.trackId : std::string()) + "\n" +
	               (title.is_string() ? title.get<std::string>() : std::string()) + "\n" +
	               (url.is_string() ? url.get<std::string>() : std::string());
	return out;
}

} // namespace

Metadata mapMetadata(const dbus::Value* metadata) {
	Metadata out;
	BoundedEntries read;
	const sdbus::Variant* compound = metadata ? metadata->variant() : nullptr;
	bool map = compound && metadata->signature() == "a{sv}";
	if (map) {
		try {
			read = compound->get<BoundedEntries>();
			out.tooLarge = read.tooLarge;
		} catch (const sdbus::Error&) {
			read = {};
			map = false;
		}
	}
	if (metadata && !map) {
		out.badEntries.emplace_back("Metadata");
		out.signature = metadata->signature();
	}
	return mapEntries(read.entries, std::move(out));
}

dbus::Value readBounded(sdbus::Message& msg, size_t maxBytes, size_t maxItems, bool* bounded) {
	sd_bus_message* m = dbus::rawMessage(msg);
	char type = 0;
	const char* contents = nullptr;
	if (dbus::checkRead(sd_bus_message_peek_type(m, &type, &contents), "value") == 0 || type != SD_BUS_TYPE_VARIANT ||
	    !contents)
		malformedValue("a value is no variant");
	std::string_view t(contents);
	auto leftOut = [&] {
		if (bounded) *bounded = true;
	};
	auto text = [&](char c) {
		const char* s = nullptr;
		dbus::checkRead(sd_bus_message_read_basic(m, c, &s), "value");
		std::string_view whole(s ? s : "");
		if (whole.size() > maxBytes) leftOut();
		return std::string(whole.substr(0, maxBytes));
	};
	if (t == "s" || t == "o" || t == "g") {
		dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents), "value");
		auto value = dbus::Value::text(text(t[0]), t[0]);
		dbus::checkRead(sd_bus_message_exit_container(m), "value");
		return value;
	}
	if (t == "as" || t == "ao") {
		std::vector<std::string> list;
		dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents), "value");
		dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, contents + 1), "list");
		while (dbus::checkRead(sd_bus_message_at_end(m, false), "list") == 0) {
			if (list.size() < maxItems) {
				list.push_back(text(t[1]));
			} else {
				leftOut();
				dbus::checkRead(sd_bus_message_skip(m, contents + 1), "list item");
			}
		}
		dbus::checkRead(sd_bus_message_exit_container(m), "list");
		dbus::checkRead(sd_bus_message_exit_container(m), "value");
		return dbus::Value::texts(std::move(list), t[1]);
	}
	// The other basic types but h are small; anything else (containers, byte arrays) feeds no
	// field and may be as large as the message: kept as its type only.
	if (t.size() == 1 && std::string_view("ybnqiuxtd").find(t[0]) != std::string_view::npos) return dbus::Value::read(msg);
	leftOut();
	auto unread = dbus::Value::unread(contents);
	dbus::checkRead(sd_bus_message_skip(m, "v"), "value");
	return unread;
}

Metadata readMetadata(sdbus::Message& msg, bool* bounded) {
	sd_bus_message* m = dbus::rawMessage(msg);
	Metadata out;
	BoundedEntries read;
	char type = 0;
	const char* contents = nullptr;
	if (dbus::checkRead(sd_bus_message_peek_type(m, &type, &contents), "Metadata") == 0 || type != SD_BUS_TYPE_VARIANT ||
	    !contents)
		malformedValue("Metadata is no variant");
	if (std::string_view(contents) == "a{sv}") {
		dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents), "Metadata");
		msg >> read;
		dbus::checkRead(sd_bus_message_exit_container(m), "Metadata");
		out.tooLarge = read.tooLarge;
		if (bounded && read.bounded) *bounded = true;
	} else {
		out.badEntries.emplace_back("Metadata");
		out.signature = contents;
		if (bounded) *bounded = true;
		dbus::checkRead(sd_bus_message_skip(m, "v"), "Metadata");
	}
	return mapEntries(read.entries, std::move(out));
}

std::vector<std::string> supportedNames(std::vector<std::string> names) {
	std::vector<std::string> out;
	for (auto& n: names) {
		if (out.size() == kMaxSupported) break;
		if (!n.empty() && n.size() <= kMaxSupportedName) out.push_back(std::move(n));
	}
	return out;
}

bool hasUriScheme(std::string_view uri) {
	auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
	auto colon = uri.find(':');
	if (colon == 0 || colon == std::string_view::npos || !letter(uri[0])) return false;
	for (char c: uri.substr(0, colon))
		if (!letter(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') return false;
	return true;
}

bool validDesktopEntry(std::string_view entry) {
	if (entry.empty() || entry.size() > kMaxDesktopEntry || entry == "." || entry == "..") return false;
	for (char c: entry)
		if (c == '/' || c == '\0') return false;
	return true;
}

std::optional<std::string> desktopIcon(std::string_view text) {
	bool inEntry = false;
	while (!text.empty()) {
		auto nl = text.find('\n');
		auto line = text.substr(0, nl);
		text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
		if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
		if (line.empty() || line.front() == '#') continue;
		if (line.front() == '[') {
			inEntry = line == "[Desktop Entry]";
			continue;
		}
		if (!inEntry) continue;
		auto eq = line.find('=');
		if (eq == std::string_view::npos) continue;
		auto key = line.substr(0, eq);
		while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
		if (key != "Icon") continue;
		auto value = line.substr(eq + 1);
		while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
		while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
		if (value.empty()) return std::nullopt;
		return std::string(value);
	}
	return std::nullopt;
}

std::optional<std::string> pickActive(const std::vector<Candidate>& players, const std::optional<std::string>& pinned) {
	const Candidate* best = nullptr;
	for (const auto& p: players) {
		if (pinned && p.key == *pinned) return p.key;
		if (p.duplicate) continue;
		if (!best) {
			best = &p;
			continue;
		}
		auto rank = [](const Candidate& c) { return std::tuple(c.playing, c.startedSeq, c.appearedSeq); };
		if (rank(p) > rank(*best)) best = &p;
	}
	if (!best) return std::nullopt;
	return best->key;
}

std::string savedPlayersText(std::string_view busId, const SavedPlayers& saved) {
	json list = json::array();
	for (const auto& p: saved.players)
		list.push_back({{"key", p.key},
		                {"owner", p.owner},
		                {"appeared", p.appearedSeq},
		                {"started", p.startedSeq},
		                {"playing", p.playing},
		                {"lastActiveAt", p.lastActiveAt}});
	return json{{"bus", busId}, {"pinned", saved.pinned ? json(*saved.pinned) : json(nullptr)}, {"players", std::move(list)}}
	           .dump() +
	       "\n";
}

SavedPlayers parseSavedPlayers(std::string_view text, std::string_view busId) {
	SavedPlayers out;
	auto doc = json::parse(text, nullptr, false);
	if (busId.empty() || !doc.is_object() || doc.value("bus", json()) != busId) return out;
	// A sequence number is below 2^53: it counts events of one run, and one run's numbers go on
	// from the last one's.
	auto seq = [](const json& v) -> std::optional<uint64_t> {
		if (!v.is_number_unsigned() || v.get<uint64_t>() >= (uint64_t(1) << 53)) return std::nullopt;
		return v.get<uint64_t>();
	};
	auto list = doc.find("players");
	if (list != doc.end() && list->is_array())
		for (const auto& e: *list) {
			if (out.players.size() == kMaxPlayers) break;
			if (!e.is_object()) continue;
			auto key = e.value("key", json());
			auto owner = e.value("owner", json());
			auto appeared = seq(e.value("appeared", json()));
			auto started = seq(e.value("started", json()));
			auto playing = e.value("playing", json());
			auto at = e.value("lastActiveAt", json());
			if (!key.is_string() || key.get_ref<const std::string&>().empty() || key.get_ref<const std::string&>().size() > 255 ||
			    !owner.is_string() || owner.get_ref<const std::string&>().size() > 255 ||
			    owner.get_ref<const std::string&>().rfind(':', 0) != 0 || !appeared || !started || !playing.is_boolean() ||
			    !(at.is_null() || (at.is_string() && at.get_ref<const std::string&>().size() <= 64)))
				continue;
			out.players.push_back({key.get<std::string>(), owner.get<std::string>(), *appeared, *started, playing.get<bool>(),
			                       std::move(at)});
		}
	if (auto pin = doc.value("pinned", json()); pin.is_string() && pin.get_ref<const std::string&>().size() <= 255)
		out.pinned = pin.get<std::string>();
	return out;
}

} // namespace qsd::mpris
