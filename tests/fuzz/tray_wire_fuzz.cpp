// Fuzzes the tray's D-Bus side: what any process on the session bus can send qsd as a tray item
// or its menu, read by daemon/backends/tray/wire.cpp. The input drives the building of D-Bus
// messages (sd-bus appends, so every message is well-formed D-Bus, of any shape): a
// GetLayout reply (u, (ia{sv}av)) of nested entries whose properties and children have the
// expected types or random ones, then ItemsPropertiesUpdated bodies (a(ia{sv}), a(ias)) naming
// entries of that layout or not, then an item's GetAll reply (a{sv}) with pixmaps and tooltips
// of any shape. Each is parsed as the backend does, indexed, updated and turned into the tree's
// JSON. Besides crashes and sanitizer reports, the limits are checked: no more entries or
// depth than kMaxMenuEntries and kMaxMenuDepth, no more icon-data than kMaxMenuIconBytes, no text
// longer than kMaxItemText (kMaxTooltipBytes for the tooltip's description).

#include "backends/tray/mapping.hpp"
#include "backends/tray/wire.hpp"

#include "dbus_builder.hpp"

#include <string>
#include <vector>

using namespace qsd::tray;
using qsd::fuzz::ok;
using qsd::fuzz::sealed;
using qsd::fuzz::Unbuildable;

namespace {

[[noreturn]] void die(const char* what) { qsd::fuzz::die("qsd-fuzz-tray-wire", what); }

const std::vector<std::string> kMenuKeys = {"label",       "enabled",         "visible",   "type",      "toggle-type",
                                            "toggle-state", "icon-name",      "icon-data", "shortcut",  "children-display",
                                            "disposition",  "accessible-desc", ""};
const std::vector<std::string> kItemKeys = {"Id",         "Title",      "Status",              "Category",
                                            "IconName",   "IconPixmap", "AttentionIconPixmap", "OverlayIconPixmap",
                                            "ToolTip",    "Menu",       "ItemIsMenu",          "IconThemePath",
                                            "WindowId",   "AttentionIconName", "X"};
// Types a value may have: the expected ones and others.
const std::vector<std::string> kTypes = {"s",    "b",     "i",       "u",            "x",  "d",  "y",
                                         "o",    "g",     "ay",      "as",           "aas", "a{sv}", "(iiay)",
                                         "a(iiay)", "(sa(iiay)ss)", "v", "ai", "(ia{sv}av)"};

class Builder: public qsd::fuzz::ValueBuilder {
public:
	explicit Builder(FuzzedDataProvider& in): ValueBuilder(in, kTypes, "/StatusNotifierItem/Menu") {}

	// A menu property's value: of the type the key wants, or any other.
	void menuValue(sd_bus_message* m, const std::string& key, int depth) {
		std::string sig;
		if (!in_.ConsumeBool()) sig = pick(kTypes);
		else if (key == "enabled" || key == "visible") sig = "b";
		else if (key == "toggle-state") sig = "i";
		else if (key == "icon-data") sig = "ay";
		else if (key == "shortcut") sig = "aas";
		else sig = "s";
		if (depth > 4 && sig != "s" && sig != "b" && sig != "i" && sig != "ay") sig = "s";
		ok(sd_bus_message_open_container(m, 'v', sig.c_str()));
		value(m, sig, depth);
		ok(sd_bus_message_close_container(m));
	}

	void menuProps(sd_bus_message* m, int depth) {
		ok(sd_bus_message_open_container(m, 'a', "{sv}"));
		for (size_t n = count(6); n > 0; --n) {
			ok(sd_bus_message_open_container(m, 'e', "sv"));
			std::string key = in_.ConsumeIntegralInRange(0, 7) ? pick(kMenuKeys) : text();
			ok(sd_bus_message_append_basic(m, 's', key.c_str()));
			menuValue(m, key, depth);
			ok(sd_bus_message_close_container(m));
		}
		ok(sd_bus_message_close_container(m));
	}

	// One (ia{sv}av) entry: ids mostly small (so they repeat and are found by updates), and
	// children mostly entries, sometimes other values (which the reader must skip).
	void node(sd_bus_message* m, int depth) {
		ok(sd_bus_message_open_container(m, 'r', "ia{sv}av"));
		int32_t id = in_.ConsumeIntegralInRange(0, 3) ? in_.ConsumeIntegralInRange<int32_t>(0, 64) : in_.ConsumeIntegral<int32_t>();
		ok(sd_bus_message_append_basic(m, 'i', &id));
		menuProps(m, depth);
		ok(sd_bus_message_open_container(m, 'a', "v"));
		// Deep chains, and wide levels (past kMaxMenuEntries sometimes).
		size_t children = depth > 24 ? 0 : in_.ConsumeIntegralInRange(0, 31) == 0 ? in_.ConsumeIntegralInRange<size_t>(0, 5000) : count(4);
		for (size_t i = 0; i < children && in_.remaining_bytes() > 0; ++i) {
			if (in_.ConsumeIntegralInRange(0, 7)) {
				ok(sd_bus_message_open_container(m, 'v', "(ia{sv}av)"));
				node(m, depth + 1);
				ok(sd_bus_message_close_container(m));
			} else {
				variant(m, depth + 1);
			}
		}
		ok(sd_bus_message_close_container(m));
		ok(sd_bus_message_close_container(m));
	}

	// ItemsPropertiesUpdated's body.
	void updates(sd_bus_message* m) {
		ok(sd_bus_message_open_container(m, 'a', "(ia{sv})"));
		for (size_t n = count(16); n > 0; --n) {
			ok(sd_bus_message_open_container(m, 'r', "ia{sv}"));
			int32_t id = in_.ConsumeIntegralInRange<int32_t>(-1, 70);
			ok(sd_bus_message_append_basic(m, 'i', &id));
			menuProps(m, 0);
			ok(sd_bus_message_close_container(m));
		}
		ok(sd_bus_message_close_container(m));
		ok(sd_bus_message_open_container(m, 'a', "(ias)"));
		for (size_t n = count(8); n > 0; --n) {
			ok(sd_bus_message_open_container(m, 'r', "ias"));
			int32_t id = in_.ConsumeIntegralInRange<int32_t>(-1, 70);
			ok(sd_bus_message_append_basic(m, 'i', &id));
			ok(sd_bus_message_open_container(m, 'a', "s"));
			for (size_t k = count(4); k > 0; --k) {
				std::string key = in_.ConsumeBool() ? pick(kMenuKeys) : text();
				ok(sd_bus_message_append_basic(m, 's', key.c_str()));
			}
			ok(sd_bus_message_close_container(m));
			ok(sd_bus_message_close_container(m));
		}
		ok(sd_bus_message_close_container(m));
	}

	// An item's GetAll reply.
	void itemProperties(sd_bus_message* m) {
		ok(sd_bus_message_open_container(m, 'a', "{sv}"));
		for (size_t n = count(12); n > 0; --n) {
			ok(sd_bus_message_open_container(m, 'e', "sv"));
			std::string key = pick(kItemKeys);
			ok(sd_bus_message_append_basic(m, 's', key.c_str()));
			std::string sig = key.find("Pixmap") != std::string::npos ? "a(iiay)" : key == "ToolTip" ? "(sa(iiay)ss)" : "s";
			if (in_.ConsumeIntegralInRange(0, 3) == 0) sig = pick(kTypes);
			ok(sd_bus_message_open_container(m, 'v', sig.c_str()));
			value(m, sig, 1);
			ok(sd_bus_message_close_container(m));
			ok(sd_bus_message_close_container(m));
		}
		ok(sd_bus_message_close_container(m));
	}

protected:
	// The tray's structs: a pixmap (iiay) of mostly small sizes that match its data, sometimes
	// not; a tooltip (sa(iiay)ss); a menu entry (ia{sv}av).
	bool customValue(sd_bus_message* m, const std::string& sig, int depth) override {
		if (sig == "(iiay)") {
			ok(sd_bus_message_open_container(m, 'r', "iiay"));
			int32_t w = in_.ConsumeIntegralInRange<int32_t>(-2, 20), h = in_.ConsumeIntegralInRange<int32_t>(-2, 20);
			if (in_.ConsumeIntegralInRange(0, 15) == 0) w = in_.ConsumeIntegral<int32_t>();
			ok(sd_bus_message_append_basic(m, 'i', &w));
			ok(sd_bus_message_append_basic(m, 'i', &h));
			if (w > 0 && h > 0 && int64_t(w) * h <= 400 && in_.ConsumeBool()) {
				std::vector<uint8_t> px(size_t(w) * size_t(h) * 4, in_.ConsumeIntegral<uint8_t>());
				ok(sd_bus_message_append_array(m, 'y', px.data(), px.size()));
			} else {
				bytes(m);
			}
			ok(sd_bus_message_close_container(m));
		} else if (sig == "(sa(iiay)ss)") {
			ok(sd_bus_message_open_container(m, 'r', "sa(iiay)ss"));
			value(m, "s", depth);
			value(m, "a(iiay)", depth);
			value(m, "s", depth);
			value(m, "s", depth);
			ok(sd_bus_message_close_container(m));
		} else if (sig == "(ia{sv}av)") {
			node(m, depth + 1);
		} else {
			return false;
		}
		return true;
	}
};

void check(const MenuNode& node, size_t depth, size_t& entries, size_t& iconBytes) {
	if (depth > kMaxMenuDepth) die("a layout deeper than kMaxMenuDepth");
	if (node.props.label.size() > kMaxItemText || node.props.shortcut.size() > kMaxItemText) die("a label or shortcut past kMaxItemText");
	++entries;
	iconBytes += node.props.iconData.size();
	for (const auto& c: node.children) check(c, depth + 1, entries, iconBytes);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
	FuzzedDataProvider in(data, size);
	Builder build(in);
	try {
		auto layout = sealed([&](sd_bus_message* m) {
			uint32_t revision = in.ConsumeIntegral<uint32_t>();
			ok(sd_bus_message_append_basic(m, 'u', &revision));
			build.node(m, 0);
		});
		size_t skipped = 0;
		bool rootProperties = false;
		MenuNode root;
		try {
			root = readLayout(layout, skipped, &rootProperties);
		} catch (const sdbus::Error&) {
			return 0;   // refused as malformed: what the backend does too
		}
		size_t entries = 0, iconBytes = 0;
		check(root, 0, entries, iconBytes);
		if (entries > kMaxMenuEntries) die("more entries than kMaxMenuEntries");
		if (iconBytes > kMaxMenuIconBytes) die("more icon-data than kMaxMenuIconBytes");
		MenuIndex index;
		index.rebuild(&root);
		for (int round = 0; round < 3 && in.remaining_bytes() > 0; ++round) {
			auto signal = sealed([&](sd_bus_message* m) { build.updates(m); });
			try {
				(void)readPropertiesUpdated(signal, index);
			} catch (const sdbus::Error&) {
			}
		}
		(void)menuToJson(root, [](const MenuProps& p) { return p.iconName.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.iconName); })
		    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

		auto reply = sealed([&](sd_bus_message* m) { build.itemProperties(m); });
		qsd::dbus::Properties props;
		ItemPixmaps pixmaps;
		try {
			readProperties(reply, props, pixmaps);
		} catch (const sdbus::Error&) {
			return 0;
		}
		auto mapped = mapItem(props, &pixmaps);
		(void)mapped.value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
		auto longer = [&](const char* field, size_t bound) {
			const auto& v = mapped.value.at(field);
			return v.is_string() && v.get_ref<const std::string&>().size() > bound;
		};
		if (longer("id", kMaxItemText) || longer("title", kMaxItemText) || longer("tooltipTitle", kMaxItemText) ||
		    longer("tooltipDescription", kMaxTooltipBytes))
			die("an item's text past its bound");
		if (auto i = choosePixmap(mapped.icons.pixmaps, 64)) (void)toRgba(mapped.icons.pixmaps[*i]);
	} catch (const Unbuildable&) {
	}
	return 0;
}
