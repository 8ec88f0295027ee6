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
	if (e.getName() == "org.freedesktop.DBus.Error.NoReply" || e.getName() == "org.freedesktop.DBus.Error.Timeout")
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
	bool available = role_ == Role::Watcher || (role_ == Role::Host && listRead_);
	if (!conn_ || !available)
		throw RpcException(ErrorCode::BackendUnavailable, "The tray is unavailable: " +
		                                                       std::string(conn_ ? "there is no StatusNotifierWatcher" : "there is no session bus connection"),
		                   {{"backend", "tray"}, {"path", kRoot}});
	auto it = items_.find(key);
	// Items that are not in the tree yet (still being read) are not known to clients either.
	if (it == items_.end() || !it->second.published || !it->second.proxy)
		throw RpcException(ErrorCode::NotFound, "No tray item " + key, {{"param", "item"}, {"item", key}});
	return it->second;
}

void TrayBackend::registerMethods() {
	auto& disp = context_.dispatcher;

	// Activate, SecondaryActivate, ContextMenu: (ii) screen coordinates, then nothing.
	auto pointMethod = [this, &disp](const char* name, const char* dbusMethod) {
		disp.addAsync(name, [this, dbusMethod](const json& params, Responder responder, ClientSession&) {
			Params p(params);
			auto x = int32Param(p, "x", false);
			auto y = int32Param(p, "y", false);
			auto& item = actionItem(p);
			auto key = item.key;
			auto answer = std::make_shared<Answer>(std::move(responder), "tray", key);
			calls_.start(group(key),
			             item.proxy->callMethodAsync(dbusMethod).onInterface(kItemIface).withTimeout(kCallTimeout).withArguments(x, y),
			             [answer, key](const sdbus::Error* e) {
				             if (e) fail(*answer, key, *e);
				             else answer->result({{"item", key}});
			             });
		});
		methods_.emplace_back(disp, name);
	};
	pointMethod("tray.activate", "Activate");
	pointMethod("tray.secondaryActivate", "SecondaryActivate");
	pointMethod("tray.contextMenu", "ContextMenu");

	disp.addAsync("tray.scroll", [this](const json& params, Responder responder, ClientSession&) {
		Params p(params);
		auto delta = int32Param(p, "delta", true);
		auto orientation = p.optString("orientation").value_or("vertical");
		if (orientation != "vertical" && orientation != "horizontal") Params::fail("orientation", "\"vertical\" or \"horizontal\"");
		auto& item = actionItem(p);
		auto key = item.key;
		auto answer = std::make_shared<Answer>(std::move(responder), "tray", key);
		calls_.start(group(key),
		             item.proxy->callMethodAsync("Scroll").onInterface(kItemIface).withTimeout(kCallTimeout)
		                 .withArguments(delta, orientation),
		             [answer, key](const sdbus::Error* e) {
			             if (e) fail(*answer, key, *e);
			             else answer->result({{"item", key}});
		             });
	});
	methods_.emplace_back(disp, "tray.scroll");

	// The menu entry a request names: it must be in the item's menu as the tree shows it.
	auto menuOf = [](Item& item, int32_t id) {
		if (!item.menu || !item.menu->root)
			throw RpcException(ErrorCode::NotFound, item.key + " has no menu", {{"param", "item"}, {"item", item.key}});
		if (!item.menu->index.find(id))
			throw RpcException(ErrorCode::NotFound, "No entry " + std::to_string(id) + " in the menu of " + item.key,
			                   {{"param", "id"}, {"item", item.key}, {"id", id}});
		return item.menu->proxy.get();
	};

	disp.addAsync("tray.menuEvent", [this, menuOf](const json& params, Responder responder, ClientSession&) {
		Params p(params);
		auto id = int32Param(p, "id", true);
		auto event = p.string("event");
		if (event != "clicked" && event != "opened" && event != "closed" && event != "hovered")
			Params::fail("event", "one of \"clicked\", \"opened\", \"closed\", \"hovered\"");
		auto& item = actionItem(p);
		auto* menu = menuOf(item, id);
		auto key = item.key;
		auto answer = std::make_shared<Answer>(std::move(responder), "tray", key);
		// Event(i id, s eventId, v data, u timestamp): data is unused by the events sent here.
		calls_.start(group(key),
		             menu->callMethodAsync("Event").onInterface(kMenuIface).withTimeout(kCallTimeout)
		                 .withArguments(id, event, sdbus::Variant(int32_t(0)), uint32_t(0)),
		             [answer, key, id](const sdbus::Error* e) {
			             if (e) fail(*answer, key, *e);
			             else answer->result({{"item", key}, {"id", id}});
		             });
	});
	methods_.emplace_back(disp, "tray.menuEvent");

	disp.addAsync("tray.menuAboutToShow", [this, menuOf](const json& params, Responder responder, ClientSession&) {
		Params p(params);
		auto id = int32Param(p, "id", true);
		auto& item = actionItem(p);
		auto* menu = menuOf(item, id);
		auto key = item.key;
		auto serial = item.serial;
		auto answer = std::make_shared<Answer>(std::move(responder), "tray", key);
		calls_.start(group(key),
		             menu->callMethodAsync("AboutToShow").onInterface(kMenuIface).withTimeout(kCallTimeout).withArguments(id),
		             [this, answer, key, serial, id](const sdbus::Error* e, bool needUpdate) {
			             Item* it = findItem(key, serial);
			             if (!it || !it->menu) {
				             answer->error(ErrorCode::NotFound, key + " has no menu any more", {{"param", "item"}, {"item", key}});
				             return;
			             }
			             // A timeout is the answer; other errors (an app that does not implement
			             // AboutToShow) still get the layout read.
			             if (e && (e->getName() == "org.freedesktop.DBus.Error.NoReply" ||
			                       e->getName() == "org.freedesktop.DBus.Error.Timeout")) {
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
				             // The refreshed submenu is in the tree (and sent to subscribers) before
				             // the answer, so a client that waited for it can show it at once.
				             // (Only the menu when the item is out: its other fields may be
				             // half re-read.)
				             if (item->published) context_.tree.sync(pointer::join(itemPath(key), "menu"), menuJson(*item));
				             else publish(*item);
				             context_.tree.flush();
				             answer->result({{"item", key}, {"id", id}, {"needUpdate", needUpdate}});
			             });
		             });
	});
	methods_.emplace_back(disp, "tray.menuAboutToShow");
}

} // namespace qsd::tray
