// The "upower" backend: power-profiles-daemon, the profile holds clients make, and the
// power.* methods.

#include "upower_backend.hpp"

#include "../../log.hpp"
#include "../../server/client.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>
#include <chrono>

namespace qsd::upower {

// ---------------------------------------------------------------------------------------------
// power-profiles-daemon

void UpowerBackend::ppdNamesChanged() {
	int want = -1;
	for (size_t i = 0; i < kPpd.size(); ++i)
		if (ppdWatchers_[i] && ppdWatchers_[i]->present()) {
			want = int(i);
			break;
		}
	std::string owner = want >= 0 ? ppdWatchers_[size_t(want)]->owner() : std::string();
	if (want == ppdActive_ && owner == ppdOwner_) return;

	bool ownerChanged = owner != ppdOwner_;
	calls_.cancel("ppd");   // reads: asked again of the name now in use
	// The same daemon under its other name (power-profiles-daemon 0.20 owns both from one
	// connection, the old one first): its holds stand, and the calls out that act on the daemon
	// (group "ppd-daemon": HoldProfile, ReleaseProfile, setting the profile) stay out, through
	// the proxy they went by, and answer as ever. Cancelled, a HoldProfile the daemon had made
	// was never released (the profile stayed held until qsd exited), and the hold was asked for
	// again; a power.setProfile the daemon carried out answered -32000. With a new owner they
	// answer BackendUnavailable.
	bury(std::move(ppdHoldProxy_));
	if (ownerChanged) {
		calls_.cancel("ppd-daemon");
		bury(std::move(ppdProxy_));
	} else {
		ppdHoldProxy_ = std::move(ppdProxy_);
	}
	ppdProps_.clear();
	ppdRetry_.reset();
	if (ppdActive_ >= 0) reader_.forget(ppd().name);
	ppdUnknown_.clear();
	{
		// With a new instance, the holds died with the old one: cancelled HoldProfile calls
		// answered BackendUnavailable, and those holds are forgotten; the others are made again
		// below. With the same one, a hold's call out answers as ever.
		std::vector<uint64_t> drop;
		for (auto& [id, h]: holds_) {
			if (ownerChanged) {
				h.cookie.reset();
				h.owner.clear();
				h.pending = false;
				if (!h.confirmed || h.released) drop.push_back(id);
			}
			// A retry for the old instance is moot: the new one gets the hold right away.
			h.retry.reset();
			h.error = nullptr;
		}
		for (auto id: drop) forgetHold(id);
	}
	if (ppdActive_ >= 0 && want != ppdActive_)
		log::info("upower", "{} left the system bus", kPpd[size_t(ppdActive_)].name);
	ppdActive_ = want;
	ppdOwner_ = owner;
	if (want < 0) {
		context_.tree.set(kProfiles, {{"available", false}});
		updateState();
		return;
	}
	log::info("upower", "using power profiles from {} ({})", ppd().name, owner);
	ppdProxy_ = sdbus::createProxy(conn(), ppd().name, ppd().path);
	ppdProps_ = dbus::PropertySet(ppd().iface);
	updateState();
	// The holds are made again after any change, not only a new owner's: power-profiles-daemon
	// 0.20 owns its two names from one connection, the old one first, so its start is two changes
	// with one owner, and the second cancelled the HoldProfile calls the first had asked for in
	// its load's answer (a client's hold then stayed "pending" for good). Holds that still have a
	// cookie keep it: only those with none and no call out are made again.
	ppdLoad(true);
}

// Reads the daemon's properties. One that does not answer in time, or answers with an error
// (a daemon still starting), is shown as known so far (nothing) and asked again with backoff
// (dbus::kAskAgain): it has no other way into the tree. An error was only logged before, and the
// profiles stayed "unknown" until the daemon happened to signal a change.
void UpowerBackend::ppdLoad(bool rehold) {
	ppdProps_.load(
	    calls_, "ppd", *ppdProxy_,
	    [this, rehold](const sdbus::Error* e) {
		    if (e) {
			    auto delay = ppdRetry_.schedule(
			        context_.loop,
			        [this] {
				        if (ppdProxy_) ppdLoad(false);
			        },
			        "upower-ppd-late");
			    if (dbus::timedOut(*e))
				    log::at(ppdRetry_.level(), "upower", "{} did not answer in time; asking again in {} s", ppd().name,
				            wholeSeconds(*delay));
			    else
				    log::at(ppdRetry_.level(), "upower", "reading {}'s properties failed: {}: {}; asking again in {} s",
				            ppd().name, e->getName(), e->getMessage(), wholeSeconds(*delay));
		    } else {
			    ppdRetry_.reset();
		    }
		    if (e && !ppdProps_.loaded()) ppdProps_.assign({});
		    publishProfiles();
		    if (rehold)
			    for (auto& [_, h]: holds_)
				    if (!h.cookie && !h.pending) hold(h, nullptr);
		    updateState();
	    },
	    dbus::kBusyTimeout);
}

void UpowerBackend::ppdPropertiesChanged(size_t service, sdbus::Message& msg) {
	if (int(service) != ppdActive_ || !ppdProps_.loaded()) return;
	if (msg.getSender() != ppdOwner_ || msg.getPath() != kPpd[service].path) return;
	if (ppdProps_.apply(msg)) publishProfiles();
}

// power-profiles-daemon let go of a hold on its own: it releases every hold when the user picks a
// profile (its "set_active_profile by user request"), and says so with ProfileReleased(cookie).
// Such a hold is over: it leaves the tree and its client's lease ends. Kept, it showed `active`
// for as long as its client stayed, and was made again after a restart of the daemon, undoing
// the user's choice.
void UpowerBackend::ppdProfileReleased(size_t service, sdbus::Message& msg) {
	if (int(service) != ppdActive_ || msg.getSender() != ppdOwner_) return;
	uint32_t cookie = 0;
	try {
		msg >> cookie;
	} catch (const sdbus::Error&) {
		return;   // not the specification's signal
	}
	std::optional<uint64_t> id;
	for (const auto& [i, h]: holds_)
		if (h.cookie == cookie && h.owner == ppdOwner_) id = i;
	if (!id) return;
	log::info("upower", "{} released the hold {} (cookie {})", ppd().name, *id, cookie);
	forgetHold(*id);   // out of the table first: the lease's end has nothing to release
	refreshHolds();
	publishProfiles();
}

void UpowerBackend::publishProfiles() {
	if (!ppdReady()) return;
	auto m = upower::mapProfiles(ppdProps_.values(), ownHolds());
	for (const auto& name: m.badProperties) reader_.wrongType(ppd().name, name, ppdProps_.values());
	for (const auto& u: m.unknownValues)
		if (ppdUnknown_.insert(u).second) log::warning("upower", "{}: unknown value {}; mapped to \"unknown\" or left out", ppd().name, u);
	m.value["available"] = true;
	m.value["busName"] = ppd().name;
	context_.tree.sync(kProfiles, m.value);
}

void UpowerBackend::refreshHolds() {
	// power-profiles-daemon before 0.20 (and python-dbusmock) does not signal
	// ActiveProfileHolds after HoldProfile/ReleaseProfile, so read it after our own calls.
	if (!ppdProxy_) return;
	calls_.start("ppd",
	             ppdProxy_->callMethodAsync("Get").onInterface(kPropsIface)
	                 .withArguments(std::string(ppd().iface), std::string("ActiveProfileHolds")),
	                 [this](const sdbus::Error* e, sdbus::Variant v) {
		                 if (e || !ppdProps_.loaded()) return;
		                 ppdProps_.values().insert_or_assign("ActiveProfileHolds", std::move(v));
		                 publishProfiles();
	                 });
}

std::vector<upower::OwnHold> UpowerBackend::ownHolds() const {
	std::vector<upower::OwnHold> out;
	for (const auto& [id, h]: holds_) {
		if (h.released) continue;
		upower::OwnHold o{id, {h.profile, h.applicationId, h.reason}, "pending", nullptr};
		if (h.cookie && h.owner == ppdOwner_) o.state = "active";
		else if (!h.pending && !h.error.is_null()) {
			o.state = "failed";
			o.error = h.error;
		}
		out.push_back(std::move(o));
	}
	return out;
}

void UpowerBackend::hold(ClientHold& h, std::shared_ptr<Answer> answer) {
	h.pending = true;
	uint64_t holdId = h.id;
	publishProfiles();   // shows it as pending
	calls_.start(
	    "ppd-daemon",
	    ppdProxy_->callMethodAsync("HoldProfile").onInterface(ppd().iface).withArguments(h.profile, h.reason, h.applicationId),
	    [this, holdId, answer](const sdbus::Error* e, uint32_t cookie) {
		        auto it = holds_.find(holdId);
		        if (e) {
			        if (answer) answer->failed(*e);
			        if (it == holds_.end()) return;
			        it->second.pending = false;
			        if (it->second.confirmed && !it->second.released) return holdFailed(it->second, *e);
			        // A new hold: its client gets the error, and it is gone.
			        log::info("upower", "HoldProfile failed: {}: {}", e->getName(), e->getMessage());
			        forgetHold(holdId);
			        publishProfiles();
			        return;
		        }
		        if (it == holds_.end() || it->second.released) {
			        // The client let go (or went away) while we waited.
			        release(cookie);
			        if (it != holds_.end()) holds_.erase(it);
			        if (answer) answer->result({{"cookie", holdId}});
			        return;
		        }
		        auto& h = it->second;
		        h.pending = false;
		        h.cookie = cookie;
		        h.owner = ppdOwner_;
		        h.confirmed = true;
		        if (h.retry.failures()) log::info("upower", "hold {} made again after {} failures", holdId, h.retry.failures());
		        h.error = nullptr;
		        h.retry.reset();
		        if (answer) answer->result({{"cookie", holdId}});
		        publishProfiles();
		        refreshHolds();
	    });
}

// Making a hold again (after power-profiles-daemon restarted) failed. The client still holds
// its cookie, so the hold is not dropped: /power/profiles/holds shows it as failed with the
// error, and it is tried again with backoff (kRehold) until it works, the client lets go, or
// the daemon changes again.
void UpowerBackend::holdFailed(ClientHold& h, const sdbus::Error& e) {
	if (h.retry.failures() == 0)
		log::warning("upower", "making hold {} again failed: {}: {}; trying again", h.id, e.getName(), e.getMessage());
	h.error = {{"name", e.getName()}, {"message", e.getMessage()}};
	// kRehold never gives up.
	uint64_t id = h.id;
	h.retry.schedule(
	    context_.loop,
	    [this, id] {
		    auto it = holds_.find(id);
		    if (it == holds_.end() || it->second.pending || it->second.cookie || !ppdReady()) return;
		    hold(it->second, nullptr);
	    },
	    "upower-rehold");
	publishProfiles();
}

void UpowerBackend::release(uint32_t cookie) {
	if (!ppdProxy_) return;
	calls_.start("ppd-daemon",
	             ppdProxy_->callMethodAsync("ReleaseProfile").onInterface(ppd().iface).withArguments(cookie),
	                 [this, cookie](const sdbus::Error* e) {
		                 if (e) log::info("upower", "ReleaseProfile({}) failed: {}: {}", cookie, e->getName(), e->getMessage());
		                 refreshHolds();
	                 });
}

// A client's hold lease ended (disconnect or power.releaseProfile).
void UpowerBackend::clientReleased(uint64_t id) {
	auto it = holds_.find(id);
	if (it == holds_.end()) return;
	auto& h = it->second;
	if (h.pending) {
		h.released = true;   // released when HoldProfile answers
		return;
	}
	if (h.cookie && h.owner == ppdOwner_) release(*h.cookie);
	holds_.erase(it);
	publishProfiles();
}

// A hold that is over for qsd's reasons (its HoldProfile failed, its daemon went): gone from
// the table first, then its client's lease, whose release finds nothing left to do.
void UpowerBackend::forgetHold(uint64_t id) {
	auto it = holds_.find(id);
	if (it == holds_.end()) return;
	auto client = it->second.client.lock();
	holds_.erase(it);
	if (client) revokeLease(*client, leaseKey(id));
}

// ---------------------------------------------------------------------------------------------
// methods

std::span<const Backend::Method> UpowerBackend::methods() const {
	static constexpr Method table[] = {
	    method<&UpowerBackend::setProfile>("power.setProfile"),
	    method<&UpowerBackend::holdProfile>("power.holdProfile"),
	    // A client may let go of its hold whether or not power-profiles-daemon is there.
	    method<&UpowerBackend::releaseProfile>("power.releaseProfile", false),
	};
	return table;
}

std::string UpowerBackend::checkProfile(const Params& p) {
	auto name = p.string("profile");
	auto ppdName = upower::ppdProfileName(name);
	if (!ppdName) Params::fail("profile", "one of \"powerSaver\", \"balanced\", \"performance\"");
	auto tree = *upower::profileName(*ppdName);
	const json* available = context_.tree.find("/power/profiles/profiles");
	if (available && available->is_array() && std::find(available->begin(), available->end(), tree) == available->end())
		throw RpcException(ErrorCode::InvalidParams, "The " + tree + " profile is not available on this machine",
		                   {{"param", "profile"}, {"expected", "one of the profiles in /power/profiles/profiles"},
		                    {"available", *available}});
	return *ppdName;
}

void UpowerBackend::setProfile(Call& c) {
	auto profile = checkProfile(c.params());
	calls_.start("ppd-daemon",
	             ppdProxy_->callMethodAsync("Set").onInterface(kPropsIface)
	                 .withArguments(std::string(ppd().iface), std::string("ActiveProfile"), sdbus::Variant(profile)),
	             [answer = c.answer(), profile](const sdbus::Error* e) {
		             if (e) answer->failed(*e);
		             else answer->result({{"profile", *upower::profileName(profile)}});
	             });
}

void UpowerBackend::holdProfile(Call& c) {
	const auto& p = c.params();
	auto profile = checkProfile(p);
	auto id = nextHold_++;
	auto& h = holds_[id];
	h.id = id;
	h.client = c.client().weak();
	h.profile = profile;
	h.reason = p.optString("reason").value_or("");
	h.applicationId = p.optString("applicationId").value_or("qsd");
	// The lease is the client's from now on: a disconnect before the answer releases too.
	grantLease(c.client(), leaseKey(id), [this, id] { clientReleased(id); });
	hold(h, c.answer());
}

void UpowerBackend::releaseProfile(Call& c) {
	auto cookie = c.params().integer("cookie");
	auto it = cookie > 0 ? holds_.find(uint64_t(cookie)) : holds_.end();
	if (it == holds_.end() || it->second.client.lock().get() != &c.client())
		throw RpcException(ErrorCode::NotFound, "No profile hold with this cookie on this connection",
		                   {{"param", "cookie"}, {"cookie", cookie}});
	// The lease's end releases the hold (now, or when HoldProfile answers).
	revokeLease(c.client(), leaseKey(uint64_t(cookie)));
	c.result({{"cookie", cookie}});
}

} // namespace qsd::upower
