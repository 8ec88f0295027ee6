// The mpris backend's pure parts (daemon/backends/mpris/mapping.hpp, icons.hpp): player keys,
// the MPRIS enums against protocol/api/media.json, metadata with every bound, desktop entries
// and the active player's rule.

#ifdef QSD_MPRIS_BACKEND

#include "backends/mpris/icons.hpp"
#include "helpers.hpp"
#include "backends/mpris/mapping.hpp"
#include "dbus/raw.hpp"
#include "temp_dir.hpp"

#include <qsd/protocol/api.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace qsd;
using namespace qsd::mpris;
using qsd::testing::TempDir;
using json = nlohmann::json;

using qsd::testing::schemaEnum;

namespace {

using Entries = std::map<std::string, sdbus::Variant>;

Metadata map(Entries entries) {
	dbus::Value v{sdbus::Variant(entries)};
	return mapMetadata(&v);
}

} // namespace

TEST(MprisMapping, PlayerKeys) {
	EXPECT_EQ(playerKey("org.mpris.MediaPlayer2.mpv"), "mpv");
	EXPECT_EQ(playerKey("org.mpris.MediaPlayer2.firefox.instance_1_42"), "firefox.instance_1_42");
	EXPECT_EQ(playerKey("org.mpris.MediaPlayer2"), std::nullopt);
	EXPECT_EQ(playerKey("org.mpris.MediaPlayer2."), std::nullopt);
	EXPECT_EQ(playerKey("org.mpris.MediaPlayer2x.mpv"), std::nullopt);
	EXPECT_EQ(playerKey("org.example.Player"), std::nullopt);
	// A proxy that mirrors another player: never listed.
	EXPECT_EQ(playerKey("org.mpris.MediaPlayer2.playerctld"), std::nullopt);
	EXPECT_EQ(playerKey("org.mpris.MediaPlayer2.playerctld2"), "playerctld2");
}

TEST(MprisMapping, PlaybackAndLoopStatus) {
	auto documented = schemaEnum("MediaPlaybackStatus");
	EXPECT_EQ(documented, (std::set<std::string>{"playing", "paused", "stopped"}));
	EXPECT_EQ(playbackStatus("Playing"), "playing");
	EXPECT_EQ(playbackStatus("Paused"), "paused");
	EXPECT_EQ(playbackStatus("Stopped"), "stopped");
	EXPECT_EQ(playbackStatus("playing"), std::nullopt);
	EXPECT_EQ(playbackStatus("Buffering"), std::nullopt);

	auto loops = schemaEnum("MediaLoopStatus");
	EXPECT_EQ(loops, (std::set<std::string>{"none", "track", "playlist"}));
	for (const auto& [wire, tree]: std::map<std::string, std::string>{{"None", "none"}, {"Track", "track"}, {"Playlist", "playlist"}}) {
		EXPECT_EQ(loopStatus(wire), tree);
		EXPECT_EQ(wireLoopStatus(tree), wire);
	}
	EXPECT_EQ(loopStatus("Shuffle"), std::nullopt);
	EXPECT_EQ(wireLoopStatus("None"), std::nullopt);
}

TEST(MprisMapping, Units) {
	EXPECT_DOUBLE_EQ(seconds(1'500'000), 1.5);
	EXPECT_EQ(microseconds(1.5), 1'500'000);
	EXPECT_EQ(microseconds(-2.25), -2'250'000);
	EXPECT_EQ(microseconds(1e300), std::numeric_limits<int64_t>::max());
	EXPECT_EQ(microseconds(-1e300), std::numeric_limits<int64_t>::min());
}

TEST(MprisMapping, CutTextKeepsWholeCharacters) {
	EXPECT_EQ(cutText("short", 10), "short");
	EXPECT_EQ(cutText("abcdef", 3), "abc");
	// "é" is two bytes: a cut in its middle drops it whole.
	EXPECT_EQ(cutText("aé", 2), "a");
	EXPECT_EQ(cutText("a€b", 3), "a");
	EXPECT_EQ(cutText("a€b", 4), "a€");
	EXPECT_EQ(cutText(std::string(5000, 'x')).size(), kMaxText);
	// What is cut keeps no room for the rest: a shortened string would keep its whole buffer.
	EXPECT_LE(cutText(std::string(1'000'000, 'x')).capacity(), 2 * kMaxText);
}

TEST(MprisMapping, MetadataAsTheSpecificationHasIt) {
	auto m = map({{"mpris:trackid", sdbus::Variant(sdbus::ObjectPath("/org/mpv/Track/3"))},
	              {"xesam:title", sdbus::Variant(std::string("Song"))},
	              {"xesam:artist", sdbus::Variant(std::vector<std::string>{"A", "B"})},
	              {"xesam:album", sdbus::Variant(std::string("Album"))},
	              {"xesam:albumArtist", sdbus::Variant(std::vector<std::string>{"AA"})},
	              {"mpris:artUrl", sdbus::Variant(std::string("file:///tmp/cover.png"))},
	              {"xesam:url", sdbus::Variant(std::string("https://example.org/song.ogg"))},
	              {"xesam:trackNumber", sdbus::Variant(int32_t(7))},
	              {"mpris:length", sdbus::Variant(int64_t(215'000'000))},
	              {"xesam:genre", sdbus::Variant(std::vector<std::string>{"Jazz", "Blues"})},
	              {"xesam:discNumber", sdbus::Variant(int32_t(2))},
	              {"xesam:userRating", sdbus::Variant(0.8)},
	              {"xesam:useCount", sdbus::Variant(uint64_t(12))},
	              {"x:explicit", sdbus::Variant(true)},
	              {"xesam:comment", sdbus::Variant(std::string(kMaxText + 5, 'c'))},
	              // Left out: a nested container, bytes, a key too long, a number that is not finite.
	              {"x:nested", sdbus::Variant(std::map<std::string, sdbus::Variant>{{"a", sdbus::Variant(1)}})},
	              {"x:bytes", sdbus::Variant(std::vector<uint8_t>{1, 2})},
	              {std::string(kMaxMetadataKey + 1, 'k'), sdbus::Variant(1)},
	              {"x:nan", sdbus::Variant(std::nan(""))}});
	EXPECT_EQ(m.value, (json{{"trackId", "/org/mpv/Track/3"},
	                         {"title", "Song"},
	                         {"artists", {"A", "B"}},
	                         {"album", "Album"},
	                         {"albumArtists", {"AA"}},
	                         {"artUrl", "file:///tmp/cover.png"},
	                         {"url", "https://example.org/song.ogg"},
	                         {"trackNumber", 7},
	                         {"other",
	                          {{"xesam:genre", {"Jazz", "Blues"}},
	                           {"xesam:discNumber", 2},
	                           {"xesam:userRating", 0.8},
	                           {"xesam:useCount", 12},
	                           {"x:explicit", true},
	                           {"xesam:comment", cutText(std::string(kMaxText + 5, 'c'))}}}}));
	EXPECT_EQ(m.length, 215.0);
	EXPECT_EQ(m.trackId, "/org/mpv/Track/3");
	EXPECT_TRUE(m.badEntries.empty());
	EXPECT_FALSE(m.tooLarge);
	// Every field of the schema, no more.
	const auto& schema = api::openrpc()["components"]["schemas"]["MediaMetadata"];
	std::set<std::string> fields;
	for (const auto& [k, _]: m.value.items()) fields.insert(k);
	EXPECT_EQ(fields, std::set<std::string>(schema["required"].begin(), schema["required"].end()));
}

TEST(MprisMapping, MetadataThatPlayersGetWrong) {
	// A plain string artist, a string track id, a uint64 length, a wrongly typed title.
	auto m = map({{"mpris:trackid", sdbus::Variant(std::string("/track/1"))},
	              {"xesam:artist", sdbus::Variant(std::string("Solo"))},
	              {"xesam:albumArtist", sdbus::Variant(int32_t(3))},
	              {"xesam:title", sdbus::Variant(int32_t(5))},
	              {"mpris:length", sdbus::Variant(uint64_t(1'000'000))}});
	EXPECT_EQ(m.value["artists"], json({"Solo"}));
	EXPECT_EQ(m.value["albumArtists"], json::array());
	EXPECT_EQ(m.value["title"], nullptr);
	EXPECT_EQ(m.value["trackId"], "/track/1");
	EXPECT_EQ(m.length, 1.0);
	EXPECT_EQ(std::set<std::string>(m.badEntries.begin(), m.badEntries.end()),
	          (std::set<std::string>{"xesam:albumArtist", "xesam:title"}));

	// A length as a double, or zero (unknown).
	EXPECT_EQ(map({{"mpris:length", sdbus::Variant(2.5e6)}}).length, 2.5);
	EXPECT_EQ(map({{"mpris:length", sdbus::Variant(int64_t(0))}}).length, nullptr);

	// No metadata at all, or metadata of another type.
	auto none = mapMetadata(nullptr);
	EXPECT_EQ(none.value["title"], nullptr);
	EXPECT_EQ(none.value["artists"], json::array());
	dbus::Value notAMap{sdbus::Variant(std::string("x"))};
	EXPECT_EQ(mapMetadata(&notAMap).badEntries, std::vector<std::string>{"Metadata"});

	// A track id that is no object path cannot be given back to SetPosition: none.
	auto notAPath = map({{"mpris:trackid", sdbus::Variant(std::string("spotify:track:abc"))}});
	EXPECT_EQ(notAPath.value["trackId"], nullptr);
	EXPECT_EQ(notAPath.trackId, std::nullopt);
	EXPECT_EQ(notAPath.badEntries, std::vector<std::string>{"mpris:trackid"});
}

TEST(MprisMapping, MetadataIsBounded) {
	std::vector<std::string> many(100, std::string(2000, 'a'));
	auto m = map({{"xesam:title", sdbus::Variant(std::string(100'000, 't'))},
	              {"xesam:artist", sdbus::Variant(many)},
	              {"mpris:artUrl", sdbus::Variant("file:///" + std::string(kMaxUrl, 'u'))},
	              {"xesam:url", sdbus::Variant("https://x/" + std::string(100, 'u'))},
	              {"mpris:trackid", sdbus::Variant(sdbus::ObjectPath("/" + std::string(kMaxTrackId, 'p')))}});
	EXPECT_EQ(m.value["title"].get<std::string>().size(), kMaxText);
	EXPECT_EQ(m.value["artists"].size(), kMaxArtists);
	EXPECT_EQ(m.value["artists"][0].get<std::string>().size(), kMaxText);
	// A cut URL would name something else: too long is null.
	EXPECT_EQ(m.value["artUrl"], nullptr);
	EXPECT_EQ(m.value["url"], "https://x/" + std::string(100, 'u'));
	EXPECT_EQ(m.value["trackId"], nullptr);
	EXPECT_EQ(m.trackId, std::nullopt);

	Entries big;
	for (size_t i = 0; i <= kMaxMetadataEntries; ++i) big["x:" + std::to_string(i)] = sdbus::Variant(int32_t(1));
	big["xesam:title"] = sdbus::Variant(std::string("lost"));
	auto large = map(big);
	EXPECT_TRUE(large.tooLarge);
	EXPECT_EQ(large.value["title"], nullptr);
	EXPECT_EQ(large.value["other"], json::object());
	// At the bound: read.
	big.erase("x:0");
	big.erase("x:1");
	ASSERT_EQ(big.size(), kMaxMetadataEntries);
	auto full = map(big);
	EXPECT_FALSE(full.tooLarge);
	EXPECT_EQ(full.value["title"], "lost");
	EXPECT_EQ(full.value["other"].size(), kMaxMetadataEntries - 1);
}

// Metadata read straight from a message (a PropertiesChanged): the entries past the bound are
// skipped, not decoded, and what follows Metadata in the message is read as usual.
TEST(MprisMapping, MetadataReadFromAMessage) {
	auto read = [](const sdbus::Variant& metadata) {
		auto msg = dbus::plainMessage();
		msg << metadata << std::string("after");
		msg.seal();
		msg.rewind(true);
		auto meta = readMetadata(msg);
		std::string after;
		msg >> after;
		EXPECT_EQ(after, "after");
		return meta;
	};
	Entries small{{"xesam:title", sdbus::Variant(std::string("T"))},
	              {"xesam:artist", sdbus::Variant(std::vector<std::string>{"A"})},
	              {"x:nested", sdbus::Variant(Entries{{"a", sdbus::Variant(1)}})},
	              {"x:bytes", sdbus::Variant(std::vector<uint8_t>(100'000, 1))},
	              {"xesam:album", sdbus::Variant(std::vector<uint8_t>{1})}};
	auto m = read(sdbus::Variant(small));
	EXPECT_EQ(m.value, map(small).value);
	EXPECT_EQ(m.value["title"], "T");
	EXPECT_EQ(m.value["other"], json::object());
	EXPECT_EQ(m.badEntries, std::vector<std::string>{"xesam:album"});

	// Strings are read only as far as a field can show them: the same fields as from the whole
	// value, a URL one byte too long (cut inside a character) still null.
	std::string e2 = "\xc3\xa9";   // é
	std::string longUrl = "https://x/";
	while (longUrl.size() <= kMaxUrl) longUrl += e2;
	std::string tooLong;
	for (int i = 0; i < 50'000; ++i) tooLong += e2;
	Entries longOnes{{"xesam:title", sdbus::Variant(tooLong)},
	              {"xesam:url", sdbus::Variant(longUrl)},
	              {"mpris:artUrl", sdbus::Variant(longUrl.substr(0, kMaxUrl))},
	              {"xesam:artist", sdbus::Variant(std::vector<std::string>(20, tooLong))},
	              {"xesam:comment", sdbus::Variant(std::vector<std::string>(1000, "c"))},
	              {"mpris:trackid", sdbus::Variant(sdbus::ObjectPath("/" + std::string(kMaxUrl * 2, 'p')))}};
	auto cut = read(sdbus::Variant(longOnes));
	EXPECT_EQ(cut.value, map(longOnes).value);
	EXPECT_EQ(cut.value["title"].get<std::string>().size(), kMaxText);
	EXPECT_EQ(cut.value["url"], nullptr);
	EXPECT_EQ(cut.value["artUrl"].get<std::string>().size(), kMaxUrl);
	EXPECT_EQ(cut.value["artists"].size(), kMaxArtists);
	EXPECT_EQ(cut.value["other"]["xesam:comment"].size(), kMaxArtists);
	EXPECT_EQ(cut.value["trackId"], nullptr);
	EXPECT_TRUE(cut.badEntries.empty());

	Entries big;
	for (size_t i = 0; i < 10'000; ++i) big["x:" + std::to_string(i)] = sdbus::Variant(int32_t(1));
	big["xesam:title"] = sdbus::Variant(std::string("lost"));
	auto large = read(sdbus::Variant(big));
	EXPECT_TRUE(large.tooLarge);
	EXPECT_EQ(large.value["title"], nullptr);
	EXPECT_TRUE(map(big).tooLarge);

	// Metadata of another type: reported with its type, and skipped.
	auto text = read(sdbus::Variant(std::string("x")));
	EXPECT_EQ(text.badEntries, std::vector<std::string>{"Metadata"});
	EXPECT_EQ(text.signature, "s");
	EXPECT_EQ(text.value["title"], nullptr);
	dbus::Value notAMap{sdbus::Variant(std::vector<std::string>{"x"})};
	EXPECT_EQ(mapMetadata(&notAMap).signature, "as");
}

TEST(MprisMapping, TrackKeysTellTracksApart) {
	auto a = map({{"mpris:trackid", sdbus::Variant(sdbus::ObjectPath("/1"))}, {"xesam:title", sdbus::Variant(std::string("T"))}});
	auto b = map({{"mpris:trackid", sdbus::Variant(sdbus::ObjectPath("/2"))}, {"xesam:title", sdbus::Variant(std::string("T"))}});
	auto c = map({{"xesam:title", sdbus::Variant(std::string("T"))}});
	auto d = map({{"xesam:title", sdbus::Variant(std::string("U"))}});
	EXPECT_NE(a.trackKey, b.trackKey);
	EXPECT_NE(c.trackKey, d.trackKey);
	EXPECT_EQ(c.trackKey, map({{"xesam:title", sdbus::Variant(std::string("T"))}}).trackKey);
	// One id for every track (browsers): the title or the URL tells them apart.
	auto firefox = [](const char* title, const char* url) {
		return map({{"mpris:trackid", sdbus::Variant(sdbus::ObjectPath("/org/mpris/MediaPlayer2/firefox"))},
		            {"xesam:title", sdbus::Variant(std::string(title))}, {"xesam:url", sdbus::Variant(std::string(url))}})
		    .trackKey;
	};
	EXPECT_NE(firefox("A", "https://x/1"), firefox("B", "https://x/1"));
	EXPECT_NE(firefox("A", "https://x/1"), firefox("A", "https://x/2"));
	EXPECT_EQ(firefox("A", "https://x/1"), firefox("A", "https://x/1"));
}

TEST(MprisMapping, DesktopEntriesArePlainFileNames) {
	EXPECT_TRUE(validDesktopEntry("mpv"));
	EXPECT_TRUE(validDesktopEntry("org.mozilla.firefox"));
	EXPECT_FALSE(validDesktopEntry(""));
	EXPECT_FALSE(validDesktopEntry("."));
	EXPECT_FALSE(validDesktopEntry(".."));
	EXPECT_FALSE(validDesktopEntry("../../etc/passwd"));
	EXPECT_FALSE(validDesktopEntry("/dev/zero"));
	EXPECT_FALSE(validDesktopEntry(std::string("a\0b", 3)));
	EXPECT_TRUE(validDesktopEntry(std::string(kMaxDesktopEntry, 'a')));
	EXPECT_FALSE(validDesktopEntry(std::string(kMaxDesktopEntry + 1, 'a')));
}

TEST(MprisMapping, DesktopFileIcon) {
	EXPECT_EQ(desktopIcon("[Desktop Entry]\nName=mpv\nIcon=mpv\n"), "mpv");
	EXPECT_EQ(desktopIcon("[Desktop Entry]\r\nIcon = /opt/app/icon.png \r\n"), "/opt/app/icon.png");
	// Localised keys and other groups are not the icon.
	EXPECT_EQ(desktopIcon("[Desktop Entry]\nIcon[de]=x\n[Desktop Action new]\nIcon=y\n"), std::nullopt);
	EXPECT_EQ(desktopIcon("# Icon=no\n[Other]\nIcon=no\n[Desktop Entry]\nIcon=yes"), "yes");
	EXPECT_EQ(desktopIcon("[Desktop Entry]\nIcon=\n"), std::nullopt);
	EXPECT_EQ(desktopIcon(""), std::nullopt);
}

TEST(MprisMapping, DesktopEntryFilesAreFoundWithoutBlocking) {
	TempDir home, system;
	home.file("applications/app.desktop", "[Desktop Entry]\nIcon=from-home\n");
	system.file("applications/app.desktop", "[Desktop Entry]\nIcon=from-system\n");
	system.file("applications/other.desktop", "[Desktop Entry]\nIcon=other\n");
	system.file("applications/huge.desktop", "[Desktop Entry]\nIcon=huge\n" + std::string(kMaxDesktopFile, '#'));
	std::vector<std::string> dirs = {(home.path / "applications").string(), (system.path / "applications").string()};
	EXPECT_EQ(desktopEntryIcon("app", dirs), "from-home");
	EXPECT_EQ(desktopEntryIcon("other", dirs), "other");
	EXPECT_EQ(desktopEntryIcon("missing", dirs), std::nullopt);
	EXPECT_EQ(desktopEntryIcon("huge", dirs), std::nullopt);
	EXPECT_EQ(desktopEntryIcon("../applications/app", dirs), std::nullopt);
	// A FIFO under the name would block a plain open() until a writer came.
	ASSERT_EQ(::mkfifo((home.path / "applications/fifo.desktop").c_str(), 0600), 0);
	EXPECT_EQ(desktopEntryIcon("fifo", dirs), std::nullopt);
}

TEST(MprisMapping, ApplicationDirsFollowXdg) {
	::setenv("XDG_DATA_HOME", "/h/share", 1);
	::setenv("XDG_DATA_DIRS", "/a:/b", 1);
	EXPECT_EQ(applicationDirs(), (std::vector<std::string>{"/h/share/applications", "/a/applications", "/b/applications"}));
	::unsetenv("XDG_DATA_DIRS");
	EXPECT_EQ(applicationDirs(),
	          (std::vector<std::string>{"/h/share/applications", "/usr/local/share/applications", "/usr/share/applications"}));
	::unsetenv("XDG_DATA_HOME");
}

TEST(MprisMapping, SupportedListsAreBounded) {
	std::vector<std::string> sent = {"file", "", std::string(kMaxSupportedName + 1, 's'), std::string(kMaxSupportedName, 'k')};
	for (int i = 0; i < 300; ++i) sent.push_back("s" + std::to_string(i));
	auto kept = supportedNames(sent);
	ASSERT_EQ(kept.size(), kMaxSupported);
	EXPECT_EQ(kept[0], "file");
	EXPECT_EQ(kept[1], std::string(kMaxSupportedName, 'k'));   // as long as allowed: kept whole
	EXPECT_EQ(kept[2], "s0");
	EXPECT_EQ(kept.back(), "s253");
	EXPECT_TRUE(supportedNames({}).empty());
}

TEST(MprisMapping, UriSchemes) {
	EXPECT_TRUE(hasUriScheme("file:///a.ogg"));
	EXPECT_TRUE(hasUriScheme("HTTPS://example.org"));
	EXPECT_TRUE(hasUriScheme("svn+ssh://h/x"));
	EXPECT_TRUE(hasUriScheme("urn:isbn:1"));
	EXPECT_FALSE(hasUriScheme("a.ogg"));
	EXPECT_FALSE(hasUriScheme(":x"));
	EXPECT_FALSE(hasUriScheme("1http://x"));
	EXPECT_FALSE(hasUriScheme("/home/me/a:b.ogg"));
	EXPECT_FALSE(hasUriScheme("a b:c"));
	EXPECT_FALSE(hasUriScheme(""));
}

TEST(MprisMapping, TheActivePlayer) {
	EXPECT_EQ(pickActive({}, std::nullopt), std::nullopt);
	EXPECT_EQ(pickActive({}, std::string("gone")), std::nullopt);
	// Playing beats not playing, whatever else.
	std::vector<Candidate> c = {{"paused", false, 9, 1}, {"playing", true, 2, 2}};
	EXPECT_EQ(pickActive(c, std::nullopt), "playing");
	// Among players that play, the one that started last.
	c = {{"a", true, 5, 1}, {"b", true, 7, 2}, {"c", true, 6, 3}};
	EXPECT_EQ(pickActive(c, std::nullopt), "b");
	// Among players that do not, the one that played last; then the one that appeared last.
	c = {{"played", false, 3, 1}, {"never", false, 0, 5}};
	EXPECT_EQ(pickActive(c, std::nullopt), "played");
	c = {{"old", false, 0, 1}, {"new", false, 0, 5}};
	EXPECT_EQ(pickActive(c, std::nullopt), "new");
	// A pin wins while its player is there.
	c = {{"pinned", false, 0, 1}, {"playing", true, 9, 2}};
	EXPECT_EQ(pickActive(c, std::string("pinned")), "pinned");
	EXPECT_EQ(pickActive(c, std::string("gone")), "playing");
	// A duplicate (a browser's own player beside its integration's) is skipped, even playing
	// last, and is active only when pinned; with nothing else there is none.
	c = {{"integration", true, 3, 1}, {"browser", true, 9, 2, true}};
	EXPECT_EQ(pickActive(c, std::nullopt), "integration");
	EXPECT_EQ(pickActive(c, std::string("browser")), "browser");
	c = {{"browser", true, 9, 2, true}};
	EXPECT_EQ(pickActive(c, std::nullopt), std::nullopt);
}

TEST(MprisMapping, TheBrowserAnIntegrationMirrors) {
	EXPECT_EQ(map({{"kde:pid", sdbus::Variant(int32_t(4242))}}).browserPid, 4242u);
	EXPECT_EQ(map({{"kde:pid", sdbus::Variant(uint32_t(4242))}}).browserPid, 4242u);
	EXPECT_EQ(map({{"kde:pid", sdbus::Variant(int64_t(4242))}}).browserPid, 4242u);
	EXPECT_EQ(map({}).browserPid, std::nullopt);
	// Not a process: ignored, and the rest of the metadata stands.
	for (auto v: {sdbus::Variant(int32_t(0)), sdbus::Variant(int32_t(-1)), sdbus::Variant(std::string("4242")),
	              sdbus::Variant(int64_t(1) << 40), sdbus::Variant(4242.0)}) {
		auto m = map({{"kde:pid", v}, {"xesam:title", sdbus::Variant(std::string("t"))}});
		EXPECT_EQ(m.browserPid, std::nullopt);
		EXPECT_EQ(m.value["title"], "t");
	}
}

#endif // QSD_MPRIS_BACKEND

TEST(MprisMapping, TheOrderSavedForTheNextRun) {
	SavedPlayers saved{"vlc", {{"vlc", ":1.7", 3, 9, true, "2026-12-07T10:00:00.000Z"}, {"mpv", ":1.8", 4, 0, false, nullptr}}};
	auto text = savedPlayersText("b1d5a4", saved);
	EXPECT_EQ(parseSavedPlayers(text, "b1d5a4"), saved);
	// Written on another bus (a later session's): unique names there are other connections.
	EXPECT_EQ(parseSavedPlayers(text, "0000"), SavedPlayers{});
	EXPECT_EQ(parseSavedPlayers(text, ""), SavedPlayers{});
	EXPECT_EQ(parseSavedPlayers("not json", "b1d5a4"), SavedPlayers{});
	// Entries that are not a key, a unique name and sequence numbers are skipped, not the rest.
	auto some = parseSavedPlayers(R"({"bus": "b", "pinned": 5, "players": [
	    {"key": "a", "owner": "org.a", "appeared": 1, "started": 0, "playing": false, "lastActiveAt": null},
	    {"key": "", "owner": ":1.1", "appeared": 1, "started": 0, "playing": false, "lastActiveAt": null},
	    {"key": "b", "owner": ":1.1", "appeared": -1, "started": 0, "playing": false, "lastActiveAt": null},
	    {"key": "c", "owner": ":1.1", "appeared": 9007199254740992, "started": 0, "playing": false, "lastActiveAt": null},
	    {"key": "d", "owner": ":1.1", "appeared": 1, "started": 0, "playing": 1, "lastActiveAt": null},
	    {"key": "e", "owner": ":1.1", "appeared": 1, "started": 0, "playing": false, "lastActiveAt": 7},
	    7,
	    {"key": "f", "owner": ":1.2", "appeared": 2, "started": 1, "playing": true, "lastActiveAt": "x"}]})",
	                              "b");
	EXPECT_FALSE(some.pinned);
	ASSERT_EQ(some.players.size(), 1u);
	EXPECT_EQ(some.players[0].key, "f");
	// At most kMaxPlayers are taken back.
	SavedPlayers many;
	for (size_t i = 0; i < kMaxPlayers + 5; ++i) many.players.push_back({"p" + std::to_string(i), ":1.1", i, 0, false, nullptr});
	EXPECT_EQ(parseSavedPlayers(savedPlayersText("b", many), "b").players.size(), kMaxPlayers);
}
