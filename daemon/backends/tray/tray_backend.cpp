// The tray backend's start-up and its two roles: the session's StatusNotifierWatcher, or a
// host of another watcher until that one leaves.
//
// D-Bus discipline (docs/architecture.md, "One thread, one loop"): the blocking D-Bus work is
// done once at start: the AddMatch of a few broad signal matches (item and menu signals are
// dispatched here by sender and path, so no match is added per item later), the
// NameOwnerChanged watch, and the Hello behind our unique name. Everything after is
// asynchronous: owning the names is an async RequestName, every item and menu call is tracked in
// the backend's CallSet grouped per item, and the exported watcher object only queues replies
// and signals.
//
// The watcher name is a dbus::OwnedName: polite (an existing watcher is never replaced, and a
// bar that asks to replace qsd is refused and becomes a host of qsd, so the list outlives it)
// and queued, so when the watcher that owns it leaves, the bus hands the name to qsd in the same
// step, with no moment in which no watcher exists.

#include "tray_backend.hpp"

#include "../../dbus/guard.hpp"
#include "../../dbus/properties.hpp"
#include "../../files.hpp"
#include "../../log.hpp"
#include "../../text.hpp"

#include <qsd/protocol/mirror.hpp>

#include <cstdlib>

#include <unistd.h>

namespace qsd::tray {

using json = nlohmann::json;

namespace {
// RequestName flag (D-Bus specification): the host name is not worth waiting for.
constexpr uint32_t kDoNotQueue = 4;
} // namespace

TrayBackend::TrayBackend(BackendContext& context): BusBackend(context, Bus::Session, "tray") {}

TrayBackend::~TrayBackend() { stop(); }

void TrayBackend::onBusStart() {
	setupIcons();

	deferred_ = context_.loop.addDefer([this] { runDeferred(); }, "tray-deferred");
	deferred_.setEnabled(SD_EVENT_OFF);
	hostName_ = "org.kde.StatusNotifierHost-" + std::to_string(::getpid());

	// Broad matches, installed once (AddMatch blocks): each handler finds its item by (sender,
	// path), so there is no match per item.
	match(fmt::format("type='signal',interface='{}'", kItemIface), [this](sdbus::Message& m) { onItemSignal(m); },
	      "StatusNotifierItem signal");
	match(fmt::format("type='signal',interface='{}'", kMenuIface), [this](sdbus::Message& m) { onMenuSignal(m); },
	      "DBusMenu signal");
	// The other watcher's signals, while qsd is its host (sender= the name: the bus checks the
	// current owner; the handler checks it is the one qsd hosts).
	match(fmt::format("type='signal',sender='{}',path='{}',interface='{}'", kWatcherName, kWatcherPath, kWatcherIface),
	      [this](sdbus::Message& m) { onOtherWatcherSignal(m); }, "StatusNotifierWatcher signal");
	match(fmt::format("type='signal',sender='{}',path='{}',interface='{}',member='PropertiesChanged'", kWatcherName,
	                  kWatcherPath, kPropsIface),
	      [this](sdbus::Message& m) { onOtherWatcherSignal(m); }, "PropertiesChanged from the StatusNotifierWatcher");
	// Items and hosts go when their bus names go; the set of names is not known in advance.
	names_ = bus().names().watchAll([this](const std::string& name, const std::string& oldOwner, const std::string& newOwner) {
		onNameOwnerChanged(name, oldOwner, newOwner);
	});

	// The list qsd's last run left, told from another bus's by the bus's id.
	if (const char* rt = std::getenv("XDG_RUNTIME_DIR"); rt && rt[0] == '/') savedPath_ = std::string(rt) + "/qsd/tray-items.json";
	busId_ = bus().id();
	if (busId_.empty()) log::warning("tray", "the bus's id is not known: the item list is not kept across restarts");

	// The watcher object is served from the start, whatever the role: it is only reachable
	// through the well-known name once qsd owns it (before that, only through qsd's unique name,
	// where registrations are refused: onRegisterItem, onRegisterHost).
	watcher_ = std::make_unique<dbus::OwnedName>(bus(), kWatcherName, [this] { watcherOwnerChanged(); });
	object_ = &watcher_->exportObject(kWatcherPath);
	exportWatcher(*object_);
	watcher_->request();
	requestHostName();
}

void TrayBackend::onBusStop() {
	names_.reset();
	items_.clear();
	itemsPerConnection_.clear();
	pixmaps_ = PixmapBudget();
	hosts_ = HostRegistry();
	order_.clear();
	services_.clear();
	itemSignals_.clear();
	menuSignals_.clear();
	refreshQueue_.clear();
	menuQueue_.clear();
	publishQueue_.clear();
	otherWatcher_.reset();
	busId_.clear();
	saveNeeded_ = false;
	adoptsOut_ = 0;
	settled_ = waitedEnough_ = false;
	unsettled_ = 0;
	startWait_.reset();
	registerRetry_.reset();
	listRetry_.reset();
	// Releases the watcher name now: a watcher queued behind qsd takes over at once.
	object_ = nullptr;
	watcher_.reset();
	deferred_.reset();
	dropIcons();
	role_ = Role::None;
}

std::optional<Unavailable> TrayBackend::availability() const {
	if (!roleKnown()) return Unavailable{kRoot, "there is no StatusNotifierWatcher"};
	return std::nullopt;
}

void TrayBackend::exportWatcher(sdbus::IObject& object) {
	object.registerMethod(kWatcherIface, "RegisterStatusNotifierItem", "s", {"service"}, "", {},
	                      dbus::exportedMethod("tray", this, &TrayBackend::onRegisterItem));
	object.registerMethod(kWatcherIface, "RegisterStatusNotifierHost", "s", {"service"}, "", {},
	                      dbus::exportedMethod("tray", this, &TrayBackend::onRegisterHost));
	object.registerProperty(kWatcherIface, "RegisteredStatusNotifierItems", "as",
	                        [this](sdbus::PropertyGetReply& reply) { reply << registeredItems(); });
	// qsd is a host itself, so there always is one.
	object.registerProperty(kWatcherIface, "IsStatusNotifierHostRegistered", "b",
	                        [](sdbus::PropertyGetReply& reply) { reply << true; });
	object.registerProperty(kWatcherIface, "ProtocolVersion", "i", [](sdbus::PropertyGetReply& reply) { reply << int32_t(0); });
	object.registerSignal(kWatcherIface, "StatusNotifierItemRegistered", "s", {"service"});
	object.registerSignal(kWatcherIface, "StatusNotifierItemUnregistered", "s", {"service"});
	object.registerSignal(kWatcherIface, "StatusNotifierHostRegistered", "");
	object.registerSignal(kWatcherIface, "StatusNotifierHostUnregistered", "");
	object.finishRegistration();
}

void TrayBackend::requestHostName() {
	calls_.start("names",
	             bus().daemon().callMethodAsync("RequestName").onInterface("org.freedesktop.DBus")
	                 .withArguments(hostName_, uint32_t(kDoNotQueue)),
	             [this](const sdbus::Error* e, uint32_t) {
		             if (e) log::warning("tray", "cannot own {}: {}", hostName_, e->getMessage());
	             });
}

// ---------------------------------------------------------------------------------------------
// roles

void TrayBackend::watcherOwnerChanged() {
	if (!watcher_) return;
	if (watcher_->owned()) becomeWatcher();
	else if (!watcher_->otherOwner().empty()) becomeHost(watcher_->otherOwner());
	else if (watcher_->state() == dbus::OwnedName::State::Failed) {
		setState(BackendState::Unavailable, "cannot own " + std::string(kWatcherName) + ": " + watcher_->error());
		becomeNone();
	} else becomeNone();
}

void TrayBackend::becomeWatcher() {
	if (role_ == Role::Watcher) return;
	bool takeover = role_ == Role::Host;
	role_ = Role::Watcher;
	calls_.cancel("host");
	registerRetry_.reset();
	listRetry_.reset();
	bury(std::move(otherWatcher_));
	otherOwner_.clear();
	listRead_ = false;
	// The items qsd followed as a host stay: they are the previous watcher's list, and each is
	// still on the bus (items leave with their bus names). No item blinks out.
	log::info("tray", "qsd is the StatusNotifierWatcher{}", takeover ? fmt::format(" (took over, {} items kept)", items_.size()) : "");
	// Items that lost their registration with the previous watcher (or started while there was
	// none) register again when they see a host appear.
	emitWatcher("StatusNotifierHostRegistered");
	watcherItemsChanged();
	// Items that will not register again: those qsd's last run listed on this bus.
	adoptSavedItems();
	updateAvailable();
}

void TrayBackend::becomeHost(const std::string& owner) {
	if (role_ == Role::Host && owner == otherOwner_) return;
	role_ = Role::Host;
	calls_.cancel("host");
	registerRetry_.reset();
	listRetry_.reset();
	bury(std::move(otherWatcher_));
	otherOwner_ = owner;
	listRead_ = false;
	log::info("tray", "{} is owned by {}: qsd is its host", kWatcherName, owner);
	otherWatcher_ = sdbus::createProxy(conn(), owner, kWatcherPath);
	registerHost();
	readListed();
	updateAvailable();
}

// Some items (libappindicator's) show themselves in a tray only while a host is registered.
void TrayBackend::registerHost() {
	if (!otherWatcher_) return;
	calls_.start("host",
	             otherWatcher_->callMethodAsync("RegisterStatusNotifierHost").onInterface(kWatcherIface)
	                 .withTimeout(kCallTimeout).withArguments(hostName_),
	             [this](const sdbus::Error* e) {
		             if (!e) return registerRetry_.reset();
		             if (timedOut(*e)) return watcherLate(registerRetry_, "RegisterStatusNotifierHost", [this] { registerHost(); });
		             log::warning("tray", "RegisterStatusNotifierHost on {} failed: {}: {}", otherOwner_, e->getName(), e->getMessage());
	             });
}

// A watcher busy while the session starts: asked again 1, 2, 4, 8 and 16 s later, since nothing
// else would bring what it did not answer (the items registered before qsd came, our host
// registration).
void TrayBackend::watcherLate(Retry& retry, const char* what, EventLoop::Handler again) {
	auto delay = retry.schedule(context_.loop, std::move(again), "tray-watcher-retry");
	if (delay)
		log::at(retry.level(), "tray", "{} did not answer {} in time; asking again in {} s", otherOwner_, what,
		        wholeSeconds(*delay));
	else
		log::warning("tray", "{} did not answer {} in time {} times; not asked again", otherOwner_, what, retry.failures() + 1);
}

void TrayBackend::becomeNone() {
	if (role_ == Role::None) return;
	// Nobody owns the name and qsd did not get it: qsd is not in the name's queue (RequestName
	// failed). Without a watcher there is no list to show.
	log::warning("tray", "{} has no owner and qsd could not take it: the tray is empty", kWatcherName);
	role_ = Role::None;
	calls_.cancel("host");
	registerRetry_.reset();
	listRetry_.reset();
	bury(std::move(otherWatcher_));
	otherOwner_.clear();
	listRead_ = false;
	std::vector<std::string> keys;
	for (const auto& [k, _]: items_) keys.push_back(k);
	for (const auto& k: keys) removeItem(k, "no watcher");
	updateAvailable();
}

void TrayBackend::readListed() {
	if (!otherWatcher_) return;
	calls_.start("host",
	             otherWatcher_->callMethodAsync("Get").onInterface(kPropsIface).withTimeout(kCallTimeout)
	                 .withArguments(std::string(kWatcherIface), std::string("RegisteredStatusNotifierItems")),
	             [this](const sdbus::Error* e, sdbus::Variant v) {
		             // A watcher that cannot list its items is still followed: the items that
		             // register from now on (its signals) are shown. One that did not answer in
		             // time is asked again.
		             auto list = e ? std::nullopt : dbus::asStrings(v);
		             if (e && timedOut(*e)) watcherLate(listRetry_, "RegisteredStatusNotifierItems", [this] { readListed(); });
		             else if (e) log::warning("tray", "reading {}'s items failed: {}: {}", otherOwner_, e->getName(), e->getMessage());
		             else if (!list) reader_.wrongType(kWatcherName, "RegisteredStatusNotifierItems", &v);
		             if (!e) listRetry_.reset();
		             if (list) syncListed(*list);
		             listRead_ = true;
		             updateAvailable();
	             });
}

void TrayBackend::syncListed(const std::vector<std::string>& entries) {
	std::set<std::string> keep;
	std::vector<ItemAddress> add;
	for (const auto& e: entries) {
		auto a = parseListed(e);
		if (!a) {
			log::warning("tray", "{} lists an invalid item \"{}\"; ignored", otherOwner_, e);
			continue;
		}
		keep.insert(a->key());
		add.push_back(*a);
	}
	std::vector<std::string> gone;
	for (const auto& [k, _]: items_)
		if (!keep.count(k)) gone.push_back(k);
	for (const auto& k: gone) removeItem(k, "no longer listed by the watcher");
	for (const auto& a: add) addItem(a, {});
}

void TrayBackend::onOtherWatcherSignal(sdbus::Message& msg) {
	try {
		if (role_ != Role::Host || msg.getSender() != otherOwner_) return;
		std::string member = msg.getMemberName();
		if (member == "PropertiesChanged") {
			auto change = dbus::PropertiesChanged::read(msg);
			if (change.interface != kWatcherIface) return;
			const auto& invalidated = change.invalidated;
			if (const auto* v = dbus::find(change.changed, "RegisteredStatusNotifierItems")) {
				if (auto list = dbus::asStrings(*v)) syncListed(*list);
			} else if (std::find(invalidated.begin(), invalidated.end(), "RegisteredStatusNotifierItems") != invalidated.end()) {
				readListed();
			}
			return;
		}
		if (member != "StatusNotifierItemRegistered" && member != "StatusNotifierItemUnregistered") return;
		std::string entry;
		msg >> entry;
		auto a = parseListed(entry);
		if (!a) return;
		if (member == "StatusNotifierItemRegistered") addItem(*a, {});
		else removeItem(a->key(), "unregistered by the watcher");
	} catch (const sdbus::Error& e) {
		log::warning("tray", "malformed signal from {}: {}", kWatcherName, e.getMessage());
	}
}

// ---------------------------------------------------------------------------------------------
// the watcher object

std::vector<std::string> TrayBackend::registeredItems() const { return order_; }

void TrayBackend::emitWatcher(const char* member, const std::string* arg) {
	if (!object_ || role_ != Role::Watcher) return;
	try {
		auto signal = object_->createSignal(kWatcherIface, member);
		if (arg) signal << *arg;
		object_->emitSignal(signal);
	} catch (const sdbus::Error& e) {
		log::warning("tray", "emitting {} failed: {}", member, e.getMessage());
	}
}

void TrayBackend::watcherItemsChanged() {
	// One PropertiesChanged with the whole list per loop pass, not per registration (tray_peers.cpp).
	if (!object_ || role_ != Role::Watcher) return;
	itemsChanged_ = saveNeeded_ = true;
	if (deferred_) deferred_.setEnabled(SD_EVENT_ONESHOT);
}

// ---------------------------------------------------------------------------------------------
// the list across qsd's restarts

void TrayBackend::adoptSavedItems() {
	if (savedPath_.empty() || busId_.empty() || role_ != Role::Watcher) return;
	auto text = readFile(savedPath_, kMaxSavedItemsFile);
	if (!text) return;
	for (auto& saved: parseSavedItems(*text, busId_)) {
		if (items_.count(saved.address.key())) continue;
		// Only while the same connection owns the service: the bus answers who owns it now.
		++adoptsOut_;
		calls_.start("adopt",
		             bus().daemon().callMethodAsync("GetNameOwner").onInterface("org.freedesktop.DBus")
		                 .withArguments(saved.address.service),
		             [this, saved](const sdbus::Error* e, std::string owner) {
			             --adoptsOut_;
			             if (!e && owner == saved.owner && role_ == Role::Watcher && !items_.count(saved.address.key()) &&
			                 addItem(saved.address, owner))
				             log::info("tray", "item {} taken back from qsd's last run", saved.address.key());
			             settle();
		             });
	}
}

void TrayBackend::saveItems() {
	saveNeeded_ = false;
	if (savedPath_.empty() || busId_.empty() || role_ != Role::Watcher) return;
	std::vector<SavedItem> list;
	for (const auto& key: order_)
		if (const Item* item = findItem(key); item && !item->owner.empty()) list.push_back({item->address, item->owner});
	writeKeptFile(savedPath_, savedItemsText(busId_, list), saveFailed_, "tray",
	              "items that register only once would be lost if qsd restarts");
}

namespace {

// While another process is the watcher, qsd's watcher object is still reachable through qsd's
// unique name (it is exported before the name is asked for, so that a call arriving the moment
// the name is granted finds it); registrations made there would put items in /tray behind the
// watcher's back.
sdbus::Error notTheWatcher() {
	return sdbus::Error("org.freedesktop.DBus.Error.Failed",
	                    std::string("qsd is not the StatusNotifierWatcher; register with the owner of ") + kWatcherName);
}

sdbus::Error tooMany(const std::string& connection) {
	return sdbus::Error("org.freedesktop.DBus.Error.LimitsExceeded",
	                    fmt::format("{} has {} items already (the limit)", connection, kMaxItemsPerConnection));
}

} // namespace

void TrayBackend::onRegisterItem(sdbus::MethodCall call) {
	std::string arg;
	call >> arg;
	std::string sender = call.getSender();
	if (role_ != Role::Watcher) throw notTheWatcher();
	auto a = parseRegistration(arg, sender);
	if (!a) {
		// Any application can send this in a loop, with an argument as long as a D-Bus message:
		// the log and the error carry a bounded part of it, the log at most peerLog_'s lines.
		auto shown = std::string(cutAtCharacter(arg, 256)) + (arg.size() > 256 ? "..." : "");
		uint64_t suppressed = 0;
		if (peerLog(suppressed))
			log::info("tray", "{} registered an invalid item \"{}\"{}", sender, shown,
			          log::heldBack(suppressed));
		throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", "\"" + shown + "\" is not a bus name or an object path");
	}
	// Registering a key again is harmless.
	if (items_.count(a->key())) {
		call.createReply().send();
		return;
	}
	// A registration counts against the connection that makes it, whoever's name it gives: one
	// connection naming another's unique name with made-up paths once filled that connection's
	// share (its real item was refused) and was never limited itself.
	if (overItemLimit(sender, a->key())) throw tooMany(sender);
	// The caller's own name (a path registration or its unique name): its owner is the caller.
	if (a->service == sender) {
		addItem(*a, sender);
		call.createReply().send();
		return;
	}
	// Another name: answer once the bus says who owns it (the registration is refused when
	// nobody does, as KDE's watcher refuses it).
	auto address = *a;
	calls_.start("register",
	             bus().daemon().callMethodAsync("GetNameOwner").onInterface("org.freedesktop.DBus").withArguments(a->service),
	             [this, call, address, sender](const sdbus::Error* e, std::string owner) {
		             if (e) {
			             log::info("tray", "{} registered {}, which has no owner", sender, address.service);
			             call.createErrorReply(sdbus::Error("org.freedesktop.DBus.Error.NameHasNoOwner",
			                                                address.service + " has no owner"))
			                 .send();
			             return;
		             }
		             if (role_ != Role::Watcher) {
			             call.createErrorReply(notTheWatcher()).send();
			             return;
		             }
		             if (!items_.count(address.key())) {
			             // Both counts again: other registrations were answered meanwhile. An
			             // item registered for another connection counts against that one only
			             // once it answered for it (readSucceeded).
			             std::string registrar = owner == sender ? std::string() : sender;
			             for (const auto* connection: {&registrar, &owner})
				             if (!connection->empty() && overItemLimit(*connection, address.key())) {
					             call.createErrorReply(tooMany(*connection)).send();
					             return;
				             }
			             addItem(address, owner, registrar);
		             }
		             call.createReply().send();
	             });
}

void TrayBackend::onRegisterHost(sdbus::MethodCall call) {
	std::string arg;
	call >> arg;
	std::string sender = call.getSender();
	if (role_ != Role::Watcher) throw notTheWatcher();
	std::string name = arg.empty() || arg[0] == '/' ? sender : arg;
	if (!isValidBusName(name)) throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", "\"" + arg + "\" is not a bus name");
	// Kept per calling connection, which is what goes away (a name nobody owns never does).
	uint64_t suppressed = 0;
	switch (hosts_.add(sender, name)) {
	case HostRegistry::Result::Added:
		if (peerLog(suppressed)) log::info("tray", "host {} registered by {}{}", name, sender, log::heldBack(suppressed));
		hostsChanged(true);
		break;
	case HostRegistry::Result::Known:
		break;
	case HostRegistry::Result::TooMany:
		if (peerLog(suppressed)) log::warning("tray", "{} registered more than {} hosts; refused", sender, kMaxHostsPerConnection);
		throw sdbus::Error("org.freedesktop.DBus.Error.LimitsExceeded",
		                   fmt::format("{} has registered {} hosts already (the limit)", sender, kMaxHostsPerConnection));
	}
	call.createReply().send();
}

void TrayBackend::onNameOwnerChanged(const std::string& name, const std::string&, const std::string& newOwner) {
	if (auto it = services_.find(name); it != services_.end()) {
		std::vector<std::string> gone;
		for (const auto& key: it->second) {
			auto i = items_.find(key);
			if (i == items_.end()) continue;
			// Gone, or the name moved to another process (which must register anew).
			if (newOwner.empty() || (!i->second.owner.empty() && newOwner != i->second.owner)) gone.push_back(key);
		}
		for (const auto& key: gone) removeItem(key, "left the bus");
	}
	if (newOwner.empty())
		for (const auto& host: hosts_.nameLeft(name)) {
			uint64_t suppressed = 0;
			if (peerLog(suppressed)) log::info("tray", "host {} left", host);
			hostsChanged(false);
		}
}

void TrayBackend::updateAvailable() {
	bool known = roleKnown();
	// `available` says the domain is complete, as every backend's does: a client that does not
	// follow /daemon/backends ends its restart hold on it, so it turns true with `running` the
	// first time (settle()), not as the role is known.
	context_.tree.set("/tray/available", known && settled_);
	context_.tree.set("/tray/isWatcher", role_ == Role::Watcher);
	if (known && settled_) setState(BackendState::Running);
	else if (known) settle();
	else if (role_ == Role::Host) setState(BackendState::Starting);
}

// Clients keep /tray as it was across a reconnect until the backend runs: said as qsd became the
// watcher, before the items of its last run (or another watcher's list) were read again, it
// emptied every bar's tray at each restart of qsd, and closed an open menu. So the first time,
// the items known then are waited for: the saved list (each entry's owner asked), every
// item being read (those of the list, and any that registered meanwhile), kStartWait at most
// from the moment the role was known.
void TrayBackend::settle() {
	if (settled_ || !roleKnown()) return;
	if (!startWait_ && !waitedEnough_)
		startWait_ = context_.loop.addTimer(
		    kStartWait,
		    [this] {
			    waitedEnough_ = true;
			    log::info("tray", "items still being read {} s after start; running without them", kStartWait.count());
			    settle();
		    },
		    "tray-start-wait");
	if (!waitedEnough_ && (unsettled_ > 0 || (role_ == Role::Watcher && adoptsOut_ > 0))) return;
	settled_ = true;
	startWait_.reset();
	context_.tree.set("/tray/available", true);
	setState(BackendState::Running);
}

void TrayBackend::itemSettled(Item& item) {
	if (item.settled) return;
	item.settled = true;
	--unsettled_;
	settle();
}

} // namespace qsd::tray

namespace qsd {
std::unique_ptr<Backend> createTrayBackend(BackendContext& context) { return std::make_unique<tray::TrayBackend>(context); }
} // namespace qsd
