// The notifications.* methods. Each one that stands for a D-Bus signal answers once the signal
// is sent, so a client that gets the answer knows the application has been told.

#include "notifications_backend.hpp"

#include "../answer.hpp"

#include <algorithm>

namespace qsd::notifications {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::RpcException;

std::span<const Backend::Method> NotificationsBackend::methods() const {
	static constexpr Method table[] = {
	    method<&NotificationsBackend::dismiss>("notifications.dismiss"),
	    method<&NotificationsBackend::expireNow>("notifications.expire"),
	    method<&NotificationsBackend::dismissAll>("notifications.dismissAll"),
	    method<&NotificationsBackend::invokeAction>("notifications.invokeAction"),
	    method<&NotificationsBackend::reply>("notifications.reply"),
	    method<&NotificationsBackend::setDnd>("notifications.setDnd"),
	    method<&NotificationsBackend::removeFromHistory>("notifications.removeFromHistory"),
	    method<&NotificationsBackend::clearHistory>("notifications.clearHistory"),
	    method<&NotificationsBackend::configure>("notifications.configure"),
	};
	return table;
}

void NotificationsBackend::requireServer() const {
	using State = dbus::OwnedName::State;
	if (!name_ || name_->state() == State::Owner || name_->state() == State::Requesting) return;
	json data = {{"backend", std::string(id())}, {"path", kRoot}};
	std::string reason;
	if (name_->state() == State::Failed) {
		reason = "qsd cannot own " + std::string(kBusName) + ": " + name_->error();
	} else {
		// Who has the name, as /notifications/otherOwner shows it.
		const json* other = context_.tree.find("/notifications/otherOwner");
		auto who = name_->otherOwner();
		if (other && other->is_object() && other->value("processName", json()).is_string())
			who += " (" + (*other)["processName"].get<std::string>() + ")";
		reason = "qsd is not the notification server: " + std::string(kBusName) + " is owned by " + who;
		data["otherOwner"] = other ? *other : json(nullptr);
	}
	data["reason"] = reason;
	throw RpcException(ErrorCode::BackendUnavailable, std::string(kRoot) + " is unavailable: " + reason, std::move(data));
}

uint32_t NotificationsBackend::liveId(Call& c) {
	auto id = c.params().integer("id");
	if (id < 1 || id > UINT32_MAX || !live_.count(uint32_t(id)))
		throw RpcException(ErrorCode::NotFound, "No notification " + std::to_string(id) + " is shown", {{"param", "id"}, {"id", id}});
	return uint32_t(id);
}

void NotificationsBackend::dismiss(Call& c) {
	requireServer();
	auto id = liveId(c);
	close(id, CloseReason::Dismissed);
	c.result({{"id", id}});
}

void NotificationsBackend::expireNow(Call& c) {
	requireServer();
	auto id = liveId(c);
	close(id, CloseReason::Expired);
	c.result({{"id", id}});
}

void NotificationsBackend::dismissAll(Call& c) {
	requireServer();
	std::vector<uint32_t> ids;
	for (const auto& [id, _]: live_) ids.push_back(id);
	for (auto id: ids) close(id, CloseReason::Dismissed);
	c.result({{"count", ids.size()}});
}

void NotificationsBackend::invokeAction(Call& c) {
	requireServer();
	auto id = liveId(c);
	auto action = c.params().string("action");
	const auto& offered = live_.at(id).actions;
	if (std::find(offered.begin(), offered.end(), action) == offered.end())
		throw RpcException(ErrorCode::InvalidParams, "Notification " + std::to_string(id) + " offers no action \"" + action + "\"",
		                   {{"param", "action"}, {"expected", "one of the notification's action keys"}, {"available", offered}});
	// The token first: the application raises its window with it when the action arrives.
	if (auto token = c.params().optString("activationToken")) emitSignal("ActivationToken", id, *token);
	emitSignal("ActionInvoked", id, action);
	bool closed = !live_.at(id).resident;
	if (closed) close(id, CloseReason::Dismissed);
	c.result({{"id", id}, {"action", action}, {"closed", closed}});
}

void NotificationsBackend::reply(Call& c) {
	requireServer();
	auto id = liveId(c);
	const auto& offered = live_.at(id).actions;
	if (std::find(offered.begin(), offered.end(), "inline-reply") == offered.end())
		throw RpcException(ErrorCode::InvalidParams, "Notification " + std::to_string(id) + " offers no inline reply",
		                   {{"param", "id"}, {"expected", "a notification with an \"inline-reply\" action"}});
	emitSignal("NotificationReplied", id, c.params().string("text"));
	bool closed = !live_.at(id).resident;
	if (closed) close(id, CloseReason::Dismissed);
	c.result({{"id", id}, {"closed", closed}});
}

void NotificationsBackend::setDnd(Call& c) {
	requireServer();
	dnd_ = c.params().boolean("enabled");
	context_.tree.set("/notifications/dnd", dnd_);
	markDirty();
	c.result({{"enabled", dnd_}});
}

void NotificationsBackend::removeFromHistory(Call& c) {
	requireServer();
	auto id = c.params().integer("id");
	if (id < 1 || id > UINT32_MAX || !history_.count(uint32_t(id)))
		throw RpcException(ErrorCode::NotFound, "No notification " + std::to_string(id) + " in history", {{"param", "id"}, {"id", id}});
	removeHistory(uint32_t(id));
	c.result({{"id", id}});
}

void NotificationsBackend::clearHistory(Call& c) {
	requireServer();
	auto count = history_.size();
	while (!historyOrder_.empty()) removeHistory(historyOrder_.begin()->second);
	c.result({{"count", count}});
}

void NotificationsBackend::configure(Call& c) {
	requireServer();
	if (auto ms = c.params().optInteger("defaultTimeoutMs")) {
		defaultTimeoutMs_ = uint64_t(*ms);
		context_.tree.set("/notifications/defaultTimeoutMs", defaultTimeoutMs_);
	}
	if (auto limit = c.params().optInteger("historyLimit")) {
		historyLimit_ = uint64_t(*limit);
		context_.tree.set("/notifications/historyLimit", historyLimit_);
		trimHistory();
	}
	if (c.params().has("capabilities")) {
		// Each name is one of kCapabilities (the API's enum, checked before this runs).
		capabilities_ = capabilitySet(c.params().array("capabilities").get<std::vector<std::string>>()).value_or(capabilities_);
		context_.tree.set("/notifications/capabilities", capabilities_);
	}
	markDirty();
	c.result({{"defaultTimeoutMs", defaultTimeoutMs_}, {"historyLimit", historyLimit_}, {"capabilities", capabilities_}});
}

} // namespace qsd::notifications
