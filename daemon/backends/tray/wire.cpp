#include "wire.hpp"

#include "../../dbus/raw.hpp"
#include "../../text.hpp"

#include <systemd/sd-bus.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace qsd::tray {

namespace {

using dbus::rawMessage;

void check(int r, const char* what) {
	if (r < 0) throw sdbus::Error("org.freedesktop.DBus.Error.InvalidArgs", std::string("malformed item property: ") + what + ": " +
	                                                                           std::strerror(-r));
}

using PixmapStruct = sdbus::Struct<int32_t, int32_t, std::vector<uint8_t>>;
using ToolTipStruct = sdbus::Struct<std::string, std::vector<PixmapStruct>, std::string, std::string>;

// An a(iiay) at the message's position: of its entries, only the one the icon is made of
// (choosePixmap's choice for a kDefaultIconSize icon, which is every choice the backend makes),
// copied once all were seen. What the others hold, valid or not, stays in the message: the item's
// cache keeps at most one pixmap per property, of at most kMaxPixmapSide a side (an item sent
// seven 1x1 entries of 4 MiB in each pixmap property, and qsd kept all 84 MiB for its null icon).
std::vector<Pixmap> readPixmaps(sd_bus_message* m, size_t& bytes) {
	PixmapChoice choice(kDefaultIconSize);
	Pixmap best;
	const void* bestData = nullptr;
	size_t bestSize = 0;
	check(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "(iiay)"), "pixmaps");
	for (;;) {
		int r = sd_bus_message_enter_container(m, SD_BUS_TYPE_STRUCT, "iiay");
		check(r, "pixmap");
		if (r == 0) break;
		int32_t width = 0, height = 0;
		check(sd_bus_message_read(m, "ii", &width, &height), "pixmap size");
		const void* data = nullptr;
		size_t size = 0;
		check(sd_bus_message_read_array(m, 'y', &data, &size), "pixmap data");
		bytes += size;
		if (choice.offer(width, height, size)) {
			best.width = width;
			best.height = height;
			bestData = data;
			bestSize = size;
		}
		check(sd_bus_message_exit_container(m), "pixmap");
	}
	check(sd_bus_message_exit_container(m), "pixmaps");
	std::vector<Pixmap> out;
	if (!choice.chosen()) return out;
	const auto* chosen = static_cast<const uint8_t*>(bestData);
	best.argb.assign(chosen, chosen + bestSize);
	out.push_back(std::move(best));
	return out;
}

std::vector<Pixmap>* slot(ItemPixmaps& pixmaps, const std::string& name) {
	if (name == "IconPixmap") return &pixmaps.icon;
	if (name == "AttentionIconPixmap") return &pixmaps.attention;
	if (name == "OverlayIconPixmap") return &pixmaps.overlay;
	return nullptr;
}

bool isText(char t) { return t == 's' || t == 'o' || t == 'g'; }
bool isBasic(char t) { return std::strchr("bynqiuxtd", t) != nullptr; }

// The variant at the message's position, the value of property `name`. Only shown properties
// are kept, and each within a bound (kMaxPropertyText): any process on the session bus can be an
// item, and the cache holds what it sent for as long as the item lives.
void readValue(sdbus::Message& msg, const std::string& name, dbus::Properties& props, ItemPixmaps& pixmaps, size_t& bytes) {
	sd_bus_message* m = rawMessage(msg);
	char type = 0;
	const char* contents = nullptr;
	check(sd_bus_message_peek_type(m, &type, &contents), "value");
	if (type != SD_BUS_TYPE_VARIANT || !contents || !*contents) check(-EINVAL, "a variant was expected");
	if (!isShownItemProperty(name)) {
		check(sd_bus_message_skip(m, "v"), "value");
		return;
	}
	std::string signature = contents;
	if (auto* out = slot(pixmaps, name); out && signature == "a(iiay)") {
		check(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, "a(iiay)"), name.c_str());
		*out = readPixmaps(m, bytes);
		check(sd_bus_message_exit_container(m), name.c_str());
		props.erase(name);
		return;
	}
	if (name == "ToolTip" && signature == "(sa(iiay)ss)") {
		// Only the texts are shown; the tooltip's pixmaps are skipped, never decoded.
		check(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, "(sa(iiay)ss)"), "ToolTip");
		check(sd_bus_message_enter_container(m, SD_BUS_TYPE_STRUCT, "sa(iiay)ss"), "ToolTip");
		const char* icon = nullptr;
		const char* title = nullptr;
		const char* description = nullptr;
		check(sd_bus_message_read_basic(m, 's', &icon), "ToolTip icon");
		check(sd_bus_message_skip(m, "a(iiay)"), "ToolTip pixmaps");
		check(sd_bus_message_read(m, "ss", &title, &description), "ToolTip texts");
		check(sd_bus_message_exit_container(m), "ToolTip");
		check(sd_bus_message_exit_container(m), "ToolTip");
		auto text = [](const char* s) { return std::string(cutAtCharacter(s ? s : "", kMaxPropertyText)); };
		props[name] = sdbus::Variant(ToolTipStruct(text(icon), {}, text(title), text(description)));
		return;
	}
	if (auto* out = slot(pixmaps, name)) out->clear();   // mistyped: reported by the mapping
	if (signature.size() == 1 && isText(signature[0])) {
		const char* s = nullptr;
		check(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents), name.c_str());
		check(sd_bus_message_read_basic(m, signature[0], &s), name.c_str());
		check(sd_bus_message_exit_container(m), name.c_str());
		std::string_view text = s ? s : "";
		// Menu is a path whatever its type (some apps send an 's'): cut, it would name another
		// object, so one that long is kept as none, and the item has no menu.
		if (name == "Menu" && text.size() > kMaxPropertyText) props[name] = dbus::Value::text({}, signature[0]);
		else props[name] = keptText(text, signature[0]);
	} else if (signature.size() == 1 && isBasic(signature[0])) {
		props[name] = dbus::Value::read(msg);
	} else {
		// No shown property but the pixmaps and the tooltip is of a compound type: this one is
		// mistyped, and only its type is reported.
		check(sd_bus_message_skip(m, "v"), name.c_str());
		props[name] = dbus::Value::unread(std::move(signature));
	}
}

// An entry's a{sv} at the message's position; the number of properties it held. icon-data is
// taken while `iconBudget` (bytes, for the whole message) lasts.
size_t readMenuProps(sdbus::Message& msg, MenuProps& props, size_t& iconBudget) {
	size_t count = 0;
	sd_bus_message* m = rawMessage(msg);
	check(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}"), "menu properties");
	for (;;) {
		int r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
		check(r, "menu property");
		if (r == 0) break;
		const char* key = nullptr;
		check(sd_bus_message_read_basic(m, 's', &key), "menu property name");
		std::string name = key ? key : "";
		char type = 0;
		const char* contents = nullptr;
		check(sd_bus_message_peek_type(m, &type, &contents), "menu property value");
		if (name == "icon-data" && contents && std::strcmp(contents, "ay") == 0) {
			check(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, "ay"), "icon-data");
			const void* data = nullptr;
			size_t size = 0;
			check(sd_bus_message_read_array(m, 'y', &data, &size), "icon-data");
			const auto* bytes = static_cast<const uint8_t*>(data);
			props.iconFile.reset();
			if (size <= kMaxIconData && size <= iconBudget) {
				props.iconData.assign(bytes, bytes + size);
				iconBudget -= size;
			} else {
				props.iconData.clear();
			}
			check(sd_bus_message_exit_container(m), "icon-data");
		} else if (isShownMenuProperty(name)) {
			// A plain value (s, b, i...) is read straight from the message; an sdbus::Variant
			// would copy the value into a message of its own first (a few microseconds each,
			// for each property of each entry of a layout).
			setMenuProperty(props, name, dbus::Value::read(msg));
		} else {
			check(sd_bus_message_skip(m, "v"), "menu property value");   // not shown: not decoded
		}
		check(sd_bus_message_exit_container(m), "menu property");
		++count;
	}
	check(sd_bus_message_exit_container(m), "menu properties");
	return count;
}

// One (ia{sv}av) at the message's position (inside its variant, for a child).
size_t readNode(sdbus::Message& msg, MenuNode& node, size_t depth, size_t& count, size_t& skipped, size_t& iconBudget) {
	sd_bus_message* m = rawMessage(msg);
	check(sd_bus_message_enter_container(m, SD_BUS_TYPE_STRUCT, "ia{sv}av"), "menu entry");
	check(sd_bus_message_read_basic(m, 'i', &node.id), "menu entry id");
	size_t properties = readMenuProps(msg, node.props, iconBudget);
	check(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "v"), "menu children");
	for (;;) {
		char type = 0;
		const char* contents = nullptr;
		int r = sd_bus_message_peek_type(m, &type, &contents);
		check(r, "menu child");
		if (r == 0) break;
		bool layout = contents && std::strcmp(contents, "(ia{sv}av)") == 0;
		if (!layout || depth + 1 > kMaxMenuDepth || count >= kMaxMenuEntries) {
			check(sd_bus_message_skip(m, "v"), "menu child");
			++skipped;
			continue;
		}
		check(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, "(ia{sv}av)"), "menu child");
		++count;
		readNode(msg, node.children.emplace_back(), depth + 1, count, skipped, iconBudget);
		check(sd_bus_message_exit_container(m), "menu child");
	}
	check(sd_bus_message_exit_container(m), "menu children");
	check(sd_bus_message_exit_container(m), "menu entry");
	return properties;
}

} // namespace

MenuNode readLayout(sdbus::Message& reply, size_t& skipped, bool* rootProperties, LayoutPlace place) {
	sd_bus_message* m = rawMessage(reply);
	uint32_t revision = 0;
	check(sd_bus_message_read_basic(m, 'u', &revision), "layout revision");
	MenuNode root;
	size_t count = std::max<size_t>(place.entries, 1);
	size_t iconBudget = kMaxMenuIconBytes;
	size_t properties = readNode(reply, root, place.depth, count, skipped, iconBudget);
	if (rootProperties) *rootProperties = properties > 0;
	return root;
}

bool readPropertiesUpdated(sdbus::Message& signal, const MenuIndex& index) {
	sd_bus_message* m = rawMessage(signal);
	// The whole message is read before any entry changes: a message malformed past its first
	// part (the removed array missing, say) is rejected whole. Applied as it was read, its
	// updated entries had already changed in the menu, and the next change of that menu
	// published them. Each entry named is changed in a copy of its properties, put in place at
	// the end (an entry named twice, or updated and removed, in the same copy).
	std::unordered_map<MenuNode*, MenuProps> staged;   // one hash probe per id, as the index
	auto stage = [&staged](MenuNode& node) -> MenuProps& { return staged.try_emplace(&node, node.props).first->second; };
	size_t iconBudget = kMaxMenuIconBytes;
	check(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "(ia{sv})"), "updated");
	for (;;) {
		int r = sd_bus_message_enter_container(m, SD_BUS_TYPE_STRUCT, "ia{sv}");
		check(r, "updated entry");
		if (r == 0) break;
		int32_t id = 0;
		check(sd_bus_message_read_basic(m, 'i', &id), "updated id");
		MenuNode* node = index.find(id);
		MenuProps scratch;   // an entry the tree does not have: read and dropped
		readMenuProps(signal, node ? stage(*node) : scratch, iconBudget);
		check(sd_bus_message_exit_container(m), "updated entry");
	}
	check(sd_bus_message_exit_container(m), "updated");
	check(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "(ias)"), "removed");
	for (;;) {
		int r = sd_bus_message_enter_container(m, SD_BUS_TYPE_STRUCT, "ias");
		check(r, "removed entry");
		if (r == 0) break;
		int32_t id = 0;
		check(sd_bus_message_read_basic(m, 'i', &id), "removed id");
		MenuNode* node = index.find(id);
		MenuProps* props = node ? &stage(*node) : nullptr;
		check(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "s"), "removed names");
		for (;;) {
			const char* name = nullptr;
			int n = sd_bus_message_read_basic(m, 's', &name);
			check(n, "removed name");
			if (n == 0) break;
			if (props && name) resetMenuProperty(*props, name);
		}
		check(sd_bus_message_exit_container(m), "removed names");
		check(sd_bus_message_exit_container(m), "removed entry");
	}
	check(sd_bus_message_exit_container(m), "removed");
	for (auto& [node, props]: staged) node->props = std::move(props);
	return !staged.empty();
}

dbus::Value keptText(std::string_view text, char type) {
	return dbus::Value::text(std::string(cutAtCharacter(text, kMaxPropertyText)), type);
}

void forgetProperty(const std::string& name, dbus::Properties& props, ItemPixmaps& pixmaps) {
	props.erase(name);
	if (auto* out = slot(pixmaps, name)) out->clear();
}

size_t readProperties(sdbus::Message& msg, dbus::Properties& props, ItemPixmaps& pixmaps) {
	sd_bus_message* m = rawMessage(msg);
	size_t bytes = 0;
	check(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}"), "properties");
	for (;;) {
		int r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
		check(r, "property");
		if (r == 0) break;
		const char* key = nullptr;
		check(sd_bus_message_read_basic(m, 's', &key), "property name");
		readValue(msg, key ? key : "", props, pixmaps, bytes);
		check(sd_bus_message_exit_container(m), "property");
	}
	check(sd_bus_message_exit_container(m), "properties");
	return bytes;
}

size_t readProperty(sdbus::Message& msg, const std::string& name, dbus::Properties& props, ItemPixmaps& pixmaps) {
	size_t bytes = 0;
	readValue(msg, name, props, pixmaps, bytes);
	return bytes;
}

} // namespace qsd::tray
