// The tray backend's pure mappings (daemon/backends/tray/mapping.hpp): item keys as the watcher
// spells them, the Status and Category tables, item properties to tree fields, and DBusMenu
// layouts to the menu JSON.

#ifdef QSD_TRAY_BACKEND

#include "backends/tray/mapping.hpp"
#include "backends/tray/wire.hpp"
#include "dbus/raw.hpp"

#include <qsd/protocol/api.hpp>

#include <gtest/gtest.h>

#include <systemd/sd-bus.h>

#include <functional>
#include <set>

using namespace qsd;
using namespace qsd::tray;
using json = nlohmann::json;

namespace {

using PixmapStruct = sdbus::Struct<int32_t, int32_t, std::vector<uint8_t>>;
using ToolTipStruct = sdbus::Struct<std::string, std::vector<PixmapStruct>, std::string, std::string>;

// A menu entry as wire.hpp builds it from a GetLayout reply: its properties set one by one.
MenuNode node(int32_t id, std::map<std::string, sdbus::Variant> props, std::vector<MenuNode> children = {}) {
	MenuNode n;
	n.id = id;
	for (const auto& [k, v]: props) setMenuProperty(n.props, k, v);
	n.children = std::move(children);
	return n;
}


} // namespace

TEST(TrayKeys, RegistrationByServiceNameUniqueNameAndPath) {
	auto a = parseRegistration("org.example.App", ":1.7");
	ASSERT_TRUE(a);
	EXPECT_EQ(a->service, "org.example.App");
	EXPECT_EQ(a->path, "/StatusNotifierItem");
	EXPECT_EQ(a->key(), "org.example.App/StatusNotifierItem");

	a = parseRegistration(":1.42", ":1.42");
	ASSERT_TRUE(a);
	EXPECT_EQ(a->key(), ":1.42/StatusNotifierItem");

	// libappindicator and ayatana send their path; the sender is the service.
	a = parseRegistration("/org/ayatana/NotificationItem/foo", ":1.42");
	ASSERT_TRUE(a);
	EXPECT_EQ(a->service, ":1.42");
	EXPECT_EQ(a->key(), ":1.42/org/ayatana/NotificationItem/foo");

	// The watcher's own spelling is accepted as it is.
	a = parseRegistration(":1.9/Some/Path", ":1.1");
	ASSERT_TRUE(a);
	EXPECT_EQ(a->service, ":1.9");
	EXPECT_EQ(a->path, "/Some/Path");

	for (const char* bad: {"", "nodots", "org..x", "1org.x", "org.x//a", "/a b", "org.x/a-b", "/a/"})
		EXPECT_FALSE(parseRegistration(bad, ":1.3")) << bad;
}

TEST(TrayKeys, ListedEntriesOfAnotherWatcher) {
	EXPECT_EQ(parseListed("org.example.App/StatusNotifierItem")->key(), "org.example.App/StatusNotifierItem");
	EXPECT_EQ(parseListed(":1.42/org/ayatana/NotificationItem/foo")->service, ":1.42");
	// A bare service means the default path.
	EXPECT_EQ(parseListed("org.kde.StatusNotifierItem-123-1")->key(), "org.kde.StatusNotifierItem-123-1/StatusNotifierItem");
	EXPECT_FALSE(parseListed("/only/a/path"));
	EXPECT_FALSE(parseListed(""));
}

TEST(TrayKeys, TheSavedListComesBackOnTheSameBusOnly) {
	std::vector<SavedItem> items = {{{":1.42", "/org/ayatana/NotificationItem/vpn"}, ":1.42"},
	                                {{"org.kde.StatusNotifierItem-7-1", "/StatusNotifierItem"}, ":1.7"}};
	auto text = savedItemsText("b1d5a4", items);
	EXPECT_EQ(parseSavedItems(text, "b1d5a4"), items);
	// Written on another bus (a later session's): unique names there are other connections.
	EXPECT_TRUE(parseSavedItems(text, "0000").empty());
	EXPECT_TRUE(parseSavedItems(text, "").empty());
	EXPECT_TRUE(parseSavedItems("not json", "b1d5a4").empty());
	EXPECT_TRUE(parseSavedItems(R"({"bus": "b1d5a4", "items": {}})", "b1d5a4").empty());
	// Entries that are no item key or whose owner is no unique name are skipped, not the rest.
	auto some = parseSavedItems(R"({"bus": "b", "items": [
	    {"item": "not a key", "owner": ":1.1"}, {"item": "org.a.B/StatusNotifierItem", "owner": "org.a.B"},
	    {"item": "org.a.B/StatusNotifierItem"}, 7, {"item": "org.a.B/StatusNotifierItem", "owner": ":1.9"}]})",
	                            "b");
	ASSERT_EQ(some.size(), 1u);
	EXPECT_EQ(some[0].address.key(), "org.a.B/StatusNotifierItem");
	EXPECT_EQ(some[0].owner, ":1.9");
	// At most kMaxSavedItems are taken back.
	std::vector<SavedItem> many;
	for (size_t i = 0; i < kMaxSavedItems + 5; ++i) many.push_back({{":1." + std::to_string(i), "/StatusNotifierItem"}, ":1." + std::to_string(i)});
	EXPECT_EQ(parseSavedItems(savedItemsText("b", many), "b").size(), kMaxSavedItems);
}

TEST(TrayKeys, BusNameAndObjectPathSyntax) {
	EXPECT_TRUE(isValidBusName("org.kde.StatusNotifierItem-4-1"));
	EXPECT_TRUE(isValidBusName(":1.42"));
	EXPECT_TRUE(isValidBusName(":1.2.3"));
	EXPECT_FALSE(isValidBusName(":1"));
	EXPECT_FALSE(isValidBusName("org.4kde"));
	EXPECT_FALSE(isValidBusName(std::string(256, 'a') + ".b"));
	EXPECT_TRUE(isValidObjectPath("/"));
	EXPECT_TRUE(isValidObjectPath("/org/a_b/C9"));
	EXPECT_FALSE(isValidObjectPath("org/a"));
	EXPECT_FALSE(isValidObjectPath("/org/a-b"));
}

TEST(TrayEnums, ItemsInQuickshellsOrder) {
	EXPECT_TRUE(itemOrder({}).empty());
	auto order = itemOrder({{"k-hw", "hardware", "a"},
	                        {"k-other", "custom", "a"},
	                        {"k-none", std::nullopt, "0"},
	                        {"k-Beta", "applicationStatus", "Beta"},
	                        {"k-alpha", "applicationStatus", "alpha"},
	                        {"k-comm", "communications", "z"},
	                        {"k-sys", "systemServices", "m"},
	                        {"k-same2", "hardware", "same"},
	                        {"k-same1", "hardware", "SAME"}});
	// Category first (the specification's four in its order, then the rest), then the id without
	// case, then the key.
	EXPECT_EQ(order, (std::vector<std::string>{"k-alpha", "k-Beta", "k-comm", "k-sys", "k-hw", "k-same1", "k-same2",
	                                           "k-none", "k-other"}));
}

TEST(TrayEnums, StatusAndCategoryKeepNonStandardStrings) {
	EXPECT_EQ(statusName("Passive"), "passive");
	EXPECT_EQ(statusName("Active"), "active");
	EXPECT_EQ(statusName("NeedsAttention"), "needsAttention");
	// Never hidden: v2rayN sends free text (Quickshell #495).
	EXPECT_EQ(statusName("Connected to server"), "Connected to server");
	EXPECT_EQ(statusName("active"), "active");
	EXPECT_EQ(categoryName("ApplicationStatus"), "applicationStatus");
	EXPECT_EQ(categoryName("Communications"), "communications");
	EXPECT_EQ(categoryName("SystemServices"), "systemServices");
	EXPECT_EQ(categoryName("Hardware"), "hardware");
	EXPECT_EQ(categoryName("Games"), "Games");
	// The schema lists the standard values.
	const auto& schemas = api::openrpc()["components"]["schemas"];
	std::set<std::string> statuses, categories;
	for (const auto& s: schemas["TrayItem"]["properties"]["status"]["anyOf"][0]["enum"]) statuses.insert(s);
	for (const auto& s: schemas["TrayItem"]["properties"]["category"]["anyOf"][0]["enum"]) categories.insert(s);
	EXPECT_EQ(statuses, (std::set<std::string>{"passive", "active", "needsAttention"}));
	EXPECT_EQ(categories, (std::set<std::string>{"applicationStatus", "communications", "systemServices", "hardware"}));
}

TEST(TrayItemMapping, EveryFieldFromProperties) {
	dbus::Properties p{
	    {"Id", sdbus::Variant(std::string("app"))},
	    {"Title", sdbus::Variant(std::string("App"))},
	    {"Status", sdbus::Variant(std::string("NeedsAttention"))},
	    {"Category", sdbus::Variant(std::string("Hardware"))},
	    {"IconName", sdbus::Variant(std::string("app-icon"))},
	    {"AttentionIconName", sdbus::Variant(std::string("app-alert"))},
	    {"OverlayIconName", sdbus::Variant(std::string("emblem"))},
	    {"IconThemePath", sdbus::Variant(std::string("/opt/app/icons"))},
	    {"IconPixmap", sdbus::Variant(std::vector<PixmapStruct>{PixmapStruct(1, 1, std::vector<uint8_t>{255, 1, 2, 3})})},
	    {"ToolTip", sdbus::Variant(ToolTipStruct("", {}, "Tip", "<i>desc</i>"))},
	    {"ItemIsMenu", sdbus::Variant(true)},
	    {"Menu", sdbus::Variant(sdbus::ObjectPath("/MenuBar"))},
	};
	auto m = mapItem(p);
	EXPECT_TRUE(m.badProperties.empty());
	EXPECT_EQ(m.value, (json{{"id", "app"},
	                         {"title", "App"},
	                         {"status", "needsAttention"},
	                         {"category", "hardware"},
	                         {"iconName", "app-icon"},
	                         {"attentionIconName", "app-alert"},
	                         {"overlayIconName", "emblem"},
	                         {"iconThemePath", "/opt/app/icons"},
	                         {"tooltipTitle", "Tip"},
	                         {"tooltipDescription", "<i>desc</i>"},
	                         {"onlyMenu", true},
	                         {"hasMenu", true}}));
	EXPECT_EQ(m.menuPath, "/MenuBar");
	EXPECT_TRUE(m.icons.attention);
	EXPECT_EQ(m.icons.name, "app-icon");
	EXPECT_EQ(m.icons.themePath, "/opt/app/icons");
	ASSERT_EQ(m.icons.pixmaps.size(), 1u);
	EXPECT_EQ(m.icons.pixmaps[0].argb, (std::vector<uint8_t>{255, 1, 2, 3}));
}

TEST(TrayItemMapping, DefaultsAndDegradedFields) {
	auto m = mapItem({});
	EXPECT_EQ(m.value["status"], "active");
	EXPECT_EQ(m.value["category"], "applicationStatus");
	EXPECT_EQ(m.value["title"], "");
	EXPECT_EQ(m.value["hasMenu"], false);
	EXPECT_EQ(m.value["onlyMenu"], false);
	EXPECT_TRUE(m.badProperties.empty());

	m = mapItem({{"Status", sdbus::Variant(int32_t(2))},
	             {"ToolTip", sdbus::Variant(std::string("just text"))},
	             {"IconPixmap", sdbus::Variant(std::string("no"))},
	             {"Menu", sdbus::Variant(sdbus::ObjectPath("/NO_DBUSMENU"))}});
	EXPECT_EQ(m.value["status"], nullptr);
	EXPECT_EQ(m.value["tooltipTitle"], nullptr);
	EXPECT_EQ(m.value["hasMenu"], false);
	EXPECT_EQ(std::set<std::string>(m.badProperties.begin(), m.badProperties.end()),
	          (std::set<std::string>{"Status", "ToolTip", "IconPixmap"}));
	EXPECT_EQ(menuPathOf({{"Menu", sdbus::Variant(sdbus::ObjectPath("/"))}}), "");
	EXPECT_EQ(menuPathOf({{"Menu", sdbus::Variant(std::string("/Menu"))}}), "/Menu");
}

TEST(TrayItemMapping, AnItemsPropertiesAreKeptAndShownWithinBounds) {
	// A GetAll answer as a hostile item sends it: properties qsd does not show, texts far longer
	// than any field shows, an object path as long, and a shown property of a compound type.
	std::string title = "a" + std::string(20000, 'b');
	std::string category(3000, 'c');
	std::string icon(5000, 'i');
	std::string tip = "a";
	for (int i = 0; i < 12000; ++i) tip += "\xc3\xa9";   // byte 16 384 is inside an "é"
	std::string menu = "/" + std::string(20000, 'm');
	auto msg = dbus::plainMessage();
	sd_bus_message* m = dbus::rawMessage(msg);
	ASSERT_GE(sd_bus_message_open_container(m, 'a', "{sv}"), 0);
	auto entry = [&](const char* name, const char* type, auto... values) {
		ASSERT_GE(sd_bus_message_open_container(m, 'e', "sv"), 0);
		ASSERT_GE(sd_bus_message_append(m, "s", name), 0);
		ASSERT_GE(sd_bus_message_append(m, "v", type, values...), 0);
		ASSERT_GE(sd_bus_message_close_container(m), 0);
	};
	entry("WindowId", "i", 5);                                          // not shown
	entry("AttentionMovieName", "s", "movie");                          // not shown
	entry("XAyatanaLabel", "as", 2, "x", "y");                          // not SNI at all
	entry("Id", "as", 3, "a", "b", "c");                                // mistyped, compound
	entry("Title", "s", title.c_str());
	entry("Category", "s", category.c_str());
	entry("IconName", "s", icon.c_str());
	entry("ItemIsMenu", "b", 1);
	entry("Menu", "o", menu.c_str());
	entry("ToolTip", "(sa(iiay)ss)", "", 0, tip.c_str(), tip.c_str());
	ASSERT_GE(sd_bus_message_close_container(m), 0);
	msg.seal();
	msg.rewind(true);

	dbus::Properties props;
	ItemPixmaps pixmaps;
	readProperties(msg, props, pixmaps);
	std::set<std::string> kept;
	for (const auto& [name, value]: props) kept.insert(name);
	EXPECT_EQ(kept, (std::set<std::string>{"Id", "Title", "Category", "IconName", "ItemIsMenu", "Menu", "ToolTip"}));
	EXPECT_TRUE(props.at("Id").unread());
	EXPECT_EQ(props.at("Id").signature(), "as");
	EXPECT_EQ(dbus::asString(props.at("Title")), title.substr(0, kMaxPropertyText));
	EXPECT_EQ(dbus::asString(props.at("IconName")), icon);   // within the cache's bound: whole
	EXPECT_EQ(dbus::asString(props.at("Menu")), "");        // a path is not cut into another
	auto t = dbus::as<ToolTipStruct>(props.at("ToolTip"));
	ASSERT_TRUE(t);
	EXPECT_EQ(std::get<2>(*t), tip.substr(0, kMaxPropertyText - 1));   // a whole character less
	EXPECT_EQ(std::get<3>(*t).size(), kMaxPropertyText - 1);

	auto mapped = mapItem(props, &pixmaps);
	EXPECT_EQ(mapped.badProperties, (std::vector<std::string>{"Id"}));
	EXPECT_EQ(mapped.value["id"], nullptr);
	EXPECT_EQ(mapped.value["title"], title.substr(0, kMaxItemText));
	EXPECT_EQ(mapped.value["category"], category.substr(0, kMaxItemText));
	EXPECT_EQ(mapped.value["iconName"], icon.substr(0, kMaxIconNameText));
	EXPECT_EQ(mapped.icons.name, icon);   // the lookup gets it whole, and refuses it (> 255 bytes)
	EXPECT_EQ(mapped.value["hasMenu"], false);
	EXPECT_EQ(mapped.value["onlyMenu"], true);
	EXPECT_EQ(mapped.value["tooltipTitle"], tip.substr(0, kMaxItemText - 1));
	EXPECT_EQ(mapped.value["tooltipDescription"], tip.substr(0, kMaxTooltipBytes - 1));

	// A status that is not in the table is shown as sent, up to the texts' bound; NewStatus's
	// own text is kept as a property is.
	EXPECT_EQ(dbus::asString(keptText(std::string(kMaxPropertyText + 10, 's'))), std::string(kMaxPropertyText, 's'));
	auto status = mapItem({{"Status", keptText(std::string(3000, 's'))}});
	EXPECT_EQ(status.value["status"], std::string(kMaxItemText, 's'));
	// A menu path sent as a string is not cut into another path either.
	auto asString = dbus::plainMessage();
	ASSERT_GE(sd_bus_message_append(dbus::rawMessage(asString), "a{sv}", 1, "Menu", "s", menu.c_str()), 0);
	asString.seal();
	asString.rewind(true);
	readProperties(asString, props, pixmaps);
	EXPECT_EQ(dbus::asString(props.at("Menu")), "");
	EXPECT_TRUE(isShownItemProperty("ToolTip"));
	EXPECT_FALSE(isShownItemProperty("WindowId"));
}

namespace {

Pixmap pixmapOfBytes(size_t bytes) { return Pixmap{1, 1, std::vector<uint8_t>(bytes)}; }

ItemPixmaps pixmapsOf(size_t icon, size_t attention, size_t overlay) {
	ItemPixmaps p;
	if (icon) p.icon.push_back(pixmapOfBytes(icon));
	if (attention) p.attention.push_back(pixmapOfBytes(attention));
	if (overlay) p.overlay.push_back(pixmapOfBytes(overlay));
	return p;
}

} // namespace

TEST(TrayPixmapBudget, AConnectionsItemsShareItsBytesInTheOrderIconAttentionOverlay) {
	PixmapBudget budget({.maxBytes = 100, .maxOwnerBytes = 30});
	auto a = pixmapsOf(10, 15, 10);
	// 10 + 15 fit in 30; the overlay would make 35: emptied.
	EXPECT_EQ(budget.keep("a", ":1.1", a), std::vector<std::string_view>{"OverlayIconPixmap"});
	EXPECT_EQ(a.icon.size(), 1u);
	EXPECT_EQ(a.attention.size(), 1u);
	EXPECT_TRUE(a.overlay.empty());
	EXPECT_EQ(budget.ownerBytes(":1.1"), 25u);
	// Another item of the same connection gets what is left; one of another connection, its own.
	auto b = pixmapsOf(10, 5, 0);
	EXPECT_EQ(budget.keep("b", ":1.1", b), std::vector<std::string_view>{"IconPixmap"});
	EXPECT_EQ(b.attention.size(), 1u);
	auto c = pixmapsOf(30, 0, 0);
	EXPECT_TRUE(budget.keep("c", ":1.2", c).empty());
	EXPECT_EQ(budget.ownerBytes(":1.1"), 30u);
	EXPECT_EQ(budget.bytes(), 60u);
	// An item read again is charged for what it holds now, not in addition to what it held.
	auto a2 = pixmapsOf(20, 0, 0);
	EXPECT_TRUE(budget.keep("a", ":1.1", a2).empty());
	EXPECT_EQ(budget.ownerBytes(":1.1"), 25u);
	// Gone, its bytes are the connection's again.
	budget.release("a");
	budget.release("b");
	EXPECT_EQ(budget.ownerBytes(":1.1"), 0u);
	auto d = pixmapsOf(30, 0, 0);
	EXPECT_TRUE(budget.keep("d", ":1.1", d).empty());
	EXPECT_EQ(budget.bytes(), 60u);
	budget.release("unknown");
	EXPECT_EQ(budget.bytes(), 60u);
}

TEST(TrayPixmapBudget, EveryItemTogetherWithinTheSessionsBytes) {
	// Many connections, each within its own bytes, fill the session's; then nobody's is kept
	// until some go.
	PixmapBudget budget({.maxBytes = 100, .maxOwnerBytes = 40});
	for (int i = 0; i < 3; ++i) {
		auto p = pixmapsOf(30, 0, 0);
		EXPECT_TRUE(budget.keep("item" + std::to_string(i), ":1." + std::to_string(i), p).empty());
	}
	auto late = pixmapsOf(30, 5, 0);
	EXPECT_EQ(budget.keep("late", ":1.9", late), std::vector<std::string_view>{"IconPixmap"});
	EXPECT_EQ(late.attention.size(), 1u);
	EXPECT_EQ(budget.bytes(), 95u);
	budget.release("item0");
	auto again = pixmapsOf(30, 5, 0);
	EXPECT_TRUE(budget.keep("late", ":1.9", again).empty());
	EXPECT_EQ(budget.bytes(), 95u);
	// An item with no pixmaps holds nothing.
	auto none = pixmapsOf(0, 0, 0);
	EXPECT_TRUE(budget.keep("none", ":1.8", none).empty());
	EXPECT_EQ(budget.ownerBytes(":1.8"), 0u);
}

TEST(TrayItemMapping, SignalsInvalidateTheirProperties) {
	EXPECT_EQ(propertiesOfSignal("NewTitle"), (std::vector<std::string>{"Title"}));
	EXPECT_EQ(propertiesOfSignal("NewIcon"), (std::vector<std::string>{"IconName", "IconPixmap", "IconThemePath"}));
	EXPECT_EQ(propertiesOfSignal("NewAttentionIcon"), (std::vector<std::string>{"AttentionIconName", "AttentionIconPixmap"}));
	EXPECT_EQ(propertiesOfSignal("NewOverlayIcon"), (std::vector<std::string>{"OverlayIconName", "OverlayIconPixmap"}));
	EXPECT_EQ(propertiesOfSignal("NewToolTip"), (std::vector<std::string>{"ToolTip"}));
	EXPECT_EQ(propertiesOfSignal("NewStatus"), (std::vector<std::string>{"Status"}));
	EXPECT_TRUE(propertiesOfSignal("Activate").empty());
}

TEST(TrayMenu, LayoutToJson) {
	auto root = node(0, {{"children-display", sdbus::Variant(std::string("submenu"))}},
	                 {node(1, {{"label", sdbus::Variant(std::string("_Open file"))}}),
	                  node(2, {{"type", sdbus::Variant(std::string("separator"))}}),
	                  node(3, {{"label", sdbus::Variant(std::string("More"))}, {"children-display", sdbus::Variant(std::string("submenu"))}},
	                       {node(4, {{"label", sdbus::Variant(std::string("Check"))},
	                                 {"toggle-type", sdbus::Variant(std::string("checkmark"))},
	                                 {"toggle-state", sdbus::Variant(int32_t(1))}}),
	                        node(5, {{"label", sdbus::Variant(std::string("Radio"))},
	                                 {"toggle-type", sdbus::Variant(std::string("radio"))},
	                                 {"toggle-state", sdbus::Variant(int32_t(7))},
	                                 {"enabled", sdbus::Variant(false)},
	                                 {"visible", sdbus::Variant(false)}})}),
	                  node(6, {{"label", sdbus::Variant(std::string("Quit"))},
	                           {"icon-name", sdbus::Variant(std::string("application-exit"))},
	                           {"shortcut", sdbus::Variant(std::vector<std::vector<std::string>>{{"Control", "q"}})}})});
	std::vector<std::string> asked;
	auto j = menuToJson(root, [&](const MenuProps& props) -> json {
		const auto& name = props.iconName;
		asked.push_back(name);
		return name.empty() ? json(nullptr) : json("file:///icons/" + name + ".svg");
	});
	EXPECT_EQ(j["id"], 0);
	EXPECT_EQ(j["submenu"], true);
	ASSERT_EQ(j["children"].size(), 4u);
	EXPECT_EQ(j["children"][0], (json{{"id", 1},
	                                  {"label", "Open file"},
	                                  {"mnemonic", "o"},
	                                  {"enabled", true},
	                                  {"visible", true},
	                                  {"type", "standard"},
	                                  {"toggleType", "none"},
	                                  {"toggleState", -1},
	                                  {"iconName", ""},
	                                  {"icon", nullptr},
	                                  {"shortcut", nullptr},
	                                  {"submenu", false},
	                                  {"children", json::array()}}));
	EXPECT_EQ(j["children"][1]["type"], "separator");
	const auto& more = j["children"][2];
	EXPECT_EQ(more["submenu"], true);
	EXPECT_EQ(more["children"][0]["toggleType"], "checkmark");
	EXPECT_EQ(more["children"][0]["toggleState"], 1);
	EXPECT_EQ(more["children"][1]["toggleType"], "radio");
	EXPECT_EQ(more["children"][1]["toggleState"], -1);   // anything but 0 and 1 is "indeterminate"
	EXPECT_EQ(more["children"][1]["enabled"], false);
	EXPECT_EQ(more["children"][1]["visible"], false);
	EXPECT_EQ(j["children"][3]["icon"], "file:///icons/application-exit.svg");
	EXPECT_EQ(j["children"][3]["shortcut"], "Control+q");
	// Every entry has the fields the schema requires.
	const auto& schema = api::openrpc()["components"]["schemas"]["TrayMenuEntry"];
	std::set<std::string> required(schema["required"].begin(), schema["required"].end());
	std::set<std::string> keys;
	for (const auto& [k, _]: j.items()) keys.insert(k);
	EXPECT_EQ(keys, required);
}

TEST(TrayMenu, PropertiesSetFromTheWireAndResetToTheirDefaults) {
	MenuProps p;
	setMenuProperty(p, "label", sdbus::Variant(std::string("A")));
	setMenuProperty(p, "enabled", sdbus::Variant(false));
	setMenuProperty(p, "toggle-state", sdbus::Variant(int32_t(1)));
	setMenuProperty(p, "toggle-type", sdbus::Variant(std::string("radio")));
	setMenuProperty(p, "icon-data", sdbus::Variant(std::vector<uint8_t>{1, 2, 3}));
	setMenuProperty(p, "disposition", sdbus::Variant(std::string("alert")));   // not shown: ignored
	EXPECT_EQ(p.label, "A");
	EXPECT_FALSE(p.enabled);
	EXPECT_EQ(p.toggleState, 1);
	EXPECT_EQ(p.toggleType, "radio");
	EXPECT_EQ(p.iconData, (std::vector<uint8_t>{1, 2, 3}));
	// A value of an unexpected type takes the default.
	setMenuProperty(p, "enabled", sdbus::Variant(std::string("no")));
	EXPECT_TRUE(p.enabled);
	setMenuProperty(p, "toggle-type", sdbus::Variant(std::string("switch")));
	EXPECT_EQ(p.toggleType, "");
	// ItemsPropertiesUpdated's removed properties go back to the defaults.
	resetMenuProperty(p, "label");
	resetMenuProperty(p, "toggle-state");
	resetMenuProperty(p, "icon-data");
	EXPECT_EQ(p.label, "");
	EXPECT_EQ(p.toggleState, -1);
	EXPECT_TRUE(p.iconData.empty());
	auto root = node(0, {}, {node(1, {}), node(2, {}, {node(3, {})})});
	EXPECT_EQ(findNode(root, 3)->id, 3);
	EXPECT_EQ(findNode(root, 9), nullptr);
}

// Properties qsd does not show are skipped unread, whatever their type, and those after them
// are still read; a shown one of another type takes its default.
TEST(TrayMenu, ALayoutFromTheWireSkipsWhatItDoesNotShow) {
	auto msg = dbus::plainMessage();
	sd_bus_message* m = dbus::rawMessage(msg);
	ASSERT_GE(sd_bus_message_append(m, "u", 7u), 0);
	ASSERT_GE(sd_bus_message_open_container(m, 'r', "ia{sv}av"), 0);
	ASSERT_GE(sd_bus_message_append(m, "i", 0), 0);
	ASSERT_GE(sd_bus_message_append(m, "a{sv}", 0), 0);
	ASSERT_GE(sd_bus_message_open_container(m, 'a', "v"), 0);
	ASSERT_GE(sd_bus_message_open_container(m, 'v', "(ia{sv}av)"), 0);
	ASSERT_GE(sd_bus_message_open_container(m, 'r', "ia{sv}av"), 0);
	ASSERT_GE(sd_bus_message_append(m, "i", 4), 0);
	ASSERT_GE(sd_bus_message_append(m, "a{sv}", 6,                                         //
	                                 "disposition", "a{sv}", 1, "x", "i", 3,                 // not shown, compound
	                                 "accessible-desc", "s", "Opens a file",                 // not shown
	                                 "label", "s", "_Open",                                  //
	                                 "toggle-state", "s", "on",                              // mistyped
	                                 "enabled", "b", 0,                                      //
	                                 "shortcut", "aas", 1, 2, "Control", "o"),
	          0);
	ASSERT_GE(sd_bus_message_append(m, "av", 0), 0);
	ASSERT_GE(sd_bus_message_close_container(m), 0);
	ASSERT_GE(sd_bus_message_close_container(m), 0);
	ASSERT_GE(sd_bus_message_close_container(m), 0);
	ASSERT_GE(sd_bus_message_close_container(m), 0);
	msg.seal();
	msg.rewind(true);
	size_t skipped = 0;
	bool rootProperties = true;
	MenuNode root = readLayout(msg, skipped, &rootProperties);
	EXPECT_EQ(skipped, 0u);
	EXPECT_FALSE(rootProperties);
	ASSERT_EQ(root.children.size(), 1u);
	const MenuProps& p = root.children[0].props;
	EXPECT_EQ(root.children[0].id, 4);
	EXPECT_EQ(p.label, "_Open");
	EXPECT_FALSE(p.enabled);
	EXPECT_EQ(p.toggleState, -1);
	EXPECT_EQ(p.shortcut, "Control+o");
	EXPECT_FALSE(isShownMenuProperty("disposition"));
	EXPECT_TRUE(isShownMenuProperty("children-display"));
}

TEST(TrayMenu, TheIndexFindsEntriesByIdAsFindNodeDoes) {
	MenuNode root;
	root.children.resize(3);
	for (int i = 0; i < 3; ++i) root.children[size_t(i)].id = i + 1;
	root.children[1].children.resize(2);
	root.children[1].children[0].id = 20;
	root.children[1].children[1].id = 3;   // a duplicate id: the first in menu order wins
	MenuIndex index;
	index.rebuild(&root);
	EXPECT_EQ(index.size(), 5u);
	for (int id: {0, 1, 2, 3, 20}) EXPECT_EQ(index.find(id), findNode(root, id)) << id;
	EXPECT_EQ(index.find(3), &root.children[1].children[1]);
	EXPECT_EQ(index.find(99), nullptr);
	// Where each sits, and every entry counted (the duplicate too): what a submenu read again
	// may add is counted from them.
	EXPECT_EQ(index.depth(0), 0u);
	EXPECT_EQ(index.depth(1), 1u);
	EXPECT_EQ(index.depth(3), 2u);
	EXPECT_EQ(index.entries(), 6u);
	EXPECT_EQ(menuEntries(root), 6u);
	EXPECT_EQ(menuEntries(root.children[1]), 3u);
	index.rebuild(nullptr);
	EXPECT_EQ(index.find(0), nullptr);
	EXPECT_EQ(index.entries(), 0u);
}

namespace {

// A GetLayout reply: (u revision, (ia{sv}av)) with `children` entries under the root `id`, the
// first `chain` levels deep.
sdbus::PlainMessage layoutReply(int32_t id, int children, int chain) {
	auto msg = dbus::plainMessage();
	sd_bus_message* m = dbus::rawMessage(msg);
	EXPECT_GE(sd_bus_message_append(m, "u", 1u), 0);
	std::function<void(int32_t, int, int)> entry = [&](int32_t eid, int n, int levels) {
		EXPECT_GE(sd_bus_message_open_container(m, 'r', "ia{sv}av"), 0);
		EXPECT_GE(sd_bus_message_append(m, "i", eid), 0);
		EXPECT_GE(sd_bus_message_append(m, "a{sv}", 1, "label", "s", "x"), 0);
		EXPECT_GE(sd_bus_message_open_container(m, 'a', "v"), 0);
		for (int i = 0; i < n; ++i) {
			EXPECT_GE(sd_bus_message_open_container(m, 'v', "(ia{sv}av)"), 0);
			if (i == 0 && levels > 1) entry(eid * 100 + i + 1, 1, levels - 1);
			else entry(eid * 100 + i + 1, 0, 0);
			EXPECT_GE(sd_bus_message_close_container(m), 0);
		}
		EXPECT_GE(sd_bus_message_close_container(m), 0);
		EXPECT_GE(sd_bus_message_close_container(m), 0);
	};
	entry(id, children, chain);
	msg.seal();
	msg.rewind(true);
	return msg;
}

} // namespace

// A submenu read again is spliced into its menu: the bounds hold for the whole menu, counted
// from where the submenu is (its depth, and the entries the menu keeps besides its children).
TEST(TrayMenu, ASubmenuReadIntoItsPlaceKeepsTheWholeMenusBounds) {
	size_t skipped = 0;
	auto whole = layoutReply(5, 10, 3);
	MenuNode alone = readLayout(whole, skipped);
	EXPECT_EQ(skipped, 0u);
	EXPECT_EQ(menuEntries(alone), 1u + 10 + 2);
	// At depth 14 of a menu of 4090 entries: two levels below it, and six entries more.
	skipped = 0;
	auto placed = layoutReply(5, 10, 3);
	MenuNode node = readLayout(placed, skipped, nullptr, LayoutPlace{kMaxMenuDepth - 2, kMaxMenuEntries - 6});
	EXPECT_EQ(menuEntries(node) - 1, 6u);
	ASSERT_EQ(node.children.size(), 5u);
	ASSERT_EQ(node.children[0].children.size(), 1u);
	EXPECT_TRUE(node.children[0].children[0].children.empty());   // it would be at depth 17
	EXPECT_EQ(skipped, 1u + 5);
	// At the deepest level, or in a full menu: nothing below it.
	skipped = 0;
	auto deepest = layoutReply(5, 3, 1);
	EXPECT_TRUE(readLayout(deepest, skipped, nullptr, LayoutPlace{kMaxMenuDepth, 1}).children.empty());
	auto full = layoutReply(5, 3, 1);
	EXPECT_TRUE(readLayout(full, skipped, nullptr, LayoutPlace{1, kMaxMenuEntries}).children.empty());
	EXPECT_EQ(skipped, 6u);
}

// Of each pixmap property only the entry the icon is made of is kept (choosePixmap's for a
// kDefaultIconSize icon): an item once kept seven 4 MiB entries of a 1x1 size in each.
TEST(TrayItemMapping, OfEachPixmapPropertyOnlyTheEntryTheIconIsMadeOfIsKept) {
	std::vector<uint8_t> junk((4u << 20) - 1, 7);
	std::vector<uint8_t> px16(16 * 16 * 4, 0x10), px96(96 * 96 * 4, 0x96), px128(128 * 128 * 4, 0x80);
	struct Entry {
		int32_t w, h;
		const std::vector<uint8_t>* data;
	};
	auto msg = dbus::plainMessage();
	sd_bus_message* m = dbus::rawMessage(msg);
	auto property = [&](const char* name, std::vector<Entry> entries) {
		ASSERT_GE(sd_bus_message_open_container(m, 'e', "sv"), 0);
		ASSERT_GE(sd_bus_message_append(m, "s", name), 0);
		ASSERT_GE(sd_bus_message_open_container(m, 'v', "a(iiay)"), 0);
		ASSERT_GE(sd_bus_message_open_container(m, 'a', "(iiay)"), 0);
		for (const auto& e: entries) {
			ASSERT_GE(sd_bus_message_open_container(m, 'r', "iiay"), 0);
			ASSERT_GE(sd_bus_message_append(m, "ii", e.w, e.h), 0);
			ASSERT_GE(sd_bus_message_append_array(m, 'y', e.data->data(), e.data->size()), 0);
			ASSERT_GE(sd_bus_message_close_container(m), 0);
		}
		ASSERT_GE(sd_bus_message_close_container(m), 0);
		ASSERT_GE(sd_bus_message_close_container(m), 0);
		ASSERT_GE(sd_bus_message_close_container(m), 0);
	};
	ASSERT_GE(sd_bus_message_open_container(m, 'a', "{sv}"), 0);
	property("IconPixmap", {{1, 1, &junk}, {16, 16, &px16}, {128, 128, &px128}, {96, 96, &px96}, {1, 1, &junk}});
	property("AttentionIconPixmap", {{1, 1, &junk}, {1, 1, &junk}, {2, 2, &px16}});
	property("OverlayIconPixmap", {{16, 16, &px16}, {1, 1, &junk}});
	ASSERT_GE(sd_bus_message_close_container(m), 0);
	msg.seal();
	msg.rewind(true);
	dbus::Properties props;
	ItemPixmaps pixmaps;
	readProperties(msg, props, pixmaps);
	ASSERT_EQ(pixmaps.icon.size(), 1u);
	EXPECT_EQ(pixmaps.icon[0].width, 96);
	EXPECT_EQ(pixmaps.icon[0].argb, px96);
	EXPECT_TRUE(pixmaps.attention.empty());
	ASSERT_EQ(pixmaps.overlay.size(), 1u);
	EXPECT_EQ(pixmaps.overlay[0].argb, px16);
	auto mapped = mapItem(props, &pixmaps);
	EXPECT_EQ(mapped.icons.pixmaps.size(), 1u);
	EXPECT_TRUE(mapped.badProperties.empty());
}

TEST(TrayMenu, MnemonicsAndShortcuts) {
	std::string m;
	EXPECT_EQ(stripMnemonic("_File", &m), "File");
	EXPECT_EQ(m, "f");
	m.clear();
	EXPECT_EQ(stripMnemonic("Save __as", &m), "Save _as");
	EXPECT_EQ(m, "");
	EXPECT_EQ(stripMnemonic("a_b_c", &m), "abc");
	EXPECT_EQ(m, "b");
	EXPECT_EQ(shortcutText({{"Control", "Shift", "s"}, {"F12"}}), "Control+Shift+s, F12");
	EXPECT_EQ(shortcutText({}), "");
}

#endif // QSD_TRAY_BACKEND
