// The client-side reducer and the JSON Pointer helpers.

#include <qsd/protocol/mirror.hpp>

#include <gtest/gtest.h>

using qsd::Mirror;
using json = nlohmann::json;
namespace pointer = qsd::pointer;

TEST(Mirror, ResetBuildsParentsAndLeavesAbsentPathsOut) {
	Mirror m;
	m.reset({"/network/wifiEnabled", "/power/devices", "/audio/x"},
	        {{"/network/wifiEnabled", true}, {"/power/devices", {{"bat0", {{"percentage", 50}}}}}}, 7, "ep");
	EXPECT_EQ(m.revision(), 7u);
	EXPECT_EQ(m.epoch(), "ep");
	EXPECT_EQ(m.document(), (json{{"network", {{"wifiEnabled", true}}},
	                              {"power", {{"devices", {{"bat0", {{"percentage", 50}}}}}}},
	                              {"audio", json::object()}}));
	EXPECT_EQ(m.find("/audio/x"), nullptr);
	ASSERT_NE(m.find("/power/devices/bat0/percentage"), nullptr);
	EXPECT_EQ(*m.find("/power/devices/bat0/percentage"), 50);
	EXPECT_EQ(m.find("not a pointer"), nullptr);
	// A later add of the absent path applies, thanks to its parent.
	EXPECT_EQ(m.apply(8, json::array({{{"op", "add"}, {"path", "/audio/x"}, {"value", 1}}})), Mirror::Result::Applied);
	EXPECT_EQ(*m.find("/audio/x"), 1);
}

TEST(Mirror, WholeTree) {
	Mirror m;
	m.reset({""}, {{"", {{"daemon", {{"clients", 1}}}}}}, 3);
	EXPECT_EQ(m.document()["daemon"]["clients"], 1);
	EXPECT_EQ(m.apply(4, json::array({{{"op", "replace"}, {"path", "/daemon/clients"}, {"value", 2}}})), Mirror::Result::Applied);
	EXPECT_EQ(m.document()["daemon"]["clients"], 2);
	EXPECT_EQ(m.revision(), 4u);
}

TEST(Mirror, APathWithinAnotherIsThatOnesContent) {
	// The daemon's filter sends changes of the outer path only; a placeholder for the inner
	// path's parent overwrote the outer path's scalar (or stood where nothing is), whatever
	// order the paths came in.
	for (const auto& paths: {std::vector<std::string>{"/debug/a", "/debug/a/b"}, {"/debug/a/b", "/debug/a"}}) {
		Mirror m;
		m.reset(paths, {{"/debug/a", 5}}, 1);
		ASSERT_NE(m.find("/debug/a"), nullptr);
		EXPECT_EQ(*m.find("/debug/a"), 5);
		EXPECT_EQ(m.find("/debug/a/b"), nullptr);
		m.reset(paths, json::object(), 1);
		EXPECT_EQ(m.find("/debug/a"), nullptr);
		EXPECT_EQ(m.apply(2, json::array({{{"op", "add"}, {"path", "/debug/a"}, {"value", {{"b", 1}}}}})), Mirror::Result::Applied);
		EXPECT_EQ(*m.find("/debug/a/b"), 1);
	}
	Mirror m;
	m.reset({"", "/debug/a/b"}, {{"", {{"debug", {{"a", 5}}}}}}, 1);
	EXPECT_EQ(m.document(), (json{{"debug", {{"a", 5}}}}));
}

TEST(Mirror, StaleRevisionsAreIgnored) {
	Mirror m;
	m.reset({"/a"}, {{"/a", 1}}, 10);
	auto patch = json::array({{{"op", "replace"}, {"path", "/a"}, {"value", 2}}});
	EXPECT_EQ(m.apply(10, patch), Mirror::Result::Stale);
	EXPECT_EQ(m.apply(3, patch), Mirror::Result::Stale);
	EXPECT_EQ(m.document()["a"], 1);
	// Revisions may jump: a subscriber sees only the batches touching its paths.
	EXPECT_EQ(m.apply(25, patch), Mirror::Result::Applied);
	EXPECT_EQ(m.revision(), 25u);
}

TEST(Mirror, PatchThatDoesNotApplyIsAGap) {
	Mirror m;
	m.reset({"/a"}, {{"/a", {{"x", 1}}}}, 1);
	EXPECT_EQ(m.apply(2, json::array({{{"op", "replace"}, {"path", "/a/missing/deeper"}, {"value", 2}}})), Mirror::Result::Gap);
	EXPECT_EQ(m.revision(), 1u);   // not advanced: the caller resubscribes
	EXPECT_EQ(m.apply(2, json::array({{{"op", "remove"}, {"path", "/nope"}}})), Mirror::Result::Gap);
	EXPECT_EQ(m.apply(2, json::array({{{"op", "bogus"}, {"path", "/a"}}})), Mirror::Result::Gap);
	EXPECT_EQ(m.apply(2, json("not a patch")), Mirror::Result::Gap);
	EXPECT_EQ(m.revision(), 1u);
}

TEST(Mirror, ResyncReplacesEverything) {
	Mirror m;
	m.reset({"/a", "/b"}, {{"/a", 1}, {"/b", 2}}, 5, "e1");
	m.reset({"/a", "/b"}, {{"/b", 3}}, 9);   // a tree.resync has no epoch: kept
	EXPECT_EQ(m.epoch(), "e1");
	EXPECT_EQ(m.revision(), 9u);
	EXPECT_EQ(m.document(), (json{{"b", 3}}));
}

TEST(Pointer, EscapeJoin) {
	EXPECT_EQ(pointer::escape("a/b~c"), "a~1b~0c");
	EXPECT_EQ(pointer::escape(""), "");
	EXPECT_EQ(pointer::join("", "network"), "/network");
	EXPECT_EQ(pointer::join("/network/devices", "wl/an~0"), "/network/devices/wl~1an~00");
	// What join builds, nlohmann's json_pointer reads back to the same tokens.
	json doc;
	doc[json::json_pointer(pointer::join("/x", "a/b~c"))] = 1;
	EXPECT_EQ(doc["x"]["a/b~c"], 1);
}

TEST(Pointer, IsWithin) {
	EXPECT_TRUE(pointer::isWithin("/a/b", ""));
	EXPECT_TRUE(pointer::isWithin("", ""));
	EXPECT_TRUE(pointer::isWithin("/a", "/a"));
	EXPECT_TRUE(pointer::isWithin("/a/b", "/a"));
	EXPECT_FALSE(pointer::isWithin("/ab", "/a"));
	EXPECT_FALSE(pointer::isWithin("/a", "/a/b"));
	EXPECT_FALSE(pointer::isWithin("", "/a"));
}

TEST(Pointer, IsValid) {
	for (const char* ok: {"", "/", "/a", "/a/b", "/a~0b", "/a~1b", "//", "/~0~1"}) EXPECT_TRUE(pointer::isValid(ok)) << ok;
	for (const char* bad: {"a", "a/b", "/a~", "/a~2", "~0", "#/a", " /a"}) EXPECT_FALSE(pointer::isValid(bad)) << bad;
}
