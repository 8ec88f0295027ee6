#pragma once
// The "tray" backend: /tray from StatusNotifierItems on the session bus. qsd is the session's
// StatusNotifierWatcher when the name is free (a polite one: it never replaces another), a host
// of the other watcher otherwise, and takes the name over when that watcher leaves. Items are
// read completely (properties, icon, DBusMenu layout) before they appear in the tree.
//
// The code is split along its seams: tray_backend.cpp (start-up, the watcher and host roles),
// tray_items.cpp (items: reading, change signals, publishing), tray_menu.cpp (DBusMenu layouts)
// and tray_actions.cpp (the tray.* methods). The pure parts are mapping, pixmap, icon_theme.

#include "icon_store.hpp"
#include "icons.hpp"
#include "mapping.hpp"
#include "peers.hpp"

#include "../../log.hpp"
#include "../../retry.hpp"
#include "../../dbus/names.hpp"
#include "../../dbus/owned_name.hpp"
#include "../../dbus/variant.hpp"
#include "../bus_backend.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qsd::tray {

constexpr const char* kWatcherName = "org.kde.StatusNotifierWatcher";
constexpr const char* kWatcherPath = "/StatusNotifierWatcher";
constexpr const char* kWatcherIface = "org.kde.StatusNotifierWatcher";
constexpr const char* kItemIface = "org.kde.StatusNotifierItem";
constexpr const char* kMenuIface = "com.canonical.dbusmenu";
constexpr const char* kPropsIface = "org.freedesktop.DBus.Properties";
constexpr const char* kRoot = "/tray";
constexpr const char* kItems = "/tray/items";
// Every call to an item or its menu: an unresponsive item gives an error after this, and never
// holds anything else up.
constexpr std::chrono::seconds kCallTimeout{5};
// An item whose properties, or a menu whose layout, did not answer in time when first read (an
// app busy while the session starts, a layout of megabytes) is asked again 1, 2, 4, 8 and 16 s
// after each timeout, which covers about a minute; after that only on a sign of life: the item's
// next signal, the menu's LayoutUpdated or a client's tray.menuAboutToShow.
constexpr Backoff::Policy kReadRetry{std::chrono::seconds(1), std::chrono::seconds(16), 5};
// An item none of whose properties can be read because nothing answers for it (UnknownObject,
// UnknownMethod...: the path names no object of its connection) is asked again 1, 2 and 4 s later,
// for an app that registers a moment before it exports the object, and then dropped: any
// connection can register any path of another's, and such an entry would otherwise be kept (and
// counted against whoever registered it) for as long as that connection lives.
constexpr Backoff::Policy kAbsentRetry{std::chrono::seconds(1), std::chrono::seconds(4), 3};
using dbus::notPassedOn;
using dbus::timedOut;

class TrayBackend final: public BusBackend {
public:
	explicit TrayBackend(BackendContext& context);
	~TrayBackend() override;

	std::string_view id() const override { return "tray"; }
	std::string_view root() const override { return kRoot; }

private:
	void onBusStart() override;
	void onBusStop() override;
	nlohmann::json initialRoot() const override {
		return {{"available", false}, {"isWatcher", false}, {"items", nlohmann::json::object()}, {"order", nlohmann::json::array()}};
	}
	std::span<const Method> methods() const override;
	std::optional<Unavailable> availability() const override;

	enum class Role {
		None,      // nobody owns the watcher name (or we do not know yet)
		Watcher,   // qsd owns org.kde.StatusNotifierWatcher
		Host,      // another process owns it; qsd is its host
	};

	struct Menu {
		uint64_t serial = 0;                // tells a stale reply from one for a new menu
		std::string path;
		std::unique_ptr<sdbus::IProxy> proxy;
		std::optional<MenuNode> root;       // the layout; nullopt until read (or when it failed)
		MenuIndex index;                    // root's entries by id, rebuilt when its shape changes
		bool settled = false;               // the first GetLayout answered, either way
		std::set<int32_t> pendingParents;   // LayoutUpdated parents not yet fetched ({0}: the whole menu)
		int fetching = 0;                   // GetLayout calls out; LayoutUpdated waits for them
		Retry retry{kReadRetry};            // reads of a menu never read that timed out
	};

	struct Item {
		ItemAddress address;
		std::string key;
		std::string owner;                  // unique name ("" while GetNameOwner is out)
		// The connection that registered it for another connection's name ("" when the owner did,
		// or the item came from another watcher's list or qsd's last run). It counts against
		// that connection from the start, and against its owner only once the owner answered
		// for it (ownerCharged): one connection cannot fill another's share with paths it made up.
		std::string registrar;
		bool ownerCharged = false;
		uint64_t serial = 0;                // tells a stale reply from one for a re-added key
		std::unique_ptr<sdbus::IProxy> proxy;
		dbus::Properties props;             // every property but the decoded pixmaps
		ItemPixmaps pixmaps;                // IconPixmap and its siblings (see wire.hpp)
		bool reading = false;               // the full read is out
		bool read = false;                  // properties read at least once
		bool failed = false;                // nothing could be read; retried on its next signal
		Retry readRetry{kReadRetry};        // first reads that timed out
		Retry absentRetry{kAbsentRetry};    // first reads that nothing answered for
		bool published = false;
		// Published, or its first read failed: the start waits for it no longer (settle()).
		bool settled = false;
		int pendingGets = 0;                // targeted re-reads out
		std::set<std::string> dirty;        // properties to re-read
		Retry refreshRetry{kReadRetry};     // re-reads of them that did not answer
		bool iconsDirty = true;
		ResolvedIcon icon;
		std::unique_ptr<Menu> menu;
		bool menuDirty = true;               // the menu in the tree is not the current one
		std::vector<IconRef> menuFiles;
		IconMemo menuIcons;                  // the menu's icon names, as last resolved
		std::set<std::string> warned;        // warnings logged once per item
	};

	// --- tray_backend.cpp: start-up, roles, the watcher object, hosting another watcher
	void exportWatcher(sdbus::IObject& object);
	void requestHostName();
	void watcherOwnerChanged();
	void becomeWatcher();
	void becomeHost(const std::string& owner);
	void becomeNone();
	void onRegisterItem(sdbus::MethodCall call);
	void onRegisterHost(sdbus::MethodCall call);
	void onOtherWatcherSignal(sdbus::Message& msg);
	void onNameOwnerChanged(const std::string& name, const std::string& oldOwner, const std::string& newOwner);
	void syncListed(const std::vector<std::string>& entries);
	void readListed();
	void registerHost();
	// A call to the watcher we host that did not answer in time: asked again with `retry`.
	void watcherLate(Retry& retry, const char* what, EventLoop::Handler again);
	void emitWatcher(const char* member, const std::string* arg = nullptr);
	void watcherItemsChanged();
	void adoptSavedItems();
	void saveItems();
	// tray_peers.cpp: the watcher's limits per connection, its coalesced signals.
	[[nodiscard]] bool overItemLimit(const std::string& connection, const std::string& what);
	void chargeItem(const std::string& connection);
	// Whom an item's icon files are charged to in the icon store: the connection that serves it
	// (its key while GetNameOwner is out). Charged per item, one connection serving many items
	// filled the whole store, and every other item's icons were null.
	[[nodiscard]] static const std::string& iconPayer(const Item& item) { return item.owner.empty() ? item.key : item.owner; }
	void releaseItem(const std::string& connection);
	void hostsChanged(bool registered);
	void flushWatcherSignals();
	bool peerLog(uint64_t& suppressed);
	void updateAvailable();
	// The watcher, or the host of another watcher whose list was read (/tray/available once the
	// first settle() is past too).
	[[nodiscard]] bool roleKnown() const { return role_ == Role::Watcher || (role_ == Role::Host && listRead_); }
	// `running`, the first time, once the items known at start are published or failed their
	// first read (kStartWait at most); updateAvailable() from then on.
	void settle();
	void itemSettled(Item& item);
	[[nodiscard]] std::vector<std::string> registeredItems() const;

	// --- tray_items.cpp
	bool addItem(const ItemAddress& address, std::string owner, std::string registrar = {});
	void removeItem(const std::string& key, const char* why);
	void ownerKnown(Item& item);
	// After a read of item.pixmaps: keeps what fits of them (PixmapBudget).
	void keepPixmaps(Item& item);
	void readItem(Item& item);
	void readItemByProperty(const std::string& key, uint64_t serial);
	void propertiesRead(Item& item, bool iconsChanged);
	void onItemSignal(sdbus::Message& msg);
	void queueRefresh(Item& item, const std::vector<std::string>& props);
	void queuePublish(Item& item);
	void runDeferred();
	void refresh(Item& item);
	void publish(Item& item);
	void publishOrder();
	void queueOrder();
	[[nodiscard]] Item* findItem(const std::string& key, uint64_t serial = 0);
	[[nodiscard]] static std::string group(const std::string& key) { return "i:" + key + "|"; }
	[[nodiscard]] static std::string itemPath(const std::string& key);

	// --- tray_menu.cpp
	void setupMenu(Item& item, const std::string& menuPath);
	void dropMenu(Item& item);
	// GetLayout(parent, -1, []) and splice the answer into the item's menu. `done` gets the item
	// (nullptr when it or its menu went away meanwhile) and the error (nullptr on success).
	using LayoutDone = std::function<void(Item* item, const sdbus::Error* error)>;
	void fetchLayout(Item& item, int32_t parent, LayoutDone done = {});
	void onMenuSignal(sdbus::Message& msg);
	void refreshMenu(Item& item);
	void queueMenu(Item& item);   // its pending LayoutUpdated read on the next loop pass
	void retryMenu(Item& item);
	void rereadMenuLater(Item& item, int32_t parent, const sdbus::Error& e);
	void retryRead(Item& item);
	void refreshLater(Item& item, const std::string& prop);
	void readAbsent(Item& item);
	// The item's properties were read. False when it was removed (its owner has too many items).
	[[nodiscard]] bool readSucceeded(Item& item);
	// The menu as JSON (null without one); its icon files replace menuFiles.
	[[nodiscard]] nlohmann::json menuJson(Item& item);
	// Writes the icon-data of `node` and below to icon files, charged to the item.
	void storeMenuIcons(Item& item, MenuNode& node);
	// What reading and publishing a layout moves through the heap: a large one asks for a trim.
	[[nodiscard]] static size_t replyWeight(const MenuNode& node);

	// --- tray_icons.cpp: the icon theme, the icon files, and following theme changes
	void setupIcons();
	void dropIcons();
	void themesChanged();

	// --- tray_actions.cpp
	void activate(Call& c);
	void secondaryActivate(Call& c);
	void contextMenu(Call& c);
	void pointCall(Call& c, const char* dbusMethod);
	void scroll(Call& c);
	void menuEvent(Call& c);
	void menuAboutToShow(Call& c);
	Item& actionItem(const rpc::Params& p);
	sdbus::IProxy& menuEntry(Item& item, int32_t id);

	std::string hostName_;                       // org.kde.StatusNotifierHost-<pid>
	std::unique_ptr<dbus::OwnedName> watcher_;   // org.kde.StatusNotifierWatcher and our /StatusNotifierWatcher
	sdbus::IObject* object_ = nullptr;           // that object
	NameTracker::Watch names_;                   // every NameOwnerChanged: items and hosts leave with their names
	std::unique_ptr<sdbus::IProxy> otherWatcher_;   // the watcher we host, by its unique name
	Role role_ = Role::None;
	std::string otherOwner_;                     // its unique name
	bool listRead_ = false;                      // its RegisteredStatusNotifierItems read
	Retry registerRetry_{kReadRetry};            // its RegisterStatusNotifierHost timed out
	Retry listRetry_{kReadRetry};                // reading its list timed out
	HostRegistry hosts_;                         // other hosts registered with our watcher
	// unique name -> the items counted against it (kMaxItemsPerConnection): those it owns (once
	// it answered for them, when another connection registered them) and those it registered
	// for another connection's name.
	std::map<std::string, size_t> itemsPerConnection_;
	PixmapBudget pixmaps_;                       // what the items' pixmap caches hold, per connection
	log::Limiter peerLog_{32, 10'000'000};         // registrations, refusals, malformed signals: 32 lines per 10 s
	bool itemsChanged_ = false;                  // RegisteredStatusNotifierItems changed this pass
	bool hostRegistered_ = false;                // ... a host registered, or one left
	bool hostUnregistered_ = false;
	// The watcher's list for qsd's next run on this bus (mapping.hpp, SavedItem).
	std::string savedPath_;                      // $XDG_RUNTIME_DIR/qsd/tray-items.json ("": not kept)
	std::string busId_;                          // the bus's id (BusConnection::id)
	bool saveNeeded_ = false;                    // the list or an item's owner changed this pass
	bool saveFailed_ = false;                    // a write failed (logged once)
	size_t adoptsOut_ = 0;                       // GetNameOwner of saved items out
	// Start-up (settle()): said `running` once; the items not settled; the wait's bound.
	bool settled_ = false;
	size_t unsettled_ = 0;
	bool waitedEnough_ = false;
	EventSource startWait_;

	std::map<std::string, Item> items_;          // by key
	std::vector<std::string> order_;             // keys in registration order (as the watcher lists them)
	std::map<std::string, std::set<std::string>> services_;   // bus name -> keys
	std::map<std::string, std::string> itemSignals_;          // signalIndex(owner, item path) -> key
	std::map<std::string, std::string> menuSignals_;          // signalIndex(owner, menu path) -> key
	// The index of a signal's sender and object path in itemSignals_ and menuSignals_.
	static std::string signalIndex(const std::string& owner, const std::string& path) { return owner + '\n' + path; }
	uint64_t nextSerial_ = 1;

	std::set<std::string> refreshQueue_;         // keys with properties to re-read
	std::set<std::string> menuQueue_;            // keys with LayoutUpdated to fetch
	std::set<std::string> publishQueue_;         // keys to publish
	bool orderDirty_ = false;                    // /tray/order to sort again (queueOrder)
	bool inDeferred_ = false;                    // runDeferred is publishing
	EventSource deferred_;

	IconTheme* theme_ = nullptr;                 // the daemon's (BackendContext::icons) while running
	std::unique_ptr<IconStore> store_;
	std::unique_ptr<IconResolver> resolver_;
	icons::SharedTheme::Subscription themeChanges_;   // the installed icon themes changed
	EventSource themeRescan_;                    // items' icons resolved again after a change
};

} // namespace qsd::tray
