#pragma once
// The "notifications" backend: qsd is the session's org.freedesktop.Notifications server
// (Desktop Notifications Specification 1.2, with KDE's and GNOME's inline replies) and serves
// the notifications as /notifications, so every shell shows the same popups and history.
//
// The name is owned politely (dbus::OwnedName): queued behind a server that has it (mako, dunst,
// another shell), taken the moment that one leaves, never given away. The split along its seams:
// server.cpp (the D-Bus object and the name), items.cpp (notifications: shown, replaced,
// expired, closed, kept in history, persisted) and actions.cpp (the notifications.* methods).
// The pure parts are mapping, wire (Notify read from the raw message) and state (the file).

#include "images.hpp"
#include "mapping.hpp"
#include "state.hpp"
#include "wire.hpp"

#include "../../dbus/owned_name.hpp"
#include "../bus_backend.hpp"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qsd::notifications {

constexpr const char* kBusName = "org.freedesktop.Notifications";
constexpr const char* kPath = "/org/freedesktop/Notifications";
constexpr const char* kIface = "org.freedesktop.Notifications";
constexpr const char* kRoot = "/notifications";
// CloseNotification's reply for an id that is not shown (the specification asks for an error).
constexpr const char* kInvalidIdError = "org.freedesktop.Notifications.Error.InvalidId";

class NotificationsBackend final: public BusBackend {
public:
	explicit NotificationsBackend(BackendContext& context);
	~NotificationsBackend() override;

	std::string_view id() const override { return "notifications"; }
	std::string_view root() const override { return kRoot; }

private:
	void onBusStart() override;
	void onBusStop() override;
	nlohmann::json initialRoot() const override;
	std::span<const Method> methods() const override;
	std::string service() const override { return kBusName; }

	// A notification being shown. Its fields are in the tree; this is what qsd needs besides.
	struct Live {
		Urgency urgency = Urgency::Normal;
		bool resident = false;
		bool transient = false;
		std::vector<std::string> actions;          // the keys offered
		std::optional<uint64_t> deadline;          // CLOCK_MONOTONIC µs; nullopt: never expires
		std::optional<StoredImage> image;          // the stored file `image` names, when qsd wrote it
		std::optional<StoredImage> appIcon;        // the same for `appIcon`
		std::string sender;                        // the unique name of the connection that sent it
		std::optional<std::pair<std::string, std::string>> stack;   // (app name, stack tag): stackKey
	};
	// A notification in history: the copies of its image files it owns.
	struct Closed {
		uint64_t order = 0;                        // closing order: the oldest leave first
		std::vector<std::string> files;
		uint64_t bytes = 0;                        // their size, counted in historyImageBytes_
	};

	// --- server.cpp: the D-Bus object, the name
	void exportServer(sdbus::IObject& object);
	void onNotify(sdbus::MethodCall call);
	void onCloseNotification(sdbus::MethodCall call);
	void onGetCapabilities(sdbus::MethodCall call);
	void onGetServerInformation(sdbus::MethodCall call);
	void emitSignal(const char* member, uint32_t id, uint32_t reason);
	void emitSignal(const char* member, uint32_t id, const std::string& text);
	void nameChanged();
	// qsd owns the name: it is the session's notification server. Only then is the D-Bus object
	// exported, the image directory touched, the state file written or a history file removed:
	// a qsd waiting behind another server (another qsd, whose files these are) does none of it.
	[[nodiscard]] bool serving() const { return name_ && name_->owned(); }
	// The notifications.* methods are the server's: refused (-32000, naming the server) while
	// another program has the name or qsd cannot have it. Before the bus answered (a moment at
	// start-up) they change what qsd shows, and reach the file only if qsd becomes the server.
	void requireServer() const;
	// The image store and the icon theme, made once qsd owns the name: making the store empties
	// its directory, which a server qsd waits behind may use.
	void ensureImages();
	void warnOnce(const std::string& key, const std::string& message);

	// --- items.cpp
	[[nodiscard]] uint32_t allocateId();
	void show(uint32_t id, bool replacing, NotifyArgs& args, const std::string& sender);
	struct Resolved {
		nlohmann::json url = nullptr;
		std::optional<StoredImage> stored;
	};
	[[nodiscard]] Resolved resolveIcon(const std::string& text, const std::string& sender);
	// Emits NotificationClosed(id, reason) and moves the item to history (unless transient).
	void close(uint32_t id, CloseReason reason);
	void armExpiry();
	void expire();
	// The wall clock was set: every expiresAt is computed again from its deadline.
	void onClockChange();
	// Closes the oldest (not critical, when it can) of `ids` as expired while there are more than `max`.
	void evictOverflow(const std::set<uint32_t>& ids, size_t max, const char* what);
	void addHistory(uint32_t id, nlohmann::json entry, std::vector<std::string> files);
	void removeHistory(uint32_t id);
	void trimHistory();
	// Removes the entry's image copies (its `image` and `appIcon` become null; the entry stays).
	void dropHistoryImages(uint32_t id);
	[[nodiscard]] std::string historyCopy(uint32_t id, const char* what, const StoredImage& image);
	void loadState();
	void markDirty();
	// Writes history, the settings, the id counter and, while qsd runs (not `clean`), what is
	// shown: a qsd that dies closes nothing, and the next one closes those (restoreShown).
	void save(bool clean);
	// Adds the state file's history entries; returns the highest id among them.
	uint32_t restoreHistory(nlohmann::json& entries);
	// The notifications a server that died left shown (the file's `shown`) go to history as its
	// stop would have put them (onBusStop: reason 4, history's own image copies); returns the
	// highest id among them.
	uint32_t restoreShown(nlohmann::json& entries);
	// Removes the files of history's directory that no entry refers to.
	void removeStrayHistoryFiles();
	// Taking the name: the ids handed out by another qsd, and after waiting, the history,
	// Do-Not-Disturb and settings the server before left in the file (adoptState); a file that
	// cannot be used is set aside (*.bad). Then the file is written.
	void takeStateFromFile();
	void adoptState(SavedState& state);
	[[nodiscard]] static std::string itemPath(uint32_t id);
	[[nodiscard]] static std::string historyPath(uint32_t id);

	// --- actions.cpp
	void dismiss(Call& c);
	void expireNow(Call& c);   // notifications.expire (expire() is the timer's)
	void dismissAll(Call& c);
	void invokeAction(Call& c);
	void reply(Call& c);
	void setDnd(Call& c);
	void removeFromHistory(Call& c);
	void clearHistory(Call& c);
	void configure(Call& c);
	[[nodiscard]] uint32_t liveId(Call& c);

	std::unique_ptr<dbus::OwnedName> name_;     // org.freedesktop.Notifications and its object
	sdbus::IObject* object_ = nullptr;
	std::unique_ptr<Images> images_;
	bool wasOwner_ = false;
	bool waited_ = false;                       // another server had the name after qsd asked

	std::map<uint32_t, Live> live_;
	std::map<std::string, std::set<uint32_t>> bySender_;   // unique name -> ids it has shown
	std::set<std::pair<uint64_t, uint32_t>> deadlines_;   // (deadline, id): the expiry timer's queue
	EventSource expiry_;                                   // one timer, at the earliest deadline
	EventSource clockChange_;
	std::map<uint32_t, Closed> history_;
	std::map<uint64_t, uint32_t> historyOrder_;            // closing order -> id
	uint64_t nextOrder_ = 1;
	std::string historyDir_;
	uint64_t historyImageBytes_ = 0;                       // history's copies, at most kMaxHistoryImageBytes

	uint32_t nextId_ = 1;
	uint32_t lastId_ = 0;       // the last id handed out
	uint32_t reservedId_ = 0;   // the file says no id up to this is free
	bool dnd_ = false;
	uint64_t defaultTimeoutMs_ = kDefaultTimeoutMs;
	uint64_t historyLimit_ = kDefaultHistoryLimit;
	std::vector<std::string> capabilities_ = defaultCapabilities();   // GetCapabilities' answer

	std::string statePath_;
	EventSource saveTimer_;
	uint64_t lastSave_ = 0;     // CLOCK_MONOTONIC µs
	bool stateWarned_ = false;

	std::set<std::string> warned_;
};

} // namespace qsd::notifications
