// DBusMenu (com.canonical.dbusmenu): each item's menu is fetched as soon as the item is read, so
// it is in the tree before anyone opens it (Waybar #5285: a first click showed an empty menu),
// and kept current: LayoutUpdated re-fetches the submenu it names, ItemsPropertiesUpdated is
// applied in place.

#include "tray_backend.hpp"
#include "wire.hpp"

#include "../../log.hpp"

namespace qsd::tray {

using json = nlohmann::json;

namespace {
// More submenus than this changed at once: one fetch of the whole menu is cheaper (and the
// LayoutUpdated parents kept meanwhile collapse into that one read).
constexpr size_t kMaxPartialFetches = 8;
} // namespace

void TrayBackend::setupMenu(Item& item, const std::string& menuPath) {
	dropMenu(item);
	auto menu = std::make_unique<Menu>();
	menu->serial = nextSerial_++;
	menu->path = menuPath;
	menu->proxy = sdbus::createProxy(conn(), item.owner, menuPath);
	menuSignals_[signalIndex(item.owner, menuPath)] = item.key;
	item.menu = std::move(menu);
	item.menuDirty = true;
	// Apps that fill their menu lazily do it on AboutToShow of the root; sent first, so the
	// layout asked for next already has it (the answer itself does not matter).
	calls_.start(group(item.key),
	             item.menu->proxy->callMethodAsync("AboutToShow").onInterface(kMenuIface).withTimeout(kCallTimeout)
	                 .withArguments(int32_t(0)),
	             [](const sdbus::Error*, bool) {});
	fetchLayout(item, 0);
}

void TrayBackend::dropMenu(Item& item) {
	if (!item.menu) return;
	auto s = menuSignals_.find(signalIndex(item.owner, item.menu->path));
	if (s != menuSignals_.end() && s->second == item.key) menuSignals_.erase(s);
	bury(std::move(item.menu->proxy));
	item.menu.reset();
	item.menuFiles.clear();
	item.menuDirty = true;
}

void TrayBackend::fetchLayout(Item& item, int32_t parent, LayoutDone done) {
	auto key = item.key;
	auto serial = item.serial;
	auto menuSerial = item.menu->serial;
	// A raw call: the reply is read by wire.hpp, straight into the menu tree.
	++item.menu->fetching;
	auto call = item.menu->proxy->createMethodCall(kMenuIface, "GetLayout");
	call << parent << int32_t(-1) << std::vector<std::string>{};
	calls_.start(
	    group(key), *item.menu->proxy, call,
	    [this, key, serial, menuSerial, parent, done](sdbus::MethodReply* reply, const sdbus::Error* error) {
		    Item* it = findItem(key, serial);
		    if (!it || !it->menu || it->menu->serial != menuSerial) {
			    if (done) done(nullptr, error);
			    return;
		    }
		    auto& menu = *it->menu;
		    --menu.fetching;
		    // A submenu is read into its place in the menu: the bounds (kMaxMenuDepth,
		    // kMaxMenuEntries) hold for the menu as a whole, counted from the submenu's depth and
		    // the entries the menu keeps besides its current children. One that is not in the
		    // menu (or comes before the root) is not kept, and not read: the whole menu is.
		    MenuNode* at = parent != 0 && menu.root ? menu.index.find(parent) : nullptr;
		    LayoutPlace place;
		    if (at) place = {menu.index.depth(parent), menu.index.entries() - (menuEntries(*at) - 1)};
		    std::optional<sdbus::Error> failure;
		    if (error) failure = *error;
		    MenuNode node;
		    size_t skipped = 0;
		    bool rootProperties = true;
		    if (reply && (parent == 0 || at)) {
			    try {
				    node = readLayout(*reply, skipped, &rootProperties, place);
			    } catch (const sdbus::Error& x) {
				    failure = x;
			    }
		    }
		    const sdbus::Error* e = failure ? &*failure : nullptr;
		    bool bigReply = replyWeight(node) >= (1u << 20);
		    bool first = !menu.settled;
		    menu.settled = true;
		    if (e) {
			    if (!menu.pendingParents.empty()) queueMenu(*it);
			    if (menu.root && (timedOut(*e) || notPassedOn(*e))) {
				    rereadMenuLater(*it, parent, *e);
				    queuePublish(*it);
				    if (done) done(it, e);
				    return;
			    }
			    // A menu that cannot be read is null; the item is shown without it.
			    if (first) log::warning("tray", "{}: reading its menu {} failed: {}: {}", key, menu.path, e->getName(), e->getMessage());
			    else log::info("tray", "{}: reading submenu {} failed: {}: {}", key, parent, e->getName(), e->getMessage());
			    if (!menu.root && parent == 0 && timedOut(*e)) retryMenu(*it);
			    queuePublish(*it);
			    if (done) done(it, e);
			    return;
		    }
		    menu.retry.reset();
		    if (skipped) log::info("tray", "{}: {} menu entries were not (ia{{sv}}av) or over the limits; skipped", key, skipped);
		    storeMenuIcons(*it, node);
		    // A large layout (icon-data, or thousands of entries) leaves that much free heap
		    // behind once it replaced the last one, however fast the subscribers read it.
		    if (bigReply) context_.server.heapFreed();
		    if (parent == 0 || !menu.root) {
			    if (parent == 0) menu.root = std::move(node);
			    else menu.pendingParents = {0};   // a submenu before the root: fetch everything
		    } else if (at) {
			    // Qt answers GetLayout(submenu, -1) with no properties for the submenu's own
			    // entry: what is known of it stays, only its children are new.
			    if (rootProperties) at->props = std::move(node.props);
			    at->children = std::move(node.children);
		    } else {
			    // The submenu left the tree meanwhile: the whole menu is re-read.
			    menu.pendingParents = {0};
		    }
		    // The nodes moved: the index by id is made again (once per layout read).
		    menu.index.rebuild(menu.root ? &*menu.root : nullptr);
		    if (!menu.pendingParents.empty()) queueMenu(*it);
		    it->menuDirty = true;
		    queuePublish(*it);
		    if (done) done(it, nullptr);
	    },
	    kCallTimeout);
}

void TrayBackend::queueMenu(Item& item) {
	menuQueue_.insert(item.key);
	deferred_.setEnabled(SD_EVENT_ONESHOT);
}

void TrayBackend::retryMenu(Item& item) {
	auto& menu = *item.menu;
	auto delay = menu.retry.schedule(
	    context_.loop,
	    [this, key = item.key, serial = item.serial, menuSerial = menu.serial] {
		    Item* it = findItem(key, serial);
		    if (it && it->menu && it->menu->serial == menuSerial && !it->menu->root) fetchLayout(*it, 0);
	    },
	    "tray-menu-retry");
	if (!delay) {
		log::warning("tray", "{}: its menu did not answer {} reads; read again on its LayoutUpdated or when opened", item.key,
		             menu.retry.failures() + 1);
		return;
	}
	log::at(menu.retry.level(log::Level::Info), "tray", "{}: asking for its menu again in {} s", item.key,
	        wholeSeconds(*delay));
}

// A re-read of a menu shown already (after LayoutUpdated) that did not answer in time, or that
// the bus did not pass on: the menu shown stays, and the entries are read again with backoff
// (kReadRetry), with any LayoutUpdated that comes meanwhile. It was only logged before, and the
// old entries stayed until the item's next LayoutUpdated.
void TrayBackend::rereadMenuLater(Item& item, int32_t parent, const sdbus::Error& e) {
	auto& menu = *item.menu;
	auto& pending = menu.pendingParents;
	if (!pending.count(0)) {
		pending.insert(parent);
		if (parent == 0 || pending.size() > kMaxPartialFetches) pending = {0};
	}
	if (menu.retry.pending()) return;   // read again with the others
	auto delay = menu.retry.schedule(
	    context_.loop,
	    [this, key = item.key, serial = item.serial, menuSerial = menu.serial] {
		    Item* it = findItem(key, serial);
		    if (it && it->menu && it->menu->serial == menuSerial && !it->menu->pendingParents.empty()) queueMenu(*it);
	    },
	    "tray-menu-reread");
	if (!delay) {
		log::warning("tray", "{}: reading its menu again did not answer {} times ({}); the entries shown stay until the next "
		                     "LayoutUpdated or until it is opened",
		             item.key, menu.retry.failures(), e.getName());
		menu.retry.reset();
		return;
	}
	log::at(menu.retry.level(log::Level::Info), "tray", "{}: reading submenu {} again did not answer ({}); asking again in {} s",
	        item.key, parent, e.getName(), wholeSeconds(*delay));
}

void TrayBackend::refreshMenu(Item& item) {
	if (!item.menu) return;
	auto& menu = *item.menu;
	// A read is out: the LayoutUpdated that came meanwhile wait for its answer, and are then read
	// in one go (queueMenu from the reply). An item that sends them by the thousand gets a read
	// at a time, not one per loop pass: no more reads than it answers.
	if (menu.settled && menu.fetching > 0) return;
	std::set<int32_t> parents;
	parents.swap(menu.pendingParents);
	// The first fetch is still out: its answer is newer than the signal.
	if (!menu.settled || parents.empty()) return;
	if (!menu.root || parents.count(0) || parents.size() > kMaxPartialFetches) {
		fetchLayout(item, 0);
		return;
	}
	for (auto p: parents) fetchLayout(item, p);
}

void TrayBackend::onMenuSignal(sdbus::Message& msg) {
	try {
		auto found = menuSignals_.find(signalIndex(msg.getSender(), msg.getPath()));
		if (found == menuSignals_.end()) return;
		Item* item = findItem(found->second);
		if (!item || !item->menu) return;
		std::string member = msg.getMemberName();
		if (member == "LayoutUpdated") {
			uint32_t revision = 0;
			int32_t parent = 0;
			msg >> revision >> parent;
			// Kept until the read out now answers (up to 5 s, and an item may hold it that
			// long again and again): past kMaxPartialFetches parents, or with 0 among them, one
			// read of the whole menu covers them all, and nothing more is kept.
			auto& pending = item->menu->pendingParents;
			if (!pending.count(0)) {
				pending.insert(parent);
				if (parent == 0 || pending.size() > kMaxPartialFetches) pending = {0};
			}
			queueMenu(*item);
		} else if (member == "ItemsPropertiesUpdated") {
			// Applied in place, no call. Before the first layout there is nothing to apply to:
			// that layout is newer.
			if (item->menu->root && readPropertiesUpdated(msg, item->menu->index)) {
				storeMenuIcons(*item, *item->menu->root);
				item->menuDirty = true;
				queuePublish(*item);
			}
		} else if (member == "ItemActivationRequested") {
			// The app asks hosts to open its menu at this entry (a global shortcut, say).
			int32_t id = 0;
			uint32_t timestamp = 0;
			msg >> id >> timestamp;
			emitEvent("tray.menuActivationRequested", {{"item", item->key}, {"id", id}});
		}
	} catch (const sdbus::Error& e) {
		// An item can send these in a loop: peerLog_'s lines at most.
		uint64_t suppressed = 0;
		if (peerLog(suppressed))
			log::warning("tray", "malformed menu signal from {}: {}{}", msg.getSender(), e.getMessage(),
			             log::heldBack(suppressed));
	}
}

size_t TrayBackend::replyWeight(const MenuNode& node) {
	// About what an entry costs while it is read, published and sent (its node, its object in
	// the tree, its patch and each subscriber's line), and its icon-data.
	constexpr size_t kEntryBytes = 1024;
	size_t n = kEntryBytes + node.props.iconData.size();
	for (const auto& c: node.children) n += replyWeight(c);
	return n;
}

void TrayBackend::storeMenuIcons(Item& item, MenuNode& node) {
	// icon-data goes to its file as soon as it is read: what the menu keeps in memory is a
	// handle, and what the files take is bounded by the icon store (an item once sent 40 MiB).
	if (!node.props.iconData.empty()) {
		node.props.iconFile = store_->putPng(node.props.iconData, iconPayer(item));
		std::vector<uint8_t>().swap(node.props.iconData);
	}
	for (auto& c: node.children) storeMenuIcons(item, c);
}

json TrayBackend::menuJson(Item& item) {
	item.menuDirty = false;
	if (!item.menu || !item.menu->root) {
		item.menuFiles.clear();
		return nullptr;
	}
	std::string themePath;
	if (const auto* p = dbus::find(item.props, "IconThemePath"))
		if (auto s = dbus::asString(*p)) themePath = *s;
	std::vector<IconRef> files;
	auto memo = resolver_->beginMemo(themePath);
	json value = menuToJson(*item.menu->root,
	                        [&](const MenuProps& props) { return resolver_->menuIcon(props, files, item.menuIcons, memo); });
	// Swapped in after the new files exist: an unchanged icon keeps its file. The memo keeps
	// only the names this menu has now.
	item.menuFiles.swap(files);
	item.menuIcons = std::move(memo);
	return value;
}

} // namespace qsd::tray
