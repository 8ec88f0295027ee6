#pragma once
// Pure mapping from MPRIS D-Bus values to /media tree values, and the rule that picks the
// active player. No I/O and no state: unit-tested in tests/unit/mpris_mapping_test.cpp and
// documented in docs/backends/mpris.md, with every limit below.

#include "../../dbus/variant.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qsd::mpris {

constexpr const char* kPrefix = "org.mpris.MediaPlayer2";        // the namespace of player names
constexpr const char* kPath = "/org/mpris/MediaPlayer2";
constexpr const char* kRootIface = "org.mpris.MediaPlayer2";
constexpr const char* kPlayerIface = "org.mpris.MediaPlayer2.Player";

// What a player can make qsd hold (any process may own an org.mpris.MediaPlayer2.* name).
constexpr size_t kMaxPlayers = 32;            // players in the tree (and being read) at once
// Players of one D-Bus connection: real programs own one or two names (mpv-mpris: mpv and
// mpv.instance<pid>), KDE Connect one per player of its paired devices; more wait, as beyond
// kMaxPlayers, so that one program cannot take every slot.
constexpr size_t kMaxPlayersPerConnection = 16;
constexpr size_t kMaxWaiting = 256;           // names beyond the cap remembered for a free slot
constexpr size_t kMaxText = 1024;             // bytes of a text field (title, artist, identity…)
constexpr size_t kMaxUrl = 8192;              // bytes of a URL (url, artUrl); longer: null
constexpr size_t kMaxTrackId = 4096;          // bytes of a track id (an object path); longer: null
constexpr size_t kMaxArtists = 16;            // entries of artists and albumArtists
constexpr size_t kMaxMetadataEntries = 128;   // entries of Metadata; more: the metadata is ignored
constexpr size_t kMaxDesktopEntry = 255;      // bytes of DesktopEntry that qsd looks a file up for
constexpr size_t kMaxDesktopFile = 64 * 1024; // bytes of a .desktop file that are read
constexpr size_t kMaxSupported = 256;         // entries of supportedUriSchemes and supportedMimeTypes
constexpr size_t kMaxSupportedName = 255;     // bytes of one of them; longer: left out
constexpr size_t kMaxMetadataKey = 255;       // bytes of a key of metadata.other; longer: left out

// The key of a player: its bus name after "org.mpris.MediaPlayer2." ("mpv",
// "firefox.instance_1_42"). nullopt for a name outside the namespace, for the namespace's own
// name, and for playerctld (a proxy that mirrors another player: never listed).
[[nodiscard]] std::optional<std::string> playerKey(std::string_view busName);

// `s` cut to at most `max` bytes at a UTF-8 character boundary.
[[nodiscard]] std::string cutText(std::string s, size_t max = kMaxText);

// PlaybackStatus "Playing"/"Paused"/"Stopped" -> "playing"/"paused"/"stopped"; nullopt otherwise.
[[nodiscard]] std::optional<std::string> playbackStatus(std::string_view wire);
// LoopStatus "None"/"Track"/"Playlist" <-> "none"/"track"/"playlist"; nullopt otherwise.
[[nodiscard]] std::optional<std::string> loopStatus(std::string_view wire);
[[nodiscard]] std::optional<std::string> wireLoopStatus(std::string_view tree);

// Microseconds on the wire -> seconds in the tree.
[[nodiscard]] inline double seconds(int64_t us) { return double(us) / 1e6; }
// Seconds from a client -> microseconds on the wire (rounded, saturated to int64).
[[nodiscard]] int64_t microseconds(double seconds);

// Metadata (a{sv}) -> the tree's metadata object, the length and the raw track id.
struct Metadata {
	nlohmann::json value;                    // {trackId, title, artists, album, albumArtists, artUrl, url, trackNumber, other}
	nlohmann::json length = nullptr;         // seconds, or null
	std::optional<std::string> trackId;      // as sent (for SetPosition), when it is usable
	std::string trackKey;                    // tells one track from the next (track id, title and url)
	// kde:pid: a browser integration's player (plasma-browser-integration) names the browser it
	// mirrors by its process id. A positive integer of any D-Bus integer type; anything else is
	// ignored.
	std::optional<uint32_t> browserPid;
	std::vector<std::string> badEntries;     // keys of an unexpected type (logged once by the caller)
	std::string signature;                   // Metadata's own D-Bus type, when it is not a{sv} (badEntries "Metadata")
	bool tooLarge = false;                   // more than kMaxMetadataEntries entries: ignored
};
// `metadata` is the Metadata property (nullptr when absent). Missing or wrongly typed entries
// give null (or [] for the artist lists); xesam:artist and xesam:albumArtist may be `as` or `s`.
// `other` holds every other entry by its MPRIS name (xesam:genre, xesam:discNumber,
// xesam:userRating...), as Quickshell's raw metadata map has them: strings and object paths cut
// as the texts are, booleans, finite numbers, and string lists as the artists; entries of other
// types (nested containers, byte arrays) and keys over kMaxMetadataKey bytes are left out.
// At most kMaxMetadataEntries entries are decoded, and of their strings only what a field can
// show (readBounded): one more entry makes the metadata tooLarge without the rest being decoded
// (each made an sdbus::Variant before they were counted, a million entries cost 7 s of CPU and
// 1.1 GiB).
[[nodiscard]] Metadata mapMetadata(const dbus::Value* metadata);
// The same, read straight from a message: the variant at `msg`'s read position, which moves
// past it (the entries past the bound are skipped, not decoded). Throws sdbus::Error when the
// message holds no variant there or is malformed. `bounded` is set when a bound left anything out.
[[nodiscard]] Metadata readMetadata(sdbus::Message& msg, bool* bounded = nullptr);

// The variant at `msg`'s read position (which moves past it), read as far as a field can show
// it: a string (s, o, g) keeps its first `maxBytes` bytes, a list of them (as, ao) its first
// `maxItems` items so cut, the other basic types but h are read whole, and any other type is
// skipped unread (dbus::Value::unread, its type kept for the warning). A 25 MB title was copied
// whole three times before it was cut. `bounded` is set when anything was left out. Throws
// sdbus::Error when there is no variant there.
[[nodiscard]] dbus::Value readBounded(sdbus::Message& msg, size_t maxBytes, size_t maxItems, bool* bounded = nullptr);

// A URL field: kept when it fits kMaxUrl, null otherwise (a cut URL would name something else).
[[nodiscard]] nlohmann::json urlField(const std::optional<std::string>& url);

// SupportedUriSchemes or SupportedMimeTypes as kept: the first kMaxSupported entries that are
// not empty and fit kMaxSupportedName (a cut scheme or type would name another one).
[[nodiscard]] std::vector<std::string> supportedNames(std::vector<std::string> names);

// Whether `uri` starts with a scheme (RFC 3986: a letter, then letters, digits, '+', '-', '.',
// then ':').
[[nodiscard]] bool hasUriScheme(std::string_view uri);

// Whether DesktopEntry may be looked up as a file name: not empty, at most kMaxDesktopEntry
// bytes, no '/', no NUL, not "." or "..".
[[nodiscard]] bool validDesktopEntry(std::string_view entry);
// The Icon= of the [Desktop Entry] group of a .desktop file's text (nullopt when absent or empty).
[[nodiscard]] std::optional<std::string> desktopIcon(std::string_view text);

// The active player. `pinned` (media.setActive) wins while it is a candidate; otherwise, among
// the players that are no duplicate, a playing player beats one that is not, then the one that
// started playing most recently (startedSeq, 0 = never), then the one that appeared most
// recently.
struct Candidate {
	std::string key;
	bool playing = false;
	uint64_t startedSeq = 0;
	uint64_t appearedSeq = 0;
	bool duplicate = false;   // duplicateOf another player: active only when pinned
};
[[nodiscard]] std::optional<std::string> pickActive(const std::vector<Candidate>& players,
                                                    const std::optional<std::string>& pinned);

// What the choice of /media/active rests on, left for qsd's next run on the same bus
// ($XDG_RUNTIME_DIR/qsd/media-players.json): the pin of media.setActive and each player's place
// in the order (when it appeared, when it last started playing). Without it a restart of qsd
// (an upgrade, a crash) ranked the players by the order their first reads answered, and a bar
// could switch to another player. An entry is taken back only for the same `owner` (unique
// names are never reused on one bus, and `busId` tells this bus from a later one).
struct SavedPlayer {
	std::string key;
	std::string owner;             // a unique name (":1.42")
	uint64_t appearedSeq = 0;
	uint64_t startedSeq = 0;       // 0: never seen playing
	bool playing = false;          // when saved: one still playing did not start again meanwhile
	nlohmann::json lastActiveAt;   // an RFC 3339 string or null, as published
	bool operator==(const SavedPlayer&) const = default;
};
struct SavedPlayers {
	std::optional<std::string> pinned;
	std::vector<SavedPlayer> players;
	bool operator==(const SavedPlayers&) const = default;
};
constexpr size_t kMaxSavedPlayersFile = 256u << 10;   // bytes of the file read back
[[nodiscard]] std::string savedPlayersText(std::string_view busId, const SavedPlayers& saved);
// What was saved on the bus `busId`: nothing when the text is not such a file or was written on
// another bus; entries that are not a key, a unique name and sequence numbers are skipped, and
// at most kMaxPlayers are read.
[[nodiscard]] SavedPlayers parseSavedPlayers(std::string_view text, std::string_view busId);

} // namespace qsd::mpris
