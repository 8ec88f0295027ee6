// Fuzzes what D-Bus peers say about their properties, read by the backend kit
// (daemon/dbus/variant.cpp, properties.cpp) for every D-Bus backend, and the media players'
// mapping (daemon/backends/mpris/mapping.cpp): any process on the session bus may own an
// org.mpris.MediaPlayer2.* name. The input builds a GetAll reply (a{sv}) and a PropertiesChanged
// signal (sa{sv}as) whose values have the type MPRIS gives them or any other (nested variants,
// dictionaries, arrays), Metadata with its xesam/mpris keys (texts and URLs past their bounds,
// lists of artists past kMaxArtists, more keys than kMaxMetadataEntries), and a .desktop file's
// text. Each value goes through what backends do with one: the typed reads, the conversion to
// JSON, the cached value's round trip to a variant. Besides crashes and sanitizer reports, the
// player's fields are checked against their bounds and must serialize as JSON.

#include "backends/mpris/mapping.hpp"
#include "dbus/properties.hpp"
#include "dbus/variant.hpp"

#include "dbus_builder.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace qsd;
using namespace qsd::mpris;
using qsd::fuzz::ok;
using qsd::fuzz::sealed;
using qsd::fuzz::Unbuildable;

namespace {

[[noreturn]] void die(const std::string& what) { qsd::fuzz::die("qsd-fuzz-properties", what); }

const std::vector<std::string> kPlayerKeys = {"PlaybackStatus", "LoopStatus",    "Rate",        "Shuffle",     "Metadata",
                                              "Volume",         "Position",      "MinimumRate", "MaximumRate", "CanGoNext",
                                              "CanPlay",        "CanSeek",       "CanControl",  "Identity",    "DesktopEntry",
                                              "CanRaise",       "Fullscreen",    "SupportedUriSchemes"};
const std::vector<std::string> kMetadataKeys = {"mpris:trackid", "mpris:length", "mpris:artUrl", "xesam:title",
                                                "xesam:artist",  "xesam:album",  "xesam:albumArtist", "xesam:url",
                                                "xesam:trackNumber", "xesam:genre", "xesam:asText"};
const std::vector<std::string> kTypes = {"s", "b", "i", "u", "x", "t", "n", "q", "d", "y", "o", "g",
                                         "ay", "ai", "as", "ao", "aas", "a{sv}", "aa{sv}", "a{ss}", "v"};

class Builder: public qsd::fuzz::ValueBuilder {
public:
	explicit Builder(FuzzedDataProvider& in): ValueBuilder(in, kTypes, "/org/mpris/MediaPlayer2/Track/1") {
		// An ay becomes a JSON array of numbers here, twice: megabytes of them only slow the
		// fuzzer down (the services whose values are converted so are system services).
		maxBytes_ = 64u << 10;
	}

	// A GetAll reply, or PropertiesChanged's changed values.
	void player(sd_bus_message* m) {
		properties(m, kPlayerKeys, 12, [&](const std::string& key) {
			if (key == "Metadata") metadataVariant(m);
			else playerValue(m, key);
		});
	}

	void propertiesChanged(sd_bus_message* m) {
		ok(sd_bus_message_append_basic(m, 's', in_.ConsumeBool() ? kPlayerIface : text().c_str()));
		player(m);
		ok(sd_bus_message_open_container(m, 'a', "s"));
		for (size_t n = count(4); n > 0; --n) ok(sd_bus_message_append_basic(m, 's', pick(kPlayerKeys).c_str()));
		ok(sd_bus_message_close_container(m));
	}

	// A .desktop file's text: groups, keys, comments and lines of any kind.
	std::string desktopFile() {
		static const std::vector<std::string> lines = {"[Desktop Entry]", "[Desktop Action x]", "Icon=", "Icon=player",
		                                               "Icon = spaced", "Icon[de]=x", "#Icon=no", "Name=x", "",
		                                               "\r", "[", "Icon", "=", "Icon=/abs/path.png"};
		std::string s;
		for (size_t n = count(12); n > 0; --n) s += (in_.ConsumeBool() ? pick(lines) : text()) + (in_.ConsumeBool() ? "\n" : "");
		return s;
	}

private:
	void playerValue(sd_bus_message* m, const std::string& key) {
		std::string sig = "s";
		if (key == "Rate" || key == "Volume" || key == "MinimumRate" || key == "MaximumRate") sig = "d";
		else if (key == "Position") sig = "x";
		else if (key == "Shuffle" || key.rfind("Can", 0) == 0 || key == "Fullscreen") sig = "b";
		else if (key == "SupportedUriSchemes") sig = "as";
		if (sig == "s" && in_.ConsumeBool()) {
			static const std::vector<std::string> words = {"Playing", "Paused", "Stopped", "None", "Track", "Playlist", "playing"};
			ok(sd_bus_message_open_container(m, 'v', "s"));
			ok(sd_bus_message_append_basic(m, 's', pick(words).c_str()));
			ok(sd_bus_message_close_container(m));
			return;
		}
		variantOf(m, sig, 1);
	}

	void metadataVariant(sd_bus_message* m) {
		if (in_.ConsumeIntegralInRange(0, 7) == 0) {
			variant(m, 1);   // Metadata of another type
			return;
		}
		ok(sd_bus_message_open_container(m, 'v', "a{sv}"));
		ok(sd_bus_message_open_container(m, 'a', "{sv}"));
		// Sometimes more keys than are read.
		size_t n = in_.ConsumeIntegralInRange(0, 15) ? count(12) : kMaxMetadataEntries + count(4);
		for (size_t i = 0; i < n; ++i) {
			ok(sd_bus_message_open_container(m, 'e', "sv"));
			std::string key = in_.ConsumeIntegralInRange(0, 7) ? pick(kMetadataKeys) : text();
			ok(sd_bus_message_append_basic(m, 's', key.c_str()));
			metadataValue(m, key);
			ok(sd_bus_message_close_container(m));
		}
		ok(sd_bus_message_close_container(m));
		ok(sd_bus_message_close_container(m));
	}

	// A text mostly short, sometimes just past `bound` bytes or far past it.
	std::string boundedText(size_t bound) {
		switch (in_.ConsumeIntegralInRange(0, 5)) {
		case 0: return std::string(bound - 1, 'a') + text(8);
		case 1: return std::string(in_.ConsumeIntegralInRange<size_t>(0, 3 * bound), 'b');
		default: return text();
		}
	}

	void metadataValue(sd_bus_message* m, const std::string& key) {
		if (in_.ConsumeIntegralInRange(0, 3) == 0) {
			variant(m, 2);
			return;
		}
		if (key == "mpris:trackid") {
			// An object path, sometimes longer than kMaxTrackId; some players send a string.
			std::string path = "/org/mpris/MediaPlayer2/Track/" + std::to_string(count(99));
			if (in_.ConsumeIntegralInRange(0, 3) == 0) path = "/" + std::string(kMaxTrackId + count(2) - 1, 'a');
			char type = in_.ConsumeBool() ? 'o' : 's';
			char sig[2] = {type, 0};
			ok(sd_bus_message_open_container(m, 'v', sig));
			ok(sd_bus_message_append_basic(m, type, path.c_str()));
			ok(sd_bus_message_close_container(m));
		} else if (key == "mpris:length" || key == "xesam:trackNumber") {
			variantOf(m, in_.ConsumeBool() ? "x" : in_.ConsumeBool() ? "t" : "d", 2);
		} else if (key == "xesam:artist" || key == "xesam:albumArtist" || key == "xesam:genre") {
			if (in_.ConsumeBool()) {
				ok(sd_bus_message_open_container(m, 'v', "s"));
				ok(sd_bus_message_append_basic(m, 's', boundedText(kMaxText).c_str()));
				ok(sd_bus_message_close_container(m));
				return;
			}
			ok(sd_bus_message_open_container(m, 'v', "as"));
			ok(sd_bus_message_open_container(m, 'a', "s"));
			size_t n = in_.ConsumeIntegralInRange(0, 3) ? count(4) : kMaxArtists + count(8);
			for (size_t i = 0; i < n; ++i) ok(sd_bus_message_append_basic(m, 's', boundedText(kMaxText).c_str()));
			ok(sd_bus_message_close_container(m));
			ok(sd_bus_message_close_container(m));
		} else {
			size_t bound = key == "mpris:artUrl" || key == "xesam:url" ? kMaxUrl : kMaxText;
			ok(sd_bus_message_open_container(m, 'v', "s"));
			ok(sd_bus_message_append_basic(m, 's', boundedText(bound).c_str()));
			ok(sd_bus_message_close_container(m));
		}
	}
};

void checkText(const nlohmann::json& v, const char* field, size_t bound) {
	if (v.is_null()) return;
	if (!v.is_string()) die(std::string(field) + " is neither a string nor null");
	if (v.get_ref<const std::string&>().size() > bound) die(std::string(field) + " is longer than its bound");
}

// Every read a backend may make of a value: none may throw, and the JSON must serialize.
void readEveryWay(const dbus::Value& v) {
	(void)v.signature();
	(void)dbus::asBool(v);
	(void)dbus::asInt(v);
	(void)dbus::asUint(v);
	(void)dbus::asDouble(v);
	(void)dbus::asString(v);
	(void)dbus::asStrings(v);
	(void)dbus::asBytes(v);
	// A cached value's variant, as a D-Bus call sends it back, reads the same way (compared as
	// text: a NaN is unequal to itself, and both write it as null).
	dbus::Value again(v.toVariant());
	if (again.signature() != v.signature() || dbus::variantToJson(again).dump() != dbus::variantToJson(v).dump())
		die("a value's round trip through sdbus::Variant changed it");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
	FuzzedDataProvider in(data, size);
	Builder build(in);
	try {
		auto reply = sealed([&](sd_bus_message* m) { build.player(m); });
		dbus::Properties props;
		try {
			dbus::readProperties(reply, props);
		} catch (const sdbus::Error&) {
			return 0;
		}
		auto signal = sealed([&](sd_bus_message* m) { build.propertiesChanged(m); });
		try {
			auto changed = dbus::PropertiesChanged::read(signal);
			for (auto& [name, value]: changed.changed) props[name] = std::move(value);
		} catch (const sdbus::Error&) {
		}
		for (const auto& [name, value]: props) readEveryWay(value);

		// The player's fields, as the backend maps them.
		dbus::PropertyReader reader("fuzz");
		auto meta = mapMetadata(dbus::find(props, "Metadata"));
		const auto& mv = meta.value;
		checkText(mv.at("title"), "title", kMaxText);
		checkText(mv.at("album"), "album", kMaxText);
		checkText(mv.at("url"), "url", kMaxUrl);
		checkText(mv.at("artUrl"), "artUrl", kMaxUrl);
		checkText(mv.at("trackId"), "trackId", kMaxTrackId);
		for (const char* list: {"artists", "albumArtists"}) {
			if (!mv.at(list).is_array() || mv.at(list).size() > kMaxArtists) die(std::string(list) + " is no list or too long");
			for (const auto& a: mv.at(list)) checkText(a, list, kMaxText);
		}
		// The other entries: within the same bounds, scalars or string lists only.
		if (!mv.at("other").is_object() || mv.at("other").size() > kMaxMetadataEntries) die("other is no object or too large");
		for (const auto& [key, v]: mv.at("other").items()) {
			if (key.empty() || key.size() > kMaxMetadataKey) die("an other key out of bounds");
			if (v.is_string()) checkText(v, "other", kMaxText);
			else if (v.is_array()) {
				if (v.size() > kMaxArtists) die("an other list too long");
				for (const auto& a: v) checkText(a, "other", kMaxText);
			} else if (!v.is_boolean() && !v.is_number()) die("an other value of another type");
		}
		(void)mv.dump();
		(void)meta.length.dump();
		if (auto s = reader.string(props, "p", "PlaybackStatus")) (void)playbackStatus(*s);
		if (auto s = reader.string(props, "p", "LoopStatus"))
			if (auto tree = loopStatus(*s); tree && wireLoopStatus(*tree) != *s) die("LoopStatus does not map back");
		for (const char* name: {"Identity", "DesktopEntry"})
			if (auto s = reader.string(props, "p", name)) {
				auto cut = cutText(*s);
				if (cut.size() > kMaxText) die(std::string(name) + " cut past kMaxText");
				(void)nlohmann::json(cut).dump();
				if (validDesktopEntry(*s) && (s->empty() || s->find('/') != std::string::npos)) die("a DesktopEntry with '/' passed");
			}
		if (auto d = reader.number(props, "p", "Rate")) (void)microseconds(*d);
		(void)desktopIcon(build.desktopFile());
		(void)playerKey(std::string(kPrefix) + "." + build.text());
	} catch (const Unbuildable&) {
	}
	return 0;
}
