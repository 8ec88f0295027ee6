// The tray backend's start-up and its two roles: the session's StatusNotifierWatcher, or a
// host of another watcher until that one leaves.
//
// D-Bus discipline (DESIGN.md, "One thread, one loop"): the blocking D-Bus work is done once in
// start(): the AddMatch of a few broad signal matches (item and menu signals are dispatched
// here by sender and path, so no match is added per item later) and of the watcher name's
// NameWatcher, and the Hello behind our unique name. Everything after is asynchronous: owning
// the names is an async RequestName, every item and menu call is tracked in a dbus::CallSet
// grouped per item, and the exported watcher object only queues replies and signals.
//
// Owning the watcher name: RequestName with neither REPLACE_EXISTING (polite: an existing
// watcher is never replaced) nor ALLOW_REPLACEMENT (a bar that asks to replace qsd is refused
// and becomes a host of qsd, so the list outlives it), and without DO_NOT_QUEUE: qsd waits in
// the name's queue, and when the watcher that owns it leaves, the bus hands the name to qsd in
// the same step (NameOwnerChanged old -> qsd), with no moment in which no watcher exists. That
// NameOwnerChanged, seen through the NameWatcher, is how qsd learns it is the watcher; it says
// what NameAcquired/NameLost would, and also who the owner is when it is not qsd.

#include "tray_backend.hpp"

#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <unistd.h>

namespace qsd::tray {

using json = nlohmann::json;

namespace {
// RequestName flags (D-Bus specification): ALLOW_REPLACEMENT 1 and REPLACE_EXISTING 2 are never
// used (see above); the host name is not worth waiting for.
constexpr uint32_t kDoNotQueue = 4;
} // namespace

TrayBackend::TrayBackend(BackendContext& context): Backend(context) {}

TrayBackend::~TrayBackend() { stop(); }

void TrayBackend::start() {
	if (started_) return;
	started_ = true;
	context_.tree.set(kRoot, {{"available", false}, {"isWatcher", false}, {"items", json::object()}});
	registerMethods();
	if (!context_.sessionBus) {
		setState(BackendState::Failed, "no session bus connection");
		return;
	}
	setState(BackendState::Starting);
	conn_ = &context_.sessionBus->connection();

	setupIcons();

	deferred_ = context_.loop.addDefer([this] { runDeferred(); }, "tray-deferred");
	deferred_.setEnabled(SD_EVENT_OFF);
	reaper_ = context_.loop.addDefer([this] { graveyard_.clear(); }, "tray-reaper");
	reaper_.setEnabled(SD_EVENT_OFF);

	// Start-up only: the first unique-name read waits for the bus's Hello reply.
	unique_ = conn_->getUniqueName();
	hostName_ = "org.kde.StatusNotifierHost-" + std::to_string(::getpid());
	busProxy_ = sdbus::createProxy(*conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus");

	installMatches();
	exportWatcher();
	watcherName_ = std::make_unique<NameWatcher>(
	    *conn_, kWatcherName, [this](const std::string&) { watcherOwnerChanged(); }, [this] { watcherOwnerChanged(); });
	requestNames();
}

void TrayBackend::stop() {
	if (!started_) return;
	started_ = false;
	methods_.clear();
	calls_.cancelAll();
	matches_.clear();
	watcherName_.reset();
	if (object_ && busProxy_) {
		// Let the name go now rather than when the connection closes: a watcher queued behind
		// qsd takes over at once. Sent without waiting for a reply.
		try {
			auto m = busProxy_->createMethodCall("org.freedesktop.DBus", "ReleaseName");
			m << std::string(kWatcherName);
			m.dontExpectReply();
			busProxy_->callMethod(m);
		} catch (const sdbus::Error& e) {
			log::debug("tray", "releasing {} failed: {}", kWatcherName, e.getMessage());
		}
	}
	object_.reset();
	items_.clear();
	itemsPerOwner_.clear();
	hosts_ = HostRegistry();
	order_.clear();
	services_.clear();
	itemSignals_.clear();
	menuSignals_.clear();
	refreshQueue_.clear();
	menuQueue_.clear();
	publishQueue_.clear();
	otherWatcher_.reset();
	busProxy_.reset();
	graveyard_.clear();
	deferred_.reset();
	reaper_.reset();
	dropIcons();
	role_ = Role::None;
	context_.tree.remove(kRoot);
	setState(BackendState::Stopped);
}

void TrayBackend::installMatches() {
	// Broad matches, installed once: AddMatch is a blocking call in sdbus-c++ 1.2, so there is
	// none per item. Each handler finds its item by (sender, path).
	matches_.push_back(conn_->addMatch(fmt::format("type='signal',interface='{}'", kItemIface),
	                                   [this](sdbus::Message& m) { onItemSignal(m); }));
	matches_.push_back(conn_->addMatch(fmt::format("type='signal',interface='{}'", kMenuIface),
	                                   [this](sdbus::Message& m) { onMenuSignal(m); }));
	// Items and hosts go when their bus names go. Every NameOwnerChanged: the set of names is
	// not known in advance and adding a match per name would block.
	matches_.push_back(conn_->addMatch("type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
	                                   "interface='org.freedesktop.DBus',member='NameOwnerChanged'",
	                                   [this](sdbus::Message& m) { onNameOwnerChanged(m); }));
	// The other watcher's signals, while qsd is its host (sender= the name: the bus checks the
	// current owner; the handler checks it is the one qsd hosts).
	matches_.push_back(conn_->addMatch(
	    fmt::format("type='signal',sender='{}',path='{}',interface='{}'", kWatcherName, kWatcherPath, kWatcherIface),
	    [this](sdbus::Message& m) { onOtherWatcherSignal(m); }));
	matches_.push_back(conn_->addMatch(fmt::format("type='signal',sender='{}',path='{}',interface='{}',member='PropertiesChanged'",
	                                               kWatcherName, kWatcherPath, kPropsIface),
	                                   [this](sdbus::Message& m) { onOtherWatcherSignal(m); }));
}

void TrayBackend::exportWatcher() {
	// Exported from the start, whatever the role: the object is only reachable through the
	// well-known name once qsd owns it (before that, only through qsd's unique name).
	object_ = sdbus::createObject(*conn_, kWatcherPath);
	object_->registerMethod(kWatcherIface, "RegisterStatusNotifierItem", "s", {"service"}, "", {},
	                        [this](sdbus::MethodCall call) { onRegisterItem(std::move(call)); });
	object_->registerMethod(kWatcherIface, "RegisterStatusNotifierHost", "s", {"service"}, "", {},
	                        [this](sdbus::MethodCall call) { onRegisterHost(std::move(call)); });
	object_->registerProperty(kWatcherIface, "RegisteredStatusNotifierItems", "as",
	                          [this](sdbus::PropertyGetReply& reply) { reply << registeredItems(); });
	// qsd is a host itself, so there always is one.
	object_->registerProperty(kWatcherIface, "IsStatusNotifierHostRegistered", "b",
	                          [](sdbus::PropertyGetReply& reply) { reply << true; });
	object_->registerProperty(kWatcherIface, "ProtocolVersion", "i",
	                          [](sdbus::PropertyGetReply& reply) { reply << int32_t(0); });
	object_->registerSignal(kWatcherIface, "StatusNotifierItemRegistered", "s", {"service"});
	object_->registerSignal(kWatcherIface, "StatusNotifierItemUnregistered", "s", {"service"});
	object_->registerSignal(kWatcherIface, "StatusNotifierHostRegistered", "");
	object_->registerSignal(kWatcherIface, "StatusNotifierHostUnregistered", "");
	object_->finishRegistration();
}

void TrayBackend::requestNames() {
	calls_.start("names",
	             busProxy_->callMethodAsync("RequestName").onInterface("org.freedesktop.DBus")
	                 .withArguments(std::string(kWatcherName), uint32_t(0)),
	             [this](const sdbus::Error* e, uint32_t reply) {
		             if (e) {
			             log::warning("tray", "cannot own {}: {}: {}; qsd can only be a host", kWatcherName, e->getName(),
			                          e->getMessage());
			             if (role_ == Role::None) setState(BackendState::Unavailable, "cannot own " + std::string(kWatcherName));
			             return;
		             }
		             // 1: owner; 2: queued behind another watcher (qsd hosts it and takes over
		             // when it leaves); 4: already owner.
		             if (reply == 2)
			             log::info("tray", "another StatusNotifierWatcher is running; qsd is its host and takes over when it leaves");
	             });
	calls_.start("names",
	             busProxy_->callMethodAsync("RequestName").onInterface("org.freedesktop.DBus")
	                 .withArguments(hostName_, uint32_t(kDoNotQueue)),
	             [this](const sdbus::Error* e, uint32_t) {
		             if (e) log::warning("tray", "cannot own {}: {}", hostName_, e->getMessage());
	             });
}

// ---------------------------------------------------------------------------------------------
// roles

void TrayBackend::watcherOwnerChanged() {
	if (!watcherName_) return;
	const auto& owner = watcherName_->owner();
	if (owner.empty()) becomeNone();
	else if (owner == unique_) becomeWatcher();
	else becomeHost(owner);
}

void TrayBackend::becomeWatcher() {
	if (role_ == Role::Watcher) return;
	bool takeover = role_ == Role::Host;
	role_ = Role::Watcher;
	calls_.cancel("host");
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
	updateAvailable();
}

void TrayBackend::becomeHost(const std::string& owner) {
	if (role_ == Role::Host && owner == otherOwner_) return;
	role_ = Role::Host;
	calls_.cancel("host");
	bury(std::move(otherWatcher_));
	otherOwner_ = owner;
	listRead_ = false;
	log::info("tray", "{} is owned by {}: qsd is its host", kWatcherName, owner);
	otherWatcher_ = sdbus::createProxy(*conn_, owner, kWatcherPath);
	calls_.start("host",
	             otherWatcher_->callMethodAsync("RegisterStatusNotifierHost").onInterface(kWatcherIface)
	                 .withTimeout(kCallTimeout).withArguments(hostName_),
	             [this](const sdbus::Error* e) {
		             if (e) log::warning("tray", "RegisterStatusNotifierHost on {} failed: {}: {}", otherOwner_, e->getName(),
		                                 e->getMessage());
	             });
	readListed();
	updateAvailable();
}

void TrayBackend::becomeNone() {
	if (role_ == Role::None) return;
	// Nobody owns the name and qsd did not get it: qsd is not in the name's queue (RequestName
	// failed). Without a watcher there is no list to show.
	log::warning("tray", "{} has no owner and qsd could not take it: the tray is empty", kWatcherName);
	role_ = Role::None;
	calls_.cancel("host");
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
		             // register from now on (its signals) are shown.
		             auto list = e ? std::nullopt : dbus::asStrings(v);
		             if (e) log::warning("tray", "reading {}'s items failed: {}: {}", otherOwner_, e->getName(), e->getMessage());
		             else if (!list) reader_.wrongType(kWatcherName, "RegisteredStatusNotifierItems", &v);
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
			std::string iface;
			dbus::Properties changed;
			std::vector<std::string> invalidated;
			msg >> iface >> changed >> invalidated;
			if (iface != kWatcherIface) return;
			if (const auto* v = dbus::find(changed, "RegisteredStatusNotifierItems")) {
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
	itemsChanged_ = true;
	if (deferred_) deferred_.setEnabled(SD_EVENT_ONESHOT);
}

void TrayBackend::onRegisterItem(sdbus::MethodCall call) {
	std::string arg;
	call >> arg;
	std::string sender = call.getSender();
	auto a = parseRegistration(arg, sender);
	if (!a) {
		log::info("tray", "{} registered an invalid item \"{}\"", sender, arg);
		throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", "\"" + arg + "\" is not a bus name or an object path");
	}
	// The caller's own name (a path registration or its unique name): its owner is the caller.
	if (a->service == sender || items_.count(a->key())) {
		if (!items_.count(a->key()) && overItemLimit(sender, a->key()))
			throw sdbus::Error("org.freedesktop.DBus.Error.LimitsExceeded",
			                   fmt::format("{} has {} items already (the limit)", sender, kMaxItemsPerConnection));
		addItem(*a, sender);
		call.createReply().send();
		return;
	}
	// A well-known name: answer once the bus says who owns it (the registration is refused when
	// nobody does, as KDE's watcher refuses it).
	auto address = *a;
	calls_.start("register",
	             busProxy_->callMethodAsync("GetNameOwner").onInterface("org.freedesktop.DBus").withArguments(a->service),
	             [this, call, address](const sdbus::Error* e, std::string owner) {
		             if (e) {
			             log::info("tray", "{} registered {}, which has no owner", call.getSender(), address.service);
			             call.createErrorReply(sdbus::Error("org.freedesktop.DBus.Error.NameHasNoOwner",
			                                                address.service + " has no owner"))
			                 .send();
			             return;
		             }
		             if (!items_.count(address.key()) && overItemLimit(owner, address.key())) {
			             call.createErrorReply(sdbus::Error("org.freedesktop.DBus.Error.LimitsExceeded",
			                                                fmt::format("{} has {} items already (the limit)", owner,
			                                                            kMaxItemsPerConnection)))
			                 .send();
			             return;
		             }
		             addItem(address, owner);
		             call.createReply().send();
	             });
}

void TrayBackend::onRegisterHost(sdbus::MethodCall call) {
	std::string arg;
	call >> arg;
	std::string sender = call.getSender();
	std::string name = arg.empty() || arg[0] == '/' ? sender : arg;
	if (!isValidBusName(name)) throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", "\"" + arg + "\" is not a bus name");
	// Kept per calling connection, which is what goes away (a name nobody owns never does).
	uint64_t suppressed = 0;
	switch (hosts_.add(sender, name)) {
	case HostRegistry::Result::Added:
		if (peerLog(suppressed)) log::info("tray", "host {} registered by {}{}", name, sender, suppressed ? fmt::format(" ({} more registrations and refusals not logged)", suppressed) : "");
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

void TrayBackend::onNameOwnerChanged(sdbus::Message& msg) {
	try {
		std::string name, oldOwner, newOwner;
		msg >> name >> oldOwner >> newOwner;
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
	} catch (const sdbus::Error& e) {
		log::warning("tray", "malformed NameOwnerChanged: {}", e.getMessage());
	}
}

void TrayBackend::updateAvailable() {
	bool available = role_ == Role::Watcher || (role_ == Role::Host && listRead_);
	context_.tree.set("/tray/available", available);
	context_.tree.set("/tray/isWatcher", role_ == Role::Watcher);
	if (available) setState(BackendState::Running);
	else if (role_ == Role::Host) setState(BackendState::Starting);
}

} // namespace qsd::tray

namespace qsd {
std::unique_ptr<Backend> createTrayBackend(BackendContext& context) { return std::make_unique<tray::TrayBackend>(context); }
} // namespace qsd
