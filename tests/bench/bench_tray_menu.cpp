// What a tray item's menu costs qsd's loop: reading a DBusMenu GetLayout reply
// (daemon/backends/tray/wire.cpp, readLayout), turning it into the tree's JSON (menuToJson), and
// reading an ItemsPropertiesUpdated signal that changes every entry's label
// (readPropertiesUpdated). Menus of 15, 150 and 4 095 entries (kMaxMenuEntries is 4 096), each
// entry with the properties Qt and libdbusmenu send: label, enabled, visible, icon-name,
// toggle-type, toggle-state, and accessible-desc, which qsd does not show. The messages are
// built once with sd-bus and read again for each run, so only qsd's reading is timed.
//
// Prints, per size, the best and the median of 9 runs, in microseconds per entry and in all.
// Every item's menu is read at start and read again after each LayoutUpdated, on the loop every
// subscriber shares.

#include "bench_util.hpp"

#include "backends/tray/mapping.hpp"
#include "backends/tray/wire.hpp"
#include "dbus/raw.hpp"

#include <systemd/sd-bus.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace qsd::tray;

namespace {

void ok(int r, const char* what) {
	if (r < 0) bench::die(std::string("building the message: ") + what);
}

void appendProps(sd_bus_message* m, int id) {
	ok(sd_bus_message_open_container(m, 'a', "{sv}"), "props");
	auto entry = [&](const char* key, const char* type, auto value) {
		ok(sd_bus_message_open_container(m, 'e', "sv"), "entry");
		ok(sd_bus_message_append_basic(m, 's', key), "key");
		ok(sd_bus_message_open_container(m, 'v', type), "variant");
		ok(sd_bus_message_append_basic(m, type[0], value), "value");
		ok(sd_bus_message_close_container(m), "variant");
		ok(sd_bus_message_close_container(m), "entry");
	};
	std::string label = "_Entry number " + std::to_string(id);
	int yes = 1;
	int state = id % 2;
	entry("label", "s", label.c_str());
	entry("enabled", "b", &yes);
	entry("visible", "b", &yes);
	entry("icon-name", "s", "document-open");
	entry("toggle-type", "s", "checkmark");
	entry("toggle-state", "i", &state);
	entry("accessible-desc", "s", label.c_str());
	ok(sd_bus_message_close_container(m), "props");
}

// (ia{sv}av) with `children` entries under it, each with up to `perSubmenu` of its own.
void appendNode(sd_bus_message* m, int& next, int children, int perSubmenu, int& left) {
	ok(sd_bus_message_open_container(m, 'r', "ia{sv}av"), "node");
	int id = next++;
	ok(sd_bus_message_append_basic(m, 'i', &id), "id");
	appendProps(m, id);
	ok(sd_bus_message_open_container(m, 'a', "v"), "children");
	for (int i = 0; i < children && left > 0; ++i) {
		--left;
		ok(sd_bus_message_open_container(m, 'v', "(ia{sv}av)"), "child");
		appendNode(m, next, std::min(perSubmenu, left), 0, left);
		ok(sd_bus_message_close_container(m), "child");
	}
	ok(sd_bus_message_close_container(m), "children");
	ok(sd_bus_message_close_container(m), "node");
}

sdbus::PlainMessage layoutOf(int entries) {
	auto msg = qsd::dbus::plainMessage();
	sd_bus_message* m = qsd::dbus::rawMessage(msg);
	uint32_t revision = 1;
	ok(sd_bus_message_append_basic(m, 'u', &revision), "revision");
	// A root, then top-level entries with submenus of 15: two levels, as real menus are.
	int left = entries - 1;
	int next = 0;
	int topLevel = (left + 15) / 16;
	appendNode(m, next, topLevel, 15, left);
	msg.seal();
	return msg;
}

// a(ia{sv}) a(ias): a new label for every entry, nothing removed.
sdbus::PlainMessage updateOf(int entries) {
	auto msg = qsd::dbus::plainMessage();
	sd_bus_message* m = qsd::dbus::rawMessage(msg);
	ok(sd_bus_message_open_container(m, 'a', "(ia{sv})"), "updated");
	for (int id = 0; id < entries; ++id) {
		ok(sd_bus_message_open_container(m, 'r', "ia{sv}"), "entry");
		ok(sd_bus_message_append_basic(m, 'i', &id), "id");
		ok(sd_bus_message_open_container(m, 'a', "{sv}"), "props");
		std::string label = "Renamed " + std::to_string(id);
		ok(sd_bus_message_append(m, "{sv}", "label", "s", label.c_str()), "label");
		ok(sd_bus_message_close_container(m), "props");
		ok(sd_bus_message_close_container(m), "entry");
	}
	ok(sd_bus_message_close_container(m), "updated");
	ok(sd_bus_message_append(m, "a(ias)", 0), "removed");
	msg.seal();
	return msg;
}

size_t countEntries(const MenuNode& n) {
	size_t count = 1;
	for (const auto& c: n.children) count += countEntries(c);
	return count;
}

struct Times {
	double best = 0;
	double median = 0;
};

Times summarize(std::vector<double> us) {
	std::sort(us.begin(), us.end());
	return {us.front(), us[us.size() / 2]};
}

} // namespace

int main(int argc, char** argv) {
	bool quick = bench::quickMode(argc, argv);
	const int runs = quick ? 2 : 9;
	std::vector<int> sizes = quick ? std::vector<int>{15, 150} : std::vector<int>{15, 150, 4095};
	IconUrl noIcon = [](const MenuProps&) { return nlohmann::json(nullptr); };

	std::printf("# A DBusMenu layout read and turned into JSON, and an update of every label (%d runs, best / median)\n", runs);
	std::printf("%8s  %22s  %22s  %22s  %12s\n", "entries", "readLayout us/entry", "menuToJson us/entry", "update us/entry",
	            "layout+JSON");
	for (int size: sizes) {
		auto layout = layoutOf(size);
		auto update = updateOf(size);
		std::vector<double> read, toJson, updated, whole;
		size_t entries = 0;
		for (int r = 0; r < runs; ++r) {
			layout.rewind(true);
			size_t skipped = 0;
			uint64_t t0 = bench::nowNs();
			MenuNode root = readLayout(layout, skipped);
			uint64_t t1 = bench::nowNs();
			nlohmann::json j = menuToJson(root, noIcon);
			uint64_t t2 = bench::nowNs();
			MenuIndex index;
			index.rebuild(&root);
			update.rewind(true);
			uint64_t t3 = bench::nowNs();
			bool changed = readPropertiesUpdated(update, index);
			uint64_t t4 = bench::nowNs();
			entries = countEntries(root);
			if (entries != size_t(size) || skipped != 0 || !changed || j["children"].empty())
				bench::die("the menu read is not the menu built");
			read.push_back(double(t1 - t0) / 1e3);
			toJson.push_back(double(t2 - t1) / 1e3);
			updated.push_back(double(t4 - t3) / 1e3);
			whole.push_back(double(t2 - t0) / 1e3);
		}
		auto r = summarize(read);
		auto j = summarize(toJson);
		auto u = summarize(updated);
		auto w = summarize(whole);
		double n = double(entries);
		std::printf("%8zu  %10.2f / %9.2f  %10.2f / %9.2f  %10.2f / %9.2f  %7.2f ms\n", entries, r.best / n, r.median / n,
		            j.best / n, j.median / n, u.best / n, u.median / n, w.best / 1e3);
	}
	return 0;
}
