// The pure part of the wayland backend (daemon/backends/wayland/mapping.hpp): protocol values
// to tree values, the output object from its three sources, toplevel keys, the socket path,
// and wayland.configureOutput's params, held against the schemas of protocol/api/wayland.json.

#include "backends/wayland/mapping.hpp"
#include "helpers.hpp"

#include <qsd/protocol/api.hpp>
#include <qsd/protocol/jsonrpc.hpp>

#include <gtest/gtest.h>

#include <set>

using namespace qsd;
using namespace qsd::wayland;
using json = nlohmann::json;
using qsd::testing::keys;

namespace {

const json& schema(const char* name) { return api::openrpc()["components"]["schemas"][name]; }

std::set<std::string> strings(const json& array) { return std::set<std::string>(array.begin(), array.end()); }

WlOutputInfo laptopOutput() {
	WlOutputInfo o;
	o.name = "eDP-1";
	o.description = "Sharp Corporation 0x14F9 (eDP-1)";
	o.make = "Sharp Corporation";
	o.model = "0x14F9";
	o.physicalWidth = 294;
	o.physicalHeight = 165;
	o.scale = 2;
	o.mode = Mode{2560, 1440, 59998, false};
	return o;
}

json invalidParam(const json& params) {
	try {
		(void)parseOutputConfig(params);
	} catch (const rpc::RpcException& e) {
		EXPECT_EQ(e.error.code, rpc::ErrorCode::InvalidParams);
		return e.error.data;
	}
	ADD_FAILURE() << "accepted " << params.dump();
	return nullptr;
}

} // namespace

TEST(WaylandMapping, NamesEveryTransformAsTheSchemaDoes) {
	const char* expected[] = {"normal", "rotated90", "rotated180", "rotated270", "flipped", "flipped90", "flipped180", "flipped270"};
	auto documented = strings(schema("WaylandTransform")["enum"]);
	EXPECT_EQ(documented.size(), std::size(expected));
	for (int32_t i = 0; i < int32_t(std::size(expected)); ++i) {
		ASSERT_TRUE(transformName(i)) << i;
		EXPECT_EQ(*transformName(i), expected[i]);
		EXPECT_EQ(transformValue(expected[i]), i);
		EXPECT_TRUE(documented.count(expected[i])) << expected[i];
	}
	EXPECT_FALSE(transformName(8));
	EXPECT_FALSE(transformName(-1));
	EXPECT_FALSE(transformValue("rotated45"));
	EXPECT_EQ(transformNames().size(), std::size(expected));
}

TEST(WaylandMapping, GivesRefreshRatesInHertz) {
	EXPECT_EQ(refreshHz(60000), json(60.0));
	EXPECT_EQ(refreshHz(59940), json(59.94));
	EXPECT_EQ(refreshHz(143856), json(143.856));
	EXPECT_EQ(refreshHz(0), json(nullptr));
	EXPECT_EQ(refreshHz(-5), json(nullptr));
	EXPECT_EQ(refreshMilliHz(59.94), 59940);
	EXPECT_EQ(refreshMilliHz(144), 144000);
	EXPECT_EQ(refreshMilliHz(0), 0);
	EXPECT_EQ(refreshMilliHz(-1), 0);
}

TEST(WaylandMapping, DerivesTheScaleTheLogicalSizeImplies) {
	Mode m{1920, 1080, 60000};
	EXPECT_EQ(impliedScale(m, 0, {1280, 720}), 1.5);
	EXPECT_EQ(impliedScale(m, 0, {1536, 864}), 1.25);
	EXPECT_EQ(impliedScale(m, 0, {1440, 810}), 160 / 120.0);
	// Logical sizes are rounded to integers: the quotient is a little off, the step is not.
	EXPECT_EQ(impliedScale(Mode{1280, 720, 60000}, 0, {853, 480}), 1.5);
	EXPECT_EQ(impliedScale(Mode{1366, 768, 60000}, 0, {1093, 614}), 1.25);
	EXPECT_EQ(impliedScale(Mode{1920, 1080, 60000}, 0, {1097, 617}), 1.75);
	EXPECT_EQ(impliedScale(Mode{1280, 720, 60000}, 1, {480, 853}), 1.5);
	EXPECT_EQ(impliedScale(m, 0, {1920, 1080}), 1.0);
	// Turned on its side: the mode's width meets the logical height.
	EXPECT_EQ(impliedScale(m, 1, {540, 960}), 2.0);
	EXPECT_EQ(impliedScale(m, 7, {720, 1280}), 1.5);
	// Not a plain scale, or nothing to divide.
	EXPECT_FALSE(impliedScale(m, 0, {1920, 540}));
	EXPECT_FALSE(impliedScale(m, 0, {0, 0}));
	EXPECT_FALSE(impliedScale(Mode{}, 0, {1920, 1080}));
}

TEST(WaylandMapping, BuildsAnOutputFromWlOutputAloneWithEveryRequiredField) {
	auto o = laptopOutput();
	auto j = outputJson(&o, nullptr, nullptr);
	EXPECT_EQ(keys(j), strings(schema("WaylandOutput")["required"]));
	EXPECT_EQ(j["name"], "eDP-1");
	EXPECT_EQ(j["physicalSize"], (json{{"width", 294}, {"height", 165}}));
	EXPECT_EQ(j["mode"], (json{{"width", 2560}, {"height", 1440}, {"refresh", 59.998}}));
	EXPECT_EQ(j["scale"], 2);   // integer: nothing better is known
	EXPECT_EQ(j["transform"], "normal");
	EXPECT_EQ(j["position"], nullptr);
	EXPECT_EQ(j["logicalSize"], nullptr);
	EXPECT_EQ(j["serial"], nullptr);
	EXPECT_EQ(j["enabled"], true);
	EXPECT_FALSE(j.contains("modes"));
}

TEST(WaylandMapping, TakesPositionAndLogicalSizeFromXdgOutputAndTheScaleFromTheHead) {
	auto o = laptopOutput();
	XdgOutputInfo x;
	x.position = {0, 0};
	x.size = {1706, 960};
	HeadInfo h;
	h.name = "eDP-1";
	h.enabled = true;
	h.serial = "0x00000000";
	h.scale = 1.5;
	h.position = {10, 10};   // xdg-output wins for the position
	h.modes = {Mode{2560, 1440, 59998, true}, Mode{1920, 1080, 60000, false}, Mode{0, 0, 0, false}};
	auto j = outputJson(&o, &x, &h);
	auto all = strings(schema("WaylandOutput")["required"]);
	all.insert("modes");
	EXPECT_EQ(keys(j), all);
	EXPECT_EQ(j["scale"], 1.5);
	EXPECT_EQ(j["position"], (json{{"x", 0}, {"y", 0}}));
	EXPECT_EQ(j["logicalSize"], (json{{"width", 1706}, {"height", 960}}));
	EXPECT_EQ(j["serial"], "0x00000000");
	ASSERT_EQ(j["modes"].size(), 2u);   // the sizeless one is left out
	EXPECT_EQ(j["modes"][0], (json{{"width", 2560}, {"height", 1440}, {"refresh", 59.998}, {"preferred", true}}));
	EXPECT_EQ(j["modes"][1]["preferred"], false);
}

TEST(WaylandMapping, PrefersTheImpliedFractionalScaleToTheIntegerOne) {
	auto o = laptopOutput();
	XdgOutputInfo x;
	x.size = {1706, 960};
	// A head that reports nothing useful (sway 1.7's headless heads say "disabled").
	HeadInfo h;
	h.name = "eDP-1";
	auto j = outputJson(&o, &x, &h);
	EXPECT_EQ(j["scale"], 1.5);   // 2560 / 1706 = 1.5006, the nearest 1/120
	EXPECT_EQ(j["enabled"], true);   // it has a wl_output
	EXPECT_EQ(j["modes"], json::array());
}

TEST(WaylandMapping, DescribesAnOutputThatIsOffFromItsHead) {
	HeadInfo h;
	h.name = "HDMI-A-1";
	h.description = "LG Electronics 27GL850 (HDMI-A-1)";
	h.make = "LG Electronics";
	h.model = "27GL850";
	h.physicalSize = {600, 340};
	h.enabled = false;
	h.transform = 0;
	h.scale = 1.0;
	h.position = {1920, 0};
	h.mode = Mode{2560, 1440, 143998, true};
	h.modes = {*h.mode};
	auto j = outputJson(nullptr, nullptr, &h);
	EXPECT_EQ(j["name"], "HDMI-A-1");
	EXPECT_EQ(j["description"], "LG Electronics 27GL850 (HDMI-A-1)");
	EXPECT_EQ(j["enabled"], false);
	EXPECT_EQ(j["mode"], nullptr);
	EXPECT_EQ(j["position"], nullptr);
	EXPECT_EQ(j["logicalSize"], nullptr);
	EXPECT_EQ(j["scale"], nullptr);
	EXPECT_EQ(j["physicalSize"], (json{{"width", 600}, {"height", 340}}));
	EXPECT_EQ(j["modes"].size(), 1u);
}

TEST(WaylandMapping, NamesAnOutputFromWhicheverSourceHasAName) {
	WlOutputInfo v3;   // wl_output before version 4: no name
	XdgOutputInfo x;
	x.name = "DP-1";
	EXPECT_EQ(outputName(&v3, &x, nullptr), "DP-1");
	EXPECT_EQ(outputName(&v3, nullptr, nullptr), "");
	HeadInfo h;
	h.name = "DP-1";
	EXPECT_EQ(outputName(nullptr, nullptr, &h), "DP-1");
}

TEST(WaylandMapping, ReadsToplevelStates) {
	uint32_t all[] = {0, 1, 2, 3};
	EXPECT_EQ(toplevelFlags(all), (ToplevelFlags{true, true, true, true}));
	uint32_t activated[] = {2, 99};   // a newer state is ignored
	EXPECT_EQ(toplevelFlags(activated), (ToplevelFlags{false, false, true, false}));
	EXPECT_EQ(toplevelFlags({}), ToplevelFlags{});
}

TEST(WaylandMapping, BuildsAToplevelWithEveryRequiredField) {
	ToplevelInfo t;
	t.title = "~ — foot";
	t.appId = "foot";
	t.flags = ToplevelFlags{false, false, true, false};
	t.outputs = std::vector<std::string>{"DP-1", "eDP-1"};
	t.parent = "4";
	auto j = toplevelJson(t);
	EXPECT_EQ(keys(j), strings(schema("WaylandToplevel")["required"]));
	EXPECT_EQ(j["activated"], true);
	EXPECT_EQ(j["outputs"], (json{"DP-1", "eDP-1"}));
	EXPECT_EQ(j["parent"], "4");
	// ext-foreign-toplevel-list alone: no states, outputs or parent.
	auto bare = toplevelJson(ToplevelInfo{"Files", "org.gnome.Nautilus"});
	EXPECT_EQ(keys(bare), strings(schema("WaylandToplevel")["required"]));
	EXPECT_EQ(bare["maximized"], nullptr);
	EXPECT_EQ(bare["outputs"], nullptr);
	EXPECT_EQ(bare["parent"], nullptr);
}

TEST(WaylandMapping, KeysToplevelsByIdentifierElseByAGrowingCounter) {
	std::set<std::string> live;
	auto taken = [&](const std::string& k) { return live.count(k) > 0; };
	uint64_t counter = 0;
	EXPECT_EQ(toplevelKey(std::string("c4d5e6f7"), counter, taken), "c4d5e6f7");
	EXPECT_EQ(counter, 0u);
	EXPECT_EQ(toplevelKey(std::nullopt, counter, taken), "1");
	live = {"c4d5e6f7", "1"};
	// An identifier a live window has (a compositor that repeats itself): the next number.
	EXPECT_EQ(toplevelKey(std::string("c4d5e6f7"), counter, taken), "2");
	// A number the counter gave (its window may be gone, nothing remembers it): not used. One
	// above the counter is, and the counter goes on from it; one no counter value can spell is.
	EXPECT_EQ(toplevelKey(std::string("1"), counter, taken), "3");
	EXPECT_EQ(toplevelKey(std::string("2"), counter, taken), "4");
	EXPECT_EQ(toplevelKey(std::string("40"), counter, taken), "40");
	EXPECT_EQ(counter, 40u);
	EXPECT_EQ(toplevelKey(std::nullopt, counter, taken), "41");
	EXPECT_EQ(toplevelKey(std::string("007"), counter, taken), "007");
	EXPECT_EQ(toplevelKey(std::string(25, '9'), counter, taken), std::string(25, '9'));
	EXPECT_EQ(counter, 41u);
	// Not what the protocol promises: not trusted as a key.
	EXPECT_EQ(toplevelKey(std::string(""), counter, taken), "42");
	EXPECT_EQ(toplevelKey(std::string("has space"), counter, taken), "43");
	EXPECT_EQ(toplevelKey(std::string(33, 'a'), counter, taken), "44");
	EXPECT_TRUE(usableIdentifier(std::string(32, 'a')));
	EXPECT_FALSE(usableIdentifier("tab\there"));
	EXPECT_FALSE(usableIdentifier("\xc3\xa9t\xc3\xa9"));
}

TEST(WaylandMapping, ResolvesWaylandDisplayAsLibwaylandDoes) {
	EXPECT_EQ(socketPath("wayland-1", "/run/user/1000"), "/run/user/1000/wayland-1");
	EXPECT_EQ(socketPath("wayland-1", "/run/user/1000/"), "/run/user/1000/wayland-1");
	EXPECT_EQ(socketPath("/tmp/x/wayland-0", ""), "/tmp/x/wayland-0");
	EXPECT_EQ(socketPath("wayland-1", ""), std::nullopt);
	EXPECT_EQ(socketPath("", "/run/user/1000"), std::nullopt);
}

TEST(WaylandMapping, FindsAVariableInTheManagersEnvironment) {
	std::vector<std::string> env = {"PATH=/usr/bin", "WAYLAND_DISPLAY=wayland-0", "WAYLAND_DISPLAYX=no", "WAYLAND_DISPLAY=wayland-1",
	                                "EMPTY="};
	EXPECT_EQ(environmentValue(env, "WAYLAND_DISPLAY"), "wayland-1");
	EXPECT_EQ(environmentValue(env, "EMPTY"), "");
	EXPECT_EQ(environmentValue(env, "WAYLAND"), std::nullopt);
	EXPECT_EQ(environmentValue({}, "WAYLAND_DISPLAY"), std::nullopt);
}

TEST(WaylandMapping, NamesTheCompositor) {
	EXPECT_EQ(compositorName("sway:wlroots", "sway"), "sway");
	EXPECT_EQ(compositorName("niri", ""), "niri");
	EXPECT_EQ(compositorName("", "Hyprland"), "Hyprland");
	EXPECT_EQ(compositorName("", ""), nullptr);
}

TEST(WaylandMapping, ReadsConfigureOutputParams) {
	auto c = parseOutputConfig({{"output", "DP-2"},
	                            {"enabled", true},
	                            {"mode", {{"width", 2560}, {"height", 1440}, {"refresh", 143.998}}},
	                            {"scale", 1.25},
	                            {"transform", "flipped270"},
	                            {"position", {{"x", -1920}, {"y", 0}}}});
	EXPECT_EQ(c.output, "DP-2");
	EXPECT_EQ(c.enabled, true);
	ASSERT_TRUE(c.mode);
	EXPECT_EQ(c.mode->width, 2560);
	EXPECT_EQ(c.mode->refresh, 143.998);
	EXPECT_EQ(c.scale, 1.25);
	EXPECT_EQ(c.transform, 7);
	EXPECT_EQ(c.position, std::make_pair(-1920, 0));
	EXPECT_TRUE(c.changesProperties());
	auto bare = parseOutputConfig({{"output", "DP-2"}, {"enabled", false}, {"scale", nullptr}});
	EXPECT_FALSE(bare.changesProperties());
	EXPECT_EQ(bare.enabled, false);
}

TEST(WaylandMapping, RefusesBadConfigureOutputParamsNamingThem) {
	EXPECT_EQ(invalidParam(json::object())["param"], "output");
	EXPECT_EQ(invalidParam({{"output", ""}})["param"], "output");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"scale", 0}})["param"], "scale");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"scale", "2"}})["param"], "scale");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"enabled", 1}})["param"], "enabled");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"mode", {{"width", 1}}}})["param"], "mode.height");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"mode", {{"width", 0}, {"height", 1}}}})["param"], "mode.width");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"mode", {{"width", 1.5}, {"height", 1}}}})["param"], "mode.width");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"mode", {{"width", 1}, {"height", 1}, {"refresh", -60}}}})["param"], "mode.refresh");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"mode", "1920x1080"}})["param"], "mode");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"position", {{"x", 1}}}})["param"], "position.y");
	EXPECT_EQ(invalidParam({{"output", "X"}, {"position", {{"x", 1}, {"y", 1LL << 40}}}})["param"], "position.y");
	auto t = invalidParam({{"output", "X"}, {"transform", "upsideDown"}});
	EXPECT_EQ(t["param"], "transform");
	EXPECT_EQ(strings(t["supported"]), strings(schema("WaylandTransform")["enum"]));
}

TEST(WaylandMapping, PicksTheModeARequestMeans) {
	std::vector<Mode> modes = {{1920, 1080, 60000, true}, {1920, 1080, 144000, false}, {1920, 1080, 59940, false},
	                           {1280, 720, 60000, false}, {1280, 720, 75000, false}};
	EXPECT_EQ(pickMode(modes, {1920, 1080, std::nullopt}), 0u);   // the preferred one
	EXPECT_EQ(pickMode(modes, {1280, 720, std::nullopt}), 4u);    // none preferred: the fastest
	EXPECT_EQ(pickMode(modes, {1920, 1080, 144.0}), 1u);
	EXPECT_EQ(pickMode(modes, {1920, 1080, 59.94}), 2u);          // the closest, not the first within 0.5 Hz
	EXPECT_EQ(pickMode(modes, {1920, 1080, 120.0}), std::nullopt);
	EXPECT_EQ(pickMode(modes, {2560, 1440, std::nullopt}), std::nullopt);
	EXPECT_EQ(pickMode({}, {1920, 1080, std::nullopt}), std::nullopt);
}

TEST(WaylandMapping, ListsTheInterfacesTheSchemaNamesAsPossiblyMissing) {
	auto documented = strings(schema("WaylandCompositor")["properties"]["missing"]["items"]["enum"]);
	std::set<std::string> known;
	for (const auto& k: knownInterfaces()) {
		known.insert(std::string(k.name));
		EXPECT_GE(k.version, 1u);
	}
	EXPECT_EQ(known, documented);
	EXPECT_EQ(bindVersion(7, 4), 4u);
	EXPECT_EQ(bindVersion(2, 4), 2u);
}
