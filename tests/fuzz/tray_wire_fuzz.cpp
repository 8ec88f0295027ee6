// Fuzzes the tray's D-Bus side: what any process on the session bus can send qsd as a tray item
// or its menu, read by daemon/backends/tray/wire.cpp. The input drives the building of D-Bus
// messages (sd-bus appends, so every message is well-formed D-Bus, of any shape): a
// GetLayout reply (u, (ia{sv}av)) of nested entries whose properties and children have the
// expected types or random ones, then ItemsPropertiesUpdated bodies (a(ia{sv}), a(ias)) naming
// entries of that layout or not, then an item's GetAll reply (a{sv}) with pixmaps and tooltips
// of any shape. Each is parsed as the backend does, indexed, updated and turned into the tree's
// JSON. Besides crashes and sanitizer reports, the limits are checked: no more entries or
// depth than kMaxMenuEntries and kMaxMenuDepth, no more icon-data than kMaxMenuIconBytes.

#include "backends/tray/mapping.hpp"
#include "backends/tray/wire.hpp"

#include <fuzzer/FuzzedDataProvider.h>
#include <sdbus-c++/sdbus-c++.h>
#include <systemd/sd-bus.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace sdbus {
// Exported by libsdbus-c++ (a message on a pseudo connection, as its Variant uses), not declared
// in its public headers.
PlainMessage createPlainMessage();
} // namespace sdbus

using namespace qsd::tray;

namespace {

// The sd_bus_message under an sdbus::Message (as wire.cpp reaches it).
struct Raw: sdbus::Message {
	static sd_bus_message* of(const sdbus::Message& m) { return static_cast<sd_bus_message*>(m.*(&Raw::msg_)); }
};

[[noreturn]] void die(const char* what) {
	std::fprintf(stderr, "qsd-fuzz-tray-wire: %s\n", what);
	std::abort();
}

struct Unbuildable {};

void ok(int r) {
	// sd-bus refuses what no peer could send either (a message over its size limit, nesting
	// past its depth): that input is skipped.
	if (r < 0) throw Unbuildable{};
}

constexpr const char* kMenuKeys[] = {"label",      "enabled",   "visible",          "type",        "toggle-type",
                                     "toggle-state", "icon-name", "icon-data",       "shortcut",    "children-display",
                                     "disposition", "accessible-desc", ""};
constexpr const char* kItemKeys[] = {"Id",          "Title",           "Status",         "Category",  "IconName",
                                     "IconPixmap",  "AttentionIconPixmap", "OverlayIconPixmap", "ToolTip", "Menu",
                                     "ItemIsMenu",  "IconThemePath",   "WindowId",       "AttentionIconName", "X"};
// Types a value may have: the expected ones and others.
constexpr const char* kTypes[] = {"s", "b", "i", "u", "x", "d", "y", "o", "g", "ay", "as", "aas", "a{sv}", "(iiay)",
                                  "a(iiay)", "(sa(iiay)ss)", "v", "ai", "(ia{sv}av)"};

class Builder {
public:
	explicit Builder(FuzzedDataProvider& in): in_(in) {}

	std::string text() { return in_.ConsumeRandomLengthString(64); }

	// A value of type `sig` (one of kTypes), depth-limited.
	void value(sd_bus_message* m, const std::string& sig, int depth) {
		if (sig == "s") ok(sd_bus_message_append_basic(m, 's', text().c_str()));
		else if (sig == "b") {
			int b = in_.ConsumeBool();
			ok(sd_bus_message_append_basic(m, 'b', &b));
		} else if (sig == "i") {
			int32_t v = in_.ConsumeIntegral<int32_t>();
			ok(sd_bus_message_append_basic(m, 'i', &v));
		} else if (sig == "u") {
			uint32_t v = in_.ConsumeIntegral<uint32_t>();
			ok(sd_bus_message_append_basic(m, 'u', &v));
		} else if (sig == "x") {
			int64_t v = in_.ConsumeIntegral<int64_t>();
			ok(sd_bus_message_append_basic(m, 'x', &v));
		} else if (sig == "d") {
			double v = in_.ConsumeFloatingPoint<double>();
			ok(sd_bus_message_append_basic(m, 'd', &v));
		} else if (sig == "y") {
			uint8_t v = in_.ConsumeIntegral<uint8_t>();
			ok(sd_bus_message_append_basic(m, 'y', &v));
		} else if (sig == "o") ok(sd_bus_message_append_basic(m, 'o', in_.ConsumeBool() ? "/StatusNotifierItem/Menu" : "/"));
		else if (sig == "g") ok(sd_bus_message_append_basic(m, 'g', "a{sv}"));
		else if (sig == "ay") bytes(m);
		else if (sig == "ai") {
			ok(sd_bus_message_open_container(m, 'a', "i"));
			for (size_t n = count(8); n > 0; --n) value(m, "i", depth);
			ok(sd_bus_message_close_container(m));
		} else if (sig == "as") {
			ok(sd_bus_message_open_container(m, 'a', "s"));
			for (size_t n = count(8); n > 0; --n) value(m, "s", depth);
			ok(sd_bus_message_close_container(m));
		} else if (sig == "aas") {
			ok(sd_bus_message_open_container(m, 'a', "as"));
			for (size_t n = count(4); n > 0; --n) value(m, "as", depth);
			ok(sd_bus_message_close_container(m));
		} else if (sig == "a{sv}") {
			ok(sd_bus_message_open_container(m, 'a', "{sv}"));
			for (size_t n = depth > 3 ? 0 : count(4); n > 0; --n) {
				ok(sd_bus_message_open_container(m, 'e', "sv"));
				ok(sd_bus_message_append_basic(m, 's', text().c_str()));
				variant(m, depth + 1);
				ok(sd_bus_message_close_container(m));
			}
			ok(sd_bus_message_close_container(m));
		} else if (sig == "(iiay)") {
			ok(sd_bus_message_open_container(m, 'r', "iiay"));
			// Mostly small sizes that match the data, sometimes not.
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
		} else if (sig == "a(iiay)") {
			ok(sd_bus_message_open_container(m, 'a', "(iiay)"));
			for (size_t n = count(4); n > 0; --n) value(m, "(iiay)", depth);
			ok(sd_bus_message_close_container(m));
		} else if (sig == "(sa(iiay)ss)") {
			ok(sd_bus_message_open_container(m, 'r', "sa(iiay)ss"));
			value(m, "s", depth);
			value(m, "a(iiay)", depth);
			value(m, "s", depth);
			value(m, "s", depth);
			ok(sd_bus_message_close_container(m));
		} else if (sig == "v") {
			variant(m, depth + 1);
		} else if (sig == "(ia{sv}av)") {
			node(m, depth + 1);
		}
	}

	// A variant holding a value of a random type (a string when deep enough).
	void variant(sd_bus_message* m, int depth) {
		std::string sig = depth > 4 ? "s" : in_.PickValueInArray(kTypes);
		ok(sd_bus_message_open_container(m, 'v', sig.c_str()));
		value(m, sig, depth);
		ok(sd_bus_message_close_container(m));
	}

	// A menu property's value: of the type the key wants, or any other.
	void menuValue(sd_bus_message* m, const std::string& key, int depth) {
		std::string sig;
		if (!in_.ConsumeBool()) sig = in_.PickValueInArray(kTypes);
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
			std::string key = in_.ConsumeIntegralInRange(0, 7) ? std::string(in_.PickValueInArray(kMenuKeys)) : text();
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
		size_t children = depth > 24 ? 0 : in_.ConsumeIntegralInRange(0, 3) == 0 ? in_.ConsumeIntegralInRange<size_t>(0, 5000) : count(4);
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
				std::string key = in_.ConsumeBool() ? std::string(in_.PickValueInArray(kMenuKeys)) : text();
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
			std::string key = in_.PickValueInArray(kItemKeys);
			ok(sd_bus_message_append_basic(m, 's', key.c_str()));
			std::string sig = key.find("Pixmap") != std::string::npos ? "a(iiay)" : key == "ToolTip" ? "(sa(iiay)ss)" : "s";
			if (in_.ConsumeIntegralInRange(0, 3) == 0) sig = in_.PickValueInArray(kTypes);
			ok(sd_bus_message_open_container(m, 'v', sig.c_str()));
			value(m, sig, 1);
			ok(sd_bus_message_close_container(m));
			ok(sd_bus_message_close_container(m));
		}
		ok(sd_bus_message_close_container(m));
	}

private:
	size_t count(size_t max) { return in_.ConsumeIntegralInRange<size_t>(0, max); }

	void bytes(sd_bus_message* m) {
		// Mostly small, sometimes large (icon-data budgets), sometimes a PNG signature.
		size_t n = in_.ConsumeIntegralInRange(0, 7) ? in_.ConsumeIntegralInRange<size_t>(0, 64)
		                                            : in_.ConsumeIntegralInRange<size_t>(0, 3u << 20);
		std::vector<uint8_t> b(n, in_.ConsumeIntegral<uint8_t>());
		static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
		if (n >= sizeof png && in_.ConsumeBool()) std::copy(std::begin(png), std::end(png), b.begin());
		ok(sd_bus_message_append_array(m, 'y', b.data(), b.size()));
	}

	FuzzedDataProvider& in_;
};

sdbus::PlainMessage sealed(const std::function<void(sd_bus_message*)>& fill) {
	auto msg = sdbus::createPlainMessage();
	fill(Raw::of(msg));
	msg.seal();
	msg.rewind(true);
	return msg;
}

void check(const MenuNode& node, size_t depth, size_t& entries, size_t& iconBytes) {
	if (depth > kMaxMenuDepth) die("a layout deeper than kMaxMenuDepth");
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
		if (auto i = choosePixmap(mapped.icons.pixmaps, 64)) (void)toRgba(mapped.icons.pixmaps[*i]);
	} catch (const Unbuildable&) {
	}
	return 0;
}
