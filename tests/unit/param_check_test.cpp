// Params checked against the API description: the subset of JSON Schema its method
// descriptions use, and the -32602 data that names what is wrong.

#include <qsd/protocol/api.hpp>
#include <qsd/protocol/jsonrpc.hpp>

#include <gtest/gtest.h>

using namespace qsd;
using json = nlohmann::json;

namespace {
json refused(std::string_view method, const json& params) {
	try {
		api::checkParams(*api::method(method), params);
	} catch (const rpc::RpcException& e) {
		EXPECT_EQ(e.error.code, rpc::ErrorCode::InvalidParams);
		return e.error.data;
	}
	return nullptr;
}
} // namespace

TEST(ParamCheck, FollowsTheApiDescriptionsSchemas) {
	// Types, several types, null for an optional param.
	EXPECT_EQ(refused("audio.setVolume", {{"node", "52"}, {"volume", 0.5}}), nullptr);
	EXPECT_EQ(refused("audio.setVolume", {{"node", 52}, {"volume", 1}}), nullptr);
	EXPECT_EQ(refused("audio.setVolume", {{"node", true}, {"volume", 1}}),
	          json({{"param", "node"}, {"expected", "a string or an integer"}}));
	EXPECT_EQ(refused("audio.setVolume", {{"node", "52"}}), json({{"param", "volume"}, {"expected", "a number"}}));
	EXPECT_EQ(refused("tray.scroll", {{"item", "x"}, {"delta", 1}, {"orientation", nullptr}}), nullptr);
	// Ranges and integers written as floats.
	EXPECT_EQ(refused("audio.setVolume", {{"node", "52"}, {"volume", 10.5}}),
	          json({{"param", "volume"}, {"expected", "a number ≥ 0 and ≤ 10"}}));
	EXPECT_EQ(refused("tray.scroll", {{"item", "x"}, {"delta", 2.0}}), nullptr);
	EXPECT_EQ(refused("tray.scroll", {{"item", "x"}, {"delta", 2.5}})["param"], "delta");
	EXPECT_EQ(refused("tray.scroll", {{"item", "x"}, {"delta", 4294967296}})["param"], "delta");
	// Lengths, enums with their values.
	EXPECT_EQ(refused("tray.scroll", {{"item", ""}, {"delta", 1}})["expected"], "a non-empty string");
	auto e = refused("tray.scroll", {{"item", "x"}, {"delta", 1}, {"orientation", "diagonal"}});
	EXPECT_EQ(e["supported"], json({"vertical", "horizontal"}));
	// Arrays name the param and say where; objects name the member.
	e = refused("audio.setVolumes", {{"node", "1"}, {"volumes", {0.5, "x"}}});
	EXPECT_EQ(e["param"], "volumes");
	EXPECT_EQ(e["at"], "volumes[1]");
	e = refused("wayland.configureOutput", {{"output", "DP-1"}, {"mode", {{"width", 1920}}}});
	EXPECT_EQ(e, json({{"param", "mode.height"}, {"expected", "an integer"}}));
	e = refused("wayland.configureOutput", {{"output", "DP-1"}, {"mode", {{"width", 0}, {"height", 1}}}});
	EXPECT_EQ(e["param"], "mode.width");
	// oneOf with a $ref: the enum's values, or null.
	EXPECT_EQ(refused("wayland.configureOutput", {{"output", "DP-1"}, {"transform", nullptr}}), nullptr);
	e = refused("wayland.configureOutput", {{"output", "DP-1"}, {"transform", "sideways"}});
	EXPECT_EQ(e["param"], "transform");
	EXPECT_TRUE(e["supported"].is_array());
	// Unknown params are ignored (a newer client talking to an older daemon).
	EXPECT_EQ(refused("audio.setVolume", {{"node", "52"}, {"volume", 1}, {"fadeMs", 20}}), nullptr);
}
