#include "mapping.hpp"

#include "../../text.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <tuple>
#include <utility>

namespace qsd::tray {

using json = nlohmann::json;

namespace {

bool isElementChar(char c, bool allowDash) {
	return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (allowDash && c == '-');
}

struct EnumName {
	const char* wire;
	const char* tree;
};

template <size_t N>
std::string fromTable(const std::array<EnumName, N>& table, std::string_view value) {
	for (const auto& e: table)
		if (value == e.wire) return e.tree;
	return std::string(value);
}

constexpr std::array<EnumName, 3> kStatus = {{
    {"Passive", "passive"},
    {"Active", "active"},
    {"NeedsAttention", "needsAttention"},
}};

constexpr std::array<EnumName, 4> kCategory = {{
    {"ApplicationStatus", "applicationStatus"},
    {"Communications", "communications"},
    {"SystemServices", "systemServices"},
    {"Hardware", "hardware"},
}};

using PixmapStruct = sdbus::Struct<int32_t, int32_t, std::vector<uint8_t>>;
using ToolTipStruct = sdbus::Struct<std::string, std::vector<PixmapStruct>, std::string, std::string>;

} // namespace

// In sync with the D-Bus specification, "Valid Names" (and sd-bus's service_name_is_valid).
bool isValidBusName(std::string_view name) {
	if (name.empty() || name.size() > 255) return false;
	bool unique = name[0] == ':';
	std::string_view rest = unique ? name.substr(1) : name;
	size_t elements = 0;
	size_t start = 0;
	while (start <= rest.size()) {
		size_t dot = rest.find('.', start);
		std::string_view element = rest.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
		if (element.empty()) return false;
		// Elements of well-known names must not start with a digit; unique names' may.
		if (!unique && std::isdigit(static_cast<unsigned char>(element[0]))) return false;
		for (char c: element)
			if (!isElementChar(c, true)) return false;
		++elements;
		if (dot == std::string_view::npos) break;
		start = dot + 1;
	}
	return elements >= 2;
}

bool isValidObjectPath(std::string_view path) {
	if (path.empty() || path[0] != '/') return false;
	if (path.size() == 1) return true;
	if (path.back() == '/') return false;
	char prev = '/';
	for (size_t i = 1; i < path.size(); ++i) {
		char c = path[i];
		if (c == '/') {
			if (prev == '/') return false;
		} else if (!isElementChar(c, false)) {
			return false;
		}
		prev = c;
	}
	return true;
}

std::optional<ItemAddress> parseListed(std::string_view entry) {
	ItemAddress a;
	auto slash = entry.find('/');
	if (slash == std::string_view::npos) {
		a.service = std::string(entry);
		a.path = kDefaultItemPath;
	} else {
		a.service = std::string(entry.substr(0, slash));
		a.path = std::string(entry.substr(slash));
	}
	if (!isValidBusName(a.service) || !isValidObjectPath(a.path)) return std::nullopt;
	return a;
}

std::optional<ItemAddress> parseRegistration(std::string_view arg, std::string_view sender) {
	if (!arg.empty() && arg[0] == '/') {
		// libappindicator and ayatana pass only their object path: the caller is the service.
		ItemAddress a{std::string(sender), std::string(arg)};
		if (!isValidBusName(a.service) || !isValidObjectPath(a.path)) return std::nullopt;
		return a;
	}
	return parseListed(arg);
}

std::string savedItemsText(std::string_view busId, const std::vector<SavedItem>& items) {
	json list = json::array();
	for (const auto& i: items) list.push_back({{"item", i.address.key()}, {"owner", i.owner}});
	return json{{"bus", busId}, {"items", std::move(list)}}.dump() + "\n";
}

std::vector<SavedItem> parseSavedItems(std::string_view text, std::string_view busId) {
	std::vector<SavedItem> out;
	auto doc = json::parse(text, nullptr, false);
	if (!doc.is_object() || doc.value("bus", json()) != busId || busId.empty()) return out;
	auto list = doc.find("items");
	if (list == doc.end() || !list->is_array()) return out;
	for (const auto& e: *list) {
		if (out.size() == kMaxSavedItems) break;
		if (!e.is_object() || !e.value("item", json()).is_string() || !e.value("owner", json()).is_string()) continue;
		auto address = parseListed(e["item"].get<std::string>());
		auto owner = e["owner"].get<std::string>();
		if (!address || owner.empty() || owner[0] != ':' || !isValidBusName(owner)) continue;
		out.push_back({std::move(*address), std::move(owner)});
	}
	return out;
}

std::string statusName(std::string_view status) { return fromTable(kStatus, status); }
std::string categoryName(std::string_view category) { return fromTable(kCategory, category); }

std::vector<std::string> itemOrder(std::vector<OrderEntry> items) {
	auto rank = [](const std::optional<std::string>& category) {
		for (size_t i = 0; i < kCategory.size(); ++i)
			if (category && *category == kCategory[i].tree) return i;
		return kCategory.size();
	};
	auto lower = [](std::string s) {
		for (auto& c: s) c = char(std::tolower(static_cast<unsigned char>(c)));
		return s;
	};
	std::vector<std::tuple<size_t, std::string, std::string>> keyed;
	keyed.reserve(items.size());
	for (auto& e: items) keyed.emplace_back(rank(e.category), lower(std::move(e.id)), std::move(e.key));
	std::sort(keyed.begin(), keyed.end());
	std::vector<std::string> out;
	out.reserve(keyed.size());
	for (auto& k: keyed) out.push_back(std::move(std::get<2>(k)));
	return out;
}

std::optional<std::vector<Pixmap>> pixmapsOf(const dbus::Value& v) {
	auto raw = dbus::as<std::vector<PixmapStruct>>(v);
	if (!raw) return std::nullopt;
	std::vector<Pixmap> out;
	out.reserve(raw->size());
	for (auto& p: *raw) out.push_back(Pixmap{std::get<0>(p), std::get<1>(p), std::move(std::get<2>(p))});
	return out;
}

std::vector<std::string_view> PixmapBudget::keep(const std::string& key, const std::string& owner, ItemPixmaps& pixmaps) {
	release(key);
	std::vector<std::string_view> dropped;
	size_t& ownerTotal = owners_[owner];
	size_t kept = 0;
	for (auto [name, slot]: {std::pair<const char*, std::vector<Pixmap>*>{"IconPixmap", &pixmaps.icon},
	                         {"AttentionIconPixmap", &pixmaps.attention},
	                         {"OverlayIconPixmap", &pixmaps.overlay}}) {
		size_t bytes = 0;
		for (const auto& p: *slot) bytes += p.argb.size();
		if (bytes == 0) continue;
		if (ownerTotal + kept + bytes > limits_.maxOwnerBytes || total_ + kept + bytes > limits_.maxBytes) {
			*slot = {};   // the entry's pixels are freed with it
			dropped.push_back(name);
			continue;
		}
		kept += bytes;
	}
	if (kept == 0) {
		if (ownerTotal == 0) owners_.erase(owner);
		return dropped;
	}
	ownerTotal += kept;
	total_ += kept;
	items_[key] = Charge{owner, kept};
	return dropped;
}

void PixmapBudget::release(const std::string& key) {
	auto it = items_.find(key);
	if (it == items_.end()) return;
	auto owner = owners_.find(it->second.owner);
	if (owner != owners_.end()) {
		owner->second -= it->second.bytes;
		if (owner->second == 0) owners_.erase(owner);
	}
	total_ -= it->second.bytes;
	items_.erase(it);
}

size_t PixmapBudget::ownerBytes(const std::string& owner) const {
	auto it = owners_.find(owner);
	return it == owners_.end() ? 0 : it->second;
}

MappedItem mapItem(const dbus::Properties& props, const ItemPixmaps* pixmaps) {
	MappedItem m;
	json& v = m.value;
	v = json::object();

	// A string property: its value, `fallback` when missing, null (and reported) when mistyped.
	auto str = [&](const char* name, const char* fallback) -> std::optional<std::string> {
		const auto* p = dbus::find(props, name);
		if (!p) return std::string(fallback);
		auto s = dbus::asString(*p);
		if (!s) m.badProperties.emplace_back(name);
		return s;
	};
	// A text field: the property's text up to `max` bytes (cut where a character starts), or null.
	auto put = [&](const char* field, const std::optional<std::string>& s, size_t max) {
		v[field] = s ? json(std::string(cutAtCharacter(*s, max))) : json(nullptr);
	};
	put("id", str("Id", ""), kMaxItemText);
	put("title", str("Title", ""), kMaxItemText);
	auto status = str("Status", "Active");
	v["status"] = status ? json(statusName(cutAtCharacter(*status, kMaxItemText))) : json(nullptr);
	auto category = str("Category", "ApplicationStatus");
	v["category"] = category ? json(categoryName(cutAtCharacter(*category, kMaxItemText))) : json(nullptr);

	// Shown up to kMaxIconNameText; the lookup gets them whole, and refuses what names no file.
	auto name = str("IconName", ""), attention = str("AttentionIconName", ""), overlay = str("OverlayIconName", "");
	auto themePath = str("IconThemePath", "");
	put("iconName", name, kMaxIconNameText);
	put("attentionIconName", attention, kMaxIconNameText);
	put("overlayIconName", overlay, kMaxIconNameText);
	put("iconThemePath", themePath, kMaxIconNameText);
	m.icons.name = name.value_or("");
	m.icons.attentionName = attention.value_or("");
	m.icons.overlayName = overlay.value_or("");
	m.icons.themePath = themePath.value_or("");
	m.icons.attention = status && *status == "NeedsAttention";

	auto pix = [&](const char* prop, std::vector<Pixmap>& out, const std::vector<Pixmap>* decoded) {
		const auto* p = dbus::find(props, prop);
		if (!p) {
			if (decoded) out = *decoded;
			return;
		}
		if (auto x = pixmapsOf(*p)) out = std::move(*x);
		else m.badProperties.emplace_back(prop);
	};
	pix("IconPixmap", m.icons.pixmaps, pixmaps ? &pixmaps->icon : nullptr);
	pix("AttentionIconPixmap", m.icons.attentionPixmaps, pixmaps ? &pixmaps->attention : nullptr);
	pix("OverlayIconPixmap", m.icons.overlayPixmaps, pixmaps ? &pixmaps->overlay : nullptr);

	// ToolTip is (sa(iiay)ss): icon name, icon pixmaps, title, description (markup kept).
	v["tooltipTitle"] = "";
	v["tooltipDescription"] = "";
	if (const auto* p = dbus::find(props, "ToolTip")) {
		if (auto t = dbus::as<ToolTipStruct>(*p)) {
			v["tooltipTitle"] = cutAtCharacter(std::get<2>(*t), kMaxItemText);
			v["tooltipDescription"] = cutAtCharacter(std::get<3>(*t), kMaxTooltipBytes);
		} else {
			m.badProperties.emplace_back("ToolTip");
			v["tooltipTitle"] = nullptr;
			v["tooltipDescription"] = nullptr;
		}
	}

	v["onlyMenu"] = false;
	if (const auto* p = dbus::find(props, "ItemIsMenu")) {
		auto b = dbus::asBool(*p);
		if (!b) m.badProperties.emplace_back("ItemIsMenu");
		v["onlyMenu"] = b ? json(*b) : json(nullptr);
	}

	if (const auto* p = dbus::find(props, "Menu"); p && !dbus::asString(*p)) m.badProperties.emplace_back("Menu");
	m.menuPath = menuPathOf(props);
	v["hasMenu"] = !m.menuPath.empty();
	return m;
}

std::string menuPathOf(const dbus::Properties& props) {
	const auto* p = dbus::find(props, "Menu");
	auto path = p ? dbus::asString(*p) : std::nullopt;
	// "/" and "/NO_DBUSMENU" (Quickshell #999) mean no menu.
	if (!path || !isValidObjectPath(*path) || *path == "/" || *path == "/NO_DBUSMENU") return {};
	return *path;
}

std::vector<std::string> propertiesOfSignal(std::string_view member) {
	if (member == "NewTitle") return {"Title"};
	// IconThemePath has no signal of its own in the KDE specification: it changes with the icon.
	if (member == "NewIcon") return {"IconName", "IconPixmap", "IconThemePath"};
	if (member == "NewAttentionIcon") return {"AttentionIconName", "AttentionIconPixmap"};
	if (member == "NewOverlayIcon") return {"OverlayIconName", "OverlayIconPixmap"};
	if (member == "NewToolTip") return {"ToolTip"};
	if (member == "NewStatus") return {"Status"};
	if (member == "NewMenu") return {"Menu"};
	// libappindicator's extension.
	if (member == "NewIconThemePath") return {"IconThemePath"};
	return {};
}

// ------------------------------------------------------------------------------------------
// DBusMenu

std::string stripMnemonic(std::string_view label, std::string* mnemonic) {
	std::string out;
	out.reserve(label.size());
	bool found = false;
	for (size_t i = 0; i < label.size(); ++i) {
		if (label[i] != '_') {
			out += label[i];
			continue;
		}
		if (i + 1 < label.size() && label[i + 1] == '_') {
			out += '_';
			++i;
			continue;
		}
		// The first single underscore marks the access key; later ones are dropped too.
		if (!found && i + 1 < label.size() && mnemonic) {
			*mnemonic = std::string(1, char(std::tolower(static_cast<unsigned char>(label[i + 1]))));
			found = true;
		}
	}
	return out;
}

std::string shortcutText(const std::vector<std::vector<std::string>>& shortcut) {
	std::string out;
	for (const auto& combo: shortcut) {
		if (combo.empty()) continue;
		if (!out.empty()) out += ", ";
		for (size_t i = 0; i < combo.size(); ++i) out += (i ? "+" : "") + combo[i];
	}
	return out;
}

bool isShownItemProperty(std::string_view name) {
	return std::find(kShownItemProperties.begin(), kShownItemProperties.end(), name) != kShownItemProperties.end();
}

// The keys setMenuProperty and resetMenuProperty read; a key added there is added here, or the
// wire reader skips it unread (wire.cpp).
bool isShownMenuProperty(std::string_view key) {
	static constexpr std::string_view kShown[] = {"label",     "enabled",    "visible",  "type",
	                                              "toggle-type", "toggle-state", "icon-name", "icon-data",
	                                              "shortcut",  "children-display"};
	return std::find(std::begin(kShown), std::end(kShown), key) != std::end(kShown);
}

void setMenuProperty(MenuProps& p, const std::string& key, const dbus::Value& value) {
	auto str = [&] { return dbus::asString(value).value_or(""); };
	auto boolean = [&](bool fallback) { return dbus::asBool(value).value_or(fallback); };
	if (key == "label") p.label = cutAtCharacter(str(), kMaxItemText);
	else if (key == "enabled") p.enabled = boolean(true);
	else if (key == "visible") p.visible = boolean(true);
	else if (key == "type") p.separator = str() == "separator";
	else if (key == "toggle-type") {
		auto t = str();
		p.toggleType = t == "checkmark" || t == "radio" ? t : std::string();
	} else if (key == "toggle-state") {
		auto x = dbus::asInt(value);
		p.toggleState = !x ? -1 : *x == 0 ? 0 : *x == 1 ? 1 : -1;
	} else if (key == "icon-name") p.iconName = cutAtCharacter(str(), kMaxIconNameText);
	else if (key == "icon-data") {
		p.iconData = dbus::asBytes(value).value_or(std::vector<uint8_t>());
		if (p.iconData.size() > kMaxIconData) p.iconData.clear();
		p.iconFile.reset();
	}
	else if (key == "shortcut") {
		auto s = dbus::as<std::vector<std::vector<std::string>>>(value);
		p.shortcut = s ? std::string(cutAtCharacter(shortcutText(*s), kMaxItemText)) : std::string();
	} else if (key == "children-display") p.submenu = str() == "submenu";
	// Others (disposition, accessible-desc...) are not shown.
}

void resetMenuProperty(MenuProps& p, const std::string& key) {
	static const MenuProps defaults;
	if (key == "label") p.label = defaults.label;
	else if (key == "enabled") p.enabled = defaults.enabled;
	else if (key == "visible") p.visible = defaults.visible;
	else if (key == "type") p.separator = defaults.separator;
	else if (key == "toggle-type") p.toggleType = defaults.toggleType;
	else if (key == "toggle-state") p.toggleState = defaults.toggleState;
	else if (key == "icon-name") p.iconName = defaults.iconName;
	else if (key == "icon-data") {
		p.iconData.clear();
		p.iconFile.reset();
	}
	else if (key == "shortcut") p.shortcut.clear();
	else if (key == "children-display") p.submenu = defaults.submenu;
}

json menuEntry(const MenuNode& node) {
	const auto& p = node.props;
	json e = json::object();
	e["id"] = node.id;
	std::string mnemonic;
	e["label"] = stripMnemonic(p.label, &mnemonic);
	e["mnemonic"] = mnemonic.empty() ? json(nullptr) : json(mnemonic);
	e["enabled"] = p.enabled;
	e["visible"] = p.visible;
	e["type"] = p.separator ? "separator" : "standard";
	e["toggleType"] = p.toggleType.empty() ? std::string("none") : p.toggleType;
	e["toggleState"] = p.toggleState;
	e["iconName"] = p.iconName;
	e["shortcut"] = p.shortcut.empty() ? json(nullptr) : json(p.shortcut);
	e["submenu"] = p.submenu || !node.children.empty();
	return e;
}

json menuToJson(const MenuNode& root, const IconUrl& iconUrl) {
	json e = menuEntry(root);
	e["icon"] = iconUrl(root.props);
	json children = json::array();
	for (const auto& c: root.children) children.push_back(menuToJson(c, iconUrl));
	e["children"] = std::move(children);
	return e;
}

MenuNode* findNode(MenuNode& root, int32_t id) {
	if (root.id == id) return &root;
	for (auto& c: root.children)
		if (auto* n = findNode(c, id)) return n;
	return nullptr;
}

void MenuIndex::rebuild(MenuNode* root) {
	byId_.clear();
	entries_ = 0;
	if (!root) return;
	// Depth first, in menu order, without recursion (an explicit stack; menus are bounded, but
	// the index must not be the thing that limits them).
	std::vector<Entry> stack{{root, 0}};
	while (!stack.empty()) {
		Entry e = stack.back();
		stack.pop_back();
		++entries_;
		byId_.try_emplace(e.node->id, e);
		for (auto it = e.node->children.rbegin(); it != e.node->children.rend(); ++it) stack.push_back({&*it, e.depth + 1});
	}
}

MenuNode* MenuIndex::find(int32_t id) const {
	auto it = byId_.find(id);
	return it == byId_.end() ? nullptr : it->second.node;
}

size_t MenuIndex::depth(int32_t id) const {
	auto it = byId_.find(id);
	return it == byId_.end() ? 0 : it->second.depth;
}

size_t menuEntries(const MenuNode& node) {
	size_t n = 0;
	std::vector<const MenuNode*> stack{&node};
	while (!stack.empty()) {
		const MenuNode* e = stack.back();
		stack.pop_back();
		++n;
		for (const auto& c: e->children) stack.push_back(&c);
	}
	return n;
}

} // namespace qsd::tray
