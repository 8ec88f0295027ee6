#pragma once
// Pure mapping from StatusNotifierItem and DBusMenu wire values to /tray tree values. No I/O and
// no state: every function here is unit-tested (tests/unit/tray_mapping_test.cpp) and the
// tables are documented in docs/backends/tray.md.

#include "pixmap.hpp"

#include "../../dbus/variant.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qsd::tray {

class IconFile;   // icon_store.hpp

// ------------------------------------------------------------------------------------------
// Item addresses

// Where an item lives: the bus name to call and the object path of its
// org.kde.StatusNotifierItem object.
struct ItemAddress {
	std::string service;
	std::string path;

	// The watcher's spelling, "service/path" ("org.example.App/StatusNotifierItem",
	// ":1.42/org/ayatana/NotificationItem/foo"): the item's key in /tray/items.
	[[nodiscard]] std::string key() const { return service + path; }
	bool operator==(const ItemAddress&) const = default;
};

constexpr const char* kDefaultItemPath = "/StatusNotifierItem";

// D-Bus syntax checks (the specification's rules for bus names and object paths).
[[nodiscard]] bool isValidBusName(std::string_view name);
[[nodiscard]] bool isValidObjectPath(std::string_view path);

// The argument of RegisterStatusNotifierItem, sent by `sender` (its unique name):
//   "/org/ayatana/NotificationItem/foo" -> {sender, that path}   (libappindicator, ayatana)
//   "org.example.App"                   -> {"org.example.App", "/StatusNotifierItem"} (KDE)
//   ":1.42/Some/Path"                   -> {":1.42", "/Some/Path"}  (the watcher's own spelling)
// std::nullopt when the service or the path is not valid D-Bus syntax.
[[nodiscard]] std::optional<ItemAddress> parseRegistration(std::string_view arg, std::string_view sender);

// An entry of another watcher's RegisteredStatusNotifierItems: "service/path", or a bare
// service (some watchers list those), which means "/StatusNotifierItem".
[[nodiscard]] std::optional<ItemAddress> parseListed(std::string_view entry);

// The watcher's list, left for qsd's next run on the same bus ($XDG_RUNTIME_DIR/qsd/
// tray-items.json): the StatusNotifierItem protocol has an item register once, and many never
// register again when the watcher returns, so a qsd that restarted (an upgrade, a crash) would
// lose their icons for good. A saved item is taken back only while `owner`, its connection's
// unique name, still owns its service: unique names are never reused on one bus, and `busId`
// (org.freedesktop.DBus.GetId) tells this bus from a later one.
struct SavedItem {
	ItemAddress address;
	std::string owner;   // a unique name (":1.42")
	bool operator==(const SavedItem&) const = default;
};
constexpr size_t kMaxSavedItems = 1024;            // entries read back (more: the rest ignored)
constexpr size_t kMaxSavedItemsFile = 1u << 20;    // bytes of the file read back
[[nodiscard]] std::string savedItemsText(std::string_view busId, const std::vector<SavedItem>& items);
// The entries saved on the bus `busId`: none when the text is not such a file, was written on
// another bus, or lists nothing; entries that are not an item key and a unique name are skipped.
[[nodiscard]] std::vector<SavedItem> parseSavedItems(std::string_view text, std::string_view busId);

// ------------------------------------------------------------------------------------------
// Enums

// Status: "Passive" -> "passive", "Active" -> "active", "NeedsAttention" -> "needsAttention";
// any other string is kept as sent, never hidden (a free-text Status, Quickshell #495).
[[nodiscard]] std::string statusName(std::string_view status);
// Category: "ApplicationStatus" -> "applicationStatus", "Communications" -> "communications",
// "SystemServices" -> "systemServices", "Hardware" -> "hardware"; other strings as sent.
[[nodiscard]] std::string categoryName(std::string_view category);

// The items' keys in Quickshell's SystemTray order: by category (applicationStatus,
// communications, systemServices, hardware, then any other category or none), then by id
// case-insensitively (ASCII), then by key. Each entry: (key, the tree's category or nullopt, id).
struct OrderEntry {
	std::string key;
	std::optional<std::string> category;
	std::string id;
};
[[nodiscard]] std::vector<std::string> itemOrder(std::vector<OrderEntry> items);

// ------------------------------------------------------------------------------------------
// Item properties

// What the icon resolution needs from an item, read out of its properties.
struct IconSources {
	std::string name;            // IconName
	std::string attentionName;   // AttentionIconName
	std::string overlayName;     // OverlayIconName
	std::string themePath;       // IconThemePath
	std::vector<Pixmap> pixmaps;           // IconPixmap
	std::vector<Pixmap> attentionPixmaps;  // AttentionIconPixmap
	std::vector<Pixmap> overlayPixmaps;    // OverlayIconPixmap
	bool attention = false;      // Status is NeedsAttention: the attention variant is wanted
};

// The item's pixmap properties, decoded (see wire.hpp: what it reads from an item holds at most
// the one entry of each that the icon is made of).
struct ItemPixmaps {
	std::vector<Pixmap> icon;        // IconPixmap
	std::vector<Pixmap> attention;   // AttentionIconPixmap
	std::vector<Pixmap> overlay;     // OverlayIconPixmap
};

// What the items' pixmap caches may hold. Each property keeps one entry (wire.hpp) of up to
// kMaxPixmapSide a side, 4 MiB, and an item has three: any process on the session bus can be
// 64 items (kMaxItemsPerConnection) of 12 MiB each, kept for as long as they live. Charged as
// their icon files are (IconStore): to the connection that serves the item.
struct PixmapBudgetLimits {
	size_t maxBytes = 32u << 20;       // every item together
	size_t maxOwnerBytes = 8u << 20;   // the items one connection serves: two 1024 px pixmaps
};

class PixmapBudget {
public:
	using Limits = PixmapBudgetLimits;
	explicit PixmapBudget(Limits limits = {}): limits_(limits) {}

	// Keeps what fits of item `key`'s `pixmaps`, served by `owner`, in the order icon, attention,
	// overlay; a property that does not fit is emptied (its icon is then made of its name, if
	// any). What the item held before is given back first. Returns the properties emptied.
	std::vector<std::string_view> keep(const std::string& key, const std::string& owner, ItemPixmaps& pixmaps);
	// Gives back what item `key` held.
	void release(const std::string& key);

	[[nodiscard]] size_t bytes() const { return total_; }
	[[nodiscard]] size_t ownerBytes(const std::string& owner) const;
	[[nodiscard]] const Limits& limits() const { return limits_; }

private:
	struct Charge {
		std::string owner;
		size_t bytes = 0;
	};
	Limits limits_;
	std::unordered_map<std::string, Charge> items_;
	std::unordered_map<std::string, size_t> owners_;
	size_t total_ = 0;
};

struct MappedItem {
	// id, title, status, category, iconName, attentionIconName, overlayIconName, iconThemePath,
	// tooltipTitle, tooltipDescription, onlyMenu, hasMenu (not icon, overlayIcon, menu: the
	// backend resolves those).
	nlohmann::json value;
	IconSources icons;
	std::string menuPath;                 // "" when the item has no DBusMenu
	std::vector<std::string> badProperties;   // of an unexpected D-Bus type (fields are null)
};

// org.kde.StatusNotifierItem properties -> the item's fields. Missing properties take the
// documented defaults ("" for strings, "active" and "applicationStatus" for the enums, false);
// a property of the wrong type gives null for its field (and is listed in badProperties).
// Pixmap properties come from `pixmaps` when given and absent from `props` (a pixmap property
// still in `props` is decoded from its variant, or reported as mistyped).
[[nodiscard]] MappedItem mapItem(const dbus::Properties& props, const ItemPixmaps* pixmaps = nullptr);

// The item's DBusMenu object path from its Menu property; "" when it has none (missing,
// mistyped, "/", or "/NO_DBUSMENU", Quickshell #999).
[[nodiscard]] std::string menuPathOf(const dbus::Properties& props);

// The properties each change signal of an item invalidates (NewTitle -> Title, NewIcon ->
// IconName, IconPixmap, IconThemePath, ...); empty for a signal that is not a change signal.
[[nodiscard]] std::vector<std::string> propertiesOfSignal(std::string_view member);

// The item's a(iiay) pixmaps (IconPixmap and its siblings); std::nullopt for another type.
[[nodiscard]] std::optional<std::vector<Pixmap>> pixmapsOf(const dbus::Value& v);

// ------------------------------------------------------------------------------------------
// DBusMenu

// One DBusMenu entry's properties, decoded when they arrive (an sdbus::Variant costs about a
// kilobyte each; a hundred-entry menu would hold hundreds). Defaults are the specification's.
struct MenuProps {
	std::string label;
	bool enabled = true;
	bool visible = true;
	bool separator = false;          // type "separator"
	std::string toggleType;          // "checkmark", "radio" or ""
	int toggleState = -1;            // 1, 0, or -1 (anything else)
	std::string iconName;
	std::vector<uint8_t> iconData;   // PNG bytes, as read (until the backend stores them in a file)
	std::shared_ptr<const IconFile> iconFile;   // the file made of icon-data (then iconData is empty)
	std::string shortcut;            // shortcutText() of the aas
	bool submenu = false;            // children-display "submenu"
};

// Sets `key` from its wire value (a value of an unexpected type sets the default); and resets
// `key` to its default (ItemsPropertiesUpdated's removed properties). Keys that are not shown
// (isShownMenuProperty false: disposition, accessible-desc...) change nothing.
void setMenuProperty(MenuProps& props, const std::string& key, const dbus::Value& value);
[[nodiscard]] bool isShownMenuProperty(std::string_view key);
void resetMenuProperty(MenuProps& props, const std::string& key);

// One DBusMenu entry as GetLayout sends it, (ia{sv}av), recursively.
struct MenuNode {
	int32_t id = 0;
	MenuProps props;
	std::vector<MenuNode> children;
};

// The texts an item sets that qsd shows (Id, Title, the tooltip's title, a menu entry's label and
// shortcut) are kept up to kMaxItemText bytes, the tooltip's description (markup) up to
// kMaxTooltipBytes, each cut where a character starts: any process on the session bus can be an
// item, and every subscriber of /tray is sent them.
constexpr size_t kMaxItemText = 1024;
constexpr size_t kMaxTooltipBytes = 16 * 1024;
// Icon names, the icon theme path and the names of Status and Category that are not in their
// tables are shown as sent up to a path's length (PATH_MAX), cut the same way. Longer ones name
// no icon (a name is a file name, at most 255 bytes) and were sent to every subscriber whole.
constexpr size_t kMaxIconNameText = 4096;
// What an item's property cache keeps of a text (s, o, g): the first kMaxPropertyText bytes, as
// much as the longest field shows; a Menu path that long is dropped (no menu). A value of a
// type the mapping does not read is kept as its signature only (dbus::Value::unread), so a
// mistyped property is reported without being held. The cache holds the shown properties only.
constexpr size_t kMaxPropertyText = kMaxTooltipBytes;

// The item properties mapItem reads: the only ones an item's cache keeps (wire.cpp skips the
// others unread), and the ones read one by one when an item's GetAll fails.
inline constexpr std::array<std::string_view, 14> kShownItemProperties = {
    "Id",          "Title",          "Status",           "Category",          "IconName",
    "IconPixmap",  "Menu",           "ItemIsMenu",       "IconThemePath",     "AttentionIconName",
    "AttentionIconPixmap", "OverlayIconName", "OverlayIconPixmap", "ToolTip"};
[[nodiscard]] bool isShownItemProperty(std::string_view name);

// Bounds on what a peer may send: deeper levels and entries beyond the count are dropped
// (wire.hpp reads layouts).
constexpr size_t kMaxMenuDepth = 16;
constexpr size_t kMaxMenuEntries = 4096;
// A menu entry's icon-data larger than this is ignored (it is written to a file).
constexpr size_t kMaxIconData = 1 << 20;
// icon-data read from one layout or one ItemsPropertiesUpdated, all entries together: what is
// beyond is dropped unread. Twice what an item's icon files may take (IconStoreLimits), so that
// limit is the one an item meets (and is told of), and this one only bounds the copies made.
constexpr size_t kMaxMenuIconBytes = 8 << 20;

// One entry's own fields (without icon and children): {id, label, mnemonic, enabled,
// visible, type, toggleType, toggleState, iconName, shortcut, submenu}.
[[nodiscard]] nlohmann::json menuEntry(const MenuNode& node);

// The label without DBusMenu's mnemonic markers ("_File" -> "File", "__" -> "_"), and the
// access key ('f' for "_File"), "" when there is none.
[[nodiscard]] std::string stripMnemonic(std::string_view label, std::string* mnemonic = nullptr);

// The shortcut property (aas: [["Control", "q"]]) as text: keys joined by "+", several
// shortcuts by ", " ("Control+q"); "" when there is none.
[[nodiscard]] std::string shortcutText(const std::vector<std::vector<std::string>>& shortcut);

// The menu tree as JSON: menuEntry() of each node plus `icon` (from `iconUrl`, called for every
// node with its properties) and `children`, in menu order.
using IconUrl = std::function<nlohmann::json(const MenuProps& props)>;
[[nodiscard]] nlohmann::json menuToJson(const MenuNode& root, const IconUrl& iconUrl);

// Finds the node with `id` in the tree (nullptr when absent).
[[nodiscard]] MenuNode* findNode(MenuNode& root, int32_t id);

// A menu's entries by id, for signals that name entries by id (ItemsPropertiesUpdated with a
// few hundred thousand ids must not cost ids x entries). Built from a tree, and built again
// whenever the tree's shape changes (its nodes move). With duplicate ids (a broken menu), the
// first in menu order wins, as findNode finds it.
class MenuIndex {
public:
	void rebuild(MenuNode* root);
	[[nodiscard]] MenuNode* find(int32_t id) const;
	// The depth of the entry find(id) gives (the root's is 0; 0 for an id not in the menu).
	[[nodiscard]] size_t depth(int32_t id) const;
	[[nodiscard]] size_t size() const { return byId_.size(); }
	// Every entry of the menu, the root and entries with a duplicate id included.
	[[nodiscard]] size_t entries() const { return entries_; }

private:
	struct Entry {
		MenuNode* node;
		size_t depth;
	};
	std::unordered_map<int32_t, Entry> byId_;
	size_t entries_ = 0;
};

// The entries of the tree under `node`, `node` itself included (without recursion).
[[nodiscard]] size_t menuEntries(const MenuNode& node);

} // namespace qsd::tray
