#include "mapping.hpp"

#include "../../text.hpp"

#include <systemd/sd-bus.h>

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

using Entries = std::map<std::string, sdbus::Variant>;

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

} // namespace

Metadata mapMetadata(const dbus::Value* metadata) {
	Metadata out;
	Entries m;
	if (metadata) {
		if (auto map = dbus::as<Entries>(*metadata)) {
			if (map->size() > kMaxMetadataEntries) out.tooLarge = true;
			else m = std::move(*map);
		} else {
			out.badEntries.emplace_back("Metadata");
		}
	}
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

} // namespace qsd::mpris
