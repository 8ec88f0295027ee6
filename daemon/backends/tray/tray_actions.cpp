// The tray.* methods. Each is one (or, for menuAboutToShow, two) asynchronous calls to the item,
// tracked in the item's call group: an item that leaves answers -32000, one that does not answer
// within 5 s answers -32002 naming it, and neither holds anything else up.

#include "tray_backend.hpp"

#include "../../log.hpp"
#include "../answer.hpp"

#include <qsd/protocol/jsonrpc.hpp>
#include <qsd/protocol/mirror.hpp>

#include <climits>

namespace qsd::tray {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::Params;
using rpc::RpcException;

namespace {

void fail(Answer& answer, const std::string& key, const sdbus::Error& e) {
	json data = {{"backend", "tray"}, {"item", key}, {"name", e.getName()}, {"message", e.getMessage()}};
	if (timedOut(e))
		answer.error(ErrorCode::BackendFailed, key + " did not answer within 5 s", std::move(data));
	else answer.error(ErrorCode::BackendFailed, key + ": " + (e.getMessage().empty() ? e.getName() : e.getMessage()), std::move(data));
}

int32_t int32Param(const Params& p, const char* name, bool required) {
	if (!required && !p.has(name)) return 0;
	auto v = p.integer(name);
	if (v < INT32_MIN || v > INT32_MAX) Params::fail(name, "a 32-bit integer");
	return int32_t(v);
}

} // namespace

TrayBackend::Item& TrayBackend::actionItem(const Params& p) {
	auto key = p.string("item");
	auto it = items_.find(key);
	// Items that are not in the tree yet (still being read) are not known to clients either.
	if (it == items_.end() || !it->second.published || !it->second.proxy)
		throw RpcException(ErrorCode::NotFound, "No tray item " + key, {{"param", "item"}, {"item", key}});
	return it->second;
}

std::span<const Backend::Method> TrayBackend::methods() const {
	static constexpr Method table[] = {
	    method<&TrayBackend::activate>("tray.activate"),
	    method<&TrayBackend::secondaryActivate>("tray.secondaryActivate"),
	    method<&TrayBackend::contextMenu>("tray.contextMenu"),
	    method<&TrayBackend::scroll>("tray.scroll"),
	    method<&TrayBackend::menuEvent>("tray.menuEvent"),
	    method<&TrayBackend::menuAboutToShow>("tray.menuAboutToShow"),
	};
	return table;
}

void TrayBackend::activate(Call& c) { pointCall(c, "Activate"); }
void TrayBackend::secondaryActivate(Call& c) { pointCall(c, "SecondaryActivate"); }
void TrayBackend::contextMenu(Call& c) { pointCall(c, "ContextMenu"); }

// Activate, SecondaryActivate, ContextMenu: (ii) screen coordinates, then nothing. Many items do
// not implement all three (libayatana-appindicator's have no Activate; they have a menu): an item
// without the method answers {handled: false}, not an error, so that a bar can do what the click
// means for such an item (open its menu) without treating it as a failure. Quickshell ignores
// the error the same way.
void TrayBackend::pointCall(Call& c, const char* dbusMethod) {
	const auto& p = c.params();
	auto x = int32Param(p, "x", false);
	auto y = int32Param(p, "y", false);
	auto& item = actionItem(p);
	auto key = item.key;
	calls_.start(group(key),
	             item.proxy->callMethodAsync(dbusMethod).onInterface(kItemIface).withTimeout(kCallTimeout).withArguments(x, y),
	             [answer = c.answer(key), key](const sdbus::Error* e) {
		             if (e && e->getName() == "org.freedesktop.DBus.Error.UnknownMethod")
			             answer->result({{"item", key}, {"handled", false}});
		             else if (e) fail(*answer, key, *e);
		             else answer->result({{"item", key}, {"handled", true}});
	             });
}

void TrayBackend::scroll(Call& c) {
	const auto& p = c.params();
	auto delta = int32Param(p, "delta", true);
	auto orientation = p.optString("orientation").value_or("vertical");
	auto& item = actionItem(p);
	auto key = item.key;
	calls_.start(group(key),
	             item.proxy->callMethodAsync("Scroll").onInterface(kItemIface).withTimeout(kCallTimeout)
	                 .withArguments(delta, orientation),
	             [answer = c.answer(key), key](const sdbus::Error* e) {
		             if (e) fail(*answer, key, *e);
		             else answer->result({{"item", key}});
	             });
}

// The menu entry a request names: it must be in the item's menu as the tree shows it.
sdbus::IProxy& TrayBackend::menuEntry(Item& item, int32_t id) {
	if (!item.menu || !item.menu->root)
		throw RpcException(ErrorCode::NotFound, item.key + " has no menu", {{"param", "item"}, {"item", item.key}});
	if (!item.menu->index.find(id))
		throw RpcException(ErrorCode::NotFound, "No entry " + std::to_string(id) + " in the menu of " + item.key,
		                   {{"param", "id"}, {"item", item.key}, {"id", id}});
	return *item.menu->proxy;
}

void TrayBackend::menuEvent(Call& c) {
	const auto& p = c.params();
	auto id = int32Param(p, "id", true);
	auto event = p.string("event");
	auto& item = actionItem(p);
	auto& menu = menuEntry(item, id);
	auto key = item.key;
	// Event(i id, s eventId, v data, u timestamp): data is unused by the events sent here.
	calls_.start(group(key),
	             menu.callMethodAsync("Event").onInterface(kMenuIface).withTimeout(kCallTimeout)
	                 .withArguments(id, event, sdbus::Variant(int32_t(0)), uint32_t(0)),
	             [answer = c.answer(key), key, id](const sdbus::Error* e) {
		             if (e) fail(*answer, key, *e);
		             else answer->result({{"item", key}, {"id", id}});
	             });
}

void TrayBackend::menuAboutToShow(Call& c) {
	const auto& p = c.params();
	auto id = int32Param(p, "id", true);
	auto& item = actionItem(p);
	// A menu not read yet (hasMenu, menu null: it did not answer in time) is read whole when a
	// client opens it, as a host that reads menus on opening would.
	bool unread = id == 0 && item.menu && !item.menu->root;
	auto& menu = unread ? *item.menu->proxy : menuEntry(item, id);
	auto key = item.key;
	auto serial = item.serial;
	auto menuSerial = item.menu->serial;
	// Sent through the item's proxy, which lives as long as the item: a new menu meanwhile drops
	// the menu's proxy, which would cancel the call (and answer "went away") or not, depending
	// on whether its answer came in the same read as the new Menu path.
	auto message = menu.createMethodCall(kMenuIface, "AboutToShow");
	message << id;
	calls_.start(
	    group(key), *item.proxy, message,
	    [this, answer = c.answer(key), key, serial, menuSerial, id](sdbus::MethodReply* reply, const sdbus::Error* e) {
		    bool needUpdate = false;
		    if (reply) {
			    try {
				    *reply >> needUpdate;
			    } catch (const sdbus::Error&) {
			    }
		    }
		    Item* it = findItem(key, serial);
		    if (!it || !it->menu) {
			    answer->error(ErrorCode::NotFound, key + " has no menu any more", {{"param", "item"}, {"item", key}});
			    return;
		    }
		    // A new menu meanwhile (NewMenu): the entry was one of the old menu's. Reading `id`
		    // of the new one would splice what it is there into a menu not read yet, and mark
		    // that menu settled (menu: null until its root arrived); the new menu is being read
		    // whole anyway.
		    if (it->menu->serial != menuSerial) {
			    answer->error(ErrorCode::NotFound, "No entry " + std::to_string(id) + " in the menu of " + key + " (it has a new menu)",
			                  {{"param", "id"}, {"item", key}, {"id", id}});
			    return;
		    }
		    // A timeout is the answer; other errors (an app that does not implement
		    // AboutToShow) still get the layout read.
		    if (e && timedOut(*e)) {
			    fail(*answer, key, *e);
			    return;
		    }
		    if (e) log::info("tray", "{}: AboutToShow({}) failed: {}; reading the layout anyway", key, id, e->getMessage());
		    fetchLayout(*it, id, [this, answer, key, id, needUpdate](Item* item, const sdbus::Error* error) {
			    if (error) {
				    fail(*answer, key, *error);
				    return;
			    }
			    if (!item) {
				    answer->error(ErrorCode::NotFound, key + " has no menu any more", {{"param", "item"}, {"item", key}});
				    return;
			    }
			    // The refreshed submenu is in the tree before the answer (the server sends an
			    // answer after the tree.changed of the writes made before it), so a client that
			    // waited for it can show it at once. Only the menu when the item is out: its
			    // other fields may be half re-read.
			    if (item->published) context_.tree.sync(pointer::join(itemPath(key), "menu"), menuJson(*item));
			    else publish(*item);
			    answer->result({{"item", key}, {"id", id}, {"needUpdate", needUpdate}});
		    });
	    },
	    kCallTimeout);
}

} // namespace qsd::tray
