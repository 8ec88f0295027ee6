#include "wire.hpp"

#include "../../dbus/raw.hpp"

#include <algorithm>
#include <cstring>

namespace qsd::notifications {

using dbus::checkRead;

namespace {

// A string at the position; never longer than `limit` bytes are kept (the rest is cut by the
// caller's rules, this only bounds the copy).
std::string readString(sd_bus_message* m, const char* what) {
	const char* s = nullptr;
	checkRead(sd_bus_message_read_basic(m, 's', &s), what);
	return s ? std::string(s) : std::string();
}

// The hint's value when its variant holds `signature`; nullptr after skipping it otherwise.
// Returns true when the variant was entered (the caller reads the value and exits it).
bool enterIf(sd_bus_message* m, const char* signature, const std::string& name, Hints& hints) {
	char type = 0;
	const char* contents = nullptr;
	checkRead(sd_bus_message_peek_type(m, &type, &contents), "hint value");
	if (type == SD_BUS_TYPE_VARIANT && contents && std::strcmp(contents, signature) == 0) {
		checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, signature), name.c_str());
		return true;
	}
	hints.wrongTypes.emplace_back(name, contents ? contents : "?");
	checkRead(sd_bus_message_skip(m, "v"), "hint value");
	return false;
}

void readHint(sd_bus_message* m, const std::string& name, Hints& hints) {
	auto exit = [&] { checkRead(sd_bus_message_exit_container(m), name.c_str()); };
	if (name == "urgency") {
		if (!enterIf(m, "y", name, hints)) return;
		uint8_t v = 0;
		checkRead(sd_bus_message_read_basic(m, 'y', &v), "urgency");
		hints.urgency = v;
		return exit();
	}
	auto string = [&](std::optional<std::string>& out, bool keepFirst = false) {
		if (!enterIf(m, "s", name, hints)) return;
		auto v = readString(m, name.c_str());
		if (!(keepFirst && out)) out = std::move(v);
		exit();
	};
	auto boolean = [&](std::optional<bool>& out) {
		if (!enterIf(m, "b", name, hints)) return;
		int v = 0;
		checkRead(sd_bus_message_read_basic(m, 'b', &v), name.c_str());
		out = v != 0;
		exit();
	};
	if (name == "category") return string(hints.category);
	if (name == "desktop-entry") return string(hints.desktopEntry);
	if (name == "image-path") return string(hints.imagePath);
	// The older spelling loses to the newer one, whichever comes first (readNotify).
	if (name == "image_path") return string(hints.oldImagePath);
	if (name == "resident") return boolean(hints.resident);
	if (name == "transient") return boolean(hints.transient);
	if (name == "action-icons") return boolean(hints.actionIcons);
	if (name == "x-kde-reply-placeholder-text") return string(hints.replyPlaceholder);
	if (name == "x-dunst-stack-tag") return string(hints.stackTag);
	if (name == "x-canonical-private-synchronous") return string(hints.synchronous);
	if (name == "value") {
		// notify-send -h int:value:N sends an i; some senders a u.
		char type = 0;
		const char* contents = nullptr;
		checkRead(sd_bus_message_peek_type(m, &type, &contents), "hint value");
		if (type == SD_BUS_TYPE_VARIANT && contents && (std::strcmp(contents, "i") == 0 || std::strcmp(contents, "u") == 0)) {
			checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, contents), "value");
			if (contents[0] == 'i') {
				int32_t v = 0;
				checkRead(sd_bus_message_read_basic(m, 'i', &v), "value");
				hints.value = v;
			} else {
				uint32_t v = 0;
				checkRead(sd_bus_message_read_basic(m, 'u', &v), "value");
				hints.value = v;
			}
			return exit();
		}
		hints.wrongTypes.emplace_back(name, contents ? contents : "?");
		checkRead(sd_bus_message_skip(m, "v"), "hint value");
		return;
	}
	if (name == "image-data" || name == "image_data" || name == "icon_data") {
		if (!enterIf(m, "(iiibiiay)", name, hints)) return;
		checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_STRUCT, "iiibiiay"), name.c_str());
		RawImage raw;
		int alpha = 0;
		checkRead(sd_bus_message_read(m, "iiibii", &raw.width, &raw.height, &raw.rowstride, &alpha, &raw.bitsPerSample,
		                              &raw.channels),
		          name.c_str());
		raw.hasAlpha = alpha != 0;
		const void* data = nullptr;
		checkRead(sd_bus_message_read_array(m, 'y', &data, &raw.size), name.c_str());
		raw.data = static_cast<const uint8_t*>(data);
		checkRead(sd_bus_message_exit_container(m), name.c_str());
		exit();
		// One slot per name, kept in the specification's order of preference whatever order they
		// came in: a name sent again replaces its slot (the last one counts, as for every hint),
		// so the list never holds more than three and a call with 100 000 of them is read in
		// linear time.
		static const char* order[] = {"image-data", "image_data", "icon_data"};
		auto rank = [](const std::string& n) { return std::find(std::begin(order), std::end(order), n) - std::begin(order); };
		auto at = std::find_if(hints.images.begin(), hints.images.end(), [&](const auto& e) { return rank(e.first) >= rank(name); });
		if (at != hints.images.end() && at->first == name) at->second = raw;
		else hints.images.insert(at, {name, raw});
		return;
	}
	checkRead(sd_bus_message_skip(m, "v"), "hint value");
}

} // namespace

NotifyArgs readNotify(sdbus::Message& call) {
	sd_bus_message* m = dbus::rawMessage(call);
	checkRead(sd_bus_message_rewind(m, 1), "rewind");
	NotifyArgs a;
	a.appName = readString(m, "app_name");
	checkRead(sd_bus_message_read_basic(m, 'u', &a.replacesId), "replaces_id");
	a.appIcon = readString(m, "app_icon");
	a.summary = readString(m, "summary");
	a.body = readString(m, "body");
	checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "s"), "actions");
	for (;;) {
		const char* s = nullptr;
		int r = checkRead(sd_bus_message_read_basic(m, 's', &s), "action");
		if (r == 0) break;
		// Beyond what can fill the kept pairs (some may be dropped as duplicates) the elements
		// are only counted.
		if (a.actions.size() < 4 * kMaxActions) a.actions.emplace_back(s ? s : "");
		else ++a.extraActions;
	}
	checkRead(sd_bus_message_exit_container(m), "actions");
	checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}"), "hints");
	for (;;) {
		int r = checkRead(sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv"), "hint");
		if (r == 0) break;
		auto name = readString(m, "hint name");
		readHint(m, name, a.hints);
		checkRead(sd_bus_message_exit_container(m), "hint");
	}
	checkRead(sd_bus_message_exit_container(m), "hints");
	if (!a.hints.imagePath) a.hints.imagePath = std::move(a.hints.oldImagePath);
	a.hints.oldImagePath.reset();
	checkRead(sd_bus_message_read_basic(m, 'i', &a.expireTimeout), "expire_timeout");
	return a;
}

} // namespace qsd::notifications
