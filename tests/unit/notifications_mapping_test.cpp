// The notification server's pure parts (daemon/backends/notifications/mapping.hpp, state.hpp,
// wire.hpp): text made valid and bounded, markup to plain text, actions, timeouts, image-data to
// RGBA, what image-path names and a PNG's header, Notify's hints read from a message, and the
// state file with its id counter and its size.

#ifdef QSD_NOTIFICATIONS_BACKEND

#include "backends/notifications/mapping.hpp"
#include "backends/notifications/state.hpp"
#include "backends/notifications/wire.hpp"

#include "dbus/raw.hpp"

#include <gtest/gtest.h>
#include <systemd/sd-bus.h>


using namespace qsd::notifications;
using json = nlohmann::json;

namespace {
const std::string kFFFD = "\xEF\xBF\xBD";
const std::string kEllipsis = "\xE2\x80\xA6";
} // namespace

TEST(NotificationsMapping, UrgencyFromTheByte) {
	EXPECT_EQ(urgencyFromByte(0), Urgency::Low);
	EXPECT_EQ(urgencyFromByte(1), Urgency::Normal);
	EXPECT_EQ(urgencyFromByte(2), Urgency::Critical);
	EXPECT_EQ(urgencyFromByte(3), Urgency::Normal);
	EXPECT_EQ(urgencyFromByte(255), Urgency::Normal);
	EXPECT_STREQ(toString(Urgency::Low), "low");
	EXPECT_STREQ(toString(Urgency::Critical), "critical");
}

TEST(NotificationsMapping, CloseReasonsAreTheSpecificationsNumbers) {
	EXPECT_EQ(uint32_t(CloseReason::Expired), 1u);
	EXPECT_EQ(uint32_t(CloseReason::Dismissed), 2u);
	EXPECT_EQ(uint32_t(CloseReason::ClosedByApp), 3u);
	EXPECT_EQ(uint32_t(CloseReason::Undefined), 4u);
	for (auto r: {CloseReason::Expired, CloseReason::Dismissed, CloseReason::ClosedByApp, CloseReason::Undefined})
		EXPECT_EQ(closeReasonFromString(toString(r)), r);
	EXPECT_EQ(closeReasonFromString("closed"), std::nullopt);
}

TEST(NotificationsMapping, InvalidUtf8BecomesReplacementCharacters) {
	EXPECT_EQ(validUtf8("plain"), "plain");
	EXPECT_EQ(validUtf8("caf\xC3\xA9 \xF0\x9F\x94\x94"), "caf\xC3\xA9 \xF0\x9F\x94\x94");
	EXPECT_EQ(validUtf8("a\xFF" "b"), "a" + kFFFD + "b");
	EXPECT_EQ(validUtf8("\xC3"), kFFFD);                            // truncated sequence
	EXPECT_EQ(validUtf8("\xC0\xAF"), kFFFD + kFFFD);                // overlong '/'
	EXPECT_EQ(validUtf8("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);    // a surrogate
	EXPECT_EQ(validUtf8("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);   // above U+10FFFF
	EXPECT_EQ(validUtf8(std::string("a\0b", 3)), "a" + kFFFD + "b");
}

TEST(NotificationsMapping, CutAtACharacterWithAnEllipsis) {
	bool cut = true;
	EXPECT_EQ(cutUtf8("short", 10, &cut), "short");
	EXPECT_FALSE(cut);
	EXPECT_EQ(cutUtf8("0123456789", 4, &cut), "0123" + kEllipsis);
	EXPECT_TRUE(cut);
	// "é" is two bytes: a cut inside it keeps neither byte.
	EXPECT_EQ(cutUtf8("ab\xC3\xA9", 3), "ab" + kEllipsis);
	std::string big(1 << 20, 'x');
	auto out = cutUtf8(big, kMaxBodyBytes, &cut);
	EXPECT_TRUE(cut);
	EXPECT_EQ(out.size(), kMaxBodyBytes + kEllipsis.size());
}

TEST(NotificationsMapping, PlainTextFromMarkup) {
	EXPECT_EQ(plainText("<b>bold</b> and <i>it</i> <u>u</u>"), "bold and it u");
	EXPECT_EQ(plainText("<a href=\"https://x.org/?a=1&amp;b=2\">link</a>"), "link");
	EXPECT_EQ(plainText("<img src=\"/x.png\" alt=\"pic\"/>after"), "after");
	EXPECT_EQ(plainText("one<br>two<br/>three<BR />four"), "one\ntwo\nthree\nfour");
	EXPECT_EQ(plainText("&lt;tag&gt; &amp; &quot;q&quot; &apos;a&apos;"), "<tag> & \"q\" 'a'");
	EXPECT_EQ(plainText("&#233;&#xe9;&#X1F514;"), "\xC3\xA9\xC3\xA9\xF0\x9F\x94\x94");
	// What is no entity or tag stays text.
	EXPECT_EQ(plainText("a < b && c > d"), "a < b && c > d");
	EXPECT_EQ(plainText("Tom & Jerry &unknown; &#;"), "Tom & Jerry &unknown; &#;");
	EXPECT_EQ(plainText("unclosed <b"), "unclosed <b");
	// Numeric entities that are no character.
	EXPECT_EQ(plainText("&#xD800;|&#0;|&#x110000;|&#99999999999;"), kFFFD + "|" + kFFFD + "|" + kFFFD + "|" + kFFFD);
}

TEST(NotificationsMapping, ActionsArePairsInOrder) {
	size_t dropped = 99;
	auto a = parseActions({"default", "Open", "reply", "Reply"}, &dropped);
	ASSERT_EQ(a.size(), 2u);
	EXPECT_EQ(a[0].key, "default");
	EXPECT_EQ(a[0].label, "Open");
	EXPECT_EQ(a[1].key, "reply");
	EXPECT_EQ(dropped, 0u);
	// An odd element, an empty key and a repeated key are dropped.
	a = parseActions({"a", "A", "", "Empty", "a", "Again", "b", "B", "odd"}, &dropped);
	ASSERT_EQ(a.size(), 2u);
	EXPECT_EQ(a[1].key, "b");
	EXPECT_EQ(dropped, 5u);
	std::vector<std::string> many;
	for (int i = 0; i < 40; ++i) many.insert(many.end(), {"k" + std::to_string(i), "L"});
	a = parseActions(many, &dropped);
	EXPECT_EQ(a.size(), kMaxActions);
	EXPECT_EQ(dropped, 80 - 2 * kMaxActions);
	a = parseActions({std::string(1000, 'k'), std::string(1000, 'l')});
	EXPECT_EQ(a[0].key.size(), qsd::notifications::kMaxNameBytes + kEllipsis.size());
}

TEST(NotificationsMapping, Timeouts) {
	EXPECT_EQ(timeoutMs(-1, Urgency::Normal, 5000), 5000u);
	EXPECT_EQ(timeoutMs(-7, Urgency::Low, 5000), 5000u);
	EXPECT_EQ(timeoutMs(0, Urgency::Normal, 5000), std::nullopt);
	EXPECT_EQ(timeoutMs(1500, Urgency::Normal, 5000), 1500u);
	EXPECT_EQ(timeoutMs(1500, Urgency::Critical, 5000), std::nullopt);
	EXPECT_EQ(timeoutMs(-1, Urgency::Critical, 5000), std::nullopt);
	EXPECT_EQ(timeoutMs(-1, Urgency::Normal, 0), std::nullopt);
}

TEST(NotificationsMapping, ImageDataWithPaddedRowsAndAlpha) {
	// 3x3 RGB, rowstride 12: three padding bytes after each row but the last.
	std::vector<uint8_t> rgb;
	for (int y = 0; y < 3; ++y) {
		for (int x = 0; x < 3; ++x) rgb.insert(rgb.end(), {uint8_t(10 * y + x), uint8_t(100 + x), uint8_t(200 + y)});
		if (y < 2) rgb.insert(rgb.end(), {0xEE, 0xEE, 0xEE});
	}
	auto d = decodeImageData({3, 3, 12, false, 8, 3, rgb.data(), rgb.size()});
	ASSERT_TRUE(d.image) << d.error;
	EXPECT_EQ(d.image->width, 3);
	EXPECT_EQ(d.image->pixels.size(), 36u);
	for (int y = 0; y < 3; ++y)
		for (int x = 0; x < 3; ++x) {
			const uint8_t* p = &d.image->pixels[size_t(y * 3 + x) * 4];
			EXPECT_EQ(p[0], 10 * y + x);
			EXPECT_EQ(p[1], 100 + x);
			EXPECT_EQ(p[2], 200 + y);
			EXPECT_EQ(p[3], 255);
		}
	std::vector<uint8_t> rgba = {1, 2, 3, 4, 5, 6, 7, 8};
	d = decodeImageData({2, 1, 8, true, 8, 4, rgba.data(), rgba.size()});
	ASSERT_TRUE(d.image);
	EXPECT_EQ(d.image->pixels, rgba);
}

TEST(NotificationsMapping, ImageDataThatIsRefused) {
	std::vector<uint8_t> px(64, 1);
	EXPECT_NE(decodeImageData({2, 2, 6, false, 16, 3, px.data(), px.size()}).error.find("bits per sample is 16"), std::string::npos);
	EXPECT_FALSE(decodeImageData({2, 2, 8, true, 8, 3, px.data(), px.size()}).image);    // alpha with 3 channels
	EXPECT_FALSE(decodeImageData({2, 2, 6, false, 8, 4, px.data(), px.size()}).image);   // 4 channels without alpha
	EXPECT_FALSE(decodeImageData({2, 2, 5, false, 8, 3, px.data(), px.size()}).image);   // rowstride shorter than a row
	EXPECT_FALSE(decodeImageData({5, 5, 15, false, 8, 3, px.data(), px.size()}).image);  // too few bytes
	EXPECT_FALSE(decodeImageData({0, 2, 6, false, 8, 3, px.data(), px.size()}).image);
	EXPECT_FALSE(decodeImageData({-1, 2, 6, false, 8, 3, px.data(), px.size()}).image);
	EXPECT_FALSE(decodeImageData({kMaxImageSide + 1, 1, (kMaxImageSide + 1) * 3, false, 8, 3, px.data(), px.size()}).image);
	EXPECT_FALSE(decodeImageData({1, 1, 3, false, 8, 3, nullptr, 0}).image);
	// The last row need not be padded.
	EXPECT_TRUE(decodeImageData({2, 2, 8, false, 8, 3, px.data(), 14}).image);
	EXPECT_FALSE(decodeImageData({2, 2, 8, false, 8, 3, px.data(), 13}).image);
}

TEST(NotificationsMapping, WhatAnImagePathNames) {
	EXPECT_EQ(iconSpec("").kind, IconSpec::Kind::None);
	auto s = iconSpec("mail-unread");
	EXPECT_EQ(s.kind, IconSpec::Kind::Name);
	EXPECT_EQ(s.value, "mail-unread");
	s = iconSpec("/tmp/a b.png");
	EXPECT_EQ(s.kind, IconSpec::Kind::File);
	EXPECT_EQ(s.value, "/tmp/a b.png");
	s = iconSpec("file:///tmp/a%20b.png");
	EXPECT_EQ(s.kind, IconSpec::Kind::File);
	EXPECT_EQ(s.value, "/tmp/a b.png");
	s = iconSpec("file://localhost/x.png");
	EXPECT_EQ(s.value, "/x.png");
	EXPECT_EQ(iconSpec("file://otherhost/x.png").kind, IconSpec::Kind::None);
	EXPECT_EQ(iconSpec("https://example.org/x.png").kind, IconSpec::Kind::None);
	EXPECT_EQ(iconSpec("file:///x%00.png").kind, IconSpec::Kind::None);
	EXPECT_EQ(pathOfFileUrl("file:///run/q/history/3-image.png"), "/run/q/history/3-image.png");
	EXPECT_EQ(pathOfFileUrl("/not/a/url"), "");
}

// What a Notify call's text becomes, as the backend shows it: each part made valid and cut to
// its bound (and marked with an ellipsis), the plain body taken from the cut markup, every
// dropped action element counted.
TEST(NotificationsMapping, TheTextOfACall) {
	NotifyArgs a;
	a.appName = "app\xFF";
	a.summary = std::string(kMaxSummaryBytes + 10, 's');
	a.body = "<b>bold</b> &amp; " + std::string(kMaxBodyBytes, 'b');
	a.actions = {"default", "Open", "default", "Again", "odd"};
	a.extraActions = 3;
	a.hints.category = std::string(kMaxNameBytes + 1, 'c');
	auto t = mapText(a);
	EXPECT_EQ(t.appName, "app" + kFFFD);
	EXPECT_TRUE(t.cutSummary);
	EXPECT_EQ(t.summary, std::string(kMaxSummaryBytes, 's') + kEllipsis);
	EXPECT_TRUE(t.cutBody);
	EXPECT_EQ(t.body.size(), kMaxBodyBytes + kEllipsis.size());
	EXPECT_EQ(t.bodyText.substr(0, 9), "bold & bb");
	EXPECT_EQ(t.bodyText.size(), t.body.size() - 11);   // "<b>", "</b>" and "amp;" gone
	ASSERT_EQ(t.actions.size(), 1u);
	EXPECT_EQ(t.actions[0].label, "Open");
	EXPECT_EQ(t.droppedActions, 3u + 3u);   // the repeated pair, the odd one, the three not read
	ASSERT_TRUE(t.category);
	EXPECT_EQ(*t.category, std::string(kMaxNameBytes, 'c') + kEllipsis);
	EXPECT_FALSE(t.desktopEntry);
}

TEST(NotificationsMapping, StackTagsAndProgressValues) {
	NotifyArgs a;
	a.appName = "notify-send";
	EXPECT_EQ(stackKey(a), std::nullopt);
	EXPECT_FALSE(mapText(a).stackTag);
	EXPECT_FALSE(mapText(a).value);
	// x-dunst-stack-tag wins over x-canonical-private-synchronous; an empty one counts as none.
	a.hints.synchronous = "volume";
	EXPECT_EQ(stackKey(a), std::pair(std::string("notify-send"), std::string("volume")));
	a.hints.stackTag = "brightness";
	EXPECT_EQ(stackKey(a), std::pair(std::string("notify-send"), std::string("brightness")));
	a.hints.stackTag = "";
	EXPECT_EQ(stackKey(a)->second, "volume");
	a.hints.synchronous = "";
	EXPECT_EQ(stackKey(a), std::nullopt);
	// Cut as the names are, so a tag and the tree's stackTag are the same text.
	a.hints.stackTag = std::string(kMaxNameBytes + 1, 't');
	EXPECT_EQ(stackKey(a)->second, std::string(kMaxNameBytes, 't') + kEllipsis);
	EXPECT_EQ(*mapText(a).stackTag, stackKey(a)->second);
	// The value is clamped to 0..100.
	for (auto [sent, kept]: {std::pair<int64_t, int>{50, 50}, {-3, 0}, {0, 0}, {100, 100}, {101, 100}, {4294967295, 100}}) {
		a.hints.value = sent;
		EXPECT_EQ(mapText(a).value, kept) << sent;
	}
}

// Control characters have no display value, and JSON writes each as a six-byte escape: they are
// dropped from every text that is shown (tab and line feed stay), before the text is cut. Action
// keys keep them: ActionInvoked gives the key back to the application as it sent it.
TEST(NotificationsMapping, ControlCharactersAreDroppedFromText) {
	EXPECT_EQ(displayText("a\x01" "b\tc\nd\re\x1f\x7f"), "ab\tc\nde");
	EXPECT_EQ(displayText(std::string("x\0y", 3)), "x" + kFFFD + "y");   // NUL is no character: U+FFFD, as before
	EXPECT_EQ(plainText("a&#1;b&#x7F;c&#9;d<br>e"), "abc\td\ne");
	NotifyArgs a;
	a.appName = "app\x02";
	a.summary = std::string(kMaxSummaryBytes, '\x01') + "kept";
	a.body = "<b>\x03" "bold</b>&#2;";
	a.actions = {"key\x04", "La\x05" "bel"};
	a.hints.category = "cat\x06";
	a.hints.stackTag = "tag\x07";
	auto t = mapText(a);
	EXPECT_EQ(t.appName, "app");
	EXPECT_EQ(t.summary, "kept");   // dropped before the cut: nothing was cut
	EXPECT_FALSE(t.cutSummary);
	EXPECT_EQ(t.body, "<b>bold</b>&#2;");
	EXPECT_EQ(t.bodyText, "bold");
	ASSERT_EQ(t.actions.size(), 1u);
	EXPECT_EQ(t.actions[0].key, "key\x04");
	EXPECT_EQ(t.actions[0].label, "Label");
	EXPECT_EQ(t.category, "cat");
	EXPECT_EQ(t.stackTag, "tag");
	EXPECT_EQ(stackKey(a), std::pair(std::string("app"), std::string("tag")));
}

// A PNG's sides come from its header, before anything is decoded or copied.
TEST(NotificationsMapping, PngSidesFromTheHeader) {
	auto header = [](uint32_t w, uint32_t h, const char* type = "IHDR") {
		std::string s = "\x89PNG\r\n\x1a\n";
		auto be32 = [&](uint32_t v) {
			for (int k = 3; k >= 0; --k) s += char((v >> (8 * k)) & 0xFF);
		};
		be32(13);
		s += type;
		be32(w);
		be32(h);
		return s + std::string("\x08\x06\0\0\0", 5);
	};
	EXPECT_EQ(pngSides(header(30000, 20000)), std::pair(30000u, 20000u));
	EXPECT_EQ(pngSides(header(1, 512)), std::pair(1u, 512u));
	EXPECT_EQ(pngSides(header(64, 64, "IDAT")), std::pair(0u, 0u));     // IHDR must come first
	EXPECT_EQ(pngSides(header(64, 64).substr(0, 20)), std::pair(0u, 0u));   // cut short
	EXPECT_EQ(pngSides("\x89PNG\r\n\x1a\n"), std::pair(0u, 0u));
	EXPECT_EQ(pngSides("GIF89a"), std::nullopt);
	EXPECT_EQ(pngSides(""), std::nullopt);
}

namespace {
// A Notify call as the bus delivers it, with `hints` appended by the caller.
sdbus::PlainMessage notifyCall(const std::function<void(sd_bus_message*)>& hints) {
	auto msg = qsd::dbus::plainMessage();
	auto* m = qsd::dbus::rawMessage(msg);
	EXPECT_GE(sd_bus_message_append(m, "susss", "app", 0u, "", "summary", "body"), 0);
	EXPECT_GE(sd_bus_message_append(m, "as", 0), 0);
	EXPECT_GE(sd_bus_message_open_container(m, 'a', "{sv}"), 0);
	hints(m);
	EXPECT_GE(sd_bus_message_close_container(m), 0);
	EXPECT_GE(sd_bus_message_append(m, "i", -1), 0);
	msg.seal();
	msg.rewind(true);
	return msg;
}

void imageHint(sd_bus_message* m, const char* name, int32_t width, uint8_t byte) {
	uint8_t pixels[3] = {byte, byte, byte};
	ASSERT_GE(sd_bus_message_open_container(m, 'e', "sv"), 0);
	ASSERT_GE(sd_bus_message_append(m, "s", name), 0);
	ASSERT_GE(sd_bus_message_open_container(m, 'v', "(iiibiiay)"), 0);
	ASSERT_GE(sd_bus_message_open_container(m, 'r', "iiibiiay"), 0);
	ASSERT_GE(sd_bus_message_append(m, "iiibii", width, 1, 3, 0, 8, 3), 0);
	ASSERT_GE(sd_bus_message_append_array(m, 'y', pixels, width == 1 ? 3 : 0), 0);
	ASSERT_GE(sd_bus_message_close_container(m), 0);
	ASSERT_GE(sd_bus_message_close_container(m), 0);
	ASSERT_GE(sd_bus_message_close_container(m), 0);
}
} // namespace

// A hints dictionary may name a pixel hint any number of times (an a{sv} is meant as a map, so
// that is malformed, but the bus carries it): each name has one slot, and the last value sent
// counts, as for every other hint. So the hints are read in linear time, and the backend tries
// at most three images, in the specification's order, whatever order they came in.
TEST(NotificationsWire, EachPixelHintNameHasOneSlotAndTheLastCounts) {
	constexpr int kRepeats = 20000;
	auto msg = notifyCall([](sd_bus_message* m) {
		imageHint(m, "icon_data", 1, 0x30);
		for (int i = 0; i < kRepeats; ++i) {
			imageHint(m, "image-data", 0, 0);
			imageHint(m, "image_data", 0, 0);
		}
		imageHint(m, "image-data", 1, 0x10);
		imageHint(m, "image_data", 1, 0x20);
		ASSERT_GE(sd_bus_message_append(m, "{sv}", "urgency", "y", uint8_t(2)), 0);
	});
	auto args = readNotify(msg);
	ASSERT_EQ(args.hints.images.size(), 3u);
	EXPECT_EQ(args.hints.images[0].first, "image-data");
	EXPECT_EQ(args.hints.images[1].first, "image_data");
	EXPECT_EQ(args.hints.images[2].first, "icon_data");
	for (size_t i = 0; i < 3; ++i) {
		ASSERT_EQ(args.hints.images[i].second.width, 1) << i;
		EXPECT_EQ(args.hints.images[i].second.data[0], 0x10 * (i + 1)) << i;
	}
	EXPECT_EQ(args.hints.urgency, 2);   // what follows them is read as well
	EXPECT_EQ(args.expireTimeout, -1);
}

// The last value of a hint counts; image_path loses to image-path whichever comes first.
TEST(NotificationsWire, TheLastValueOfAHintCounts) {
	auto paths = [](std::vector<std::pair<const char*, const char*>> hints) {
		auto msg = notifyCall([&](sd_bus_message* m) {
			for (auto [name, value]: hints) ASSERT_GE(sd_bus_message_append(m, "{sv}", name, "s", value), 0);
		});
		return readNotify(msg).hints.imagePath;
	};
	EXPECT_EQ(paths({{"image_path", "/a"}, {"image_path", "/b"}}), "/b");
	EXPECT_EQ(paths({{"image-path", "/new"}, {"image_path", "/old"}}), "/new");
	EXPECT_EQ(paths({{"image_path", "/old"}, {"image-path", "/new"}, {"image-path", "/newer"}}), "/newer");
	EXPECT_EQ(paths({{"category", "x"}}), std::nullopt);
}

TEST(NotificationsMapping, CapabilitiesInTheirOrderEachOnce) {
	EXPECT_EQ(defaultCapabilities(), (std::vector<std::string>{"actions", "body", "body-hyperlinks", "body-markup", "icon-static",
	                                                           "persistence", "inline-reply"}));
	EXPECT_EQ(capabilitySet({"inline-reply", "body", "body", "action-icons"}),
	          (std::vector<std::string>{"action-icons", "body", "inline-reply"}));
	EXPECT_EQ(capabilitySet({}), std::vector<std::string>{});
	EXPECT_EQ(capabilitySet({"body", "sound"}), std::nullopt);
	EXPECT_EQ(capabilitySet({"Body"}), std::nullopt);
}

TEST(NotificationsState, RoundTripAndDefaults) {
	SavedState s;
	s.lastId = 41;
	s.reservedId = 41 + kIdReserve;
	s.clean = false;
	s.dnd = true;
	s.defaultTimeoutMs = 8000;
	s.historyLimit = 50;
	s.capabilities = {"body"};
	s.history.push_back({{"id", 40}, {"summary", "hi"}});
	s.shown.push_back({{"id", 41}, {"summary", "still shown"}});
	auto back = parseState(serializeState(s));
	ASSERT_TRUE(back);
	EXPECT_EQ(back->lastId, 41u);
	EXPECT_EQ(back->reservedId, 41 + kIdReserve);
	EXPECT_FALSE(back->clean);
	EXPECT_TRUE(back->dnd);
	EXPECT_EQ(back->defaultTimeoutMs, 8000u);
	EXPECT_EQ(back->historyLimit, 50u);
	EXPECT_EQ(back->capabilities, std::vector<std::string>{"body"});
	EXPECT_EQ(back->history, s.history);
	EXPECT_EQ(back->shown, s.shown);
	auto empty = parseState("{}");
	ASSERT_TRUE(empty);
	EXPECT_EQ(empty->lastId, 0u);
	EXPECT_TRUE(empty->shown.empty());   // a file of a qsd before `shown` existed
	EXPECT_EQ(empty->historyLimit, kDefaultHistoryLimit);
	EXPECT_EQ(empty->capabilities, defaultCapabilities());
	EXPECT_EQ(firstId(*empty), 1u);
}

TEST(NotificationsState, GarbageIsReplacedByDefaultsAndNamed) {
	EXPECT_FALSE(parseState("not json"));
	EXPECT_FALSE(parseState("[1, 2]"));
	std::string problems;
	auto s = parseState(R"({"lastId": "x", "dnd": 1, "historyLimit": 5000, "capabilities": ["body", "sound"],
	                        "history": [{"id": 3}, {"id": 0}, 7, {"x": 1}]})",
	                    &problems);
	ASSERT_TRUE(s);
	EXPECT_EQ(s->lastId, 0u);
	EXPECT_FALSE(s->dnd);
	EXPECT_EQ(s->historyLimit, kDefaultHistoryLimit);
	ASSERT_EQ(s->history.size(), 1u);
	EXPECT_NE(problems.find("lastId"), std::string::npos);
	EXPECT_NE(problems.find("dnd"), std::string::npos);
	EXPECT_NE(problems.find("history entry"), std::string::npos);
	EXPECT_EQ(s->capabilities, defaultCapabilities());
	EXPECT_NE(problems.find("capabilities"), std::string::npos);
	EXPECT_NE(parseState(R"({"capabilities": "body"})", &problems), std::nullopt);
	EXPECT_NE(problems.find("capabilities"), std::string::npos);
	s = parseState(R"({"shown": [{"id": 5}, {"id": -1}, "x"]})", &problems);
	ASSERT_TRUE(s);
	EXPECT_EQ(s->shown, nlohmann::json::array({{{"id", 5}}}));
	EXPECT_NE(problems.find("shown entry"), std::string::npos);
	s = parseState(R"({"shown": {"id": 5}})", &problems);
	ASSERT_TRUE(s);
	EXPECT_TRUE(s->shown.empty());
	EXPECT_NE(problems.find("shown"), std::string::npos);
}

// The file is bounded whatever history holds: the newest entries that fit are written, oldest
// first as always, and what is computed again when the file is read (bodyText) is not written.
TEST(NotificationsState, TheFileKeepsTheNewestHistoryWithinItsBudget) {
	SavedState s;
	s.lastId = 100;
	for (int id = 1; id <= 100; ++id)
		s.history.push_back({{"id", id}, {"body", std::string(1000, '"')}, {"bodyText", std::string(1000, '"')}});
	size_t written = 0;
	auto text = serializeState(s, 20000, &written);
	EXPECT_LE(text.size(), 20000u);
	EXPECT_GT(written, 5u);
	EXPECT_LT(written, 10u);   // each entry is a little over 2000 bytes: each " is written as \"
	auto back = parseState(text);
	ASSERT_TRUE(back);
	EXPECT_EQ(back->lastId, 100u);
	ASSERT_EQ(back->history.size(), written);
	for (size_t i = 0; i < written; ++i) {
		EXPECT_EQ(back->history[i]["id"], 100 - written + 1 + i);
		EXPECT_FALSE(back->history[i].contains("bodyText"));
		EXPECT_EQ(back->history[i]["body"], s.history[0]["body"]);
	}
	// Everything fits: everything is written.
	(void)serializeState(s, kMaxStateFileBytes, &written);
	EXPECT_EQ(written, 100u);
	// Not even one fits: the rest of the document still is.
	back = parseState(serializeState(s, 10, &written));
	ASSERT_TRUE(back);
	EXPECT_EQ(written, 0u);
	EXPECT_EQ(back->lastId, 100u);
	EXPECT_TRUE(back->history.empty());
}

// The notifications shown are newer than all history (a stop closes them last): within the
// budget they come first, and what is left out is the oldest, history's first, as a stop would
// leave history. Each list is written oldest first, without what is computed again.
TEST(NotificationsState, TheShownAreKeptBeforeHistoryWithinTheBudget) {
	SavedState s;
	s.lastId = 40;
	for (int id = 1; id <= 30; ++id)
		s.history.push_back({{"id", id}, {"body", std::string(1000, 'h')}, {"bodyText", std::string(1000, 'h')}});
	for (int id = 31; id <= 40; ++id)
		s.shown.push_back({{"id", id}, {"body", std::string(1000, 's')}, {"bodyText", std::string(1000, 's')}});
	size_t written = 0;
	auto back = parseState(serializeState(s, kMaxStateFileBytes, &written));
	ASSERT_TRUE(back);
	EXPECT_EQ(written, 40u);
	ASSERT_EQ(back->shown.size(), 10u);
	EXPECT_EQ(back->shown.front()["id"], 31);
	EXPECT_FALSE(back->shown.front().contains("bodyText"));
	EXPECT_EQ(back->history.size(), 30u);
	// Room for all that is shown and a few of history: history's newest.
	auto text = serializeState(s, 15000, &written);
	EXPECT_LE(text.size(), 15000u);
	back = parseState(text);
	ASSERT_TRUE(back);
	EXPECT_EQ(back->shown.size(), 10u);
	ASSERT_GT(written, 10u);
	ASSERT_EQ(back->history.size(), written - 10);
	EXPECT_EQ(back->history.back()["id"], 30);
	EXPECT_EQ(back->history.front()["id"], 30 - int(written - 10) + 1);
	// Room for some of those shown: the last a stop would close, and no history.
	back = parseState(serializeState(s, 5000, &written));
	ASSERT_TRUE(back);
	EXPECT_GT(written, 0u);
	EXPECT_LT(written, 10u);
	EXPECT_EQ(back->shown.size(), written);
	EXPECT_EQ(back->shown.back()["id"], 40);
	EXPECT_TRUE(back->history.empty());
	EXPECT_EQ(back->lastId, 40u);
}

TEST(NotificationsState, IdsAreNeverReused) {
	SavedState s;
	s.lastId = 10;
	s.reservedId = 10 + kIdReserve;
	s.clean = true;
	EXPECT_EQ(firstId(s), 11u);     // a clean stop wrote the exact counter
	s.clean = false;
	EXPECT_EQ(firstId(s), 11 + kIdReserve);   // after a crash: past every id that may have been handed out
	s.lastId = UINT32_MAX;
	s.clean = true;
	EXPECT_EQ(firstId(s), 1u);      // wraps past the top, never to 0
	EXPECT_EQ(followingId(UINT32_MAX), 1u);
	EXPECT_EQ(followingId(7), 8u);
}

#endif
