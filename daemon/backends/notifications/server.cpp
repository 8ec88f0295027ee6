// The backend's start-up and its D-Bus side: the org.freedesktop.Notifications object, owned
// politely (see notifications_backend.hpp), and its four methods and four signals.
//
// The Notify reply goes out before anything slow: the id is decided, the reply sent, and only
// then are images written and the tree changed. CloseNotification, GetCapabilities and
// GetServerInformation answer at once.

#include "notifications_backend.hpp"

#include "../../dbus/guard.hpp"
#include "../../files.hpp"
#include "../../log.hpp"

#include <sys/epoll.h>

namespace qsd::notifications {

using json = nlohmann::json;

namespace {
constexpr size_t kMaxWarnings = 256;

std::string processName(uint32_t pid) {
	auto comm = readFile("/proc/" + std::to_string(pid) + "/comm", 4096);
	if (!comm) return {};
	while (!comm->empty() && (comm->back() == '\n' || comm->back() == '\0')) comm->pop_back();
	return validUtf8(*comm);
}
} // namespace

NotificationsBackend::NotificationsBackend(BackendContext& context): BusBackend(context, Bus::Session, "notifications") {}

NotificationsBackend::~NotificationsBackend() { stop(); }

json NotificationsBackend::initialRoot() const {
	return {{"available", false},
	        {"server", "starting"},
	        {"otherOwner", nullptr},
	        {"dnd", false},
	        {"defaultTimeoutMs", kDefaultTimeoutMs},
	        {"historyLimit", kDefaultHistoryLimit},
	        {"capabilities", defaultCapabilities()},
	        {"items", json::object()},
	        {"history", json::object()}};
}

void NotificationsBackend::onBusStart() {
	if (auto dir = Images::defaultDir(); !dir.empty()) historyDir_ = dir + "/history";
	expiry_ = context_.loop.addIdleTimer([this] { expire(); }, "notifications-expiry");
	clockChange_ = context_.loop.addClockChange([this] { onClockChange(); }, "notifications-clock-change");
	saveTimer_ = context_.loop.addIdleTimer([this] { save(false); }, "notifications-save");
	loadState();
	context_.tree.update(kRoot, {{"available", true}});

	// The object is exported once qsd owns the name (nameChanged), not before: a qsd queued
	// behind another server would otherwise serve Notify to whoever calls its unique name
	// (ListQueuedOwners gives it), with ids outside the server's and images in the server's
	// directory. That is still in time for the first call the name brings: the bus tells qsd
	// it has the name (NameOwnerChanged, or RequestName's reply) before it routes any call to
	// it, and nameChanged runs while that message is dispatched.
	name_ = std::make_unique<dbus::OwnedName>(bus(), kBusName, [this] { nameChanged(); });
	name_->request();
}

void NotificationsBackend::onBusStop() {
	// Shown notifications end with qsd: their senders learn it (reason 4, "undefined"), and they
	// are kept in history like any other closed one.
	std::vector<uint32_t> ids;
	for (const auto& [id, _]: live_) ids.push_back(id);
	for (auto id: ids) close(id, CloseReason::Undefined);
	if (!statePath_.empty()) save(true);
	// Releases the name now: a server queued behind qsd takes over at once.
	object_ = nullptr;
	name_.reset();
	wasOwner_ = waited_ = false;
	expiry_.reset();
	clockChange_.reset();
	saveTimer_.reset();
	deadlines_.clear();
	live_.clear();
	bySender_.clear();
	history_.clear();
	historyOrder_.clear();
	historyImageBytes_ = 0;
	images_.reset();
	warned_.clear();
}

void NotificationsBackend::exportServer(sdbus::IObject& object) {
	object.registerMethod(kIface, "Notify", "susssasa{sv}i",
	                      {"app_name", "replaces_id", "app_icon", "summary", "body", "actions", "hints", "expire_timeout"}, "u",
	                      {"id"}, dbus::exportedMethod("notifications", this, &NotificationsBackend::onNotify));
	object.registerMethod(kIface, "CloseNotification", "u", {"id"}, "", {},
	                      dbus::exportedMethod("notifications", this, &NotificationsBackend::onCloseNotification));
	object.registerMethod(kIface, "GetCapabilities", "", {}, "as", {"capabilities"},
	                      dbus::exportedMethod("notifications", this, &NotificationsBackend::onGetCapabilities));
	object.registerMethod(kIface, "GetServerInformation", "", {}, "ssss", {"name", "vendor", "version", "spec_version"},
	                      dbus::exportedMethod("notifications", this, &NotificationsBackend::onGetServerInformation));
	object.registerSignal(kIface, "NotificationClosed", "uu", {"id", "reason"});
	object.registerSignal(kIface, "ActionInvoked", "us", {"id", "action_key"});
	object.registerSignal(kIface, "ActivationToken", "us", {"id", "activation_token"});
	object.registerSignal(kIface, "NotificationReplied", "us", {"id", "text"});
	object.finishRegistration();
}

// Every handler runs inside dbus::exportedMethod (exportServer): an sdbus::Error it throws is the
// error reply, and so is anything else, logged.
void NotificationsBackend::onNotify(sdbus::MethodCall call) {
	NotifyArgs args = readNotify(call);
	bool replacing = args.replacesId != 0 && live_.count(args.replacesId) != 0;
	uint32_t id = replacing ? args.replacesId : 0;
	// A stack tag (a volume or brightness script's x-dunst-stack-tag) replaces the shown
	// notification of the same application with the same tag, as replaces_id would, and
	// answers its id: one notification updated in place, not one more per key press.
	if (!replacing)
		if (auto key = stackKey(args))
			for (const auto& [shown, live]: live_)
				if (live.stack == key) {
					replacing = true;
					id = shown;
					break;
				}
	if (!replacing) id = allocateId();
	if (!call.doesntExpectReply()) {
		auto reply = call.createReply();
		reply << id;
		reply.send();
	}
	// The call (and the pixels its hints point to) lives until show() returns.
	try {
		show(id, replacing, args, call.getSender());
	} catch (const std::exception& e) {
		log::error("notifications", "showing notification {} failed: {}", id, e.what());
	}
}

void NotificationsBackend::onCloseNotification(sdbus::MethodCall call) {
	uint32_t id = 0;
	call >> id;
	if (!live_.count(id)) throw sdbus::Error(kInvalidIdError, "notification " + std::to_string(id) + " is not shown");
	close(id, CloseReason::ClosedByApp);
	if (!call.doesntExpectReply()) call.createReply().send();
}

void NotificationsBackend::onGetCapabilities(sdbus::MethodCall call) {
	if (call.doesntExpectReply()) return;
	auto reply = call.createReply();
	reply << capabilities_;
	reply.send();
}

void NotificationsBackend::onGetServerInformation(sdbus::MethodCall call) {
	if (call.doesntExpectReply()) return;
	auto reply = call.createReply();
	reply << std::string("qsd") << std::string("qsd") << std::string(QSD_VERSION) << std::string("1.2");
	reply.send();
}

void NotificationsBackend::emitSignal(const char* member, uint32_t id, uint32_t reason) {
	if (!object_) return;
	try {
		auto signal = object_->createSignal(kIface, member);
		signal << id << reason;
		object_->emitSignal(signal);
	} catch (const sdbus::Error& e) {
		log::warning("notifications", "emitting {} failed: {}", member, e.getMessage());
	}
}

void NotificationsBackend::emitSignal(const char* member, uint32_t id, const std::string& text) {
	if (!object_) return;
	try {
		auto signal = object_->createSignal(kIface, member);
		signal << id << text;
		object_->emitSignal(signal);
	} catch (const sdbus::Error& e) {
		log::warning("notifications", "emitting {} failed: {}", member, e.getMessage());
	}
}

void NotificationsBackend::nameChanged() {
	if (!name_) return;
	using State = dbus::OwnedName::State;
	const char* server = "starting";
	switch (name_->state()) {
	case State::Requesting: server = "starting"; break;
	case State::Owner: server = "active"; break;
	case State::Waiting: server = "waiting"; break;
	case State::Failed: server = "failed"; break;
	}
	json other = nullptr;
	if (!name_->otherOwner().empty()) {
		other = {{"busName", name_->otherOwner()}, {"pid", nullptr}, {"processName", nullptr}};
		if (auto pid = name_->otherPid()) {
			other["pid"] = *pid;
			if (auto comm = processName(*pid); !comm.empty()) other["processName"] = comm;
		}
	}
	context_.tree.update(kRoot, {{"server", server}, {"otherOwner", other}});
	if (name_->state() == State::Waiting) waited_ = true;
	if (name_->owned() && !wasOwner_) {
		// Another qsd may have handed ids out, and kept history, while this one waited:
		// continue after them. Before the image store is made, which empties its directory: a
		// qsd that died left the images of what it showed there, and history keeps copies.
		takeStateFromFile();
		ensureImages();
		// Only now: a server qsd waited behind may have made copies the file does not name yet.
		removeStrayHistoryFiles();
		if (!object_) {
			object_ = &name_->exportObject(kPath);
			exportServer(*object_);
		}
		log::info("notifications", "qsd is the notification server");
	}
	wasOwner_ = name_->owned();
	switch (name_->state()) {
	case State::Requesting: break;
	case State::Owner:
	case State::Waiting: setState(BackendState::Running); break;
	case State::Failed: setState(BackendState::Unavailable, "cannot own " + std::string(kBusName) + ": " + name_->error()); break;
	}
	if (name_->state() == State::Waiting && name_->otherPid())
		warnOnce("waiting:" + name_->otherOwner(),
		         fmt::format("{} is owned by {}{}; qsd waits for it to leave", kBusName, name_->otherOwner(),
		                     other["processName"].is_string() ? " (" + other["processName"].get<std::string>() + ")" : ""));
}

void NotificationsBackend::ensureImages() {
	if (images_) return;
	images_ = std::make_unique<Images>(*context_.icons);
}

void NotificationsBackend::warnOnce(const std::string& key, const std::string& message) {
	if (warned_.count(key)) return;
	if (warned_.size() >= kMaxWarnings) return log::debug("notifications", "{}", message);
	warned_.insert(key);
	log::warning("notifications", "{}", message);
}

} // namespace qsd::notifications

namespace qsd {
std::unique_ptr<Backend> createNotificationsBackend(BackendContext& context) {
	return std::make_unique<notifications::NotificationsBackend>(context);
}
} // namespace qsd
