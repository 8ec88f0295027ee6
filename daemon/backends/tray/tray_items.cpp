// Items: registration bookkeeping, reading an item completely before it appears, the change
// signals (coalesced: every signal of one dispatch marks properties dirty, one deferred pass
// re-reads them), and publishing /tray/items/<key>.

#include "tray_backend.hpp"
#include "wire.hpp"

#include "../../log.hpp"

#include <qsd/protocol/mirror.hpp>

#include <algorithm>

namespace qsd::tray {

using json = nlohmann::json;

namespace {

// A read error that says nothing answers for the item at its path: no such object, no
// properties interface or no StatusNotifierItem there, or the connection is gone. What sd-bus
// and Qt (UnknownObject), GDBus and libdbus (UnknownMethod) answer for a path they do not serve.
bool nothingThere(const sdbus::Error& e) {
	const auto& name = e.getName();
	return name == "org.freedesktop.DBus.Error.UnknownObject" || name == "org.freedesktop.DBus.Error.UnknownMethod" ||
	       name == "org.freedesktop.DBus.Error.UnknownInterface" || name == "org.freedesktop.DBus.Error.ServiceUnknown";
}

// Pixmap data in one answer beyond which qsd asks for the heap to be trimmed: of all it held,
// only the entry the icon is made of is kept (wire.cpp), and glibc would keep the rest of the
// message's memory (an item's 28 MiB answers left qsd 28 MiB larger).
constexpr size_t kLargePixmaps = 1u << 20;

bool affectsIcon(const std::string& prop) {
	return prop == "IconName" || prop == "IconPixmap" || prop == "AttentionIconName" || prop == "AttentionIconPixmap" ||
	       prop == "OverlayIconName" || prop == "OverlayIconPixmap" || prop == "IconThemePath" || prop == "Status";
}

} // namespace

std::string TrayBackend::itemPath(const std::string& key) { return pointer::join(kItems, key); }

TrayBackend::Item* TrayBackend::findItem(const std::string& key, uint64_t serial) {
	auto it = items_.find(key);
	if (it == items_.end() || (serial && it->second.serial != serial)) return nullptr;
	return &it->second;
}

// ---------------------------------------------------------------------------------------------
// registration

bool TrayBackend::addItem(const ItemAddress& address, std::string owner, std::string registrar) {
	auto key = address.key();
	if (items_.count(key)) return false;
	if (address.service[0] == ':') owner = address.service;
	if (registrar == owner) registrar.clear();
	if (!registrar.empty() && overItemLimit(registrar, key)) return false;
	if (!owner.empty() && overItemLimit(owner, key)) return false;
	// The same object under a second key (an app registering by name and by path): one icon.
	if (!owner.empty() && itemSignals_.count(signalIndex(owner, address.path))) {
		log::info("tray", "{} is the item {} again; not added twice", key, itemSignals_[signalIndex(owner, address.path)]);
		return false;
	}
	auto& item = items_[key];
	++unsettled_;   // until published, or its first read failed (itemSettled)
	item.address = address;
	item.key = key;
	item.serial = nextSerial_++;
	item.registrar = std::move(registrar);
	if (!item.registrar.empty()) chargeItem(item.registrar);
	services_[address.service].insert(key);
	order_.push_back(key);
	log::info("tray", "item {} registered", key);
	if (!owner.empty()) {
		item.owner = owner;
		ownerKnown(item);
	} else {
		auto serial = item.serial;
		calls_.start(group(key),
		             bus().daemon().callMethodAsync("GetNameOwner").onInterface("org.freedesktop.DBus").withArguments(address.service),
		             [this, key, serial](const sdbus::Error* e, std::string found) {
			             Item* it = findItem(key, serial);
			             if (!it) return;
			             if (e) {
				             removeItem(key, "its bus name has no owner");
				             return;
			             }
			             if (itemSignals_.count(signalIndex(found, it->address.path))) {
				             removeItem(key, "a second key for an item already listed");
				             return;
			             }
			             if (overItemLimit(found, key)) {
				             removeItem(key, "its connection has too many items");
				             return;
			             }
			             it->owner = found;
			             ownerKnown(*it);
		             });
	}
	if (role_ == Role::Watcher) {
		emitWatcher("StatusNotifierItemRegistered", &key);
		watcherItemsChanged();
	}
	return true;
}

void TrayBackend::removeItem(const std::string& key, const char* why) {
	auto it = items_.find(key);
	if (it == items_.end()) return;
	auto& item = it->second;
	log::info("tray", "item {} removed: {}", key, why);
	if (item.ownerCharged) releaseItem(item.owner);
	if (!item.registrar.empty()) releaseItem(item.registrar);
	calls_.cancelPrefix(group(key));
	if (!item.owner.empty()) {
		auto s = itemSignals_.find(signalIndex(item.owner, item.address.path));
		if (s != itemSignals_.end() && s->second == key) itemSignals_.erase(s);
	}
	dropMenu(item);
	if (auto s = services_.find(item.address.service); s != services_.end()) {
		s->second.erase(key);
		if (s->second.empty()) services_.erase(s);
	}
	order_.erase(std::remove(order_.begin(), order_.end(), key), order_.end());
	bury(std::move(item.proxy));
	bool published = item.published;
	if (published) context_.tree.remove(itemPath(key));
	if (!item.settled) --unsettled_;
	reader_.forget(key);
	pixmaps_.release(key);
	// What was indexed of the item's own icon trees goes with it ("": it had none, and forget("")
	// would drop every item's).
	if (const auto* p = dbus::find(item.props, "IconThemePath"); p && theme_)
		if (auto path = dbus::asString(*p).value_or(""); !path.empty()) theme_->forget(path);
	if (store_) store_->forget(iconPayer(item));
	// Out of the order in the same change as out of the items (the others keep their order).
	if (const json* order = context_.tree.find("/tray/order"); published && order && order->is_array()) {
		json rest = json::array();
		for (const auto& k: *order)
			if (k != key) rest.push_back(k);
		if (rest.size() != order->size()) context_.tree.set("/tray/order", std::move(rest));
	}
	// Last: the item's icon files are released (and deleted) with it.
	items_.erase(it);
	if (role_ == Role::Watcher) {
		emitWatcher("StatusNotifierItemUnregistered", &key);
		watcherItemsChanged();
	}
	settle();   // the start may have waited for it
}

void TrayBackend::keepPixmaps(Item& item) {
	auto dropped = pixmaps_.keep(item.key, iconPayer(item), item.pixmaps);
	if (dropped.empty() || !item.warned.insert("pixmap budget").second) return;
	uint64_t suppressed = 0;
	if (peerLog(suppressed))
		log::warning("tray", "{}: its pixmaps would take more than {} KiB of its connection's (or {} KiB of every item's); {} not kept{}",
		             item.key, pixmaps_.limits().maxOwnerBytes >> 10, pixmaps_.limits().maxBytes >> 10,
		             fmt::join(dropped, ", "), log::heldBack(suppressed));
}

void TrayBackend::ownerKnown(Item& item) {
	// Registered by its owner (or listed by a watcher): counted against the owner at once. One
	// that another connection registered counts against the owner once it answered for it.
	if (item.registrar.empty()) {
		chargeItem(item.owner);
		item.ownerCharged = true;
	}
	itemSignals_[signalIndex(item.owner, item.address.path)] = item.key;
	// Calls go to the owner's unique name: the process this item belongs to, whatever happens
	// to a well-known name later (a new owner is a new item and must register).
	item.proxy = sdbus::createProxy(conn(), item.owner, item.address.path);
	readItem(item);
	// The saved list names each item's owner (known only now for a well-known name).
	if (role_ == Role::Watcher) {
		saveNeeded_ = true;
		deferred_.setEnabled(SD_EVENT_ONESHOT);
	}
}

// ---------------------------------------------------------------------------------------------
// reading

void TrayBackend::readItem(Item& item) {
	item.reading = true;
	item.failed = false;
	auto key = item.key;
	auto serial = item.serial;
	// Raw calls: the replies are read by wire.hpp (pixmaps decoded in bulk).
	auto call = item.proxy->createMethodCall(kPropsIface, "GetAll");
	call << std::string(kItemIface);
	calls_.start(
	    group(key), *item.proxy, call,
	    [this, key, serial](sdbus::MethodReply* reply, const sdbus::Error* e) {
		    Item* it = findItem(key, serial);
		    if (!it) return;
		    std::string why = e ? e->getName() + ": " + e->getMessage() : std::string();
		    if (reply) {
			    dbus::Properties props;
			    ItemPixmaps pixmaps;
			    try {
				    if (readProperties(*reply, props, pixmaps) >= kLargePixmaps) context_.server.heapFreed();
				    it->reading = false;
				    if (!readSucceeded(*it)) return;
				    it->props = std::move(props);
				    it->pixmaps = std::move(pixmaps);
				    keepPixmaps(*it);
				    propertiesRead(*it, true);
				    return;
			    } catch (const sdbus::Error& x) {
				    why = x.getMessage();
			    }
		    }
		    // Nothing there: reading each property would only get the same answer, fifteen times
		    // (for each path any connection made up).
		    if (e && (nothingThere(*e) || notPassedOn(*e))) {
			    it->reading = false;
			    if (nothingThere(*e)) readAbsent(*it);
			    else retryRead(*it);
			    return;
		    }
		    // Some items fail GetAll as a whole (one property's getter throws), or never answer it
		    // while they answer Get: read what can be read, one property at a time.
		    log::info("tray", "{}: GetAll failed ({}); reading its properties one by one", key, why);
		    readItemByProperty(key, serial);
	    },
	    kCallTimeout);
}

bool TrayBackend::readSucceeded(Item& item) {
	item.readRetry.reset();
	item.absentRetry.reset();
	if (item.ownerCharged) return true;
	// Its owner answered for it: from now on it counts against the owner too.
	if (overItemLimit(item.owner, item.key)) {
		std::string key = item.key;   // removeItem erases the item that holds it
		removeItem(key, "its connection has too many items");
		return false;
	}
	chargeItem(item.owner);
	item.ownerCharged = true;
	return true;
}

void TrayBackend::readAbsent(Item& item) {
	// Not an item: no object answers at its path. Asked again a few times (an app may register a
	// moment before it exports the object; a signal from it, a sign of life, reads it at once),
	// then dropped, which gives its place back to whoever registered it.
	item.failed = true;
	itemSettled(item);
	auto delay = item.absentRetry.schedule(
	    context_.loop,
	    [this, key = item.key, serial = item.serial] {
		    Item* it = findItem(key, serial);
		    if (it && it->failed && it->proxy) readItem(*it);
	    },
	    "tray-item-absent");
	if (!delay) {
		// A copy: removeItem erases the item that holds item.key, and goes on using its key.
		std::string key = item.key;
		removeItem(key, "nothing answers for it at its path");
		return;
	}
	log::info("tray", "{}: nothing answers for it at its path; asking again in {} s", item.key, wholeSeconds(*delay));
}

void TrayBackend::retryRead(Item& item) {
	// Meanwhile the item counts as failed: a signal from it (a sign of life) reads it at once.
	item.failed = true;
	itemSettled(item);
	auto delay = item.readRetry.schedule(
	    context_.loop,
	    [this, key = item.key, serial = item.serial] {
		    Item* it = findItem(key, serial);
		    if (it && it->failed && it->proxy) readItem(*it);
	    },
	    "tray-item-retry");
	if (!delay) {
		log::warning("tray", "{}: it did not answer {} reads of its properties in time; not shown until it sends a signal",
		             item.key, item.readRetry.failures() + 1);
		return;
	}
	log::at(item.readRetry.level(log::Level::Info), "tray", "{}: reading its properties timed out; asking again in {} s",
	        item.key, wholeSeconds(*delay));
}

// A re-read that did not answer in time (the application busy for a moment) or that the bus
// did not pass on: the old value stays shown, and the property is read again with backoff. It
// was only logged before, and the old title or icon stayed until the item signalled that
// property again.
void TrayBackend::refreshLater(Item& item, const std::string& prop) {
	item.dirty.insert(prop);
	if (item.refreshRetry.pending()) return;   // read again with the others
	auto delay = item.refreshRetry.schedule(
	    context_.loop,
	    [this, key = item.key, serial = item.serial] {
		    Item* it = findItem(key, serial);
		    if (!it || it->dirty.empty()) return;
		    refreshQueue_.insert(key);
		    deferred_.setEnabled(SD_EVENT_ONESHOT);
	    },
	    "tray-refresh-retry");
	if (!delay) {
		log::warning("tray", "{}: re-reading {} did not answer {} times; the old value stays until the item signals it again",
		             item.key, prop, item.refreshRetry.failures());
		item.refreshRetry.reset();
		return;
	}
	log::at(item.refreshRetry.level(log::Level::Info), "tray", "{}: re-reading {} did not answer; the old value stays, asking again in {} s",
	        item.key, prop, wholeSeconds(*delay));
}

void TrayBackend::readItemByProperty(const std::string& key, uint64_t serial) {
	Item* item = findItem(key, serial);
	if (!item) return;
	struct Batch {
		size_t left = kShownItemProperties.size();
		dbus::Properties props;
		ItemPixmaps pixmaps;
		bool any = false;
		bool late = false;   // some Get did not answer in time
		size_t absent = 0;   // Gets answered with an error saying nothing is there (nothingThere)
	};
	auto batch = std::make_shared<Batch>();
	// The shown properties, one by one (the others would be skipped unread).
	for (std::string_view name: kShownItemProperties) {
		std::string prop(name);
		auto call = item->proxy->createMethodCall(kPropsIface, "Get");
		call << std::string(kItemIface) << prop;
		calls_.start(
		    group(key), *item->proxy, call,
		    [this, key, serial, batch, prop](sdbus::MethodReply* reply, const sdbus::Error* e) {
			    if (e && (timedOut(*e) || notPassedOn(*e))) batch->late = true;
			    if (e && nothingThere(*e)) ++batch->absent;
			    if (reply) {
				    try {
					    if (readProperty(*reply, prop, batch->props, batch->pixmaps) >= kLargePixmaps) context_.server.heapFreed();
					    batch->any = true;
				    } catch (const sdbus::Error&) {
				    }
			    }
			    if (--batch->left > 0) return;
			    Item* it = findItem(key, serial);
			    if (!it) return;
			    it->reading = false;
			    if (!batch->any && batch->late) {
				    // Nothing could be read, and not all for lack of the properties: an app busy
				    // while the session starts.
				    retryRead(*it);
				    return;
			    }
			    if (batch->absent == kShownItemProperties.size()) {
				    readAbsent(*it);
				    return;
			    }
			    if (!batch->any) {
				    // Retried when the item shows signs of life (any of its signals).
				    it->failed = true;
				    log::warning("tray", "{}: none of its properties can be read; not shown", key);
				    itemSettled(*it);
				    return;
			    }
			    if (!readSucceeded(*it)) return;
			    it->props = std::move(batch->props);
			    it->pixmaps = std::move(batch->pixmaps);
			    keepPixmaps(*it);
			    propertiesRead(*it, true);
		    },
		    kCallTimeout);
	}
}

void TrayBackend::propertiesRead(Item& item, bool iconsChanged) {
	item.read = true;
	if (iconsChanged) item.iconsDirty = true;
	auto menuPath = menuPathOf(item.props);
	if (menuPath.empty()) dropMenu(item);
	else if (!item.menu || item.menu->path != menuPath) setupMenu(item, menuPath);
	queuePublish(item);
}

// ---------------------------------------------------------------------------------------------
// change signals

void TrayBackend::onItemSignal(sdbus::Message& msg) {
	try {
		auto found = itemSignals_.find(signalIndex(msg.getSender(), msg.getPath()));
		if (found == itemSignals_.end()) return;
		Item* item = findItem(found->second);
		if (!item) return;
		std::string member = msg.getMemberName();
		if (member == "NewStatus" && item->read && !item->reading) {
			// NewStatus carries the new status: no call needed.
			std::string type, contents;
			msg.peekType(type, contents);
			if (type == "s") {
				std::string status;
				msg >> status;
				item->props["Status"] = keptText(status);
				item->iconsDirty = true;
				queuePublish(*item);
				return;
			}
		}
		auto props = propertiesOfSignal(member);
		if (!props.empty()) queueRefresh(*item, props);
	} catch (const sdbus::Error& e) {
		// An item can send these in a loop: peerLog_'s lines at most.
		uint64_t suppressed = 0;
		if (peerLog(suppressed))
			log::warning("tray", "malformed item signal from {}: {}{}", msg.getSender(), e.getMessage(),
			             log::heldBack(suppressed));
	}
}

void TrayBackend::queueRefresh(Item& item, const std::vector<std::string>& props) {
	// While the full read is out, its answer is newer than this signal.
	if (item.reading) return;
	if (!item.read) {
		if (item.failed && item.proxy) readItem(item);
		return;
	}
	item.dirty.insert(props.begin(), props.end());
	refreshQueue_.insert(item.key);
	deferred_.setEnabled(SD_EVENT_ONESHOT);
}

void TrayBackend::queuePublish(Item& item) {
	publishQueue_.insert(item.key);
	deferred_.setEnabled(SD_EVENT_ONESHOT);
}

void TrayBackend::runDeferred() {
	// Each queue is taken whole first: handling one entry may queue more (for the next pass).
	auto take = [](std::set<std::string>& q) {
		std::set<std::string> out;
		out.swap(q);
		return out;
	};
	// One item's failure stays its own: the queues were taken whole, and an exception out of the
	// pass would have dropped the other items' work, the order and the watcher's signals with it.
	auto each = [this](const std::set<std::string>& keys, const char* what, auto&& f) {
		for (const auto& key: keys) {
			Item* item = findItem(key);
			if (!item) continue;
			try {
				f(*item);
			} catch (const std::exception& e) {
				log::warning("tray", "{}: {} failed: {}", key, what, e.what());
			}
		}
	};
	each(take(refreshQueue_), "reading changed properties", [this](Item& item) { refresh(item); });
	each(take(menuQueue_), "reading the menu", [this](Item& item) { refreshMenu(item); });
	// The icon lookups below see every change inotify reported before this pass.
	if (!publishQueue_.empty()) (void)context_.icons->theme();
	inDeferred_ = true;
	each(take(publishQueue_), "publishing", [this](Item& item) { publish(item); });
	inDeferred_ = false;
	if (orderDirty_) {
		orderDirty_ = false;
		publishOrder();
	}
	flushWatcherSignals();
}

void TrayBackend::refresh(Item& item) {
	std::set<std::string> props;
	props.swap(item.dirty);
	auto key = item.key;
	auto serial = item.serial;
	for (const auto& prop: props) {
		++item.pendingGets;
		auto call = item.proxy->createMethodCall(kPropsIface, "Get");
		call << std::string(kItemIface) << prop;
		calls_.start(
		    group(key), *item.proxy, call,
		    [this, key, serial, prop](sdbus::MethodReply* reply, const sdbus::Error* e) {
			    Item* it = findItem(key, serial);
			    if (!it) return;
			    --it->pendingGets;
			    auto themePath = [&] {
				    const auto* p = dbus::find(it->props, "IconThemePath");
				    return p ? dbus::asString(*p).value_or("") : std::string();
			    };
			    std::string oldThemePath = prop == "IconThemePath" ? themePath() : std::string();
			    bool read = false;
			    if (reply) {
				    try {
					    if (readProperty(*reply, prop, it->props, it->pixmaps) >= kLargePixmaps) context_.server.heapFreed();
					    read = true;
				    } catch (const sdbus::Error& x) {
					    log::info("tray", "{}: {} could not be read: {}", key, prop, x.getMessage());
				    }
			    }
			    if (!read && !(e && (timedOut(*e) || notPassedOn(*e)))) {
				    // The item no longer has it (or sent garbage): the field takes its default.
				    forgetProperty(prop, it->props, it->pixmaps);
			    } else if (!read) {
				    refreshLater(*it, prop);
			    } else if (!it->refreshRetry.pending()) {
				    it->refreshRetry.reset();
			    }
			    if (prop.ends_with("Pixmap")) keepPixmaps(*it);
			    if (affectsIcon(prop)) it->iconsDirty = true;
			    // Menu icons are looked up in it; rebuilding a large menu for an unchanged
			    // path (NewIcon re-reads it every time) would be wasted.
			    if (prop == "IconThemePath" && themePath() != oldThemePath) {
				    it->menuDirty = true;
				    if (!oldThemePath.empty()) theme_->forget(oldThemePath);
			    }
			    // One publish for the signals of one burst: after the last answer.
			    if (it->pendingGets == 0) propertiesRead(*it, false);
		    },
		    kCallTimeout);
	}
}

// ---------------------------------------------------------------------------------------------
// publishing

void TrayBackend::publish(Item& item) {
	// An item appears complete: properties read and, if it has a menu, its layout too. Later, a
	// menu being read (a new Menu path) keeps the old one in the tree until it is.
	bool menuReady = !item.menu || item.menu->settled;
	if (!item.read || item.pendingGets > 0 || (!item.published && !menuReady)) return;
	// The pixmaps (up to 8 MiB) are copied only when the icons are made again.
	auto m = mapItem(item.props, item.iconsDirty ? &item.pixmaps : nullptr);
	for (const auto& name: m.badProperties) reader_.wrongType(item.key, name, item.props);
	// IconTheme refuses such names before any lookup; the item hears of it once.
	for (const auto* name: {&m.icons.name, &m.icons.attentionName, &m.icons.overlayName})
		if (name->size() > IconTheme::kMaxNameBytes && name->front() != '/' && item.warned.insert("long icon name").second)
			log::warning("tray", "{}: an icon name of {} bytes is longer than a file name; it is not looked up", item.key, name->size());
	if (item.iconsDirty) {
		// The new files are made before the old handles go, so an unchanged icon keeps its file.
		item.icon = resolver_->resolve(m.icons, iconPayer(item));
		item.iconsDirty = false;
	}
	json v = std::move(m.value);
	v["icon"] = item.icon.icon;
	v["overlayIcon"] = item.icon.overlayIcon;
	v["service"] = item.address.service;
	v["objectPath"] = item.address.path;
	auto path = itemPath(item.key);
	if (!item.published) {
		v["menu"] = menuJson(item);
		context_.tree.set(path, std::move(v));
		item.published = true;
		queueOrder();
		itemSettled(item);
		return;
	}
	// The order follows an item's category and id, which items rarely change.
	const json* shown = context_.tree.find(path);
	bool reorder = !shown || shown->value("category", json()) != v["category"] || shown->value("id", json()) != v["id"];
	// The menu is rebuilt only when it changed (the tree holds the one copy of its JSON).
	context_.tree.sync(path, v, {"menu"});
	if (item.menuDirty && menuReady) context_.tree.sync(pointer::join(path, "menu"), menuJson(item));
	if (reorder) queueOrder();
}

// In the change that publishes the item: once at the end of runDeferred, which publishes the
// items of a loop pass (a burst of registrations sorts the list once), or at once for a
// publication made anywhere else.
void TrayBackend::queueOrder() {
	if (inDeferred_) orderDirty_ = true;
	else publishOrder();
}

// /tray/order: the published items' keys in Quickshell's SystemTray order (mapping.hpp's itemOrder).
void TrayBackend::publishOrder() {
	std::vector<OrderEntry> entries;
	for (const auto& [key, item]: items_) {
		if (!item.published) continue;
		const json* shown = context_.tree.find(itemPath(key));
		if (!shown) continue;
		OrderEntry e{key, std::nullopt, {}};
		if (auto c = shown->find("category"); c != shown->end() && c->is_string()) e.category = c->get<std::string>();
		if (auto i = shown->find("id"); i != shown->end() && i->is_string()) e.id = i->get<std::string>();
		entries.push_back(std::move(e));
	}
	json order = itemOrder(std::move(entries));
	if (const json* old = context_.tree.find("/tray/order"); old && *old == order) return;
	context_.tree.set("/tray/order", std::move(order));
}

} // namespace qsd::tray
