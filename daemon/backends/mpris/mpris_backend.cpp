#include "mpris_backend.hpp"

#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace qsd::mpris {

using json = nlohmann::json;

namespace {

constexpr const char* kBusIface = "org.freedesktop.DBus";

// The properties qsd reads; anything else a player sends is dropped once mapped, so what a
// player can make qsd keep is bounded by these and by mapping.hpp's limits.
const std::set<std::string, std::less<>> kRootProps = {"Identity", "DesktopEntry", "CanQuit", "CanRaise",
                                                       "CanSetFullscreen", "Fullscreen"};
const std::set<std::string, std::less<>> kPlayerProps = {
    "PlaybackStatus", "LoopStatus", "Rate", "Shuffle", "Volume", "MinimumRate", "MaximumRate",
    "CanControl", "CanPlay", "CanPause", "CanGoNext", "CanGoPrevious", "CanSeek"};

// Keeps the properties in `keep`, with their strings cut to kMaxText.
void trim(dbus::Properties& props, const std::set<std::string, std::less<>>& keep) {
	for (auto it = props.begin(); it != props.end();) {
		if (!keep.count(it->first)) {
			it = props.erase(it);
			continue;
		}
		if (auto s = dbus::asString(it->second); s && s->size() > kMaxText) it->second = sdbus::Variant(cutText(*s));
		++it;
	}
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
	icons_ = std::make_unique<IconLookup>();
	positionDefer_ = context_.loop.addDefer([this] { sendPositionReads(); }, "mpris-position-reads");
	positionDefer_.setEnabled(SD_EVENT_OFF);
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
	listNames();
}

void MprisBackend::onBusStop() {
	names_.reset();
	relistTimer_.reset();
	positionDefer_.reset();
	positionQueue_.clear();
	players_.clear();
	waiting_.clear();
	pinned_.reset();
	listed_ = false;
	icons_.reset();
}

void MprisBackend::listNames() {
	calls_.start("list", bus().daemon().callMethodAsync("ListNames").onInterface(kBusIface).withTimeout(kCallTimeout),
	             [this](const sdbus::Error* e, std::vector<std::string> names) {
		             if (e) {
			             auto delay = relist_.next();
			             log::warning("mpris", "ListNames failed: {}; trying again", e->getMessage());
			             setState(BackendState::Starting, "ListNames failed: " + e->getName());
			             relistTimer_ = context_.loop.addTimer(*delay, [this] { listNames(); }, "mpris-relist");
			             return;
		             }
		             relist_.reset();
		             for (const auto& name: names) {
			             auto key = playerKey(name);
			             if (!key || players_.count(*key) || waiting_.count(name)) continue;
			             // The owner: calls go to it, and its signals are recognised by it.
			             calls_.start(group(*key),
			                          bus().daemon().callMethodAsync("GetNameOwner").onInterface(kBusIface).withArguments(name)
			                              .withTimeout(kCallTimeout),
			                          [this, name, key = *key](const sdbus::Error* err, std::string owner) {
				                          // Gone meanwhile (NameHasNoOwner), or already known from NameOwnerChanged.
				                          if (err || players_.count(key)) return;
				                          addPlayer(name, owner);
			                          });
		             }
		             listed_ = true;
		             context_.tree.set("/media/available", true);
		             setState(BackendState::Running);
	             });
}

void MprisBackend::onNameOwnerChanged(const std::string& name, const std::string& oldOwner, const std::string& newOwner) {
	auto key = playerKey(name);
	if (!key) return;
	if (!oldOwner.empty()) {
		waiting_.erase(name);
		if (auto* p = find(*key); p && p->owner == oldOwner) removePlayer(*key, "left the bus");
	}
	if (!newOwner.empty()) addPlayer(name, newOwner);
}

void MprisBackend::addPlayer(const std::string& name, const std::string& owner) {
	auto key = playerKey(name);
	if (!key) return;
	if (auto* p = find(*key)) {
		if (p->owner == owner) return;
		removePlayer(*key, "changed owner");
	}
	if (players_.size() >= kMaxPlayers) {
		if (!warnedCap_)
			log::warning("mpris", "more than {} media players on the bus: {} and further ones wait for a free slot", kMaxPlayers, name);
		warnedCap_ = true;
		if (waiting_.size() < kMaxWaiting) waiting_[name] = owner;
		return;
	}
	auto p = std::make_unique<Player>();
	p->key = *key;
	p->name = name;
	p->owner = owner;
	p->serial = nextSerial_++;
	p->appearedSeq = ++seq_;
	p->proxy = sdbus::createProxy(conn(), owner, kPath);
	auto& ref = *p;
	players_[*key] = std::move(p);
	log::debug("mpris", "player {} ({}) appeared", *key, owner);
	load(ref);
}

void MprisBackend::removePlayer(const std::string& key, const char* why) {
	auto it = players_.find(key);
	if (it == players_.end()) return;
	auto& p = *it->second;
	// Its pending actions answer -32000 naming it; its reads are dropped.
	calls_.cancel(group(key));
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
	updateActive();
	admitWaiting();
}

void MprisBackend::admitWaiting() {
	while (players_.size() < kMaxPlayers && !waiting_.empty()) {
		auto [name, owner] = *waiting_.begin();
		waiting_.erase(waiting_.begin());
		addPlayer(name, owner);
	}
}

// ---------------------------------------------------------------------------------------------
// reading

void MprisBackend::load(Player& p) {
	if (p.loading) return;
	p.failed = false;
	p.retry.reset();
	auto done = [this, key = p.key, serial = p.serial](bool root) {
		return [this, key, serial, root](const sdbus::Error* e) {
			if (auto* q = find(key, serial)) loaded(*q, root, e);
		};
	};
	if (!p.root.loaded() || p.reloadRoot) {
		p.reloadRoot = false;
		++p.loading;
		p.root.load(calls_, group(p.key), *p.proxy, done(true), kCallTimeout);
	}
	if (!p.player.loaded() || p.reloadPlayer) {
		p.reloadPlayer = false;
		++p.loading;
		p.player.load(calls_, group(p.key), *p.proxy, done(false), kCallTimeout);
	}
}

void MprisBackend::loaded(Player& p, bool root, const sdbus::Error* e) {
	--p.loading;
	if (e) {
		if (!p.failed && p.backoff.failures() == 0)
			log::info("mpris", "cannot read {} of {}: {} ({}); trying again", root ? kRootIface : kPlayerIface, p.name,
			          e->getMessage(), e->getName());
		p.failed = true;
	}
	if (p.loading > 0) return;
	if (p.failed) {
		if (auto delay = p.backoff.next()) {
			p.retry = context_.loop.addTimer(
			    *delay, [this, key = p.key, serial = p.serial] {
				    if (auto* q = find(key, serial)) load(*q);
			    },
			    "mpris-reread");
		} else if (p.backoff.failures() == kReread.maxTries) {
			log::info("mpris", "giving up reading {}; trying again on its next signal", p.name);
		}
		return;
	}
	if (p.reloadRoot || p.reloadPlayer) return load(p);   // invalidated while it was read
	p.backoff.reset();
	digest(p);
	publish(p);
}

void MprisBackend::onPropertiesChanged(sdbus::Message& msg) {
	const std::string sender = msg.getSender();
	auto change = dbus::PropertiesChanged::read(msg);
	bool isRoot = change.interface == kRootIface;
	if (!isRoot && change.interface != kPlayerIface) return;
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
		if (c->invalidated) {
			(isRoot ? p.reloadRoot : p.reloadPlayer) = true;
			load(p);
		}
		digest(p);
		publish(p);
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
		publish(p);
		readPosition(p);
	}
}

void MprisBackend::digest(Player& p) {
	auto& v = p.player.values();
	const auto& key = p.key;
	auto warnValue = [&](const char* name, const std::string& value) {
		if (p.warned.insert(name).second)
			log::warning("mpris", "{}: {} \"{}\" is not an MPRIS value (further ones are not logged)", p.name, name,
			             cutText(value, 64));
	};

	// A Position in GetAll (or, against the specification, in PropertiesChanged) is true now.
	std::optional<int64_t> position;
	if (auto* x = dbus::find(v, "Position")) {
		position = dbus::asInt(*x);
		if (!position) reader_.wrongType(key, "Position", x);
	}
	bool trackChanged = false;
	if (auto* m = dbus::find(v, "Metadata")) {
		auto meta = mapMetadata(m);
		for (const auto& bad: meta.badEntries) reader_.wrongType(key, "Metadata " + bad, bad == "Metadata" ? m : nullptr);
		if (meta.tooLarge && p.warned.insert("Metadata size").second)
			log::warning("mpris", "{}: Metadata has more than {} entries; ignored", p.name, kMaxMetadataEntries);
		trackChanged = p.published && meta.trackKey != p.meta.trackKey;
		p.meta = std::move(meta);
	}

	std::string status = "stopped";
	if (auto s = reader_.string(v, key, "PlaybackStatus")) {
		if (auto mapped = playbackStatus(*s)) status = *mapped;
		else warnValue("PlaybackStatus", *s);
	}
	double rate = 1;
	if (auto r = reader_.number(v, key, "Rate")) {
		if (std::isfinite(*r) && *r >= 0) rate = *r;
		else warnValue("Rate", fmt::format("{}", *r));
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
	if (statusChanged && status == "playing") {
		p.startedSeq = ++seq_;
		p.lastActiveAt = nowRfc3339();
	}
	if (p.published && !position && (statusChanged || rateChanged || trackChanged)) readPosition(p);
	// Players update late: mpv answers a Get during a track change with the last track's position.
	if (p.published && (statusChanged || trackChanged)) {
		if (!p.late) p.late = context_.loop.addIdleTimer([this, &p] { readPosition(p); }, "mpris-late-position");
		p.late.setTime(context_.loop.now() + uint64_t(std::chrono::microseconds(kLateRead).count()));
	}

	trim(v, kPlayerProps);
	trim(p.root.values(), kRootProps);

	std::string entry;
	if (auto d = reader_.string(p.root.values(), key, "DesktopEntry")) entry = *d;
	if (entry != p.desktopEntry || (p.iconUrl.is_null() && !p.published)) {
		p.desktopEntry = entry;
		auto url = entry.empty() ? std::nullopt : icons_->forDesktopEntry(entry);
		p.iconUrl = url ? json(*url) : json(nullptr);
	}
}

json MprisBackend::playerJson(Player& p) {
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
	json loop = nullptr;
	if (auto s = reader_.string(v, key, "LoopStatus")) {
		if (auto m = loopStatus(*s)) loop = *m;
		else if (p.warned.insert("LoopStatus").second)
			log::warning("mpris", "{}: LoopStatus \"{}\" is not an MPRIS value", p.name, cutText(*s, 64));
	}
	auto shuffle = reader_.boolean(v, key, "Shuffle");
	bool canControl = flag(v, "CanControl");
	return {
	    {"busName", p.name},
	    {"identity", text(r, "Identity")},
	    {"desktopEntry", text(r, "DesktopEntry")},
	    {"iconUrl", p.iconUrl},
	    {"playbackStatus", p.status},
	    {"loopStatus", loop},
	    {"shuffle", shuffle ? json(*shuffle) : json(nullptr)},
	    {"volume", number("Volume", false)},
	    {"rate", p.rate},
	    {"minRate", number("MinimumRate", true)},
	    {"maxRate", number("MaximumRate", true)},
	    {"canControl", canControl},
	    // As the specification says and Quickshell does: nothing can be done to a player that
	    // cannot be controlled, whatever its other Can* say.
	    {"canPlay", canControl && flag(v, "CanPlay")},
	    {"canPause", canControl && flag(v, "CanPause")},
	    {"canGoNext", canControl && flag(v, "CanGoNext")},
	    {"canGoPrevious", canControl && flag(v, "CanGoPrevious")},
	    {"canSeek", canControl && flag(v, "CanSeek")},
	    {"canRaise", flag(r, "CanRaise")},
	    {"canQuit", flag(r, "CanQuit")},
	    {"canSetFullscreen", flag(r, "CanSetFullscreen")},
	    {"fullscreen", flag(r, "Fullscreen")},
	    {"position", p.positionUs ? json(seconds(*p.positionUs)) : json(nullptr)},
	    {"positionAt", p.positionUs ? json(p.positionAt) : json(nullptr)},
	    {"length", p.meta.length},
	    {"metadata", p.meta.value},
	    {"lastActiveAt", p.lastActiveAt},
	};
}

void MprisBackend::publish(Player& p) {
	// Never half: both interfaces read, or nothing.
	if (!p.root.loaded() || !p.player.loaded()) return;
	auto next = playerJson(p);
	auto at = path(p.key);
	if (!p.published) {
		context_.tree.set(at, next);
		log::info("mpris", "player {} ({})", p.key, p.owner);
	} else {
		// Only the fields that changed (a status change touches three or four of them): the tree
		// is what was published last, which only this backend writes.
		for (const auto& [field, value]: next.items()) {
			auto old = p.state.find(field);
			if (old != p.state.end() && *old == value) continue;
			if (value.is_object() && old != p.state.end() && old->is_object())
				context_.tree.sync(pointer::join(at, field), value);
			else context_.tree.set(pointer::join(at, field), value);
		}
	}
	p.state = std::move(next);
	p.published = true;
	updateActive();
}

void MprisBackend::updateActive() {
	std::vector<Candidate> candidates;
	for (const auto& [key, p]: players_)
		if (p->published) candidates.push_back({key, p->status == "playing", p->startedSeq, p->appearedSeq});
	auto active = pickActive(candidates, pinned_);
	context_.tree.set("/media/active", active ? json(*active) : json(nullptr));
}

// ---------------------------------------------------------------------------------------------
// position

void MprisBackend::positionIs(Player& p, int64_t us) {
	p.positionUs = std::max<int64_t>(0, us);
	p.positionMono = context_.loop.now();
	p.positionAt = nowRfc3339();
}

void MprisBackend::advance(Player& p) {
	if (!p.positionUs) return;
	uint64_t now = context_.loop.now();
	if (p.status == "playing" && now > p.positionMono) {
		double moved = double(now - p.positionMono) * p.rate;
		p.positionUs = std::max<int64_t>(0, *p.positionUs + int64_t(std::llround(moved)));
	}
	p.positionMono = now;
	p.positionAt = nowRfc3339();
}

std::optional<int64_t> MprisBackend::estimate(const Player& p) const {
	if (!p.positionUs) return std::nullopt;
	uint64_t now = context_.loop.now();
	if (p.status != "playing" || now <= p.positionMono) return p.positionUs;
	return *p.positionUs + int64_t(std::llround(double(now - p.positionMono) * p.rate));
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
				             publish(*q);
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
