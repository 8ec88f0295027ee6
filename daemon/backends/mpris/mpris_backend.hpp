#pragma once
// The "mpris" backend: /media from the MPRIS media players on the session bus. Players are the
// names under org.mpris.MediaPlayer2 (one arg0namespace match, one ListNames at start); each is
// read completely (both interfaces) before it appears, leaves the moment its name goes, and
// keeps its position without polling: `position` is true at `positionAt`, and is read again
// only when something tells qsd it jumped (Seeked, a status, rate or track change).
//
// Any process may own an org.mpris.MediaPlayer2.* name, so everything a player sends is
// bounded (mapping.hpp) as it arrives, published or not, and each player has its own calls, in
// flight one per kind, with a timeout: a player that never answers holds up only itself.
//
// mpris_backend.cpp: names, reading, signals, position, the active player; actions.cpp: the
// media.* methods; mapping.cpp: the pure value tables; icons.cpp: iconUrl.

#include "icons.hpp"
#include "mapping.hpp"

#include "../../retry.hpp"
#include "../../dbus/names.hpp"
#include "../../dbus/properties.hpp"
#include "../bus_backend.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qsd::mpris {

constexpr const char* kRoot = "/media";
constexpr const char* kPlayers = "/media/players";
// Every call to a player: one that does not answer gives an error after this.
constexpr std::chrono::seconds kCallTimeout{5};
// Actions of one player waiting for its answer; more are refused (-32002).
constexpr int kMaxActionsInFlight = 8;
// Position is read this long after a status, rate or track change (players update it late).
constexpr std::chrono::milliseconds kLateRead{100};
// How long after a change of the order or the pin media-players.json is written: one write for
// a burst of changes (a player that toggles its status as fast as it can costs one a second).
constexpr std::chrono::seconds kSaveDelay{1};
// A position read back within this of qsd's own estimate leaves the tree as it is.
constexpr int64_t kPositionSlackUs = 10'000;
// The largest rate and position qsd extrapolates with; a rate above is not an MPRIS value (no
// player goes past 32×), and a position is cut to a century, so that no sum of them overflows.
constexpr double kRateCeiling = 1000;
constexpr int64_t kMaxPositionUs = int64_t(100) * 366 * 24 * 3600 * 1'000'000;

// A set of a published player's fields, one bit each (mpris_backend.cpp, Field).
using Fields = uint32_t;

class MprisBackend final: public BusBackend {
public:
	explicit MprisBackend(BackendContext& context): BusBackend(context, Bus::Session, "mpris") {}
	~MprisBackend() override { stop(); }

	std::string_view id() const override { return "mpris"; }
	std::string_view root() const override { return kRoot; }

private:
	nlohmann::json initialRoot() const override {
		return {{"available", false}, {"active", nullptr}, {"pinned", nullptr}, {"players", nlohmann::json::object()}};
	}
	void onBusStart() override;
	void onBusStop() override;
	std::span<const Method> methods() const override;
	std::optional<Unavailable> availability() const override;
	std::string service() const override { return "the media player"; }

	// A failed read is tried again 250 ms later, the delay doubling up to 8 s, 8 times; then on
	// the player's next signal.
	static constexpr Backoff::Policy kReread{std::chrono::milliseconds(250), std::chrono::seconds(8), 8};
	static constexpr Backoff::Policy kRelist{std::chrono::seconds(1), std::chrono::seconds(30), 0};

	struct Player {
		std::string key;
		std::string name;                     // org.mpris.MediaPlayer2.<key>
		std::string owner;                    // its unique name: calls go there, signals come from there
		uint64_t serial = 0;                  // tells a stale callback from one for a re-added key
		std::unique_ptr<sdbus::IProxy> proxy;
		dbus::PropertySet root{kRootIface};
		dbus::PropertySet player{kPlayerIface};
		int loading = 0;                      // GetAlls out
		bool reloadRoot = false;              // invalidated while a GetAll was out: read again
		bool reloadPlayer = false;
		bool failed = false;                  // the last read failed
		Retry retry{kReread};                 // the next read after failures in a row
		bool published = false;
		bool settled = false;                 // its first read answered or failed (settle())

		// Mapped values (the wire values are dropped once mapped: a player's memory is bounded).
		Metadata meta;
		// Metadata mapped as it arrived and not digested yet: a player not published yet (its other
		// interface not read) keeps this rather than the raw value, which could be 128 MiB.
		std::optional<Metadata> metaIn;
		std::string status = "stopped";
		double rate = 1;
		std::string desktopEntry;             // the one iconUrl was found for
		nlohmann::json iconUrl = nullptr;

		// position: true at positionMono (CLOCK_MONOTONIC µs) / positionAt (RFC 3339)
		std::optional<int64_t> positionUs;
		uint64_t positionMono = 0;
		std::string positionAt;
		bool positionOut = false;             // a Get(Position) is out
		bool positionAgain = false;           // and one more is wanted after it
		EventSource late;                     // the re-read 100 ms after a status change

		uint64_t appearedSeq = 0;
		uint64_t startedSeq = 0;              // 0: never seen playing
		bool resumed = false;                 // taken back from qsd's last run while playing (SavedPlayer)
		bool pinAgain = false;                // pinned in qsd's last run: pinned again when published
		nlohmann::json lastActiveAt = nullptr;
		std::optional<uint32_t> pid;          // its connection's process (GetConnectionUnixProcessID)
		std::optional<std::string> duplicateOf;   // the integration that mirrors it (updateDuplicates)
		int actions = 0;                      // actions out
		nlohmann::json state;                 // what is published
		std::set<std::string> warned;         // values logged once (non-MPRIS enum strings)
	};

	// --- names
	void listNames();
	void onNameOwnerChanged(const std::string& name, const std::string& oldOwner, const std::string& newOwner);
	void addPlayer(const std::string& name, const std::string& owner);
	// `admit`: give the freed slot to a name waiting for one (not when the same name comes back
	// under a new owner, which takes its own slot again).
	void removePlayer(const std::string& key, const char* why, bool admit = true);
	// Lets in the waiting names there is room for (kMaxPlayers, kMaxPlayersPerConnection).
	void admitWaiting();
	[[nodiscard]] size_t playersOf(const std::string& owner) const;
	// `running` once the players found at start are in /media or failed their first read
	// (kStartWait at most: `waited`); never back to `starting` after that.
	void settle(bool waited = false);

	// --- reading
	void load(Player& p);
	void loaded(Player& p, bool root, const sdbus::Error* e);
	// One GetAll of the root or the player interface, bounded as it arrives: only the properties
	// qsd reads, cut, Metadata mapped (Player::metaIn).
	void readInterface(Player& p, bool root);
	// Keeps Metadata mapped as it arrived for the next digest, and logs what is wrong with it.
	void takeMetadata(Player& p, Metadata meta);
	void onPropertiesChanged(sdbus::Message& msg);
	void onSeeked(sdbus::Message& msg);
	// Maps what was read (keeps only what is used), following status, rate and track changes:
	// the properties `names` (nullptr: all of them, after a GetAll).
	void digest(Player& p, const std::vector<std::string>* names);
	// Writes the fields in `fields` (bits of mpris_backend.cpp's Field) that differ from what was
	// published; the first time, the whole player.
	void publish(Player& p, Fields fields);
	[[nodiscard]] nlohmann::json field(Player& p, unsigned index);
	void updateActive();
	// A browser's own player and the integration that mirrors it (kde:pid) are one playback: the
	// browser's is marked duplicateOf the integration's. `fresh` is about to be published for the
	// first time: it counts as published, and is not published here.
	void updateDuplicates(const Player* fresh = nullptr);
	void readPid(Player& p);

	// --- position
	void positionIs(Player& p, int64_t us);
	void advance(Player& p);   // position extrapolated to now under the current status and rate
	// Asks for one Get(Position), sent from a defer source: after the flush of the change that
	// asked, which is what a subscriber waits for.
	void readPosition(Player& p);
	void sendPositionReads();
	void sendPositionRead(Player& p);
	// The position now under the current status and rate.
	[[nodiscard]] std::optional<int64_t> estimate(const Player& p) const;
	// The wall clock was set: every playing player's pair is stamped again.
	void onClockChange();

	// --- actions.cpp
	void play(Call& c);
	void pause(Call& c);
	void playPause(Call& c);
	void stopPlayback(Call& c);
	void next(Call& c);
	void previous(Call& c);
	void raise(Call& c);
	void quit(Call& c);
	void openUri(Call& c);
	void seek(Call& c);
	void setPosition(Call& c);
	void setVolume(Call& c);
	void setLoopStatus(Call& c);
	void setShuffle(Call& c);
	void setFullscreen(Call& c);
	void setRate(Call& c);
	void setActive(Call& c);
	Player& actionPlayer(Call& c);
	void require(Player& p, const char* capability, const char* verb);
	// Calls `member` of the player with `args`; answers {player} once the player answered.
	template <typename... Args>
	void invoke(Call& c, Player& p, const char* iface, const char* member, bool rereadPosition, const Args&... args);
	void setProperty(Call& c, Player& p, const char* property, sdbus::Variant value, const char* iface = kPlayerIface);

	// --- the choice of /media/active across a restart of qsd (mapping.hpp, SavedPlayer)
	// The entries of qsd's last run on this bus (GetId answered), taken back by addPlayer until
	// settle().
	void readSaved();
	// The file is written kSaveDelay later (at once when `now`), and not before settle(): until
	// then it holds what the start takes back.
	void saveSoon();
	void save();

	[[nodiscard]] Player* find(const std::string& key, uint64_t serial = 0);
	[[nodiscard]] static std::string group(const std::string& key) { return "p:" + key + "|"; }
	[[nodiscard]] static std::string path(const std::string& key);

	NameTracker::Watch names_;
	bool listed_ = false;
	Retry relist_{kRelist};
	bool settled_ = false;                  // said `running` (settle())
	std::set<std::string> unresolved_;      // keys ListNames gave whose GetNameOwner is out
	EventSource startWait_;                 // kStartWait after the names were listed
	std::map<std::string, std::unique_ptr<Player>> players_;   // by key
	std::map<std::string, std::string> waiting_;               // names over a cap -> owner
	// Lines a player causes by appearing, which a player that comes and goes in a loop repeats
	// (each appearance is a new player with its own once-only warnings): 32 per 10 s.
	log::Limiter peerLog_{32, 10'000'000};
	bool warnedCap_ = false;
	bool warnedConnectionCap_ = false;
	uint64_t nextSerial_ = 1;
	uint64_t seq_ = 0;
	std::optional<std::string> pinned_;
	std::string savedPath_;                 // $XDG_RUNTIME_DIR/qsd/media-players.json ("": not kept)
	std::string busId_;                     // the bus's id (BusConnection::id; "": not known)
	std::map<std::string, SavedPlayer> saved_;   // by key, until settle()
	std::optional<std::string> savedPin_;
	EventSource saveTimer_;
	bool saveNeeded_ = false;
	bool saveFailed_ = false;
	std::unique_ptr<IconLookup> icons_;
	std::set<std::string> positionQueue_;   // players whose Get(Position) is to be sent
	EventSource positionDefer_;
	EventSource clockChange_;
};

} // namespace qsd::mpris
