// Fuzzes the notification server's input: a Notify call, which any application on the session
// bus may send qsd (daemon/backends/notifications/wire.cpp reads it). The input builds the call
// (susssasa{sv}i): texts with markup, entities and bytes of any kind, sometimes past their
// bounds; an actions array of any length; hints under their own names with the type the
// specification gives them or another, and image-data of any size, rowstride, channels and
// length. The call is read as the backend reads it, its text mapped (mapText) and its images
// decoded, fitted and encoded as the backend stores them. Besides crashes and sanitizer reports,
// what the tree would show is checked: every text valid UTF-8 (the JSON serializer throws
// otherwise) and within its bound, actions unique and at most kMaxActions, the plain body no
// longer than the markup, decoded images of their stated size.

#include "backends/notifications/images.hpp"
#include "backends/notifications/mapping.hpp"
#include "backends/notifications/wire.hpp"
#include "backends/tray/pixmap.hpp"

#include "dbus_builder.hpp"

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

using namespace qsd::notifications;
using qsd::fuzz::ok;
using qsd::fuzz::sealed;
using qsd::fuzz::Unbuildable;

namespace {

[[noreturn]] void die(const std::string& what) { qsd::fuzz::die("qsd-fuzz-notify", what); }

const std::vector<std::string> kHints = {"urgency",    "category",   "desktop-entry", "image-data", "image_data",
                                         "icon_data",  "image-path", "image_path",    "resident",   "transient",
                                         "x",          "y",          "sound-file",    "suppress-sound", "action-icons"};
const std::vector<std::string> kTypes = {"s", "b", "i", "u", "x", "d", "y", "o", "ay", "as", "a{sv}", "(iiibiiay)", "v"};
// Pieces of markup a body is made of: the tags the specification allows, others, entities
// well-formed and not, and bytes that need care in UTF-8.
const std::vector<std::string> kMarkup = {"<b>",    "</b>",  "<i>",       "</i>",    "<u>",     "<a href=\"x\">", "</a>",
                                          "<img src=\"/x.png\" alt=\"a\"/>", "<br>",  "<br/>",   "<",     ">",
                                          "&amp;",  "&lt;",  "&gt;",      "&quot;",  "&apos;",  "&#65;",  "&#x1F600;",
                                          "&#0;",   "&#xD800;", "&#x110000;", "&#99999999999999999999;", "&#x;",
                                          "&",      "&unknown;", "\xC3\xA9", "\xE2\x80\xA6", "\xF0\x9F\x98\x80", "\n",
                                          "<script>", "</", "<!-- c -->", "<b", "a"};

class Builder: public qsd::fuzz::ValueBuilder {
public:
	explicit Builder(FuzzedDataProvider& in): ValueBuilder(in, kTypes, "/org/freedesktop/Notifications") {}

	// A text: random bytes, or markup pieces, sometimes past `bound` bytes.
	std::string longText(size_t bound) {
		switch (in_.ConsumeIntegralInRange(0, 3)) {
		case 0: return text(256);
		case 1: {
			std::string s;
			for (size_t n = count(48); n > 0; --n) s += pick(kMarkup);
			return s;
		}
		case 2: {
			// Just past the bound, ending inside a character or an entity.
			std::string s(bound - 2, 'x');
			s += pick(kMarkup);
			return s;
		}
		default: return std::string(in_.ConsumeIntegralInRange<size_t>(0, 4 * bound), char('a' + in_.ConsumeIntegralInRange(0, 25)));
		}
	}

	void notify(sd_bus_message* m) {
		ok(sd_bus_message_append_basic(m, 's', longText(kMaxNameBytes).c_str()));
		integer<uint32_t>(m, 'u');
		ok(sd_bus_message_append_basic(m, 's', iconText().c_str()));
		ok(sd_bus_message_append_basic(m, 's', longText(kMaxSummaryBytes).c_str()));
		ok(sd_bus_message_append_basic(m, 's', longText(kMaxBodyBytes).c_str()));
		// Actions: pairs whose keys repeat, empty ones, an odd count, more than are kept.
		ok(sd_bus_message_open_container(m, 'a', "s"));
		size_t actions = in_.ConsumeIntegralInRange(0, 7) ? count(12) : count(200);
		for (size_t i = 0; i < actions; ++i) {
			std::string s = in_.ConsumeBool() ? std::to_string(count(6)) : longText(kMaxNameBytes);
			if (in_.ConsumeIntegralInRange(0, 15) == 0) s.clear();
			ok(sd_bus_message_append_basic(m, 's', s.c_str()));
		}
		ok(sd_bus_message_close_container(m));
		properties(m, kHints, 10, [&](const std::string& key) { variantOf(m, hintType(key), 1); });
		integer<int32_t>(m, 'i');
	}

protected:
	// image-data: mostly sides, channels and a rowstride that agree with the bytes, sometimes not.
	bool customValue(sd_bus_message* m, const std::string& sig, int /*depth*/) override {
		if (sig != "(iiibiiay)") return false;
		ok(sd_bus_message_open_container(m, 'r', "iiibiiay"));
		bool agree = in_.ConsumeIntegralInRange(0, 3) != 0;
		int alpha = in_.ConsumeBool();
		int32_t channels = alpha ? 4 : 3;
		int32_t w = in_.ConsumeIntegralInRange<int32_t>(1, in_.ConsumeBool() ? 8 : 700);
		int32_t h = in_.ConsumeIntegralInRange<int32_t>(1, in_.ConsumeBool() ? 8 : 700);
		if (w * h > 600 * 600) h = 1;   // the largest images only one row: the fuzzer stays quick
		int32_t rowstride = w * channels + in_.ConsumeIntegralInRange<int32_t>(0, 4);
		int32_t bits = 8;
		if (!agree) {
			w = pickInt(w);
			h = pickInt(h);
			rowstride = pickInt(rowstride);
			channels = pickInt(channels);
			bits = pickInt(bits);
		}
		ok(sd_bus_message_append(m, "iiibii", w, h, rowstride, alpha, bits, channels));
		if (agree || in_.ConsumeBool()) {
			int64_t size = 0;
			if (w > 0 && h > 0 && rowstride > 0 && channels > 0 && w <= kMaxImageSide && h <= kMaxImageSide &&
			    rowstride <= (1 << 16) && channels <= 8)
				size = int64_t(rowstride) * (h - 1) + int64_t(w) * channels;
			size += in_.ConsumeIntegralInRange<int64_t>(-2, 2);
			if (size < 0 || size > (int64_t(16) << 20)) size = 0;
			std::vector<uint8_t> px(size_t(size), in_.ConsumeIntegral<uint8_t>());
			ok(sd_bus_message_append_array(m, 'y', px.data(), px.size()));
		} else {
			bytes(m);
		}
		ok(sd_bus_message_close_container(m));
		return true;
	}

private:
	// The value as it is, or one of the values that break arithmetic.
	int32_t pickInt(int32_t v) {
		switch (in_.ConsumeIntegralInRange(0, 5)) {
		case 0: return 0;
		case 1: return -1;
		case 2: return INT32_MAX;
		case 3: return INT32_MIN;
		case 4: return in_.ConsumeIntegral<int32_t>();
		default: return v;
		}
	}

	std::string iconText() {
		static const std::vector<std::string> icons = {"",           "dialog-information", "file:///nonexistent.png",
		                                               "file://localhost/tmp", "file://host/x", "/dev/zero", "/",
		                                               "file:///%2e%2e/%00", "http://x/y.png", "file://", "%", "file:///a%2"};
		return in_.ConsumeBool() ? pick(icons) : text(128);
	}

	static std::string hintType(const std::string& key) {
		if (key == "urgency") return "y";
		if (key == "resident" || key == "transient" || key == "suppress-sound" || key == "action-icons") return "b";
		if (key == "x" || key == "y") return "i";
		if (key == "image-data" || key == "image_data" || key == "icon_data") return "(iiibiiay)";
		return "s";
	}
};

bool validUtf8Text(const std::string& s) { return validUtf8(s) == s; }

void checkText(const std::string& what, const std::string& s, size_t bound) {
	if (!validUtf8Text(s)) die(what + " is not valid UTF-8");
	// The bound, plus the ellipsis that marks a cut.
	if (s.size() > bound + 3) die(what + " is longer than its bound");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
	FuzzedDataProvider in(data, size);
	Builder build(in);
	try {
		auto call = sealed([&](sd_bus_message* m) { build.notify(m); });
		NotifyArgs args;
		try {
			args = readNotify(call);
		} catch (const sdbus::Error&) {
			return 0;   // refused as malformed: the backend answers with an error
		}
		if (args.actions.size() > 4 * kMaxActions) die("more action elements kept than 4 × kMaxActions");

		auto t = mapText(args);
		checkText("appName", t.appName, kMaxNameBytes);
		checkText("summary", t.summary, kMaxSummaryBytes);
		checkText("body", t.body, kMaxBodyBytes);
		if (!validUtf8Text(t.bodyText)) die("bodyText is not valid UTF-8");
		if (t.bodyText.size() > t.body.size()) die("bodyText is longer than the body");
		if (t.category) checkText("category", *t.category, kMaxNameBytes);
		if (t.desktopEntry) checkText("desktopEntry", *t.desktopEntry, kMaxNameBytes);
		if (t.actions.size() > kMaxActions) die("more than kMaxActions actions");
		std::set<std::string> keys;
		nlohmann::json actions = nlohmann::json::array();
		for (const auto& a: t.actions) {
			if (a.key.empty() || !keys.insert(a.key).second) die("an empty or repeated action key");
			checkText("an action key", a.key, kMaxNameBytes);
			checkText("an action label", a.label, kMaxNameBytes);
			actions.push_back({{"key", a.key}, {"label", a.label}});
		}
		// What the tree holds of it: the default error handler throws on invalid UTF-8.
		nlohmann::json item = {{"appName", t.appName}, {"summary", t.summary},   {"body", t.body},
		                       {"bodyText", t.bodyText}, {"actions", actions},   {"category", t.category ? nlohmann::json(*t.category) : nullptr},
		                       {"desktopEntry", t.desktopEntry ? nlohmann::json(*t.desktopEntry) : nullptr}};
		(void)item.dump();
		(void)iconSpec(validUtf8(args.appIcon));
		if (args.hints.imagePath) (void)iconSpec(validUtf8(*args.hints.imagePath));

		for (const auto& [hint, raw]: args.hints.images) {
			auto decoded = decodeImageData(raw);
			if (!decoded.image) {
				if (decoded.error.empty()) die(hint + " refused without a reason");
				continue;
			}
			const auto& image = *decoded.image;
			if (image.width != raw.width || image.height != raw.height) die(hint + " decoded to another size");
			if (image.pixels.size() != size_t(image.width) * size_t(image.height) * 4) die(hint + " decoded to the wrong byte count");
			auto fit = Images::fitted(image);
			if (fit.width > kStoredImageSide || fit.height > kStoredImageSide || fit.width < 1 || fit.height < 1 ||
			    fit.pixels.size() != size_t(fit.width) * size_t(fit.height) * 4)
				die(hint + " fitted to a wrong size");
			if (!qsd::tray::encodePng(qsd::tray::Image{fit.width, fit.height, std::move(fit.pixels)})) die(hint + " could not be encoded");
			break;   // the backend stores the first usable one
		}
	} catch (const Unbuildable&) {
	}
	return 0;
}
