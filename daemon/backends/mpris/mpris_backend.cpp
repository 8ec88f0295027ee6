#include "mpris_backend.hpp"

#include "../../dbus/raw.hpp"
#include "../../files.hpp"
#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include <fmt/format.h>

namespace qsd::mpris {

using json = nlohmann::json;

namespace {

constexpr const char* kBusIface = "org.freedesktop.DBus";

// The properties qsd reads; anything else a player sends is dropped once mapped, so what a
// player can make qsd keep is bounded by these and by mapping.hpp's limits.
const std::set<std::string, std::less<>> kRootProps = {
    "Identity", "DesktopEntry", "CanQuit", "CanRaise", "CanSetFullscreen", "Fullscreen", "SupportedUriSchemes",
    "SupportedMimeTypes"};
const std::set<std::string, std::less<>> kPlayerProps = {
    "PlaybackStatus", "LoopStatus", "Rate", "Shuffle", "Volume", "MinimumRate", "MaximumRate",
    "CanControl", "CanPlay", "CanPause", "CanGoNext", "CanGoPrevious", "CanSeek"};
// What the player interface's values hold between arrival and digest: Position too, which digest
// reads (and drops); Metadata is mapped as it arrives (Player::metaIn).
const std::set<std::string, std::less<>> kPlayerKept = [] {
	auto kept = kPlayerProps;
	kept.insert("Position");
	return kept;
}();

// Keeps the properties in `keep`, with their strings cut to kMaxText and their string lists to
// supportedNames' bounds (a value of another type is kept as its signature, for the warning).
// Only `names` are looked at (nullptr: all): the others were trimmed when they arrived.
void trim(dbus::Properties& props, const std::set<std::string, std::less<>>& keep, const std::vector<std::string>* names) {
	auto one = [&](dbus::Properties::iterator it) {
		if (!keep.count(it->first)) return props.erase(it);
		auto& value = it->second;
		if (it->first == "SupportedUriSchemes" || it->first == "SupportedMimeTypes") {
			if (const auto* list = value.stringsValue(); list && value.signature() == "as")
				value = dbus::Value::texts(supportedNames(*list));
			else if (!value.unread())
				value = dbus::Value::unread(value.signature());
		} else if (const auto* s = value.stringValue()) {
			if (s->size() > kMaxText) value = dbus::Value::text(cutText(*s));
		} else if (value.stringsValue() || value.bytesValue() || value.variant()) {
			// Every other kept property is a basic type: an array or a container in its place is
			// only reported, and could be as large as a message, for each of the kept names.
			value = dbus::Value::unread(value.signature());
		}
		return std::next(it);
	};
	if (!names) {
		for (auto it = props.begin(); it != props.end();) it = one(it);
		return;
	}
	for (const auto& name: *names)
		if (auto it = props.find(name); it != props.end()) one(it);
}

[[noreturn]] void malformedChange(const char* what) {
	throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", std::string("malformed message: ") + what);
}

// The a{sv} of properties at `msg`'s read position (a GetAll's answer, a PropertiesChanged's
// changed values), read with sd-bus: only the properties in `keep` are decoded, the others
// skipped unread, and with `meta` Metadata is mapped straight from the message (readMetadata:
// 128 entries at most decoded). Decoded whole, every name a player sent was kept by a player not
// published yet, and a million Metadata entries were each made a variant, or copied twice.
// Returns whether a bound left out part of a kept value (readBounded): the message was large.
bool readValues(sdbus::Message& msg, const std::set<std::string, std::less<>>& keep, dbus::Properties& out,
                std::optional<Metadata>* meta) {
	bool bounded = false;
	sd_bus_message* m = dbus::rawMessage(msg);
	if (dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}"), "properties") == 0)
		malformedChange("properties are missing");
	for (;;) {
		if (dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv"), "property") == 0) break;
		const char* key = nullptr;
		dbus::checkRead(sd_bus_message_read_basic(m, 's', &key), "property name");
		std::string name(key ? key : "");
		if (meta && name == "Metadata") {
			*meta = readMetadata(msg, &bounded);
		} else if (!keep.count(name)) {
			dbus::checkRead(sd_bus_message_skip(m, "v"), "property value");
		} else {
			// Strings to a byte past what trim keeps (a longer one is still cut the same), every item
			// of a list (supportedNames keeps the first 256 that fit, wherever they are).
			out.insert_or_assign(std::move(name), readBounded(msg, kMaxText + 1, SIZE_MAX, &bounded));
		}
		dbus::checkRead(sd_bus_message_exit_container(m), "property");
	}
	dbus::checkRead(sd_bus_message_exit_container(m), "properties");
	return bounded;
}

// A PropertiesChanged after its interface: its changed values (readValues) and whether any
// property was invalidated.
bool readChange(sdbus::Message& msg, const std::set<std::string, std::less<>>& keep, dbus::PropertiesChanged& change,
                std::optional<Metadata>* meta) {
	bool bounded = readValues(msg, keep, change.changed, meta);
	sd_bus_message* m = dbus::rawMessage(msg);
	if (dbus::checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "s"), "invalidated") == 0)
		malformedChange("the invalidated list is missing");
	// Only whether any was invalidated matters (the interface is read again): the first is kept.
	for (;;) {
		const char* name = nullptr;
		if (dbus::checkRead(sd_bus_message_read_basic(m, 's', &name), "invalidated name") == 0) break;
		if (change.invalidated.empty()) change.invalidated.emplace_back(name ? name : "");
	}
	dbus::checkRead(sd_bus_message_exit_container(m), "invalidated");
	return bounded;
}

// The fields of a published player. A PropertiesChanged maps and compares only the fields of the
// properties it names (fieldsOf): reading every property again through sdbus::Variant and
// rebuilding the player was most of qsd's cost per signal (docs/performance.md, MPRIS).
enum Field : unsigned {
	kBusName, kIdentity, kDesktopEntry, kIconUrl, kPlaybackStatus, kLoopStatus, kShuffle, kVolume, kRate, kMinRate,
	kMaxRate, kCanControl, kCanPlay, kCanPause, kCanGoNext, kCanGoPrevious, kCanSeek, kCanRaise, kCanQuit,
	kCanSetFullscreen, kFullscreen, kSupportedUriSchemes, kSupportedMimeTypes, kPosition, kPositionAt, kLength,
	kMetadata, kLastActiveAt, kProcessId, kDuplicateOf, kFieldCount
};
constexpr const char* kFieldNames[kFieldCount] = {
    "busName", "identity", "desktopEntry", "iconUrl", "playbackStatus", "loopStatus", "shuffle", "volume", "rate",
    "minRate", "maxRate", "canControl", "canPlay", "canPause", "canGoNext", "canGoPrevious", "canSeek", "canRaise",
    "canQuit", "canSetFullscreen", "fullscreen", "supportedUriSchemes", "supportedMimeTypes", "position",
    "positionAt", "length", "metadata", "lastActiveAt", "processId", "duplicateOf"};
static_assert(kFieldCount <= 32);

constexpr Fields bit(Field f) { return Fields(1) << f; }
constexpr Fields kAllFields = (Fields(1) << kFieldCount) - 1;
constexpr Fields kPositionFields = bit(kPosition) | bit(kPositionAt);

// The fields a property feeds (a status, rate or track change also moves the position).
Fields fieldsOf(bool root, const std::string& property) {
	static const std::map<std::string, Fields, std::less<>> rootFields = {
	    {"Identity", bit(kIdentity)},
	    {"DesktopEntry", bit(kDesktopEntry) | bit(kIconUrl)},
	    {"CanQuit", bit(kCanQuit)},
	    {"CanRaise", bit(kCanRaise)},
	    {"CanSetFullscreen", bit(kCanSetFullscreen)},
	    {"Fullscreen", bit(kFullscreen)},
	    {"SupportedUriSchemes", bit(kSupportedUriSchemes)},
	    {"SupportedMimeTypes", bit(kSupportedMimeTypes)}};
	static const std::map<std::string, Fields, std::less<>> playerFields = {
	    {"PlaybackStatus", bit(kPlaybackStatus) | bit(kLastActiveAt) | kPositionFields},
	    {"Rate", bit(kRate) | kPositionFields},
	    {"Metadata", bit(kMetadata) | bit(kLength) | kPositionFields},
	    {"Position", kPositionFields},
	    {"LoopStatus", bit(kLoopStatus)},
	    {"Shuffle", bit(kShuffle)},
	    {"Volume", bit(kVolume)},
	    {"MinimumRate", bit(kMinRate)},
	    {"MaximumRate", bit(kMaxRate)},
	    // CanControl gates every other Can* of the player interface.
	    {"CanControl", bit(kCanControl) | bit(kCanPlay) | bit(kCanPause) | bit(kCanGoNext) | bit(kCanGoPrevious) |
	                       bit(kCanSeek)},
	    {"CanPlay", bit(kCanPlay)},
	    {"CanPause", bit(kCanPause)},
	    {"CanGoNext", bit(kCanGoNext)},
	    {"CanGoPrevious", bit(kCanGoPrevious)},
	    {"CanSeek", bit(kCanSeek)}};
	const auto& table = root ? rootFields : playerFields;
	auto it = table.find(property);
	return it == table.end() ? 0 : it->second;
}

} // namespace

std::string MprisBackend::path(const std::string& key) { return pointer::join(kPlayers, key); }

MprisBackend::Player* MprisBackend::find(const std::string& key, uint64_t serial) {
	auto it = players_.find(key);
	if (it == players_.end() || (serial && it->second->serial != serial)) return nullptr;
	return it->second.get();
}

std::optional<Unavailable> MprisBackend::availability() const {
	if (!listed_) return Unavailable{kRoot, "the media players on the session bus are being listed"};
	return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// names

void MprisBackend::onBusStart() {
	icons_ = std::make_unique<IconLookup>(*context_.icons);
	positionDefer_ = context_.loop.addDefer([this] { sendPositionReads(); }, "mpris-position-reads");
	positionDefer_.setEnabled(SD_EVENT_OFF);
	clockChange_ = context_.loop.addClockChange([this] { onClockChange(); }, "mpris-clock-change");
	// Signals first, one match each for every player: the sender is checked against the players'
	// owners when a signal arrives (a match cannot name a namespace of senders).
	match(fmt::format("type='signal',interface='{}',member='PropertiesChanged',path='{}',arg0namespace='{}'",
	                  dbus::kPropertiesIface, kPath, kPrefix),
	      [this](sdbus::Message& m) { onPropertiesChanged(m); }, "PropertiesChanged from a player");
	match(fmt::format("type='signal',interface='{}',member='Seeked',path='{}'", kPlayerIface, kPath),
	      [this](sdbus::Message& m) { onSeeked(m); }, "Seeked from a player");
	names_ = bus().names().watchNamespace(kPrefix, [this](const std::string& name, const std::string& oldOwner,
	                                                      const std::string& newOwner) {
		onNameOwnerChanged(name, oldOwner, newOwner);
	});
	if (const char* rt = std::getenv("XDG_RUNTIME_DIR"); rt && rt[0] == '/')
		savedPath_ = std::string(rt) + "/qsd/media-players.json";
	saveTimer_ = context_.loop.addIdleTimer([this] { save(); }, "mpris-save");
	// The players ListNames gives take back their places of qsd's last run on this bus.
	busId_ = bus().id();
	readSaved();
	listNames();
}

void MprisBackend::readSaved() {
	if (savedPath_.empty() || busId_.empty()) return;
	auto text = readFile(savedPath_, kMaxSavedPlayersFile);
	if (!text) return;
	auto saved = parseSavedPlayers(*text, busId_);
	for (auto& entry: saved.players) {
		// This run's numbers go on from the last one's, so that a player that starts now ranks
		// above every one that started then.
		seq_ = std::max({seq_, entry.appearedSeq, entry.startedSeq});
		auto key = entry.key;
		saved_.insert_or_assign(std::move(key), std::move(entry));
	}
	savedPin_ = std::move(saved.pinned);
}

void MprisBackend::saveSoon() {
	saveNeeded_ = true;
	if (!settled_ || savedPath_.empty() || busId_.empty() || !saveTimer_ || saveTimer_.enabled()) return;
	saveTimer_.setTime(context_.loop.now() + uint64_t(std::chrono::microseconds(kSaveDelay).count()));
}

void MprisBackend::save() {
	saveNeeded_ = false;
	if (savedPath_.empty() || busId_.empty()) return;
	SavedPlayers out;
	out.pinned = pinned_;
	for (const auto& [key, p]: players_)
		out.players.push_back({key, p->owner, p->appearedSeq, p->startedSeq, p->status == "playing", p->lastActiveAt});
	writeKeptFile(savedPath_, savedPlayersText(busId_, out), saveFailed_, "mpris",
	              "the active player may change if qsd restarts");
}

void MprisBackend::onBusStop() {
	// Written now what a change left for later: a stop of qsd is what the file is for. (A bus that
	// went away leaves a file of its id, which the next bus does not take.)
	if (saveNeeded_ && settled_) save();
	saveTimer_.reset();
	saved_.clear();
	savedPin_.reset();
	busId_.clear();
	saveNeeded_ = false;
	names_.reset();
	relist_.reset();
	positionDefer_.reset();
	clockChange_.reset();
	positionQueue_.clear();
	players_.clear();
	waiting_.clear();
	pinned_.reset();
	listed_ = false;
	settled_ = false;
	unresolved_.clear();
	startWait_.reset();
	icons_.reset();
}

void MprisBackend::listNames() {
	calls_.start("list", bus().daemon().callMethodAsync("ListNames").onInterface(kBusIface).withTimeout(kCallTimeout),
	             [this](const sdbus::Error* e, std::vector<std::string> names) {
		             if (e) {
			             relist_.schedule(context_.loop, [this] { listNames(); }, "mpris-relist");
			             log::at(relist_.level(), "mpris", "ListNames failed: {}; trying again", e->getMessage());
			             setState(BackendState::Starting, "ListNames failed: " + e->getName());
			             return;
		             }
		             relist_.reset();
		             for (const auto& name: names) {
			             auto key = playerKey(name);
			             if (!key || players_.count(*key) || waiting_.count(name)) continue;
			             unresolved_.insert(*key);
			             // The owner: calls go to it, and its signals are recognised by it.
			             calls_.start(group(*key),
			                          bus().daemon().callMethodAsync("GetNameOwner").onInterface(kBusIface).withArguments(name)
			                              .withTimeout(kCallTimeout),
			                          [this, name, key = *key](const sdbus::Error* err, std::string owner) {
				                          unresolved_.erase(key);
				                          // Gone meanwhile (NameHasNoOwner), or already known from NameOwnerChanged.
				                          if (!err && !players_.count(key)) addPlayer(name, owner);
				                          settle();
			                          });
		             }
		             listed_ = true;
		             // Clients keep /media as it was across a reconnect until the backend runs (or,
		             // not following /daemon/backends, until /media/available): said here, before
		             // any player was read again, it blanked the player in every bar at each restart
		             // of qsd. So the players just found are waited for, kStartWait at most.
		             if (!settled_ && !startWait_)
			             startWait_ = context_.loop.addTimer(kStartWait, [this] { settle(true); }, "mpris-start-wait");
		             settle();
	             });
}

void MprisBackend::settle(bool waited) {
	if (settled_ || !listed_) return;
	if (!waited) {
		if (!unresolved_.empty()) return;
		// A player appears once both interfaces are read; one whose read failed is read again
		// later, with no end the start could wait for.
		for (const auto& [key, p]: players_)
			if (!p->settled) return;
	} else {
		log::info("mpris", "players still being read {} s after start; running without them", kStartWait.count());
	}
	settled_ = true;
	unresolved_.clear();
	startWait_.reset();
	// What was saved and not taken back belongs to players that are gone.
	saved_.clear();
	savedPin_.reset();
	if (saveNeeded_) saveSoon();
	context_.tree.set("/media/available", true);
	setState(BackendState::Running);
}

void MprisBackend::onNameOwnerChanged(const std::string& name, const std::string& oldOwner, const std::string& newOwner) {
	auto key = playerKey(name);
	if (!key) return;
	if (!oldOwner.empty()) {
		waiting_.erase(name);
		// Taken over by another process (old → new in one signal): the name keeps its slot.
		if (auto* p = find(*key); p && p->owner == oldOwner)
			removePlayer(*key, newOwner.empty() ? "left the bus" : "changed owner", newOwner.empty());
	}
	if (!newOwner.empty()) {
		addPlayer(name, newOwner);
		// Taken over by a connection that has its share of players: the name waits, and the slot it
		// kept goes to a name that waited.
		if (!oldOwner.empty()) admitWaiting();
	}
	// One the start waited for left (or went to another process, read anew: not waited for).
	settle();
}

void MprisBackend::addPlayer(const std::string& name, const std::string& owner) {
	auto key = playerKey(name);
	if (!key) return;
	if (auto* p = find(*key)) {
		if (p->owner == owner) return;
		removePlayer(*key, "changed owner", false);
	}
	bool full = players_.size() >= kMaxPlayers;
	// One program's names (one connection) take at most kMaxPlayersPerConnection slots: real ones
	// have one or two, and one that owned them all would keep every other player out.
	bool connectionFull = !full && playersOf(owner) >= kMaxPlayersPerConnection;
	if (full || connectionFull) {
		if (full && !warnedCap_)
			log::warning("mpris", "more than {} media players on the bus: {} and further ones wait for a free slot", kMaxPlayers, name);
		if (connectionFull && !warnedConnectionCap_)
			log::warning("mpris", "{} owns more than {} media players: {} and its further ones wait for a free slot", owner,
			             kMaxPlayersPerConnection, name);
		(full ? warnedCap_ : warnedConnectionCap_) = true;
		if (waiting_.size() < kMaxWaiting) waiting_[name] = owner;
		return;
	}
	auto p = std::make_unique<Player>();
	p->key = *key;
	p->name = name;
	p->owner = owner;
	p->serial = nextSerial_++;
	p->appearedSeq = ++seq_;
	// The same connection as in qsd's last run: its place in the order, and the pin, come back.
	if (auto it = saved_.find(*key); it != saved_.end()) {
		if (it->second.owner == owner) {
			p->appearedSeq = it->second.appearedSeq;
			p->startedSeq = it->second.startedSeq;
			p->lastActiveAt = it->second.lastActiveAt;
			p->resumed = it->second.playing;
			p->pinAgain = savedPin_ == *key;
		}
		saved_.erase(it);
	}
	saveSoon();
	p->proxy = sdbus::createProxy(conn(), owner, kPath);
	auto& ref = *p;
	players_[*key] = std::move(p);
	log::debug("mpris", "player {} ({}) appeared", *key, owner);
	load(ref);
	readPid(ref);
}

// Not waited for: a player appears once both interfaces are read, and its processId follows.
void MprisBackend::readPid(Player& p) {
	calls_.start(group(p.key),
	             bus().daemon().callMethodAsync("GetConnectionUnixProcessID").onInterface(kBusIface)
	                 .withArguments(p.owner).withTimeout(kCallTimeout),
	             [this, key = p.key, serial = p.serial](const sdbus::Error* e, uint32_t pid) {
		             auto* q = find(key, serial);
		             if (!q || e || pid == 0) return;   // gone, or a bus that does not know (another machine's)
		             q->pid = pid;
		             publish(*q, bit(kProcessId));
		             updateDuplicates();
	             });
}

void MprisBackend::removePlayer(const std::string& key, const char* why, bool admit) {
	auto it = players_.find(key);
	if (it == players_.end()) return;
	auto& p = *it->second;
	// Its pending actions answer -32000 naming it; its reads are dropped.
	calls_.cancel(group(key));   // a GetNameOwner of ListNames' too: its key is not waited for
	unresolved_.erase(key);
	bury(std::move(p.proxy));
	reader_.forget(key);
	bool published = p.published;
	players_.erase(it);
	log::debug("mpris", "player {} {}", key, why);
	if (published) context_.tree.remove(path(key));
	if (pinned_ == key) {
		pinned_.reset();
		context_.tree.set("/media/pinned", nullptr);
	}
	saveSoon();
	updateDuplicates();
	updateActive();
	if (admit) admitWaiting();
}

void MprisBackend::admitWaiting() {
	for (auto it = waiting_.begin(); it != waiting_.end() && players_.size() < kMaxPlayers;) {
		// A name of a connection that has its share waits on, for one of that connection's players.
		if (playersOf(it->second) >= kMaxPlayersPerConnection) {
			++it;
			continue;
		}
		auto [name, owner] = *it;
		it = waiting_.erase(it);
		addPlayer(name, owner);   // inserts into waiting_ nothing: there is room for it
	}
}

size_t MprisBackend::playersOf(const std::string& owner) const {
	return size_t(std::count_if(players_.begin(), players_.end(), [&](const auto& kv) { return kv.second->owner == owner; }));
}

// ---------------------------------------------------------------------------------------------
// reading

void MprisBackend::load(Player& p) {
	if (p.loading) return;
	p.failed = false;
	p.retry.cancel();
	if (!p.root.loaded() || p.reloadRoot) {
		p.reloadRoot = false;
		readInterface(p, true);
	}
	if (!p.player.loaded() || p.reloadPlayer) {
		p.reloadPlayer = false;
		readInterface(p, false);
	}
}

// A raw call, its answer read as a PropertiesChanged is (readValues): dbus::PropertySet::load
// decoded every property of it through sdbus-c++, and a Metadata of a million entries was copied
// whole twice before it was counted. A player not published yet keeps what one interface answered
// until the other is read: so only what a published player keeps.
void MprisBackend::readInterface(Player& p, bool root) {
	++p.loading;
	auto call = p.proxy->createMethodCall(dbus::kPropertiesIface, "GetAll");
	call << std::string(root ? kRootIface : kPlayerIface);
	calls_.start(
	    group(p.key), *p.proxy, call,
	    [this, key = p.key, serial = p.serial, root](sdbus::MethodReply* reply, const sdbus::Error* e) {
		    auto* q = find(key, serial);
		    if (!q) return;
		    std::optional<sdbus::Error> malformed;
		    if (reply) {
			    const auto& keep = root ? kRootProps : kPlayerKept;
			    dbus::Properties props;
			    std::optional<Metadata> meta;
			    try {
				    if (readValues(*reply, keep, props, root ? nullptr : &meta)) context_.server.heapFreed();
			    } catch (const sdbus::Error& x) {
				    malformed = x;
			    }
			    if (!malformed) {
				    trim(props, keep, nullptr);
				    (root ? q->root : q->player).assign(std::move(props));
				    if (!root) {
					    // The answer replaced every value: a Metadata mapped from an earlier one is gone too.
					    q->metaIn.reset();
					    if (meta) takeMetadata(*q, std::move(*meta));
				    }
			    }
		    }
		    loaded(*q, root, malformed ? &*malformed : e);
	    },
	    kCallTimeout);
}

void MprisBackend::loaded(Player& p, bool root, const sdbus::Error* e) {
	--p.loading;
	if (e) {
		uint64_t held = 0;
		if (!p.failed && p.retry.failures() == 0 && peerLog_.allow(EventLoop::clock(), held))
			log::info("mpris", "cannot read {} of {}: {} ({}); trying again{}", root ? kRootIface : kPlayerIface, p.name,
			          e->getMessage(), e->getName(), log::heldBack(held));
		p.failed = true;
		// Still owed: load() reads an interface that is not loaded or is flagged, and a failed
		// re-read (of an invalidated property) leaves its interface loaded, with the old values.
		(root ? p.reloadRoot : p.reloadPlayer) = true;
	}
	if (p.loading > 0) return;
	if (p.failed) {
		auto reread = [this, key = p.key, serial = p.serial] {
			if (auto* q = find(key, serial)) load(*q);
		};
		if (!p.retry.schedule(context_.loop, reread, "mpris-reread"))
			log::info("mpris", "giving up reading {}; trying again on its next signal", p.name);
		p.settled = true;
		settle();
		return;
	}
	if (p.reloadRoot || p.reloadPlayer) return load(p);   // invalidated while it was read
	// After a failed read only the failed interface was read again: the other's Position is as
	// old as its answer, and Seeked signals meanwhile were not applied (nothing was published).
	bool stale = !p.published && p.retry.failures() > 0;
	p.retry.reset();
	digest(p, nullptr);
	publish(p, kAllFields);
	if (stale && p.published) readPosition(p);
	p.settled = true;
	settle();
}

void MprisBackend::takeMetadata(Player& p, Metadata meta) {
	for (const auto& bad: meta.badEntries) {
		auto type = dbus::Value::unread(meta.signature);
		reader_.wrongType(p.key, "Metadata " + bad, bad == "Metadata" ? &type : nullptr);
	}
	uint64_t held = 0;
	if (meta.tooLarge && p.warned.insert("Metadata size").second && peerLog_.allow(EventLoop::clock(), held))
		log::warning("mpris", "{}: Metadata has more than {} entries; ignored{}", p.name, kMaxMetadataEntries, log::heldBack(held));
	p.metaIn = std::move(meta);
}

void MprisBackend::onPropertiesChanged(sdbus::Message& msg) {
	const std::string sender = msg.getSender();
	// Not read at all from a sender that owns no player (a name of it that waits for a slot is
	// read whole when it gets one).
	if (std::none_of(players_.begin(), players_.end(), [&](const auto& kv) { return kv.second->owner == sender; })) return;
	dbus::PropertiesChanged change;
	change.interface = dbus::PropertiesChanged::readInterface(msg);
	bool isRoot = change.interface == kRootIface;
	if (!isRoot && change.interface != kPlayerIface) return;
	// Read and bounded once, however many player names the sender owns: only the properties qsd
	// reads, cut as trim cuts them, and Metadata mapped. A player that is not published yet keeps
	// what it is sent for as long as its other interface cannot be read.
	const auto& keep = isRoot ? kRootProps : kPlayerKept;
	std::optional<Metadata> meta;
	// A message large enough to be cut leaves glibc's free heap where it was read: given back
	// (as the tray does after large pixmaps).
	if (readChange(msg, keep, change, isRoot ? nullptr : &meta)) context_.server.heapFreed();
	trim(change.changed, keep, nullptr);
	// Invalidated properties keep their values until the GetAll that reads them answers: dropped
	// now, a playing player would be published stopped (and playing again, as if it had just
	// started) for a round trip.
	bool invalidated = !change.invalidated.empty();
	change.invalidated.clear();
	for (auto& [key, ptr]: players_) {
		auto& p = *ptr;
		if (p.owner != sender) continue;
		auto copy = change;   // a process may own several player names
		auto& set = isRoot ? p.root : p.player;
		auto c = set.apply(copy);
		if (!c) continue;
		if (!set.loaded()) {
			// Not read yet (or the last read failed): the GetAll on its way is newer; or the player
			// is alive after all, and is read now.
			if (!p.loading) load(p);
			continue;
		}
		if (meta) {
			c->names.emplace_back("Metadata");
			takeMetadata(p, *meta);
		}
		if (invalidated) (isRoot ? p.reloadRoot : p.reloadPlayer) = true;
		// An invalidation, or a re-read that failed and was given up ("on its next signal").
		if (p.reloadRoot || p.reloadPlayer) load(p);
		// Not published yet (the other interface is still being read): its first publication
		// digests everything; a Position digested now would be stamped again then, stale.
		if (!p.published) continue;
		Fields fields = 0;
		for (const auto& name: c->names) fields |= fieldsOf(isRoot, name);
		digest(p, isRoot ? nullptr : &c->names);
		publish(p, fields);
	}
}

void MprisBackend::onSeeked(sdbus::Message& msg) {
	const std::string sender = msg.getSender();
	int64_t us = 0;
	msg >> us;
	for (auto& [key, ptr]: players_) {
		auto& p = *ptr;
		if (p.owner != sender || !p.published) continue;
		positionIs(p, us);
		publish(p, kPositionFields);
		readPosition(p);
	}
}

void MprisBackend::digest(Player& p, const std::vector<std::string>* names) {
	auto& v = p.player.values();
	const auto& key = p.key;
	auto named = [&](std::string_view name) {
		return !names || std::find(names->begin(), names->end(), name) != names->end();
	};
	auto warnValue = [&](const char* name, const std::string& value) {
		uint64_t held = 0;
		if (p.warned.insert(name).second && peerLog_.allow(EventLoop::clock(), held))
			log::warning("mpris", "{}: {} \"{}\" is not an MPRIS value (further ones are not logged){}", p.name, name,
			             cutText(value, 64), log::heldBack(held));
	};

	// A Position in GetAll (or, against the specification, in PropertiesChanged) is true now.
	std::optional<int64_t> position;
	if (auto* x = dbus::find(v, "Position")) {
		position = dbus::asInt(*x);
		if (!position) reader_.wrongType(key, "Position", x);
	}
	// Metadata was mapped (and what is wrong with it logged) when it arrived.
	bool trackChanged = false;
	if (p.metaIn) {
		trackChanged = p.published && p.metaIn->trackKey != p.meta.trackKey;
		p.meta = std::move(*p.metaIn);
		p.metaIn.reset();
	}

	std::string status = p.status;
	if (named("PlaybackStatus")) {
		status = "stopped";
		if (auto s = reader_.string(v, key, "PlaybackStatus")) {
			if (auto mapped = playbackStatus(*s)) status = *mapped;
			else warnValue("PlaybackStatus", *s);
		}
	}
	double rate = p.rate;
	if (named("Rate")) {
		rate = 1;
		if (auto r = reader_.number(v, key, "Rate")) {
			if (std::isfinite(*r) && *r >= 0 && *r <= kRateCeiling) rate = *r;
			else warnValue("Rate", fmt::format("{}", *r));
		}
	}
	bool statusChanged = status != p.status;
	bool rateChanged = rate != p.rate;
	// The position so far, under the status and rate it had: the estimate stands if the player
	// cannot be asked.
	if (statusChanged || rateChanged) advance(p);
	p.status = status;
	p.rate = rate;
	if (position) positionIs(p, *position);
	else if (trackChanged) positionIs(p, 0);   // a new track starts at its beginning until the player says otherwise
	// One that was playing when qsd's last run saved it and plays now did not start meanwhile: it
	// keeps its place.
	bool resumed = std::exchange(p.resumed, p.resumed && !named("PlaybackStatus")) && status == "playing";
	if (statusChanged && status == "playing" && !resumed) {
		p.startedSeq = ++seq_;
		p.lastActiveAt = nowRfc3339();
	}
	if (statusChanged) saveSoon();   // the saved `playing`
	// The player is asked for its position once, kLateRead after a change that moves it: qsd's
	// own estimate stands until then (an answer within kPositionSlackUs of it changes nothing).
	// Not at once: players update it late (mpv answers a Get during a track change with the last
	// track's position), and a Get at once would be a second round trip per change, waking the
	// bus and the player while subscribers are being woken.
	if (p.published && (statusChanged || rateChanged || trackChanged)) {
		if (!p.late) p.late = context_.loop.addIdleTimer([this, &p] { readPosition(p); }, "mpris-late-position");
		p.late.setTime(context_.loop.now() + uint64_t(std::chrono::microseconds(kLateRead).count()));
	}

	trim(v, kPlayerProps, names);
	if (names) return;   // a change of the player interface: the root one is as it was
	trim(p.root.values(), kRootProps, nullptr);

	std::string entry;
	if (auto d = reader_.string(p.root.values(), key, "DesktopEntry")) entry = *d;
	if (entry != p.desktopEntry || (p.iconUrl.is_null() && !p.published)) {
		p.desktopEntry = entry;
		auto url = entry.empty() ? std::nullopt : icons_->forDesktopEntry(entry);
		p.iconUrl = url ? json(*url) : json(nullptr);
	}
}

json MprisBackend::field(Player& p, unsigned index) {
	const auto& r = p.root.values();
	const auto& v = p.player.values();
	const auto& key = p.key;
	auto flag = [&](const dbus::Properties& props, const char* name) { return reader_.boolean(props, key, name).value_or(false); };
	auto text = [&](const dbus::Properties& props, const char* name) {
		auto s = reader_.string(props, key, name);
		return s ? json(cutText(*s)) : json(nullptr);
	};
	auto number = [&](const char* name, bool positive) {
		auto d = reader_.number(v, key, name);
		if (!d || !std::isfinite(*d) || (positive && *d <= 0)) return json(nullptr);
		return json(std::max(0.0, *d));
	};
	// As the specification says and Quickshell does: nothing can be done to a player that cannot
	// be controlled, whatever its other Can* say.
	auto controlled = [&](const char* name) { return flag(v, "CanControl") && flag(v, name); };
	switch (Field(index)) {
	case kBusName: return p.name;
	case kIdentity: return text(r, "Identity");
	case kDesktopEntry: return text(r, "DesktopEntry");
	case kIconUrl: return p.iconUrl;
	case kPlaybackStatus: return p.status;
	case kLoopStatus:
		if (auto s = reader_.string(v, key, "LoopStatus")) {
			if (auto m = loopStatus(*s)) return *m;
			uint64_t held = 0;
			if (p.warned.insert("LoopStatus").second && peerLog_.allow(EventLoop::clock(), held))
				log::warning("mpris", "{}: LoopStatus \"{}\" is not an MPRIS value{}", p.name, cutText(*s, 64), log::heldBack(held));
		}
		return nullptr;
	case kShuffle: {
		auto shuffle = reader_.boolean(v, key, "Shuffle");
		return shuffle ? json(*shuffle) : json(nullptr);
	}
	case kVolume: return number("Volume", false);
	case kRate: return p.rate;
	case kMinRate: return number("MinimumRate", true);
	case kMaxRate: return number("MaximumRate", true);
	case kCanControl: return flag(v, "CanControl");
	case kCanPlay: return controlled("CanPlay");
	case kCanPause: return controlled("CanPause");
	case kCanGoNext: return controlled("CanGoNext");
	case kCanGoPrevious: return controlled("CanGoPrevious");
	case kCanSeek: return controlled("CanSeek");
	case kCanRaise: return flag(r, "CanRaise");
	case kCanQuit: return flag(r, "CanQuit");
	case kCanSetFullscreen: return flag(r, "CanSetFullscreen");
	case kFullscreen: return flag(r, "Fullscreen");
	case kSupportedUriSchemes: return reader_.strings(r, key, "SupportedUriSchemes").value_or(std::vector<std::string>{});
	case kSupportedMimeTypes: return reader_.strings(r, key, "SupportedMimeTypes").value_or(std::vector<std::string>{});
	case kPosition: return p.positionUs ? json(seconds(*p.positionUs)) : json(nullptr);
	case kPositionAt: return p.positionUs ? json(p.positionAt) : json(nullptr);
	case kLength: return p.meta.length;
	case kMetadata: return p.meta.value;
	case kLastActiveAt: return p.lastActiveAt;
	case kProcessId: return p.pid ? json(*p.pid) : json(nullptr);
	case kDuplicateOf: return p.duplicateOf ? json(*p.duplicateOf) : json(nullptr);
	case kFieldCount: break;
	}
	return nullptr;
}

void MprisBackend::publish(Player& p, Fields fields) {
	// Never half: both interfaces read, or nothing.
	if (!p.root.loaded() || !p.player.loaded()) return;
	auto at = path(p.key);
	if (!p.published) {
		updateDuplicates(&p);
		p.state = json::object();
		for (unsigned i = 0; i < kFieldCount; ++i) p.state[kFieldNames[i]] = field(p, i);
		context_.tree.set(at, p.state);
		if (uint64_t held = 0; peerLog_.allow(EventLoop::clock(), held)) log::info("mpris", "player {} ({}){}", p.key, p.owner, log::heldBack(held));
		p.published = true;
		// Pinned in qsd's last run, and nothing pinned since.
		if (std::exchange(p.pinAgain, false) && !pinned_) {
			pinned_ = p.key;
			context_.tree.set("/media/pinned", p.key);
			saveSoon();
		}
		updateActive();
		return;
	}
	// Only the fields that changed (a status change touches three or four of them): the tree is
	// what was published last, which only this backend writes.
	for (unsigned i = 0; i < kFieldCount; ++i) {
		if (!(fields & (Fields(1) << i))) continue;
		auto value = field(p, i);
		auto& old = p.state[kFieldNames[i]];
		if (old == value) continue;
		if (value.is_object() && old.is_object()) context_.tree.sync(pointer::join(at, kFieldNames[i]), value);
		else context_.tree.set(pointer::join(at, kFieldNames[i]), value);
		old = std::move(value);
	}
	// An integration's kde:pid comes with its Metadata.
	if (fields & bit(kMetadata)) updateDuplicates();
	// Which player is active follows the statuses (and when each started playing).
	if (fields & bit(kPlaybackStatus)) updateActive();
}

// Plasma's media controller hides a browser's own player when an integration's Metadata names
// the browser's process (kde:pid, the integration host's parent): the integration mirrors the
// same tab with more (its artwork, its per-site controls). qsd keeps both, and marks the
// browser's with duplicateOf, which the active rule skips. A player with a kde:pid of its own
// process (or any kde:pid at all) is never marked: it is the integration. Several integrations
// naming one browser: the first by key.
void MprisBackend::updateDuplicates(const Player* fresh) {
	std::map<uint32_t, std::string> integrations;   // browser's process id -> the integration's key
	for (const auto& [key, p]: players_)
		if ((p->published || p.get() == fresh) && p->meta.browserPid && p->pid != p->meta.browserPid)
			integrations.emplace(*p->meta.browserPid, key);
	bool changed = false;
	for (auto& [key, p]: players_) {
		std::optional<std::string> of;
		if (p->pid && !p->meta.browserPid)
			if (auto it = integrations.find(*p->pid); it != integrations.end()) of = it->second;
		if (of == p->duplicateOf) continue;
		p->duplicateOf = std::move(of);
		if (!p->published || p.get() == fresh) continue;
		changed = true;
		publish(*p, bit(kDuplicateOf));
	}
	if (changed) updateActive();
}

void MprisBackend::updateActive() {
	std::vector<Candidate> candidates;
	for (const auto& [key, p]: players_)
		if (p->published)
			candidates.push_back({key, p->status == "playing", p->startedSeq, p->appearedSeq, p->duplicateOf.has_value()});
	auto active = pickActive(candidates, pinned_);
	context_.tree.set("/media/active", active ? json(*active) : json(nullptr));
}

// ---------------------------------------------------------------------------------------------
// position

void MprisBackend::positionIs(Player& p, int64_t us) {
	p.positionUs = std::clamp<int64_t>(us, 0, kMaxPositionUs);
	p.positionMono = context_.loop.now();
	p.positionAt = rfc3339(context_.loop.wallNow());   // the same instant as positionMono
}

void MprisBackend::advance(Player& p) {
	if (!p.positionUs) return;
	uint64_t now = context_.loop.now();
	if (p.status == "playing" && now > p.positionMono) {
		double moved = double(now - p.positionMono) * p.rate;
		p.positionUs = std::clamp<int64_t>(*p.positionUs + int64_t(std::llround(moved)), 0, kMaxPositionUs);
	}
	p.positionMono = now;
	p.positionAt = rfc3339(context_.loop.wallNow());
}

std::optional<int64_t> MprisBackend::estimate(const Player& p) const {
	if (!p.positionUs) return std::nullopt;
	uint64_t now = context_.loop.now();
	if (p.status != "playing" || now <= p.positionMono) return p.positionUs;
	return *p.positionUs + int64_t(std::llround(double(now - p.positionMono) * p.rate));
}

// positionAt is a wall-clock time and qsd's estimate a monotonic one: once the wall clock is set
// (an NTP step; a resume from suspend, over which players stay "playing" and CLOCK_MONOTONIC stood
// still), a client's position + (now − positionAt) × rate is off by the step, by a night after a
// resume, until the player next changes. So each playing player's pair is stamped again at once,
// from the estimate: no player is asked. A paused player's position does not depend on the clock.
void MprisBackend::onClockChange() {
	for (auto& [key, p]: players_) {
		if (!p->published || !p->positionUs || p->status != "playing") continue;
		advance(*p);
		publish(*p, kPositionFields);
	}
}

void MprisBackend::readPosition(Player& p) {
	positionQueue_.insert(p.key);
	positionDefer_.setEnabled(SD_EVENT_ONESHOT);
}

void MprisBackend::sendPositionReads() {
	auto queue = std::move(positionQueue_);
	positionQueue_.clear();
	for (const auto& key: queue)
		if (auto* p = find(key)) sendPositionRead(*p);
}

void MprisBackend::sendPositionRead(Player& p) {
	// One Get out per player; a request while it is out is served by one more after it, so the
	// answer that stays is never older than the event that asked.
	if (p.positionOut) {
		p.positionAgain = true;
		return;
	}
	p.positionOut = true;
	p.positionAgain = false;
	calls_.start(group(p.key),
	             p.proxy->callMethodAsync("Get").onInterface(dbus::kPropertiesIface).withArguments(kPlayerIface, "Position")
	                 .withTimeout(kCallTimeout),
	             [this, key = p.key, serial = p.serial](const sdbus::Error* e, sdbus::Variant value) {
		             auto* q = find(key, serial);
		             if (!q) return;
		             q->positionOut = false;
		             if (e) {
			             log::debug("mpris", "{}: Position: {}", q->name, e->getMessage());
		             } else if (auto us = dbus::asInt(value)) {
			             // What qsd already says, to within what no one can see: the pair stays, and
			             // subscribers are not woken for nothing.
			             auto now = estimate(*q);
			             if (!now || std::llabs(std::max<int64_t>(0, *us) - *now) > kPositionSlackUs) {
				             positionIs(*q, *us);
				             publish(*q, kPositionFields);
			             }
		             } else {
			             reader_.wrongType(key, "Position", &value);
		             }
		             if (q->positionAgain) sendPositionRead(*q);
	             });
}

} // namespace qsd::mpris

namespace qsd {
std::unique_ptr<Backend> createMprisBackend(BackendContext& context) { return std::make_unique<mpris::MprisBackend>(context); }
} // namespace qsd
